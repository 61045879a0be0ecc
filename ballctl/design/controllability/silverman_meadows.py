"""The Silverman-Meadows rank test of LTV controllability (see :mod:`ballctl.design.controllability`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._errors import ParameterError, SampleIndexError
from ..._validation import as_times
from ...linear.ltv import LTVSystem
from .coefficients import Coefficients, LTVCallables, format_direction, named_vector
from .gramians import check_rtol

__all__ = ["SM_RANK_RTOL", "SilvermanMeadowsReport", "silverman_meadows"]

#: Default relative rank tolerance of Q_k: numerical derivatives of the
#: samples are accurate to about 1e-9 .. 1e-7 relative (see tests).
SM_RANK_RTOL = 1e-6
# Relative mismatch allowed between the periodic copy and the first sample.

# ---------------------------------------------------------------- Silverman–Meadows
@dataclass(frozen=True)
class SilvermanMeadowsReport:
    r"""Rank of :math:`Q_k(t) = [B_0(t), \dots, B_k(t)]` at chosen times.

    Attributes
    ----------
    times : ndarray, shape (T,)
        Times in s.
    order : int
        ``k``: the highest block ``B_k``.
    Q : ndarray, shape (T, N, (k+1) nu)
        The matrices :math:`Q_k(t)`.
    ranks : ndarray of int, shape (T,)
        Rank of ``Q[i]``.
    singular_values : ndarray, shape (T, N)
        Singular values of ``Q[i]``, descending, padded with zeros to N.
    left_singular_vectors : ndarray, shape (T, N, N)
        Column ``j`` of ``left_singular_vectors[i]`` belongs to ``singular_values[i, j]``.
    rank_rtol : float
        Relative rank tolerance.
    state_names : tuple of str
    derivative_method : str
        How the time derivatives of A and B were obtained.
    """

    times: np.ndarray
    order: int
    Q: np.ndarray
    ranks: np.ndarray
    singular_values: np.ndarray
    left_singular_vectors: np.ndarray
    rank_rtol: float
    state_names: tuple[str, ...]
    derivative_method: str

    @property
    def n_states(self) -> int:
        return self.Q.shape[1]

    @property
    def controllable(self) -> bool:
        """True when ``Q_k`` has full rank at some of the times (sufficient condition)."""
        return bool(np.any(self.ranks == self.n_states))

    def uncontrollable_directions(self, i: int) -> tuple:
        """Left null directions of ``Q[i]`` (``v^T Q = 0``) as ``((state, weight), ...)`` tuples.

        Parameters
        ----------
        i : int
            Index of the time.
        """
        if not -len(self.times) <= i < len(self.times):
            raise SampleIndexError(f"time index {i} out of range for {len(self.times)} times")
        U = self.left_singular_vectors[i]
        return tuple(named_vector(U[:, j], self.state_names) for j in range(int(self.ranks[i]), self.n_states))

    def to_table(self, *, weights: int = 3) -> str:
        """Plain-text table: rank, extreme singular values and null directions per time.

        Parameters
        ----------
        weights : int
            State weights shown per direction.
        """
        lines = [f"Silverman-Meadows test, Q_{self.order} = [B_0 .. B_{self.order}], N = {self.n_states} "
                 f"(rank tolerance {self.rank_rtol:g} * max singular value)",
                 f"derivatives: {self.derivative_method}",
                 f"{'t [s]':>12}  {'rank':>4}  {'s_max':>10}  {'s_min':>10}  uncontrollable directions"]
        for i, t in enumerate(self.times):
            dirs = "; ".join("(" + format_direction(p, weights) + ")" for p in self.uncontrollable_directions(i))
            lines.append(f"{t:>12.6g}  {int(self.ranks[i]):>4d}  {self.singular_values[i, 0]:>10.3e}  "
                         f"{self.singular_values[i, -1]:>10.3e}  {dirs or '-'}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def _sm_blocks(dA: np.ndarray, dB: np.ndarray, order: int) -> list[np.ndarray]:
    r"""Blocks :math:`B_0..B_k` from derivatives of A (up to k-1) and B (up to k).

    ``D[j][m]`` is the m-th derivative of :math:`B_j`; by the Leibniz rule
    :math:`B_{j+1}^{(m)} = -\sum_{i=0}^{m} \binom{m}{i} A^{(i)} B_j^{(m-i)} + B_j^{(m+1)}`.
    """
    D = [[dB[m] for m in range(order + 1)]]
    for j in range(order):
        prev = D[j]
        nxt = []
        for m in range(order - j):
            acc = prev[m + 1].copy()
            for i in range(m + 1):
                acc -= math.comb(m, i) * (dA[i] @ prev[m - i])
            nxt.append(acc)
        D.append(nxt)
    return [D[j][0] for j in range(order + 1)]


def silverman_meadows(system: LTVSystem | LTVCallables, times, *, order: int | None = None,
                      period: float | None = None, rank_rtol: float = SM_RANK_RTOL,
                      stencil_stride: int = 1, balance: bool = True) -> SilvermanMeadowsReport:
    r"""Silverman–Meadows rank test of controllability at the given times.

    .. math::

        Q_k(t) = [B_0(t), B_1(t), \dots, B_k(t)], \qquad B_0 = B, \qquad
        B_{j+1} = -A B_j + \dot B_j .

    If :math:`\operatorname{rank} Q_{N-1}(t) = N` at some time :math:`t`, the
    system is controllable on every interval containing :math:`t`
    (Silverman & Meadows 1967; for analytic A, B full rank somewhere in an
    interval is also necessary). For constant (A, B), :math:`B_j = (-A)^j B`
    and the rank equals that of Kalman's ``ctrb(A, B)``. The derivatives of
    :math:`B_j` follow from those of A and B by the Leibniz rule
    :math:`\frac{d^m}{dt^m}(A B_j) = \sum_i \binom{m}{i} A^{(i)} B_j^{(m-i)}`,
    so only :math:`A^{(i)}, i < k` and :math:`B^{(i)}, i \le k` are needed
    (module notes for how they are obtained).

    Parameters
    ----------
    system : LTVSystem or LTVCallables
    times : float or array_like, shape (T,)
        Times in s, inside the system's range unless ``period`` is given.
    order : int, optional
        ``k``; default ``N - 1``.
    period : float, optional
        Period in s of a periodic ``LTVSystem``: uniform samples then get
        spectral derivatives.
    rank_rtol : float
        Relative rank tolerance on the singular values (default 1e-6). The
        blocks :math:`B_j` carry units of B per s^j: scale time so that the
        blocks are comparable if they differ by many orders of magnitude.
    balance : bool
        Before the rank decision, scale block :math:`B_j` by :math:`\tau^j`
        with :math:`\tau = 1/\max_t\|A(t)\|_2` (a time unit that makes the
        blocks comparable) and every row to unit largest entry (states in
        different units). Both scalings leave the exact rank unchanged and
        keep the numerical rank from being swamped by the largest block;
        the singular values reported are those of the balanced matrix and the
        uncontrollable directions are mapped back to the original states.
    stencil_stride : int
        For samples differentiated by local polynomials (not periodic and
        uniform): use every ``stencil_stride``-th sample. Rounding and noise
        in the samples grow like ``eps / step**m`` in the m-th derivative, so
        dense samples (e.g. dt = 0.01 s with k >= 4) want a stride of 5-10.

    Returns
    -------
    SilvermanMeadowsReport

    Examples
    --------
    >>> import numpy as np
    >>> sys_ = LTVCallables(A_of_t=lambda t: np.zeros((2, 2)),
    ...                     B_of_t=lambda t: np.array([[np.cos(t)], [np.sin(t)]]))
    >>> silverman_meadows(sys_, [0.0, 1.0]).ranks
    array([2, 2])
    """
    coef = Coefficients(system, period)
    times = as_times(times, "times")
    if times.size == 0:
        raise ParameterError("times must hold at least one time in s")
    coef.check_times(times, "times")
    if order is None:
        order = coef.N - 1
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ParameterError(f"order must be a non-negative integer, got {order!r}")
    order = int(order)
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    if isinstance(stencil_stride, bool) or not isinstance(stencil_stride, (int, np.integer)) or stencil_stride < 1:
        raise ParameterError(f"stencil_stride must be a positive integer, got {stencil_stride!r}")
    dA, dB = coef.derivatives(times, order, int(stencil_stride))
    blocks = _sm_blocks(dA, dB, order)
    Q = np.concatenate(blocks, axis=-1)                                   # (T, N, (k+1) nu)
    N, T = coef.N, times.shape[0]
    Qb = Q
    row_scale = np.ones((T, N))
    if balance:
        normA = float(max(np.linalg.norm(a, 2) for a in dA[0])) if len(dA) else 0.0
        tau = 1.0 / normA if normA > 0 else 1.0
        nu = blocks[0].shape[-1]
        col = np.repeat(tau ** np.arange(order + 1), nu)
        Qb = Q * col
        rmax = np.max(np.abs(Qb), axis=-1)
        row_scale = np.where(rmax > 0, 1.0 / np.where(rmax > 0, rmax, 1.0), 1.0)
        Qb = Qb * row_scale[:, :, None]
    U, s, _ = np.linalg.svd(Qb, full_matrices=True)
    if balance:
        # a left null vector v of S Q gives S v for Q: map and renormalize
        U = U * row_scale[:, :, None]
        U = U / np.linalg.norm(U, axis=1, keepdims=True)
    sv = np.zeros((T, N))
    sv[:, :s.shape[1]] = s[:, :N]
    ranks = np.array([int(np.sum(row > rank_rtol * row[0])) if row[0] > 0 else 0 for row in sv])
    for arr in (times, Q, ranks, sv, U):
        arr.setflags(write=False)
    return SilvermanMeadowsReport(times, order, Q, ranks, sv, U, float(rank_rtol), tuple(coef.state_names),
                                  coef.derivative_method)
