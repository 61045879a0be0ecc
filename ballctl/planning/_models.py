"""Numpy and CasADi views of the plants the maneuver planner takes (one adapter per plant family).

:func:`plant_model` wraps a :class:`~ballctl.plants.rolling_ball.RollingBall` (state eq. 7.1 of
Putkaradze & Rogers 2018: ``theta (n), theta_dot (n), q (4), Omega (3), contact (2)``) or a
:class:`~ballctl.plants.rolling_disk.RollingDisk` (eq. 6.1: ``theta (n), theta_dot (n), phi, phi_dot``)
in one interface: the right-hand side for the transcription (CasADi) and for re-simulation (numpy),
the contact point and its velocity, the rest conditions, the invariant ``|q| = 1`` and a straight-roll
initial guess. The equations themselves live in the plants (:mod:`ballctl.plants`) and their
symbolic twins (:mod:`ballctl.planning.symbolic`).
"""

from __future__ import annotations

import numpy as np

from .._errors import ParameterError
from .._quaternion import quat_multiply, quat_to_matrix
from .._validation import as_vector
from ..plants.rolling_ball import RollingBall
from ..plants.rolling_disk import RollingDisk
from ._casadi import require_casadi
from .symbolic import (
    ball_contact_force_function,
    ball_rhs_function,
    disk_contact_force_function,
    disk_rhs_function,
    quat_to_matrix_casadi,
)

__all__ = ["BallModel", "DiskModel", "plant_model"]


class BallModel:
    def __init__(self, plant: RollingBall) -> None:
        self.plant = plant
        n = plant.n_masses
        self.n, self.n_x, self.n_u, self.dim = n, 2 * n + 9, n, 2
        self.q_slice = slice(2 * n, 2 * n + 4)
        self.rest_indices = list(range(n, 2 * n)) + list(range(2 * n + 4, 2 * n + 7))
        self.rails = [pm.rail for pm in plant.params.point_masses]
        self.weight_N = float(plant.masses_kg.sum()) * plant.params.gravity_mps2   # M g: the contact forces' scale

    def validate(self, x0):
        return self.plant.validate_state(x0, "initial_state")

    def f_casadi(self):
        ca = require_casadi()
        f = ball_rhs_function(self.plant)
        x, u, z = ca.SX.sym("x", self.n_x), ca.SX.sym("u", self.n_u), ca.SX.sym("mu", 1)
        e = ca.SX.zeros(self.n_x, 1)
        e[self.q_slice] = x[self.q_slice]
        faug = ca.Function("f", [x, u, z], [f(x, u) + z * e])
        h = ca.Function("h", [x], [ca.sumsqr(x[self.q_slice]) - 1.0])
        return faug, 1, h

    def f_numpy(self, x, u):
        return self.plant.rhs(0.0, x, u)

    def contact_force_casadi(self):
        return ball_contact_force_function(self.plant)

    def contact_casadi(self, X):
        """Contact points ``(e1, e2)`` of state columns, shape (2, P)."""
        return X[2 * self.n + 7:2 * self.n + 9, :]

    def contact_velocity_casadi(self, F):
        return F[2 * self.n + 7:2 * self.n + 9, :]

    def heading_axis_casadi(self, x):
        """Floor projection ``(Lambda_11, Lambda_21)`` of the body's first axis at one state column."""
        Lam = quat_to_matrix_casadi(x[self.q_slice])
        return Lam[0, 0], Lam[1, 0]

    def heading(self, x):
        Lam = quat_to_matrix(np.asarray(x)[..., self.q_slice])
        return np.arctan2(Lam[..., 1, 0], Lam[..., 0, 0])

    def contact(self, x, x0):
        return np.asarray(x)[..., 2 * self.n + 7:]

    def renormalize(self, X):
        X = X.copy()
        q = X[:, self.q_slice]
        err = float(np.max(np.abs(np.linalg.norm(q, axis=1) - 1.0)))
        X[:, self.q_slice] = q / np.linalg.norm(q, axis=1, keepdims=True)
        return X, err

    def rolling_guess(self, x0, contact, times, rail_travel):
        """States that roll without slip along a contact path while the masses travel on their rails.

        Parameters
        ----------
        x0 : ndarray, shape (n_x,)
            The start.
        contact : ndarray, shape (P, 2)
            Contact points in m at ``times`` (the first one the start's).
        times : ndarray, shape (P,)
            Increasing times in s from 0.
        rail_travel : ndarray, shape (n,)
            Each mass's travel along its rail over the maneuver (rad; m on a
            segment rail), with the smoothstep profile ``3 s^2 - 2 s^3`` of ``s = t / T``.

        Returns
        -------
        ndarray, shape (P, n_x)
            The attitude composes the rotations about ``e3 x d`` by ``|d| / r``
            of the contact steps ``d`` (rolling without slip, eq. 5.11), the body
            rate is ``Omega = Lambda^T (-z2_dot, z1_dot, 0) / r``.
        """
        n, r = self.n, self.plant.params.radius_m
        X = _rails_guess(x0, n, times, rail_travel)
        X[:, 2 * n + 7:] = contact
        q = np.empty((times.size, 4))
        q[0] = x0[2 * n:2 * n + 4]
        steps = np.diff(contact, axis=0)
        for j, d in enumerate(steps):
            dist = float(np.hypot(*d))
            if dist == 0.0:
                q[j + 1] = q[j]
                continue
            axis = np.array([-d[1], d[0], 0.0]) / dist
            half = 0.5 * dist / r
            q[j + 1] = quat_multiply(np.concatenate([[np.cos(half)], np.sin(half) * axis]), q[j])
        X[:, 2 * n:2 * n + 4] = q
        vel = np.gradient(contact, times, axis=0)
        omega = np.column_stack([-vel[:, 1], vel[:, 0], np.zeros(times.size)]) / r
        X[:, 2 * n + 4:2 * n + 7] = np.einsum("kji,kj->ki", quat_to_matrix(q), omega)
        return X


def _rails_guess(x0, n, times, rail_travel):
    s = times / times[-1]
    prog, dprog = 3 * s ** 2 - 2 * s ** 3, (6 * s - 6 * s ** 2) / times[-1]
    X = np.tile(np.asarray(x0, dtype=float), (times.size, 1))
    travel = np.asarray(rail_travel, dtype=float)
    X[:, :n] = X[0, :n] + prog[:, None] * travel
    X[:, n:2 * n] = dprog[:, None] * travel
    return X


class DiskModel:
    def __init__(self, plant: RollingDisk) -> None:
        self.plant = plant
        n = plant.n_masses
        self.n, self.n_x, self.n_u, self.dim = n, 2 * n + 2, n, 1
        self.q_slice = None
        self.rest_indices = list(range(n, 2 * n)) + [2 * n + 1]
        self.rails = [pm.rail for pm in plant.params.point_masses]
        self.weight_N = float(plant.masses_kg.sum()) * plant.params.gravity_mps2

    def validate(self, x0):
        return as_vector(x0, "initial_state", self.n_x)

    def f_casadi(self):
        ca = require_casadi()
        f = disk_rhs_function(self.plant)
        x, u, z = ca.SX.sym("x", self.n_x), ca.SX.sym("u", self.n_u), ca.SX.sym("z", 0)
        return ca.Function("f", [x, u, z], [f(x, u)]), 0, None

    def f_numpy(self, x, u):
        return self.plant.rhs(0.0, x, u)

    def contact_force_casadi(self):
        return disk_contact_force_function(self.plant)

    def contact_casadi(self, X):
        """e1 travel of the contact point from the first column's (eq. 5.41), shape (1, P)."""
        r = self.plant.params.radius_m
        return -r * (X[2 * self.n, :] - X[2 * self.n, 0])

    def contact_velocity_casadi(self, F):
        return -self.plant.params.radius_m * F[2 * self.n, :]

    def contact(self, x, x0):
        """e1 travel of the contact point from the start (eq. 5.41), shape (..., 1)."""
        r = self.plant.params.radius_m
        return (-r * (np.asarray(x)[..., 2 * self.n] - x0[2 * self.n]))[..., None]

    def renormalize(self, X):
        return X.copy(), 0.0

    def rolling_guess(self, x0, contact, times, rail_travel):
        """States that roll without slip along a contact travel while the masses travel on their rails.

        Parameters
        ----------
        x0 : ndarray, shape (n_x,)
        contact : ndarray, shape (P, 1)
            e1 travel of the contact point from the start in m.
        times : ndarray, shape (P,)
        rail_travel : ndarray, shape (n,)
            As for the ball.

        Returns
        -------
        ndarray, shape (P, n_x)
            ``phi = phi_0 - travel / r`` (eq. 5.41).
        """
        n, r = self.n, self.plant.params.radius_m
        X = _rails_guess(x0, n, times, rail_travel)
        travel = np.asarray(contact, dtype=float)[:, 0]
        X[:, 2 * n] = x0[2 * n] - travel / r
        X[:, 2 * n + 1] = -np.gradient(travel, times) / r
        return X


def plant_model(plant):
    if isinstance(plant, RollingBall):
        return BallModel(plant)
    if isinstance(plant, RollingDisk):
        return DiskModel(plant)
    raise ParameterError(f"plant must be a RollingBall or a RollingDisk, got {type(plant).__name__}")
