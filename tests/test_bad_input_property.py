"""Property: bad values drawn for the public constructors and functions give only BallctlError, fast.

Each example picks one public call and one argument, replaces that argument by a drawn bad value
(NaN, inf, negative, zero, huge, wrong type, wrong shape, wrong container) and calls it. The call
must either succeed (some drawn values are legal for some arguments, e.g. a negative omega) or
raise a :class:`ballctl.BallctlError`; any other exception (IndexError, LinAlgError, a bare
ValueError from numpy...) fails. Every call must answer within ``TIME_BUDGET_S`` (a NaN reaching
an adaptive integrator used to make it loop for ever).
"""

from __future__ import annotations

import time
import warnings
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ballctl
from ballctl.linear.discretize import DiscreteLTVSystem, zoh_matrices
from ballctl.plants.rails import CircleRail, SegmentRail
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.simulate import rk4

#: Generous per-call budget in s (each call below takes milliseconds when it succeeds; a hang is endless).
TIME_BUDGET_S = 5.0

BAD_SCALARS = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0, -1e-300, 1e308, -1e308, 1e-320, "abc", None,
                               True, 1j, [1.0, 2.0], {"a": 1}, np.array([np.nan]), object()])
BAD_ARRAYS = st.one_of(
    BAD_SCALARS,
    st.sampled_from([[], [[1.0]], [[1.0], [2.0, 3.0]], np.zeros((2, 2, 2)), np.full(5, np.nan), np.full(3, np.inf),
                     ["a", "b"], np.zeros(7), np.ones((4, 4)), np.array([1 + 1j, 0, 0])]),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=6),
)


@lru_cache(maxsize=None)
def _fixtures():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    s0 = ref(0.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ltv = ballctl.linearize(plant, ref, np.linspace(0.0, 0.2, 11), part)
    ball = ballctl.RollingBall(paper_ball_parameters())
    return plant, ref, s0, part, ltv, ball


def _calls():
    """(name, {argument: default}, call(**arguments)) for a broad set of public entry points."""
    plant, ref, s0, part, ltv, ball = _fixtures()
    A = np.tile(np.eye(2), (4, 1, 1))
    B = np.ones((4, 2, 1))
    dsys = DiscreteLTVSystem.from_arrays(A, B)
    return [
        ("BallPlateParameters", dict(mass=0.1, radius=0.02, inertia=None, gravity=9.81),
         lambda **k: ballctl.plants.BallPlateParameters(**k)),
        ("BallPlate", dict(params=ballctl.plants.BallPlateParameters()), lambda **k: ballctl.BallPlate(k["params"])),
        ("MovingPlateParameters", dict(pivot_depth=0.0, with_spin=False),
         lambda **k: ballctl.plants.MovingPlateParameters(**k)),
        ("ServoParameters", dict(bandwidth=60.0, damping=0.8, plate_inertia=(0.06, 0.06, 0.12)),
         lambda **k: ballctl.plants.ServoParameters(**k)),
        ("RollingBallParameters", dict(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6],
                                       cm_offset_m=[0.0, 0.0, -0.1], gravity_mps2=9.81),
         lambda **k: ballctl.plants.RollingBallParameters(**k)),
        ("PointMass", dict(mass_kg=0.1, rail=CircleRail(radius_m=0.5)), lambda **k: ballctl.PointMass(**k)),
        ("CircleRail", dict(radius_m=0.5, center_m=[0.0, 0.0, 0.0]), lambda **k: CircleRail(**k)),
        ("SegmentRail", dict(start_m=[0.0, 0.0, 0.0], end_m=[0.1, 0.0, 0.0]), lambda **k: SegmentRail(**k)),
        ("CircularMotion", dict(radius=0.5, omega=1.0, roll_rate=40.0, center=(0.0, 0.0), phase=0.0),
         lambda **k: ballctl.CircularMotion(plant, k.pop("radius"), k.pop("omega"), k.pop("roll_rate"), **k)),
        ("Reference.__call__", dict(t=0.5), lambda **k: ref(k["t"])),
        ("LissajousPath.circle", dict(radius=0.5, omega=1.0),
         lambda **k: ballctl.LissajousPath.circle(k["radius"], k["omega"])),
        ("WaypointPath", dict(waypoints=[[0.0, 0.0], [1.0, 0.0]], speed=0.2, ramp_time=1.0),
         lambda **k: ballctl.WaypointPath(k["waypoints"], k["speed"], ramp_time=k["ramp_time"])),
        ("RigLimits", dict(max_angle=0.1, max_rate=1.0, quantum=0.001, delay=0.0), lambda **k: ballctl.RigLimits(**k)),
        ("simulate", dict(x0=s0.x, xd0=s0.xd, inputs=s0.u, t_span=(0.0, 0.01), rtol=1e-8, atol=1e-10,
                          stabilization=(10.0, 10.0), max_step=np.inf),
         lambda **k: ballctl.simulate(plant, k.pop("x0"), k.pop("xd0"), k.pop("inputs"), k.pop("t_span"),
                                      options=ballctl.SimulationOptions(**k))),
        ("rk4", dict(y=np.ones(2), t=0.0, h=0.1, steps=2), lambda **k: rk4(lambda t, y: -y, **k)),
        ("RollingBall.simulate", dict(x0=paper_ball_initial_state(), t_span=(0.0, 0.01), rtol=1e-8, atol=1e-8),
         lambda **k: ball.simulate(k.pop("x0"), k.pop("t_span"), lambda t: np.ones(3), breakpoints=(),
                                   options=ballctl.IntegrationOptions(**k))),
        ("linearize", dict(times=[0.0, 0.1]), lambda **k: ballctl.linearize(plant, ref, k["times"], part)),
        ("linearize_at", dict(x=s0.x, xd=s0.xd, xdd=s0.xdd, u=s0.u),
         lambda **k: ballctl.linear.linearize_at(plant, k["x"], k["xd"], k["xdd"], k["u"], part)),
        ("discretize", dict(dt=0.02), lambda **k: ballctl.discretize(ltv, k["dt"])),
        ("zoh_matrices", dict(A=np.zeros((1, 2, 2)), B=np.ones((1, 2, 1)), dt=0.1), lambda **k: zoh_matrices(**k)),
        ("gramian", dict(t0=0.0, t1=0.1), lambda **k: ballctl.gramian(ltv, k["t0"], k["t1"])),
        ("DiscreteLTVSystem.from_arrays", dict(Ad=A, Bd=B, dt=0.1),
         lambda **k: DiscreteLTVSystem.from_arrays(k["Ad"], k["Bd"], dt=k["dt"])),
        ("discrete_gramian", dict(rank_rtol=1e-8), lambda **k: ballctl.discrete_gramian(dsys, **k)),
        ("finite_horizon_lqr", dict(Q=np.eye(2), R=np.eye(1), Q_N=np.eye(2), cond_limit=1e12),
         lambda **k: ballctl.finite_horizon_lqr(dsys, k.pop("Q"), k.pop("R"), **k)),
        ("periodic_lqr", dict(Q=np.eye(2), R=np.eye(1), tol=1e-12, max_periods=50),
         lambda **k: ballctl.periodic_lqr(DiscreteLTVSystem.from_arrays(0.5 * A, B), k.pop("Q"), k.pop("R"), **k)),
        ("bryson", dict(max_state_errors={"a": 1.0, "b": 1.0}, max_input_errors={"u": 1.0}),
         lambda **k: ballctl.bryson(["a", "b"], ["u"], k["max_state_errors"], k["max_input_errors"])),
        ("Partition.from_coordinates", dict(independent=["contact_x", "contact_y", "yaw"],
                                            admissible_dependent=["lean", "roll"]),
         lambda **k: ballctl.Partition.from_coordinates(plant, k["independent"], k["admissible_dependent"])),
    ]


CALLS = _calls()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=st.data())
def test_bad_values_raise_only_ballctl_errors_and_never_hang(data):
    name, defaults, call = data.draw(st.sampled_from(CALLS), label="call")
    arg = data.draw(st.sampled_from(sorted(defaults)), label="argument")
    bad = data.draw(BAD_ARRAYS if isinstance(defaults[arg], (list, tuple, np.ndarray)) else BAD_SCALARS,
                    label="bad value")
    kwargs = dict(defaults, **{arg: bad})
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(**kwargs)
        except ballctl.BallctlError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}({arg}={bad!r}) raised {type(exc).__name__}: {exc}")
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_BUDGET_S, f"{name}({arg}={bad!r}) took {elapsed:.1f} s"
