r"""What the quasi-static plate assumption costs: a study on the exact moving-plate model
=====================================================================================

For circles of several radii, speeds and centre offsets this script measures

* **(a) open loop**: the quasi-static plate angles (the paper's dynamic
    inversion, with their exact rates and accelerations) applied to the exact
    prescribed-plate plant: largest distance from the circle over one
    revolution, in % of the radius;
* **(b) quasi-static LQR**: the finite-horizon LQR of the paper designed on
    :class:`~ballctl.BallPlate` along :class:`~ballctl.CircularMotion`, its
    zero-order-hold angle commands sent to the exact *servo* plant
    (:class:`ServoPlateBallPlate`: plate inertia, a 2nd-order servo of
    bandwidth 200 rad/s and damping 0.8; this is also how a ZOH command gets
    rates: the servo filters it);
* **(b') quasi-static contact LQR**: as (b) but on the 4-state contact subsystem
    ``(contact_x, contact_y)`` and rates only (no yaw feedback). The yaw loop of
    the 6-state design is what breaks on the exact plant: the yaw responds to
    lateral contact acceleration with a gain of order ``tan(lean)/R`` (the
    appendix-C coefficients b4, b5, ~440 on the paper's circle), and the exact
    plate injects the term ``R alpha''`` (and the pivot offset) straight into the
    contact acceleration at every commanded step;
* **(c) exact LQR**: the same design chain (:func:`ballctl.design_tracking_lqr`)
    on the servo plant along the exact reference
    (:func:`exact_circular_motion`, commanded angles as inputs, 12 reduced
    states including lean and roll, which the turning plate couples in).

Both loops start on the exact reference and run for ``revolutions`` periods
at dt = 0.02 s; the tracking error is the largest contact-point distance from
the reference over the last revolution, in % of the radius. The quasi-static
design is called good enough while (b) stays below 1 %.

Run ``python examples/quasi_static_cost.py`` (full study, a few minutes) or
with ``--quick`` (two cases, seconds); ``--out DIR`` writes ``moving_plate_table.md`` and
the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import ballctl
from ballctl.figures.plotting import OPEN_LOOP_COLOR, RUN_COLORS, save_figure
from ballctl.plants.ball_plate_moving import (MovingPlateBallPlate, MovingPlateParameters, ServoParameters,
                                              ServoPlateBallPlate)
from ballctl.references.moving_plate import _Fourier, exact_circular_motion
from ballctl.errors import NonFiniteStateError
from ballctl.simulate import rk4

__all__ = ["Case", "CaseResult", "run_case", "study", "main"]

#: Bryson limits of the quasi-static design (as in tests/test_closed_loop.py)
QS_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                       yaw_rate=5.0)
#: the exact design adds the plate angles and rates, and lean/roll (loosely weighted)
EXACT_STATE_ERRORS = dict(QS_STATE_ERRORS, alpha=np.deg2rad(3.0), beta=np.deg2rad(3.0), alpha_rate=1.0,
                          beta_rate=1.0, lean=1.0, roll=1e3)
INPUT_ERROR = np.deg2rad(3.0)
COS_LEAN = 0.625     # the roll rate is chosen so that cos(lean) = rho*omega/(Omega*R) = 0.625, as in the paper's setup
DT = 0.02
#: the rig's servo: 200 rad/s bandwidth (8 ms lag), damping 0.8
TRUTH_SERVO = ServoParameters(bandwidth=200.0, damping=0.8)
SUBSTEPS = 8   # RK4 steps of 2.5 ms: |h lambda| = 0.5 for the 200 rad/s servo, inside RK4's stability region (2.8)


@dataclass(frozen=True, kw_only=True)
class Case:
    """One circle: radius in m, omega in rad/s, centre offset along x in m."""

    radius: float
    omega: float
    offset: float = 0.0


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    """Errors in % of the radius, and the angle difference exact - quasi-static in degrees."""

    case: Case
    speed: float
    tilt_deg: float
    angle_difference_deg: float
    open_loop_pct: float
    quasi_static_lqr_pct: float
    quasi_static_contact_lqr_pct: float
    exact_lqr_pct: float
    inversion_residual: float
    spin_drift: float
    traces: dict


def _closed_loop(truth, ref_exact, samples, gains, reduce, x0, xd0, steps):
    """Sampled loop: command held over [t_k, t_k+1), truth integrated by classical RK4 (SUBSTEPS per step)."""
    n = truth.n_coordinates
    y = np.concatenate([x0, xd0])
    err = np.zeros(steps + 1)
    U = np.zeros((steps, truth.n_inputs))
    t = samples.t
    exact = ref_exact(t[: steps + 1])
    for k in range(steps + 1):
        x, xd = y[:n], y[n:]
        if not np.all(np.isfinite(y)) or abs(y[3]) > 1.5:  # diverged (lean beyond 86 deg): stop, report inf
            err[k:] = np.inf
            break
        err[k] = np.hypot(*(x[:2] - exact.x[k, :2]))
        if k == steps:
            break
        u = samples.u[k] - gains[k] @ reduce(k, x, xd)
        U[k] = u

        def rhs(_t, yy, u=u):
            xdd, _ = truth.accelerations(yy[:n], yy[n:], u, stabilization=(10.0, 10.0))
            return np.concatenate([yy[n:], xdd])

        try:
            with np.errstate(all="ignore"):  # a diverging loop overflows
                y = rk4(rhs, y, t[k], t[k + 1] - t[k], SUBSTEPS)
        except NonFiniteStateError:  # diverged: detected at the next sample
            y = np.full_like(y, np.nan)
    return err, U


def run_case(case: Case, *, revolutions: float = 2.0, pivot_depth: float = 0.02,
             servo: ServoParameters | None = None) -> CaseResult:
    """Measure (a), (b), (c) for one circle (see the module docstring)."""
    params = MovingPlateParameters(pivot_depth=pivot_depth)
    truth = ServoPlateBallPlate(params, servo or TRUTH_SERVO)
    prescribed = MovingPlateBallPlate(params)
    quasi = truth.quasi_static()
    R = quasi.params.radius
    roll_rate = case.radius * case.omega / (R * COS_LEAN)
    center = (case.offset, 0.0)
    period = 2 * np.pi / case.omega
    horizon = DT * int(round(revolutions * period / DT))
    steps = int(round(horizon / DT))
    ref = exact_circular_motion(truth, ballctl.LissajousPath.circle(case.radius, case.omega, center=center), roll_rate,
                                duration=max(horizon, period) + 2 * DT)
    qs_ref = ballctl.CircularMotion(quasi, case.radius, case.omega, roll_rate, center=center)

    # (a) quasi-static angles with their exact rates on the prescribed plant, one revolution
    grid = np.arange(64) * period / 64
    qs_angles = _Fourier(ref.quasi_static_angles(grid), 0.0, period)
    s0 = ref(0.0)
    x0 = s0.x.copy()
    xd0 = s0.xd.copy()
    x0[5:] = qs_angles(np.array([0.0]))[0]
    xd0[5:] = qs_angles(np.array([0.0]), 1)[0]
    t_ol = np.linspace(0.0, period, 201)
    ol = ballctl.simulate(prescribed, x0, xd0, lambda t: qs_angles(np.array([t]), 2)[0], (0.0, period),
                          t_eval=t_ol, options=ballctl.SimulationOptions(rtol=1e-9, atol=1e-12))
    ol_err = np.hypot(*(ol.x[:, :2] - ref(t_ol).x[:, :2]).T)

    # (b) quasi-static LQR on the servo plant
    part_qs = ballctl.Partition.from_coordinates(quasi, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl_qs = ballctl.design_tracking_lqr(quasi, qs_ref, part_qs, dt=DT, horizon=horizon,
                                          weights=ballctl.LQRWeights(states=part_qs.state_names[:6],
                                                                     max_state_errors=QS_STATE_ERRORS,
                                                                     max_input_errors={"alpha": INPUT_ERROR,
                                                                                       "beta": INPUT_ERROR}))
    s_qs = ctrl_qs.samples

    def reduce_qs(k, x, xd):
        return ctrl_qs.ltv.reduce(x[:5] - s_qs.x[k], xd[:5] - s_qs.xd[k])

    x0, xd0 = s0.x, s0.xd
    err_b, u_b = _closed_loop(truth, ref, s_qs, ctrl_qs.lqr.gains, reduce_qs, x0, xd0, steps)

    # (b') quasi-static LQR on the contact subsystem only (no yaw feedback)
    contact_states = [nm for nm in part_qs.state_names if nm.startswith("contact")]
    weights = ballctl.LQRWeights(states=contact_states,
                                 max_state_errors={k: v for k, v in QS_STATE_ERRORS.items() if k in contact_states},
                                 max_input_errors={'alpha': INPUT_ERROR, 'beta': INPUT_ERROR})
    ctrl_qc = ballctl.design_tracking_lqr(quasi, qs_ref, part_qs, dt=DT, horizon=horizon, weights=weights)

    def reduce_qc(k, x, xd):
        return ctrl_qc.ltv.reduce(x[:5] - s_qs.x[k], xd[:5] - s_qs.xd[k])

    err_b2, _ = _closed_loop(truth, ref, ctrl_qc.samples, ctrl_qc.lqr.gains, reduce_qc, x0, xd0, steps)

    # (c) exact LQR on the servo plant
    part = ballctl.Partition.from_coordinates(truth, ["contact_x", "contact_y", "yaw", "alpha", "beta"],
                                              ["lean", "roll"])
    try:
        ctrl = ballctl.design_tracking_lqr(truth, ref, part, dt=DT, horizon=horizon,
                                           weights=ballctl.LQRWeights(max_state_errors=EXACT_STATE_ERRORS,
                                                                      max_input_errors={"alpha_cmd": INPUT_ERROR,
                                                                                        "beta_cmd": INPUT_ERROR}))
    except ballctl.errors.IntegrationError:
        # no design: the exact reference did not converge (its residual is in the table), so its zero-order-hold
        # reference leaves the finite numbers; reported like a diverged loop
        err_c, u_c = np.full(steps + 1, np.inf), np.full((steps, truth.n_inputs), np.nan)
    else:
        s_ex = ctrl.samples

        def reduce_ex(k, x, xd):
            return ctrl.ltv.reduce(x - s_ex.x[k], xd - s_ex.xd[k])

        err_c, u_c = _closed_loop(truth, ref, s_ex, ctrl.lqr.gains, reduce_ex, x0, xd0, steps)

    last = np.arange(steps + 1) * DT >= horizon - period - 1e-9
    qd = ref.quasi_static_difference
    return CaseResult(case=case, speed=case.radius * case.omega, tilt_deg=float(np.rad2deg(qs_ref.tilt)),
                      angle_difference_deg=float(np.rad2deg(max(qd["alpha_rad"], qd["beta_rad"]))),
                      open_loop_pct=float(100 * ol_err.max() / case.radius),
                      quasi_static_lqr_pct=float(100 * err_b[last].max() / case.radius),
                      quasi_static_contact_lqr_pct=float(100 * err_b2[last].max() / case.radius),
                      exact_lqr_pct=float(100 * err_c[last].max() / case.radius),
                      inversion_residual=float(max(ref.residuals["contact_acceleration"],
                                                   ref.residuals["collocation"])),
                      spin_drift=ref.spin_drift,
                      traces={"t_open": t_ol, "open": ol_err, "t": np.arange(steps + 1) * DT, "qs": err_b,
                              "exact": err_c, "u_qs": u_b, "u_exact": u_c})


def default_cases(quick: bool) -> list[Case]:
    """The study's grid: the paper's 0.5 m circle up to its feasibility limit, a small fast circle, offsets."""
    if quick:
        return [Case(radius=0.5, omega=1.0), Case(radius=0.1, omega=3.0, offset=0.2)]
    cases = [Case(radius=0.5, omega=w) for w in (0.5, 1.0, 2.0, 3.0, 3.5)]
    cases += [Case(radius=0.5, omega=w, offset=0.2) for w in (1.0, 2.0)]
    cases += [Case(radius=0.1, omega=w) for w in (2.0, 4.0, 6.0, 8.0)]
    cases += [Case(radius=0.1, omega=w, offset=0.2) for w in (2.0, 4.0, 6.0)]
    return cases


def study(cases: list[Case], *, revolutions: float = 2.0, progress: bool = True) -> list[CaseResult]:
    """Run every case; prints one line per case on stderr when ``progress``."""
    out = []
    for case in cases:
        start = time.perf_counter()
        try:
            res = run_case(case, revolutions=revolutions)
        except ballctl.errors.InfeasibleReferenceError as exc:  # the exact inversion has no periodic solution here
            if progress:
                print(f"  radius {case.radius} m, omega {case.omega} rad/s, offset {case.offset} m: {exc}",
                      file=sys.stderr)
            nan = float("nan")
            res = CaseResult(case=case, speed=case.radius * case.omega, tilt_deg=nan, angle_difference_deg=nan,
                             open_loop_pct=nan, quasi_static_lqr_pct=nan, quasi_static_contact_lqr_pct=nan,
                             exact_lqr_pct=nan, inversion_residual=nan, spin_drift=nan, traces={})
        out.append(res)
        if progress:
            print(f"  radius {case.radius} m, omega {case.omega} rad/s, offset {case.offset} m: "
                  f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return out


def table(results: list[CaseResult]) -> str:
    """Markdown table of the study."""
    lines = ["| radius m | omega rad/s | offset m | speed m/s | QS tilt deg | exact-QS angle deg | "
             "(a) open loop % | (b) QS-LQR % | (b') QS contact LQR % | (c) exact LQR % | inversion residual m/s^2 | "
             "spin drift rad/s^2 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        c = r.case
        if not r.traces:
            lines.append(f"| {c.radius:g} | {c.omega:g} | {c.offset:g} | {r.speed:.3g} | exact inversion did not "
                         f"converge | | | | | | | |")
            continue
        lines.append(f"| {c.radius:g} | {c.omega:g} | {c.offset:g} | {r.speed:.3g} | {r.tilt_deg:.3g} | "
                     f"{r.angle_difference_deg:.3g} | {r.open_loop_pct:.3g} | {r.quasi_static_lqr_pct:.3g} | "
                     f"{r.quasi_static_contact_lqr_pct:.3g} | "
                     f"{r.exact_lqr_pct:.3g} | {r.inversion_residual:.1e} | {r.spin_drift:.1e} |")
    return "\n".join(lines)


#: One colour per design in both figures (the open loop grey, as in every ballctl figure).
METHODS = (("open_loop_pct", "(a) quasi-static angles, open loop", OPEN_LOOP_COLOR, "o"),
           ("quasi_static_lqr_pct", "(b) quasi-static 6-state LQR", RUN_COLORS[4], "s"),
           ("quasi_static_contact_lqr_pct", "(b') quasi-static contact LQR", RUN_COLORS[1], "D"),
           ("exact_lqr_pct", "(c) exact LQR", RUN_COLORS[0], "^"))


def figures(results: list[CaseResult], out: Path) -> list[Path]:
    """Error versus speed (one panel per circle), and the error traces of the paper's circle.

    Nothing is clipped: a loop that diverged is drawn as an open marker on the band marked "diverged" above
    the finite values (one row per design), and a speed with no exact reference is shaded and says so.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    paths = []
    groups: dict = {}
    for r in results:
        groups.setdefault((r.case.radius, r.case.offset), []).append(r)
    finite = [getattr(r, a) for r in results for a, *_ in METHODS if np.isfinite(getattr(r, a))]
    lo = 10 ** np.floor(np.log10(max(min(finite), 1e-6))) if finite else 1e-3
    hi = 10 ** np.ceil(np.log10(max(finite))) if finite else 1e2
    band = [hi * 10 ** (0.55 + 0.22 * i) for i in range(len(METHODS))]  # one row per design for diverged loops
    ncol = min(len(groups), 2)
    nrow = -(-len(groups) // ncol)
    fig = Figure(figsize=(6 * ncol, 3.9 * nrow + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol, sharey=True, squeeze=False)).ravel()
    for ax, ((radius, offset), rs) in zip(axes, groups.items()):
        v = np.array([r.speed for r in rs])
        for (attr, label, color, marker), y_band in zip(METHODS, band):
            y = np.array([getattr(r, attr) for r in rs])
            ax.semilogy(v, np.where(np.isfinite(y), y, np.nan), marker=marker, color=color, lw=1.6, ms=6)
            diverged = np.isinf(y)
            ax.plot(v[diverged], np.full(diverged.sum(), y_band), marker, color=color, ms=6, mfc="none", mew=1.6)
        width = 0.02 * (max(v) - min(v) if len(v) > 1 else max(v))
        for r in rs:
            if not r.traces:  # the exact inversion failed: no reference to track
                ax.axvspan(r.speed - width, r.speed + width, color="0.85", zorder=0)
                ax.text(r.speed, np.sqrt(lo * hi), "no exact reference", rotation=90, ha="center",
                        va="center", fontsize=7, color="0.3")
        ax.axhline(1.0, color="black", lw=1.0, ls=(0, (5, 3)))
        ax.axhspan(hi * 10 ** 0.4, hi * 10 ** 1.4, color="0.93", zorder=0)
        ax.set_ylim(lo, hi * 10 ** 1.4)
        decades = [10.0 ** e for e in range(int(np.log10(lo)), int(np.log10(hi)) + 1)]
        ax.set_yticks(decades + [band[len(band) // 2]], [f"{t:g}" for t in decades] + ["diverged"])
        ax.minorticks_off()
        ax.set_xlabel("speed of the contact point [m/s]")
        ax.set_ylabel("largest distance from the reference\n[% of the circle radius]")
        ax.set_title(f"circle radius {radius:g} m, centre offset {offset:g} m")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=c, marker=m, lw=1.6, label=lab) for _, lab, c, m in METHODS]
    handles.append(Line2D([], [], color="0.3", marker="o", mfc="none", lw=0, label="open marker: the loop diverged"))
    handles.append(Line2D([], [], color="black", lw=1.0, ls=(0, (5, 3)), label="1 % of the radius (good enough)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("what the quasi-static plate assumption costs (exact servo plant, last revolution)")
    paths.append(save_figure(fig, out / "moving_plate_cost.png"))
    results = [r for r in results if r.traces]
    paper = [r for r in results if r.case.radius == 0.5 and r.case.offset == 0.0]
    if paper:
        r = max(paper, key=lambda r: r.case.omega)
        tr = r.traces
        fig = Figure(figsize=(7.5, 4.6), layout="constrained")
        ax = fig.subplots()
        notes = []
        for key, t_key, (attr, label, color, _) in (("open", "t_open", METHODS[0]), ("qs", "t", METHODS[1]),
                                                    ("exact", "t", METHODS[3])):
            err = 1e3 * np.asarray(tr[key], dtype=float)
            ok = np.isfinite(err) & (err > 0)
            ax.semilogy(tr[t_key], np.where(ok, err, np.nan), color=color, lw=1.8, label=label)
            if np.isinf(err).any():
                t_div = float(np.asarray(tr[t_key])[np.argmax(np.isinf(err))])
                ax.axvline(t_div, color=color, lw=1.0, ls=":")
                notes.append(f"{label.split(')')[0]}) diverged at t = {t_div:.2f} s (dotted)")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("distance of the contact point\nfrom the reference [mm]")
        ax.set_title(f"circle radius 0.5 m, omega = {r.case.omega:g} rad/s, exact servo plant"
                     + ("\n" + "; ".join(notes) if notes else ""), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        fig.legend(loc="outside lower center", ncol=3, frameon=False, fontsize=8)
        paths.append(save_figure(fig, out / "moving_plate_traces.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two cases, one revolution")
    parser.add_argument("--out", type=Path, default=None, help="directory for moving_plate_table.md and figures")
    args = parser.parse_args(argv)
    cases = default_cases(args.quick)
    results = study(cases, revolutions=1.0 if args.quick else 2.0)
    text = table(results)
    print(text)
    for label, attr in (("quasi-static 6-state LQR", "quasi_static_lqr_pct"),
                        ("quasi-static contact LQR", "quasi_static_contact_lqr_pct"),
                        ("exact LQR", "exact_lqr_pct")):
        good = [r for r in results if getattr(r, attr) < 1.0]
        bad = [r for r in results if not getattr(r, attr) < 1.0]
        print(f"{label}: below 1 % of the radius in {len(good)} of {len(results)} cases"
              + (f"; slowest failure at speed {min(r.speed for r in bad):.3g} m/s" if bad else ""))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "moving_plate_table.md").write_text(text + "\n")
        for p in figures(results, args.out):
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    main()
