"""Transition matrices and controllability Gramians, continuous and discrete, and the one rank test.

See :mod:`ballctl.design.controllability`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..._errors import ParameterError, ParameterTypeError
from ..._validation import check_finite_scalar, names_tuple
from ...linear.discretize import DiscreteLTVSystem
from ...linear.ltv import LTVSystem
from .coefficients import (Coefficients, LTVCallables, check_interval, format_direction, integrate_matrix_ode,
                           named_vector)

__all__ = ["RANK_RTOL", "gramian_rank", "GramianReport", "transition_matrix", "gramian", "discrete_gramian"]

#: Values accepted by ``gramian(method=...)``: ``"integrate"`` integrates the
#: Lyapunov ODE forward; ``"transition"`` integrates the definition backward
#: in ``tau`` together with ``Phi(t1, tau)`` (an independent cross-check).
GRAMIAN_METHODS = ("integrate", "transition")

#: The one default tolerance of every controllability and observability verdict (:func:`gramian_rank`): a
#: singular value of the Jacobi-scaled Gramian counts when it exceeds ``RANK_RTOL`` times the largest. After the
#: scaling the Gramian is a correlation matrix (unit diagonal), so its singular values no longer depend on the
#: units of the states, and one tolerance serves every system. Measured on this package's studies (scaled
#: singular values over the largest): a direction the inputs or sensors reach has 1e-6 and above (the weakest
#: steerable direction of a rail layout: 8e-7 .. 5e-6); a direction they cannot reach sits at the rounding of the
#: recursion (1e-16) or, for a first-order invariant of the continuous system (the rolling ball's two along a
#: straight roll), at the error of freezing A and B over a step, which falls like dt^4 (2e-10 with 32 steps a
#: revolution, 1e-8 with 12), or at the integration error of a continuous Gramian (DOP853 at ``rtol = 1e-10``).
#: 1e-8, two orders below the weakest physical direction and above the discretization leak of any
#: reasonably sampled model, separates the two.
RANK_RTOL = 1e-8
#: a state whose Gramian diagonal entry is at most this times the largest one has no energy at all: it is a
#: missing direction and left out of the scaling (without this guard the scaling would blow rounding up to 1)
ZERO_ENERGY_RTOL = 1e-24


def jacobi_scaled(W) -> tuple[np.ndarray, np.ndarray]:
    r"""The Jacobi-scaled Gramian :math:`D^{-1/2} W D^{-1/2}`, :math:`D = \mathrm{diag}(W)`, and the states it keeps.

    A state with :math:`D_{ii} \le` :data:`ZERO_ENERGY_RTOL` :math:`\max D` (no energy at all) gets a zero row
    and column instead of a division by (almost) zero.

    Parameters
    ----------
    W : array_like, shape (N, N)
        A Gramian (symmetrised here).

    Returns
    -------
    scaled : ndarray, shape (N, N)
        Unit diagonal on the kept states, zero rows and columns on the others.
    seen : ndarray of bool, shape (N,)
        The states with energy.
    """
    W = np.asarray(W, dtype=float)
    W = 0.5 * (W + W.T)
    d = np.diag(W).copy()
    top = max(float(d.max(initial=0.0)), 0.0)
    seen = d > ZERO_ENERGY_RTOL * top if top > 0 else np.zeros(d.shape, dtype=bool)
    scale = np.where(seen, 1.0 / np.sqrt(np.where(seen, d, 1.0)), 0.0)
    return W * scale[:, None] * scale[None, :], seen


def gramian_rank(W, *, rank_rtol: float = RANK_RTOL) -> int:
    r"""The numerical rank of a controllability or observability Gramian, the same in every unit of the states.

    The one rank test of ballctl: every controllability and observability verdict (:func:`gramian`,
    :func:`discrete_gramian`, :func:`~ballctl.observability_gramian`, :func:`~ballctl.compare_partitions`,
    :func:`~ballctl.studies.compare_rail_layouts`) is this function of its Gramian. ``W`` is scaled symmetrically,
    :math:`\hat W = D^{-1/2} W D^{-1/2}` with :math:`D = \mathrm{diag}(W)` (:func:`jacobi_scaled`; a state with no
    energy at all is a missing direction), and the rank is the number of singular values of :math:`\hat W` above
    ``rank_rtol`` times the largest. A change of units :math:`X \to S X` (``S`` diagonal, positive) maps ``W`` to
    :math:`S W S` and leaves :math:`\hat W`, hence the rank, unchanged.

    Parameters
    ----------
    W : array_like, shape (N, N)
        Symmetric positive semidefinite Gramian.
    rank_rtol : float
        Relative tolerance on the singular values of the scaled Gramian, in (0, 1); default :data:`RANK_RTOL`.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[1e6, 1e3], [1e3, 1.0 + 1e-6]])    # metres next to micrometres: nearly dependent
    >>> gramian_rank(W), gramian_rank(np.diag([1e-3, 1e3]) @ W @ np.diag([1e-3, 1e3]))
    (2, 2)
    >>> gramian_rank(np.array([[1.0, 1.0], [1.0, 1.0]]))
    1
    """
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    scaled, seen = jacobi_scaled(W)
    if not seen.any():
        return 0
    s = np.linalg.svd(scaled[np.ix_(seen, seen)], compute_uv=False, hermitian=True)
    return int(np.sum(s > rank_rtol * s[0]))

# ---------------------------------------------------------------- transition matrix
def transition_matrix(system: LTVSystem | LTVCallables, t0: float, t1: float, *, period: float | None = None,
                      rtol: float = 1e-10, atol: float = 1e-12) -> np.ndarray:
    r"""State-transition matrix :math:`\Phi(t_1, t_0)` by integration.

    Solves :math:`\partial_t \Phi(t, t_0) = A(t)\,\Phi(t, t_0)`,
    :math:`\Phi(t_0, t_0) = I` with DOP853 (backward when ``t1 < t0``).

    Parameters
    ----------
    system : LTVSystem or LTVCallables
        The system; samples are interpolated by cubic splines (module notes).
    t0, t1 : float
        Initial and final times in s, inside the system's time range unless
        ``period`` is given.
    period : float, optional
        Period in s of a periodic ``LTVSystem`` (module notes: periodic convention).
    rtol, atol : float
        Integrator tolerances.

    Returns
    -------
    ndarray, shape (N, N)
        :math:`\Phi(t_1, t_0)`: ``X(t1) = Phi @ X(t0)`` for ``u = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> sys_ = LTVCallables(A_of_t=lambda t: np.array([[0.0, 1.0], [-1.0, 0.0]]),
    ...                     B_of_t=lambda t: np.zeros((2, 1)))
    >>> np.round(transition_matrix(sys_, 0.0, np.pi / 2), 8) + 0.0
    array([[ 0.,  1.],
           [-1.,  0.]])
    """
    coef = Coefficients(system, period)
    t0, t1 = check_interval(coef, t0, t1, allow_reverse=True)
    N = coef.N
    if t1 == t0:
        return np.eye(N)

    def rhs(t, y):
        A, _ = coef.AB(t)
        return (A @ y.reshape(N, N)).ravel()

    return integrate_matrix_ode(rhs, (t0, t1), np.eye(N).ravel(), rtol, atol, "transition matrix").reshape(N, N)


# ---------------------------------------------------------------- Gramian
@dataclass(frozen=True)
class GramianReport:
    r"""A controllability Gramian and what it says about the system.

    Attributes
    ----------
    W : ndarray, shape (N, N)
        The symmetric Gramian.
    eigenvalues : ndarray, shape (N,)
        Eigenvalues of ``W`` in ascending order.
    eigenvectors : ndarray, shape (N, N)
        Column ``i`` is the unit eigenvector of ``eigenvalues[i]``.
    condition_number : float
        ``eigenvalues[-1] / eigenvalues[0]``; ``inf`` when the smallest is <= 0.
    rank : int
        :func:`gramian_rank` of ``W``: the singular values of the Jacobi-scaled Gramian above
        ``rank_rtol`` times the largest (independent of the units of the states).
    rank_rtol : float
        The relative rank tolerance.
    directions : tuple
        ``directions[i]`` is eigenvector ``i`` as ``((state_name, weight), ...)``
        sorted by ``|weight|`` (ascending eigenvalue order: least controllable first).
    state_names : tuple of str
    t0, t1 : float
        Interval in s (for a discrete Gramian, ``t0 = 0`` and ``t1`` = number of steps).
    method : str
        How ``W`` was obtained.
    scaled_eigenvalues : ndarray, shape (N,)
        Eigenvalues of the Jacobi-scaled Gramian (:func:`jacobi_scaled`) in ascending order, over the largest:
        what :attr:`rank` counts.
    """

    W: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    condition_number: float
    rank: int
    rank_rtol: float
    directions: tuple
    state_names: tuple[str, ...]
    t0: float
    t1: float
    method: str
    scaled_eigenvalues: np.ndarray

    @property
    def n_states(self) -> int:
        return self.W.shape[0]

    @property
    def controllable(self) -> bool:
        """True when ``W`` has full rank."""
        return self.rank == self.n_states

    @property
    def least_controllable(self) -> tuple:
        """Directions of the ``N - rank`` smallest eigenvalues (the uncontrollable ones), or the smallest if none."""
        return self.directions[:max(self.n_states - self.rank, 1)]

    def to_table(self, *, weights: int = 3) -> str:
        """Plain-text table: eigenvalues ascending with their largest state weights.

        Parameters
        ----------
        weights : int
            State weights shown per direction.
        """
        lines = [f"Controllability Gramian W_c({self.t0:.6g}, {self.t1:.6g}) [{self.method}]",
                 f"rank {self.rank} of {self.n_states} (scaled eigenvalues > {self.rank_rtol:g} * max), "
                 f"condition number {self.condition_number:.4g}",
                 f"{'#':>3}  {'eigenvalue':>12}  {'':3}  direction (largest |weight| first)"]
        missing = self.n_states - self.rank
        for i, (lam, pairs) in enumerate(zip(self.eigenvalues, self.directions)):
            flag = "  *" if i < missing else "   "
            lines.append(f"{i:>3}  {lam:>12.4e}  {flag}  {format_direction(pairs, weights)}")
        lines.append("(* one of the N - rank least controllable directions: the scaled rank test finds N - rank "
                     "uncontrollable)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def gramian_report(W: np.ndarray, names, t0, t1, method, rank_rtol: float = RANK_RTOL) -> GramianReport:
    """Eigen-decomposition, rank and directions of a Gramian, as a :class:`GramianReport`.

    Parameters
    ----------
    W : ndarray, shape (N, N)
        The Gramian (symmetrised here).
    names : sequence of str
        State names.
    t0, t1 : float
        The interval (s, or steps for a discrete Gramian).
    method : str
        How ``W`` was computed.
    rank_rtol : float
        Relative tolerance of :func:`gramian_rank`.

    Returns
    -------
    GramianReport
    """
    W = 0.5 * (W + W.T)
    lam, V = np.linalg.eigh(W)
    rank = gramian_rank(W, rank_rtol=rank_rtol)
    cond = float(lam[-1] / lam[0]) if lam[0] > 0 else float("inf")
    scaled = np.linalg.eigvalsh(jacobi_scaled(W)[0])
    scaled = scaled / scaled[-1] if scaled[-1] > 0 else scaled
    for arr in (W, lam, V, scaled):
        arr.setflags(write=False)
    directions = tuple(named_vector(V[:, i], names) for i in range(V.shape[1]))
    return GramianReport(W, lam, V, cond, rank, float(rank_rtol), directions, tuple(names),
                         float(t0), float(t1), method, scaled)


def check_rtol(value, name: str) -> float:
    """A relative tolerance in (0, 1), or a ValueError naming ``name``.

    Parameters
    ----------
    value : float
        The tolerance.
    name : str
        The argument's name.

    Returns
    -------
    float
    """
    out = check_finite_scalar(value, name)
    if not 0.0 < out < 1.0:
        raise ParameterError(f"{name} must lie in (0, 1), got {value!r}")
    return out


def gramian(system: LTVSystem | LTVCallables, t0: float, t1: float, *, method: str = "integrate",
            period: float | None = None, rank_rtol: float = RANK_RTOL,
            rtol: float = 1e-10, atol: float = 1e-14) -> GramianReport:
    r"""Controllability Gramian :math:`W_c(t_0, t_1)` of a continuous LTV system.

    .. math::

        W_c(t_0, t_1) = \int_{t_0}^{t_1} \Phi(t_1, \tau) B(\tau) B(\tau)^T
                        \Phi(t_1, \tau)^T \, d\tau .

    ``method="integrate"`` solves the Lyapunov differential equation
    :math:`\dot W = A W + W A^T + B B^T`, :math:`W(t_0) = 0`, forward to
    :math:`t_1`. ``method="transition"`` integrates the definition backward
    in :math:`\tau` with :math:`\partial_\tau \Phi(t_1, \tau) = -\Phi(t_1, \tau) A(\tau)`,
    :math:`\Phi(t_1, t_1) = I`. Both use DOP853 with ``rtol``, ``atol``.

    Parameters
    ----------
    system : LTVSystem or LTVCallables
        Samples are interpolated by cubic splines (module notes).
    t0, t1 : float
        Interval in s, ``t1 > t0``, inside the system's time range unless
        ``period`` is given.
    method : {"integrate", "transition"}
    period : float, optional
        Period in s of a periodic ``LTVSystem``.
    rank_rtol : float
        Relative tolerance of the rank test (:func:`gramian_rank`, default :data:`RANK_RTOL`).
    rtol, atol : float
        Integrator tolerances.

    Returns
    -------
    GramianReport

    Raises
    ------
    ValueError
        On ``t1 <= t0``, times outside the system's range or an unknown method.
    IntegrationError
        If the integrator fails.

    Examples
    --------
    >>> import numpy as np
    >>> sys_ = LTVCallables(A_of_t=lambda t: np.zeros((2, 2)),
    ...                     B_of_t=lambda t: np.array([[np.cos(t)], [np.sin(t)]]))
    >>> rep = gramian(sys_, 0.0, np.pi)
    >>> rep.rank, np.round(rep.W, 8) + 0.0
    (2, array([[1.57079633, 0.        ],
           [0.        , 1.57079633]]))
    """
    if method not in GRAMIAN_METHODS:
        raise ParameterError(f"method must be one of {GRAMIAN_METHODS}, got {method!r}")
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    coef = Coefficients(system, period)
    t0, t1 = check_interval(coef, t0, t1)
    N = coef.N
    if method == "integrate":
        def rhs(t, y):
            A, B = coef.AB(t)
            W = y.reshape(N, N)
            AW = A @ W
            return (AW + AW.T + B @ B.T).ravel()

        W = integrate_matrix_ode(rhs, (t0, t1), np.zeros(N * N), rtol, atol, "Gramian").reshape(N, N)
    else:
        def rhs(tau, y):
            A, B = coef.AB(tau)
            Psi = y[:N * N].reshape(N, N)
            PB = Psi @ B
            return np.concatenate([-(Psi @ A).ravel(), -(PB @ PB.T).ravel()])

        y0 = np.concatenate([np.eye(N).ravel(), np.zeros(N * N)])
        W = integrate_matrix_ode(rhs, (t1, t0), y0, rtol, atol, "Gramian")[N * N:].reshape(N, N)
    return gramian_report(W, coef.state_names, t0, t1, method, rank_rtol)


def discrete_gramian(sys: DiscreteLTVSystem, *, state_names: Sequence[str] | None = None,
                     rank_rtol: float = RANK_RTOL) -> GramianReport:
    r"""Controllability (reachability) Gramian of ``X[k+1] = Ad[k] X[k] + Bd[k] u[k]``.

    .. math::

        W_d = \sum_{k=0}^{K-1} \Phi(K, k+1)\, B_{d,k} B_{d,k}^T\, \Phi(K, k+1)^T,
        \qquad \Phi(K, j) = A_{d,K-1} \cdots A_{d,j},

    computed by the recursion :math:`W_{k+1} = A_{d,k} W_k A_{d,k}^T + B_{d,k} B_{d,k}^T`,
    :math:`W_0 = 0`. With a zero-order hold of step ``dt``, ``W_d / dt`` tends to
    the continuous :math:`W_c(t_0, t_0 + K\,dt)`: the error is :math:`O(dt)` for a
    time-varying system frozen at the start of each step, :math:`O(dt^2)` for a
    constant one (measured in ``tests/test_controllability.py``).

    Parameters
    ----------
    sys : DiscreteLTVSystem
        The discrete system over the horizon of interest
        (:meth:`DiscreteLTVSystem.from_arrays` wraps plain arrays).
    state_names : sequence of str, optional
        Names of the states (default the system's).
    rank_rtol : float
        Relative tolerance of the rank test (:func:`gramian_rank`, default :data:`RANK_RTOL`).

    Returns
    -------
    GramianReport
        With ``t0 = 0`` and ``t1 = K`` (steps) and ``method = "discrete"``.

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl.linear.discretize import DiscreteLTVSystem
    >>> rep = discrete_gramian(DiscreteLTVSystem.from_arrays(np.ones((2, 1, 1)), np.ones((2, 1, 1))))
    >>> rep.W
    array([[2.]])
    """
    if not isinstance(sys, DiscreteLTVSystem):
        raise ParameterTypeError("sys must be a DiscreteLTVSystem (DiscreteLTVSystem.from_arrays(Ad, Bd) wraps "
                                 f"arrays), got {type(sys).__name__}")
    Ad, Bd = sys.Ad, sys.Bd
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    names = names_tuple(state_names if state_names is not None else sys.state_names, Ad.shape[1], "x",
                        "state_names")
    W = np.zeros(Ad.shape[1:])
    for A_k, B_k in zip(Ad, Bd):
        W = A_k @ W @ A_k.T + B_k @ B_k.T
    return gramian_report(W, names, 0.0, float(Ad.shape[0]), "discrete", rank_rtol)
