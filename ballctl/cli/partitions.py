"""``ballctl partitions``: controllability of every coordinate partition along the circle."""

from __future__ import annotations

import argparse

import numpy as np

from .._errors import ParameterError
from ._common import add_ball_arguments, add_circle_arguments, ball_plate, circle, number

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "partitions"
HELP = "compare every coordinate partition's controllability along the circle"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    add_ball_arguments(p)
    add_circle_arguments(p)
    p.add_argument("--dt", type=number("s", low=0, low_inclusive=False), default=0.01,
                   help="sample time of the Gramians in s (default 0.01)")


def run(args: argparse.Namespace) -> int:
    """Print the partition table.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    """
    from ..studies.partitions import compare_partitions

    plant = ball_plate(args)
    ref = circle(args, plant)
    if args.dt > ref.period / 3:
        raise ParameterError(f"argument --dt: must be at most a third of the circle's period, "
                             f"{ref.period / 3:.6g} s, got {args.dt:g} s")
    steps = int(round(ref.period / args.dt))
    table = compare_partitions(plant, ref, np.linspace(0.0, steps * args.dt, steps + 1))
    print(table)
    return 0
