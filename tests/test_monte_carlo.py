"""Monte Carlo: reproducible per run whatever the chunking or the executor, metrics and bands, CLI."""

import importlib
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ballctl
from ballctl.cli import main as cli_main

MAX_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                        yaw_rate=5.0)


@pytest.fixture(scope="module")
def ctrl():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    return ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=2.0,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": np.deg2rad(3),
                                                                                    "beta": np.deg2rad(3)}))


UNC = ballctl.Uncertainty(parameters={"mass": ballctl.Normal(0.1, 0.01), "radius": ballctl.Uniform(0.019, 0.021)},
                          noise_std={"contact_x": 1e-3, "contact_y": 1e-3},
                          bias={"contact_y": ballctl.Normal(0.0, 5e-4)}, latency=ballctl.Uniform(0.0, 0.03),
                          initial_offset={"contact_x": ballctl.Normal(0.0, 0.02)})


def assert_same(a, b):
    np.testing.assert_array_equal(a.bands, b.bands)
    for key in a.metrics:
        np.testing.assert_array_equal(a.metrics[key], b.metrics[key])
    for key in a.samples:
        np.testing.assert_array_equal(a.samples[key], b.samples[key])


def test_results_do_not_depend_on_chunking_or_threads(ctrl):
    a = ballctl.monte_carlo(ctrl, 10, uncertainty=UNC, seed=4,
                            settings=ballctl.simulation.MonteCarloSettings(chunk_size=10))
    b = ballctl.monte_carlo(ctrl, 10, uncertainty=UNC, seed=4,
                            settings=ballctl.simulation.MonteCarloSettings(chunk_size=3))
    assert_same(a, b)
    with ThreadPoolExecutor(2) as pool:
        assert_same(a, ballctl.monte_carlo(ctrl, 10, uncertainty=UNC, seed=4,
                                           settings=ballctl.simulation.MonteCarloSettings(chunk_size=4, executor=pool)))
    # a different root seed draws differently
    c = ballctl.monte_carlo(ctrl, 10, uncertainty=UNC, seed=5,
                            settings=ballctl.simulation.MonteCarloSettings(chunk_size=10))
    assert not np.array_equal(a.samples["mass"], c.samples["mass"])


def test_metrics_and_samples_are_the_runs_that_were_drawn(ctrl):
    mc = ballctl.monte_carlo(ctrl, 12, uncertainty=UNC, seed=1,
                             settings=ballctl.simulation.MonteCarloSettings(chunk_size=5))
    assert mc.n_runs == 12 and mc.bands.shape == (5, len(ctrl.times) + 1)
    # the drawn values follow their distributions' supports
    assert np.all((mc.samples["radius"] >= 0.019) & (mc.samples["radius"] <= 0.021))
    assert np.all((mc.samples["latency"] >= 0) & (mc.samples["latency"] <= 0.03))
    np.testing.assert_allclose(mc.samples["inertia"], 0.4 * mc.samples["mass"] * mc.samples["radius"] ** 2,
                               rtol=1e-14)
    # run 3 alone through simulate_closed_loop reproduces its metric (independent path, 1e-9 m)
    seeds = np.random.SeedSequence(1).spawn(12)
    rng = np.random.default_rng(seeds[3])
    mass, radius = UNC.parameters["mass"].sample(rng), UNC.parameters["radius"].sample(rng)
    assert (mass, radius) == (mc.samples["mass"][3], mc.samples["radius"][3])
    # bands are ordered percentiles; the initial error is the drawn offset
    assert np.all(np.diff(mc.bands, axis=0) >= 0)
    offsets = np.abs(mc.samples["offset_contact_x"])
    np.testing.assert_allclose(mc.bands[:, 0], np.percentile(offsets, mc.percentiles), rtol=1e-12, atol=1e-15)
    assert np.all(mc.metrics["max_error"] >= offsets - 1e-15)
    assert mc.failure_rate == pytest.approx(np.mean(mc.metrics["failed"]))
    # a 2 cm offset on a 0.5 m circle is tracked: median final error below 5 mm
    assert np.median(mc.metrics["final_error"]) < 5e-3
    fig = mc.plot()
    assert fig.axes[0].get_ylabel() == "distance to reference [m]"


def test_no_uncertainty_gives_identical_runs_equal_to_the_closed_loop(ctrl):
    mc = ballctl.monte_carlo(ctrl, 3, seed=0, x0=ctrl.samples.x[0] + [0.03, 0, 0, 0, 0])
    r = ballctl.simulate_closed_loop(ctrl, ctrl.samples.x[0] + [0.03, 0, 0, 0, 0], ctrl.samples.xd[0],
                                     options=ballctl.ClosedLoopOptions(method="rk4", backend="python"))
    assert np.all(mc.metrics["final_error"] == mc.metrics["final_error"][0])
    assert mc.metrics["final_error"][0] == pytest.approx(r.summary().final_error_m, abs=1e-10)


def test_failures_are_counted(ctrl):
    # a 1 um failure threshold: every run with 2 cm offsets "fails"
    mc = ballctl.monte_carlo(ctrl, 4, uncertainty=UNC, seed=0,
                             settings=ballctl.simulation.MonteCarloSettings(failure_error=1e-6))
    assert mc.failure_rate == 1.0


def test_bad_requests(ctrl):
    with pytest.raises(ValueError, match="n_runs"):
        ballctl.monte_carlo(ctrl, 0)
    with pytest.raises(ValueError, match="chunk_size"):
        ballctl.monte_carlo(ctrl, 3, settings=ballctl.simulation.MonteCarloSettings(chunk_size=0))
    with pytest.raises(TypeError, match="Executor"):
        ballctl.monte_carlo(ctrl, 3, settings=ballctl.simulation.MonteCarloSettings(executor=object()))
    with pytest.raises(ValueError, match="latency"):
        ballctl.monte_carlo(ctrl, 3, uncertainty=ballctl.Uncertainty(latency=ballctl.Normal(-0.01, 0.001)))
    with pytest.raises(ValueError, match="unknown coordinate"):
        ballctl.monte_carlo(ctrl, 3, uncertainty=ballctl.Uncertainty(noise_std={"contact_z": 1e-3}))
    with pytest.raises(ValueError, match="mass"):
        ballctl.monte_carlo(ctrl, 50, uncertainty=ballctl.Uncertainty(parameters={"mass": ballctl.Normal(0.01, 0.05)}))
    with pytest.raises(ValueError, match="std"):
        ballctl.Normal(0.0, -1.0)
    with pytest.raises(TypeError, match="distribution"):
        ballctl.Uncertainty(parameters={"mass": 0.1})


def test_dask_local_cluster_gives_the_serial_results_bit_for_bit(ctrl):
    distributed = pytest.importorskip("dask.distributed")
    serial = ballctl.monte_carlo(ctrl, 8, uncertainty=UNC, seed=7,
                                 settings=ballctl.simulation.MonteCarloSettings(chunk_size=3))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        remote = ballctl.monte_carlo(ctrl, 8, uncertainty=UNC, seed=7,
                                     settings=ballctl.simulation.MonteCarloSettings(chunk_size=3,
                                                                                    executor=client.get_executor()))
    assert_same(serial, remote)


def test_cli_montecarlo_writes_bands_and_summary(tmp_path, capsys):
    code = cli_main(["montecarlo", "--runs", "6", "--chunk-size", "4", "--dt", "0.02", "--duration", "1",
                     "--mass-std", "0.005", "--noise", "0.001", "--latency-max", "0.02", "--offset", "0.01", "0",
                     "--offset-std", "0.01", "--workers", "2", "--out", str(tmp_path)])
    assert code == 0
    assert (tmp_path / "error_bands.png").stat().st_size > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] == 6 and 0 <= summary["failure_rate"] <= 1
    unc = summary["uncertainty"]
    assert unc["mass_std_kg"] == 0.005 and unc["noise_std_m"] == {"contact_x": 0.001, "contact_y": 0.001}
    assert unc["initial_offset_mean_m"] == [0.01, 0.0] and unc["initial_offset_std_m"] == 0.01
    assert unc["latency"].startswith("uniform in [0, 0.02] s")
    data = np.load(tmp_path / "runs.npz")
    assert data["bands_m"].shape == (5, 51)
    err = capsys.readouterr().err
    assert "100%" in err
    assert cli_main(["montecarlo", "--runs", "0", "--out", str(tmp_path)]) == 2


def test_cli_montecarlo_defaults_to_the_rigs_uncertainty(tmp_path, capsys):
    """Without flags the runs draw the tabletop rig's spread (they used to be N identical runs)."""
    assert cli_main(["montecarlo", "--runs", "8", "--duration", "1", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    rig = ballctl.rig_preset("tabletop")
    unc = summary["uncertainty"]
    assert summary["rig"] == "tabletop" and summary["dt_s"] == rig.dt
    np.testing.assert_allclose(unc["mass_std_kg"], rig.uncertainty.mass_rel * rig.ball.mass)
    np.testing.assert_allclose(unc["radius_std_m"], rig.uncertainty.radius_rel * rig.ball.radius)
    assert unc["noise_std_m"] == {"contact_x": 1.5e-3, "contact_y": 1.5e-3}
    assert unc["latency"] == "uniform in [0.027, 0.033] s (rig)"     # 30 ms camera +- 3 ms
    assert unc["initial_offset_mean_m"] == [0.05, 0.0]
    assert unc["initial_offset_std_m"] == rig.uncertainty.initial_offset_m
    assert set(unc["sources"].values()) == {"rig"}
    data = np.load(tmp_path / "runs.npz")
    for key in ("sample_mass", "sample_radius", "sample_latency", "sample_offset_contact_x", "metric_final_error"):
        assert np.unique(data[key]).size == 8, key                  # every run differs
    np.testing.assert_allclose(data["sample_offset_contact_x"].mean(), 0.05, atol=0.015)
    err = capsys.readouterr().err
    assert "rig 'tabletop'" in err and "noise 0.0015, 0.0015 m" in err


def test_cli_montecarlo_takes_the_offset_as_track_does_and_reads_the_old_form(tmp_path, capsys):
    assert cli_main(["montecarlo", "--runs", "2", "--duration", "0.2", "--offset", "0.02",
                     "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "ballctl montecarlo: warning: --offset 0.02 (one value) is the old form of --offset-std 0.02" in err
    unc = json.loads((tmp_path / "summary.json").read_text())["uncertainty"]
    assert unc["initial_offset_std_m"] == 0.02 and unc["initial_offset_mean_m"] == [0.05, 0.0]
    assert cli_main(["montecarlo", "--offset", "0.1", "0.2", "0.3", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "argument --offset: takes two values DX DY in m, got 3" in err and err.count("\n") == 1
    assert cli_main(["montecarlo", "--offset", "0.1", "--offset-std", "0.01", "--out", str(tmp_path / "x")]) == 2
    assert "the std is --offset-std" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_montecarlo_percentiles_rank_diverged_runs_last():
    from ballctl.cli.montecarlo import _percentile

    values = np.array([3.0, np.nan, 1.0, 2.0, np.inf])
    assert _percentile(values, 0) == 1.0 and _percentile(values, 25) == 2.0 and _percentile(values, 50) == 3.0
    assert _percentile(values, 75) is None and _percentile(values, 95) is None
    finite = np.array([0.3, 0.1, 0.2, 0.4])
    for q in (5, 25, 50, 75, 95):
        assert _percentile(finite, q) == pytest.approx(np.percentile(finite, q), rel=1e-15)


def test_cli_montecarlo_refuses_an_unreachable_scheduler_at_once(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    import time

    start = time.perf_counter()
    assert cli_main(["montecarlo", "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "mc")]) == 2
    assert time.perf_counter() - start < 10.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "cannot write or read" not in err
    assert err.startswith("ballctl montecarlo: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1: "
                          "connection refused")
    assert "start one with `dask scheduler` or drop --scheduler" in err
    assert cli_main(["montecarlo", "--scheduler", "tcp://[bad", "--out", str(tmp_path / "mc")]) == 2
    assert "is not a scheduler address such as tcp://host:8786" in capsys.readouterr().err
    assert not (tmp_path / "mc").exists()


def test_cli_montecarlo_refuses_a_scheduler_without_workers(tmp_path, capsys, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from ballctl.cli import montecarlo

    monkeypatch.setattr(montecarlo, "SCHEDULER_TIMEOUT_S", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        assert cli_main(["montecarlo", "--scheduler", cluster.scheduler_address, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no worker after 0.5 s; start one with `dask worker" in err


def _track_max_rms_error() -> float:
    """The RMS error below which ``ballctl track`` passes a design (its --max-rms-error default), m."""
    from ballctl.cli import build_parser

    return build_parser().parse_args(["track"]).max_rms_error


def test_cli_montecarlo_default_is_the_rig_aware_lqg_and_converges(tmp_path, capsys):
    """The default tracker is the offset-free LQG ballctl track exports; over the rig's uncertainty (latency
    included) no run fails and the 95th-percentile RMS error is below track's threshold. (At the full defaults,
    200 runs of 4 pi s: 0 failures, RMS p95 2.3 mm; the state-feedback LQR loses 141 of them.)"""
    assert cli_main(["montecarlo", "--runs", "20", "--duration", str(2 * np.pi), "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["controller"] == "lqg" and summary["design"] == "exact" and summary["offset_free"]
    assert summary["truth"].startswith("the rig's servo plate with its imperfections")
    assert summary["uncertainty"]["latency"] == "uniform in [0.027, 0.033] s (rig)"
    assert summary["failure_rate"] == 0.0 and summary["diverged_runs"] == 0
    assert summary["rms_error_m"]["p95"] < _track_max_rms_error()
    assert summary["final_error_m"]["p95"] < summary["failure_error_m"]
    data = np.load(tmp_path / "runs.npz")
    assert np.all((data["sample_latency"] >= 0.027) & (data["sample_latency"] <= 0.033))
    out = capsys.readouterr()
    assert "output feedback through the rig's Kalman filter" in out.err and "note:" not in out.err
    assert out.out.startswith("lqg (exact): 20 runs")


def test_cli_montecarlo_lqr_reproduces_the_state_feedback_tracker(tmp_path, capsys):
    """--controller lqr is the earlier tracker, bit for bit: the paper's LQR on the quasi-static plate, the rig's
    latency on its commands (most runs diverge); its runs draw the same balls, latencies and offsets as lqg's."""
    assert cli_main(["montecarlo", "--controller", "lqr", "--runs", "20", "--out", str(tmp_path / "lqr")]) == 0
    rig = ballctl.rig_preset("tabletop")
    plant = rig.design_plant().quasi_static()
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    steps = int(round(4 * np.pi / rig.dt))
    ctrl = ballctl.design_tracking_lqr(plant, ballctl.CircularMotion(plant, 0.5, 1.0, 40.0), part, dt=rig.dt,
                                       horizon=steps * rig.dt,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": np.deg2rad(3.0),
                                                                                    "beta": np.deg2rad(3.0)}))
    u, camera = rig.uncertainty, rig.sensors[0]
    unc = ballctl.Uncertainty(
        parameters={"mass": ballctl.Normal(rig.ball.mass, u.mass_rel * rig.ball.mass),
                    "radius": ballctl.Normal(rig.ball.radius, u.radius_rel * rig.ball.radius)},
        noise_std=dict(zip(camera.signals, camera.noise_std)),
        latency=ballctl.Uniform(camera.latency_s - u.latency_s, camera.latency_s + u.latency_s),
        initial_offset={"contact_x": ballctl.Normal(0.05, u.initial_offset_m),
                        "contact_y": ballctl.Normal(0.0, u.initial_offset_m)})
    mc = ballctl.monte_carlo(ctrl, 20, uncertainty=unc, seed=0,
                             settings=ballctl.simulation.MonteCarloSettings(chunk_size=50))
    data = np.load(tmp_path / "lqr" / "runs.npz")
    for key, value in mc.metrics.items():
        np.testing.assert_array_equal(data[f"metric_{key}"], value, err_msg=key)
    np.testing.assert_array_equal(data["bands_m"], mc.bands)
    summary = json.loads((tmp_path / "lqr" / "summary.json").read_text())
    assert summary["controller"] == "lqr" and summary["failure_rate"] == mc.failure_rate >= 0.5
    assert summary["final_error_m"]["p50"] is None        # the median run diverges
    assert "is not compensated by this state-feedback tracker" in capsys.readouterr().err
    # the rig-aware runs draw the same ball, latency and offset per run (paired)
    assert cli_main(["montecarlo", "--runs", "3", "--duration", "0.6", "--out", str(tmp_path / "lqg")]) == 0
    lqg = np.load(tmp_path / "lqg" / "runs.npz")
    for key in ("sample_mass", "sample_radius", "sample_latency", "sample_offset_contact_x",
                "sample_offset_contact_y"):
        np.testing.assert_array_equal(lqg[key], data[key][:3], err_msg=key)


def test_cli_montecarlo_lqg_draws_act_on_the_camera_the_filter_reads(tmp_path, monkeypatch):
    """Output feedback: noise and bias are the camera's readings', the drawn latency moves the camera's frames by
    its difference from the latency the filter compensates, the commands keep the rig's actuation delay; the
    rig's limits, lost frames, dead band and jitter act; the filter's gains are the rig design's."""
    mc_module = importlib.import_module("ballctl.simulation.monte_carlo")   # the name is also the function's
    from ballctl.simulation.arrays import imperfection_draws

    calls = []
    original = mc_module.run_closed_loop

    def spy(loop, runs):
        calls.append((loop, runs))
        return original(loop, runs)

    monkeypatch.setattr(mc_module, "run_closed_loop", spy)
    common = ["--runs", "4", "--chunk-size", "4", "--duration", "0.6", "--seed", "3"]
    assert cli_main(["montecarlo", *common, "--noise", "0.002", "--bias", "0.001", "--latency-max", "0.05",
                     "--out", str(tmp_path / "a")]) == 0
    assert cli_main(["montecarlo", *common, "--out", str(tmp_path / "b")]) == 0
    (loop, runs), (loop_b, runs_b) = calls
    rig = ballctl.rig_preset("tabletop")
    data = np.load(tmp_path / "a" / "runs.npz")
    e = loop.estimator
    # noise: the camera's, set by --noise (not on the state: there is no state measurement)
    np.testing.assert_array_equal(e.noise_std, [0.002, 0.002])
    np.testing.assert_array_equal(loop_b.estimator.noise_std, rig.sensors[0].noise_std)
    assert not np.any(runs.measurement_error)
    # ... and the filter's gains are the rig design's whatever the truth's noise
    np.testing.assert_array_equal(e.update_gains, loop_b.estimator.update_gains)
    # bias: drawn per run, on the camera's readings
    np.testing.assert_array_equal(runs.bias, np.stack([data["sample_bias_contact_x"],
                                                       data["sample_bias_contact_y"]], axis=1))
    np.testing.assert_array_equal(runs_b.bias, np.repeat(np.asarray(rig.sensors[0].bias)[None], 4, axis=0))
    # latency: on the camera (the frames' instant), not on the commands
    latency = data["sample_latency"]
    assert np.all((latency >= 0) & (latency <= 0.05)) and np.unique(latency).size == 4
    np.testing.assert_array_equal(runs.delay_s, rig.limits.delay)
    nominal = rig.sensors[0].latency_s + rig.limits.delay
    assert e.latency_steps == int(np.ceil(rig.sensors[0].latency_s / rig.dt))   # the filter compensates the camera's
    for i, ss in enumerate(np.random.SeedSequence(3).spawn(4)):
        received, jitter = imperfection_draws(ss, loop.K, e.sensor_widths, rig.imperfections.loop)
        np.testing.assert_allclose(runs.sample_shift[i], jitter - (latency[i] - nominal), rtol=0, atol=1e-15)
        np.testing.assert_array_equal(runs.received[i], received)
    assert not np.all(runs.received)            # the rig loses frames ...
    assert loop.limits == rig.limits and loop.deadband == rig.imperfections.servo_deadband   # ... and has limits
    assert loop.divergence_error == max(0.2, 2 * 0.5)     # as track: a run stops farther than this


def _runs(folder):
    """The arrays of a montecarlo run's runs.npz."""
    with np.load(folder / "runs.npz") as data:
        return {key: data[key] for key in data.files}


def _assert_same_runs(a, b):
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_cli_montecarlo_lqg_is_ballctl_monte_carlo_on_the_rigs_truth(tmp_path):
    """The lqg runs are ballctl.monte_carlo's, bit for bit: the rig design on the rig's servo-plate truth with its
    limits, loop imperfections and divergence stop (the CLI has no runner of its own)."""
    from ballctl.ball_plate.design import design_for_rig
    from ballctl.references import LissajousPath
    from ballctl.references.moving_plate import exact_circular_motion

    assert cli_main(["montecarlo", "--runs", "5", "--duration", "0.6", "--seed", "2", "--latency-max", "0.05",
                     "--out", str(tmp_path)]) == 0
    rig = ballctl.rig_preset("tabletop")
    steps = int(round(0.6 / rig.dt))
    ref = exact_circular_motion(rig.design_plant(), LissajousPath.circle(0.5, 1.0), 40.0,
                                duration=(steps + 2) * rig.dt)
    ctrl = design_for_rig(rig, ref, "exact", horizon=steps * rig.dt, output_feedback=True, offset_free=True)
    u = rig.uncertainty
    unc = ballctl.Uncertainty(
        parameters={"mass": ballctl.Normal(rig.ball.mass, u.mass_rel * rig.ball.mass),
                    "radius": ballctl.Normal(rig.ball.radius, u.radius_rel * rig.ball.radius)},
        latency=ballctl.Uniform(0.0, 0.05),
        initial_offset={"contact_x": ballctl.Normal(0.05, u.initial_offset_m),
                        "contact_y": ballctl.Normal(0.0, u.initial_offset_m)})
    s0 = ref(0.0)
    mc = ballctl.monte_carlo(ctrl, 5, uncertainty=unc, seed=2, x0=rig.truth_initial_state(s0.x), xd0=s0.xd,
                             truth=rig.truth_plant(),
                             options=ballctl.ClosedLoopOptions(method="rk4", limits=rig.limits, substeps=2,
                                                               imperfections=rig.imperfections.loop,
                                                               divergence_error=1.0),
                             settings=ballctl.simulation.MonteCarloSettings(chunk_size=50))
    data = _runs(tmp_path)
    for key, value in mc.metrics.items():
        np.testing.assert_array_equal(data[f"metric_{key}"], value, err_msg=key)
    for key, value in mc.samples.items():
        np.testing.assert_array_equal(data[f"sample_{key}"], value, err_msg=key)
    np.testing.assert_array_equal(data["bands_m"], mc.bands)


@pytest.mark.parametrize("controller", ["lqg", "lqr"])
def test_cli_montecarlo_workers_give_the_serial_results(tmp_path, controller):
    common = ["montecarlo", "--controller", controller, "--runs", "5", "--duration", "0.6", "--seed", "1"]
    assert cli_main([*common, "--out", str(tmp_path / "one")]) == 0
    assert cli_main([*common, "--workers", "2", "--chunk-size", "2", "--out", str(tmp_path / "two")]) == 0
    _assert_same_runs(_runs(tmp_path / "one"), _runs(tmp_path / "two"))


def test_cli_montecarlo_lqg_runs_on_a_dask_cluster_bit_for_bit(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    common = ["montecarlo", "--runs", "4", "--duration", "0.6", "--seed", "5", "--chunk-size", "2"]
    assert cli_main([*common, "--out", str(tmp_path / "serial")]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster:
        assert cli_main([*common, "--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "dask")]) == 0
    _assert_same_runs(_runs(tmp_path / "serial"), _runs(tmp_path / "dask"))


@pytest.fixture(scope="module")
def rig_lqg():
    """A short tabletop LQG (camera latency 30 ms compensated by its filter) and its initial state."""
    from ballctl.ball_plate.design import design_for_rig
    from ballctl.references import LissajousPath
    from ballctl.references.moving_plate import exact_circular_motion

    rig = ballctl.rig_preset("tabletop")
    ref = exact_circular_motion(rig.design_plant(), LissajousPath.circle(0.5, 1.0), 40.0, duration=0.7)
    s0 = ref(0.0)
    return rig, design_for_rig(rig, ref, "exact", horizon=0.6, output_feedback=True), s0.x, s0.xd


def test_monte_carlo_output_feedback_latency_moves_the_samples_not_the_commands(rig_lqg, monkeypatch):
    """With an estimator the drawn latency is the camera's (plus the actuation delay): the nominal one is what the
    filter compensates (no shift of the frames); another one moves the frames by the difference, never the
    commands."""
    mc_module = importlib.import_module("ballctl.simulation.monte_carlo")   # the name is also the function's
    rig, ctrl, x0, xd0 = rig_lqg
    opts = ballctl.ClosedLoopOptions(method="rk4", substeps=2, limits=rig.limits)
    nominal = rig.sensors[0].latency_s + rig.limits.delay
    calls = []
    original = mc_module.run_closed_loop
    monkeypatch.setattr(mc_module, "run_closed_loop", lambda loop, runs: calls.append(runs) or original(loop, runs))

    def run(latency=None):
        unc = ballctl.Uncertainty(latency=latency, initial_offset={"contact_x": ballctl.Normal(0.02, 0.01)})
        return ballctl.monte_carlo(ctrl, 3, uncertainty=unc, seed=6, x0=x0, xd0=xd0, options=opts)

    np.testing.assert_array_equal(run().samples["latency"], nominal)   # not drawn: the nominal latency
    same = run(ballctl.Uniform(nominal, nominal))
    late = run(ballctl.Uniform(nominal + 0.02, nominal + 0.02))
    for runs in calls:
        np.testing.assert_array_equal(runs.delay_s, rig.limits.delay)
    np.testing.assert_array_equal(calls[1].sample_shift, 0.0)
    np.testing.assert_allclose(calls[2].sample_shift, -0.02, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(same.samples["offset_contact_x"], late.samples["offset_contact_x"])
    assert np.all(np.abs(late.metrics["final_error"] - same.metrics["final_error"]) > 1e-6)


def test_verification_and_monte_carlo_share_one_runner(rig_lqg, tmp_path, monkeypatch):
    """verify_over_uncertainty (rigs drawn from rig.uncertainty) and ballctl.monte_carlo (and so the montecarlo
    CLI) run their chunks through the same runner; verification's threads are its chunks."""
    mc_module = importlib.import_module("ballctl.simulation.monte_carlo")   # the name is also the function's
    from ballctl.ball_plate.verification import VerificationSettings, verify_over_uncertainty

    rig, ctrl, x0, xd0 = rig_lqg
    samplers = []
    original = mc_module._run_chunk

    def spy(job, seeds):
        samplers.append((type(job.sampler).__name__, len(seeds)))
        return original(job, seeds)

    monkeypatch.setattr(mc_module, "_run_chunk", spy)
    kw = dict(seed=1, window_s=0.2, max_rms_error=0.05)
    with np.errstate(over="ignore", invalid="ignore"):
        one = verify_over_uncertainty(ctrl, rig, x0, xd0, settings=VerificationSettings(n_runs=5, workers=1), **kw)
        two = verify_over_uncertainty(ctrl, rig, x0, xd0, settings=VerificationSettings(n_runs=5, workers=2), **kw)
    np.testing.assert_array_equal(one.rms_m, two.rms_m)
    np.testing.assert_array_equal(one.bands, two.bands)
    assert cli_main(["montecarlo", "--runs", "3", "--duration", "0.6", "--out", str(tmp_path)]) == 0
    assert samplers == [("_RigDraws", 5), ("_RigDraws", 3), ("_RigDraws", 2), ("_UncertaintyDraws", 3)]
