"""Arguments and builders shared by the subcommands (degrees appear only at this boundary)."""

from __future__ import annotations

import argparse

__all__ = ["add_ball_arguments", "add_circle_arguments", "ball_plate", "circle", "load_config"]


def add_ball_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ball's physical parameters (SI units) to a subcommand's parser."""
    g = p.add_argument_group("ball")
    g.add_argument("--mass", type=float, default=0.1, help="ball mass in kg (default 0.1)")
    g.add_argument("--ball-radius", type=float, default=0.02, help="ball radius in m (default 0.02)")
    g.add_argument("--inertia", type=float, default=None,
                   help="inertia about a diameter in kg m^2 (default: solid sphere 2/5 m R^2)")
    g.add_argument("--gravity", type=float, default=9.81, help="gravity in m/s^2 (default 9.81)")


def add_circle_arguments(p: argparse.ArgumentParser) -> None:
    """Add the circular reference motion's parameters to a subcommand's parser."""
    g = p.add_argument_group("circle")
    g.add_argument("--radius", type=float, default=0.5, help="circle radius in m (default 0.5)")
    g.add_argument("--omega", type=float, default=1.0, help="angular rate on the circle in rad/s (default 1.0)")
    g.add_argument("--roll-rate", type=float, default=40.0, help="ball roll rate in rad/s (default 40)")
    g.add_argument("--center", type=float, nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
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
    """Read a TOML configuration file; its ``[track]`` table if it has one, else its top level."""
    if not path:
        return {}
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    return data.get("track", data)
