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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.integrate import solve_ivp

from .._errors import InfeasiblePlanError, IntegrationError, ParameterError, ShapeError
from ..ode import IntegrationOptions
from .._quaternion import quat_multiply, quat_to_matrix
from .._validation import as_vector, check_instance, check_positive
from ..plants.rolling_ball import RollingBall
from ..plants.rolling_disk import RollingDisk
from ._casadi import require_casadi
from .contact import (
    between_nodes_message,
    binding_contact_constraints,
    check_friction_coefficient,
    check_min_normal_force,
    contact_constraint_groups,
    contact_failure_message,
    contact_summary,
    contact_summary_text,
    update_contact_backoffs,
)
from .symbolic import (
    ball_contact_force_function,
    ball_rhs_function,
    disk_contact_force_function,
    disk_rhs_function,
    quat_to_matrix_casadi,
)
from .transcription import (
    NLPConstraints,
    SolverOptions,
    SolverReport,
    Transcription,
    collocation_times,
    dense_times,
    hermite_simpson,
    hermite_state,
    most_violated,
    quadratic_input,
    run_ipopt,
)

__all__ = [
    "CircularObstacle",
    "ManeuverPlan",
    "ManeuverProblem",
    "plan_maneuver",
    "refine_plan",
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


def _optional_limit(value, name: str, unit: str, n: int):
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
# plant adapters (numpy and casadi views of one plant)
# ------------------------------------------------------------------------------------------------

class _BallModel:
    def __init__(self, plant: RollingBall) -> None:
        self.plant = plant
        n = plant.n_masses
        self.n, self.n_x, self.n_u, self.dim = n, 2 * n + 9, n, 2
        self.q_slice = slice(2 * n, 2 * n + 4)
        self.rest_indices = list(range(n, 2 * n)) + list(range(2 * n + 4, 2 * n + 7))
        self.rails = [pm.rail for pm in plant.params.point_masses]
        self.weight_N = float(plant.masses_kg.sum()) * plant.params.gravity_mps2   # M g: the contact forces' scale

    def validate(self, x0):
        return self.plant.validate_state(x0, "initial_state")

    def f_casadi(self):
        ca = require_casadi()
        f = ball_rhs_function(self.plant)
        x, u, z = ca.SX.sym("x", self.n_x), ca.SX.sym("u", self.n_u), ca.SX.sym("mu", 1)
        e = ca.SX.zeros(self.n_x, 1)
        e[self.q_slice] = x[self.q_slice]
        faug = ca.Function("f", [x, u, z], [f(x, u) + z * e])
        h = ca.Function("h", [x], [ca.sumsqr(x[self.q_slice]) - 1.0])
        return faug, 1, h

    def f_numpy(self, x, u):
        return self.plant.rhs(0.0, x, u)

    def contact_force_casadi(self):
        return ball_contact_force_function(self.plant)

    def contact_casadi(self, X, x0):
        return X[2 * self.n + 7:2 * self.n + 9, :]

    def contact_velocity_casadi(self, F):
        return F[2 * self.n + 7:2 * self.n + 9, :]

    def heading_axis_casadi(self, x):
        """Floor projection ``(Lambda_11, Lambda_21)`` of the body's first axis at one state column."""
        Lam = quat_to_matrix_casadi(x[self.q_slice])
        return Lam[0, 0], Lam[1, 0]

    def heading(self, x):
        Lam = quat_to_matrix(np.asarray(x)[..., self.q_slice])
        return np.arctan2(Lam[..., 1, 0], Lam[..., 0, 0])

    def contact(self, x, x0):
        return np.asarray(x)[..., 2 * self.n + 7:]

    def renormalize(self, X):
        X = X.copy()
        q = X[:, self.q_slice]
        err = float(np.max(np.abs(np.linalg.norm(q, axis=1) - 1.0)))
        X[:, self.q_slice] = q / np.linalg.norm(q, axis=1, keepdims=True)
        return X, err

    def straight_roll(self, x0, end, times, T):
        """Contact point along the segment start -> end (smoothstep in time), rolling without slip."""
        n, r = self.n, self.plant.params.radius_m
        start = x0[2 * n + 7:]
        d = np.asarray(end, float) - start
        s = times / T
        prog = 3 * s ** 2 - 2 * s ** 3
        dprog = (6 * s - 6 * s ** 2) / T
        X = np.tile(x0, (times.size, 1))
        X[:, n:2 * n] = 0.0
        X[:, 2 * n + 7:] = start + prog[:, None] * d
        dist = np.linalg.norm(d)
        if dist > 0:
            axis = np.array([-d[1], d[0], 0.0]) / dist   # omega = (-z2_dot, z1_dot, 0) / r
            angle = prog * dist / r
            qR = np.column_stack([np.cos(angle / 2), np.sin(angle / 2)[:, None] * axis])
            q = quat_multiply(qR, x0[2 * n:2 * n + 4])
            X[:, 2 * n:2 * n + 4] = q
            omega = (dprog * dist / r)[:, None] * axis
            X[:, 2 * n + 4:2 * n + 7] = np.einsum("kji,kj->ki", quat_to_matrix(q), omega)
        return X


class _DiskModel:
    def __init__(self, plant: RollingDisk) -> None:
        self.plant = plant
        n = plant.n_masses
        self.n, self.n_x, self.n_u, self.dim = n, 2 * n + 2, n, 1
        self.q_slice = None
        self.rest_indices = list(range(n, 2 * n)) + [2 * n + 1]
        self.rails = [pm.rail for pm in plant.params.point_masses]
        self.weight_N = float(plant.masses_kg.sum()) * plant.params.gravity_mps2

    def validate(self, x0):
        return as_vector(x0, "initial_state", self.n_x)

    def f_casadi(self):
        ca = require_casadi()
        f = disk_rhs_function(self.plant)
        x, u, z = ca.SX.sym("x", self.n_x), ca.SX.sym("u", self.n_u), ca.SX.sym("z", 0)
        return ca.Function("f", [x, u, z], [f(x, u)]), 0, None

    def f_numpy(self, x, u):
        return self.plant.rhs(0.0, x, u)

    def contact_force_casadi(self):
        return disk_contact_force_function(self.plant)

    def contact_casadi(self, X, x0):
        r = self.plant.params.radius_m
        return -r * (X[2 * self.n, :] - float(x0[2 * self.n]))

    def contact_velocity_casadi(self, F):
        return -self.plant.params.radius_m * F[2 * self.n, :]

    def contact(self, x, x0):
        """e1 travel of the contact point from the start (eq. 5.41), shape (..., 1)."""
        r = self.plant.params.radius_m
        return (-r * (np.asarray(x)[..., 2 * self.n] - x0[2 * self.n]))[..., None]

    def renormalize(self, X):
        return X.copy(), 0.0

    def straight_roll(self, x0, end, times, T):
        n, r = self.n, self.plant.params.radius_m
        s = times / T
        prog, dprog = 3 * s ** 2 - 2 * s ** 3, (6 * s - 6 * s ** 2) / T
        X = np.tile(x0, (times.size, 1))
        X[:, n:2 * n] = 0.0
        X[:, 2 * n] = x0[2 * n] - prog * float(np.asarray(end)[0]) / r
        X[:, 2 * n + 1] = -dprog * float(np.asarray(end)[0]) / r
        return X


def _model(plant):
    if isinstance(plant, RollingBall):
        return _BallModel(plant)
    if isinstance(plant, RollingDisk):
        return _DiskModel(plant)
    raise ParameterError(f"plant must be a RollingBall or a RollingDisk, got {type(plant).__name__}")


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
        constraints hold between the points too (``contact_rounds`` of :func:`plan_maneuver`).
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
        model = _model(self.plant)
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
        model = _model(self.plant)
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
        model = _model(self.plant)
        if not isinstance(model, _BallModel):
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

def _precheck(model, problem: ManeuverProblem, x0: np.ndarray) -> None:
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
        lim = _optional_limit(problem.max_rail_speed, "max_rail_speed", "", n)
        for i in np.flatnonzero(np.abs(thd) > lim):
            problems.append(f"initial theta_dot_{i + 1} = {thd[i]:.6g} exceeds max_rail_speed = {lim[i]:.6g}")
    if problem.max_rail_force is not None and model.plant.inputs != "force":
        problems.append("max_rail_force needs a plant with inputs='force'; use max_rail_acceleration")
    if problems:
        raise InfeasiblePlanError("infeasible maneuver request:\n  - " + "\n  - ".join(problems))


class _NLP:
    """The transcribed problem, built once for a mesh and solved for several parameter values."""

    def __init__(self, model, problem: ManeuverProblem, nodes, *, solver: SolverOptions, symbolic: str) -> None:
        ca = require_casadi()
        start = time.perf_counter()
        self.model, self.problem = model, problem
        x0 = problem.initial_state
        f, n_z, h = model.f_casadi()
        tr: Transcription = hermite_simpson(f, nodes, n_z=n_z, algebraic=h, symbolic=symbolic)
        self.tr = tr
        P, n, T = tr.n_points, model.n, float(nodes[-1])
        # (obstacle radius factor, clearance back-off in m, friction back-off (fraction of mu), normal back-off in N)
        self.param = getattr(ca, symbolic).sym("p", 4)
        C = model.contact_casadi(tr.X, x0)      # (dim, P)
        wq = ca.DM(tr.quadrature_weights).T
        J = 0
        if problem.effort_weight > 0:
            J = J + problem.effort_weight * ca.sum2(wq * ca.sum1(tr.U ** 2))
        if problem.path is not None:
            ref = np.asarray(problem.path(tr.times), dtype=float).reshape(P, -1)
            if ref.shape[1] != model.dim or not np.all(np.isfinite(ref)):
                raise ShapeError(f"path(t) must return finite (K, {model.dim}) contact points in m, got shape "
                                 f"{ref.shape}")
            J = J + problem.tracking_weight * ca.sum2(wq * ca.sum1((C - ca.DM(ref.T)) ** 2))
        groups: list[tuple[str, object, np.ndarray, np.ndarray]] = []
        groups.append(("collocation defects (dynamics)", tr.defects[:tr.defects.numel() - (P - 1) * n_z],
                       0.0, 0.0))
        if n_z:
            groups.append(("unit quaternion |q| = 1", tr.defects[tr.defects.numel() - (P - 1) * n_z:], 0.0, 0.0))
        if problem.target_contact_m is not None:
            groups.append(("target contact point target_contact_m", C[:, -1] - ca.DM(problem.target_contact_m),
                           0.0, 0.0))
        if problem.target_heading_rad is not None:
            ax = model.heading_axis_casadi(tr.X[:, -1])
            c, s_ = np.cos(problem.target_heading_rad), np.sin(problem.target_heading_rad)
            # the projected axis is parallel to (cos h, sin h) and points along it (not against it)
            groups.append(("target heading target_heading_rad", -s_ * ax[0] + c * ax[1], 0.0, 0.0))
            groups.append(("target heading target_heading_rad (the axis points along it, not against it)",
                           c * ax[0] + s_ * ax[1], 0.0, np.inf))
        if problem.final_velocity_mps is not None:
            V = model.contact_velocity_casadi(tr.F)
            groups.append(("final contact velocity final_velocity_mps",
                           V[:, -1] - ca.DM(problem.final_velocity_mps), 0.0, 0.0))
        if problem.rest_at_end:
            groups.append(("at rest at the end (rest_at_end)", tr.X[model.rest_indices, -1], 0.0, 0.0))
        for k, ob in enumerate(problem.obstacles):
            d2 = ca.sum1((C - ca.DM(ob.center_m)) ** 2)
            rad = self.param[0] * ob.radius_m + problem.clearance_margin_m + self.param[1]
            groups.append((f"obstacle {k} clearance (centre {ob.center_m.tolist()} m, radius {ob.radius_m} m, "
                           f"margin {problem.clearance_margin_m} m)", (d2 - rad ** 2).T, 0.0, np.inf))
        acc = _optional_limit(problem.max_rail_acceleration, "max_rail_acceleration", "(rail units)/s^2", n)
        if acc is not None and model.plant.inputs == "force":
            thdd = tr.F[n:2 * n, :]
            groups.append(("rail acceleration limit max_rail_acceleration", ca.vec(thdd),
                           -np.tile(acc, P), np.tile(acc, P)))
        n_before_contact = sum(int(grp[1].numel()) for grp in groups)
        if problem.friction_coefficient is not None or problem.min_normal_force_N is not None:
            normal, tangential = model.contact_force_casadi().map(P)(tr.X, tr.U)
            groups += contact_constraint_groups(normal, tangential, friction_coefficient=problem.friction_coefficient,
                                                min_normal_force_N=problem.min_normal_force_N,
                                                weight_N=model.weight_N, friction_backoff=self.param[2],
                                                normal_backoff_N=self.param[3])
        self.groups = groups
        g = ca.vertcat(*[grp[1] for grp in groups])
        # simple bounds
        lbX, ubX = np.full((P, model.n_x), -np.inf), np.full((P, model.n_x), np.inf)
        lbX[0] = ubX[0] = x0
        for i, rail in enumerate(model.rails):
            if not rail.periodic:
                lbX[1:, i], ubX[1:, i] = rail.parameter_range
        spd = _optional_limit(problem.max_rail_speed, "max_rail_speed", "(rail units)/s", n)
        if spd is not None:
            lbX[1:, n:2 * n], ubX[1:, n:2 * n] = -spd, spd
        lbU, ubU = np.full((P, model.n_u), -np.inf), np.full((P, model.n_u), np.inf)
        ulim = acc if model.plant.inputs == "acceleration" else \
            _optional_limit(problem.max_rail_force, "max_rail_force", "N", n)
        if ulim is not None:
            lbU[:], ubU[:] = -ulim, ulim
        lbZ, ubZ = np.full((P, n_z), -np.inf), np.full((P, n_z), np.inf)
        lbZ[0] = ubZ[0] = 0.0   # the initial state is consistent: no multiplier needed there
        self.lbw, self.ubw = tr.pack(lbX, lbU, lbZ), tr.pack(ubX, ubU, ubZ)
        self.constraints = NLPConstraints.from_groups(
            groups, self.lbw, self.ubw, "variable bounds (initial state, rail ends, rail speed or input limits)")
        # the same bounds without the contact constraints (the diagnosis of an infeasible plan)
        self.has_contact = n_before_contact < self.constraints.lbg.size
        self.relaxed_constraints = self.constraints.relaxed(np.arange(self.constraints.lbg.size) >= n_before_contact)
        self.g_fun = ca.Function("g", [tr.w, self.param], [g])
        self.solver = ca.nlpsol("plan", "ipopt", {"x": tr.w, "f": J, "g": g, "p": self.param},
                                solver.casadi_options(max_iterations=1000, max_cpu_time_s=600.0))
        self.build_time_s = time.perf_counter() - start
        self.T = T

    def violation(self, w, p, relaxed: bool = False) -> tuple[float, str]:
        g = np.asarray(self.g_fun(w, p), dtype=float).ravel()
        return most_violated(g, w, self.relaxed_constraints if relaxed else self.constraints)

    def solve(self, w0, p, relaxed: bool = False) -> dict:
        """One IPOPT solve from ``w0`` (:func:`~ballctl.planning.transcription.run_ipopt`)."""
        return run_ipopt(self.solver, w0, self.relaxed_constraints if relaxed else self.constraints, p)


def _default_nodes(duration_s: float, intervals: int) -> np.ndarray:
    if int(intervals) != intervals or intervals < 2:
        raise ParameterError(f"intervals must be an integer >= 2, got {intervals!r}")
    return np.linspace(0.0, duration_s, int(intervals) + 1)


def _solve(model, problem, nodes, w0, *, continuation, solver: SolverOptions, backoff0, symbolic):
    nlp = _NLP(model, problem, nodes, solver=solver, symbolic=symbolic)
    stage_its, solve_time, inf_du, status, success, obj = [], 0.0, float("nan"), "", False, float("nan")
    w = w0
    factors = tuple(continuation) if problem.obstacles else (1.0,)
    backoff, b_mu, b_n = backoff0

    def run(factor, w, relaxed=False):
        nonlocal solve_time, inf_du, status, success, obj
        out = nlp.solve(w, [factor, backoff, b_mu, b_n], relaxed=relaxed)
        obj, inf_du = out["objective"], out["inf_du"]
        stage_its.append(out["iterations"])
        solve_time += out["wall"]
        status, success = out["status"], out["success"]
        return out["w"]

    def make(w, relaxed=False):
        return _make_plan(model, problem, nlp, w, obj, stage_its, solve_time, inf_du, status, success,
                          (backoff, b_mu, b_n), relaxed=relaxed)

    def contact_round(plan):
        """``(b_mu, b_N, keeps, changed)`` of the plan sampled between its collocation points."""
        return update_contact_backoffs(
            plan.report.peak_friction_coefficient_required, plan.report.least_normal_force_N,
            friction_coefficient=problem.friction_coefficient, min_normal_force_N=problem.min_normal_force_N,
            weight_N=model.weight_N, friction_backoff=b_mu, normal_backoff_N=b_n)

    # with contact constraints: first without them (a feasible optimum of that problem is one of this one, and
    # an infeasible request is diagnosed by it), then with them, warm-started
    for factor in factors:
        w = run(factor, w, relaxed=nlp.has_contact)
    plan = make(w, relaxed=nlp.has_contact)
    if nlp.has_contact:
        free = plan
        plan = make(w)
        if not (free.converged and plan.converged and contact_round(plan)[2]):
            if free.converged:
                w = run(1.0, w)
            else:
                w = w0
                for factor in factors:
                    w = run(factor, w)
            plan = make(w)
            if not plan.converged and free.converged:
                return _contact_failure(problem, nlp, plan, free)
    # obstacle clearance between the collocation points (re-simulated), then the contact constraints there
    for _ in range(solver.clearance_rounds if problem.obstacles else 0):
        if not plan.converged:
            break
        t_r, x_r = resimulate(plan)
        clear = min(float(ob.clearance(model.contact(x_r, problem.initial_state)).min()) for ob in problem.obstacles)
        deficit = problem.clearance_margin_m - clear
        if deficit <= 0:
            break
        backoff += 1.5 * deficit + 1e-6
        w = run(1.0, w)
        plan = make(w)
    if not (nlp.has_contact and plan.converged):
        return plan
    best, rounds = None, 0
    while True:
        new_mu, new_n, keeps, changed = contact_round(plan)
        if keeps and (best is None or plan.report.objective < best.report.objective):
            best = plan
        if not changed or rounds >= solver.contact_rounds:
            break
        rounds += 1
        b_mu, b_n = new_mu, new_n
        w = run(1.0, w)
        plan = make(w)
        if not plan.converged:
            break
    if best is not None:
        return replace(best, report=replace(best.report, iterations=int(sum(stage_its)),
                                            stage_iterations=tuple(stage_its), solve_time_s=solve_time))
    r = plan.report
    message = between_nodes_message(r.peak_friction_coefficient_required, r.least_normal_force_N,
                                    friction_coefficient=problem.friction_coefficient,
                                    min_normal_force_N=problem.min_normal_force_N, rounds=rounds)
    return replace(plan, report=replace(r, converged=False, message=message, binding_contact_constraints=()))


def _contact_failure(problem, nlp, plan, free):
    """The message of a plan that failed with contact constraints while the same problem without them solved."""
    why = contact_failure_message(friction_coefficient=problem.friction_coefficient,
                                  min_normal_force_N=problem.min_normal_force_N, relaxed_converged=True,
                                  relaxed_peak_friction=free.report.peak_friction_coefficient_required,
                                  relaxed_least_normal_N=free.report.least_normal_force_N)
    viol, worst = nlp.violation(plan.decision_vector, [1.0, plan.obstacle_backoff_m, *plan.contact_backoffs])
    message = (f"not converged: {why} (IPOPT status {plan.report.status}; most violated constraint at the returned "
               f"point: {worst}, violation {viol:.3g})")
    return replace(plan, report=replace(plan.report, message=message))


def _make_plan(model, problem, nlp, w, obj, stage_its, solve_time, inf_du, status, success, backoffs, *,
               relaxed=False):
    tr = nlp.tr
    backoff, b_mu, b_n = backoffs
    viol, worst = nlp.violation(w, [1.0, backoff, b_mu, b_n], relaxed=relaxed)
    X, U, _ = tr.unpack(w)
    X, qerr = model.renormalize(X)
    tol = 1e-6
    converged = success and viol <= tol
    plan = ManeuverPlan(plant=model.plant, problem=problem, nodes=tr.nodes, t=tr.times, x=X, u=U, report=None,
                        obstacle_backoff_m=backoff, decision_vector=w, contact_backoffs=(b_mu, b_n))
    mu, n_min = problem.friction_coefficient, problem.min_normal_force_N
    binding = binding_contact_constraints(*contact_summary(*plan.contact_forces()),
                                          friction_coefficient=None if mu is None else (1 - b_mu) * mu,
                                          min_normal_force_N=None if n_min is None else n_min + b_n,
                                          weight_N=model.weight_N)
    peak, least = contact_summary(*plan.contact_forces(dense_times(tr.nodes)))
    if converged:
        message = f"converged ({status}) in {sum(stage_its)} iterations, max constraint violation {viol:.2e}"
        if nlp.has_contact and not relaxed:
            message += "; " + contact_summary_text(peak, least, binding)
    else:
        message = (f"not converged: IPOPT status {status}; most violated constraint: {worst} "
                   f"(violation {viol:.3g}). The request may be infeasible: relax that constraint, lengthen "
                   f"duration_s, or loosen the limits.")
    report = SolverReport(converged=bool(converged), status=status, message=message, iterations=int(sum(stage_its)),
                          stage_iterations=tuple(stage_its), solve_time_s=solve_time, build_time_s=nlp.build_time_s,
                          objective=obj, max_constraint_violation=viol, dual_infeasibility=inf_du,
                          quaternion_norm_error=qerr, n_variables=int(tr.w.numel()),
                          n_constraints=int(nlp.constraints.lbg.size),
                          peak_friction_coefficient_required=peak, least_normal_force_N=least,
                          binding_contact_constraints=binding if converged else ())
    return replace(plan, report=report)


def plan_maneuver(plant, problem: ManeuverProblem, *, intervals: int = 50, nodes=None,
                  warm_start: ManeuverPlan | None = None,
                  obstacle_continuation: Sequence[float] = (0.25, 0.5, 0.75, 1.0), symbolic: str = "MX",
                  solver: SolverOptions | None = None) -> ManeuverPlan:
    """Plan an optimal maneuver by Hermite-Simpson collocation and IPOPT.

    Parameters
    ----------
    plant : RollingBall or RollingDisk
        Without external force; rails of closed form (not ``CallableRail``).
    problem : ManeuverProblem
    intervals : int
        Uniform mesh intervals N (ignored when ``nodes`` is given).
    nodes : array_like, shape (N + 1,), optional
        A mesh from 0 to ``problem.duration_s`` (e.g. from :func:`refine_plan`).
    warm_start : ManeuverPlan, optional
        Initial guess interpolated from this plan; default: a straight roll
        from the start to the target (smoothstep in time, rolling without
        slip, masses parked).
    obstacle_continuation : sequence of float
        Obstacle radius factors solved in turn, each seeded by the previous
        solution (the last must be 1).
    symbolic : {"MX", "SX"}
        CasADi graph of the transcription (:func:`~ballctl.planning.transcription.hermite_simpson`):
        ``"MX"`` builds in a fraction of the time (3-mass ball, 40 intervals: 0.5 s vs 5.6 s) and
        solves ~1.4x slower per iteration.
    solver : SolverOptions, optional
        IPOPT's limits and tolerances (default: 1000 iterations and 600 s per
        solve, tolerances 1e-9) and the re-solve rounds
        (:class:`~ballctl.planning.transcription.SolverOptions`):
        ``clearance_rounds``: re-simulate and tighten the obstacle constraints
        at most this many times when the path between collocation points dips
        below the margin. ``contact_rounds``: with ``friction_coefficient`` or
        ``min_normal_force_N`` the problem is solved first without them (kept
        when it meets them), then with them. The plan's contact force is then
        sampled between the collocation points (20 per interval, on the
        collocation polynomials); when it needs more than
        ``(1 + 1e-3) friction_coefficient`` or falls below
        ``min_normal_force_N - 1e-3 M g``, the bounds at the points are tightened
        by the excess (and loosened again when too conservative) and the problem
        re-solved, at most this many times
        (:func:`~ballctl.planning.contact.update_contact_backoffs`). The cheapest
        plan that keeps the constraints between the points is returned; if
        none does, ``converged`` is False and the message says so.

    Returns
    -------
    ManeuverPlan
        With ``report.converged`` False (and a message naming the most
        violated constraint) when IPOPT fails. When the problem has contact
        constraints and fails, it is re-solved without them: if that succeeds,
        the message names the friction cone (``friction_coefficient``) or the
        least normal force (``min_normal_force_N``) as the cause and gives the
        peak ``|F_t|/N`` and least N the unconstrained plan needs.

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
    >>> disk = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
    ...     point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))
    >>> problem = ManeuverProblem(initial_state=[-np.pi / 2, 0, 0, 0], duration_s=6.0,
    ...                           target_contact_m=[1.0], rest_at_end=True)
    >>> plan = plan_maneuver(disk, problem, intervals=20)
    >>> plan.converged, round(float(plan.contact()[-1, 0]), 6)
    (True, 1.0)
    """
    model = _model(plant)
    x0 = model.validate(problem.initial_state)
    _precheck(model, problem, x0)
    factors = tuple(float(f) for f in obstacle_continuation)
    if not factors or factors[-1] != 1.0 or any(f <= 0 for f in factors):
        raise ParameterError(f"obstacle_continuation must be positive radius factors ending with 1, got {factors!r}")
    T = problem.duration_s
    if nodes is None:
        nodes = _default_nodes(T, intervals)
    else:
        nodes = as_vector(nodes, "nodes")
        if abs(nodes[0]) > 0 or abs(nodes[-1] - T) > 1e-12 * max(1.0, T) or np.any(np.diff(nodes) <= 0):
            raise ParameterError(f"nodes must increase strictly from 0 to duration_s = {T} s")
    times = collocation_times(nodes)
    w0 = _initial_guess(model, problem, x0, nodes, times, warm_start)
    solver = SolverOptions() if solver is None else check_instance(solver, "solver", SolverOptions)
    return _solve(model, problem, nodes, w0, continuation=factors, solver=solver,
                  backoff0=(0.0, 0.0, 0.0) if warm_start is None else
                  (warm_start.obstacle_backoff_m, *warm_start.contact_backoffs), symbolic=symbolic)


def _initial_guess(model, problem, x0, nodes, times, warm_start):
    P = times.size
    if warm_start is not None:
        X = warm_start.state(times)
        X, _ = model.renormalize(X)
        U = warm_start.input(times)
        X[0] = x0
    else:
        if problem.target_contact_m is not None:
            end = problem.target_contact_m
        else:
            end = np.asarray(problem.path(np.array([problem.duration_s])), dtype=float).reshape(-1)
            if model.dim == 1:
                end = end[:1]
        X = model.straight_roll(x0, end, times, problem.duration_s)
        U = np.zeros((P, model.n_u))
    n_z = 1 if model.q_slice is not None else 0
    return np.concatenate([X.ravel(), U.ravel(), np.zeros(P * n_z)])


def _interval_errors(plan: ManeuverPlan) -> np.ndarray:
    """Largest state error at the end of each interval integrated alone from the planned node state."""
    model = _model(plan.plant)
    errs = np.zeros(plan.nodes.size - 1)
    for k, (a, b) in enumerate(zip(plan.nodes[:-1], plan.nodes[1:])):
        sol = solve_ivp(lambda t, x: model.f_numpy(x, plan.input(t)), (a, b), plan.x[2 * k], method="DOP853",
                        rtol=1e-12, atol=1e-12)
        if not sol.success:
            raise IntegrationError(f"re-simulating interval [{a}, {b}] s failed: {sol.message}")
        errs[k] = float(np.max(np.abs(sol.y[:, -1] - plan.x[2 * k + 2])))
    return errs


def refine_plan(plant, problem: ManeuverProblem, plan: ManeuverPlan, *, tolerance: float, max_rounds: int = 3,
                solver: SolverOptions | None = None) -> tuple[ManeuverPlan, tuple[int, ...]]:
    """Mesh refinement: split the intervals whose local error exceeds ``tolerance`` and re-solve, warm-started.

    The local error of interval k is the largest state difference between the
    planned ``x_{k+1}`` and the plant integrated alone over ``[t_k, t_{k+1}]``
    from the planned ``x_k`` under the planned input (DOP853, 1e-12); it is
    ``O(h^5)`` for Hermite-Simpson, so halving an interval divides it by ~32.

    Parameters
    ----------
    plant : RollingBall or RollingDisk
    problem : ManeuverProblem
    plan : ManeuverPlan
        The plan to refine (its solution seeds the next solve).
    tolerance : float
        Target local error per interval (state units), > 0.
    max_rounds : int
        Largest number of refinement rounds.
    solver : SolverOptions, optional
        IPOPT settings and re-solve rounds of every solve (see :func:`plan_maneuver`).

    Returns
    -------
    plan : ManeuverPlan
        The refined plan.
    mesh_sizes : tuple of int
        Number of intervals after each round (the first entry is the input plan's).
    """
    tolerance = check_positive(tolerance, "tolerance")
    sizes = [plan.nodes.size - 1]
    for _ in range(int(max_rounds)):
        errs = _interval_errors(plan)
        split = errs > tolerance
        if not split.any():
            break
        mids = 0.5 * (plan.nodes[:-1] + plan.nodes[1:])
        nodes = np.sort(np.concatenate([plan.nodes, mids[split]]))
        plan = plan_maneuver(plant, problem, nodes=nodes, warm_start=plan, obstacle_continuation=(1.0,),
                             solver=solver)
        sizes.append(nodes.size - 1)
        if not plan.converged:
            break
    return plan, tuple(sizes)

