"""The maneuver planner on the built-in maneuver (``ballctl plan``): build, cold solve, warm re-solve, the whole call.

Rows (the paper's 3-mass ball from rest at the origin to rest at (0, 4) m in 10 s round two obstacles,
rails within 2 rad/s and 2 rad/s^2, margin 5 cm, 100 Hermite-Simpson intervals, SX graph):

a. building the NLP once (:class:`~ballctl.planning.nlp.ManeuverNLP`: transcription, exact Hessian, IPOPT);
b. one cold IPOPT solve of the chosen family from its seed (the side seed of its obstacle sides with
   each mass's rail wound by its family's turns), at the true radii: target <= 2 s;
c. a warm re-solve from a perturbed start (contact +2 cm along e1, every rail angle +0.05 rad) at the
   same duration, from the plan and its multipliers (``_WARM_IPOPT``): target <= 0.3 s; with IPOPT's
   own timing split (function evaluations vs the rest, i.e. the KKT factorizations) and variants of
   the warm options tried by rebuilding the warm solver on the same derivative functions;
c'. the same warm re-solve half a second into the maneuver (the plan shifted by 0.5 s, the state
   measured there with the same perturbation, 9.5 s left): what a receding-horizon replan costs,
   with the old multipliers as they are and shifted in time (:meth:`~ballctl.planning.nlp.ManeuverNLP.shift`);
d. ``plan_maneuver(ball, problem, intervals=100)`` as ``ballctl plan`` calls it (branch search,
   accuracy refinement), and with ``accuracy=None``;
e. the tracking comparison of :func:`~ballctl.planning.receding.compare_tracking`: the LQR tracking the
   fixed plan against receding-horizon re-planning every 0.5 s (its own NLP with ``REPLAN_SOLVER``'s
   tolerances), from the same perturbed starts.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_planning.py [--repeat 3] [--starts 5] [--skip-default]
                                                               [--skip-comparison]

Times are wall times (``time.perf_counter``, best of ``--repeat`` for the solves) with the CPU time of
this process next to them: on a shared machine the wall time includes waiting for a core, so compare
the CPU times or ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

__all__ = ["builtin_problem", "family_seed", "main", "perturbed", "rebuild_warm"]

if "numpy" not in sys.modules:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

#: warm IPOPT variants tried in row c (each updates ``_WARM_IPOPT``)
WARM_VARIANTS = {
    "current _WARM_IPOPT": {},
    "mu_init 1e-8": {"ipopt.mu_init": 1e-8},
    "mu_init 1e-4": {"ipopt.mu_init": 1e-4},
    "mu_strategy adaptive": {"ipopt.mu_strategy": "adaptive"},
    "tol 1e-6, constr_viol_tol 1e-8": {"ipopt.tol": 1e-6, "ipopt.constr_viol_tol": 1e-8},
    "no nlp scaling": {"ipopt.nlp_scaling_method": "none"},
    "mu_init 1e-8 + tol 1e-6": {"ipopt.mu_init": 1e-8, "ipopt.tol": 1e-6, "ipopt.constr_viol_tol": 1e-8},
    "adaptive + tol 1e-6": {"ipopt.mu_strategy": "adaptive", "ipopt.tol": 1e-6, "ipopt.constr_viol_tol": 1e-8},
}


def builtin_problem():
    """The ball and the ``ManeuverProblem`` of ``ballctl plan`` without arguments (``DEFAULT_PROBLEM``)."""
    from ballctl.cli.plan import DEFAULT_PROBLEM
    from ballctl.planning import CircularObstacle, ManeuverProblem
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
    from ballctl.plants.rolling_ball import RollingBall

    m = DEFAULT_PROBLEM["maneuver"]
    problem = ManeuverProblem(
        initial_state=paper_ball_initial_state(), duration_s=m["duration_s"], target_contact_m=m["target_contact_m"],
        rest_at_end=m["rest_at_end"], effort_weight=m["effort_weight"], clearance_margin_m=m["clearance_margin_m"],
        max_rail_speed=m["max_rail_speed"], max_rail_acceleration=m["max_rail_acceleration"],
        obstacles=tuple(CircularObstacle(center_m=o["center_m"], radius_m=o["radius_m"])
                        for o in DEFAULT_PROBLEM["obstacles"]))
    return RollingBall(paper_ball_parameters()), problem


def family_seed(nlp, branch) -> np.ndarray:
    """The seed of a family on the NLP's mesh: the side seed of its obstacle sides, each rail wound by its turns."""
    from ballctl.planning.branches import along_polyline, side_seeds, wind
    from ballctl.planning.transcription import collocation_times

    pb, model = nlp.problem, nlp.model
    x0 = pb.initial_state
    times = collocation_times(nlp.nodes(pb.duration_s))
    start = model.contact(x0, x0)
    (_, waypoints), = side_seeds(pb, start, pb.target_contact_m, sides=branch.obstacle_sides)[:1]
    X = model.rolling_guess(x0, along_polyline(np.vstack([start, waypoints[1:]]), times), times, np.zeros(model.n))
    for i, turns in enumerate(branch.rail_turns or ()):
        if turns:
            X = wind(X, times, i, model.n, turns)
    return nlp.tr.pack(X, np.zeros((times.size, model.n_u)))


def perturbed(ball, x, *, contact_m=(0.02, 0.0), rail_rad=0.05) -> np.ndarray:
    """An ODE state with the contact point and every rail angle moved (the velocities kept)."""
    n = ball.n_masses
    out = np.array(x, dtype=float)
    out[:n] += rail_rad
    out[2 * n + 7:] += np.asarray(contact_m)
    q = out[2 * n:2 * n + 4]
    q /= np.linalg.norm(q)
    return out


def rebuild_warm(nlp, extra: dict) -> None:
    """Replace ``nlp._warm`` by an IPOPT on the same derivative functions with ``_WARM_IPOPT`` updated by ``extra``."""
    import casadi as ca
    from ballctl.planning import nlp as nlp_module

    opts = nlp.solver_options.casadi_options(max_iterations=1000, max_cpu_time_s=600.0)
    warm = {**opts, **nlp_module._WARM_IPOPT, **extra}
    derivatives = {name: nlp._cold.get_function(f"nlp_{name}") for name in ("hess_l", "jac_g", "grad_f")}
    nlp._warm = ca.nlpsol("replan", "ipopt", nlp.nlp, {**warm, "hess_lag": derivatives["hess_l"],
                                                       "jac_g": derivatives["jac_g"],
                                                       "grad_f": derivatives["grad_f"]})


def _timed(fn, repeat: int):
    """Best wall time over ``repeat`` calls, the CPU time of that call, and its result."""
    best, cpu, out = float("inf"), float("nan"), None
    for _ in range(max(1, repeat)):
        w0, c0 = time.perf_counter(), time.process_time()
        res = fn()
        wall = time.perf_counter() - w0
        if wall < best:
            best, cpu, out = wall, time.process_time() - c0, res
    return best, cpu, out


def _split(solver, solution) -> str:
    """Per iteration of the last solve: its wall time, IPOPT's time in the CasADi functions, and the rest (mostly the
    KKT factorizations by MUMPS)."""
    st = solver.stats()
    funcs = sum(float(st.get(f"t_wall_{k}", 0.0)) for k in ("nlp_f", "nlp_g", "nlp_grad_f", "nlp_jac_g", "nlp_hess_l"))
    its = max(int(st.get("iter_count", 0)), 1)
    total = solution.wall_time_s
    return (f"{its} it, {1e3 * total / its:.0f} ms/it: functions {1e3 * funcs / its:.0f} ms/it "
            f"(Hessian {1e3 * float(st.get('t_wall_nlp_hess_l', 0.0)) / its:.0f}), rest "
            f"{1e3 * (total - funcs) / its:.0f} ms/it")


def main(argv=None) -> int:
    """Run the rows and print the table (and the comparison table)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of the solves (best kept)")
    parser.add_argument("--starts", type=int, default=5, help="perturbed starts of the tracking comparison")
    parser.add_argument("--replan-every", type=int, default=5, help="control steps (0.1 s) between replans")
    parser.add_argument("--skip-default", action="store_true", help="skip the default plan_maneuver call (d)")
    parser.add_argument("--skip-comparison", action="store_true", help="skip the tracking comparison (e)")
    parser.add_argument("--skip-variants", action="store_true", help="skip the warm IPOPT variants")
    args = parser.parse_args(argv)

    from ballctl.planning import ManeuverNLP, plan_maneuver
    from ballctl.planning.branches import branch_of

    rows: list[tuple[str, str, str]] = []

    def row(what, value, note=""):
        rows.append((what, value, note))
        print(f"  ... {what}: {value} | {note}", file=sys.stderr, flush=True)

    ball, problem = builtin_problem()
    N = 100

    # d'. the plan the other rows start from (its family, its solution and multipliers)
    w0, c0 = time.perf_counter(), time.process_time()
    plan = plan_maneuver(ball, problem, intervals=N, accuracy=None)
    w_plan, c_plan = time.perf_counter() - w0, time.process_time() - c0
    fam = branch_of(plan)
    row("plan_maneuver(intervals=100, accuracy=None): search + full mesh", f"{w_plan:.1f} s (cpu {c_plan:.1f} s)",
        f"{plan.report.iterations} IPOPT iterations on the full mesh in {plan.report.solve_time_s:.2f} s; "
        f"family {fam.label()}, cost {plan.report.objective:.6g}; {len(plan.branches)} branch solves")

    # a. build
    w_build, c_build, nlp = _timed(lambda: ManeuverNLP(ball, problem, intervals=N, symbolic="SX"), 1)
    row("a. build ManeuverNLP (SX, 100 intervals)", f"{w_build:.2f} s (cpu {c_build:.2f} s)",
        f"{nlp.constraints.lbw.size} variables, {nlp.constraints.lbg.size} constraints")

    # b. one cold solve of the chosen family from its seed
    seed = family_seed(nlp, fam)
    p = nlp.parameters(backoffs=(plan.obstacle_backoff_m, *plan.contact_backoffs))
    x0 = problem.initial_state
    w_cold, c_cold, cold = _timed(lambda: nlp.solve(seed, p, initial_state=x0), args.repeat)
    same = "same family" if cold.success and branch_of(nlp.finish(cold)) == fam else "OTHER family or failed"
    row("b. cold solve of the chosen family from its seed", f"{w_cold:.2f} s (cpu {c_cold:.2f} s)",
        f"{cold.status}, {same}, cost {cold.objective:.6g}; {_split(nlp._cold, cold)}; target <= 2 s")

    # c. warm re-solve from a perturbed start at the same duration
    x_p = perturbed(ball, x0)
    guess = nlp.guess(plan)
    warm_sol = plan.solution

    def warm_solve():
        return nlp.solve(guess, p, initial_state=x_p, warm=warm_sol)

    w_warm, c_warm, warm = _timed(warm_solve, args.repeat)
    row("c. warm re-solve, start +2 cm (e1) and rails +0.05 rad, T = 10 s", f"{w_warm:.2f} s (cpu {c_warm:.2f} s)",
        f"{warm.status}, cost {warm.objective:.6g}; {_split(nlp._warm, warm)}; target <= 0.3 s")
    w_c2, c_c2, cold2 = _timed(lambda: nlp.solve(guess, p, initial_state=x_p), 1)
    row("c. same re-solve, cold IPOPT from the same guess (no multipliers)", f"{w_c2:.2f} s (cpu {c_c2:.2f} s)",
        f"{cold2.status}; {_split(nlp._cold, cold2)}")

    # c'. a receding-horizon replan 0.5 s in

    shift = 0.5
    x_m = perturbed(ball, plan.state(np.array([shift]))[0])
    g_shift = nlp.guess(plan, duration_s=problem.duration_s - shift, time_offset_s=shift)
    p_shift = nlp.parameters(duration_s=problem.duration_s - shift,
                             backoffs=(plan.obstacle_backoff_m, *plan.contact_backoffs))
    w_rh, c_rh, rh_sol = _timed(lambda: nlp.solve(g_shift, p_shift, initial_state=x_m, warm=warm_sol), args.repeat)
    row("c'. warm replan at t = 0.5 s (plan shifted, 9.5 s left, same perturbation)",
        f"{w_rh:.2f} s (cpu {c_rh:.2f} s)", f"{rh_sol.status}; {_split(nlp._warm, rh_sol)}")
    shifted = nlp.shift(warm_sol, time_offset_s=shift, duration_s=problem.duration_s - shift)

    def replan():
        return nlp.solve(g_shift, p_shift, initial_state=x_m, warm=shifted)

    w_sh, c_sh, sh_sol = _timed(replan, args.repeat)
    row("c'. same replan, multipliers shifted too (ManeuverNLP.shift)",
        f"{w_sh:.2f} s (cpu {c_sh:.2f} s)", f"{sh_sol.status}; {_split(nlp._warm, sh_sol)}")

    if not args.skip_variants:
        base_iter = warm.iterations
        for label, extra in WARM_VARIANTS.items():
            rebuild_warm(nlp, extra)
            wr, cr, solr = _timed(replan, 1)
            wv, cv, sol = _timed(warm_solve, args.repeat)
            viol, _ = nlp.violation(sol)
            row(f"c. warm variant: {label}", f"{wv:.2f} s (cpu {cv:.2f} s); replan {wr:.2f} s",
                f"{sol.status}, {sol.iterations} it (current {base_iter}), cost {sol.objective:.9g}, "
                f"violation {viol:.1e}; replan {solr.iterations} it; {_split(nlp._warm, sol)}")
        rebuild_warm(nlp, {})

    # d. the whole default call
    if not args.skip_default:
        w0, c0 = time.perf_counter(), time.process_time()
        full = plan_maneuver(ball, problem, intervals=N)
        row("d. plan_maneuver(ball, problem, intervals=100) (the ballctl plan call)",
            f"{time.perf_counter() - w0:.1f} s (cpu {time.process_time() - c0:.1f} s)",
            f"{'converged' if full.converged else 'NOT converged'} on {full.nodes.size - 1} intervals, "
            f"{full.report.iterations} iterations, {full.report.solve_time_s:.1f} s in IPOPT, cost "
            f"{full.report.objective:.6g}")

    print(f"\nballctl planner benchmarks ({os.cpu_count()} cores, load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')})\n")
    widths = [max(len(r[i]) for r in rows + [("what", "time", "note")]) for i in range(3)]
    for r in [("what", "time", "note"), tuple("-" * w for w in widths)] + rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))

    # e. the tracking comparison
    if not args.skip_comparison:
        from ballctl.planning.receding import REPLAN_SOLVER, TrackingStart, compare_tracking, random_starts

        starts = (TrackingStart(contact_offset_m=(0.05, -0.05), angle_offset_rad=0.1),
                  *random_starts(max(args.starts - 1, 0), seed=0))
        replanner = ManeuverNLP(ball, problem, nodes=plan.nodes, solver=REPLAN_SOLVER)
        w0, c0 = time.perf_counter(), time.process_time()
        table = compare_tracking(plan, starts, replan_every=args.replan_every, nlp=replanner)
        print(f"\ntracking comparison (built-in maneuver, dt = 0.1 s, replans every {args.replan_every} steps; "
              f"{time.perf_counter() - w0:.0f} s wall, cpu {time.process_time() - c0:.0f} s):\n")
        print(table.table())
        rh = table.receding
        its = np.concatenate([r.iterations for r in rh])
        walls = np.concatenate([[q.wall_time_s for q in r.replans] for r in rh])
        solves = np.concatenate([r.solve_times_s for r in rh])
        print(f"\nreplans: {its.size}, iterations median {np.median(its):.0f} (max {its.max()}), IPOPT time median "
              f"{np.median(solves):.2f} s (max {solves.max():.2f} s), whole replan (with the clearance rounds) "
              f"median {np.median(walls):.2f} s (max {walls.max():.2f} s); replan period "
              f"{args.replan_every * 0.1:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
