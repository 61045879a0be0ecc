"""A real job killed mid-run, for the tests that its outputs appear whole or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def killed_at(argv: list[str], line: str, delay: float) -> bool:
    """Start ``argv``, kill -9 it ``delay`` s after its stderr shows a line starting with ``line``.

    Returns whether it was still running when killed (False: it had finished first).
    """
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for text in proc.stderr:
            if text.startswith(line):
                break
        time.sleep(delay)
        running = proc.poll() is None
        if running:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    return running
