"""Arguments and builders shared by the subcommands (degrees appear only at this boundary).

Every numeric flag is parsed by a :func:`number` type that checks finiteness
and range and answers in the flag's own name and unit (argparse prefixes the
flag: ``argument --dt: must be > 0 s, got '0'``).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .._errors import ConfigError
from .._paths import check_output_dir, check_output_path

#: the paths of ``--path`` (``ballctl track``, ``ballctl partitions``), built by :func:`plate_path`
PATHS = ("circle", "ellipse", "figure8", "lissajous", "waypoints")
#: what each path is, in terms of the size ``r`` (``--radius``, m) and the rate ``w`` (``--omega``, rad/s)
PATH_SHAPES = {
    "circle": "radius r, angular rate w",
    "ellipse": "semi-axes r and 0.6 r, angular rate w",
    "figure8": "(r sin(wt/2), r/2 sin wt), one loop in 4 pi / w",
    "lissajous": "(r sin wt, 0.7 r sin 1.5wt), period 4 pi / w",
    "waypoints": "a spline through five waypoints spanning 1.2 r x 1.2 r, at 0.3 r w m/s",
}


def number(unit: str = "", *, low: float | None = None, high: float | None = None, low_inclusive: bool = True,
           high_inclusive: bool = True, nonzero: bool = False):
    """An argparse ``type``: a finite float in a range, rejected in the flag's unit.

    Parameters
    ----------
    unit : str
        Unit of the flag (e.g. ``"s"``, ``"deg"``), quoted in messages.
    low, high : float, optional
        Bounds of the allowed range.
    low_inclusive, high_inclusive : bool
        Whether the bounds are allowed.
    nonzero : bool
        Reject 0 too.

    Returns
    -------
    callable
        ``parse(text) -> float`` raising ``argparse.ArgumentTypeError``.
    """
    u = f" {unit}" if unit else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number{' in ' + unit if unit else ''}, got {text!r}") \
                from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number{' in ' + unit if unit else ''}, got {text!r}")
        if low is not None and (value < low or (value == low and not low_inclusive)):
            op = ">=" if low_inclusive else ">"
            raise argparse.ArgumentTypeError(f"must be {op} {low:g}{u}, got {text}")
        if high is not None and (value > high or (value == high and not high_inclusive)):
            op = "<=" if high_inclusive else "<"
            raise argparse.ArgumentTypeError(f"must be {op} {high:g}{u}, got {text}")
        if nonzero and value == 0.0:
            raise argparse.ArgumentTypeError(f"must be non-zero{u}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


def integer(*, low: int | None = None):
    """An argparse ``type``: an integer ``>= low``.

    Parameters
    ----------
    low : int, optional
        Smallest allowed value.

    Returns
    -------
    callable
        ``parse(text) -> int`` raising ``argparse.ArgumentTypeError``.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text}")
        return value

    parse.__name__ = "integer"
    return parse


def output_file(path: str, flag: str) -> Path:
    """Check an output file flag: not a directory, and no ancestor is a file (missing folders are created).

    Parameters
    ----------
    path : str
        The flag's value.
    flag : str
        The flag, e.g. ``"--out"``.

    Returns
    -------
    pathlib.Path
    """
    return check_output_path(path, flag, create_parents=True)


def output_dir(path: str, flag: str) -> Path:
    """Check an output folder flag: not an existing file, and no ancestor is a file (it is created).

    Parameters
    ----------
    path : str
        The flag's value.
    flag : str
        The flag, e.g. ``"--out"``.

    Returns
    -------
    pathlib.Path
    """
    return check_output_dir(path, flag)


def animation_file(name: str, flag: str, *, reserved=()) -> str:
    """Check an ``--animate FILE`` flag up front: a file name (written into --out) whose format can be written here.

    Parameters
    ----------
    name : str
        The flag's value.
    flag : str
        The flag, e.g. ``"--animate"``.
    reserved : collection of str
        The command's own output names, which the animation must not overwrite.

    Returns
    -------
    str
        ``name``.
    """
    from .._errors import ParameterError
    from ..figures.animation import FORMATS, available_formats

    if not name or os.path.basename(name) != name or name in (".", ".."):
        raise ParameterError(f"{flag} takes a file name, written into --out (e.g. run.gif), got {name!r}")
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError(f"{flag} {name!r}: an animation file must end in "
                             f"{' or '.join(f'{k} ({v})' for k, v in FORMATS.items())}")
    if suffix not in available_formats():
        raise ParameterError(f"{flag} {name!r}: writing {suffix} needs {FORMATS[suffix]}, which is not installed "
                             f"here; available: {', '.join(available_formats()) or 'none'}")
    if name in reserved:
        raise ParameterError(f"{flag} {name!r} would overwrite the command's own {name}")
    return name


def add_ball_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ball's physical parameters (SI units) to a subcommand's parser."""
    g = p.add_argument_group("ball")
    g.add_argument("--mass", type=number("kg", low=0, low_inclusive=False), default=0.1,
                   help="ball mass in kg (default 0.1)")
    g.add_argument("--ball-radius", type=number("m", low=0, low_inclusive=False), default=0.02,
                   help="ball radius in m (default 0.02)")
    g.add_argument("--inertia", type=number("kg m^2", low=0, low_inclusive=False), default=None,
                   help="inertia about a diameter in kg m^2 (default: solid sphere 2/5 m R^2)")
    g.add_argument("--gravity", type=number("m/s^2", low=0, low_inclusive=False), default=9.81,
                   help="gravity in m/s^2 (default 9.81)")


def add_ball_overrides(g) -> None:
    """Add the ball's parameters (SI units) to an argument group, each defaulting to the rig's ball."""
    g.add_argument("--mass", type=number("kg", low=0, low_inclusive=False), default=None,
                   help="ball mass in kg (default: the rig's, 0.1 for the presets)")
    g.add_argument("--ball-radius", type=number("m", low=0, low_inclusive=False), default=None,
                   help="ball radius in m (default: the rig's, 0.02 for the presets)")
    g.add_argument("--inertia", type=number("kg m^2", low=0, low_inclusive=False), default=None,
                   help="inertia about a diameter in kg m^2 (default: the rig's, a solid sphere 2/5 m R^2)")
    g.add_argument("--gravity", type=number("m/s^2", low=0, low_inclusive=False), default=None,
                   help="gravity in m/s^2 (default: the rig's, 9.81)")


def rig_ball_plate(args: argparse.Namespace, rig):
    """The rig's quasi-static design plant, its ball changed by the flags of :func:`add_ball_overrides`."""
    from dataclasses import replace

    from ..plants import BallPlate

    given = {k: v for k, v in (("mass", args.mass), ("radius", args.ball_radius), ("inertia", args.inertia),
                               ("gravity", args.gravity)) if v is not None}
    return BallPlate(replace(rig.ball, **given)) if given else rig.design_plant().quasi_static()


def add_circle_arguments(p: argparse.ArgumentParser) -> None:
    """Add the circular reference motion's parameters to a subcommand's parser."""
    g = p.add_argument_group("circle")
    g.add_argument("--radius", type=number("m", low=0, low_inclusive=False), default=0.5,
                   help="circle radius in m (default 0.5)")
    g.add_argument("--omega", type=number("rad/s", nonzero=True), default=1.0,
                   help="angular rate on the circle in rad/s (default 1.0)")
    g.add_argument("--roll-rate", type=number("rad/s"), default=40.0, help="ball roll rate in rad/s (default 40)")
    g.add_argument("--center", type=number("m"), nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
                   help="circle centre in m (default 0 0)")


def ball_plate(args: argparse.Namespace):
    """The quasi-static :class:`~ballctl.plants.BallPlate` described by the ball arguments."""
    from ..plants import BallPlate

    return BallPlate(mass=args.mass, radius=args.ball_radius, inertia=args.inertia, gravity=args.gravity)


def circle(args: argparse.Namespace, plant):
    """The :class:`~ballctl.references.CircularMotion` described by the circle arguments."""
    from ..references import CircularMotion

    return CircularMotion(plant, args.radius, args.omega, args.roll_rate, center=tuple(args.center))


def plate_path(kind: str, size: float, rate: float, center=(0.0, 0.0)):
    """The path ``kind`` of ``--path`` (:data:`PATH_SHAPES`), of size ``size`` m at rate ``rate`` rad/s.

    The one builder of the command-line paths (``ballctl track``, ``ballctl partitions``).

    Parameters
    ----------
    kind : str
        One of :data:`PATHS`.
    size : float
        ``r`` in m (the circle's radius, > 0).
    rate : float
        ``w`` in rad/s (non-zero).
    center : (float, float)
        Centre in m.

    Returns
    -------
    LissajousPath or WaypointPath
    """
    import numpy as np

    from ..references import LissajousPath, WaypointPath

    r, w = size, rate
    if kind == "circle":
        return LissajousPath.circle(r, w, center=center)
    if kind == "ellipse":
        return LissajousPath.ellipse(r, 0.6 * r, w, center=center)
    if kind == "figure8":
        # the faster (across) component at w, one loop of the eight in 4 pi / w: at twice this rate (the path's
        # default before) the exact design converged on only 89.5 % of the tabletop rig's drawn rigs
        return LissajousPath.figure_eight(r, w / 2, center=center)
    if kind == "lissajous":
        # phase 0: a non-degenerate curve (phase pi/2 retraces itself, stopping at two cusps) on which the
        # ball's lean stays below 60 deg (at phase 0.4 it drifted to the chart's singularity in the first period)
        return LissajousPath(amplitude_x=r, amplitude_y=0.7 * r, omega_x=w, omega_y=1.5 * w, center=center)
    if kind == "waypoints":
        pts = np.array([[0, 0], [0.6, 0.2], [1.0, 0.8], [0.4, 1.2], [-0.2, 0.8]]) * r + np.asarray(center)
        return WaypointPath(pts, speed=0.3 * r * w, ramp_time=1.0)
    raise ConfigError(f"--path must be one of {', '.join(PATHS)}, got {kind!r}")


#: names of the compiled kernels' groups in the progress lines of :func:`compile_progress`, by module
_KERNEL_GROUPS = {
    "ballctl.plants.kernels.moving_plate": "servo-plate dynamics",
    "ballctl.plants.kernels.ball_plate": "quasi-static ball-plate dynamics",
    "ballctl.simulation.engine": "the closed loop",
    "ballctl.simulation.loop_step": "the loop's steps",
    "ballctl._linalg": "linear algebra",
    "ballctl._quaternion": "rotations",
}


@contextlib.contextmanager
def compile_progress(say: Callable[[str], None], *, loop_aside: bool = False,
                     complex_step: tuple[str, ...] = ()) -> Iterator[None]:
    """Say on stderr when numba compiles the simulation kernels, group by group, and what it cost.

    The first run on a machine compiles the kernels (then cached on disk by
    numba); nothing is said on a run that finds them all in the cache. On the
    first compilation it says ``compiling the simulation kernels (first run
    only, cached afterwards)...``, then a line per kernel group when its
    first compilation starts (e.g. ``servo-plate dynamics``, ``... (complex step,
    for the linearization)``, ``the closed loop``), and at the end of the block
    the time each group took and where the cache is.

    Parameters
    ----------
    say : callable
        Prints one line (to stderr).
    loop_aside : bool
        On the first compilation (a cold cache), start a second process that compiles
        ahead what the job needs later (:func:`ballctl.simulation.engine.compile_in_background`:
        the closed loop, and with ``complex_step`` the complex-step kernels); said then, and at
        the end the time the job waited for it.
    complex_step : tuple of str
        With ``loop_aside``: names in :data:`ballctl.plants.PLANTS` of the plants the job
        linearizes (the one it linearizes first leading); the second process compiles their
        complex-step kernels, this one their real kernels meanwhile, and the closed loop goes to
        whichever is free first.
    """
    from numba.core import event

    from ..simulation.engine import background_wait_s, compile_in_background

    lock = threading.Lock()
    state = {"depth": 0, "group": None, "t0": 0.0, "times": {}, "cache": None, "aside": False}

    def group_of(data) -> str:
        disp = (data or {}).get("dispatcher")
        func = getattr(disp, "py_func", None)
        module = getattr(func, "__module__", "") or ""
        if not module.startswith("ballctl") and state["group"] is not None:
            return state["group"]  # numba's own helpers (an array view of a C entry point) count where they serve
        name = _KERNEL_GROUPS.get(module, module.rsplit(".", 1)[-1] or "kernels")
        complex_step = any(str(getattr(a, "dtype", "")) == "complex128" for a in (data or {}).get("args", ()) or ())
        if state["cache"] is None:
            stats = getattr(disp, "stats", None)
            state["cache"] = getattr(stats, "cache_path", None)
        return name + (" (complex step, for the linearization)" if complex_step else "")

    class _Listener(event.Listener):
        def on_start(self, ev):
            with lock:
                state["depth"] += 1
                if state["depth"] != 1:
                    return
                group = group_of(ev.data)
                if state["group"] is None:
                    say("      compiling the simulation kernels (first run only, cached afterwards)...")
                    if loop_aside and compile_in_background(complex_step):
                        state["aside"] = True
                        aside = ("the complex-step kernels in a second process and the closed loop in whichever"
                                 " is free first" if complex_step else "the closed loop in a second process")
                        say(f"        compiling {aside} ...")
                if group not in state["times"]:
                    say(f"        compiling {group} ...")
                    state["times"][group] = 0.0
                state["group"] = group
                state["t0"] = time.perf_counter()

        def on_end(self, ev):
            with lock:
                state["depth"] -= 1
                if state["depth"] == 0:
                    g = state["group"]
                    state["times"][g] = state["times"].get(g, 0.0) + time.perf_counter() - state["t0"]

    listener = _Listener()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)
        times = state["times"]
        if times:
            where = f"; cached in {state['cache']}" if state["cache"] else ""
            waited = background_wait_s() if state["aside"] else None
            second = f"; waited {waited:.0f} s for the second process" if waited else ""
            say(f"      compiled the simulation kernels in {sum(times.values()):.0f} s ("
                + ", ".join(f"{g} {t:.0f} s" for g, t in times.items()) + f"){second}{where}")


def load_config(path: str | None) -> dict:
    """Read a TOML configuration file; its ``[track]`` table if it has one, else its top level.

    Parameters
    ----------
    path : str or None
        The ``--config`` value.

    Returns
    -------
    dict
        Flag names (with ``-`` or ``_``) to values.

    Raises
    ------
    ConfigError
        When the file is missing, a directory, unreadable, not TOML, or holds
        a table where a value is expected.
    """
    if not path:
        return {}
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"--config {path!r} is a directory, not a TOML file")
    try:
        with open(p, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"--config {path!r} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"--config {path!r} cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {path!r} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--config {path!r} is not UTF-8 text") from None
    table = data.get("track", data)
    if not isinstance(table, dict):
        raise ConfigError(f"--config {path!r}: [track] must be a table, got {type(table).__name__}")
    for key, value in table.items():
        if isinstance(value, dict):
            raise ConfigError(f"--config {path!r}: key {key!r} holds a table; expected a value for the flag "
                              f"--{key.replace('_', '-')}")
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, (dict, list)) for v in values):
            raise ConfigError(f"--config {path!r}: key {key!r} holds nested lists or tables")
    return table


def rig_from_spec(spec: str, flag: str = "--rig"):
    """The rig of a ``--rig`` (or ``--truth``) value: a preset name or a TOML file.

    Parameters
    ----------
    spec : str
        ``tabletop``, ``lab``, ``ideal`` or a path ending in ``.toml``.
    flag : str
        The flag ``spec`` came from, named in the error.

    Returns
    -------
    RigProfile

    Raises
    ------
    RigProfileError
        For an unknown preset name (the message names ``flag`` and lists the presets) or an invalid file.
    """
    from ..ball_plate.rig import PRESETS, RigProfile, RigProfileError, rig_preset

    if spec in PRESETS:
        return rig_preset(spec)
    if spec.endswith(".toml"):
        try:
            return RigProfile.from_toml(spec)
        except RigProfileError as exc:
            raise RigProfileError(f"{flag}: {exc}") from None
    raise RigProfileError(f"{flag}: unknown rig preset {spec!r}; presets are {sorted(PRESETS)}, or a rig file "
                          "ending in .toml")
