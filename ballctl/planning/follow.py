r"""From plan to closed loop: the optimized maneuver as a reference for the LQR tracking chain.

The planned inputs (the collocation quadratics of
:meth:`~ballctl.planning.maneuver.ManeuverPlan.input`) are replayed on the
ball in generalized coordinates (:class:`~ballctl.plants.rolling_ball.RollingBallSystem`)
by :class:`~ballctl.references.rolling.IntegratedReference`, which gives
DAE-consistent samples; :func:`ballctl.design_tracking_lqr` linearizes them
with the generic linearizer (independent yaw, pitch, roll and rail angles;
admissible-dependent contact point, as for the paper's ball), discretizes
and solves the finite-horizon LQR on the rail inputs; the loop is closed on
the nonlinear ball by :func:`ballctl.simulate_closed_loop`.

The plan's constraints hold for the plan, not for the loop that tracks it, so
:func:`track_plan` keeps what it can and reports the rest:

* the commands ``u_k = u_ff,k - K_k dX_k`` are saturated at the plan's input
  bound (``max_rail_acceleration``; the loop's ``RigLimits``), and the default
  Bryson weights (:func:`tracking_limits`) scale with the ball's radius and
  rails, the input scale being the room the plan leaves under that bound;
* the held inputs are replayed on the ball's ODE between the control times
  (:func:`replay_held_inputs`) and the contact path's obstacle clearance, the
  peak rail speed and the peak rail input are checked against the plan's
  margin and limits (:class:`ConstraintReport`, :func:`run_constraints`).

A loop that re-plans instead of tracking is :mod:`ballctl.planning.receding`.

References
----------
V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), eqs. (5.11), (7.1)-(7.4).
A.E. Bryson, Y.-C. Ho, *Applied Optimal Control*, Hemisphere (1975), section 5.7 (the weights).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ShapeError
from .._validation import (as_vector, check_bool, check_finite_scalar, check_in_range, check_integer,
                           check_positive)
from ..hardware import RigLimits
from ..ode import IntegrationOptions
from ..simulation.closed_loop import ClosedLoopOptions, ClosedLoopResult, simulate_closed_loop
from ..linear.partition import Partition
from ..plants.rolling_ball import RollingBall
from ..references.rolling import IntegratedReference
from ..design.tracking import TrackingOptions, LQRWeights, TrackingController, design_tracking_lqr
from .maneuver import ManeuverPlan, ManeuverProblem
from .transcription import dense_times

__all__ = ["ConstraintChecks", "ConstraintReport", "PlanTracking", "held_run_constraints", "input_limit",
           "perturbed_start", "plan_chart_rotation", "plan_partition", "plan_reference", "replay_held_inputs",
           "run_constraints", "track_plan", "tracking_limits"]


def plan_chart_rotation(plan: ManeuverPlan, *, samples: int = 4000) -> np.ndarray:
    """A chart rotation ``C`` that keeps the plan's yaw-pitch-roll chart far from pitch = +-pi/2.

    With ``R = Lambda C^T`` the pitch is ``-arcsin(R_31)`` and
    ``R_31 = <Gamma, c>``, where ``Gamma = Lambda^T e3`` is the body-frame
    vertical and ``c`` the first row of ``C``. So the best ``c`` is the unit
    vector least aligned with every ``Gamma(t)`` of the plan: it is chosen
    among ``samples`` Fibonacci-sphere directions by minimizing
    ``max_t |<Gamma(t), c>|`` over the plan's collocation points.

    Parameters
    ----------
    plan : ManeuverPlan
        A plan of a :class:`~ballctl.plants.rolling_ball.RollingBall`.
    samples : int
        Candidate directions.

    Returns
    -------
    ndarray, shape (3, 3)
        A rotation matrix whose first row is the chosen ``c``.
    """
    ball = plan.plant
    gam = ball.vertical(plan.x)                                  # (P, 3)
    k = np.arange(samples) + 0.5
    z = 1.0 - 2.0 * k / samples
    phi = np.pi * (1.0 + 5.0 ** 0.5) * k
    rho = np.sqrt(1.0 - z * z)
    cand = np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
    worst = np.abs(gam @ cand.T).max(axis=0)
    c = cand[int(np.argmin(worst))]
    helper = np.eye(3)[int(np.argmin(np.abs(c)))]
    b = np.cross(c, helper)
    b /= np.linalg.norm(b)
    return np.vstack([c, b, np.cross(c, b)])


def plan_reference(plan: ManeuverPlan, *, chart_rotation="auto") -> IntegratedReference:
    """The plan of a ball as a DAE-consistent reference of its :class:`RollingBallSystem`.

    Parameters
    ----------
    plan : ManeuverPlan
        A converged plan of a :class:`~ballctl.plants.rolling_ball.RollingBall`.
    chart_rotation : array_like, shape (3, 3), or "auto" or None
        Chart rotation of the yaw-pitch-roll coordinates (keep the motion
        away from pitch = +-pi/2); ``"auto"``: :func:`plan_chart_rotation`;
        ``None``: identity.

    Returns
    -------
    IntegratedReference
        Replays ``plan.input`` from the planned initial state (breakpoints at the mesh nodes).
    """
    if not isinstance(plan.plant, RollingBall):
        raise ParameterError(f"plan_reference needs a plan of a RollingBall, got {type(plan.plant).__name__}")
    plan.raise_if_failed()
    if isinstance(chart_rotation, str):
        if chart_rotation != "auto":
            raise ParameterError(f"chart_rotation must be a 3x3 rotation, 'auto' or None, got {chart_rotation!r}")
        chart_rotation = plan_chart_rotation(plan)
    system = plan.plant.to_constrained_system(chart_rotation=chart_rotation)
    x0, xd0 = system.from_ode_state(plan.problem.initial_state)
    return IntegratedReference(system, x0, xd0, plan.input, (float(plan.nodes[0]), float(plan.nodes[-1])),
                               breakpoints=plan.nodes[1:-1])




@dataclass(frozen=True, kw_only=True)
class ConstraintReport:
    r"""One of a plan's constraints checked on a run: the run's worst value against the plan's limit.

    Attributes
    ----------
    name : str
        ``"obstacle clearance"``, ``"rail speed"``, ``"rail acceleration"`` or ``"rail force"``.
    value : float
        The run's worst value: the least clearance ``min_t min_k (|c(t) - o_k| - rho_k)`` in m for
        the obstacles (``c`` the contact point, ``o_k`` and ``rho_k`` an obstacle's centre and
        radius), else the largest ``|theta_dot_i|``, ``|theta_ddot_i|`` or ``|tau_i|`` of the rail
        that comes nearest its limit.
    limit : float
        The plan's bound: ``clearance_margin_m`` (a lower bound) or that rail's
        ``max_rail_speed``, ``max_rail_acceleration``, ``max_rail_force`` (upper bounds).
    unit : str
        Unit of ``value`` and ``limit`` (``"m"``, ``"rad/s"``, ``"rad/s^2"``, ``"N"``: rail units).
    lower : bool
        True when ``limit`` is a lower bound (clearance), False for an upper bound.
    rail : int or None
        The rail (1-based) of ``value`` for a rail limit; ``None`` for the clearance.
    where_s : float
        Time in s of the worst value.
    """

    name: str
    value: float
    limit: float
    unit: str
    lower: bool = False
    rail: int | None = None
    where_s: float = float("nan")

    @property
    def passed(self) -> bool:
        """Whether the run kept the bound (to a relative 1e-9, the rounding of a saturated command)."""
        slack = 1e-9 * max(1.0, abs(self.limit))
        return self.value >= self.limit - slack if self.lower else self.value <= self.limit + slack

    @property
    def margin(self) -> float:
        """How far inside the bound the run stayed, in ``unit`` (negative: violated by that much)."""
        return self.value - self.limit if self.lower else self.limit - self.value

    def text(self) -> str:
        """One line: ``"obstacle clearance 0.0295 m >= 0.05 m: violated"``."""
        rail = "" if self.rail is None else f" (rail {self.rail})"
        op = ">=" if self.lower else "<="
        return (f"{self.name}{rail} {self.value:.4g} {self.unit} {op} {self.limit:.4g} {self.unit} at "
                f"t = {self.where_s:.3g} s: {'kept' if self.passed else 'violated'}")


def run_constraints(problem: ManeuverProblem, t, contact_m, rail_speed, rail_input, *,
                    inputs: str = "acceleration", input_times=None) -> tuple[ConstraintReport, ...]:
    r"""The constraints of a maneuver problem checked on a run (one report per constraint the problem has).

    Parameters
    ----------
    problem : ManeuverProblem
        Its ``obstacles`` with ``clearance_margin_m``, ``max_rail_speed``,
        ``max_rail_acceleration`` and ``max_rail_force`` (the ones given).
    t : array_like, shape (K,)
        Times in s of ``contact_m`` and ``rail_speed``.
    contact_m : array_like, shape (K, 2)
        Contact path in m (dense: the clearance is its least over these samples).
    rail_speed : array_like, shape (K, n)
        ``theta_dot`` in rail units per s.
    rail_input : array_like, shape (J, n)
        The applied inputs: rail accelerations (``inputs="acceleration"``) or forces (``"force"``).
    inputs : {"acceleration", "force"}
        What ``rail_input`` is (the plant's ``inputs``).
    input_times : array_like, shape (J,), optional
        Times in s of ``rail_input`` (default: ``t`` when ``J = K``).

    Returns
    -------
    tuple of ConstraintReport
        In the order clearance, rail speed, rail acceleration (an acceleration plant) or rail force.
    """
    t = np.asarray(t, dtype=float)
    c = np.asarray(contact_m, dtype=float)
    v = np.asarray(rail_speed, dtype=float)
    u = np.asarray(rail_input, dtype=float)
    if c.shape != (t.size, 2) or v.shape[0] != t.size or u.ndim != 2 or u.shape[1] != v.shape[1]:
        raise ShapeError(f"run_constraints: contact_m must be ({t.size}, 2), rail_speed ({t.size}, n) and "
                         f"rail_input (J, n); got {c.shape}, {v.shape}, {u.shape}")
    tu = t if input_times is None else np.asarray(input_times, dtype=float)
    if tu.shape != (u.shape[0],):
        raise ShapeError(f"input_times must have one time (s) per row of rail_input ({u.shape[0]}), got {tu.shape}")
    if inputs not in ("acceleration", "force"):
        raise ParameterError(f"inputs must be 'acceleration' or 'force', got {inputs!r}")
    n = v.shape[1]
    out = []
    if problem.obstacles:
        clear = np.min([ob.clearance(c) for ob in problem.obstacles], axis=0)
        k = int(np.argmin(clear))
        out.append(ConstraintReport(name="obstacle clearance", value=float(clear[k]),
                                    limit=float(problem.clearance_margin_m), unit="m", lower=True,
                                    where_s=float(t[k])))
    unit_u = "rad/s^2" if inputs == "acceleration" else "N"
    limits = [("rail speed", problem.max_rail_speed, v, t, "rad/s")]
    if inputs == "acceleration":
        limits.append(("rail acceleration", problem.max_rail_acceleration, u, tu, unit_u))
    else:
        limits.append(("rail force", problem.max_rail_force, u, tu, unit_u))
    for name, limit, values, times, unit in limits:
        if limit is None:
            continue
        lim = np.broadcast_to(np.asarray(limit, dtype=float), (n,))
        peak = np.abs(values).max(axis=0)
        i = int(np.argmax(peak / lim))
        k = int(np.argmax(np.abs(values[:, i])))
        out.append(ConstraintReport(name=name, value=float(peak[i]), limit=float(lim[i]), unit=unit, rail=i + 1,
                                    where_s=float(times[k])))
    return tuple(out)


def replay_held_inputs(plant: RollingBall, x0, t, u, *, samples_per_step: int = 10,
                       options: IntegrationOptions | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Integrate the ball's ODE (eq. 7.2) under inputs held over each control step, densely sampled.

    ``x_dot = f(x, u_k)`` on ``[t_k, t_{k+1})`` for ``k = 0 .. K-2`` (the zero-order hold of a
    sampled loop), one ``solve_ivp`` piece per step, so no integrator step straddles a jump of
    the input.

    Parameters
    ----------
    plant : RollingBall
    x0 : array_like, shape (2n + 9,)
        ODE state at ``t[0]`` (eq. 7.1).
    t : array_like, shape (K,)
        Control times in s, increasing.
    u : array_like, shape (K, n) or (K - 1, n)
        The input held over ``[t_k, t_{k+1})`` (a last row is ignored).
    samples_per_step : int
        Output samples per step, >= 1.
    options : IntegrationOptions, optional
        Default DOP853, ``rtol = 1e-10``, ``atol = 1e-12``.

    Returns
    -------
    t_dense : ndarray, shape ((K - 1) samples_per_step + 1,)
    x_dense : ndarray, shape (len(t_dense), 2n + 9)
    """
    t = as_vector(t, "t")
    u = np.asarray(u, dtype=float)
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise ParameterError("t must hold at least two increasing control times in s")
    if u.ndim != 2 or u.shape[0] < t.size - 1 or u.shape[1] != plant.n_masses:
        raise ShapeError(f"u must have shape ({t.size - 1}, {plant.n_masses}) or ({t.size}, {plant.n_masses}), "
                         f"got {u.shape}")
    m = check_integer(samples_per_step, "samples_per_step", minimum=1)
    options = options or IntegrationOptions(rtol=1e-10, atol=1e-12)
    x = plant.validate_state(x0)
    ts, xs = [t[:1]], [x[None]]
    for k in range(t.size - 1):
        grid = np.linspace(t[k], t[k + 1], m + 1)
        uk = u[k].copy()
        run = plant.simulate(x, (t[k], t[k + 1]), lambda _t, uk=uk: uk, breakpoints=(), t_eval=grid[1:],
                             options=options, use_jacobian=False)
        ts.append(run.t[-m:])
        xs.append(run.x[-m:])
        x = run.x[-1]
    return np.concatenate(ts), np.vstack(xs)


def tracking_limits(plan: ManeuverPlan, *, contact_fraction: float = 0.1, angle_scale_rad: float = 1.0,
                    rate_time_s: float | None = None, input_room_floor: float = 0.25) -> tuple[dict, dict]:
    r"""Default Bryson limits of the LQR tracking a ball plan, scaled with the ball and the plan's input limits.

    With the ball's radius ``r``, the rails' levers ``rho_i = mean_t |zeta_i'(theta_i(t))|``
    along the plan (the radius of a circular rail; m per rail unit), an orientation scale
    ``e_a = angle_scale_rad`` and a rate time ``T_r = rate_time_s`` (default ``2 sqrt(r / g)``,
    two of the ball's pendulum times):

    * contact point: ``e_c = contact_fraction * r`` in m;
    * yaw, pitch, roll: ``e_a`` in rad, their rates ``e_a / T_r`` in rad/s;
    * rail angle ``theta_i``: ``e_a r / rho_i`` (the travel that moves mass i by ``e_a r``, the
      arc the ball rolls through ``e_a``), its rate ``e_a r / (rho_i T_r)``;
    * rail input ``i``: the room the plan leaves under its bound,
      ``max(u_max,i - max_t |u_i^plan(t)|, input_room_floor * u_max,i)`` with ``u_max`` the plan's
      ``max_rail_acceleration`` (``max_rail_force`` for a force plant), so the feedback is sized
      to what is left of the actuator; without a bound, the plan's own peak ``max_t |u_i^plan(t)|``.

    Bryson's rule then weighs ``Q_jj = 1 / e_j^2`` and ``R_ii = 1 / e_i^2`` (A.E. Bryson, Y.-C. Ho,
    *Applied Optimal Control*, Hemisphere (1975), section 5.7). The orientation and the rails
    are free in the maneuver problem (only the contact point has a target), so they are weighed
    loosely: ``e_a = 1`` rad against ``e_c = r / 10``. The rate time is a compromise measured on
    the built-in maneuver (``ballctl plan``, 100 intervals, cost 1.095) from four perturbed
    starts: of ``T_r / sqrt(r/g) = 1, 2, 4, 10`` the worst-start clearance was 13.5, 30.1, 34.0,
    26.4 mm and the worst final error 4.1, 5.7, 9.4, 33 mm. No weighting keeps the obstacle
    margin from every start: the LQR does not know the obstacles
    (:func:`~ballctl.planning.receding.track_receding` does).

    Parameters
    ----------
    plan : ManeuverPlan
        A plan of a :class:`~ballctl.plants.rolling_ball.RollingBall`.
    contact_fraction : float
        Contact error scale as a fraction of the ball's radius, > 0.
    angle_scale_rad : float
        Orientation error scale ``e_a`` in rad, > 0.
    rate_time_s : float, optional
        ``T_r`` in s, > 0 (default ``2 sqrt(r / g)``).
    input_room_floor : float
        Least input scale as a fraction of the bound, in (0, 1] (a plan that uses its whole
        actuator still gets feedback).

    Returns
    -------
    max_state_errors, max_input_errors : dict
        By the names of :class:`~ballctl.plants.rolling_ball.RollingBallSystem` (``"<name>_rate"`` for
        rates) and of its inputs.
    """
    ball = plan.plant
    if not isinstance(ball, RollingBall):
        raise ParameterError(f"tracking_limits needs a plan of a RollingBall, got {type(ball).__name__}")
    frac = check_positive(contact_fraction, "contact_fraction")
    e_a = check_positive(angle_scale_rad, "angle_scale_rad", "rad")
    floor = check_in_range(input_room_floor, "input_room_floor", 0.0, 1.0, low_inclusive=False)
    n = ball.n_masses
    r, g = float(ball.params.radius_m), float(ball.params.gravity_mps2)
    T_r = 2.0 * float(np.sqrt(r / g)) if rate_time_s is None else check_positive(rate_time_s, "rate_time_s", "s")
    _, dzeta, _ = ball.rail_geometry(plan.x[:, :n])
    lever = np.linalg.norm(dzeta, axis=-1).mean(axis=0)
    e_c = frac * r
    states = {"contact_x": e_c, "contact_y": e_c}
    for a in ("yaw", "pitch", "roll"):
        states[a], states[f"{a}_rate"] = e_a, e_a / T_r
    for i in range(n):
        name = f"theta_{i + 1}"
        states[name], states[f"{name}_rate"] = float(e_a * r / lever[i]), float(e_a * r / (lever[i] * T_r))
    limit = plan.problem.max_rail_acceleration if ball.inputs == "acceleration" else plan.problem.max_rail_force
    peak = np.abs(plan.input(dense_times(plan.nodes))).max(axis=0)
    if limit is None:
        scale = np.where(peak > 0, peak, 1.0)
    else:
        lim = np.broadcast_to(np.asarray(limit, dtype=float), (n,))
        scale = np.maximum(lim - peak, floor * lim)
    names = [f"theta_ddot_{i + 1}" if ball.inputs == "acceleration" else f"tau_{i + 1}" for i in range(n)]
    return states, {name: float(v) for name, v in zip(names, scale)}


def input_limit(plan: ManeuverPlan) -> float | None:
    """The plan's bound on ``|u_i|`` as one number for the loop's saturation (``RigLimits.max_angle``), or None.

    ``max_rail_acceleration`` (an acceleration plant) or ``max_rail_force`` (a force plant);
    with one bound per rail, the least of them (``RigLimits`` saturates every input at one level).

    Parameters
    ----------
    plan : ManeuverPlan

    Returns
    -------
    float or None
    """
    limit = plan.problem.max_rail_acceleration if plan.plant.inputs == "acceleration" else plan.problem.max_rail_force
    return None if limit is None else float(np.min(limit))


def perturbed_start(system, x, xd, *, contact_offset_m: Sequence[float] = (0.05, -0.05),
                    angle_offset_rad: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    r"""A start off the plan: the contact point shifted, yaw and every rail angle turned, velocities completed.

    ``x_c += contact_offset_m``, ``yaw += angle_offset_rad``, ``theta_i += angle_offset_rad``;
    the dependent velocities (the contact point's) are solved from the rolling constraints
    ``D(x) xd = 0`` (eq. 5.11) with the independent ones kept.

    Parameters
    ----------
    system : RollingBallSystem
    x, xd : array_like, shape (n + 5,)
        The plan's coordinates and velocities at its start.
    contact_offset_m : (float, float)
        Contact-point offset in m.
    angle_offset_rad : float
        Offset of yaw and of every rail angle in rad.

    Returns
    -------
    x0, xd0 : ndarray, shape (n + 5,)
    """
    off = np.asarray(contact_offset_m, dtype=float)
    if off.shape != (2,) or not np.all(np.isfinite(off)):
        raise ParameterError(f"contact_offset_m must be two finite offsets in m, got {contact_offset_m!r}")
    angle = check_finite_scalar(angle_offset_rad, "angle_offset_rad", "rad")
    x0 = np.array(x, dtype=float)
    x0[:2] += off
    x0[2] += angle
    x0[5:] += angle
    return x0, plan_partition(system).complete_velocities(system, x0, np.array(xd, dtype=float))


def plan_partition(system) -> Partition:
    """The partition of the tracking LQR: yaw, pitch, roll and the rail angles independent, the contact point not.

    Parameters
    ----------
    system : RollingBallSystem

    Returns
    -------
    Partition
    """
    rails = [name for name in system.coordinate_names if name.startswith("theta_")]
    return Partition.from_coordinates(system, ["yaw", "pitch", "roll", *rails], ["contact_x", "contact_y"])


class ConstraintChecks:
    """The accessors of a run that checked a plan's constraints (its ``constraints``, a tuple of
    :class:`ConstraintReport`): shared by :class:`PlanTracking` and
    :class:`~ballctl.planning.receding.RecedingTracking`.
    """

    __slots__ = ()

    def constraint(self, name: str) -> ConstraintReport | None:
        """The run's report of one constraint, or None.

        Parameters
        ----------
        name : str
            ``"obstacle clearance"``, ``"rail speed"``, ``"rail acceleration"`` or ``"rail force"``.

        Returns
        -------
        ConstraintReport or None
        """
        return next((c for c in self.constraints if c.name == name), None)

    @property
    def constraints_kept(self) -> bool:
        """Whether the run kept every constraint of the plan that was checked."""
        return all(c.passed for c in self.constraints)

    @property
    def least_clearance_m(self) -> float | None:
        """The run's least obstacle clearance in m (``None`` without obstacles or checks)."""
        c = self.constraint("obstacle clearance")
        return None if c is None else c.value


@dataclass(frozen=True, kw_only=True)
class PlanTracking(ConstraintChecks):
    """A plan tracked by the LQR in closed loop on the nonlinear plant (the one result of every plan tracking).

    Returned by :func:`track_plan` (a rolling-ball maneuver) and by
    :func:`~ballctl.ball_plate.plan_tracking.track_plate_plan` (a ball-plate motion).

    Attributes
    ----------
    reference : IntegratedReference or MovingPlateMotion
        The plan as a reference of the tracked system.
    controller : TrackingController
        The finite-horizon LQR tracking it (its ``system`` and ``dt``).
    closed_loop : ClosedLoopResult
        From the perturbed start, with feedback.
    open_loop : ClosedLoopResult or None
        Same start, planned inputs only (:func:`track_plan`; ``None`` when not run).
    truth : str
        What the loop ran on: ``"design plant"`` (the controller's own system:
        :func:`track_plan`), ``"quasi-static"`` (the ball-plate design plant) or
        ``"servo plate"`` (the rig's exact truth plant).
    inversion_residuals : dict or None
        With an exact inversion on the servo plate: its residuals
        (:attr:`~ballctl.references.moving_plate.MovingPlateMotion.residuals`).
    constraints : tuple of ConstraintReport
        The plan's constraints on the closed loop (:func:`track_plan`: obstacle
        clearance of the contact path, peak rail speed and peak applied rail input,
        each against the plan's bound; :func:`run_constraints`). Empty when not checked.
    open_loop_constraints : tuple of ConstraintReport
        The same on the open loop.
    weights : LQRWeights or None
        The weights the LQR was designed with (:func:`track_plan`).
    dense_t : ndarray or None
        Times in s of ``dense_x``.
    dense_x : ndarray or None
        The closed loop's applied (held) inputs replayed on the ball's ODE from its start,
        sampled between the control times (:func:`replay_held_inputs`): the path the
        constraints were checked on, shape (J, 2n + 9).
    """

    reference: object
    controller: TrackingController
    closed_loop: ClosedLoopResult
    open_loop: ClosedLoopResult | None = None
    truth: str = "design plant"
    inversion_residuals: dict | None = None
    constraints: tuple[ConstraintReport, ...] = ()
    open_loop_constraints: tuple[ConstraintReport, ...] = ()
    weights: LQRWeights | None = None
    dense_t: np.ndarray | None = field(default=None, repr=False)
    dense_x: np.ndarray | None = field(default=None, repr=False)

    @property
    def system(self):
        """The system the controller was designed on (a ``RollingBallSystem`` for a ball plan)."""
        return self.controller.system

    @property
    def contact_error_m(self) -> np.ndarray:
        """Closed-loop contact-point distance from the reference in m, shape (K,)."""
        return self.closed_loop.position_error

    @property
    def open_loop_contact_error_m(self) -> np.ndarray | None:
        """Open-loop contact-point distance from the reference in m, shape (K,) (``None`` without ``open_loop``)."""
        return None if self.open_loop is None else self.open_loop.position_error

    @property
    def rms_error_m(self) -> float:
        """RMS closed-loop contact-point error over the run, m."""
        return float(np.sqrt(np.mean(self.contact_error_m ** 2)))

    @property
    def final_error_m(self) -> float:
        """Closed-loop contact-point error at the last sample, m."""
        return float(self.contact_error_m[-1])

    @property
    def peak_angle_rad(self) -> float:
        """Largest applied input component ``|u|``: the plate angles ``|alpha|, |beta|`` in rad on the ball-plate."""
        return float(np.abs(self.closed_loop.u).max())

    @property
    def peak_rate_rad_s(self) -> float:
        """Largest applied ``|Delta u| / dt`` between control steps: the plate's slew in rad/s on the ball-plate."""
        u = self.closed_loop.u
        return float(np.abs(np.diff(u, axis=0)).max() / self.controller.dt) if u.shape[0] > 1 else 0.0

    @property
    def limit_steps(self) -> dict:
        """Control steps at which a rig limit changed a command, by limit (empty without limits)."""
        return dict(self.closed_loop.limit_events)

    @property
    def peak_rail_speed(self) -> np.ndarray | None:
        """The closed loop's largest ``|theta_dot_i|`` per rail (rad/s), on the dense replay (``None`` without it)."""
        if self.dense_x is None:
            return None
        n = self.system.n_inputs
        return np.abs(self.dense_x[:, n:2 * n]).max(axis=0)

    @property
    def peak_rail_input(self) -> np.ndarray:
        """The closed loop's largest applied ``|u_i|`` per rail (rad/s^2 for an acceleration plant)."""
        return np.abs(self.closed_loop.u[:-1] if self.closed_loop.u.shape[0] > 1 else self.closed_loop.u).max(axis=0)


def track_plan(plan: ManeuverPlan, *, dt: float = 0.1, contact_offset_m: Sequence[float] = (0.05, -0.05),
               angle_offset_rad: float = 0.1, max_state_errors: Mapping[str, float] | None = None,
               max_input_errors: Mapping[str, float] | None = None, terminal_factor: float = 100.0,
               limit_inputs: bool = True, chart_rotation="auto", samples_per_step: int = 10) -> PlanTracking:
    r"""Track a ball plan with the finite-horizon LQR on the rail inputs from a perturbed start, within its limits.

    The LQR (eqs. 24-29 of the tracking design) runs on the rail inputs at ``dt``;
    its commands ``u_k = u_ff,k - K_k dX_k`` are saturated at the plan's input bound
    (``ClosedLoopOptions(limits=RigLimits(max_angle=...))``: ``|u_i| <= max_rail_acceleration``;
    the saturated steps are counted in ``closed_loop.limit_events["max_angle"]``). The held
    inputs are then replayed on the ball's ODE between the control times
    (:func:`replay_held_inputs`) and the plan's constraints checked on that path
    (:func:`run_constraints`): the obstacle clearance against ``clearance_margin_m``, the
    peak rail speed and the peak rail input against their bounds. The rail speed bound is
    reported, not enforced (it bounds a state, not a command).

    Parameters
    ----------
    plan : ManeuverPlan
        Converged plan of a :class:`~ballctl.plants.rolling_ball.RollingBall`
        whose duration is a whole number of ``dt``.
    dt : float
        Controller sample time in s.
    contact_offset_m : (float, float)
        Initial contact-point offset (m).
    angle_offset_rad : float
        Initial offset of yaw and of every rail angle (rad).
    max_state_errors, max_input_errors : mapping, optional
        Bryson limits by coordinate name (``"<name>_rate"`` for velocities) and by input name;
        default: :func:`tracking_limits` (scaled with the ball's radius and rails, the input
        scale the room the plan leaves under its input bound).
    terminal_factor : float
        ``Q_N = terminal_factor * Q`` (eq. 24): the end of the maneuver is its
        purpose, so the default weighs it 100 times the running cost.
    limit_inputs : bool
        Saturate the commands at the plan's input bound (:func:`input_limit`); False: unbounded commands.
    chart_rotation : array_like, shape (3, 3), "auto" or None
        See :func:`plan_reference`.
    samples_per_step : int
        Samples per control step of the dense replay the constraints are checked on, >= 1.

    Returns
    -------
    PlanTracking
        With ``constraints`` (closed loop), ``open_loop_constraints``, ``weights`` and the dense replay.
    """
    ref = plan_reference(plan, chart_rotation=chart_rotation)
    system = ref.system
    part = plan_partition(system)
    defaults = tracking_limits(plan) if max_state_errors is None or max_input_errors is None else (None, None)
    max_state_errors = defaults[0] if max_state_errors is None else dict(max_state_errors)
    max_input_errors = defaults[1] if max_input_errors is None else dict(max_input_errors)
    horizon = float(plan.nodes[-1] - plan.nodes[0])
    weights = LQRWeights(max_state_errors=max_state_errors, max_input_errors=max_input_errors,
                         terminal_factor=terminal_factor)
    ctrl = design_tracking_lqr(system, ref, part, dt=dt, horizon=horizon, weights=weights,
                               options=TrackingOptions(t0=float(plan.nodes[0])))
    s0 = ref(float(plan.nodes[0]))
    x0, xd0 = perturbed_start(system, s0.x, s0.xd, contact_offset_m=contact_offset_m,
                              angle_offset_rad=angle_offset_rad)
    bound = input_limit(plan) if check_bool(limit_inputs, "limit_inputs") else None
    limits = None if bound is None else RigLimits(max_angle=bound)
    closed = simulate_closed_loop(ctrl, x0, xd0, options=ClosedLoopOptions(limits=limits))
    opened = simulate_closed_loop(ctrl, x0, xd0, options=ClosedLoopOptions(feedback="open", limits=limits))
    reports = []
    dense = None
    for run in (closed, opened):
        t_d, x_d = replay_held_inputs(plan.plant, system.to_ode_state(run.x[0], run.xd[0]), run.t, run.u,
                                      samples_per_step=samples_per_step)
        if dense is None:
            dense = (t_d, x_d)
        reports.append(held_run_constraints(plan, run, t_d, x_d))
    return PlanTracking(reference=ref, controller=ctrl, closed_loop=closed, open_loop=opened,
                        constraints=reports[0], open_loop_constraints=reports[1], weights=weights,
                        dense_t=dense[0], dense_x=dense[1])


def held_run_constraints(plan: ManeuverPlan, run: ClosedLoopResult, t_dense, x_dense) -> tuple[ConstraintReport, ...]:
    """The plan's constraints on a sampled run: its dense ODE replay for the path, its held inputs for the input.

    Parameters
    ----------
    plan : ManeuverPlan
    run : ClosedLoopResult
        A run of :func:`track_plan` (its inputs are held over each control step).
    t_dense, x_dense : ndarray
        From :func:`replay_held_inputs` of the run.

    Returns
    -------
    tuple of ConstraintReport
    """
    ball = plan.plant
    _, speed, _, _, contact = ball.split_state(x_dense)
    held = run.u[:-1] if run.u.shape[0] > 1 else run.u
    return run_constraints(plan.problem, t_dense, contact, speed, held, inputs=ball.inputs,
                           input_times=run.t[:held.shape[0]])
