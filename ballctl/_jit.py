"""numba's ``njit`` with a disk cache that several processes can fill at once.

numba caches a compiled function as an index file (signature -> data-file
name) and one data file per signature. Its writes are not safe for two
processes that compile *different* signatures of one function at the same
moment: both read the index, both pick the same free data-file name, and the
index can end up naming one signature's code for the other (numba issue
#10128, where the maintainers suggest a file lock). ballctl compiles in two
processes at once on a first run (the second one compiles the complex-step
kernels and the closed loop, :func:`ballctl.simulation.engine.compile_in_background`),
and the test suite's workers share one cache, so every function ballctl
compiles is made by :func:`njit` here: numba's own, whose cache reads the
index and its data under a shared lock and writes them under an exclusive one
(``fcntl.flock`` on ``<index>.lock`` next to the index; where ``fcntl`` is
missing, numba's behaviour, and :data:`LOCKED` is False).

A cache miss may also wait (:func:`set_miss_hook`): while a second process of
the job is compiling what this one is about to compile, this one waits for it
and loads the result instead of compiling the same code a second time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import numba
from numba.core.caching import IndexDataCacheFile

try:
    import fcntl
except ImportError:  # not POSIX: numba's own cache writes
    fcntl = None

__all__ = ["LOCKED", "njit", "set_miss_hook"]

#: whether cache reads and writes are locked (False where the platform has no ``fcntl``)
LOCKED = fcntl is not None

_miss_hook: list[Callable[[tuple], bool] | None] = [None]


def set_miss_hook(hook: Callable[[tuple], bool] | None) -> None:
    """Call ``hook(signature)`` on a cache miss; when it returns True, the cache is read again.

    The hook waits for another process that compiles ``signature`` (a tuple of numba types)
    and returns True, or returns False at once. None removes it.
    """
    _miss_hook[0] = hook


@contextlib.contextmanager
def _locked(index_path: str, exclusive: bool) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    try:
        os.makedirs(os.path.dirname(index_path), exist_ok=True)
        handle = open(index_path + ".lock", "a")
    except OSError:  # a cache folder numba reads but this process cannot write: numba's own behaviour
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _SharedIndexDataCacheFile(IndexDataCacheFile):
    """numba's index and data files, read under a shared lock and written under an exclusive one."""

    def save(self, key, data):
        with _locked(self._index_path, exclusive=True):
            super().save(key, data)

    def load(self, key):
        with _locked(self._index_path, exclusive=False):
            found = super().load(key)
        hook = _miss_hook[0]
        if found is None and hook is not None and hook(key[0]):
            with _locked(self._index_path, exclusive=False):
                found = super().load(key)
        return found


def _share(dispatcher):
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(cache, "_cache_file", None)
    if LOCKED and type(index) is IndexDataCacheFile:
        index.__class__ = _SharedIndexDataCacheFile
    return dispatcher


def njit(*args, **options):
    """:func:`numba.njit` (same arguments), its disk cache shared safely between processes (module docstring)."""
    if args and callable(args[0]) and not options:
        return _share(numba.njit(args[0]))
    decorate = numba.njit(*args, **options)
    return lambda function: _share(decorate(function))
