"""Command-line interface: ``ballctl --help``.

One module per subcommand; each provides ``NAME``, ``HELP``, ``add_arguments(parser)``
and ``run(args) -> int``, and is listed once in :data:`COMMANDS`. Degrees appear only
here, at the boundary; the library works in radians.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import montecarlo, partitions, plan, reference, simulate_ball, track
from ._common import load_config

__all__ = ["COMMANDS", "build_parser", "main"]

#: The subcommands, in the order ``ballctl --help`` lists them.
COMMANDS = (reference, partitions, simulate_ball, track, plan, montecarlo)


def build_parser() -> argparse.ArgumentParser:
    """The ``ballctl`` argument parser with one subparser per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="ballctl", description="Control design for nonholonomic rolling systems (ball-plate, rolling balls).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ballctl`` console script.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 for a user error (one line on stderr).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        # config values become flags placed before the user's own, so the command line wins
        config = load_config(args.config)
        known = vars(args)
        tokens: list[str] = []
        for key, value in config.items():
            attr = key.replace("-", "_")
            if attr not in known or attr in ("func", "command", "config"):
                parser.error(f"unknown key {key!r} in {args.config}")
            values = value if isinstance(value, (list, tuple)) else [value]
            tokens += [f"--{attr.replace('_', '-')}", *map(str, values)]
        argv = list(sys.argv[1:] if argv is None else argv)
        pos = argv.index(args.command) + 1
        args = parser.parse_args(argv[:pos] + tokens + argv[pos:])
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # bad input: a clear message, no traceback
        print(f"ballctl {args.command}: error: {exc}", file=sys.stderr)
        return 2
