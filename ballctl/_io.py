"""Atomic file writes: the one mechanism every writer of ballctl uses.

A file is written to a fresh temporary file in the destination's directory,
flushed and fsync'ed, then moved over the destination with ``os.replace``;
on any error the temporary file is removed and the destination is untouched.
A reader therefore sees either the old file or the complete new one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ._paths import check_output_path


def _fsync_directory(directory: Path) -> None:
    """Persist the rename itself (POSIX); silently skipped where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temporary(path: Path) -> tuple[int, Path]:
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp{path.suffix}"
        try:
            # 0o666 filtered by the umask: the mode an ordinary open() would give
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            return fd, tmp
        except FileExistsError:
            continue
    raise OSError(f"could not create a temporary file next to {path}")  # pragma: no cover - 100 collisions


def _commit(tmp: Path, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # keep the mode of a file we replace
    os.replace(tmp, path)
    _fsync_directory(path.parent)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Context manager yielding a temporary path that replaces ``path`` when the block succeeds.

    For writers that want a file name (``Figure.savefig``); the temporary
    file keeps the destination's suffix so format detection works.

    Parameters
    ----------
    path : str or path-like
        Destination; its directory must exist.

    Yields
    ------
    pathlib.Path
        The temporary file to write.
    """
    path = check_output_path(path, "path")
    fd, tmp = _temporary(path)
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        _commit(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike, data: bytes) -> Path:
    """Write bytes to ``path`` atomically (temporary file, fsync, ``os.replace``).

    Parameters
    ----------
    path : str or path-like
        Destination; its directory must exist.
    data : bytes
        The complete file content.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileArgumentError
        If ``path`` is a directory, an ancestor is a file, or its directory is missing.
    """
    path = check_output_path(path, "path")
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return path


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write text to ``path`` atomically (see :func:`atomic_write`).

    Parameters
    ----------
    path : str or path-like
        Destination; its directory must exist.
    text : str
        The complete file content.
    encoding : str
        Text encoding.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    return atomic_write(path, text.encode(encoding))


def strict_json(value):
    """``value`` made strict-JSON-ready: non-finite floats become None, numpy scalars Python ones (recursively).

    Parameters
    ----------
    value : object
        Dicts, lists, tuples, numbers, strings and None.

    Returns
    -------
    object
    """
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value
