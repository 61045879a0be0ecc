"""Plan a maneuver of the rolling ball around obstacles, then track it with the LQR
================================================================================

The paper's ball (Putkaradze & Rogers 2018, section 7: three unit masses on tilted circular rails,
g = 1) starts at rest at the origin and must come to rest at (0, 4) m after 10 s, keeping its
contact point 5 cm clear of two circular obstacles, with the rails limited to 2 rad/s and
2 rad/s^2. The rail accelerations minimizing ``int |u|^2 dt`` are found by Hermite-Simpson
collocation and IPOPT (CasADi: ``pip install ballctl[optimal]``), re-simulated on the nonlinear
ball, and tracked from a perturbed start by the finite-horizon LQR on the rail accelerations.

Usage::

    python examples/plan_maneuver.py [OUT_DIR] [--intervals 60]

Writes ``plan.png`` and ``plan_tracking.png`` to ``OUT_DIR`` (default ``out/plan_maneuver``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ballctl.planning import (
    CircularObstacle,
    ManeuverProblem,
    PlanAccuracy,
    plan_maneuver,
    resimulate,
    track_plan,
)
from ballctl.planning.plots import plot_plan, plot_plan_tracking
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rolling_ball import RollingBall
from ballctl.figures.plotting import save_figure

__all__ = ["main", "run"]


def run(out: Path, *, intervals: int = 50, tolerance: float = 1e-6, closed_loop: bool = True) -> dict:
    """Plan, re-simulate, track and plot; return the key numbers."""
    ball = RollingBall(paper_ball_parameters())
    problem = ManeuverProblem(
        initial_state=paper_ball_initial_state(), duration_s=10.0,
        target_contact_m=[0.0, 4.0], rest_at_end=True,
        obstacles=(CircularObstacle(center_m=[0.25, 1.2], radius_m=0.4),
                   CircularObstacle(center_m=[-0.25, 2.6], radius_m=0.4)),
        clearance_margin_m=0.05, max_rail_speed=2.0, max_rail_acceleration=2.0)
    # search the branches (sides of the obstacles, windings of the masses), then halve the mesh until the
    # plan's replay and its cost-error estimate meet the tolerance
    plan = plan_maneuver(ball, problem, intervals=intervals, accuracy=PlanAccuracy(tolerance=tolerance))
    plan.raise_if_failed()

    t, x = resimulate(plan, np.linspace(0.0, 10.0, 40 * (plan.nodes.size - 1) + 1))
    contact = x[:, -2:]
    numbers = {
        "solve_time_s": plan.report.solve_time_s,
        "iterations": plan.report.iterations,
        "max_constraint_violation": plan.report.max_constraint_violation,
        "resimulation_error_m": float(np.linalg.norm(plan.contact(t) - contact, axis=1).max()),
        "min_obstacle_clearance_m": min(float(ob.clearance(contact).min()) for ob in problem.obstacles),
        "branches_found": len({row.branch for row in plan.branches if row.converged}),
        "cost": plan.report.objective,
        "estimated_relative_cost_error": plan.accuracy.relative_cost_error,
        "final_intervals": plan.nodes.size - 1,
    }
    save_figure(plot_plan(plan, t, x), out / "plan.png")
    if closed_loop:
        tracking = track_plan(plan, dt=0.1, contact_offset_m=(0.05, -0.05), angle_offset_rad=0.1)
        numbers["closed_loop_initial_error_m"] = float(tracking.contact_error_m[0])
        numbers["closed_loop_final_error_m"] = float(tracking.contact_error_m[-1])
        numbers["open_loop_final_error_m"] = float(tracking.open_loop_contact_error_m[-1])
        save_figure(plot_plan_tracking(plan, tracking), out / "plan_tracking.png")
    return numbers


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("out", nargs="?", default="out/plan_maneuver", help="output folder")
    parser.add_argument("--intervals", type=int, default=50, help="first collocation mesh (default 50)")
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="relative accuracy the plan must meet (default 1e-6)")
    parser.add_argument("--no-closed-loop", action="store_true", help="skip the LQR tracking run")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for key, value in run(out, intervals=args.intervals, tolerance=args.tolerance,
                          closed_loop=not args.no_closed_loop).items():
        print(f"{key:>32}: {value:.4g}")
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    main()
