r"""The maneuver planner: search the branches, solve the best to a stated accuracy, check its optimality.

:func:`plan_maneuver` runs, on its defaults,

1. **branch search** (:mod:`ballctl.planning.branches`): on a coarse mesh (a
   quarter of the intervals, at least 8) it solves one seed per side of every
   obstacle that blocks the straight way, then, from the cheapest, seeds that
   send each mass on a closed rail one turn more or one turn less, for as long
   as that finds a cheaper family (at most ``branch_rounds`` rounds). Each
   result's family is read off it (:func:`~ballctl.planning.branches.branch_of`);
   the cheapest families are solved on the full mesh, and the cheapest of those is
   returned with the whole table (:attr:`ManeuverPlan.branches`). ``branch=``
   asks for one family (or ``None``: the old straight-roll seed with obstacle
   continuation, the nearest optimum);
2. on the chosen family, the stages of every solve: obstacle continuation
   (straight seeds only), obstacle clearance between the collocation points
   (``clearance_rounds``), contact constraints between them (``contact_rounds``);
3. **accuracy** (:mod:`ballctl.planning.accuracy`): every interval halved and
   the plan re-solved, warm-started, until the Richardson estimate of the cost
   error and every replay check meet ``accuracy.tolerance``; otherwise the plan
   is reported not converged, naming the check that failed;
4. **second-order check** (:mod:`ballctl.planning.optimality`): the reduced
   Hessian of the Lagrangian on the active constraints at the returned solution.

References
----------
V. Putkaradze, S.M. Rogers, Meccanica 53 (2018) 3839-3868, eqs. (5.40), (7.1)-(7.4);
Numer. Algebra Control Optim. 11(2) (2021) (direct method, continuation).
J. Nocedal, S.J. Wright, *Numerical Optimization*, 2nd ed., Springer (2006),
Theorem 12.6 (second-order sufficient conditions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .._errors import ParameterError
from .._validation import check_instance, check_integer
from .accuracy import DEFAULT_ACCURACY, AccuracyReport, PlanAccuracy, replay_checks, richardson
from .branches import BranchOutcome, ManeuverBranch, along_polyline, branch_of, side_seeds, wind
from .contact import between_nodes_message, contact_failure_message, update_contact_backoffs
from .maneuver import ManeuverPlan, ManeuverProblem
from .nlp import ManeuverNLP, check_request
from .transcription import SolverOptions, collocation_times

__all__ = ["diagnose", "plan_maneuver", "refine_plan", "solve_stages"]


def plan_maneuver(plant, problem: ManeuverProblem, *, intervals: int = 50, nodes=None,
                  warm_start: ManeuverPlan | None = None, branch: ManeuverBranch | str | None = "search",
                  accuracy: PlanAccuracy | None = DEFAULT_ACCURACY,
                  obstacle_continuation: Sequence[float] = (0.25, 0.5, 0.75, 1.0), branch_rounds: int = 3,
                  symbolic: str = "SX", solver: SolverOptions | None = None) -> ManeuverPlan:
    """Plan the best maneuver by Hermite-Simpson collocation and IPOPT (module docstring).

    Parameters
    ----------
    plant : RollingBall or RollingDisk
        Without external force; rails of closed form (not ``CallableRail``).
    problem : ManeuverProblem
    intervals : int
        Uniform mesh intervals N of the first full solve (ignored when ``nodes`` is given), >= 2.
    nodes : array_like, shape (N + 1,), optional
        A mesh from 0 to ``problem.duration_s`` in s.
    warm_start : ManeuverPlan, optional
        Start from this plan (interpolated) instead of searching the branches.
    branch : "search", ManeuverBranch or None
        ``"search"``: explore the families and return the cheapest;
        a :class:`~ballctl.planning.branches.ManeuverBranch`: only seeds of that
        family, and the plan is reported not converged if the solve leaves it;
        ``None``: the straight-roll seed with obstacle continuation (the nearest optimum).
    accuracy : PlanAccuracy or None
        The accuracy the returned plan must meet (default: 1e-6 relative, at
        most 800 intervals); ``None``: no refinement and no replay checks.
    obstacle_continuation : sequence of float
        Obstacle radius factors of the straight seed's continuation, ending with 1.
    branch_rounds : int
        Rounds of the winding search, >= 0.
    symbolic : {"SX", "MX"}
        CasADi graph of the transcription (:class:`~ballctl.planning.nlp.ManeuverNLP`).
    solver : SolverOptions, optional
        IPOPT's limits and tolerances and the re-solve rounds.

    Returns
    -------
    ManeuverPlan
        ``report.converged`` is True only when IPOPT converged, the requested
        family was kept and the replay meets ``accuracy``; the message says which
        failed. ``branches``, ``accuracy`` and ``second_order`` hold the search's
        table, the error estimate with the replay checks and the optimality check.

    Raises
    ------
    InfeasiblePlanError
        Start or target inside an obstacle, initial state beyond the limits.
    MissingExtraError
        When CasADi (the ``optimal`` extra) is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters
    >>> from ballctl.plants.rolling_ball import PointMass
    >>> from ballctl.plants.rails import CircleRail
    >>> from ballctl.planning import ManeuverProblem, plan_maneuver
    >>> disk = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
    ...     point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))
    >>> problem = ManeuverProblem(initial_state=[-np.pi / 2, 0, 0, 0], duration_s=5.0,
    ...                           target_contact_m=[1.0], rest_at_end=True)
    >>> plan = plan_maneuver(disk, problem)
    >>> plan.converged, round(float(plan.contact()[-1, 0]), 6), plan.accuracy.meets
    (True, 1.0, True)
    """
    solver = SolverOptions() if solver is None else check_instance(solver, "solver", SolverOptions)
    if accuracy is not None:
        accuracy = check_instance(accuracy, "accuracy", PlanAccuracy)
    if not (branch is None or isinstance(branch, ManeuverBranch) or branch == "search"):
        raise ParameterError(f"branch must be 'search', a ManeuverBranch or None, got {branch!r}")
    rounds = check_integer(branch_rounds, "branch_rounds", minimum=0)
    factors = tuple(float(f) for f in obstacle_continuation)
    if not factors or factors[-1] != 1.0 or any(f <= 0 for f in factors):
        raise ParameterError(f"obstacle_continuation must be positive radius factors ending with 1, got {factors!r}")
    nlp = ManeuverNLP(plant, problem, intervals=intervals, nodes=nodes, symbolic=symbolic, solver=solver)
    x0 = nlp.model.validate(problem.initial_state)
    requested = branch if isinstance(branch, ManeuverBranch) else None
    if requested is not None:
        _check_branch(requested, nlp, problem)
    table: tuple[BranchOutcome, ...] = ()
    if warm_start is not None:
        plan = solve_stages(nlp, nlp.guess(warm_start), continuation=(1.0,),
                            backoffs=(warm_start.obstacle_backoff_m, *warm_start.contact_backoffs))
    elif branch is None:
        plan = solve_stages(nlp, _straight_seed(nlp, x0), continuation=factors)
    else:
        plan, table = _search(nlp, x0, requested, rounds=rounds, continuation=factors, symbolic=symbolic)
    if not plan.converged and plan.accuracy is None and problem.target_contact_m is not None:
        plan = _fail(plan, plan.report.message + ". " + diagnose(nlp, x0, factors))
    if plan.converged and accuracy is not None:
        plan, nlp = _refine_to(plan, nlp, accuracy, symbolic=symbolic, problem=nlp.problem,
                               solver=nlp.solver_options)
    if requested is not None and plan.converged and not requested.admits(branch_of(plan)):
        plan = _fail(plan, f"not converged: the solve left the requested branch {requested.label()} and "
                           f"converged to {branch_of(plan).label()} (cost {plan.report.objective:.6g})")
    plan = replace(plan, branches=table)
    if plan.solution is not None and plan.report.converged:
        plan = replace(plan, second_order=nlp.second_order(plan.solution))
    return plan


def _check_branch(branch: ManeuverBranch, nlp: ManeuverNLP, problem: ManeuverProblem) -> None:
    n, k = nlp.model.n, len(problem.obstacles)
    if branch.rail_turns is not None:
        if len(branch.rail_turns) != n:
            raise ParameterError(f"branch.rail_turns must have one entry per mass ({n}), got {branch.rail_turns!r}")
        for i, (t, rail) in enumerate(zip(branch.rail_turns, nlp.model.rails)):
            if t is not None and not rail.periodic:
                raise ParameterError(f"branch.rail_turns[{i}] = {t}: mass {i + 1} is on a segment rail (no turns); "
                                     f"give None")
    if branch.obstacle_sides is not None and len(branch.obstacle_sides) != k:
        raise ParameterError(f"branch.obstacle_sides must have one entry per obstacle ({k}), got "
                             f"{branch.obstacle_sides!r}")


def _fail(plan: ManeuverPlan, message: str) -> ManeuverPlan:
    return replace(plan, report=replace(plan.report, converged=False, message=message))


# ------------------------------------------------------------------------------------------------
# seeds
# ------------------------------------------------------------------------------------------------

def _end_point(nlp: ManeuverNLP, x0) -> np.ndarray:
    pb = nlp.problem
    if pb.target_contact_m is not None:
        return np.asarray(pb.target_contact_m, dtype=float)
    end = np.asarray(pb.path(np.array([pb.duration_s])), dtype=float).reshape(-1)
    return end[:nlp.model.dim]


def _seed(nlp: ManeuverNLP, x0, waypoints, rail_travel, duration_s: float | None = None) -> np.ndarray:
    times = collocation_times(nlp.nodes(nlp.problem.duration_s if duration_s is None else duration_s))
    start = nlp.model.contact(x0, x0)
    if nlp.model.dim == 1:
        contact = along_polyline(np.array([[0.0], [float(np.asarray(waypoints)[-1][0])]]), times)
    else:
        contact = along_polyline(np.vstack([start, np.asarray(waypoints)[1:]]), times)
    X = nlp.model.rolling_guess(x0, contact, times, rail_travel)
    return nlp.tr.pack(X, np.zeros((times.size, nlp.model.n_u)))


def _straight_seed(nlp: ManeuverNLP, x0, *, duration_s: float | None = None, end=None) -> np.ndarray:
    start = nlp.model.contact(x0, x0)
    end = _end_point(nlp, x0) if end is None else np.asarray(end, dtype=float)
    return _seed(nlp, x0, np.array([start, end]), np.zeros(nlp.model.n), duration_s)


def _side_seeds(nlp: ManeuverNLP, x0, requested: ManeuverBranch | None):
    model, pb = nlp.model, nlp.problem
    if model.dim == 1 or not pb.obstacles:
        return [("straight", _straight_seed(nlp, x0))]
    start = model.contact(x0, x0)
    sides = None if requested is None else requested.obstacle_sides
    out = []
    for chosen, waypoints in side_seeds(pb, start, _end_point(nlp, x0), sides=sides):
        out.append((ManeuverBranch(obstacle_sides=chosen).label(), _seed(nlp, x0, waypoints, np.zeros(model.n))))
    return out


def _wind_seeds(nlp: ManeuverNLP, plan: ManeuverPlan, requested: ManeuverBranch | None):
    """Seeds from a plan with one mass sent one turn more, or one turn less, round its closed rail."""
    model = nlp.model
    times = collocation_times(nlp.nodes(nlp.problem.duration_s))
    X = model.renormalize(plan.state(times))[0]
    U = plan.input(times)
    here = branch_of(plan).rail_turns
    out = []
    for i, rail in enumerate(model.rails):
        if not rail.periodic:
            continue
        for turns in (1, -1):
            if requested is not None and requested.rail_turns is not None and requested.rail_turns[i] is not None:
                if here[i] + turns != requested.rail_turns[i] and here[i] != requested.rail_turns[i]:
                    continue
            label = f"mass {i + 1} {turns:+d} turn from " + branch_of(plan).label()
            out.append((label, nlp.tr.pack(wind(X, times, i, model.n, turns), U)))
    return out


def _requested_seed(nlp: ManeuverNLP, x0, requested: ManeuverBranch):
    """Seeds that start with the requested turns of every mass (on every side combination)."""
    travel = np.array([0.0 if t is None else 2 * np.pi * t for t in (requested.rail_turns or (None,) * nlp.model.n)])
    if not travel.any():
        return []
    times = collocation_times(nlp.nodes(nlp.problem.duration_s))
    out = []
    for label, w in _side_seeds(nlp, x0, requested):
        X, U, _ = nlp.tr.unpack(w)
        for i, d in enumerate(travel):
            X = wind(X, times, i, nlp.model.n, d / (2 * np.pi))
        out.append((requested.label() + " (seeded)", nlp.tr.pack(X, U)))
    return out


# ------------------------------------------------------------------------------------------------
# search
# ------------------------------------------------------------------------------------------------

def _outcome(seed: str, plan: ManeuverPlan, *, full_mesh: bool = False) -> BranchOutcome:
    n = plan.plant.n_masses
    return BranchOutcome(seed=seed, branch=branch_of(plan), objective=float(plan.report.objective),
                         converged=bool(plan.converged), intervals=int(plan.nodes.size - 1),
                         iterations=int(plan.report.iterations),
                         rail_travel_rad=tuple(float(v) for v in plan.x[-1, :n] - plan.x[0, :n]), full_mesh=full_mesh)


def _search(nlp: ManeuverNLP, x0, requested, *, rounds: int, continuation, symbolic):
    """Coarse multi-start over the sides and windings, then the cheapest families on the full mesh."""
    N = nlp.intervals
    coarse = nlp if N <= 16 else ManeuverNLP(nlp.model.plant, nlp.problem, intervals=max(8, N // 4),
                                             symbolic=symbolic, solver=nlp.solver_options)
    found: dict[ManeuverBranch, ManeuverPlan] = {}
    rows: list[BranchOutcome] = []

    def attempt(label, w, stages=(1.0,)):
        plan = solve_stages(coarse, w, continuation=stages, rounds=False)
        rows.append(_outcome(label, plan))
        if plan.converged:
            fam = branch_of(plan)
            if fam not in found or plan.report.objective < found[fam].report.objective:
                found[fam] = plan
        return plan

    seeds = _side_seeds(coarse, x0, requested)
    for label, w in seeds:
        attempt(label, w)
    if not found:   # no side seed converged: the straight seed with the obstacle continuation
        attempt("straight roll, obstacle continuation", _straight_seed(coarse, x0), continuation)
    if requested is not None:
        for label, w in _requested_seed(coarse, x0, requested):
            attempt(label, w)
    tried: set[ManeuverBranch] = set()
    for _ in range(rounds):
        if not found:
            break
        best = min(found.values(), key=lambda p: p.report.objective)
        fam = branch_of(best)
        if fam in tried:
            break
        tried.add(fam)
        before = best.report.objective
        for label, w in _wind_seeds(coarse, best, requested):
            attempt(label, w)
        if min(p.report.objective for p in found.values()) >= before:
            break
    families = sorted(found.values(), key=lambda p: p.report.objective)
    if requested is not None:
        families = [p for p in families if requested.admits(branch_of(p))] or families
    if not families:
        plan = solve_stages(nlp, _straight_seed(nlp, x0), continuation=continuation)
        rows.append(_outcome("straight roll, obstacle continuation", plan, full_mesh=True))
        return plan, _mark(rows, plan)
    # the cheapest families on the full mesh (those within a factor 2 of the cheapest, at most 3)
    best_cost = families[0].report.objective
    finals = []
    for p in families[:3]:
        if p is not families[0] and p.report.objective > 2.0 * best_cost + 1e-12:
            break
        if coarse is nlp:
            finals.append(solve_stages(nlp, p.decision_vector, continuation=(1.0,), backoffs=_backoffs(p)))
        else:
            finals.append(solve_stages(nlp, nlp.guess(p), continuation=(1.0,), backoffs=_backoffs(p)))
        rows.append(_outcome(branch_of(p).label(), finals[-1], full_mesh=True))
    good = [p for p in finals if p.converged]
    if requested is not None:
        good = [p for p in good if requested.admits(branch_of(p))] or good
    plan = min(good, key=lambda p: p.report.objective) if good else finals[0]
    return plan, _mark(rows, plan)


def _mark(rows: list[BranchOutcome], plan: ManeuverPlan) -> tuple[BranchOutcome, ...]:
    """The table, cheapest converged first, with the returned plan's full-mesh row marked."""
    fam, N = branch_of(plan), plan.nodes.size - 1
    marked = []
    done = False
    for r in rows:
        hit = (not done and r.full_mesh and r.branch == fam and r.intervals == N
               and r.objective == float(plan.report.objective))
        done = done or hit
        marked.append(replace(r, chosen=hit))
    return tuple(sorted(marked, key=lambda r: (not r.converged, r.objective)))


def _backoffs(plan: ManeuverPlan) -> tuple[float, float, float]:
    return (plan.obstacle_backoff_m, *plan.contact_backoffs)


# ------------------------------------------------------------------------------------------------
# the stages of one solve
# ------------------------------------------------------------------------------------------------

def solve_stages(nlp: ManeuverNLP, w0, *, continuation=(1.0,), backoffs=(0.0, 0.0, 0.0), initial_state=None,
                 duration_s: float | None = None, target_contact_m=None, warm=None,
                 rounds: bool = True) -> ManeuverPlan:
    """Solve a seed through the planner's stages: continuation, clearance rounds, contact rounds.

    Parameters
    ----------
    nlp : ManeuverNLP
    w0 : ndarray, shape (n_w,)
        The seed.
    continuation : sequence of float
        Obstacle radius factors solved in turn (ignored without obstacles).
    backoffs : (float, float, float)
        Starting clearance back-off (m), friction back-off and normal-force back-off (N).
    initial_state, duration_s, target_contact_m : optional
        A re-solve's data (default: the NLP's problem's).
    warm : NLPSolution, optional
        Multipliers for a warm start of the first solve.
    rounds : bool
        Run the clearance and contact rounds (False: the search's coarse solves).

    Returns
    -------
    ManeuverPlan
    """
    problem = nlp.problem
    x0 = problem.initial_state if initial_state is None else initial_state
    solver = nlp.solver_options
    stage_its: list[int] = []
    wall = [0.0]
    backoff, b_mu, b_n = backoffs
    last = [None]

    def run(factor, w, relaxed=False):
        p = nlp.parameters(duration_s=duration_s, target_contact_m=target_contact_m, obstacle_factor=factor,
                           backoffs=(backoff, b_mu, b_n))
        sol = nlp.solve(w, p, initial_state=x0, relaxed=relaxed,
                        warm=warm if not stage_its or warm is None else last[0])
        stage_its.append(sol.iterations)
        wall[0] += sol.wall_time_s
        last[0] = sol
        return sol

    def make(sol, relaxed=False):
        return nlp.finish(sol, iterations=tuple(stage_its), solve_time_s=wall[0], relaxed=relaxed)

    factors = tuple(continuation) if problem.obstacles else (1.0,)
    sol = None
    w = w0
    for factor in factors:
        sol = run(factor, w, relaxed=nlp.has_contact)
        w = sol.w
    plan = make(sol, relaxed=nlp.has_contact)
    if not rounds:
        return plan if not nlp.has_contact else make(run(1.0, w))

    def contact_round(plan):
        return update_contact_backoffs(
            plan.report.peak_friction_coefficient_required, plan.report.least_normal_force_N,
            friction_coefficient=problem.friction_coefficient, min_normal_force_N=problem.min_normal_force_N,
            weight_N=nlp.model.weight_N, friction_backoff=b_mu, normal_backoff_N=b_n)

    if nlp.has_contact:
        free = plan
        plan = make(sol)
        if not (free.converged and plan.converged and contact_round(plan)[2]):
            if free.converged:
                sol = run(1.0, w)
            else:
                w = w0
                for factor in factors:
                    sol = run(factor, w)
                    w = sol.w
            plan = make(sol)
            if not plan.converged and free.converged:
                return _contact_failure(nlp, plan, free)
    from .maneuver import resimulate
    for _ in range(solver.clearance_rounds if problem.obstacles else 0):
        if not plan.converged:
            break
        t_r, x_r = resimulate(plan)
        contact = nlp.model.contact(x_r, plan.problem.initial_state)
        clear = min(float(ob.clearance(contact).min()) for ob in problem.obstacles)
        deficit = problem.clearance_margin_m - clear
        if deficit <= 0:
            break
        backoff += 1.5 * deficit + 1e-6
        tightened = make(run(1.0, plan.solution.w))
        if not tightened.converged:
            break       # keep the converged plan: its replay check (accuracy) reports the clearance it has
        plan = tightened
    if not (nlp.has_contact and plan.converged):
        return plan
    best, n_rounds = None, 0
    while True:
        new_mu, new_n, keeps, changed = contact_round(plan)
        if keeps and (best is None or plan.report.objective < best.report.objective):
            best = plan
        if not changed or n_rounds >= solver.contact_rounds:
            break
        n_rounds += 1
        b_mu, b_n = new_mu, new_n
        sol = run(1.0, plan.solution.w)
        plan = make(sol)
        if not plan.converged:
            break
    if best is not None:
        return replace(best, report=replace(best.report, iterations=int(sum(stage_its)),
                                            stage_iterations=tuple(stage_its), solve_time_s=wall[0]))
    r = plan.report
    message = between_nodes_message(r.peak_friction_coefficient_required, r.least_normal_force_N,
                                    friction_coefficient=problem.friction_coefficient,
                                    min_normal_force_N=problem.min_normal_force_N, rounds=n_rounds)
    return replace(plan, report=replace(r, converged=False, message=message, binding_contact_constraints=()))


def _contact_failure(nlp: ManeuverNLP, plan: ManeuverPlan, free: ManeuverPlan) -> ManeuverPlan:
    """The message of a plan that failed with contact constraints while the same problem without them solved."""
    problem = nlp.problem
    why = contact_failure_message(friction_coefficient=problem.friction_coefficient,
                                  min_normal_force_N=problem.min_normal_force_N, relaxed_converged=True,
                                  relaxed_peak_friction=free.report.peak_friction_coefficient_required,
                                  relaxed_least_normal_N=free.report.least_normal_force_N)
    viol, worst = nlp.violation(plan.solution)
    message = (f"not converged: {why} (IPOPT status {plan.report.status}; most violated constraint at the returned "
               f"point: {worst}, violation {viol:.3g})")
    return replace(plan, report=replace(plan.report, message=message))


# ------------------------------------------------------------------------------------------------
# diagnosis of an infeasible request
# ------------------------------------------------------------------------------------------------

def _feasible(nlp: ManeuverNLP, x0, continuation, *, duration_s: float, end) -> bool:
    seed = _straight_seed(nlp, x0, duration_s=duration_s, end=end)
    plan = solve_stages(nlp, seed, continuation=continuation, duration_s=duration_s, target_contact_m=end,
                        rounds=False)
    return plan.converged


def _limit_text(values) -> str:
    v = np.asarray(values, dtype=float)
    return f"{v[0]:g}" if np.all(v == v[0]) else str(v.tolist())


def diagnose(nlp: ManeuverNLP, x0, continuation=(0.5, 1.0), *, bisections: int = 5) -> str:
    """Which requirement binds in an infeasible request, and the smallest change the planner finds that helps.

    The duration and the target are parameters of the same NLP, so it is
    re-solved (straight seed, no rounds) at longer durations -- 2, 4 and 8
    times the requested one -- and, when one of them is feasible, bisected
    between the last infeasible and the first feasible duration; when none is,
    the target is moved towards the start and the reachable fraction of the
    way bisected at the requested duration.

    Parameters
    ----------
    nlp : ManeuverNLP
        Of the request (with a target).
    x0 : ndarray, shape (n_x,)
        The start.
    continuation : sequence of float
        Obstacle radius factors of each feasibility solve.
    bisections : int
        Bisection steps (each halves the bracket).

    Returns
    -------
    str
        One sentence naming the binding requirement and the change.
    """
    pb = nlp.problem
    T = pb.duration_s
    target = np.asarray(pb.target_contact_m, dtype=float)
    start = nlp.model.contact(x0, x0)
    limits = ", ".join(f"{k} = {_limit_text(v)}" for k, v in nlp.limits.items() if v is not None) or "no rail limits"
    lo, hi = T, None
    for factor in (2.0, 4.0, 8.0):
        if _feasible(nlp, x0, continuation, duration_s=factor * T, end=target):
            hi = factor * T
            break
        lo = factor * T
    if hi is not None:
        for _ in range(bisections):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if _feasible(nlp, x0, continuation, duration_s=mid, end=target) else (mid, hi)
        return (f"Diagnosis: the time binds -- the target {target.tolist()} m is reachable with {limits} from "
                f"duration_s = {hi:.3g} s (infeasible at {lo:.3g} s, bisected on the same NLP); lengthen duration_s "
                f"to at least {hi:.3g} s or loosen the limits")
    lo_s, hi_s = 0.0, 1.0
    if not _feasible(nlp, x0, continuation, duration_s=T, end=start + 0.05 * (target - start)):
        return (f"Diagnosis: not the distance nor the time -- even 5 % of the way to the target in {T:g} s, or the "
                f"whole way in {8 * T:g} s, is infeasible: the end conditions (rest_at_end, final_velocity_mps, "
                f"target_heading_rad), the obstacles or the limits ({limits}) contradict each other or the start")
    lo_s = 0.05
    for _ in range(bisections + 1):
        mid = 0.5 * (lo_s + hi_s)
        lo_s, hi_s = (mid, hi_s) if _feasible(nlp, x0, continuation, duration_s=T, end=start + mid *
                                              (target - start)) else (lo_s, mid)
    dist = float(np.linalg.norm(target - start))
    return (f"Diagnosis: the distance binds -- with {limits}, in {T:g} s the ball reaches about {lo_s * dist:.3g} m "
            f"of the {dist:.3g} m to the target (bisected on the same NLP), and even {8 * T:g} s is not enough: move "
            f"the target closer or loosen the limits")


# ------------------------------------------------------------------------------------------------
# accuracy
# ------------------------------------------------------------------------------------------------

def _halved(nodes: np.ndarray) -> np.ndarray:
    out = np.empty(2 * nodes.size - 1)
    out[0::2] = nodes
    out[1::2] = 0.5 * (nodes[:-1] + nodes[1:])
    return out


def _refine_to(plan: ManeuverPlan, nlp: ManeuverNLP | None, accuracy: PlanAccuracy, *, symbolic: str,
               problem: ManeuverProblem, solver: SolverOptions) -> tuple[ManeuverPlan, ManeuverNLP | None]:
    """Halve every interval until the cost estimate and the replay checks meet the tolerance.

    ``problem`` and ``solver`` are the finer NLPs'; ``nlp`` is the plan's own NLP (None when it was not built),
    returned when no finer one is solved.
    """
    tol = accuracy.tolerance
    sizes, costs = [plan.nodes.size - 1], [float(plan.report.objective)]
    estimate = float("nan")
    iterations = list(plan.report.stage_iterations)
    solve_time = plan.report.solve_time_s
    while True:
        checks, end_err = replay_checks(plan, tol)
        rel = estimate / max(abs(costs[-1]), 1e-300) if np.isfinite(estimate) else float("nan")
        cost_ok = np.isfinite(rel) and rel <= tol
        if cost_ok and all(c.passed for c in checks):
            break
        nodes = _halved(plan.nodes)
        if nodes.size - 1 > accuracy.max_intervals:
            break
        fine = ManeuverNLP(plan.plant, problem, nodes=nodes, symbolic=symbolic, solver=solver)
        new = solve_stages(fine, fine.guess(plan), backoffs=_backoffs(plan))
        iterations += list(new.report.stage_iterations)
        solve_time += new.report.solve_time_s
        if not new.converged:
            plan = new
            break
        same_family = branch_of(new) == branch_of(plan)
        estimate = richardson(plan.report.objective, new.report.objective) if same_family else float("nan")
        plan, nlp = new, fine
        sizes.append(plan.nodes.size - 1)
        costs.append(float(plan.report.objective))
    rel = estimate / max(abs(costs[-1]), 1e-300) if np.isfinite(estimate) else float("nan")
    failures = [c for c in checks if not c.passed]
    meets = bool(plan.converged and np.isfinite(rel) and rel <= tol and not failures)
    if meets:
        message = (f"meets {tol:g}: estimated cost error {estimate:.2e} ({rel:.1e} relative) on {sizes[-1]} "
                   f"intervals, replay end-state error {end_err:.1e}")
    else:
        why = [c.text() for c in failures]
        if not (np.isfinite(rel) and rel <= tol):
            why.insert(0, f"estimated relative cost error {rel:.2e} > {tol:g}" if np.isfinite(rel) else
                       "no cost-error estimate (the refined solve failed or changed family)")
        message = (f"does not meet the accuracy {tol:g} with at most {accuracy.max_intervals} intervals "
                   f"(meshes {sizes}): " + "; ".join(why))
    report = AccuracyReport(tolerance=tol, meets=meets, cost_error_estimate=estimate, relative_cost_error=rel,
                            mesh_sizes=tuple(sizes), objectives=tuple(costs), end_state_error=end_err,
                            checks=checks, message=message)
    r = plan.report
    new_report = replace(r, iterations=int(sum(iterations)), stage_iterations=tuple(iterations),
                         solve_time_s=solve_time)
    if plan.converged and not meets:
        new_report = replace(new_report, converged=False, message="not converged: the plan " + message)
    elif plan.converged:
        new_report = replace(new_report, message=r.message + "; " + message)
    return replace(plan, report=new_report, accuracy=report), nlp


def refine_plan(plant, problem: ManeuverProblem, plan: ManeuverPlan, *, accuracy: PlanAccuracy = DEFAULT_ACCURACY,
                symbolic: str = "SX", solver: SolverOptions | None = None) -> ManeuverPlan:
    """Refine a converged plan until it meets an accuracy (every interval halved, re-solved, replay checked).

    Parameters
    ----------
    plant : RollingBall or RollingDisk
    problem : ManeuverProblem
    plan : ManeuverPlan
        A converged plan of ``problem`` (any mesh).
    accuracy : PlanAccuracy
    symbolic : {"SX", "MX"}
    solver : SolverOptions, optional

    Returns
    -------
    ManeuverPlan
        With :attr:`~ballctl.planning.maneuver.ManeuverPlan.accuracy`; not converged
        when the accuracy is not met within ``accuracy.max_intervals``.
    """
    accuracy = check_instance(accuracy, "accuracy", PlanAccuracy)
    plan.raise_if_failed()
    # the request's checks of the plan's own NLP, which is not built: only the finer meshes are solved
    check_request(plant, problem, nodes=plan.nodes, symbolic=symbolic)
    return _refine_to(plan, None, accuracy, symbolic=symbolic, problem=problem,
                      solver=solver or SolverOptions())[0]
