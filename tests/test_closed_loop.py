"""Closed-loop tracking: the paper's study (sec. 4) on the nonlinear plant, and rig effects."""

from dataclasses import replace

import numpy as np
import pytest

import ballctl

MAX_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                        yaw_rate=5.0)
# the compiled loop: RK4 with 4 substeps agrees with the adaptive integration to 1e-7 m (checked below in
# test_fixed_step_rk4_agrees_with_adaptive_integration), far below the mm-level claims of these tests
FAST = ballctl.ClosedLoopOptions(method="rk4", substeps=4)


@pytest.fixture(scope="module")
def setup():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])

    def design(scale=1.0, dt=0.02, horizon=4.0, input_deg=3.0, terminal=1.0):
        return ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=horizon,
                                           weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                      max_state_errors={k: v / np.sqrt(scale) for k,
                                                                                        v in MAX_STATE_ERRORS.items()},
                                                                      max_input_errors={"alpha": np.deg2rad(input_deg),
                                                                                        "beta": np.deg2rad(input_deg)},
                                                                      terminal_factor=terminal))

    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.05  # outside the circle, as in the paper
    return plant, ref, part, design, x0, s0.xd


def test_closed_loop_converges_open_loop_does_not_and_L_matches_NL(setup):
    plant, ref, part, design, x0, xd0 = setup
    ctrl = design()
    nl = ballctl.simulate_closed_loop(ctrl, x0, xd0)  # adaptive: the constraints hold to 1e-10
    lin = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(model="linear"))
    ol = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=replace(FAST, feedback="open"))
    s_nl, s_ol = nl.summary(), ol.summary()
    # closed loop: from 5 cm to below 0.5 mm; open loop stays centimetres away
    assert s_nl.final_error_m < 5e-4 and s_nl.settling_time_s < 2.0
    assert s_ol.final_error_m > 1e-2
    # linear and nonlinear closed loops agree to a small fraction of the initial 5 cm offset
    assert np.abs(nl.position_error - lin.position_error).max() < 0.1 * 0.05
    assert np.abs(nl.u - lin.u).max() < np.deg2rad(1.0)
    # the nonholonomic constraints hold along the nonlinear closed loop
    assert s_nl.max_constraint_residual < 1e-10


def test_heavier_weights_lower_the_peak_plate_angles(setup):
    # eq. (84): Q' = 100 Q, Q_N' = 100 Q', R' = 1e4 R; with Bryson limits that is
    # state limits / 10, input limits / 100, terminal factor 100
    plant, ref, part, design, x0, xd0 = setup
    base = ballctl.simulate_closed_loop(design(), x0, xd0, options=FAST).summary()
    heavy = ballctl.simulate_closed_loop(design(scale=100.0, input_deg=0.03, terminal=100.0), x0, xd0,
                                         options=FAST).summary()
    assert heavy.peak_input_rad["beta"] < base.peak_input_rad["beta"]
    assert heavy.final_error_m < 2e-3


def test_measurement_noise_is_rejected(setup):
    plant, ref, part, design, x0, xd0 = setup
    ctrl = design()
    noisy = ballctl.simulate_closed_loop(ctrl, x0, xd0, seed=3, options=replace(FAST, noise_std={"contact_x": 1e-3,
                                                                                                 "contact_y": 1e-3}))
    s = noisy.summary()
    # 1 mm noise on the measured position: the ball stays within a few mm of the circle
    assert s.steady_state_error_m < 5e-3
    assert np.std(noisy.X_measured[:, 0] - noisy.X[:, 0]) == pytest.approx(1e-3, rel=0.3)
    again = ballctl.simulate_closed_loop(ctrl, x0, xd0, seed=3, options=replace(FAST, noise_std={"contact_x": 1e-3,
                                                                                                 "contact_y": 1e-3}))
    np.testing.assert_array_equal(noisy.x, again.x)  # seeded


def test_rig_limits_are_applied_and_reported(setup):
    plant, ref, part, design, x0, xd0 = setup
    ctrl = design()
    limits = ballctl.RigLimits(max_angle=np.deg2rad(8), max_rate=np.deg2rad(300), quantum=np.deg2rad(0.1),
                               delay=0.03)
    r = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=replace(FAST, limits=limits))
    assert np.abs(r.u).max() <= np.deg2rad(8) + 1e-15
    assert np.abs(np.diff(r.u, axis=0)).max() <= np.deg2rad(300) * ctrl.dt + 1e-12
    assert r.limit_events["max_angle"] > 0 and r.limit_events["delay_s"] == 0.03
    assert "quantum" in r.limit_events
    # still converges with 30 ms delay, 8 deg tilt and 300 deg/s slew
    assert r.summary().final_error_m < 2e-3


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_angle=-1.0), "max_angle must be > 0"),
    (dict(delay=-0.01), "delay must be >= 0"),
])
def test_bad_rig_limits(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ballctl.RigLimits(**kwargs)


def test_bad_closed_loop_requests(setup):
    plant, ref, part, design, x0, xd0 = setup
    ctrl = design(horizon=1.0)
    with pytest.raises(ValueError, match="exceeds the controller's horizon"):
        ballctl.simulate_closed_loop(ctrl, x0, xd0, duration=5.0)
    with pytest.raises(ValueError, match="noise_std: unknown coordinate 'pitch'"):
        ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(noise_std={"pitch": 0.1}))
    with pytest.raises(ValueError, match="horizon must be a whole number of steps"):
        design(horizon=1.003)


def test_periodic_terminal_weight_gives_periodic_gains(setup):
    # with the periodic Riccati solution as terminal weight, the finite-horizon gains are periodic:
    # the gains one period apart agree (to the periodic solution's convergence tolerance)
    plant, ref, part, design, x0, xd0 = setup
    dt = ref.period / 100
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=2 * ref.period,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": 0.05, "beta": 0.05},
                                                                  terminal="periodic"))
    g = ctrl.lqr.gains
    np.testing.assert_allclose(g[:100], g[100:], rtol=1e-8, atol=1e-10 * np.abs(g).max())
    r = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=FAST)
    assert r.summary().final_error_m < 1e-3
    with pytest.raises(ValueError, match="whole number of steps per period"):
        ballctl.design_tracking_lqr(plant, ref, part, dt=0.01, horizon=1.0,
                                    weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6), R=np.eye(2),
                                                               terminal="periodic"))


def test_fixed_step_rk4_agrees_with_adaptive_integration(setup):
    # between samples the input is constant, so the contact point moves with constant acceleration
    # (exact for RK4); the orientation (roll rate 40 rad/s, h = 20 ms / 4) to ~(h Omega)^4, and the
    # yaw differences feed back into the commands: contact points agree to the adaptive rtol (1e-9)
    # times the loop gain
    plant, ref, part, design, x0, xd0 = setup
    ctrl = design(horizon=1.0)
    a = ballctl.simulate_closed_loop(ctrl, x0, xd0)
    b = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(method="rk4", substeps=4))
    assert np.abs(a.x[:, :2] - b.x[:, :2]).max() < 1e-7
    assert np.abs(a.x[:, 2:] - b.x[:, 2:]).max() < 1e-4
