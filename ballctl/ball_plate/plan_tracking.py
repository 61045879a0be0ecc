"""Tracking a ball-plate plan in closed loop: the plan's reference, a rig's design, the rig's limits.

:func:`track_plate_plan` turns a :class:`~ballctl.planning.ball_plate.PlateMotionPlan`
into a reference on the full plant (:meth:`~ballctl.planning.ball_plate.PlateMotionPlan.reference`,
or its exact inversion on the rig's servo plate through :func:`plan_contact_path`),
designs the rig's LQR for it (:func:`ballctl.design_for_rig`) and closes the loop
on the nonlinear plant with the rig's limits (:func:`ballctl.simulate_closed_loop`).
The result is the one plan-tracking type :class:`~ballctl.planning.follow.PlanTracking`,
as for a rolling-ball maneuver (:func:`~ballctl.planning.follow.track_plan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dataclasses import replace

import numpy as np

from .._errors import ParameterError
from .._validation import as_vector, check_bool, check_choice, check_instance, check_integer
from ..plants.ball_plate_moving import ServoPlateBallPlate
from ..references.rolling import IntegratedReference
from .rig import RigProfile

if TYPE_CHECKING:   # imported where used: ballctl.planning re-exports track_plate_plan
    from ..planning.ball_plate import PlateMotionPlan
    from ..planning.follow import PlanTracking

__all__ = ["plan_contact_path", "track_plate_plan"]


def plan_contact_path(plan: PlateMotionPlan, reference: IntegratedReference):
    """The planned contact motion as a path callable ``path(t) -> (p, v, a, jerk)`` (for exact inversion).

    Position, velocity and acceleration come from the plan's reference on the
    full plant (DAE-consistent); the jerk is ``k_b g`` times the derivative of
    ``(cos(alpha) sin(beta), -sin(alpha))`` along the planned plate angles and rates.

    Parameters
    ----------
    plan : PlateMotionPlan
    reference : IntegratedReference
        From :meth:`PlateMotionPlan.reference`.

    Returns
    -------
    callable
        ``path(t (K,)) -> (p, v, a, jerk)``, each of shape (K, 2) in m, m/s, m/s^2, m/s^3.
    """
    kg = plan.plant.params.rolling_gain * plan.plant.params.gravity
    lo, hi = reference.t_range

    def path(t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        s = reference(np.clip(t, lo, hi))
        u, ud = plan.plate_angles(t), plan.plate_rates(t)
        ca, sa, cb, sb = np.cos(u[:, 0]), np.sin(u[:, 0]), np.cos(u[:, 1]), np.sin(u[:, 1])
        jerk = kg * np.column_stack([-sa * sb * ud[:, 0] + ca * cb * ud[:, 1], -ca * ud[:, 0]])
        return s.x[:, :2], s.xd[:, :2], s.xdd[:, :2], jerk

    return path


def track_plate_plan(plan: PlateMotionPlan, rig: RigProfile, *, design: str = "qs-contact",
                     contact_offset_m: Sequence[float] = (0.01, -0.01), hold_s: float = 1.0,
                     truth: bool = False, output_feedback: bool = False,
                     n_collocation: int = 64) -> PlanTracking:
    """Track a plate plan with :func:`ballctl.design_for_rig` and :func:`ballctl.simulate_closed_loop`.

    Parameters
    ----------
    plan : PlateMotionPlan
        A converged plan on the rig's quasi-static plant, or on its servo plate
        (``rig.design_plant()``): then its reference (:meth:`PlateMotionPlan.reference`)
        is tracked by the rig's ``"exact"`` design on the servo plate; leave
        headroom (``limit_margin`` about 0.5): the servo commands lead the plate.
    rig : RigProfile
        Control period, limits (applied to every command), sensors and truth plant.
    design : {"qs-paper", "qs-contact"}
        The quasi-static design of :data:`ballctl.ball_plate.design.RIG_DESIGNS` (without ``truth``).
    contact_offset_m : (float, float)
        Initial contact-point offset from the plan in m.
    hold_s : float
        Time in s after the plan, plate held (the reference at rest at the goal).
    truth : bool
        Run on the rig's exact servo plate with its imperfections (``rig.truth_plant()``,
        ``rig.imperfections``) instead of the
        quasi-static plant. The planned contact motion is then inverted on the
        servo plate (:class:`~ballctl.references.moving_plate.MovingPlateMotion`,
        Chebyshev collocation) and tracked by the rig's ``"exact"`` design; the
        plan needs ``max_plate_acceleration_rad_s2`` (the servo's torque limit
        cannot follow plate rates that jump).
    output_feedback : bool
        Use the rig's sensors and the Kalman filter (else state feedback).
    n_collocation : int
        Chebyshev collocation points of the exact inversion (``truth`` only).

    Returns
    -------
    PlanTracking
        The run, its contact-point errors (``rms_error_m``, ``final_error_m``),
        the applied peaks (``peak_angle_rad``, ``peak_rate_rad_s``), the steps at
        which the rig's limits acted (``limit_steps``), ``truth`` and, on the
        servo plate, the exact inversion's residuals.
    """
    from ..simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
    from ..ball_plate.design import design_for_rig
    from ..planning.follow import PlanTracking

    check_instance(rig, "rig", RigProfile)
    check_choice(design, "design", ("qs-paper", "qs-contact"))
    truth = check_bool(truth, "truth")
    off = as_vector(contact_offset_m, "contact_offset_m", 2, unit="m")
    if plan.exact and not isinstance(plan.plant, ServoPlateBallPlate):
        raise ParameterError("track_plate_plan needs a plan on the quasi-static BallPlate or on the servo plate "
                             f"(rig.design_plant()), got one on {type(plan.plant).__name__}")
    if truth and not plan.rates_are_states:
        servo = rig.servo
        hint = "" if servo.max_torque is None else (
            f" (this rig: max_torque / plate inertia = {servo.max_torque / max(servo.plate_inertia[:2]):.3g} rad/s^2)")
        raise ParameterError("truth=True needs a plan with max_plate_acceleration_rad_s2 (rad/s^2): the servo's "
                             f"torque limit cannot follow plate rates that jump{hint}")
    ref = plan.reference(hold_s=hold_s)
    dt = rig.dt
    steps = int(np.floor((ref.t_range[1] - 1e-9) / dt))
    if steps < 2:
        raise ParameterError(f"the plan ({ref.t_range[1]:.4g} s with hold_s) is shorter than two control periods "
                             f"dt = {dt} s")
    sim = ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=max(2, int(np.ceil(dt / 0.01 - 1e-9))))
    on_truth = replace(sim, imperfections=rig.imperfections.loop)
    residuals = None
    if plan.exact:      # the servo-plate reference of the plan, the rig's exact design, on the servo plate
        ctrl = design_for_rig(rig, ref, "exact", horizon=steps * dt, output_feedback=output_feedback)
        s0 = ref(0.0)
        x0, xd0 = s0.x.copy(), s0.xd.copy()
        x0[:2] += off
        if truth:
            run = simulate_closed_loop(ctrl, rig.truth_initial_state(x0), xd0, truth=rig.truth_plant(),
                                       options=on_truth)
        else:
            run = simulate_closed_loop(ctrl, x0, xd0, options=sim)
    elif truth:
        from ..references.moving_plate import CollocationOptions, MovingPlateMotion

        plant = rig.design_plant()
        x_start, _ = plan.initial_coordinates()
        ref = MovingPlateMotion(plant, plan_contact_path(plan, ref), spin=plan.problem.spin_rad_s,
                                duration=ref.t_range[1], initial_orientation=x_start[2:5],
                                collocation=CollocationOptions(
                                    n_collocation=check_integer(n_collocation, "n_collocation", minimum=8)))
        residuals = dict(ref.residuals)
        ctrl = design_for_rig(rig, ref, "exact", horizon=steps * dt, output_feedback=output_feedback)
        s0 = ref(0.0)
        x0, xd0 = s0.x.copy(), s0.xd.copy()
        x0[:2] += off
        run = simulate_closed_loop(ctrl, rig.truth_initial_state(x0), xd0, truth=rig.truth_plant(),
                                   options=on_truth)
    else:
        ctrl = design_for_rig(rig, ref, design, horizon=steps * dt, output_feedback=output_feedback)
        s0 = ref(0.0)
        x0, xd0 = s0.x.copy(), s0.xd.copy()
        x0[:2] += off
        run = simulate_closed_loop(ctrl, x0, xd0, options=sim)
    return PlanTracking(reference=ref, controller=ctrl, closed_loop=run,
                        truth="servo plate" if (truth or plan.exact) else "quasi-static", inversion_residuals=residuals)
