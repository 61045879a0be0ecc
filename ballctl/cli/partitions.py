"""``ballctl partitions``: which coordinate partition and subsystem to control along a path on a rig.

Every partition of the rig's quasi-static design plant (the plant the
``qs-contact`` and ``qs-paper`` designs of ``ballctl track`` use) is linearized
along the path and each of its candidate subsystems -- the full reduced state,
the dynamic subsystem and every exact subsystem with the contact point (e.g.
the 4 contact-point states) -- is tested for controllability along the whole
path (:func:`ballctl.compare_partitions`); the table ends with the recommended
partition and subsystem and the reason.

``--path`` and its size, rate and centre mean what they mean for ``ballctl
track``; ``--rig`` gives the ball (``--mass``, ``--ball-radius``, ``--inertia``,
``--gravity`` override it) and the sample time (``--dt``, default the rig's
control period).
"""

from __future__ import annotations

import argparse

import numpy as np

from .._errors import ParameterError
from ._common import PATHS, add_ball_overrides, number, plate_path, rig_ball_plate, rig_from_spec

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "partitions"
HELP = "compare every coordinate partition's subsystems along a path on a rig and recommend one"

#: how the table names each path's period
_PERIOD_OF = {"circle": "the circle's period", "ellipse": "the ellipse's period",
              "figure8": "the figure-eight's period", "lissajous": "the Lissajous curve's period",
              "waypoints": "the waypoint path's duration"}
#: lean in deg beyond which the table notes that the orientation chart is near its singularity
_LEAN_NOTE_DEG = 60.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    g = p.add_argument_group("path (as for ballctl track)")
    g.add_argument("--path", choices=PATHS, default="circle", help="path on the plate (default circle)")
    g.add_argument("--radius", type=number("m", low=0, low_inclusive=False), default=0.5,
                   help="path size in m (circle radius; default 0.5)")
    g.add_argument("--omega", type=number("rad/s", nonzero=True), default=1.0,
                   help="path rate in rad/s (default 1.0)")
    g.add_argument("--roll-rate", type=number("rad/s"), default=40.0,
                   help="ball roll rate on the circle in rad/s (default 40; other paths roll without spin)")
    g.add_argument("--center", type=number("m"), nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
                   help="path centre in m (default 0 0)")
    g = p.add_argument_group("rig and ball")
    g.add_argument("--rig", default="tabletop",
                   help="rig preset (tabletop, lab, ideal) or a TOML file: its ball and control period (default "
                        "tabletop)")
    add_ball_overrides(g)
    p.add_argument("--dt", type=number("s", low=0, low_inclusive=False), default=None,
                   help="sample time of the Gramians in s (default: the rig's control period; the ranks are "
                        "checked at half of it too)")


def _design_plant(args: argparse.Namespace):
    """The rig's quasi-static design plant, its ball overridden by the ball flags, and the rig.

    Parameters
    ----------
    args : argparse.Namespace
        With ``rig``, ``mass``, ``ball_radius``, ``inertia``, ``gravity``.

    Returns
    -------
    plant : BallPlate
    rig : RigProfile
    """
    rig = rig_from_spec(args.rig)
    return rig_ball_plate(args, rig), rig


def run(args: argparse.Namespace) -> int:
    """Print the partition table and the recommendation.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status.
    """
    from ..references import CircularMotion, PathMotion
    from ..studies.partitions import compare_partitions

    plant, rig = _design_plant(args)
    dt = rig.dt if args.dt is None else args.dt
    center = tuple(args.center)
    path = plate_path(args.path, args.radius, args.omega, center)
    span = getattr(path, "period", None)
    if span is None:
        span = path.duration - 2 * dt
    if dt > span / 3:
        flag = "--dt" if args.dt is not None else f"--dt (the rig {rig.name!r}'s control period)"
        raise ParameterError(f"argument {flag}: must be at most a third of {_PERIOD_OF[args.path]}, "
                             f"{span / 3:.6g} s, got {dt:g} s")
    steps = int(round(span / dt)) if args.path != "waypoints" else int(span / dt)
    horizon = steps * dt
    if args.path == "circle":
        ref = CircularMotion(plant, args.radius, args.omega, args.roll_rate, center=center)
    else:
        ref = PathMotion(plant, path, duration=horizon + 2 * dt, spin=0.0)
    what = {"circle": f"circle of radius {args.radius:g} m at {args.omega:g} rad/s, roll rate {args.roll_rate:g} "
                      f"rad/s"}.get(args.path, f"{args.path} of size {args.radius:g} m at {args.omega:g} rad/s, "
                                               f"no spin")
    print(f"ballctl partitions: {what}, centre ({center[0]:g}, {center[1]:g}) m; rig {rig.name!r}, quasi-static "
          f"design plant (ball {plant.params.mass:g} kg, radius {plant.params.radius:g} m)")
    times = np.linspace(0.0, horizon, steps + 1)
    table = compare_partitions(plant, ref, times)
    print(table)
    lean = float(np.rad2deg(np.abs(ref(times).x[:, plant.coordinate_names.index("lean")]).max()))
    if lean > _LEAN_NOTE_DEG:
        print(f"note: the ball's lean reaches {lean:.3g} deg along this path, near the yaw-lean-roll chart's "
              f"singularity at 90 deg: the linear models of the orientation states are badly conditioned there "
              f"(their ranks are not to be trusted); the contact-point states do not depend on the orientation")
    return 0

