"""``ballctl simulate-ball``: the paper's rolling ball with three internal masses."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._io import atomic_directory, check_output_folder
from ._common import animation_file, compile_progress, number

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "simulate-ball"
HELP = "the paper's rolling ball with three internal masses; writes ball_paths.png (and an animation)"

#: what the command writes into --out (besides an animation named by --animate)
OUTPUT_FILES = ("ball_paths.png", "ball_rolling.gif")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    p.add_argument("--t-final", type=number("s", low=0, high=1e4, low_inclusive=False), default=20.0,
                   help="end time in s, at most 1e4 (default 20, as in the paper)")
    p.add_argument("--out", default="ballctl_ball",
                   help="output folder (default ballctl_ball), written whole at the end: a failed or killed run "
                        "leaves it as it was")
    p.add_argument("--animate", default=None, nargs="?", const="ball_rolling.gif", metavar="FILE",
                   help="also write an animation (shell, rails and masses) into --out: FILE ending in .gif "
                        "(pillow) or .mp4 (ffmpeg); default ball_rolling.gif. 15 frames per second of --t-final "
                        "(real time), at least 2 and at most 80 frames (a few tenths of a second each)")


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

    animate = None if args.animate is None else animation_file(args.animate, "--animate",
                                                                reserved=("ball_paths.png",))
    own = OUTPUT_FILES + ((animate,) if animate else ())
    check_output_folder(args.out, "--out", own_names=own)  # before the work
    print(f"the paper's rolling ball (section 7): three masses on circular rails, t in [0, {args.t_final}] s",
          file=sys.stderr)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    with atomic_directory(args.out, flag="--out", own_names=own) as tmp, compile_progress(say):
        info = simulate_paper_ball(tmp, t_final=args.t_final, animation=animate)
    info["figures"] = [str(Path(args.out) / Path(f).name) for f in info["figures"]]
    for key, value in info.items():
        print(f"  {key:28s} {value}")
    return 0
