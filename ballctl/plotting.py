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

__all__ = ["save_figure", "plot_reference", "plot_tracking"]


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


def plot_tracking(results: dict, title: str = "") -> Figure:
    """The paper's tracking figures in one: path on the plate, contact coordinates, yaw, plate angles,
    position error and constraint fulfilment, for one or more labelled :class:`ClosedLoopResult` runs."""
    fig = Figure(figsize=(13, 8))
    axes = fig.subplots(2, 3)
    first = next(iter(results.values()))
    names = first.coordinate_names
    ix, iy, iyaw = names.index("contact_x"), names.index("contact_y"), names.index("yaw")
    ax = axes[0, 0]
    ax.plot(first.x_ref[:, ix], first.x_ref[:, iy], "k--", lw=1, label="reference")
    for label, r in results.items():
        ax.plot(r.x[:, ix], r.x[:, iy], lw=1.2, label=label)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact_x [m]")
    ax.set_ylabel("contact_y [m]")
    ax.set_title("contact point on the plate")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    ax.plot(first.t, first.x_ref[:, ix], "k--", lw=1, label="x_C reference")
    ax.plot(first.t, first.x_ref[:, iy], "k:", lw=1, label="y_C reference")
    for label, r in results.items():
        ax.plot(r.t, r.x[:, ix], lw=1, label=f"x_C {label}")
        ax.plot(r.t, r.x[:, iy], lw=1, label=f"y_C {label}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("[m]")
    ax.set_title("contact coordinates")
    ax.legend(fontsize=6, ncol=2)
    ax = axes[0, 2]
    ax.plot(first.t, np.rad2deg(first.x_ref[:, iyaw]), "k--", lw=1, label="reference")
    for label, r in results.items():
        ax.plot(r.t, np.rad2deg(r.x[:, iyaw]), lw=1, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("yaw [deg]")
    ax.set_title("yaw")
    ax.legend(fontsize=7)
    ax = axes[1, 0]
    for i, name in enumerate(first.input_names):
        ax.plot(first.t, np.rad2deg(first.u_ref[:, i]), "k--" if i == 0 else "k:", lw=1, label=f"{name} reference")
    for label, r in results.items():
        for i, name in enumerate(r.input_names):
            ax.plot(r.t, np.rad2deg(r.u[:, i]), lw=1, label=f"{name} {label}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("plate angle [deg]")
    ax.set_title("plate angles")
    ax.legend(fontsize=6, ncol=2)
    ax = axes[1, 1]
    for label, r in results.items():
        ax.semilogy(r.t, np.maximum(r.position_error, 1e-12), lw=1, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("distance to reference [m]")
    ax.set_title("tracking error")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax = axes[1, 2]
    for label, r in results.items():
        if r.model == "nonlinear" and r.velocity_residual.size:
            ax.semilogy(r.t, np.maximum(np.abs(r.velocity_residual).max(axis=1), 1e-18), lw=1, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("|D(x) xd| [m/s]")
    ax.set_title("nonholonomic constraint fulfilment")
    ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
