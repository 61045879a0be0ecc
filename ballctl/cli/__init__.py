"""Command-line interface: ``ballctl --help``.

One module per subcommand; each provides ``NAME``, ``HELP``, ``add_arguments(parser)``
and ``run(args) -> int``, and is listed once in :data:`COMMANDS`. Degrees appear only
here, at the boundary; the library works in radians.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from threadpoolctl import threadpool_limits

from .._errors import BallctlError, BallctlWarning, ConfigError
from . import identify, montecarlo, partitions, plan, reference, simulate_ball, track
from ._common import load_config

__all__ = ["COMMANDS", "build_parser", "main"]

#: The subcommands, in the order ``ballctl --help`` lists them.
COMMANDS = (reference, partitions, simulate_ball, track, plan, montecarlo, identify)


class _UsageError(Exception):
    """A command-line usage error, reported by :func:`main` as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``ballctl track: error: ...``), not usage + error."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The ``ballctl`` argument parser with one subparser per entry of :data:`COMMANDS`.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = _Parser(
        prog="ballctl", description="Control design for nonholonomic rolling systems (ball-plate, rolling balls).")
    parser.add_argument("--version", action="version", version=f"ballctl {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def _version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ballctl")
    except PackageNotFoundError:   # run from a source tree that is not installed
        return "(not installed)"


def _one_line(text: str) -> str:
    """A multi-line message as one line: lines joined by "; " (a heading ending in ":" runs on)."""
    out = ""
    for line in (line.strip() for line in str(text).splitlines()):
        if line:
            out = line if not out else f"{out} {line}" if out.endswith(":") else f"{out}; {line}"
    return out


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.command is None:
        names = ", ".join(c.NAME for c in COMMANDS)
        raise _UsageError(f"ballctl: error: a command is required, one of {names} (see ballctl --help)")
    return args


def _apply_config(parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace) -> argparse.Namespace:
    if getattr(args, "config", None):
        # config values become flags placed before the user's own, so the command line wins
        config = load_config(args.config)
        known = vars(args)
        tokens: list[str] = []
        for key, value in config.items():
            attr = str(key).replace("-", "_")
            if attr not in known or attr in ("func", "command", "config"):
                raise ConfigError(f"--config {args.config!r}: unknown key {key!r}; keys are the long flags of "
                                  f"'ballctl {args.command}' (see its --help)")
            flag = attr.replace("_", "-")
            if isinstance(value, bool):  # a switch: `force = true` is --force, `offset_free = false` --no-offset-free
                tokens.append(f"--{flag}" if value else f"--no-{flag}")
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            tokens += [f"--{flag}", *map(str, values)]
        pos = argv.index(args.command) + 1
        try:
            args = parser.parse_args(argv[:pos] + tokens + argv[pos:])
        except _UsageError as exc:
            raise _UsageError(f"{exc} (a value from --config {args.config!r})") from None
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ballctl`` console script.

    Every user error (bad flag, missing or malformed ``--config``, unusable
    path, a request the library rejects with a :class:`~ballctl.BallctlError`)
    is one line on stderr and exit status 2, without a traceback. Other
    exceptions are bugs and keep their traceback.

    The job runs with one BLAS thread: ballctl's matrices are small (at most
    a few hundred rows), where a threaded BLAS only adds synchronization; on a
    shared or loaded machine its waiting threads made small solves up to 100x
    slower (measured: ``scipy.linalg.expm`` of 629 stacked 14 x 14 matrices
    1.6 s with 2 threads under load, 0.018 s with one).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 for a user error (one line on stderr),
        130 when interrupted.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    command = "ballctl"
    show = warnings.showwarning

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, BallctlWarning):
            print(f"{command}: warning: {_one_line(message)}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line_warning
            args = _parse(parser, argv)
            command = f"ballctl {args.command}"
            args = _apply_config(parser, argv, args)
            with threadpool_limits(limits=1, user_api="blas"):
                return int(args.func(args) or 0)
    except _UsageError as exc:
        print(_one_line(exc), file=sys.stderr)
        return 2
    except BallctlError as exc:  # bad input: a clear message, no traceback
        print(f"{command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # the file system refused (permissions, disk full, ...): the user's environment
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        print(f"{command}: error: cannot write or read{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
