"""Figures, each returned as a matplotlib Figure; :func:`save_figure` writes PNG/SVG atomically.

Every function uses the object-oriented matplotlib API (no global state) and
labels axes with units, so figures read without the paper.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ._errors import ParameterError
from ._io import atomic_path
from ._validation import check_output_path

__all__ = ["save_figure", "plot_reference", "plot_path", "plot_coordinates", "plot_lean_roll", "plot_inputs",
           "plot_error", "plot_constraints", "plot_tracking", "plot_ball_paths"]


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save ``fig`` to ``path`` (format from the suffix) via a temporary file and an atomic rename.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : path-like
        Target file; its suffix (.png, .svg, .pdf) picks the format. Parent folders are created.
    dpi : int
        Resolution of raster formats.

    Returns
    -------
    pathlib.Path
    """
    path = check_output_path(path, "path", create_parents=True)
    if path.suffix.lower().lstrip(".") not in fig.canvas.get_supported_filetypes():
        formats = ", ".join(sorted(fig.canvas.get_supported_filetypes()))
        raise ParameterError(f"path must end in a figure format ({formats}), got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
    return path


def plot_reference(reference, t) -> Figure:
    """Contact-point path on the plate and plate angles of a ball-plate reference.

    Parameters
    ----------
    reference : Reference
        A ball-plate reference.
    t : array_like, shape (K,)
        Times in s.
    """
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


def _figure_and_axes(ax, figsize=(6, 4.5)):
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _index(result, name):
    return result.coordinate_names.index(name)


def plot_path(results: dict, *, ax=None) -> Figure:
    """Contact point on the plate against the reference, for labelled ClosedLoopResult runs.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"NL": ..., "L": ...}``); the first one's reference is drawn.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    """
    fig, ax = _figure_and_axes(ax)
    first = next(iter(results.values()))
    ix, iy = _index(first, "contact_x"), _index(first, "contact_y")
    ax.plot(first.x_ref[:, ix], first.x_ref[:, iy], "k--", lw=1, label="reference")
    for label, r in results.items():
        ax.plot(r.x[:, ix], r.x[:, iy], lw=1.2, label=label)
        ax.plot(r.x[0, ix], r.x[0, iy], "o", ms=4, color=ax.lines[-1].get_color())
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact_x [m]")
    ax.set_ylabel("contact_y [m]")
    ax.set_title("contact point on the plate (dot: start)")
    ax.legend(fontsize=7)
    return fig


def plot_coordinates(results: dict, names=("contact_x", "contact_y", "yaw"), *, axes=None) -> Figure:
    """Coordinates against their references over time (metres, or degrees for angles).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"NL": ..., "L": ...}``); the first one's reference is drawn.
    names : sequence of str
        Coordinates to draw, one panel each.
    axes : sequence of Axes, optional
        Draw into these axes.
    """
    first = next(iter(results.values()))
    if axes is None:
        fig = Figure(figsize=(5 * len(names), 3.8))
        axes = np.atleast_1d(fig.subplots(1, len(names)))
    else:
        fig = axes[0].figure
    for ax, name in zip(axes, names):
        i = _index(first, name)
        angle = name not in ("contact_x", "contact_y")
        conv = np.rad2deg if angle else (lambda v: v)
        ax.plot(first.t, conv(first.x_ref[:, i]), "k--", lw=1, label="reference")
        for label, r in results.items():
            ax.plot(r.t, conv(r.x[:, i]), lw=1, label=label)
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"{name} [{'deg' if angle else 'm'}]")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def plot_lean_roll(results: dict) -> Figure:
    """The ball's lean and roll (dependent coordinates, recovered from the rolling constraints).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs.
    """
    return plot_coordinates(results, ("lean", "roll"))


def plot_inputs(results: dict) -> Figure:
    """Plate angles against their references and the plate angular rates (degrees, deg/s).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs.
    """
    fig = Figure(figsize=(11, 4))
    ax1, ax2 = fig.subplots(1, 2)
    first = next(iter(results.values()))
    for i, name in enumerate(first.input_names):
        ax1.plot(first.t, np.rad2deg(first.u_ref[:, i]), "k--" if i == 0 else "k:", lw=1, label=f"{name} reference")
    for label, r in results.items():
        for i, name in enumerate(r.input_names):
            ax1.plot(r.t, np.rad2deg(r.u[:, i]), lw=1, label=f"{name} {label}")
            if len(r.t) > 1:
                ax2.plot(r.t[:-1], np.rad2deg(np.diff(r.u[:, i]) / np.diff(r.t)), lw=1, label=f"{name} {label}")
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("plate angle [deg]")
    ax1.set_title("plate angles")
    ax1.legend(fontsize=6, ncol=2)
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("plate rate [deg/s]")
    ax2.set_title("plate angular rates (command steps / dt)")
    ax2.legend(fontsize=6, ncol=2)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    return fig


def plot_error(results: dict, *, ax=None) -> Figure:
    """Distance of the contact point from its reference (log scale).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"NL": ..., "L": ...}``); the first one's reference is drawn.
    ax : matplotlib Axes, optional
    """
    fig, ax = _figure_and_axes(ax)
    for label, r in results.items():
        ax.semilogy(r.t, np.maximum(r.position_error, 1e-12), lw=1, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("distance to reference [m]")
    ax.set_title("tracking error")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return fig


def plot_constraints(results: dict, *, ax=None) -> Figure:
    """Fulfilment of the nonholonomic constraints, max |D(x) xd| (nonlinear runs).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"NL": ..., "L": ...}``); the first one's reference is drawn.
    ax : matplotlib Axes, optional
    """
    fig, ax = _figure_and_axes(ax)
    for label, r in results.items():
        if r.model == "nonlinear" and r.velocity_residual.size:
            ax.semilogy(r.t, np.maximum(np.abs(r.velocity_residual).max(axis=1), 1e-18), lw=1, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("max |D(x) xd| [m/s]")
    ax.set_title("nonholonomic constraint fulfilment")
    ax.legend(fontsize=7)
    return fig


def plot_tracking(results: dict, title: str = "") -> Figure:
    """Overview: path, x_C/y_C/yaw, plate angles, error and constraints for labelled runs.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"NL": ..., "L": ...}``); the first one's reference is drawn.
    title : str
        Figure title.
    """
    fig = Figure(figsize=(13, 8))
    axes = fig.subplots(2, 3)
    plot_path(results, ax=axes[0, 0])
    plot_coordinates(results, ("contact_x", "yaw"), axes=[axes[0, 1], axes[0, 2]])
    first = next(iter(results.values()))
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
    plot_error(results, ax=axes[1, 1])
    plot_constraints(results, ax=axes[1, 2])
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_ball_paths(ball, run, title: str = "") -> Figure:
    """Mass and total-CM paths in the body and spatial frames and the contact-point path of a rolling ball.

    Like Putkaradze & Rogers (2018), fig. 7.2.

    Parameters
    ----------
    ball : RollingBall
    run : ODETrajectory
        From ``ball.simulate``.
    title : str
        Figure title.
    """
    body = ball.mass_positions_body(run.x)
    cm = ball.total_cm_body(run.x)
    spatial = ball.to_spatial_about_gc(run.x, body)
    cm_spatial = ball.to_spatial_about_gc(run.x, cm[:, None, :])[:, 0]
    cp = ball.contact_point(run.x)
    fig = Figure(figsize=(15, 5))
    for k, (pos, cmp, frame) in enumerate(((body, cm, "body frame about GC"),
                                           (spatial, cm_spatial, "spatial frame about GC"))):
        ax = fig.add_subplot(1, 3, k + 1, projection="3d")
        for i in range(ball.n_masses):
            ax.plot(*pos[:, i].T, label=f"m{i + 1}")
        ax.plot(*cmp.T, "k--", label="total CM")
        ax.set_title(frame)
        ax.set_xlabel("e1 [m]")
        ax.set_ylabel("e2 [m]")
        ax.set_zlabel("e3 [m]")
        ax.set_box_aspect((1, 1, 1))
        ax.legend(fontsize=7)
    ax = fig.add_subplot(1, 3, 3)
    ax.plot(cp[:, 0], cp[:, 1])
    ax.plot(cp[0, 0], cp[0, 1], "go", label="start")
    ax.set_aspect("equal")
    ax.set_xlabel("e1 [m]")
    ax.set_ylabel("e2 [m]")
    ax.set_title("GC and contact point")
    ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
