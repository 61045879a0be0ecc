"""The moving-plate ball-plate: interface contract and known physics of turning plates."""

import numpy as np
import pytest
from scipy.integrate import simpson, solve_ivp

import ballctl
from ballctl.plants.ball_plate import BallPlateParameters
from ballctl.plants.ball_plate_moving import (MovingPlateBallPlate, MovingPlateParameters, ServoParameters,
                                              ServoPlateBallPlate)

PLANTS = [
    MovingPlateBallPlate(),
    MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.05, with_spin=True)),
    ServoPlateBallPlate(MovingPlateParameters(pivot_depth=0.03)),
    ServoPlateBallPlate(MovingPlateParameters(with_spin=True), ServoParameters(max_torque=2.0, max_rate=3.0)),
]


def rolling_state(plant, rng, plate_rates=True):
    """A random state satisfying the rolling constraints."""
    n = plant.n_coordinates
    x = 0.3 * rng.normal(size=n)
    xd = rng.normal(size=n)
    if not plate_rates:
        xd[5:] = 0.0
    xd[:5] = plant.quasi_static().rolling_velocities(x[:5], xd[:2], xd[2])
    return x, xd


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: f"{type(p).__name__}-{p.n_coordinates}")
def test_interface_contract_and_batches(plant):
    rng = np.random.default_rng(1)
    x, xd = rolling_state(plant, rng)
    u = 0.1 * rng.normal(size=plant.n_inputs)
    assert ballctl.check_system(plant, x, xd, u) == []
    M = plant.mass_matrix(x, u)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-15)
    # positive definite on the null space of D (here: on the whole space)
    assert np.linalg.eigvalsh(M).min() > 0
    X = 0.3 * rng.normal(size=(3, plant.n_coordinates))
    XD = rng.normal(size=(3, plant.n_coordinates))
    U = rng.normal(size=(3, plant.n_inputs))
    np.testing.assert_array_equal(plant.forces(X, XD, U)[1], plant.forces(X[1], XD[1], U[1]))
    np.testing.assert_array_equal(plant.mass_matrix(X, U)[2], plant.mass_matrix(X[2], U[2]))


def test_prescribed_plate_rows_are_exact_and_still_plate_is_quasi_static():
    plant = MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.05))
    quasi = plant.quasi_static()
    rng = np.random.default_rng(2)
    x, xd = rolling_state(plant, rng, plate_rates=False)
    xdd, _ = plant.accelerations(x, xd, [0.0, 0.0])
    ref, _ = quasi.accelerations(x[:5], xd[:5], x[5:])
    # same equations when Omega = Omega' = 0: agreement to rounding (1e-12 of the ~1e2 rad/s^2 entries)
    np.testing.assert_allclose(xdd[:5], ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    # with the plate turning the ball feels it, and the plate follows u exactly
    x, xd = rolling_state(plant, rng)
    xdd, _ = plant.accelerations(x, xd, [0.7, -0.4])
    np.testing.assert_allclose(xdd[5:], [0.7, -0.4], rtol=0, atol=1e-14)
    assert np.abs(xdd[:2] - quasi.accelerations(x[:5], xd[:5], x[5:])[0][:2]).max() > 1e-3


@pytest.mark.parametrize("inertia_factor", [0.4, 2.0 / 3.0], ids=["solid", "hollow"])
def test_turntable_ball_circles_at_I_over_I_plus_mR2_of_the_table_rate(inertia_factor):
    # Known result (e.g. Weltner, Am. J. Phys. 55 (1987) 909): on a level table spinning at W
    # the centre of a rolling ball circles at W I/(I + m R^2) in the table's sense, whatever its
    # initial velocity: 2/7 for a solid ball, 2/5 for a thin shell.
    ball = BallPlateParameters(inertia=inertia_factor * 0.1 * 0.02 ** 2)
    plant = MovingPlateBallPlate(MovingPlateParameters(ball=ball, with_spin=True))
    table_rate = 10.0
    x0 = np.array([0.1, -0.05, 0.3, 0.2, 0.0, 0.0, 0.0, 0.4])
    xd0 = np.zeros(8)
    xd0[7] = table_rate
    xd0[:5] = plant.quasi_static().rolling_velocities(x0[:5], [0.05, 0.1], 1.0)
    t = np.linspace(0.0, 0.8, 81)
    r = ballctl.simulate(plant, x0, xd0, np.zeros(3), (0.0, 0.8), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12))
    c = plant.ball_centre_inertial(r.x)
    assert np.ptp(c[:, 2]) < 1e-12  # a level table: the centre stays at height R
    A = np.column_stack([2 * c[:, 0], 2 * c[:, 1], np.ones(len(t))])
    cx, cy, _ = np.linalg.lstsq(A, c[:, 0] ** 2 + c[:, 1] ** 2, rcond=None)[0]
    radius = np.hypot(c[:, 0] - cx, c[:, 1] - cy)
    angle = np.unwrap(np.arctan2(c[:, 1] - cy, c[:, 0] - cx))
    rate = np.polyfit(t, angle, 1)[0]
    expected = inertia_factor / (inertia_factor + 1.0) * table_rate
    # a circle (radius constant to the integration tolerance) run at the predicted rate; rtol 1e-10
    # integration leaves ~1e-8 in the fitted rate
    assert np.ptp(radius) < 1e-7
    assert rate == pytest.approx(expected, rel=1e-7)


def test_ball_and_beam_limit_matches_the_one_dimensional_equation():
    # Plate tilting about its x axis lying in the top surface (pivot_depth = 0), ball rolling along y:
    # T = m/2 ((y' - R a')^2 + y^2 a'^2) + I/2 (a' - y'/R)^2, V = m g y sin a give
    # y'' = k (y a'^2 - g sin a) + R a'',  k = m R^2 / (I + m R^2).
    plant = MovingPlateBallPlate()
    b = plant.params.ball
    amp, nu = 0.1, 3.0

    def a(t, order=0):
        return amp * nu ** order * np.sin(nu * t + order * np.pi / 2)

    x0 = np.zeros(7)
    x0[1], x0[2] = 0.05, np.pi / 2          # yaw 90 deg: moving along y is pure roll
    xd0 = np.zeros(7)
    xd0[5] = a(0.0, 1)
    xd0[:5] = plant.quasi_static().rolling_velocities(x0[:5], [0.0, 0.02], 0.0)
    t = np.linspace(0.0, 3.0, 61)
    r = ballctl.simulate(plant, x0, xd0, lambda tt: np.array([a(tt, 2), 0.0]), (0.0, 3.0), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
    k, g, R = b.rolling_gain, b.gravity, b.radius
    beam = solve_ivp(lambda tt, y: [y[1], k * (y[0] * a(tt, 1) ** 2 - g * np.sin(a(tt))) + R * a(tt, 2)],
                     (0.0, 3.0), [0.05, 0.02], t_eval=t, rtol=1e-12, atol=1e-14)
    # both integrated to ~1e-11; the ball moves ~0.1 m, so 1e-9 m is agreement to rounding of the method
    np.testing.assert_allclose(r.x[:, 1], beam.y[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.x[:, 0], 0.0, atol=1e-12)
    # the R a'' term is real: without it the 1-D model misses by millimetres
    no_r = solve_ivp(lambda tt, y: [y[1], k * (y[0] * a(tt, 1) ** 2 - g * np.sin(a(tt)))], (0.0, 3.0),
                     [0.05, 0.02], t_eval=t, rtol=1e-12, atol=1e-14)
    assert np.abs(no_r.y[0] - beam.y[0]).max() > 1e-3


def _power_balance(plant, x0, xd0, inputs, duration, energy, power):
    t = np.linspace(0.0, duration, 801)
    r = ballctl.simulate(plant, x0, xd0, inputs, (0.0, duration), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13, stabilization=None))
    P = np.array([power(x, xd, inputs(tt)) for tt, x, xd in zip(t, r.x, r.xd)])
    E = energy(r.x, r.xd)
    return simpson(P, x=t), E[-1] - E[0], np.ptp(E)


def test_work_of_the_plate_drive_equals_the_change_of_the_ball_energy():
    plant = MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.05))
    rng = np.random.default_rng(4)
    x0, xd0 = rolling_state(plant, rng)
    x0[5:] = [0.0, 0.05]
    xd0[5:] = [0.3, 0.0]

    def acc(t):
        return np.array([-0.3 * 3.0 * np.sin(3.0 * t), -0.05 * 4.0 * np.cos(2.0 * t)])

    def power(x, xd, u):
        xdd, _ = plant.accelerations(x, xd, u)
        return plant.drive_force(x, xd, xdd) @ xd[5:]

    work, change, swing = _power_balance(plant, x0, xd0, acc, 0.8, plant.ball_energy, power)
    # Simpson on 800 intervals of a smooth integrand: ~1e-9 relative; the energy swings by
    # `swing`, so a wrong coupling term (M_bp, h or g_v) would show at the percent level
    assert swing > 1e-3
    assert work == pytest.approx(change, rel=1e-7, abs=1e-9 * swing)


def test_servo_work_equals_change_of_ball_and_plate_energy():
    plant = ServoPlateBallPlate(MovingPlateParameters(pivot_depth=0.02), ServoParameters(bandwidth=30.0))
    rng = np.random.default_rng(5)
    x0, xd0 = rolling_state(plant, rng)
    x0[5:] = 0.0
    xd0[5:] = 0.0

    def cmd(t):
        return np.array([0.05 * np.sin(4.0 * t), 0.04 * np.sin(3.0 * t + 1.0)])

    def power(x, xd, u):
        return plant.servo_torque(x, xd, u) @ xd[5:]

    def energy(x, xd):
        return plant.ball_energy(x, xd) + plant.plate_kinetic_energy(x, xd)

    work, change, swing = _power_balance(plant, x0, xd0, cmd, 0.6, energy, power)
    assert swing > 1e-3
    assert work == pytest.approx(change, rel=1e-7, abs=1e-9 * swing)


def test_servo_follows_commands_as_a_second_order_system():
    # a light ball on a heavy plate: the plate angle obeys q'' = w^2 (u - q) - 2 z w q' to within
    # the ball's share of the inertia ((m R^2 + I)/J ~ 1e-3) and its gravity torque (m g R/(J w^2) ~ 2e-4)
    plant = ServoPlateBallPlate(servo=ServoParameters(bandwidth=40.0, damping=0.7))
    x0 = np.zeros(7)
    xd0 = np.zeros(7)
    t = np.linspace(0.0, 0.3, 31)
    r = ballctl.simulate(plant, x0, xd0, np.array([0.02, 0.0]), (0.0, 0.3), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-10))
    w, z = 40.0, 0.7
    wd = w * np.sqrt(1 - z ** 2)
    step = 0.02 * (1 - np.exp(-z * w * t) * (np.cos(wd * t) + z * w / wd * np.sin(wd * t)))
    np.testing.assert_allclose(r.x[:, 5], step, rtol=0, atol=3e-3 * 0.02)
    # ... and the ball's load is visible: an ideal servo would be exact
    assert np.abs(r.x[:, 5] - step).max() > 1e-5 * 0.02


def test_servo_inverse_and_limits():
    plant = ServoPlateBallPlate(servo=ServoParameters(max_torque=1.0, max_rate=2.0))
    rng = np.random.default_rng(6)
    x, xd = rolling_state(plant, rng)
    u = x[5:] + np.array([0.01, -0.02])
    tau = plant.servo_torque(x, xd, u)
    np.testing.assert_allclose(plant.commands_for_torque(x, xd, tau), u, rtol=0, atol=1e-12)
    assert np.all(np.abs(plant.servo_torque(x, xd, x[5:] + 10.0)) < 1.0)  # smooth saturation
    with pytest.raises(ValueError, match="reaches max_torque"):
        plant.commands_for_torque(x, xd, [1.5, 0.0])


@pytest.mark.parametrize("cls, kwargs, match", [
    (MovingPlateParameters, dict(pivot_depth=-0.01), r"pivot_depth must lie in \[0, 1\) m"),
    (MovingPlateParameters, dict(with_spin=1), "with_spin must be True or False"),
    (ServoParameters, dict(bandwidth=0.0), "bandwidth must be > 0 rad/s"),
    (ServoParameters, dict(plate_inertia=(1.0, 1.0)), "plate_inertia must have 3 entries"),
    (ServoParameters, dict(plate_inertia=(1.0, -1.0, 1.0)), r"plate_inertia\[1\] must be > 0"),
    (ServoParameters, dict(max_torque=-2.0), "max_torque must be > 0"),
])
def test_parameter_validation(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


@pytest.mark.parametrize("with_spin", [False, True])
def test_plate_forces_are_the_lagrange_velocity_terms_of_the_plate(with_spin):
    # Newton-Euler (the kernel: -G_p^T (J Gdot_p qd + Omega x J Omega)) against Lagrange on the plate's
    # kinetic energy T = 1/2 Omega^T J Omega: the velocity terms are -(d/dt dT/dqd |_{qdd=0} - dT/dq).
    # dT/dqd and dT/dq by complex step (exact), the mixed derivative by central differences: ~1e-9 relative.
    plant = ServoPlateBallPlate(MovingPlateParameters(with_spin=with_spin),
                                ServoParameters(plate_inertia=(0.05, 0.07, 0.11)))
    rng = np.random.default_rng(8)
    n, n_p = plant.n_coordinates, plant.n_plate
    x, xd = rolling_state(plant, rng)
    h = 1e-30

    def grad(fun, z, dz):
        # complex-step gradient of the scalar fun(z + dz) in each plate coordinate
        g = np.empty(n_p)
        for j in range(n_p):
            e = np.zeros(n, dtype=complex)
            e[5 + j] = 1j * h
            g[j] = fun(z + e, dz).imag / h
        return g

    def energy_q(q, qd):
        return plant.plate_kinetic_energy(q, qd + 0j)

    def energy_qd(qd, q):
        return plant.plate_kinetic_energy(q + 0j, qd)

    dT_dq = grad(energy_q, x + 0j, xd)
    eps = 1e-6
    step = np.zeros(n)
    step[5:] = xd[5:]
    mixed = (grad(energy_qd, xd + 0j, x + eps * step) - grad(energy_qd, xd + 0j, x - eps * step)) / (2 * eps)
    lagrange = -(mixed - dT_dq)
    kernel = plant.plate_forces(x, xd)
    np.testing.assert_allclose(kernel, lagrange, rtol=1e-7, atol=1e-9 * np.abs(lagrange).max())
    # the plate rows of Q are these terms plus the servo torques plus the ball's share
    ball = plant._ball_mass_and_forces(x, xd)[1][5:]
    u = x[5:] + 0.01
    np.testing.assert_allclose(plant.forces(x, xd, u)[5:], ball + kernel + plant.servo_torque(x, xd, u),
                               rtol=1e-13, atol=1e-15)
    # batches give the same numbers
    X = np.stack([x, x + 0.1])
    XD = np.stack([xd, xd])
    np.testing.assert_array_equal(plant.plate_forces(X, XD)[0], kernel)
