"""Dynamic inversion on the exact moving-plate model: residuals, physics and the design chain."""

import numpy as np
import pytest

import ballctl
from ballctl.plants.ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters, ServoPlateBallPlate
from ballctl.references.moving_plate import (CollocationOptions, MovingPlateMotion, _Fourier, exact_circular_motion,
                                             spectral_derivative_matrices)
from ballctl.references.paths import LissajousPath, WaypointPath


@pytest.fixture(scope="module")
def centred():
    plant = MovingPlateBallPlate()
    return plant, exact_circular_motion(plant, LissajousPath.circle(0.1, 2.0), 20.0)


def test_spectral_matrices_differentiate_trigonometric_polynomials():
    T = 2.0
    t = T * np.arange(16) / 16
    f = np.sin(2 * np.pi * 3 * t / T) + 0.5 * np.cos(2 * np.pi * t / T)
    D1, D2 = spectral_derivative_matrices(16, T)
    w = 2 * np.pi / T
    np.testing.assert_allclose(D1 @ f, 3 * w * np.cos(3 * w * t) - 0.5 * w * np.sin(w * t), atol=1e-12)
    np.testing.assert_allclose(D2 @ f, -9 * w ** 2 * np.sin(3 * w * t) - 0.5 * w ** 2 * np.cos(w * t), atol=1e-11)


def test_centred_circle_residuals_and_exact_angles_keep_the_ball_on_the_circle(centred):
    plant, ref = centred
    # the DAE (contact accelerations from the plant's own KKT solve) holds to rounding: 1e-10 m/s^2
    # is ~1e-10 of the 0.4 m/s^2 centripetal acceleration
    assert ref.residuals["contact_acceleration"] < 1e-10
    assert ref.residuals["spin"] < 1e-10
    assert abs(ref.spin_drift) < 1e-12          # a centred circle is a relative equilibrium
    # the exact angles differ from the quasi-static ones by a few percent of their amplitude
    assert 0.01 < ref.quasi_static_difference["alpha_relative"] < 0.2
    T = ref.period
    t = np.linspace(0.0, T, 41)
    s0 = ref(0.0)
    r = ballctl.simulate(plant, s0.x, s0.xd, lambda tt: ref._angles(np.array([tt]), 2)[0], (0.0, T), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12))
    err = np.hypot(*(r.x[:, :2] - ref(t).x[:, :2]).T)
    # open loop for a revolution of an unstable motion: integration error ~1e-9 m, grown by the
    # hyperbolic contact dynamics, stays far below a micrometre
    assert err.max() < 1e-6
    # the quasi-static angles (with their exact rates) push the ball off by percents of the radius
    grid = T * np.arange(64) / 64
    qs = _Fourier(ref.quasi_static_angles(grid), 0.0, T)
    x0, xd0 = s0.x.copy(), s0.xd.copy()
    x0[5:], xd0[5:] = qs(np.array([0.0]))[0], qs(np.array([0.0]), 1)[0]
    r_qs = ballctl.simulate(plant, x0, xd0, lambda tt: qs(np.array([tt]), 2)[0], (0.0, T), t_eval=t,
                            options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12))
    err_qs = np.hypot(*(r_qs.x[:, :2] - ref(t).x[:, :2]).T)
    assert err_qs.max() > 0.03 * 0.1


def test_difference_from_quasi_static_grows_with_the_square_of_the_speed():
    plant = MovingPlateBallPlate()
    rel = [exact_circular_motion(plant, LissajousPath.circle(0.1, w),
                                 0.1 * w / (0.02 * 0.6)).quasi_static_difference["alpha_rad"]
           for w in (0.5, 1.0)]
    amp = [np.arcsin(0.1 * w ** 2 / plant.params.ball.rolling_gain / 9.81) for w in (0.5, 1.0)]
    # the plate rates scale like omega * tilt and the tilt like omega^2: the relative difference
    # (difference / tilt) grows like omega^2, a factor 4 here (+-25 % for the next-order terms)
    ratio = (rel[1] / amp[1]) / (rel[0] / amp[0])
    assert 3.0 < ratio < 5.0


def test_off_centre_circle_and_its_spin_drift():
    plant = MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.03))
    ref = exact_circular_motion(plant, LissajousPath.circle(0.1, 3.0, center=(0.2, 0.1)), 40.0)
    assert ref.residuals["contact_acceleration"] < 1e-10
    # off-centre the turning plate changes the ball's spin secularly: the only residual left. It is a
    # property of the motion, not of the discretization: twice the collocation points give the same drift
    # to 1e-8 (measured 1.5e-14 relative; spectral convergence), and its size is 8.66e-4 rad/s^2 (measured)
    finer = exact_circular_motion(plant, LissajousPath.circle(0.1, 3.0, center=(0.2, 0.1)), 40.0,
                                  collocation=CollocationOptions(n_collocation=128))
    assert finer.spin_drift == pytest.approx(ref.spin_drift, rel=1e-8)
    assert 5e-4 < abs(ref.spin_drift) < 2e-3
    assert ref.residuals["spin"] == pytest.approx(abs(ref.spin_drift), rel=1e-6)


def test_servo_reference_commands_reproduce_the_motion_and_feed_the_design_chain():
    servo = ServoPlateBallPlate()
    ref = exact_circular_motion(servo, LissajousPath.circle(0.5, 1.0), 40.0, duration=1.2)
    presc = exact_circular_motion(MovingPlateBallPlate(), LissajousPath.circle(0.5, 1.0), 40.0, duration=1.2)
    t = np.linspace(0.0, 1.0, 6)
    s, p = ref(t), presc(t)
    # the servo plant driven by the commands has the prescribed plant's accelerations (1e-9: the
    # commands come from an interpolant of the collocation solution)
    np.testing.assert_allclose(s.xdd, p.xdd, rtol=0, atol=1e-9)
    assert np.abs(s.u - s.x[:, 5:]).max() > 1e-5            # commands lead the angles (servo lag)
    assert ballctl.check_system(servo, s.x[2], s.xd[2], s.u[2]) == []
    part = ballctl.Partition.from_coordinates(servo, ["contact_x", "contact_y", "yaw", "alpha", "beta"],
                                              ["lean", "roll"])
    errors = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, alpha=0.05, beta=0.05, contact_x_rate=0.1,
                  contact_y_rate=0.1, yaw_rate=5.0, alpha_rate=1.0, beta_rate=1.0, lean=1.0, roll=1e3)
    ctrl = ballctl.design_tracking_lqr(servo, ref, part, dt=0.02, horizon=1.0,
                                       weights=ballctl.LQRWeights(max_state_errors=errors,
                                                                  max_input_errors={"alpha_cmd": 0.05,
                                                                                    "beta_cmd": 0.05}))
    assert ctrl.lqr.gains.shape == (50, 2, 12)
    assert np.all(np.isfinite(ctrl.lqr.gains))


def test_bad_requests():
    plant = MovingPlateBallPlate()
    # a non-periodic path is solved on [t0, t0 + duration], which must lie where the path is defined
    with pytest.raises(ValueError, match=r"t must lie in \[0, 3\] s"):
        MovingPlateMotion(plant, WaypointPath([[0, 0], [0.1, 0]], 0.05), spin=0.0, duration=5.0)
    with pytest.raises(ValueError, match="without plate spin"):
        MovingPlateMotion(MovingPlateBallPlate(MovingPlateParameters(with_spin=True)), LissajousPath.circle(0.1, 1.0),
                          spin=0.0, duration=1.0)
    with pytest.raises(ValueError, match="n_collocation must be an even integer"):
        MovingPlateMotion(plant, LissajousPath.circle(0.1, 1.0), spin=0.0, duration=1.0,
                          collocation=CollocationOptions(n_collocation=33))
    with pytest.raises(TypeError, match="MovingPlateBallPlate or ServoPlateBallPlate"):
        MovingPlateMotion(ballctl.BallPlate(), LissajousPath.circle(0.1, 1.0), spin=0.0, duration=1.0)


def _rest_to_rest(T=4.0, d=(0.3, 0.15)):
    """A C-infinity move from rest to rest: p = d (t - sin(w t)/w)/T, w = 2 pi / T."""
    d = np.asarray(d)
    w = 2 * np.pi / T

    def path(t):
        t = np.atleast_1d(np.asarray(t))
        s = (t - np.sin(w * t) / w) / T
        sd = (1 - np.cos(w * t)) / T
        sdd = w * np.sin(w * t) / T
        sddd = w * w * np.cos(w * t) / T
        return s[:, None] * d, sd[:, None] * d, sdd[:, None] * d, sddd[:, None] * d
    return path


@pytest.mark.slow
def test_non_periodic_path_inversion_converges_spectrally_and_starts_level():
    from ballctl.plants.ball_plate_moving import MovingPlateParameters
    from ballctl.references.moving_plate import MovingPlateMotion

    plant = ballctl.MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.02))
    path = _rest_to_rest()
    coarse = MovingPlateMotion(plant, path, spin=0.0, duration=4.0, collocation=CollocationOptions(n_collocation=16))
    fine = MovingPlateMotion(plant, path, spin=0.0, duration=4.0, collocation=CollocationOptions(n_collocation=48))
    # spectral convergence: 1e-5 -> below 1e-11 m/s^2 between nodes (measured 4e-13)
    assert coarse.residuals["contact_acceleration"] > 1e-7
    assert fine.residuals["contact_acceleration"] < 1e-11
    assert fine.residuals["spin"] < 1e-11
    s = fine(np.array([0.0, 4.0]))
    np.testing.assert_allclose(s.x[:, 5:], 0.0, atol=1e-14)   # level plate at rest at both ends
    np.testing.assert_allclose(s.x[:, :2], path(np.array([0.0, 4.0]))[0], atol=1e-15)
    # the prescribed plate accelerations drive the exact plant along the path (open loop, 4 s)
    t = np.linspace(0, 4.0, 41)
    run = ballctl.simulate(plant, s.x[0], s.xd[0], lambda tt: fine(tt).u, (0, 4.0), t_eval=t,
                           options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
    assert np.abs(run.x[:, :2] - path(t)[0]).max() < 1e-6
