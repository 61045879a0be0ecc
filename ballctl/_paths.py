"""File and output-path arguments: a file to read, a file or a folder to write.

Each check returns a :class:`~pathlib.Path` or raises a
:class:`~ballctl._errors.FileArgumentError` (a ``ValueError``) or
:class:`~ballctl._errors.MissingFileError` that names the parameter (or flag) and
the path, in the wording of :mod:`ballctl._validation`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._errors import FileArgumentError, MissingFileError, ParameterTypeError
from ._validation import short_repr


def _as_path(path, name: str, expected: str) -> Path:
    """``path`` as a Path, or a ParameterTypeError saying what ``name`` must be (``"be a file path"``...)."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ParameterTypeError(f"{name} must {expected}, got {short_repr(path)}")
    return Path(path)


def _check_ancestors(p: Path, name: str) -> None:
    """Raise if the nearest existing ancestor of ``p`` is a file, not a directory."""
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise FileArgumentError(f"{name} {str(p)!r}: {str(parent)!r} is a file, not a directory")
            return


def check_output_path(path, name: str, *, create_parents: bool = False) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` a file can be written to, else raise.

    The path must not be an existing directory, and no ancestor may be a
    file; its parent must exist unless ``create_parents`` (the caller creates it).

    Parameters
    ----------
    path : str or os.PathLike
        The user's output file.
    name : str
        Parameter (or flag) name used in error messages.
    create_parents : bool
        Accept a missing parent folder (the caller creates it).

    Returns
    -------
    pathlib.Path
    """
    p = _as_path(path, name, "be a file path")
    if p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a directory; give a file name")
    _check_ancestors(p, name)
    if not create_parents and not p.parent.exists():
        raise FileArgumentError(f"{name} {str(p)!r}: the directory {str(p.parent)!r} does not exist")
    return p


def check_output_dir(path, name: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` to a folder that exists or can be created, else raise.

    Parameters
    ----------
    path : str or os.PathLike
        The user's output folder.
    name : str
        Parameter (or flag) name used in error messages.

    Returns
    -------
    pathlib.Path
    """
    p = _as_path(path, name, "name a folder")
    if p.exists() and not p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a file; give a folder")
    _check_ancestors(p, name)
    return p


def check_input_file(path, name: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` to an existing regular file, else raise.

    Parameters
    ----------
    path : str or os.PathLike
        The user's input file.
    name : str
        Parameter (or flag) name used in error messages.

    Returns
    -------
    pathlib.Path
    """
    p = _as_path(path, name, "be a file path")
    if p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a directory, not a file")
    if not p.exists():
        raise MissingFileError(f"{name} {str(p)!r} does not exist")
    return p
