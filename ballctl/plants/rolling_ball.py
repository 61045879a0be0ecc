r"""Rolling ball actuated by internal point masses on rails.

A ball of mass ``m0``, radius ``r``, principal inertia ``(d1, d2, d3)`` about
its own centre of mass (CM), whose CM sits at ``chi0`` from the geometric
centre (GC), rolls without slipping on a horizontal plane. ``n >= 0`` point
masses move along rails fixed in the ball (:mod:`ballctl.plants.rails`); an optional
external force ``F_e(t)`` acts at the GC. Putkaradze & Rogers (2018),
eqs. (5.23)/(5.24) and (5.28); ``n = 0`` is the static-structure ball (5.26).

State (eq. 7.1), length ``2n + 9``::

    x = (theta (n), theta_dot (n), q (4), Omega (3), z (2))

``theta`` are the rail parameters, ``q`` the unit quaternion (scalar first)
of the orientation ``Lambda`` (body -> spatial), ``Omega`` the body angular
velocity in rad/s, ``z`` the spatial e1, e2 coordinates of the GC (and of the
contact point, CP) in m. Spatial frame: e3 up, origin plane through the GC.

Inputs
------
``inputs="acceleration"`` (the paper): ``u = theta_ddot`` (eq. 7.2), the
prescribed rail accelerations. ``inputs="force"``: ``u = tau``, the
generalized motor forces along the rails (the force along the rail tangent
times ``|d zeta/d theta|``; N for a :class:`~ballctl.plants.rails.SegmentRail`,
N m for a circle parametrised by angle). The two are related by the rail
equation of each mass (frictionless rail, reaction normal to the rail)::

    tau_i = m_i < zeta_i', a_i + g Gamma >,
    a_i  = Omega_dot x s_i + Omega x (Omega x zeta_i) + 2 theta_dot_i Omega x zeta_i'
           + theta_dot_i^2 zeta_i'' + theta_ddot_i zeta_i',

(``a_i`` is the absolute acceleration of mass ``i`` in body axes). Given
forces, ``Omega_dot`` and ``theta_ddot`` solve the symmetric positive-definite
system::

    [ I - sum m_i hat(s_i)^2     m_i s_i x zeta_i'    ] [Omega_dot ]   [ -b0                      ]
    [ m_i (s_i x zeta_i')^T      m_i |zeta_i'|^2      ] [theta_ddot] = [ tau_i - m_i <zeta_i', c_i> ]

with ``b0`` the bracket of eq. (7.4) at ``theta_ddot = 0`` and
``c_i = g Gamma + Omega x (Omega x zeta_i) + 2 theta_dot_i Omega x zeta_i' + theta_dot_i^2 zeta_i''``.
See :meth:`RollingBall.rail_forces` and :meth:`RollingBall.rail_accelerations`.

All array methods accept stacks: a state of shape ``(..., 2n + 9)`` and inputs
``(..., n)`` give outputs with the same leading axes (``(K, ...)`` along a
trajectory, ``(batch, ...)`` in :func:`ballctl.plants.rolling_ball` batch
runs). Everything is complex-step safe.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.23)-(5.28),
(7.1)-(7.12), appendix 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._errors import ChartSingularityError, ParameterError, ParameterTypeError
from .._quaternion import cross, quat_from_matrix, quat_to_matrix
from .._validation import ProblemCollector, as_vector, check_positive
from .internal_masses import InternalMassesPlant, InternalMassesSystem, PointMass
from .kernels import rolling_ball as _kernels
from .kernels.batching import restore

__all__ = ["PointMass", "RollingBallParameters", "RollingBall", "RollingBallSystem"]

_QUAT_TOL = 1e-9
_NO_FORCE = np.zeros(3)  # writable like a user's force (one numba specialization); never written


@dataclass(frozen=True, kw_only=True)
class RollingBallParameters:
    """Physical parameters of the rolling ball (Putkaradze & Rogers 2018, section 4).

    Attributes
    ----------
    mass_kg : float
        Mass m0 of the ball without the point masses, kg, > 0.
    radius_m : float
        Radius r in m, > 0.
    principal_inertia_kgm2 : ndarray, shape (3,)
        ``(d1, d2, d3)`` in kg m^2 about m0's CM along its principal axes
        (the body axes E1, E2, E3), each > 0.
    cm_offset_m : ndarray, shape (3,)
        ``chi0``: GC -> CM of m0 in m, body axes; ``|chi0| < r``.
    point_masses : tuple of PointMass
        The ``n >= 0`` moving masses; each rail must stay strictly inside the
        ball over its whole parameter range.
    gravity_mps2 : float
        g in m/s^2, > 0.
    external_force : callable or None
        ``F_e(t) -> (3,)``, spatial force in N at the GC; ``None`` for none.
    """

    mass_kg: float
    radius_m: float
    principal_inertia_kgm2: np.ndarray
    cm_offset_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    point_masses: tuple[PointMass, ...] = ()
    gravity_mps2: float = 9.81
    external_force: Callable[[float], np.ndarray] | None = None

    def __post_init__(self) -> None:
        check = ProblemCollector("RollingBallParameters")

        mass = check.attempt(lambda: check_positive(self.mass_kg, "mass_kg", "kg"))
        radius = check.attempt(lambda: check_positive(self.radius_m, "radius_m", "m"))
        gravity = check.attempt(lambda: check_positive(self.gravity_mps2, "gravity_mps2", "m/s^2"))
        inertia = check.attempt(lambda: as_vector(self.principal_inertia_kgm2, "principal_inertia_kgm2", 3))
        if inertia is not None and np.any(inertia <= 0.0):
            check.add("principal_inertia_kgm2 must be positive definite: every principal moment "
                      f"(d1, d2, d3) must be > 0 kg m^2, got {inertia.tolist()}")
        elif inertia is not None and 2.0 * np.max(inertia) > np.sum(inertia) * (1.0 + 1e-12):
            check.add("principal_inertia_kgm2 must satisfy the triangle inequality of a rigid body "
                      f"(each moment <= the sum of the other two, to 1e-12), got {inertia.tolist()} kg m^2")
        chi0 = check.attempt(lambda: as_vector(self.cm_offset_m, "cm_offset_m", 3))
        if chi0 is not None and radius is not None and np.linalg.norm(chi0) >= radius:
            check.add(f"cm_offset_m must lie inside the ball, |chi0| < radius_m = {radius}, "
                      f"got |chi0| = {np.linalg.norm(chi0)}")
        masses = tuple(self.point_masses)
        for k, pm in enumerate(masses):
            if not isinstance(pm, PointMass):
                check.add(f"point_masses[{k}] must be a PointMass, got {type(pm).__name__}")
                continue
            if radius is not None:
                dist = pm.rail.max_distance_m()
                if not dist < radius:
                    check.add(f"point_masses[{k}].rail leaves the ball: max |zeta| over its parameter "
                              f"range {pm.rail.parameter_range} is {dist:.6g} m, must be < radius_m = {radius}")
        if self.external_force is not None and not callable(self.external_force):
            check.add(f"external_force must be callable F_e(t) -> (3,) in N or None, got {self.external_force!r}")
        check.raise_if_any()
        for name, value in (("mass_kg", mass), ("radius_m", radius), ("gravity_mps2", gravity)):
            object.__setattr__(self, name, value)
        for name, value in (("principal_inertia_kgm2", inertia), ("cm_offset_m", chi0)):
            value = value.copy()
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "point_masses", masses)

    @property
    def n_masses(self) -> int:
        """Number n of moving point masses."""
        return len(self.point_masses)

    @property
    def total_mass_kg(self) -> float:
        """``M = m0 + sum m_i`` in kg."""
        return self.mass_kg + sum(pm.mass_kg for pm in self.point_masses)

    def as_dict(self) -> dict:
        """Flat dictionary of the parameters with their units in the keys (for files and reports)."""
        return {"mass_kg": float(self.mass_kg), "radius_m": float(self.radius_m),
                "principal_inertia_kgm2": self.principal_inertia_kgm2.tolist(),
                "cm_offset_m": self.cm_offset_m.tolist(), "gravity_mps2": float(self.gravity_mps2),
                "point_masses": [pm.as_dict() for pm in self.point_masses],
                "external_force": None if self.external_force is None else repr(self.external_force)}


class RollingBall(InternalMassesPlant):
    """The rolling ball of Putkaradze & Rogers (2018) as an ODE/DAE plant.

    Parameters
    ----------
    params : RollingBallParameters
        Physical parameters.
    inputs : {"acceleration", "force"}
        Meaning of ``u``: prescribed rail accelerations ``theta_ddot`` in
        1/s^2 (units of theta per s^2; eq. 7.2) or generalized rail forces ``tau``
        (see the module docstring for the mapping).

    Notes
    -----
    The plant is an immutable description; runs live in
    :class:`~ballctl.ode.ODETrajectory`. The ODE-plant contract is in
    :mod:`ballctl.plants.base`; what the ball shares with the disk is in
    :class:`~ballctl.plants.internal_masses.InternalMassesPlant`.

    Examples
    --------
    >>> from ballctl.plants.rolling_ball import RollingBall
    >>> from ballctl.plants.paper import paper_ball_parameters, paper_ball_initial_state
    >>> ball = RollingBall(paper_ball_parameters())
    >>> ball.rhs(0.0, paper_ball_initial_state(), [1.0, 1.0, 1.0]).shape
    (15,)
    """

    parameters_type = RollingBallParameters
    name = "rolling_ball"

    def __init__(self, params: RollingBallParameters, *, inputs: str = "acceleration") -> None:
        super().__init__(params, inputs=inputs)
        self._inertia = np.asarray(params.principal_inertia_kgm2, dtype=float)
        self._kernel_parameters = np.concatenate([[params.mass_kg, params.radius_m], self._inertia,
                                                  params.cm_offset_m, [params.gravity_mps2], self._masses[1:]])
        self._kernel_parameters.setflags(write=False)

    # ------------------------------------------------------------ layout
    @property
    def n_states(self) -> int:
        """State length ``2n + 9`` (eq. 7.1)."""
        return 2 * self._n + 9

    @property
    def state_names(self) -> tuple[str, ...]:
        """Names of the state components."""
        n = self._n
        return (tuple(f"theta_{i + 1}" for i in range(n)) + tuple(f"theta_dot_{i + 1}" for i in range(n))
                + ("q0", "q1", "q2", "q3", "Omega_1", "Omega_2", "Omega_3", "z_1", "z_2"))

    def split_state(self, x):
        """Return ``(theta, theta_dot, q, Omega, z)`` views of a state stack ``(..., 2n + 9)``.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        x = np.asarray(x)
        n = self._n
        return x[..., :n], x[..., n:2 * n], x[..., 2 * n:2 * n + 4], x[..., 2 * n + 4:2 * n + 7], x[..., 2 * n + 7:]

    def validate_state(self, x, name: str = "x0") -> np.ndarray:
        """Check a single state: length, finiteness and a unit quaternion (within 1e-9).

        Parameters
        ----------
        x : array_like, shape (2n + 9,)
            One state.
        name : str
            Argument name for error messages.
        """
        x = as_vector(x, name, self.n_states)
        q = self.split_state(x)[2]
        norm = float(np.sqrt(q @ q))
        if abs(norm - 1.0) > _QUAT_TOL:
            raise ParameterError(f"{name}: the quaternion {name}[{2 * self._n}:{2 * self._n + 4}] must be a unit "
                             f"quaternion (|q| = 1 within {_QUAT_TOL}), got |q| = {norm!r}")
        return x

    # ------------------------------------------------------------ pieces
    # the equations of motion are evaluated by the compiled kernels of
    # ballctl.plants.kernels.rolling_ball (one source of truth)
    kernels = _kernels

    @property
    def kernel_parameters(self) -> np.ndarray:
        """Parameters packed for the kernels, shape (9 + n,).

        ``(m0 kg, r m, d1, d2, d3 kg m^2, chi0 (3) m, g m/s^2, m_1 .. m_n kg)``.
        """
        return self._kernel_parameters

    def _external(self, t):
        F = self.params.external_force
        if F is None:
            return _NO_FORCE
        return np.array(as_vector(F(t), "external_force(t)", 3), dtype=float)

    def _rails(self, theta):
        """zeta, zeta', zeta'' of the moving masses, each (..., n, 3)."""
        return self.rail_geometry(theta)

    def _kinematics(self, x):
        """Orientation, rail geometry and the vectors ``s_i`` from the contact point (observables only)."""
        theta = self.split_state(x)[0]
        Lam = quat_to_matrix(self.split_state(x)[2])
        Gam = Lam[..., 2, :]  # Lambda^T e3
        zeta, dzeta, _ = self._rails(theta)
        chi0 = np.broadcast_to(self.params.cm_offset_m, Gam.shape)
        zeta_all = np.concatenate([chi0[..., None, :], zeta], axis=-2)  # (..., n+1, 3)
        s = self.params.radius_m * Gam[..., None, :] + zeta_all
        return dict(Lam=Lam, Gam=Gam, dzeta=dzeta, s=s, zeta_all=zeta_all)

    # ------------------------------------------------------- equations
    def _solve(self, t, x, u, mode):
        lead, (Omd, thdd, tau) = self._call(_kernels.solve_batch, t, x, u, mode)
        return restore(Omd, lead), restore(thdd, lead), restore(tau, lead)

    def angular_acceleration(self, t, x, rail_accelerations):
        """``Omega_dot = kappa(t, x, u)``, eq. (7.4) (and (5.28)), shape (..., 3).

        Parameters
        ----------
        t : float
            Time in s (used by the external force).
        x : array_like, shape (..., 2n + 9)
        rail_accelerations : array_like, shape (..., n)
            ``theta_ddot``.
        """
        return self._solve(t, x, rail_accelerations, 0)[0]

    def rail_forces(self, t, x, rail_accelerations):
        """Generalized rail forces ``tau`` that produce the given rail accelerations, shape (..., n).

        ``tau_i = m_i <zeta_i', a_i + g Gamma>`` (module docstring).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 9)
            States.
        rail_accelerations : array_like, shape (..., n)
            Rail accelerations ``theta_ddot`` (units of theta per s^2).
        """
        return self._solve(t, x, rail_accelerations, 0)[2]

    def rail_accelerations(self, t, x, rail_forces):
        """Rail accelerations ``theta_ddot`` produced by generalized rail forces ``tau``, shape (..., n).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 9)
            States.
        rail_forces : array_like, shape (..., n)
            Generalized rail forces ``tau`` (N, or N m for an angle parameter).
        """
        return self._solve(t, x, rail_forces, 1)[1]

    def rhs(self, t, x, u):
        """ODE right-hand side (7.2): ``x_dot = f(t, x, u)``, shape (..., 2n + 9) (compiled kernel).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 9)
            State (eq. 7.1).
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        ndarray, shape (..., 2n + 9)
        """
        return super().rhs(t, x, u)

    def contact_forces(self, t, x, u) -> tuple[np.ndarray, np.ndarray]:
        """Force of the floor on the ball at the contact point, spatial frame (compiled kernel).

        ``F = sum_{i>=0} m_i a_i + M g e3 - F_e(t)`` with ``a_i`` the absolute
        acceleration of the shell's CM (``i = 0``, at ``chi0``) and of each point
        mass (module docstring), ``M = total_mass_kg``; see
        :func:`ballctl.plants.kernels.rolling_ball.contact_force`.

        Parameters
        ----------
        t : float
            Time in s (the external force).
        x : array_like, shape (..., 2n + 9)
            State (eq. 7.1).
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        normal : ndarray, shape (...)
            Normal force in N along e3 (the total weight at rest).
        tangential : ndarray, shape (..., 2)
            Friction force in N along e1, e2.
        """
        return super().contact_forces(t, x, u)

    def dae_mass_matrix(self) -> np.ndarray:
        """The DAE mass matrix (7.5), ``diag(1_{2n}, 0, 1_8)``, shape (2n + 9, 2n + 9)."""
        d = np.ones(self.n_states)
        d[2 * self._n] = 0.0
        return np.diag(d)

    def dae_rhs(self, t, x, u):
        """Right-hand side ``g(t, x, u)`` of the index-1 DAE (7.3), shape (..., 2n + 9).

        Row ``2n`` is the algebraic constraint ``|q|^2 - 1``; ``dae_mass_matrix() @ x_dot = g``.

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 9)
            States.
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.
        """
        f = self.rhs(t, x, u)
        q = self.split_state(x)[2]
        f = f.copy()
        f[..., 2 * self._n] = np.sum(q * q, axis=-1) - 1.0
        return f

    # ------------------------------------------------------ observables
    def energy(self, x):
        """Total energy ``T + V`` (eqs. 5.3, 5.4 with the rolling constraint 5.12), J, shape (...).

        ``T = 1/2 sum_{i>=0} m_i |Omega x s_i + zeta_i' theta_dot_i|^2 + 1/2 <Omega, I Omega>``,
        ``V = g sum_{i>=0} m_i <zeta_i, Gamma>``. Conserved when the masses are
        fixed (or free on their rails, ``inputs="force"`` with ``tau = 0``) and ``F_e = 0``.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        T = self._kinematics(x)
        _, theta_dot, _, Om, _ = self.split_state(x)
        vel = cross(Om[..., None, :], T["s"])
        if self._n:
            vel = vel + np.concatenate([np.zeros_like(vel[..., :1, :]), theta_dot[..., :, None] * T["dzeta"]], axis=-2)
        kin = (0.5 * np.einsum("k,...ki,...ki->...", self._masses, vel, vel)
               + 0.5 * np.sum(Om * Om * self._inertia, axis=-1))
        pot = self.params.gravity_mps2 * np.einsum("k,...ki,...i->...", self._masses, T["zeta_all"], T["Gam"])
        return kin + pot

    def contact_angular_momentum(self, x):
        """Angular momentum about the contact point, body frame, shape (..., 3), kg m^2/s.

        ``K = I Omega + sum_{i>=0} m_i s_i x (Omega x s_i + zeta_i' theta_dot_i)``, the
        quantity under ``(d/dt + Omega x)`` in eq. (5.20). When the total CM stays
        at the GC and ``F_e = 0``, gravity and the contact force exert no torque
        about the contact point and ``v_CP x p = 0``, so the spatial vector
        ``Lambda K`` is constant: ``<K, Gamma>`` and ``|K|`` are conserved.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        T = self._kinematics(x)
        _, theta_dot, _, Om, _ = self.split_state(x)
        vel = cross(Om[..., None, :], T["s"])
        if self._n:
            vel = vel + np.concatenate([np.zeros_like(vel[..., :1, :]), theta_dot[..., :, None] * T["dzeta"]], axis=-2)
        return Om * self._inertia + np.einsum("k,...ki->...i", self._masses, cross(T["s"], vel))

    def vertical(self, x):
        """``Gamma = Lambda^T e3`` in body axes, shape (..., 3).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        return quat_to_matrix(self.split_state(x)[2])[..., 2, :]

    def mass_positions_body(self, x):
        """Positions ``zeta_i`` (m) of the moving masses, body frame translated to the GC, shape (..., n, 3).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        return self._rails(self.split_state(x)[0])[0]

    def total_cm_body(self, x):
        """Total centre of mass (m), body frame translated to the GC, shape (..., 3).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        theta = self.split_state(x)[0]
        zeta = self._rails(theta)[0]
        m = self._masses
        return (m[0] * self.params.cm_offset_m + np.einsum("k,...ki->...i", m[1:], zeta)) / m.sum()

    def to_spatial_about_gc(self, x, body_vectors):
        """Rotate body vectors ``(..., k, 3)`` to the spatial frame translated to the GC.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        body_vectors : array_like, shape (..., k, 3)
            Vectors in body axes.
        """
        Lam = quat_to_matrix(self.split_state(x)[2])
        return np.einsum("...ij,...kj->...ki", Lam, np.asarray(body_vectors))

    def contact_point(self, x):
        """Spatial contact point ``(z_1, z_2, -r)`` in m, shape (..., 3).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 9)
            States.
        """
        z = self.split_state(x)[4]
        return np.concatenate([z, np.full(z.shape[:-1] + (1,), -self.params.radius_m)], axis=-1)

    # ------------------------------------------------------ conversion
    def to_constrained_system(self, *, chart_rotation=None, singularity_margin: float = 1e-3) -> "RollingBallSystem":
        """Express this ball in the common interface (:class:`ballctl.system.ConstrainedSystem`).

        See :class:`RollingBallSystem`. ``inputs`` is inherited from this plant.

        Parameters
        ----------
        chart_rotation : array_like, shape (3, 3), optional
            Constant rotation ``C`` of the yaw-pitch-roll chart.
        singularity_margin : float
            Smallest accepted ``|cos(pitch)|``.

        Returns
        -------
        RollingBallSystem
        """
        return RollingBallSystem(self, chart_rotation=chart_rotation, singularity_margin=singularity_margin)


# ----------------------------------------------------------------------------------------------
# The ball in generalized coordinates
# ----------------------------------------------------------------------------------------------

class RollingBallSystem(InternalMassesSystem):
    r"""The rolling ball in generalized coordinates, as a :class:`~ballctl.system.ConstrainedSystem`.

    Coordinates (``n + 5``)::

        (contact_x, contact_y, yaw, pitch, roll, theta_1, ..., theta_n)

    ``(contact_x, contact_y)`` is the contact point (= GC) in m; the
    orientation is ``Lambda = Rz(yaw) Ry(pitch) Rx(roll) C`` with a constant
    chart rotation ``C`` (identity by default). The spatial angular velocity
    is ``omega = W(yaw, pitch) (yaw, pitch, roll)_dot`` with
    ``W = [[0, -sin yaw, cos yaw cos pitch], [0, cos yaw, sin yaw cos pitch], [1, 0, -sin pitch]]``;
    the chart is singular at ``cos(pitch) = 0``. Choose ``C`` so that the
    motion of interest stays away from it (``Lambda C^T`` must not have
    pitch near +-pi/2).

    Two nonholonomic rolling constraints (eq. 5.11 at the GC):
    ``x_dot - r omega_2 = 0``, ``y_dot + r omega_1 = 0``.

    Dynamics: Lagrange-d'Alembert with the kinetic energy
    ``1/2 sum m_i |v_i|^2 + 1/2 omega^T Lambda I Lambda^T omega`` and potential
    ``g sum m_i e3 . Lambda zeta_i``; the two input modes are eliminated as
    in :class:`~ballctl.plants.internal_masses.InternalMassesSystem`.

    Every callable accepts stacks (``batched = True``) and runs in one
    compiled kernel call (:mod:`ballctl.plants.kernels.rolling_ball`).

    Parameters
    ----------
    ball : RollingBall
        Must have no external force (the common interface is autonomous).
    chart_rotation : array_like, shape (3, 3), optional
        Constant rotation ``C``.
    singularity_margin : float
        Raise :class:`~ballctl._errors.ChartSingularityError` when
        ``|cos(pitch)| < singularity_margin``.
    """

    def __init__(self, ball: RollingBall, *, chart_rotation=None, singularity_margin: float = 1e-3) -> None:
        if not isinstance(ball, RollingBall):
            raise ParameterTypeError(f"ball must be a RollingBall, got {type(ball).__name__}")
        self.ball = ball
        C = np.eye(3) if chart_rotation is None else np.asarray(chart_rotation, dtype=float)
        if C.shape != (3, 3) or np.max(np.abs(C.T @ C - np.eye(3))) > 1e-9 or np.linalg.det(C) < 0:
            raise ParameterError("chart_rotation must be a 3x3 rotation matrix (C^T C = I within 1e-9, det = +1)")
        C = np.ascontiguousarray(C)
        C.setflags(write=False)
        self.chart_rotation = C
        self.singularity_margin = check_positive(singularity_margin, "singularity_margin")
        super().__init__(ball, body_coordinate_names=("contact_x", "contact_y", "yaw", "pitch", "roll"),
                         n_holonomic=0, n_nonholonomic=2)

    def chart_margin(self, x) -> np.ndarray:
        """``|cos(pitch)| - singularity_margin``: positive while the yaw-pitch-roll chart is usable.

        Parameters
        ----------
        x : array_like, shape (..., n + 5)
            Coordinates.

        Returns
        -------
        ndarray, shape (...)
        """
        return np.abs(np.cos(np.real(np.asarray(x)[..., 3]))) - self.singularity_margin

    # --------------------------------------------------------- kinematics
    def _check_chart(self, pitch):
        cos_pitch = np.real(np.cos(pitch))
        if abs(cos_pitch) < self.singularity_margin:
            raise ChartSingularityError(
                f"pitch = {np.real(pitch):.6g} rad is within the chart singularity margin: |cos(pitch)| = "
                f"{abs(cos_pitch):.3g} < singularity_margin = {self.singularity_margin}; the yaw-pitch-roll chart "
                "is singular at pitch = +-pi/2. Rotate the chart away with chart_rotation=C (Lambda = Rz Ry Rx C).")

    def _kinematics(self, x):
        """``(Lambda, W)`` of the chart at coordinates ``x`` (the kernel's :func:`chart_kinematics`)."""
        x = np.asarray(x, dtype=float)
        self._check_chart(x[3])
        Lam, W = np.empty((3, 3)), np.empty((3, 3))
        _kernels.chart_kinematics(x, self.chart_rotation, Lam, W)
        return Lam, W

    # ------------------------------------------------------- interface
    # M, Q, D, Ddot xd and the index-1 solve: the compiled system_terms_batch /
    # system_accelerations_batch of ballctl.plants.kernels.rolling_ball (InternalMassesSystem)
    def _kernel_arguments(self) -> tuple:
        return (self.chart_rotation,)

    def holonomic(self, x) -> np.ndarray:
        """No holonomic constraints: an empty array of shape (..., 0).

        Parameters
        ----------
        x : array_like, shape (..., n + 5)
            Coordinates.

        Returns
        -------
        ndarray, shape (..., 0)
        """
        x = np.asarray(x)
        return np.zeros(x.shape[:-1] + (0,), dtype=np.result_type(x, float))

    def _check_coordinates(self, x) -> None:
        if x.shape[0]:
            cos_pitch = np.abs(np.cos(np.real(x[:, 3])))
            k = int(np.argmin(cos_pitch))
            if cos_pitch[k] < self.singularity_margin:
                self._check_chart(x[k, 3])

    # ------------------------------------------------------- conversions
    def from_ode_state(self, x_ode) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates and velocities ``(x, xd)`` of a quaternion state (eq. 7.1) of the ball.

        Parameters
        ----------
        x_ode : array_like, shape (2n + 9,)
            Quaternion state (eq. 7.1) with a unit quaternion.

        Raises
        ------
        ChartSingularityError
            When the orientation is within ``singularity_margin`` of the chart singularity.
        """
        ball = self.ball
        x_ode = ball.validate_state(x_ode, "x_ode")
        theta, theta_dot, q, Om, z = ball.split_state(x_ode)
        Lam = quat_to_matrix(q)
        R = Lam @ self.chart_rotation.T
        pitch = -np.arcsin(np.clip(R[2, 0], -1.0, 1.0))
        self._check_chart(pitch)
        yaw = np.arctan2(R[1, 0], R[0, 0])
        roll = np.arctan2(R[2, 1], R[2, 2])
        coords = np.concatenate([z, [yaw, pitch, roll], theta])
        _, W = self._kinematics(coords)
        rates = np.linalg.solve(W, Lam @ Om)
        r = ball.params.radius_m
        omega = Lam @ Om
        vel = np.concatenate([[r * omega[1], -r * omega[0]], rates, theta_dot])
        return coords, vel

    def to_ode_state(self, x, xd) -> np.ndarray:
        """Quaternion state (eq. 7.1) of coordinates ``x`` and velocities ``xd`` (``z`` from the contact point).

        Parameters
        ----------
        x, xd : array_like, shape (n + 5,)
            Coordinates and velocities.
        """
        x = as_vector(x, "x", self.n_coordinates)
        xd = as_vector(xd, "xd", self.n_coordinates)
        Lam, W = self._kinematics(x)
        Om = Lam.T @ (W @ xd[2:5])
        q = quat_from_matrix(Lam)
        return np.concatenate([x[5:], xd[5:], q, Om, x[:2]])

    def body_angular_acceleration(self, x, xd, xdd) -> np.ndarray:
        """``Omega_dot = Lambda^T (W alpha_ddot + W_dot alpha_dot)`` from generalized accelerations, shape (3,).

        Parameters
        ----------
        x, xd, xdd : array_like, shape (n + 5,)
            Coordinates, velocities and accelerations.
        """
        Lam, W = self._kinematics(x)
        beta = np.empty(3)
        _kernels.chart_rate_term(np.asarray(x, dtype=float), np.asarray(xd, dtype=float), beta)
        return Lam.T @ (W @ np.asarray(xdd)[2:5] + beta)
