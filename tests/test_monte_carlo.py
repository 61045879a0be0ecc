"""Monte Carlo: reproducible per run whatever the chunking or the executor, metrics and bands, CLI."""

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
