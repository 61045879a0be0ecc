"""``ballctl plan``: optimal maneuver of the internal-mass ball (trajectory optimization, issue 13).

Without a problem file it plans the built-in maneuver: the paper's 3-mass ball (Putkaradze & Rogers
2018, section 7) rolls from rest at the origin to rest at (0, 4) m in 10 s around two obstacles,
with rail speed and acceleration limits. The planner searches the branches (obstacle sides, windings
of the masses) on a coarse mesh, solves the cheapest on 50 Hermite-Simpson intervals and halves them
until the plan meets a relative accuracy of 1e-6 (its replay and the cost's error estimate), and
checks the second-order conditions. A TOML problem file overrides any of it (see
:data:`DEFAULT_PROBLEM` for every key; unknown keys are errors). ``[plant]`` describes any ball or
disk (:mod:`ballctl.plants.description`: ``kind``, ``radius_m``, ``mass_kg``, ``inertia_kgm2``,
``[[plant.masses]]`` with their rails; default ``preset = "paper_ball"``)::

    [plant]
    kind = "ball"
    radius_m = 0.15
    mass_kg = 0.8
    inertia_kgm2 = 0.006
    [[plant.masses]]
    mass_kg = 0.3
    rail = "circle"
    radius_m = 0.12
    normal = [0, 0, 1]

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
    intervals = 50                # the first full mesh; halved until accuracy_tolerance is met
    accuracy_tolerance = 1e-6     # relative; max_intervals = 400 caps the halving
    branch_search = true          # false: the straight seed's nearest optimum
    [branch]                      # optional: ask for one family
    obstacle_sides = ["right", "right"]   # per obstacle: "left" (on the ball's left) or "right"
    # rail_turns = [0, -1, 0]     # per mass: whole turns of its travel
    [closed_loop]
    enabled = true
    dt_s = 0.1
    contact_offset_m = [0.05, -0.05]
    replan_every = 5              # receding horizon beside the LQR: re-plan every 5 steps (0: off)

A problem file with a ``[ball_plate]`` table (or ``--ball-plate`` for the built-in one,
:data:`DEFAULT_BALL_PLATE_PROBLEM`) plans a limit-aware ball-plate reference instead: minimum time
(or least plate slew in ``duration_s``) through waypoints within a rig's tilt and slew limits,
tracked by the LQR on the nonlinear plant with the rig's limits::

    [ball_plate]
    rig = "tabletop"              # preset whose limits, ball and dt apply
    model = "quasi-static"        # or "servo-plate": plan on the rig's exact servo plate
    waypoints_m = [[0.0, 0.0], [0.15, 0.05], [0.2, 0.2], [0.0, 0.25]]
    objective = "time"            # or "effort" with duration_s
    limit_margin = 0.2            # fraction of the limits kept for feedback
    max_tilt_deg = 15.0           # optional: override the rig's limits
    max_plate_acceleration_deg_s2 = 570.0   # optional: bound the plate acceleration (servo torque)
    [solver]
    intervals = 16                # per leg
    [closed_loop]
    enabled = true
    contact_offset_m = [0.01, -0.01]
    hold_s = 1.0
    truth = false                 # true: exact inversion on the rig's servo plate, "exact" design, truth plant

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
import warnings
from pathlib import Path

import numpy as np

from .._errors import ConfigError
from .._io import atomic_directory, check_output_folder
from ._common import integer

__all__ = ["DEFAULT_BALL_PLATE_PROBLEM", "DEFAULT_PROBLEM", "HELP", "NAME", "add_arguments", "load_problem", "run"]

NAME = "plan"
HELP = ("optimal maneuver of the internal-mass ball around obstacles, or a limit-aware ball-plate reference "
        "(CasADi + IPOPT; extra 'optimal')")

#: The built-in maneuver; a TOML problem file overrides any of these keys.
DEFAULT_PROBLEM = {
    "plant": {"preset": "paper_ball"},
    "maneuver": {"duration_s": 10.0, "target_contact_m": [0.0, 4.0], "final_velocity_mps": None,
                 "target_heading_rad": None, "rest_at_end": True, "effort_weight": 1.0, "clearance_margin_m": 0.05,
                 "max_rail_speed": 2.0, "max_rail_acceleration": 2.0, "friction_coefficient": None,
                 "min_normal_force_N": None},
    "obstacles": [{"center_m": [0.25, 1.2], "radius_m": 0.4}, {"center_m": [-0.25, 2.6], "radius_m": 0.4}],
    "solver": {"intervals": 50, "obstacle_continuation": [0.25, 0.5, 0.75, 1.0], "accuracy_tolerance": 1e-6,
               "max_intervals": 400, "branch_search": True},
    "branch": {"rail_turns": None, "obstacle_sides": None},
    "closed_loop": {"enabled": True, "dt_s": 0.1, "contact_offset_m": [0.05, -0.05], "angle_offset_rad": 0.1,
                    "replan_every": 5},
}


#: The built-in ball-plate problem (``--ball-plate``); a file with a ``[ball_plate]`` table overrides its keys.
DEFAULT_BALL_PLATE_PROBLEM = {
    "ball_plate": {"rig": "tabletop", "model": "quasi-static",
                   "waypoints_m": [[0.0, 0.0], [0.15, 0.05], [0.2, 0.2], [0.0, 0.25]],
                   "objective": "time", "duration_s": None, "limit_margin": 0.2, "corridor_m": None,
                   "final_velocity_mps": [0.0, 0.0], "level_at_end": True, "max_tilt_deg": None,
                   "max_rate_deg_s": None, "max_plate_acceleration_deg_s2": None, "friction_coefficient": None,
                   "min_normal_force_N": None},
    "solver": {"intervals": 16},
    "closed_loop": {"enabled": True, "contact_offset_m": [0.01, -0.01], "hold_s": 1.0, "truth": False},
}


def _read_toml(path: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read problem file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"problem file {path} is not valid TOML: {exc}") from exc


def load_ball_plate_problem(path: str | None) -> dict:
    """The built-in ball-plate problem updated by a TOML file; unknown tables or keys raise ``ConfigError``.

    Parameters
    ----------
    path : str or None
        TOML problem file with a ``[ball_plate]`` table; ``None`` returns :data:`DEFAULT_BALL_PLATE_PROBLEM`.

    Returns
    -------
    dict
    """
    problem = copy.deepcopy(DEFAULT_BALL_PLATE_PROBLEM)
    if path is None:
        return problem
    for table, values in _read_toml(path).items():
        if table not in problem or not isinstance(values, dict):
            raise ConfigError(f"unknown table [{table}] in ball-plate problem {path}; known: {sorted(problem)}")
        for key, value in values.items():
            if key not in problem[table]:
                raise ConfigError(f"unknown key {key!r} in [{table}] of {path}; known: {sorted(problem[table])}")
            problem[table][key] = value
    return problem


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
    data = _read_toml(path)
    for table, values in data.items():
        if table not in problem:
            raise ConfigError(f"unknown table [{table}] in {path}; known: {sorted(problem)}")
        if table == "plant":
            if not isinstance(values, dict):
                raise ConfigError(f"[plant] in {path} must be a table")
            problem["plant"] = values      # checked whole by ballctl.plants.description
            continue
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
    p.add_argument("--intervals", type=integer(low=2), default=None,
                   help="mesh intervals, at least 2 (overrides [solver] intervals; per leg for a ball-plate plan)")
    p.add_argument("--no-closed-loop", action="store_true", help="skip the LQR closed-loop run")
    p.add_argument("--ball-plate", action="store_true",
                   help="plan the built-in limit-aware ball-plate reference (a file with [ball_plate] implies it)")
    p.add_argument("--out", default="ballctl_plan", help="output folder (default ballctl_plan)")


def _plant(spec: dict):
    """The plant and start of the ``[plant]`` table (:func:`ballctl.plants.description.rolling_plant_from_mapping`)."""
    from ..plants.description import rolling_plant_from_mapping
    return rolling_plant_from_mapping(spec)


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
        ManeuverBranch,
        ManeuverNLP,
        PlanAccuracy,
        plan_maneuver,
        resimulate,
        track_plan,
        track_receding,
    )
    from ..plants.description import plant_to_mapping
    from ..plants.rolling_ball import RollingBall
    from ..planning.plots import plot_plan, plot_plan_tracking

    if getattr(args, "ball_plate", False) or (args.problem is not None and "ball_plate" in _read_toml(args.problem)):
        return _run_ball_plate(args)
    spec = load_problem(args.problem)
    if args.intervals is not None:
        spec["solver"]["intervals"] = args.intervals
    out = check_output_folder(args.out, "--out", own_names=OUTPUT_NAMES)
    figures = {}
    ball, x0 = _plant(spec["plant"])
    m = spec["maneuver"]
    problem = ManeuverProblem(
        initial_state=x0, duration_s=m["duration_s"], target_contact_m=m["target_contact_m"],
        final_velocity_mps=m["final_velocity_mps"], target_heading_rad=m["target_heading_rad"],
        rest_at_end=bool(m["rest_at_end"]),
        effort_weight=m["effort_weight"], clearance_margin_m=m["clearance_margin_m"],
        max_rail_speed=m["max_rail_speed"], max_rail_acceleration=m["max_rail_acceleration"],
        friction_coefficient=m["friction_coefficient"], min_normal_force_N=m["min_normal_force_N"],
        obstacles=tuple(CircularObstacle(center_m=o["center_m"], radius_m=o["radius_m"]) for o in spec["obstacles"]))
    s = spec["solver"]
    br = spec["branch"]
    if br["rail_turns"] is not None or br["obstacle_sides"] is not None:
        branch = ManeuverBranch(rail_turns=br["rail_turns"], obstacle_sides=br["obstacle_sides"])
    else:
        branch = "search" if s["branch_search"] else None
    accuracy = None if s["accuracy_tolerance"] is None else \
        PlanAccuracy(tolerance=float(s["accuracy_tolerance"]), max_intervals=int(s["max_intervals"]))
    first = "branch search on a coarse mesh, then " if branch == "search" else ""
    print(f"[1/4] planning: {first}{s['intervals']} Hermite-Simpson intervals halved until the accuracy "
          f"{s['accuracy_tolerance']} is met (IPOPT via CasADi)", file=sys.stderr)
    plan = plan_maneuver(ball, problem, intervals=s["intervals"], obstacle_continuation=s["obstacle_continuation"],
                         branch=branch, accuracy=accuracy)
    r = plan.report
    print(f"      {r.message}; {r.solve_time_s:.2f} s in IPOPT", file=sys.stderr)
    print("[2/4] re-simulating the planned inputs (DOP853, rtol = atol = 1e-12)", file=sys.stderr)
    t_dense = np.linspace(0.0, problem.duration_s, 40 * (plan.nodes.size - 1) + 1)
    t_r, x_r = resimulate(plan, t_dense)
    contact_r = x_r[:, -2:] if isinstance(ball, RollingBall) else \
        (ball.contact_position(x_r) - ball.contact_position(x0))[:, None]
    resim_err = float(np.linalg.norm(plan.contact(t_r) - contact_r, axis=1).max())
    clearance = (min(float(ob.clearance(contact_r).min()) for ob in problem.obstacles)
                 if problem.obstacles else None)
    target_err = float(np.linalg.norm(contact_r[-1] - problem.target_contact_m)) \
        if problem.target_contact_m is not None else None
    n = ball.n_masses
    acc = plan.accuracy
    so = plan.second_order
    summary = {
        "converged": bool(r.converged), "status": r.status, "message": r.message,
        "plant": plant_to_mapping(ball, x0),
        "solve_time_s": r.solve_time_s, "build_time_s": r.build_time_s, "iterations": r.iterations,
        "stage_iterations": list(r.stage_iterations), "objective": r.objective,
        "max_constraint_violation": r.max_constraint_violation, "dual_infeasibility": r.dual_infeasibility,
        "quaternion_norm_error": r.quaternion_norm_error,
        "intervals": list(acc.mesh_sizes) if acc is not None else [plan.nodes.size - 1],
        "n_variables": r.n_variables, "n_constraints": r.n_constraints,
        "resimulation_error_m": resim_err, "min_obstacle_clearance_m": clearance,
        "clearance_margin_m": problem.clearance_margin_m, "resimulated_target_error_m": target_err,
        "obstacle_backoff_m": plan.obstacle_backoff_m,
        "max_rail_speed_used": float(np.abs(plan.x[:, n:2 * n]).max()),
        "max_rail_input_used": float(np.abs(plan.u).max()),
        "branches": [{"seed": b.seed, "branch": b.branch.label(), "objective": b.objective, "converged": b.converged,
                      "intervals": b.intervals, "full_mesh": b.full_mesh, "chosen": b.chosen,
                      "rail_travel_rad": list(b.rail_travel_rad)} for b in plan.branches],
        "accuracy": None if acc is None else {
            "tolerance": acc.tolerance, "meets": acc.meets, "cost_error_estimate": acc.cost_error_estimate,
            "relative_cost_error": acc.relative_cost_error, "mesh_sizes": list(acc.mesh_sizes),
            "objectives": list(acc.objectives), "end_state_error": acc.end_state_error,
            "checks": [{"name": c.name, "value": c.value, "allowed": c.allowed, "unit": c.unit, "passed": c.passed}
                       for c in acc.checks]},
        "second_order": None if so is None else {
            "satisfied": bool(so.satisfied), "min_reduced_eigenvalue": float(so.min_reduced_eigenvalue),
            "n_free_directions": int(so.n_free_directions), "n_active": int(so.n_active), "message": so.message},
        **_contact_summary(r),
    }
    figures["plan.png"] = plot_plan(plan, t_r, x_r)
    c = spec["closed_loop"]
    if plan.converged and c["enabled"] and not args.no_closed_loop and isinstance(ball, RollingBall):
        print(f"[3/4] closed loop: finite-horizon LQR at dt = {c['dt_s']} s from a perturbed start", file=sys.stderr)
        with warnings.catch_warnings():
            # scipy's first-step size calls nextafter(0) once IPOPT's MUMPS has left the FPU flushing subnormals
            warnings.filterwarnings("ignore", message="underflow encountered in nextafter", category=RuntimeWarning)
            tr = track_plan(plan, dt=float(c["dt_s"]), contact_offset_m=c["contact_offset_m"],
                            angle_offset_rad=float(c["angle_offset_rad"]))
        e, eo = tr.contact_error_m, tr.open_loop_contact_error_m
        summary["closed_loop"] = {
            "dt_s": float(c["dt_s"]), "initial_contact_error_m": float(e[0]),
            "max_contact_error_m": float(e.max()), "final_contact_error_m": float(e[-1]),
            "open_loop_final_contact_error_m": float(eo[-1]),
            "max_constraint_residual": float(tr.closed_loop.summary().max_constraint_residual),
            "constraints_kept": bool(tr.constraints_kept),
            "constraints": [{"name": c.name, "value": float(c.value), "limit": float(c.limit), "unit": c.unit,
                             "passed": bool(c.passed)} for c in tr.constraints]}
        every = int(c["replan_every"])
        if every > 0:
            print(f"      receding horizon: re-planning every {every} steps ({every * float(c['dt_s']):g} s) from "
                  f"the same start, warm on the NLP built once ({s['intervals']} intervals)", file=sys.stderr)
            # the re-plans run on the first mesh (a fresh plan every 0.5 s needs no 1e-6), built once
            rh = track_receding(plan, replan_every=every, dt=float(c["dt_s"]), contact_offset_m=c["contact_offset_m"],
                                angle_offset_rad=float(c["angle_offset_rad"]),
                                nlp=ManeuverNLP(ball, problem, intervals=int(s["intervals"])))
            summary["receding_horizon"] = {
                "replan_every_steps": every, "replans": len(rh.replans), "failed_replans": int(rh.failures),
                "median_replan_solve_time_s": float(np.median(rh.solve_times_s)) if rh.replans else None,
                "median_iterations": float(np.median(rh.iterations)) if rh.replans else None,
                "final_contact_error_m": float(rh.final_error_m), "cost": float(rh.cost),
                "constraints_kept": bool(rh.constraints_kept),
                "constraints": [{"name": k.name, "value": float(k.value), "limit": float(k.limit), "unit": k.unit,
                                 "passed": bool(k.passed)} for k in rh.constraints]}
            print(f"      LQR: final error {float(e[-1]):.3g} m, constraints kept: {tr.constraints_kept}; receding: "
                  f"final error {rh.final_error_m:.3g} m, constraints kept: {rh.constraints_kept}", file=sys.stderr)
        figures["plan_tracking.png"] = plot_plan_tracking(plan, tr)
    elif not isinstance(ball, RollingBall):
        print("[3/4] closed loop: skipped (the LQR plan tracker is for a RollingBall)", file=sys.stderr)
    print("[4/4] writing plan.json, plan.npz and figures", file=sys.stderr)
    _write(out, figures, summary, t_s=plan.t, x=plan.x, u=plan.u, nodes_s=plan.nodes)
    print(json.dumps({k: summary[k] for k in ("converged", "solve_time_s", "iterations", "max_constraint_violation",
                                              "resimulation_error_m", "min_obstacle_clearance_m")}))
    return 0 if r.converged else 1


#: the files ``plan`` writes: an earlier output folder of only these may be replaced
OUTPUT_NAMES = ("plan.json", "plan.npz", "plan.png", "plan_tracking.png")


def _write(out: Path, figures: dict, summary: dict, **arrays) -> None:
    """Write the figures, ``plan.npz`` and ``plan.json`` into ``out`` whole (built aside, moved in at the end)."""
    from ..figures.plotting import save_figure
    with atomic_directory(out, flag="--out", own_names=OUTPUT_NAMES) as tmp:
        for name, fig in figures.items():
            save_figure(fig, tmp / name)
        np.savez(tmp / "plan.npz", **arrays)
        (tmp / "plan.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def _contact_summary(report) -> dict:
    """The plan's contact: the friction coefficient it needs, its least normal force, the bounds that bind."""
    mu = report.peak_friction_coefficient_required
    return {"peak_friction_coefficient_required": float(mu) if np.isfinite(mu) else None,
            "least_normal_force_N": float(report.least_normal_force_N),
            "binding_contact_constraints": list(report.binding_contact_constraints)}


def _run_ball_plate(args: argparse.Namespace) -> int:
    """The ball-plate branch of :func:`run`: plan, re-simulate on the full plant, track, write files."""
    from ..planning import PlateMotionProblem, plan_plate_motion, track_plate_plan
    from ..planning.plots import plot_plate_plan
    from ..ball_plate.rig import rig_preset
    from dataclasses import replace

    spec = load_ball_plate_problem(args.problem)
    if args.intervals is not None:
        spec["solver"]["intervals"] = args.intervals
    out = check_output_folder(args.out, "--out", own_names=OUTPUT_NAMES)
    figures = {}
    b = spec["ball_plate"]
    rig = rig_preset(str(b["rig"]))
    lim = rig.limits
    if b["max_tilt_deg"] is not None:
        lim = replace(lim, max_angle=float(np.deg2rad(float(b["max_tilt_deg"]))))
    if b["max_rate_deg_s"] is not None:
        lim = replace(lim, max_rate=float(np.deg2rad(float(b["max_rate_deg_s"]))))
    rig = replace(rig, limits=lim)
    if b["model"] not in ("quasi-static", "servo-plate"):
        raise ConfigError(f"[ball_plate] model must be 'quasi-static' or 'servo-plate', got {b['model']!r}")
    plant = rig.design_plant() if b["model"] == "servo-plate" else rig.design_plant().quasi_static()
    try:
        problem = PlateMotionProblem(waypoints_m=b["waypoints_m"], objective=str(b["objective"]),
                                     duration_s=b["duration_s"], limit_margin=float(b["limit_margin"]),
                                     corridor_m=b["corridor_m"], final_velocity_mps=b["final_velocity_mps"],
                                     level_at_end=bool(b["level_at_end"]),
                                     friction_coefficient=b["friction_coefficient"],
                                     min_normal_force_N=b["min_normal_force_N"],
                                     max_plate_acceleration_rad_s2=None if b["max_plate_acceleration_deg_s2"] is None
                                     else float(np.deg2rad(float(b["max_plate_acceleration_deg_s2"]))))
    except ValueError as exc:
        raise ConfigError(f"[ball_plate]: {exc}") from None
    n = int(spec["solver"]["intervals"])
    print(f"[1/4] ball-plate plan ({problem.objective}) on rig {rig.name!r}: {problem.n_legs} legs x {n} "
          f"Hermite-Simpson intervals (IPOPT via CasADi)", file=sys.stderr)
    plan = plan_plate_motion(plant, problem, rig=rig, intervals=n)
    r = plan.report
    print(f"      {r.message}; {r.solve_time_s:.2f} s in IPOPT", file=sys.stderr)
    peaks = plan.peak_limits()
    summary = {
        "plant": "ball_plate", "model": b["model"], "rig": rig.name, "objective": problem.objective,
        "converged": bool(r.converged), "status": r.status, "message": r.message,
        "solve_time_s": r.solve_time_s, "build_time_s": r.build_time_s, "iterations": r.iterations,
        "objective_value": r.objective, "max_constraint_violation": r.max_constraint_violation,
        "dual_infeasibility": r.dual_infeasibility, "intervals_per_leg": n,
        "n_variables": r.n_variables, "n_constraints": r.n_constraints,
        "duration_s": plan.duration_s, "leg_durations_s": plan.leg_durations_s.tolist(),
        "waypoint_times_s": plan.waypoint_times_s.tolist(),
        "peak_angle_deg": float(np.rad2deg(peaks["max_angle_rad"])),
        "peak_rate_deg_s": float(np.rad2deg(peaks["max_rate_rad_s"])),
        "peak_acceleration_deg_s2": float(np.rad2deg(peaks["max_acceleration_rad_s2"])),
        "peak_tilt_deg": float(np.rad2deg(peaks["max_tilt_rad"])),
        "limit_angle_deg": float(np.rad2deg(lim.max_angle)),
        "limit_rate_deg_s": None if lim.max_rate is None else float(np.rad2deg(lim.max_rate)),
        "limit_margin": problem.limit_margin,
        **_contact_summary(r),
    }
    tracking = None
    if plan.converged:
        print(f"[2/4] re-simulating on the nonlinear plant ({type(plant).__name__} DAE, DOP853 rtol 1e-10)",
              file=sys.stderr)
        c = spec["closed_loop"]
        ref = plan.reference(hold_s=float(c["hold_s"]))
        t = np.linspace(0.0, plan.duration_s, 40 * (plan.nodes.size - 1) + 1)
        summary["resimulation_error_m"] = float(np.linalg.norm(ref(t).x[:, :2] - plan.state(t)[:, :2], axis=1).max())
        if c["enabled"] and not args.no_closed_loop:
            on_truth = bool(c["truth"])
            where = "the rig's servo-plate truth (exact inversion, 'exact' design)" if on_truth \
                else "the nonlinear quasi-static plant"
            print(f"[3/4] closed loop on {where} at dt = {rig.dt} s with the rig's limits", file=sys.stderr)
            tracking = track_plate_plan(plan, rig, contact_offset_m=c["contact_offset_m"], hold_s=float(c["hold_s"]),
                                        truth=on_truth)
            summary["closed_loop"] = {
                "truth": tracking.truth, "inversion_residuals": tracking.inversion_residuals,
                "dt_s": rig.dt, "initial_offset_m": [float(v) for v in c["contact_offset_m"]],
                "rms_error_m": tracking.rms_error_m, "final_error_m": tracking.final_error_m,
                "peak_angle_deg": float(np.rad2deg(tracking.peak_angle_rad)),
                "peak_rate_deg_s": float(np.rad2deg(tracking.peak_rate_rad_s)),
                "limit_steps": {k: float(v) for k, v in tracking.limit_steps.items()}}
    figures["plan.png"] = plot_plate_plan(plan, tracking)
    print("[4/4] writing plan.json, plan.npz and plan.png", file=sys.stderr)
    _write(out, figures, summary, t_s=plan.t, x=plan.x, u=plan.u, nodes_s=plan.nodes)
    print(json.dumps({k: summary.get(k) for k in ("converged", "solve_time_s", "iterations", "duration_s",
                                                  "peak_angle_deg", "resimulation_error_m")}))
    return 0 if r.converged else 1
