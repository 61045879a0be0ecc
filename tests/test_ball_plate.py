"""The ball-plate plant: M and Q against an independent Lagrangian derivation, and known physics."""

import numpy as np
import pytest

import ballctl


def rot(axis, a):
    c, s = np.cos(a), np.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def lagrangian(plant, u):
    """L = T - V with the angular velocity taken from Rdot R^T of the rotation matrices.

    Independent of the plant's G matrix: only the rotation sequence Rz Rx Ry and the
    gravity direction R2^T (0, 0, -g) with R2 = Rx(alpha) Ry(beta) are used.
    """
    p = plant.params
    R2 = rot("x", u[0]) @ rot("y", u[1])
    g_plate = R2.T @ np.array([0.0, 0.0, -p.gravity])

    def L(x, xd):
        def drot(axis, a):  # analytic derivative of an elementary rotation
            c, s = np.cos(a), np.sin(a)
            if axis == "x":
                return np.array([[0, 0, 0], [0, -s, -c], [0, c, -s]])
            if axis == "y":
                return np.array([[-s, 0, c], [0, 0, 0], [-c, 0, -s]])
            return np.array([[-s, -c, 0], [c, -s, 0], [0, 0, 0]])
        yaw, lean, roll = x[2:]
        Rz, Rx, Ry = rot("z", yaw), rot("x", lean), rot("y", roll)
        Rdot = (drot("z", yaw) @ Rx @ Ry * xd[2] + Rz @ drot("x", lean) @ Ry * xd[3]
                + Rz @ Rx @ drot("y", roll) * xd[4])
        W = Rdot @ (Rz @ Rx @ Ry).T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        T = 0.5 * p.mass * (xd[0] ** 2 + xd[1] ** 2) + 0.5 * p.ball_inertia * w @ w
        V = -p.mass * (g_plate[0] * x[0] + g_plate[1] * x[1] + g_plate[2] * p.radius)
        return T - V
    return L


def lagrange_mass_and_forces(plant, x, xd, u, h=1e-4):
    """M = d2L/dxd2 and Q = dL/dx - (d2L/dxd dx) xd by central differences.

    L is quadratic in xd, so the xd-differences are exact up to rounding; the x-differences
    carry an O(h^2) = 1e-8 relative truncation error.
    """
    L = lagrangian(plant, u)
    n = 5
    E = np.eye(n) * h
    M = np.zeros((n, n))
    Lx = np.zeros(n)
    mixed = np.zeros((n, n))
    for i in range(n):
        Lx[i] = (L(x + E[i], xd) - L(x - E[i], xd)) / (2 * h)
        for j in range(n):
            M[i, j] = (L(x, xd + E[i] + E[j]) - L(x, xd + E[i] - E[j]) - L(x, xd - E[i] + E[j])
                       + L(x, xd - E[i] - E[j])) / (4 * h * h)
            mixed[i, j] = (L(x + E[j], xd + E[i]) - L(x + E[j], xd - E[i]) - L(x - E[j], xd + E[i])
                           + L(x - E[j], xd - E[i])) / (4 * h * h)
    return M, Lx - mixed @ xd


@pytest.mark.parametrize("inertia_factor", [0.4, 2 / 3, 0.1])
def test_mass_matrix_and_forces_agree_with_lagrange(rng, inertia_factor):
    # independent route: finite-difference Lagrangian; tolerance 1e-6 relative covers its truncation
    plant = ballctl.BallPlate(mass=0.3, radius=0.03, inertia=inertia_factor * 0.3 * 0.03 ** 2)
    for _ in range(3):
        x = rng.uniform(-1, 1, 5)
        xd = rng.uniform(-2, 2, 5)
        u = rng.uniform(-0.3, 0.3, 2)
        M_ref, Q_ref = lagrange_mass_and_forces(plant, x, xd, u)
        M = plant.mass_matrix(x, u)
        Q = plant.forces(x, xd, u)
        np.testing.assert_allclose(M, M_ref, atol=1e-6 * np.abs(M).max())
        np.testing.assert_allclose(Q, Q_ref, atol=1e-6 * np.abs(Q).max())


# the contract over every registered plant: tests/test_plant_contract.py


def test_batch_evaluation_equals_loop(rng):
    plant = ballctl.BallPlate()
    X = rng.uniform(-1, 1, (4, 5))
    XD = rng.uniform(-1, 1, (4, 5))
    U = rng.uniform(-0.2, 0.2, (4, 2))
    for k in range(4):
        np.testing.assert_array_equal(plant.mass_matrix(X, U)[k], plant.mass_matrix(X[k], U[k]))
        np.testing.assert_array_equal(plant.forces(X, XD, U)[k], plant.forces(X[k], XD[k], U[k]))
        np.testing.assert_array_equal(plant.constraint_bias(X, XD)[k], plant.constraint_bias(X[k], XD[k]))


@pytest.mark.parametrize("inertia_factor", [0.4, 2 / 3])
def test_released_ball_accelerates_at_textbook_rate(inertia_factor):
    # a = m g R^2 sin(tilt) / (I + m R^2): 5/7 g sin for a solid ball, 3/5 g sin for a hollow one
    m, R, g = 0.1, 0.02, 9.81
    plant = ballctl.BallPlate(mass=m, radius=R, inertia=inertia_factor * m * R * R)
    tilt = 0.1
    u = [0.0, tilt]  # beta tilts the plate about its y axis: gravity along +x in the plate frame
    t = np.linspace(0, 1.0, 11)
    res = ballctl.simulate(plant, [0, 0, 0.3, 0.2, 0.0], np.zeros(5), u, (0, 1.0), t_eval=t)
    a = m * g * R * R * np.sin(tilt) / (inertia_factor * m * R * R + m * R * R)
    # exact polynomial solution; tolerance 1e-9 m is the integrator's (rtol 1e-10)
    np.testing.assert_allclose(res.x[:, 0], 0.5 * a * t ** 2, atol=1e-9)
    np.testing.assert_allclose(res.x[:, 1], 0.0, atol=1e-12)
    assert res.max_constraint_residual < 1e-10


def test_spin_energy_and_contact_motion_survive_chart_changes():
    # a free ball on a fixed tilted plate: its lean drifts to the chart's singularity within
    # seconds; with rechart=True the run goes on, and the physics must not notice: the spin
    # about the normal and the energy stay constant, and the contact point moves exactly as
    # a ball released with that velocity (constant acceleration k_b g_plate).
    plant = ballctl.BallPlate()
    x0 = np.array([0.0, 0.0, 0.2, 0.3, 0.0])
    v0 = np.array([0.05, -0.02])
    xd0 = plant.rolling_velocities(x0, v0, spin=3.0)
    u = np.array([0.05, -0.03])
    t = np.linspace(0, 6.0, 61)
    with pytest.raises(ballctl.errors.ChartSingularityError, match="rechart=True"):
        ballctl.simulate(plant, x0, xd0, u, (0, 6.0), t_eval=t)
    res = ballctl.simulate(plant, x0, xd0, u, (0, 6.0), t_eval=t, options=ballctl.SimulationOptions(rechart=True))
    assert len(res.chart_changes) >= 1
    spin = plant.spin(res.x, res.xd)
    energy = plant.kinetic_energy(res.x, res.xd) + plant.potential_energy(res.x, np.tile(u, (61, 1)))
    # tolerances: integrator accuracy (rtol 1e-10) accumulated over 6 s
    assert np.abs(spin - 3.0).max() < 1e-7
    assert np.abs(energy - energy[0]).max() < 1e-9
    acc = plant.params.rolling_gain * plant.gravity_in_plate(u)[:2]
    expected = v0 * t[:, None] + 0.5 * acc * t[:, None] ** 2
    np.testing.assert_allclose(res.x[:, :2], expected, atol=1e-8)
    assert res.max_constraint_residual < 1e-8


@pytest.mark.parametrize("kwargs, match", [
    (dict(mass=0.0), "mass must be > 0"),
    (dict(radius=-1.0), "radius must be > 0"),
    (dict(inertia=0.0), "inertia must be > 0"),
    (dict(gravity=float("nan")), "gravity must be finite"),
])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ballctl.BallPlate(**kwargs)
