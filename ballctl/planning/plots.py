"""Figures of a planned maneuver and of its closed-loop tracking (matplotlib ``Figure`` objects, no pyplot).

One meaning per colour, as in :mod:`ballctl.figures.plotting`: black = plan / reference,
blue = re-simulated or closed loop, orange = open loop, grey = obstacles (solid edge) and their
margin (dashed), dark-red dash-dot = the rig's limits. Rails (and their masses and inputs) have
colours of their own, in rail order (:data:`RAIL_COLORS`: green, purple, vermillion, sky blue, yellow),
none of them a run's. A signal has one name with its unit everywhere, e.g. "rail 1 acceleration
[rad/s²]" (the rail's parameter is an angle on closed rails, a length in m on segment rails), and
every legend is below the panels.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle

from ..figures.plotting import LIMIT_STYLE, RUN_COLORS
from .ball_plate import PlateMotionPlan
from .follow import PlanTracking
from .maneuver import ManeuverPlan

__all__ = ["RAIL_COLORS", "rail_signal_names", "plot_plan", "plot_plan_tracking", "plot_plate_plan"]

#: Colours of the rails, in rail order (none of them a run's colour).
RAIL_COLORS = ("#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
_PLAN = {"color": "black", "lw": 2.0}
_CLOSED = RUN_COLORS[0]
_OPEN = RUN_COLORS[1]


def _rail_color(i: int) -> str:
    return RAIL_COLORS[i % len(RAIL_COLORS)]


def _rail_units(plant) -> list[str]:
    """Unit of each rail's parameter: m on a straight segment, rad on the others."""
    from ..plants.rails import SegmentRail

    return ["m" if isinstance(pm.rail, SegmentRail) else "rad" for pm in plant.params.point_masses]


def rail_signal_names(plant) -> dict[str, list[str]]:
    """The one name (with its unit) of each rail's position and input, as every plan figure writes it.

    Parameters
    ----------
    plant : RollingBall or RollingDisk

    Returns
    -------
    dict
        ``"position"``: e.g. ``"rail 1 position [rad]"``; ``"input"``: ``"rail 1 acceleration [rad/s²]"``
        (``inputs == "acceleration"``) or ``"rail 1 force [N m]"`` (generalized force: N m on a closed
        rail, N on a segment); ``"input_axis"``: the axis label of the input panel.
    """
    units = _rail_units(plant)
    accel = plant.inputs == "acceleration"
    inputs = [f"rail {i + 1} acceleration [{u}/s²]" if accel else f"rail {i + 1} force [{'N' if u == 'm' else 'N m'}]"
              for i, u in enumerate(units)]
    if accel:
        axis = "rail acceleration [" + " or ".join(sorted({f"{u}/s²" for u in units})) + "]"
    else:
        axis = "rail force [" + " or ".join(sorted({"N" if u == "m" else "N m" for u in units})) + "]"
    return {"position": [f"rail {i + 1} position [{u}]" for i, u in enumerate(units)], "input": inputs,
            "input_axis": axis,
            "position_axis": "rail position [" + " or ".join(sorted(set(units))) + "]"}


def _obstacles(ax, plan: ManeuverPlan) -> list:
    margin = plan.problem.clearance_margin_m
    handles = []
    for ob in plan.problem.obstacles:
        ax.add_patch(Circle(ob.center_m, ob.radius_m, facecolor="0.85", edgecolor="0.4"))
        if margin > 0:
            ax.add_patch(Circle(ob.center_m, ob.radius_m + margin, fill=False, edgecolor="0.4", linestyle="--"))
    if plan.problem.obstacles:
        handles.append(Line2D([], [], marker="o", ms=10, ls="none", markerfacecolor="0.85", markeredgecolor="0.4",
                              label="obstacle"))
        if margin > 0:
            handles.append(Line2D([], [], color="0.4", ls="--", label=f"clearance margin {margin:g} m"))
    return handles


def _figure_legend(fig: Figure, axes, extra=()) -> None:
    """One legend below the panels, from every panel's labelled artists (each label once)."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    for h in extra:
        if h.get_label() not in labels:
            handles.append(h)
            labels.append(h.get_label())
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), frameon=False)


def plot_plan(plan: ManeuverPlan, t_resim=None, x_resim=None) -> Figure:
    """Contact path with obstacles, mass motions on their rails, and inputs.

    Parameters
    ----------
    plan : ManeuverPlan
    t_resim : ndarray, shape (K,), optional
        Times (s) of a re-simulation (:func:`~ballctl.planning.maneuver.resimulate`).
    x_resim : ndarray, shape (K, n_x), optional
        Its states.

    Returns
    -------
    matplotlib.figure.Figure
    """
    n = plan.plant.n_masses
    names = rail_signal_names(plan.plant)
    fig = Figure(figsize=(15, 5.0), layout="constrained")
    axes = fig.subplots(1, 3)
    t = np.linspace(plan.nodes[0], plan.nodes[-1], 40 * (plan.nodes.size - 1) + 1)
    c = plan.contact(t)
    ax = axes[0]
    extra = []
    if c.shape[1] == 2:
        extra = _obstacles(ax, plan)
        ax.plot(c[:, 0], c[:, 1], **_PLAN, label="plan")
        if x_resim is not None:
            cr = x_resim[:, -2:]
            ax.plot(cr[:, 0], cr[:, 1], color=_CLOSED, lw=1, label="re-simulated")
        ax.plot(*c[0], "ko", ms=5, label="start")
        if plan.problem.target_contact_m is not None:
            ax.plot(*plan.problem.target_contact_m, "kx", ms=9, label="target")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("contact point e1 [m]")
        ax.set_ylabel("contact point e2 [m]")
        ax.set_title("contact path")
    else:
        ax.plot(t, c[:, 0], **_PLAN, label="plan")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("contact point travel e1 [m]")
        ax.set_title("contact point travel")
    x = plan.state(t)
    u = plan.input(t)
    for i in range(n):
        axes[1].plot(t, x[:, i], color=_rail_color(i), label=names["position"][i])
        axes[2].plot(t, u[:, i], color=_rail_color(i), label=names["input"][i])
    axes[1].set_xlabel("time [s]")
    axes[1].set_ylabel(names["position_axis"])
    axes[1].set_title("masses on their rails (plan)")
    axes[2].set_xlabel("time [s]")
    axes[2].set_ylabel(names["input_axis"])
    axes[2].set_title("inputs (plan)")
    for ax in axes:
        ax.grid(alpha=0.3)
    _figure_legend(fig, axes, extra)
    fig.suptitle(f"planned maneuver: {plan.nodes.size - 1} Hermite-Simpson intervals, "
                 f"{plan.report.iterations} IPOPT iterations, {plan.report.solve_time_s:.2f} s")
    return fig


def plot_plan_tracking(plan: ManeuverPlan, tracking) -> Figure:
    """Closed- and open-loop runs from a perturbed start against the plan.

    Parameters
    ----------
    plan : ManeuverPlan
    tracking : PlanTracking
        From :func:`~ballctl.planning.follow.track_plan`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = rail_signal_names(plan.plant)
    fig = Figure(figsize=(15, 5.0), layout="constrained")
    axes = fig.subplots(1, 3)
    cl, ol = tracking.closed_loop, tracking.open_loop
    extra = _obstacles(axes[0], plan)
    axes[0].plot(cl.x[:, 0], cl.x[:, 1], color=_CLOSED, lw=1.6, label="closed loop")
    if ol is not None:
        axes[0].plot(ol.x[:, 0], ol.x[:, 1], color=_OPEN, lw=1.6, label="open loop")
    axes[0].plot(cl.x_ref[:, 0], cl.x_ref[:, 1], color="black", ls=(0, (5, 3)), lw=1.4, zorder=10,
                 label="plan (reference)")
    axes[0].set_aspect("equal", adjustable="datalim")
    axes[0].set_xlabel("contact point e1 [m]")
    axes[0].set_ylabel("contact point e2 [m]")
    axes[0].set_title("contact path")
    zeros = []
    for err, t, color, label in ((tracking.contact_error_m, cl.t, _CLOSED, "closed loop"),
                                 (tracking.open_loop_contact_error_m, None if ol is None else ol.t, _OPEN,
                                  "open loop")):
        if err is None or t is None:
            continue
        err = np.asarray(err, dtype=float)
        bad = ~(np.isfinite(err) & (err > 0))
        axes[1].semilogy(t, np.where(bad, np.nan, err), color=color, label=label)
        if bad.any():
            zeros.append(f"{label}: {int(bad.sum())}")
    axes[1].set_xlabel("time [s]")
    axes[1].set_ylabel("contact-point distance to the plan [m]")
    axes[1].set_title("tracking error" + (f"\n(samples not drawn, exactly zero: {', '.join(zeros)})" if zeros
                                          else ""))
    for i in range(cl.u.shape[1]):
        axes[2].step(cl.t[:len(cl.u)], cl.u[:, i], where="post", color=_rail_color(i), lw=1.4,
                     label=names["input"][i])
        axes[2].plot(cl.t[:len(cl.u_ref)], cl.u_ref[:, i], color=_rail_color(i), ls=":", lw=1.2)
    axes[2].set_xlabel("time [s]")
    axes[2].set_ylabel(names["input_axis"])
    axes[2].set_title("inputs: closed loop (steps), plan (dotted)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    style = [Line2D([], [], color="0.3", lw=1.4, drawstyle="steps-post", label="steps: closed-loop input"),
             Line2D([], [], color="0.3", lw=1.2, ls=":", label="dotted: planned input (open loop applies it)")]
    _figure_legend(fig, axes, extra + style)
    fig.suptitle("plan -> finite-horizon LQR on the rail inputs -> nonlinear ball from a perturbed start")
    return fig


def plot_plate_plan(plan: PlateMotionPlan, tracking: PlanTracking | None = None) -> Figure:
    """A ball-plate plan: contact path through the waypoints, plate angles and rates against the rig limits.

    Black = plan, blue = closed loop (its path, and its applied commands as steps), dark-red
    dash-dot = the rig's limits, dark-red dotted = the limits the plan used (``1 - limit_margin``);
    tilt about x solid, about y dash-dot.

    Parameters
    ----------
    plan : PlateMotionPlan
    tracking : PlanTracking, optional
        A closed-loop run (:func:`~ballctl.ball_plate.plan_tracking.track_plate_plan`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(15, 5.0), layout="constrained")
    axes = fig.subplots(1, 3)
    t = np.linspace(plan.nodes[0], plan.nodes[-1], 40 * (plan.nodes.size - 1) + 1)
    x = plan.state(t)
    wp = plan.problem.waypoints_m
    ax = axes[0]
    if tracking is not None:
        r = tracking.closed_loop
        ax.plot(r.x[:, 0], r.x[:, 1], color=_CLOSED, lw=1, label="closed loop")
    ax.plot(x[:, 0], x[:, 1], **_PLAN, label="plan")
    ax.plot(wp[:, 0], wp[:, 1], "kx", ms=9, label="waypoints")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact point x [m]")
    ax.set_ylabel("contact point y [m]")
    ax.set_title(f"contact path, {plan.duration_s:.3g} s")
    use = 1.0 - plan.problem.limit_margin
    planned = {**LIMIT_STYLE, "linestyle": ":"}
    for ax, k, name, unit, limit, values in (
            (axes[1], 0, "plate tilt", "deg", plan.limits.max_angle, np.rad2deg(x[:, 4:6])),
            (axes[2], 1, "plate tilt rate", "deg/s", plan.limits.max_rate, np.rad2deg(plan.plate_rates(t)))):
        for j, (about, style) in enumerate((("about x (α)", "-"), ("about y (β)", "-."))):
            ax.plot(t, values[:, j], color="k", linestyle=style, lw=1.5, label=f"plan, {about}")
        if tracking is not None:
            r = tracking.closed_loop
            applied = np.rad2deg(r.u) if k == 0 else np.rad2deg(np.diff(r.u, axis=0) / tracking.controller.dt)
            ta = r.t if k == 0 else r.t[:-1]
            for j, style in enumerate(("-", "-.")):
                ax.step(ta, applied[:, j], where="post", color=_CLOSED, linestyle=style, lw=0.8,
                        label="closed loop" if j == 0 else None)
        if limit is not None:
            for sign in (-1, 1):
                ax.axhline(sign * np.rad2deg(limit), **LIMIT_STYLE, label="rig limit" if sign > 0 else None)
                ax.axhline(sign * use * np.rad2deg(limit), **planned,
                           label=f"limit the plan used ({100 * use:g} %)" if sign > 0 else None)
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"{name} [{unit}]")
        ax.set_title(f"{name} about x (solid) and y (dash-dot)")
    for ax in axes:
        ax.grid(alpha=0.3)
    _figure_legend(fig, axes)
    return fig
