"""Compiled kernels and the compiled batched closed loop (ballctl.simulation.engine).

Oracles: the index-1 equations themselves (the structured solve must satisfy
the dense KKT system), complex-step derivatives against central differences,
and the Python reference loop of simulate_closed_loop (same arithmetic, so
agreement to 1e-10 m over the run).
"""

import numpy as np
import pytest

import ballctl
from ballctl.plants.kernels import ball_plate as bp_kernels

MAX_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                        yaw_rate=5.0)


@pytest.fixture(scope="module")
def loop_setup():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=2.0,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": np.deg2rad(3),
                                                                                    "beta": np.deg2rad(3)}))
    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.05
    return plant, ctrl, x0, s0.xd


def random_states(rng, count):
    x = rng.normal(size=(count, 5))
    x[:, 3] = rng.uniform(-1.2, 1.2, count)  # lean away from the chart's edge
    return x, rng.normal(size=(count, 5)), rng.normal(scale=0.2, size=(count, 2))


def test_structured_solve_satisfies_the_dense_index1_equations():
    rng = np.random.default_rng(1)
    plant = ballctl.BallPlate(mass=0.13, radius=0.025, inertia=3e-5)
    x, xd, u = random_states(rng, 20)
    a = 7.0
    xdd, lam = plant.accelerations(x, xd, u, stabilization=(a, 3.0))
    M = plant.mass_matrix(x)
    D = plant.constraint_jacobian(x)
    Q = plant.forces(x, xd, u)
    dyn = np.einsum("kij,kj->ki", M, xdd) + np.einsum("kji,kj->ki", D, lam) - Q
    con = np.einsum("kij,kj->ki", D, xdd) + plant.constraint_bias(x, xd) + 2 * a * np.einsum("kij,kj->ki", D, xd)
    scale = np.abs(Q).max() + np.abs(M).max() * np.abs(xdd).max()
    # residuals of eq. (1) and of the stabilized acceleration constraint at rounding level
    assert np.abs(dyn).max() < 1e-13 * scale
    assert np.abs(con).max() < 1e-12 * max(1.0, np.abs(xdd).max())
    # the generic dense solve of the base class gives the same accelerations
    for k in range(3):
        ref, ref_lam = ballctl.ConstrainedSystem.accelerations(plant, x[k], xd[k], u[k], stabilization=(a, 3.0))
        np.testing.assert_allclose(xdd[k], ref, rtol=1e-11, atol=1e-11 * np.abs(ref).max())
        np.testing.assert_allclose(lam[k], ref_lam, rtol=1e-10, atol=1e-12)


def test_kernels_are_complex_step_exact():
    # the kernels are analytic: a complex step of 1e-30 gives the derivative that central
    # differences approximate to O(h^2) ~ 1e-8 relative
    rng = np.random.default_rng(2)
    plant = ballctl.BallPlate()
    x, xd, u = (a[0] for a in random_states(rng, 1))
    v = rng.normal(size=5)
    h = 1e-30
    cs = plant.accelerations(x + 1j * h * v, xd, u + 0j, stabilization=(10.0, 10.0))[0].imag / h
    e = 1e-5
    fd = (plant.accelerations(x + e * v, xd, u, stabilization=(10.0, 10.0))[0]
          - plant.accelerations(x - e * v, xd, u, stabilization=(10.0, 10.0))[0]) / (2 * e)
    np.testing.assert_allclose(cs, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    # and the batch and single-state calls agree bit for bit
    X, XD, U = random_states(rng, 4)
    batch = plant.forces(X + 0j, XD, U)
    single = np.array([plant.forces(X[k] + 0j, XD[k], U[k]) for k in range(4)])
    np.testing.assert_array_equal(batch, single)
    assert plant.constraint_jacobian(X[0] + 0j).dtype == np.complex128


def test_kernel_parameters_follow_the_parameters():
    plant = ballctl.BallPlate(mass=0.2, radius=0.03)
    # (mass, radius, inertia, gravity, rolling resistance)
    np.testing.assert_allclose(plant.kernel_parameters, [0.2, 0.03, 0.4 * 0.2 * 0.03 ** 2, 9.81, 0.0], rtol=1e-15)
    assert bp_kernels.N_PARAMETERS == plant.kernel_parameters.shape[0]
    assert ballctl.simulation.engine.kernel_code(plant) == 0


@pytest.mark.parametrize("options", [
    {},
    {"limits": ballctl.RigLimits(max_angle=np.deg2rad(8), max_rate=np.deg2rad(300), quantum=np.deg2rad(0.1),
                                 delay=0.03)},
    {"noise_std": {"contact_x": 1e-3, "contact_y": 1e-3, "yaw_rate": 0.01}, "seed": 3, "substeps": 3},
    {"feedback": "open", "limits": ballctl.RigLimits(max_angle=np.deg2rad(2), delay=0.05)},
], ids=["plain", "rig-limits", "noise", "open-loop"])
def test_compiled_loop_agrees_with_the_python_loop(loop_setup, options):
    plant, ctrl, x0, xd0 = loop_setup
    options = dict(options)
    seed = options.pop("seed", None)
    py = ballctl.simulate_closed_loop(ctrl, x0, xd0, seed=seed,
                                      options=ballctl.ClosedLoopOptions(method="rk4", backend="python", **options))
    cc = ballctl.simulate_closed_loop(ctrl, x0, xd0, seed=seed,
                                      options=ballctl.ClosedLoopOptions(method="rk4", backend="compiled", **options))
    # same equations, same arithmetic up to the order of sums: 1e-10 m over the run
    assert np.abs(py.x[:, :2] - cc.x[:, :2]).max() < 1e-10
    assert np.abs(py.x - cc.x).max() < 1e-9  # angles (roll grows to ~80 rad)
    assert np.abs(py.u - cc.u).max() < 1e-12
    assert py.limit_events == cc.limit_events
    np.testing.assert_allclose(cc.velocity_residual, py.velocity_residual, atol=1e-12)
    np.testing.assert_allclose(cc.X_measured, py.X_measured, atol=1e-10)


def test_batch_runs_keep_a_run_axis_and_equal_single_runs(loop_setup):
    plant, ctrl, x0, xd0 = loop_setup
    offsets = np.array([[0.0, 0.0], [0.01, -0.02], [-0.03, 0.01]])
    X0 = np.repeat(x0[None], 3, axis=0)
    X0[:, :2] += offsets
    samples = [ballctl.BallPlate(mass=m, radius=r) for m, r in ((0.1, 0.02), (0.12, 0.021), (0.09, 0.019))]
    noise = {"contact_x": 5e-4, "contact_y": 5e-4}
    batch = ballctl.simulate_closed_loop(ctrl, X0, xd0, truth=samples, seed=11,
                                         options=ballctl.ClosedLoopOptions(method="rk4", noise_std=noise))
    assert isinstance(batch, ballctl.simulation.ClosedLoopBatchResult) and batch.backend == "compiled"
    K = len(batch.t)
    assert batch.x.shape == (3, K, 5) and batch.u.shape == (3, K, 2) and batch.position_error.shape == (3, K)
    assert np.all(batch.status == -1)
    seeds = np.random.SeedSequence(11).spawn(3)
    for i in (0, 2):
        one = ballctl.simulate_closed_loop(ctrl, X0[i], xd0, truth=samples[i], seed=seeds[i],
                                           options=ballctl.ClosedLoopOptions(method="rk4", noise_std=noise,
                                                                             backend="python"))
        assert np.abs(one.x[:, :2] - batch.x[i, :, :2]).max() < 1e-10
        assert batch.run(i).summary().final_error_m == pytest.approx(one.summary().final_error_m, abs=1e-10)
    # a heavier/larger ball is a different plant: its run differs
    assert np.abs(batch.x[1] - batch.x[0]).max() > 1e-4


def test_python_batch_path_matches_compiled(loop_setup):
    plant, ctrl, x0, xd0 = loop_setup
    X0 = np.stack([x0, x0 + [0.0, 0.01, 0, 0, 0]])
    a = ballctl.simulate_closed_loop(ctrl, X0, xd0, duration=0.5, options=ballctl.ClosedLoopOptions(method="rk4",
                                                                                                    backend="python"))
    b = ballctl.simulate_closed_loop(ctrl, X0, xd0, duration=0.5, options=ballctl.ClosedLoopOptions(method="rk4"))
    assert a.backend == "python" and b.backend == "compiled"
    assert np.abs(a.x[:, :, :2] - b.x[:, :, :2]).max() < 1e-10


def test_diverging_run_is_stopped_and_marked(loop_setup):
    plant, ctrl, x0, xd0 = loop_setup
    X0 = np.stack([x0, x0])
    X0[1, 3] = np.nan  # a state that is not finite from the start is rejected
    with pytest.raises(ValueError, match="finite"):
        ballctl.simulate_closed_loop(ctrl, X0, xd0, options=ballctl.ClosedLoopOptions(method="rk4"))
    # velocities of 1e200 overflow within a step: the run is stopped, not hung, and reported
    loop = ballctl.simulation.controller_loop(ctrl, plant, 50, mode="state")
    runs = ballctl.simulation.draw_runs(loop, [0], plant.kernel_parameters, x0[None], 1e200 * xd0[None])
    huge = ballctl.simulation.engine.run_closed_loop(loop, runs)
    assert huge.status[0] == 1 and np.isnan(huge.x[0, -1]).all() and np.isfinite(huge.x[0, 0]).all()


def test_bad_backend_requests(loop_setup):
    plant, ctrl, x0, xd0 = loop_setup
    with pytest.raises(ValueError, match="backend"):
        ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(backend="gpu"))
    with pytest.raises(ValueError, match="compiled"):
        ballctl.simulate_closed_loop(
            ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(backend="compiled")
        )  # DOP853 is not compiled
    with pytest.raises(ValueError, match="seed"):
        ballctl.simulate_closed_loop(ctrl, np.stack([x0, x0]), xd0, seed=[1, 2, 3],
                                     options=ballctl.ClosedLoopOptions(method="rk4"))
    with pytest.raises(ValueError, match="substeps"):
        ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(method="rk4", substeps=0))


def test_simulate_batch_equals_single_runs():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    s0 = ref(0.0)
    X0 = np.repeat(s0.x[None], 3, axis=0)
    X0[:, 0] += [0.0, 0.01, -0.02]
    XD0 = plant.rolling_velocities(X0, np.tile(s0.xd[:2], (3, 1)), plant.spin(s0.x, s0.xd))

    def u(t):
        return ref(t).u

    t_eval = np.linspace(0.0, 0.5, 11)
    batch = ballctl.simulate(plant, X0, XD0, u, (0.0, 0.5), t_eval=t_eval,
                             options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
    assert batch.x.shape == (3, 11, 5) and batch.u.shape == (3, 11, 2) and batch.velocity_residual.shape == (3, 11, 2)
    for i in range(3):
        one = ballctl.simulate(plant, X0[i], XD0[i], u, (0.0, 0.5), t_eval=t_eval,
                               options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
        # different step sequences, both converged to rtol 1e-11 over 0.5 s
        np.testing.assert_allclose(batch.x[i], one.x, rtol=0, atol=1e-8)
    assert batch.max_constraint_residual < 1e-9


def test_simulate_batch_of_a_user_system_uses_the_generic_path():
    # a particle on the unit circle (one holonomic constraint): the speed is conserved
    sys = ballctl.ConstrainedSystem(
        n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=0,
        equations=ballctl.SystemEquations(
            mass_matrix=lambda x, u: np.eye(2),
            forces=lambda x, xd, u: np.zeros(2, dtype=np.result_type(x, float)),
            holonomic=lambda x: np.array([x[0] ** 2 + x[1] ** 2 - 1.0]),
            constraint_jacobian=lambda x: np.array([[2 * x[0], 2 * x[1]]]),
        ),
    )
    speeds = np.array([1.0, 2.0])
    run = ballctl.simulate(sys, [[1.0, 0.0], [1.0, 0.0]], np.stack([[0.0, v] for v in speeds]), None, (0.0, 1.0),
                           t_eval=[0.0, 1.0])
    np.testing.assert_allclose(run.x[:, -1], np.stack([np.cos(speeds), np.sin(speeds)], axis=1), atol=1e-8)
    with pytest.raises(ballctl.ParameterError, match="one by one"):
        ballctl.simulate(sys, [[1.0, 0.0]], [0.0, 1.0], None, (0.0, 1.0),
                         options=ballctl.SimulationOptions(rechart=True))


def test_partition_study_through_an_executor_equals_the_serial_table():
    from concurrent.futures import ThreadPoolExecutor

    from ballctl.studies.partitions import compare_partitions, enumerate_partitions

    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    parts = enumerate_partitions(plant)[:4]
    times = np.linspace(0.0, 1.0, 41)
    serial = compare_partitions(plant, ref, times, partitions=parts)
    with ThreadPoolExecutor(2) as pool:
        pooled = compare_partitions(plant, ref, times, partitions=parts, executor=pool)
    assert [r.partition for r in serial.rows] == [r.partition for r in pooled.rows]
    for a, b in zip(serial.rows, pooled.rows):
        assert (a.admissible, a.reason, a.coupling, a.ddd_condition) == (b.admissible, b.reason, b.coupling,
                                                                          b.ddd_condition)
        if a.dynamic is not None:
            np.testing.assert_array_equal(a.dynamic.W, b.dynamic.W)
