"""References by dynamic inversion satisfy the full DAE, and bad requests are refused clearly."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ballctl


def dae_residuals(plant, s):
    """Max |M xdd + D^T lam - Q| scaled by |Q|, and max |D xd|."""
    dyn = 0.0
    vel = 0.0
    for k in range(len(s)):
        r = plant.dynamics_residual(s.x[k], s.xd[k], s.xdd[k], s.lam[k], s.u[k])
        scale = max(np.abs(plant.forces(s.x[k], s.xd[k], s.u[k])).max(), 1e-300)
        dyn = max(dyn, np.abs(r).max() / scale)
        vel = max(vel, np.abs(plant.constraint_jacobian(s.x[k]) @ s.xd[k]).max())
    return dyn, vel


@settings(max_examples=30, deadline=None)
@given(mass=st.floats(0.01, 5.0), radius=st.floats(0.005, 0.1), inertia_factor=st.floats(0.1, 0.7),
       rho=st.floats(0.01, 5.0), fraction=st.floats(0.05, 0.95), speed_margin=st.floats(1.0, 5.0),
       direction=st.sampled_from([-1.0, 1.0]), cx=st.floats(-1, 1), cy=st.floats(-1, 1),
       phase=st.floats(-np.pi, np.pi), seed=st.integers(0, 2 ** 16))
def test_circular_motion_satisfies_the_dae(mass, radius, inertia_factor, rho, fraction, speed_margin,
                                           direction, cx, cy, phase, seed):
    plant = ballctl.BallPlate(mass=mass, radius=radius, inertia=inertia_factor * mass * radius ** 2)
    omega_max = np.sqrt(plant.params.rolling_gain * plant.params.gravity / rho)
    omega = direction * fraction * omega_max
    roll_rate = speed_margin * rho * abs(omega) / radius
    ref = ballctl.CircularMotion(plant, rho, omega,
                                 min(roll_rate, rho * abs(omega) / (radius * np.cos(np.deg2rad(88)))),
                                 center=(cx, cy), phase=phase)
    t = np.random.default_rng(seed).uniform(-50, 50, 8)
    s = ref(t)
    dyn, vel = dae_residuals(plant, s)
    # analytic reference: only rounding remains (1e-10 relative is the standard)
    assert dyn < 1e-10
    assert vel < 1e-10 * max(1.0, rho * abs(omega))
    # the contact point is on the circle and the plate tilt is the constant arcsin(k)
    np.testing.assert_allclose(np.hypot(s.x[:, 0] - cx, s.x[:, 1] - cy), rho, rtol=1e-12)
    tilt = np.arccos(np.cos(s.u[:, 0]) * np.cos(s.u[:, 1]))
    np.testing.assert_allclose(tilt, ref.tilt, atol=1e-9)


def test_appendix_c_plate_functions():
    # f1 = cos(alpha0) and f2 = cos(beta0) as written in appendix C, eqs. (119)-(120)
    plant = ballctl.BallPlate()
    p = plant.params
    rho, w = 0.5, 1.3
    ref = ballctl.CircularMotion(plant, rho, w, 60.0)
    t = np.linspace(0, 5, 17)
    s = ref(t)
    I, m, R, g = p.ball_inertia, p.mass, p.radius, p.gravity
    c = rho ** 2 * w ** 4 * (I + m * R ** 2) ** 2
    f1 = np.sqrt(1 - c / (m ** 2 * g ** 2 * R ** 4) * np.sin(w * t) ** 2)
    f2 = np.sqrt(1 + c / (c * np.sin(w * t) ** 2 - m ** 2 * g ** 2 * R ** 4) * np.cos(w * t) ** 2)
    np.testing.assert_allclose(np.cos(s.u[:, 0]), f1, rtol=1e-13)
    np.testing.assert_allclose(np.cos(s.u[:, 1]), f2, rtol=1e-13)
    # plate rates are the time derivative of the angles (central differences, O(h^2)=1e-10)
    h = 1e-5
    du = (ref(t + h).u - ref(t - h).u) / (2 * h)
    np.testing.assert_allclose(s.ud, du, atol=1e-8)


def test_open_loop_stays_on_the_circle_for_one_revolution():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0, center=(0.2, -0.1))
    s0 = ref(0.0)
    T = ref.period
    t = np.linspace(0, T, 41)
    res = ballctl.simulate(plant, s0.x, s0.xd, lambda tt: ref(tt).u, (0, T), t_eval=t)
    s = ref(t)
    # measured 1e-14 m on the contact point and 1e-11 rad on the roll; bound at rtol-level
    assert np.abs(res.x[:, :2] - s.x[:, :2]).max() < 1e-9
    assert np.abs(res.x[:, 2:] - s.x[:, 2:]).max() < 1e-8


@pytest.mark.parametrize("path", [
    ballctl.LissajousPath.figure_eight(0.3, 0.8),
    ballctl.LissajousPath(amplitude_x=0.3, amplitude_y=0.2, omega_x=0.6, omega_y=0.9, phase_x=0.4),
    ballctl.LissajousPath.ellipse(0.4, 0.2, 0.9, center=(0.1, 0.0), rotation=0.3),
    ballctl.WaypointPath([[0, 0], [0.3, 0.1], [0.5, 0.4], [0.2, 0.6]], speed=0.1, ramp_time=1.0),
])
def test_path_motion_satisfies_the_dae(path):
    plant = ballctl.BallPlate(radius=0.05)
    ref = ballctl.PathMotion(plant, path, duration=2.0, spin=1.0)
    s = ref(np.linspace(0, 2.0, 25))
    dyn, vel = dae_residuals(plant, s)
    assert dyn < 1e-9
    assert vel < 1e-12
    # xd is the time derivative of x (central differences, O(h^2))
    h = 1e-6
    t = np.linspace(0.1, 1.9, 7)
    np.testing.assert_allclose(ref(t).xd, (ref(t + h).x - ref(t - h).x) / (2 * h), atol=1e-6)
    np.testing.assert_allclose(ref(t).xdd, (ref(t + h).xd - ref(t - h).xd) / (2 * h), atol=1e-5)


def test_path_motion_on_a_circle_reproduces_circular_motion():
    plant = ballctl.BallPlate()
    circ = ballctl.CircularMotion(plant, 0.4, -0.9, 30.0, center=(0.1, 0.2), phase=0.3)
    path = ballctl.LissajousPath.circle(0.4, -0.9, center=(0.1, 0.2), phase=0.3)
    pm = ballctl.PathMotion(plant, path, duration=8.0, spin=circ.spin, initial_orientation=circ(0.0).x[2:])
    t = np.linspace(0, 8, 33)
    a, b = pm(t), circ(t)
    # orientation integrated at rtol 1e-12 over 8 s
    np.testing.assert_allclose(a.x, b.x, atol=1e-9)
    np.testing.assert_allclose(a.u, b.u, atol=1e-12)
    np.testing.assert_allclose(a.lam, b.lam, atol=1e-12)


def test_user_path_without_jerk():
    plant = ballctl.BallPlate()

    def path(t):
        t = np.asarray(t)
        p = np.stack([0.2 * np.sin(t), 0.1 * np.sin(t) ** 2], axis=-1)
        v = np.stack([0.2 * np.cos(t), 0.2 * np.sin(t) * np.cos(t)], axis=-1)
        a = np.stack([-0.2 * np.sin(t), 0.2 * np.cos(2 * t)], axis=-1)
        return p, v, a

    ref = ballctl.PathMotion(plant, path, duration=1.0)
    s = ref(np.linspace(0, 1, 5))
    jerk = np.stack([-0.2 * np.cos(s.t), -0.4 * np.sin(2 * s.t)], axis=-1)
    ud_expected = ballctl.references.plate_angles_for_acceleration(plant, s.xdd[:, :2], jerk)[1]
    np.testing.assert_allclose(s.ud, ud_expected, rtol=1e-12)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(radius=0.5, omega=5.0, roll_rate=200.0), ballctl.errors.InfeasibleReferenceError,
     "cannot supply the centripetal acceleration.*need \\|omega\\| < 3.7"),
    (dict(radius=0.5, omega=1.0, roll_rate=10.0), ballctl.errors.InfeasibleReferenceError,
     "roll_rate too low for the speed.*roll_rate >= 25"),
    (dict(radius=0.5, omega=1.0, roll_rate=40.0, max_tilt=np.deg2rad(2.0)), ballctl.errors.InfeasibleReferenceError,
     "plate tilt of 4.0.*above max_tilt = 2 deg"),
    (dict(radius=0.5, omega=1.0, roll_rate=5000.0), ballctl.errors.ChartSingularityError, "singularity"),
    (dict(radius=-0.5, omega=1.0, roll_rate=40.0), ValueError, "radius must be > 0 m"),
    (dict(radius=0.5, omega=0.0, roll_rate=40.0), ValueError, "omega must be non-zero"),
    (dict(radius=0.5, omega=1.0, roll_rate=40.0, center=(0, 0, 0)), ValueError, "center must have length 2"),
])
def test_infeasible_circles_are_refused(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ballctl.CircularMotion(ballctl.BallPlate(), **kwargs)


def test_infeasible_paths_and_chart_edge_are_refused():
    plant = ballctl.BallPlate()
    with pytest.raises(ballctl.errors.InfeasibleReferenceError, match="at t=.*k_b\\*g"):
        ballctl.PathMotion(plant, ballctl.LissajousPath.figure_eight(0.5, 6.0), duration=2.0)
    with pytest.raises(ballctl.errors.ChartSingularityError, match="lean reaches 89 deg at t = "):
        # heading across the initial velocity: the ball must lean over at once
        ballctl.PathMotion(plant, ballctl.LissajousPath.figure_eight(0.3, 0.8), duration=30.0,
                           initial_orientation=(3 * np.pi / 4, 0.0, 0.0))
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    pm = ballctl.PathMotion(plant, ballctl.LissajousPath.circle(0.5, 1.0), duration=1.0)
    with pytest.raises(ValueError, match="must lie in the reference's interval"):
        pm(2.0)
    assert ref(np.array([1e6])).x.shape == (1, 5)


def test_batch_rule_one_time_is_one_state_an_array_of_times_is_a_stack():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    one, stack = ref(0.3), ref(np.array([0.0, 0.3]))
    assert one.t.shape == () and one.x.shape == (5,) and one.u.shape == (2,) and one.lam.shape == (2,)
    assert not one.is_batch and stack.is_batch and len(stack) == 2
    assert ref([0.3]).x.shape == (1, 5) and stack.x.shape == (2, 5)
    np.testing.assert_array_equal(one.x, stack.x[1])
    np.testing.assert_array_equal(stack.at(-1).xd, one.xd)
    with pytest.raises(TypeError, match="no length"):
        len(one)
    # the path constructors are classmethods of LissajousPath
    circle = ballctl.LissajousPath.circle(0.5, 1.0, center=(0.1, 0.0))
    assert isinstance(circle, ballctl.LissajousPath) and circle.period == pytest.approx(2 * np.pi)
    assert not hasattr(ballctl, "CirclePath")
