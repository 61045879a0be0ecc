"""Imperfect rigs: the truth's imperfections and uncertainty, offset-free designs, robust verification.

Oracles: the Python reference loop of simulate_closed_loop for the compiled one (the same draws of lost
frames and jitter, the same dead band); the discrete LTV model itself for the offset-free estimator (an
exact linear plant with a constant input disturbance, where the tracking error must vanish); the plain
LQG on the same truth for what the disturbance states and integrators buy.
"""

from dataclasses import replace

import numpy as np
import pytest

from ballctl.simulation.arrays import imperfection_draws
from ballctl.simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
from ballctl.simulation.loop_step import backlash, kalman_predict, kalman_update
from ballctl.references.moving_plate import exact_circular_motion
from ballctl.references.paths import LissajousPath
from ballctl.ball_plate.rig import Imperfections, RigProfile, RigProfileError, RigUncertainty, rig_preset
from ballctl.hardware import LoopImperfections
from ballctl.ball_plate.design import design_for_rig
from ballctl.ball_plate.verification import VerificationSettings, verify_over_uncertainty

DEG = np.pi / 180
TABLETOP = rig_preset("tabletop")
HORIZON = 2 * np.pi + 0.02 * 3  # one period of the 1 rad/s circle, and a few steps


@pytest.fixture(scope="module")
def circle():
    exact = exact_circular_motion(TABLETOP.design_plant(), LissajousPath.circle(0.5, 1.0), 40.0,
                                  duration=3.1 * 2 * np.pi)
    s = exact(0.0)
    x0, xd0 = s.x.copy(), s.xd.copy()
    x0[0] += 0.02
    return exact, x0, xd0


def _horizon(periods: float) -> float:
    return TABLETOP.dt * int(round(periods * 2 * np.pi / TABLETOP.dt))


# ------------------------------------------------------------------ the rig description
def test_imperfections_and_uncertainty_tables_read_in_degrees_and_refuse_typos(tmp_path):
    f = tmp_path / "rig.toml"
    f.write_text('base = "tabletop"\nfriction_coefficient = 0.4\n'
                 '[imperfections]\nplate_offset_deg = [1.0, -0.7]\nrolling_resistance = 0.003\nframe_drop = 0.02\n'
                 'servo_deadband_deg = 0.2\ntiming_jitter_s = 0.001\n'
                 '[uncertainty]\nmass_rel = 0.1\nplate_offset_deg = 0.5\nrolling_resistance = [0.001, 0.002]\n')
    rig = RigProfile.from_toml(f)
    imp = rig.imperfections
    assert imp.plate_offset == pytest.approx((1.0 * DEG, -0.7 * DEG), rel=1e-15)
    assert (imp.rolling_resistance, imp.frame_drop, imp.timing_jitter_s) == (0.003, 0.02, 0.001)
    assert imp.servo_deadband == pytest.approx(0.2 * DEG, rel=1e-15)
    assert rig.uncertainty.mass_rel == 0.1 and rig.uncertainty.plate_offset == pytest.approx(0.5 * DEG)
    assert rig.uncertainty.rolling_resistance == (0.001, 0.002) and rig.friction_coefficient == 0.4
    # keys left out keep the base preset's
    assert rig.uncertainty.servo_bandwidth_rel == TABLETOP.uncertainty.servo_bandwidth_rel
    # the design's plant has none of it, the truth all of it
    assert rig.design_plant().kernel_parameters[14:].tolist() == [0.0, 0.0, 0.0]
    assert rig.truth_plant().kernel_parameters[14:] == pytest.approx([0.003, 1.0 * DEG, -0.7 * DEG], rel=1e-15)
    f.write_text('[imperfections]\nplate_ofset_deg = [1.0, 0.0]\n')
    with pytest.raises(RigProfileError, match="unknown key.*plate_ofset_deg"):
        RigProfile.from_toml(f)


@pytest.mark.parametrize("kwargs, match", [
    ({"frame_drop": 1.0}, r"frame_drop must be a probability in \[0, 1\)"),
    ({"plate_offset": (0.3, 0.0)}, "plate_offset must be two finite angles in rad"),
    ({"rolling_resistance": -0.1}, "rolling_resistance"),
    ({"servo_deadband": -1.0}, "servo_deadband"),
])
def test_bad_imperfections_are_refused_naming_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Imperfections(**kwargs)


def test_timing_jitter_must_stay_below_the_control_period():
    with pytest.raises(ValueError, match="timing_jitter_s = 0.03 s must be below the control period"):
        replace(TABLETOP, imperfections=Imperfections(timing_jitter_s=0.03))


def test_presets_carry_realistic_imperfections_and_the_ideal_rig_none():
    tab = TABLETOP.imperfections
    assert 0.2 * DEG <= abs(tab.plate_offset[0]) <= 1.0 * DEG and 0.0005 <= tab.rolling_resistance <= 0.005
    assert 0 < tab.frame_drop <= 0.05 and 0 < tab.timing_jitter_s < TABLETOP.dt
    assert not rig_preset("ideal").imperfections.any
    assert not TABLETOP.without_imperfections().imperfections.any


def test_a_rig_draw_is_reproducible_and_zero_uncertainty_draws_the_rig_itself():
    a = TABLETOP.sample(np.random.default_rng(5))
    b = TABLETOP.sample(np.random.default_rng(5))
    assert a.rig == b.rig and a.latency_error_s == b.latency_error_s
    assert a.rig.ball.mass != TABLETOP.ball.mass and abs(a.latency_error_s) <= TABLETOP.uncertainty.latency_s
    exact = replace(TABLETOP, uncertainty=RigUncertainty()).sample(np.random.default_rng(5))
    assert exact.rig.ball == TABLETOP.ball and exact.rig.servo == TABLETOP.servo
    assert exact.latency_error_s == 0.0 and not exact.initial_offset_m.any() and exact.noise_scale == 1.0


# ------------------------------------------------------------------ the loop's share
def test_backlash_is_the_play_operator():
    width = 0.2
    u = np.array([0.0, 0.05, 0.15, 0.12, -0.1])
    out, prev = [], np.zeros(1)
    for v in u:
        prev = prev.copy()
        backlash(np.array([v]), width, prev)  # the loop's kernel, in place
        out.append(prev[0])
    # inside the play the output stays; beyond it it trails the input by half the width
    np.testing.assert_allclose(out, [0.0, 0.0, 0.05, 0.05, 0.0], atol=1e-15)


def test_lost_frames_come_whole_per_sensor_and_from_their_own_stream(circle):
    exact, x0, xd0 = circle
    rig = replace(rig_preset("lab"))
    imp = LoopImperfections(frame_drop=0.3, timing_jitter_s=0.001)
    ctrl = design_for_rig(TABLETOP, exact, "exact", horizon=1.0)
    received, shift = imperfection_draws(7, 400, [len(s.signals) for s in ctrl.estimator.sensors], imp)
    assert received.shape == (400, 2) and np.all(received[:, 0] == received[:, 1])  # one camera frame
    assert abs(np.mean(~received[:, 0]) - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 400)  # binomial, 4 sigma
    assert abs(np.std(shift) - 0.001) < 4 * 0.001 / np.sqrt(2 * 400)
    again, _ = imperfection_draws(7, 400, [len(s.signals) for s in ctrl.estimator.sensors], imp)
    np.testing.assert_array_equal(received, again)
    assert rig.sensors  # (the lab rig has two sensors: its frames are lost independently)


def test_compiled_loop_equals_the_python_loop_with_every_imperfection(circle):
    exact, x0, xd0 = circle
    rig = replace(TABLETOP, imperfections=Imperfections(plate_offset=(1.0 * DEG, -0.7 * DEG), rolling_resistance=0.003,
                                                        frame_drop=0.1, servo_deadband=0.1 * DEG,
                                                        timing_jitter_s=0.002))
    ctrl = design_for_rig(rig, exact, "exact", horizon=2.0, offset_free=True)
    kw = dict(limits=rig.limits, substeps=2, method="rk4", imperfections=rig.imperfections.loop)
    x_truth = rig.truth_initial_state(x0)
    py = simulate_closed_loop(ctrl, x_truth, xd0, truth=rig.truth_plant(), seed=11,
                              options=ClosedLoopOptions(backend="python", **kw))
    cc = simulate_closed_loop(ctrl, x_truth, xd0, truth=rig.truth_plant(), seed=11,
                              options=ClosedLoopOptions(backend="compiled", **kw))
    # the same samples lost (NaN in both), the same readings, commands and states: the only difference is
    # the order of the sums in the filter's products (~1e-16 relative), absorbed by the command quantum
    np.testing.assert_array_equal(np.isnan(py.y), np.isnan(cc.y))
    assert 0.05 < np.mean(np.isnan(cc.y[:-1, 0])) < 0.16  # 10 % of the frames lost (binomial over 100)
    assert np.abs(py.x[:, :2] - cc.x[:, :2]).max() < 1e-10
    np.testing.assert_allclose(cc.augmented_estimate, py.augmented_estimate, rtol=0, atol=1e-10)
    assert py.limit_events == cc.limit_events


# ------------------------------------------------------------------ offset-free designs
def test_a_constant_input_disturbance_on_the_linear_model_leaves_no_error(circle):
    """The offset-free estimator and law on the design's own discrete LTV model with a constant disturbance."""
    exact, x0, xd0 = circle
    ctrl = design_for_rig(TABLETOP, exact, "exact", horizon=_horizon(3.0), offset_free=True)
    est = ctrl.estimator
    Ad, Bd, C = ctrl.discrete.Ad, ctrl.discrete.Bd, est.kalman.C[:, :, :ctrl.discrete.n_states]
    M, G = est.kalman.update_gains, ctrl.feedback_gains
    d = np.array([1.0, -0.7]) * DEG
    K, N = Ad.shape[0], Ad.shape[1]

    def run(disturbance):
        X = np.zeros(N)
        X_hat = np.zeros(est.n_states)
        err = []
        for k in range(K):
            X_post = np.empty_like(X_hat)  # the loop's kernels; noise-free, no latency
            ny = C.shape[1]
            kalman_update(X_hat, C[k] @ X, np.ones(ny, dtype=bool), est.kalman.C[k], M[k], np.empty(ny), X_post)
            du = -G[k] @ X_post
            err.append(np.linalg.norm(C[k] @ X) if est.sampled[k].all() else np.nan)
            X = Ad[k] @ X + Bd[k] @ (du + disturbance)
            X_hat = np.empty_like(X_post)
            kalman_predict(X_post, est.Ad[k], est.Bd[k], du, X_hat)
        return np.array(err)

    plain = run(np.zeros(2))
    assert np.nanmax(plain) < 1e-15  # no disturbance, no error
    err = run(d)
    tail = slice(int(0.8 * K), int(0.95 * K))  # before the finite horizon's end effects
    # the disturbance first moves the ball by centimetres, then the error decays to nothing: by 1/1000 of its
    # peak within 2.4 periods, and it keeps falling (each period divides it by more than 3)
    third = K // 3
    assert np.nanmax(err) > 1e-2 and np.nanmax(err[tail]) < 1e-3 * np.nanmax(err)
    assert np.nanmax(err[2 * third:int(0.95 * K)]) < np.nanmax(err[third:2 * third]) / 3


def test_a_plate_level_error_is_rejected_on_the_servo_plate_truth(circle):
    exact, x0, xd0 = circle
    rig = replace(TABLETOP, imperfections=Imperfections(plate_offset=(1.0 * DEG, -0.7 * DEG)))
    horizon = _horizon(2.0)
    runs = {}
    for offset_free in (False, True):
        ctrl = design_for_rig(rig, exact, "exact", horizon=horizon, offset_free=offset_free)
        runs[offset_free] = simulate_closed_loop(ctrl, rig.truth_initial_state(x0), xd0, truth=rig.truth_plant(),
                                                 seed=3,
                                                 options=ClosedLoopOptions(method="rk4", limits=rig.limits, substeps=2,
                                                                           imperfections=rig.imperfections.loop)).summary()
    # the plain LQG keeps ~3 cm of error per degree; the offset-free design only the noise floor (1.5 mm camera)
    assert runs[False].rms_error_last_period_m > 0.02
    assert runs[True].rms_error_last_period_m < 2.5e-3
    assert runs[True].rms_error_last_period_m < 0.1 * runs[False].rms_error_last_period_m


def test_the_design_does_not_see_the_truth(circle):
    exact, x0, xd0 = circle
    a = design_for_rig(TABLETOP, exact, "exact", horizon=1.0, offset_free=True).to_schedule()
    other = replace(TABLETOP, imperfections=replace(TABLETOP.imperfections, plate_offset=(1.0 * DEG, 0.3 * DEG),
                                                    rolling_resistance=0.004))
    b = design_for_rig(other, exact, "exact", horizon=1.0, offset_free=True).to_schedule()
    assert a.checksum == b.checksum and a.is_identical(b)
    assert a.augmented_state_names == ("alpha_cmd_disturbance", "beta_cmd_disturbance", "integral_0", "integral_1")


def test_the_disturbance_states_are_checked_observable(circle):
    exact, x0, xd0 = circle
    ctrl = design_for_rig(TABLETOP, exact, "exact", horizon=1.0, offset_free=True)
    report = ctrl.estimator.disturbance_observability
    assert report is not None and "disturbance_0" in report.state_names
    # a disturbance the camera cannot tell from the inputs (a third direction equal to the first) is refused
    from ballctl.design.estimator import InputDisturbance, design_estimator

    T = np.repeat(np.eye(2)[None], ctrl.discrete.Ad.shape[0], axis=0)
    twin = np.concatenate([T, T[:, :, :1]], axis=2)
    with pytest.raises(ValueError, match="disturbance states are not observable"):
        design_estimator(ctrl.ltv, ctrl.discrete, ctrl.system.coordinate_names, TABLETOP.sensors,
                         disturbance=InputDisturbance(directions=twin))


# ------------------------------------------------------------------ verification over the rig's uncertainty
def test_verification_over_uncertainty_is_reproducible_and_independent_of_threads(circle):
    exact, x0, xd0 = circle
    ctrl = design_for_rig(TABLETOP, exact, "exact", horizon=1.0, offset_free=True)
    kw = dict(seed=4, window_s=0.5, max_rms_error=0.05)
    one = verify_over_uncertainty(ctrl, TABLETOP, x0, xd0, settings=VerificationSettings(n_runs=6, workers=1), **kw)
    two = verify_over_uncertainty(ctrl, TABLETOP, x0, xd0, settings=VerificationSettings(n_runs=6, workers=2), **kw)
    np.testing.assert_array_equal(one.rms_m, two.rms_m)
    np.testing.assert_array_equal(one.peak_friction_coefficient, two.peak_friction_coefficient)
    assert one.runs == 6 and one.bands.shape == (3, len(ctrl.times) + 1)
    assert len(set(one.samples["mass_kg"])) == 6  # every run its own ball
    d = one.as_dict()
    assert set(d) >= {"runs", "success_rate", "rms_p50_m", "rms_p95_m", "worst_rms_m", "slipping_runs"}
    with pytest.raises(ValueError, match="min_success_rate must lie in"):
        verify_over_uncertainty(ctrl, TABLETOP, x0, xd0,
                                settings=VerificationSettings(n_runs=6, min_success_rate=1.5), **kw)


def test_a_simulation_reports_the_contact_of_a_ball_on_an_incline():
    """simulate() on a plate held at a constant tilt: the friction the rolling ball needs is I/(I + m R^2) tan(a)."""
    import ballctl

    plant = ballctl.BallPlate()
    tilt = 0.2
    x0 = plant.project_positions(np.zeros(5))
    xd0 = np.zeros(5)
    res = ballctl.simulate(plant, x0, xd0, lambda t: np.array([tilt, 0.0]), (0.0, 0.3), t_eval=np.linspace(0, 0.3, 7),
                           options=ballctl.SimulationOptions(rechart=True))
    p = plant.params
    expected = p.ball_inertia / (p.ball_inertia + p.mass * p.radius ** 2) * np.tan(tilt)
    # the quasi-static plate: N = m g cos(alpha) exactly, |F_t| / N the closed form to rounding
    assert res.peak_friction_coefficient == pytest.approx(expected, rel=1e-12)
    assert res.least_normal_force_N == pytest.approx(p.mass * p.gravity * np.cos(tilt), rel=1e-12)
    assert res.normal_force.shape == (7,) and res.friction_force.shape == (7, 2)
