"""Figures, each returned as a matplotlib Figure; :func:`save_figure` writes PNG/SVG atomically.

Every function uses the object-oriented matplotlib API (no global state) and one
shared style, so the figures read at a glance without the paper:

* **one meaning per colour** across all panels of a figure: each run (e.g. the
  closed loop on the nonlinear plant, the closed loop on the linear model, the
  open loop) keeps its colour in every panel (:func:`run_styles`); the open loop
  is always grey;
* **the reference is always visible**: a black dashed line drawn *on top* of the
  runs (which are drawn widest first, so a run that coincides with another one
  still shows as a coloured rim);
* **units in every axis label** and plain words ("rolling-constraint violation
  [m/s]"), angles in degrees;
* **no legend over data**: one legend per figure, below the panels;
* **no silent clipping**: values a log axis cannot show (exact zeros, infinities)
  are left out and the panel says how many.

See :doc:`/conventions` for the state names and units.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .._errors import ParameterError
from .._io import atomic_path
from .._paths import check_output_path

__all__ = ["REFERENCE_STYLE", "RUN_COLORS", "OPEN_LOOP_COLOR", "run_styles", "save_figure",
           "plot_reference", "plot_path", "plot_coordinates", "plot_lean_roll", "plot_inputs", "plot_error",
           "plot_constraints", "plot_tracking", "plot_ball_paths", "plot_percentile_bands", "plot_robust_bands"]

#: Style of every reference trace: black, dashed, drawn above the runs.
REFERENCE_STYLE = {"color": "black", "linestyle": (0, (5, 3)), "linewidth": 1.2, "zorder": 10}
#: Colours of the runs, in the order they are given (colour-blind friendly, Okabe-Ito).
RUN_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
#: Colour of open-loop runs (no feedback), whatever their position.
OPEN_LOOP_COLOR = "#7F7F7F"

#: Plain-words axis labels (with units) of the ball-plate coordinates and inputs.
_LABELS = {
    "contact_x": ("contact point x", "m"), "contact_y": ("contact point y", "m"),
    "yaw": ("yaw ψ (heading of the ball)", "deg"), "lean": ("lean φ", "deg"), "roll": ("roll θ", "deg"),
    "alpha": ("plate angle α (about plate x)", "deg"), "beta": ("plate angle β (about plate y)", "deg"),
}
_METRES = {"m", "m/s"}


def _label_for(name: str) -> tuple[str, str, float]:
    """Plain-words label, display unit and scale factor (SI value -> displayed value) of a coordinate.

    Parameters
    ----------
    name : str
        A coordinate or input name (``"contact_x"``, ``"yaw"``, ``"alpha"``, ...). Unknown names
        ending in ``_x``/``_y``/``_z`` or containing ``position`` are taken as lengths in m, others
        as angles in rad.

    Returns
    -------
    label : str
    unit : str
        ``"m"`` or ``"deg"``.
    scale : float
        Multiply the SI value by it to get the displayed one (1 for m, 180/π for rad).
    """
    label, unit = _LABELS.get(name, (name.replace("_", " "), None))
    if unit is None:
        length = name.endswith(("_x", "_y", "_z")) or "position" in name
        unit = "m" if length else "deg"
    return label, unit, (1.0 if unit in _METRES else 180.0 / np.pi)


def run_styles(results: Mapping[str, object]) -> dict[str, dict]:
    """Line style of each labelled run: its colour, and a width that decreases with its position.

    Runs drawn later are thinner, so a run that coincides with an earlier one shows as a thin line
    inside a coloured rim instead of hiding it. Open-loop runs (``feedback`` False) are grey.

    Parameters
    ----------
    results : mapping of str to run
        Labelled runs in drawing order (objects with an optional ``feedback`` attribute).

    Returns
    -------
    dict of str to dict
        Keyword arguments for ``Axes.plot`` per label: ``color``, ``linewidth``, ``zorder``.
    """
    styles = {}
    k = 0
    for i, (label, run) in enumerate(results.items()):
        if getattr(run, "feedback", True) is False:
            color = OPEN_LOOP_COLOR
        else:
            color = RUN_COLORS[k % len(RUN_COLORS)]
            k += 1
        styles[label] = {"color": color, "linewidth": max(3.0 - 0.8 * i, 1.0), "zorder": 2 + i}
    return styles


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save ``fig`` to ``path`` (format from the suffix) via a temporary file and an atomic rename.

    The file gets the permissions of a normally created file (``0o666`` less the umask, 0644 with
    the usual umask 022), not the private 0600 of a temporary file.

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
        fig.savefig(tmp, dpi=dpi)
    return path


def _new_figure(figsize) -> Figure:
    return Figure(figsize=figsize, layout="constrained")


def _figure_and_axes(ax, figsize=(6, 4.8)):
    if ax is not None:
        return ax.figure, ax, False
    fig = _new_figure(figsize)
    return fig, fig.subplots(), True


def _legend(fig: Figure, results: Mapping[str, object], *, reference: bool = True, extra=()) -> None:
    """One legend for the whole figure, below the panels (never over data)."""
    styles = run_styles(results)
    handles = [Line2D([], [], **REFERENCE_STYLE, label="reference")] if reference else []
    handles += [Line2D([], [], color=s["color"], linewidth=s["linewidth"], label=label)
                for label, s in styles.items()]
    handles += list(extra)
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), frameon=False)


def _index(result, name):
    return result.coordinate_names.index(name)


def _log_positive(ax, t, values, **style) -> int:
    """Plot ``values`` on a log axis without clipping: non-positive or non-finite samples are left out.

    Returns the number of samples left out (the caller says so in the panel).
    """
    values = np.asarray(values, dtype=float)
    bad = ~(np.isfinite(values) & (values > 0))
    ax.semilogy(t, np.where(bad, np.nan, values), **style)
    return int(bad.sum())


def _note_left_out(ax, counts: dict[str, int], why: str) -> None:
    parts = [f"{label}: {n}" for label, n in counts.items() if n]
    if parts:
        ax.set_title(ax.get_title() + f"\n(samples not drawn, {why}: " + ", ".join(parts) + ")", fontsize=9)


def plot_reference(reference, t) -> Figure:
    """Contact-point path on the plate and plate angles of a ball-plate reference.

    Parameters
    ----------
    reference : Reference
        A ball-plate reference (inputs ``(alpha, beta)`` in rad).
    t : array_like, shape (K,)
        Times in s at which to draw it.

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = reference(np.asarray(t, dtype=float))
    fig = _new_figure((10, 4.4))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(s.x[:, 0], s.x[:, 1], **REFERENCE_STYLE)
    ax1.plot(s.x[0, 0], s.x[0, 1], "o", color="black", ms=5)
    ax1.plot([0], [0], "+", color="0.4", ms=12, mew=1.5)
    ax1.set_aspect("equal", adjustable="datalim")
    ax1.set_xlabel("contact point x [m]")
    ax1.set_ylabel("contact point y [m]")
    ax1.set_title("reference path on the plate\n(dot: start, +: plate pivot)")
    colors = (RUN_COLORS[0], RUN_COLORS[1])
    for i, name in enumerate(("alpha", "beta")):
        label, _, scale = _label_for(name)
        ax2.plot(s.t, scale * s.u[:, i], color=colors[i], lw=1.8, label=label)
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("plate angle [deg]")
    ax2.set_title("plate angles from the dynamic inversion")
    ax2.grid(alpha=0.3)
    fig.legend(handles=ax2.lines, loc="outside lower center", ncol=2, frameon=False)
    return fig


def plot_path(results: dict, *, ax=None) -> Figure:
    """Contact point on the plate against the reference, for labelled ClosedLoopResult runs.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"closed loop": ..., "open loop": ...}``); the first one's reference is drawn.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure (the caller then adds the legend).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    first = next(iter(results.values()))
    ix, iy = _index(first, "contact_x"), _index(first, "contact_y")
    for label, style in run_styles(results).items():
        r = results[label]
        ax.plot(r.x[:, ix], r.x[:, iy], **style)
        ax.plot(r.x[0, ix], r.x[0, iy], "o", ms=5, color=style["color"], zorder=style["zorder"])
    ax.plot(first.x_ref[:, ix], first.x_ref[:, iy], **REFERENCE_STYLE)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact point x [m]")
    ax.set_ylabel("contact point y [m]")
    ax.set_title("contact point on the plate (dot: start)")
    if own:
        _legend(fig, results)
    return fig


def plot_coordinates(results: dict, names=("contact_x", "contact_y", "yaw"), *, axes=None) -> Figure:
    """Coordinates against their references over time (metres, or degrees for angles).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs; the first one's reference is drawn.
    names : sequence of str
        Coordinates to draw, one panel each.
    axes : sequence of Axes, optional
        Draw into these axes (the caller then adds the legend).

    Returns
    -------
    matplotlib.figure.Figure
    """
    first = next(iter(results.values()))
    own = axes is None
    if own:
        fig = _new_figure((4.6 * len(names), 4.2))
        axes = np.atleast_1d(fig.subplots(1, len(names)))
    else:
        fig = axes[0].figure
    styles = run_styles(results)
    for ax, name in zip(axes, names):
        i = _index(first, name)
        label, unit, scale = _label_for(name)
        for run_label, style in styles.items():
            r = results[run_label]
            ax.plot(r.t, scale * r.x[:, i], **style)
        ax.plot(first.t, scale * first.x_ref[:, i], **REFERENCE_STYLE)
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"{label} [{unit}]")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    if own:
        _legend(fig, results)
    return fig


def plot_lean_roll(results: dict) -> Figure:
    """The ball's lean and roll (dependent coordinates, recovered from the rolling constraints).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs; the first one's reference is drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    return plot_coordinates(results, ("lean", "roll"))


def _input_panels(results: dict, axes, *, rates: bool) -> None:
    """Plate angles (or their rates), one panel per input, runs coloured as everywhere else."""
    first = next(iter(results.values()))
    styles = run_styles(results)
    for i, (ax, name) in enumerate(zip(axes, first.input_names)):
        label, unit, scale = _label_for(name)
        for run_label, style in styles.items():
            r = results[run_label]
            if rates:
                if len(r.t) > 1:
                    ax.plot(r.t[:-1], scale * np.diff(r.u[:, i]) / np.diff(r.t), **style)
            else:
                ax.plot(r.t, scale * r.u[:, i], **style)
        if rates:
            if len(first.t) > 1:
                ax.plot(first.t[:-1], scale * np.diff(first.u_ref[:, i]) / np.diff(first.t), **REFERENCE_STYLE)
            ax.set_ylabel(f"rate of {label} [{unit}/s]")
            ax.set_title(f"rate of {label}\n(command change per sample / dt)")
        else:
            ax.plot(first.t, scale * first.u_ref[:, i], **REFERENCE_STYLE)
            ax.set_ylabel(f"{label} [{unit}]")
            ax.set_title(label)
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)


def plot_inputs(results: dict) -> Figure:
    """Plate angles against their references (top) and the plate angular rates (bottom), one column per input.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs; the first one's reference is drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    first = next(iter(results.values()))
    nu = len(first.input_names)
    fig = _new_figure((5 * nu, 7.5))
    axes = np.asarray(fig.subplots(2, nu, sharex=True)).reshape(2, nu)
    _input_panels(results, axes[0], rates=False)
    _input_panels(results, axes[1], rates=True)
    _legend(fig, results)
    return fig


def plot_error(results: dict, *, ax=None) -> Figure:
    """Distance of the contact point from its reference (log scale; exact zeros are counted, not drawn).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs.
    ax : matplotlib Axes, optional
        Draw into this axes (the caller then adds the legend).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    ax.set_title("distance of the contact point from the reference")
    left_out = {}
    for label, style in run_styles(results).items():
        left_out[label] = _log_positive(ax, results[label].t, results[label].position_error, **style)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("distance to reference [m]")
    ax.grid(alpha=0.3, which="both")
    _note_left_out(ax, left_out, "exactly zero")
    if own:
        _legend(fig, results, reference=False)
    return fig


def plot_constraints(results: dict, *, ax=None) -> Figure:
    """How well each run keeps the rolling (no-slip) constraints: the largest constraint-velocity residual.

    The residual of the velocity constraints ``D(x) xd = 0`` (holonomic ones differentiated), in m/s for
    rolling contacts; the nonlinear plant keeps it at the integrator's tolerance, the linear model only to
    first order in the deviation.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs.
    ax : matplotlib Axes, optional
        Draw into this axes (the caller then adds the legend).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    ax.set_title("rolling-constraint violation")
    left_out = {}
    for label, style in run_styles(results).items():
        r = results[label]
        if r.velocity_residual.size:
            left_out[label] = _log_positive(ax, r.t, np.abs(r.velocity_residual).max(axis=1), **style)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("rolling-constraint violation [m/s]")
    ax.grid(alpha=0.3, which="both")
    _note_left_out(ax, left_out, "exactly zero")
    if own:
        _legend(fig, results, reference=False)
    return fig


def plot_tracking(results: dict, title: str = "") -> Figure:
    """Overview of labelled runs: path, distance to the reference, constraint violation, yaw and plate angles.

    One colour per run in every panel, the reference black dashed on top, one legend below the panels.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"closed loop, nonlinear plant": ..., "open loop": ...}``); the first
        one's reference is drawn.
    title : str
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = _new_figure((14, 8.5))
    axes = fig.subplots(2, 3)
    plot_path(results, ax=axes[0, 0])
    plot_error(results, ax=axes[0, 1])
    plot_constraints(results, ax=axes[0, 2])
    plot_coordinates(results, ("yaw",), axes=[axes[1, 0]])
    _input_panels(results, axes[1, 1:], rates=False)
    _legend(fig, results)
    if title:
        fig.suptitle(title)
    return fig


def plot_ball_paths(ball, run, title: str = "") -> Figure:
    """Mass and total-CM paths in the body and spatial frames and the contact-point path of a rolling ball.

    Like Putkaradze & Rogers (2018), fig. 7.2. Each mass keeps its colour in both frames; the total
    centre of mass (CM) is black dashed.

    Parameters
    ----------
    ball : RollingBall
    run : ODETrajectory
        From ``ball.simulate``.
    title : str
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    body = ball.mass_positions_body(run.x)
    cm = ball.total_cm_body(run.x)
    spatial = ball.to_spatial_about_gc(run.x, body)
    cm_spatial = ball.to_spatial_about_gc(run.x, cm[:, None, :])[:, 0]
    cp = ball.contact_point(run.x)
    fig = _new_figure((15, 5.6))
    handles = []
    for k, (pos, cmp, frame) in enumerate(((body, cm, "body frame, about the geometric centre"),
                                           (spatial, cm_spatial, "spatial frame, about the geometric centre"))):
        ax = fig.add_subplot(1, 3, k + 1, projection="3d")
        for i in range(ball.n_masses):
            line, = ax.plot(*pos[:, i].T, color=RUN_COLORS[i % len(RUN_COLORS)], lw=1.4, label=f"mass {i + 1}")
            if k == 0:
                handles.append(line)
        line, = ax.plot(*cmp.T, color="black", linestyle=(0, (5, 3)), lw=1.2, label="total centre of mass")
        if k == 0:
            handles.append(line)
        ax.set_title(frame)
        ax.set_xlabel("e1 [m]")
        ax.set_ylabel("e2 [m]")
        ax.set_zlabel("e3 [m]")
        ax.set_box_aspect((1, 1, 1))
    ax = fig.add_subplot(1, 3, 3)
    line, = ax.plot(cp[:, 0], cp[:, 1], color=OPEN_LOOP_COLOR, lw=1.6, label="contact point (below the centre)")
    start, = ax.plot(cp[0, 0], cp[0, 1], "o", color="black", ms=5, label="start")
    handles += [line, start]
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("e1 [m]")
    ax.set_ylabel("e2 [m]")
    ax.set_title("path of the contact point on the floor")
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def plot_percentile_bands(t, bands, percentiles, *, ax=None, title: str = "") -> Figure:
    """Percentile bands of the tracking error over many runs (log scale), e.g. a Monte Carlo study.

    Symmetric pairs of percentiles (5-95, 25-75) are shaded in one colour with
    increasing opacity towards the median, which is a line; the zero-error
    reference is the bottom of the log axis. A band that reaches infinity
    (diverged runs) is cut at the top of the axes.

    Parameters
    ----------
    t : ndarray, shape (K,)
        Times in s.
    bands : ndarray, shape (P, K)
        Error percentiles in m (rows in the order of ``percentiles``).
    percentiles : ndarray, shape (P,)
        The percentiles in %, increasing.
    ax : matplotlib Axes, optional
    title : str
        Axes title.
    """
    fig, ax, _ = _figure_and_axes(ax)
    t = np.asarray(t, dtype=float)
    bands = np.asarray(bands, dtype=float)
    pct = np.asarray(percentiles, dtype=float)
    finite = bands[np.isfinite(bands)]
    top = 10 * float(finite.max()) if finite.size else 1.0
    shown = np.clip(np.where(np.isfinite(bands), bands, top), 1e-12, top)
    P = len(pct)
    for i in range(P // 2):
        j = P - 1 - i
        ax.fill_between(t, shown[i], shown[j], color=RUN_COLORS[0], alpha=0.2 + 0.25 * i / max(P // 2, 1), lw=0,
                        label=f"{pct[i]:g}-{pct[j]:g} percentile")
    if P % 2:
        ax.plot(t, shown[P // 2], color=RUN_COLORS[0], lw=1.5, label=f"{pct[P // 2]:g} percentile (median)")
    ax.set_yscale("log")
    ax.set_ylim(max(1e-12, float(shown.min()) / 2), top)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("distance to reference [m]")
    ax.set_title(title or "tracking error over runs")
    ax.grid(alpha=0.3, which="both")
    # below the axes: never over the data
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    return fig


def plot_robust_bands(robust: Mapping[str, object], *, max_rms_error: float, title: str = "") -> Figure:
    """The contact error of each design over many drawn rigs: 5-95 percentile band and median (log scale).

    One colour per design (the order of :data:`RUN_COLORS`); the pass threshold
    on the RMS error is a dashed line and the evaluation window (the last
    period) is shaded grey; each design's label gives its verdict. The axes end
    at 100 times the threshold: a band cut there holds diverging runs.

    Parameters
    ----------
    robust : mapping of str to RobustVerification
        By design name (:func:`ballctl.ball_plate.verification.verify_over_uncertainty`).
    max_rms_error : float
        The pass threshold in m.
    title : str
    """
    fig = _new_figure((7.5, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    finite = [b[np.isfinite(b)] for b in (np.asarray(rv.bands) for rv in robust.values())]
    values = np.concatenate(finite) if finite else np.zeros(0)
    top = 100.0 * max_rms_error  # a band above it holds diverging runs: cut at the top of the axes
    bottom = max(1e-6, float(values[values > 0].min()) / 2) if np.any(values > 0) else 1e-6
    handles = []
    t_end = 0.0
    for i, (name, rv) in enumerate(robust.items()):
        color = RUN_COLORS[i % len(RUN_COLORS)]
        t = np.asarray(rv.t)
        t_end = max(t_end, float(t[-1]))
        pct = list(np.asarray(rv.percentiles))
        bands = np.clip(np.where(np.isfinite(rv.bands), rv.bands, top), bottom, top)
        lo, mid, hi = (bands[pct.index(p)] for p in (5.0, 50.0, 95.0))
        ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0)
        ax.plot(t, mid, color=color, lw=1.5)
        verdict = "passes" if rv.passed else "fails"
        p95 = "diverged" if not np.isfinite(rv.rms_p95_m) else f"{1e3 * rv.rms_p95_m:.3g} mm"
        handles.append(Line2D([], [], color=color, lw=6, alpha=0.5,
                              label=f"{name}: 5-95 % band, median line; RMS p95 {p95}, "
                                    f"{100 * rv.success_rate:.1f} % converge -- {verdict}"))
        window = rv.window_s
    ax.axvspan(t_end - window, t_end, color="0.85", zorder=0)
    ax.axhline(max_rms_error, color="black", ls=(0, (5, 3)), lw=1.2, zorder=10)
    handles.append(Line2D([], [], color="black", ls=(0, (5, 3)), label=f"pass threshold {1e3 * max_rms_error:g} mm "
                                                                         f"(RMS over the grey window)"))
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xlim(0.0, t_end)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("contact-point distance to reference [m]")
    ax.set_title(title or "contact error over the rig's uncertainty")
    ax.grid(alpha=0.3, which="both")
    # below the axes: never over the data
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)
    return fig
