"""Receding-horizon re-planning of the ball and constraint-aware LQR tracking of a plan.

Oracles: the open-loop replay of the fixed plan from the same perturbed start (the receding horizon
must reach the target far closer); the plan's own bounds (obstacle margin, rail acceleration), checked
on the dense ODE path; the rolling ball's quaternion/generalized-coordinate maps (a round trip is the
identity, the perturbation is exactly the one asked for, the rolling constraints hold); an NLP that
cannot converge (one IPOPT iteration), whose replans must all be dropped so the run is the replay;
a trapezoid sum of the applied input against the exact Gauss cost.
"""

import numpy as np
import pytest

pytest.importorskip("casadi")

from ballctl.planning import CircularObstacle, ManeuverNLP, ManeuverProblem, SolverOptions, plan_maneuver
from ballctl.planning.follow import perturbed_start, plan_chart_rotation, track_plan
from ballctl.planning.receding import (
    TrackingStart,
    compare_tracking,
    random_starts,
    receding_start,
    track_receding,
)
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rolling_ball import RollingBall

from _planning_fixtures import one_reference_per_plan  # noqa: F401  (a fixture)

T = 6.0


@pytest.fixture(scope="module")
def small_plan():
    """The paper ball from rest to rest 1.5 m away in 6 s past one obstacle, 24 intervals (about 3 s)."""
    ball = RollingBall(paper_ball_parameters())
    problem = ManeuverProblem(initial_state=paper_ball_initial_state(), duration_s=T, target_contact_m=[0.0, 1.5],
                              rest_at_end=True, clearance_margin_m=0.05, max_rail_speed=2.0,
                              max_rail_acceleration=2.0,
                              obstacles=(CircularObstacle(center_m=[0.1, 0.75], radius_m=0.2),))
    plan = plan_maneuver(ball, problem, intervals=24, branch=None, accuracy=None)
    assert plan.converged, plan.report.message
    return plan


@pytest.fixture(scope="module")
def small_nlp(small_plan):
    return ManeuverNLP(small_plan.plant, small_plan.problem, nodes=small_plan.nodes)


def test_receding_horizon_reaches_the_target_within_the_plan_constraints(small_plan, small_nlp):
    rh = track_receding(small_plan, replan_every=5, dt=0.1, nlp=small_nlp)
    # replans every 0.5 s while at least max(1 s, 0.6 s) is left: t = 0, 0.5, ..., 5.0
    assert [r.time_s for r in rh.replans] == pytest.approx(np.arange(0.0, 5.01, 0.5))
    assert all(r.converged and r.warm for r in rh.replans) and rh.failures == 0
    # from 7.1 cm and 0.1 rad off: the open-loop replay misses by tens of cm, re-planning by < 1 um
    assert rh.open_loop_final_error_m > 0.1
    assert rh.final_error_m < 1e-6
    # the margin and the acceleration bound are in the NLP; the stages keep the margin between the points
    assert rh.constraints_kept, [c.text() for c in rh.constraints]
    assert rh.least_clearance_m >= small_plan.problem.clearance_margin_m
    assert rh.peak_rail_input.max() <= 2.0 + 1e-9
    assert {c.name for c in rh.constraints} == {"obstacle clearance", "rail speed", "rail acceleration"}
    # warm: few iterations per replan once the first (from the perturbed start) is done
    assert np.median(rh.iterations[1:]) <= 10 and rh.iterations.max() <= 30
    # the cost is exact on the quadratic pieces: a fine trapezoid sum of the dense input agrees
    u2 = np.sum(rh.dense_u ** 2, axis=1)
    trapezoid = float(np.sum(0.5 * (u2[1:] + u2[:-1]) * np.diff(rh.dense_t)))
    assert rh.cost == pytest.approx(trapezoid, rel=2e-3)
    # the control-time states are the dense states there, ending at T
    assert rh.t[-1] == pytest.approx(T) and rh.x.shape == (61, 15)


def test_state_conversion_round_trips_and_perturbs_as_asked(small_plan):
    ball = small_plan.plant
    system = ball.to_constrained_system(chart_rotation=plan_chart_rotation(small_plan))
    x_plan, xd_plan = system.from_ode_state(small_plan.problem.initial_state)
    x_ode = receding_start(small_plan, contact_offset_m=(0.03, -0.02), angle_offset_rad=0.07)
    x, xd = system.from_ode_state(x_ode)
    assert x - x_plan == pytest.approx([0.03, -0.02, 0.07, 0.0, 0.0, 0.07, 0.07, 0.07], abs=1e-12)
    assert np.abs(system.constraint_jacobian(x) @ xd).max() < 1e-12      # the rolling constraints (eq. 5.11)
    back = system.to_ode_state(x, xd)
    q, q_back = x_ode[6:10], back[6:10]
    assert abs(abs(q @ q_back) - 1.0) < 1e-12                            # the same orientation (q or -q)
    assert np.delete(back, range(6, 10)) == pytest.approx(np.delete(x_ode, range(6, 10)), abs=1e-12)
    assert q @ small_plan.problem.initial_state[6:10] > 0                # the plan's quaternion sign
    # and the other way: generalized -> ODE -> generalized from a moving state of the plan
    xm = small_plan.x[len(small_plan.t) // 2]
    xg, xdg = system.from_ode_state(xm)
    x2, xd2 = system.from_ode_state(system.to_ode_state(xg, xdg))
    assert np.abs(x2 - xg).max() < 1e-12 and np.abs(xd2 - xdg).max() < 1e-12
    # the same start as track_plan's (built from the reference's first sample)
    x0, xd0 = perturbed_start(system, x_plan, xd_plan, contact_offset_m=(0.03, -0.02), angle_offset_rad=0.07)
    assert np.abs(x0 - x).max() < 1e-12 and np.abs(xd0 - xd).max() < 1e-12


def test_shifted_multipliers_are_the_old_ones_at_the_old_times(small_plan, small_nlp):
    sol = small_plan.solution
    same = small_nlp.shift(sol, time_offset_s=0.0, duration_s=T)
    assert np.abs(same.lam_g - sol.lam_g).max() < 1e-12 and np.abs(same.lam_x - sol.lam_x).max() < 1e-12
    # half a mesh interval later on a mesh stretched to what is left: the interior interpolates,
    # the end conditions (target, rest) keep their multipliers
    h = T / 24
    later = small_nlp.shift(sol, time_offset_s=h / 2, duration_s=T - h / 2)
    assert later.lam_g.shape == sol.lam_g.shape and np.all(np.isfinite(later.lam_g))
    assert not np.allclose(later.lam_g, sol.lam_g)
    sizes = [int(g[1].numel()) for g in small_nlp.groups]
    names = [g[0] for g in small_nlp.groups]
    k = names.index("target contact point target_contact_m")
    a = sum(sizes[:k])
    assert np.array_equal(later.lam_g[a:a + 2], sol.lam_g[a:a + 2])


def test_a_failed_replan_keeps_the_previous_plan(small_plan):
    # one IPOPT iteration never converges, whichever graph; the MX graph builds in 0.3 s instead of 1 s (SX), and
    # its slower iterations do not matter for one
    stuck = ManeuverNLP(small_plan.plant, small_plan.problem, nodes=small_plan.nodes,
                        solver=SolverOptions(max_iterations=1), symbolic="MX")
    rh = track_receding(small_plan, replan_every=20, nlp=stuck, stages=False)
    assert len(rh.replans) == 2 and rh.failures == 2    # t = 0, 2 s (4 s left >= 2 replan periods): all dropped
    assert not any(r.converged for r in rh.replans)
    assert rh.final_plan is small_plan and rh.final_plan_start_s == 0.0
    # so the run is the plan's input replayed from the start
    assert rh.final_error_m == pytest.approx(rh.open_loop_final_error_m, rel=1e-6)


@pytest.mark.usefixtures("one_reference_per_plan")
def test_lqr_tracking_reports_and_respects_the_plan_constraints(small_plan):
    tr = track_plan(small_plan, dt=0.1)
    names = [c.name for c in tr.constraints]
    assert names == ["obstacle clearance", "rail speed", "rail acceleration"]
    # commands saturate at the plan's bound: the applied input never exceeds it
    assert tr.peak_rail_input.max() <= 2.0 + 1e-12
    assert tr.constraint("rail acceleration").passed
    assert tr.constraint("obstacle clearance").limit == 0.05
    # the dense replay of the held inputs is the closed loop (same states at the control times)
    idx = np.searchsorted(tr.dense_t, tr.closed_loop.t)
    assert np.abs(tr.dense_x[idx, -2:] - tr.closed_loop.x[:, :2]).max() < 1e-6
    # unbounded commands from a Bryson input scale of 0.05 rad/s^2 go past the bound; the limited loop does not
    strong = {name: 0.05 for name in tr.system.input_names}
    free = track_plan(small_plan, dt=0.1, max_input_errors=strong, max_state_errors=tr.weights.max_state_errors,
                      limit_inputs=False)
    held = track_plan(small_plan, dt=0.1, max_input_errors=strong, max_state_errors=tr.weights.max_state_errors)
    assert free.peak_rail_input.max() > 2.0 and not free.constraint("rail acceleration").passed
    assert held.peak_rail_input.max() <= 2.0 + 1e-12 and held.limit_steps.get("max_angle", 0) > 0


@pytest.mark.usefixtures("one_reference_per_plan")
def test_compare_tracking_tabulates_both_methods_from_the_same_starts(small_plan, small_nlp):
    starts = random_starts(1, seed=3)
    assert all(abs(v) <= 0.05 for v in starts[0].contact_offset_m) and abs(starts[0].angle_offset_rad) <= 0.1
    table = compare_tracking(small_plan, starts, replan_every=10, nlp=small_nlp, stages=False)
    assert [r.method for r in table.rows] == ["LQR", "receding"]
    lqr, rh = table.rows
    assert rh.final_error_m < lqr.final_error_m and rh.final_error_m < 1e-6
    assert lqr.peak_rail_acceleration <= 2.0 + 1e-12 and rh.peak_rail_acceleration <= 2.0 + 1e-9
    text = table.table()
    assert text.count("\n") == 3 and "receding" in text and TrackingStart(
        contact_offset_m=starts[0].contact_offset_m, angle_offset_rad=starts[0].angle_offset_rad).label() in text
