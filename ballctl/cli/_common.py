"""Arguments and builders shared by the subcommands (degrees appear only at this boundary).

Every numeric flag is parsed by a :func:`number` type that checks finiteness
and range and answers in the flag's own name and unit (argparse prefixes the
flag: ``argument --dt: must be > 0 s, got '0'``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from .._errors import ConfigError
from .._paths import check_output_dir, check_output_path


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


def rig_from_spec(spec: str):
    """The rig of a ``--rig`` value: a preset name or a TOML file (unknown names raise with the presets).

    Parameters
    ----------
    spec : str
        ``tabletop``, ``lab``, ``ideal`` or a path ending in ``.toml``.

    Returns
    -------
    RigProfile
    """
    from ..ball_plate.rig import PRESETS, RigProfile, rig_preset

    if spec in PRESETS:
        return rig_preset(spec)
    if spec.endswith(".toml"):
        return RigProfile.from_toml(spec)
    return rig_preset(spec)  # raises with the list of presets
