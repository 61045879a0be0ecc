"""``ballctl identify``: calibrate a rig from its own log, or write an excitation to log.

Two forms:

* ``ballctl identify LOG.csv --out rig.toml [--rig BASE]`` fits the rig's
  truth plant to the log (:func:`ballctl.ball_plate.identification.identify_rig`: level
  offsets, latency, servo bandwidth, damping and dead band, sensor noise,
  timing jitter, lost frames, rolling resistance, each with its standard
  error) and writes the identified rig as a TOML file that ``ballctl track
  --rig`` accepts (the base rig's values where the log does not excite a
  parameter), and the report in a folder of its own (``--report``; default
  next to the TOML, named after it: ``rig.toml`` -> ``rig_report/``):
  ``summary.md``, ``summary.json`` and ``identification.png`` (measured vs
  predicted readings and residuals).
* ``ballctl identify --excitation FILE.csv [--rig BASE]`` writes a command
  sequence for identification (:func:`ballctl.ball_plate.identification.excitation_log`:
  a closed-loop circle with a multisine dither, as a rig log with the dither
  columns and the readings the base rig would give).

Every argument is checked before the work starts (the log exists and
parses, the output folders can be written, the base rig fits the log): a
user error is one line and exit status 2, and nothing is written. Every
output appears whole or not at all, also under ``kill -9``: the report folder
is built in a hidden sibling and moved into place complete, replacing an
earlier report whole (:func:`ballctl._io.atomic_directory`); then the TOML,
and the excitation CSV, are written to a temporary file in their folder and
moved over the destination (:func:`ballctl._io.atomic_write_text`), so the
TOML never appears without its report
(:func:`ballctl.ball_plate.identification.write_identification`).

The log format is documented in ``docs/identification.md`` (module
:mod:`ballctl.ball_plate.rig_log`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .._errors import FileArgumentError, ParameterError
from ._common import compile_progress, integer, number, rig_from_spec

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "identify"
HELP = "calibrate a rig from its log (level offsets, latency, servo, noise, rolling resistance) -> rig TOML"

FIT_CHOICES = ("plate_offset", "servo_bandwidth", "servo_damping", "rolling_resistance", "servo_deadband", "latency",
               "bias")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("log", nargs="?", default=None, metavar="LOG.csv",
                   help="the rig log to identify from (columns t_s, alpha_cmd_rad, beta_cmd_rad, contact_x_m, "
                        "contact_y_m[, alpha_rad, beta_rad])")
    p.add_argument("--rig", default="tabletop",
                   help="base rig: a preset (tabletop, lab, ideal) or a TOML file; what the log cannot tell comes "
                        "from it (default tabletop)")
    g = p.add_argument_group("identification")
    g.add_argument("--out", default="ballctl_identify/rig.toml",
                   help="the identified rig's TOML file, written whole at the end (default ballctl_identify/rig.toml)")
    g.add_argument("--report", default=None, metavar="DIR",
                   help="folder of its own for summary.md, summary.json and identification.png, replaced whole at "
                        "the end (default: next to --out, named after it: rig.toml -> rig_report/)")
    g.add_argument("--window", type=number("s", low=0, low_inclusive=False), default=0.5,
                   help="multiple-shooting window in s (default 0.5)")
    g.add_argument("--fit", default=None, metavar="P1,P2",
                   help="parameters to fit, comma separated, from " + ", ".join(FIT_CHOICES) + " (default all)")
    g.add_argument("--workers", type=integer(low=1), default=2, help="threads for the batched runs (default 2)")
    g = p.add_argument_group("excitation")
    g.add_argument("--excitation", default=None, metavar="FILE.csv",
                   help="write an identification excitation (a rig log with a dither) instead of identifying")
    g.add_argument("--duration", type=number("s", low=1), default=60.0,
                   help="length of the excitation in s (default 60)")
    g.add_argument("--amplitude-deg", type=number("deg", low=0, high=3, low_inclusive=False), default=1.0,
                   help="RMS of the dither per axis in deg (default 1)")
    g.add_argument("--radius", type=number("m", low=0, low_inclusive=False), default=0.3,
                   help="circle radius of the excitation in m (default 0.3)")
    g.add_argument("--omega", type=number("rad/s", nonzero=True), default=1.0,
                   help="angular rate on the excitation's circle in rad/s (default 1)")
    g.add_argument("--seed", type=integer(low=0), default=0, help="seed of the dither's phases and the noise")


def _check_writable(folder: Path, flag: str, given) -> None:
    """Refuse an output whose folder (or, where it is still to be created, its nearest existing ancestor) cannot be
    written: no write permission, or a read-only file system."""
    existing = Path(os.path.abspath(folder))
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise FileArgumentError(f"{flag} {str(given)!r}: cannot write into the folder {str(existing)!r} (no "
                                f"permission, or a read-only file system)")


def _base_rig(spec: str):
    """The ``--rig`` base rig: a preset, or a TOML file that must exist (the flag named in the message)."""
    from .._paths import check_input_file

    if spec.endswith(".toml"):
        check_input_file(spec, "--rig")
    return rig_from_spec(spec)


def _check_not_inside(path: Path, folder: Path, name: str, flag: str) -> None:
    """Refuse an input file that lies in the report folder (which is replaced whole)."""
    if Path(os.path.abspath(path)).is_relative_to(Path(os.path.abspath(folder))):
        raise FileArgumentError(f"{name} {str(path)!r} lies in the report folder {flag} {str(folder)!r}, which is "
                                f"replaced whole: give the report a folder of its own")


def run(args: argparse.Namespace) -> int:
    """Identify a rig from a log, or write an excitation (see the module docstring).

    Every argument is checked first (one line, exit status 2, nothing
    written); the outputs then appear whole or not at all.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status (0).
    """
    from .._paths import check_input_file, check_output_path
    from ..ball_plate.identification import (excitation_log, identification_outputs, identify_rig,
                                             write_identification)
    from ..ball_plate.rig_log import read_rig_log

    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if args.excitation is not None and args.log is not None:
        raise ParameterError("give either LOG.csv (identify) or --excitation FILE.csv (write an excitation), not both")
    if args.excitation is None and args.log is None:
        raise ParameterError("give the rig log to identify from (ballctl identify LOG.csv --out rig.toml) or "
                             "--excitation FILE.csv")
    if args.excitation is not None:
        path = check_output_path(args.excitation, "--excitation", create_parents=True)
        if path.suffix != ".csv":
            raise ParameterError(f"--excitation must name a .csv file, got {args.excitation!r}")
        _check_writable(path.parent, "--excitation", args.excitation)
        base = _base_rig(args.rig)
        say(f"excitation on rig {base.name!r}: {args.duration:g} s, circle {args.radius:g} m at {args.omega:g} rad/s, "
            f"dither {args.amplitude_deg:g} deg RMS")
        log = excitation_log(base, duration_s=args.duration, amplitude_deg=args.amplitude_deg, radius_m=args.radius,
                             omega=args.omega, seed=args.seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        log.write_csv(path)   # whole: a temporary file in the folder, then os.replace
        print(f"wrote {path} ({log.n_steps} control steps of {log.dt:g} s): play alpha_cmd_rad/beta_cmd_rad on the "
              f"rig, or add alpha_dither_rad/beta_dither_rad to your controller's output while it tracks the "
              f"circle, and log it; then: ballctl identify LOG.csv --rig {args.rig} --out rig.toml")
        return 0
    log_path = check_input_file(args.log, "LOG.csv")
    out, report = identification_outputs(args.out, args.report, names=("--out", "--report"))
    _check_writable(out.parent, "--out", args.out)
    _check_writable(report.parent, "--report", report)
    _check_not_inside(log_path, report, "LOG.csv", "--report")
    base = _base_rig(args.rig)
    if args.rig.endswith(".toml"):
        _check_not_inside(Path(args.rig), report, "--rig", "--report")
    fit = None
    if args.fit is not None:
        fit = tuple(s.strip() for s in args.fit.split(",") if s.strip())
        bad = [s for s in fit if s not in FIT_CHOICES]
        if bad or not fit:
            raise ParameterError(f"--fit: unknown parameter(s) {bad or [args.fit]}; choose from "
                                 f"{', '.join(FIT_CHOICES)}")
    log = read_rig_log(log_path)
    started = []

    def progress(message: str) -> None:
        # the first call comes once identify_rig has checked the log against the base rig and --window
        if not started:
            started.append(True)
            say(f"[1/3] log {args.log}: {log.n_steps} steps of {log.dt:g} s, signals {', '.join(log.signal_names)}; "
                f"base rig {base.name!r}")
        say(f"[2/3] fit: {message}")

    with compile_progress(say, loop_aside=True):
        result = identify_rig(log, base, window_s=args.window, fit=fit, workers=args.workers, progress=progress)
    say(f"[3/3] fitted ({result.iterations} iterations, {result.wall_time_s:.3g} s); writing the report {report}/ "
        f"and the rig {out}")
    files = write_identification(result, out, report)
    say("wrote " + ", ".join(str(f) for f in files))
    print(result.report())
    return 0
