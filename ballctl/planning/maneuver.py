r"""Optimal maneuvers of the rolling ball and disk actuated by internal masses.

:func:`plan_maneuver` finds rail motions of a
:class:`~ballctl.plants.rolling_ball.RollingBall` (or a
:class:`~ballctl.plants.rolling_disk.RollingDisk`) that

* reach a target contact point at the final time (at rest, at a given
  contact-point velocity, or free), and/or track a prescribed contact-point
  path (least squares), with least effort ``int |u|^2 dt``;
* keep the contact point outside circular obstacles on the floor by a margin;
* respect rail speed and acceleration (and force) limits, keep masses on
  segment rails between the rail's ends, and start from the given state;
* optionally keep the contact with the floor: the friction cone
  ``|F_t| <= mu N`` (``friction_coefficient``, else the ball slips) and a least
  normal force ``N >= N_min`` (``min_normal_force_N``; ``N > 0`` or it lifts
  off), with ``F = sum_i m_i a_i + M g e3`` the floor's force of
  :func:`~ballctl.planning.symbolic.ball_contact_force_function` (equal to
  :meth:`RollingBall.contact_forces`), at every collocation point
  (:mod:`ballctl.planning.contact`).

Method: Hermite-Simpson direct collocation
(:mod:`ballctl.planning.transcription`) of the plant's ODE (eq. 7.2 / 6.2,
written symbolically once in :mod:`ballctl.planning.symbolic`), solved by
IPOPT through CasADi with exact first and second derivatives by automatic
differentiation. The ball's unit quaternion is kept on the sphere by the
algebraic constraint ``|q|^2 = 1`` at every collocation point with a
multiplier ``mu`` in ``q_dot = q Omega / 2 + mu q`` (``mu = 0`` for the exact
flow); the result is renormalized and the largest norm error is reported.

Warm starts: a straight roll from the start to the target (or the path's end),
then a continuation in the obstacle radius (solutions for growing radii
seed each other), and a mesh refinement (:func:`refine_plan`) seeded by
interpolating the previous plan. Obstacle clearance is checked on the
re-simulated path between the collocation points; when it dips below the
margin the constraint is tightened by the deficit and the problem re-solved.

Every result carries a :class:`~ballctl.planning.transcription.SolverReport` (IPOPT status, iterations,
constraint violation, dual infeasibility = KKT stationarity residual, solve
time). A failed solve returns ``converged=False`` with a message that names the
most violated constraint; :meth:`ManeuverPlan.raise_if_failed` turns it into
:class:`~ballctl._errors.InfeasiblePlanError`. Requests that are infeasible on
their face (start or target inside an obstacle, initial state outside the
limits) raise before any solve.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.40), (7.1)-(7.4).
V. Putkaradze, S.M. Rogers, "Numerical simulations of a rolling ball robot
actuated by internal point masses", Numer. Algebra Control Optim. 11(2) (2021)
(direct method with continuation for the same maneuvers).
A. Waechter, L.T. Biegler, "On the implementation of an interior-point filter
line-search algorithm for large-scale nonlinear programming", Math. Program.
106 (2006) 25-57 (IPOPT).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._errors import InfeasiblePlanError, ParameterError
from ..ode import IntegrationOptions
from .._validation import as_vector, check_positive
from ._models import BallModel, plant_model
from .contact import check_friction_coefficient, check_min_normal_force
from .transcription import SolverReport, hermite_state, quadratic_input

__all__ = [
    "CircularObstacle",
    "ManeuverPlan",
    "ManeuverProblem",
    "resimulate",
]


# ------------------------------------------------------------------------------------------------
# problem description
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class CircularObstacle:
    """A disk on the floor the contact point must stay out of.

    Attributes
    ----------
    center_m : ndarray, shape (2,)
        Centre (e1, e2) in m.
    radius_m : float
        Radius in m, > 0. Include the ball's radius here when the obstacle
        is a post the ball's body must not touch.
    """

    center_m: np.ndarray
    radius_m: float

    def __post_init__(self) -> None:
        c = as_vector(self.center_m, "center_m", 2).copy()
        c.setflags(write=False)
        object.__setattr__(self, "center_m", c)
        object.__setattr__(self, "radius_m", check_positive(self.radius_m, "radius_m", "m"))

    def clearance(self, points) -> np.ndarray:
        """Signed distance (m) of contact points outside the obstacle's edge.

        Parameters
        ----------
        points : array_like, shape (..., 2)
            Contact points in m.

        Returns
        -------
        ndarray, shape (...)
        """
        return np.linalg.norm(np.asarray(points, dtype=float) - self.center_m, axis=-1) - self.radius_m


def optional_limit(value, name: str, unit: str, n: int):
    if value is None:
        return None
    arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy() if np.ndim(value) == 0 else \
        as_vector(value, name, n).copy()
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ParameterError(f"{name} must be > 0 {unit} (a scalar or one value per rail), got {value!r}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, kw_only=True)
class ManeuverProblem:
    """What to plan: objective, end conditions, obstacles and limits (SI units).

    Attributes
    ----------
    initial_state : ndarray, shape (n_x,)
        Plant state at t = 0 (eq. 7.1 for the ball, 6.1 for the disk); fixed.
    duration_s : float
        Maneuver time T in s, > 0.
    target_contact_m : ndarray, shape (2,) or (1,), optional
        Contact point at T (ball: (e1, e2); disk: e1 travel from the start).
    final_velocity_mps : ndarray, shape (2,) or (1,), optional
        Contact-point velocity at T (m/s); ``None`` leaves it free.
    target_heading_rad : float, optional
        Ball only: heading at T, the direction (rad, from the floor's e1
        towards e2) of the body's first axis ``Lambda e1`` projected on the
        floor (:meth:`ManeuverPlan.heading`); ``None`` leaves it free.
    rest_at_end : bool
        Ball (all of ``Omega``) and masses (``theta_dot``) at rest at T.
    path : callable, optional
        ``path(t (K,)) -> (K, 2)`` (disk: ``(K, 1)``) contact points in m to track.
    tracking_weight : float
        Weight of ``int |contact - path|^2 dt`` in 1/(m^2 s).
    effort_weight : float
        Weight of ``int |u|^2 dt`` (units of ``1 / (u^2 s)``), >= 0.
    obstacles : tuple of CircularObstacle
        Ball only.
    clearance_margin_m : float
        Required clearance from every obstacle edge, m, >= 0.
    max_rail_speed : float or ndarray, optional
        ``|theta_dot_i|`` bound (rad/s; m/s on segment rails).
    max_rail_acceleration : float or ndarray, optional
        ``|theta_ddot_i|`` bound (rad/s^2; m/s^2 on segment rails).
    max_rail_force : float or ndarray, optional
        ``|tau_i|`` bound (N or N m) when the plant takes forces.
    friction_coefficient : float, optional
        Coulomb friction coefficient of the floor (dimensionless, > 0): the
        floor's force ``F = sum_i m_i a_i + M g e3`` must stay in the friction
        cone, ``|F_t|^2 <= mu^2 N^2`` and ``N >= 0``, at every collocation
        point (else the ball slips). ``None``: rolling without slipping is
        assumed whatever force it takes.
    min_normal_force_N : float, optional
        Least normal force N in N, >= 0, at every collocation point (0: the
        ball must not lift off). ``None``: no bound.
    """

    initial_state: np.ndarray
    duration_s: float
    target_contact_m: np.ndarray | None = None
    final_velocity_mps: np.ndarray | None = None
    target_heading_rad: float | None = None
    rest_at_end: bool = False
    path: Callable | None = None
    tracking_weight: float = 0.0
    effort_weight: float = 1.0
    obstacles: tuple[CircularObstacle, ...] = ()
    clearance_margin_m: float = 0.0
    max_rail_speed: np.ndarray | float | None = None
    max_rail_acceleration: np.ndarray | float | None = None
    max_rail_force: np.ndarray | float | None = None
    friction_coefficient: float | None = None
    min_normal_force_N: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "friction_coefficient", check_friction_coefficient(self.friction_coefficient))
        object.__setattr__(self, "min_normal_force_N", check_min_normal_force(self.min_normal_force_N))
        x0 = as_vector(self.initial_state, "initial_state").copy()
        x0.setflags(write=False)
        object.__setattr__(self, "initial_state", x0)
        object.__setattr__(self, "duration_s", check_positive(self.duration_s, "duration_s", "s"))
        for name in ("target_contact_m", "final_velocity_mps"):
            v = getattr(self, name)
            if v is not None:
                v = as_vector(v, name).copy()
                if v.size not in (1, 2):
                    raise ParameterError(f"{name} must have length 2 (ball, m) or 1 (disk), got length {v.size}")
                v.setflags(write=False)
                object.__setattr__(self, name, v)
        if self.target_heading_rad is not None:
            h = self.target_heading_rad
            if isinstance(h, bool) or not isinstance(h, (int, float, np.floating, np.integer)) or not np.isfinite(h):
                raise ParameterError(f"target_heading_rad must be a finite angle in rad, got {h!r}")
            object.__setattr__(self, "target_heading_rad", float(h))
        if self.rest_at_end and self.final_velocity_mps is not None and np.any(self.final_velocity_mps != 0):
            raise ParameterError("rest_at_end=True contradicts a non-zero final_velocity_mps; give one of them")
        if self.path is not None and not callable(self.path):
            raise ParameterError("path must be a callable path(t (K,)) -> (K, 2) contact points in m, or None")
        for name in ("tracking_weight", "effort_weight", "clearance_margin_m"):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v < 0:
                raise ParameterError(f"{name} must be finite and >= 0, got {getattr(self, name)!r}")
            object.__setattr__(self, name, v)
        if self.path is not None and self.tracking_weight <= 0:
            raise ParameterError("a path needs tracking_weight > 0 (1/(m^2 s)) to enter the objective")
        if self.target_contact_m is None and self.path is None:
            raise ParameterError("give a target_contact_m, a path to track, or both")
        obstacles = tuple(self.obstacles)
        for k, ob in enumerate(obstacles):
            if not isinstance(ob, CircularObstacle):
                raise ParameterError(f"obstacles[{k}] must be a CircularObstacle, got {type(ob).__name__}")
        object.__setattr__(self, "obstacles", obstacles)


# ------------------------------------------------------------------------------------------------
# result
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ManeuverPlan:
    """An optimized maneuver (states and inputs on the collocation points).

    Attributes
    ----------
    plant : RollingBall or RollingDisk
    problem : ManeuverProblem
    nodes : ndarray, shape (N + 1,)
        Mesh nodes in s.
    t : ndarray, shape (P,)
        Collocation points (nodes and midpoints) in s, ``P = 2N + 1``.
    x : ndarray, shape (P, n_x)
        Planned states (quaternions renormalized).
    u : ndarray, shape (P, n_u)
        Planned inputs (rail accelerations or forces, per ``plant.inputs``).
    report : SolverReport
    obstacle_backoff_m : float
        Extra clearance imposed at the collocation points so that the
        re-simulated path clears every obstacle by the margin between them.
    decision_vector : ndarray, shape (n_variables,)
        The NLP's solution vector as returned by IPOPT (before renormalization).
    contact_backoffs : (float, float)
        ``(b_mu, b_N)``: the friction cone imposed at the collocation points
        with ``(1 - b_mu) friction_coefficient`` (dimensionless) and the normal
        force with ``min_normal_force_N + b_N`` (N), so that the contact
        constraints hold between the points too (``contact_rounds`` of
        :func:`~ballctl.planning.planner.plan_maneuver`).
    solution : NLPSolution, optional
        The IPOPT solve it came from, with its multipliers: the warm start of a
        re-solve (:class:`~ballctl.planning.nlp.ManeuverNLP`).
    branches : tuple of BranchOutcome
        The families of local optima the planner found and solved, cheapest
        first (:mod:`ballctl.planning.branches`); empty when no search ran.
    accuracy : AccuracyReport, optional
        The discretization-error estimate and the replay checks
        (:mod:`ballctl.planning.accuracy`); ``None`` when not checked.
    second_order : SecondOrderReport, optional
        The second-order optimality check at the solution
        (:mod:`ballctl.planning.optimality`); ``None`` when not checked.
    """

    plant: object
    problem: ManeuverProblem
    nodes: np.ndarray
    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    report: SolverReport
    obstacle_backoff_m: float = 0.0
    decision_vector: np.ndarray = field(default=None, repr=False)
    contact_backoffs: tuple[float, float] = (0.0, 0.0)
    solution: object = field(default=None, repr=False)
    branches: tuple = ()
    accuracy: object = None
    second_order: object = None

    @property
    def duration_s(self) -> float:
        """The plan's duration in s."""
        return float(self.nodes[-1] - self.nodes[0])

    @property
    def converged(self) -> bool:
        """Whether the solver converged to a feasible point (see :class:`SolverReport`)."""
        return self.report.converged

    def raise_if_failed(self) -> ManeuverPlan:
        """Return self, or raise :class:`~ballctl._errors.InfeasiblePlanError` with the report's message."""
        if not self.report.converged:
            raise InfeasiblePlanError(self.report.message)
        return self

    def input(self, t) -> np.ndarray:
        """Planned input: the quadratic of each interval.

        Parameters
        ----------
        t : float or array_like, shape (K,)
            Times in s (clipped to the plan's interval).

        Returns
        -------
        ndarray, shape (n_u,) for a scalar ``t``, else (K, n_u)
        """
        scalar = np.ndim(t) == 0
        out = quadratic_input(self.nodes, self.u, np.clip(t, self.nodes[0], self.nodes[-1]))
        return out[0] if scalar else out

    def state(self, t) -> np.ndarray:
        """Planned state: the cubic Hermite collocation polynomial.

        Parameters
        ----------
        t : array_like, shape (K,)
            Times in s.

        Returns
        -------
        ndarray, shape (K, n_x)
        """
        model = plant_model(self.plant)
        xn, un = self.x[0::2], self.u[0::2]
        return hermite_state(self.nodes, xn, model.f_numpy(xn, un), t)

    def contact(self, t=None) -> np.ndarray:
        """Planned contact point in m.

        Parameters
        ----------
        t : array_like, shape (K,), optional
            Times in s (default: the collocation points).

        Returns
        -------
        ndarray, shape (K, 2) for the ball, (K, 1) for the disk (travel from the start)
        """
        model = plant_model(self.plant)
        x = self.x if t is None else self.state(t)
        return model.contact(x, self.problem.initial_state)

    def contact_forces(self, t=None) -> tuple[np.ndarray, np.ndarray]:
        """The floor's force on the planned motion, ``F = sum_i m_i a_i + M g e3`` (the plant's compiled kernel).

        Parameters
        ----------
        t : array_like, shape (K,), optional
            Times in s (default: the collocation points, where the NLP imposes
            the contact constraints); between them the planned state is the
            collocation polynomial and the input its quadratic.

        Returns
        -------
        normal : ndarray, shape (K,)
            Normal force in N.
        tangential : ndarray, shape (K, 2) for the ball, (K, 1) for the disk
            Friction force in N; ``|F_t| / N`` is
            :func:`~ballctl.plants.base.friction_coefficient_required`.
        """
        if t is None:
            x, u = self.x, self.u
        else:
            x, u = self.state(t), self.input(np.atleast_1d(np.asarray(t, dtype=float)))
        return self.plant.contact_forces(0.0, x, u)

    def heading(self, t=None) -> np.ndarray:
        """Planned heading of the ball in rad: ``atan2(Lambda_21, Lambda_11)``.

        The direction of the body's first axis ``Lambda e1`` projected on the
        floor, from e1 towards e2 (undefined when that axis is vertical).

        Parameters
        ----------
        t : array_like, shape (K,), optional
            Times in s (default: the collocation points).

        Returns
        -------
        ndarray, shape (K,)

        Raises
        ------
        ParameterError
            For a disk (it has no heading).
        """
        model = plant_model(self.plant)
        if not isinstance(model, BallModel):
            raise ParameterError("heading is defined for a RollingBall plan; a planar disk has no heading")
        x = self.x if t is None else self.state(t)
        return model.heading(x)


def resimulate(plan: ManeuverPlan, t_eval=None, *, rtol: float = 1e-12, atol: float = 1e-12):
    """Integrate the plant under the planned inputs (DOP853, restarting at every mesh node).

    Parameters
    ----------
    plan : ManeuverPlan
    t_eval : array_like, shape (K,), optional
        Output times in s (default: 20 per mesh interval).
    rtol, atol : float
        Integrator tolerances.

    Returns
    -------
    t : ndarray, shape (K,)
    x : ndarray, shape (K, n_x)
    """
    if t_eval is None:
        t_eval = np.unique(np.concatenate([np.linspace(a, b, 21) for a, b in zip(plan.nodes[:-1], plan.nodes[1:])]))
    run = plan.plant.simulate(plan.problem.initial_state, (plan.nodes[0], plan.nodes[-1]), plan.input,
                              breakpoints=plan.nodes[1:-1], t_eval=np.asarray(t_eval, dtype=float),
                              options=IntegrationOptions(rtol=rtol, atol=atol), use_jacobian=False)
    return run.t, run.x


# ------------------------------------------------------------------------------------------------
# the NLP
# ------------------------------------------------------------------------------------------------

def precheck(model, problem: ManeuverProblem, x0: np.ndarray) -> None:
    problems = []
    n = model.n
    if model.dim == 1 and problem.target_heading_rad is not None:
        problems.append("target_heading_rad is for the ball (a planar disk has no heading); remove it for a "
                        "RollingDisk")
    if model.dim == 1 and problem.obstacles:
        problems.append("obstacles are for the ball (the disk rolls on a line); remove them for a RollingDisk")
    for name in ("target_contact_m", "final_velocity_mps"):
        v = getattr(problem, name)
        if v is not None and v.size != model.dim:
            problems.append(f"{name} must have length {model.dim} for a {type(model.plant).__name__}")
    start = model.contact(x0, x0)
    margin = problem.clearance_margin_m
    for k, ob in enumerate(problem.obstacles):
        c0 = float(ob.clearance(start))
        if c0 < margin:
            problems.append(f"obstacles[{k}] (centre {ob.center_m.tolist()} m, radius {ob.radius_m} m) covers the "
                            f"start: clearance {c0:.4g} m < clearance_margin_m = {margin} m")
        if problem.target_contact_m is not None and model.dim == 2:
            ct = float(ob.clearance(problem.target_contact_m))
            if ct < margin:
                problems.append(f"obstacles[{k}] covers the target {problem.target_contact_m.tolist()} m: "
                                f"clearance {ct:.4g} m < clearance_margin_m = {margin} m")
    theta, thd = x0[:n], x0[n:2 * n]
    for i, rail in enumerate(model.rails):
        if not rail.periodic:
            lo, hi = rail.parameter_range
            if not lo <= theta[i] <= hi:
                problems.append(f"initial theta_{i + 1} = {theta[i]:.6g} lies outside rail {i + 1}'s ends "
                                f"[{lo:.6g}, {hi:.6g}]")
    if problem.max_rail_speed is not None:
        lim = optional_limit(problem.max_rail_speed, "max_rail_speed", "", n)
        for i in np.flatnonzero(np.abs(thd) > lim):
            problems.append(f"initial theta_dot_{i + 1} = {thd[i]:.6g} exceeds max_rail_speed = {lim[i]:.6g}")
    if problem.max_rail_force is not None and model.plant.inputs != "force":
        problems.append("max_rail_force needs a plant with inputs='force'; use max_rail_acceleration")
    if problems:
        raise InfeasiblePlanError("infeasible maneuver request:\n  - " + "\n  - ".join(problems))
