r"""Compiled equations of the rolling disk actuated by internal point masses.

The single source of the equations of :class:`~ballctl.plants.rolling_disk.RollingDisk`
(Putkaradze & Rogers 2018, eqs. 5.38, 5.40, 6.2; the force form is in the
module docstring of :mod:`ballctl.plants.rolling_disk`). Parameters are
packed as (``RollingDisk.kernel_parameters``)::

    p = (m0 kg, r m, d2 kg m^2, chi0_1 m, chi0_3 m, g m/s^2, m_1, ..., m_n kg)

The rail geometry (each ``(n, 3)``; the disk uses components 1 and 3) comes
from the compiled rail table when ``use_table`` is True and from the arrays
given otherwise, as in :mod:`ballctl.plants.kernels.rolling_ball`. ``fe`` is
the horizontal external force ``F_e1(t)`` in N; ``mode`` 0 prescribes rail
accelerations, 1 rail forces (the ``(1 + n)`` symmetric positive definite
system, solved by the unpivoted LDL^T).

Contact force (:func:`contact_force`): Newton's equation of the whole disk in
the spatial ``(e1, e3)`` plane, :math:`F = \sum_{i\ge0} m_i a_i + M g\,e_3 - F_{e1} e_1`,
with the GC at :math:`-r\ddot\phi\,e_1` and, for ``Lambda = R(phi)`` and
``J = [[0, -1], [1, 0]]``,

.. math::

    a_i = -r\ddot\phi\,e_1 + \Lambda\big(\ddot\phi J\zeta_i - \dot\phi^2\zeta_i
          + 2\dot\phi\dot\theta_i J\zeta_i' + \dot\theta_i^2\zeta_i'' + \ddot\theta_i\zeta_i'\big).
"""

from __future__ import annotations

import numpy as np

from ..._jit import njit
from ..._linalg import solve_symmetric_inplace, solve_unit_constrained
from .rails import rail_geometry

__all__ = ["N_BASE_PARAMETERS"]

N_BASE_PARAMETERS = 6


@njit(cache=True)
def solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, thdd, tau):
    """``phi_ddot`` (returned), ``theta_ddot (n,)`` and the rail forces ``tau (n,)`` at one state."""
    n = zeta.shape[0]
    dt = thdd.dtype
    r, g = p[1], p[5]
    phi = x[2 * n]
    pd = x[2 * n + 1]
    sphi = np.sin(phi)
    cphi = np.cos(phi)
    den = p[2] + 0.0 * pd
    num0 = -r * fe + 0.0 * pd
    k = np.empty(n, dtype=dt)
    zc = np.empty(n, dtype=dt)
    dd = np.empty(n, dtype=dt)
    for i in range(n + 1):
        if i == 0:
            mi = p[0]
            z1, z3 = p[3] + 0.0 * pd, p[4] + 0.0 * pd
            s1, s3 = r * sphi + z1, r * cphi + z3
            K0 = (g + r * pd * pd) * (z3 * sphi - z1 * cphi)
        else:
            j = i - 1
            mi = p[N_BASE_PARAMETERS + j]
            z1, z3 = zeta[j, 0], zeta[j, 2]
            d1, d3 = dzeta[j, 0], dzeta[j, 2]
            dd1, dd3 = ddzeta[j, 0], ddzeta[j, 2]
            td = x[n + j]
            s1, s3 = r * sphi + z1, r * cphi + z3
            # K_i of eq. (5.38) at theta_ddot = 0
            K0 = ((g + r * pd * pd) * (z3 * sphi - z1 * cphi) + s3 * (-2.0 * pd * td * d3 + td * td * dd1)
                  - s1 * (2.0 * pd * td * d1 + td * td * dd3))
            k[j] = s3 * d1 - s1 * d3
            # <zeta', c_i>, c_i = g Gamma - phi_dot^2 zeta - 2 theta_dot phi_dot e2 x zeta' + theta_dot^2 zeta''
            zc[j] = g * (d1 * sphi + d3 * cphi) - pd * pd * (d1 * z1 + d3 * z3) + td * td * (d1 * dd1 + d3 * dd3)
            dd[j] = d1 * d1 + d3 * d3
        den += mi * (s1 * s1 + s3 * s3)
        num0 += mi * K0
    m = p[N_BASE_PARAMETERS:]
    if mode == 0:
        acc = num0
        for j in range(n):
            thdd[j] = u[j]
            acc += m[j] * k[j] * u[j]
        phidd = acc / den
        for j in range(n):
            tau[j] = m[j] * (dd[j] * u[j] - k[j] * phidd + zc[j])
        return phidd
    A = np.zeros((1 + n, 1 + n), dtype=dt)
    b = np.empty(1 + n, dtype=dt)
    A[0, 0] = den
    b[0] = num0
    for j in range(n):
        A[0, 1 + j] = -m[j] * k[j]
        A[1 + j, 0] = -m[j] * k[j]
        A[1 + j, 1 + j] = m[j] * dd[j]
        b[1 + j] = u[j] - m[j] * zc[j]
        tau[j] = u[j]
    solve_symmetric_inplace(A, b)
    for j in range(n):
        thdd[j] = b[1 + j]
    return b[0]


@njit(cache=True)
def rhs(x, u, zeta, dzeta, ddzeta, p, fe, mode, out):
    """ODE right-hand side (6.2) at one state, ``out (2n + 2,)``."""
    n = zeta.shape[0]
    thdd = np.empty(n, dtype=out.dtype)
    tau = np.empty(n, dtype=out.dtype)
    phidd = solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, thdd, tau)
    for j in range(n):
        out[j] = x[n + j]
        out[n + j] = thdd[j]
    out[2 * n] = x[2 * n + 1]
    out[2 * n + 1] = phidd


@njit(cache=True)
def rhs_batch(x, u, table, use_table, zeta, dzeta, ddzeta, p, fe, mode):
    """``rhs`` over stacks ``x (K, 2n + 2)``, ``u (K, n)``: returns ``(K, 2n + 2)`` (geometry as in the ball)."""
    K = x.shape[0]
    n = (x.shape[1] - 2) // 2
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
    """``solve`` over stacks: returns ``phi_ddot (K,)``, ``theta_ddot (K, n)``, ``tau (K, n)``."""
    K = x.shape[0]
    n = (x.shape[1] - 2) // 2
    dt = x.dtype
    phidd = np.empty(K, dtype=dt)
    thdd = np.empty((K, n), dtype=dt)
    tau = np.empty((K, n), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, :n], table, z, dz, ddz)
            phidd[k] = solve(x[k], u[k], z, dz, ddz, p, fe, mode, thdd[k], tau[k])
        else:
            phidd[k] = solve(x[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, fe, mode, thdd[k], tau[k])
    return phidd, thdd, tau


@njit(cache=True)
def contact_force(x, u, zeta, dzeta, ddzeta, p, fe, mode, out):
    """Force of the floor on the disk at the contact point, ``out (2,) = (F_1, F_3)`` in N (module docstring).

    ``F_3`` is the normal force, ``F_1`` the friction force along ``e1``; ``mode`` as in :func:`solve`.
    """
    n = zeta.shape[0]
    dt = out.dtype
    r, g = p[1], p[5]
    thdd = np.empty(n, dtype=dt)
    tau = np.empty(n, dtype=dt)
    phidd = solve(x, u, zeta, dzeta, ddzeta, p, fe, mode, thdd, tau)
    pd = x[2 * n + 1]
    c = np.cos(x[2 * n])
    s = np.sin(x[2 * n])
    f1 = 0.0 * pd
    f3 = 0.0 * pd
    total = p[0]
    for i in range(n + 1):
        if i == 0:
            mi = p[0]
            z1, z3 = p[3] + 0.0 * pd, p[4] + 0.0 * pd
            b1 = phidd * (-z3) - pd * pd * z1
            b3 = phidd * z1 - pd * pd * z3
        else:
            j = i - 1
            mi = p[N_BASE_PARAMETERS + j]
            total += mi
            z1, z3 = zeta[j, 0], zeta[j, 2]
            e1, e3 = dzeta[j, 0], dzeta[j, 2]
            td = x[n + j]
            # body-plane acceleration: phidd J zeta - pd^2 zeta + 2 pd td J zeta' + td^2 zeta'' + thdd zeta'
            b1 = phidd * (-z3) - pd * pd * z1 + 2.0 * pd * td * (-e3) + td * td * ddzeta[j, 0] + thdd[j] * e1
            b3 = phidd * z1 - pd * pd * z3 + 2.0 * pd * td * e1 + td * td * ddzeta[j, 2] + thdd[j] * e3
        f1 += mi * (-r * phidd + (c * b1 - s * b3))
        f3 += mi * (s * b1 + c * b3)
    out[0] = f1 - fe
    out[1] = f3 + total * g


@njit(cache=True)
def contact_force_batch(x, u, table, use_table, zeta, dzeta, ddzeta, p, fe, mode):
    """``contact_force`` over stacks ``x (K, 2n + 2)``, ``u (K, n)``: returns ``(K, 2)`` in N (geometry as the ball)."""
    K = x.shape[0]
    n = (x.shape[1] - 2) // 2
    dt = x.dtype
    out = np.empty((K, 2), dtype=dt)
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
# Generalized coordinates (RollingDiskSystem): x = (contact_x, phi, theta_1..n)
# ----------------------------------------------------------------------------------------------

@njit(cache=True)
def system_terms(x, xd, u, zeta, dzeta, ddzeta, p, z0, mode, M, Q, D, bias):
    """Lagrange form at one state: ``M (N, N)``, ``Q (N,)``, ``D (1, N)``, ``Ddot xd (1,)``, ``N = n + 2``.

    Kinetic energy ``1/2 sum m_i |v_i|^2 + 1/2 d2 phi_dot^2``, potential
    ``g sum m_i e3 . Lambda(phi) zeta_i``; ``mode`` as in
    :func:`ballctl.plants.kernels.rolling_ball.system_terms`. The
    constraint is ``contact_x + r phi - z0 = 0`` (eq. 5.41).
    """
    n = zeta.shape[0]
    N = n + 2
    dt = M.dtype
    r, g = p[1], p[5]
    c = np.cos(x[1])
    s = np.sin(x[1])
    pd = xd[1]
    M[:, :] = 0.0
    Q[:] = 0.0
    J = np.zeros((2, N), dtype=dt)
    for k in range(n + 1):
        if k == 0:
            mk = p[0]
            z1, z3 = p[3], p[4]
            e1, e3, f1, f3 = 0.0 * pd, 0.0 * pd, 0.0 * pd, 0.0 * pd
            td = 0.0 * pd
        else:
            mk = p[N_BASE_PARAMETERS + k - 1]
            z1, z3 = zeta[k - 1, 0], zeta[k - 1, 2]
            e1, e3 = dzeta[k - 1, 0], dzeta[k - 1, 2]
            f1, f3 = ddzeta[k - 1, 0], ddzeta[k - 1, 2]
            td = xd[1 + k]
        # spatial (e1, e3) vectors: rho = Lambda(phi) zeta, tangent, curvature
        rho1, rho3 = c * z1 - s * z3, s * z1 + c * z3
        t1, t3 = c * e1 - s * e3, s * e1 + c * e3
        k1, k3 = c * f1 - s * f3, s * f1 + c * f3
        J[:, :] = 0.0
        J[0, 0] = 1.0
        J[0, 1] = -rho3
        J[1, 1] = rho1
        if k > 0:
            J[0, 1 + k] = t1
            J[1, 1 + k] = t3
        # bias acceleration -phi_dot^2 rho + 2 phi_dot td perp(tangent) + td^2 curvature
        h1 = -pd * pd * rho1 + 2.0 * pd * td * (-t3) + td * td * k1
        h3 = -pd * pd * rho3 + 2.0 * pd * td * t1 + td * td * k3
        fa = mk * (-h1)
        fb = mk * (-g - h3)
        for i in range(N):
            Q[i] += J[0, i] * fa + J[1, i] * fb
            for j in range(N):
                M[i, j] += mk * (J[0, i] * J[0, j] + J[1, i] * J[1, j])
    M[1, 1] += p[2]
    if mode == 0:
        for i in range(2):
            acc = Q[i]
            for j in range(n):
                acc -= M[i, 2 + j] * u[j]
            Q[i] = acc
        for j in range(n):
            Q[2 + j] = u[j] + 0.0 * Q[2 + j]
            for i in range(N):
                M[i, 2 + j] = 0.0
                M[2 + j, i] = 0.0
            M[2 + j, 2 + j] = 1.0
    else:
        for j in range(n):
            Q[2 + j] += u[j]
    D[:, :] = 0.0
    D[0, 0] = 1.0
    D[0, 1] = r
    bias[0] = 0.0 * pd


@njit(cache=True)
def system_terms_batch(x, xd, u, table, use_table, zeta, dzeta, ddzeta, p, z0, mode):
    """``system_terms`` over stacks ``(K, N)``: ``M (K, N, N)``, ``Q (K, N)``, ``D (K, 1, N)``, ``bias (K, 1)``."""
    K, N = x.shape
    n = N - 2
    dt = x.dtype
    M = np.empty((K, N, N), dtype=dt)
    Q = np.empty((K, N), dtype=dt)
    D = np.empty((K, 1, N), dtype=dt)
    bias = np.empty((K, 1), dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    for k in range(K):
        if use_table:
            rail_geometry(x[k, 2:], table, z, dz, ddz)
            system_terms(x[k], xd[k], u[k], z, dz, ddz, p, z0, mode, M[k], Q[k], D[k], bias[k])
        else:
            system_terms(x[k], xd[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, z0, mode, M[k], Q[k], D[k], bias[k])
    return M, Q, D, bias


@njit(cache=True)
def system_accelerations_batch(x, xd, u, table, use_table, zeta, dzeta, ddzeta, p, z0, mode, a, b):
    """Structured index-1 solve over stacks (``D = [1 | r, 0, ...]``): ``xdd (K, N)``, ``lam (K, 1)``.

    Baumgarte: ``D xd`` damped at ``2a`` and ``C`` at ``b^2`` (1/s).
    """
    K, N = x.shape
    n = N - 2
    dt = x.dtype
    xdd = np.empty((K, N), dtype=dt)
    lam = np.empty((K, 1), dtype=dt)
    M = np.empty((N, N), dtype=dt)
    Q = np.empty(N, dtype=dt)
    D = np.empty((1, N), dtype=dt)
    rc = np.empty(1, dtype=dt)
    z = np.empty((n, 3), dtype=dt)
    dz = np.empty((n, 3), dtype=dt)
    ddz = np.empty((n, 3), dtype=dt)
    r = p[1]
    for k in range(K):
        if use_table:
            rail_geometry(x[k, 2:], table, z, dz, ddz)
            system_terms(x[k], xd[k], u[k], z, dz, ddz, p, z0, mode, M, Q, D, rc)
        else:
            system_terms(x[k], xd[k], u[k], zeta[k], dzeta[k], ddzeta[k], p, z0, mode, M, Q, D, rc)
        rc[0] = -rc[0] - 2.0 * a * (xd[k, 0] + r * xd[k, 1]) - b * b * (x[k, 0] + r * x[k, 1] - z0)
        solve_unit_constrained(M, Q, D[:, 1:], rc, xdd[k], lam[k])
    return xdd, lam
