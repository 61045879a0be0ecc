r"""Receding (shrinking) horizon: re-plan the ball's maneuver from the measured state while it rolls.

:func:`track_receding` runs the rolling ball's ODE (eq. 7.2) from a perturbed start and, every
``replan_every`` control steps, re-solves the plan's NLP (:class:`~ballctl.planning.nlp.ManeuverNLP`,
built once) from the measured state ``x(t_j)`` over what is left of the maneuver,

.. math::

    \min_{u} \int_0^{T - t_j} |u(s)|^2 \, ds \quad \text{s.t.} \quad
    \dot x = f(x, u),\; x(0) = x(t_j),\; \text{the plan's end conditions, obstacles and limits,}

warm-started from the previous plan shifted by the replan period
(:meth:`~ballctl.planning.nlp.ManeuverNLP.guess`) and the previous solve's multipliers shifted the
same way (:meth:`~ballctl.planning.nlp.ManeuverNLP.shift`; IPOPT's primal-dual warm start). Between replans the
current plan's input (its collocation quadratics) is applied open loop; the normalized mesh of
the NLP shrinks with the horizon. Replanning stops when
less than ``min_horizon_s`` is left (the end is then flown on the last plan); a replan that does
not converge is dropped and the previous plan kept. Solves are assumed instantaneous (the
measured state is the one the new plan starts from); their wall times are recorded so they can
be compared with the replan period.

:func:`compare_tracking` runs it next to the finite-horizon LQR tracking the fixed plan
(:func:`~ballctl.planning.follow.track_plan`) from the same perturbed starts.

References
----------
J.B. Rawlings, D.Q. Mayne, M.M. Diehl, *Model Predictive Control: Theory, Computation, and Design*,
2nd ed., Nob Hill (2017), sections 1.3 and 8.8 (shrinking horizon, warm starts).
M. Diehl, H.G. Bock, J.P. Schloeder, "A real-time iteration scheme for nonlinear optimization in
optimal feedback control", SIAM J. Control Optim. 43 (2005) 1714-1736 (shifted initialization).
A. Waechter, L.T. Biegler, Math. Program. 106 (2006) 25-57, section 3.8 (IPOPT's warm start).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError
from .._validation import check_integer, check_instance, check_nonnegative, check_positive
from ..ode import IntegrationOptions
from ..plants.rolling_ball import RollingBall
from .follow import (
    ConstraintChecks,
    ConstraintReport,
    perturbed_start,
    plan_chart_rotation,
    run_constraints,
    track_plan,
)
from .maneuver import ManeuverPlan
from .nlp import ManeuverNLP, NLPSolution
from .planner import solve_stages
from .transcription import SolverOptions

__all__ = [
    "REPLAN_SOLVER",
    "ComparisonRow",
    "RecedingTracking",
    "Replan",
    "TrackingComparison",
    "TrackingStart",
    "compare_tracking",
    "random_starts",
    "receding_start",
    "track_receding",
]

#: IPOPT settings of the replans: a scaled KKT tolerance of 1e-6 (the planner's 1e-9 buys nothing while the
#: plan is replaced a replan period later) with constraints kept to 1e-8; on the built-in maneuver it saves
#: about a third of the iterations at the same cost to 1e-6 relative (benchmarks/bench_planning.py)
REPLAN_SOLVER = SolverOptions(tolerance=1e-6, constraint_tolerance=1e-8)

#: Gauss-Legendre nodes on [0, 1] and weights: exact for the square of a quadratic input (degree 4)
_GAUSS_X = 0.5 + 0.5 * np.array([-np.sqrt(0.6), 0.0, np.sqrt(0.6)])
_GAUSS_W = np.array([5.0, 8.0, 5.0]) / 18.0


@dataclass(frozen=True, kw_only=True)
class Replan:
    """One replan of a receding-horizon run.

    Attributes
    ----------
    time_s : float
        Run time of the measured state it starts from, s.
    duration_s : float
        The horizon solved, ``T - time_s`` in s.
    solve_time_s : float
        Wall time of its IPOPT solve(s), s.
    wall_time_s : float
        Wall time of the whole replan (guess, solves, the stages' re-simulations, the plan's report), s.
    iterations : int
        IPOPT iterations (all stages).
    converged : bool
        Whether it converged; a replan that did not is dropped (the previous plan flies on).
    objective : float
        The new plan's cost (``effort_weight * int |u|^2 dt`` over the horizon).
    status : str
        IPOPT's return status.
    warm : bool
        Whether the solve was warm-started from the previous solve's multipliers.
    """

    time_s: float
    duration_s: float
    solve_time_s: float
    wall_time_s: float
    iterations: int
    converged: bool
    objective: float
    status: str
    warm: bool


@dataclass(frozen=True, kw_only=True)
class RecedingTracking(ConstraintChecks):
    r"""A receding-horizon run of a ball plan (:func:`track_receding`).

    Attributes
    ----------
    plan : ManeuverPlan
        The plan it started from.
    replans : tuple of Replan
        Every replan, in time order.
    t : ndarray, shape (K + 1,)
        Control times in s.
    x : ndarray, shape (K + 1, 2n + 9)
        ODE states (eq. 7.1) at the control times.
    dense_t : ndarray, shape (J,)
        Times in s of the dense samples (``samples_per_step`` per control step).
    dense_x : ndarray, shape (J, 2n + 9)
        ODE states there.
    dense_u : ndarray, shape (J, n)
        The applied input there (rail accelerations or forces).
    cost : float
        ``int_0^T |u|^2 dt`` of the applied input (exact: 3-point Gauss-Legendre on every piece
        between the mesh nodes and the replan times, where the input is a quadratic).
    constraints : tuple of ConstraintReport
        The plan's constraints on the run (:func:`~ballctl.planning.follow.run_constraints`).
    final_plan : ManeuverPlan
        The plan flown at the end.
    final_plan_start_s : float
        Run time at which ``final_plan`` started, s.
    open_loop_final_error_m : float
        Contact-point distance from the target at ``T`` of the original plan's input replayed
        from the same start (no replanning), m.
    dt : float
        Control step, s.
    replan_every : int
        Control steps between replans.
    min_horizon_s : float
        No replan with less than this left, s.
    """

    plan: ManeuverPlan = field(repr=False)
    replans: tuple[Replan, ...]
    t: np.ndarray = field(repr=False)
    x: np.ndarray = field(repr=False)
    dense_t: np.ndarray = field(repr=False)
    dense_x: np.ndarray = field(repr=False)
    dense_u: np.ndarray = field(repr=False)
    cost: float
    constraints: tuple[ConstraintReport, ...]
    final_plan: ManeuverPlan = field(repr=False)
    final_plan_start_s: float
    open_loop_final_error_m: float
    dt: float
    replan_every: int
    min_horizon_s: float

    @property
    def contact_m(self) -> np.ndarray:
        """Contact point at the control times, m, shape (K + 1, 2)."""
        return self.plan.plant.split_state(self.x)[4]

    @property
    def final_error_m(self) -> float:
        """Contact-point distance from the plan's target at ``T``, m."""
        return float(np.linalg.norm(self.contact_m[-1] - self.plan.problem.target_contact_m))

    @property
    def failures(self) -> int:
        """Replans that did not converge (the previous plan was kept)."""
        return sum(not r.converged for r in self.replans)

    @property
    def solve_times_s(self) -> np.ndarray:
        """Wall time of every replan, s."""
        return np.array([r.solve_time_s for r in self.replans])

    @property
    def iterations(self) -> np.ndarray:
        """IPOPT iterations of every replan."""
        return np.array([r.iterations for r in self.replans], dtype=int)

    @property
    def replan_period_s(self) -> float:
        """``replan_every * dt`` in s: the time a replan may take on a real-time loop."""
        return self.replan_every * self.dt

    @property
    def peak_rail_speed(self) -> np.ndarray:
        """Largest ``|theta_dot_i|`` per rail over the dense samples (rad/s)."""
        n = self.plan.plant.n_masses
        return np.abs(self.dense_x[:, n:2 * n]).max(axis=0)

    @property
    def peak_rail_input(self) -> np.ndarray:
        """Largest applied ``|u_i|`` per rail over the dense samples (rad/s^2 for an acceleration plant)."""
        return np.abs(self.dense_u).max(axis=0)


@dataclass(frozen=True)
class TrackingStart:
    """A perturbed start: the contact point shifted, yaw and every rail angle turned.

    Attributes
    ----------
    contact_offset_m : (float, float)
        Contact-point offset in m.
    angle_offset_rad : float
        Offset of yaw and of every rail angle in rad.
    """

    contact_offset_m: tuple[float, float]
    angle_offset_rad: float

    def __post_init__(self) -> None:
        off = tuple(float(v) for v in self.contact_offset_m)
        if len(off) != 2 or not np.all(np.isfinite(off)):
            raise ParameterError(f"contact_offset_m must be two finite offsets in m, got {self.contact_offset_m!r}")
        object.__setattr__(self, "contact_offset_m", off)
        angle = float(self.angle_offset_rad)
        if not np.isfinite(angle):
            raise ParameterError(f"angle_offset_rad must be a finite angle in rad, got {self.angle_offset_rad!r}")
        object.__setattr__(self, "angle_offset_rad", angle)

    def label(self) -> str:
        """``"(+5.0, -5.0) cm, +0.10 rad"``."""
        dx, dy = (100 * v for v in self.contact_offset_m)
        return f"({dx:+.1f}, {dy:+.1f}) cm, {self.angle_offset_rad:+.2f} rad"


def random_starts(count: int, *, seed: int = 0, max_contact_m: float = 0.05,
                  max_angle_rad: float = 0.1) -> tuple[TrackingStart, ...]:
    """Perturbed starts drawn uniformly: each contact offset in ``[-max_contact_m, max_contact_m]`` m, the angle
    offset in ``[-max_angle_rad, max_angle_rad]`` rad.

    Parameters
    ----------
    count : int
        Number of starts, >= 1.
    seed : int
        Seed of ``numpy.random.default_rng``.
    max_contact_m, max_angle_rad : float
        Largest offsets, m and rad, >= 0.

    Returns
    -------
    tuple of TrackingStart
    """
    count = check_integer(count, "count", minimum=1)
    c = check_nonnegative(max_contact_m, "max_contact_m", "m")
    a = check_nonnegative(max_angle_rad, "max_angle_rad", "rad")
    rng = np.random.default_rng(check_integer(seed, "seed", minimum=0))
    draws = rng.uniform(-1.0, 1.0, size=(count, 3))
    return tuple(TrackingStart(contact_offset_m=(c * d[0], c * d[1]), angle_offset_rad=a * d[2]) for d in draws)


def receding_start(plan: ManeuverPlan, *, contact_offset_m: Sequence[float] = (0.05, -0.05),
                   angle_offset_rad: float = 0.1, chart_rotation="auto") -> np.ndarray:
    r"""The perturbed start of :func:`~ballctl.planning.follow.track_plan` as an ODE state of the ball (eq. 7.1).

    The plan's initial state goes to the generalized coordinates of its
    :class:`~ballctl.plants.rolling_ball.RollingBallSystem`
    (:meth:`~ballctl.plants.rolling_ball.RollingBallSystem.from_ode_state`), is perturbed there
    (:func:`~ballctl.planning.follow.perturbed_start`: contact point, yaw and rails, the contact
    velocity completed from the rolling constraints) and comes back
    (:meth:`~ballctl.plants.rolling_ball.RollingBallSystem.to_ode_state`) with the quaternion's
    sign that of the plan's (``q`` and ``-q`` are the same orientation; the NLP's guess is
    continuous from the plan's).

    Parameters
    ----------
    plan : ManeuverPlan
        A plan of a :class:`~ballctl.plants.rolling_ball.RollingBall`.
    contact_offset_m : (float, float)
        Contact-point offset in m.
    angle_offset_rad : float
        Offset of yaw and of every rail angle in rad.
    chart_rotation : array_like, shape (3, 3), "auto" or None
        Chart of the generalized coordinates (as :func:`~ballctl.planning.follow.plan_reference`).

    Returns
    -------
    ndarray, shape (2n + 9,)
    """
    ball = _ball_of(plan)
    if isinstance(chart_rotation, str):
        if chart_rotation != "auto":
            raise ParameterError(f"chart_rotation must be a 3x3 rotation, 'auto' or None, got {chart_rotation!r}")
        chart_rotation = plan_chart_rotation(plan)
    system = ball.to_constrained_system(chart_rotation=chart_rotation)
    x, xd = system.from_ode_state(plan.problem.initial_state)
    x0, xd0 = perturbed_start(system, x, xd, contact_offset_m=contact_offset_m, angle_offset_rad=angle_offset_rad)
    return _aligned(ball, system.to_ode_state(x0, xd0), plan.problem.initial_state)


def _ball_of(plan: ManeuverPlan) -> RollingBall:
    check_instance(plan, "plan", ManeuverPlan)
    if not isinstance(plan.plant, RollingBall):
        raise ParameterError(f"receding-horizon tracking needs a plan of a RollingBall, got "
                             f"{type(plan.plant).__name__}")
    plan.raise_if_failed()
    if plan.problem.target_contact_m is None:
        raise ParameterError("receding-horizon tracking needs a plan with a target_contact_m (m)")
    return plan.plant


def _aligned(ball: RollingBall, x, like) -> np.ndarray:
    """``x`` with its quaternion renormalized and of the sign of ``like``'s."""
    x = np.array(x, dtype=float)
    n = ball.n_masses
    q = x[2 * n:2 * n + 4]
    q /= np.linalg.norm(q)
    if q @ np.asarray(like, dtype=float)[2 * n:2 * n + 4] < 0:
        q *= -1.0
    return x


def _compatible(nlp: ManeuverNLP, solution) -> bool:
    return (isinstance(solution, NLPSolution) and solution.w.size == nlp.constraints.lbw.size
            and solution.lam_g.size == nlp.constraints.lbg.size)


def track_receding(plan: ManeuverPlan, *, replan_every: int = 5, dt: float = 0.1,
                   contact_offset_m: Sequence[float] = (0.05, -0.05), angle_offset_rad: float = 0.1,
                   start=None, nlp: ManeuverNLP | None = None, min_horizon_s: float | None = None,
                   stages: bool = True, warm_multipliers: bool = True, solver: SolverOptions | None = None,
                   samples_per_step: int = 10, chart_rotation="auto") -> RecedingTracking:
    r"""Fly a ball plan by shrinking-horizon re-planning from the measured state (module docstring).

    Parameters
    ----------
    plan : ManeuverPlan
        Converged plan of a :class:`~ballctl.plants.rolling_ball.RollingBall` with a target
        contact point, whose duration is a whole number of ``dt``.
    replan_every : int
        Control steps between replans, >= 1 (the first replan is at ``t = 0``, from the perturbed start).
    dt : float
        Control step in s, > 0.
    contact_offset_m : (float, float)
        Initial contact-point offset in m (as :func:`~ballctl.planning.follow.track_plan`).
    angle_offset_rad : float
        Initial offset of yaw and of every rail angle in rad.
    start : array_like, shape (2n + 9,), optional
        The start as an ODE state (eq. 7.1) instead of the offsets.
    nlp : ManeuverNLP, optional
        The plan's NLP, reused (default: built here, ``ManeuverNLP(plan.plant, plan.problem,
        nodes=plan.nodes, solver=solver or REPLAN_SOLVER)``). Its problem must be the plan's in
        structure.
    min_horizon_s : float, optional
        No replan with less than this left, s (default ``max(2 replan_every dt, T / 10)``).
    stages : bool
        Run the planner's clearance and contact rounds on every replan
        (:func:`~ballctl.planning.planner.solve_stages`: the new plan re-simulated and re-solved
        with a larger obstacle back-off while its path between the collocation points dips
        below the margin); False: one warm IPOPT solve, with the previous plan's back-offs
        (faster; the path may then dip below the margin between the points by the
        discretization error).
    warm_multipliers : bool
        Warm-start IPOPT from the previous solve's multipliers, shifted in time
        (:meth:`~ballctl.planning.nlp.ManeuverNLP.shift`); False: a cold solve from the shifted guess.
    solver : SolverOptions, optional
        IPOPT's limits and tolerances of the NLP built here (ignored with ``nlp``); default
        :data:`REPLAN_SOLVER`.
    samples_per_step : int
        Dense samples per control step (clearance, peaks), >= 1.
    chart_rotation : array_like, shape (3, 3), "auto" or None
        Chart of the perturbation (:func:`receding_start`).

    Returns
    -------
    RecedingTracking

    Raises
    ------
    ParameterError
        A plan of another plant, without a target, not converged, or a duration that is not a
        whole number of ``dt``.
    """
    ball = _ball_of(plan)
    dt = check_positive(dt, "dt", "s")
    every = check_integer(replan_every, "replan_every", minimum=1)
    m = check_integer(samples_per_step, "samples_per_step", minimum=1)
    T = plan.duration_s
    K = int(round(T / dt))
    if K < 1 or abs(K * dt - T) > 1e-9 * max(1.0, T):
        raise ParameterError(f"the plan's duration {T} s must be a whole number (>= 1) of dt = {dt} s")
    floor = max(2 * every * dt, 0.1 * T) if min_horizon_s is None else \
        check_nonnegative(min_horizon_s, "min_horizon_s", "s")
    if nlp is None:
        nlp = ManeuverNLP(ball, plan.problem, nodes=plan.nodes, solver=solver or REPLAN_SOLVER)
    else:
        check_instance(nlp, "nlp", ManeuverNLP)
        if nlp.model.n_x != plan.x.shape[1] or nlp.model.plant.n_masses != ball.n_masses:
            raise ParameterError("nlp must be an NLP of the plan's plant and problem")
    if start is None:
        x = receding_start(plan, contact_offset_m=contact_offset_m, angle_offset_rad=angle_offset_rad,
                           chart_rotation=chart_rotation)
    else:
        x = _aligned(ball, ball.validate_state(start, "start"), plan.problem.initial_state)
    x_start = x.copy()
    options = IntegrationOptions(rtol=1e-10, atol=1e-12)
    current, t_cur = plan, 0.0
    warm = plan.solution if _compatible(nlp, plan.solution) else None
    replans: list[Replan] = []
    ts, xs, us = [np.zeros(1)], [x[None]], []
    samples: list[tuple[np.ndarray, np.ndarray]] = []
    pieces: list[tuple[float, float, ManeuverPlan, float]] = []
    k = 0
    while k < K:
        t = k * dt
        if k % every == 0 and T - t >= floor - 1e-9 * T:
            x = _aligned(ball, x, current.state(np.array([t - t_cur]))[0])
            begin = time.perf_counter()
            new = _replan(nlp, current, x, t - t_cur, T - t, warm if warm_multipliers else None, stages)
            wall = time.perf_counter() - begin
            replans.append(Replan(time_s=t, duration_s=T - t, solve_time_s=float(new.report.solve_time_s),
                                  wall_time_s=wall,
                                  iterations=int(new.report.iterations), converged=bool(new.converged),
                                  objective=float(new.report.objective), status=str(new.report.status),
                                  warm=bool(warm_multipliers and warm is not None)))
            if new.converged:
                current, t_cur, warm = new, t, new.solution
        k_next = min(K, (k // every + 1) * every)
        a, b = t, k_next * dt
        grid = np.linspace(a, b, (k_next - k) * m + 1)
        inner = [t_cur + s for s in current.nodes[1:-1] if a < t_cur + s < b]
        run = ball.simulate(x, (a, b), lambda s, p=current, c=t_cur: p.input(s - c), breakpoints=inner,
                            t_eval=grid[1:], options=options, use_jacobian=False)
        u_grid = current.input(grid - t_cur)
        ts.append(run.t[-grid.size + 1:])
        xs.append(run.x[-grid.size + 1:])
        us.append(u_grid[:-1])
        samples.append((grid, u_grid))
        pieces.append((a, b, current, t_cur))
        x = run.x[-1]
        k = k_next
    us.append(samples[-1][1][-1:])
    dense_t, dense_x, dense_u = np.concatenate(ts), np.vstack(xs), np.vstack(us)
    at_steps = np.arange(0, dense_t.size, m)
    _, speed, _, _, contact = ball.split_state(dense_x)
    constraints = run_constraints(plan.problem, dense_t, contact, speed, np.vstack([u for _, u in samples]),
                                  inputs=ball.inputs, input_times=np.concatenate([g for g, _ in samples]))
    replay = ball.simulate(x_start, (0.0, T), plan.input, breakpoints=plan.nodes[1:-1], t_eval=[T],
                           options=options, use_jacobian=False)
    open_err = float(np.linalg.norm(ball.split_state(replay.x[-1])[4] - plan.problem.target_contact_m))
    return RecedingTracking(plan=plan, replans=tuple(replans), t=dense_t[at_steps], x=dense_x[at_steps],
                            dense_t=dense_t, dense_x=dense_x, dense_u=dense_u, cost=_cost(pieces),
                            constraints=constraints, final_plan=current, final_plan_start_s=t_cur,
                            open_loop_final_error_m=open_err, dt=dt, replan_every=every, min_horizon_s=floor)


def _replan(nlp: ManeuverNLP, current: ManeuverPlan, x, offset_s: float, duration_s: float, warm,
            stages: bool) -> ManeuverPlan:
    """One replan from state ``x``: the current plan and its multipliers shifted by ``offset_s`` as the guess."""
    w0 = nlp.guess(current, duration_s=duration_s, time_offset_s=offset_s)
    if warm is not None:
        warm = nlp.shift(warm, time_offset_s=offset_s, duration_s=duration_s)
    backoffs = (current.obstacle_backoff_m, *current.contact_backoffs)
    if stages:
        return solve_stages(nlp, w0, initial_state=x, duration_s=duration_s, warm=warm, backoffs=backoffs)
    p = nlp.parameters(duration_s=duration_s, backoffs=backoffs)
    return nlp.finish(nlp.solve(w0, p, initial_state=x, warm=warm))


def _cost(pieces) -> float:
    r"""``int |u|^2 dt`` of the applied input: Gauss-Legendre on every quadratic piece (exact)."""
    total = 0.0
    for a, b, p, c in pieces:
        cuts = np.unique(np.concatenate([[a, b], [c + s for s in p.nodes if a < c + s < b]]))
        h = np.diff(cuts)
        s = (cuts[:-1, None] + h[:, None] * _GAUSS_X[None, :]).ravel()
        u = p.input(s - c)
        total += float(np.sum(np.repeat(h, 3) * np.tile(_GAUSS_W, h.size) * np.sum(u * u, axis=1)))
    return total


# ------------------------------------------------------------------------------------------------
# comparison with the LQR tracking the fixed plan
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ComparisonRow:
    """One method from one start (:func:`compare_tracking`).

    Attributes
    ----------
    start : TrackingStart
    method : str
        ``"LQR"`` (the fixed plan tracked by :func:`~ballctl.planning.follow.track_plan`) or
        ``"receding"`` (:func:`track_receding`).
    final_error_m : float
        Contact-point distance from the plan's target at ``T``, m.
    cost : float
        ``int_0^T |u|^2 dt`` of the applied input ((rail units/s^2)^2 s).
    least_clearance_m : float or None
        Least obstacle clearance of the contact path, m.
    peak_rail_acceleration : float
        Largest applied ``|u_i|`` (rad/s^2 on an acceleration plant).
    peak_rail_speed : float
        Largest ``|theta_dot_i|``, rad/s.
    constraints_kept : bool
        Every constraint of the plan kept.
    note : str
        Saturated steps (LQR) or the replans' iterations, solve times and failures (receding).
    """

    start: TrackingStart
    method: str
    final_error_m: float
    cost: float
    least_clearance_m: float | None
    peak_rail_acceleration: float
    peak_rail_speed: float
    constraints_kept: bool
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class TrackingComparison:
    """LQR tracking of the fixed plan next to receding-horizon re-planning, from the same starts.

    Attributes
    ----------
    plan : ManeuverPlan
    rows : tuple of ComparisonRow
        Per start, the LQR's row then the receding horizon's.
    lqr : tuple of PlanTracking
    receding : tuple of RecedingTracking
    """

    plan: ManeuverPlan = field(repr=False)
    rows: tuple[ComparisonRow, ...]
    lqr: tuple = field(repr=False)
    receding: tuple = field(repr=False)

    def table(self) -> str:
        """The rows as a Markdown table (mm, rad/s^2, rad/s)."""
        pb = self.plan.problem
        margin = f"{1e3 * pb.clearance_margin_m:g}"
        acc = "-" if pb.max_rail_acceleration is None else f"{float(np.max(pb.max_rail_acceleration)):g}"
        head = ["start (contact, angle)", "method", "final error (mm)", "cost int|u|^2 dt",
                f"least clearance (mm, margin {margin})", f"peak rail accel (limit {acc})", "peak rail speed",
                "kept", "note"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            clear = "-" if r.least_clearance_m is None else f"{1e3 * r.least_clearance_m:.1f}"
            cells = [r.start.label(), r.method, f"{1e3 * r.final_error_m:.3g}", f"{r.cost:.4f}", clear,
                     f"{r.peak_rail_acceleration:.3f}", f"{r.peak_rail_speed:.3f}",
                     "yes" if r.constraints_kept else "no", r.note]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def compare_tracking(plan: ManeuverPlan, starts: Sequence[TrackingStart] | None = None, *, replan_every: int = 5,
                     dt: float = 0.1, nlp: ManeuverNLP | None = None, stages: bool = True,
                     track_options: dict | None = None) -> TrackingComparison:
    r"""The LQR tracking the fixed plan and the receding horizon from the same perturbed starts.

    For every start, :func:`~ballctl.planning.follow.track_plan` (finite-horizon LQR on the rail
    inputs, commands saturated at the plan's input bound) and :func:`track_receding` (one NLP for
    all starts); the final contact error is measured against the plan's target for both, the cost
    is ``int |u|^2 dt`` of the applied input (the LQR's held inputs: ``sum_k |u_k|^2 dt``).

    Parameters
    ----------
    plan : ManeuverPlan
        Converged plan of a :class:`~ballctl.plants.rolling_ball.RollingBall` with a target.
    starts : sequence of TrackingStart, optional
        Default: :func:`random_starts` ``(4)`` after ``track_plan``'s own start (5 cm, -5 cm, 0.1 rad).
    replan_every : int
        Control steps between replans, >= 1.
    dt : float
        Control step of both, s.
    nlp : ManeuverNLP, optional
        Reused for every receding run (default: built once here with :data:`REPLAN_SOLVER`).
    stages : bool
        Passed to :func:`track_receding`.
    track_options : dict, optional
        Further keywords of :func:`~ballctl.planning.follow.track_plan`.

    Returns
    -------
    TrackingComparison
    """
    ball = _ball_of(plan)
    if starts is None:
        starts = (TrackingStart(contact_offset_m=(0.05, -0.05), angle_offset_rad=0.1), *random_starts(4))
    starts = tuple(starts)
    for i, s in enumerate(starts):
        check_instance(s, f"starts[{i}]", TrackingStart)
    if nlp is None:
        nlp = ManeuverNLP(ball, plan.problem, nodes=plan.nodes, solver=REPLAN_SOLVER)
    target = plan.problem.target_contact_m
    n = ball.n_masses
    rows, lqrs, recs = [], [], []
    for s in starts:
        tr = track_plan(plan, dt=dt, contact_offset_m=s.contact_offset_m, angle_offset_rad=s.angle_offset_rad,
                        **(track_options or {}))
        cl = tr.closed_loop
        held = cl.u[:-1]
        rows.append(ComparisonRow(
            start=s, method="LQR", final_error_m=float(np.linalg.norm(cl.x[-1, :2] - target)),
            cost=float(np.sum(held ** 2) * dt), least_clearance_m=tr.least_clearance_m,
            peak_rail_acceleration=float(tr.peak_rail_input.max()),
            peak_rail_speed=float(np.abs(tr.dense_x[:, n:2 * n]).max()), constraints_kept=tr.constraints_kept,
            note=f"saturated {tr.limit_steps.get('max_angle', 0)} of {held.shape[0]} steps"))
        rh = track_receding(plan, replan_every=replan_every, dt=dt, contact_offset_m=s.contact_offset_m,
                            angle_offset_rad=s.angle_offset_rad, nlp=nlp, stages=stages)
        rows.append(ComparisonRow(
            start=s, method="receding", final_error_m=rh.final_error_m, cost=rh.cost,
            least_clearance_m=rh.least_clearance_m, peak_rail_acceleration=float(rh.peak_rail_input.max()),
            peak_rail_speed=float(rh.peak_rail_speed.max()), constraints_kept=rh.constraints_kept,
            note=_receding_note(rh)))
        lqrs.append(tr)
        recs.append(rh)
    return TrackingComparison(plan=plan, rows=tuple(rows), lqr=tuple(lqrs), receding=tuple(recs))


def _receding_note(rh: RecedingTracking) -> str:
    its, times = rh.iterations, rh.solve_times_s
    later = f"{np.median(its[1:]):.0f}" if its.size > 1 else "-"
    failed = [f"t = {r.time_s:.1f} s: {r.status}" for r in rh.replans if not r.converged]
    return (f"{its.size} replans: {its[0]} iterations first, {later} median after; IPOPT {np.median(times):.2f} s "
            f"median, {times.max():.2f} s max; {len(failed)} failed{' (' + '; '.join(failed) + ')' if failed else ''}; "
            f"open loop {1e3 * rh.open_loop_final_error_m:.0f} mm")
