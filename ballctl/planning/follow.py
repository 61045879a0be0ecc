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

References
----------
V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), eqs. (5.11), (7.1)-(7.4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError
from ..simulation.closed_loop import ClosedLoopOptions, ClosedLoopResult, simulate_closed_loop
from ..linear.partition import Partition
from ..plants.rolling_ball import RollingBall
from ..references.rolling import IntegratedReference
from ..design.tracking import TrackingOptions, LQRWeights, TrackingController, design_tracking_lqr
from .maneuver import ManeuverPlan

__all__ = ["PlanTracking", "plan_chart_rotation", "plan_reference", "track_plan"]


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
class PlanTracking:
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
    """

    reference: object
    controller: TrackingController
    closed_loop: ClosedLoopResult
    open_loop: ClosedLoopResult | None = None
    truth: str = "design plant"
    inversion_residuals: dict | None = None

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


def track_plan(plan: ManeuverPlan, *, dt: float = 0.1, contact_offset_m: Sequence[float] = (0.05, -0.05),
               angle_offset_rad: float = 0.1, max_state_errors: Mapping[str, float] | None = None,
               max_input_errors: Mapping[str, float] | None = None, terminal_factor: float = 100.0,
               chart_rotation="auto") -> PlanTracking:
    """Track a ball plan with the finite-horizon LQR on the rail inputs from a perturbed start.

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
        defaults: 10 cm on the contact point, 1 rad on angles, 2 rad/s on rates, 1 (input units)
        on the rail inputs.
    terminal_factor : float
        ``Q_N = terminal_factor * Q`` (eq. 24): the end of the maneuver is its
        purpose, so the default weighs it 100 times the running cost
        (the paper's 3-mass maneuver from 7.1 cm off: 1.7 mm at the end with
        100, 20 mm with 1; the transient peak is the same, 9.7 cm).
    chart_rotation : array_like, shape (3, 3), "auto" or None
        See :func:`plan_reference`.

    Returns
    -------
    PlanTracking
    """
    ref = plan_reference(plan, chart_rotation=chart_rotation)
    system = ref.system
    n = plan.plant.n_masses
    rails = [f"theta_{i}" for i in range(1, n + 1)]
    part = Partition.from_coordinates(system, ["yaw", "pitch", "roll", *rails], ["contact_x", "contact_y"])
    if max_state_errors is None:
        max_state_errors = {"contact_x": 0.1, "contact_y": 0.1, **{a: 1.0 for a in ("yaw", "pitch", "roll")},
                            **{f"{a}_rate": 2.0 for a in ("yaw", "pitch", "roll")},
                            **{r: 1.0 for r in rails}, **{f"{r}_rate": 2.0 for r in rails}}
    if max_input_errors is None:
        max_input_errors = {name: 1.0 for name in system.input_names}
    horizon = float(plan.nodes[-1] - plan.nodes[0])
    ctrl = design_tracking_lqr(system, ref, part, dt=dt, horizon=horizon,
                               weights=LQRWeights(max_state_errors=max_state_errors, max_input_errors=max_input_errors,
                                                  terminal_factor=terminal_factor),
                               options=TrackingOptions(t0=float(plan.nodes[0])))
    s0 = ref(float(plan.nodes[0]))
    x0, xd0 = s0.x.copy(), s0.xd.copy()
    off = np.asarray(contact_offset_m, dtype=float)
    if off.shape != (2,) or not np.all(np.isfinite(off)):
        raise ParameterError(f"contact_offset_m must be two finite offsets in m, got {contact_offset_m!r}")
    x0[:2] += off
    x0[2] += angle_offset_rad
    x0[5:] += angle_offset_rad
    closed = simulate_closed_loop(ctrl, x0, xd0)
    opened = simulate_closed_loop(ctrl, x0, xd0, options=ClosedLoopOptions(feedback="open"))
    return PlanTracking(reference=ref, controller=ctrl, closed_loop=closed, open_loop=opened)
