r"""CasADi form of the internal-mass ball and disk and of the ball-plate equations (written once, for the planner).

The plants' equations (:mod:`ballctl.plants.rolling_ball`,
:mod:`ballctl.plants.rolling_disk`) are numpy code built on ``einsum``,
``stack`` and ``linalg.solve`` over stacked arrays; they cannot take CasADi
symbols without rewriting them. So the symbolic form lives here, once, and
``tests/test_planning.py`` proves it equal to the plants' numpy
equations at random states and inputs to 1e-12 (both input kinds, every rail
kind). Nothing here is evaluated numerically by the planner except through
CasADi's automatic differentiation.

Ball (eq. 7.2, state of eq. 7.1)::

    A = sum_i m_i (s_i s_i^T - |s_i|^2 1) - I,   s_i = r Gamma + zeta_i
    A Omega_dot = b0 + sum_i m_i theta_ddot_i (s_i x zeta_i')          (7.4)
    q_dot = q (0, Omega) / 2,  z_dot = r (omega_2, -omega_1),  omega = Lambda Omega

Disk (eq. 5.40 / 6.2, state of eq. 6.1)::

    phi_ddot = (num0 + sum_i m_i k_i theta_ddot_i) / (d2 + sum_i m_i |s_i|^2)

With force inputs the rail equations are appended and the joint symmetric
system is solved, as in the plants' ``_force_solve``.

Contact force of the floor (:func:`ball_contact_force_function`,
:func:`disk_contact_force_function`): Newton's equation of the whole plant,
next to the dynamics it needs (``Omega_dot``, ``theta_ddot``; the numeric
twin is :meth:`RollingBall.contact_forces` / :meth:`RollingDisk.contact_forces`,
documented in :mod:`ballctl.plants.kernels.rolling_ball` and
:mod:`ballctl.plants.kernels.rolling_disk`)::

    F = sum_{i>=0} m_i a_i + M g e3,   M = sum_i m_i   (F_e = 0: the planners' plants are autonomous)
    Lambda^T (a_i + g e3) = Omega_dot x s_i + theta_ddot_i zeta_i' + c_i                          (ball)
    a_i = -r phi_ddot e1 + R(phi) (phi_ddot J zeta_i - phi_dot^2 zeta_i + 2 phi_dot theta_dot_i J zeta_i'
          + theta_dot_i^2 zeta_i'' + theta_ddot_i zeta_i')                                          (disk)

normal part ``F . e3``, friction part the floor-plane components.

Quasi-static ball-plate (:func:`ball_plate_equations`): ``M``, ``Q``, ``D``,
``Ddot xd`` and the structured index-1 solve of
:mod:`ballctl.plants.kernels.ball_plate`, proven equal to the compiled kernels
in ``tests/test_planning_ball_plate.py``; its contact force
``F = m (a_G - g_plate)`` (:func:`newton_contact_force`, shared with the exact
moving plate's :func:`moving_plate_contact_force_function`), proven equal to
the kernels' ``contact_forces`` in ``tests/test_planning_contact.py``.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.27), (5.38)-(5.41),
(7.1)-(7.4), appendix 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError
from .._quaternion import rotation_entries
from ..plants.ball_plate import BallPlate
from ..plants.ball_plate_moving import MovingPlateParameters
from ..plants.kernels.rails import rail_curve_casadi
from ..plants.rails import Rail
from ..plants.rolling_ball import RollingBall
from ..plants.rolling_disk import RollingDisk
from ._casadi import require_casadi

__all__ = ["BallPlateEquations", "ball_contact_force_function", "ball_plate_equations", "ball_rhs_function",
           "disk_contact_force_function", "disk_rhs_function", "moving_plate_contact_force_function",
           "moving_plate_contact_function", "newton_contact_force", "quat_to_matrix_casadi", "rail_casadi"]


def rail_casadi(rail: Rail, theta):
    """``(zeta, zeta', zeta'')`` of a rail at a scalar CasADi symbol ``theta``, each a 3x1 expression.

    The rail's kernel row evaluated by
    :func:`ballctl.plants.kernels.rails.rail_curve_casadi`: the formulas of the
    compiled geometry, on CasADi symbols.

    Parameters
    ----------
    rail : Rail
        A :class:`~ballctl.plants.rails.CircleRail`, ``EllipseRail``,
        ``FigureEightRail`` or ``SegmentRail`` (the closed-form rails).
    theta : casadi.SX or casadi.MX
        Rail parameter (rad, or m for a segment).

    Returns
    -------
    zeta, dzeta, ddzeta : casadi expression, shape (3, 1)
        Position in m (body frame about the GC) and its derivatives in ``theta`` (eq. 5.27).

    Raises
    ------
    ValueError
        For a :class:`~ballctl.plants.rails.CallableRail`, a subclass that
        redefines the curve or an unknown rail, whose formula is not known symbolically.
    """
    require_casadi()
    row = rail.kernel_row() if isinstance(rail, Rail) else None
    if row is None:
        raise ParameterError(f"the planner knows the closed-form rails (CircleRail, EllipseRail, FigureEightRail, "
                             f"SegmentRail); got {type(rail).__name__}, whose formula is not available symbolically")
    return rail_curve_casadi(theta, row)


def quat_to_matrix_casadi(q):
    """Rotation matrix ``Lambda`` (body -> spatial) of a quaternion, eq. (2.15).

    The entries are :func:`ballctl._quaternion.rotation_entries` (the formula
    of the numeric and compiled rotation) on CasADi symbols.

    Parameters
    ----------
    q : casadi expression, shape (4, 1)
        Quaternion, scalar first.

    Returns
    -------
    casadi expression, shape (3, 3)
    """
    ca = require_casadi()
    e = rotation_entries(q[0], q[1], q[2], q[3])
    return ca.vertcat(*(ca.horzcat(*e[3 * i:3 * i + 3]) for i in range(3)))


def _check_autonomous(plant) -> None:
    if plant.params.external_force is not None:
        raise ParameterError("the planner needs external_force=None (the transcribed equations are autonomous)")


def _ball_expressions(ball: RollingBall):
    """Symbols ``x, u`` and the expressions ``x_dot`` and the floor's force ``F`` (3,) of the ball (7.2)."""
    ca = require_casadi()
    _check_autonomous(ball)
    p = ball.params
    n = ball.n_masses
    x = ca.SX.sym("x", 2 * n + 9)
    u = ca.SX.sym("u", n)
    theta, thd = x[:n], x[n:2 * n]
    q, Om = x[2 * n:2 * n + 4], x[2 * n + 4:2 * n + 7]
    Lam = quat_to_matrix_casadi(q)
    Gam = Lam[2, :].T
    g, r = p.gravity_mps2, p.radius_m
    masses = [p.mass_kg] + [pm.mass_kg for pm in p.point_masses]
    inertia = np.asarray(p.principal_inertia_kgm2, dtype=float)
    rails = [rail_casadi(pm.rail, theta[i]) for i, pm in enumerate(p.point_masses)]
    zeta_all = [ca.DM(np.asarray(p.cm_offset_m, dtype=float))] + [rz[0] for rz in rails]
    s = [r * Gam + zi for zi in zeta_all]
    A = -ca.DM(np.diag(inertia))
    for m, si in zip(masses, s):
        A = A + m * (ca.mtimes(si, si.T) - ca.dot(si, si) * ca.DM.eye(3))
    IOm = ca.DM(inertia) * Om
    b0 = ca.cross(Om, IOm)
    c_all = []
    for i, (m, si, zi) in enumerate(zip(masses, s, zeta_all)):
        ci = g * Gam + ca.cross(Om, ca.cross(Om, zi))
        if i > 0:
            _, dz, ddz = rails[i - 1]
            ci = ci + 2.0 * thd[i - 1] * ca.cross(Om, dz) + thd[i - 1] ** 2 * ddz
        c_all.append(ci)
        b0 = b0 + m * ca.cross(si, ci)
    c_moving = c_all[1:]
    k = [ca.cross(s[i + 1], rails[i][1]) for i in range(n)]
    if ball.inputs == "acceleration":
        b = b0
        for i in range(n):
            b = b + masses[i + 1] * u[i] * k[i]
        Omd = ca.solve(A, b)
        thdd = u
    else:
        K = ca.SX.zeros(3 + n, 3 + n)
        K[:3, :3] = -A
        rhs = ca.SX.zeros(3 + n, 1)
        rhs[:3] = -b0
        for i in range(n):
            m, dz = masses[i + 1], rails[i][1]
            K[:3, 3 + i] = m * k[i]
            K[3 + i, :3] = (m * k[i]).T
            K[3 + i, 3 + i] = m * ca.dot(dz, dz)
            rhs[3 + i] = u[i] - m * ca.dot(dz, c_moving[i])
        sol = ca.solve(K, rhs)
        Omd, thdd = sol[:3], sol[3:]
    qd = 0.5 * ca.vertcat(-ca.dot(q[1:], Om), q[0] * Om + ca.cross(q[1:], Om))
    omega = ca.mtimes(Lam, Om)
    zd = ca.vertcat(r * omega[1], -r * omega[0])
    # the floor's force: F = sum_i m_i a_i + M g e3,
    # Lambda^T (a_i + g e3) = Omega_dot x s_i + theta_ddot_i zeta_i' + c_i
    f_body = 0
    for i, (m, si, ci) in enumerate(zip(masses, s, c_all)):
        ai = ca.cross(Omd, si) + ci
        if i > 0:
            ai = ai + thdd[i - 1] * rails[i - 1][1]
        f_body = f_body + m * ai
    force = ca.mtimes(Lam, f_body)
    return x, u, ca.vertcat(thd, thdd, qd, Omd, zd), force


def ball_rhs_function(ball: RollingBall):
    """CasADi function ``f(x, u) -> x_dot`` of the ball's ODE (7.2).

    Parameters
    ----------
    ball : RollingBall
        Without external force; inputs ``"acceleration"`` or ``"force"`` as the plant.

    Returns
    -------
    casadi.Function
        ``f(x (2n+9), u (n)) -> (2n+9)``, built on SX; equal to
        :meth:`RollingBall.rhs` to rounding.
    """
    ca = require_casadi()
    x, u, xdot, _ = _ball_expressions(ball)
    return ca.Function("ball_rhs", [x, u], [xdot], ["x", "u"], ["x_dot"])


def ball_contact_force_function(ball: RollingBall):
    r"""CasADi function of the floor's force on the ball at the contact point (spatial frame).

    Newton's equation of the whole ball (shell and point masses), written with
    the same expressions as :func:`ball_rhs_function`:

    .. math::

        F = \sum_{i\ge 0} m_i a_i + M g\,e_3,\qquad
        \Lambda^T (a_i + g e_3) = \dot\Omega\times s_i + \ddot\theta_i\zeta_i' + c_i,

    ``M`` the total mass, ``s_i = r Gamma + zeta_i`` and ``c_i`` as in the
    module docstring of :mod:`ballctl.plants.rolling_ball`; the numeric twin is
    :meth:`RollingBall.contact_forces` (:func:`ballctl.plants.kernels.rolling_ball.contact_force`),
    equal to it to rounding (``tests/test_planning_contact.py``).

    Parameters
    ----------
    ball : RollingBall
        Without external force; inputs ``"acceleration"`` or ``"force"`` as the plant.

    Returns
    -------
    casadi.Function
        ``f(x (2n+9), u (n)) -> (normal (1), tangential (2))`` in N: the normal
        force along ``e3`` (the total weight at rest) and the friction force along ``e1, e2``.
    """
    ca = require_casadi()
    x, u, _, force = _ball_expressions(ball)
    return ca.Function("ball_contact_force", [x, u], [force[2], force[0:2]], ["x", "u"], ["normal", "tangential"])


def _disk_expressions(disk: RollingDisk):
    """Symbols ``x, u`` and the expressions ``x_dot``, the floor's normal force and friction force of the disk."""
    ca = require_casadi()
    _check_autonomous(disk)
    p = disk.params
    n = disk.n_masses
    x = ca.SX.sym("x", 2 * n + 2)
    u = ca.SX.sym("u", n)
    theta, thd, phi, pd = x[:n], x[n:2 * n], x[2 * n], x[2 * n + 1]
    g, r = p.gravity_mps2, p.radius_m
    masses = [p.mass_kg] + [pm.mass_kg for pm in p.point_masses]
    chi0 = np.asarray(p.cm_offset_m, dtype=float)
    bodies = [(chi0[0], chi0[1], 0.0, 0.0, 0.0, 0.0, 0.0)]
    for i, pm in enumerate(p.point_masses):
        z, dz, ddz = rail_casadi(pm.rail, theta[i])
        bodies.append((z[0], z[2], dz[0], dz[2], ddz[0], ddz[2], thd[i]))
    sphi, cphi = ca.sin(phi), ca.cos(phi)
    num0, den = 0.0, p.inertia_kgm2
    ks, zcs, dds = [], [], []
    for m, (z1, z3, d1, d3, dd1, dd3, td) in zip(masses, bodies):
        s1, s3 = r * sphi + z1, r * cphi + z3
        K0 = ((g + r * pd ** 2) * (z3 * sphi - z1 * cphi) + s3 * (-2 * pd * td * d3 + td ** 2 * dd1)
              - s1 * (2 * pd * td * d1 + td ** 2 * dd3))
        num0 = num0 + m * K0
        den = den + m * (s1 ** 2 + s3 ** 2)
        ks.append(s3 * d1 - s1 * d3)
        zcs.append(g * (d1 * sphi + d3 * cphi) - pd ** 2 * (d1 * z1 + d3 * z3) + td ** 2 * (d1 * dd1 + d3 * dd3))
        dds.append(d1 ** 2 + d3 ** 2)
    if disk.inputs == "acceleration":
        phidd = num0
        for i in range(n):
            phidd = phidd + masses[i + 1] * ks[i + 1] * u[i]
        phidd = phidd / den
        thdd = u
    else:
        K = ca.SX.zeros(n + 1, n + 1)
        rhs = ca.SX.zeros(n + 1, 1)
        K[0, 0] = den
        rhs[0] = num0
        for i in range(n):
            m = masses[i + 1]
            K[0, 1 + i] = -m * ks[i + 1]
            K[1 + i, 0] = -m * ks[i + 1]
            K[1 + i, 1 + i] = m * dds[i + 1]
            rhs[1 + i] = u[i] - m * zcs[i + 1]
        sol = ca.solve(K, rhs)
        phidd, thdd = sol[0], sol[1:]
    # the floor's force: F = sum_i m_i a_i + M g e3 in the (e1, e3) plane, body-plane accelerations b_i rotated
    # by R(phi), the GC at -r phi_ddot e1
    f1, f3 = 0.0, sum(masses) * g
    for i, (m, (z1, z3, d1, d3, dd1, dd3, td)) in enumerate(zip(masses, bodies)):
        b1 = -phidd * z3 - pd ** 2 * z1 - 2.0 * pd * td * d3 + td ** 2 * dd1
        b3 = phidd * z1 - pd ** 2 * z3 + 2.0 * pd * td * d1 + td ** 2 * dd3
        if i > 0:
            b1, b3 = b1 + thdd[i - 1] * d1, b3 + thdd[i - 1] * d3
        f1 = f1 + m * (-r * phidd + cphi * b1 - sphi * b3)
        f3 = f3 + m * (sphi * b1 + cphi * b3)
    return x, u, ca.vertcat(thd, thdd, pd, phidd), f3, f1


def disk_rhs_function(disk: RollingDisk):
    """CasADi function ``f(x, u) -> x_dot`` of the disk's ODE (6.2), eq. (5.40).

    Parameters
    ----------
    disk : RollingDisk
        Without external force.

    Returns
    -------
    casadi.Function
        ``f(x (2n+2), u (n)) -> (2n+2)``; equal to :meth:`RollingDisk.rhs` to rounding.
    """
    ca = require_casadi()
    x, u, xdot, _, _ = _disk_expressions(disk)
    return ca.Function("disk_rhs", [x, u], [xdot], ["x", "u"], ["x_dot"])


def disk_contact_force_function(disk: RollingDisk):
    r"""CasADi function of the floor's force on the disk at the contact point (spatial ``e1, e3`` plane).

    Newton's equation of the whole disk, written with the same expressions as
    :func:`disk_rhs_function`: :math:`F = \sum_{i\ge0} m_i a_i + M g\,e_3` with
    the GC at :math:`-r\ddot\phi\,e_1` and, for ``Lambda = R(phi)``,
    ``J = [[0, -1], [1, 0]]``,

    .. math::

        a_i = -r\ddot\phi\,e_1 + \Lambda\big(\ddot\phi J\zeta_i - \dot\phi^2\zeta_i
              + 2\dot\phi\dot\theta_i J\zeta_i' + \dot\theta_i^2\zeta_i'' + \ddot\theta_i\zeta_i'\big);

    the numeric twin is :meth:`RollingDisk.contact_forces`
    (:func:`ballctl.plants.kernels.rolling_disk.contact_force`), equal to it to
    rounding (``tests/test_planning_contact.py``).

    Parameters
    ----------
    disk : RollingDisk
        Without external force.

    Returns
    -------
    casadi.Function
        ``f(x (2n+2), u (n)) -> (normal (1), tangential (1))`` in N: along ``e3``
        (the total weight at rest) and the friction force along ``e1``.
    """
    ca = require_casadi()
    x, u, _, normal, tangential = _disk_expressions(disk)
    return ca.Function("disk_contact_force", [x, u], [normal, tangential], ["x", "u"], ["normal", "tangential"])


# ------------------------------------------------------------------------------------------------
# the quasi-static ball-plate (Aguendez et al. 2024, section 3.1)
# ------------------------------------------------------------------------------------------------

def _refuse_rolling_resistance(ball) -> None:
    """Raise for a ball with rolling resistance: the CasADi equations model ideal rolling only."""
    if ball.rolling_resistance > 0.0:
        raise ParameterError(f"the planner's equations model ideal rolling: rolling_resistance = "
                             f"{ball.rolling_resistance:g} (dimensionless) must be 0 to plan; plan on the plant "
                             f"with dataclasses.replace(ball, rolling_resistance=0.0) and track the result on the "
                             f"plant with rolling resistance")


@dataclass(frozen=True)
class BallPlateEquations:
    """The quasi-static ball-plate's equations as CasADi functions (equal to the compiled kernels).

    Coordinates ``x = (contact_x, contact_y, yaw, lean, roll)`` (m, rad), velocities
    ``xd``, plate angles ``u = (alpha, beta)`` in rad; see :mod:`ballctl.plants.ball_plate`.

    Attributes
    ----------
    mass_matrix : casadi.Function
        ``M(x) -> (5, 5)``.
    forces : casadi.Function
        ``Q(x, xd, u) -> (5,)``.
    constraint_jacobian : casadi.Function
        ``D(x) -> (2, 5)`` (eqs. 43-44).
    constraint_bias : casadi.Function
        ``Ddot(x, xd) xd -> (2,)``.
    accelerations : casadi.Function
        ``(x, xd, u) -> (xdd (5,), lam (2,))``: the index-1 solve of
        ``M xdd + D^T lam = Q``, ``D xdd = -Ddot xd``.
    contact_acceleration : casadi.Function
        ``u -> (2,)``: ``k_b g_plate[:2]``, the first two rows of ``accelerations``
        for every state (the contact subsystem the planner transcribes).
    contact_forces : casadi.Function
        ``(x, xd, u) -> (normal (1), tangential (2))`` in N: the plate's force on
        the ball, ``F = m (a_G - g_plate)`` with ``a_G = (xdd_0, xdd_1, 0)`` from
        ``accelerations`` (:func:`newton_contact_force`); equal to
        :meth:`BallPlate.contact_forces`.
    contact_forces_of_angles : casadi.Function
        ``u -> (normal (1), tangential (2))``: the same force with ``a_G`` from
        ``contact_acceleration``, i.e. for every state:
        ``N = m g cos(alpha) cos(beta)``, ``F_xy = -(1 - k_b) m g_plate[:2]``, so
        the friction needed is ``|F_xy| / N = (1 - k_b) tan(tilt)`` (the plate
        normal's tilt from the vertical).
    """

    mass_matrix: object
    forces: object
    constraint_jacobian: object
    constraint_bias: object
    accelerations: object
    contact_acceleration: object
    contact_forces: object = None
    contact_forces_of_angles: object = None


def newton_contact_force(mass: float, acceleration, g_plate):
    """The plate's force on the ball from the ball's Newton equation in plate axes, ``F = m (a_G - g_plate)``.

    The one formula behind the ball-plate planners' contact constraints (the
    quasi-static :class:`BallPlateEquations` and the exact moving plate's
    :func:`moving_plate_contact_force_function`); the numeric twins are the
    ``contact_forces`` methods of :class:`~ballctl.BallPlate` and
    :class:`~ballctl.plants.ball_plate_moving.MovingPlateBallPlate`.

    Parameters
    ----------
    mass : float
        Ball mass m in kg.
    acceleration : casadi expression, shape (3, 1)
        Inertial acceleration ``a_G`` of the ball's centre in plate components, m/s^2.
    g_plate : casadi expression, shape (3, 1)
        Gravity in plate components, m/s^2 (``g_plate = R_2^T (0, 0, -g)``).

    Returns
    -------
    normal : casadi expression, shape (1, 1)
        ``F_z`` in N, along the plate normal (> 0 while the ball presses on the plate).
    tangential : casadi expression, shape (2, 1)
        ``F_xy`` in N, the friction force in plate axes.
    """
    force = mass * (acceleration - g_plate)
    return force[2], force[0:2]


def ball_plate_equations(plant: BallPlate) -> BallPlateEquations:
    """The :class:`~ballctl.BallPlate` equations written in CasADi (the derivation is in its module).

    ``tests/test_planning_ball_plate.py`` proves every function equal to the
    plant's compiled kernels at random states and inputs to 1e-12.

    Parameters
    ----------
    plant : BallPlate
        The quasi-static plant (its parameters are baked in as constants),
        without rolling resistance.

    Returns
    -------
    BallPlateEquations

    Raises
    ------
    ParameterError
        When the plant has ``rolling_resistance > 0``: these equations (and the
        planners built on them) model ideal rolling.

    References
    ----------
    Agundez et al., Mech. Mach. Theory 203 (2024) 105795, eqs. (31)-(48), (90)-(115).
    """
    ca = require_casadi()
    if not isinstance(plant, BallPlate):
        raise ParameterError(f"plant must be a BallPlate (the quasi-static plate), got {type(plant).__name__}")
    p = plant.params
    _refuse_rolling_resistance(p)
    m, R, inertia, g = float(p.mass), float(p.radius), float(p.ball_inertia), float(p.gravity)
    x, xd, u = ca.SX.sym("x", 5), ca.SX.sym("xd", 5), ca.SX.sym("u", 2)
    cps, sps = ca.cos(x[2]), ca.sin(x[2])
    cph, sph = ca.cos(x[3]), ca.sin(x[3])
    dpsi, dphi, dth = xd[2], xd[3], xd[4]
    M = ca.SX.zeros(5, 5)
    M[0, 0] = M[1, 1] = m
    M[2, 2] = M[3, 3] = M[4, 4] = inertia
    M[2, 4] = M[4, 2] = inertia * sph
    g3 = g * ca.vertcat(ca.cos(u[0]) * ca.sin(u[1]), -ca.sin(u[0]), -ca.cos(u[0]) * ca.cos(u[1]))   # eq. (33)
    gp = g3[0:2]
    Q = ca.vertcat(m * gp, -inertia * dth * dphi * cph, inertia * dpsi * dth * cph, -inertia * dpsi * dphi * cph)
    E = ca.vertcat(ca.horzcat(0.0, -R * sps, -R * cps * cph), ca.horzcat(0.0, R * cps, -R * sps * cph))
    D = ca.horzcat(ca.SX.eye(2), E)
    bias = R * ca.vertcat(-cps * dpsi * dphi + sps * cph * dpsi * dth + cps * sph * dphi * dth,
                          -sps * dpsi * dphi - cps * cph * dpsi * dth + sps * sph * dphi * dth)
    # structured elimination (kernels.ball_plate): (M_a + m E^T E) qdd_a = Q_a - E^T (Q_c - m r)
    r = -bias
    Ma = M[2:, 2:]
    qdd_a = ca.solve(Ma + m * ca.mtimes(E.T, E), Q[2:] - ca.mtimes(E.T, Q[:2] - m * r))
    xdd_c = r - ca.mtimes(E, qdd_a)
    xdd = ca.vertcat(xdd_c, qdd_a)
    lam = Q[:2] - m * xdd_c
    a_contact = p.rolling_gain * gp
    normal, tangential = newton_contact_force(m, ca.vertcat(xdd_c, 0.0), g3)
    normal_u, tangential_u = newton_contact_force(m, ca.vertcat(a_contact, 0.0), g3)
    return BallPlateEquations(
        mass_matrix=ca.Function("mass_matrix", [x], [M], ["x"], ["M"]),
        forces=ca.Function("forces", [x, xd, u], [Q], ["x", "xd", "u"], ["Q"]),
        constraint_jacobian=ca.Function("constraint_jacobian", [x], [D], ["x"], ["D"]),
        constraint_bias=ca.Function("constraint_bias", [x, xd], [bias], ["x", "xd"], ["bias"]),
        accelerations=ca.Function("accelerations", [x, xd, u], [xdd, lam], ["x", "xd", "u"], ["xdd", "lam"]),
        contact_acceleration=ca.Function("contact_acceleration", [u], [a_contact], ["u"], ["a"]),
        contact_forces=ca.Function("contact_forces", [x, xd, u], [normal, tangential], ["x", "xd", "u"],
                                   ["normal", "tangential"]),
        contact_forces_of_angles=ca.Function("contact_forces_of_angles", [u], [normal_u, tangential_u], ["u"],
                                             ["normal", "tangential"]))


def _moving_plate_expressions(params: MovingPlateParameters):
    """Symbols ``(p, v, sigma, q, qd, qdd)`` and the exact plate's ``a``, ``sigma_dot``, ``N``, ``F_xy``."""
    ca = require_casadi()
    if not isinstance(params, MovingPlateParameters) or params.with_spin:
        raise ParameterError("params must be MovingPlateParameters with with_spin=False (two plate angles)")
    b = params.ball
    _refuse_rolling_resistance(b)
    R, g, m, inertia = float(b.radius), float(b.gravity), float(b.mass), float(b.ball_inertia)
    k_b = b.rolling_gain
    c_rot = inertia * R / (inertia + m * R * R)
    p, v, sigma = ca.SX.sym("p", 2), ca.SX.sym("v", 2), ca.SX.sym("sigma")
    q, qd, qdd = ca.SX.sym("q", 2), ca.SX.sym("qd", 2), ca.SX.sym("qdd", 2)
    cb, sb = ca.cos(q[1]), ca.sin(q[1])
    Om = ca.vertcat(qd[0] * cb, qd[1], qd[0] * sb)
    Omd = ca.vertcat(qdd[0] * cb - qd[0] * qd[1] * sb, qdd[1], qdd[0] * sb + qd[0] * qd[1] * cb)
    gp = g * ca.vertcat(ca.cos(q[0]) * sb, -ca.sin(q[0]), -ca.cos(q[0]) * cb)
    s = ca.vertcat(p[0], p[1], R + float(params.pivot_depth))
    sd = ca.vertcat(v[0], v[1], 0.0)
    wb = ca.vertcat(-v[1] / R + Om[0], v[0] / R + Om[1], sigma)
    c = ca.cross(Omd, s) + 2.0 * ca.cross(Om, sd) + ca.cross(Om, ca.cross(Om, s))
    gyro = ca.cross(Om, wb) + Omd
    acc = k_b * (gp[:2] - c[:2]) - c_rot * ca.vertcat(gyro[1], -gyro[0])
    # the centre's inertial acceleration in plate components: relative (acc, 0) plus the transport terms c
    normal, tangential = newton_contact_force(m, ca.vertcat(acc, 0.0) + c, gp)
    return (p, v, sigma, q, qd, qdd), acc, -ca.cross(Om, wb)[2], normal, tangential


def moving_plate_contact_function(params: MovingPlateParameters):
    r"""The contact subsystem of the exact moving plate (two plate angles) as a CasADi function.

    For a sphere the contact point's acceleration and the ball's spin about
    the plate normal do not depend on its orientation; with the plate's
    angles, rates and accelerations ``q, qd, qdd`` (rad, rad/s, rad/s^2),
    plate angular velocity :math:`\Omega = \dot\alpha(\cos\beta, 0, \sin\beta) +
    \dot\beta(0, 1, 0)`, centre :math:`s = (x_C, y_C, R + d)` and ball angular
    velocity :math:`\omega_b = (-v_y/R + \Omega_x, v_x/R + \Omega_y, \sigma)`
    (plate components):

    .. math::

        c = \dot\Omega\times s + 2\Omega\times\dot s + \Omega\times(\Omega\times s),\quad
        a = k_b (g_{plate} - c)_{xy} - \frac{I R}{I + m R^2}
            \big((\Omega\times\omega_b + \dot\Omega)_y, -(\Omega\times\omega_b + \dot\Omega)_x\big),\quad
        \dot\sigma = -(\Omega\times\omega_b)_z,

    the reduction of :class:`~ballctl.plants.ball_plate_moving.MovingPlateBallPlate`
    used by its exact inversion; ``tests/test_planning_ball_plate.py`` proves it equal
    to the plant's compiled kernels (contact rows and the spin's rate) at random states.

    Parameters
    ----------
    params : MovingPlateParameters
        Without plate spin (``with_spin=False``) and without rolling resistance.

    Returns
    -------
    casadi.Function
        ``f(p (2), v (2), sigma, q (2), qd (2), qdd (2)) -> (a (2), sigma_dot)`` in m/s^2 and rad/s^2.

    Raises
    ------
    ParameterError
        With plate spin or ``ball.rolling_resistance > 0`` (not transcribed).

    References
    ----------
    Agundez et al., Mech. Mach. Theory 203 (2024) 105795, appendix B, eqs. (90)-(115).
    """
    ca = require_casadi()
    args, acc, sigma_dot, _, _ = _moving_plate_expressions(params)
    return ca.Function("moving_plate_contact", list(args), [acc, sigma_dot],
                       ["p", "v", "sigma", "q", "qd", "qdd"], ["a", "sigma_dot"])


def moving_plate_contact_force_function(params: MovingPlateParameters):
    r"""The exact moving plate's force on the ball as a CasADi function of the contact subsystem.

    Newton's equation of the ball in plate axes (:func:`newton_contact_force`),
    :math:`F = m\,(a_G - g_{plate})` with the centre's inertial acceleration
    :math:`a_G = (a, 0) + c`: the relative contact acceleration ``a`` and the
    transport terms ``c`` of :func:`moving_plate_contact_function` (same
    expressions). The plate's rates and accelerations enter through ``c`` and
    the gyroscopic term of ``a``, so a friction bound limits how fast the
    plate may tilt. The numeric twin is
    :meth:`~ballctl.plants.ball_plate_moving.MovingPlateBallPlate.contact_forces`
    (``F = m (H xdd + h - g_plate)``), equal to it to rounding
    (``tests/test_planning_contact.py``).

    Parameters
    ----------
    params : MovingPlateParameters
        Without plate spin and without rolling resistance.

    Returns
    -------
    casadi.Function
        ``f(p (2), v (2), sigma, q (2), qd (2), qdd (2)) -> (normal (1), tangential (2))`` in N
        (normal along the plate normal, friction in plate axes x, y).

    Raises
    ------
    ParameterError
        With plate spin or ``ball.rolling_resistance > 0``.
    """
    ca = require_casadi()
    args, _, _, normal, tangential = _moving_plate_expressions(params)
    return ca.Function("moving_plate_contact_force", list(args), [normal, tangential],
                       ["p", "v", "sigma", "q", "qd", "qdd"], ["normal", "tangential"])
