"""Atomic writes of files and of whole output folders: the one mechanism every writer of ballctl uses.

**Files** (:func:`atomic_write`, :func:`atomic_write_text`, :func:`atomic_path`):
a file is written to a fresh temporary file in the destination's directory,
flushed and fsync'ed, then moved over the destination with ``os.replace``;
on any error the temporary file is removed and the destination is untouched.
A reader therefore sees either the old file or the complete new one.

**Output folders** (:func:`atomic_directory`, what a command's ``--out``
folder is built with): the command writes everything into a sibling
temporary folder ``.<name>.partial-<pid>-<token>`` on the same file system;
only when the whole job has succeeded is it moved to ``<name>`` -- an earlier
run's folder is first renamed aside (``.<name>.old-<pid>-<token>``), the new
one renamed in, then the old one removed, so the files of two runs never mix.
A job that fails, is interrupted or is killed (even with ``kill -9``) leaves
``<name>`` as it was: absent, or the complete output of an earlier run. What
a killed job leaves behind -- its hidden temporary folder -- is removed by the
next job writing to the same ``<name>`` (a folder is stale when the process
named by its ``<pid>`` is gone). The folder gets the marker file
:data:`OUTPUT_MARKER`; a later job replaces only a folder that has it, is
empty, or holds nothing but the command's own file names (an output of an
earlier ballctl), never a folder of the user's own files.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import numpy as np

from ._errors import FileArgumentError
from ._paths import check_output_dir, check_output_path

__all__ = ["OUTPUT_MARKER", "atomic_directory", "atomic_path", "atomic_write", "atomic_write_text",
           "check_output_folder", "strict_json"]

#: The file :func:`atomic_directory` puts into every output folder it completes: the folder may be replaced
#: whole by a later run (a hidden file; it holds the time the folder was completed).
OUTPUT_MARKER = ".ballctl-output"


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


def _pid_alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (POSIX; elsewhere a stale folder is one older than a day)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


def _remove_stale(parent: Path, name: str) -> None:
    """Remove the temporary folders of killed jobs that wrote ``parent / name`` (see :func:`atomic_directory`)."""
    pattern = re.compile(rf"^\.{re.escape(name)}\.(?:partial|old)-(\d+)-[0-9a-f]+$")
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            stale = not _pid_alive(int(match.group(1))) or time.time() - entry.lstat().st_mtime > 86400 * 7
        except OSError:
            continue
        if stale:
            _remove_tree(entry)


def _remove_tree(path: Path) -> None:
    """Remove a folder (or a symbolic link to one: the link only), ignoring what is already gone."""
    if path.is_symlink():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    shutil.rmtree(path, ignore_errors=True)


def _replaceable(path: Path, own_names: Collection[str]) -> bool:
    """Whether an existing folder may be replaced whole: empty, marked, or only the command's own file names."""
    try:
        names = {entry.name for entry in path.iterdir()}
    except OSError:
        return False
    return not names or OUTPUT_MARKER in names or names <= set(own_names)


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (a folder is moved into place only once its content is on disk)."""
    for folder, _, files in os.walk(root):
        for f in files:
            with contextlib.suppress(OSError):
                fd = os.open(os.path.join(folder, f), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        _fsync_directory(Path(folder))


def check_output_folder(path: str | os.PathLike, flag: str = "path", own_names: Collection[str] = ()) -> Path:
    """The checks :func:`atomic_directory` makes before it starts, for a command to make before its work.

    Parameters
    ----------
    path : str or path-like
        The output folder.
    flag : str
        The parameter or flag that named it, for messages.
    own_names : collection of str
        See :func:`atomic_directory`.

    Returns
    -------
    pathlib.Path
        The folder as an absolute path.

    Raises
    ------
    FileArgumentError
        If ``path`` is a file, has a file as an ancestor, is the current
        folder or one of its ancestors, or is a folder of other files.
    """
    path = check_output_dir(path, flag)
    target = Path(os.path.abspath(path))
    cwd = Path(os.getcwd())
    if target == cwd or target in cwd.parents:
        raise FileArgumentError(f"{flag} {str(path)!r} is the current folder or one of its ancestors; the output "
                                f"folder is replaced whole at the end of the job: give a folder of its own, "
                                f"e.g. {flag} ballctl_out")
    if target.is_dir() and not _replaceable(target, own_names):
        raise FileArgumentError(f"{flag} {str(path)!r} is a folder of other files (not an earlier ballctl output: "
                                f"no {OUTPUT_MARKER} file); the output folder is replaced whole at the end of the "
                                f"job: give a new or empty folder, or remove that one")
    return target


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, *, flag: str = "path",
                     own_names: Collection[str] = ()) -> Iterator[Path]:
    """Context manager yielding a temporary folder that becomes ``path`` -- whole -- when the block succeeds.

    Write every output file into the yielded folder (a sibling of ``path``
    on the same file system). When the block ends without an exception, the
    folder is moved to ``path``: an existing ``path`` is renamed aside, the new
    folder renamed in and the old one removed, so ``path`` never holds files
    of two runs. When the block raises (or the process is killed), ``path``
    is left as it was and the temporary folder is removed (a killed job's is
    removed by the next job on the same ``path``). See the module docstring.

    Parameters
    ----------
    path : str or path-like
        The output folder; missing parent folders are created. It must not
        be the current folder or one of its ancestors.
    flag : str
        The parameter or command-line flag that named ``path``, for messages.
    own_names : collection of str
        File and folder names the command writes: an existing folder holding
        only these (an earlier ballctl's output, from before the marker) may
        be replaced. A folder with the marker :data:`OUTPUT_MARKER`, or an
        empty one, may always be replaced; any other folder is refused.

    Yields
    ------
    pathlib.Path
        The temporary folder to write into.

    Raises
    ------
    FileArgumentError
        Before anything is written, if ``path`` is a file, has a file as an
        ancestor, is the current folder or an ancestor of it, or is a folder
        of other files that must not be replaced.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "run"
    >>> with atomic_directory(out) as tmp:
    ...     _ = (tmp / "a.txt").write_text("a")
    ...     out.exists()
    False
    >>> sorted(p.name for p in out.iterdir())
    ['.ballctl-output', 'a.txt']
    """
    target = check_output_folder(path, flag, own_names)
    existed = target.is_dir()
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(parent, target.name)
    tmp = _new_sibling(parent, target.name, "partial")
    try:
        if existed:  # keep the mode of a folder we replace
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        yield tmp
        (tmp / OUTPUT_MARKER).write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z") + "\n", encoding="utf-8")
        _fsync_tree(tmp)
        _move_into_place(tmp, target)
    except BaseException:
        _remove_tree(tmp)
        raise


def _new_sibling(parent: Path, name: str, kind: str) -> Path:
    """A fresh hidden folder ``.<name>.<kind>-<pid>-<token>`` in ``parent`` (mode as a normal ``mkdir``)."""
    for _ in range(100):
        tmp = parent / f".{name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(tmp)
            return tmp
        except FileExistsError:
            continue
    raise OSError(f"could not create a temporary folder next to {parent / name}")  # pragma: no cover


def _move_into_place(tmp: Path, target: Path) -> None:
    """``tmp`` becomes ``target``; an existing ``target`` is renamed aside first and removed after."""
    old = None
    if target.exists() or target.is_symlink():
        old = target.parent / f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
        os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        if old is not None and not target.exists():
            with contextlib.suppress(OSError):
                os.rename(old, target)  # put the earlier run's folder back
        raise
    _fsync_directory(target.parent)
    if old is not None:
        _remove_tree(old)


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
