"""Trajectory optimization (issue 13): symbolic equations, collocation accuracy, optimality, obstacles, errors.

Oracles: the plants' own numpy equations (the CasADi form must equal them to 1e-12); a tight DOP853
re-simulation of the planned inputs (the plan must reproduce it to the transcription's accuracy, which
must shrink at order 4 under mesh refinement); Pontryagin's conditions integrated with the plant's
own complex-step Jacobian for the disk with one mass (an optimum found without CasADi or collocation);
random feasible perturbations of the optimal inputs (the cost never decreases to first order).
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

pytest.importorskip("casadi")

from ballctl._errors import BallctlError, InfeasiblePlanError, MissingExtraError
from ballctl.planning import (
    CircularObstacle,
    ManeuverProblem,
    PlanAccuracy,
    SolverOptions,
    plan_maneuver,
    refine_plan,
    resimulate,
)
from ballctl.planning.symbolic import ball_rhs_function, disk_rhs_function
from ballctl.planning.transcription import quadratic_input
from ballctl.plants.rails import CircleRail, EllipseRail, FigureEightRail, SegmentRail
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rolling_ball import PointMass, RollingBall, RollingBallParameters
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters

from _planning_fixtures import one_reference_per_plan  # noqa: F401  (a fixture)

#: The transcription on the mesh asked for, from the straight seed: no branch search, no refinement.
FIXED_MESH = {"branch": None, "accuracy": None}


def one_mass_disk(inputs="acceleration"):
    return RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)),
                       inputs=inputs)


DISK_X0 = np.array([-np.pi / 2, 0.0, 0.0, 0.0])
TIGHT = SolverOptions(tolerance=1e-12, constraint_tolerance=1e-12)


# ------------------------------------------------------------------------------ symbolic = numpy
@pytest.mark.parametrize("inputs", ["acceleration", "force"])
def test_casadi_equations_equal_the_plants_numpy_equations(inputs):
    """The CasADi form (written once in ballctl.planning.symbolic) equals RollingBall.rhs / RollingDisk.rhs."""
    rng = np.random.default_rng(7)
    rails = (CircleRail.from_spherical(0.6, 0.3, 0.4),
             EllipseRail(semi_axis_first_m=0.5, semi_axis_third_m=0.3, center_m=[0.1, 0.0, 0.1]),
             FigureEightRail(half_width_m=0.4, half_height_m=0.3,
                             rotation=CircleRail.from_spherical(1, 1, 0.2).rotation),
             SegmentRail(start_m=[-0.3, 0.2, 0.1], end_m=[0.4, -0.2, 0.0]))
    params = RollingBallParameters(mass_kg=1.3, radius_m=1.1, principal_inertia_kgm2=[0.8, 1.0, 1.2],
                                   cm_offset_m=[0.02, -0.01, -0.05], gravity_mps2=9.81,
                                   point_masses=tuple(PointMass(mass_kg=0.3 + 0.2 * i, rail=r)
                                                      for i, r in enumerate(rails)))
    ball = RollingBall(params, inputs=inputs)
    f = ball_rhs_function(ball)
    disk = RollingDisk(RollingDiskParameters(
        mass_kg=1.3, radius_m=1.0, inertia_kgm2=0.7, cm_offset_m=[0.1, -0.2], gravity_mps2=9.81,
        point_masses=(PointMass(mass_kg=0.5, rail=CircleRail(radius_m=0.6)),
                      PointMass(mass_kg=0.8, rail=EllipseRail(semi_axis_first_m=0.5, semi_axis_third_m=0.3,
                                                              center_m=[0.1, 0.0, 0.2])))), inputs=inputs)
    g = disk_rhs_function(disk)
    for _ in range(20):
        x = rng.normal(size=17)
        x[8:12] /= np.linalg.norm(x[8:12])
        u = rng.normal(size=4)
        ref = ball.rhs(0.0, x, u)
        # relative to the size of the state derivative (force solves round at ~1e-15 relative)
        assert np.abs(np.asarray(f(x, u)).ravel() - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
        xd, ud = rng.normal(size=6), rng.normal(size=2)
        ref = disk.rhs(0.0, xd, ud)
        assert np.abs(np.asarray(g(xd, ud)).ravel() - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


def test_missing_casadi_names_the_extra(monkeypatch):
    import builtins

    import ballctl.planning._casadi as mod
    real_import = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "casadi":
            raise ImportError("no casadi")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingExtraError, match=r"ballctl\[optimal\]"):
        mod.require_casadi()


# ------------------------------------------------------------------------------ accuracy and order
@pytest.fixture(scope="module")
def disk_plans():
    disk = one_mass_disk()
    problem = ManeuverProblem(initial_state=DISK_X0, duration_s=6.0, target_contact_m=[1.0], rest_at_end=True)
    return disk, problem, {n: plan_maneuver(disk, problem, intervals=n, **FIXED_MESH, solver=TIGHT)
                           for n in (10, 20, 40)}


def test_resimulation_matches_plan_at_order_four(disk_plans):
    """Hermite-Simpson = Lobatto IIIA(3): global state error O(h^4) against DOP853 at 1e-12."""
    disk, problem, plans = disk_plans
    errors = []
    for n, plan in plans.items():
        assert plan.converged and plan.report.max_constraint_violation < 1e-9
        t, x = resimulate(plan)
        errors.append(np.abs(plan.state(t) - x).max())       # dense: between nodes too
        # the end conditions hold on the re-simulated motion to the same accuracy
        assert abs(disk.contact_position(x[-1]) - 1.0) < 2 * errors[-1] + 1e-9
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    # measured 3.2 and 3.9 (pre-asymptotic at 10 intervals); the asymptotic rate is 4
    assert rates[-1] > 3.6 and errors[-1] < 5e-6
    # the cost converges too (Simpson quadrature of a smooth integrand)
    costs = [p.report.objective for p in plans.values()]
    assert abs(costs[2] - costs[1]) < abs(costs[1] - costs[0]) / 8


def test_disk_optimum_agrees_with_pontryagin_shooting(disk_plans):
    """Independent optimum: shooting on Pontryagin's conditions with the plant's numpy equations.

    min int u^2 dt, x_dot = f(x, u) affine in u (f = a(x) + B(x) u): H = u^2 + lam . f, u* = -B^T lam / 2,
    lam_dot = -(df/dx)^T lam (complex-step Jacobian of RollingDisk.rhs). Unknown lam(0) (4); conditions at
    T: contact travel, phi_dot, theta_dot given, lam_theta(T) = 0 (theta free).
    """
    disk, problem, plans = disk_plans
    plan = plans[40]
    T = problem.duration_s

    def B_of(x):
        return (disk.rhs(0.0, x, np.array([1j * 1e-30])).imag / 1e-30)[:, None]   # (4, 1), exact (affine)

    def u_star(x, lam):
        return -0.5 * B_of(x).T @ lam

    def rhs(t, y):
        x, lam = y[:4], y[4:]
        u = u_star(x, lam)
        return np.concatenate([disk.rhs(t, x, u), -disk.rhs_jacobian(t, x, u).T @ lam])

    def shoot(lam0):
        sol = solve_ivp(rhs, (0, T), np.concatenate([DISK_X0, lam0]), method="DOP853", rtol=1e-9, atol=1e-10)
        yT = sol.y[:, -1]
        return np.array([-(yT[2] - DISK_X0[2]) - 1.0, yT[3], yT[1], yT[4]])

    # initial guess from the plan: along it lam(t) = Psi(t) lam(0) with Psi_dot = -A^T Psi, and
    # B^T lam(t) = -2 u(t) at every t: a linear least-squares problem for lam(0). Psi along the plan's own
    # dense polynomials at rtol 1e-8 (0.2 s more than piecewise-linear states at 1e-6) starts the shooting
    # at a residual of 1e-2 instead of 1.5: 5 Levenberg-Marquardt iterations instead of 9 (25 shots, not 46)
    ts = np.linspace(0, T, 61)
    xs, us = plan.state(ts), plan.input(ts)

    def psi_rhs(t, y):
        A = disk.rhs_jacobian(t, plan.state(np.array([t]))[0], plan.input(np.array([t]))[0])
        return (-A.T @ y.reshape(4, 4)).ravel()

    psi = solve_ivp(psi_rhs, (0, T), np.eye(4).ravel(), t_eval=ts, rtol=1e-8, atol=1e-10).y.T.reshape(-1, 4, 4)
    rows = np.array([(B_of(x).T @ p)[0] for x, p in zip(xs, psi)])
    lam0 = np.linalg.lstsq(rows, -2.0 * us[:, 0], rcond=None)[0]
    res = least_squares(shoot, lam0, method="lm", xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=30)
    assert np.abs(res.fun).max() < 1e-7
    sol = solve_ivp(rhs, (0, T), np.concatenate([DISK_X0, res.x]), method="DOP853", rtol=1e-9, atol=1e-10,
                    dense_output=True)
    t = np.linspace(0, T, 601)
    y = sol.sol(t)
    u_pmp = np.array([u_star(y[:4, k], y[4:, k])[0] for k in range(t.size)])
    cost_pmp = float(np.sum((u_pmp[1:] ** 2 + u_pmp[:-1] ** 2) / 2 * np.diff(t)))
    u_col = quadratic_input(plan.nodes, plan.u, t)[:, 0]
    # inputs agree to the accuracy of the 40-interval collocation (measured 2.3e-3 relative; the input
    # converges more slowly than the states); costs to 1e-4 relative (trapezoid on 600 samples)
    assert np.abs(u_col - u_pmp).max() < 4e-3 * np.abs(u_pmp).max()
    assert abs(plan.report.objective - cost_pmp) < 1e-4 * cost_pmp


def test_kkt_and_random_feasible_perturbations_do_not_lower_the_cost(disk_plans):
    """Optimality: IPOPT's KKT residual is tiny; feasible perturbations raise the cost (first order 0)."""
    disk, problem, plans = disk_plans
    plan = plans[20]
    assert plan.report.dual_infeasibility < 1e-8
    import casadi as ca

    from ballctl.planning import ManeuverNLP
    nlp = ManeuverNLP(disk, problem, nodes=plan.nodes, solver=SolverOptions(), symbolic="SX")
    w_opt = plan.decision_vector
    jac = ca.Function("j", [nlp.tr.w, nlp.param], [ca.jacobian(ca.vertcat(*[g[1] for g in nlp.groups]), nlp.tr.w)])
    p = nlp.parameters()                                  # radius factor 1, no back-offs
    J = np.asarray(jac(w_opt, p).full())
    bounds = nlp.constraints_for(problem.initial_state)
    fixed = np.flatnonzero(bounds.lbw == bounds.ubw)
    free = np.setdiff1d(np.arange(w_opt.size), fixed)
    Jf = J[:, free]
    # null space of the active (all equality here) constraint Jacobian = feasible directions to first order
    _, s, vt = np.linalg.svd(Jf)
    rank = int(np.sum(s > 1e-10 * s[0]))
    null = vt[rank:].T
    assert null.shape[1] >= 1
    f_fun = ca.Function("f", [nlp.nlp["x"], nlp.nlp["p"]], [nlp.nlp["f"]])
    f0 = float(f_fun(w_opt, p)[0])
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = np.zeros(w_opt.size)
        d[free] = null @ rng.normal(size=null.shape[1])
        d /= np.abs(d).max()
        for eps in (1e-3, 1e-4):
            fp, fm = float(f_fun(w_opt + eps * d, p)[0]), float(f_fun(w_opt - eps * d, p)[0])
            # first-order change (fp - fm) / 2 vanishes relative to the second-order one; neither side lowers f
            # beyond the O(eps^2) constraint curvature that a tangent step leaves
            assert abs(fp - fm) / 2 <= 1e-5 * eps + 1e-3 * max(fp + fm - 2 * f0, 0)
            assert min(fp, fm) >= f0 - 1e-9


# ------------------------------------------------------------------------------ ball with obstacles
@pytest.fixture(scope="module")
def ball_plan():
    ball = RollingBall(paper_ball_parameters())
    obstacles = (CircularObstacle(center_m=[0.15, 0.6], radius_m=0.25),)
    problem = ManeuverProblem(initial_state=paper_ball_initial_state(), duration_s=6.0, target_contact_m=[0.0, 1.2],
                              rest_at_end=True, obstacles=obstacles, clearance_margin_m=0.05, max_rail_speed=1.5,
                              max_rail_acceleration=2.0)
    return ball, problem, plan_maneuver(ball, problem, intervals=20, **FIXED_MESH)


def test_ball_plan_clears_obstacles_on_the_resimulated_path_and_keeps_limits(ball_plan):
    ball, problem, plan = ball_plan
    assert plan.converged, plan.report.message
    r = plan.report
    assert r.iterations > 0 and r.solve_time_s > 0 and r.max_constraint_violation < 1e-8
    assert r.quaternion_norm_error < 1e-10        # the |q| = 1 constraint holds at every point before renormalizing
    t = np.linspace(0, problem.duration_s, 2001)  # 100 samples per mesh interval
    _, x = resimulate(plan, t)
    contact = x[:, -2:]
    for ob in problem.obstacles:
        assert ob.clearance(contact).min() >= problem.clearance_margin_m - 1e-9
    assert np.abs(contact - plan.contact(t)).max() < 1e-3          # 20 intervals: transcription accuracy
    assert np.linalg.norm(contact[-1] - problem.target_contact_m) < 1e-3
    assert np.abs(x[-1, np.r_[3:6, 10:13]]).max() < 1e-3            # at rest (rails and Omega)
    assert np.abs(plan.x[:, 3:6]).max() <= 1.5 + 1e-7 and np.abs(plan.u).max() <= 2.0 + 1e-7
    np.testing.assert_allclose(np.linalg.norm(plan.x[:, 6:10], axis=1), 1.0, atol=1e-15)


def test_refinement_halves_the_mesh_until_the_replay_meets_the_tolerance(ball_plan):
    """refine_plan halves every interval until the Richardson cost estimate and the replay checks meet 1e-4."""
    ball, problem, plan = ball_plan
    refined = refine_plan(ball, problem, plan, accuracy=PlanAccuracy(tolerance=1e-4, max_intervals=160))
    acc = refined.accuracy
    assert refined.converged and acc.meets and acc.mesh_sizes[0] == 20 and acc.mesh_sizes[-1] > 20
    assert acc.relative_cost_error <= 1e-4 and all(c.passed for c in acc.checks)
    # the replayed end point is where the plan says, to the tolerance on the 1 m move
    t, x = resimulate(refined)
    assert np.linalg.norm(x[-1, -2:] - problem.target_contact_m) <= 1e-4 * np.linalg.norm(problem.target_contact_m)


# ------------------------------------------------------------------------------ bad requests
def test_bad_requests_raise_clear_errors():
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    with pytest.raises(InfeasiblePlanError, match=r"obstacles\[0\].*covers the start"):
        plan_maneuver(ball, ManeuverProblem(initial_state=x0, duration_s=5.0, target_contact_m=[0, 1],
                                            obstacles=(CircularObstacle(center_m=[0, 0.1], radius_m=0.3),)))
    with pytest.raises(InfeasiblePlanError, match="covers the target"):
        plan_maneuver(ball, ManeuverProblem(initial_state=x0, duration_s=5.0, target_contact_m=[0, 1],
                                            obstacles=(CircularObstacle(center_m=[0, 1.1], radius_m=0.3),)))
    with pytest.raises(InfeasiblePlanError, match="theta_dot_1.*max_rail_speed"):
        x1 = x0.copy()
        x1[3] = 3.0
        plan_maneuver(ball, ManeuverProblem(initial_state=x1, duration_s=5.0, target_contact_m=[0, 1],
                                            max_rail_speed=2.0))
    with pytest.raises(ValueError, match="duration_s"):
        ManeuverProblem(initial_state=x0, duration_s=-1.0, target_contact_m=[0, 1])
    with pytest.raises(ValueError, match="target_contact_m, a path"):
        ManeuverProblem(initial_state=x0, duration_s=1.0)
    with pytest.raises(BallctlError, match="rail 1's ends"):
        seg = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                                point_masses=(PointMass(mass_kg=1.0, rail=SegmentRail(
                                                    start_m=[-0.5, 0, -0.2], end_m=[0.5, 0, -0.2])),)))
        plan_maneuver(seg, ManeuverProblem(initial_state=[2.0, 0, 0, 0], duration_s=3.0, target_contact_m=[0.5]))


def test_unreachable_target_returns_infeasible_result_naming_the_constraint():
    disk = one_mass_disk()
    problem = ManeuverProblem(initial_state=DISK_X0, duration_s=2.0, target_contact_m=[5.0], rest_at_end=True,
                              max_rail_acceleration=1.0, max_rail_speed=1.0)
    plan = plan_maneuver(disk, problem, intervals=10, **FIXED_MESH, solver=SolverOptions(max_iterations=200))
    assert not plan.converged
    assert "most violated constraint" in plan.report.message
    assert any(k in plan.report.message for k in ("target", "rest", "defects"))
    with pytest.raises(InfeasiblePlanError, match="most violated constraint"):
        plan.raise_if_failed()


def test_segment_rail_ends_and_force_inputs_are_respected():
    """A magnet in a tube (force input): the planned mass stays between the tube's ends."""
    seg = SegmentRail(start_m=[-0.4, 0, -0.3], end_m=[0.4, 0, -0.3])
    disk = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=seg),)), inputs="force")
    problem = ManeuverProblem(initial_state=[0.4, 0, 0, 0], duration_s=6.0, target_contact_m=[0.6], rest_at_end=True,
                              max_rail_acceleration=1.0, max_rail_force=2.0)
    plan = plan_maneuver(disk, problem, intervals=20, **FIXED_MESH)
    assert plan.converged, plan.report.message
    t, x = resimulate(plan, np.linspace(0, 6.0, 601))
    assert x[:, 0].min() > -1e-6 and x[:, 0].max() < seg.length_m + 1e-6
    assert np.abs(plan.u).max() <= 2.0 + 1e-7
    assert abs(disk.contact_position(x[-1], phi_start=0.0) - 0.6) < 1e-3


@pytest.mark.usefixtures("one_reference_per_plan")
def test_plan_tracked_by_lqr_from_a_perturbed_start():
    """Plan -> IntegratedReference -> linearize -> finite-horizon LQR -> nonlinear closed loop."""
    from ballctl.planning import track_plan
    ball = RollingBall(paper_ball_parameters())
    problem = ManeuverProblem(initial_state=paper_ball_initial_state(), duration_s=6.0, target_contact_m=[0.0, 1.0],
                              rest_at_end=True, max_rail_speed=2.0, max_rail_acceleration=2.0)
    plan = plan_maneuver(ball, problem, intervals=12, **FIXED_MESH)
    tr = track_plan(plan, dt=0.2)
    e, e_open = tr.contact_error_m, tr.open_loop_contact_error_m
    # 7.1 cm contact offset, yaw and rails 0.1 rad off: measured 4.0 mm at the end with the default terminal
    # weight (9.8 mm with terminal_factor=1; open loop 0.49 m)
    assert e[0] == pytest.approx(0.05 * 2 ** 0.5) and e[-1] < 0.008 and e_open[-1] > 50 * e[-1]
    weak = track_plan(plan, dt=0.2, terminal_factor=1.0)
    assert weak.contact_error_m[-1] > 1.5 * e[-1]      # the terminal weight is what brings it to the end point
    assert tr.closed_loop.summary().max_constraint_residual < 1e-9
    # the reference replays the plan: its contact point agrees with the collocation polynomial
    t = np.linspace(0.0, 6.0, 31)
    assert np.abs(tr.reference(t).x[:, :2] - plan.contact(t)).max() < 5e-3


def test_ball_reaches_a_target_heading_on_the_resimulated_motion():
    """Section 1: 'reach a target contact point (and optionally heading)'. Rolling straight along e2 turns the
    ball about e1 and keeps its heading (0 here); asking for 0.5 rad makes the masses also spin it about the
    vertical. Checked on the DOP853 re-simulation of the planned inputs, not on the plan itself."""
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    common = dict(initial_state=x0, duration_s=6.0, target_contact_m=[0.0, 0.8], rest_at_end=True,
                  max_rail_speed=1.5, max_rail_acceleration=2.0)
    # the plan without the heading is only the contrast: solved on CasADi's MX graph (the same NLP, cost equal to
    # the SX graph's to 1e-15 relative), built in 0.3 s instead of 0.9 s; its 14 iterations do not feel MX's
    free = plan_maneuver(ball, ManeuverProblem(**common), intervals=20, symbolic="MX", **FIXED_MESH)
    turned = plan_maneuver(ball, ManeuverProblem(**common, target_heading_rad=0.5), intervals=20, **FIXED_MESH)
    assert free.converged and turned.converged
    _, x_free = resimulate(free)
    _, x_turn = resimulate(turned)
    heading = lambda x: np.arctan2(_lam(x)[1], _lam(x)[0])  # noqa: E731  (independent of the plan's code)
    assert abs(turned.heading()[-1] - 0.5) < 1e-9            # the plan meets the constraint exactly
    # measured 4.5e-5 rad at 20 intervals: the transcription's accuracy, with a factor 20 of margin
    assert abs(heading(x_turn[-1]) - 0.5) < 1e-3
    assert abs(heading(x_free[-1]) - 0.5) > 0.1              # without the constraint it is not reached
    assert np.abs(x_turn[-1, -2:] - [0.0, 0.8]).max() < 1e-3  # and the target contact point still is
    with pytest.raises(BallctlError, match="target_heading_rad"):
        plan_maneuver(one_mass_disk(), ManeuverProblem(initial_state=DISK_X0, duration_s=6.0, target_contact_m=[1.0],
                                                       target_heading_rad=0.3))
    with pytest.raises(BallctlError, match="target_heading_rad"):
        ManeuverProblem(**common, target_heading_rad=float("nan"))


def _lam(x):
    """First column of Lambda (body e1 in space) from the quaternion of the 3-mass ball's state, by hand."""
    q0, q1, q2, q3 = x[6:10]
    return np.array([1 - 2 * (q2 * q2 + q3 * q3), 2 * (q1 * q2 + q0 * q3)])
