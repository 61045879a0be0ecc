"""The compiled loop on the rig: output feedback (Kalman filter, sensor rate, latency, noise, bias), the
servo-plate truth plant, quasi-static designs on that truth, divergence stops and batches.

Oracle: the Python reference loop of simulate_closed_loop (the same steps and the same kernels; the only
arithmetic difference is the order of the sums in the matrix-vector products of the filter and the gains,
~1e-16 relative). Over a run of a stable loop the contact point agrees to 1e-10 m; on the tabletop rig
the command quantum absorbs even those differences and the states agree bit for bit.
"""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import ballctl
from ballctl.simulation.closed_loop import ClosedLoopOptions, controller_loop, simulate_closed_loop
from ballctl.references.moving_plate import exact_circular_motion
from ballctl.ball_plate.rig import RigLimits, Sensor, rig_preset
from ballctl.design.tracking import zoh_reference
from ballctl.ball_plate.design import design_for_rig

HORIZON = 1.6  # s: 80 control steps at the tabletop rig's 50 Hz
DEG = np.pi / 180

TABLETOP = rig_preset("tabletop")
# no command quantum (so that rounding differences are not absorbed), a 25 Hz camera with 1.5 samples of
# latency and a bias, plate encoders at 50 Hz, a fractional actuation delay and the slew limit
ODD = replace(TABLETOP, limits=RigLimits(max_angle=15 * DEG, max_rate=300 * DEG, delay=0.005),
              sensors=(Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.04, latency_s=0.03,
                              noise_std=(1.5e-3, 1.5e-3), bias=(5e-4, -3e-4)),
                       Sensor(name="encoders", signals=("alpha", "beta"), period_s=0.02, latency_s=0.0,
                              noise_std=(0.1 * DEG, 0.1 * DEG))))


@pytest.fixture(scope="module")
def references():
    truth = TABLETOP.design_plant()
    exact = exact_circular_motion(truth, ballctl.LissajousPath.circle(0.5, 1.0), 40.0, duration=HORIZON + 0.04)
    qs = ballctl.CircularMotion(truth.quasi_static(), 0.5, 1.0, 40.0)
    s = exact(0.0)
    x0, xd0 = s.x.copy(), s.xd.copy()
    x0[0] += 0.05
    return truth, exact, qs, x0, xd0


def _design(references, rig, name, output_feedback=True):
    truth, exact, qs, x0, xd0 = references
    return design_for_rig(rig, exact if name == "exact" else qs, name, horizon=HORIZON,
                          output_feedback=output_feedback)


def _both(ctrl, x0, xd0, *, truth=None, seed=None, **options):
    """The Python driver and the compiled loop on the same run (``options``: ClosedLoopOptions fields)."""
    py = simulate_closed_loop(ctrl, x0, xd0, truth=truth, seed=seed,
                              options=ClosedLoopOptions(method="rk4", backend="python", **options))
    cc = simulate_closed_loop(ctrl, x0, xd0, truth=truth, seed=seed,
                              options=ClosedLoopOptions(method="rk4", backend="compiled", **options))
    return py, cc


def _assert_same_run(py, cc, *, contact=1e-10):
    assert py.feedback == cc.feedback and py.diverged_at_s == cc.diverged_at_s and len(py.t) == len(cc.t)
    assert np.abs(py.x[:, :2] - cc.x[:, :2]).max() < contact
    assert np.abs(py.x - cc.x).max() < 1e3 * contact  # angles: the ball's roll grows to tens of rad
    assert np.abs(py.u - cc.u).max() < 1e-11
    np.testing.assert_allclose(cc.X_measured, py.X_measured, rtol=0, atol=contact)
    np.testing.assert_allclose(cc.velocity_residual, py.velocity_residual, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.isnan(cc.y), np.isnan(py.y))  # the same samples taken
    np.testing.assert_allclose(cc.y, py.y, rtol=0, atol=contact)
    assert py.limit_events == cc.limit_events
    assert py.signal_names == cc.signal_names
    np.testing.assert_array_equal(np.isnan(cc.x_ref), np.isnan(py.x_ref))


@pytest.mark.parametrize("rig", [TABLETOP, ODD], ids=["tabletop", "odd-rates-bias-delay"])
def test_lqg_on_the_servo_plate_agrees_with_the_python_loop(references, rig):
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, rig, "exact")
    py, cc = _both(ctrl, x0, xd0, truth=rig.design_plant(), limits=rig.limits, substeps=2, seed=3)
    assert cc.feedback == "output" and cc.y.shape == (len(cc.t), ctrl.estimator.n_signals)
    _assert_same_run(py, cc)
    if rig is TABLETOP:  # the command quantum absorbs the rounding of the sums: bit for bit
        np.testing.assert_array_equal(py.x, cc.x)
    else:  # the slower camera is visible in the readings: every other step has no contact sample
        assert np.all(np.isnan(cc.y[1::2, :2])) and np.all(np.isfinite(cc.y[0:-1:2, :2]))
        assert np.all(np.isfinite(cc.y[:-1, 2:]))
    # and the loop works: the 5 cm offset is mostly gone after 1.6 s
    assert cc.position_error[-1] < 0.3 * cc.position_error[0]


@pytest.mark.parametrize("output_feedback", [True, False], ids=["output", "state"])
def test_a_quasi_static_design_on_the_servo_truth_agrees(references, output_feedback):
    # the truth has the plate angles as extra coordinates: the compiled loop finds the design's by name
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, ODD, "qs-contact", output_feedback)
    py, cc = _both(ctrl, x0, xd0, truth=ODD.design_plant(), limits=ODD.limits, substeps=2, seed=5)
    _assert_same_run(py, cc)
    assert np.isnan(cc.x_ref[:, 5:]).all() and np.isfinite(cc.x_ref[:, :5]).all()


def test_a_diverging_design_stops_at_the_same_sample(references):
    # the paper's 6-state design feeds back a yaw the camera cannot see: on the servo plate its error grows
    # from 5 cm past 5.2 cm within 1 s (to 5.4 cm at 0.9 s, then it recovers: see the re-chart test below)
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, TABLETOP, "qs-paper")
    py, cc = _both(ctrl, x0, xd0, truth=truth, limits=TABLETOP.limits, substeps=2, seed=0, divergence_error=0.052)
    assert cc.diverged_at_s is not None and cc.diverged_at_s < HORIZON and len(cc.t) < int(HORIZON / ctrl.dt)
    _assert_same_run(py, cc)
    assert cc.summary().diverged and cc.summary().diverged_at_s == py.summary().diverged_at_s
    # in a batch the diverged run is cut in its own result and padded with NaN in the stacked arrays
    X0 = np.stack([x0, x0])
    X0[1, 0] -= 0.05  # started on the reference: stays within 5.2 cm
    batch = simulate_closed_loop(ctrl, X0, xd0, truth=truth, seed=[0, 0],
                                 options=ClosedLoopOptions(method="rk4", limits=TABLETOP.limits, substeps=2,
                                                           divergence_error=0.052))
    assert batch.backend == "compiled" and batch.status[1] == -1
    assert batch.status[0] == len(cc.t) - 1 and batch.run(0).diverged_at_s == cc.diverged_at_s
    assert np.isnan(batch.x[0, len(cc.t):]).all() and np.isfinite(batch.x[1]).all()
    err = batch.position_error
    assert err.shape == (2, len(batch.t)) and np.isnan(err[0, len(cc.t):]).all()
    np.testing.assert_array_equal(err[0, :len(cc.t)], cc.position_error)
    np.testing.assert_array_equal(batch.run(0).x, cc.x)
    slow = simulate_closed_loop(ctrl, X0, xd0, truth=truth, seed=[0, 0],
                                options=ClosedLoopOptions(method="rk4", limits=TABLETOP.limits, substeps=2,
                                                          divergence_error=0.052, backend="python"))
    assert slow.backend == "python"
    np.testing.assert_array_equal(slow.status, batch.status)
    np.testing.assert_array_equal(np.isnan(slow.x), np.isnan(batch.x))
    with pytest.raises(ballctl.errors.NonFiniteStateError):  # without divergence_error a blow-up raises
        simulate_closed_loop(ctrl, x0, 1e200 * xd0, truth=truth, duration=0.1,
                             options=ClosedLoopOptions(method="rk4", backend="compiled"))


def test_output_feedback_batch_equals_single_python_runs(references):
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, ODD, "exact")
    plates = [replace(truth.params, ball=replace(truth.params.ball, mass=m)) for m in (0.1, 0.12, 0.08)]
    truths = [type(truth)(p, truth.servo) for p in plates]
    X0 = np.repeat(x0[None], 3, axis=0)
    X0[1, 1] += 0.02
    XD0 = np.repeat(xd0[None], 3, axis=0)
    batch = simulate_closed_loop(ctrl, X0, XD0, truth=truths, seed=7,
                                 options=ClosedLoopOptions(method="rk4", limits=ODD.limits, substeps=2,
                                                           divergence_error=0.2))
    assert batch.backend == "compiled" and batch.x.shape == (3, len(batch.t), 7)
    seeds = np.random.SeedSequence(7).spawn(3)
    for i in range(3):
        one = simulate_closed_loop(ctrl, X0[i], XD0[i], truth=truths[i], seed=seeds[i],
                                   options=ClosedLoopOptions(method="rk4", limits=ODD.limits, substeps=2,
                                                             divergence_error=0.2, backend="python"))
        _assert_same_run(one, batch.run(i))
    # different noise draws and plants: different runs
    assert np.abs(batch.X_measured[0] - batch.X_measured[2]).max() > 1e-5


def test_zero_order_hold_reference_is_the_same_compiled(references):
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, TABLETOP, "exact", output_feedback=False)
    # the design's own samples: its ZOH solution reproduces itself through either loop
    cc = zoh_reference(ctrl.system, ctrl.ltv, ctrl.lqr.gains, ctrl.samples, method="rk4", substeps=2)
    py = zoh_reference(ctrl.system, ctrl.ltv, ctrl.lqr.gains, ctrl.samples, method="rk4", substeps=2,
                       backend="python")
    assert np.abs(cc.x - py.x).max() < 1e-12 and np.abs(cc.u - py.u).max() < 1e-14
    np.testing.assert_allclose(cc.xdd, py.xdd, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="backend"):
        zoh_reference(ctrl.system, ctrl.ltv, ctrl.lqr.gains, ctrl.samples, method="rk4", backend="gpu")


def test_monte_carlo_keeps_the_servo_plate(references):
    # Monte Carlo on a servo-plate design: each run's plant keeps the plate and its servos, the ball varies
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, TABLETOP, "exact", output_feedback=False)
    mc = ballctl.monte_carlo(ctrl, 3,
                             uncertainty=ballctl.Uncertainty(parameters={"mass": ballctl.Uniform(0.09, 0.11)}), seed=2,
                             x0=x0, xd0=xd0, options=ballctl.ClosedLoopOptions(method="rk4", substeps=2))
    seeds = np.random.SeedSequence(2).spawn(3)
    for i in range(3):
        m = mc.samples["mass"][i]
        plant = type(truth)(replace(truth.params, ball=replace(truth.params.ball, mass=m)), truth.servo)
        one = simulate_closed_loop(ctrl, x0, xd0, truth=plant, seed=seeds[i],
                                   options=ClosedLoopOptions(method="rk4", substeps=2, backend="python"))
        assert mc.metrics["final_error"][i] == pytest.approx(one.position_error[-1], abs=1e-10)
    assert np.ptp(mc.samples["mass"]) > 1e-3


def test_monte_carlo_runs_the_kalman_filter_on_the_sensors(references):
    # an LQG design: each Monte Carlo run is the output-feedback loop of simulate_closed_loop (the same draws:
    # with no uncertainty the run's generator draws only the sensor noise), and a sensor bias moves the ball
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, ODD, "exact")
    mc = ballctl.monte_carlo(ctrl, 2, seed=4, x0=x0, xd0=xd0,
                             options=ballctl.ClosedLoopOptions(method="rk4", substeps=2, limits=ODD.limits))
    seeds = np.random.SeedSequence(4).spawn(2)
    for i in range(2):
        one = simulate_closed_loop(ctrl, x0, xd0, seed=seeds[i],
                                   options=ClosedLoopOptions(method="rk4", limits=ODD.limits, substeps=2,
                                                             backend="python"))
        assert one.feedback == "output"
        assert mc.metrics["final_error"][i] == pytest.approx(one.position_error[-1], abs=1e-10)
    assert mc.metrics["final_error"][0] != mc.metrics["final_error"][1]  # different noise
    biased = ballctl.monte_carlo(ctrl, 1, seed=4, x0=x0, xd0=xd0,
                                 uncertainty=ballctl.Uncertainty(bias={"contact_x": ballctl.Uniform(0.01, 0.01)}),
                                 options=ballctl.ClosedLoopOptions(method="rk4", substeps=2, limits=ODD.limits))
    assert biased.samples["bias_contact_x"][0] == pytest.approx(0.01)
    assert abs(biased.metrics["final_error"][0] - mc.metrics["final_error"][0]) > 1e-3
    state = ballctl.monte_carlo(ctrl, 1, seed=4, x0=x0, xd0=xd0,
                                options=ballctl.ClosedLoopOptions(method="rk4", substeps=2, feedback="state"))
    assert state.metrics["final_error"][0] < mc.metrics["final_error"][0]  # full state, no noise: closer
    with pytest.raises(ValueError, match="sensors carry the noise"):
        ballctl.monte_carlo(ctrl, 1, uncertainty=ballctl.Uncertainty(noise_std={"contact_x": 1e-3}))
    with pytest.raises(ValueError, match="not a measured signal"):
        ballctl.monte_carlo(ctrl, 1, uncertainty=ballctl.Uncertainty(bias={"yaw": ballctl.Normal(0, 1e-3)}))


def test_prescribed_moving_plate_runs_compiled_too():
    # the other plant of the moving-plate kernels: inputs are the plate's angular accelerations (kind 0)
    from ballctl.plants.ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters
    from ballctl.ball_plate.design import EXACT_STATE_ERRORS

    plant = MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.02))
    assert ballctl.simulation.engine.kernel_code(plant) == 1
    ref = exact_circular_motion(plant, ballctl.LissajousPath.circle(0.5, 1.0), 40.0, duration=1.1)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw", "alpha", "beta"],
                                              ["lean", "roll"])
    errors = {k: v for k, v in EXACT_STATE_ERRORS.items() if k in part.state_names}
    weights = ballctl.LQRWeights(max_state_errors=errors, max_input_errors={"alpha_acc": 5.0, "beta_acc": 5.0})
    design_options = ballctl.design.TrackingOptions(method="rk4", substeps=2)
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.01, horizon=1.0, weights=weights, options=design_options)
    s = ref(0.0)
    x0 = s.x.copy()
    x0[0] += 0.02
    py, cc = _both(ctrl, x0, s.xd, substeps=2, noise_std={"contact_x": 1e-3, "alpha": 1e-3}, seed=1,
                   limits=RigLimits(delay=0.004))
    _assert_same_run(py, cc)
    assert cc.position_error[-1] < 0.1 * cc.position_error[0]


def test_both_loops_re_chart_the_truth_ball_the_same_way(references):
    """The paper's design swings the truth ball's lean from 51 deg past 70 deg (at 0.8 s): both loops re-chart
    it at the same step (``LoopArrays.rechart``, output feedback reads no ball angle) and run on the same,
    and that is what makes the coarse truth right. Without the re-chart, 2 RK4 substeps near the chart's
    singularity (``roll' ~ 1/cos(lean)``) had the contact error past 7 cm at 1.18 s, where 20 and 80 substeps
    stay below 5.5 cm; with it, 2 substeps stay within 4 mm of 80 (measured: 3.1 mm) and 20 equal 80 to
    1e-6 m (measured: 1.4e-7 m)."""
    truth, exact, qs, x0, xd0 = references
    ctrl = _design(references, TABLETOP, "qs-paper")
    py, cc = _both(ctrl, x0, xd0, truth=truth, limits=TABLETOP.limits, substeps=2, seed=0)
    _assert_same_run(py, cc)
    lean = np.abs(cc.x[:, 3])
    assert lean.max() < np.deg2rad(70.5) and np.any(np.abs(np.diff(cc.x[:, 3])) > np.deg2rad(40))  # re-charted
    fine = [simulate_closed_loop(ctrl, x0, xd0, truth=truth, seed=0,
                                 options=ClosedLoopOptions(method="rk4", limits=TABLETOP.limits, substeps=s))
            for s in (20, 80)]
    assert np.abs(fine[0].position_error - fine[1].position_error).max() < 1e-6
    assert np.abs(cc.position_error - fine[1].position_error).max() < 4e-3
    assert fine[1].position_error.max() < 0.055
    # a state feedback that reads the ball's angles keeps the truth's chart (it would see them jump)
    assert controller_loop(ctrl, truth, 10).rechart
    sf = _design(references, TABLETOP, "qs-paper", output_feedback=False)
    state_loop = controller_loop(sf, truth, 10, mode="state")
    assert set(state_loop.selection) & {2, 3, 4} and not state_loop.rechart


def test_the_background_compile_builds_the_one_specialization_every_run_uses(references):
    """``compile_in_background``'s process compiles the loop for its template arguments (no runs, the
    ball-plate layout); the runs of a job then load that specialization from the cache instead of compiling
    another: state and output feedback, on the servo plate and on the quasi-static plate, single runs and
    batches all share it (one signature of ``_loop``)."""
    from ballctl.simulation import engine

    engine._loop(*engine._template_arguments())  # what the second process runs (no runs: no address called)
    truth, exact, qs, x0, xd0 = references
    lqg = _design(references, TABLETOP, "exact")
    lqr = _design(references, TABLETOP, "exact", output_feedback=False)
    simulate_closed_loop(lqg, x0, xd0, truth=truth, options=ClosedLoopOptions(method="rk4"))
    simulate_closed_loop(lqr, np.stack([x0, x0]), xd0, truth=[truth, truth],
                         options=ClosedLoopOptions(method="rk4", limits=TABLETOP.limits))
    quasi = _design(references, TABLETOP, "qs-paper", output_feedback=False)  # on the quasi-static plate
    s = qs(0.0)
    simulate_closed_loop(quasi, s.x, s.xd, truth=quasi.system, options=ClosedLoopOptions(method="rk4"))
    assert len(engine._loop.signatures) == 1, engine._loop.signatures


@pytest.mark.slow
def test_the_background_compile_writes_no_cache_entry_this_process_compiles(tmp_path):
    """numba's disk cache is not safe for two processes compiling different signatures of one function at
    once; ``compile_in_background``'s process (a fresh cache here) writes the loop's entry and that of
    ``quantize_clamp`` (the one signature every caller uses), that of ``hold_rk4`` (its one specialization)
    and nothing else: the loop's callees are inlined."""
    import os
    import subprocess
    import sys

    cache, work = tmp_path / "cache", tmp_path / "work"
    (work / "ballctl").mkdir(parents=True)  # a working folder that holds another ballctl: not the one imported
    (work / "ballctl" / "__init__.py").write_text("raise ImportError('the working folder ballctl was imported')\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(Path(ballctl.__file__).parents[1]))
    script = tmp_path / "run.py"  # a script's own folder, not the working folder, leads its sys.path
    script.write_text("from ballctl.simulation import engine\nassert engine.compile_in_background()\n"
                      "engine._wait_for_background_compile()\nprint(engine.background_wait_s())\n")
    out = subprocess.run([sys.executable, str(script)], env=env, cwd=work, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) > 0
    written = sorted(p.name.split("-")[0] for p in cache.rglob("*.nbi"))
    assert written == ["engine._loop", "engine.hold_rk4", "loop_step.quantize_clamp"]


@pytest.mark.slow
def test_the_second_process_compiles_the_complex_step_kernels_while_this_one_compiles_the_real_ones(tmp_path):
    """With plant names, ``compile_in_background``'s process compiles those plants' complex-step kernels
    (a fresh cache here); this process's first complex miss compiles the plants' real kernels, then the
    loop goes to whichever process is free first, and this one waits and reads the complex kernels from the
    cache: it compiles none of them (no cache miss of theirs), the loop at most once (compiled here or read
    from the cache), and gets the same results as a process that compiled them all."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(Path(ballctl.__file__).parents[1]))
    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np\n"
        "from ballctl.simulation import engine\nfrom ballctl.plants import BallPlate\n"
        "from ballctl.plants.kernels import ball_plate as k\n"
        "assert engine.compile_in_background(('ball_plate',))\n"
        "M = BallPlate().mass_matrix(np.full(5, 0.3) + 1e-30j * np.arange(5))\n"
        "assert k.accelerations_batch.signatures  # the real kernels, compiled while waiting\n"
        "engine._wait_for_background_compile()\n"
        "engine._loop(*engine._template_arguments())\n"
        "misses = [s for s, c in k.mass_matrix_batch.stats.cache_misses.items() if c and 'complex128' in str(s)]\n"
        "hits = sum(k.mass_matrix_batch.stats.cache_hits.values())\n"
        "loop = sum(engine._loop.stats.cache_misses.values()) + sum(engine._loop.stats.cache_hits.values())\n"
        "print(misses, hits, loop, repr(M.imag.tolist()))\n")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    misses, hits, loop, imag = out.stdout.split(" ", 3)
    assert misses == "[]" and hits == "1" and loop == "1", out.stdout
    want = ballctl.BallPlate().mass_matrix(np.full(5, 0.3) + 1e-30j * np.arange(5)).imag.tolist()
    assert eval(imag) == want
