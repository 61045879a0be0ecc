r"""Limit-aware references for the ball-plate: minimum-time and minimum-effort motions through waypoints.

Dynamic inversion (:mod:`ballctl.references`) turns a prescribed contact-point
path into plate angles, which may exceed a rig's tilt or slew limit. This
module plans the optimal alternative: the plate-angle history that moves the
contact point through waypoints (at free, optimized times) in minimum time,
or with least plate slew ``int |u_dot|^2 dt`` in a given time, within the
rig's limits (:class:`~ballctl.ball_plate.rig.RigLimits`): ``|alpha|, |beta| <= max_angle``
and ``|alpha_dot|, |beta_dot| <= max_rate``, both held on the whole
interpolant, not only at the collocation points.

Model
-----
The quasi-static :class:`~ballctl.BallPlate`. Its contact point accelerates
at ``k_b g_plate[:2] = k_b g (cos(alpha) sin(beta), -sin(alpha))`` for every
orientation of the ball (the first two rows of its index-1 solve;
``tests/test_planning_ball_plate.py`` proves the CasADi form
:func:`~ballctl.planning.symbolic.ball_plate_equations` equal to the compiled
kernels to 1e-12 and these rows independent of the orientation). So the
planner transcribes the contact subsystem with the plate angles as states and
their rates as inputs,

.. math::

    \dot p = v,\quad \dot v = k_b g\,(\cos\alpha\sin\beta, -\sin\alpha),\quad
    (\dot\alpha, \dot\beta) = w,

and the ball's orientation is recovered afterwards by integrating the full
plant under the planned plate angles (:meth:`PlateMotionPlan.reference`).

Contact (``friction_coefficient``, ``min_normal_force_N``): the plate's force on
the ball, ``F = m (a_G - g_plate)``
(:func:`~ballctl.planning.symbolic.newton_contact_force`), is kept in the
friction cone ``|F_t| <= mu N`` and above a least normal force at every
collocation point (:mod:`ballctl.planning.contact`). On the quasi-static plate
it depends on the plate angles only, ``N = m g cos(alpha) cos(beta)`` and
``|F_t| / N = (1 - k_b) tan(tilt)`` (tilt: the plate normal's angle from the
vertical), so the friction cone is a bound on the tilt,
``tan(tilt) <= mu / (1 - k_b)`` (3.5 mu for a solid ball); on the exact moving
plate the plate's rates and accelerations enter (the transport acceleration of
the ball's centre), so it also limits how fast the plate may tilt.

Method
------
One Hermite-Simpson phase (:func:`~ballctl.planning.transcription.hermite_simpson`)
per leg between consecutive waypoints, on the normalized time
``tau in [0, 1]`` with the leg's duration ``T_i`` appended to the state
(``dT_i/dtau = 0``, the dynamics scaled by ``T_i``), phases joined by
continuity of ``(p, v, alpha, beta)`` and of the plate rates ``w`` (continuous
inside a leg too), and the contact point pinned to each waypoint at the phase
ends; IPOPT through CasADi with exact derivatives.

The plate angles of a Hermite-Simpson solution are exactly the cubic Hermite
interpolant of their node values with slopes ``w`` (``w`` enters linearly, so
Simpson's rule integrates its quadratic exactly), and ``w`` is the quadratic
through its three values per interval. Both limits are imposed on the
Bernstein coefficients of those polynomials (cubic: ``alpha_k``,
``alpha_k + h w_k / 3``, ``alpha_{k+1} - h w_{k+1} / 3``, ``alpha_{k+1}``;
quadratic: ``w_k``, ``2 w_{k+1/2} - (w_k + w_{k+1}) / 2``, ``w_{k+1}``): a
polynomial lies in the convex hull of its Bernstein coefficients, so the
limits hold at every instant of the plan.

Minimum time with a slew limit is a bang-bang problem in ``w``; a small
``rate_weight`` on ``int |w|^2 dt`` (default 1e-4 s per (rad/s)^2 s) makes the
optimum unique and smooth and lengthens it by a fraction of a percent (the
tests compare with the analytic bang-bang optimum of a straight move).

References
----------
Aguendez et al., Mech. Mach. Theory 203 (2024) 105795, eqs. (31)-(48) (the plant).
J.T. Betts, *Practical Methods for Optimal Control and Estimation Using
Nonlinear Programming*, 2nd ed., SIAM (2010), sections 4.5-4.7 (Hermite-Simpson,
free final time, phases).
G. Farin, *Curves and Surfaces for CAGD*, 5th ed. (2002), ch. 4-5 (Bernstein
form and the convex hull property).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._errors import ChartSingularityError, InfeasiblePlanError, ParameterError
from .._validation import as_array, as_vector, check_bool, check_choice, check_instance, check_integer
from ..plants.ball_plate import LEAN_LIMIT, BallPlate
from ..plants.ball_plate_moving import MovingPlateBallPlate, ServoPlateBallPlate
from ..ode import IntegrationOptions
from ..references.rolling import IntegratedReference
from ..ball_plate.rig import RigLimits, RigProfile
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
from .symbolic import ball_plate_equations, moving_plate_contact_force_function, moving_plate_contact_function
from .transcription import (NLPConstraints, SolverOptions, SolverReport, collocation_times, dense_times,
                            hermite_simpson, hermite_state, most_violated, quadratic_input, run_ipopt)

__all__ = ["PlateMotionProblem", "PlateMotionPlan", "plan_plate_motion", "PLATE_OBJECTIVES"]

#: what :func:`plan_plate_motion` minimizes
PLATE_OBJECTIVES = ("time", "effort")

_N_STATE = 6   # (contact_x, contact_y, contact_x_rate, contact_y_rate, alpha, beta)
_EXACT_PLANTS = (MovingPlateBallPlate, ServoPlateBallPlate)


def _ball_parameters(plant):
    return plant.params if isinstance(plant, BallPlate) else plant.params.ball


@functools.lru_cache(maxsize=8)
def _exact_contact(params):
    return moving_plate_contact_function(params)


@functools.lru_cache(maxsize=8)
def _exact_contact_force(params):
    return moving_plate_contact_force_function(params)


@functools.lru_cache(maxsize=8)
def _quasi_static_equations(params):
    return ball_plate_equations(BallPlate(params))


@dataclass(frozen=True, kw_only=True)
class PlateMotionProblem:
    """A ball-plate motion to plan: waypoints, end conditions, objective (SI units, rad).

    Attributes
    ----------
    waypoints_m : ndarray, shape (W, 2)
        Contact points in m, W >= 2: the start, then the points to pass in
        order (at free times), the last being the goal. Consecutive points
        distinct.
    objective : {"time", "effort"}
        ``"time"``: minimum total time; ``"effort"``: least plate slew
        ``int |u_dot|^2 dt`` (rad^2/s) in the given ``duration_s``.
    duration_s : float, optional
        Total time in s for ``"effort"`` (required there, not allowed for ``"time"``).
    initial_velocity_mps, final_velocity_mps : ndarray, shape (2,)
        Contact-point velocity at the start and at the goal in m/s (default at rest).
    initial_plate_angles_rad : ndarray, shape (2,)
        Plate angles ``(alpha, beta)`` at the start in rad (default level).
    level_at_end : bool
        Plate level at the goal (with zero final velocity the ball then stays at rest).
    limit_margin : float
        Fraction in [0, 1) of the rig's tilt and slew limits kept free for the
        tracking controller's corrections: the plan uses ``(1 - limit_margin)``
        of each limit.
    corridor_m : float, optional
        Keep the contact point within this distance (m) of the straight line
        through the leg's two waypoints at every collocation point (motion
        along a polyline path); ``None``: free.
    rate_weight : float
        ``"time"`` only: weight of ``int |u_dot|^2 dt`` added to the time, in
        s / (rad^2/s), >= 0 (regularizes the bang-bang optimum).
    initial_orientation_rad : ndarray, shape (3,), optional
        Ball orientation ``(yaw, lean, roll)`` at the start in rad for the
        reference; default: yaw along the first leg (the ball rolls without
        leaning at first), lean = roll = 0.
    spin_rad_s : float
        Conserved spin of the ball about the plate normal, rad/s.
    max_plate_acceleration_rad_s2 : float, optional
        Bound on ``|alpha_ddot|, |beta_ddot|`` in rad/s^2 (used in full, not
        reduced by ``limit_margin``). Given, the plate rates become states
        (zero at the start and, with ``level_at_end``, at the goal) and the
        plate accelerations the inputs: the plan is then realizable by a
        servo of limited torque (about ``max_torque / plate inertia``), which
        the exact servo-plate inversion needs. ``None``: rates are inputs and
        may jump.
    friction_coefficient : float, optional
        Coulomb friction coefficient between ball and plate (dimensionless,
        > 0): the plate's force on the ball ``F = m (a_G - g_plate)`` must keep
        ``|F_t|^2 <= mu^2 N^2`` and ``N >= 0`` at every collocation point (else
        the ball slips). On the quasi-static plate this bounds the tilt,
        ``tan(tilt) <= mu / (1 - k_b)``. ``None``: no friction constraint.
    min_normal_force_N : float, optional
        Least normal force in N, >= 0, at every collocation point (the ball
        must not lift off); on the quasi-static plate ``N = m g cos(alpha)
        cos(beta)``, so it rarely binds. ``None``: no bound.
    """

    waypoints_m: np.ndarray
    objective: str = "time"
    duration_s: float | None = None
    initial_velocity_mps: np.ndarray = field(default_factory=lambda: np.zeros(2))
    final_velocity_mps: np.ndarray = field(default_factory=lambda: np.zeros(2))
    initial_plate_angles_rad: np.ndarray = field(default_factory=lambda: np.zeros(2))
    level_at_end: bool = True
    limit_margin: float = 0.1
    corridor_m: float | None = None
    rate_weight: float = 1e-4
    initial_orientation_rad: np.ndarray | None = None
    spin_rad_s: float = 0.0
    max_plate_acceleration_rad_s2: float | None = None
    friction_coefficient: float | None = None
    min_normal_force_N: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "friction_coefficient", check_friction_coefficient(self.friction_coefficient))
        object.__setattr__(self, "min_normal_force_N", check_min_normal_force(self.min_normal_force_N))
        wp = as_array(self.waypoints_m, "waypoints_m", shape=(None, 2), unit="m").copy()
        if wp.shape[0] < 2:
            raise ParameterError(f"waypoints_m needs at least 2 points (start and goal) in m, got {wp.shape[0]}")
        legs = np.linalg.norm(np.diff(wp, axis=0), axis=1)
        if np.any(legs <= 0):
            k = int(np.argmin(legs))
            raise ParameterError(f"waypoints_m: consecutive points {k} and {k + 1} coincide ({wp[k].tolist()} m); "
                                 "remove the repeat")
        wp.setflags(write=False)
        object.__setattr__(self, "waypoints_m", wp)
        check_choice(self.objective, "objective", PLATE_OBJECTIVES)
        if self.objective == "effort":
            if self.duration_s is None:
                raise ParameterError("objective='effort' needs duration_s (the total time in s, > 0)")
            d = float(self.duration_s)
            if not np.isfinite(d) or d <= 0:
                raise ParameterError(f"duration_s must be finite and > 0 s, got {self.duration_s!r}")
            object.__setattr__(self, "duration_s", d)
        elif self.duration_s is not None:
            raise ParameterError("objective='time' optimizes the duration: leave duration_s None "
                                 "(or use objective='effort' for a given time)")
        for name, unit in (("initial_velocity_mps", "m/s"), ("final_velocity_mps", "m/s"),
                           ("initial_plate_angles_rad", "rad")):
            v = as_vector(getattr(self, name), name, 2, unit=unit).copy()
            v.setflags(write=False)
            object.__setattr__(self, name, v)
        object.__setattr__(self, "level_at_end", check_bool(self.level_at_end, "level_at_end"))
        margin = float(self.limit_margin)
        if not 0.0 <= margin < 1.0:
            raise ParameterError(f"limit_margin must lie in [0, 1) (a fraction of the rig limits), got "
                                 f"{self.limit_margin!r}")
        object.__setattr__(self, "limit_margin", margin)
        if self.corridor_m is not None:
            c = float(self.corridor_m)
            if not np.isfinite(c) or c <= 0:
                raise ParameterError(f"corridor_m must be > 0 m or None, got {self.corridor_m!r}")
            object.__setattr__(self, "corridor_m", c)
        w = float(self.rate_weight)
        if not np.isfinite(w) or w < 0:
            raise ParameterError(f"rate_weight must be finite and >= 0 s/(rad^2/s), got {self.rate_weight!r}")
        object.__setattr__(self, "rate_weight", w)
        if self.initial_orientation_rad is not None:
            o = as_vector(self.initial_orientation_rad, "initial_orientation_rad", 3, unit="rad").copy()
            if abs(o[1]) >= LEAN_LIMIT:
                raise ParameterError(f"initial_orientation_rad: |lean| = {abs(o[1]):.4g} rad must be below the "
                                     f"chart limit {LEAN_LIMIT:.4g} rad (89 deg)")
            o.setflags(write=False)
            object.__setattr__(self, "initial_orientation_rad", o)
        s = float(self.spin_rad_s)
        if not np.isfinite(s):
            raise ParameterError(f"spin_rad_s must be finite (rad/s), got {self.spin_rad_s!r}")
        object.__setattr__(self, "spin_rad_s", s)
        if self.max_plate_acceleration_rad_s2 is not None:
            a = float(self.max_plate_acceleration_rad_s2)
            if not np.isfinite(a) or a <= 0:
                raise ParameterError(f"max_plate_acceleration_rad_s2 must be > 0 rad/s^2 or None, got "
                                     f"{self.max_plate_acceleration_rad_s2!r}")
            object.__setattr__(self, "max_plate_acceleration_rad_s2", a)

    @property
    def rates_are_states(self) -> bool:
        """True when the plate accelerations are the inputs (``max_plate_acceleration_rad_s2`` given)."""
        return self.max_plate_acceleration_rad_s2 is not None

    @property
    def has_contact_constraints(self) -> bool:
        """True when ``friction_coefficient`` or ``min_normal_force_N`` is given."""
        return self.friction_coefficient is not None or self.min_normal_force_N is not None

    @property
    def n_legs(self) -> int:
        """Number of legs (waypoint-to-waypoint phases)."""
        return self.waypoints_m.shape[0] - 1


@dataclass(frozen=True)
class PlateMotionPlan:
    """A planned ball-plate motion on the collocation points (physical time).

    Attributes
    ----------
    plant : BallPlate, MovingPlateBallPlate or ServoPlateBallPlate
        The plant planned on (quasi-static, or the exact moving plate).
    problem : PlateMotionProblem
    limits : RigLimits
        The rig limits planned against (the plan uses ``1 - limit_margin`` of them).
    nodes : ndarray, shape (N + 1,)
        Mesh nodes in s (all legs, shared ends).
    t : ndarray, shape (P,)
        Collocation points in s, ``P = 2N + 1``.
    x : ndarray, shape (P, 6), (P, 8) or (P, 9)
        ``(contact_x, contact_y, contact_x_rate, contact_y_rate, alpha, beta)`` in m, m/s, rad,
        then ``(alpha_dot, beta_dot)`` in rad/s when the problem bounds the plate acceleration,
        then the ball's spin ``sigma`` in rad/s on the exact moving plate.
    u : ndarray, shape (P, 2)
        The inputs: plate rates ``(alpha_dot, beta_dot)`` in rad/s, or plate
        accelerations in rad/s^2 when the problem bounds them.
    leg_durations_s : ndarray, shape (W - 1,)
        Optimized time of each leg in s.
    report : SolverReport
        With the plan's ``peak_friction_coefficient_required`` and
        ``least_normal_force_N`` at the collocation points.
    contact_backoffs : (float, float)
        ``(b_mu, b_N)``: the friction cone imposed at the collocation points
        with ``(1 - b_mu) friction_coefficient`` and the normal force with
        ``min_normal_force_N + b_N`` (N), so that they hold between the points
        too (``contact_rounds`` of :func:`plan_plate_motion`).
    """

    plant: object
    problem: PlateMotionProblem
    limits: RigLimits
    nodes: np.ndarray
    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    leg_durations_s: np.ndarray
    report: SolverReport
    contact_backoffs: tuple[float, float] = (0.0, 0.0)

    @property
    def converged(self) -> bool:
        """Whether the solver converged to a feasible point."""
        return self.report.converged

    @property
    def duration_s(self) -> float:
        """Total time in s."""
        return float(self.nodes[-1] - self.nodes[0])

    @property
    def waypoint_times_s(self) -> np.ndarray:
        """Times in s at which the waypoints are passed, shape (W,)."""
        return np.concatenate([[0.0], np.cumsum(self.leg_durations_s)])

    def raise_if_failed(self) -> "PlateMotionPlan":
        """Return self, or raise :class:`~ballctl._errors.InfeasiblePlanError` with the report's message."""
        if not self.report.converged:
            raise InfeasiblePlanError(self.report.message)
        return self

    @property
    def rates_are_states(self) -> bool:
        """True when the inputs are plate accelerations (``problem.max_plate_acceleration_rad_s2`` given)."""
        return self.x.shape[1] > _N_STATE

    @property
    def exact(self) -> bool:
        """True for a plan on the exact moving plate (the spin is a state)."""
        return isinstance(self.plant, _EXACT_PLANTS)

    def _slopes(self) -> np.ndarray:
        xn, un = self.x[0::2], self.u[0::2]
        if self.exact:
            f = _exact_contact(self.plant.params).map(xn.shape[0])
            a, sd = f(xn[:, 0:2].T, xn[:, 2:4].T, xn[:, 8][None], xn[:, 4:6].T, xn[:, 6:8].T, un.T)
            return np.column_stack([xn[:, 2:4], np.asarray(a).T, xn[:, 6:8], un, np.asarray(sd).ravel()])
        b = _ball_parameters(self.plant)
        a = b.rolling_gain * b.gravity * np.column_stack([np.cos(xn[:, 4]) * np.sin(xn[:, 5]), -np.sin(xn[:, 4])])
        return np.column_stack([xn[:, 2:4], a, xn[:, 6:8], un] if self.rates_are_states else [xn[:, 2:4], a, un])

    def _interval(self, t):
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), self.nodes[0], self.nodes[-1])
        k = np.clip(np.searchsorted(self.nodes, t, side="right") - 1, 0, self.nodes.size - 2)
        H = self.nodes[k + 1] - self.nodes[k]
        return t, k, H, (t - self.nodes[k]) / H

    def state(self, t) -> np.ndarray:
        """The planned state: the collocation polynomial (cubic Hermite), plate angles exact.

        With plate accelerations as inputs the plate angles are the exact
        integral (a quartic) of the rates' cubic, not their cubic Hermite.

        Parameters
        ----------
        t : array_like, shape (K,)
            Times in s within the plan.

        Returns
        -------
        ndarray, shape (K, 6), (K, 8) or (K, 9)
            Contact point (m), its velocity (m/s), plate angles (rad)[, plate rates (rad/s)[, spin (rad/s)]].
        """
        t, k, H, s = self._interval(t)
        out = hermite_state(self.nodes, self.x[0::2], self._slopes(), t)
        if self.rates_are_states:
            xn, un = self.x[0::2], self.u[0::2]
            s = s[:, None]
            i00, i10 = s - s ** 3 + s ** 4 / 2, s ** 2 / 2 - 2 * s ** 3 / 3 + s ** 4 / 4
            i01, i11 = s ** 3 - s ** 4 / 2, s ** 4 / 4 - s ** 3 / 3
            Hc = H[:, None]
            out[:, 4:6] = xn[k, 4:6] + Hc * (i00 * xn[k, 6:8] + i10 * Hc * un[k] + i01 * xn[k + 1, 6:8]
                                             + i11 * Hc * un[k + 1])
        return out

    def plate_angles(self, t) -> np.ndarray:
        """Planned plate angles in rad (exactly the plan's polynomial); held at the final value after the end.

        Parameters
        ----------
        t : float or array_like, shape (K,)
            Times in s.

        Returns
        -------
        ndarray, shape (2,) for a scalar ``t``, else (K, 2)
        """
        scalar = np.ndim(t) == 0
        out = self.state(t)[:, 4:6]
        return out[0] if scalar else out

    def plate_rates(self, t) -> np.ndarray:
        """Planned plate rates in rad/s (exactly the plan's polynomial; zero outside the plan).

        Parameters
        ----------
        t : float or array_like, shape (K,)
            Times in s.

        Returns
        -------
        ndarray, shape (2,) for a scalar ``t``, else (K, 2)
        """
        scalar = np.ndim(t) == 0
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        clipped = np.clip(tt, self.nodes[0], self.nodes[-1])
        if self.rates_are_states:
            out = self.state(clipped)[:, 6:8]
        else:
            out = quadratic_input(self.nodes, self.u, clipped)
        out[(tt < self.nodes[0]) | (tt > self.nodes[-1])] = 0.0
        return out[0] if scalar else out

    def plate_accelerations(self, t) -> np.ndarray:
        """Planned plate accelerations in rad/s^2 (zero outside the plan).

        The quadratic input of each interval when the problem bounds the
        plate acceleration; otherwise the derivative of the rates' quadratic
        (piecewise linear, discontinuous at the nodes).

        Parameters
        ----------
        t : float or array_like, shape (K,)
            Times in s.

        Returns
        -------
        ndarray, shape (2,) for a scalar ``t``, else (K, 2)
        """
        scalar = np.ndim(t) == 0
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        if self.rates_are_states:
            out = quadratic_input(self.nodes, self.u, np.clip(tt, self.nodes[0], self.nodes[-1]))
        else:
            _, k, H, s = self._interval(tt)
            u0, um, u1 = self.u[2 * k], self.u[2 * k + 1], self.u[2 * k + 2]
            s = s[:, None]
            out = (u0 * (4 * s - 3) + um * (4 - 8 * s) + u1 * (4 * s - 1)) / H[:, None]
        out[(tt < self.nodes[0]) | (tt > self.nodes[-1])] = 0.0
        return out[0] if scalar else out

    def peak_limits(self, *, samples_per_interval: int = 50) -> dict[str, float]:
        """Largest plate angle and rate of the plan, sampled densely between the nodes.

        Parameters
        ----------
        samples_per_interval : int
            Samples per mesh interval.

        Returns
        -------
        dict
            ``max_angle_rad``, ``max_rate_rad_s``, ``max_acceleration_rad_s2`` (largest
            |component|, the rig's per-axis limits), ``max_tilt_rad`` (angle of the plate normal from the
            vertical) and the rig's ``limit_angle_rad``, ``limit_rate_rad_s``.
        """
        s = np.linspace(0.0, 1.0, int(samples_per_interval) + 1)
        t = np.unique((self.nodes[:-1, None] + np.diff(self.nodes)[:, None] * s).ravel())
        ang, rate = self.plate_angles(t), self.plate_rates(t)
        tilt = np.arccos(np.clip(np.cos(ang[:, 0]) * np.cos(ang[:, 1]), -1.0, 1.0))
        return {"max_angle_rad": float(np.abs(ang).max()), "max_rate_rad_s": float(np.abs(rate).max()),
                "max_acceleration_rad_s2": float(np.abs(self.plate_accelerations(t)).max()),
                "max_tilt_rad": float(tilt.max()), "limit_angle_rad": self.limits.max_angle,
                "limit_rate_rad_s": self.limits.max_rate}

    def contact_forces(self, t=None) -> tuple[np.ndarray, np.ndarray]:
        """The plate's force on the ball along the plan, ``F = m (a_G - g_plate)``, in plate axes.

        From the planner's CasADi model (:func:`~ballctl.planning.symbolic.ball_plate_equations`'s
        ``contact_forces_of_angles`` on the quasi-static plate,
        :func:`~ballctl.planning.symbolic.moving_plate_contact_force_function` on the
        exact plate), equal to the plants' ``contact_forces`` to rounding; on the
        full plant use ``plant.contact_forces(x, xd, u)`` of :meth:`reference` samples.

        Parameters
        ----------
        t : array_like, shape (K,), optional
            Times in s within the plan (default: the collocation points, where the
            NLP imposes the contact constraints); between them the planned state
            is the collocation polynomial.

        Returns
        -------
        normal : ndarray, shape (K,)
            Normal force in N.
        tangential : ndarray, shape (K, 2)
            Friction force in N, plate axes x and y.
        """
        if t is None:
            x, u = self.x, self.u
        else:
            tt = np.atleast_1d(np.asarray(t, dtype=float))
            x, u = self.state(tt), self.plate_accelerations(tt)
        K = x.shape[0]
        if self.exact:
            f = _exact_contact_force(self.plant.params).map(K)
            normal, tangential = f(x[:, 0:2].T, x[:, 2:4].T, x[:, 8][None], x[:, 4:6].T, x[:, 6:8].T, u.T)
        else:
            f = _quasi_static_equations(_ball_parameters(self.plant)).contact_forces_of_angles.map(K)
            normal, tangential = f(x[:, 4:6].T)
        return np.asarray(normal, dtype=float).ravel(), np.asarray(tangential, dtype=float).T.copy()

    def initial_coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """The plant's coordinates and velocities at the start.

        Returns
        -------
        x0, xd0 : ndarray, shape (5,) (quasi-static) or (7,) (moving plate)
            Contact point from the first waypoint, orientation from the problem
            (default: yaw along the first leg), velocities from the rolling
            constraints with the problem's spin; on the moving plate the plate
            angles follow, at rest.
        """
        pb = self.problem
        if pb.initial_orientation_rad is None:
            d = pb.waypoints_m[1] - pb.waypoints_m[0]
            orient = np.array([np.arctan2(d[1], d[0]), 0.0, 0.0])
        else:
            orient = np.asarray(pb.initial_orientation_rad, dtype=float)
        x0 = np.concatenate([pb.waypoints_m[0], orient])
        xd0 = BallPlate(_ball_parameters(self.plant)).rolling_velocities(x0, pb.initial_velocity_mps, pb.spin_rad_s)
        if self.exact:      # the plate starts at rest: the ball's spin is its relative spin
            x0 = np.concatenate([x0, pb.initial_plate_angles_rad])
            xd0 = np.concatenate([xd0, np.zeros(2)])
        return x0, xd0

    def reference(self, *, hold_s: float = 0.0, rtol: float = 1e-10, atol: float = 1e-12) -> IntegratedReference:
        """The plan as a DAE-consistent reference of the full plant it was planned on.

        The plant is integrated (DOP853, restarting at every mesh node) from
        :meth:`initial_coordinates` under the planned plate angles
        (:class:`~ballctl.BallPlate`), the planned plate accelerations
        (:class:`~ballctl.plants.ball_plate_moving.MovingPlateBallPlate`) or the
        servo commands that realize the planned plate motion
        (:class:`~ballctl.plants.ball_plate_moving.ServoPlateBallPlate`: the
        torque the prescribed motion needs, inverted through the servo law);
        this is the re-simulation of the plan on the nonlinear plant, and the
        object plugs into :func:`ballctl.design_tracking_lqr`,
        :func:`ballctl.design_for_rig` and :func:`ballctl.simulate_closed_loop`
        like any other reference.

        Parameters
        ----------
        hold_s : float
            Extra time in s after the plan with the plate held at its final
            angles (level at a goal at rest: the ball stays there), >= 0.
        rtol, atol : float
            Integrator tolerances.

        Returns
        -------
        IntegratedReference
            On ``[0, duration_s + hold_s]``.

        Raises
        ------
        ChartSingularityError
            When the ball's lean reaches the chart limit (89 deg) on the way;
            choose another ``initial_orientation_rad`` or ``spin_rad_s``.
        """
        self.raise_if_failed()
        hold_s = float(hold_s)
        if not np.isfinite(hold_s) or hold_s < 0:
            raise ParameterError(f"hold_s must be finite and >= 0 s, got {hold_s!r}")
        x0, xd0 = self.initial_coordinates()
        end = float(self.nodes[-1]) + hold_s
        breaks = list(self.nodes[1:-1]) + ([float(self.nodes[-1])] if hold_s > 0 else [])
        if not self.exact:
            ref = IntegratedReference(self.plant, x0, xd0, self.plate_angles, (0.0, end), breakpoints=breaks,
                                      options=IntegrationOptions(rtol=rtol, atol=atol))
        else:
            prescribed = IntegratedReference(MovingPlateBallPlate(self.plant.params), x0, xd0,
                                             self.plate_accelerations, (0.0, end), breakpoints=breaks,
                                             options=IntegrationOptions(rtol=rtol, atol=atol))
            ref = prescribed
            if isinstance(self.plant, ServoPlateBallPlate):
                ref = IntegratedReference(self.plant, x0, xd0, _servo_commands(self.plant, prescribed), (0.0, end),
                                          breakpoints=breaks, options=IntegrationOptions(rtol=rtol, atol=atol))
        probe = ref(np.linspace(0.0, end, max(200, 20 * self.nodes.size)))
        lean = np.abs(probe.x[:, 3])
        if lean.max() >= LEAN_LIMIT:
            k = int(np.argmax(lean >= LEAN_LIMIT))
            raise ChartSingularityError(
                f"the ball's lean reaches the chart limit ({np.rad2deg(LEAN_LIMIT):.0f} deg) at t = {probe.t[k]:.4g} s "
                f"of the plan; choose another initial_orientation_rad (yaw along the leg where it happens) or "
                f"spin_rad_s")
        return ref


def _servo_commands(plant: ServoPlateBallPlate, prescribed: IntegratedReference):
    """``u(t)``: the servo commands whose torque realizes the prescribed plate motion (M xdd - Q on the plate rows)."""

    def commands(t):
        s = prescribed(np.array([float(t)]))
        x, xd, xdd = s.x, s.xd, s.xdd
        q = x[:, 5:7]
        M, Q = plant.mass_and_forces(x, xd, q)
        tau = (np.einsum("kij,kj->ki", M, xdd) - Q)[:, 5:] + plant.servo_torque(x, xd, q)
        return plant.commands_for_torque(x, xd, tau)[0]

    return commands


def _resolve_limits(plant, limits, rig) -> RigLimits:
    if (limits is None) == (rig is None):
        raise ParameterError("give the rig's limits as limits=RigLimits(...) or the rig as rig=RigProfile(...), "
                             "exactly one of them")
    if rig is not None:
        check_instance(rig, "rig", RigProfile)
        if rig.ball != _ball_parameters(plant):
            raise ParameterError(f"rig {rig.name!r} has ball {rig.ball.as_dict()} but the plant has "
                                 f"{_ball_parameters(plant).as_dict()}; plan on rig.design_plant() or "
                                 f"rig.design_plant().quasi_static()")
        limits = rig.limits
    check_instance(limits, "limits", RigLimits)
    if limits.max_angle is None:
        raise ParameterError("limits.max_angle (the plate tilt limit in rad) is required: without it the plan is "
                             "dynamic inversion (see ballctl.references)")
    if limits.max_angle >= np.pi / 2:
        raise ParameterError(f"limits.max_angle must be below pi/2 rad for planning, got {limits.max_angle!r}")
    return limits


def _initial_guess(problem: PlateMotionProblem, kg: float, angle: float, rate: float | None, n_int: int,
                   exact: bool = False):
    """Durations and states of a stop-at-every-waypoint motion (smoothstep legs, plate from inversion).

    ``kg = k_b g`` (m/s^2), ``angle`` and ``rate`` the usable tilt (rad) and slew (rad/s) bounds. A
    smoothstep leg of length L in time T peaks at ``6 L / T^2``: T is chosen so that this is the
    largest acceleration the tilt gives, plus the time to ramp the plate up and down twice.
    """
    wp = problem.waypoints_m
    L = np.linalg.norm(np.diff(wp, axis=0), axis=1)
    amax = kg * np.sin(angle)
    T = np.sqrt(6.0 * L / amax)
    if rate is not None:
        T = T + 4.0 * angle / rate
    if problem.objective == "effort":
        T = T * problem.duration_s / T.sum()
    tau = np.linspace(0.0, 1.0, 2 * n_int + 1)
    s, ds, dds = 3 * tau ** 2 - 2 * tau ** 3, 6 * tau - 6 * tau ** 2, 6 - 12 * tau
    lim = np.sin(angle)
    legs = []
    for i in range(problem.n_legs):
        d = wp[i + 1] - wp[i]
        p = wp[i] + s[:, None] * d
        v = (ds / T[i])[:, None] * d
        a = (dds / T[i] ** 2)[:, None] * d
        alpha = np.arcsin(np.clip(-a[:, 1] / kg, -lim, lim))
        beta = np.arcsin(np.clip(a[:, 0] / (kg * np.cos(alpha)), -lim, lim))
        extra = np.zeros((tau.size, 2 if problem.rates_are_states else 0))
        if exact:
            extra = np.column_stack([extra, np.full(tau.size, problem.spin_rad_s)])
        X = np.column_stack([p, v, alpha, beta, extra, np.full(tau.size, T[i])])
        legs.append((X, np.zeros((tau.size, 2))))
    return legs


class _PlateNLP:
    """The multi-phase transcription (built once per problem and mesh)."""

    def __init__(self, plant: BallPlate, problem: PlateMotionProblem, limits: RigLimits, n_int: int,
                 solver: SolverOptions) -> None:
        ca = require_casadi()
        start = time.perf_counter()
        accel = problem.rates_are_states
        exact = isinstance(plant, _EXACT_PLANTS)
        ns = _N_STATE + (2 if accel else 0) + (1 if exact else 0)
        self.n_states = ns
        x, w, z = ca.SX.sym("x", ns + 1), ca.SX.sym("w", 2), ca.SX.sym("z", 0)
        T = x[ns]
        if exact:       # (p, v, q, qd, sigma): the exact moving plate's contact subsystem
            acc, sigma_dot = _exact_contact(plant.params)(x[0:2], x[2:4], x[8], x[4:6], x[6:8], w)
            rhs = ca.vertcat(x[2:4], acc, x[6:8], w, sigma_dot)
        else:
            eq = ball_plate_equations(plant)
            tail = ca.vertcat(x[6:8], w) if accel else w
            rhs = ca.vertcat(x[2:4], eq.contact_acceleration(x[4:6]), tail)
        f = ca.Function("plate_rhs", [x, w, z], [ca.vertcat(T * rhs, 0.0)])
        tau = np.linspace(0.0, 1.0, n_int + 1)
        margin = 1.0 - problem.limit_margin
        amax, rmax = margin * limits.max_angle, None if limits.max_rate is None else margin * limits.max_rate
        accmax = problem.max_plate_acceleration_rad_s2
        self.angle_bound, self.rate_bound = amax, rmax
        S = problem.n_legs
        wp = problem.waypoints_m
        self.trs = [hermite_simpson(f, tau, symbolic="SX") for _ in range(S)]
        ball = _ball_parameters(plant)
        self.weight_N = float(ball.mass) * float(ball.gravity)
        self.param = ca.SX.sym("p", 2)          # (friction back-off, fraction of mu; normal-force back-off, N)
        contact_force = None
        if problem.has_contact_constraints:
            contact_force = _exact_contact_force(plant.params) if exact else \
                _quasi_static_equations(ball).contact_forces_of_angles
        groups: list[tuple[str, object, object, object]] = []
        contact_group = []                      # per group: True for the contact constraints
        J = 0
        h = 1.0 / n_int
        wq = ca.DM(self.trs[0].quadrature_weights).T
        for i, tr in enumerate(self.trs):
            X, U = tr.X, tr.U
            Ti = X[ns, 0]
            H = h * Ti                                          # physical interval length, s
            groups.append((f"collocation defects (dynamics), leg {i + 1}", tr.defects, 0.0, 0.0))
            rates = X[6:8, :] if accel else U
            effort = Ti * ca.sum2(wq * ca.sum1(rates ** 2))
            J = J + (Ti + problem.rate_weight * effort if problem.objective == "time" else effort)
            ak, an = X[4:6, 0:-1:2], X[4:6, 2::2]
            wk, wm, wn = U[:, 0:-1:2], U[:, 1::2], U[:, 2::2]
            if accel:
                # rates: cubic Hermite (Bernstein c0..c3); angles: its integral, a quartic (a0..a4)
                rk, rn = X[6:8, 0:-1:2], X[6:8, 2::2]
                c1, c2 = rk + H / 3.0 * wk, rn - H / 3.0 * wn
                a1 = ak + H / 4.0 * rk
                a2 = a1 + H / 4.0 * c1
                a3 = a2 + H / 4.0 * c2
                tilt_coeffs = ca.vertcat(ca.vec(a1), ca.vec(a2), ca.vec(a3))
                angle_points = ca.horzcat(X[4:6, 0::2], a1, a2, a3)
                rate_coeffs = ca.vertcat(ca.vec(c1), ca.vec(c2))
                groups.append((f"plate acceleration limit |alpha_ddot|, |beta_ddot| <= {accmax:.4g} rad/s^2 "
                               f"between nodes, leg {i + 1}", ca.vec(2.0 * wm - 0.5 * (wk + wn)), -accmax, accmax))
            else:
                tilt_coeffs = ca.vertcat(ca.vec(ak + H / 3.0 * wk), ca.vec(an - H / 3.0 * wn))
                angle_points = ca.horzcat(X[4:6, 0::2], ak + H / 3.0 * wk, an - H / 3.0 * wn)
                rate_coeffs = ca.vec(2.0 * wm - 0.5 * (wk + wn))
            groups.append((f"tilt limit |alpha|, |beta| <= {amax:.4g} rad between nodes, leg {i + 1}",
                           tilt_coeffs, -amax, amax))
            if rmax is not None:
                groups.append((f"slew limit |alpha_dot|, |beta_dot| <= {rmax:.4g} rad/s between nodes, leg {i + 1}",
                               rate_coeffs, -rmax, rmax))
            groups.append((f"waypoint {i + 1} {wp[i + 1].tolist()} m reached", X[0:2, -1] - ca.DM(wp[i + 1]),
                           0.0, 0.0))
            if contact_force is not None:
                # exact plate: at the collocation points; quasi-static: F depends on the plate angles only and
                # the cone is convex in them (tan(tilt) bounded: cos(alpha) cos(beta) is log-concave), so at the
                # angles' Bernstein control points (nodes included) it holds on the whole polynomial
                args = ((X[0:2, :], X[2:4, :], X[8, :], X[4:6, :], X[6:8, :], U) if exact else (angle_points,))
                normal, tangential = contact_force.map(int(args[0].shape[1]))(*args)
                contact_group += [False] * (len(groups) - len(contact_group))
                groups += contact_constraint_groups(normal, tangential,
                                                    friction_coefficient=problem.friction_coefficient,
                                                    min_normal_force_N=problem.min_normal_force_N,
                                                    weight_N=self.weight_N, friction_backoff=self.param[0],
                                                    normal_backoff_N=self.param[1], where=f", leg {i + 1}")
                contact_group += [True] * (len(groups) - len(contact_group))
            if i + 1 < S:
                # states and inputs continuous (the input is continuous inside a leg too)
                groups.append((f"continuity between legs {i + 1} and {i + 2}",
                               ca.vertcat(X[:ns, -1] - self.trs[i + 1].X[:ns, 0],
                                          U[:, -1] - self.trs[i + 1].U[:, 0]), 0.0, 0.0))
            if problem.corridor_m is not None:
                d = wp[i + 1] - wp[i]
                nrm = np.array([-d[1], d[0]]) / np.linalg.norm(d)
                off = ca.mtimes(ca.DM(nrm).T, X[0:2, :] - ca.repmat(ca.DM(wp[i]), 1, X.shape[1]))
                groups.append((f"corridor |distance from the line of leg {i + 1}| <= {problem.corridor_m} m",
                               off.T, -problem.corridor_m, problem.corridor_m))
        last = self.trs[-1].X
        groups.append(("final velocity final_velocity_mps", last[2:4, -1] - ca.DM(problem.final_velocity_mps),
                       0.0, 0.0))
        if problem.level_at_end:
            groups.append(("plate level at the end (level_at_end)", last[4:8 if accel else 6, -1], 0.0, 0.0))
        if problem.objective == "effort":
            total = sum(tr.X[ns, 0] for tr in self.trs)
            groups.append((f"total time duration_s = {problem.duration_s} s", total - problem.duration_s, 0.0, 0.0))
        self.groups = groups
        g = ca.vertcat(*[grp[1] for grp in groups])
        wvar = ca.vertcat(*[tr.w for tr in self.trs])
        self.g_fun = ca.Function("g", [wvar, self.param], [g])
        lbw, ubw = [], []
        P = self.trs[0].n_points
        tmin = 1e-3
        ulim = accmax if accel else rmax
        for i, tr in enumerate(self.trs):
            lbX, ubX = np.full((P, ns + 1), -np.inf), np.full((P, ns + 1), np.inf)
            lbX[:, 4:6], ubX[:, 4:6] = -amax, amax
            if accel and rmax is not None:
                lbX[:, 6:8], ubX[:, 6:8] = -rmax, rmax
            lbX[:, ns] = tmin
            if i == 0:
                x0 = np.concatenate([wp[0], problem.initial_velocity_mps, problem.initial_plate_angles_rad,
                                     np.zeros(2 if accel else 0), [problem.spin_rad_s] if exact else []])
                lbX[0, :ns] = ubX[0, :ns] = x0
            lbU, ubU = np.full((P, 2), -np.inf), np.full((P, 2), np.inf)
            if ulim is not None:
                lbU[:], ubU[:] = -ulim, ulim
            lbw.append(tr.pack(lbX, lbU))
            ubw.append(tr.pack(ubX, ubU))
        self.lbw, self.ubw = np.concatenate(lbw), np.concatenate(ubw)
        self.constraints = NLPConstraints.from_groups(groups, self.lbw, self.ubw,
                                                      "variable bounds (initial state, tilt or slew limit at a point)")
        # the same bounds without the contact constraints (the diagnosis of an infeasible plan)
        contact_group += [False] * (len(groups) - len(contact_group))
        rows = np.repeat(np.array(contact_group, dtype=bool), self.constraints.sizes)
        self.has_contact = bool(rows.any())
        self.relaxed_constraints = self.constraints.relaxed(rows)
        self.solver = ca.nlpsol("plate_plan", "ipopt", {"x": wvar, "f": J, "g": g, "p": self.param},
                                solver.casadi_options(max_iterations=3000, max_cpu_time_s=300.0))
        self.n_variables, self.n_constraints = int(wvar.numel()), int(g.numel())
        self.build_time_s = time.perf_counter() - start

    def violation(self, w, p=(0.0, 0.0), relaxed: bool = False) -> tuple[float, str]:
        g = np.asarray(self.g_fun(w, p), dtype=float).ravel()
        return most_violated(g, w, self.relaxed_constraints if relaxed else self.constraints)

    def solve(self, w0, p=(0.0, 0.0), relaxed: bool = False) -> dict:
        """One IPOPT solve from ``w0`` (:func:`~ballctl.planning.transcription.run_ipopt`)."""
        return run_ipopt(self.solver, w0, self.relaxed_constraints if relaxed else self.constraints, list(p))


def plan_plate_motion(plant, problem: PlateMotionProblem, *, limits: RigLimits | None = None,
                      rig: RigProfile | None = None, intervals: int = 20,
                      solver: SolverOptions | None = None) -> PlateMotionPlan:
    """Plan a minimum-time or minimum-effort ball-plate motion through waypoints within a rig's limits.

    Parameters
    ----------
    plant : BallPlate, ServoPlateBallPlate or MovingPlateBallPlate
        The quasi-static plant (for a rig: ``rig.design_plant().quasi_static()``), or
        the exact moving plate (for a rig: ``rig.design_plant()``, two plate angles):
        then the planner transcribes the exact contact subsystem
        (:func:`~ballctl.planning.symbolic.moving_plate_contact_function`, the
        ball's spin a state) and needs ``problem.max_plate_acceleration_rad_s2``.
    problem : PlateMotionProblem
    limits : RigLimits, optional
        Tilt (``max_angle``, required) and slew (``max_rate``) limits; the
        quantum and the delay are left to the closed loop.
    rig : RigProfile, optional
        Instead of ``limits``: the rig whose ``limits`` apply (its ball must be the plant's).
    intervals : int
        Hermite-Simpson intervals per leg (>= 2).
    solver : SolverOptions, optional
        IPOPT's limits and tolerances (default: 3000 iterations and 300 s per
        solve, tolerances 1e-9) and the re-solve rounds
        (:class:`~ballctl.planning.transcription.SolverOptions`; ``clearance_rounds``
        does not apply). ``contact_rounds``: with
        ``problem.friction_coefficient`` or ``min_normal_force_N`` the
        problem is solved first without them (kept when it meets them), then
        with them. On the quasi-static plate they are imposed at the Bernstein
        control points of the plate angles, which makes them hold at every
        instant; on the exact plate at the collocation points, and the plan's
        contact force is sampled between them (20 per interval): when it needs
        more than ``(1 + 1e-3) friction_coefficient`` or falls below
        ``min_normal_force_N - 1e-3 m g``, the bounds at the points are tightened
        by the excess (loosened when too conservative) and the problem re-solved,
        at most this many times
        (:func:`~ballctl.planning.contact.update_contact_backoffs`). The cheapest
        plan that keeps them between the points is returned; if none does,
        ``converged`` is False and the message says so.

    Returns
    -------
    PlateMotionPlan
        With ``report.converged`` False and a message naming the most violated
        constraint when IPOPT fails (e.g. a ``duration_s`` too short for the limits).
        A failed problem with contact constraints is re-solved without them: if
        that succeeds, the message names the friction cone
        (``friction_coefficient``) or the least normal force
        (``min_normal_force_N``) and what the unconstrained plan needs.

    Raises
    ------
    ParameterError
        Missing or inconsistent limits, or a ``"time"`` objective without a slew limit.
    MissingExtraError
        When CasADi (the ``optimal`` extra) is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl import BallPlate
    >>> from ballctl.ball_plate.rig import RigLimits
    >>> plan = plan_plate_motion(BallPlate(), PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0]], limit_margin=0.0),
    ...                          limits=RigLimits(max_angle=np.deg2rad(10), max_rate=np.deg2rad(200)), intervals=20)
    >>> plan.converged, round(plan.duration_s, 2)
    (True, 0.87)
    """
    check_instance(plant, "plant", (BallPlate, *_EXACT_PLANTS),
                   "BallPlate, ServoPlateBallPlate or MovingPlateBallPlate")
    check_instance(problem, "problem", PlateMotionProblem)
    exact = isinstance(plant, _EXACT_PLANTS)
    if exact and plant.n_plate != 2:
        raise ParameterError("the exact plate planner needs two plate angles (MovingPlateParameters(with_spin=False))")
    limits = _resolve_limits(plant, limits, rig)
    if exact and not problem.rates_are_states:
        hint = ""
        if isinstance(plant, ServoPlateBallPlate) and plant.servo.max_torque is not None:
            hint = (f"; this servo gives at most max_torque / plate inertia = "
                    f"{plant.servo.max_torque / max(plant.servo.plate_inertia[:2]):.3g} rad/s^2")
        raise ParameterError("planning on the exact moving plate needs problem.max_plate_acceleration_rad_s2 "
                             f"(rad/s^2): the plate's inertia and servo torque bound it{hint}")
    if problem.objective == "time" and limits.max_rate is None:
        raise ParameterError("objective='time' needs a slew limit limits.max_rate in rad/s: without it the "
                             "minimum-time plate jumps between its tilt limits")
    n_int = check_integer(intervals, "intervals", minimum=2)
    margin = 1.0 - problem.limit_margin
    if np.any(np.abs(problem.initial_plate_angles_rad) > margin * limits.max_angle):
        raise InfeasiblePlanError(f"initial_plate_angles_rad {problem.initial_plate_angles_rad.tolist()} rad exceed "
                                  f"the usable tilt limit (1 - limit_margin) * max_angle = "
                                  f"{margin * limits.max_angle:.4g} rad")
    solver = SolverOptions() if solver is None else check_instance(solver, "solver", SolverOptions)
    nlp = _PlateNLP(plant, problem, limits, n_int, solver)
    p = _ball_parameters(plant)
    guess = _initial_guess(problem, p.rolling_gain * p.gravity, nlp.angle_bound, nlp.rate_bound, n_int, exact)
    w0 = np.concatenate([tr.pack(X, U) for tr, (X, U) in zip(nlp.trs, guess)])
    rounds_max = solver.contact_rounds
    backoffs = (0.0, 0.0)
    # with contact constraints: first without them (a feasible optimum of that problem is one of this one, and
    # an infeasible request is diagnosed by it), then with them, warm-started
    runs = [nlp.solve(w0, relaxed=nlp.has_contact)]
    plan = _assemble(plant, problem, limits, nlp, n_int, runs, backoffs, relaxed=nlp.has_contact)
    if not nlp.has_contact:
        return plan
    free = plan

    def contact_round(plan):
        return update_contact_backoffs(
            plan.report.peak_friction_coefficient_required, plan.report.least_normal_force_N,
            friction_coefficient=problem.friction_coefficient, min_normal_force_N=problem.min_normal_force_N,
            weight_N=nlp.weight_N, friction_backoff=backoffs[0], normal_backoff_N=backoffs[1])

    plan = _assemble(plant, problem, limits, nlp, n_int, runs, backoffs)
    if not (free.converged and plan.converged and contact_round(plan)[2]):
        runs.append(nlp.solve(runs[-1]["w"] if free.converged else w0))
        plan = _assemble(plant, problem, limits, nlp, n_int, runs, backoffs)
        if not plan.converged:
            return _contact_failure(problem, nlp, plan, free, runs[-1]["w"]) if free.converged else plan
    # the contact constraints between the collocation points
    best, rounds = None, 0
    while True:
        b_mu, b_n, keeps, changed = contact_round(plan)
        if keeps and (best is None or plan.report.objective < best.report.objective):
            best = plan
        if not changed or rounds >= rounds_max:
            break
        rounds += 1
        backoffs = (b_mu, b_n)
        runs.append(nlp.solve(runs[-1]["w"], backoffs))
        plan = _assemble(plant, problem, limits, nlp, n_int, runs, backoffs)
        if not plan.converged:
            break
    if best is not None:
        return replace(best, report=replace(best.report, iterations=sum(r["iterations"] for r in runs),
                                            stage_iterations=tuple(r["iterations"] for r in runs),
                                            solve_time_s=sum(r["wall"] for r in runs)))
    r = plan.report
    message = between_nodes_message(r.peak_friction_coefficient_required, r.least_normal_force_N,
                                    friction_coefficient=problem.friction_coefficient,
                                    min_normal_force_N=problem.min_normal_force_N, rounds=rounds)
    return replace(plan, report=replace(r, converged=False, message=message, binding_contact_constraints=()))


def _assemble(plant, problem, limits, nlp, n_int, runs, backoffs, *, relaxed: bool = False) -> PlateMotionPlan:
    """The plan of the last solve in ``runs`` (a list of :meth:`_PlateNLP.solve` results): report and legs.

    ``relaxed``: judged without the contact constraints (the first solve of a problem with them).
    """
    run = runs[-1]
    w, status, success = run["w"], run["status"], run["success"]
    viol, worst = nlp.violation(w, backoffs, relaxed=relaxed)
    n_its = sum(r["iterations"] for r in runs)
    converged = success and viol <= 1e-6
    # assemble the legs in physical time (shared ends once)
    size = nlp.trs[0].w.numel()
    Xs, Us, durations = [], [], []
    for i, tr in enumerate(nlp.trs):
        X, U, _ = tr.unpack(w[i * size:(i + 1) * size])
        durations.append(float(X[0, nlp.n_states]))
        Xs.append(X[:, :nlp.n_states] if i == 0 else X[1:, :nlp.n_states])
        Us.append(U if i == 0 else U[1:])
    durations = np.array(durations)
    starts = np.concatenate([[0.0], np.cumsum(durations)])
    tau = np.linspace(0.0, 1.0, n_int + 1)
    nodes = np.concatenate([starts[0] + durations[0] * tau] +
                           [starts[i] + durations[i] * tau[1:] for i in range(1, durations.size)])
    plan = PlateMotionPlan(plant=plant, problem=problem, limits=limits, nodes=nodes, t=collocation_times(nodes),
                           x=np.vstack(Xs), u=np.vstack(Us), leg_durations_s=durations, report=None,
                           contact_backoffs=tuple(float(b) for b in backoffs))
    mu, n_min = problem.friction_coefficient, problem.min_normal_force_N
    binding = binding_contact_constraints(
        *contact_summary(*plan.contact_forces()), friction_coefficient=None if mu is None else (1.0 - backoffs[0]) * mu,
        min_normal_force_N=None if n_min is None else n_min + backoffs[1], weight_N=nlp.weight_N)
    # the plan's numbers: 20 samples per interval on its polynomials (the collocation points among them)
    peak, least = contact_summary(*plan.contact_forces(dense_times(nodes)))
    if converged:
        message = f"converged ({status}) in {n_its} iterations, max constraint violation {viol:.2e}"
        if nlp.has_contact and not relaxed:
            message += "; " + contact_summary_text(peak, least, binding)
    else:
        message = (f"infeasible or not converged: IPOPT status {status}; most violated constraint: {worst} "
                   f"(violation {viol:.3g}). Lengthen duration_s, loosen the limits (or limit_margin), or move "
                   f"the waypoints.")
    report = SolverReport(converged=bool(converged), status=status, message=message, iterations=n_its,
                          stage_iterations=tuple(r["iterations"] for r in runs),
                          solve_time_s=sum(r["wall"] for r in runs), build_time_s=nlp.build_time_s,
                          objective=run["objective"], max_constraint_violation=viol, dual_infeasibility=run["inf_du"],
                          quaternion_norm_error=0.0, n_variables=nlp.n_variables, n_constraints=nlp.n_constraints,
                          peak_friction_coefficient_required=peak, least_normal_force_N=least,
                          binding_contact_constraints=binding if converged else ())
    return replace(plan, report=report)


def _contact_failure(problem, nlp, plan, free, w) -> PlateMotionPlan:
    """The message of a plan that failed with contact constraints while the same problem without them solved."""
    why = contact_failure_message(friction_coefficient=problem.friction_coefficient,
                                  min_normal_force_N=problem.min_normal_force_N, relaxed_converged=True,
                                  relaxed_peak_friction=free.report.peak_friction_coefficient_required,
                                  relaxed_least_normal_N=free.report.least_normal_force_N)
    viol, worst = nlp.violation(w, plan.contact_backoffs)
    message = (f"infeasible: {why} (IPOPT status {plan.report.status}; most violated constraint at the returned "
               f"point: {worst}, violation {viol:.3g})")
    return replace(plan, report=replace(plan.report, message=message))
