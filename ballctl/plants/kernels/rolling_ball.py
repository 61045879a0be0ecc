r"""Compiled equations of the rolling ball actuated by internal point masses.

The single source of the equations of :class:`~ballctl.plants.rolling_ball.RollingBall`
(Putkaradze & Rogers 2018, eqs. 5.28, 7.2, 7.4; the derivation and the two
input modes are in :mod:`ballctl.plants.rolling_ball`). Parameters are packed
as (``RollingBall.kernel_parameters``)::

    p = (m0 kg, r m, d1, d2, d3 kg m^2, chi0 (3) m, g m/s^2, m_1, ..., m_n kg)

The rail geometry ``zeta, zeta', zeta''`` (each ``(n, 3)``) is an argument:
the batch kernels compute it from the compiled rail table
(:mod:`ballctl.plants.kernels.rails`) when ``use_table`` is True, and take
the arrays given otherwise (rails evaluated in Python, e.g. a
:class:`~ballctl.plants.rails.CallableRail`). ``fe`` is the external force
``F_e(t)`` (3,) in N, spatial frame (zeros for none); ``mode`` is 0 for
prescribed rail accelerations and 1 for rail forces.

With ``s_i = r Gamma + zeta_i`` and ``A = sum m_i hat(s_i)^2 - I`` (negative
definite), prescribed rail accelerations give the 3x3 solve of eq. (7.4),
``(-A) Omega_dot = -(b0 + sum m_i theta_ddot_i s_i x zeta_i')``; rail forces
give the symmetric positive definite ``(3 + n)`` system of the module
docstring of :mod:`ballctl.plants.rolling_ball`. Both are solved by the
unpivoted LDL^T of :func:`~ballctl._linalg.solve_symmetric_inplace`,
analytic in the entries (complex-step safe).

Contact force (:func:`contact_force`): Newton's equation of the whole ball
(the shell with m0 at ``chi0`` and every point mass), spatial frame,

.. math::

    F_{contact} = \sum_{i\ge 0} m_i a_i + M g\,e_3 - F_e,\qquad
    \Lambda^T (a_i + g e_3) = \dot\Omega\times s_i + \ddot\theta_i\zeta_i' + c_i,

with :math:`M = \sum m_i`, ``s_i = r Gamma + zeta_i`` and ``c_i`` as above (the
GC accelerates at :math:`r\,\dot\omega\times e_3`, the absolute acceleration
of mass ``i`` of :mod:`ballctl.plants.rolling_ball`).
"""

from __future__ import annotations

import numpy as np

from ..._jit import njit
from ..._linalg import solve_symmetric_inplace, solve_unit_constrained
from ..._quaternion import rotation_entries_compiled
from .rails import rail_geometry

__all__ = ["N_BASE_PARAMETERS"]

N_BASE_PARAMETERS = 9


@njit(cache=True)
def _rotation(q, Lam):
    """Fill ``Lam (3, 3)`` with the rotation matrix of ``q (4,)`` (eq. 2.15, ``_quaternion.rotation_entries``)."""
    entries = rotation_entries_compiled(q[0], q[1], q[2], q[3])
    for i in range(3):
        for j in range(3):
            Lam[i, j] = entries[3 * i + j]


@njit(cache=True)
def solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, Lam, Omd, thdd, tau):
    """``Omega_dot (3,)``, ``theta_ddot (n,)`` and the rail forces ``tau (n,)`` at one state; fills ``Lam (3, 3)``.

    ``mode`` 0: ``u`` are the rail accelerations; 1: ``u`` are the rail forces.
    """
    n = zeta.shape[0]
    dt = Omd.dtype
    r, g = p[1], p[8]
    _rotation(x[2 * n:2 * n + 4], Lam)
    G0, G1, G2 = Lam[2, 0], Lam[2, 1], Lam[2, 2]
    o0, o1, o2 = x[2 * n + 4], x[2 * n + 5], x[2 * n + 6]
    # b0 = Omega x (I Omega) + sum m_i s_i x c_i (+ r (Lambda^T F_e) x Gamma); A = sum m_i hat(s_i)^2 - I
    i0, i1, i2 = p[2] * o0, p[3] * o1, p[4] * o2
    b0 = o1 * i2 - o2 * i1
    b1 = o2 * i0 - o0 * i2
    b2 = o0 * i1 - o1 * i0
    A = np.zeros((3 + n, 3 + n), dtype=dt)
    A[0, 0] = p[2]
    A[1, 1] = p[3]
    A[2, 2] = p[4]
    k = np.empty((n, 3), dtype=dt)
    zc = np.empty(n, dtype=dt)
    dd = np.empty(n, dtype=dt)
    for i in range(n + 1):
        if i == 0:
            mi = p[0]
            z0, z1, z2 = p[5] + 0.0 * o0, p[6] + 0.0 * o0, p[7] + 0.0 * o0
        else:
            mi = p[N_BASE_PARAMETERS + i - 1]
            z0, z1, z2 = zeta[i - 1, 0], zeta[i - 1, 1], zeta[i - 1, 2]
        s0, s1, s2 = r * G0 + z0, r * G1 + z1, r * G2 + z2
        # (-A) += m (|s|^2 I - s s^T)
        ss = s0 * s0 + s1 * s1 + s2 * s2
        A[0, 0] += mi * (ss - s0 * s0)
        A[1, 1] += mi * (ss - s1 * s1)
        A[2, 2] += mi * (ss - s2 * s2)
        A[0, 1] -= mi * s0 * s1
        A[0, 2] -= mi * s0 * s2
        A[1, 2] -= mi * s1 * s2
        # c_i = g Gamma + Omega x (Omega x zeta_i) [+ 2 td Omega x zeta_i' + td^2 zeta_i'']
        w0 = o1 * z2 - o2 * z1
        w1 = o2 * z0 - o0 * z2
        w2 = o0 * z1 - o1 * z0
        c0 = g * G0 + (o1 * w2 - o2 * w1)
        c1 = g * G1 + (o2 * w0 - o0 * w2)
        c2 = g * G2 + (o0 * w1 - o1 * w0)
        if i > 0:
            j = i - 1
            td = x[n + j]
            e0, e1, e2 = dzeta[j, 0], dzeta[j, 1], dzeta[j, 2]
            c0 += 2.0 * td * (o1 * e2 - o2 * e1) + td * td * ddzeta[j, 0]
            c1 += 2.0 * td * (o2 * e0 - o0 * e2) + td * td * ddzeta[j, 1]
            c2 += 2.0 * td * (o0 * e1 - o1 * e0) + td * td * ddzeta[j, 2]
            k[j, 0] = s1 * e2 - s2 * e1
            k[j, 1] = s2 * e0 - s0 * e2
            k[j, 2] = s0 * e1 - s1 * e0
            zc[j] = e0 * c0 + e1 * c1 + e2 * c2
            dd[j] = e0 * e0 + e1 * e1 + e2 * e2
        b0 += mi * (s1 * c2 - s2 * c1)
        b1 += mi * (s2 * c0 - s0 * c2)
        b2 += mi * (s0 * c1 - s1 * c0)
    if fe[0] != 0.0 or fe[1] != 0.0 or fe[2] != 0.0:
        f0 = Lam[0, 0] * fe[0] + Lam[1, 0] * fe[1] + Lam[2, 0] * fe[2]
        f1 = Lam[0, 1] * fe[0] + Lam[1, 1] * fe[1] + Lam[2, 1] * fe[2]
        f2 = Lam[0, 2] * fe[0] + Lam[1, 2] * fe[1] + Lam[2, 2] * fe[2]
        b0 += r * (f1 * G2 - f2 * G1)
        b1 += r * (f2 * G0 - f0 * G2)
        b2 += r * (f0 * G1 - f1 * G0)
    A[1, 0] = A[0, 1]
    A[2, 0] = A[0, 2]
    A[2, 1] = A[1, 2]
    m = p[N_BASE_PARAMETERS:]
    if mode == 0:
        rhs = np.empty(3, dtype=dt)
        rhs[0], rhs[1], rhs[2] = -b0, -b1, -b2
        for j in range(n):
            thdd[j] = u[j]
            for a in range(3):
                rhs[a] -= m[j] * u[j] * k[j, a]
        B = A[:3, :3].copy()
        solve_symmetric_inplace(B, rhs)
        for a in range(3):
            Omd[a] = rhs[a]
        for j in range(n):
            tau[j] = m[j] * (Omd[0] * k[j, 0] + Omd[1] * k[j, 1] + Omd[2] * k[j, 2] + zc[j] + u[j] * dd[j])
        return
    rhs = np.empty(3 + n, dtype=dt)
    rhs[0], rhs[1], rhs[2] = -b0, -b1, -b2
    for j in range(n):
        for a in range(3):
            A[a, 3 + j] = m[j] * k[j, a]
            A[3 + j, a] = m[j] * k[j, a]
        A[3 + j, 3 + j] = m[j] * dd[j]
        rhs[3 + j] = u[j] - m[j] * zc[j]
        tau[j] = u[j]
    solve_symmetric_inplace(A, rhs)
    for a in range(3):
        Omd[a] = rhs[a]
    for j in range(n):
        thdd[j] = rhs[3 + j]


@njit(cache=True)
def rhs(x, u, zeta, dzeta, ddzeta, p, fe, mode, out):
    """ODE right-hand side (7.2) at one state, ``out (2n + 9,)``."""
    n = zeta.shape[0]
    dt = out.dtype
    Lam = np.empty((3, 3), dtype=dt)
    Omd = np.empty(3, dtype=dt)
    thdd = np.empty(n, dtype=dt)
    tau = np.empty(n, dtype=dt)
    solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, Lam, Omd, thdd, tau)
    for j in range(n):
        out[j] = x[n + j]
        out[n + j] = thdd[j]
    q0, q1, q2, q3 = x[2 * n], x[2 * n + 1], x[2 * n + 2], x[2 * n + 3]
    o0, o1, o2 = x[2 * n + 4], x[2 * n + 5], x[2 * n + 6]
    # q_dot = q (0, Omega) / 2
    out[2 * n] = 0.5 * (-(q1 * o0 + q2 * o1 + q3 * o2))
    out[2 * n + 1] = 0.5 * (q0 * o0 + (q2 * o2 - q3 * o1))
    out[2 * n + 2] = 0.5 * (q0 * o1 + (q3 * o0 - q1 * o2))
    out[2 * n + 3] = 0.5 * (q0 * o2 + (q1 * o1 - q2 * o0))
    out[2 * n + 4] = Omd[0]
    out[2 * n + 5] = Omd[1]
    out[2 * n + 6] = Omd[2]
    r = p[1]
    w0 = Lam[0, 0] * o0 + Lam[0, 1] * o1 + Lam[0, 2] * o2
    w1 = Lam[1, 0] * o0 + Lam[1, 1] * o1 + Lam[1, 2] * o2
    out[2 * n + 7] = r * w1
    out[2 * n + 8] = -r * w0


@njit(cache=True)
def rhs_batch(x, u, table, use_table, zeta, dzeta, ddzeta, p, fe, mode):
    """``rhs`` over stacks ``x (K, 2n + 9)``, ``u (K, n)``: returns ``(K, 2n + 9)``.

    With ``use_table`` the geometry comes from the rail ``table`` and the
    ``zeta`` arguments are ignored; otherwise they are ``(K, n, 3)``.
    """
    K = x.shape[0]
    n = (x.shape[1] - 9) // 2
    dt = x.dtype
    out = np.empty((K, x.shape[1]), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, :n], table, z, dz, ddz)
            rhs(x[k], u[k], z, dz, ddz, p, fe, mode, out[k])
        else:
            rhs(x[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, fe, mode, out[k])
    return out


@njit(cache=True)
def solve_batch(x, u, table, use_table, zeta, dzeta, ddzeta, p, fe, mode):
    """``solve`` over stacks: returns ``Omega_dot (K, 3)``, ``theta_ddot (K, n)``, ``tau (K, n)``."""
    K = x.shape[0]
    n = (x.shape[1] - 9) // 2
    dt = x.dtype
    Omd = np.empty((K, 3), dtype=dt)
    thdd = np.empty((K, n), dtype=dt)
    tau = np.empty((K, n), dtype=dt)
    Lam = np.empty((3, 3), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, :n], table, z, dz, ddz)
            solve(x[k], u[k], z, dz, ddz, p, fe, mode, Lam, Omd[k], thdd[k], tau[k])
        else:
            solve(x[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, fe, mode, Lam, Omd[k], thdd[k], tau[k])
    return Omd, thdd, tau


@njit(cache=True)
def contact_force(x, u, zeta, dzeta, ddzeta, p, fe, mode, out):
    """Force of the floor on the ball at the contact point, spatial frame, ``out (3,)`` in N (module docstring).

    ``out[2]`` is the normal force, ``out[:2]`` the friction force; ``mode`` as in :func:`solve`.
    """
    n = zeta.shape[0]
    dt = out.dtype
    r, g = p[1], p[8]
    Lam = np.empty((3, 3), dtype=dt)
    Omd = np.empty(3, dtype=dt)
    thdd = np.empty(n, dtype=dt)
    tau = np.empty(n, dtype=dt)
    solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, Lam, Omd, thdd, tau)
    G0, G1, G2 = Lam[2, 0], Lam[2, 1], Lam[2, 2]
    o0, o1, o2 = x[2 * n + 4], x[2 * n + 5], x[2 * n + 6]
    f0 = 0.0 * o0
    f1 = 0.0 * o0
    f2 = 0.0 * o0
    for i in range(n + 1):
        if i == 0:
            mi = p[0]
            z0, z1, z2 = p[5] + 0.0 * o0, p[6] + 0.0 * o0, p[7] + 0.0 * o0
        else:
            mi = p[N_BASE_PARAMETERS + i - 1]
            z0, z1, z2 = zeta[i - 1, 0], zeta[i - 1, 1], zeta[i - 1, 2]
        s0, s1, s2 = r * G0 + z0, r * G1 + z1, r * G2 + z2
        # a_i + g Gamma = Omega_dot x s_i + g Gamma + Omega x (Omega x zeta_i) [+ rail terms], body axes
        w0 = o1 * z2 - o2 * z1
        w1 = o2 * z0 - o0 * z2
        w2 = o0 * z1 - o1 * z0
        a0 = (Omd[1] * s2 - Omd[2] * s1) + g * G0 + (o1 * w2 - o2 * w1)
        a1 = (Omd[2] * s0 - Omd[0] * s2) + g * G1 + (o2 * w0 - o0 * w2)
        a2 = (Omd[0] * s1 - Omd[1] * s0) + g * G2 + (o0 * w1 - o1 * w0)
        if i > 0:
            j = i - 1
            td = x[n + j]
            e0, e1, e2 = dzeta[j, 0], dzeta[j, 1], dzeta[j, 2]
            a0 += 2.0 * td * (o1 * e2 - o2 * e1) + td * td * ddzeta[j, 0] + thdd[j] * e0
            a1 += 2.0 * td * (o2 * e0 - o0 * e2) + td * td * ddzeta[j, 1] + thdd[j] * e1
            a2 += 2.0 * td * (o0 * e1 - o1 * e0) + td * td * ddzeta[j, 2] + thdd[j] * e2
        f0 += mi * a0
        f1 += mi * a1
        f2 += mi * a2
    for a in range(3):
        out[a] = Lam[a, 0] * f0 + Lam[a, 1] * f1 + Lam[a, 2] * f2 - fe[a]


@njit(cache=True)
def contact_force_batch(x, u, table, use_table, zeta, dzeta, ddzeta, p, fe, mode):
    """``contact_force`` over stacks ``x (K, 2n + 9)``, ``u (K, n)``: ``(K, 3)`` in N (geometry as ``rhs_batch``)."""
    K = x.shape[0]
    n = (x.shape[1] - 9) // 2
    dt = x.dtype
    out = np.empty((K, 3), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, :n], table, z, dz, ddz)
            contact_force(x[k], u[k], z, dz, ddz, p, fe, mode, out[k])
        else:
            contact_force(x[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, fe, mode, out[k])
    return out


# ----------------------------------------------------------------------------------------------
# Generalized coordinates (RollingBallSystem): x = (contact_x, contact_y, yaw, pitch, roll, theta_1..n)
# ----------------------------------------------------------------------------------------------

@njit(cache=True)
def chart_kinematics(x, C, Lam, W):
    """``Lambda = Rz(yaw) Ry(pitch) Rx(roll) C`` and ``W(yaw, pitch)`` of the yaw-pitch-roll chart."""
    c1, s1 = np.cos(x[2]), np.sin(x[2])
    c2, s2 = np.cos(x[3]), np.sin(x[3])
    c3, s3 = np.cos(x[4]), np.sin(x[4])
    # Rz Ry Rx
    R00, R01, R02 = c1 * c2, c1 * s2 * s3 - s1 * c3, c1 * s2 * c3 + s1 * s3
    R10, R11, R12 = s1 * c2, s1 * s2 * s3 + c1 * c3, s1 * s2 * c3 - c1 * s3
    R20, R21, R22 = -s2, c2 * s3, c2 * c3
    for j in range(3):
        Lam[0, j] = R00 * C[0, j] + R01 * C[1, j] + R02 * C[2, j]
        Lam[1, j] = R10 * C[0, j] + R11 * C[1, j] + R12 * C[2, j]
        Lam[2, j] = R20 * C[0, j] + R21 * C[1, j] + R22 * C[2, j]
    W[0, 0] = 0.0 * c1
    W[0, 1] = -s1
    W[0, 2] = c1 * c2
    W[1, 0] = 0.0 * c1
    W[1, 1] = c1
    W[1, 2] = s1 * c2
    W[2, 0] = 1.0 + 0.0 * c1
    W[2, 1] = 0.0 * c1
    W[2, 2] = -s2


@njit(cache=True)
def chart_rate_term(x, xd, beta):
    """``beta = W_dot(alpha, alpha_dot) alpha_dot``."""
    c1, s1 = np.cos(x[2]), np.sin(x[2])
    c2, s2 = np.cos(x[3]), np.sin(x[3])
    a1d, a2d, a3d = xd[2], xd[3], xd[4]
    beta[0] = a1d * a2d * (-c1) + a3d * (a1d * (-s1 * c2) + a2d * (-c1 * s2))
    beta[1] = a1d * a2d * (-s1) + a3d * (a1d * (c1 * c2) + a2d * (-s1 * s2))
    beta[2] = a3d * a2d * (-c2)


@njit(cache=True)
def system_terms(x, xd, u, zeta, dzeta, ddzeta, p, C, mode, M, Q, D, bias):
    """Lagrange-d'Alembert form at one state: ``M (N, N)``, ``Q (N,)``, ``D (2, N)``, ``Ddot xd (2,)``.

    ``N = n + 5``. ``mode`` 0: the rail rows become ``theta_ddot = u``
    (``M = blockdiag(M_bb, 1)``, ``Q = (Q_b - M_b,theta u, u)``); 1: the rail
    forces ``u`` add to ``Q`` on the rail rows.
    """
    n = zeta.shape[0]
    N = n + 5
    dt = M.dtype
    r, g = p[1], p[8]
    Lam = np.empty((3, 3), dtype=dt)
    W = np.empty((3, 3), dtype=dt)
    chart_kinematics(x, C, Lam, W)
    beta = np.empty(3, dtype=dt)
    chart_rate_term(x, xd, beta)
    om = np.empty(3, dtype=dt)
    for a in range(3):
        om[a] = W[a, 0] * xd[2] + W[a, 1] * xd[3] + W[a, 2] * xd[4]
    M[:, :] = 0.0
    Q[:] = 0.0
    J = np.zeros((3, N), dtype=dt)
    rho = np.empty(3, dtype=dt)
    tang = np.empty(3, dtype=dt)
    curv = np.empty(3, dtype=dt)
    f = np.empty(3, dtype=dt)
    for k in range(n + 1):
        if k == 0:
            mk = p[0]
            for a in range(3):
                rho[a] = Lam[a, 0] * p[5] + Lam[a, 1] * p[6] + Lam[a, 2] * p[7]
        else:
            mk = p[N_BASE_PARAMETERS + k - 1]
            for a in range(3):
                rho[a] = Lam[a, 0] * zeta[k - 1, 0] + Lam[a, 1] * zeta[k - 1, 1] + Lam[a, 2] * zeta[k - 1, 2]
                tang[a] = Lam[a, 0] * dzeta[k - 1, 0] + Lam[a, 1] * dzeta[k - 1, 1] + Lam[a, 2] * dzeta[k - 1, 2]
                curv[a] = Lam[a, 0] * ddzeta[k - 1, 0] + Lam[a, 1] * ddzeta[k - 1, 1] + Lam[a, 2] * ddzeta[k - 1, 2]
        # velocity Jacobian v_k = J xd: contact rows, -hat(rho) W on the angles, the tangent on theta_k
        J[:, :] = 0.0
        J[0, 0] = 1.0
        J[1, 1] = 1.0
        for j in range(3):
            J[0, 2 + j] = W[1, j] * rho[2] - W[2, j] * rho[1]
            J[1, 2 + j] = W[2, j] * rho[0] - W[0, j] * rho[2]
            J[2, 2 + j] = W[0, j] * rho[1] - W[1, j] * rho[0]
        # bias acceleration beta x rho + omega x (omega x rho) [+ 2 td omega x tang + td^2 curv]
        w0 = om[1] * rho[2] - om[2] * rho[1]
        w1 = om[2] * rho[0] - om[0] * rho[2]
        w2 = om[0] * rho[1] - om[1] * rho[0]
        h0 = beta[1] * rho[2] - beta[2] * rho[1] + (om[1] * w2 - om[2] * w1)
        h1 = beta[2] * rho[0] - beta[0] * rho[2] + (om[2] * w0 - om[0] * w2)
        h2 = beta[0] * rho[1] - beta[1] * rho[0] + (om[0] * w1 - om[1] * w0)
        if k > 0:
            td = xd[4 + k]
            J[0, 4 + k] = tang[0]
            J[1, 4 + k] = tang[1]
            J[2, 4 + k] = tang[2]
            h0 += 2.0 * td * (om[1] * tang[2] - om[2] * tang[1]) + td * td * curv[0]
            h1 += 2.0 * td * (om[2] * tang[0] - om[0] * tang[2]) + td * td * curv[1]
            h2 += 2.0 * td * (om[0] * tang[1] - om[1] * tang[0]) + td * td * curv[2]
        f[0] = mk * (-h0)
        f[1] = mk * (-h1)
        f[2] = mk * (-g - h2)
        for i in range(N):
            Q[i] += J[0, i] * f[0] + J[1, i] * f[1] + J[2, i] * f[2]
            for j in range(N):
                M[i, j] += mk * (J[0, i] * J[0, j] + J[1, i] * J[1, j] + J[2, i] * J[2, j])
    # rotational inertia: W^T Is W and -W^T (Is beta + omega x Is omega), Is = Lambda diag(d) Lambda^T
    Is = np.empty((3, 3), dtype=dt)
    for a in range(3):
        for b in range(3):
            Is[a, b] = Lam[a, 0] * p[2] * Lam[b, 0] + Lam[a, 1] * p[3] * Lam[b, 1] + Lam[a, 2] * p[4] * Lam[b, 2]
    IsW = np.empty((3, 3), dtype=dt)
    for a in range(3):
        for j in range(3):
            IsW[a, j] = Is[a, 0] * W[0, j] + Is[a, 1] * W[1, j] + Is[a, 2] * W[2, j]
    Iom = np.empty(3, dtype=dt)
    g3 = np.empty(3, dtype=dt)
    for a in range(3):
        Iom[a] = Is[a, 0] * om[0] + Is[a, 1] * om[1] + Is[a, 2] * om[2]
    for a in range(3):
        g3[a] = Is[a, 0] * beta[0] + Is[a, 1] * beta[1] + Is[a, 2] * beta[2]
    g3[0] += om[1] * Iom[2] - om[2] * Iom[1]
    g3[1] += om[2] * Iom[0] - om[0] * Iom[2]
    g3[2] += om[0] * Iom[1] - om[1] * Iom[0]
    for i in range(3):
        Q[2 + i] -= W[0, i] * g3[0] + W[1, i] * g3[1] + W[2, i] * g3[2]
        for j in range(3):
            M[2 + i, 2 + j] += W[0, i] * IsW[0, j] + W[1, i] * IsW[1, j] + W[2, i] * IsW[2, j]
    # input modes
    if mode == 0:
        for i in range(5):
            acc = Q[i]
            for j in range(n):
                acc -= M[i, 5 + j] * u[j]
            Q[i] = acc
        for j in range(n):
            Q[5 + j] = u[j] + 0.0 * Q[5 + j]
            for i in range(N):
                M[i, 5 + j] = 0.0
                M[5 + j, i] = 0.0
            M[5 + j, 5 + j] = 1.0
    else:
        for j in range(n):
            Q[5 + j] += u[j]
    # rolling constraints (eq. 5.11 at the GC): x_dot - r omega_2 = 0, y_dot + r omega_1 = 0
    D[:, :] = 0.0
    D[0, 0] = 1.0
    D[1, 1] = 1.0
    for j in range(3):
        D[0, 2 + j] = -r * W[1, j]
        D[1, 2 + j] = r * W[0, j]
    bias[0] = -r * beta[1]
    bias[1] = r * beta[0]


@njit(cache=True)
def system_terms_batch(x, xd, u, table, use_table, zeta, dzeta, ddzeta, p, C, mode):
    """``system_terms`` over stacks ``(K, N)``: ``M (K, N, N)``, ``Q (K, N)``, ``D (K, 2, N)``, ``bias (K, 2)``."""
    K, N = x.shape
    n = N - 5
    dt = x.dtype
    M = np.empty((K, N, N), dtype=dt)
    Q = np.empty((K, N), dtype=dt)
    D = np.empty((K, 2, N), dtype=dt)
    bias = np.empty((K, 2), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, 5:], table, z, dz, ddz)
            system_terms(x[k], xd[k], u[k], z, dz, ddz, p, C, mode, M[k], Q[k], D[k], bias[k])
        else:
            system_terms(x[k], xd[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, C, mode, M[k], Q[k], D[k], bias[k])
    return M, Q, D, bias


@njit(cache=True)
def system_accelerations_batch(x, xd, u, table, use_table, zeta, dzeta, ddzeta, p, C, mode, a, b):
    """Structured index-1 solve over stacks: ``xdd (K, N)``, ``lam (K, 2)``.

    ``D = [I_2 | E]``: the null-space solve of
    :func:`~ballctl._linalg.solve_unit_constrained` (one SPD
    solve of size ``N - 2``); ``a`` (1/s) damps ``D xd`` at ``2a``; ``b`` is unused
    (no holonomic constraints).
    """
    K, N = x.shape
    n = N - 5
    dt = x.dtype
    xdd = np.empty((K, N), dtype=dt)
    lam = np.empty((K, 2), dtype=dt)
    M = np.empty((N, N), dtype=dt)
    Q = np.empty(N, dtype=dt)
    D = np.empty((2, N), dtype=dt)
    rc = np.empty(2, dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, 5:], table, z, dz, ddz)
            system_terms(x[k], xd[k], u[k], z, dz, ddz, p, C, mode, M, Q, D, rc)
        else:
            system_terms(x[k], xd[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, C, mode, M, Q, D, rc)
        for i in range(2):
            dxd = D[i, 0] * xd[k, 0]
            for j in range(1, N):
                dxd += D[i, j] * xd[k, j]
            rc[i] = -rc[i] - 2.0 * a * dxd
        solve_unit_constrained(M, Q, D[:, 2:], rc, xdd[k], lam[k])
    return xdd, lam
