"""Figures, each returned as a matplotlib Figure; :func:`save_figure` writes PNG/SVG atomically.

Every function uses the object-oriented matplotlib API (no global state) and one
shared style, so the figures read at a glance without the paper:

* **one meaning per colour** across all panels of a figure: each run (e.g. the
  closed loop on the nonlinear plant, the closed loop on the linear model, the
  open loop) keeps its colour in every panel (:func:`run_styles`); the open loop
  is always grey;
* **the reference is always visible**: a black dashed line with a white rim drawn
  *on top* of the runs (which are drawn widest first, so a run that coincides
  with another one still shows as a coloured rim);
* **limits and pass thresholds** (tilt limit, the rig's friction coefficient,
  the verdict's error threshold) are dark-red dash-dot lines
  (:data:`LIMIT_STYLE`), the time window a verdict uses is shaded grey
  (:data:`WINDOW_COLOR`);
* **units in every axis label** and plain words ("plate tilt about x [deg]",
  "friction coefficient needed [-]"), angles in degrees;
* **no legend over data**: one legend per figure, below the panels; verdicts
  go into a table below the legend (:func:`plot_tracking`);
* **no silent clipping**: values a log axis cannot show (exact zeros, infinities)
  are left out and the panel says how many.

See :doc:`/conventions` for the state names and units.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib import patheffects
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .._errors import ParameterError, ParameterTypeError
from .._io import atomic_path
from .._paths import check_output_path
from ._shared import NOMINAL_NOTE, equal_3d_scale, is_nominal, rail_curves

__all__ = ["REFERENCE_STYLE", "LIMIT_STYLE", "WINDOW_COLOR", "RUN_COLORS", "OPEN_LOOP_COLOR", "run_styles",
           "save_figure", "plot_reference", "plot_path", "plot_coordinates", "plot_lean_roll", "plot_inputs",
           "plot_error", "plot_yaw_error", "plot_plate_tilts", "plot_friction", "plot_constraints", "plot_tracking",
           "plot_ball_paths", "plot_percentile_bands", "plot_robust_bands"]

#: Style of every reference trace: black, dashed, drawn above the runs.
REFERENCE_STYLE = {"color": "black", "linestyle": (0, (5, 3)), "linewidth": 1.2, "zorder": 10}
#: Style of limits and pass thresholds (tilt limit, the rig's friction coefficient, the error threshold).
LIMIT_STYLE = {"color": "#A50026", "linestyle": (0, (6, 2, 1, 2)), "linewidth": 1.3, "zorder": 9}
#: Shade of the time window a verdict uses.
WINDOW_COLOR = "0.88"
#: White rim that keeps the reference visible on top of wide run traces.
_HALO = [patheffects.withStroke(linewidth=2.8, foreground="white")]
#: Thin dark core under a thin line, so it shows inside a wide trace of its own colour.
_DARK_CORE = [patheffects.withStroke(linewidth=1.6, foreground="0.15"), patheffects.Normal()]
#: Colours of the runs, in the order they are given (colour-blind friendly, Okabe-Ito).
RUN_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
#: Colour of open-loop runs (no feedback), whatever their position.
OPEN_LOOP_COLOR = "#7F7F7F"

#: Plain-words axis labels (with units) of the ball-plate coordinates and inputs.
_LABELS = {
    "contact_x": ("contact point x", "m"), "contact_y": ("contact point y", "m"),
    "yaw": ("yaw ψ (heading of the ball)", "deg"), "lean": ("lean φ", "deg"), "roll": ("roll θ", "deg"),
    "alpha": ("plate tilt about x (α)", "deg"), "beta": ("plate tilt about y (β)", "deg"),
    "alpha_cmd": ("plate tilt about x (α), commanded", "deg"), "beta_cmd": ("plate tilt about y (β), commanded", "deg"),
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
    inside a coloured rim instead of hiding it. Open-loop runs (``feedback`` ``"open"`` or False) are grey.

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
        if getattr(run, "feedback", True) in (False, "open"):
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


def _reference_zorder(results) -> float:
    """A zorder above every run trace and marker of ``results`` (the reference is drawn on top)."""
    return max(REFERENCE_STYLE["zorder"], 4 + len(results))


def _reference_style(results) -> dict:
    """:data:`REFERENCE_STYLE` with a white rim, on top of every run of ``results``."""
    return {**REFERENCE_STYLE, "zorder": _reference_zorder(results), "path_effects": _HALO}


def _end_markers(ax, x, y, style, run) -> None:
    """Start (dot), end (square) or divergence (cross) of one run, in its colour."""
    z = style["zorder"] + 0.5
    ax.plot(x[0], y[0], "o", ms=5, color=style["color"], zorder=z)
    diverged = getattr(run, "diverged_at_s", None) is not None
    ax.plot(x[-1], y[-1], "X" if diverged else "s", ms=7 if diverged else 5, color=style["color"], zorder=z,
            markeredgecolor="white", markeredgewidth=0.6)


def _marker_legend(diverged: bool) -> list:
    """Legend entries of the start, end and divergence markers of :func:`plot_path`."""
    out = [Line2D([], [], marker="o", ls="none", color="0.3", ms=5, label="path: start"),
           Line2D([], [], marker="s", ls="none", color="0.3", ms=5, label="path: end")]
    if diverged:
        out.append(Line2D([], [], marker="X", ls="none", color="0.3", ms=7, label="diverged (run stopped)"))
    return out


def plot_path(results: dict, *, ax=None) -> Figure:
    """Contact point on the plate against the reference, for labelled ClosedLoopResult runs.

    The reference (the first run's) is drawn last, on top of the runs, black dashed with a white rim.
    Each run has a dot at its start, a square at its end (a cross where it diverged).

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
    ax.set_gid("path")
    first = next(iter(results.values()))
    ix, iy = _index(first, "contact_x"), _index(first, "contact_y")
    for label, style in run_styles(results).items():
        r = results[label]
        ax.plot(r.x[:, ix], r.x[:, iy], **style, gid=f"run {label}")
        _end_markers(ax, r.x[:, ix], r.x[:, iy], style, r)
    ax.plot(first.x_ref[:, ix], first.x_ref[:, iy], **_reference_style(results), gid="reference")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact point x [m]")
    ax.set_ylabel("contact point y [m]")
    ax.set_title("contact point on the plate")
    ax.grid(alpha=0.3)
    if own:
        _legend(fig, results, extra=_marker_legend(any(r.diverged_at_s is not None for r in results.values())))
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


def _window_mask(run, window_s: float) -> np.ndarray:
    """Samples of ``run`` in its last ``window_s`` seconds (as :meth:`ClosedLoopResult.summary` selects them)."""
    t = np.asarray(run.t, dtype=float)
    return t >= t[-1] - window_s - 1e-9


def _default_window(results) -> float | None:
    """The window :meth:`ClosedLoopResult.summary` rates a run on: the last period, else the last 20 % of the run."""
    first = next(iter(results.values()))
    span = float(first.t[-1] - first.t[0])
    period = getattr(first, "period_s", None)
    if period is not None and span >= period - 1e-9:
        return float(period)
    return 0.2 * span if span > 0 else None


def _rms_in_window(run, window_s: float) -> float | None:
    """RMS contact error of ``run`` over its last ``window_s`` s; None for a run that diverged."""
    if getattr(run, "diverged_at_s", None) is not None:
        return None
    err = np.asarray(run.position_error, dtype=float)[_window_mask(run, window_s)]
    return float(np.sqrt(np.mean(err ** 2))) if err.size else None


def _mm(value_m: float) -> str:
    return f"{1e3 * value_m:.3g} mm"


def plot_error(results: dict, *, ax=None, max_rms_error: float | None = None,
               window_s: float | None = None) -> Figure:
    """Distance of the contact point from its reference (log scale; exact zeros are counted, not drawn).

    With ``window_s`` the last ``window_s`` seconds (the window a verdict rates) are shaded grey and each
    run's RMS error over it is a dotted segment in its colour there; with ``max_rms_error`` the pass
    threshold on that RMS is a dark-red dash-dot line: a run passes this criterion when its dotted
    segment lies below the line.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs.
    ax : matplotlib Axes, optional
        Draw into this axes (the caller then adds the legend).
    max_rms_error : float, optional
        Pass threshold in m on the RMS error over the window.
    window_s : float, optional
        Length in s of the window at the end of the runs that the verdict rates.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    ax.set_gid("error")
    ax.set_title("distance of the contact point from the reference")
    left_out = {}
    styles = run_styles(results)
    for label, style in styles.items():
        r = results[label]
        left_out[label] = _log_positive(ax, r.t, r.position_error, **style, gid=f"run {label}")
        if r.diverged_at_s is not None and len(r.t):
            ax.plot(r.t[-1], r.position_error[-1], "X", ms=7, color=style["color"], zorder=style["zorder"] + 0.5,
                    markeredgecolor="white", markeredgewidth=0.6)
    if window_s is not None and window_s > 0:
        t_end = max(float(r.t[-1]) for r in results.values())
        ax.axvspan(t_end - window_s, t_end, color=WINDOW_COLOR, zorder=0, lw=0, gid="verdict window")
        for label, style in styles.items():
            r = results[label]
            rms = _rms_in_window(r, window_s)
            if rms is not None and rms > 0:
                ax.plot([r.t[-1] - window_s, r.t[-1]], [rms, rms], color=style["color"], lw=2.4,
                        linestyle=(0, (1, 1.2)), zorder=_reference_zorder(results) - 0.5, gid=f"rms {label}",
                        path_effects=_HALO)
    if max_rms_error is not None:
        ax.axhline(max_rms_error, **LIMIT_STYLE, gid="pass threshold")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("distance to reference [m]")
    ax.grid(alpha=0.3, which="both")
    _note_left_out(ax, left_out, "exactly zero")
    if own:
        extra = _error_legend_extra(max_rms_error, window_s)
        _legend(fig, results, reference=False, extra=extra)
    return fig


def _error_legend_extra(max_rms_error, window_s) -> list:
    extra = []
    if window_s is not None and window_s > 0:
        extra.append(Patch(color=WINDOW_COLOR, label=f"last {window_s:.3g} s: the window the verdict rates"))
        extra.append(Line2D([], [], color="0.3", lw=2.4, linestyle=(0, (1, 1.2)),
                            label="dotted, run colour: RMS error over that window"))
    if max_rms_error is not None:
        extra.append(Line2D([], [], **LIMIT_STYLE, label=f"pass threshold on that RMS: {_mm(max_rms_error)}"))
    return extra


def _wrap_deg(angle_deg) -> np.ndarray:
    """Angles in deg wrapped to (-180, 180]."""
    return 180.0 - np.mod(180.0 - np.asarray(angle_deg, dtype=float), 360.0)


def _break_at_wraps(t, values) -> tuple[np.ndarray, np.ndarray]:
    """Insert a gap (NaN) where a wrapped angle jumps by more than 180 deg, so no vertical line is drawn."""
    t, values = np.asarray(t, dtype=float), np.asarray(values, dtype=float)
    jumps = np.nonzero(np.abs(np.diff(values)) > 180.0)[0] + 1
    return np.insert(t, jumps, np.nan), np.insert(values, jumps, np.nan)


def plot_yaw_error(results: dict, *, ax=None) -> Figure:
    """The ball's yaw (heading) minus its reference, wrapped to (-180, 180] deg.

    The yaw itself grows without bound on a circle (one turn per revolution); its error is what a
    controller is judged on. Zero error is the reference (black dashed).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs with a ``yaw`` coordinate.
    ax : matplotlib Axes, optional
        Draw into this axes (the caller then adds the legend).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    ax.set_gid("yaw error")
    for label, style in run_styles(results).items():
        r = results[label]
        if "yaw" not in r.coordinate_names:
            continue
        i = _index(r, "yaw")
        tt, e = _break_at_wraps(r.t, _wrap_deg(np.rad2deg(r.x[:, i] - r.x_ref[:, i])))
        ax.plot(tt, e, **style, gid=f"run {label}")
    first = next(iter(results.values()))
    ax.plot([first.t[0], first.t[-1]], [0.0, 0.0], **_reference_style(results), gid="reference")
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, -180.0), min(hi, 180.0))
    ax.set_xlabel("time [s]")
    ax.set_ylabel("yaw error ψ − ψ_ref, wrapped [deg]")
    ax.set_title("heading (yaw) error of the ball")
    ax.grid(alpha=0.3)
    if own:
        _legend(fig, results)
    return fig


def _actual_plate_angle(run, i: int):
    """The plate's true angle of input ``i`` in rad (its coordinate, e.g. ``alpha`` for ``alpha_cmd``), or None."""
    name = run.input_names[i]
    base = name[:-4] if name.endswith("_cmd") else name
    if base != name and base in run.coordinate_names:
        return run.x[:, run.coordinate_names.index(base)]
    return None


def plot_plate_tilts(results: dict, *, axes=None, limits=None) -> Figure:
    """The plate's tilt about x and y: actual angle (solid) next to the command (thin steps), with the tilt limit.

    On a plant whose plate is a coordinate (servo or moving plate) the actual angle is that coordinate
    and the command the input ``alpha_cmd``/``beta_cmd``; on the quasi-static plate the plate is at its
    command and only the command is drawn. The reference (black dashed) is the first run's reference
    plate angle (its feedforward command where the design has no plate angle). ``limits`` draws the
    rig's ±tilt limit (dark-red dash-dot).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled ball-plate runs.
    axes : pair of Axes, optional
        Draw into these (the caller then adds the legend).
    limits : RigLimits or float, optional
        The rig's limits (its ``max_angle`` in rad is drawn) or the tilt limit in rad.

    Returns
    -------
    matplotlib.figure.Figure
    """
    first = next(iter(results.values()))
    nu = len(first.input_names)
    own = axes is None
    if own:
        fig = _new_figure((5.2 * nu, 4.4))
        axes = np.atleast_1d(fig.subplots(1, nu))
    else:
        fig = axes[0].figure
    max_tilt = getattr(limits, "max_angle", limits)
    styles = run_styles(results)
    any_actual = False
    for i, ax in enumerate(axes[:nu]):
        name = first.input_names[i]
        base = name[:-4] if name.endswith("_cmd") else name
        label, unit, scale = _label_for(base)
        ax.set_gid(f"plate tilt {i}")
        for run_label, style in styles.items():
            r = results[run_label]
            actual = _actual_plate_angle(r, i)
            if actual is not None:
                any_actual = True
                ax.plot(r.t, scale * actual, **style, gid=f"actual {run_label}")
                ax.plot(r.t, scale * r.u[:, i], drawstyle="steps-post", color=style["color"], lw=0.8,
                        zorder=style["zorder"] + 0.2, gid=f"command {run_label}", path_effects=_DARK_CORE)
            else:
                ax.plot(r.t, scale * r.u[:, i], drawstyle="steps-post", **style, gid=f"command {run_label}")
        ref = None
        j = first.coordinate_names.index(base) if base in first.coordinate_names and base != name else None
        if j is not None and np.all(np.isfinite(first.x_ref[:, j])):
            ref = first.x_ref[:, j]
        elif first.u_ref.size:
            ref = first.u_ref[:, i]
        if ref is not None:
            ax.plot(first.t, scale * ref, **_reference_style(results), gid="reference")
        if max_tilt is not None:
            for sign in (1, -1):
                ax.axhline(sign * scale * max_tilt, **LIMIT_STYLE, gid="tilt limit")
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"{label.split(' (')[0]} [{unit}]")
        ax.set_title(label.split(",")[0] + ("" if any_actual else "\n(quasi-static: the plate is at its command)"))
        ax.grid(alpha=0.3)
    if own:
        _legend(fig, results, extra=_plate_legend_extra(max_tilt, any_actual))
    return fig


def _plate_legend_extra(max_tilt, any_actual) -> list:
    extra = []
    if any_actual:
        extra.append(Line2D([], [], color="0.3", lw=2.4, label="solid: plate angle (actual)"))
        extra.append(Line2D([], [], color="0.6", lw=0.8, drawstyle="steps-post", path_effects=_DARK_CORE,
                            label="thin, dark-edged: command"))
    if max_tilt is not None:
        extra.append(Line2D([], [], **LIMIT_STYLE, label=f"tilt limit ±{np.rad2deg(max_tilt):.3g} deg"))
    return extra


def _required_friction(run) -> np.ndarray | None:
    """|F_t| / N per sample (inf where N <= 0: lift off; NaN where not finite), or None without contact forces."""
    normal = np.asarray(getattr(run, "normal_force", np.zeros(0)), dtype=float)
    friction = np.asarray(getattr(run, "friction_force", np.zeros((0, 0))), dtype=float)
    if normal.size == 0 or friction.shape[0] != normal.shape[0]:
        return None
    tangential = np.linalg.norm(friction.reshape(len(normal), -1), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.where(normal > 0, tangential / normal, np.inf)
    mu[~(np.isfinite(normal) & np.isfinite(tangential))] = np.nan
    return mu


def plot_friction(results: dict, *, ax=None, friction_coefficient: float | None = None,
                  window_s: float | None = None) -> Figure:
    """The friction coefficient each run's ball needs to roll, ``|F_t| / N``, against the rig's.

    Above the rig's coefficient (dark-red dash-dot) the ball would slip; where the normal force is
    not positive it lifts off (no coefficient suffices). Samples above the top of the axes are
    triangles at the top edge, lift-off samples crosses there (the title counts them).

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (from plants with ``contact_forces``; others are skipped and named).
    ax : matplotlib Axes, optional
        Draw into this axes (the caller then adds the legend).
    friction_coefficient : float, optional
        The rig's coefficient of static friction (e.g. ``rig.friction_coefficient``).
    window_s : float, optional
        Shade the last ``window_s`` s (the window a verdict rates).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _figure_and_axes(ax)
    ax.set_gid("friction")
    styles = run_styles(results)
    mus = {label: _required_friction(results[label]) for label in styles}
    finite = np.concatenate([m[np.isfinite(m)] for m in mus.values() if m is not None] or [np.zeros(0)])
    top = float(np.percentile(finite, 99.5)) * 1.15 if finite.size else 1.0
    if friction_coefficient is not None:
        top = min(max(top, 1.6 * friction_coefficient), 4.0 * friction_coefficient)
    top = top if top > 0 else 1.0
    above, lifted, missing = {}, {}, []
    for label, style in styles.items():
        r, mu = results[label], mus[label]
        if mu is None:
            missing.append(label)
            continue
        shown = np.where(mu <= top, mu, np.nan)
        ax.plot(r.t, shown, **style, gid=f"run {label}")
        high = np.isfinite(mu) & (mu > top)
        lift = np.isinf(mu)
        above[label], lifted[label] = int(high.sum()), int(lift.sum())
        for mask, marker in ((high, "^"), (lift, "x")):
            if mask.any():
                ax.plot(r.t[mask], np.full(int(mask.sum()), top), marker, ls="none", ms=5, color=style["color"],
                        zorder=style["zorder"] + 0.5, clip_on=False)
    if window_s is not None and window_s > 0:
        t_end = max(float(r.t[-1]) for r in results.values())
        ax.axvspan(t_end - window_s, t_end, color=WINDOW_COLOR, zorder=0, lw=0, gid="verdict window")
    if friction_coefficient is not None:
        ax.axhline(friction_coefficient, **LIMIT_STYLE, gid="rig friction coefficient")
    ax.set_ylim(0.0, top)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("friction coefficient needed |F_t|/N [-]")
    title = "friction the ball needs to roll" + ("" if friction_coefficient is None else
                                                  f" (rig: μ = {friction_coefficient:g}; slips above)")
    notes = [f"{label} {above[label]}/{lifted[label]}" for label in above if above[label] or lifted[label]]
    notes = ["samples ▲ off the top / × lift off: " + ", ".join(notes)] if notes else []
    if missing:
        notes.append("no contact forces: " + ", ".join(missing))
    ax.set_title(title + "".join("\n" + note for note in notes), fontsize=10 if notes else None)
    ax.grid(alpha=0.3)
    if own:
        extra = [] if friction_coefficient is None else [
            Line2D([], [], **LIMIT_STYLE, label=f"rig's friction coefficient {friction_coefficient:g}")]
        _legend(fig, results, reference=False, extra=extra)
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


def _verdict(value) -> tuple[bool | None, str]:
    """``(passed, reason)`` of one entry of ``verdicts`` (see :func:`plot_tracking`); passed None: not applicable."""
    if isinstance(value, Mapping):
        passed = value.get("passed")
        return (None if passed is None else bool(passed)), str(value.get("reason", "") or "")
    if isinstance(value, (bool, np.bool_)):
        return bool(value), ""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return (None if value[0] is None else bool(value[0])), str(value[1] or "")
    raise ParameterTypeError("verdicts must map each design to a mapping with 'passed' and 'reason', a "
                             f"(passed, reason) pair or a bool, got {type(value).__name__}")


def _verdict_text(passed: bool | None, reason: str) -> str:
    if passed is None:
        return "not applicable" + (f": {reason}" if reason else "")
    if passed:
        return "PASSES" + (f": {reason}" if reason and reason != "passes" else "")
    return "FAILS" + (f": {reason}" if reason else "")


def _robust_text(rv) -> str:
    p95 = "diverged" if not np.isfinite(rv.rms_p95_m) else _mm(rv.rms_p95_m)
    return f"{100 * rv.success_rate:.1f} % of {rv.runs} converge; p95 {p95}"


def _verdict_table(ax, results, styles, verdicts, *, exported, window_s, robust, criterion,
                   table_fraction) -> None:
    """The verdict of every design as a table in an axes without data (below the legend)."""
    names = list(verdicts) + [n for n in results if n not in verdicts]
    header = ["", "design", f"RMS error, last {window_s:.3g} s" if window_s else "RMS error"]
    header += ["over the drawn rigs"] if robust is not None else []
    header += ["verdict"]
    rows, colours, bold = [], [], []
    for name in names:
        passed, reason = _verdict(verdicts[name]) if name in verdicts else (None, "no verdict given")
        run = results.get(name)
        if run is None:
            rms = "not drawn" + (": diverged" if "diverged" in reason else "")
        elif run.diverged_at_s is not None:
            rms = f"diverged at {run.diverged_at_s:.3g} s"
        else:
            value = _rms_in_window(run, window_s) if window_s else None
            rms = "-" if value is None else _mm(value)
        design = name
        if name == exported:
            design += " (exported" + (", forced)" if passed is False else ")")
        row = ["" if run is not None else "–", design, rms]
        if robust is not None:
            row.append(_robust_text(robust[name]) if name in robust else "not run")
        row.append(_verdict_text(passed, reason))
        rows.append(row)
        colours.append([styles[name]["color"] if run is not None else "white"] + ["white"] * (len(row) - 1))
        bold.append(name == exported)
    widths = [0.02, 0.13, 0.135] + ([0.235] if robust is not None else []) + [0.0]
    widths[-1] = 1.0 - sum(widths)
    frac = table_fraction
    table = ax.table(cellText=rows, colLabels=header, cellColours=colours, colWidths=widths, cellLoc="left",
                     colLoc="left", bbox=[0.0, 0.0, 1.0, frac])
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    for (row, _col), cell in table.get_celld().items():
        cell.set_edgecolor("0.75")
        if row == 0 or (row > 0 and bold[row - 1]):
            cell.get_text().set_fontweight("bold")
    table.set_gid("verdict table")
    if criterion:
        ax.text(0.0, frac + 0.01, f"Pass criterion: {criterion}",
                transform=ax.transAxes, ha="left", va="bottom", fontsize=9, wrap=True)


def _verdict_line(verdicts, exported) -> str:
    """One line for the figure title: what was exported and which designs fail."""
    judged = {n: _verdict(v) for n, v in verdicts.items()}
    failed = [n for n, (passed, _) in judged.items() if passed is False and n != exported]
    if exported is None:
        head = "nothing exported: no design passes"
    else:
        passed = judged.get(exported, (None, ""))[0]
        how = "passes" if passed else "FAILS, exported by force" if passed is False else "no verdict"
        head = f"exported: {exported} ({how})"
    return head + (f"; fail: {', '.join(failed)}" if failed else "")


def plot_tracking(results: dict, title: str = "", *, verdicts: Mapping[str, object] | None = None,
                  exported: str | None = None, max_rms_error: float | None = None, window_s: float | None = None,
                  limits=None, friction_coefficient: float | None = None, criterion: str | None = None,
                  robust: Mapping[str, object] | None = None) -> Figure:
    """Overview of labelled ball-plate runs: what a control engineer checks before trusting a design.

    Panels: the contact point's path on the plate (reference on top), its distance from the reference
    (log; the window the verdict rates shaded, each run's RMS over it dotted, the pass threshold),
    the yaw error wrapped to (-180, 180] deg, the plate's tilt about x and about y (actual angle solid,
    command thin steps, the ±tilt limit), and the friction coefficient the ball needs against the rig's.
    One colour per run in every panel, the reference black dashed on top, one legend below the panels;
    with ``verdicts`` a table below the legend gives each design's verdict (designs not in ``results``,
    e.g. one that diverged, are listed there as not drawn), the exported one in bold, and the title
    says what was exported.

    Parameters
    ----------
    results : dict of str to ClosedLoopResult
        Labelled runs (e.g. ``{"closed loop, nonlinear plant": ..., "open loop": ...}``); the first
        one's reference is drawn.
    title : str
        Figure title.
    verdicts : mapping of str to verdict, optional
        By design name: a mapping with ``passed`` (bool, or None for not applicable) and ``reason``
        (str) -- e.g. the ``verification`` entries of ``ballctl track`` -- or a ``(passed, reason)``
        pair, or a bool.
    exported : str, optional
        The design that was exported (marked in the legend, the table and the title).
    max_rms_error : float, optional
        The pass threshold in m on the RMS contact error over the window (drawn in the error panel).
    window_s : float, optional
        Length in s of the window at the end of the run that the verdict rates (shaded, with each run's
        RMS error over it); default with ``verdicts`` or ``max_rms_error``: the first run's period if
        the run is at least that long, else its last 20 % (as :meth:`~ballctl.ClosedLoopResult.summary`);
        none otherwise.
    limits : RigLimits or float, optional
        The rig's limits (``max_angle`` in rad is drawn as ±tilt limit) or the tilt limit in rad.
    friction_coefficient : float, optional
        The rig's coefficient of static friction (drawn in the friction panel).
    criterion : str, optional
        The pass criterion in words, written above the table; default from ``max_rms_error`` and the window.
    robust : mapping of str to RobustVerification, optional
        By design name: the verification over the rig's uncertainty (a column of the table).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if window_s is None and (verdicts is not None or max_rms_error is not None):
        window_s = _default_window(results)
    if verdicts is not None and not isinstance(verdicts, Mapping):
        raise ParameterTypeError(f"verdicts must be a mapping of design name to verdict, got "
                                 f"{type(verdicts).__name__}")
    max_tilt = getattr(limits, "max_angle", limits)
    styles = run_styles(results)
    handles = [Line2D([], [], **REFERENCE_STYLE, label="reference")]
    handles += [Line2D([], [], color=st["color"], linewidth=st["linewidth"],
                       label=label + (" (exported)" if label == exported else "")) for label, st in styles.items()]
    handles += _marker_legend(any(r.diverged_at_s is not None for r in results.values()))
    handles += _plate_legend_extra(None, any(_actual_plate_angle(r, 0) is not None for r in results.values()))
    handles += _error_legend_extra(None, window_s)
    limits_named = [f"pass threshold {_mm(max_rms_error)}" if max_rms_error is not None else None,
                    f"tilt limit ±{np.rad2deg(max_tilt):.3g} deg" if max_tilt is not None else None,
                    f"rig's friction coefficient {friction_coefficient:g}" if friction_coefficient is not None
                    else None]
    limits_named = [text for text in limits_named if text]
    if limits_named:
        handles.append(Line2D([], [], **LIMIT_STYLE, label="dash-dot: " + ", ".join(limits_named)))
    ncol = min(len(handles), 5)
    # the key below the panels, in inches: legend rows, the criterion (two lines), the table (header + a row each)
    legend_h = 0.26 * -(-len(handles) // ncol) + 0.1
    table_h = 0.0 if verdicts is None else 0.28 * (len(set(verdicts) | set(results)) + 1)
    key_h = 0.0 if verdicts is None else legend_h + 0.45 + table_h
    fig = _new_figure((15, 8.8 + key_h))
    grid = fig.add_gridspec(3 if verdicts is not None else 2, 3,
                            height_ratios=[4.0, 4.0] + ([key_h] if verdicts is not None else []))
    axes = np.array([[fig.add_subplot(grid[r, c]) for c in range(3)] for r in range(2)])
    plot_path(results, ax=axes[0, 0])
    plot_error(results, ax=axes[0, 1], max_rms_error=max_rms_error, window_s=window_s)
    plot_yaw_error(results, ax=axes[0, 2])
    plot_plate_tilts(results, axes=axes[1, :2], limits=max_tilt)
    plot_friction(results, ax=axes[1, 2], friction_coefficient=friction_coefficient, window_s=window_s)
    for ax in axes[1, :]:
        ax.sharex(axes[0, 1])
    if verdicts is None:
        fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)
    else:
        key = fig.add_subplot(grid[2, :])
        key.set_gid("key")
        key.set_axis_off()
        key.legend(handles=handles, loc="upper center", ncol=ncol, frameon=False, fontsize=9,
                   bbox_to_anchor=(0.5, 1.0), borderaxespad=0.0)
        if criterion is None and max_rms_error is not None:
            criterion = (f"RMS contact error over the last {window_s:.3g} s (grey window) below "
                         f"{_mm(max_rms_error)}")
        _verdict_table(key, results, styles, verdicts, exported=exported, window_s=window_s, robust=robust,
                       criterion=criterion, table_fraction=table_h / key_h)
    head = title
    if verdicts is not None:
        head = (title + "\n" if title else "") + _verdict_line(verdicts, exported)
    if head:
        fig.suptitle(head)
    return fig


def plot_ball_paths(ball, run, title: str = "", *, nominal_units: bool | None = None) -> Figure:
    """Mass and total-CM paths in the body and spatial frames and the contact-point path of a rolling ball.

    Like Putkaradze & Rogers (2018), fig. 7.2. Each mass keeps its colour in both frames; the total
    centre of mass (CM) is black dashed; the rails are thin dotted lines in the body frame. Every path
    has a dot at its start and a square at its end. The 3-D panels have equal scales (box aspect
    proportional to the data ranges), so the circular rails look circular. A ball in the paper's
    nominal units (g = 1, r = 1 m) says so in the title.

    Parameters
    ----------
    ball : RollingBall
    run : ODETrajectory
        From ``ball.simulate``.
    title : str
        Figure title.
    nominal_units : bool, optional
        Say that the ball is in the paper's nominal units; default: when its gravity is 1 m/s² and
        its radius 1 m.

    Returns
    -------
    matplotlib.figure.Figure
    """
    body = ball.mass_positions_body(run.x)
    cm = ball.total_cm_body(run.x)
    spatial = ball.to_spatial_about_gc(run.x, body)
    cm_spatial = ball.to_spatial_about_gc(run.x, cm[:, None, :])[:, 0]
    cp = ball.contact_point(run.x)
    rails = rail_curves(ball)
    fig = _new_figure((15, 6.0))
    handles = []
    for k, (pos, cmp, frame) in enumerate(((body, cm, "body frame, about the geometric centre"),
                                           (spatial, cm_spatial, "spatial frame, about the geometric centre"))):
        ax = fig.add_subplot(1, 3, k + 1, projection="3d")
        ax.set_gid("body frame" if k == 0 else "spatial frame")
        for i in range(ball.n_masses):
            color = RUN_COLORS[i % len(RUN_COLORS)]
            line, = ax.plot(*pos[:, i].T, color=color, lw=1.4, label=f"mass {i + 1}")
            ax.plot(*pos[0, i], "o", color=color, ms=5)
            ax.plot(*pos[-1, i], "s", color=color, ms=5)
            if k == 0:
                handles.append(line)
        if k == 0:  # the rails are fixed in the body: drawn whole, thin, in their mass's colour
            for i, rail in enumerate(rails):
                ax.plot(*rail.T, color=RUN_COLORS[i % len(RUN_COLORS)], lw=0.6, alpha=0.5, linestyle=(0, (2, 2)))
        line, = ax.plot(*cmp.T, color="black", linestyle=(0, (5, 3)), lw=1.2, label="total centre of mass")
        ax.plot(*cmp[0], "o", color="black", ms=4)
        ax.plot(*cmp[-1], "s", color="black", ms=4)
        if k == 0:
            handles.append(line)
        ax.plot([0.0], [0.0], [0.0], "+", color="0.3", ms=9)
        ax.set_title(frame + "\n(+: geometric centre)")
        ax.set_xlabel("e1 [m]")
        ax.set_ylabel("e2 [m]")
        ax.set_zlabel("e3 [m]")
        equal_3d_scale(ax, np.concatenate([pos.reshape(-1, 3), cmp, np.zeros((1, 3))]
                                           + (rails if k == 0 else [])))
    ax = fig.add_subplot(1, 3, 3)
    ax.set_gid("contact path")
    line, = ax.plot(cp[:, 0], cp[:, 1], color=OPEN_LOOP_COLOR, lw=1.6, label="contact point (below the centre)")
    ax.plot(cp[0, 0], cp[0, 1], "o", color=OPEN_LOOP_COLOR, ms=5)
    ax.plot(cp[-1, 0], cp[-1, 1], "s", color=OPEN_LOOP_COLOR, ms=5)
    handles += [Line2D([], [], color="0.4", lw=0.6, linestyle=(0, (2, 2)), label="rails (body frame)"),
                line, Line2D([], [], marker="o", ls="none", color="0.3", ms=5, label="start"),
                Line2D([], [], marker="s", ls="none", color="0.3", ms=5, label="end")]
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("e1 [m]")
    ax.set_ylabel("e2 [m]")
    ax.set_title("path of the contact point on the floor")
    ax.grid(alpha=0.3)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    if nominal_units is None:
        nominal_units = is_nominal(ball.params)
    note = NOMINAL_NOTE if nominal_units else ""
    head = "\n".join(text for text in (title, note) if text)
    if head:
        fig.suptitle(head)
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
