r"""Compiled equations of the quasi-static ball-plate (:class:`~ballctl.BallPlate`).

The single source of the plant's equations; the derivation is in
:mod:`ballctl.plants.ball_plate`. Parameters are packed as
``p = (mass kg, radius m, inertia kg m^2, gravity m/s^2, rolling_resistance)``
(see :meth:`~ballctl.BallPlate.kernel_parameters`); ``x = (contact_x, contact_y,
yaw, lean, roll)``, ``u = (alpha, beta)`` in rad.

Rolling resistance (``c = p[4]``, dimensionless): a couple on the ball

.. math::

    \tau = -c\,N R\,\frac{\omega_t}{\sqrt{|\omega_t|^2 + \varepsilon^2}},\qquad
    \omega_t = (\omega_x, \omega_y, 0),\qquad \varepsilon = v_\varepsilon / R,

opposing the rolling part of the ball's angular velocity relative to the
plate (the spin about the normal is not resisted), with
:data:`ROLLING_SPEED_SCALE` :math:`v_\varepsilon = 10^{-4}` m/s the contact
speed below which the direction is smoothed (the right-hand side stays
analytic, for the integrators and complex steps: only ``sqrt`` of a sum of
squares, no ``abs``). It enters ``Q`` through the virtual power,
``Q += G^T tau`` with ``omega = G(x) xd`` (:func:`rolling_couple`). In this
quasi-static model the ball centre stays at height R in the plate frame,
which is treated as inertial with gravity ``g_plate``, so the normal force is
exactly ``N = -m g_plate,z = m g cos(alpha) cos(beta)`` (no dependence on the
accelerations). With ``c = 0`` the couple is skipped (bit-identical to the
model without it).

Contact force (:func:`contact_forces`): Newton's equation of the ball in the
plate frame, ``F = m (a_G - g_plate)`` with ``a_G = (xdd_0, xdd_1, 0)`` from
the exact index-1 accelerations; ``F_xy = -lam`` (the friction force) and
``F_z = N``.

Structured index-1 solve: the rolling constraints read
``D = [I_2 | E(x)]`` with ``E`` acting on the angles ``(yaw, lean, roll)``
and ``M = m I_2 (+) M_a``. Eliminating the contact accelerations and the
multipliers leaves one 3x3 symmetric positive definite system

.. math::

    (M_a + m E^T E)\,\ddot q_a = Q_a - E^T (Q_c - m\,r),\qquad
    \ddot x_c = r - E\ddot q_a,\qquad \Lambda = Q_c - m\,\ddot x_c,

with ``r`` the right-hand side of the acceleration-level constraint
``D xdd = r = -Ddot xd - 2a D xd``.

References
----------
Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, eqs. (31)-(48), (90)-(115).
"""

from __future__ import annotations

import numpy as np
from numba import carray

from ..._jit import njit
from ..._linalg import solve_symmetric_inplace, zero_matrix

#: the compiled loop's interface (the other kernels are the plants' internals, imported by name)
__all__ = ["CHART_COORDINATES", "N_PARAMETERS", "RECHART_LEAN", "accelerations", "constraint_jacobian",
           "contact_forces", "keep_chart", "loop_accelerations", "loop_constraint_jacobian", "loop_keep_chart",
           "rechart"]

N_COORDINATES = 5
N_CONSTRAINTS = 2
N_INPUTS = 2
N_PARAMETERS = 5

#: contact speed v_eps in m/s below which the rolling-resistance direction is smoothed (eps = v_eps / R in rad/s)
ROLLING_SPEED_SCALE = 1e-4

#: lean in rad beyond which the closed loops re-chart the truth ball (:func:`keep_chart`): 70 deg, where
#: ``roll' = .../cos(lean)`` is amplified 2.9 times, well before the chart's singularity at 90 deg
RECHART_LEAN = float(np.deg2rad(70.0))
_COS_RECHART_LEAN = float(np.cos(RECHART_LEAN))
#: indices of the coordinates :func:`rechart` re-chooses, (yaw, lean, roll): a controller that reads them (or their
#: rates) reads the chart, and the closed loops then leave the truth's chart alone
CHART_COORDINATES = (2, 3, 4)


@njit(cache=True, inline="always")
def rolling_couple(w0, w1, normal, c, R):
    r"""Rolling-resistance couple on the ball, plate components ``(tau_x, tau_y)`` in N m (``tau_z = 0``).

    :math:`\tau_t = -c N R\,\omega_t / \sqrt{|\omega_t|^2 + \varepsilon^2}` with
    :math:`\omega_t = (w_0, w_1)` the rolling part (rad/s) of the ball's angular
    velocity relative to the plate, ``normal`` N in N, ``c`` dimensionless,
    ``R`` in m and :math:`\varepsilon` = :data:`ROLLING_SPEED_SCALE` / R;
    analytic in ``w0, w1, normal`` (complex-step safe).
    """
    eps = ROLLING_SPEED_SCALE / R
    scale = -(c * R) * normal / np.sqrt(w0 * w0 + w1 * w1 + eps * eps)
    return scale * w0, scale * w1


@njit(cache=True)
def rechart(y, n):
    r"""The same physical state in a fresh chart of the ball, lean = roll = 0, in place on ``y = (x, xd)``.

    The ball is isotropic, so its body axes may be re-chosen at any instant
    without changing the physics: the new body frame is ``R_rel = Rz(yaw)``
    (same yaw), the contact point and the angular velocity in the plate frame

    .. math:: \omega = (\dot\phi c_\psi - \dot\theta s_\psi c_\phi,\;
              \dot\phi s_\psi + \dot\theta c_\psi c_\phi,\; \dot\psi + \dot\theta s_\phi)

    are unchanged, so the new rates are ``yaw' + roll' sin(lean)``, ``lean'`` and
    ``roll' cos(lean)``. ``x[2:5] = (yaw, lean, roll)`` for every plant of the ball
    on a plate (the ball's coordinates come first), so this serves them all.

    Parameters
    ----------
    y : ndarray, shape (2n,), float64
        Coordinates then velocities; overwritten.
    n : int
        Number of coordinates.
    """
    sph = np.sin(y[3])
    cph = np.cos(y[3])
    y[n + 2] = y[n + 2] + y[n + 4] * sph
    y[n + 4] = y[n + 4] * cph
    y[3] = 0.0
    y[4] = 0.0


@njit(cache=True)
def keep_chart(y, n):
    """:func:`rechart` ``y`` in place when ``|lean| > RECHART_LEAN``; whether it did.

    The closed loops (compiled and Python) call it after every control step on
    the truth's state, so a truth ball whose orientation drifts from the
    reference's (another radius, a slipping start) never reaches the chart's
    singularity: the contact motion is unchanged, only the angles that describe
    an isotropic ball's orientation are re-chosen.

    Parameters
    ----------
    y : ndarray, shape (2n,), float64
        Coordinates then velocities.
    n : int
        Number of coordinates.
    """
    if np.cos(y[3]) < _COS_RECHART_LEAN:
        rechart(y, n)
        return True
    return False


@njit(cache=True)
def mass_matrix(x, p, out):
    """M(x), shape (5, 5), written into ``out`` (independent of the inputs)."""
    mass, inertia = p[0], p[2]
    sph = np.sin(x[3])
    zero_matrix(out)
    out[0, 0] = mass
    out[1, 1] = mass
    out[2, 2] = inertia
    out[3, 3] = inertia
    out[4, 4] = inertia
    out[2, 4] = inertia * sph
    out[4, 2] = inertia * sph


@njit(cache=True, inline="always")
def forces(x, xd, u, p, out):
    """Q(x, xd, u), shape (5,): gravity in the plate frame, the gyroscopic terms and, for ``c = p[4] > 0``,
    the rolling-resistance couple ``G^T tau`` (module docstring) with ``N = m g cos(alpha) cos(beta)``."""
    mass, inertia, g = p[0], p[2], p[3]
    ca = np.cos(u[0])
    sa = np.sin(u[0])
    sb = np.sin(u[1])
    cph = np.cos(x[3])
    dpsi, dphi, dth = xd[2], xd[3], xd[4]
    out[0] = mass * (g * (ca * sb))
    out[1] = mass * (g * (-sa))
    out[2] = -inertia * dth * dphi * cph
    out[3] = inertia * dpsi * dth * cph
    out[4] = -inertia * dpsi * dphi * cph
    if p[4] > 0.0:
        cps = np.cos(x[2])
        sps = np.sin(x[2])
        # omega_x = dphi cps - dth sps cph, omega_y = dphi sps + dth cps cph (the rows of G used here)
        w0 = dphi * cps - dth * sps * cph
        w1 = dphi * sps + dth * cps * cph
        t0, t1 = rolling_couple(w0, w1, mass * g * (ca * np.cos(u[1])), p[4], p[1])
        out[3] += cps * t0 + sps * t1
        out[4] += cph * (cps * t1 - sps * t0)


@njit(cache=True, inline="always")
def constraint_jacobian(x, p, out):
    """Rolling constraints B(x) of eqs. (43)-(44), shape (2, 5)."""
    R = p[1]
    cps = np.cos(x[2])
    sps = np.sin(x[2])
    cph = np.cos(x[3])
    zero_matrix(out)
    out[0, 0] = 1.0
    out[0, 3] = -R * sps
    out[0, 4] = -R * cps * cph
    out[1, 1] = 1.0
    out[1, 3] = R * cps
    out[1, 4] = -R * sps * cph


@njit(cache=True, inline="always")
def constraint_bias(x, xd, p, out):
    """``Ddot(x, xd) xd``, shape (2,)."""
    R = p[1]
    cps = np.cos(x[2])
    sps = np.sin(x[2])
    cph = np.cos(x[3])
    sph = np.sin(x[3])
    dpsi, dphi, dth = xd[2], xd[3], xd[4]
    out[0] = R * (-cps * dpsi * dphi + sps * cph * dpsi * dth + cps * sph * dphi * dth)
    out[1] = R * (-sps * dpsi * dphi - cps * cph * dpsi * dth + sps * sph * dphi * dth)


@njit(cache=True)
def accelerations(x, xd, u, p, a, b, xdd, lam):
    """Structured index-1 solve (module docstring): ``xdd (5,)`` and ``lam (2,)``.

    ``a`` damps the velocity residual ``D xd`` at ``2a`` (1/s); ``b`` is
    unused (no holonomic constraints).
    """
    mass, R, inertia = p[0], p[1], p[2]
    cps = np.cos(x[2])
    sps = np.sin(x[2])
    cph = np.cos(x[3])
    sph = np.sin(x[3])
    dpsi, dphi, dth = xd[2], xd[3], xd[4]
    # E = D[:, 2:5]
    e01 = -R * sps
    e02 = -R * cps * cph
    e11 = R * cps
    e12 = -R * sps * cph
    # r = -Ddot xd - 2a D xd
    r0 = -(R * (-cps * dpsi * dphi + sps * cph * dpsi * dth + cps * sph * dphi * dth)) \
        - 2.0 * a * (xd[0] + e01 * dphi + e02 * dth)
    r1 = -(R * (-sps * dpsi * dphi - cps * cph * dpsi * dth + sps * sph * dphi * dth)) \
        - 2.0 * a * (xd[1] + e11 * dphi + e12 * dth)
    Q = np.empty(5, dtype=xdd.dtype)
    forces(x, xd, u, p, Q)
    A = np.empty((3, 3), dtype=xdd.dtype)
    A[0, 0] = inertia
    A[0, 1] = 0.0
    A[0, 2] = inertia * sph
    A[1, 1] = inertia + mass * (e01 * e01 + e11 * e11)
    A[1, 2] = mass * (e01 * e02 + e11 * e12)
    A[2, 2] = inertia + mass * (e02 * e02 + e12 * e12)
    A[1, 0] = A[0, 1]
    A[2, 0] = A[0, 2]
    A[2, 1] = A[1, 2]
    c0 = Q[0] - mass * r0
    c1 = Q[1] - mass * r1
    z = np.empty(3, dtype=xdd.dtype)
    z[0] = Q[2]
    z[1] = Q[3] - (e01 * c0 + e11 * c1)
    z[2] = Q[4] - (e02 * c0 + e12 * c1)
    solve_symmetric_inplace(A, z)
    xdd[2] = z[0]
    xdd[3] = z[1]
    xdd[4] = z[2]
    xdd[0] = r0 - (e01 * z[1] + e02 * z[2])
    xdd[1] = r1 - (e11 * z[1] + e12 * z[2])
    lam[0] = Q[0] - mass * xdd[0]
    lam[1] = Q[1] - mass * xdd[1]


@njit(cache=True)
def contact_forces(x, xd, u, p, out):
    """Contact force of the plate on the ball in plate axes, ``out (3,) = (F_x, F_y, N)`` in N.

    ``F = m (a_G - g_plate)``, ``a_G = (xdd_0, xdd_1, 0)`` from the exact index-1 accelerations
    (no Baumgarte terms): ``F_xy = -lam`` (friction), ``N = m g cos(alpha) cos(beta)``.
    """
    mass, g = p[0], p[3]
    xdd = np.empty(5, dtype=out.dtype)
    lam = np.empty(2, dtype=out.dtype)
    accelerations(x, xd, u, p, 0.0, 0.0, xdd, lam)
    ca = np.cos(u[0])
    out[0] = mass * (xdd[0] - g * (ca * np.sin(u[1])))
    out[1] = mass * (xdd[1] + g * np.sin(u[0]))
    out[2] = mass * g * (ca * np.cos(u[1]))


@njit(cache=True)
def mass_matrix_batch(x, p):
    """``mass_matrix`` over a stack ``x (K, 5)``: returns ``(K, 5, 5)`` of ``x``'s dtype."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    out = np.empty((x.shape[0], 5, 5), dtype=x.dtype)
    for k in range(x.shape[0]):
        mass_matrix(x[k], q, out[k])
    return out


@njit(cache=True)
def forces_batch(x, xd, u, p):
    """``forces`` over stacks ``(K, 5), (K, 5), (K, 2)`` of one dtype: returns ``(K, 5)``."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    out = np.empty((x.shape[0], 5), dtype=x.dtype)
    for k in range(x.shape[0]):
        forces(x[k], xd[k], u[k], q, out[k])
    return out


@njit(cache=True)
def constraint_jacobian_batch(x, p):
    """``constraint_jacobian`` over ``x (K, 5)``: returns ``(K, 2, 5)``."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    out = np.empty((x.shape[0], 2, 5), dtype=x.dtype)
    for k in range(x.shape[0]):
        constraint_jacobian(x[k], q, out[k])
    return out


@njit(cache=True)
def constraint_bias_batch(x, xd, p):
    """``constraint_bias`` over stacks ``(K, 5)``: returns ``(K, 2)``."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    out = np.empty((x.shape[0], 2), dtype=x.dtype)
    for k in range(x.shape[0]):
        constraint_bias(x[k], xd[k], q, out[k])
    return out


@njit(cache=True)
def accelerations_batch(x, xd, u, p, a, b):
    """``accelerations`` over stacks ``(K, 5), (K, 5), (K, 2)``: returns ``xdd (K, 5)``, ``lam (K, 2)``."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    xdd = np.empty((x.shape[0], 5), dtype=x.dtype)
    lam = np.empty((x.shape[0], 2), dtype=x.dtype)
    for k in range(x.shape[0]):
        accelerations(x[k], xd[k], u[k], q, a, b, xdd[k], lam[k])
    return xdd, lam


@njit(cache=True)
def contact_forces_batch(x, xd, u, p):
    """``contact_forces`` over stacks ``(K, 5), (K, 5), (K, 2)``: returns ``(K, 3)`` = ``(F_x, F_y, N)`` in N."""
    q = p.copy()  # writable, as the loop's C entry point passes it: one specialization (p may be read-only)
    out = np.empty((x.shape[0], 3), dtype=x.dtype)
    for k in range(x.shape[0]):
        contact_forces(x[k], xd[k], u[k], q, out[k])
    return out


# ------------------------------------------------- C entry points of the compiled loop (ballctl.plants.kernels.native)
def loop_accelerations(x, xd, u, p, a, b, xdd, lam, n, n_u, n_p, n_c):
    """:func:`accelerations` on raw pointers (:data:`ballctl.plants.kernels.native.ACCELERATIONS`).

    Parameters
    ----------
    x, xd, u, p : pointer to float64
        Coordinates and velocities ``(n,)``, input ``(n_u,)`` and kernel parameters ``(n_p,)``.
    a, b : float
        Baumgarte gains in 1/s.
    xdd, lam : pointer to float64
        Written: accelerations ``(n,)`` and multipliers ``(n_c,)``.
    n, n_u, n_p, n_c : int
        The arrays' lengths.
    """
    accelerations(carray(x, n), carray(xd, n), carray(u, n_u), carray(p, n_p), a, b, carray(xdd, n),
                  carray(lam, n_c))


def loop_constraint_jacobian(x, p, out, n, n_p, n_c):
    """:func:`constraint_jacobian` on raw pointers (:data:`ballctl.plants.kernels.native.CONSTRAINT_JACOBIAN`).

    Parameters
    ----------
    x, p : pointer to float64
        Coordinates ``(n,)`` and kernel parameters ``(n_p,)``.
    out : pointer to float64
        Written: the Jacobian ``(n_c, n)``, C order.
    n, n_p, n_c : int
        The arrays' sizes.
    """
    constraint_jacobian(carray(x, n), carray(p, n_p), carray(out, (n_c, n)))


def loop_keep_chart(y, n):
    """:func:`keep_chart` on a raw pointer (:data:`ballctl.plants.kernels.native.KEEP_CHART`); the same on every
    plant of the ball on a plate.

    Parameters
    ----------
    y : pointer to float64
        Coordinates then velocities ``(2n,)``; re-charted in place.
    n : int
        Number of coordinates.
    """
    keep_chart(carray(y, 2 * n), n)
