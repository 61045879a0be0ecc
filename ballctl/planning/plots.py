"""Figures of a planned maneuver and of its closed-loop tracking (matplotlib ``Figure`` objects, no pyplot).

One meaning per colour: black = plan / reference, blue (C0) = re-simulated or closed loop,
orange (C1) = open loop, grey = obstacles (solid edge) and their margin (dashed).
Rails use C0, C1, C2, ... in rail order in the rail panels.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from .ball_plate import PlateMotionPlan
from .follow import PlanTracking
from .maneuver import ManeuverPlan

__all__ = ["plot_plan", "plot_plan_tracking", "plot_plate_plan"]


def _obstacles(ax, plan: ManeuverPlan) -> None:
    margin = plan.problem.clearance_margin_m
    for ob in plan.problem.obstacles:
        ax.add_patch(Circle(ob.center_m, ob.radius_m, facecolor="0.85", edgecolor="0.4"))
        if margin > 0:
            ax.add_patch(Circle(ob.center_m, ob.radius_m + margin, fill=False, edgecolor="0.4", linestyle="--"))


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
    fig = Figure(figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    t = np.linspace(plan.nodes[0], plan.nodes[-1], 40 * (plan.nodes.size - 1) + 1)
    c = plan.contact(t)
    ax = axes[0]
    if c.shape[1] == 2:
        _obstacles(ax, plan)
        ax.plot(c[:, 0], c[:, 1], "k-", lw=2, label="plan")
        if x_resim is not None:
            cr = plan.contact(None) if x_resim is None else x_resim[:, -2:]
            ax.plot(cr[:, 0], cr[:, 1], color="C0", lw=1, label="re-simulated")
        ax.plot(*c[0], "ko", ms=5)
        if plan.problem.target_contact_m is not None:
            ax.plot(*plan.problem.target_contact_m, "kx", ms=9, label="target")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("contact point e1 / m")
        ax.set_ylabel("contact point e2 / m")
        ax.set_title("contact path")
    else:
        ax.plot(t, c[:, 0], "k-", lw=2, label="plan")
        ax.set_xlabel("t / s")
        ax.set_ylabel("contact point travel e1 / m")
    ax.legend(loc="best", fontsize=8, framealpha=0.8)
    x = plan.state(t)
    u = plan.input(t)
    for i in range(n):
        axes[1].plot(t, x[:, i], color=f"C{i}", label=f"theta_{i + 1}")
        input_name = "theta_ddot" if plan.plant.inputs == "acceleration" else "tau"
        axes[2].plot(t, u[:, i], color=f"C{i}", label=f"{input_name}_{i + 1}")
    axes[1].set_xlabel("t / s")
    axes[1].set_ylabel("rail parameter theta / rad (m on segment rails)")
    axes[1].set_title("masses on their rails")
    axes[2].set_xlabel("t / s")
    axes[2].set_ylabel("rail acceleration / (rad/s^2)" if plan.plant.inputs == "acceleration"
                       else "rail force / N (N m on closed rails)")
    axes[2].set_title("inputs")
    for ax in axes[1:]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.suptitle(f"planned maneuver: {plan.nodes.size - 1} Hermite-Simpson intervals, "
                 f"{plan.report.iterations} IPOPT iterations, {plan.report.solve_time_s:.2f} s")
    fig.tight_layout()
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
    fig = Figure(figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    cl, ol = tracking.closed_loop, tracking.open_loop
    _obstacles(axes[0], plan)
    axes[0].plot(cl.x_ref[:, 0], cl.x_ref[:, 1], "k-", lw=2, label="plan (reference)")
    axes[0].plot(cl.x[:, 0], cl.x[:, 1], color="C0", label="closed loop")
    axes[0].plot(ol.x[:, 0], ol.x[:, 1], color="C1", label="open loop")
    axes[0].set_aspect("equal", adjustable="datalim")
    axes[0].set_xlabel("contact point e1 / m")
    axes[0].set_ylabel("contact point e2 / m")
    axes[0].legend(loc="best", fontsize=8, framealpha=0.8)
    axes[1].semilogy(cl.t, np.maximum(tracking.contact_error_m, 1e-12), color="C0", label="closed loop")
    axes[1].semilogy(ol.t, np.maximum(tracking.open_loop_contact_error_m, 1e-12), color="C1", label="open loop")
    axes[1].set_xlabel("t / s")
    axes[1].set_ylabel("contact-point error / m")
    axes[1].legend(loc="best", fontsize=8)
    for i in range(cl.u.shape[1]):
        axes[2].step(cl.t[:len(cl.u)], cl.u[:, i], where="post", color=f"C{i}", label=f"closed loop input {i + 1}")
        axes[2].plot(cl.t[:len(cl.u_ref)], cl.u_ref[:, i], color=f"C{i}", ls=":", lw=1)
    axes[2].set_xlabel("t / s")
    axes[2].set_ylabel("rail input / (rad/s^2)")
    axes[2].set_title("inputs (dotted: plan)")
    axes[2].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.suptitle("plan -> finite-horizon LQR on the rail inputs -> nonlinear ball from a perturbed start")
    fig.tight_layout()
    return fig


def plot_plate_plan(plan: PlateMotionPlan, tracking: PlanTracking | None = None) -> Figure:
    """A ball-plate plan: contact path through the waypoints, plate angles and rates against the rig limits.

    Black = plan, blue (C0) = closed loop (applied commands), grey dashed = the rig's limits,
    grey dotted = the limits the plan used (``1 - limit_margin``); alpha solid, beta dash-dot.

    Parameters
    ----------
    plan : PlateMotionPlan
    tracking : PlanTracking, optional
        A closed-loop run (:func:`~ballctl.ball_plate.plan_tracking.track_plate_plan`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    t = np.linspace(plan.nodes[0], plan.nodes[-1], 40 * (plan.nodes.size - 1) + 1)
    x = plan.state(t)
    wp = plan.problem.waypoints_m
    ax = axes[0]
    ax.plot(x[:, 0], x[:, 1], "k-", lw=2, label="plan")
    if tracking is not None:
        r = tracking.closed_loop
        ax.plot(r.x[:, 0], r.x[:, 1], color="C0", lw=1, label="closed loop")
    ax.plot(wp[:, 0], wp[:, 1], "kx", ms=9, label="waypoints")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("contact point x / m")
    ax.set_ylabel("contact point y / m")
    ax.set_title(f"contact path, {plan.duration_s:.3g} s")
    use = 1.0 - plan.problem.limit_margin
    for ax, k, name, unit, limit, values in (
            (axes[1], 0, "plate angle", "deg", plan.limits.max_angle, np.rad2deg(x[:, 4:6])),
            (axes[2], 1, "plate rate", "deg/s", plan.limits.max_rate, np.rad2deg(plan.plate_rates(t)))):
        for j, (label, style) in enumerate((("alpha", "-"), ("beta", "-."))):
            ax.plot(t, values[:, j], color="k", linestyle=style, lw=1.5, label=f"plan {label}")
        if tracking is not None:
            r = tracking.closed_loop
            applied = np.rad2deg(r.u) if k == 0 else np.rad2deg(np.diff(r.u, axis=0) / tracking.controller.dt)
            ta = r.t if k == 0 else r.t[:-1]
            for j, style in enumerate(("-", "-.")):
                ax.step(ta, applied[:, j], where="post", color="C0", linestyle=style, lw=0.8,
                        label="closed loop" if j == 0 else None)
        if limit is not None:
            for sign in (-1, 1):
                ax.axhline(sign * np.rad2deg(limit), color="0.5", linestyle="--", lw=1,
                           label="rig limit" if sign > 0 else None)
                ax.axhline(sign * use * np.rad2deg(limit), color="0.5", linestyle=":", lw=1,
                           label="planned limit" if sign > 0 else None)
        ax.set_xlabel("time / s")
        ax.set_ylabel(f"{name} / {unit}")
        ax.set_title(name)
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), frameon=False)
    fig.subplots_adjust(bottom=0.24, wspace=0.3)
    return fig
