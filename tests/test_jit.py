"""numba's disk cache shared by processes (ballctl._jit).

Oracles: the lock itself (a compile's cache access waits while another open file holds it) and numba's
own dispatchers (every compiled function of ballctl goes through the shared cache). A race of two
processes is not a test: it is not reproducible (the window is a few milliseconds of a save).
"""

import fcntl
import sys
import threading
import time
from pathlib import Path

from numba.core.registry import CPUDispatcher

import ballctl
from ballctl import _jit


def test_every_compiled_function_of_ballctl_shares_its_cache_safely():
    """Every numba dispatcher defined in a ballctl module with ``cache=True`` reads and writes its
    cache under the lock: ``ballctl._jit.njit`` is the one way ballctl compiles."""
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(ballctl.__path__, "ballctl."):
        if ".cli" in info.name:
            continue
        importlib.import_module(info.name)
    found = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("ballctl"):
            continue
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.__module__ == name and value._cache.__class__.__name__ \
                    == "FunctionCache":
                assert type(value._cache._cache_file) is _jit._SharedIndexDataCacheFile, (name, value)
                found += 1
    assert found > 50


def test_a_cache_write_waits_for_the_lock(tmp_path, monkeypatch):
    """A compile's save blocks while another open file holds ``<index>.lock`` exclusively, and completes
    once it is released (the lock is taken; a load takes it shared)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    source = tmp_path / "locked_module.py"
    source.write_text("from ballctl._jit import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from numba import config
        monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
        import locked_module
    finally:
        sys.path.remove(str(tmp_path))
    index = Path(locked_module.twice._cache._cache_file._index_path)
    index.parent.mkdir(parents=True, exist_ok=True)
    holder = open(str(index) + ".lock", "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    done = []
    worker = threading.Thread(target=lambda: done.append(locked_module.twice(3.0)))
    worker.start()
    time.sleep(1.0)
    assert not done and not index.exists()   # the compile waits for the lock (at its first cache read)
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    worker.join(timeout=60)
    assert done == [6.0] and index.exists()
