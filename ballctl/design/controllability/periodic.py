"""Periodic systems: the monodromy matrix, Floquet multipliers and a PBH test.

See :mod:`ballctl.design.controllability`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...linear.ltv import LTVSystem
from .coefficients import Coefficients, LTVCallables, format_direction, integrate_matrix_ode, named_vector
from .gramians import RANK_RTOL, GramianReport, check_rtol, gramian

__all__ = ["MonodromyReport", "PeriodicControllabilityReport", "monodromy", "periodic_controllability"]

# ---------------------------------------------------------------- periodic systems
@dataclass(frozen=True)
class MonodromyReport:
    r"""Monodromy matrix :math:`\Phi(t_0 + T, t_0)` and Floquet multipliers.

    Attributes
    ----------
    matrix : ndarray, shape (N, N)
        The monodromy matrix.
    multipliers : ndarray of complex, shape (N,)
        Its eigenvalues (Floquet multipliers), by descending modulus.
    exponents : ndarray of complex, shape (N,)
        Floquet exponents :math:`\log(\mu) / T` in 1/s (principal logarithm).
    left_eigenvectors : ndarray of complex, shape (N, N)
        Column ``i`` is a unit left eigenvector (``v^H M = mu_i v^H``).
    t0 : float
        Start of the period in s.
    period_s : float
        T in s.
    state_names : tuple of str
    """

    matrix: np.ndarray
    multipliers: np.ndarray
    exponents: np.ndarray
    left_eigenvectors: np.ndarray
    t0: float
    period_s: float
    state_names: tuple[str, ...]

    @property
    def spectral_radius(self) -> float:
        return float(np.max(np.abs(self.multipliers)))

    @property
    def stable(self) -> bool:
        """True when every multiplier lies strictly inside the unit circle."""
        return self.spectral_radius < 1.0

    def to_table(self) -> str:
        """Plain-text table: Floquet multipliers with their moduli and left eigenvectors."""
        lines = [f"Monodromy over [{self.t0:.6g}, {self.t0 + self.period_s:.6g}] s (period {self.period_s:.6g} s), "
                 f"spectral radius {self.spectral_radius:.6g}",
                 f"{'#':>3}  {'multiplier':>24}  {'|mu|':>10}  {'exponent [1/s]':>24}"]
        for i, (mu, ex) in enumerate(zip(self.multipliers, self.exponents)):
            mu_s = f"{mu.real:+.6g} {mu.imag:+.6g}j"
            ex_s = f"{ex.real:+.6g} {ex.imag:+.6g}j"
            lines.append(f"{i:>3}  {mu_s:>24}  {abs(mu):>10.6g}  {ex_s:>24}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def _periodic_setup(system, period):
    if isinstance(system, LTVSystem):
        coef = Coefficients(system, period, require_period=True)
        return coef, coef.t0, coef.period
    coef = Coefficients(system, period, require_period=True)
    t0 = coef.t0
    coef.check_times(np.array([t0, t0 + coef.period]), "period")
    return coef, t0, coef.period


def monodromy(system: LTVSystem | LTVCallables, *, period: float | None = None,
              rtol: float = 1e-10, atol: float = 1e-12) -> MonodromyReport:
    r"""Monodromy matrix :math:`M = \Phi(t_0 + T, t_0)` and the Floquet multipliers.

    Parameters
    ----------
    system : LTVSystem or LTVCallables
        For an ``LTVSystem``, ``t0 = t[0]``; with ``period=None`` the last
        sample must be the periodic copy of the first (``T = t[-1] - t[0]``,
        module notes). For callables ``period`` is required and ``t0`` is the
        start of ``t_range`` (0 when unbounded).
    period : float, optional
        T in s.
    rtol, atol : float
        Integrator tolerances.

    Returns
    -------
    MonodromyReport

    Examples
    --------
    >>> import numpy as np
    >>> sys_ = LTVCallables(A_of_t=lambda t: np.array([[-1.0]]), B_of_t=lambda t: np.ones((1, 1)))
    >>> float(np.round(monodromy(sys_, period=1.0).multipliers[0].real, 8))
    0.36787944
    """
    coef, t0, T = _periodic_setup(system, period)
    N = coef.N

    def rhs(t, y):
        A, _ = coef.AB(t)
        return (A @ y.reshape(N, N)).ravel()

    M = integrate_matrix_ode(rhs, (t0, t0 + T), np.eye(N).ravel(), rtol, atol, "monodromy").reshape(N, N)
    mu, VL = _left_eig(M)
    order = np.argsort(-np.abs(mu), kind="stable")
    mu, VL = mu[order], VL[:, order]
    with np.errstate(divide="ignore"):
        exponents = np.log(mu.astype(complex)) / T
    for arr in (M, mu, exponents, VL):
        arr.setflags(write=False)
    return MonodromyReport(M, mu, exponents, VL, float(t0), float(T), tuple(coef.state_names))


def _left_eig(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, VL = np.linalg.eig(M.T)               # M^T v = mu v  <=>  v^T M = mu v^T
    VL = np.conj(VL)                          # so that v^H M = mu v^H with the conjugate
    VL = VL / np.linalg.norm(VL, axis=0, keepdims=True)
    return mu.astype(complex), VL.astype(complex)


@dataclass(frozen=True)
class PeriodicControllabilityReport:
    r"""Controllability of a periodic system over one period and its PBH-like test.

    Attributes
    ----------
    gramian : GramianReport
        :math:`W_c(t_0, t_0 + T)`.
    monodromy : MonodromyReport
    pbh_ranks : ndarray of int, shape (N,)
        :math:`\operatorname{rank}[M - \mu_i I,\; W_c]` for each multiplier.
    modal_controllability : ndarray, shape (N,)
        :math:`v_i^H W_c v_i / \lambda_{max}(W_c)` for the unit left eigenvector
        :math:`v_i` of multiplier :math:`\mu_i`: 0 for a mode no input reaches.
    rank_rtol : float
    """

    gramian: GramianReport
    monodromy: MonodromyReport
    pbh_ranks: np.ndarray
    modal_controllability: np.ndarray
    rank_rtol: float

    @property
    def controllable(self) -> bool:
        """True when the one-period Gramian has full rank."""
        return self.gramian.controllable

    @property
    def pbh_controllable(self) -> bool:
        """True when every multiplier passes the PBH test (reachable over several periods)."""
        return bool(np.all(self.pbh_ranks == self.gramian.n_states))

    @property
    def stabilizable(self) -> bool:
        """True when every multiplier failing the PBH test has modulus < 1."""
        bad = self.pbh_ranks < self.gramian.n_states
        return bool(np.all(np.abs(self.monodromy.multipliers[bad]) < 1.0))

    def to_table(self) -> str:
        """Plain-text report: the one-period Gramian, the monodromy and the PBH test."""
        lines = [self.gramian.to_table(), "", self.monodromy.to_table(), "",
                 f"PBH test rank[M - mu I, W_c] (tolerance {self.rank_rtol:g}): "
                 f"{'controllable' if self.pbh_controllable else 'NOT controllable'}, "
                 f"{'stabilizable' if self.stabilizable else 'NOT stabilizable'}",
                 f"{'#':>3}  {'|mu|':>10}  {'PBH rank':>8}  {'v^H W v / max':>14}  left eigenvector"]
        names = self.gramian.state_names
        for i, mu in enumerate(self.monodromy.multipliers):
            v = self.monodromy.left_eigenvectors[:, i]
            v_real = np.abs(v) * np.sign(np.real(v) + (np.real(v) == 0))
            lines.append(f"{i:>3}  {abs(mu):>10.6g}  {int(self.pbh_ranks[i]):>8d}  "
                         f"{self.modal_controllability[i]:>14.4e}  {format_direction(named_vector(v_real, names))}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def periodic_controllability(system: LTVSystem | LTVCallables, period: float | None = None, *,
                             rank_rtol: float = RANK_RTOL, rtol: float = 1e-10,
                             atol: float = 1e-14) -> PeriodicControllabilityReport:
    r"""Gramian over one period, monodromy and the PBH-like test of a periodic system.

    The states reachable from the origin in one period span the range of
    :math:`W = W_c(t_0, t_0 + T)`; after :math:`p` periods they span
    :math:`[W, M W, \dots, M^{p-1} W]` with the monodromy :math:`M`. That
    subspace is the whole space iff (PBH test of the pair (M, W), Bittanti &
    Colaneri 2009, ch. 4)

    .. math::

        \operatorname{rank}\,[M - \mu I,\; W] = N \quad \text{for every Floquet multiplier } \mu ,

    i.e. no left eigenvector :math:`v` of :math:`M` has :math:`v^H W v = 0`.
    A mode failing it with :math:`|\mu| \ge 1` makes the system not stabilizable.

    Parameters
    ----------
    system : LTVSystem or LTVCallables
        Periodic convention as in :func:`monodromy`.
    period : float, optional
        T in s (required for callables).
    rank_rtol : float
        Relative rank tolerance for the Gramian and the PBH matrices.
    rtol, atol : float
        Integrator tolerances.

    Returns
    -------
    PeriodicControllabilityReport

    Examples
    --------
    >>> import numpy as np
    >>> sys_ = LTVCallables(A_of_t=lambda t: np.zeros((2, 2)),
    ...                     B_of_t=lambda t: np.array([[np.cos(t)], [np.sin(t)]]))
    >>> rep = periodic_controllability(sys_, 2 * np.pi)
    >>> rep.controllable, rep.pbh_controllable
    (True, True)
    """
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    coef, t0, T = _periodic_setup(system, period)
    mono = monodromy(system, period=T, rtol=rtol, atol=max(atol, 1e-12))
    gram = gramian(system, t0, t0 + T, period=T if isinstance(system, LTVSystem) else None,
                   rank_rtol=rank_rtol, rtol=rtol, atol=atol)
    N = coef.N
    W = gram.W
    lam_max = max(float(gram.eigenvalues[-1]), 0.0)
    ranks = np.empty(N, dtype=int)
    modal = np.empty(N)
    # W is rescaled to the norm of M so that both blocks weigh alike in the rank decision
    scale = max(float(np.linalg.norm(mono.matrix, 2)), 1e-300)
    W_scaled = W * (scale / lam_max) if lam_max > 0 else W
    for i, mu in enumerate(mono.multipliers):
        P = np.concatenate([mono.matrix - mu * np.eye(N), W_scaled.astype(complex)], axis=1)
        s = np.linalg.svd(P, compute_uv=False)
        ranks[i] = int(np.sum(s > rank_rtol * scale))
        v = mono.left_eigenvectors[:, i]
        modal[i] = float(np.real(np.conj(v) @ W @ v)) / lam_max if lam_max > 0 else 0.0
    for arr in (ranks, modal):
        arr.setflags(write=False)
    return PeriodicControllabilityReport(gram, mono, ranks, modal, float(rank_rtol))
