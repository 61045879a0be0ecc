"""The common ConstrainedSystem interface on systems written from plain callables."""

import numpy as np
import pytest

import ballctl
from ballctl._derivatives import directional_derivative, jacobian


def pendulum_system(length=1.5, g=9.81):
    """A planar point-mass pendulum in Cartesian coordinates: one holonomic constraint."""
    return ballctl.ConstrainedSystem(
        n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=1, coordinate_names=("px", "py"),
        input_names=("push",),
        equations=ballctl.SystemEquations(
            mass_matrix=lambda x, u: np.eye(2, dtype=np.result_type(x, float)),
            forces=lambda x, xd, u: np.array([u[0], -g + 0 * x[1]], dtype=np.result_type(x, u, float)),
            holonomic=lambda x: np.array([x[0] ** 2 + x[1] ** 2 - length ** 2]),
            constraint_jacobian=lambda x: np.array([[2 * x[0], 2 * x[1]]]),
        ),
    )


def test_pendulum_accelerations_match_polar_equation():
    # theta'' = -(g/L) sin(theta) + F cos(theta)/L for a push F along x; tolerance: rounding only
    L, g = 1.5, 9.81
    sys = pendulum_system(L, g)
    for theta, dtheta, F in [(0.3, 0.7, 0.0), (-1.1, 2.0, 0.5), (2.5, -0.4, -1.0)]:
        x = np.array([L * np.sin(theta), -L * np.cos(theta)])
        xd = np.array([L * np.cos(theta), L * np.sin(theta)]) * dtheta
        xdd, lam = sys.accelerations(x, xd, [F])
        ddtheta = -(g / L) * np.sin(theta) + F * np.cos(theta) / L
        expected = (np.array([L * np.cos(theta), L * np.sin(theta)]) * ddtheta
                    + np.array([-L * np.sin(theta), L * np.cos(theta)]) * dtheta ** 2)
        np.testing.assert_allclose(xdd, expected, atol=1e-12)
        # the multiplier is the rod tension divided by 2L (D = 2 x^T)
        tension = g * np.cos(theta) + L * dtheta ** 2 + F * np.sin(theta)
        np.testing.assert_allclose(lam[0] * 2 * L, tension, rtol=1e-12)
        assert abs(sys.dynamics_residual(x, xd, xdd, lam, [F])).max() < 1e-12


def test_numeric_constraint_bias_is_exact_for_user_systems():
    sys = pendulum_system()
    x, xd = np.array([0.4, -1.2]), np.array([0.9, 0.3])
    # D(x) = 2 x^T so Ddot xd = 2 |xd|^2 exactly
    np.testing.assert_allclose(sys.constraint_bias(x, xd), [2 * xd @ xd], rtol=1e-14)


def test_check_system_passes_clean_systems_and_reports_problems():
    sys = pendulum_system()
    assert ballctl.check_system(sys, [0.3, -1.0], [0.2, 0.1], [0.0]) == []
    bad = ballctl.ConstrainedSystem(
        n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=0,
        equations=ballctl.SystemEquations(
            mass_matrix=lambda x, u: np.array([[1.0, 0.5], [0.0, 1.0]]),
            forces=lambda x, xd, u: np.zeros(2),
            holonomic=lambda x: np.array([x[0] ** 2 + x[1] ** 2 - 1.0]),
            constraint_jacobian=lambda x: np.array([[x[0], x[1]]]),
        ),
    )  # wrong factor 2
    problems = ballctl.check_system(bad, [0.6, 0.8], [0.8, -0.6], [])
    assert any("not symmetric" in p for p in problems)
    assert any("dC/dx" in p for p in problems)


def test_projection_restores_constraints():
    sys = pendulum_system(1.0)
    x = sys.project_positions([0.9, -0.7])
    assert abs(sys.holonomic(x)[0]) < 1e-13
    xd = sys.project_velocities(x, [1.0, 1.0])
    assert abs(sys.constraint_jacobian(x) @ xd)[0] < 1e-13


def test_complex_step_and_fallback_derivatives():
    f = lambda x: np.array([np.sin(x[0]) * x[1], x[0] ** 3])  # noqa: E731
    x = np.array([0.7, -1.3])
    J, used = jacobian(f, x)
    assert used == "complex-step"
    exact = np.array([[np.cos(0.7) * -1.3, np.sin(0.7)], [3 * 0.49, 0.0]])
    np.testing.assert_allclose(J, exact, rtol=1e-15, atol=1e-15)
    g = lambda x: np.array([float(np.sin(x[0].real))])  # noqa: E731  (not complex-safe)
    d, used = directional_derivative(g, np.array([0.7]), np.array([1.0]))
    assert used == "central"
    np.testing.assert_allclose(d, [np.cos(0.7)], rtol=1e-9)  # 4th-order central differences


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_coordinates=0), "n_coordinates must be >= 1"),
    (dict(n_holonomic=-1), "n_holonomic must be a non-negative integer"),
    (dict(n_nonholonomic=2), "at least one degree of freedom"),
    (dict(mass_matrix=None), "missing: mass_matrix"),
    (dict(holonomic=None), r"holonomic \(required"),
    (dict(coordinate_names=("a",)), "coordinate_names must have 2 entries"),
])
def test_bad_system_definitions_raise(kwargs, match):
    base = dict(n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=0)
    equations = dict(mass_matrix=lambda x, u: np.eye(2), forces=lambda x, xd, u: np.zeros(2),
                     holonomic=lambda x: np.array([x[0]]), constraint_jacobian=lambda x: np.array([[1.0, 0.0]]))
    for key, value in kwargs.items():
        (equations if key in equations else base)[key] = value
    with pytest.raises(ValueError, match=match):
        ballctl.ConstrainedSystem(**base, equations=ballctl.SystemEquations(**equations))
