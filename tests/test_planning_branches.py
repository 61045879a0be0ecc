"""The planner finds the best branch, meets its stated accuracy and checks its optimality (issue 22).

* The one-mass disk of the issue (m0 = r = I = g = 1, a 1 kg mass on a 0.5 m circle, starting below the
  centre at rest), asked for a 1 m rest-to-rest roll in 5 s at least effort with the end angle of the mass
  free: the straight seed's nearest optimum rocks the mass below the centre (cost 54.3); the mass swinging
  over the top costs 4.8957, eleven times less. The planner must return the latter on its defaults.
* A ball passing one obstacle has two families (either side); both are found and ranked, and either can be
  asked for.
* The Richardson estimate of the cost error bounds the change observed on a much finer mesh.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("casadi")

from ballctl._errors import ParameterError
from ballctl.planning import (
    CircularObstacle,
    ManeuverBranch,
    ManeuverProblem,
    PlanAccuracy,
    plan_maneuver,
    resimulate,
)
from ballctl.planning.branches import branch_of
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rails import CircleRail
from ballctl.plants.rolling_ball import PointMass, RollingBall
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters

from _planning_fixtures import default_disk_plan, describe

DISK_X0 = [-np.pi / 2, 0.0, 0.0, 0.0]


def one_mass_disk() -> RollingDisk:
    return RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))


@pytest.fixture(scope="module")
def disk_default():
    """``plan_maneuver(one_mass_disk(), problem)`` on its defaults (shared with tests/test_planning_optimality.py)."""
    disk, problem, plan = default_disk_plan()
    mine = ManeuverProblem(initial_state=DISK_X0, duration_s=5.0, target_contact_m=[1.0], rest_at_end=True)
    assert describe(disk, problem) == describe(one_mass_disk(), mine)
    return problem, plan


def test_the_disk_swings_over_the_top_on_defaults(disk_default):
    problem, plan = disk_default
    assert plan.converged
    # the over-the-top family: one turn of the mass's travel, theta(T) = 3.947 rad (measured, any mesh >= 50)
    assert branch_of(plan).rail_turns == (1,)
    assert abs(plan.x[-1, 0] - 3.9473) < 1e-3
    # its cost is 4.89574 (Pontryagin agrees, tests/test_planning_optimality.py); the rocking family costs
    # 54.32 (400 intervals): the returned plan must be the cheap one, 11x cheaper
    assert abs(plan.report.objective - 4.895737) < 1e-5
    rocking = [r for r in plan.branches if r.branch.rail_turns == (0,) and r.converged]
    assert rocking and min(r.objective for r in rocking) > 5 * plan.report.objective
    # the table is ranked, the returned family's full-mesh row is the one marked
    converged = [r.objective for r in plan.branches if r.converged]
    assert converged == sorted(converged)
    chosen = [r for r in plan.branches if r.chosen]
    assert len(chosen) == 1 and chosen[0].branch.rail_turns == (1,)


def test_the_disk_plan_meets_its_accuracy_and_the_estimate_bounds_the_observed_change(disk_default):
    """Richardson: est = |J_N - J_N/2| / 15 estimates |J_N - J*|; a 2x finer mesh sees that change."""
    problem, plan = disk_default
    acc = plan.accuracy
    assert acc.meets and acc.relative_cost_error <= 1e-6 and all(c.passed for c in acc.checks)
    N = acc.mesh_sizes[-1]
    fine = plan_maneuver(one_mass_disk(), problem, intervals=2 * N, warm_start=plan, accuracy=None)
    observed = abs(plan.report.objective - fine.report.objective)
    # an error C h^p gives est = |J_N - J*| (2^p - 1) / 15 and |J_N - J_2N| = |J_N - J*| (1 - 2^-p), so
    # observed / est = 15 / 2^p: 0.94 for the order 4 (measured 0.97 at N = 100), 1.9 for an order 3 and 0.47
    # for an order 5, both outside these bounds, as a pre-asymptotic mesh would be (a 4N mesh, 3x the cost,
    # gives 1.0, 2.1 and 0.48: no sharper)
    assert 0.7 * acc.cost_error_estimate <= observed <= 1.4 * acc.cost_error_estimate
    # and the replay lands on the target within the tolerance of the 1 m roll
    t, x = resimulate(plan)
    assert abs(one_mass_disk().contact_position(x[-1]) - 1.0) <= 1e-6


def test_the_disk_plan_is_a_strict_local_minimum(disk_default):
    _, plan = disk_default
    so = plan.second_order
    assert so is not None and so.satisfied and so.min_reduced_eigenvalue > 0 and so.n_free_directions > 0


def test_a_branch_can_be_asked_for_and_is_kept():
    """Asking for zero turns returns the rocking family the search ranks second, at its higher cost."""
    problem = ManeuverProblem(initial_state=DISK_X0, duration_s=5.0, target_contact_m=[1.0], rest_at_end=True)
    rocking = plan_maneuver(one_mass_disk(), problem, branch=ManeuverBranch(rail_turns=(0,)), accuracy=None)
    assert rocking.converged and branch_of(rocking).rail_turns == (0,)
    assert rocking.report.objective > 50.0


def test_a_requested_branch_is_checked():
    problem = ManeuverProblem(initial_state=DISK_X0, duration_s=5.0, target_contact_m=[1.0], rest_at_end=True)
    with pytest.raises(ParameterError, match="one entry per mass"):
        plan_maneuver(one_mass_disk(), problem, branch=ManeuverBranch(rail_turns=(0, 1)))
    with pytest.raises(ParameterError, match="branch must be"):
        plan_maneuver(one_mass_disk(), problem, branch="best")
    with pytest.raises(ParameterError, match="obstacle_sides"):
        ManeuverBranch(obstacle_sides=("north",))


@pytest.fixture(scope="module")
def ball_around_one_obstacle():
    ball = RollingBall(paper_ball_parameters())
    problem = ManeuverProblem(initial_state=paper_ball_initial_state(), duration_s=6.0, target_contact_m=[0.0, 1.5],
                              rest_at_end=True, clearance_margin_m=0.05, max_rail_acceleration=3.0,
                              obstacles=(CircularObstacle(center_m=[0.05, 0.75], radius_m=0.25),))
    return ball, problem, plan_maneuver(ball, problem, intervals=16, accuracy=None, branch_rounds=0)


def test_both_sides_of_an_obstacle_are_found_and_ranked(ball_around_one_obstacle):
    ball, problem, plan = ball_around_one_obstacle
    assert plan.converged
    sides = {r.branch.obstacle_sides for r in plan.branches if r.converged}
    assert {("left",), ("right",)} <= sides
    best_by_side = {s: min(r.objective for r in plan.branches if r.converged and r.branch.obstacle_sides == s)
                    for s in (("left",), ("right",))}
    # the search's cheapest family is the one returned, and no full-mesh solve is cheaper than the plan
    assert branch_of(plan).obstacle_sides == min(best_by_side, key=best_by_side.get)
    full = [r.objective for r in plan.branches if r.full_mesh and r.converged]
    assert plan.report.objective <= min(full) * (1 + 1e-12)
    # the returned plan passes the obstacle with the margin at the points
    assert problem.obstacles[0].clearance(plan.contact()).min() >= problem.clearance_margin_m - 1e-7


def test_the_other_side_can_be_asked_for(ball_around_one_obstacle):
    ball, problem, plan = ball_around_one_obstacle
    other = "left" if branch_of(plan).obstacle_sides == ("right",) else "right"
    forced = plan_maneuver(ball, problem, intervals=16, accuracy=None, branch_rounds=0,
                           branch=ManeuverBranch(obstacle_sides=(other,)))
    assert forced.converged and branch_of(forced).obstacle_sides == (other,)
    assert forced.report.objective >= plan.report.objective * (1 - 1e-9)


def test_an_accuracy_that_cannot_be_met_is_refused_not_reported_converged():
    """A cap of 20 intervals cannot reach 1e-9 on the disk: the plan says so and is not handed on."""
    problem = ManeuverProblem(initial_state=DISK_X0, duration_s=5.0, target_contact_m=[1.0], rest_at_end=True)
    plan = plan_maneuver(one_mass_disk(), problem, intervals=10,
                         accuracy=PlanAccuracy(tolerance=1e-9, max_intervals=20))
    assert not plan.converged and not plan.accuracy.meets
    assert "does not meet the accuracy 1e-09" in plan.report.message
    with pytest.raises(Exception, match="accuracy"):
        plan.raise_if_failed()


@pytest.mark.slow
def test_a_users_two_mass_ball_replays_onto_its_target_or_is_refused():
    """The issue's ball (0.15 m shell, masses on circles of 0.12 m and 0.10 m in perpendicular planes).

    Before, planned at 60 intervals, IPOPT converged but the replay ended 19 cm from the target. Now the plan
    is refined until its replay meets 1e-6 of the 1.08 m move, or it is refused naming the check: never a
    converged plan whose replay misses (measured: 240 intervals reach 6.6e-6 m, refused at that cap).
    """
    from ballctl.plants.description import rolling_plant_from_mapping
    ball, x0 = rolling_plant_from_mapping({
        "kind": "ball", "radius_m": 0.15, "mass_kg": 0.8, "inertia_kgm2": [0.006] * 3, "gravity_mps2": 9.81,
        "masses": [{"mass_kg": 0.3, "rail": "circle", "radius_m": 0.12, "normal": [0, 0, 1]},
                   {"mass_kg": 0.3, "rail": "circle", "radius_m": 0.10, "normal": [1, 0, 0]}]})
    target = np.array([1.0, 0.4])
    problem = ManeuverProblem(initial_state=x0, duration_s=8.0, target_contact_m=target, rest_at_end=True,
                              clearance_margin_m=0.05,
                              obstacles=(CircularObstacle(center_m=[0.5, 0.25], radius_m=0.1),))
    plan = plan_maneuver(ball, problem, intervals=60, accuracy=PlanAccuracy(max_intervals=240))
    t, x = resimulate(plan)
    miss = float(np.linalg.norm(x[-1, -2:] - target))
    L = float(np.linalg.norm(target))
    if plan.converged:
        assert miss <= 1e-6 * L and all(c.passed for c in plan.accuracy.checks)
    else:
        assert "does not meet the accuracy" in plan.report.message and plan.accuracy.failures
        assert miss > 1e-6 * L or plan.accuracy.relative_cost_error > 1e-6
    assert miss < 1e-4      # either way the transcription is far from the 19 cm of a 60-interval plan
