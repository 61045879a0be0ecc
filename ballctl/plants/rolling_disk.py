r"""Rolling disk actuated by internal point masses: the planar reduction of the ball.

The ball of :mod:`ballctl.plants.rolling_ball` with principal axis ``E2``
normal to the plane containing the GC, the CM and every rail, rolling in the
``e1``-``e3`` plane (Putkaradze & Rogers 2018, section 5.4). Its single
equation of motion is eq. (5.40) with ``K_i`` of eq. (5.38); the contact point
follows from eq. (5.41), ``z = z_a - r (phi - phi_a)``.

State (eq. 6.1), length ``2n + 2``::

    x = (theta (n), theta_dot (n), phi, phi_dot)

``phi`` is the angle from ``e1`` to ``E1`` (counter-clockwise; ``phi_dot > 0``
rolls the disk towards ``-e1``), eq. (5.29).

Inputs: ``inputs="acceleration"`` (``u = theta_ddot``, eq. 6.2) or
``inputs="force"`` (generalized rail forces ``tau``). With
``k_i = s_i3 zeta_i1' - s_i1 zeta_i3'`` (the ``e2`` component of
``s_i x zeta_i'``) and ``D`` the denominator of (5.40), the force form solves
the symmetric positive-definite system::

    [ D            -m_i k_i         ] [phi_ddot  ]   [ -r F_e1 + sum m_i K_i(theta_ddot = 0) ]
    [ -m_i k_i     m_i |zeta_i'|^2  ] [theta_ddot] = [ tau_i - m_i <zeta_i', c_i>             ]

with ``c_i = g Gamma - phi_dot^2 zeta_i - 2 theta_dot_i phi_dot e2 x zeta_i' + theta_dot_i^2 zeta_i''``;
the second row is the rail equation ``tau_i = m_i <zeta_i', a_i + g Gamma>`` of
:mod:`ballctl.plants.rolling_ball`.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.29)-(5.46), (6.1)-(6.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from .._validation import ProblemCollector, as_vector, check_positive
from .internal_masses import InternalMassesPlant, InternalMassesSystem, PointMass
from .kernels import rolling_disk as _kernels
from .kernels.batching import restore
from .rails import CircleRail

__all__ = ["RollingDiskParameters", "RollingDisk", "RollingDiskSystem"]

_PLANAR_TOL = 1e-12


@dataclass(frozen=True, kw_only=True)
class RollingDiskParameters:
    """Parameters of the rolling disk (section 5.4).

    Attributes
    ----------
    mass_kg : float
        m0 in kg, > 0.
    radius_m : float
        r in m, > 0.
    inertia_kgm2 : float
        Polar moment ``d2`` about m0's CM, kg m^2, > 0.
    cm_offset_m : ndarray, shape (2,)
        ``(chi0_1, chi0_3)``: GC -> CM of m0 in the disk plane, m; inside the disk.
    point_masses : tuple of PointMass
        Masses on rails in the ``E1``-``E3`` plane (``zeta_2 = 0`` within 1e-12 m), inside the disk.
    gravity_mps2 : float
        g in m/s^2, > 0.
    external_force : callable or None
        ``F_e1(t) -> float``: horizontal force in N at the GC (its vertical part does no work).
    """

    mass_kg: float
    radius_m: float
    inertia_kgm2: float
    cm_offset_m: np.ndarray = field(default_factory=lambda: np.zeros(2))
    point_masses: tuple[PointMass, ...] = ()
    gravity_mps2: float = 9.81
    external_force: Callable[[float], float] | None = None

    def __post_init__(self) -> None:
        check = ProblemCollector("RollingDiskParameters")

        mass = check.attempt(lambda: check_positive(self.mass_kg, "mass_kg", "kg"))
        radius = check.attempt(lambda: check_positive(self.radius_m, "radius_m", "m"))
        inertia = check.attempt(lambda: check_positive(self.inertia_kgm2, "inertia_kgm2", "kg m^2"))
        gravity = check.attempt(lambda: check_positive(self.gravity_mps2, "gravity_mps2", "m/s^2"))
        chi0 = check.attempt(lambda: as_vector(self.cm_offset_m, "cm_offset_m", 2))
        if chi0 is not None and radius is not None and np.linalg.norm(chi0) >= radius:
            check.add(f"cm_offset_m must lie inside the disk, |chi0| < radius_m = {radius}")
        masses = tuple(self.point_masses)
        for k, pm in enumerate(masses):
            if not isinstance(pm, PointMass):
                check.add(f"point_masses[{k}] must be a PointMass, got {type(pm).__name__}")
                continue
            lo, hi = pm.rail.parameter_range
            zeta, dzeta, _ = pm.rail.evaluate(np.linspace(lo, hi, 257))
            if np.max(np.abs(zeta[:, 1])) > _PLANAR_TOL or np.max(np.abs(dzeta[:, 1])) > _PLANAR_TOL:
                check.add(f"point_masses[{k}].rail must lie in the E1-E3 plane (zeta_2 = 0 within "
                          f"{_PLANAR_TOL} m), got max |zeta_2| = {np.max(np.abs(zeta[:, 1])):.3g} m")
            if radius is not None and not pm.rail.max_distance_m() < radius:
                check.add(f"point_masses[{k}].rail leaves the disk: max |zeta| = "
                          f"{pm.rail.max_distance_m():.6g} m, must be < radius_m = {radius}")
        if self.external_force is not None and not callable(self.external_force):
            check.add("external_force must be callable F_e1(t) -> float in N, or None")
        check.raise_if_any()
        for name, value in (("mass_kg", mass), ("radius_m", radius), ("inertia_kgm2", inertia),
                            ("gravity_mps2", gravity)):
            object.__setattr__(self, name, value)
        chi0 = chi0.copy()
        chi0.setflags(write=False)
        object.__setattr__(self, "cm_offset_m", chi0)
        object.__setattr__(self, "point_masses", masses)

    @property
    def n_masses(self) -> int:
        """Number n of moving masses."""
        return len(self.point_masses)

    def as_dict(self) -> dict:
        """Flat dictionary of the parameters with their units in the keys (for files and reports)."""
        return {"mass_kg": float(self.mass_kg), "radius_m": float(self.radius_m),
                "inertia_kgm2": float(self.inertia_kgm2), "cm_offset_m": self.cm_offset_m.tolist(),
                "gravity_mps2": float(self.gravity_mps2), "point_masses": [pm.as_dict() for pm in self.point_masses],
                "external_force": None if self.external_force is None else repr(self.external_force)}


def newton_single_mass_angular_acceleration(phi, phi_dot, theta, theta_dot, theta_ddot,
                                            params: RollingDiskParameters, *, t: float = 0.0):
    r"""``phi_ddot`` of a disk (CM at GC) with one mass on a centred circle, by Newton's laws, eq. (5.46).

    An independent derivation used to validate eq. (5.40).

    Parameters
    ----------
    phi, phi_dot : float or ndarray
        Disk angle (rad) and rate (rad/s).
    theta, theta_dot, theta_ddot : float or ndarray
        Rail angle (rad), rate (rad/s) and acceleration (rad/s^2) of the mass.
    params : RollingDiskParameters
        The disk: ``mass_kg`` (m0, kg), ``radius_m`` (r, m), ``inertia_kgm2`` (d2, kg m^2),
        ``gravity_mps2`` (g, m/s^2), ``cm_offset_m`` zero, and one point mass (m1, kg) on a
        :class:`~ballctl.plants.rails.CircleRail` of radius r1 (m) centred at the GC in the
        ``E1``-``E3`` plane; ``external_force`` (F_e1 in N, or None for 0).
    t : float
        Time in s at which ``external_force`` is evaluated.

    Returns
    -------
    float or ndarray
        ``phi_ddot`` in rad/s^2.
    """
    if not isinstance(params, RollingDiskParameters):
        raise ParameterTypeError(f"params must be RollingDiskParameters, got {type(params).__name__}")
    rail = params.point_masses[0].rail if len(params.point_masses) == 1 else None
    if (not isinstance(rail, CircleRail) or np.any(rail.center_m != 0.0) or np.any(rail.rotation != np.eye(3))
            or np.any(params.cm_offset_m != 0.0)):
        raise ParameterError("eq. (5.46) holds for one point mass on a CircleRail centred at the GC in the E1-E3 "
                             "plane and the disk's CM at the GC (cm_offset_m = 0)")
    r, r1 = params.radius_m, rail.radius_m
    m0, m1 = params.mass_kg, params.point_masses[0].mass_kg
    g = params.gravity_mps2
    force = 0.0 if params.external_force is None else float(params.external_force(t))
    a = phi + theta
    num = r * force + m1 * r1 * (np.cos(a) * (r * (phi_dot + theta_dot) ** 2 + g) + (r1 + r * np.sin(a)) * theta_ddot)
    den = params.inertia_kgm2 + (m0 + m1) * r ** 2 + m1 * r1 * (r1 + 2 * r * np.sin(a))
    return -num / den


class RollingDisk(InternalMassesPlant):
    """The rolling disk, eqs. (5.40)-(5.41) and (6.2).

    Parameters
    ----------
    params : RollingDiskParameters
        Physical parameters.
    inputs : {"acceleration", "force"}
        ``u = theta_ddot`` or generalized rail forces ``tau`` (module docstring).

    Examples
    --------
    >>> from ballctl.plants.rolling_disk import RollingDisk
    >>> from ballctl.plants.paper import paper_disk_parameters, paper_disk_initial_state
    >>> disk = RollingDisk(paper_disk_parameters())
    >>> disk.rhs(0.0, paper_disk_initial_state(), [0.0] * 4).shape
    (10,)
    """

    parameters_type = RollingDiskParameters
    name = "rolling_disk"
    default_tolerance = 1e-12

    @property
    def n_states(self) -> int:
        """State length ``2n + 2`` (eq. 6.1)."""
        return 2 * self._n + 2

    def split_state(self, x):
        """Return ``(theta, theta_dot, phi, phi_dot)`` of a state stack ``(..., 2n + 2)``.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        """
        x = np.asarray(x)
        n = self._n
        return x[..., :n], x[..., n:2 * n], x[..., 2 * n], x[..., 2 * n + 1]

    # the equations of motion are evaluated by the compiled kernels of
    # ballctl.plants.kernels.rolling_disk (one source of truth)
    kernels = _kernels

    def __init__(self, params: RollingDiskParameters, *, inputs: str = "acceleration") -> None:
        super().__init__(params, inputs=inputs)
        self._kernel_parameters = np.concatenate([[params.mass_kg, params.radius_m, params.inertia_kgm2],
                                                  params.cm_offset_m, [params.gravity_mps2], self._masses[1:]])
        self._kernel_parameters.setflags(write=False)

    @property
    def kernel_parameters(self) -> np.ndarray:
        """Parameters packed for the kernels, shape (6 + n,).

        ``(m0 kg, r m, d2 kg m^2, chi0 (2) m, g m/s^2, m_1 .. m_n kg)``.
        """
        return self._kernel_parameters

    def _external(self, t):
        F = self.params.external_force
        return 0.0 if F is None else float(F(t))

    def _rails(self, theta):
        """(zeta_1, zeta_3) and derivatives of all bodies i = 0..n, each (..., n+1, 2)."""
        theta = np.asarray(theta)
        geometry = self.rail_geometry(theta)
        lead = geometry[0].shape[:-2]
        chi0 = np.broadcast_to(np.asarray(self.params.cm_offset_m, dtype=float), lead + (1, 2))
        zero = np.zeros_like(chi0)
        return tuple(np.concatenate([c, g[..., [0, 2]]], axis=-2) for c, g in zip((chi0, zero, zero), geometry))

    def _solve(self, t, x, u, mode):
        lead, (phidd, thdd, tau) = self._call(_kernels.solve_batch, t, x, u, mode)
        return restore(phidd, lead), restore(thdd, lead), restore(tau, lead)

    def angular_acceleration(self, t, x, rail_accelerations):
        """``phi_ddot = kappa(t, x, u)``, eqs. (5.40)/(6.3), shape (...).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 2)
            States.
        rail_accelerations : array_like, shape (..., n)
            Rail accelerations ``theta_ddot`` (units of theta per s^2).
        """
        return self._solve(t, x, rail_accelerations, 0)[0]

    def rail_forces(self, t, x, rail_accelerations):
        """Generalized rail forces that produce the given rail accelerations, shape (..., n).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 2)
            States.
        rail_accelerations : array_like, shape (..., n)
            Rail accelerations ``theta_ddot`` (units of theta per s^2).
        """
        return self._solve(t, x, rail_accelerations, 0)[2]

    def rail_accelerations(self, t, x, rail_forces):
        """Rail accelerations produced by generalized rail forces, shape (..., n).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 2)
            States.
        rail_forces : array_like, shape (..., n)
            Generalized rail forces ``tau`` (N, or N m for an angle parameter).
        """
        return self._solve(t, x, rail_forces, 1)[1]

    def rhs(self, t, x, u):
        """ODE right-hand side (6.2), shape (..., 2n + 2) (compiled kernel).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., 2n + 2)
            States.
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        ndarray, shape (..., 2n + 2)
        """
        return super().rhs(t, x, u)

    def contact_forces(self, t, x, u) -> tuple[np.ndarray, np.ndarray]:
        """Force of the floor on the disk at the contact point, spatial (e1, e3) plane (compiled kernel).

        ``F = sum_{i>=0} m_i a_i + M g e3 - F_e1(t) e1`` with ``a_i`` the absolute
        accelerations of m0's CM and of each point mass; see
        :func:`ballctl.plants.kernels.rolling_disk.contact_force`.

        Parameters
        ----------
        t : float
            Time in s (the external force).
        x : array_like, shape (..., 2n + 2)
            States (eq. 6.1).
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        normal : ndarray, shape (...)
            Normal force in N along e3 (the total weight at rest).
        tangential : ndarray, shape (..., 1)
            Friction force in N along e1 (kept as a length-1 axis, like the ball's (..., 2)).
        """
        return super().contact_forces(t, x, u)

    def energy(self, x):
        """Total energy ``T + V`` in J, shape (...); conserved with fixed (or free) masses and ``F_e = 0``.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        """
        theta, theta_dot, phi, phi_dot = self.split_state(x)
        zeta, dzeta, _ = self._rails(theta)
        r = self.params.radius_m
        s1 = r * np.sin(phi)[..., None] + zeta[..., 0]
        s3 = r * np.cos(phi)[..., None] + zeta[..., 1]
        pd = phi_dot[..., None]
        td = np.concatenate([np.zeros_like(theta_dot[..., :1]), theta_dot], axis=-1)
        v1 = -pd * s3 + td * dzeta[..., 0]
        v3 = pd * s1 + td * dzeta[..., 1]
        kin = (0.5 * np.einsum("k,...k->...", self._masses, v1 ** 2 + v3 ** 2)
               + 0.5 * self.params.inertia_kgm2 * phi_dot ** 2)
        gam1, gam3 = np.sin(phi)[..., None], np.cos(phi)[..., None]
        pot = self.params.gravity_mps2 * np.einsum(
            "k,...k->...", self._masses, zeta[..., 0] * gam1 + zeta[..., 1] * gam3)
        return kin + pot

    def contact_position(self, x, *, z_start_m: float = 0.0, phi_start: float = 0.0):
        """e1 coordinate of the GC and contact point, eq. (5.41): ``z = z_a - r (phi - phi_a)``, m.

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        z_start_m : float
            Contact point in m at ``phi_start``.
        phi_start : float
            Disk angle in rad where the contact point is ``z_start_m``.
        """
        phi = self.split_state(x)[2]
        return z_start_m - self.params.radius_m * (phi - phi_start)

    def to_spatial_about_gc(self, x, body_vectors):
        """Rotate body-plane vectors ``(..., k, 2)`` (components 1, 3) by ``Lambda(phi)`` (eq. 5.29).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        body_vectors : array_like, shape (..., k, 2)
            Body-plane vectors (components 1, 3).
        """
        phi = self.split_state(x)[2][..., None]
        v = np.asarray(body_vectors)
        c, s = np.cos(phi), np.sin(phi)
        return np.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1]], axis=-1)

    def mass_positions_body(self, x):
        """``(zeta_1, zeta_3)`` of the moving masses in m, shape (..., n, 2).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        """
        return self._rails(self.split_state(x)[0])[0][..., 1:, :]

    def total_cm_body(self, x):
        """Total CM (components 1, 3) in the body frame about the GC, m, shape (..., 2).

        Parameters
        ----------
        x : array_like, shape (..., 2n + 2)
            States.
        """
        zeta = self._rails(self.split_state(x)[0])[0]
        return np.einsum("k,...ki->...i", self._masses, zeta) / self._masses.sum()

    def to_constrained_system(self, *, contact_at_zero_angle_m: float = 0.0) -> "RollingDiskSystem":
        """Express this disk in the common interface (:class:`ballctl.system.ConstrainedSystem`).

        See :class:`RollingDiskSystem`; ``inputs`` is inherited from this plant.

        Parameters
        ----------
        contact_at_zero_angle_m : float
            The e1 coordinate (m) of the contact point when ``phi = 0`` (the
            constant of eq. 5.41).

        Returns
        -------
        RollingDiskSystem
        """
        return RollingDiskSystem(self, contact_at_zero_angle_m=contact_at_zero_angle_m)


# ----------------------------------------------------------------------------------------------
# The disk in generalized coordinates
# ----------------------------------------------------------------------------------------------

class RollingDiskSystem(InternalMassesSystem):
    r"""The rolling disk in generalized coordinates, as a :class:`~ballctl.system.ConstrainedSystem`.

    Coordinates (``n + 2``)::

        (contact_x, phi, theta_1, ..., theta_n)

    ``contact_x`` is the e1 coordinate of the contact point (= GC) in m,
    ``phi`` the disk angle of eq. (5.29) in rad, ``theta_i`` the rail
    parameters. Rolling without slipping, eq. (5.41), is the one holonomic
    constraint ``C = contact_x + r phi - z_0 = 0`` (``z_0`` the contact point
    at ``phi = 0``).

    Dynamics: Lagrange's equations with the kinetic energy
    ``1/2 sum m_i |v_i|^2 + 1/2 d2 phi_dot^2`` and the potential
    ``g sum m_i e3 . Lambda(phi) zeta_i`` (the energy of
    :meth:`RollingDisk.energy`), so that the motion equals eq. (5.40). With
    ``inputs="force"`` the rail forces enter ``Q`` on the ``theta`` rows;
    with ``inputs="acceleration"`` those rows become ``theta_ddot = u``:
    ``M = blockdiag(M_rr, 1)``, ``Q = (Q_r - M_r,theta u, u)``, as in
    :class:`~ballctl.plants.rolling_ball.RollingBallSystem`.

    All callables accept stacks (leading axes) and are complex-step safe.

    Parameters
    ----------
    disk : RollingDisk
        Must have no external force (the common interface is autonomous).
    contact_at_zero_angle_m : float
        ``z_0`` in m.

    References
    ----------
    V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), eqs. (5.29), (5.40), (5.41).

    Examples
    --------
    >>> from ballctl.plants.rolling_disk import RollingDisk
    >>> from ballctl.plants.paper import paper_disk_parameters
    >>> sys_ = RollingDisk(paper_disk_parameters()).to_constrained_system()
    >>> sys_.coordinate_names[:3]
    ('contact_x', 'phi', 'theta_1')
    """

    def __init__(self, disk: RollingDisk, *, contact_at_zero_angle_m: float = 0.0) -> None:
        if not isinstance(disk, RollingDisk):
            raise ParameterTypeError(f"disk must be a RollingDisk, got {type(disk).__name__}")
        z0 = float(contact_at_zero_angle_m)
        if not np.isfinite(z0):
            raise ParameterError(f"contact_at_zero_angle_m must be finite (m), got {contact_at_zero_angle_m!r}")
        self.disk = disk
        self.contact_at_zero_angle_m = z0
        super().__init__(disk, body_coordinate_names=("contact_x", "phi"), n_holonomic=1, n_nonholonomic=0)

    # ------------------------------------------------------- interface
    # M, Q, D, Ddot xd and the index-1 solve: the compiled system_terms_batch /
    # system_accelerations_batch of ballctl.plants.kernels.rolling_disk (InternalMassesSystem)
    def _kernel_arguments(self) -> tuple:
        return (self.contact_at_zero_angle_m,)

    def holonomic(self, x) -> np.ndarray:
        """Rolling without slipping, eq. (5.41): ``contact_x + r phi - z_0``, m, shape (..., 1).

        Parameters
        ----------
        x : array_like, shape (..., n + 2)
            Coordinates.

        Returns
        -------
        ndarray, shape (..., 1)
        """
        x = np.asarray(x)
        r = self.disk.params.radius_m
        return (x[..., 0] + r * x[..., 1] - self.contact_at_zero_angle_m)[..., None]

    # ------------------------------------------------------- conversions
    def from_ode_state(self, x_ode) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates and velocities ``(x, xd)`` of a plant state ``(theta, theta_dot, phi, phi_dot)`` (eq. 6.1).

        The contact point follows from eq. (5.41), ``contact_x = z_0 - r phi``.
        Accepts stacks ``(..., 2n + 2)``.

        Parameters
        ----------
        x_ode : array_like, shape (..., 2n + 2)
            Plant states.
        """
        disk = self.disk
        theta, theta_dot, phi, phi_dot = disk.split_state(np.asarray(x_ode, dtype=float))
        r = disk.params.radius_m
        x = np.concatenate([(self.contact_at_zero_angle_m - r * phi)[..., None], phi[..., None], theta], axis=-1)
        xd = np.concatenate([(-r * phi_dot)[..., None], phi_dot[..., None], theta_dot], axis=-1)
        return x, xd

    def to_ode_state(self, x, xd) -> np.ndarray:
        """Plant state ``(theta, theta_dot, phi, phi_dot)`` (eq. 6.1) of coordinates and velocities, (..., 2n + 2).

        Parameters
        ----------
        x, xd : array_like, shape (..., n + 2)
            Coordinates and velocities.
        """
        x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
        return np.concatenate([x[..., 2:], xd[..., 2:], x[..., 1:2], xd[..., 1:2]], axis=-1)
