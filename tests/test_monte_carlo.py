"""Monte Carlo: reproducible per run whatever the chunking or the executor, metrics and bands, CLI."""

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
                             "--mass-std", "0.005", "--noise", "0.001", "--latency-max", "0.02", "--offset", "0.01",
                             "--workers", "2", "--out", str(tmp_path)])
    assert code == 0
    assert (tmp_path / "error_bands.png").stat().st_size > 0
    import json

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] == 6 and 0 <= summary["failure_rate"] <= 1
    data = np.load(tmp_path / "runs.npz")
    assert data["bands_m"].shape == (5, 51)
    err = capsys.readouterr().err
    assert "100%" in err
    assert cli_main(["montecarlo", "--runs", "0", "--out", str(tmp_path)]) == 2
