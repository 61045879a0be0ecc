"""``ballctl simulate-ball``: the paper's rolling ball with three internal masses."""

from __future__ import annotations

import argparse
import sys

from ._common import number, output_dir

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "simulate-ball"
HELP = "the paper's rolling ball with three internal masses; writes ball_paths.png (and an animation)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("--t-final", type=number("s", low=0, high=1e4, low_inclusive=False), default=20.0,
                   help="end time in s, at most 1e4 (default 20, as in the paper)")
    p.add_argument("--out", default="ballctl_ball", help="output folder (default ballctl_ball)")
    p.add_argument("--animate", default=None, nargs="?", const="ball_rolling.gif", metavar="FILE",
                   help="also write an animation (shell, rails and masses) into --out: FILE ending in .gif "
                        "(pillow) or .mp4 (ffmpeg); default ball_rolling.gif")


def run(args: argparse.Namespace) -> int:
    """Simulate the paper's ball, save its figure (and animation) and print the key numbers.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status.
    """
    from ..studies.paper_ball import simulate_paper_ball

    output_dir(args.out, "--out")
    print(f"the paper's rolling ball (section 7): three masses on circular rails, t in [0, {args.t_final}] s",
          file=sys.stderr)
    info = simulate_paper_ball(args.out, t_final=args.t_final, animation=args.animate)
    for key, value in info.items():
        print(f"  {key:28s} {value}")
    return 0
