r"""References for the rolling disk and the rolling ball actuated by internal masses.

Three kinds of reference solutions of the DAE ``M xdd + D^T lam = Q``,
``D xd = 0`` of :class:`~ballctl.plants.rolling_disk.RollingDiskSystem` and
:class:`~ballctl.plants.rolling_ball.RollingBallSystem`:

* :class:`DiskRollReference` -- the disk driven from rest to a commanded
  cruise speed (and optionally back to rest at a commanded position) by
  **dynamic inversion**. The masses (on centred circular rails) are
  prescribed in the *spatial* frame about the GC: each hangs at the spatial
  angle ``psi(t) = -pi/2 + beta(t)`` with a common lead angle ``beta(t)``.
  Their rail angles are then ``theta_i = s_i (psi - phi - alpha_i)`` and the
  disk equation (5.40), which is affine in the rail accelerations
  ``u = theta_ddot = s (psi_ddot - phi_ddot)``, is solved for
  ``phi_ddot``::

      phi_ddot = kappa(x, s psi_ddot) / (1 + kappa(x, s) - kappa(x, 0)).

  By the balance of angular momentum about the contact point, ``phi_ddot``
  depends on the prescribed mass motion only (not on ``phi``, ``phi_dot``)
  when the disk's own CM is at the GC, so ``phi`` is a quadrature and the
  zero dynamics of the inversion never enter: ``phi_dot`` and ``phi`` are
  Gauss-Legendre quadratures of ``phi_ddot(t)``. The lead-angle amplitude is
  solved (Brent) so that the disk reaches the commanded cruise speed; with a
  stop, the deceleration is the mirror image (``beta -> -beta``) so the disk
  ends at rest, and the cruise time is chosen to stop at the commanded
  position.
* :class:`IntegratedReference` -- any system under nominal inputs (e.g. the
  ball of section 7 under the paper's rail accelerations, eq. 7.11),
  integrated once at tight tolerance with ``solve_ivp`` dense output. At a
  requested time the dense output gives ``(x, xd)``; ``xd`` is projected onto
  ``D(x) xd = 0`` (``x`` onto ``C(x) = 0``) and ``xdd``, ``lam`` are solved
  from :meth:`~ballctl.system.ConstrainedSystem.accelerations`, so the DAE
  residual of every sample is zero to rounding.
* :class:`StraightRollReference` -- the ball rolling uniformly along a
  straight line with its masses parked, an exact solution when the total CM
  is at the GC and the rolling axis is a principal axis of the total inertia
  about the GC (used by :mod:`ballctl.studies.rail_layouts`).

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.29)-(5.41),
(6.5)-(6.7), (7.8)-(7.12).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from .._errors import InfeasibleReferenceError, IntegrationError, ParameterError, ParameterTypeError
from .._guards import check_finite_at, guard_rhs
from .._validation import as_time_span, as_times, as_vector, check_instance, check_positive
from ..ode import IntegrationOptions
from ..plants.paper import PAPER_KINK_TIMES, paper_ball_initial_state, paper_rail_acceleration
from ..plants.rolling_ball import RollingBall, RollingBallSystem
from ..plants.rolling_disk import RollingDiskSystem
from ..plants.rails import CircleRail
from ..simulate import SimulationOptions, simulation_options
from ..system import ConstrainedSystem
from .base import Reference, ReferenceSample

__all__ = [
    "DiskRollReference",
    "IntegratedReference",
    "StraightRollReference",
    "paper_ball_reference",
    "dae_residuals",
]

_LEAD_LIMIT = 0.45 * np.pi   # largest lead angle of the masses (rad): below the horizontal
_FD_STEP = 1e-5              # central-difference step (s) for input rates


def dae_residuals(system: ConstrainedSystem, sample: ReferenceSample) -> dict[str, float]:
    """Largest residuals of a reference sample in the DAE (1)-(4).

    Parameters
    ----------
    system : ConstrainedSystem
    sample : ReferenceSample
        K samples.

    Returns
    -------
    dict
        ``dynamics`` (max ``|M xdd + D^T lam - Q|``), ``velocity`` (max ``|D xd|``),
        ``acceleration`` (max ``|D xdd + Ddot xd|``) and ``position`` (max ``|C(x)|``).
    """
    dyn = vel = acc = pos = 0.0
    for k in range(len(sample)):
        x, xd, xdd, u = sample.x[k], sample.xd[k], sample.xdd[k], sample.u[k]
        dyn = max(dyn, float(np.max(np.abs(system.dynamics_residual(x, xd, xdd, sample.lam[k], u)))))
        D = system.constraint_jacobian(x)
        if D.shape[-2]:
            vel = max(vel, float(np.max(np.abs(D @ xd))))
            acc = max(acc, float(np.max(np.abs(D @ xdd + system.constraint_bias(x, xd)))))
        C = system.holonomic(x)
        if C.size:
            pos = max(pos, float(np.max(np.abs(C))))
    return {"dynamics": dyn, "velocity": vel, "acceleration": acc, "position": pos}


def _sample_from_states(system: ConstrainedSystem, t: np.ndarray, x: np.ndarray, xd: np.ndarray, u: np.ndarray,
                        ud: np.ndarray) -> ReferenceSample:
    """Complete ``(x, xd, u)`` samples with ``xdd`` and ``lam`` from the index-1 equations."""
    K, n = x.shape
    xdd = np.zeros((K, n))
    lam = np.zeros((K, system.n_constraints))
    for k in range(K):
        xdd[k], lam[k] = system.accelerations(x[k], xd[k], u[k])
    return ReferenceSample(t, x, xd, xdd, u, ud, lam)


# ------------------------------------------------------------------------------------------------
# Rolling disk: dynamic inversion
# ------------------------------------------------------------------------------------------------

def _bump(tau):
    """``sin(pi tau)^4`` on [0, 1] (C^3 at both ends) and its first two derivatives in tau."""
    a = np.pi * tau
    s, c = np.sin(a), np.cos(a)
    f = s ** 4
    df = 4.0 * np.pi * s ** 3 * c
    ddf = 4.0 * np.pi ** 2 * (3.0 * s ** 2 * c ** 2 - s ** 4)
    return f, df, ddf


class DiskRollReference(Reference):
    r"""The rolling disk from rest to a cruise speed (and to rest at a position) by dynamic inversion.

    Every mass hangs at the spatial angle ``psi(t) = -pi/2 + beta(t)``
    (measured from ``e1`` towards ``e3`` about the GC: ``-pi/2`` is straight
    below it), with the lead angle

    * ``beta = A sin^4(pi t / T)`` on ``[0, T]`` (``T = ramp_time_s``): the
      masses swing ahead and back, the disk accelerates to the cruise speed;
    * ``beta = 0`` while cruising: the masses stay below the GC, turning on
      their rails at ``theta_dot = -s phi_dot`` while the disk rolls at
      constant speed;
    * with ``stop_position_m``: ``beta = -A sin^4(pi (t - t_2) / T)`` on
      ``[t_2, t_2 + T]`` brings the disk to rest exactly (the mirror image of
      the start), at ``contact_x = x_0 + stop_position_m`` with
      ``t_2 = stop_position_m / cruise_speed_mps``.

    The amplitude ``A`` is solved so that the contact point's speed at ``T``
    equals ``cruise_speed_mps``; ``phi_dot`` and ``phi`` are Gauss-Legendre
    quadratures of the inverted disk equation (module docstring), and
    ``u``, ``xdd``, ``lam`` are recomputed at each requested time, so every
    sample satisfies the DAE to rounding.

    Parameters
    ----------
    system : RollingDiskSystem
        Its masses must ride on :class:`~ballctl.plants.rails.CircleRail` rails
        centred at the GC, and the disk's own CM must be at the GC
        (``cm_offset_m = 0``).
    cruise_speed_mps : float
        Cruise speed of the contact point along ``e1`` in m/s (non-zero; its
        sign is the direction).
    ramp_time_s : float
        T in s.
    stop_position_m : float, optional
        Distance in m (same sign as the speed) after which the disk is at
        rest; must be at least ``cruise_speed_mps * ramp_time_s``.
    phi0 : float
        Disk angle at t = 0 in rad.
    quadrature_nodes : int
        Gauss-Legendre nodes per phase for ``phi_dot`` and ``phi`` (the
        integrand is analytic: 64 nodes reach rounding for ramps of a few
        seconds; the tests compare with DOP853 at 1e-12).

    Raises
    ------
    InfeasibleReferenceError
        When the cruise speed cannot be reached with a lead angle below
        0.45 pi, or the stop position is too short.

    Examples
    --------
    >>> from ballctl.plants.rolling_disk import RollingDisk
    >>> from ballctl.plants.paper import paper_disk_parameters
    >>> sys_ = RollingDisk(paper_disk_parameters()).to_constrained_system()
    >>> ref = DiskRollReference(sys_, cruise_speed_mps=0.5, ramp_time_s=3.0)
    >>> round(float(ref(10.0).xd[0]), 9)   # contact-point speed while cruising
    0.5
    """

    def __init__(self, system: RollingDiskSystem, *, cruise_speed_mps: float, ramp_time_s: float = 2.0,
                 stop_position_m: float | None = None, phi0: float = 0.0, quadrature_nodes: int = 64) -> None:
        if not isinstance(system, RollingDiskSystem):
            raise ParameterTypeError(f"system must be a RollingDiskSystem, got {type(system).__name__}")
        disk = system.disk
        p = disk.params
        problems = []
        if np.any(np.asarray(p.cm_offset_m) != 0.0):
            problems.append(f"the disk's own CM must be at the GC (cm_offset_m = 0), got {p.cm_offset_m.tolist()}")
        if disk.n_masses == 0:
            problems.append("the disk needs at least one point mass")
        signs, offsets = [], []
        for i, pm in enumerate(p.point_masses):
            rail = pm.rail
            if not isinstance(rail, CircleRail) or np.any(rail.center_m != 0.0):
                problems.append(f"point_masses[{i}] must ride on a CircleRail centred at the GC")
                continue
            z, dz, _ = rail.evaluate(0.0)
            offsets.append(float(np.arctan2(z[2], z[0])))
            signs.append(1.0 if z[0] * dz[2] - z[2] * dz[0] > 0 else -1.0)
        if problems:
            raise ParameterError("DiskRollReference: " + "; ".join(problems))
        v = float(cruise_speed_mps)
        if not np.isfinite(v) or v == 0.0:
            raise ParameterError(f"cruise_speed_mps must be finite and non-zero (m/s), got {cruise_speed_mps!r}")
        self.system = system
        self.cruise_speed_mps = v
        self.ramp_time_s = check_positive(ramp_time_s, "ramp_time_s", "s")
        self.phi0 = float(phi0)
        self._sign = np.array(signs)
        self._offset = np.array(offsets)
        self._r = p.radius_m
        self._gauss = np.polynomial.legendre.leggauss(int(quadrature_nodes))
        self.amplitude_rad = self._solve_amplitude()
        T = self.ramp_time_s
        if stop_position_m is None:
            self.stop_position_m = None
            self._phases = [(0.0, T, 1.0)]
            self.t_range = (0.0, np.inf)
        else:
            d = float(stop_position_m)
            if not np.isfinite(d) or d * v <= 0 or d / v < T:
                raise InfeasibleReferenceError(
                    f"stop_position_m must have the sign of the speed and be at least cruise_speed_mps * "
                    f"ramp_time_s = {v * T:.6g} m, got {stop_position_m!r}")
            self.stop_position_m = d
            t2 = d / v
            self._phases = [(0.0, T, 1.0), (t2, t2 + T, -1.0)]
            self.t_range = (0.0, np.inf)

    # -------------------------------------------------------------- mass motion
    def _lead(self, t):
        """``(beta, beta_dot, beta_ddot)`` at times ``t`` (K,)."""
        A, T = self.amplitude_rad, self.ramp_time_s
        beta = np.zeros_like(t)
        bd = np.zeros_like(t)
        bdd = np.zeros_like(t)
        for a, b, sgn in self._phases:
            inside = (t >= a) & (t <= b)
            f, df, ddf = _bump((t[inside] - a) / T)
            beta[inside] = sgn * A * f
            bd[inside] = sgn * A * df / T
            bdd[inside] = sgn * A * ddf / T ** 2
        return beta, bd, bdd

    def _states(self, t, phi, phi_dot, lead):
        """Plant states (theta, theta_dot, phi, phi_dot) and ``s psi_ddot`` for stacks of times."""
        beta, bd, bdd = lead
        psi = -0.5 * np.pi + beta
        s = self._sign
        theta = s * (psi[:, None] - phi[:, None] - self._offset)
        theta_dot = s * (bd[:, None] - phi_dot[:, None])
        x_ode = np.concatenate([theta, theta_dot, phi[:, None], phi_dot[:, None]], axis=1)
        return x_ode, s * bdd[:, None]

    def _phi_ddot(self, t, phi, phi_dot, lead):
        disk = self.system.disk
        x_ode, s_psidd = self._states(t, phi, phi_dot, lead)
        s = np.broadcast_to(self._sign, s_psidd.shape)
        k0 = disk.angular_acceleration(0.0, x_ode, np.zeros_like(s_psidd))
        k1 = disk.angular_acceleration(0.0, x_ode, s)
        kp = disk.angular_acceleration(0.0, x_ode, s_psidd)
        return kp / (1.0 + k1 - k0), x_ode, s_psidd

    def _F(self, t):
        """``phi_ddot`` at times ``t`` (K,): it does not depend on ``phi``, ``phi_dot`` (module docstring)."""
        zero = np.zeros_like(t)
        return self._phi_ddot(t, zero, zero, self._lead(t))[0]

    def _phase_integrals(self, t, a, b):
        """``(int_a^min(t,b) F, int_a^min(t,b) (t - s) F(s) ds)`` for each t (K,) by Gauss-Legendre."""
        nodes, weights = self._gauss
        end = np.clip(t, a, b)
        half = 0.5 * (end - a)
        s = a + half[:, None] * (nodes + 1.0)                   # (K, G)
        F = self._F(s.ravel()).reshape(s.shape)
        v = half * np.sum(weights * F, axis=1)
        p = half * np.sum(weights * (t[:, None] - s) * F, axis=1)
        return v, p

    def _phi(self, t):
        phi = np.full_like(t, self.phi0)
        phid = np.zeros_like(t)
        for a, b, _ in self._phases:
            active = t > a
            if np.any(active):
                v, p = self._phase_integrals(t[active], a, b)
                phid[active] += v
                phi[active] += p
        return phi, phid

    def _solve_amplitude(self) -> float:
        T, v, r = self.ramp_time_s, self.cruise_speed_mps, self._r
        self._phases = [(0.0, T, 1.0)]
        tT = np.array([T])

        def speed_error(A):
            self.amplitude_rad = A
            return float(-r * self._phase_integrals(tT, 0.0, T)[0][0] - v)

        sgn = np.sign(v)
        e_max = speed_error(sgn * _LEAD_LIMIT)
        if sgn * (e_max + v) < abs(v):
            raise InfeasibleReferenceError(
                f"cruise speed {v} m/s is out of reach in ramp_time_s = {T} s: a lead angle of "
                f"{_LEAD_LIMIT:.3f} rad gives {e_max + v:.4g} m/s; lengthen the ramp")
        return float(brentq(speed_error, 0.0, sgn * _LEAD_LIMIT, xtol=1e-15, rtol=4 * np.finfo(float).eps))

    def _inputs(self, t):
        lead = self._lead(t)
        phi, phid = self._phi(t)
        phidd, x_ode, s_psidd = self._phi_ddot(t, phi, phid, lead)
        thdd = s_psidd - self._sign * phidd[:, None]
        disk = self.system.disk
        u = thdd if disk.inputs == "acceleration" else disk.rail_forces(0.0, x_ode, thdd)
        return x_ode, u

    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        x_ode, u = self._inputs(t)
        x, xd = self.system.from_ode_state(x_ode)
        h = _FD_STEP
        t_minus = np.maximum(t - h, 0.0)
        ud = (self._inputs(t + h)[1] - self._inputs(t_minus)[1]) / (t + h - t_minus)[:, None]
        return _sample_from_states(self.system, t, x, xd, u, ud)

    @property
    def end_time_s(self) -> float:
        """Time in s after which the motion is steady (cruise, or rest after a stop)."""
        return float(self._phases[-1][1])

    def summary(self) -> dict[str, float]:
        """Cruise speed (m/s), lead-angle amplitude (rad), ramp time (s), stop position (m) or NaN."""
        return {"cruise_speed_mps": self.cruise_speed_mps, "lead_amplitude_rad": self.amplitude_rad,
                "ramp_time_s": self.ramp_time_s,
                "stop_position_m": float("nan") if self.stop_position_m is None else self.stop_position_m,
                "end_time_s": self.end_time_s}


# ------------------------------------------------------------------------------------------------
# Any system under nominal inputs: integrated once, dense output
# ------------------------------------------------------------------------------------------------

class IntegratedReference(Reference):
    r"""A reference from integrating a system under nominal inputs, evaluated DAE-consistently.

    The index-1 equations are integrated once with ``solve_ivp`` (dense
    output, Baumgarte stabilization against drift), restarting at every
    breakpoint of the inputs. At a requested time ``t`` the dense output gives
    ``(x, xd)``; ``x`` is projected onto ``C(x) = 0``, ``xd`` onto
    ``D(x) xd = 0`` (Euclidean metric; both corrections are at the level of
    the integration error) and ``xdd``, ``lam`` solve
    ``M xdd + D^T lam = Q``, ``D xdd = -Ddot xd`` exactly. So each sample is a
    point of a solution of the DAE to rounding, and consecutive samples are
    within the integration tolerance of one and the same solution. ``ud`` is
    the central difference of the nominal input (one-sided at breakpoints).

    Parameters
    ----------
    system : ConstrainedSystem
    x0, xd0 : array_like, shape (n,)
        Initial coordinates and velocities (should satisfy the constraints).
    nominal_input : callable
        ``u0(t) -> (nu,)``.
    t_span : (float, float)
        Interval in s.
    breakpoints : sequence of float
        Times (s) where ``nominal_input`` is not smooth.
    options : SimulationOptions or IntegrationOptions, optional
        ``method``, ``rtol``, ``atol``, ``max_step`` and, from a
        :class:`~ballctl.simulate.SimulationOptions`, the Baumgarte gains ``stabilization`` (1/s) used
        during the integration (default ``SimulationOptions()``: DOP853, 1e-10, 1e-12, gains (10, 10)).
        Projection, recharting and ``raise_on_failure=False`` are :func:`ballctl.simulate`'s alone.

    Examples
    --------
    See :func:`paper_ball_reference`.
    """

    def __init__(self, system: ConstrainedSystem, x0, xd0, nominal_input: Callable[[float], Sequence[float]],
                 t_span: tuple[float, float], *, breakpoints: Sequence[float] = (),
                 options: SimulationOptions | IntegrationOptions | None = None) -> None:
        check_instance(system, "system", ConstrainedSystem)
        n, nu = system.n_coordinates, system.n_inputs
        x0 = as_vector(x0, "x0", n)
        xd0 = as_vector(xd0, "xd0", n)
        t0, t1 = as_time_span(t_span)
        options = simulation_options(options).resolved(1e-10, 1e-12)
        if (options.projection_interval is not None or options.project_initial or options.rechart
                or not options.raise_on_failure):
            raise ParameterError("IntegratedReference integrates without projection or recharting and always raises "
                                 "on failure: leave projection_interval, project_initial, rechart and "
                                 "raise_on_failure at their defaults")
        method, stabilization = options.method, options.stabilization
        breakpoints = as_times(breakpoints, "breakpoints") if np.size(breakpoints) else ()
        if not callable(nominal_input):
            raise ParameterTypeError("nominal_input must be a callable u0(t) -> (n_inputs,)")
        self.system = system
        self.nominal_input = nominal_input
        self.t_range = (t0, t1)
        self.breakpoints = tuple(sorted(float(b) for b in breakpoints if t0 < float(b) < t1))

        def u_of(t):
            if not nu:
                return np.zeros(0)
            u = np.asarray(nominal_input(t))
            if u.dtype.kind in "fc" and not np.all(np.isfinite(u)):
                check_finite_at(u, time=t, quantity="nominal_input", context="IntegratedReference")
            return as_vector(u, "nominal_input(t)", nu)

        self._u = u_of

        def rhs(t, y):
            u = u_of(t)
            check_finite_at(u, time=t, quantity="nominal_input", context="IntegratedReference")
            xdd, _ = system.accelerations(y[:n], y[n:], u, stabilization=stabilization)
            return np.concatenate([y[n:], xdd])

        rhs = guard_rhs(rhs, context="IntegratedReference")

        cuts = [t0, *self.breakpoints, t1]
        self._pieces = []
        y = np.concatenate([x0, xd0])
        nfev = 0
        for a, b in zip(cuts[:-1], cuts[1:]):
            sol = solve_ivp(rhs, (a, b), y, dense_output=True, **options.solver_arguments())
            if not sol.success:
                raise IntegrationError(f"IntegratedReference: {method} failed on [{a}, {b}] s at "
                                       f"t = {sol.t[-1]:.6g} s: {sol.message}", time=float(sol.t[-1]))
            nfev += sol.nfev
            self._pieces.append((a, b, sol.sol))
            y = sol.y[:, -1]
        self.nfev = int(nfev)

    def _state(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        n = self.system.n_coordinates
        for a, b, dense in self._pieces:
            if t <= b or b == self.t_range[1]:
                y = dense(min(max(t, a), b))
                break
        x, xd = y[:n], y[n:]
        if self.system.n_holonomic:
            x = self.system.project_positions(x)
        if self.system.n_constraints:
            xd = self.system.project_velocities(x, xd)
        return x, xd

    def _input_rate(self, t: float) -> np.ndarray:
        lo, hi = self.t_range
        h = _FD_STEP
        a, b = max(t - h, lo), min(t + h, hi)
        for bp in self.breakpoints:      # never difference across a kink
            if a < bp < t:
                a = bp
            if t < bp < b:
                b = bp
        if t in self.breakpoints:
            b = min(t + h, hi)
            a = t
        return (self._u(b) - self._u(a)) / (b - a)

    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        K, n, nu = t.shape[0], self.system.n_coordinates, self.system.n_inputs
        x = np.zeros((K, n))
        xd = np.zeros((K, n))
        u = np.zeros((K, nu))
        ud = np.zeros((K, nu))
        for k, tk in enumerate(t):
            x[k], xd[k] = self._state(float(tk))
            u[k] = self._u(float(tk))
            ud[k] = self._input_rate(float(tk))
        return _sample_from_states(self.system, t, x, xd, u, ud)

    def summary(self) -> dict[str, float]:
        """Interval (s) and right-hand-side evaluations of the integration."""
        return {"t_start_s": self.t_range[0], "t_end_s": self.t_range[1], "nfev": float(self.nfev)}


def paper_ball_reference(system: RollingBallSystem, *, t_final: float = 20.0,
                         options: IntegrationOptions | None = None) -> IntegratedReference:
    """The ball of section 7 under the paper's rail accelerations (7.11), as a reference.

    Initial state (7.12) (at rest at the origin, ``q = (1, 0, 0, 0)``), every
    rail accelerated by :func:`~ballctl.plants.paper.paper_rail_acceleration`
    (kinks at 0.1 s and 0.2 s, rail rates 0.15 rad/s afterwards).

    Parameters
    ----------
    system : RollingBallSystem
        From ``RollingBall(paper_ball_parameters()).to_constrained_system()``
        (acceleration or force inputs; with force inputs the nominal forces
        are those producing the paper's accelerations along the run).
    t_final : float
        End time in s.
    options : IntegrationOptions, optional
        Integrator and tolerances (default DOP853, ``rtol = 1e-10``, ``atol = 1e-12``).

    Returns
    -------
    IntegratedReference
    """
    if not isinstance(system, RollingBallSystem):
        raise ParameterTypeError(f"system must be a RollingBallSystem, got {type(system).__name__}")
    if system.n_inputs != 3:
        raise ParameterError(f"the paper's ball has 3 rails, the system has {system.n_inputs} inputs")
    t_final = check_positive(t_final, "t_final", "s")
    x_ode0 = paper_ball_initial_state()
    x0, xd0 = system.from_ode_state(x_ode0)
    if system.ball.inputs == "acceleration":
        def nominal(t):
            return paper_rail_acceleration(t) * np.ones(3)
        return IntegratedReference(system, x0, xd0, nominal, (0.0, t_final), breakpoints=PAPER_KINK_TIMES,
                                   options=options)
    # force inputs: integrate the acceleration-input twin, convert along its dense output
    twin = RollingBall(system.ball.params).to_constrained_system(chart_rotation=system.chart_rotation)
    acc_ref = IntegratedReference(twin, x0, xd0, lambda t: paper_rail_acceleration(t) * np.ones(3),
                                  (0.0, t_final), breakpoints=PAPER_KINK_TIMES, options=options)

    def forces(t):
        x, xd = acc_ref._state(t)
        xo = twin.to_ode_state(x, xd)
        return system.ball.rail_forces(t, xo, paper_rail_acceleration(t) * np.ones(3))

    return IntegratedReference(system, x0, xd0, forces, (0.0, t_final), breakpoints=PAPER_KINK_TIMES,
                               options=options)


# ------------------------------------------------------------------------------------------------
# Ball: uniform straight roll with parked masses
# ------------------------------------------------------------------------------------------------

class StraightRollReference(Reference):
    r"""The ball rolling uniformly along a straight line with every mass parked on its rail.

    With the masses at rest (``theta = theta_park``, ``u = 0`` acceleration
    inputs), the ball is a rigid body. When its total CM is at the GC and the
    body axis ``a`` (unit) is a principal axis of its total inertia about the
    GC, the uniform roll ``omega = roll_rate * e1`` (spatial) is an exact
    solution: the angular momentum about the contact point is conserved and
    stays along ``e1``. The contact point moves along ``-e2`` at
    ``roll_rate * r``. The ball starts with ``Lambda0 = C``, the system's chart
    rotation, which must map the rolling axis to ``e1`` (``C @ a = e1``;
    :func:`ballctl.studies.rail_layouts.straight_roll_setup` builds it); then
    ``Lambda(t) = Rx(roll_rate t) C``: ``yaw = pitch = 0`` and
    ``roll = roll_rate t``, far from the chart singularity.

    Samples are analytic; ``xdd`` and ``lam`` come from the index-1 equations
    (``xdd = 0`` to rounding when the conditions above hold, which the tests check).

    Parameters
    ----------
    system : RollingBallSystem
        With acceleration inputs.
    park_angles : array_like, shape (n,)
        ``theta_park`` of every rail.
    roll_rate : float
        Spin rate about ``e1`` in rad/s.
    """

    def __init__(self, system: RollingBallSystem, park_angles, *, roll_rate: float) -> None:
        if not isinstance(system, RollingBallSystem):
            raise ParameterTypeError(f"system must be a RollingBallSystem, got {type(system).__name__}")
        if system.ball.inputs != "acceleration":
            raise ParameterError("StraightRollReference needs acceleration inputs (u = theta_ddot = 0 while parked)")
        n = system.ball.n_masses
        self.system = system
        self.park_angles = as_vector(park_angles, "park_angles", n) if n else np.zeros(0)
        self.roll_rate = float(roll_rate)
        if not np.isfinite(self.roll_rate):
            raise ParameterError(f"roll_rate must be finite (rad/s), got {roll_rate!r}")
        self.t_range = (-np.inf, np.inf)
        self.period = 2 * np.pi / abs(self.roll_rate) if self.roll_rate else None

    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        K, n = t.shape[0], self.system.n_coordinates
        r = self.system.ball.params.radius_m
        w = self.roll_rate
        x = np.zeros((K, n))
        xd = np.zeros((K, n))
        x[:, 1] = -r * w * t
        x[:, 4] = w * t
        x[:, 5:] = self.park_angles
        xd[:, 1] = -r * w
        xd[:, 4] = w
        nu = self.system.n_inputs
        return _sample_from_states(self.system, t, x, xd, np.zeros((K, nu)), np.zeros((K, nu)))
