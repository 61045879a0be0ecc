"""Shared setup of the planning tests (imported by the test modules that use it)."""

import functools

import numpy as np
import pytest

from ballctl.planning import ManeuverProblem, follow, plan_maneuver
from ballctl.plants.description import plant_to_mapping
from ballctl.plants.rails import CircleRail
from ballctl.plants.rolling_ball import PointMass
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters

#: id(plan) -> (plan, its reference with the automatic chart); the plan is kept so that its id stays its own
_REFERENCES: dict[int, tuple] = {}


@pytest.fixture
def one_reference_per_plan(monkeypatch):
    """``track_plan`` rebuilds ``plan_reference(plan)`` (a DOP853 replay of the plan, ~0.7 s for the ball) on every
    call. The reference is a frozen function of the plan and the chart, so a test tracking one plan several times
    (other weights, limits or starts) gets the one built on the first call, by ``plan_reference`` itself: the same
    numbers, built once. Other charts are built as before."""
    real = follow.plan_reference

    def reference(plan, *, chart_rotation="auto"):
        if not (isinstance(chart_rotation, str) and chart_rotation == "auto"):
            return real(plan, chart_rotation=chart_rotation)
        hit = _REFERENCES.get(id(plan))
        if hit is None or hit[0] is not plan:
            hit = _REFERENCES[id(plan)] = (plan, real(plan, chart_rotation=chart_rotation))
        return hit[1]

    monkeypatch.setattr(follow, "plan_reference", reference)


@functools.lru_cache(maxsize=None)
def default_disk_plan():
    """``plan_maneuver`` on its defaults (branch search, accuracy 1e-6, second-order check) for the disk of issue 22.

    The one-mass disk (m0 = r = I = g = 1, a 1 kg mass on a 0.5 m circle, starting below the centre at rest),
    1 m rest to rest in 5 s at least effort: tests/test_planning_branches.py and tests/test_planning_optimality.py
    both check this one plan (its family, accuracy and optimality; against Pontryagin's solution). Planned once
    per test process (~1 s) and returned as ``(disk, problem, plan)``; the callers only read it.
    """
    disk = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))
    problem = ManeuverProblem(initial_state=[-np.pi / 2, 0.0, 0.0, 0.0], duration_s=5.0, target_contact_m=[1.0],
                              rest_at_end=True)
    return disk, problem, plan_maneuver(disk, problem)


def describe(disk, problem) -> tuple:
    """A disk and a problem without obstacles as comparable data (to check that a shared plan is the caller's)."""
    return (plant_to_mapping(disk, np.asarray(problem.initial_state)), problem.duration_s,
            np.asarray(problem.target_contact_m).tolist(), problem.rest_at_end, problem.effort_weight,
            problem.max_rail_speed, problem.max_rail_acceleration, len(problem.obstacles))
