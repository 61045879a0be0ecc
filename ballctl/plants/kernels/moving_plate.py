r"""Compiled equations of the moving-plate ball-plates (prescribed plate and servo plate).

The single source of the equations of :class:`~ballctl.MovingPlateBallPlate` and
:class:`~ballctl.ServoPlateBallPlate`; the derivation is in
:mod:`ballctl.plants.ball_plate_moving`. Parameters are packed as (see
``kernel_parameters`` of the plants)::

    p = (mass kg, radius m, inertia kg m^2, gravity m/s^2, pivot_depth m, n_plate, kind,
         J_xx, J_yy, J_zz kg m^2, position_gain 1/s, rate_gain 1/s, max_torque N m, max_rate rad/s,
         rolling_resistance, set_point_offset_alpha rad, set_point_offset_beta rad)

(``N_PARAMETERS = 17``) with ``kind`` 0 for the prescribed plate (inputs: plate
angular accelerations) and 1 for the servo plate (inputs: commanded angles); a
limit of 0 means none; the set-point offsets are 0 for the prescribed plate
(the spin servo of a turntable has none).
``x = (contact_x, contact_y, yaw, lean, roll, alpha, beta[, plate_spin])``.

Rolling resistance (``c = p[14]``): the couple of
:func:`ballctl.plants.kernels.ball_plate.rolling_couple` acts on the ball,
:math:`\tau = -c N R\,\omega_t/\sqrt{|\omega_t|^2+\varepsilon^2}` with
:math:`\omega_t` the plate-plane part of the ball's angular velocity relative
to the plate, :math:`w = G_{rel}\dot q_a`, and :math:`-\tau` on the plate. By
virtual power, :math:`\tau\cdot\omega_b - \tau\cdot\Omega = \tau\cdot w`, so
``Q += J_rel^T tau`` with ``J_rel = [G_rel | 0]``: the ball rows only, the
plate rows' shares of the two couples cancel. The normal force is the plate
normal component of the ball's Newton equation,
:math:`N = m(a_z - g_{p,z})`, :math:`a = H\ddot x + h`, which involves only the
plate accelerations (``H[2, :5] = 0``): exactly ``u`` for the prescribed plate;
for the servo plate they come from the exact (unstabilized) solve *without*
the couple, so N is exact to :math:`O(c)` and the couple to :math:`O(c^2)`
(one fixed-point step; the relative error of N is of the order of the couple's
effect on the plate acceleration, :math:`\sim c\, m R (R + d) / J`). Q stays a
function of ``(x, xd, u)`` only, so eq. (1) holds exactly with it. With
``c = 0`` nothing is added (bit-identical to the model without it).

Servo set-point offset (``p[15:17]``): the servo regulates to ``u + offset``
(:func:`servo_torque`), a plate level or servo zero error.

Contact force (:func:`contact_forces_batch`): ``F = m (H xdd + h - g_plate)`` in
plate axes from the exact accelerations; ``F_z`` is the normal force.

Structured index-1 solve: the rolling constraints are ``D = [I_2 | E]`` with
``E`` acting on the other ``n - 2`` coordinates (zero plate columns).
With ``Z = [-E; I]`` spanning the null space of ``D``, the accelerations
``xdd_c = r - E xdd_a`` and

.. math::

    (Z^T M Z)\,\ddot x_a = Q_a - M_{ac} r - E^T (Q_c - M_{cc} r),\qquad
    \Lambda = Q_c - M_{cc}\ddot x_c - M_{ca}\ddot x_a,

one symmetric positive definite solve of size ``n - 2`` (see
:func:`ballctl._linalg.solve_unit_constrained`).

Compilation (a first run's cost, not the physics): numba gives every compiled
function its own library and links, re-optimizes and re-emits the whole tree of
its callees into it, so every function level over the kernel tree costs about
the tree's compile time again (2-3 s on two cores for this plant, against about
10 s for the tree's first compilation). Hence few levels over
:func:`mass_and_forces`, the tree: the kinematic terms are one function
(:func:`all_terms`), the rolling-resistance couple is part of
:func:`mass_and_forces`, and the functions with one compiled caller
(``ball_mass_and_forces``, ``servo_torque``, ``plate_forces``, ``accelerations``)
are inlined into it (``inline="always"``: numba-level inlining, their
equations still written once; not for a function several compiled callers
share, which would then compile it again in each, nor for the few-line
helpers called at several places, ``_cross`` and ``zero_matrix``: numba types
an inlined copy at every call site, while LLVM inlines the compiled helper
anyway; as ordinary functions they cut the tree's first compilation by about
a fifth).
In real arithmetic the tree is compiled into three functions only,
:func:`mass_and_forces` itself, :func:`mass_and_forces_batch` (the plants' ``M``
and ``Q``) and the C entry point :func:`loop_accelerations` (the compiled
loop's); every other real caller of the accelerations
(:func:`accelerations_batch`, and through it the contact forces and the
plants' stacks) calls that entry point by its address
(:func:`ballctl.plants.kernels.native.call`), which compiles none of the tree
again. Every function is called with one layout per argument (C-contiguous 1-d
vectors, writable ``p``), so each is compiled once per dtype.

References
----------
Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, appendix B, eqs. (90)-(115).
"""

from __future__ import annotations

import numpy as np
from numba import carray

from ..._jit import njit
from .ball_plate import constraint_bias as _ball_bias
from .ball_plate import constraint_jacobian as _ball_jacobian
# the ball's chart, the same on a moving plate (the ball's coordinates come first)
from .ball_plate import CHART_COORDINATES, keep_chart, loop_keep_chart, rolling_couple
from ..._linalg import solve_unit_constrained, zero_matrix
from .native import call

#: the compiled loop's interface (the other kernels are the plants' internals, imported by name)
__all__ = ["CHART_COORDINATES", "N_PARAMETERS", "accelerations", "constraint_jacobian",
           "keep_chart", "loop_accelerations", "loop_constraint_jacobian", "loop_keep_chart"]

N_PARAMETERS = 17


@njit(cache=True)
def _cross(a, b, out):
    c0 = a[1] * b[2] - a[2] * b[1]
    c1 = a[2] * b[0] - a[0] * b[2]
    c2 = a[0] * b[1] - a[1] * b[0]
    out[0] = c0
    out[1] = c1
    out[2] = c2


@njit(cache=True)
def plate_kinematics(qp, qpd, gravity, Gp, omega, Gpdot_qd, g_plate):
    """Plate Jacobian ``Gp (3, n_p)``, angular velocity, ``Gdot_p qd_p`` and gravity in the plate frame.

    ``qp, qpd`` are the plate angles (rad) and rates (rad/s), length 2 or 3.
    """
    n_p = qp.shape[0]
    ca = np.cos(qp[0])
    sa = np.sin(qp[0])
    cb = np.cos(qp[1])
    sb = np.sin(qp[1])
    da = qpd[0]
    db = qpd[1]
    if n_p == 3:
        cg = np.cos(qp[2])
        sg = np.sin(qp[2])
        dg = qpd[2]
    else:
        cg = 1.0 + 0.0 * ca
        sg = 0.0 * ca
        dg = 0.0 * da
    Gp[0, 0] = cg * cb
    Gp[1, 0] = -sg * cb
    Gp[2, 0] = sb
    Gp[0, 1] = sg
    Gp[1, 1] = cg
    Gp[2, 1] = 0.0
    if n_p == 3:
        Gp[0, 2] = 0.0
        Gp[1, 2] = 0.0
        Gp[2, 2] = 1.0
    for i in range(3):
        acc = Gp[i, 0] * qpd[0]
        for j in range(1, n_p):
            acc += Gp[i, j] * qpd[j]
        omega[i] = acc
    Gpdot_qd[0] = (-sg * cb * dg - cg * sb * db) * da + (cg * dg) * db
    Gpdot_qd[1] = (-cg * cb * dg + sg * sb * db) * da + (-sg * dg) * db
    Gpdot_qd[2] = (cb * db) * da + (0.0 * dg) * db
    gx = gravity * ca * sb
    gy = -gravity * sa
    gz = -gravity * ca * cb
    g_plate[0] = cg * gx + sg * gy
    g_plate[1] = -sg * gx + cg * gy
    g_plate[2] = gz + 0.0 * cg


@njit(cache=True)
def all_terms(x, xd, p, like):
    """Kinematic terms of the module docstring in new arrays of ``like``'s dtype:
    ``(H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s)``, ``H, G (3, n)``, ``h, g_v, g_plate, Om, s (3,)``, ``Gp (3, n_p)``.

    ``like`` is the caller's output (real, or complex on a complex step of ``x`` or ``xd``); the callers pass
    a 1-d array (one specialization per dtype).
    """
    n_p = int(p[5])
    n = 5 + n_p
    dt = like.dtype
    H = np.empty((3, n), dtype=dt)
    G = np.empty((3, n), dtype=dt)
    h = np.empty(3, dtype=dt)
    g_v = np.empty(3, dtype=dt)
    g_plate = np.empty(3, dtype=dt)
    Om = np.empty(3, dtype=dt)
    Gp = np.empty((3, n_p), dtype=dt)
    Gpdot_qd = np.empty(3, dtype=dt)
    s = np.empty(3, dtype=dt)
    R = p[1]
    plate_kinematics(x[5:n], xd[5:n], p[3], Gp, Om, Gpdot_qd, g_plate)
    s[0] = x[0]
    s[1] = x[1]
    s[2] = 0.0 * x[0] + (R + p[4])
    sd = np.empty(3, dtype=dt)
    sd[0] = xd[0]
    sd[1] = xd[1]
    sd[2] = 0.0 * xd[0]
    cps = np.cos(x[2])
    sps = np.sin(x[2])
    cph = np.cos(x[3])
    sph = np.sin(x[3])
    dpsi, dphi, dth = xd[2], xd[3], xd[4]
    zero_matrix(H)
    H[0, 0] = 1.0
    H[1, 1] = 1.0
    col = np.empty(3, dtype=dt)
    tmp = np.empty(3, dtype=dt)
    for j in range(n_p):
        for i in range(3):  # the column, C-contiguous (one specialization of _cross)
            tmp[i] = Gp[i, j]
        _cross(tmp, s, col)
        H[0, 5 + j] = col[0]
        H[1, 5 + j] = col[1]
        H[2, 5 + j] = col[2]
    zero_matrix(G)
    G[0, 3] = cps
    G[1, 3] = sps
    G[0, 4] = -sps * cph
    G[1, 4] = cps * cph
    G[2, 2] = 1.0
    G[2, 4] = sph
    for j in range(n_p):
        G[0, 5 + j] = Gp[0, j]
        G[1, 5 + j] = Gp[1, j]
        G[2, 5 + j] = Gp[2, j]
    w = np.empty(3, dtype=dt)
    w[0] = dphi * cps - dth * sps * cph
    w[1] = dphi * sps + dth * cps * cph
    w[2] = dpsi + dth * sph
    # h = Gpdot_qd x s + 2 Om x sd + Om x (Om x s)
    _cross(Gpdot_qd, s, h)
    _cross(Om, sd, tmp)
    for i in range(3):
        h[i] += 2.0 * tmp[i]
    _cross(Om, s, tmp)
    _cross(Om, tmp, col)
    for i in range(3):
        h[i] += col[i]
    # g_v = Grel_dot qd + Gpdot_qd + Om x w
    _cross(Om, w, tmp)
    g_v[0] = (-dphi * sps * dpsi - dth * (cps * cph * dpsi - sps * sph * dphi)) + Gpdot_qd[0] + tmp[0]
    g_v[1] = (dphi * cps * dpsi - dth * (sps * cph * dpsi + cps * sph * dphi)) + Gpdot_qd[1] + tmp[1]
    g_v[2] = (dth * cph * dphi) + Gpdot_qd[2] + tmp[2]
    return H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s


@njit(cache=True, inline="always")
def ball_mass_and_forces(x, xd, p, M, Q):
    """The ball's own ``M_ball = m H^T H + I G^T G`` and ``Q_ball = m H^T (g_p - h) - I G^T g_v`` (n x n, n)."""
    n = 5 + int(p[5])
    H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s = all_terms(x, xd, p, Q)
    mass, inertia = p[0], p[2]
    for i in range(n):
        for j in range(n):
            acc_h = H[0, i] * H[0, j] + H[1, i] * H[1, j] + H[2, i] * H[2, j]
            acc_g = G[0, i] * G[0, j] + G[1, i] * G[1, j] + G[2, i] * G[2, j]
            M[i, j] = mass * acc_h + inertia * acc_g
        Q[i] = mass * (H[0, i] * (g_plate[0] - h[0]) + H[1, i] * (g_plate[1] - h[1]) + H[2, i] * (g_plate[2] - h[2])) \
            - inertia * (G[0, i] * g_v[0] + G[1, i] * g_v[1] + G[2, i] * g_v[2])


@njit(cache=True, inline="always")
def servo_torque(x, xd, u, p, out):
    """Servo torques in N m on the plate axes (kind 1), length n_p; set point ``u + offset`` (``p[15:17]``)."""
    n_p = int(p[5])
    kp, kv, max_torque, max_rate = p[10], p[11], p[12], p[13]
    for j in range(n_p):
        offset = 0.0
        if j < 2:
            offset = p[15 + j]
        err = (u[j] + offset) - x[5 + j]
        if max_rate > 0:
            rate = max_rate * np.tanh(kp * err / max_rate)
        else:
            rate = kp * err
        tau = p[7 + j] * kv * (rate - xd[5 + j])
        if max_torque > 0:
            tau = max_torque * np.tanh(tau / max_torque)
        out[j] = tau


@njit(cache=True)
def mass_and_forces(x, xd, u, p, M, Q):
    """The plant's ``M (n, n)`` and ``Q (n,)``: prescribed plate (kind 0) or servo plate (kind 1)."""
    n_p = int(p[5])
    n = 5 + n_p
    dt = M.dtype
    Mb = np.empty((n, n), dtype=dt)
    Qb = np.empty(n, dtype=dt)
    ball_mass_and_forces(x, xd, p, Mb, Qb)
    if p[6] == 0.0:
        zero_matrix(M)
        for i in range(5):
            for j in range(5):
                M[i, j] = Mb[i, j]
            acc = Qb[i]
            for j in range(n_p):
                acc -= Mb[i, 5 + j] * u[j]
            Q[i] = acc
        for j in range(n_p):
            M[5 + j, 5 + j] = 1.0
            Q[5 + j] = u[j] + 0.0 * Qb[5 + j]
    else:
        for i in range(n):  # element by element: an array assignment compiles numba's shape-error formatting
            for j in range(n):
                M[i, j] = Mb[i, j]
            Q[i] = Qb[i]
        Gp = np.empty((3, n_p), dtype=dt)
        plate = np.empty(n_p, dtype=dt)
        plate_forces(x, xd, p, Gp, plate)
        tau = np.empty(n_p, dtype=dt)
        servo_torque(x, xd, u, p, tau)
        for a in range(n_p):
            for b in range(n_p):
                M[5 + a, 5 + b] += (Gp[0, a] * p[7] * Gp[0, b] + Gp[1, a] * p[8] * Gp[1, b]
                                    + Gp[2, a] * p[9] * Gp[2, b])
            Q[5 + a] += plate[a] + tau[a]
    if p[14] > 0.0:  # Q[:5] += G_rel^T tau (module docstring); M, Q here are the plant's without the couple
        qdd = np.empty(n_p, dtype=dt)
        if p[6] == 0.0:
            for j in range(n_p):
                qdd[j] = u[j]
        else:   # plate accelerations of the exact solve without the couple: N to O(c)
            D = np.empty((2, n), dtype=dt)
            constraint_jacobian(x, p, D)
            r = np.empty(2, dtype=dt)
            constraint_bias(x, xd, p, r)
            r[0] = -r[0]
            r[1] = -r[1]
            xdd0 = np.empty(n, dtype=dt)
            lam0 = np.empty(2, dtype=dt)
            solve_unit_constrained(M, Q, D[:, 2:], r, xdd0, lam0)
            for j in range(n_p):
                qdd[j] = xdd0[5 + j]
        H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s = all_terms(x, xd, p, Q)
        az = h[2]
        for j in range(n_p):
            az += H[2, 5 + j] * qdd[j]
        normal = p[0] * (az - g_plate[2])
        # relative angular velocity w = G_rel xd[:5] (plate components), its plate-plane part
        w0 = G[0, 3] * xd[3] + G[0, 4] * xd[4]
        w1 = G[1, 3] * xd[3] + G[1, 4] * xd[4]
        t0, t1 = rolling_couple(w0, w1, normal, p[14], p[1])
        for i in range(5):
            Q[i] += G[0, i] * t0 + G[1, i] * t1


@njit(cache=True, inline="always")
def plate_forces(x, xd, p, Gp, out):
    """The plate's gyroscopic and velocity terms ``-G_p^T (J Gdot_p qd_p + Omega x J Omega)``, length n_p.

    Also writes the plate Jacobian ``Gp (3, n_p)`` (kind 1: ``J = diag(p[7:10])`` in kg m^2).
    """
    n_p = int(p[5])
    n = 5 + n_p
    dt = out.dtype
    Om = np.empty(3, dtype=dt)
    Gpdot_qd = np.empty(3, dtype=dt)
    g_unit = np.empty(3, dtype=dt)
    plate_kinematics(x[5:n], xd[5:n], 1.0, Gp, Om, Gpdot_qd, g_unit)
    JOm = np.empty(3, dtype=dt)
    inner = np.empty(3, dtype=dt)
    for i in range(3):
        JOm[i] = p[7 + i] * Om[i]
    _cross(Om, JOm, inner)
    for i in range(3):
        inner[i] += p[7 + i] * Gpdot_qd[i]
    for a in range(n_p):
        out[a] = -(Gp[0, a] * inner[0] + Gp[1, a] * inner[1] + Gp[2, a] * inner[2])


@njit(cache=True)
def constraint_jacobian(x, p, out):
    """Rolling constraints (43)-(44), shape (2, n): those of the ball-plate, zero plate columns."""
    ball = np.empty((2, 5), dtype=out.dtype)  # C-contiguous: the ball-plate's own specialization
    _ball_jacobian(x[:5], p, ball)
    zero_matrix(out)
    for i in range(2):
        for j in range(5):
            out[i, j] = ball[i, j]


@njit(cache=True)
def constraint_bias(x, xd, p, out):
    """``Ddot(x, xd) xd``, shape (2,): that of the ball-plate (no plate terms)."""
    _ball_bias(x[:5], xd[:5], p, out)


@njit(cache=True, inline="always")
def accelerations(x, xd, u, p, a, b, xdd, lam):
    """Structured index-1 solve (module docstring): ``xdd (n,)``, ``lam (2,)``; ``a`` damps ``D xd`` at 2a.

    Inlined into its compiled callers: :func:`loop_accelerations` (the real path of every caller, through its
    address) and :func:`accelerations_batch_direct` (complex arrays).
    """
    n = 5 + int(p[5])
    dt = xdd.dtype
    M = np.empty((n, n), dtype=dt)
    Q = np.empty(n, dtype=dt)
    mass_and_forces(x, xd, u, p, M, Q)
    D = np.empty((2, n), dtype=dt)
    constraint_jacobian(x, p, D)
    r = np.empty(2, dtype=dt)
    constraint_bias(x, xd, p, r)
    for i in range(2):
        dxd = D[i, 0] * xd[0]
        for j in range(1, n):
            dxd += D[i, j] * xd[j]
        r[i] = -r[i] - 2.0 * a * dxd
    solve_unit_constrained(M, Q, D[:, 2:], r, xdd, lam)


@njit(cache=True)
def plate_kinematics_batch(qp, qpd, gravity):
    """``plate_kinematics`` over stacks ``(K, n_p)``: ``Gp (K, 3, n_p)``, ``omega, Gpdot_qd, g_plate (K, 3)``."""
    K, n_p = qp.shape
    dt = qp.dtype
    Gp = np.empty((K, 3, n_p), dtype=dt)
    om = np.empty((K, 3), dtype=dt)
    gd = np.empty((K, 3), dtype=dt)
    gp = np.empty((K, 3), dtype=dt)
    for k in range(K):
        plate_kinematics(qp[k], qpd[k], gravity, Gp[k], om[k], gd[k], gp[k])
    return Gp, om, gd, gp


@njit(cache=True)
def terms_batch(x, xd, p):
    """:func:`all_terms` over stacks ``(K, n)``: ``H, G (K, 3, n)``, ``h, g_v, g_plate, Om (K, 3)``, ``Gp``,
    ``Gpdot_qd``, ``s``.
    """
    K, n = x.shape
    n_p = n - 5
    dt = x.dtype
    H = np.empty((K, 3, n), dtype=dt)
    G = np.empty((K, 3, n), dtype=dt)
    h = np.empty((K, 3), dtype=dt)
    g_v = np.empty((K, 3), dtype=dt)
    g_plate = np.empty((K, 3), dtype=dt)
    Om = np.empty((K, 3), dtype=dt)
    Gp = np.empty((K, 3, n_p), dtype=dt)
    Gpdot_qd = np.empty((K, 3), dtype=dt)
    s = np.empty((K, 3), dtype=dt)
    for k in range(K):
        Hk, Gk, hk, g_vk, g_plate_k, Om_k, Gp_k, Gpdot_qd_k, s_k = all_terms(x[k], xd[k], p, x[k])
        for i in range(3):
            for j in range(n):
                H[k, i, j] = Hk[i, j]
                G[k, i, j] = Gk[i, j]
            for j in range(n_p):
                Gp[k, i, j] = Gp_k[i, j]
            h[k, i] = hk[i]
            g_v[k, i] = g_vk[i]
            g_plate[k, i] = g_plate_k[i]
            Om[k, i] = Om_k[i]
            Gpdot_qd[k, i] = Gpdot_qd_k[i]
            s[k, i] = s_k[i]
    return H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s


@njit(cache=True)
def ball_mass_and_forces_batch(x, xd, p):
    """``ball_mass_and_forces`` over stacks ``(K, n)``: ``M (K, n, n)``, ``Q (K, n)``."""
    K, n = x.shape
    M = np.empty((K, n, n), dtype=x.dtype)
    Q = np.empty((K, n), dtype=x.dtype)
    for k in range(K):
        ball_mass_and_forces(x[k], xd[k], p, M[k], Q[k])
    return M, Q


@njit(cache=True)
def mass_and_forces_batch(x, xd, u, p):
    """``mass_and_forces`` over stacks ``(K, n), (K, n), (K, n_p)``: ``M (K, n, n)``, ``Q (K, n)``."""
    K, n = x.shape
    M = np.empty((K, n, n), dtype=x.dtype)
    Q = np.empty((K, n), dtype=x.dtype)
    for k in range(K):
        mass_and_forces(x[k], xd[k], u[k], p, M[k], Q[k])
    return M, Q


@njit(cache=True)
def accelerations_batch(x, xd, u, p, a, b, entry):
    """``accelerations`` over real stacks ``(K, n), (K, n), (K, n_p)``: ``xdd (K, n)``, ``lam (K, 2)``.

    Through the C entry point :func:`loop_accelerations` at address ``entry``
    (:func:`ballctl.plants.kernels.native.entry_points`), which holds the plant's
    compiled tree: this function holds none of it (module docstring, compilation).
    """
    K, n = x.shape
    n_u = u.shape[1]
    xdd = np.empty((K, n))
    lam = np.empty((K, 2))
    for k in range(K):
        call(entry, x[k], xd[k], u[k], p, a, b, xdd[k], lam[k], n, n_u, p.shape[0], 2)
    return xdd, lam


@njit(cache=True)
def accelerations_batch_direct(x, xd, u, p, a, b):
    """:func:`accelerations_batch` for complex stacks (a complex step through the accelerations).

    Compiles the kernel tree in complex arithmetic into this function; real stacks take
    :func:`accelerations_batch`.
    """
    K, n = x.shape
    xdd = np.empty((K, n), dtype=x.dtype)
    lam = np.empty((K, 2), dtype=x.dtype)
    for k in range(K):
        accelerations(x[k], xd[k], u[k], p, a, b, xdd[k], lam[k])
    return xdd, lam


@njit(cache=True)
def contact_forces_batch(x, xd, xdd, p):
    """Contact forces of the plate on the ball in plate axes over stacks ``(K, n)`` of coordinates, velocities
    and their exact (unstabilized) accelerations: returns ``(K, 3)`` = ``(F_x, F_y, N)`` in N.

    ``F = m (a - g_plate)``, ``a = H xdd + h`` the inertial acceleration of the ball centre (plate
    components). The accelerations are the caller's (:func:`accelerations_batch`), so this function
    compiles the kinematic terms only.
    """
    K = x.shape[0]
    n = 5 + int(p[5])
    out = np.empty((K, 3), dtype=xdd.dtype)
    for k in range(K):
        H, G, h, g_v, g_plate, Om, Gp, Gpdot_qd, s = all_terms(x[k], xd[k], p, xdd[k])
        for i in range(3):
            acc = h[i] - g_plate[i]
            for j in range(n):
                acc += H[i, j] * xdd[k, j]
            out[k, i] = p[0] * acc
    return out


@njit(cache=True)
def plate_forces_batch(x, xd, p):
    """``plate_forces`` over stacks ``(K, n)``: returns ``(K, n_p)`` in N m."""
    K = x.shape[0]
    n_p = int(p[5])
    out = np.empty((K, n_p), dtype=x.dtype)
    Gp = np.empty((3, n_p), dtype=x.dtype)
    for k in range(K):
        plate_forces(x[k], xd[k], p, Gp, out[k])
    return out


@njit(cache=True)
def servo_torque_batch(x, xd, u, p):
    """``servo_torque`` over stacks ``(K, n), (K, n), (K, n_p)``: returns ``(K, n_p)`` in N m."""
    K = x.shape[0]
    out = np.empty((K, u.shape[1]), dtype=x.dtype)
    for k in range(K):
        servo_torque(x[k], xd[k], u[k], p, out[k])
    return out


# ------------------------------------------------- C entry points of the compiled loop (ballctl.plants.kernels.native)
def loop_accelerations(x, xd, u, p, a, b, xdd, lam, n, n_u, n_p, n_c):
    """:func:`accelerations` on raw pointers (:data:`ballctl.plants.kernels.native.ACCELERATIONS`).

    Parameters
    ----------
    x, xd, u, p, a, b, xdd, lam, n, n_u, n_p, n_c
        As for :func:`ballctl.plants.kernels.ball_plate.loop_accelerations` (the same C signature).
    """
    accelerations(carray(x, n), carray(xd, n), carray(u, n_u), carray(p, n_p), a, b, carray(xdd, n),
                  carray(lam, n_c))


def loop_constraint_jacobian(x, p, out, n, n_p, n_c):
    """:func:`constraint_jacobian` on raw pointers (:data:`ballctl.plants.kernels.native.CONSTRAINT_JACOBIAN`).

    Parameters
    ----------
    x, p, out, n, n_p, n_c
        As for :func:`ballctl.plants.kernels.ball_plate.loop_constraint_jacobian` (the same C signature).
    """
    constraint_jacobian(carray(x, n), carray(p, n_p), carray(out, (n_c, n)))
