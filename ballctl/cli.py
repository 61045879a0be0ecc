"""Command-line interface: ``ballctl --help``.

Degrees appear only here, at the boundary; the library works in radians.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["main"]


def _add_ball_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("ball")
    g.add_argument("--mass", type=float, default=0.1, help="ball mass in kg (default 0.1)")
    g.add_argument("--ball-radius", type=float, default=0.02, help="ball radius in m (default 0.02)")
    g.add_argument("--inertia", type=float, default=None,
                   help="inertia about a diameter in kg m^2 (default: solid sphere 2/5 m R^2)")
    g.add_argument("--gravity", type=float, default=9.81, help="gravity in m/s^2 (default 9.81)")


def _add_circle_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("circle")
    g.add_argument("--radius", type=float, default=0.5, help="circle radius in m (default 0.5)")
    g.add_argument("--omega", type=float, default=1.0, help="angular rate on the circle in rad/s (default 1.0)")
    g.add_argument("--roll-rate", type=float, default=40.0, help="ball roll rate in rad/s (default 40)")
    g.add_argument("--center", type=float, nargs=2, default=(0.0, 0.0), metavar=("X", "Y"),
                   help="circle centre in m (default 0 0)")


def _plant(args):
    from .plants import BallPlate

    return BallPlate(mass=args.mass, radius=args.ball_radius, inertia=args.inertia, gravity=args.gravity)


def _circle(args, plant):
    from .references import CircularMotion

    return CircularMotion(plant, args.radius, args.omega, args.roll_rate, center=tuple(args.center))


def _cmd_reference(args) -> int:
    from .plotting import plot_reference, save_figure

    plant = _plant(args)
    ref = _circle(args, plant)
    info = ref.summary()
    print("circular steady motion of the ball-plate (quasi-static plate)")
    print(f"  radius {ref.radius:g} m, omega {ref.omega:g} rad/s, centre {ref.center}, speed {ref.speed:.4g} m/s")
    print(f"  period                     {info['period_s']:.6g} s")
    print(f"  plate tilt (constant)      {np.rad2deg(info['tilt_rad']):.6g} deg")
    print(f"  alpha, beta amplitudes     {np.rad2deg(info['alpha_amplitude_rad']):.6g} deg, "
          f"{np.rad2deg(info['beta_amplitude_rad']):.6g} deg")
    print(f"  lean                       {np.rad2deg(info['lean_rad']):.6g} deg")
    print(f"  spin about plate normal    {info['spin_rad_s']:.6g} rad/s")
    print(f"  k = rho w^2 (I+mR^2)/(mgR^2) {info['k']:.6g}")
    if args.out:
        fig = plot_reference(ref, np.linspace(0, ref.period, 400))
        path = save_figure(fig, Path(args.out))
        print(f"  figure: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ballctl", description="Control design for nonholonomic rolling systems (ball-plate, rolling balls).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("reference", help="print the circular steady motion and plot its path and plate angles")
    _add_ball_arguments(p)
    _add_circle_arguments(p)
    p.add_argument("--out", default="ballctl_reference.png", help="figure file (.png/.svg); '' to skip")
    p.set_defaults(func=_cmd_reference)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ballctl`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # bad input: a clear message, no traceback
        print(f"ballctl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
