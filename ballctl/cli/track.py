"""``ballctl track``: the main job, LQR tracking of a reference on the nonlinear ball-plate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .._errors import ParameterError
from .._io import atomic_write_text
from ._common import add_ball_arguments, add_circle_arguments, ball_plate, circle, integer, number, output_dir

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "track"
HELP = "the main job: LQR tracking of the circle on the nonlinear ball-plate"

DEFAULT_MAX_STATE_ERRORS = {"contact_x": 0.01, "contact_y": 0.01, "yaw": 0.5,
                            "contact_x_rate": 0.1, "contact_y_rate": 0.1, "yaw_rate": 5.0}
DEFAULT_MAX_INPUT_ERRORS_DEG = 3.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("--config", default=None, help="TOML file whose keys (or [track] table) set any flag")
    add_ball_arguments(p)
    add_circle_arguments(p)
    g = p.add_argument_group("controller")
    pos = number(low=0, low_inclusive=False)
    g.add_argument("--dt", type=number("s", low=0, low_inclusive=False), default=0.01,
                   help="controller sample time in s (default 0.01)")
    g.add_argument("--duration", type=number("s", low=0, low_inclusive=False), default=12.0,
                   help="horizon and run length in s (default 12)")
    g.add_argument("--weight-scale", type=pos, default=1.0,
                   help="multiply the Bryson state weights (default 1)")
    g.add_argument("--max-input-error-deg", type=number("deg", low=0, high=90, low_inclusive=False),
                   default=DEFAULT_MAX_INPUT_ERRORS_DEG,
                   help="Bryson limit on plate-angle corrections in deg (default 3)")
    g.add_argument("--terminal-factor", type=number(low=0), default=1.0, help="Q_N = factor * Q (default 1)")
    g = p.add_argument_group("scenario and rig")
    g.add_argument("--offset", type=number("m"), nargs=2, default=(0.05, 0.0), metavar=("DX", "DY"),
                   help="initial contact-point offset in m (default 0.05 0: outside the circle)")
    g.add_argument("--noise", type=number("m", low=0), default=0.0, help="measurement noise std on x_C, y_C in m")
    g.add_argument("--seed", type=integer(low=0), default=0, help="noise seed")
    g.add_argument("--max-tilt-deg", type=number("deg", low=0, high=90, low_inclusive=False, high_inclusive=False),
                   default=None, help="plate angle limit in deg")
    g.add_argument("--max-rate-deg", type=number("deg/s", low=0, low_inclusive=False), default=None,
                   help="servo slew limit in deg/s")
    g.add_argument("--quantum-deg", type=number("deg", low=0, low_inclusive=False), default=None,
                   help="command resolution in deg")
    g.add_argument("--delay", type=number("s", low=0), default=0.0, help="input delay in s")
    p.add_argument("--out", default="ballctl_out", help="output folder (default ballctl_out)")


def run(args: argparse.Namespace) -> int:
    """The main job: reference -> linearize -> controllability -> discretize -> LQR -> closed loop.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    """
    import json

    from ..closed_loop import RigLimits, simulate_closed_loop
    from ..partition import Partition
    from ..plotting import plot_reference, plot_tracking, save_figure
    from ..tracking import design_tracking_lqr

    out = output_dir(args.out, "--out")
    steps = args.duration / args.dt
    if abs(steps - round(steps)) > 1e-9 * max(1.0, steps) or round(steps) < 1:
        raise ParameterError(f"--duration {args.duration:g} s must be a whole number (>= 1) of --dt {args.dt:g} s "
                             f"steps, got {steps:.6g} steps")
    if args.delay >= args.duration:
        raise ParameterError(f"--delay {args.delay:g} s must be shorter than --duration {args.duration:g} s")
    plant = ball_plate(args)
    ref = circle(args, plant)
    part = Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    states = part.state_names[:6]
    weight = args.weight_scale
    max_inputs = np.deg2rad(args.max_input_error_deg)
    print(f"[1/5] reference: circle r={ref.radius} m, omega={ref.omega} rad/s, tilt {np.rad2deg(ref.tilt):.3f} deg",
          file=sys.stderr)
    print(f"[2/5] linearize + discretize + LQR at dt = {args.dt} s over {args.duration} s", file=sys.stderr)
    ctrl = design_tracking_lqr(
        plant, ref, part, dt=args.dt, horizon=args.duration, states=states,
        max_state_errors={k: v / np.sqrt(weight) for k, v in DEFAULT_MAX_STATE_ERRORS.items()},
        max_input_errors={"alpha": max_inputs, "beta": max_inputs}, terminal_factor=args.terminal_factor)
    print("[3/5] controllability of the 6-state dynamic subsystem", file=sys.stderr)
    ctrb_rank = _controllability_rank(ctrl)
    s0 = ref(0.0)
    x0 = s0.x[0].copy()
    x0[0] += args.offset[0]
    x0[1] += args.offset[1]
    limits = RigLimits(max_angle=np.deg2rad(args.max_tilt_deg) if args.max_tilt_deg is not None else None,
                       max_rate=np.deg2rad(args.max_rate_deg) if args.max_rate_deg is not None else None,
                       quantum=np.deg2rad(args.quantum_deg) if args.quantum_deg is not None else None,
                       delay=args.delay)
    noise = {"contact_x": args.noise, "contact_y": args.noise} if args.noise > 0 else None
    print("[4/5] closed-loop runs", file=sys.stderr)
    runs = {
        "closed loop NL": simulate_closed_loop(ctrl, x0, s0.xd[0], limits=limits, noise_std=noise, seed=args.seed,
                                               progress=True),
        "closed loop L": simulate_closed_loop(ctrl, x0, s0.xd[0], model="linear", limits=limits),
        "open loop NL": simulate_closed_loop(ctrl, x0, s0.xd[0], feedback=False, progress=True),
    }
    print("[5/5] figures, schedule, summary", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    save_figure(plot_reference(ref, np.linspace(0, ref.period, 400)), out / "reference.png")
    save_figure(plot_tracking(runs, title="ball-plate circle tracking"), out / "tracking.png")
    schedule = ctrl.to_schedule()
    schedule.save(out / "gain_schedule.npz")
    schedule.to_c_header(out / "gain_schedule.h")
    lines = ["# ballctl track: summary", "",
             f"Circle radius {ref.radius} m, omega {ref.omega} rad/s, centre {ref.center}, roll rate "
             f"{ref.roll_rate} rad/s; ball m = {plant.params.mass} kg, R = {plant.params.radius} m.",
             f"Controller: finite-horizon LQR at dt = {args.dt} s on (contact_x, contact_y, yaw) and rates; "
             f"controllability rank {ctrb_rank} of 6.", f"Initial offset {tuple(args.offset)} m.", "",
             "| run | final error [m] | steady-state error [m] | settling time [s] | peak alpha [deg] | "
             "peak beta [deg] | wall time [s] |", "|---|---|---|---|---|---|---|"]
    summaries = {}
    for label, r in runs.items():
        sm = r.summary()
        summaries[label] = sm.as_dict()
        settle = "never" if sm.settling_time_s is None else f"{sm.settling_time_s:.3f}"
        lines.append(f"| {label} | {sm.final_error_m:.3e} | {sm.steady_state_error_m:.3e} | "
                     f"{settle} | {np.rad2deg(sm.peak_input_rad['alpha']):.3f} | "
                     f"{np.rad2deg(sm.peak_input_rad['beta']):.3f} | {sm.wall_time_s:.2f} |")
        if r.limit_events:
            lines.append(f"|  rig limits active: {r.limit_events} | | | | | | |")
    lines += ["", "Files: reference.png, tracking.png, gain_schedule.npz, gain_schedule.h, summary.json."]
    text = "\n".join(lines) + "\n"
    _atomic_text(out / "summary.md", text)
    _atomic_text(out / "summary.json", json.dumps(summaries, indent=2, allow_nan=False))
    print(text)
    return 0


def _controllability_rank(ctrl) -> int:
    """Rank of the discrete reachability Gramian over the first second of control samples."""
    from ..controllability import discrete_gramian
    from ..discretize import DiscreteLTVSystem

    steps = min(len(ctrl.discrete.Ad), max(ctrl.ltv.n_states, int(round(1.0 / ctrl.dt))))
    head = DiscreteLTVSystem.from_arrays(ctrl.discrete.Ad[:steps], ctrl.discrete.Bd[:steps], dt=ctrl.dt,
                                         state_names=ctrl.state_names)
    report = discrete_gramian(head, rank_rtol=1e-9)
    return int(report.rank)


def _atomic_text(path: Path, text: str) -> None:
    atomic_write_text(path, text)
