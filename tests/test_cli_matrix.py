"""Every ``ballctl`` command x every option its ``--help`` documents: refused when wrong, run when right.

The documentation of the options is each command's parser (what ``ballctl COMMAND --help`` prints).
:data:`OPTIONS` has an entry per command and option -- the flags and the positional arguments -- with

(a) documented valid values: every choice of a choices option, every rig preset and a rig file for ``--rig``,
    both forms of a switch with a value (``--animate`` and ``--animate FILE``, ``--offset-free`` and
    ``--no-offset-free``), every parameter name of ``identify --fit``, ...;
(b) an invalid value and the words of its one-line error (with the unit and the range where the option has
    them). Even a switch can be given wrong (``--force=yes``), so every option has one.

``test_the_table_covers_every_option_of_every_command`` fails on a new or renamed option without an entry.

Invalid values (default suite): each is refused with exit status 2, one line on stderr naming the option, nothing
on stdout, no traceback, nothing written (``--out`` points into the test's folder, which is also the current
folder) and within :data:`REFUSAL_S` -- a refusal comes before any work.

Valid values (``-m slow``): :data:`RUNS` runs every command to completion with its documented exit status and
checks the files (or the table) it promises. A run combines several independent options at the cheapest settings
the command allows (short ``--duration``, few runs, a small plan problem); every valid value of the table appears
in at least one run of its command (``test_every_valid_value_is_in_a_run``, default suite). Animations are
written with 3 frames instead of 80 (the frame count is not an option; 80 frames of the 3-D ball take about 30 s).
Existing tests check the numbers of these outputs (``test_track_cli.py``, ``test_planning_cli.py``, ...); here
each option is shown to be accepted and acted on.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ballctl.ball_plate.rig import PRESETS
from ballctl.cli import build_parser, main

#: a refusal must come within this many seconds (the lazily imported modules loaded beforehand: no work)
REFUSAL_S = 2.0


@dataclass(frozen=True)
class Option:
    """An option's valid values and an invalid one; each as typed after the command (``{...}``: see :func:`_inputs`)."""

    valid: tuple[str, ...]
    invalid: str
    words: str                 #: in the one-line error
    context: str = ""          #: other arguments the refusal needs (e.g. a log to identify)
    name: str | None = None    #: how the error names it (default: the option string)
    also: tuple = ()           #: more ``(invalid, words[, known bug])``, e.g. for a second limit

    def rows(self) -> list[tuple[str, str, str]]:
        """``(invalid, words, known bug)`` of every refusal; a row with a known bug is a strict xfail."""
        more = [(bad, words, bug[0] if bug else "") for bad, words, *bug in self.also]
        return [(self.invalid, self.words, ""), *more]


def opt(*valid: str, bad: str, error: str, context: str = "", name: str | None = None, also: tuple = ()) -> Option:
    return Option(valid=valid, invalid=bad, words=error, context=context, name=name, also=also)


#: the ball's parameters (reference, partitions, montecarlo: the same flags and checks)
BALL = {
    "--mass": opt("--mass 0.12", bad="--mass 0", error="argument --mass: must be > 0 kg, got 0"),
    "--ball-radius": opt("--ball-radius 0.025", bad="--ball-radius -1",
                         error="argument --ball-radius: must be > 0 m, got -1"),
    "--inertia": opt("--inertia 3e-5", bad="--inertia 0", error="argument --inertia: must be > 0 kg m^2, got 0"),
    "--gravity": opt("--gravity 9.8", bad="--gravity 0", error="argument --gravity: must be > 0 m/s^2, got 0"),
}
#: the circle or path's size, rate, roll rate and centre (reference, partitions, track, montecarlo)
CIRCLE = {
    "--radius": opt("--radius 0.4", bad="--radius 0", error="argument --radius: must be > 0 m, got 0"),
    "--omega": opt("--omega -1.2", bad="--omega 0", error="argument --omega: must be non-zero rad/s, got 0"),
    "--roll-rate": opt("--roll-rate 35", bad="--roll-rate nan",
                       error="argument --roll-rate: must be a finite number in rad/s, got 'nan'"),
    "--center": opt("--center 0.1 -0.05", bad="--center 0 x",
                    error="argument --center: must be a number in m, got 'x'"),
}
PATH = opt("--path circle", "--path ellipse", "--path figure8", "--path lissajous", "--path waypoints",
           bad="--path spiral", error="argument --path: invalid choice: 'spiral'")


#: ``--rig`` of partitions, track and montecarlo: every preset and a rig file
RIG = opt("--rig tabletop", "--rig lab", "--rig ideal", "--rig {rig_toml}", bad="--rig desk",
          error="--rig: unknown rig preset 'desk'; presets are ['ideal', 'lab', 'tabletop'], or a rig file",
          also=(("--rig {tmp}/missing.toml", "missing.toml' does not exist"),))


OPTIONS: dict[str, dict[str, Option]] = {
    "reference": {
        **BALL, **CIRCLE,
        "--out": opt("--out {tmp}/ref/circle.svg", "--out ''", bad="--out {tmp}/out/reference.jpgx",
                     error="must end in a figure format (avif, eps",
                     also=(("--out {file}/reference.png", "is a file, not a directory"),)),
    },
    "partitions": {
        "--path": PATH, **CIRCLE, "--rig": RIG, **BALL,
        "--dt": opt("--dt 0.5", bad="--dt 0", error="argument --dt: must be > 0 s, got 0"),
    },
    "simulate-ball": {
        "--t-final": opt("--t-final 0.3", bad="--t-final 1e5", error="argument --t-final: must be <= 10000 s, got 1e5"),
        "--out": opt("--out {tmp}/ball", bad="--out {file}", error="is a file; give a folder"),
        "--animate": opt("--animate", "--animate roll.gif", "--animate roll.mp4", bad="--animate roll.avi",
                         error="--animate 'roll.avi': an animation file must end in .gif (pillow) or .mp4 (ffmpeg)"),
    },
    "track": {
        "--config": opt("--config {config}", bad="--config {tmp}/missing.toml", error="missing.toml' does not exist"),
        "--path": PATH, **CIRCLE,
        "--rig": RIG,
        "--truth": opt("--truth tabletop", bad="--truth lab",
                       error="--truth 'lab' runs at dt = 0.005 s but --rig 'tabletop' at 0.02 s",
                       also=(("--truth desk", "--truth: unknown rig preset 'desk'"),
                             ("--truth {tmp}/missing.toml", "--truth: rig file"))),
        "--design": opt("--design auto", "--design exact", "--design qs-contact", "--design qs-paper",
                        bad="--design lqg9", error="--design must be auto or one of exact, qs-contact, qs-paper"),
        "--feedback": opt("--feedback output", "--feedback state", bad="--feedback kalman",
                          error="argument --feedback: invalid choice: 'kalman'"),
        "--duration": opt("--duration 0.6", "--duration 0.3", bad="--duration 601",
                          error="argument --duration: must be <= 600 s, got 601"),
        "--weight-scale": opt("--weight-scale 2", bad="--weight-scale 0",
                              error="argument --weight-scale: must be >= 1e-06, got 0"),
        "--max-input-error-deg": opt("--max-input-error-deg 4", bad="--max-input-error-deg 91",
                                     error="argument --max-input-error-deg: must be <= 90 deg, got 91"),
        "--offset": opt("--offset 0 0", bad="--offset 2 0",
                        error="--offset 2 0: the initial offset (2 m) must be below 1 m"),
        "--max-rms-error": opt("--max-rms-error 0.05", bad="--max-rms-error 0",
                               error="argument --max-rms-error: must be > 0 m, got 0"),
        "--seed": opt("--seed 2", bad="--seed -1", error="argument --seed: must be an integer >= 0, got -1"),
        "--robust-runs": opt("--robust-runs 0", "--robust-runs 2", bad="--robust-runs -1",
                             error="argument --robust-runs: must be an integer >= 0, got -1"),
        "--search-runs": opt("--search-runs 0", "--search-runs 2", bad="--search-runs -1",
                             error="argument --search-runs: must be an integer >= 0, got -1",
                             also=(("--search-runs 10001", "--search-runs must be at most 10,000"),)),
        "--offset-free": opt("--offset-free", "--no-offset-free", bad="--offset-free=no",
                             error="argument --offset-free/--no-offset-free: ignored explicit argument 'no'"),
        "--force": opt("--force", bad="--force=yes", error="argument --force: ignored explicit argument 'yes'"),
        "--out": opt("--out {tmp}/t1", bad="--out {folder}", error="is a folder of other files"),
        "--log": opt("--log {tmp}/logs/run.csv", bad="--log {tmp}/out/run.txt", error="--log must name a .csv file"),
        "--animate": opt("--animate", "--animate ellipse.gif", "--animate run.mp4", bad="--animate roll.avi",
                         error="--animate 'roll.avi': an animation file must end in .gif (pillow) or .mp4 (ffmpeg)"),
    },
    "plan": {
        "problem": opt("{problem}", bad="{tmp}/missing.toml", error="cannot read problem file {tmp}/missing.toml",
                       name="problem file"),
        "--intervals": opt("--intervals 8", "--intervals 4", bad="--intervals 1",
                           error="argument --intervals: must be an integer >= 2, got 1",
                           also=(("--intervals 8.5", "argument --intervals: must be an integer, got '8.5'"),)),
        "--no-closed-loop": opt("--no-closed-loop", bad="--no-closed-loop=yes",
                                error="argument --no-closed-loop: ignored explicit argument 'yes'"),
        "--ball-plate": opt("--ball-plate", bad="--ball-plate=yes",
                            error="argument --ball-plate: ignored explicit argument 'yes'"),
        "--out": opt("--out {tmp}/plan", bad="--out {file}/plan", error="is a file, not a directory"),
    },
    "montecarlo": {
        "--rig": RIG, **BALL,
        "--controller": opt("--controller lqg", "--controller lqr", bad="--controller pid",
                            error="argument --controller: invalid choice: 'pid'"),
        "--design": opt("--design exact", "--design qs-contact", "--design qs-paper", bad="--design auto",
                        error="argument --design: invalid choice: 'auto'"),
        **CIRCLE,
        "--runs": opt("--runs 2", bad="--runs 0", error="argument --runs: must be an integer >= 1, got 0",
                      also=(("--runs 100000000 --duration 12", "--runs 100,000,000 over 600 control steps: runs x "
                                                               "steps must be at most 20,000,000"),)),
        "--seed": opt("--seed 1", bad="--seed -1", error="argument --seed: must be an integer >= 0, got -1"),
        "--chunk-size": opt("--chunk-size 1", bad="--chunk-size 0",
                            error="argument --chunk-size: must be an integer >= 1, got 0"),
        "--workers": opt("--workers 2", bad="--workers -1",
                         error="argument --workers: must be an integer >= 0, got -1"),
        # port 1 is privileged: nothing listens there (the refusal's words when dask is installed, as CI has it)
        "--scheduler": opt("--scheduler {scheduler}", bad="--scheduler tcp://127.0.0.1:1",
                           error="cannot reach the Dask scheduler at tcp://127.0.0.1:1: connection refused"),
        "--dt": opt("--dt 0.01", bad="--dt 0.013",
                    error="argument --dt: 0.013 s does not suit rig 'tabletop' (sensor 'camera': period_s = 0.02 s "
                          "must be a whole number"),
        "--duration": opt("--duration 0.2", "--duration 0.3", bad="--duration 0",
                          error="--duration must be a finite number > 0 s, got 0.0",
                          also=(("--duration 1e5", "--duration must be at most 600 s"),)),
        "--mass-std": opt("--mass-std 0.002", bad="--mass-std -1",
                          error="argument --mass-std: must be >= 0 kg, got -1"),
        "--radius-std": opt("--radius-std 0.0002", bad="--radius-std -1",
                            error="argument --radius-std: must be >= 0 m, got -1"),
        "--noise": opt("--noise 0.002", bad="--noise inf", error="argument --noise: must be a finite number in m"),
        "--bias": opt("--bias 0.001", bad="--bias -1", error="argument --bias: must be >= 0 m, got -1"),
        "--latency-max": opt("--latency-max 0.04", bad="--latency-max -1",
                             error="argument --latency-max: must be >= 0 s, got -1"),
        "--offset": opt("--offset 0.02 -0.01", bad="--offset 0.1 0.2 0.3",
                        error="argument --offset: takes two values DX DY in m, got 3"),
        "--offset-std": opt("--offset-std 0.005", bad="--offset-std -1",
                            error="argument --offset-std: must be >= 0 m, got -1"),
        "--failure-error": opt("--failure-error 0.05", bad="--failure-error 0",
                               error="argument --failure-error: must be > 0 m, got 0"),
        "--out": opt("--out {tmp}/mc", bad="--out {file}", error="is a file; give a folder"),
    },
    "identify": {
        "log": opt("{log}", bad="{tmp}/missing.csv", error="LOG.csv '{tmp}/missing.csv' does not exist",
                   name="LOG.csv"),
        "--rig": opt("--rig lab", "--rig tabletop", "--rig ideal", "--rig {rig_toml}", bad="--rig desk",
                     error="--rig: unknown rig preset 'desk'; presets are ['ideal', 'lab', 'tabletop'], or a rig file",
                     also=(("--rig {tmp}/missing.toml", "--rig '{tmp}/missing.toml' does not exist"),)),
        "--out": opt("--out {tmp}/id/rig.toml", bad="--out {tmp}/out/rig.txt", context="{log}",
                     error="--out must name a .toml file (the identified rig)"),
        "--report": opt("--report {tmp}/id/report", bad="--report {file}", context="{log}",
                        error="is a file; give a folder"),
        "--window": opt("--window 0.5", bad="--window 0", error="argument --window: must be > 0 s, got 0"),
        "--fit": opt("--fit plate_offset,servo_bandwidth,servo_damping,rolling_resistance,servo_deadband,latency,bias",
                     bad="--fit plate_offset,friction", context="{log}",
                     error="--fit: unknown parameter(s) ['friction']; choose from plate_offset"),
        "--workers": opt("--workers 1", bad="--workers 0", error="argument --workers: must be an integer >= 1, got 0"),
        "--excitation": opt("--excitation {tmp}/id/lab.csv", bad="--excitation {tmp}/out/exc.txt",
                            error="--excitation must name a .csv file"),
        "--duration": opt("--duration 2", bad="--duration 0.5", error="argument --duration: must be >= 1 s, got 0.5"),
        "--amplitude-deg": opt("--amplitude-deg 1.5", bad="--amplitude-deg 5",
                               error="argument --amplitude-deg: must be <= 3 deg, got 5"),
        "--radius": opt("--radius 0.25", bad="--radius 0", error="argument --radius: must be > 0 m, got 0"),
        "--omega": opt("--omega 1.2", bad="--omega 0", error="argument --omega: must be non-zero rad/s, got 0"),
        "--seed": opt("--seed 1", bad="--seed -1", error="argument --seed: must be an integer >= 0, got -1"),
    },
}

#: the output a refusal must not write, and arguments that keep a command cheap should a refusal ever be missed
#: (the row's own value comes after them and wins)
OUT = {"reference": "--out {tmp}/out/reference.png", "partitions": "", "simulate-ball": "--t-final 0.1 --out {tmp}/out",
       "track": "--rig ideal --design qs-contact --duration 0.6 --robust-runs 0 --out {tmp}/out",
       "plan": "--ball-plate --intervals 4 --no-closed-loop --out {tmp}/out",
       "montecarlo": "--runs 1 --duration 0.2 --out {tmp}/out",
       "identify": "--excitation {tmp}/out/exc.csv --duration 1 --out {tmp}/out/rig.toml"}
#: ... except where the option itself is about them
OUT_OVERRIDES = {("track", "--truth"): "--out {tmp}/out", ("track", "--duration"): "--out {tmp}/out",
                 ("track", "--design"): "--out {tmp}/out", ("plan", "--ball-plate"): "--out {tmp}/out",
                 ("plan", "--intervals"): "--out {tmp}/out", ("plan", "--no-closed-loop"): "--out {tmp}/out",
                 ("identify", "log"): "--out {tmp}/out/rig.toml", ("identify", "--out"): "",
                 ("identify", "--report"): "--out {tmp}/out/rig.toml",
                 ("identify", "--fit"): "--out {tmp}/out/rig.toml",
                 ("identify", "--excitation"): "--duration 1"}


# ----------------------------------------------------------------------------------------------- the parser
def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(sub: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option of a command, by its first option string (a positional argument by its name)."""
    return {(a.option_strings[0] if a.option_strings else a.dest): a for a in sub._actions
            if not isinstance(a, argparse._HelpAction)}


def test_the_table_covers_every_option_of_every_command():
    subs = _subparsers()
    assert set(OPTIONS) == set(subs), "a command without a table, or a table without its command"
    for command, sub in subs.items():
        actions = _options(sub)
        assert set(OPTIONS[command]) == set(actions), (command, "new or renamed options",
                                                       sorted(set(actions) ^ set(OPTIONS[command])))
        for flag, action in actions.items():
            entry = OPTIONS[command][flag]
            if action.option_strings:
                assert all(shlex.split(v)[0] in action.option_strings for v in entry.valid), (command, flag)
                for invalid, _, _ in entry.rows():
                    assert shlex.split(invalid)[0].split("=")[0] in action.option_strings, (command, flag)
            valued = [shlex.split(v)[1:] for v in entry.valid]
            for choice in action.choices or ():
                assert [choice] in valued, f"{command} {flag}: the choice {choice!r} has no valid entry"
            if isinstance(action, argparse.BooleanOptionalAction):
                assert {v for v in entry.valid} == set(action.option_strings), (command, flag)
            if action.nargs == "?" and action.option_strings:
                assert [] in valued and any(valued), f"{command} {flag}: both the bare flag and a value"


def test_every_rig_preset_and_design_and_fit_parameter_has_a_valid_entry():
    from ballctl.ball_plate.design import RIG_DESIGNS
    from ballctl.cli.identify import FIT_CHOICES

    for command, options in OPTIONS.items():
        if "--rig" in options:
            values = {shlex.split(v)[1] for v in options["--rig"].valid}
            assert set(PRESETS) | {"{rig_toml}"} == values, command
    assert {shlex.split(v)[1] for v in OPTIONS["track"]["--design"].valid} == {"auto", *RIG_DESIGNS}
    assert {shlex.split(v)[1] for v in OPTIONS["montecarlo"]["--design"].valid} == set(RIG_DESIGNS)
    fit = {name for v in OPTIONS["identify"]["--fit"].valid for name in shlex.split(v)[1].split(",")}
    assert fit == set(FIT_CHOICES)


# ----------------------------------------------------------------------------------------------- inputs
RIG_TOML = 'name = "tabletop-identified"\nbase = "tabletop"\n[imperfections]\nplate_offset_deg = [0.3, -0.2]\n'
#: a criterion no run meets (track's T1 exports with --force); the command line's flags win over it
CONFIG = "seed = 1\nmax_rms_error = 1e-6\n"
#: a rolling-ball maneuver without obstacles, one mesh refinement at most (about 1 s of IPOPT)
PROBLEM = """obstacles = []
[maneuver]
duration_s = 4.0
target_contact_m = [0.0, 0.5]
[solver]
intervals = 10
obstacle_continuation = [1.0]
accuracy_tolerance = 1e-2
max_intervals = 20
branch_search = false
[closed_loop]
enabled = true
replan_every = 0
"""


#: a log that parses (2 s at 50 Hz, the ball at rest): enough for the refusals, which come before the fit
STILL_LOG = "t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_m,contact_y_m\n" + "".join(
    f"{0.02 * k:.2f},0,0,0.3,0\n" for k in range(101))


@pytest.fixture(scope="module")
def rig_log(tmp_path_factory) -> Path:
    """A 2 s identification log of the tabletop rig (4 windows of 0.5 s), for the identification to fit."""
    from ballctl.ball_plate.identification import excitation_log

    path = tmp_path_factory.mktemp("log") / "excitation.csv"
    excitation_log("tabletop", duration_s=2.0, seed=1).write_csv(path)
    return path


def _inputs(tmp: Path, log: Path | None = None) -> dict[str, str]:
    """The files the rows name: ``{rig_toml}``, ``{config}``, ``{problem}``, ``{log}`` (default :data:`STILL_LOG`),
    ``{file}`` (a plain file), ``{folder}`` (a folder of the user's own files), and ``{tmp}`` itself."""
    inputs = tmp / "in"
    inputs.mkdir()
    if log is None:
        log = inputs / "still.csv"
        log.write_text(STILL_LOG)
    (inputs / "rig.toml").write_text(RIG_TOML)
    (inputs / "config.toml").write_text(CONFIG)
    (inputs / "problem.toml").write_text(PROBLEM)
    (inputs / "notes.txt").write_text("the user's own file")
    (inputs / "mine").mkdir()
    (inputs / "mine" / "thesis.tex").write_text("keep me")
    return {"tmp": str(tmp), "rig_toml": str(inputs / "rig.toml"), "config": str(inputs / "config.toml"),
            "problem": str(inputs / "problem.toml"), "log": str(log), "file": str(inputs / "notes.txt"),
            "folder": str(inputs / "mine")}


def _argv(text: str, values: dict[str, str]) -> list[str]:
    return [token.format(**values) for token in shlex.split(text)]


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def _run(argv: list[str]) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue(), time.perf_counter() - started


# ----------------------------------------------------------------------------------------------- invalid values
INVALID = [pytest.param(command, flag, k, id=f"{command} {flag}" + (f" {k}" if k else ""),
                        marks=[pytest.mark.xfail(strict=True, reason=bug)] if bug else [])
           for command, options in OPTIONS.items() for flag, entry in options.items()
           for k, (_, _, bug) in enumerate(entry.rows())]


@pytest.fixture(scope="module")
def _lazy_imports():
    """Load what the commands import when they start (a refusal is timed on its checks, not on imports)."""
    import importlib

    for module in ("ballctl.figures.plotting", "ballctl.ball_plate.identification", "ballctl.ball_plate.rig_log",
                   "ballctl.studies.partitions", "ballctl.studies.paper_ball", "ballctl.simulation.monte_carlo",
                   "ballctl.planning", "ballctl.figures.animation", "distributed"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


@pytest.mark.parametrize("command, flag, k", INVALID)
def test_an_invalid_value_is_refused_in_one_line_before_any_work(command, flag, k, tmp_path, monkeypatch,
                                                                 _lazy_imports):
    entry = OPTIONS[command][flag]
    invalid, words, _ = entry.rows()[k]
    if (command, flag) == ("montecarlo", "--scheduler"):
        pytest.importorskip("distributed")
    values = _inputs(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)       # a default output would land here
    before = _tree(tmp_path)
    argv = [command, *_argv(OUT_OVERRIDES.get((command, flag), OUT[command]), values),
            *_argv(entry.context, values), *_argv(invalid, values)]
    status, out, err, seconds = _run(argv)
    name = entry.name or flag
    assert status == 2, (argv, status, err)
    assert err.startswith(f"ballctl {command}: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    assert words.format(**values) in err and name in err, err
    assert "Traceback" not in err and out == "", out
    assert _tree(tmp_path) == before, "a refused command wrote something"
    assert seconds < REFUSAL_S, f"refused only after {seconds:.2f} s: the check comes after some work"


# ----------------------------------------------------------------------------------------------- valid values
@dataclass(frozen=True)
class Run:
    """A command line of valid values, its documented exit status and what it promises (files under {tmp})."""

    argv: str
    status: int = 0
    files: tuple[str, ...] = ()
    says: str = ""     #: in its standard output
    needs: str = ""    #: a module it needs (an optional extra), or "ffmpeg" (the .mp4 writer)
    json: tuple = ()   #: (dotted key, value) pairs of its first file (a JSON summary): the options acted on


RUNS = {
    "reference": [
        Run("reference --mass 0.12 --ball-radius 0.025 --inertia 3e-5 --gravity 9.8 --radius 0.4 --omega -1.2 "
            "--roll-rate 35 --center 0.1 -0.05 --out {tmp}/ref/circle.svg", files=("ref/circle.svg",),
            says="radius 0.4 m, omega -1.2 rad/s, centre (0.1, -0.05)"),
        Run("reference --out ''", says="plate tilt (constant)"),      # '' skips the figure
    ],
    "partitions": [
        Run("partitions --path circle --rig tabletop --radius 0.4 --omega -1.2 --roll-rate 35 --center 0.1 -0.05 "
            "--mass 0.12 --ball-radius 0.025 --inertia 3e-5 --gravity 9.8 --dt 0.5",
            says="circle of radius 0.4 m at -1.2 rad/s, roll rate 35 rad/s, centre (0.1, -0.05) m; rig 'tabletop', "
                 "quasi-static design plant (ball 0.12 kg, radius 0.025 m)"),
        Run("partitions --path ellipse --rig lab --dt 0.5", says="recommended:"),
        Run("partitions --path figure8 --rig ideal --dt 0.5", says="recommended:"),
        Run("partitions --path lissajous --rig {rig_toml} --dt 0.5", says="rig 'tabletop-identified'"),
        Run("partitions --path waypoints --dt 0.5", says="recommended:"),
    ],
    "simulate-ball": [
        Run("simulate-ball --t-final 0.3 --animate --out {tmp}/ball", files=("ball/ball_paths.png",
                                                                             "ball/ball_rolling.gif"),
            says="t_final_s                    0.3"),
        Run("simulate-ball --t-final 0.3 --out {tmp}/ball2 --animate roll.gif",
            files=("ball2/ball_paths.png", "ball2/roll.gif")),
        Run("simulate-ball --t-final 0.3 --out {tmp}/ball3 --animate roll.mp4", files=("ball3/roll.mp4",),
            needs="ffmpeg"),
    ],
    "track": [
        # --config's max_rms_error (1e-6) fails the design: --force exports it anyway (the failure in the summary)
        Run("track --config {config} --path circle --rig ideal --design qs-paper --feedback output --no-offset-free "
            "--duration 0.6 --robust-runs 0 --offset 0 0 --force --log {tmp}/logs/run.csv --animate --out {tmp}/t1",
            files=("t1/summary.json", "t1/summary.md", "t1/gain_schedule.npz", "t1/tracking.gif", "logs/run.csv"),
            json=(("forced", True), ("exported_design", "qs-paper"), ("max_rms_error_m", 1e-6),
                  ("path.kind", "circle"), ("rig.name", "ideal"), ("path.initial_offset_m", [0.0, 0.0]),
                  ("verification.qs-paper.offset_free", False))),
        Run("track --path ellipse --rig tabletop --design exact --offset-free --duration 0.6 --robust-runs 2 "
            "--weight-scale 2 --max-input-error-deg 4 --max-rms-error 0.05 --offset 0.01 0 --seed 2 --search-runs 2 "
            "--animate ellipse.gif --out {tmp}/t2",
            files=("t2/summary.json", "t2/robust.png", "t2/gain_schedule.npz", "t2/ellipse.gif"),
            json=(("path.kind", "ellipse"), ("rig.name", "tabletop"), ("pass_criteria.robust.runs", 2),
                  ("exported_design", "exact"), ("verification.exact.offset_free", True))),
        Run("track --path figure8 --rig lab --design qs-contact --radius 0.4 --omega -1.2 --roll-rate 35 "
            "--center 0.1 -0.05 --duration 0.3 --robust-runs 0 --search-runs 0 --max-rms-error 0.05 --out {tmp}/t3",
            files=("t3/summary.json", "t3/tracking.png"),
            json=(("path.kind", "figure8"), ("rig.name", "lab"), ("path.size_m", 0.4), ("path.rate_rad_s", -1.2),
                  ("path.center_m", [0.1, -0.05]), ("path.horizon_s", 0.3))),
        Run("track --path lissajous --rig ideal --design auto --feedback state --duration 0.6 --robust-runs 0 "
            "--max-rms-error 0.05 --out {tmp}/t4", files=("t4/summary.json", "t4/tracking.png"),
            json=(("path.kind", "lissajous"), ("rig.name", "ideal"))),
        Run("track --path waypoints --rig {rig_toml} --truth tabletop --design exact --duration 0.6 --robust-runs 0 "
            "--max-rms-error 0.05 --out {tmp}/t5", files=("t5/summary.json", "t5/tracking.png"),
            json=(("path.kind", "waypoints"), ("rig.name", "tabletop-identified"), ("truth_rig.name", "tabletop"))),
        Run("track --rig ideal --design qs-contact --duration 0.3 --robust-runs 0 --no-offset-free "
            "--max-rms-error 0.05 --offset 0 0 --animate run.mp4 --out {tmp}/t6",
            files=("t6/summary.json", "t6/run.mp4"), needs="ffmpeg"),
    ],
    "plan": [
        Run("plan {problem} --intervals 8 --no-closed-loop --out {tmp}/plan",
            files=("plan/plan.json", "plan/plan.npz", "plan/plan.png"), says='"converged": true', needs="casadi",
            json=(("converged", True), ("intervals.0", 8), ("closed_loop", None))),
        Run("plan --ball-plate --intervals 4 --out {tmp}/plate",
            files=("plate/plan.json", "plate/plan.npz", "plate/plan.png"), says='"converged": true', needs="casadi",
            json=(("plant", "ball_plate"), ("intervals_per_leg", 4), ("closed_loop.dt_s", 0.02))),
    ],
    "montecarlo": [
        Run("montecarlo --controller lqg --design exact --rig tabletop --runs 2 --duration 0.2 --seed 1 --chunk-size 1 "
            "--workers 2 --noise 0.002 --bias 0.001 --latency-max 0.04 --offset 0.02 -0.01 --offset-std 0.005 "
            "--mass-std 0.002 --radius-std 0.0002 --failure-error 0.05 --out {tmp}/mc",
            files=("mc/summary.json", "mc/runs.npz", "mc/error_bands.png"), says="2 runs",
            json=(("runs", 2), ("controller", "lqg"), ("design", "exact"), ("rig", "tabletop"),
                  ("failure_error_m", 0.05), ("uncertainty.mass_std_kg", 0.002),
                  ("uncertainty.radius_std_m", 0.0002), ("uncertainty.noise_std_m.contact_x", 0.002),
                  ("uncertainty.initial_offset_mean_m", [0.02, -0.01]), ("uncertainty.initial_offset_std_m", 0.005),
                  ("uncertainty.latency", "uniform in [0, 0.04] s (--latency-max)"),
                  ("uncertainty.bias", "std 0.001 m per axis (--bias)"))),
        Run("montecarlo --controller lqr --rig lab --dt 0.01 --duration 0.3 --runs 2 --radius 0.4 --omega -1.2 "
            "--roll-rate 35 --center 0.1 -0.05 --mass 0.12 --ball-radius 0.025 --inertia 3e-5 --gravity 9.8 "
            "--out {tmp}/mc2", files=("mc2/summary.json",), says="lqr",
            json=(("controller", "lqr"), ("rig", "lab"), ("dt_s", 0.01),
                  ("uncertainty.mass_std_kg", PRESETS["lab"].uncertainty.mass_rel * 0.12))),  # of --mass
        Run("montecarlo --design qs-contact --rig ideal --runs 2 --duration 0.2 --scheduler {scheduler} "
            "--out {tmp}/mc3", files=("mc3/summary.json",), says="2 runs", needs="distributed",
            json=(("design", "qs-contact"), ("rig", "ideal"))),
        Run("montecarlo --design qs-paper --rig {rig_toml} --runs 2 --duration 0.2 --out {tmp}/mc4",
            files=("mc4/summary.json",), says="2 runs", json=(("design", "qs-paper"), ("rig", "tabletop-identified"))),
    ],
    "identify": [
        Run("identify --excitation {tmp}/id/lab.csv --rig lab --duration 2 --amplitude-deg 1.5 --radius 0.25 "
            "--omega 1.2 --seed 1", files=("id/lab.csv",), says="wrote"),
        Run("identify --excitation {tmp}/id/ideal.csv --rig ideal --duration 2", files=("id/ideal.csv",)),
        Run("identify --excitation {tmp}/id/toml.csv --rig {rig_toml} --duration 2", files=("id/toml.csv",)),
        Run("identify {log} --rig tabletop --out {tmp}/id/rig.toml --report {tmp}/id/report --window 0.5 "
            "--fit plate_offset,servo_bandwidth,servo_damping,rolling_resistance,servo_deadband,latency,bias "
            "--workers 1", files=("id/report/summary.json", "id/rig.toml", "id/report/summary.md",
                                  "id/report/identification.png"),
            json=(("base_rig", "tabletop"), ("window_s", 0.5), ("windows", 4))),
    ],
}
ALL_RUNS = [(command, run) for command, runs in RUNS.items() for run in runs]


def _appears(tokens: list[str], argv: list[str]) -> bool:
    """``tokens`` (an option and its values) appear in ``argv`` as one argument: followed by the next option or
    the end (so that a bare ``--animate`` is not matched by ``--animate FILE``)."""
    n = len(tokens)
    return any(argv[i:i + n] == tokens and (i + n == len(argv) or argv[i + n].startswith("--"))
               for i in range(len(argv) - n + 1))


def test_every_valid_value_is_in_a_run():
    assert set(RUNS) == set(OPTIONS)
    for command, options in OPTIONS.items():
        argvs = [shlex.split(run.argv)[1:] for run in RUNS[command]]
        for flag, entry in options.items():
            for value in entry.valid:
                assert any(_appears(shlex.split(value), argv) for argv in argvs), \
                    f"{command}: the valid value {value!r} of {flag} is in none of its runs"
        for argv in argvs:   # a run uses only the table's values (each checked by the parser too)
            build_parser().parse_args([command, *argv])


@pytest.fixture
def few_frames(monkeypatch):
    """Animations of 3 frames (the commands pass no frame count: 80 by default, about 30 s for the 3-D ball)."""
    from ballctl.figures import animation

    for name in ("animate_ball_plate", "animate_rolling_ball"):
        monkeypatch.setattr(animation, name, functools.partial(getattr(animation, name), max_frames=3))


@pytest.fixture
def scheduler():
    """The address of a Dask scheduler with one worker (threads of this process), closed afterwards."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
@pytest.mark.parametrize("command, run", ALL_RUNS, ids=[f"{c}-{i}" for c, runs in RUNS.items() for i in
                                                         range(len(runs))])
def test_valid_values_run_to_completion(command, run, tmp_path, monkeypatch, few_frames, request):
    if run.needs == "ffmpeg":
        from ballctl.figures.animation import available_formats

        if ".mp4" not in available_formats():
            pytest.skip("writing .mp4 needs ffmpeg, not installed here")
    elif run.needs:
        pytest.importorskip(run.needs)
    values = _inputs(tmp_path, request.getfixturevalue("rig_log") if "{log}" in run.argv else None)
    if "{scheduler}" in run.argv:
        values["scheduler"] = request.getfixturevalue("scheduler")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, out, err, _ = _run(_argv(run.argv, values))
    assert status == run.status, err[-3000:]
    assert "Traceback" not in err
    for name in run.files:
        path = tmp_path / name
        assert path.is_file() and path.stat().st_size > 0, f"{name} missing; wrote {sorted(_tree(tmp_path))}"
    assert run.says in out, out[-2000:]
    assert not any(work.iterdir()), "a run with every output named wrote into the current folder"
    summary = json.loads((tmp_path / run.files[0]).read_text()) if run.files[0:1] and \
        run.files[0].endswith(".json") else {}
    for key, expected in run.json:
        value = functools.reduce(lambda d, k: d.get(k) if isinstance(d, dict) else
                                 (d[int(k)] if isinstance(d, list) else None), key.split("."), summary)
        assert value == (pytest.approx(expected) if isinstance(expected, (float, list)) else expected), key
    if command == "track":   # exit status 0 exactly when a design was exported
        assert (summary["exported_design"] is not None) == (status == 0)
