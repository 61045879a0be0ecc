"""The three defects of issue 11, with tests that catch them: ZOH feedforward, tilt limit, strict JSON."""

import json

import numpy as np
import pytest

import ballctl

MAX_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                        yaw_rate=5.0)


@pytest.fixture(scope="module")
def paper():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    return plant, ref, part


def _design(paper, dt, horizon, feedforward):
    plant, ref, part = paper
    return ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=horizon,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": np.deg2rad(3),
                                                                                    "beta": np.deg2rad(3)}),
                                       options=ballctl.design.TrackingOptions(feedforward=feedforward))


@pytest.mark.parametrize("dt", [0.01, 0.02])
def test_loop_started_on_the_reference_stays_on_it(paper, dt):
    # The sampled reference is an exact ZOH solution (RK4, 4 substeps); the truth here is integrated
    # independently (DOP853, rtol 1e-10): the loop stays on it to integration accuracy, <= 1e-8 m.
    plant, ref, part = paper
    ctrl = _design(paper, dt, 1.0, "zoh")
    s0 = ref(0.0)
    r = ballctl.simulate_closed_loop(ctrl, s0.x, s0.xd, options=ballctl.ClosedLoopOptions(rtol=1e-10, atol=1e-13))
    assert r.position_error.max() <= 1e-8
    # the sampled reference is the continuous one to O(dt^2) (1.4e-6 m at 10 ms, 5.8e-6 m at 20 ms)
    assert ctrl.zoh_deviation < 1e-5
    assert ctrl.feedforward == "zoh"


def test_sampled_feedforward_lags_by_half_a_step(paper):
    # the defect the "zoh" feedforward fixes: holding u0(t_k) leaves an offset proportional to dt
    plant, ref, part = paper
    ctrl = _design(paper, 0.02, 2.0, "sample")
    s0 = ref(0.0)
    r = ballctl.simulate_closed_loop(ctrl, s0.x, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4", substeps=4))
    assert r.position_error[-1] > 1e-4


def test_tilt_limit_holds_from_the_first_step():
    # a fast circle whose reference tilt (about 25 deg) is above the rig's 15 deg limit
    plant = ballctl.BallPlate()
    p = plant.params
    rho = 0.1
    omega = 0.65 * np.sqrt(p.rolling_gain * p.gravity / rho)
    ref = ballctl.CircularMotion(plant, rho, omega, 2 * rho * omega / p.radius)
    assert np.rad2deg(ref.tilt) > 20
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=0.4,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": 0.05, "beta": 0.05}),
                                       options=ballctl.design.TrackingOptions(feedforward="sample"))
    s0 = ref(0.0)
    limit = np.deg2rad(15.0)
    for delay in (0.0, 0.03):
        limits = ballctl.RigLimits(max_angle=limit, max_rate=np.deg2rad(300), delay=delay)
        r = ballctl.simulate_closed_loop(ctrl, s0.x, s0.xd,
                                         options=ballctl.ClosedLoopOptions(method="rk4", substeps=2, limits=limits))
        assert np.abs(r.u).max() <= limit * (1 + 1e-12)
        assert np.abs(r.u[0]).max() <= limit * (1 + 1e-12)
        assert r.limit_events["max_angle"] > 0


def test_summary_is_strict_json(paper):
    plant, ref, part = paper
    ctrl = _design(paper, 0.02, 0.4, "sample")
    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.05
    # open loop never settles: the settling time is None, not Infinity
    sm = ballctl.simulate_closed_loop(ctrl, x0, s0.xd, options=ballctl.ClosedLoopOptions(feedback="open", method="rk4",
                                                                                         substeps=2)).summary()
    assert sm.settling_time_s is None

    def reject(token):
        raise ValueError(f"non-strict JSON constant {token}")

    text = json.dumps(sm.as_dict(), allow_nan=False)
    back = json.loads(text, parse_constant=reject)
    assert back["settling_time_s"] is None and back["final_error_m"] > 0.01


def test_to_time_response_is_signal_major(paper):
    import control

    plant, ref, part = paper
    ctrl = _design(paper, 0.02, 0.2, "sample")
    s0 = ref(0.0)
    r = ballctl.simulate_closed_loop(ctrl, s0.x, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4"))
    tr = r.to_time_response()
    assert isinstance(tr, control.TimeResponseData)
    np.testing.assert_array_equal(tr.outputs, r.x.T)
    np.testing.assert_array_equal(tr.inputs, r.u.T)
    assert tr.output_labels[0] == "contact_x"


def test_periodic_terminal_refuses_a_user_Q_N(paper):
    plant, ref, part = paper
    with pytest.raises(ValueError, match="Q_N must not be given with terminal='periodic'"):
        ballctl.design_tracking_lqr(plant, ref, part, dt=ref.period / 100, horizon=ref.period,
                                    weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6), R=np.eye(2),
                                                               Q_N=np.eye(6), terminal="periodic"))
