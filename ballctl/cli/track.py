"""``ballctl track``: the main job -- a tracking controller that works on the rig, verified before export.

For a path on the plate and a rig (:class:`~ballctl.RigProfile`: the exact
servo plate as truth, actuation limits, sensors), the job

1. builds the references (quasi-static and exact inversion) on the rig's
   nominal plant (:meth:`~ballctl.RigProfile.design_plant`: no design sees the
   rig's imperfections),
2. designs every requested design (:data:`ballctl.ball_plate.design.RIG_DESIGNS`) with
   the rig's Kalman filter (output feedback, offset-free by default: it
   estimates and cancels a plate level error and a rolling resistance) or
   state feedback, and **pre-checks** them over the design rig's uncertainty
   (``--search-runs`` rigs drawn about ``--rig`` without its imperfections, a
   seed of its own: :func:`ballctl.ball_plate.verification.search_robust_design`):
   the first design whose own tuning passes ends the pre-check and nothing
   changes; when none passes, each design in turn tries the candidate tunings
   of :data:`ballctl.ball_plate.design.DESIGN_CANDIDATES` (slower filter,
   gentler corrections) and keeps the first that passes (else the best), until
   one design has a tuning that passes,
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

Every flag is checked before any work (a bad value is one line and exit
status 2, and nothing is written): ranges, the flags against each other
(``--log`` needs output feedback, ``--offset`` within the divergence distance,
``--duration`` against the rig's control period and an open path's length,
``--robust-runs`` x steps within memory), the output names (``--animate``
format and writer, ``--out`` not a folder of the user's own files), the rig
files, and the path against the rig (the plate tilt and contact acceleration
the reference needs, the ball-orientation chart).

A design that does not apply to the path (the paper's 6-state subsystem off
the circle, a reference it needs that cannot be built) is reported under
``not_applicable`` with the reason and the job goes on with the others.

Files, written whole (:func:`ballctl._io.atomic_directory`: built in a
temporary sibling folder and moved to ``--out`` at the end, so a failed or
killed job leaves ``--out`` absent or as the earlier run left it):
``summary.md``, ``summary.json`` (strict JSON; layout in
``docs/tracking.md``), ``tracking.png``, ``robust.png`` (the error bands over
the drawn rigs), and when a design is exported
``gain_schedule.npz``/``.json``/``.h``, ``estimator.npz`` and ``c_controller/``
(the C step function with its generated data header).

The first run on a machine compiles the simulation kernels (numba, cached on
disk afterwards) and says so on stderr, group by group
(:func:`ballctl.cli._common.compile_progress`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._errors import BallctlError, ChartSingularityError, InfeasibleReferenceError, ParameterError, PartitionError
from .._io import atomic_directory, atomic_write, atomic_write_text, check_output_folder, strict_json
from ._common import (PATH_SHAPES, PATHS, animation_file, compile_progress, integer, number, output_file,
                      plate_path, rig_from_spec)

__all__ = ["NAME", "HELP", "PATHS", "OUTPUT_FILES", "add_arguments", "run", "verdict"]

NAME = "track"
HELP = "the main job: design, verify on the rig's truth plant, export the best passing controller"

#: sensor sets of the observability table
SENSOR_SETS = {"contact point": ("contact_x", "contact_y"),
               "contact point + plate angles": ("contact_x", "contact_y", "alpha", "beta"),
               "plate angles": ("alpha", "beta")}
#: the files and folders the job writes into --out (besides an animation and a rig log named by their flags)
OUTPUT_FILES = ("summary.md", "summary.json", "tracking.png", "robust.png", "gain_schedule.npz",
                "gain_schedule.json", "gain_schedule.h", "estimator.npz", "c_controller", "tracking.gif")
#: --duration at most this (s): the gains, the filter and every run are stored per control step
MAX_DURATION_S = 600.0
#: --robust-runs at most this, and runs x control steps at most MAX_ROBUST_STEPS (about 1 GB of run histories)
MAX_ROBUST_RUNS = 10_000
MAX_ROBUST_STEPS = 2_000_000
#: --search-runs by default: runs of the robust pre-check per candidate tuning
SEARCH_RUNS = 40
#: --weight-scale within this range (a factor on the Bryson state weights)
WEIGHT_SCALE_RANGE = (1e-6, 1e6)
#: a design passes the nominal run when the tilt limit is active in less than this fraction of the last period
MAX_SATURATED_FRACTION = 0.1


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("--config", default=None, help="TOML file whose keys (or [track] table) set any flag")
    g = p.add_argument_group("path (r = --radius, w = --omega)")
    g.add_argument("--path", choices=PATHS, default="circle",
                   help="path on the plate (default circle): " + "; ".join(f"{k} {v}" for k, v in PATH_SHAPES.items())
                        + ". With the defaults every path is within the tabletop rig's +-15 deg tilt, and on that "
                          "rig the exact design passes the verification over its uncertainty on every path with "
                          "its own tuning; on lissajous only with the tuning the design search picks (91 %% of the "
                          "drawn rigs converge with its own, 99 %% with the search's, 99 %% needed: no margin; "
                          "--search-runs 0 exports nothing there)")
    g.add_argument("--radius", type=number("m", low=0, low_inclusive=False), default=0.5,
                   help="path size r in m (circle radius; default 0.5)")
    g.add_argument("--omega", type=number("rad/s", nonzero=True), default=1.0,
                   help="path rate w in rad/s (default 1.0); the path's acceleration, and with it the plate "
                        "tilt it needs, grows as r w^2: a path that needs more tilt than the rig's limit is refused")
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
    g.add_argument("--duration", type=number("s", low=0, high=MAX_DURATION_S, low_inclusive=False), default=None,
                   help=f"horizon and run length in s, at least one control period and at most {MAX_DURATION_S:g} "
                        f"(default: two periods, or the open path's length)")
    g.add_argument("--weight-scale", type=number(low=WEIGHT_SCALE_RANGE[0], high=WEIGHT_SCALE_RANGE[1]),
                   default=1.0, help=f"multiply the Bryson state weights, in [{WEIGHT_SCALE_RANGE[0]:g}, "
                                     f"{WEIGHT_SCALE_RANGE[1]:g}] (default 1)")
    g.add_argument("--max-input-error-deg", type=number("deg", low=0, high=90, low_inclusive=False), default=3.0,
                   help="Bryson limit on plate-angle corrections in deg, in (0, 90] (default 3)")
    g = p.add_argument_group("verification")
    g.add_argument("--offset", type=number("m"), nargs=2, default=(0.05, 0.0), metavar=("DX", "DY"),
                   help="initial contact-point offset in m (default 0.05 0); it must be smaller than the distance "
                        "at which a run counts as diverged, max(0.2 m, 2 r)")
    g.add_argument("--max-rms-error", type=number("m", low=0, low_inclusive=False), default=0.005,
                   help="a design passes when its RMS contact error over the last period is below this, in m "
                        "(default 0.005; below the divergence distance max(0.2 m, 2 r))")
    g.add_argument("--seed", type=integer(low=0), default=0, help="sensor-noise seed (an integer >= 0)")
    g.add_argument("--robust-runs", type=integer(low=0), default=200,
                   help=f"closed-loop runs over the rig's uncertainty per design (default 200, at most "
                        f"{MAX_ROBUST_RUNS:,} and {MAX_ROBUST_STEPS:,} runs x control steps; 0 verifies the nominal "
                        f"truth only)")
    g.add_argument("--search-runs", type=integer(low=0), default=SEARCH_RUNS,
                   help=f"runs of the robust pre-check of the design step (default {SEARCH_RUNS}, at most "
                        f"{MAX_ROBUST_RUNS:,} and {MAX_ROBUST_STEPS:,} runs x control steps): each design's own "
                        f"tuning is run on rigs drawn from --rig's uncertainty (without its imperfections, with a "
                        f"seed of its own: the verification never shares its draws), and the first that passes "
                        f"ends it; when none passes, each design in turn tries the candidate tunings of "
                        f"ballctl.ball_plate.design.DESIGN_CANDIDATES in order, keeps the first that passes (else "
                        f"the best) and the first that passes ends the search. 0, or --robust-runs 0: no pre-check")
    g.add_argument("--offset-free", action=argparse.BooleanOptionalAction, default=True,
                   help="designs that estimate and cancel a plate level error and integrate the path-frame error "
                        "(default); --no-offset-free designs the plain LQG (a level error then leaves a steady "
                        "error)")
    g.add_argument("--force", action="store_true",
                   help="export even a design that fails verification (the failure is written into the summary)")
    p.add_argument("--out", default="ballctl_out",
                   help="output folder (default ballctl_out), written whole at the end of the job: a failed or "
                        "killed job leaves it as it was; an earlier output there is replaced")
    p.add_argument("--log", default=None, metavar="FILE.csv",
                   help="also write the exported design's nominal verification run as the rig log its firmware "
                        "would have written (commands sent, measurements as received; docs/identification.md); "
                        "needs --feedback output")
    p.add_argument("--animate", default=None, nargs="?", const="tracking.gif", metavar="FILE",
                   help="also write an animation of the closed loop (ball on the tilting plate) into --out: a file "
                        "name ending in .gif (pillow) or .mp4 (ffmpeg, if installed); default tracking.gif. 15 "
                        "frames per second of the run, at least 2 and at most 80 frames")


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
        return False, False, f"RMS error {rms:.3g} m >= {max_rms_error:g} m (--max-rms-error)"
    if saturated_fraction > MAX_SATURATED_FRACTION:
        return True, False, f"saturates persistently ({100 * saturated_fraction:.0f} % of the last period)"
    return True, True, "passes"


@dataclass(frozen=True)
class _Plan:
    """What the flags ask for, every one checked before any work (:func:`_check_arguments`)."""

    rig: object
    truth_rig: object
    designs: tuple
    path: object
    horizon: float
    period: float | None
    out: Path
    own_names: tuple
    log: Path | None
    log_in_out: Path | None
    animate: str | None
    divergence: float
    args: argparse.Namespace


def _horizon(args, path, dt: float) -> tuple[float, float | None]:
    """The run's horizon (a whole number of control periods) and the path's period (None for open paths)."""
    period = getattr(path, "period", None)
    if args.duration is not None:
        return dt * int(round(args.duration / dt)), period
    if period is not None:
        return dt * int(np.ceil(2 * period / dt - 1e-9)), period
    return dt * int((path.duration - 2 * dt) / dt), period


def _check_arguments(args: argparse.Namespace) -> _Plan:
    """Check every flag -- alone, against each other and against the rig -- before any work; raise in one line.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments (argparse's types have checked each number's range).

    Returns
    -------
    _Plan
    """
    from ..ball_plate.design import RIG_DESIGNS

    if args.design != "auto" and args.design not in RIG_DESIGNS:
        raise ParameterError(f"--design must be auto or one of {', '.join(RIG_DESIGNS)}, got {args.design!r}")
    designs = tuple(RIG_DESIGNS) if args.design == "auto" else (args.design,)
    divergence = max(0.2, 2 * args.radius)
    offset = float(np.hypot(*args.offset))
    if not offset < divergence:
        raise ParameterError(f"--offset {args.offset[0]:g} {args.offset[1]:g}: the initial offset ({offset:.3g} m) "
                             f"must be below {divergence:g} m, the distance max(0.2 m, 2 r) at which a run counts as "
                             f"diverged and stops")
    if not args.max_rms_error < divergence:
        raise ParameterError(f"--max-rms-error must be below {divergence:g} m, the distance max(0.2 m, 2 r) at which "
                             f"a run counts as diverged, got {args.max_rms_error:g} m")
    animate = None
    if args.animate is not None:
        animate = animation_file(args.animate, "--animate",
                                 reserved=tuple(n for n in OUTPUT_FILES if n != "tracking.gif"))
    log = log_in_out = None
    if args.log is not None:
        if not str(args.log).lower().endswith(".csv"):
            raise ParameterError(f"--log must name a .csv file, got {args.log!r}")
        if args.feedback != "output":
            raise ParameterError("--log needs --feedback output: a rig log holds the sensor readings the rig's "
                                 "filter receives, and state feedback has none")
        log = Path(os.path.abspath(output_file(args.log, "--log")))
    out_abs = Path(os.path.abspath(args.out)) if args.out else None
    if log is not None and out_abs is not None and out_abs in log.parents:
        log_in_out = log.relative_to(out_abs)
        if log_in_out.parts[0] in OUTPUT_FILES or str(log_in_out) == animate:
            raise ParameterError(f"--log {args.log!r} would overwrite the job's own {log_in_out.parts[0]!r} in --out")
    own = OUTPUT_FILES + tuple(n for n in (animate, None if log_in_out is None else log_in_out.parts[0]) if n)
    out = check_output_folder(args.out, "--out", own_names=own)
    rig = rig_from_spec(args.rig)
    truth_rig = rig if args.truth is None else rig_from_spec(args.truth, "--truth")
    if truth_rig.dt != rig.dt:
        raise ParameterError(f"--truth {args.truth!r} runs at dt = {truth_rig.dt:g} s but --rig {args.rig!r} at "
                             f"{rig.dt:g} s: the design's control period must be the rig's")
    if truth_rig.signals != rig.signals:
        raise ParameterError(f"--truth {args.truth!r} measures {', '.join(truth_rig.signals)} but --rig "
                             f"{args.rig!r} {', '.join(rig.signals)}: the design's sensors must be the truth's")
    dt = rig.dt
    if args.duration is not None and args.duration < dt * (1 - 1e-9):
        raise ParameterError(f"--duration must be at least one control period of rig {rig.name!r} ({dt:g} s), "
                             f"got {args.duration:g} s")
    path = plate_path(args.path, args.radius, args.omega, tuple(args.center))
    if args.duration is not None and getattr(path, "period", None) is None:
        longest = dt * int((path.duration - 2 * dt) / dt)
        if args.duration > longest + 1e-9:
            raise ParameterError(f"--duration must be at most {longest:.4g} s on --path {args.path} (the path's "
                                 f"length at its speed 0.3 r w, less two control periods), got {args.duration:g} s")
    horizon, period = _horizon(args, path, dt)
    steps = int(round(horizon / dt)) + 1
    for flag, runs in (("--robust-runs", args.robust_runs), ("--search-runs", args.search_runs)):
        if runs > MAX_ROBUST_RUNS:
            raise ParameterError(f"{flag} must be at most {MAX_ROBUST_RUNS:,}, got {runs:,}")
        if runs * steps > MAX_ROBUST_STEPS:
            raise ParameterError(f"{flag} {runs:,} over {steps:,} control steps: runs x steps must be at most "
                                 f"{MAX_ROBUST_STEPS:,} (about 1 GB of run histories); at most "
                                 f"{MAX_ROBUST_STEPS // steps:,} runs at this --duration")
    return _Plan(rig=rig, truth_rig=truth_rig, designs=designs, path=path, horizon=horizon, period=period, out=out,
                 own_names=own, log=log, log_in_out=log_in_out, animate=animate, divergence=divergence, args=args)


def _references(args, plan: _Plan):
    """Quasi-static and (if a design needs it) exact references on the rig's nominal plant.

    Returns ``(design_plant, qs, exact, failed)``: a reference that cannot be built is None and ``failed``
    maps its kind (``"quasi-static"``, ``"exact"``) to the reason, in the command line's terms.
    """
    from ..references import CircularMotion, LissajousPath, PathMotion
    from ..references.moving_plate import MovingPlateMotion, exact_circular_motion

    plant = plan.rig.design_plant()  # references are the design's: the imperfections are the truth's alone
    center = tuple(args.center)
    length = plan.horizon + 2 * plan.rig.dt
    qs = exact = None
    failed = {}
    try:
        if args.path == "circle":
            qs = CircularMotion(plant.quasi_static(), args.radius, args.omega, args.roll_rate, center=center)
        else:
            qs = PathMotion(plant.quasi_static(), plan.path, duration=length, spin=0.0)
    except BallctlError as exc:
        failed["quasi-static"] = _reference_reason(exc, plan)
    if "exact" in plan.designs:
        try:
            if args.path == "circle":
                exact = exact_circular_motion(plant, LissajousPath.circle(args.radius, args.omega, center=center),
                                              args.roll_rate, duration=length)
            else:
                exact = MovingPlateMotion(plant, plan.path, spin=0.0, duration=length)
        except BallctlError as exc:
            failed["exact"] = _reference_reason(exc, plan)
    return plant, qs, exact, failed


def _reference_reason(exc: BallctlError, plan: _Plan) -> str:
    """Why a reference cannot be built, in the command line's terms (flags instead of keyword arguments)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, ChartSingularityError):
        m = re.search(r"at t = ([0-9.eE+-]+) s", text)
        when = f" at t = {float(m.group(1)):.3g} s" if m else ""
        return (f"the ball's lean reaches the singularity of the yaw-lean-roll chart the designs use (89 deg){when}, "
                f"within the {plan.horizon:.4g} s run: shorten it (--duration"
                + (f" below {float(m.group(1)):.3g} s" if m else "") + ") or change the path (--radius, --omega)")
    if isinstance(exc, InfeasibleReferenceError):
        need = re.search(r"\|a\| = ([0-9.eE+-]+) m/s\^2", text)
        most = re.search(r"at most k_b\*g = ([0-9.eE+-]+) m/s\^2", text)
        when = re.search(r"at t=([0-9.eE+-]+) s", text)
        if need and most:
            ratio = float(most.group(1)) / float(need.group(1))
            args = plan.args
            return (f"the path needs a contact acceleration of {float(need.group(1)):.3g} m/s^2"
                    + (f" (at t = {float(when.group(1)):.3g} s)" if when else "")
                    + f" but a tilted plate gives at most {float(most.group(1)):.3g} m/s^2; the acceleration grows "
                      f"as r w^2: lower --omega below about {abs(args.omega) * np.sqrt(ratio):.2g} rad/s or "
                      f"--radius below about {args.radius * ratio:.2g} m")
    # the library's keyword names as the flags that set them
    return re.sub(r"\b(roll_rate|duration)\b", lambda m: "--" + m.group(1).replace("_", "-"), text)


def _check_feasible(args, plan: _Plan, qs_ref, exact_ref) -> None:
    """Refuse a reference that needs more plate tilt than the rig allows (before any design work)."""
    limit = plan.rig.limits.max_angle
    if limit is None:
        return
    t = np.linspace(0.0, plan.horizon, max(2, int(round(plan.horizon / plan.rig.dt)) + 1))
    peaks = []
    for ref in (qs_ref, exact_ref):
        if ref is not None:
            u = ref(t).u
            peaks.append(float(np.max(np.abs(u))))
    if not peaks:
        return
    peak = max(peaks)
    if peak >= limit:
        ratio = np.tan(limit) / np.tan(min(peak, 1.5))
        raise ParameterError(
            f"--path {args.path} with --radius {args.radius:g} m and --omega {args.omega:g} rad/s needs "
            f"{np.rad2deg(peak):.3g} deg of plate angle, more than rig {plan.rig.name!r} allows "
            f"({np.rad2deg(limit):.3g} deg): the tilt grows as r w^2, so lower --omega below about "
            f"{abs(args.omega) * np.sqrt(ratio):.2g} rad/s or --radius below about {args.radius * ratio:.2g} m")


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

    Every flag is checked first (:func:`_check_arguments`: one line, exit
    status 2, nothing written); the job then builds its whole output folder
    in a temporary sibling and moves it to ``--out`` at the end
    (:func:`ballctl._io.atomic_directory`). The first run on a machine
    compiles the simulation kernels and says so (:func:`compile_progress`);
    the complex-step kernels of the designs' plants then compile in a second
    process meanwhile, and the closed loop in whichever is free first
    (:func:`ballctl.simulation.engine.compile_in_background`).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status: 0 when a design was exported, 1 when none passes (the summary says why).
    """
    from ..ball_plate.design import RIG_DESIGN_PLANTS

    plan = _check_arguments(args)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(f"[1/5] rig {plan.rig.name!r}: {plan.rig.description}")
    linearized = tuple(dict.fromkeys(RIG_DESIGN_PLANTS[name] for name in plan.designs))   # the designs' plants
    with compile_progress(say, loop_aside=True, complex_step=linearized):
        return _run(args, plan, say)


def _run(args: argparse.Namespace, plan: _Plan, say) -> int:
    """:func:`run` after the checks."""
    from dataclasses import replace

    from ..simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
    from ..design.estimator import EstimatorSettings, InputDisturbance, design_estimator
    from ..design.observability import sensor_table
    from ..figures.plotting import plot_robust_bands, plot_tracking, save_figure
    from ..schedule import ControllerDataOptions, controller_footprint, write_c_controller
    from ..deploy.sil import ExportOptions, ExportVerificationError, export_controller
    from ..ball_plate.design import DESIGN_CANDIDATES, RIG_DESIGNS, RigDesignOptions, design_for_rig
    from ..ball_plate.verification import VerificationSettings, verify_over_uncertainty

    rig, truth_rig, dt = plan.rig, plan.truth_rig, plan.rig.dt
    horizon, period, divergence = plan.horizon, plan.period, plan.divergence
    design_plant, qs_ref, exact_ref, failed = _references(args, plan)
    needs = {n: ("exact" if n == "exact" else "quasi-static") for n in plan.designs}
    not_applicable = {n: f"its {needs[n]} reference cannot be built: {failed[needs[n]]}"
                      for n in plan.designs if needs[n] in failed}
    if len(not_applicable) == len(plan.designs):
        raise ParameterError(f"--path {args.path} with --radius {args.radius:g} m and --omega {args.omega:g} rad/s: "
                             + next(iter(failed.values())))
    _check_feasible(args, plan, qs_ref, exact_ref)
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
    sim = ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=max(2, int(np.ceil(dt / 0.01 - 1e-9))),
                            divergence_error=divergence, imperfections=truth_rig.imperfections.loop)
    limit = rig.limits.max_angle
    controllers, runs, verification, robust = {}, {}, {}, {}
    base_options = RigDesignOptions(weight_scale=args.weight_scale,
                                    max_input_error=float(np.deg2rad(args.max_input_error_deg)))

    def design(name, candidate=DESIGN_CANDIDATES[0]):
        if candidate.is_default and name in controllers:
            return controllers[name]
        return design_for_rig(rig, exact_ref if name == "exact" else qs_ref, name, horizon=horizon,
                              output_feedback=args.feedback == "output", offset_free=args.offset_free,
                              options=candidate.options(base_options))

    for i, name in enumerate(plan.designs):
        say(f"[3/5] design {i + 1}/{len(plan.designs)}: {name} ({RIG_DESIGNS[name]})")
        if name in not_applicable:
            say(f"      not applicable to this path: {not_applicable[name]}")
            continue
        try:
            controllers[name] = design(name)
        except PartitionError as exc:  # e.g. the paper's subsystem is exact on the circle only
            not_applicable[name] = _plain(str(exc))
            say(f"      not applicable to this path: {not_applicable[name]}")
            continue
        except BallctlError as exc:  # a design that cannot be built here never stops the others
            not_applicable[name] = f"the design cannot be built on this path: {_plain(str(exc))}"
            say(f"      not applicable to this path: {not_applicable[name]}")
            continue
    search = _design_search(args, plan, controllers, design, x0, xd0, window, say)
    for name, found in search["designs"].items():
        controllers[name] = found.controller
    for name, ctrl in controllers.items():
        say(f"[3/5] {name}: verification on the truth"
            + ("" if name not in search["designs"] else f" (tuning: {search['designs'][name].candidate.name})"))
        r = simulate_closed_loop(_on_truth_sensors(ctrl, truth_rig), x0_truth, xd0, truth=truth, seed=args.seed,
                                 options=sim)
        runs[name] = r
        sm = r.summary()
        last = r.t >= r.t[-1] - period_window - 1e-9
        sat = 0.0
        if limit is not None and r.diverged_at_s is None:
            sat = float(np.mean(np.any(np.abs(r.u[last]) >= limit * (1 - 1e-9), axis=1)))
        converged, passed, reason = verdict(sm, max_rms_error=args.max_rms_error, saturated_fraction=sat)
        rms = sm.rms_error_last_period_m if sm.rms_error_last_period_m is not None else sm.steady_state_error_m
        peak_tilt = float(np.rad2deg(sm.peak_tilt_rad))
        verification[name] = {
            "converged": converged, "passed": passed, "reason": reason,
            "rms_error_m": None if sm.diverged else rms,
            "peak_error_last_period_m": sm.peak_error_last_period_m,
            "final_error_m": sm.final_error_m,
            "peak_tilt_deg": peak_tilt,
            "peak_tilt_is_limit": bool(limit is not None and sm.peak_tilt_rad >= limit * (1 - 1e-6)),
            "estimator_rms_error_m": None if sm.diverged else sm.estimator_rms_error_m,
            "saturated_fraction_last_period": sat,
            "diverged_at_s": sm.diverged_at_s,
            "zoh_reference_deviation_m": ctrl.zoh_deviation,
            "feedback": r.feedback,
            "offset_free": ctrl.offset_free,
            "disturbance_observability": _disturbance_observability(ctrl),
            "tuning": _tuning(search["designs"].get(name), base_options, ctrl),
            "contact": {"peak_friction_coefficient": sm.peak_friction_coefficient,
                        "least_normal_force_N": sm.least_normal_force_N,
                        "peak_friction_coefficient_last_period": sm.peak_friction_coefficient_last_period,
                        "least_normal_force_last_period_N": sm.least_normal_force_last_period_N,
                        "rig_friction_coefficient": truth_rig.friction_coefficient,
                        "whole_run": sm.contact_verdict(truth_rig.friction_coefficient),
                        "last_period": sm.contact_verdict(truth_rig.friction_coefficient, last_period=True)},
            "wall_time_s": sm.wall_time_s,
        }
        say(f"      nominal: {reason}; RMS error {_meters(verification[name]['rms_error_m'])}, peak tilt "
            f"{peak_tilt:.3g} deg" + (" (the rig's limit)" if verification[name]["peak_tilt_is_limit"] else ""))
        if args.robust_runs > 0 and not passed:
            verification[name]["robust"] = None  # failed on the nominal truth: no longer a candidate
        elif args.robust_runs > 0:
            with np.errstate(over="ignore", invalid="ignore"):  # the contact forces of runs that diverged
                rv = verify_over_uncertainty(_on_truth_sensors(ctrl, truth_rig),
                                             replace(truth_rig, limits=rig.limits), x0, xd0, seed=args.seed,
                                             window_s=window, max_rms_error=args.max_rms_error,
                                             settings=VerificationSettings(n_runs=args.robust_runs,
                                                                           divergence_error=divergence))
            robust[name] = rv
            verification[name]["robust"] = rv.as_dict()
            if passed and not rv.passed:
                passed = False
                reason = (f"fails over the rig's uncertainty: {100 * rv.success_rate:.1f} % of "
                          f"{rv.runs} runs converge (at least {100 * rv.min_success_rate:g} % must), "
                          f"95th-percentile RMS error {_meters(rv.rms_p95_m)} (below {args.max_rms_error:g} m "
                          f"must)")
                verification[name].update(passed=False, reason=reason)
            say(f"      over {rv.runs} drawn rigs: {100 * rv.success_rate:.1f} % converge, RMS p50 "
                f"{_meters(rv.rms_p50_m)}, p95 {_meters(rv.rms_p95_m)} ({rv.wall_time_s:.2g} s)")
    designs = [n for n in plan.designs if n in controllers]
    passing = [n for n in designs if verification[n]["passed"]]
    forced = False

    def rank(n):  # the 95th percentile over the drawn rigs, else the nominal run
        rv = robust.get(n)
        return rv.rms_p95_m if rv is not None else verification[n]["rms_error_m"]

    if passing:
        chosen = min(passing, key=rank)
        reason = (f"{chosen} passes with the smallest RMS error over the last period "
                  + (f"at the 95th percentile over the drawn rigs ({rank(chosen):.3g} m)" if robust else
                     f"({rank(chosen):.3g} m)"))
    elif args.force and designs:
        finite = [n for n in designs if verification[n]["rms_error_m"] is not None] or designs
        chosen = min(finite, key=lambda n: verification[n]["rms_error_m"] or np.inf)
        forced = True
        reason = f"no design passes; --force exports {chosen}: {verification[chosen]['reason']}"
    elif not designs:
        chosen = None
        reason = "no design applies to this path: nothing exported"
    else:
        chosen = None
        reason = "no design passes verification on the truth plant: nothing exported (use --force to export anyway)"
    say(f"[4/5] {reason}")
    with atomic_directory(plan.out, flag="--out", own_names=plan.own_names) as out:
        ideal = controller_summary = None
        files = ["summary.md", "summary.json"] + (["tracking.png"] if runs else [])
        rig_log = None
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
                if plan.log is not None:
                    from ..ball_plate.rig_log import RigLog

                    rig_log = RigLog.from_closed_loop(runs[chosen], truth_rig, ctrl,
                                                      source=f"ballctl track --rig {args.rig}: {chosen} on the truth "
                                                             f"of rig {truth_rig.name!r}")
                    if plan.log_in_out is not None:
                        (out / plan.log_in_out).parent.mkdir(parents=True, exist_ok=True)
                        rig_log.write_csv(out / plan.log_in_out)
                        files.append(plan.log_in_out.as_posix())
        say("[5/5] observability per sensor set, figures, summary")
        models = {n: (c.ltv, c.discrete, c.system.coordinate_names) for n, c in controllers.items()}
        rows, _ = sensor_table(models, SENSOR_SETS, steps=int(round(min(horizon, 2.0) / dt)))
        obs_table = _observability_table(rows, models)
        plotted = {n: r for n, r in runs.items() if r.diverged_at_s is None} or runs
        if plan.animate and runs:
            from ..figures.animation import animate_ball_plate

            shown = chosen if chosen is not None else next(iter(plotted))
            animate_ball_plate(runs[shown], out / plan.animate, ball_radius=rig.ball.radius)
            files.append(plan.animate)
        if runs:
            verdicts = {**{n: verification[n] for n in designs},
                        **{n: {"passed": None, "reason": f"not applicable: {why}"}
                           for n, why in not_applicable.items()}}
            save_figure(plot_tracking(plotted, title=f"{args.path} on rig {rig.name!r} (truth: servo plate)",
                                      verdicts=verdicts, exported=chosen, max_rms_error=args.max_rms_error,
                                      window_s=window, limits=rig.limits,
                                      friction_coefficient=truth_rig.friction_coefficient, robust=robust or None),
                        out / "tracking.png")
        if robust:
            save_figure(plot_robust_bands(robust, max_rms_error=args.max_rms_error,
                                          title=f"{args.path} on rig {rig.name!r}: contact error over "
                                                f"{args.robust_runs} drawn rigs"), out / "robust.png")
            files.append("robust.png")
        criteria = {"nominal": {"max_rms_error_m": args.max_rms_error,
                                "max_saturated_fraction_last_period": MAX_SATURATED_FRACTION,
                                "divergence_error_m": divergence, "window_s": window},
                    "robust": None if args.robust_runs == 0 else {
                        "runs": args.robust_runs, "min_success_rate": VerificationSettings().min_success_rate,
                        "max_rms_p95_m": args.max_rms_error}}
        summary = {
            "rig": rig.as_dict(),
            "path": {"kind": args.path, "size_m": args.radius, "rate_rad_s": args.omega,
                     "shape": PATH_SHAPES[args.path], "center_m": list(args.center), "period_s": period,
                     "horizon_s": horizon, "initial_offset_m": list(args.offset)},
            "pass_criteria": criteria,
            "design_search": _search_summary(search, rig),
            "verification": verification,
            "not_applicable": not_applicable,
            "exported_design": chosen,
            "forced": forced,
            "reason": reason,
            "max_rms_error_m": args.max_rms_error,
            "noise_and_latency_zero": ideal,
            "controller": controller_summary,
            "truth_rig": None if args.truth is None else truth_rig.as_dict(),
            "files": files,
        }
        atomic_write_text(out / "summary.json", json.dumps(strict_json(summary), indent=2, allow_nan=False))
        text = _summary_markdown(args, plan, verification, robust, not_applicable, designs, chosen, reason, ideal,
                                 controller_summary, obs_table, files, criteria, search)
        atomic_write_text(out / "summary.md", text)
    if rig_log is not None and plan.log_in_out is None:
        plan.log.parent.mkdir(parents=True, exist_ok=True)
        rig_log.write_csv(plan.log)
    if plan.log is not None:
        say(f"      rig log of the verification run: {plan.log}" if rig_log is not None else
            "      no rig log: no design was exported")
    print(text)
    return 0 if chosen is not None else 1


def _design_search(args, plan: _Plan, controllers: dict, design, x0, xd0, window: float, say) -> dict:
    """The robust pre-check of the design step and, when no design's own tuning passes it, the tuning search.

    Each design's own tuning (the job's flags) is run in turn on ``--search-runs`` rigs drawn from ``--rig``'s
    uncertainty (:func:`ballctl.ball_plate.verification.search_robust_design`: the design rig without its
    imperfections, a seed of its own); the first that passes ends the pre-check and every design keeps its
    tuning (the job is then as without the search, at the cost of that pre-check). When none passes, each
    design tries :data:`~ballctl.ball_plate.design.DESIGN_CANDIDATES` in order and keeps the first that passes
    (else the best); the first design whose search finds a tuning that passes ends it (the job needs one),
    the later ones keep the job's tuning. Nothing here reads the truth rig.

    Returns
    -------
    dict
        ``designs``: the searches (name -> DesignSearch) whose pick replaces the design; ``checks``: the
        pre-checks of the designs' own tunings; ``started``; ``note`` (what happened, in words); ``runs``,
        ``seed``.
    """
    from ..ball_plate.design import DESIGN_CANDIDATES
    from ..ball_plate.verification import VerificationSettings, search_robust_design, search_seed

    result = {"designs": {}, "checks": {}, "started": False, "runs": 0, "seed": None, "note": None}
    if args.robust_runs == 0 or args.search_runs == 0 or not controllers:
        result["note"] = ("off (--robust-runs 0)" if args.robust_runs == 0 else "off (--search-runs 0)"
                          if args.search_runs == 0 else "off (no design applies)")
        return result
    seed = search_seed(args.seed)
    result.update(runs=args.search_runs, seed=seed)
    common = dict(window_s=window, max_rms_error=args.max_rms_error, seed=seed,
                  settings=VerificationSettings(n_runs=args.search_runs, divergence_error=plan.divergence))
    say(f"[3/5] robust pre-check: each design's own tuning on {args.search_runs} rigs drawn from the uncertainty "
        f"of rig {plan.rig.name!r} (without its imperfections, a seed of its own)")
    for name in controllers:
        found = search_robust_design(lambda c, n=name: design(n, c), DESIGN_CANDIDATES[:1], plan.rig, x0, xd0,
                                     **common)
        result["checks"][name] = found
        say(f"      pre-check of {name}: {_score_text(found.scores[0])}")
        if found.scores[0].meets:
            result["note"] = (f"the own tuning of {name} passes the pre-check: no search, every design keeps the "
                              f"job's tuning")
            say(f"      {result['note']}")
            return result
    result["started"] = True
    for name in controllers:
        say(f"      tuning search for {name}: up to {len(DESIGN_CANDIDATES)} candidates, the first that passes")
        found = search_robust_design(lambda c, n=name: design(n, c), DESIGN_CANDIDATES, plan.rig, x0, xd0,
                                     scored=result["checks"][name].scores, **common)
        for sc in found.scores[1:]:
            say(f"        {sc.candidate.name}: {_score_text(sc)}")
        say(f"        -> {found.reason}")
        result["designs"][name] = found
        if found.scores[found.chosen].meets:
            later = [n for n in controllers if n not in result["designs"]]
            result["note"] = (f"no design's own tuning passes the pre-check; the tuning {found.candidate.name} of "
                              f"{name} does" + (f" (the search ends there: {_and(later)} "
                                                f"keep{'s' if len(later) == 1 else ''} the job's tuning)"
                                                if later else ""))
            return result
    result["note"] = "no design passes the pre-check with any candidate tuning: each keeps its best"
    return result


def _score_text(score) -> str:
    """A candidate's pre-check in words (progress lines)."""
    c = score.check
    if c is None:
        return f"cannot be built: {_plain(score.error)}"
    return (f"{100 * c.success_rate:.1f} % of {c.runs} converge, RMS p50 {_meters(c.rms_p50_m)}, p95 "
            f"{_meters(c.rms_p95_m)} ({'passes' if score.meets else 'fails'}; {c.wall_time_s:.2g} s)")


def _tuning(found, base_options, ctrl) -> dict:
    """The tuning a design was made with: the candidate's name and the options it resolves to."""
    from ..ball_plate.design import DESIGN_CANDIDATES

    cand = DESIGN_CANDIDATES[0] if found is None else found.candidate
    opts = cand.options(base_options)
    est = ctrl.estimator
    start = opts.disturbance_start_s if ctrl.offset_free else None
    return {"candidate": cand.name, "max_input_error_deg": float(np.rad2deg(opts.max_input_error)),
            "weight_scale": opts.weight_scale,
            "process_std_deg": None if est is None else float(np.rad2deg(est.process_std)),
            "disturbance_start_s": start}


def _search_summary(search: dict, rig) -> dict:
    """summary.json's ``design_search`` block."""
    from ..ball_plate.design import DESIGN_CANDIDATES

    per = {}
    for n, check in search["checks"].items():
        if n in search["designs"]:
            per[n] = {**search["designs"][n].as_dict(), "searched": True}
            continue
        why = ("its own tuning passes the pre-check" if check.scores[0].meets else
               "its own tuning fails the pre-check; not searched: another design's search found a tuning that "
               "passes")
        per[n] = {**check.as_dict(), "searched": False, "reason": f"the job's tuning: {why}"}
    return {"runs": search["runs"], "seed": search["seed"], "started": search["started"], "note": search["note"],
            "rig": rig.name, "draws": "the design rig's uncertainty about its nominal (without its imperfections)",
            "candidates": [c.as_dict() for c in DESIGN_CANDIDATES], "designs": per}


def _search_markdown(search: dict, rig) -> list:
    """summary.md's lines on the pre-check and the tuning search."""
    from ..ball_plate.design import DESIGN_CANDIDATES

    if not search["runs"]:
        return []
    lines = ["", "## Design: robust pre-check and tuning search", "",
             f"Before any run on the truth, each design's own tuning was run on {search['runs']} rigs drawn from "
             f"rig **{rig.name}**'s uncertainty about its nominal (without its imperfections: no design reads "
             f"them; seed {search['seed']}, none of the verification's draws), with the verification's criteria. "
             f"The first design whose own tuning passes ends the pre-check (the others keep theirs, unchecked); "
             f"when none does, each design in turn tries the candidate tunings in order ("
             + "; ".join(f"{c.name}: {c.description}" for c in DESIGN_CANDIDATES)
             + ") and keeps the first that passes, else the one with the most converged runs (then the smallest "
               "95th-percentile error); the first design with a tuning that passes ends the search. "
             f"Result: {search['note']}.", "",
             "| design | candidate | converged runs | RMS p50 [m] | RMS p95 [m] | passes | picked |",
             "|---|---|---|---|---|---|---|"]
    for name, check in search["checks"].items():
        found = search["designs"].get(name, check)
        for i, sc in enumerate(found.scores):
            picked = "yes" if i == (found.chosen if name in search["designs"] else 0) else ""
            c = sc.check
            if c is None:
                lines.append(f"| {name} | {sc.candidate.name} | cannot be built: {_plain(sc.error)} | | | no | |")
                continue
            lines.append(f"| {name} | {sc.candidate.name} | {100 * c.success_rate:.1f} % | {_fmt(c.rms_p50_m)} | "
                         f"{_fmt(c.rms_p95_m)} | {'yes' if sc.meets else 'no'} | {picked} |")
        if name in search["designs"]:
            lines.append(f"| {name} | | {found.reason} | | | | |")
    return lines


def _summary_markdown(args, plan: _Plan, verification, robust, not_applicable, designs, chosen, reason, ideal,
                      controller_summary, obs_table, files, criteria, search) -> str:
    """summary.md: what was verified, against which criteria, what passed, what was exported."""
    rig, truth_rig = plan.rig, plan.truth_rig
    imp = truth_rig.imperfections
    nominal = criteria["nominal"]
    lines = ["# ballctl track: summary", "",
             f"Rig **{rig.name}**: {rig.description}." + (
                 "" if args.truth is None else f" Verified on the truth of rig **{truth_rig.name}** "
                                               f"({truth_rig.description})."), "",
             f"Path: {args.path} ({PATH_SHAPES[args.path]}), r = {args.radius:g} m, w = {args.omega:g} rad/s, "
             f"centre {_pair(args.center)} m; horizon {plan.horizon:.4g} s at dt = {rig.dt:g} s; initial offset "
             f"{_pair(args.offset)} m. Truth: exact servo plate; {args.feedback} feedback."]
    lines += _search_markdown(search, rig)
    lines += ["", "## Verification on the truth plant", "",
             f"Truth imperfections (no design sees them): level error "
             f"{', '.join(f'{v:.3g}' for v in imp.as_dict()['plate_offset_deg'])} deg, rolling "
             f"resistance {imp.rolling_resistance:g}, {100 * imp.frame_drop:g} % frames "
             f"lost, dead band {imp.as_dict()['servo_deadband_deg']:.3g} deg, timing jitter "
             f"{1e3 * imp.timing_jitter_s:.3g} ms.", "",
             f"Pass criteria: a design passes the nominal run when it does not diverge (its contact point never "
             f"farther than {nominal['divergence_error_m']:g} m from the reference), its RMS contact error over the "
             f"last {nominal['window_s']:.4g} s (the last period) is below {args.max_rms_error:g} m "
             f"(--max-rms-error), and the tilt limit is active in less than "
             f"{100 * MAX_SATURATED_FRACTION:g} % of that window. A value in the table marked '(limit)' is the "
             f"rig's limit itself: the run reached it.", "",
             "| design | offset-free | converged | RMS error last period [m] | peak tilt [deg] | "
             "estimator RMS error [m] | friction needed, whole run / last period (rig: "
             f"{truth_rig.friction_coefficient:g}) | least normal force [N] | contact | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in designs:
        v = verification[n]
        c = v["contact"]
        lines.append(f"| {n} | {'yes' if v['offset_free'] else 'no'} | {'yes' if v['converged'] else 'no'} | "
                     f"{_fmt(v['rms_error_m'])} | {_tilt(v)} | {_fmt(v['estimator_rms_error_m'])} | "
                     f"{_friction(c['peak_friction_coefficient'])} / "
                     f"{_friction(c['peak_friction_coefficient_last_period'])} | "
                     f"{_fmt(c['least_normal_force_N'])} | {c['whole_run']} | {v['reason']} |")
    for n, why in not_applicable.items():
        lines.append(f"| {n} | - | not applicable | - | - | - | - | - | - | not applicable to this path: {why} |")
    flagged = [n for n in designs if verification[n]["contact"]["whole_run"] in ("slips", "lifts off")]
    if flagged:
        servo = rig.servo
        accel = ("" if servo.max_torque is None else
                 f" (a servo at its torque limit turns this plate at up to "
                 f"{servo.max_torque / max(servo.plate_inertia[:2]):.3g} rad/s^2)")
        lines += ["", f"Contact: on the truth the ball of {_and(flagged)} needs more friction than the rig's "
                      f"{truth_rig.friction_coefficient:g} or is unloaded at some samples (column 'contact'): a "
                      f"real ball would slip or hop there, where the rolling model does not hold. The plate's "
                      f"angular acceleration unloads a ball far from the pivot{accel}; start closer to the path "
                      f"(--offset), soften the design (--weight-scale < 1) or track a smaller path if that matters. "
                      f"An unbounded friction need is a sample with no normal force at all."]
    if robust:
        unc = truth_rig.uncertainty
        rr_range = "the rig's" if unc.rolling_resistance is None else "%g-%g" % unc.rolling_resistance
        rc = criteria["robust"]
        lines += ["", f"## Verification over the rig's uncertainty ({args.robust_runs} drawn rigs per design)", "",
                  f"Drawn per run: ball mass ({100 * unc.mass_rel:g} % std) and radius ({100 * unc.radius_rel:g} %), "
                  f"servo bandwidth ({100 * unc.servo_bandwidth_rel:g} %), sensor latency error "
                  f"(+-{1e3 * unc.latency_s:g} ms), level error ({np.rad2deg(unc.plate_offset):.3g} deg std about "
                  f"the rig's), rolling resistance "
                  f"({rr_range}), "
                  f"sensor noise ({100 * unc.noise_rel:g} %), initial offset ({1e3 * unc.initial_offset_m:g} mm "
                  f"std); lost frames, dead band and jitter as the rig's. Only a design that passes the nominal "
                  f"run is verified here.", "",
                  f"Pass criteria: at least {100 * rc['min_success_rate']:g} % of the runs converge (not diverged "
                  f"and RMS error over the last period below {args.max_rms_error:g} m) and the 95th-percentile RMS "
                  f"error is below {args.max_rms_error:g} m ('diverged' when more than 5 % of the runs diverge). "
                  f"Reported beside them: the runs whose ball needs more friction than the rig's "
                  f"{truth_rig.friction_coefficient:g} (slip) or loses its normal force (lift off) at some sample.",
                  "",
                  "| design | converged runs | RMS p50 [m] | RMS p95 [m] | worst RMS [m] | runs that slip | "
                  "runs that lift off | passes |",
                  "|---|---|---|---|---|---|---|---|"]
        for n in designs:
            rv = robust.get(n)
            if rv is None:
                lines.append(f"| {n} | not run: fails on the nominal truth | | | | | | no |")
                continue
            lines.append(f"| {n} | {100 * rv.success_rate:.1f} % | {_fmt(rv.rms_p50_m)} | {_fmt(rv.rms_p95_m)} | "
                         f"{_fmt(rv.worst_rms_m)} | {rv.slipping_runs} | {rv.lift_off_runs} | "
                         f"{'yes' if rv.passed else 'no'} |")
    lines += ["", f"**Exported:** {chosen or 'nothing'} -- {reason}."]
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
    lines += ["", "## Observability per sensor set (first 2 s)", "",
              "Rank of the scaled observability Gramian; every direction the sensors cannot see is named (a state "
              "name alone: that state gives no output at all; a combination: weights of the scaled states).", "",
              obs_table, "", "Files: " + ", ".join(files) + "."]
    return "\n".join(lines) + "\n"


def _observability_table(rows, models) -> str:
    """Markdown: per design and sensor set, the rank and *every* unobservable direction (or the weakest one)."""
    by_key = {(r.design, r.sensor_set): r.report for r in rows}
    lines = ["| design | sensor set | rank | unobservable directions (or the least observable one) |",
             "|---|---|---|---|"]
    for design, (_, _, coords) in models.items():
        for set_name, signals in SENSOR_SETS.items():
            rep = by_key.get((design, set_name))
            if rep is None:
                missing = [s for s in signals if s not in coords]
                lines.append(f"| {design} | {set_name} | not applicable | the design's model has no "
                             f"{_and(missing)} coordinate{'s' if len(missing) > 1 else ''} |")
                continue
            missing = rep.n_states - rep.rank
            if missing <= 0:
                lines.append(f"| {design} | {set_name} | {rep.rank} of {rep.n_states} | all observable; weakest: "
                             f"{_direction(rep.gramian.directions[0])} |")
                continue
            unseen = list(rep.unseen_states)
            named = [f"{n} (no output at all)" for n in unseen]
            for pairs in rep.gramian.directions:
                if len(named) >= missing:
                    break
                top = max(pairs, key=lambda p: abs(p[1]))
                if top[0] in unseen and abs(top[1]) > 0.999:
                    continue  # already named
                named.append(_direction(pairs))
            lines.append(f"| {design} | {set_name} | {rep.rank} of {rep.n_states} ({missing} unobservable) | "
                         f"{'; '.join(named)} |")
    return "\n".join(lines)


def _direction(pairs, count: int = 3) -> str:
    """A direction of scaled states: one name when it is (almost) one state, else its largest weights."""
    pairs = sorted(pairs, key=lambda p: -abs(p[1]))
    if abs(pairs[0][1]) > 0.99:
        return str(pairs[0][0])
    return " ".join(f"{w:+.2f} {n}" for n, w in pairs[:count] if abs(w) >= 0.05)


def _meters(value) -> str:
    """A length for the progress lines: ``0.0017 m``, ``diverged`` (infinite) or ``-`` (none)."""
    text = _fmt(value)
    return text if text in ("-", "diverged") else f"{text} m"


def _plain(text: str) -> str:
    """A library message for the summary: one line, Python list reprs of names as plain lists."""
    text = " ".join(str(text).split())
    return re.sub(r"\[((?:'[^']*'(?:, )?)+)\]", lambda m: _and(re.findall(r"'([^']*)'", m.group(1))), text)


def _and(names) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""


def _pair(values) -> str:
    """Two numbers as ``x, y`` (no tuple repr)."""
    return ", ".join(f"{float(v):g}" for v in values)


def _tilt(v: dict) -> str:
    """Peak tilt in deg, marked when it is the rig's limit."""
    return f"{v['peak_tilt_deg']:.3g}" + (" (limit)" if v.get("peak_tilt_is_limit") else "")


def _friction(value) -> str:
    """Friction coefficient needed ("unbounded" where the ball lost its normal force)."""
    if value is None:
        return "-"
    return "unbounded" if not np.isfinite(value) else f"{value:.3g}"


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
    """A number for the tables ("-" for none, "diverged" for the infinite error of a diverged run)."""
    if value is None:
        return "-"
    return "diverged" if not np.isfinite(value) else f"{value:.3g}"


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
