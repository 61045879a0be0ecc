"""``ballctl plan``: optimal maneuver of the internal-mass ball (trajectory optimization, issue 13).

Without a problem file it plans the built-in maneuver: the paper's 3-mass ball (Putkaradze & Rogers
2018, section 7) rolls from rest at the origin to rest at (0, 4) m in 10 s around two obstacles,
with rail speed and acceleration limits, on 100 Hermite-Simpson intervals. A TOML problem file
overrides any of it (see :data:`DEFAULT_PROBLEM` for every key; unknown keys are errors)::

    [maneuver]
    duration_s = 10.0
    target_contact_m = [0.0, 4.0]
    # target_heading_rad = 0.5   # optional: the heading at the end (rad)
    rest_at_end = true
    clearance_margin_m = 0.05
    max_rail_speed = 2.0          # rad/s
    max_rail_acceleration = 2.0   # rad/s^2
    [[obstacles]]
    center_m = [0.25, 1.2]
    radius_m = 0.4
    [solver]
    intervals = 100
    [closed_loop]
    enabled = true
    dt_s = 0.1
    contact_offset_m = [0.05, -0.05]

Writes ``plan.json`` (converged, solve_time_s, iterations, max_constraint_violation,
dual_infeasibility, resimulation_error_m, min_obstacle_clearance_m, closed-loop errors),
``plan.npz`` (t, x, u on the collocation points) and the figures ``plan.png`` and
``plan_tracking.png``; exits with status 1 when the solve did not converge.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

from .._errors import ConfigError
from .._io import atomic_path, atomic_write_text

__all__ = ["DEFAULT_PROBLEM", "HELP", "NAME", "add_arguments", "load_problem", "run"]

NAME = "plan"
HELP = "optimal maneuver of the internal-mass ball around obstacles (CasADi + IPOPT; extra 'optimal')"

#: The built-in maneuver; a TOML problem file overrides any of these keys.
DEFAULT_PROBLEM = {
    "plant": {"preset": "paper_ball", "initial_state": None},
    "maneuver": {"duration_s": 10.0, "target_contact_m": [0.0, 4.0], "final_velocity_mps": None,
                 "target_heading_rad": None, "rest_at_end": True, "effort_weight": 1.0, "clearance_margin_m": 0.05,
                 "max_rail_speed": 2.0, "max_rail_acceleration": 2.0},
    "obstacles": [{"center_m": [0.25, 1.2], "radius_m": 0.4}, {"center_m": [-0.25, 2.6], "radius_m": 0.4}],
    "solver": {"intervals": 100, "obstacle_continuation": [0.25, 0.5, 0.75, 1.0], "refine_tolerance": None},
    "closed_loop": {"enabled": True, "dt_s": 0.1, "contact_offset_m": [0.05, -0.05], "angle_offset_rad": 0.1},
}


def load_problem(path: str | None) -> dict:
    """The built-in problem updated by a TOML file; unknown tables or keys raise ``ValueError``.

    Parameters
    ----------
    path : str or None
        TOML problem file; ``None`` returns :data:`DEFAULT_PROBLEM`.

    Returns
    -------
    dict
    """
    problem = copy.deepcopy(DEFAULT_PROBLEM)
    if path is None:
        return problem
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read problem file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"problem file {path} is not valid TOML: {exc}") from exc
    for table, values in data.items():
        if table not in problem:
            raise ConfigError(f"unknown table [{table}] in {path}; known: {sorted(problem)}")
        if table == "obstacles":
            if not isinstance(values, list):
                raise ConfigError(f"obstacles in {path} must be an array of tables [[obstacles]]")
            for k, ob in enumerate(values):
                extra = set(ob) - {"center_m", "radius_m"}
                if extra:
                    raise ConfigError(f"unknown key(s) {sorted(extra)} in obstacle {k} of {path}")
            problem["obstacles"] = values
            continue
        for key, value in values.items():
            if key not in problem[table]:
                raise ConfigError(f"unknown key {key!r} in [{table}] of {path}; known: {sorted(problem[table])}")
            problem[table][key] = value
    return problem


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    p.add_argument("problem", nargs="?", default=None, help="TOML problem file (default: the built-in maneuver)")
    p.add_argument("--intervals", type=int, default=None, help="mesh intervals (overrides [solver] intervals)")
    p.add_argument("--no-closed-loop", action="store_true", help="skip the LQR closed-loop run")
    p.add_argument("--out", default="ballctl_plan", help="output folder (default ballctl_plan)")


def _plant(spec: dict):
    from ..plants.paper import paper_ball_initial_state, paper_ball_parameters
    from ..plants.rolling_ball import RollingBall
    if spec["preset"] != "paper_ball":
        raise ConfigError(f"[plant] preset must be 'paper_ball', got {spec['preset']!r}")
    x0 = paper_ball_initial_state() if spec["initial_state"] is None else np.asarray(spec["initial_state"], float)
    return RollingBall(paper_ball_parameters()), x0


def run(args: argparse.Namespace) -> int:
    """Plan, re-simulate, track in closed loop, write plan.json, plan.npz and figures.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0 when the plan converged, 1 otherwise.
    """
    from ..planning import (
        CircularObstacle,
        ManeuverProblem,
        plan_maneuver,
        refine_plan,
        resimulate,
        track_plan,
    )
    from ..planning.plots import plot_plan, plot_plan_tracking
    from ..plotting import save_figure

    spec = load_problem(args.problem)
    if args.intervals is not None:
        spec["solver"]["intervals"] = args.intervals
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ball, x0 = _plant(spec["plant"])
    m = spec["maneuver"]
    problem = ManeuverProblem(
        initial_state=x0, duration_s=m["duration_s"], target_contact_m=m["target_contact_m"],
        final_velocity_mps=m["final_velocity_mps"], target_heading_rad=m["target_heading_rad"],
        rest_at_end=bool(m["rest_at_end"]),
        effort_weight=m["effort_weight"], clearance_margin_m=m["clearance_margin_m"],
        max_rail_speed=m["max_rail_speed"], max_rail_acceleration=m["max_rail_acceleration"],
        obstacles=tuple(CircularObstacle(center_m=o["center_m"], radius_m=o["radius_m"]) for o in spec["obstacles"]))
    s = spec["solver"]
    print(f"[1/4] planning on {s['intervals']} Hermite-Simpson intervals (IPOPT via CasADi)", file=sys.stderr)
    plan = plan_maneuver(ball, problem, intervals=s["intervals"], obstacle_continuation=s["obstacle_continuation"])
    mesh = [plan.nodes.size - 1]
    if plan.converged and s["refine_tolerance"] is not None:
        plan, sizes = refine_plan(ball, problem, plan, tolerance=float(s["refine_tolerance"]))
        mesh = list(sizes)
    r = plan.report
    print(f"      {r.message}; {r.solve_time_s:.2f} s in IPOPT", file=sys.stderr)
    print("[2/4] re-simulating the planned inputs (DOP853, rtol = atol = 1e-12)", file=sys.stderr)
    t_dense = np.linspace(0.0, problem.duration_s, 40 * (plan.nodes.size - 1) + 1)
    t_r, x_r = resimulate(plan, t_dense)
    contact_r = x_r[:, -2:]
    resim_err = float(np.linalg.norm(plan.contact(t_r) - contact_r, axis=1).max())
    clearance = (min(float(ob.clearance(contact_r).min()) for ob in problem.obstacles)
                 if problem.obstacles else None)
    target_err = float(np.linalg.norm(contact_r[-1] - problem.target_contact_m)) \
        if problem.target_contact_m is not None else None
    summary = {
        "converged": bool(r.converged), "status": r.status, "message": r.message,
        "solve_time_s": r.solve_time_s, "build_time_s": r.build_time_s, "iterations": r.iterations,
        "stage_iterations": list(r.stage_iterations), "objective": r.objective,
        "max_constraint_violation": r.max_constraint_violation, "dual_infeasibility": r.dual_infeasibility,
        "quaternion_norm_error": r.quaternion_norm_error, "intervals": mesh,
        "n_variables": r.n_variables, "n_constraints": r.n_constraints,
        "resimulation_error_m": resim_err, "min_obstacle_clearance_m": clearance,
        "clearance_margin_m": problem.clearance_margin_m, "resimulated_target_error_m": target_err,
        "obstacle_backoff_m": plan.obstacle_backoff_m,
        "max_rail_speed_used": float(np.abs(plan.x[:, 3:6]).max()),
        "max_rail_acceleration_used": float(np.abs(plan.u).max()),
    }
    save_figure(plot_plan(plan, t_r, x_r), out / "plan.png")
    c = spec["closed_loop"]
    if plan.converged and c["enabled"] and not args.no_closed_loop:
        print(f"[3/4] closed loop: finite-horizon LQR at dt = {c['dt_s']} s from a perturbed start", file=sys.stderr)
        tr = track_plan(plan, dt=float(c["dt_s"]), contact_offset_m=c["contact_offset_m"],
                        angle_offset_rad=float(c["angle_offset_rad"]))
        e, eo = tr.contact_error_m, tr.open_loop_contact_error_m
        summary["closed_loop"] = {
            "dt_s": float(c["dt_s"]), "initial_contact_error_m": float(e[0]),
            "max_contact_error_m": float(e.max()), "final_contact_error_m": float(e[-1]),
            "open_loop_final_contact_error_m": float(eo[-1]),
            "max_constraint_residual": float(tr.closed_loop.summary().max_constraint_residual)}
        save_figure(plot_plan_tracking(plan, tr), out / "plan_tracking.png")
    print("[4/4] writing plan.json, plan.npz and figures", file=sys.stderr)
    with atomic_path(out / "plan.npz") as tmp:
        np.savez(tmp, t_s=plan.t, x=plan.x, u=plan.u, nodes_s=plan.nodes)
    atomic_write_text(out / "plan.json", json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("converged", "solve_time_s", "iterations", "max_constraint_violation",
                                              "resimulation_error_m", "min_obstacle_clearance_m")}))
    return 0 if r.converged else 1
