"""``ballctl track``: the main job -- a tracking controller that works on the rig, verified before export.

For a path on the plate and a rig (:class:`~ballctl.RigProfile`: the exact
servo plate as truth, actuation limits, sensors), the job

1. builds the references (quasi-static and exact inversion) on the rig's
   nominal plant (:meth:`~ballctl.RigProfile.design_plant`: no design sees the
   rig's imperfections),
2. designs every requested design (:data:`ballctl.ball_plate.design.RIG_DESIGNS`) with
   the rig's Kalman filter (output feedback, offset-free by default: it
   estimates and cancels a plate level error and a rolling resistance) or
   state feedback,
3. **verifies** each on the truth plant -- the servo plate with the rig's
   imperfections (level error, rolling resistance, lost frames, dead band,
   timing jitter), sensor rate, latency, noise and limits, from the initial
   offset -- and tabulates converged or not, RMS contact error over the last
   period, peak tilt, estimator error and the contact (required friction
   coefficient, least normal force: ``slips`` / ``lifts off``),
4. **verifies each that passes over the rig's uncertainty** (``--robust-runs``
   runs, 200 by default, :func:`ballctl.ball_plate.verification.verify_over_uncertainty`) and
   exports the design that passes both (nominal; >= 99 % of the drawn rigs
   converge and their 95th-percentile RMS error is below ``--max-rms-error``)
   with the smallest 95th-percentile error -- and refuses to export a design
   that fails unless ``--force`` (the failure is then written into the summary),
5. reruns the exported design with noise and latency set to zero, and writes
   the observability of each design per sensor set.

Files: ``summary.md``, ``summary.json`` (strict JSON; layout in
``docs/tracking.md``), ``tracking.png``, ``robust.png`` (the error bands over
the drawn rigs), and when a design is exported
``gain_schedule.npz``/``.json``/``.h``, ``estimator.npz`` and ``c_controller/``
(the C step function with its generated data header).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .._errors import ParameterError, PartitionError
from .._io import atomic_write, atomic_write_text, strict_json
from ._common import integer, number, output_dir, output_file, rig_from_spec

__all__ = ["NAME", "HELP", "PATHS", "add_arguments", "run", "verdict"]

NAME = "track"
HELP = "the main job: design, verify on the rig's truth plant, export the best passing controller"

#: paths the job tracks (size set by --radius in m, speed by --omega in rad/s)
PATHS = ("circle", "ellipse", "figure8", "lissajous", "waypoints")
#: sensor sets of the observability table
SENSOR_SETS = {"contact point": ("contact_x", "contact_y"),
               "contact point + plate angles": ("contact_x", "contact_y", "alpha", "beta"),
               "plate angles": ("alpha", "beta")}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("--config", default=None, help="TOML file whose keys (or [track] table) set any flag")
    g = p.add_argument_group("path")
    g.add_argument("--path", choices=PATHS, default="circle", help="path on the plate (default circle)")
    g.add_argument("--radius", type=number("m", low=0, low_inclusive=False), default=0.5,
                   help="path size in m (circle radius; default 0.5)")
    g.add_argument("--omega", type=number("rad/s", nonzero=True), default=1.0,
                   help="path rate in rad/s (default 1.0)")
    g.add_argument("--roll-rate", type=number("rad/s"), default=40.0,
                   help="ball roll rate on the circle in rad/s (default 40; other paths roll without spin)")
    g.add_argument("--center", type=number("m"), nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
                   help="path centre in m (default 0 0)")
    g = p.add_argument_group("rig and controller")
    g.add_argument("--rig", default="tabletop", help="rig preset (tabletop, lab, ideal) or a TOML file")
    g.add_argument("--truth", default=None, metavar="RIG",
                   help="verify on another rig's truth (preset or TOML file: its plant, imperfections and "
                        "uncertainty), e.g. the rig itself when --rig is an identified model of it; default --rig")
    g.add_argument("--design", default="auto",
                   help="auto (verify all, export the best passing) or one of exact, qs-contact, qs-paper")
    g.add_argument("--feedback", choices=("output", "state"), default="output",
                   help="output feedback through the rig's Kalman filter (default) or full state feedback")
    g.add_argument("--duration", type=number("s", low=0, low_inclusive=False), default=None,
                   help="horizon and run length in s (default: two periods, or the path's length)")
    g.add_argument("--weight-scale", type=number(low=0, low_inclusive=False), default=1.0,
                   help="multiply the Bryson state weights (default 1)")
    g.add_argument("--max-input-error-deg", type=number("deg", low=0, high=90, low_inclusive=False), default=3.0,
                   help="Bryson limit on plate-angle corrections in deg (default 3)")
    g = p.add_argument_group("verification")
    g.add_argument("--offset", type=number("m"), nargs=2, default=(0.05, 0.0), metavar=("DX", "DY"),
                   help="initial contact-point offset in m (default 0.05 0)")
    g.add_argument("--max-rms-error", type=number("m", low=0, low_inclusive=False), default=0.005,
                   help="a design passes when its RMS contact error over the last period is below this, in m "
                        "(default 0.005)")
    g.add_argument("--seed", type=integer(low=0), default=0, help="sensor-noise seed")
    g.add_argument("--robust-runs", type=integer(low=0), default=200,
                   help="closed-loop runs over the rig's uncertainty per design (default 200; 0 verifies the "
                        "nominal truth only)")
    g.add_argument("--offset-free", action=argparse.BooleanOptionalAction, default=True,
                   help="designs that estimate and cancel a plate level error and integrate the path-frame error "
                        "(default); --no-offset-free designs the plain LQG (a level error then leaves a steady "
                        "error)")
    g.add_argument("--force", action="store_true",
                   help="export even a design that fails verification (the failure is written into the summary)")
    p.add_argument("--out", default="ballctl_out", help="output folder (default ballctl_out)")
    p.add_argument("--log", default=None, metavar="FILE.csv",
                   help="also write the exported design's nominal verification run as the rig log its firmware "
                        "would have written (commands sent, measurements as received; docs/identification.md)")
    p.add_argument("--animate", default=None, nargs="?", const="tracking.gif", metavar="FILE",
                   help="also write an animation of the closed loop (ball on the tilting plate) into --out: "
                        "FILE ending in .gif (pillow) or .mp4 (ffmpeg); default tracking.gif")


def verdict(summary, *, max_rms_error: float, saturated_fraction: float) -> tuple[bool, bool, str]:
    """``(converged, passed, reason)`` of a verification run.

    Converged: not stopped for divergence and the RMS contact error over the
    last period below ``max_rms_error`` m. Passed: converged and the tilt limit
    active in less than 10 % of the steps of the last period. (Whether the ball
    really rolls -- the friction it needs, its normal force -- is reported
    beside the verdict, see ``contact`` in the summary.)

    Parameters
    ----------
    summary : ClosedLoopSummary
        Of the verification run on the truth plant.
    max_rms_error : float
        Largest RMS contact error over the last period in m.
    saturated_fraction : float
        Fraction of the last period's steps with an input at the tilt limit.

    Returns
    -------
    converged, passed : bool
    reason : str
    """
    if summary.diverged:
        return False, False, f"diverged at t = {summary.diverged_at_s:.3g} s"
    rms = summary.rms_error_last_period_m
    if rms is None:
        rms = summary.steady_state_error_m
    if not rms < max_rms_error:
        return False, False, f"RMS error {rms:.3g} m >= {max_rms_error:g} m"
    if saturated_fraction > 0.1:
        return True, False, f"saturates persistently ({100 * saturated_fraction:.0f} % of the last period)"
    return True, True, "passes"


def _path(args, center):
    from ..references import LissajousPath, WaypointPath

    r, w = args.radius, args.omega
    if args.path == "circle":
        return LissajousPath.circle(r, w, center=center)
    if args.path == "ellipse":
        return LissajousPath.ellipse(r, 0.6 * r, w, center=center)
    if args.path == "figure8":
        return LissajousPath.figure_eight(r, w, center=center)
    if args.path == "lissajous":
        return LissajousPath(amplitude_x=r, amplitude_y=0.7 * r, omega_x=w, omega_y=1.5 * w, phase_x=0.4,
                             center=center)
    pts = np.array([[0, 0], [0.6, 0.2], [1.0, 0.8], [0.4, 1.2], [-0.2, 0.8]]) * r + np.asarray(center)
    return WaypointPath(pts, speed=0.3 * r * w, ramp_time=1.0)


def _references(args, rig, dt, with_exact: bool):
    """Quasi-static and (if asked) exact references, the horizon in s and the period (None for open paths)."""
    from ..references import CircularMotion, LissajousPath, PathMotion
    from ..references.moving_plate import MovingPlateMotion, exact_circular_motion

    truth = rig.design_plant()  # references are the design's: the imperfections are the truth's alone
    quasi = truth.quasi_static()
    center = tuple(args.center)
    path = _path(args, center)
    period = getattr(path, "period", None)
    if args.duration is not None:
        horizon = dt * int(round(args.duration / dt))
    elif period is not None:
        horizon = dt * int(np.ceil(2 * period / dt - 1e-9))
    else:
        horizon = dt * int((path.duration - 2 * dt) / dt)
    if horizon <= 0:
        raise ParameterError(f"duration must be at least one control period ({dt} s)")
    exact = None
    if args.path == "circle":
        qs = CircularMotion(quasi, args.radius, args.omega, args.roll_rate, center=center)
        if with_exact:
            exact = exact_circular_motion(truth, LissajousPath.circle(args.radius, args.omega, center=center),
                                          args.roll_rate, duration=horizon + 2 * dt)
    else:
        qs = PathMotion(quasi, path, duration=horizon + 2 * dt, spin=0.0)
        if with_exact:
            exact = MovingPlateMotion(truth, path, spin=0.0, duration=horizon + 2 * dt)
    return truth, qs, exact, horizon, period


def _initial_state(qs_ref, exact_ref, offset):
    """Truth state at t = 0: the exact reference's, else the quasi-static one with the plate at its angles."""
    if exact_ref is not None:
        s = exact_ref(0.0)
        x0, xd0 = s.x.copy(), s.xd.copy()
    else:
        s = qs_ref(0.0)
        x0 = np.concatenate([s.x, s.u])
        xd0 = np.concatenate([s.xd, s.ud])
    x0[0] += offset[0]
    x0[1] += offset[1]
    return x0, xd0


def run(args: argparse.Namespace) -> int:
    """The main job (see the module docstring).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status.
    """
    from dataclasses import replace

    from ..simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
    from ..design.estimator import EstimatorSettings, InputDisturbance, design_estimator
    from ..design.observability import sensor_table
    from ..figures.plotting import plot_robust_bands, plot_tracking, save_figure
    from ..schedule import ControllerDataOptions, controller_footprint, write_c_controller
    from ..deploy.sil import ExportOptions, ExportVerificationError, export_controller
    from ..ball_plate.design import RIG_DESIGNS, RigDesignOptions, design_for_rig
    from ..ball_plate.verification import VerificationSettings, verify_over_uncertainty

    if args.design != "auto" and args.design not in RIG_DESIGNS:
        raise ParameterError(f"--design must be auto or one of {', '.join(RIG_DESIGNS)}, got {args.design!r}")
    if not args.max_rms_error > 0:
        raise ParameterError(f"--max-rms-error must be > 0 m, got {args.max_rms_error}")
    out = output_dir(args.out, "--out")
    out.mkdir(parents=True, exist_ok=True)
    log_path = None
    if args.log is not None:  # checked before the work starts
        if not str(args.log).lower().endswith(".csv"):
            raise ParameterError(f"--log must name a .csv file, got {args.log!r}")
        log_path = output_file(args.log, "--log")
    rig = rig_from_spec(args.rig)
    truth_rig = rig if args.truth is None else rig_from_spec(args.truth)
    if truth_rig.dt != rig.dt:
        raise ParameterError(f"--truth {args.truth!r} runs at dt = {truth_rig.dt} s but --rig {args.rig!r} at "
                             f"{rig.dt} s: the design's control period must be the rig's")
    if truth_rig.signals != rig.signals:
        raise ParameterError(f"--truth {args.truth!r} measures {truth_rig.signals} but --rig {args.rig!r} "
                             f"{rig.signals}: the design's sensors must be the truth's")
    dt = rig.dt
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(f"[1/5] rig {rig.name!r}: {rig.description}")
    designs = list(RIG_DESIGNS) if args.design == "auto" else [args.design]
    design_plant, qs_ref, exact_ref, horizon, period = _references(args, rig, dt, "exact" in designs)
    truth = truth_rig.truth_plant()
    say(f"[2/5] references: {args.path}, horizon {horizon:.4g} s at dt = {dt} s"
        + ("" if exact_ref is None else f" (exact inversion residual "
           f"{exact_ref.residuals['contact_acceleration']:.1e} m/s^2)"))
    x0, xd0 = _initial_state(qs_ref, exact_ref, args.offset)
    x0_truth = truth_rig.truth_initial_state(x0)  # the plate rests at its level error
    period_window = period if period is not None else horizon
    # the window the verdicts use: the last period, or the last 20 % of an open path or a shorter run (as
    # ClosedLoopSummary)
    window = period if period is not None and horizon >= period - 1e-9 else 0.2 * horizon
    divergence = max(0.2, 2 * args.radius)
    sim = ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=max(2, int(np.ceil(dt / 0.01 - 1e-9))),
                            divergence_error=divergence, imperfections=truth_rig.imperfections.loop)
    controllers, runs, verification, robust = {}, {}, {}, {}
    not_applicable = {}
    for i, name in enumerate(designs):
        say(f"[3/5] design {i + 1}/{len(designs)}: {name} ({RIG_DESIGNS[name]})")
        try:
            ctrl = design_for_rig(rig, exact_ref if name == "exact" else qs_ref, name, horizon=horizon,
                                  output_feedback=args.feedback == "output", offset_free=args.offset_free,
                                  options=RigDesignOptions(weight_scale=args.weight_scale,
                                                           max_input_error=float(np.deg2rad(args.max_input_error_deg))))
        except PartitionError as exc:  # e.g. the paper's subsystem is exact on the circle only
            not_applicable[name] = str(exc)
            say(f"      not applicable to this path: {exc}")
            continue
        controllers[name] = ctrl
        r = simulate_closed_loop(_on_truth_sensors(ctrl, truth_rig), x0_truth, xd0, truth=truth, seed=args.seed,
                                 options=sim)
        runs[name] = r
        sm = r.summary()
        last = r.t >= r.t[-1] - period_window - 1e-9
        sat = 0.0
        if rig.limits.max_angle is not None and r.diverged_at_s is None:
            sat = float(np.mean(np.any(np.abs(r.u[last]) >= rig.limits.max_angle * (1 - 1e-9), axis=1)))
        converged, passed, reason = verdict(sm, max_rms_error=args.max_rms_error, saturated_fraction=sat)
        rms = sm.rms_error_last_period_m if sm.rms_error_last_period_m is not None else sm.steady_state_error_m
        verification[name] = {
            "converged": converged, "passed": passed, "reason": reason,
            "rms_error_m": None if sm.diverged else rms,
            "peak_error_last_period_m": sm.peak_error_last_period_m,
            "final_error_m": sm.final_error_m,
            "peak_tilt_deg": float(np.rad2deg(sm.peak_tilt_rad)),
            "estimator_rms_error_m": None if sm.diverged else sm.estimator_rms_error_m,
            "saturated_fraction_last_period": sat,
            "diverged_at_s": sm.diverged_at_s,
            "zoh_reference_deviation_m": ctrl.zoh_deviation,
            "feedback": r.feedback,
            "offset_free": ctrl.offset_free,
            "disturbance_observability": _disturbance_observability(ctrl),
            "contact": {"peak_friction_coefficient": sm.peak_friction_coefficient,
                        "least_normal_force_N": sm.least_normal_force_N,
                        "peak_friction_coefficient_last_period": sm.peak_friction_coefficient_last_period,
                        "least_normal_force_last_period_N": sm.least_normal_force_last_period_N,
                        "rig_friction_coefficient": truth_rig.friction_coefficient,
                        "whole_run": sm.contact_verdict(truth_rig.friction_coefficient),
                        "last_period": sm.contact_verdict(truth_rig.friction_coefficient, last_period=True)},
            "wall_time_s": sm.wall_time_s,
        }
        say(f"      nominal: {reason}; RMS error {_fmt(verification[name]['rms_error_m'])} m, peak tilt "
            f"{verification[name]['peak_tilt_deg']:.3g} deg")
        if args.robust_runs > 0 and not passed:
            verification[name]["robust"] = None  # failed on the nominal truth: no longer a candidate
        elif args.robust_runs > 0:
            rv = verify_over_uncertainty(_on_truth_sensors(ctrl, truth_rig), replace(truth_rig, limits=rig.limits),
                                         x0, xd0, seed=args.seed, window_s=window, max_rms_error=args.max_rms_error,
                                         settings=VerificationSettings(n_runs=args.robust_runs,
                                                                       divergence_error=divergence))
            robust[name] = rv
            verification[name]["robust"] = rv.as_dict()
            if passed and not rv.passed:
                passed = False
                reason = (f"fails over the rig's uncertainty: {100 * rv.success_rate:.1f} % of "
                          f"{rv.runs} runs converge, 95th-percentile RMS error {_fmt(rv.rms_p95_m)} m")
                verification[name].update(passed=False, reason=reason)
            say(f"      over {rv.runs} drawn rigs: {100 * rv.success_rate:.1f} % converge, RMS p50 "
                f"{_fmt(rv.rms_p50_m)} m, p95 {_fmt(rv.rms_p95_m)} m ({rv.wall_time_s:.2g} s)")
    designs = [n for n in designs if n in controllers]
    if not designs:
        raise ParameterError("no design applies to this path: " + "; ".join(f"{n}: {why}"
                                                                            for n, why in not_applicable.items()))
    passing = [n for n in designs if verification[n]["passed"]]
    forced = False

    def rank(n):  # the 95th percentile over the drawn rigs, else the nominal run
        rv = robust.get(n)
        return rv.rms_p95_m if rv is not None else verification[n]["rms_error_m"]

    if passing:
        chosen = min(passing, key=rank)
        why = (f"{chosen} passes with the smallest RMS error over the last period "
               + (f"at the 95th percentile over the drawn rigs ({rank(chosen):.3g} m)" if robust else
                  f"({rank(chosen):.3g} m)"))
    elif args.force:
        finite = [n for n in designs if verification[n]["rms_error_m"] is not None] or designs
        chosen = min(finite, key=lambda n: verification[n]["rms_error_m"] or np.inf)
        forced = True
        why = f"no design passes; --force exports {chosen}: {verification[chosen]['reason']}"
    else:
        chosen = None
        why = "no design passes verification on the truth plant: nothing exported (use --force to export anyway)"
    say(f"[4/5] {why}")
    ideal = controller_summary = None
    files = ["summary.md", "summary.json", "tracking.png"]
    if chosen is not None:
        ctrl = controllers[chosen]
        clean_rig = rig.without_imperfections()
        clean_ctrl = ctrl
        if ctrl.estimator is not None:
            est = ctrl.estimator
            clean_ctrl = replace(ctrl, estimator=design_estimator(
                ctrl.ltv, ctrl.discrete, ctrl.system.coordinate_names, clean_rig.sensors,
                settings=EstimatorSettings(process_std=est.process_std),
                disturbance=InputDisturbance(directions=est.disturbance_map) if est.n_disturbances else None,
                integral=est.integral))
        r_ideal = simulate_closed_loop(clean_ctrl, x0, xd0, truth=clean_rig.truth_plant(), seed=args.seed,
                                       options=replace(sim, limits=clean_rig.limits, imperfections=None))
        si = r_ideal.summary()
        ideal = {"rms_error_m": si.rms_error_last_period_m if si.rms_error_last_period_m is not None
                 else si.steady_state_error_m, "diverged_at_s": si.diverged_at_s,
                 "peak_tilt_deg": float(np.rad2deg(si.peak_tilt_rad))}
        if period is not None and args.path == "circle":
            ideal["rms_error_percent_of_radius"] = 100 * ideal["rms_error_m"] / args.radius
        schedule = ctrl.to_schedule()
        schedule.save(out / "gain_schedule.npz")
        schedule.save(out / "gain_schedule.json")
        schedule.to_c_header(out / "gain_schedule.h")
        files += ["gain_schedule.npz", "gain_schedule.json", "gain_schedule.h"]
        if ctrl.estimator is not None:
            _save_estimator(out / "estimator.npz", ctrl)
            say("      exporting the C controller: its representation checked in closed loop on the truth")
            try:
                export = export_controller(ctrl, replace(truth_rig, limits=rig.limits), out / "c_controller",
                                           x0=x0_truth, xd0=xd0, seed=args.seed,
                                           options=ExportOptions(substeps=sim.substeps))
                controller_summary = export.as_dict()
            except ExportVerificationError as exc:
                write_c_controller(ctrl, out / "c_controller", rig=rig,
                                   options=ControllerDataOptions(representation="plan"))
                controller_summary = {"kind": "plan", "reason": str(exc),
                                      "footprint": controller_footprint(out / "c_controller").as_dict()}
            files += ["estimator.npz", "c_controller/"]
            if log_path is not None:
                from ..ball_plate.rig_log import RigLog

                log_path.parent.mkdir(parents=True, exist_ok=True)
                RigLog.from_closed_loop(runs[chosen], truth_rig, ctrl,
                                        source=f"ballctl track --rig {args.rig}: {chosen} on the truth of rig "
                                               f"{truth_rig.name!r}").write_csv(log_path)
                say(f"      rig log of the verification run: {log_path}")
    say("[5/5] observability per sensor set, figures, summary")
    models = {n: (c.ltv, c.discrete, c.system.coordinate_names) for n, c in controllers.items()}
    _, obs_table = sensor_table(models, SENSOR_SETS, steps=int(round(min(horizon, 2.0) / dt)))
    plotted = {n: r for n, r in runs.items() if r.diverged_at_s is None} or runs
    if args.animate:
        from ..figures.animation import animate_ball_plate

        shown = chosen if chosen is not None else next(iter(plotted))
        animate_ball_plate(runs[shown], out / args.animate, ball_radius=rig.ball.radius)
        files.append(args.animate)
    save_figure(plot_tracking(plotted, title=f"{args.path} on rig {rig.name!r} (truth: servo plate)"),
                out / "tracking.png")
    if robust:
        save_figure(plot_robust_bands(robust, max_rms_error=args.max_rms_error,
                                      title=f"{args.path} on rig {rig.name!r}: contact error over "
                                            f"{args.robust_runs} drawn rigs"), out / "robust.png")
        files.append("robust.png")
    summary = {
        "rig": rig.as_dict(),
        "path": {"kind": args.path, "size_m": args.radius, "rate_rad_s": args.omega,
                 "center_m": list(args.center), "period_s": period, "horizon_s": horizon,
                 "initial_offset_m": list(args.offset)},
        "verification": verification,
        "not_applicable": not_applicable,
        "exported_design": chosen,
        "forced": forced,
        "reason": why,
        "max_rms_error_m": args.max_rms_error,
        "noise_and_latency_zero": ideal,
        "controller": controller_summary,
        "truth_rig": None if args.truth is None else truth_rig.as_dict(),
        "files": files,
    }
    atomic_write_text(out / "summary.json", json.dumps(strict_json(summary), indent=2, allow_nan=False))
    imp = truth_rig.imperfections
    lines = ["# ballctl track: summary", "",
             f"Rig **{rig.name}**: {rig.description}." + (
                 "" if args.truth is None else f" Verified on the truth of rig **{truth_rig.name}** "
                                               f"({truth_rig.description})."), "",
             f"Path: {args.path}, size {args.radius} m, rate {args.omega} rad/s, centre {tuple(args.center)} m; "
             f"horizon {horizon:.4g} s at dt = {dt} s; initial offset {tuple(args.offset)} m. "
             f"Truth: exact servo plate; {args.feedback} feedback.", "",
             "## Verification on the truth plant", "",
             f"Truth imperfections (no design sees them): level error "
             f"{', '.join(f'{v:.3g}' for v in imp.as_dict()['plate_offset_deg'])} deg, rolling "
             f"resistance {imp.rolling_resistance:g}, {100 * imp.frame_drop:g} % frames "
             f"lost, dead band {imp.as_dict()['servo_deadband_deg']:.3g} deg, timing jitter "
             f"{1e3 * imp.timing_jitter_s:.3g} ms.", "",
             "| design | offset-free | converged | RMS error last period [m] | peak tilt [deg] | "
             "estimator RMS error [m] | friction needed, whole run / last period (rig: "
             f"{rig.friction_coefficient:g}) | least normal force [N] | contact | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in designs:
        v = verification[n]
        c = v["contact"]
        lines.append(f"| {n} | {'yes' if v['offset_free'] else 'no'} | {'yes' if v['converged'] else 'no'} | "
                     f"{_fmt(v['rms_error_m'])} | {v['peak_tilt_deg']:.3g} | {_fmt(v['estimator_rms_error_m'])} | "
                     f"{_fmt(c['peak_friction_coefficient'])} / {_fmt(c['peak_friction_coefficient_last_period'])} | "
                     f"{_fmt(c['least_normal_force_N'])} | {c['whole_run']} | {v['reason']} |")
    for n, why in not_applicable.items():
        lines.append(f"| {n} | - | not applicable | - | - | - | - | - | - | not applicable to this path: {why} |")
    flagged = [n for n in designs if verification[n]["contact"]["whole_run"] in ("slips", "lifts off")]
    if flagged:
        servo = rig.servo
        why = ("" if servo.max_torque is None else
               f" (a servo at its torque limit turns this plate at up to "
               f"{servo.max_torque / max(servo.plate_inertia[:2]):.3g} rad/s^2)")
        lines += ["", f"Contact: on the truth the ball of {', '.join(flagged)} needs more friction than the rig's "
                      f"{rig.friction_coefficient:g} or is unloaded at some samples (column 'contact'): a real ball "
                      f"would slip or hop there, where the rolling model does not hold. The plate's angular "
                      f"acceleration unloads a ball far from the pivot{why}; start closer to the path (--offset), "
                      f"soften the design (--weight-scale < 1) or track a smaller path if that matters."]
    if robust:
        unc = truth_rig.uncertainty
        rr_range = "the rig's" if unc.rolling_resistance is None else "%g-%g" % unc.rolling_resistance
        lines += ["", f"## Verification over the rig's uncertainty ({args.robust_runs} drawn rigs per design)", "",
                  f"Drawn per run: ball mass ({100 * unc.mass_rel:g} % std) and radius ({100 * unc.radius_rel:g} %), "
                  f"servo bandwidth ({100 * unc.servo_bandwidth_rel:g} %), sensor latency error "
                  f"(+-{1e3 * unc.latency_s:g} ms), level error ({np.rad2deg(unc.plate_offset):.3g} deg std about "
                  f"the rig's), rolling resistance "
                  f"({rr_range}), "
                  f"sensor noise ({100 * unc.noise_rel:g} %), initial offset ({1e3 * unc.initial_offset_m:g} mm "
                  f"std); lost frames, dead band and jitter as the rig's.", "",
                  f"Pass criteria: at least {100 * 0.99:g} % of the runs converge (not diverged and RMS error over "
                  f"the last period below {args.max_rms_error:g} m) and the 95th-percentile RMS error is below "
                  f"{args.max_rms_error:g} m. Reported beside them: the runs whose ball needs more friction than "
                  f"the rig's {rig.friction_coefficient:g} (slip) or loses its normal force (lift off) at some "
                  f"sample.", "",
                  "| design | converged runs | RMS p50 [m] | RMS p95 [m] | worst RMS [m] | runs that slip | "
                  "runs that lift off | passes |",
                  "|---|---|---|---|---|---|---|---|"]
        for n in designs:
            rv = robust.get(n)
            if rv is None:
                lines.append(f"| {n} | not run: fails on the nominal truth | | | | | | no |")
                continue
            lines.append(f"| {n} | {100 * rv.success_rate:.1f} % | {_fmt(rv.rms_p50_m)} | {_fmt(rv.rms_p95_m)} | "
                         f"{_fmt(rv.worst_rms_m) if np.isfinite(rv.worst_rms_m) else 'diverged'} | "
                         f"{rv.slipping_runs} | {rv.lift_off_runs} | {'yes' if rv.passed else 'no'} |")
    lines += ["", f"**Exported:** {chosen or 'nothing'} -- {why}."]
    if ideal is not None:
        lines.append(f"With noise and latency set to zero the exported design keeps an RMS error of "
                     f"{ideal['rms_error_m']:.3g} m over the last period.")
    if controller_summary is not None:
        fp = controller_summary["footprint"]
        how = (f"a periodic controller (Fourier order {controller_summary['fourier_order']}, chosen in closed loop "
               f"on the truth within {100 * controller_summary['tolerance']:g} % of the full-precision one)"
               if controller_summary["kind"] == "fourier" else
               f"per-step tables ending on a hold ({controller_summary.get('reason', 'no periodic reference')})")
        lines += ["", f"**C controller** (`c_controller/`, {fp['real']}): {how}; about {fp['flash_bytes']:,} B of "
                      f"flash, {fp['ram_bytes']:,} B of RAM and {fp['multiply_adds_per_step']:,} multiply-adds per "
                      f"step on a 32-bit microcontroller."]
    lines += ["", "## Observability per sensor set (first 2 s)", "", obs_table, "",
              "Files: " + ", ".join(files) + "."]
    text = "\n".join(lines) + "\n"
    atomic_write_text(out / "summary.md", text)
    print(text)
    return 0 if chosen is not None else 1


def _on_truth_sensors(ctrl, truth_rig):
    """The controller with its filter's gains, reading the truth rig's sensors (their noise and bias).

    The loops draw the sensors' noise and bias from the controller's estimator; with ``--truth`` they must be
    the truth's (the filter's gains and latency stay the design's).
    """
    est = ctrl.estimator
    if est is None:
        return ctrl
    from dataclasses import replace

    by_signal = {sig: (s, i) for s in truth_rig.sensors for i, sig in enumerate(s.signals)}
    sensors = []
    for s in est.sensors:
        truth_sensor = by_signal[s.signals[0]][0]
        idx = [by_signal[sig][1] for sig in s.signals]
        sensors.append(replace(s, noise_std=tuple(truth_sensor.noise_std[i] for i in idx),
                               bias=tuple(truth_sensor.bias[i] for i in idx)))
    return replace(ctrl, estimator=replace(est, sensors=tuple(sensors)))


def _disturbance_observability(ctrl) -> dict | None:
    """Rank of the offset-free filter's augmented pair, with and without its disturbance states."""
    est = ctrl.estimator
    report = None if est is None else est.disturbance_observability
    if report is None:
        return None
    return {"rank": report.rank, "states": report.n_states, "disturbance_states": est.n_disturbances,
            "observable_disturbances": True, "least_observable": report.least_observable()}


def _fmt(value) -> str:
    """A number for the tables ("-" for none)."""
    return "-" if value is None else f"{value:.3g}"


def _save_estimator(path: Path, ctrl) -> None:
    """The Kalman filter a rig runs: gains, measurement and model matrices, the law on its state, sampling, latency."""
    import io

    est = ctrl.estimator
    buf = io.BytesIO()
    np.savez(buf, update_gains=est.kalman.update_gains, C=est.kalman.C, Ad=est.Ad, Bd=est.Bd,
             feedback_gains=ctrl.feedback_gains, sampled=est.sampled, latency_steps=np.array(est.latency_steps),
             dt=np.array(ctrl.dt), signal_names=np.array(est.signal_names),
             state_names=np.array(ctrl.state_names + ctrl.augmented_state_names), noise_std=est.noise_std)
    atomic_write(path, buf.getvalue())
