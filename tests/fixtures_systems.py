"""Constrained systems built from the public interface alone, used as test fixtures."""

import numpy as np

import ballctl


def knife_edge(mass=2.0, inertia=0.3):
    """Knife edge / Chaplygin sleigh with the contact at the CM: (x, y, heading), one nonholonomic constraint.

    Inputs: forward force F (N) along the blade and torque tau (N m). Constraint
    ``xd sin(h) - yd cos(h) = 0`` (no sideways slip).
    """
    def M(x, u):
        return np.diag(np.array([mass, mass, inertia], dtype=np.result_type(x, u, float)))

    def Q(x, xd, u):
        h = x[2]
        return np.array([u[0] * np.cos(h), u[0] * np.sin(h), u[1] + 0 * h])

    def D(x):
        h = x[2]
        return np.array([[np.sin(h), -np.cos(h), 0 * h]])

    return ballctl.ConstrainedSystem(
        n_coordinates=3, n_holonomic=0, n_nonholonomic=1, n_inputs=2, coordinate_names=("x", "y", "heading"),
        input_names=("force", "torque"),
        equations=ballctl.SystemEquations(
            mass_matrix=M,
            forces=Q,
            constraint_jacobian=D,
        ),
    )


def cart_pendulum(mass=1.0, length=0.8, g=9.81):
    """Point-mass pendulum in Cartesian coordinates (x, y): one holonomic constraint, a horizontal push."""
    return ballctl.ConstrainedSystem(
        n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=1, coordinate_names=("px", "py"),
        input_names=("push",),
        equations=ballctl.SystemEquations(
            mass_matrix=lambda x, u: mass * np.eye(2, dtype=np.result_type(x, u, float)),
            forces=lambda x, xd, u: np.array([u[0] + 0 * x[0], -mass * g + 0 * x[1]]),
            holonomic=lambda x: np.array([x[0] ** 2 + x[1] ** 2 - length ** 2]),
            constraint_jacobian=lambda x: np.array([[2 * x[0], 2 * x[1]]]),
        ),
    )


def rolling_coin_on_rail(mass=1.0, inertia=0.2, radius=0.1, g=9.81):
    """A disk rolling along a slope line with a holonomic and a nonholonomic constraint.

    Coordinates (s, z, angle): position along the line, height, rotation angle.
    Holonomic: z - slope*s = 0 (stays on the incline); nonholonomic (here
    integrable, but written at velocity level): sd - radius*angled = 0.
    Input: torque on the disk.
    """
    slope = 0.2

    def M(x, u):
        return np.diag(np.array([mass, mass, inertia], dtype=np.result_type(x, u, float)))

    def Q(x, xd, u):
        return np.array([0 * x[0], -mass * g + 0 * x[1], u[0] + 0 * x[2]])

    return ballctl.ConstrainedSystem(
        n_coordinates=3, n_holonomic=1, n_nonholonomic=1, n_inputs=1, coordinate_names=("s", "z", "angle"),
        input_names=("torque",),
        equations=ballctl.SystemEquations(
            mass_matrix=M,
            forces=Q,
            holonomic=lambda x: np.array([x[1] - slope * x[0]]),
            constraint_jacobian=lambda x: np.array([[-slope, 1.0, 0.0], [1.0, 0.0, -radius]]) + 0 * x[0],
        ),
    )


class SampledReference(ballctl.Reference):
    """A reference from closed-form callables (t -> x, xd, xdd, u, lam), for fixtures."""

    def __init__(self, system, fn, period=None):
        self.system = system
        self.fn = fn
        self.period = period

    def _evaluate(self, t):
        x, xd, xdd, u, lam = self.fn(t)
        return ballctl.ReferenceSample(t, x, xd, xdd, u, np.zeros_like(u), lam)
