"""``ballctl reference``: the circular steady motion of the ball-plate and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ._common import add_ball_arguments, add_circle_arguments, ball_plate, circle, output_file

__all__ = ["NAME", "HELP", "add_arguments", "run", "circle_from_flags"]

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
    ref = circle_from_flags(args, plant)
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


def circle_from_flags(args: argparse.Namespace, plant):
    """The circle of ``--radius``, ``--omega``, ``--roll-rate``, ``--center`` on ``plant``, refused in the flags' terms.

    The library's :class:`~ballctl.references.CircularMotion` names its keyword arguments (``radius``,
    ``roll_rate``); a command line user gave flags. An infeasible circle is refused with one line that names
    each flag with its value and unit and the range that would be feasible at the other flags' values.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments with the circle's flags (:func:`._common.add_circle_arguments`).
    plant : BallPlate
        The quasi-static ball-plate the circle is for.

    Returns
    -------
    CircularMotion

    Raises
    ------
    ParameterError
        If the circle is infeasible on ``plant`` (the plate's acceleration, the roll rate's two bounds).
    """
    from .._errors import ChartSingularityError, InfeasibleReferenceError, ParameterError

    try:
        return circle(args, plant)
    except (InfeasibleReferenceError, ChartSingularityError, ParameterError) as exc:
        problems = _circle_problems(args.radius, args.omega, args.roll_rate, plant.params)
        if not problems:  # not one of the circle's own limits: the library's words
            raise
        raise ParameterError(f"infeasible circle (--radius {args.radius:g} m, --omega {args.omega:g} rad/s, "
                             f"--roll-rate {args.roll_rate:g} rad/s): " + "; also ".join(problems)) from exc


def _circle_problems(radius: float, omega: float, roll_rate: float, params) -> list[str]:
    """What makes the circle infeasible, each in the flags' terms with the allowed range, the binding one first.

    The limits are :func:`~ballctl.references.circular.circle_limits`, the ones
    :class:`~ballctl.references.CircularMotion` checks.
    """
    from ..references.circular import circle_limits

    lim = circle_limits(radius, omega, roll_rate, params)
    violated = {name for name, _, _ in lim.violated}
    problems = []
    if "acceleration" in violated:
        problems.append(f"the plate cannot supply the centripetal acceleration --radius x --omega^2 = "
                        f"{lim.acceleration:.4g} m/s^2, at most {lim.max_acceleration:.4g} m/s^2 (k_b g for this "
                        f"ball): allowed |--omega| < {lim.max_omega:.4g} rad/s at this --radius, or "
                        f"--radius < {lim.max_radius:.4g} m at this --omega")
    if violated & {"roll_rate_low", "roll_rate_high"}:
        why = ("too low to roll" if "roll_rate_low" in violated
               else "so high the ball's lean comes within 1 deg of 90 deg")
        problems.append(f"--roll-rate {why} at the circle's speed (--radius x |--omega| = {lim.speed:.4g} m/s, "
                        f"--ball-radius {params.radius:g} m): allowed {lim.min_roll_rate:.4g} <= --roll-rate <= "
                        f"{lim.max_roll_rate:.4g} rad/s")
    return problems
