"""``ballctl reference``: the circular steady motion of the ball-plate and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ._common import add_ball_arguments, add_circle_arguments, ball_plate, circle, output_file

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "reference"
HELP = "print the circular steady motion and plot its path and plate angles"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    add_ball_arguments(p)
    add_circle_arguments(p)
    p.add_argument("--out", default="ballctl_reference.png", help="figure file (.png/.svg); '' to skip")


def run(args: argparse.Namespace) -> int:
    """Print the steady motion's numbers and save its figure.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    from .._errors import ParameterError
    from ..figures.plotting import plot_reference, save_figure

    if args.out:  # before any work: a path that cannot be written, or a suffix matplotlib has no format for
        out = output_file(args.out, "--out")
        formats = FigureCanvasBase.get_supported_filetypes()
        if out.suffix.lower().lstrip(".") not in formats:
            raise ParameterError(f"--out {args.out!r} must end in a figure format ({', '.join(sorted(formats))}), "
                                 f"or be '' to skip the figure")
    plant = ball_plate(args)
    ref = circle(args, plant)
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
