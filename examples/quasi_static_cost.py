r"""What the quasi-static plate assumption costs: a study on the exact moving-plate model.

For circles of several radii, speeds and centre offsets this script measures

(a) **open loop**: the quasi-static plate angles (the paper's dynamic
    inversion, with their exact rates and accelerations) applied to the exact
    prescribed-plate plant: largest distance from the circle over one
    revolution, in % of the radius;
(b) **quasi-static LQR**: the finite-horizon LQR of the paper designed on
    :class:`~ballctl.BallPlate` along :class:`~ballctl.CircularMotion`, its
    zero-order-hold angle commands sent to the exact *servo* plant
    (:class:`ServoPlateBallPlate`: plate inertia, a 2nd-order servo of
    bandwidth 60 rad/s and damping 0.8; this is also how a ZOH command gets
    rates: the servo filters it);
(b') **quasi-static contact LQR**: as (b) but on the 4-state contact subsystem
    ``(contact_x, contact_y)`` and rates only (no yaw feedback). The yaw loop of
    the 6-state design is what breaks on the exact plant: the yaw responds to
    lateral contact acceleration with a gain of order ``tan(lean)/R`` (the
    appendix-C coefficients b4, b5, ~440 on the paper's circle), and the exact
    plate injects the term ``R alpha''`` (and the pivot offset) straight into the
    contact acceleration at every commanded step;
(c) **exact LQR**: the same design chain (:func:`ballctl.design_tracking_lqr`)
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
from ballctl.plants.ball_plate_moving import (MovingPlateBallPlate, MovingPlateParameters, ServoParameters,
                                              ServoPlateBallPlate)
from ballctl.references.moving_plate import _Fourier, exact_circular_motion
from ballctl import NonFiniteStateError
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
SUBSTEPS = 8   # RK4 steps of 2.5 ms: |h lambda| < 0.2 for the 60 rad/s servo, local error ~1e-10 m


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
    ref = exact_circular_motion(truth, case.radius, case.omega, roll_rate, center=center,
                                duration=max(horizon, period) + 2 * DT, n_collocation=64)
    qs_ref = ballctl.CircularMotion(quasi, case.radius, case.omega, roll_rate, center=center)

    # (a) quasi-static angles with their exact rates on the prescribed plant, one revolution
    grid = np.arange(64) * period / 64
    qs_angles = _Fourier(ref.quasi_static_angles(grid), 0.0, period)
    s0 = ref(0.0)
    x0 = s0.x[0].copy()
    xd0 = s0.xd[0].copy()
    x0[5:] = qs_angles(np.array([0.0]))[0]
    xd0[5:] = qs_angles(np.array([0.0]), 1)[0]
    t_ol = np.linspace(0.0, period, 201)
    ol = ballctl.simulate(prescribed, x0, xd0, lambda t: qs_angles(np.array([t]), 2)[0], (0.0, period),
                          t_eval=t_ol, rtol=1e-9, atol=1e-12)
    ol_err = np.hypot(*(ol.x[:, :2] - ref(t_ol).x[:, :2]).T)

    # (b) quasi-static LQR on the servo plant
    part_qs = ballctl.Partition.from_coordinates(quasi, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl_qs = ballctl.design_tracking_lqr(quasi, qs_ref, part_qs, dt=DT, horizon=horizon,
                                          states=part_qs.state_names[:6], max_state_errors=QS_STATE_ERRORS,
                                          max_input_errors={"alpha": INPUT_ERROR, "beta": INPUT_ERROR})
    s_qs = ctrl_qs.samples

    def reduce_qs(k, x, xd):
        return ctrl_qs.ltv.reduce(x[:5] - s_qs.x[k], xd[:5] - s_qs.xd[k])

    x0, xd0 = s0.x[0], s0.xd[0]
    err_b, u_b = _closed_loop(truth, ref, s_qs, ctrl_qs.lqr.gains, reduce_qs, x0, xd0, steps)

    # (b') quasi-static LQR on the contact subsystem only (no yaw feedback)
    contact_states = [nm for nm in part_qs.state_names if nm.startswith("contact")]
    ctrl_qc = ballctl.design_tracking_lqr(quasi, qs_ref, part_qs, dt=DT, horizon=horizon, states=contact_states,
                                          max_state_errors={k: v for k, v in QS_STATE_ERRORS.items()
                                                            if k in contact_states},
                                          max_input_errors={"alpha": INPUT_ERROR, "beta": INPUT_ERROR})

    def reduce_qc(k, x, xd):
        return ctrl_qc.ltv.reduce(x[:5] - s_qs.x[k], xd[:5] - s_qs.xd[k])

    err_b2, _ = _closed_loop(truth, ref, ctrl_qc.samples, ctrl_qc.lqr.gains, reduce_qc, x0, xd0, steps)

    # (c) exact LQR on the servo plant
    part = ballctl.Partition.from_coordinates(truth, ["contact_x", "contact_y", "yaw", "alpha", "beta"],
                                              ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(truth, ref, part, dt=DT, horizon=horizon,
                                       max_state_errors=EXACT_STATE_ERRORS,
                                       max_input_errors={"alpha_cmd": INPUT_ERROR, "beta_cmd": INPUT_ERROR})
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
        except ballctl.InfeasibleReferenceError as exc:  # the exact inversion has no periodic solution here
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


def figures(results: list[CaseResult], out: Path) -> list[Path]:
    """Error versus speed, and the error traces of the paper's circle."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = {}
    for r in results:
        groups.setdefault((r.case.radius, r.case.offset), []).append(r)
    for (radius, offset), rs in groups.items():
        v = [r.speed for r in rs]
        lab = f"rho={radius:g} m, offset={offset:g} m"
        ax.loglog(v, [max(r.open_loop_pct, 1e-6) for r in rs], "o--", label=f"(a) open loop, {lab}")
        ax.loglog(v, [max(r.quasi_static_lqr_pct, 1e-6) for r in rs], "s-", label=f"(b) QS-LQR, {lab}")
        ax.loglog(v, [min(max(r.quasi_static_contact_lqr_pct, 1e-6), 1e4) for r in rs], "d-.",
                  label=f"(b') QS contact LQR, {lab}")
        ax.loglog(v, [max(r.exact_lqr_pct, 1e-6) for r in rs], "^:", label=f"(c) exact LQR, {lab}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("contact speed (m/s)")
    ax.set_ylabel("largest error over a revolution (% of radius)")
    ax.legend(fontsize=6)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    p = out / "moving_plate_cost.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)
    results = [r for r in results if r.traces]
    paper = [r for r in results if r.case.radius == 0.5 and r.case.offset == 0.0]
    if paper:
        r = max(paper, key=lambda r: r.case.omega)
        fig, ax = plt.subplots(figsize=(7, 4))
        tr = r.traces
        ax.semilogy(tr["t_open"], 1e3 * tr["open"] + 1e-9, label="(a) quasi-static angles, open loop")
        ax.semilogy(tr["t"], 1e3 * tr["qs"] + 1e-9, label="(b) quasi-static LQR")
        ax.semilogy(tr["t"], 1e3 * tr["exact"] + 1e-9, label="(c) exact LQR")
        ax.set_xlabel("t (s)")
        ax.set_ylabel("contact error (mm)")
        ax.set_title(f"rho = 0.5 m, omega = {r.case.omega:g} rad/s on the exact servo plant")
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = out / "moving_plate_traces.png"
        fig.savefig(p, dpi=120)
        plt.close(fig)
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    raise SystemExit(main())
