"""Output feedback: the LTV Kalman filter in the sampled loop (sensor rate, latency, noise, bias), observability."""

import numpy as np
import pytest

import ballctl
from ballctl.design.estimator import design_estimator, measurement_matrices
from ballctl.design.observability import observability_gramian, sensor_table
from ballctl.linear.discretize import DiscreteLTVSystem
from ballctl.ball_plate.rig import Sensor
from ballctl.ball_plate.design import QS_STATE_ERRORS

DT = 0.02


@pytest.fixture(scope="module")
def qs():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    contact = [n for n in part.state_names if n.startswith("contact")]
    weights = ballctl.LQRWeights(states=contact, max_state_errors={k: QS_STATE_ERRORS[k] for k in contact},
                                 max_input_errors={'alpha': 0.05, 'beta': 0.05})
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=DT, horizon=3.0, weights=weights)
    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.02
    return plant, ref, part, ctrl, x0, s0.xd


def _with_sensor(ctrl, **kw):
    from dataclasses import replace

    sensor = Sensor(name="camera", signals=("contact_x", "contact_y"), **kw)
    est = design_estimator(ctrl.ltv, ctrl.discrete, ctrl.system.coordinate_names, [sensor])
    return replace(ctrl, estimator=est)


@pytest.mark.parametrize("latency", [0.0, 0.03, 0.06])
def test_latency_is_compensated_exactly_on_the_design_model(qs, latency):
    # On the design's own linear model (model="linear") with noiseless samples every other step, the filter's
    # prediction through the inputs already sent is exact: the estimate and the tracking converge to zero
    # for any latency, also 1.5 samples (0.03 s). Without the prediction a 3-sample-old estimate is off by
    # about 3 dt times the contact speed.
    plant, ref, part, ctrl, x0, xd0 = qs
    c = _with_sensor(ctrl, period_s=2 * DT, latency_s=latency)
    assert c.estimator.latency_steps == int(np.ceil(latency / DT - 1e-9))
    r = ballctl.simulate_closed_loop(c, x0, xd0, options=ballctl.ClosedLoopOptions(model="linear"))
    assert r.feedback == "output"
    tail = r.t > 2.0
    assert np.abs(r.estimation_error[tail]).max() < 1e-5
    assert r.position_error[tail].max() < 1e-4
    # the sensor runs at its own rate: every other control step has no sample
    assert np.all(np.isnan(r.y[1::2])) and np.all(np.isfinite(r.y[0:-1:2]))


def test_output_feedback_on_the_nonlinear_plant_with_noise_and_bias(qs):
    plant, ref, part, ctrl, x0, xd0 = qs
    noisy = _with_sensor(ctrl, period_s=DT, latency_s=0.03, noise_std=(1e-3, 1e-3))
    r = ballctl.simulate_closed_loop(noisy, x0, xd0, seed=4, options=ballctl.ClosedLoopOptions(method="rk4",
                                                                                               substeps=2))
    sm = r.summary()
    # the filter averages: its contact-point error is below the 1 mm (per axis) sensor noise
    assert sm.estimator_rms_error_m < np.sqrt(2) * 1e-3
    assert sm.steady_state_error_m < 2e-3
    again = ballctl.simulate_closed_loop(noisy, x0, xd0, seed=4, options=ballctl.ClosedLoopOptions(method="rk4",
                                                                                                   substeps=2))
    np.testing.assert_array_equal(r.x, again.x)  # seeded
    # a bias the filter does not know moves the ball by minus the bias: the loop regulates the measurement
    bias = 3e-3
    biased = _with_sensor(ctrl, period_s=DT, latency_s=0.0, bias=(bias, 0.0))
    rb = ballctl.simulate_closed_loop(biased, x0, xd0, options=ballctl.ClosedLoopOptions(method="rk4", substeps=2))
    offset = (rb.x[:, 0] - rb.x_ref[:, 0])[rb.t > 2.0]
    assert np.mean(offset) == pytest.approx(-bias, rel=0.1)


def test_state_feedback_and_output_feedback_are_distinguished(qs):
    plant, ref, part, ctrl, x0, xd0 = qs
    with pytest.raises(ballctl.ParameterError, match="needs a controller designed with sensors"):
        ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(feedback="output"))
    c = _with_sensor(ctrl, period_s=DT)
    with pytest.raises(ballctl.ParameterError, match="noise_std is for state feedback"):
        ballctl.simulate_closed_loop(c, x0, xd0, options=ballctl.ClosedLoopOptions(noise_std={"contact_x": 1e-3}))
    r = ballctl.simulate_closed_loop(c, x0, xd0, duration=0.2, options=ballctl.ClosedLoopOptions(feedback="state",
                                                                                                 method="rk4"))
    assert r.feedback == "state" and np.array_equal(r.X_measured, r.X)


def test_yaw_is_not_observable_from_the_contact_point_on_the_quasi_static_model(qs):
    # the quasi-static contact acceleration depends on the plate angles only: yaw and its rate never reach a
    # contact-point sensor (rank 4 of 6); the 4-state contact model is fully observable
    plant, ref, part, ctrl, x0, xd0 = qs
    six = part.state_names[:6]
    c6 = ballctl.design_tracking_lqr(plant, ref, part, dt=DT, horizon=1.0,
                                     weights=ballctl.LQRWeights(states=six, max_state_errors=QS_STATE_ERRORS,
                                                                max_input_errors={"alpha": 0.05, "beta": 0.05}),
                                     options=ballctl.design.TrackingOptions(feedforward="sample"))
    C = measurement_matrices(c6.ltv, plant.coordinate_names, ("contact_x", "contact_y"))
    rep = observability_gramian(c6.discrete, C)
    assert rep.rank == 4 and not rep.observable
    assert set(rep.unseen_states) == {"yaw", "yaw_rate"}
    rows, table = sensor_table({"qs-paper": (c6.ltv, c6.discrete, plant.coordinate_names),
                                "qs-contact": (ctrl.ltv, ctrl.discrete, plant.coordinate_names)},
                               {"contact point": ("contact_x", "contact_y"), "plate angles": ("alpha", "beta")})
    assert [r.report.rank for r in rows] == [4, 4]
    assert "not applicable" in table and "| qs-contact | contact point | 4 of 4 |" in table


def test_observability_gramian_is_the_dual_of_controllability():
    # W_o(A, C) equals the reachability Gramian of the transposed, time-reversed system, written out directly
    rng = np.random.default_rng(0)
    K, n = 20, 3
    A = np.eye(n) + 0.2 * rng.normal(size=(K, n, n))
    C = rng.normal(size=(K, 1, n))
    W = np.zeros((n, n))
    Phi = np.eye(n)
    for k in range(K):
        W += Phi.T @ C[k].T @ C[k] @ Phi
        Phi = A[k] @ Phi
    sys_ = DiscreteLTVSystem.from_arrays(A, np.zeros((K, n, 1)))
    np.testing.assert_allclose(observability_gramian(sys_, C).W, W, rtol=1e-12, atol=1e-12)


def _gramian(eps: float, share: float, seen_share: float = 0.09) -> np.ndarray:
    """A scaled Gramian (unit diagonal) of two design states and one disturbance: the design states' combinations
    ``(1, 1)/sqrt(2)`` and ``(1, -1)/sqrt(2)`` have information ``2 - eps`` and ``eps``; the disturbance's output
    shares ``seen_share`` of its energy with the first and ``share`` with the second (``share * eps`` squared
    correlation), so that ``S = 1 - seen_share - share`` when both count."""
    c = 1.0 - eps
    u, v = np.array([1.0, 1.0]) / np.sqrt(2), np.array([1.0, -1.0]) / np.sqrt(2)
    wxd = np.sqrt(seen_share * (1 + c)) * u + np.sqrt(share * eps) * v
    W = np.eye(3)
    W[0, 1] = W[1, 0] = c
    W[:2, 2] = W[2, :2] = wxd
    return W


def test_disturbance_information_drops_the_design_directions_below_the_rank_tolerance():
    """The Schur complement's pseudo-inverse keeps only the directions the rank test counts (RANK_RTOL of the
    largest eigenvalue): one at 5e-9 relative (rounding, like the 6.8e-9 of the ``track --duration 4`` design)
    multiplied by 1/eps flipped the sign under the former pinv(rcond=1e-10); one at 1e-6 is a weak but real
    direction and still explains its share of the disturbance."""
    from ballctl.design.controllability import RANK_RTOL
    from ballctl.design.estimator import _disturbance_information

    rounding = _gramian(eps=5e-9, share=1.0)            # as computed: not PSD by 5e-10 (its rounding)
    assert np.linalg.eigvalsh(rounding)[0] < 0 and 5e-9 < RANK_RTOL * np.linalg.eigvalsh(rounding)[-1]
    assert _disturbance_information(rounding, 2) == pytest.approx(0.91, rel=1e-6)
    # a change of units leaves it alone (the Gramian is Jacobi-scaled first)
    units = np.array([1e-3, 1e4, 1e2])
    assert _disturbance_information(units[:, None] * rounding * units[None, :], 2) == pytest.approx(0.91, rel=1e-6)
    # a weak real direction (1e-6 > RANK_RTOL * 2) is used: it explains half of the disturbance
    assert _disturbance_information(_gramian(eps=1e-6, share=0.5), 2) == pytest.approx(0.41, rel=1e-6)
    # a disturbance whose output is a design state's is still unobservable
    same = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    assert _disturbance_information(same, 2) == 0.0
    # and one without output energy at all
    assert _disturbance_information(np.diag([1.0, 2.0, 0.0]), 2) == 0.0


def test_the_offset_free_design_of_track_duration_4_sees_its_disturbances():
    """``ballctl track --duration 4`` (tabletop, exact design, offset-free): the level-error disturbances were
    reported unobservable (scaled information 0 after a sign flip of the Schur complement); computed in extended
    precision from the observability matrix it is 0.0048, and 0.0042 / 0.0061 at 3.5 s / 4.5 s."""
    from ballctl.ball_plate.design import design_for_rig
    from ballctl.design.estimator import DISTURBANCE_OBSERVABILITY_RTOL, _disturbance_information
    from ballctl.references.moving_plate import exact_circular_motion

    rig = ballctl.rig_preset("tabletop")
    ref = exact_circular_motion(rig.design_plant(), ballctl.LissajousPath.circle(0.5, 1.0), 40.0,
                                duration=4.0 + 2 * rig.dt)
    est = design_for_rig(rig, ref, "exact", horizon=4.0, offset_free=True).estimator
    W = est.disturbance_observability.W
    info = _disturbance_information(W, W.shape[0] - est.n_disturbances)
    assert est.n_disturbances == 2 and info > 1e4 * DISTURBANCE_OBSERVABILITY_RTOL
    assert info == pytest.approx(0.0048, rel=0.15)
