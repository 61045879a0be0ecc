"""Contact constraints of the planners (friction cone, least normal force): CasADi = kernels, plans keep them.

Oracles: the plants' compiled ``contact_forces`` (Newton's equation with the plants' own accelerations), which
the planners' CasADi copies must equal to 1e-10 (relative to the force's size) at random states and inputs;
the plants re-simulated under the planned inputs, on which the numeric ``contact_forces`` must keep the
constraints between the collocation points too (within the stated tolerance); and momentum bounds that prove a
friction coefficient too small for a task (no NLP involved).
"""

import numpy as np
import pytest

pytest.importorskip("casadi")

from ballctl import BallPlate
from ballctl._errors import InfeasiblePlanError, ParameterError
from ballctl.planning import ManeuverProblem, PlateMotionProblem, plan_maneuver, plan_plate_motion, resimulate
from ballctl.planning.contact import BETWEEN_NODES_RTOL
from ballctl.planning.symbolic import (
    ball_contact_force_function,
    ball_plate_equations,
    disk_contact_force_function,
    moving_plate_contact_force_function,
)
from ballctl.plants import friction_coefficient_required
from ballctl.plants.ball_plate import BallPlateParameters
from ballctl.plants.ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rails import CircleRail, EllipseRail, FigureEightRail, SegmentRail
from ballctl.plants.rolling_ball import PointMass, RollingBall, RollingBallParameters
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters
from ballctl.ball_plate.rig import RigLimits, rig_preset

DEG = np.pi / 180.0
CASADI_RTOL = 1e-10          # CasADi contact force vs the compiled kernels, relative to max(1 N, |F|)

#: The transcription on the mesh asked for, from the straight seed: no branch search, no refinement.
FIXED_MESH = {"branch": None, "accuracy": None}


def _close(sym, ref_normal, ref_tangential) -> float:
    """Largest difference of a CasADi (normal, tangential) pair from the kernel's, relative to max(1, |F|)."""
    n, t = sym
    scale = max(1.0, abs(float(ref_normal)), float(np.abs(ref_tangential).max()))
    return max(abs(float(n) - float(ref_normal)),
               float(np.abs(np.asarray(t).ravel() - np.ravel(ref_tangential)).max())) / scale


# ------------------------------------------------------------------------------ CasADi = kernels
@pytest.mark.parametrize("inputs", ["acceleration", "force"])
def test_casadi_contact_force_of_the_ball_and_disk_equals_the_kernels(inputs):
    """F = sum_i m_i a_i + M g e3 in CasADi (next to the dynamics) = RollingBall/RollingDisk.contact_forces.

    Four rail kinds, a CM offset, both input modes, 20 random states each (quaternion normalized);
    measured <= 3e-15 relative.
    """
    rng = np.random.default_rng(11)
    rails = (CircleRail.from_spherical(0.6, 0.3, 0.4),
             EllipseRail(semi_axis_first_m=0.5, semi_axis_third_m=0.3, center_m=[0.1, 0.0, 0.1]),
             FigureEightRail(half_width_m=0.4, half_height_m=0.3,
                             rotation=CircleRail.from_spherical(1, 1, 0.2).rotation),
             SegmentRail(start_m=[-0.3, 0.2, 0.1], end_m=[0.4, -0.2, 0.0]))
    ball = RollingBall(RollingBallParameters(
        mass_kg=1.3, radius_m=1.1, principal_inertia_kgm2=[0.8, 1.0, 1.2], cm_offset_m=[0.02, -0.01, -0.05],
        gravity_mps2=9.81, point_masses=tuple(PointMass(mass_kg=0.3 + 0.2 * i, rail=r) for i, r in enumerate(rails))),
        inputs=inputs)
    disk = RollingDisk(RollingDiskParameters(
        mass_kg=1.3, radius_m=1.0, inertia_kgm2=0.7, cm_offset_m=[0.1, -0.2], gravity_mps2=9.81,
        point_masses=(PointMass(mass_kg=0.5, rail=CircleRail(radius_m=0.6)),
                      PointMass(mass_kg=0.8, rail=EllipseRail(semi_axis_first_m=0.5, semi_axis_third_m=0.3,
                                                              center_m=[0.1, 0.0, 0.2])))), inputs=inputs)
    f, g = ball_contact_force_function(ball), disk_contact_force_function(disk)
    worst = 0.0
    for _ in range(20):
        x = rng.normal(size=17)
        x[8:12] /= np.linalg.norm(x[8:12])
        u = rng.normal(size=4)
        worst = max(worst, _close(f(x, u), *ball.contact_forces(0.0, x, u)))
        xd, ud = rng.normal(size=6), rng.normal(size=2)
        worst = max(worst, _close(g(xd, ud), *disk.contact_forces(0.0, xd, ud)))
    assert worst <= CASADI_RTOL


def test_casadi_plate_contact_forces_equal_the_kernels():
    """F = m (a_G - g_plate) in CasADi = BallPlate / MovingPlateBallPlate / ServoPlateBallPlate.contact_forces.

    Quasi-static: the full (x, xd, u) function and the planner's function of the plate angles alone (40 random
    states: it does not depend on the ball's state). Exact plate: the contact subsystem (p, v, spin, plate
    angles, rates, accelerations) at 30 random states; the servo plate with its plate accelerations from the
    kernels' solve. Measured <= 2e-13 relative.
    """
    rng = np.random.default_rng(4)
    plant = BallPlate(mass=0.13, radius=0.025, inertia=3.1e-5, gravity=9.79)
    eq = ball_plate_equations(plant)
    worst = 0.0
    for _ in range(40):
        x = rng.normal(size=5) * [0.3, 0.3, 2.0, 0.8, 2.0]
        xd = rng.normal(size=5) * [0.5, 0.5, 5.0, 5.0, 20.0]
        u = rng.uniform(-0.6, 0.6, size=2)
        ref = plant.contact_forces(x, xd, u)
        worst = max(worst, _close(eq.contact_forces(x, xd, u), *ref), _close(eq.contact_forces_of_angles(u), *ref))
    params = MovingPlateParameters(ball=BallPlateParameters(mass=0.13, radius=0.025, inertia=3e-5), pivot_depth=0.03)
    moving = MovingPlateBallPlate(params)
    servo = rig_preset("tabletop").design_plant()
    f, f_servo = moving_plate_contact_force_function(params), moving_plate_contact_force_function(servo.params)
    for _ in range(30):
        x = rng.normal(size=7) * [0.2, 0.2, 2.0, 0.7, 2.0, 0.3, 0.3]
        v, spin = rng.normal(size=2) * 0.5, rng.normal() * 3.0
        xd = np.zeros(7)
        xd[5:] = rng.normal(size=2) * 2.0
        xd[:5] = BallPlate(params.ball).rolling_velocities(x[:5], v, spin - xd[5] * np.sin(x[6]))
        u = rng.normal(size=2) * 5.0
        worst = max(worst, _close(f(x[:2], xd[:2], spin, x[5:7], xd[5:7], u), *moving.contact_forces(x, xd, u)))
        xd[:5] = BallPlate(servo.params.ball).rolling_velocities(x[:5], v, spin - xd[5] * np.sin(x[6]))
        command = x[5:7] + rng.normal(size=2) * 0.05
        qdd = servo.accelerations(x, xd, command)[0][5:7]
        worst = max(worst, _close(f_servo(x[:2], xd[:2], spin, x[5:7], xd[5:7], qdd),
                                  *servo.contact_forces(x, xd, command)))
    assert worst <= CASADI_RTOL


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("value", [0.0, -0.3, float("nan"), float("inf"), True, "0.3"])
def test_friction_coefficient_is_validated(value):
    x0 = np.array([-np.pi / 2, 0.0, 0.0, 0.0])
    with pytest.raises(ParameterError, match=r"friction_coefficient must be a finite number > 0 \(the dimensionless"):
        ManeuverProblem(initial_state=x0, duration_s=1.0, target_contact_m=[1.0], friction_coefficient=value)
    with pytest.raises(ParameterError, match="friction_coefficient"):
        PlateMotionProblem(waypoints_m=[[0, 0], [0.1, 0]], friction_coefficient=value)


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf"), False, [1.0]])
def test_min_normal_force_is_validated(value):
    x0 = np.array([-np.pi / 2, 0.0, 0.0, 0.0])
    with pytest.raises(ParameterError, match="min_normal_force_N must be a finite force >= 0 N"):
        ManeuverProblem(initial_state=x0, duration_s=1.0, target_contact_m=[1.0], min_normal_force_N=value)
    with pytest.raises(ParameterError, match="min_normal_force_N"):
        PlateMotionProblem(waypoints_m=[[0, 0], [0.1, 0]], min_normal_force_N=value)


# ------------------------------------------------------------------------------ the disk (one mass)
DISK_X0 = np.array([-np.pi / 2, 0.0, 0.0, 0.0])


def one_mass_disk():
    return RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))


def disk_problem(**contact):
    return ManeuverProblem(initial_state=DISK_X0, duration_s=6.0, target_contact_m=[1.0], rest_at_end=True, **contact)


@pytest.fixture(scope="module")
def disk_free_plan():
    plan = plan_maneuver(one_mass_disk(), disk_problem(), intervals=20, **FIXED_MESH)
    assert plan.converged, plan.report.message
    return plan


def resimulated_contact(plan, per_interval=100):
    """The plant re-simulated under the planned inputs (DOP853 1e-12) and its numeric contact forces there."""
    t = np.unique(np.concatenate([np.linspace(a, b, per_interval + 1) for a, b in zip(plan.nodes[:-1],
                                                                                       plan.nodes[1:])]))
    t, x = resimulate(plan, t)
    return plan.plant.contact_forces(0.0, x, plan.input(t))


def test_friction_limited_disk_plan_keeps_the_cone_between_nodes_and_costs_more(disk_free_plan):
    """Rest-to-rest 1 m in 6 s; unconstrained it needs |F_t|/N up to 0.266; with mu = 0.15 the cone binds.

    At the collocation points |F_t| <= mu N to IPOPT's tolerance; on the re-simulated motion (100 samples per
    interval, the plant's numeric contact_forces) within 2e-3 relative (the planner's own check is 1e-3 on the
    collocation polynomial; measured 0.9976 mu: the input jumps where the cone stops binding, which the
    interval's quadratic overshoots by a mesh-independent ~1.6 %, so the bound at the points is backed off).
    Effort 1.250 -> 1.394 (+11.5 %).
    """
    mu = 0.15
    free = disk_free_plan
    assert free.report.peak_friction_coefficient_required > 1.5 * mu
    plan = plan_maneuver(one_mass_disk(), disk_problem(friction_coefficient=mu), intervals=20, **FIXED_MESH)
    assert plan.converged, plan.report.message
    assert plan.report.binding_contact_constraints == ("friction_coefficient",)
    assert "binding: friction cone (friction_coefficient)" in plan.report.message
    node_ratio = friction_coefficient_required(*plan.contact_forces())
    assert node_ratio.max() <= mu * (1 + 1e-6)
    normal, tangential = resimulated_contact(plan)
    assert normal.min() > 0
    assert friction_coefficient_required(normal, tangential).max() <= mu * (1 + 2 * BETWEEN_NODES_RTOL)
    assert plan.report.peak_friction_coefficient_required <= mu * (1 + BETWEEN_NODES_RTOL)
    assert plan.report.objective > 1.05 * free.report.objective
    assert abs(plan.contact(np.array([6.0]))[0, 0] - 1.0) < 1e-8


def test_least_normal_force_binds_and_holds_between_nodes(disk_free_plan):
    """Unconstrained, N dips to 1.734 N (weight 2 N); asking for 1.8 N binds and holds on the re-simulation."""
    n_min = 1.8
    assert disk_free_plan.report.least_normal_force_N < n_min
    plan = plan_maneuver(one_mass_disk(), disk_problem(min_normal_force_N=n_min), intervals=20, **FIXED_MESH)
    assert plan.converged, plan.report.message
    assert plan.report.binding_contact_constraints == ("min_normal_force_N",)
    normal, _ = resimulated_contact(plan)
    assert normal.min() >= n_min - 2 * BETWEEN_NODES_RTOL * 2.0
    assert plan.report.objective > disk_free_plan.report.objective


def test_too_little_friction_is_reported_infeasible_naming_the_friction_cone():
    """mu = 0.02 cannot do it: proof by momentum. Rest to rest, F_t = dP/dt with P(0) = P(T) = 0, so the CM
    moves |dx_cm| = |int (T/2 - s) F_t ds| / M <= (T/2) mu int N ds / M = mu g T^2 / 2 = 18 mu m (int N ds =
    M g T: no vertical momentum at the ends). The contact moves 1 m and the CM offset (m1 r_rail / M = 0.25 m)
    changes by at most 0.5 m, so |dx_cm| >= 0.5 m and mu >= 1/36 = 0.028 is needed."""
    plan = plan_maneuver(one_mass_disk(), disk_problem(friction_coefficient=0.02), intervals=20, **FIXED_MESH)
    assert not plan.converged
    assert "friction cone" in plan.report.message and "friction_coefficient = 0.02" in plan.report.message
    assert "Without them the problem solves, needing a peak |F_t|/N of 0.266" in plan.report.message
    with pytest.raises(InfeasiblePlanError, match="friction_coefficient"):
        plan.raise_if_failed()


# ------------------------------------------------------------------------------ the paper's ball
def test_ball_plan_with_friction_keeps_the_cone_on_the_resimulated_motion():
    """The paper's 3-mass ball, rest to rest (0.5, 0.5) m in 4 s, 12 intervals: unconstrained |F_t|/N <= 0.178.

    mu = 0.5 is inactive: the planner returns the unconstrained optimum (solved first without the contact
    constraints). mu = 0.1 binds: the re-simulated motion keeps it within 2e-3 (measured 0.9997 mu) and the
    effort rises 15.38 -> 17.68.

    The unconstrained optimum, the oracle of the first two checks, is solved on CasADi's MX graph: the same NLP
    (its cost agrees with the SX graph's to 1e-15 relative), built in 0.3 s instead of 1 s, and its 12
    iterations do not feel MX's slower ones.
    """
    ball = RollingBall(paper_ball_parameters())
    problem = dict(initial_state=paper_ball_initial_state(), duration_s=4.0, target_contact_m=[0.5, 0.5],
                   rest_at_end=True)
    free = plan_maneuver(ball, ManeuverProblem(**problem), intervals=12, symbolic="MX", **FIXED_MESH)
    loose = plan_maneuver(ball, ManeuverProblem(**problem, friction_coefficient=0.5), intervals=12, **FIXED_MESH)
    assert free.converged and loose.converged
    assert abs(loose.report.objective - free.report.objective) <= 1e-8 * free.report.objective
    assert loose.report.binding_contact_constraints == ()
    mu = 0.1
    plan = plan_maneuver(ball, ManeuverProblem(**problem, friction_coefficient=mu), intervals=12, **FIXED_MESH)
    assert plan.converged, plan.report.message
    assert "friction_coefficient" in plan.report.binding_contact_constraints
    normal, tangential = resimulated_contact(plan, per_interval=50)
    assert normal.min() > 0
    assert friction_coefficient_required(normal, tangential).max() <= mu * (1 + 2 * BETWEEN_NODES_RTOL)
    assert plan.report.objective > 1.05 * free.report.objective


# ------------------------------------------------------------------------------ the ball-plate
def test_quasi_static_plate_friction_bounds_the_tilt_at_every_instant():
    """Quasi-static plate: |F_t|/N = (1 - k_b) tan(tilt), a convex bound in the plate angles, imposed at their
    Bernstein control points, so it holds at every instant. mu = 0.06 (tilt <= 11.86 deg, below the 15 deg
    limit): the minimum time rises 0.747 -> 0.843 s; on the full DAE re-simulated under the planned angles the
    numeric contact_forces keep |F_t|/N <= mu (1 + 1e-6); a least normal force 0.975 m g binds the same way."""
    plant = BallPlate()
    limits = RigLimits(max_angle=15 * DEG, max_rate=200 * DEG)
    waypoints = [[0.0, 0.0], [0.2, 0.1]]
    free = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=waypoints, limit_margin=0.0), limits=limits,
                             intervals=16)
    mu = 0.06
    assert free.converged and free.report.peak_friction_coefficient_required > 1.2 * mu
    plan = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=waypoints, limit_margin=0.0,
                                                       friction_coefficient=mu), limits=limits, intervals=16)
    assert plan.converged, plan.report.message
    assert plan.report.binding_contact_constraints == ("friction_coefficient",)
    assert plan.duration_s > 1.1 * free.duration_s
    t = np.linspace(0.0, plan.duration_s, 2001)
    s = plan.reference()(t)
    normal, tangential = plant.contact_forces(s.x, s.xd, s.u)
    assert friction_coefficient_required(normal, tangential).max() <= mu * (1 + 1e-6)
    tilt = plan.peak_limits(samples_per_interval=200)["max_tilt_rad"]
    assert (1 - plant.params.rolling_gain) * np.tan(tilt) <= mu * (1 + 1e-6)
    weight = plant.params.mass * plant.params.gravity
    lifted = plan_plate_motion(plant, PlateMotionProblem(waypoints_m=waypoints, limit_margin=0.0,
                                                         min_normal_force_N=0.975 * weight),
                               limits=limits, intervals=16)
    assert lifted.converged and lifted.report.binding_contact_constraints == ("min_normal_force_N",)
    normal, _ = lifted.contact_forces(t[t <= lifted.duration_s])
    assert normal.min() >= 0.975 * weight * (1 - 1e-8)


def test_exact_plate_friction_limits_the_plate_motion():
    """Exact moving plate (tabletop ball, 10 rad/s^2): the plate's rates and accelerations enter F. mu = 0.05:
    the minimum time rises 0.971 -> 1.024 s; on the 7-coordinate DAE re-simulated under the planned plate
    accelerations the numeric contact_forces keep |F_t|/N <= mu (1 + 2e-3) (measured 1.00001 mu)."""
    rig = rig_preset("tabletop")
    plant = MovingPlateBallPlate(rig.design_plant().params)
    problem = dict(waypoints_m=[[0.0, 0.0], [0.15, 0.05]], limit_margin=0.2, max_plate_acceleration_rad_s2=10.0)
    free = plan_plate_motion(plant, PlateMotionProblem(**problem), limits=rig.limits, intervals=10)
    mu = 0.05
    plan = plan_plate_motion(plant, PlateMotionProblem(**problem, friction_coefficient=mu), limits=rig.limits,
                             intervals=10)
    assert free.converged and plan.converged, plan.report.message
    assert free.report.peak_friction_coefficient_required > 1.2 * mu
    assert "friction_coefficient" in plan.report.binding_contact_constraints
    assert plan.duration_s > 1.03 * free.duration_s
    t = np.linspace(0.0, plan.duration_s, 2001)
    s = plan.reference()(t)
    normal, tangential = plant.contact_forces(s.x, s.xd, plan.plate_accelerations(t))
    assert normal.min() > 0
    assert friction_coefficient_required(normal, tangential).max() <= mu * (1 + 2 * BETWEEN_NODES_RTOL)


def test_plate_with_too_little_friction_is_reported_infeasible():
    """0.2236 m rest to rest in 1 s needs a peak acceleration >= 4 d / T^2 = 0.89 m/s^2; mu = 0.02 allows
    tan(tilt) <= mu / (1 - k_b) = 0.07, i.e. k_b g sin(tilt) <= 0.49 m/s^2: infeasible, and the message says
    it is the friction cone."""
    plan = plan_plate_motion(BallPlate(), PlateMotionProblem(waypoints_m=[[0, 0], [0.2, 0.1]], objective="effort",
                                                             duration_s=1.0, limit_margin=0.0,
                                                             friction_coefficient=0.02),
                             limits=RigLimits(max_angle=15 * DEG, max_rate=200 * DEG), intervals=16)
    assert not plan.converged
    assert "friction cone" in plan.report.message and "friction_coefficient = 0.02" in plan.report.message
    with pytest.raises(InfeasiblePlanError, match="friction_coefficient"):
        plan.raise_if_failed()
