"""Figures, each returned as a matplotlib Figure; :func:`save_figure` writes PNG/SVG atomically.

Every function uses the object-oriented matplotlib API (no global state) and
labels axes with units, so figures read without the paper.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

__all__ = ["save_figure", "plot_reference"]


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save ``fig`` to ``path`` (format from the suffix) via a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=path.suffix)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def plot_reference(reference, t) -> Figure:
    """Contact-point path on the plate and plate angles of a ball-plate reference."""
    s = reference(np.asarray(t, dtype=float))
    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(s.x[:, 0], s.x[:, 1], "C0", lw=1.5, label="contact point")
    ax1.plot([0], [0], "k+", ms=10, label="plate pivot")
    ax1.set_aspect("equal", adjustable="datalim")
    ax1.set_xlabel("contact_x [m]")
    ax1.set_ylabel("contact_y [m]")
    ax1.set_title("reference path on the plate")
    ax1.legend(loc="best", fontsize=8)
    ax2.plot(s.t, np.rad2deg(s.u[:, 0]), label="alpha (about plate x)")
    ax2.plot(s.t, np.rad2deg(s.u[:, 1]), label="beta (about plate y)")
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("plate angle [deg]")
    ax2.set_title("plate angles by dynamic inversion")
    ax2.grid(alpha=0.3)
    ax2.legend(loc="best", fontsize=8)
    return fig
