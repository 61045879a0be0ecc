"""Limit-aware ball-plate references (issue 13, section 3): symbolic equations, optimality, limits, tracking.

Oracles: the compiled kernels of the plant (the CasADi form must equal them to 1e-12); the analytic
minimum time of a straight rest-to-rest move with a tilt limit and a slew limit (the symmetric
trapezoid of the plate angle, integrated by quadrature and solved by root finding, no NLP); the full
nonlinear plant integrated under the planned plate angles (the plan must reproduce it to the
transcription's accuracy, shrinking at order 4); dense sampling of the plan's plate angles and rates
between the collocation points (the limits must hold there, not only at the points).
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

pytest.importorskip("casadi")

from ballctl import BallPlate
from ballctl._errors import InfeasiblePlanError, ParameterError
from ballctl.planning import PlateMotionProblem, plan_plate_motion, track_plate_plan
from ballctl.planning.symbolic import ball_plate_equations
from ballctl.ball_plate.rig import Imperfections, RigLimits, rig_preset

DEG = np.pi / 180.0
WAYPOINTS = [[0.0, 0.0], [0.15, 0.05], [0.2, 0.2], [0.0, 0.25]]


def line_limits(tilt_deg):
    return RigLimits(max_angle=tilt_deg * DEG, max_rate=200 * DEG)


def analytic_min_time(D, c, B, r):
    """Minimum time of a rest-to-rest move of length D along x: a = c sin(beta), |beta| <= B, |beta'| <= r.

    The plate angle is the antisymmetric trapezoid 0 -> b_p (slope r), hold, -> -b_p, hold, -> 0; the
    distance is 2 int_0^H (H - s) c sin(beta(s)) ds over the half time H (integration by parts twice).
    """
    def dist(bp, hold):
        t1 = bp / r
        H = 2 * t1 + hold

        def beta(s):
            return r * s if s < t1 else (bp if s < t1 + hold else bp - r * (s - t1 - hold))
        val = sum(quad(lambda s: (H - s) * c * np.sin(beta(s)), a, b, epsabs=1e-14, epsrel=1e-13)[0]
                  for a, b in ((0, t1), (t1, t1 + hold), (t1 + hold, H)) if b > a)
        return 2 * val, 2 * H

    if dist(B, 0.0)[0] >= D:           # the tilt limit is not reached
        bp = brentq(lambda b: dist(b, 0.0)[0] - D, 1e-9, B, xtol=1e-15)
        return dist(bp, 0.0)[1]
    hold = brentq(lambda h: dist(B, h)[0] - D, 0.0, 100.0, xtol=1e-15)
    return dist(B, hold)[1]


def test_casadi_ball_plate_equations_equal_the_compiled_kernels():
    """Every function of ball_plate_equations equals the plant's kernels at random states to 1e-12."""
    rng = np.random.default_rng(3)
    plant = BallPlate(mass=0.13, radius=0.025, inertia=3.1e-5, gravity=9.79)
    eq = ball_plate_equations(plant)
    for _ in range(40):
        x = rng.normal(size=5) * [0.3, 0.3, 2.0, 0.8, 2.0]
        xd = rng.normal(size=5) * [0.5, 0.5, 5.0, 5.0, 20.0]
        u = rng.uniform(-0.6, 0.6, size=2)
        pairs = [(eq.mass_matrix(x), plant.mass_matrix(x)), (eq.forces(x, xd, u), plant.forces(x, xd, u)),
                 (eq.constraint_jacobian(x), plant.constraint_jacobian(x)),
                 (eq.constraint_bias(x, xd), plant.constraint_bias(x, xd))]
        xdd, lam = plant.accelerations(x, xd, u)
        sym_xdd, sym_lam = eq.accelerations(x, xd, u)
        pairs += [(sym_xdd, xdd), (sym_lam, lam)]
        for sym, ref in pairs:
            ref = np.asarray(ref)
            assert np.abs(np.asarray(sym).reshape(ref.shape) - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
        # the planner's contact subsystem: the first two rows of the solve, for every orientation
        assert np.abs(np.asarray(eq.contact_acceleration(u)).ravel() - xdd[:2]).max() <= 1e-12


def test_minimum_time_of_a_straight_move_matches_the_analytic_bang_bang_optimum():
    """D = 0.2 m, 10 deg, 200 deg/s: the plan approaches the analytic optimum from above as the mesh refines.

    The plan can only be longer (its limits hold on the Bernstein hull, stricter than pointwise); the
    excess is the mesh's resolution of the switching corners: 0.66 % at 20 intervals, 0.075 % at 40.
    """
    plant = BallPlate()
    c = plant.params.rolling_gain * plant.params.gravity
    exact = analytic_min_time(0.2, c, 10 * DEG, 200 * DEG)
    times = []
    for n in (20, 40):
        plan = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0]], limit_margin=0.0),
                                 limits=line_limits(10), intervals=n)
        assert plan.converged, plan.report.message
        times.append(plan.duration_s)
    assert times[0] >= exact * (1 - 1e-9) and times[1] >= exact * (1 - 1e-9)
    assert times[1] < times[0]
    assert times[1] / exact - 1 < 2e-3


def test_minimum_time_is_monotone_in_the_tilt_limit():
    """Relaxing the tilt limit shortens the minimum time, tightening it lengthens it (same mesh)."""
    plant = BallPlate()
    problem = PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.0)
    durations = []
    for tilt in (6, 10, 15, 20):
        plan = plan_plate_motion(plant, problem, limits=line_limits(tilt), intervals=12)
        assert plan.converged, plan.report.message
        durations.append(plan.duration_s)
    assert np.all(np.diff(durations) < -1e-3), durations


@pytest.fixture(scope="module")
def rig_plan():
    rig = rig_preset("tabletop")
    plant = rig.design_plant().quasi_static()
    problem = PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.2)
    return rig, plan_plate_motion(plant, problem, rig=rig, intervals=16)


def test_limits_hold_between_the_nodes_and_waypoints_are_passed(rig_plan):
    rig, plan = rig_plan
    assert plan.converged, plan.report.message
    peaks = plan.peak_limits(samples_per_interval=200)
    # the plan uses (1 - limit_margin) = 80 % of each limit, held on the dense interpolant (IPOPT tol 1e-9)
    assert peaks["max_angle_rad"] <= 0.8 * rig.limits.max_angle + 1e-8
    assert peaks["max_rate_rad_s"] <= 0.8 * rig.limits.max_rate + 1e-8
    # minimum time is limit-bound: the plate reaches its usable tilt
    assert peaks["max_angle_rad"] >= 0.8 * rig.limits.max_angle - 1e-6
    at = plan.state(plan.waypoint_times_s)
    assert np.abs(at[:, :2] - np.asarray(WAYPOINTS)).max() <= 1e-8
    assert np.abs(at[-1, 2:]).max() <= 1e-8            # at rest, plate level at the goal
    assert np.all(np.diff(plan.waypoint_times_s) > 0)


def test_plan_resimulated_on_the_nonlinear_plant_converges_at_order_four():
    """The full BallPlate DAE under the planned plate angles reproduces the planned contact path.

    Minimum effort in 2.5 s through the waypoints; the largest contact-point difference (801 samples)
    falls ~15x per halving of the mesh (order 4: 16x).
    """
    rig = rig_preset("tabletop")
    plant = rig.design_plant().quasi_static()
    problem = PlateMotionProblem(waypoints_m=WAYPOINTS, objective="effort", duration_s=2.5, limit_margin=0.2)
    errors = []
    for n in (8, 16):
        plan = plan_plate_motion(plant, problem, rig=rig, intervals=n)
        assert plan.converged, plan.report.message
        ref = plan.reference(rtol=1e-12, atol=1e-13)
        t = np.linspace(0.0, plan.duration_s, 801)
        errors.append(np.abs(ref(t).x[:, :2] - plan.state(t)[:, :2]).max())
    assert errors[1] < 2e-5
    assert errors[0] / errors[1] > 10.0, errors


def test_too_short_duration_is_infeasible_and_names_the_constraint():
    plant = BallPlate()
    fast = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0]], limit_margin=0.0),
                             limits=line_limits(10), intervals=10)
    problem = PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0]], objective="effort",
                                 duration_s=0.8 * fast.duration_s, limit_margin=0.0)
    plan = plan_plate_motion(plant, problem, limits=line_limits(10), intervals=10)
    assert not plan.converged
    assert "most violated constraint" in plan.report.message
    with pytest.raises(InfeasiblePlanError, match="Lengthen duration_s"):
        plan.raise_if_failed()
    # with enough time the same request is feasible and slower than the minimum
    ok = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0]], objective="effort",
                                                     duration_s=1.5 * fast.duration_s, limit_margin=0.0),
                           limits=line_limits(10), intervals=10)
    assert ok.converged and abs(ok.duration_s - 1.5 * fast.duration_s) < 1e-9


def test_bad_requests_raise_clear_errors():
    plant = BallPlate()
    with pytest.raises(ParameterError, match="at least 2 points"):
        PlateMotionProblem(waypoints_m=[[0, 0]])
    with pytest.raises(ParameterError, match="coincide"):
        PlateMotionProblem(waypoints_m=[[0, 0], [0, 0]])
    with pytest.raises(ParameterError, match="needs duration_s"):
        PlateMotionProblem(waypoints_m=[[0, 0], [1, 0]], objective="effort")
    with pytest.raises(ParameterError, match="leave duration_s None"):
        PlateMotionProblem(waypoints_m=[[0, 0], [1, 0]], duration_s=2.0)
    with pytest.raises(ParameterError, match="limit_margin"):
        PlateMotionProblem(waypoints_m=[[0, 0], [1, 0]], limit_margin=1.0)
    problem = PlateMotionProblem(waypoints_m=[[0, 0], [0.1, 0]])
    with pytest.raises(ParameterError, match="exactly one"):
        plan_plate_motion(plant, problem)
    with pytest.raises(ParameterError, match="max_angle"):
        plan_plate_motion(plant, problem, limits=RigLimits(max_rate=1.0))
    with pytest.raises(ParameterError, match="slew limit"):
        plan_plate_motion(plant, problem, limits=RigLimits(max_angle=0.2))
    with pytest.raises(ParameterError, match="quasi_static"):
        plan_plate_motion(BallPlate(mass=0.3), problem, rig=rig_preset("tabletop"))
    with pytest.raises(InfeasiblePlanError, match="initial_plate_angles_rad"):
        plan_plate_motion(plant, PlateMotionProblem(waypoints_m=[[0, 0], [0.1, 0]], initial_plate_angles_rad=[0.3, 0]),
                          limits=RigLimits(max_angle=0.2, max_rate=3.0))


def test_corridor_keeps_the_contact_point_near_the_polyline():
    plant = BallPlate()
    limits = line_limits(15)
    free = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.0), limits=limits,
                             intervals=12)
    tight = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.0, corridor_m=0.005),
                              limits=limits, intervals=12)
    assert free.converged and tight.converged

    def worst_offset(plan):
        worst = 0.0
        wp = np.asarray(WAYPOINTS)
        for i, (a, b) in enumerate(zip(plan.waypoint_times_s[:-1], plan.waypoint_times_s[1:])):
            p = plan.state(np.linspace(a, b, 41))[:, :2]
            d = wp[i + 1] - wp[i]
            nrm = np.array([-d[1], d[0]]) / np.linalg.norm(d)
            worst = max(worst, np.abs((p - wp[i]) @ nrm).max())
        return worst

    assert worst_offset(free) > 0.01
    assert worst_offset(tight) <= 0.005 + 1e-3          # held at the points; the cubic between them within 1 mm
    assert tight.duration_s > free.duration_s


def test_plan_tracked_by_the_lqr_on_the_nonlinear_plant_within_the_rig_limits(rig_plan):
    """The plan is a reference like any other: design_for_rig + simulate_closed_loop with the rig's limits.

    From a 1 cm offset the quasi-static design (contact states) brings the ball onto the plan: error at the
    end below 1 mm; the applied commands stay within the rig's tilt and slew limits (the limit shaping
    is applied, and the 20 % margin leaves room for the corrections).
    """
    rig, plan = rig_plan
    tracked = track_plate_plan(plan, rig, contact_offset_m=(0.01, -0.01), hold_s=1.0)
    assert tracked.final_error_m < 1e-3
    assert tracked.rms_error_m < 6e-3
    assert tracked.peak_angle_rad <= rig.limits.max_angle * (1 + 1e-9)
    assert tracked.peak_rate_rad_s <= rig.limits.max_rate * (1 + 1e-6)
    assert tracked.limit_steps.get("max_angle", 0) == 0


def test_plate_acceleration_limit_holds_between_nodes_and_angles_integrate_the_rates():
    """With the plate accelerations as inputs all three limits hold on the dense polynomials.

    The plate angle is the exact integral (a quartic) of the rate's cubic: its central difference equals
    the rate to the difference's truncation error; the bound costs time (monotone in the limit).
    """
    rig = rig_preset("tabletop")
    plant = rig.design_plant().quasi_static()
    durations = []
    for acc in (30.0, 10.0):
        plan = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.2,
                                                           max_plate_acceleration_rad_s2=acc), rig=rig, intervals=12)
        assert plan.converged, plan.report.message
        peaks = plan.peak_limits(samples_per_interval=200)
        assert peaks["max_angle_rad"] <= 0.8 * rig.limits.max_angle + 1e-8
        assert peaks["max_rate_rad_s"] <= 0.8 * rig.limits.max_rate + 1e-8
        assert peaks["max_acceleration_rad_s2"] <= acc + 1e-7
        t = np.linspace(0.01, plan.duration_s - 0.01, 301)
        e = 1e-6
        slope = (plan.plate_angles(t + e) - plan.plate_angles(t - e)) / (2 * e)
        assert np.abs(slope - plan.plate_rates(t)).max() < 1e-6
        assert np.abs(plan.state(plan.nodes)[:, 4:8] - plan.x[0::2, 4:8]).max() < 1e-12
        durations.append(plan.duration_s)
    assert durations[1] > durations[0]


def test_truth_tracking_needs_a_bounded_plate_acceleration(rig_plan):
    rig, plan = rig_plan
    with pytest.raises(ParameterError, match="max_plate_acceleration_rad_s2"):
        track_plate_plan(plan, rig, truth=True)


@pytest.mark.slow
def test_plan_tracked_on_the_rigs_servo_plate_truth():
    """The plan's contact motion inverted on the exact servo plate, tracked by the rig's exact design.

    The servo's torque limit (1 N m on 0.06 kg m^2) bounds the plate acceleration; planned at 10 rad/s^2
    the exact inversion is feasible; from a 1 cm offset the loop on the truth plant ends within 1 mm
    and the commands stay within the rig's tilt limit. (The exact servo plate itself: with the preset's
    level error this state-feedback loop keeps a steady offset of a few millimetres, which only an
    offset-free output-feedback design removes, and the 3.5 s plan is too short for its estimates.)
    """
    rig = replace(rig_preset("tabletop"), imperfections=Imperfections())
    plant = rig.design_plant().quasi_static()
    plan = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.2,
                                                       max_plate_acceleration_rad_s2=10.0), rig=rig, intervals=12)
    tracked = track_plate_plan(plan, rig, truth=True, hold_s=1.0, n_collocation=64)
    assert tracked.truth == "servo plate"
    assert tracked.inversion_residuals["contact_acceleration"] < 0.1        # m/s^2, algebraic convergence
    assert tracked.final_error_m < 1e-3 and tracked.rms_error_m < 1e-2
    assert tracked.peak_angle_rad <= rig.limits.max_angle * (1 + 1e-9)


def test_given_end_velocities_and_least_effort_falls_with_more_time():
    """Start and goal velocities are met by the plan and by the full plant under it; the least slew
    ``int |u_dot|^2 dt`` for a rest-to-rest move falls as the time allowed grows (measured 0.097,
    0.023, 0.0030 rad^2/s for 1.5, 2 and 3 s)."""
    rig = rig_preset("tabletop")
    plant = rig.design_plant().quasi_static()
    problem = PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0.1]], objective="effort", duration_s=2.0,
                                 limit_margin=0.2, initial_velocity_mps=[0.1, 0.0], final_velocity_mps=[0.0, 0.1],
                                 level_at_end=False)
    plan = plan_plate_motion(plant, problem, rig=rig, intervals=16)
    assert plan.converged, plan.report.message
    ends = plan.state([0.0, plan.duration_s])
    assert np.abs(ends[:, 2:4] - [[0.1, 0.0], [0.0, 0.1]]).max() < 1e-9
    sample = plan.reference()(np.array([0.0, plan.duration_s]))
    assert np.abs(sample.xd[:, :2] - [[0.1, 0.0], [0.0, 0.1]]).max() < 1e-5     # transcription accuracy
    efforts = [plan_plate_motion(plant, PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0.1]], objective="effort",
                                                           duration_s=T), rig=rig, intervals=16).report.objective
               for T in (1.5, 2.0, 3.0)]
    assert efforts[0] > efforts[1] > efforts[2] > 0


def test_exact_moving_plate_contact_function_equals_the_kernels():
    """The exact plate's contact subsystem (CasADi) = the MovingPlateBallPlate kernels' contact rows, and its
    spin rate = d/dt (yaw' + roll' sin(lean) + alpha' sin(beta)) from the kernels' accelerations."""
    from ballctl.plants.ball_plate import BallPlateParameters
    from ballctl.plants.ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters
    from ballctl.planning.symbolic import moving_plate_contact_function

    params = MovingPlateParameters(ball=BallPlateParameters(mass=0.13, radius=0.025, inertia=3e-5), pivot_depth=0.03)
    plant = MovingPlateBallPlate(params)
    f = moving_plate_contact_function(params)
    rng = np.random.default_rng(5)
    for _ in range(30):
        x = rng.normal(size=7) * [0.2, 0.2, 2.0, 0.7, 2.0, 0.3, 0.3]
        v, spin = rng.normal(size=2) * 0.5, rng.normal() * 3.0
        xd = np.zeros(7)
        xd[5:] = rng.normal(size=2) * 2.0
        xd[:5] = BallPlate(params.ball).rolling_velocities(x[:5], v, spin - xd[5] * np.sin(x[6]))
        u = rng.normal(size=2) * 5.0
        xdd, _ = plant.accelerations(x, xd, u)
        a, sigma_dot = f(x[:2], xd[:2], spin, x[5:7], xd[5:7], u)
        ref_sigma_dot = (xdd[2] + xdd[4] * np.sin(x[3]) + xd[4] * xd[3] * np.cos(x[3])
                         + u[0] * np.sin(x[6]) + xd[5] * xd[6] * np.cos(x[6]))
        assert np.abs(np.asarray(a).ravel() - xdd[:2]).max() <= 1e-12 * max(1.0, np.abs(xdd[:2]).max())
        assert abs(float(sigma_dot) - ref_sigma_dot) <= 1e-12 * max(1.0, abs(ref_sigma_dot))


def test_plan_on_the_exact_moving_plate_holds_the_limits_and_resimulates():
    """Planned on the exact (prescribed) moving plate: limits hold on the dense plate motion, and the full
    7-coordinate DAE under the planned plate accelerations reproduces the plan (plate angles to rounding,
    contact point to the transcription's accuracy)."""
    from ballctl.plants.ball_plate_moving import MovingPlateBallPlate

    rig = rig_preset("tabletop")
    plant = MovingPlateBallPlate(rig.design_plant().params)
    problem = PlateMotionProblem(waypoints_m=WAYPOINTS[:3], limit_margin=0.2, max_plate_acceleration_rad_s2=10.0)
    with pytest.raises(ParameterError, match="max_plate_acceleration_rad_s2"):
        plan_plate_motion(plant, PlateMotionProblem(waypoints_m=WAYPOINTS[:3]), limits=rig.limits)
    plan = plan_plate_motion(plant, problem, limits=rig.limits, intervals=10)
    assert plan.converged and plan.exact, plan.report.message
    peaks = plan.peak_limits(samples_per_interval=100)
    assert peaks["max_angle_rad"] <= 0.8 * rig.limits.max_angle + 1e-8
    assert peaks["max_rate_rad_s"] <= 0.8 * rig.limits.max_rate + 1e-8
    assert peaks["max_acceleration_rad_s2"] <= 10.0 + 1e-7
    ref = plan.reference()
    t = np.linspace(0.0, plan.duration_s, 401)
    s, planned = ref(t), plan.state(t)
    assert np.abs(s.x[:, 5:7] - planned[:, 4:6]).max() < 1e-8
    assert np.abs(s.x[:, :2] - planned[:, :2]).max() < 1e-3
    with pytest.raises(ParameterError, match="servo plate"):
        track_plate_plan(plan, rig)


@pytest.mark.slow
def test_plan_on_the_servo_plate_tracked_by_the_exact_design():
    """Planned on the rig's servo plate with headroom (half of each limit, 5 rad/s^2), its servo-plate reference
    is tracked by the rig's exact design from a 1 cm offset to within 1 mm, commands within the tilt limit."""
    rig = rig_preset("tabletop")
    plan = plan_plate_motion(rig.design_plant(), PlateMotionProblem(waypoints_m=WAYPOINTS, limit_margin=0.5,
                                                                   max_plate_acceleration_rad_s2=5.0),
                             rig=rig, intervals=8)
    assert plan.converged, plan.report.message
    tracked = track_plate_plan(plan, rig, hold_s=0.5)
    assert tracked.truth == "servo plate"
    assert tracked.final_error_m < 1e-3 and tracked.rms_error_m < 1e-2
    assert tracked.peak_angle_rad <= rig.limits.max_angle * (1 + 1e-9)
    assert tracked.limit_steps.get("max_angle", 0) == 0
