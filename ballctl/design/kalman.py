r"""Discrete Kalman filters along a reference: the duals of the LQR sweeps.

For the discrete time-varying model

.. math::

    X_{k+1} = A_k X_k + B_k\,\delta u_k + w_k, \qquad y_k = C_k X_k + v_k,
    \qquad w_k \sim N(0, W_k),\; v_k \sim N(0, V_k),

the a-priori error covariance :math:`P_k = \mathrm{cov}(X_k - \hat X_{k|k-1})`
obeys the forward Riccati recursion

.. math::

    P_{k+1} = A_k P_k A_k^T + W_k - A_k P_k C_k^T (V_k + C_k P_k C_k^T)^{-1} C_k P_k A_k^T,

which is the LQR recursion (eqs. 28-29 of Agúndez et al. 2024) of the
*transposed, time-reversed* system :math:`(A_{K-1-i}^T, C_{K-1-i}^T)` with
weights :math:`(W, V)` and terminal weight :math:`P_0`. :func:`finite_horizon_kalman`
runs exactly that sweep (:func:`ballctl.finite_horizon_lqr`, with its
symmetrisation and conditioning checks) and transposes the gains back;
:func:`periodic_kalman` does the same with :func:`ballctl.periodic_lqr`.

Gains follow ``control.dlqe``: ``L_k = A_k P_k C_k^T (V_k + C_k P_k C_k^T)^{-1}``
is the *predictor* gain, :math:`\hat X_{k+1|k} = A_k \hat X_{k|k-1} + B_k \delta u_k
+ L_k (y_k - C_k \hat X_{k|k-1})`. The *update* (filter) gain
``M_k = P_k C_k^T (V_k + C_k P_k C_k^T)^{-1}``, with ``L_k = A_k M_k``, gives the
split form (filterpy's ``update``/``predict``):
:math:`\hat X_{k|k} = \hat X_{k|k-1} + M_k (y_k - C_k \hat X_{k|k-1})`,
:math:`\hat X_{k+1|k} = A_k \hat X_{k|k} + B_k \delta u_k`. A step without a
measurement of some signal has a zero row in ``C_k`` (its gain column is then zero).

Both take the discrete system first, like the LQR: ``finite_horizon_lqr(sys, Q, R)`` and
``finite_horizon_kalman(sys, C, W, V, P0=...)`` with ``sys`` a :class:`~ballctl.DiscreteLTVSystem`
(:meth:`~ballctl.DiscreteLTVSystem.from_arrays` wraps plain arrays), then the measurement matrices and the
noise covariances in python-control's ``dlqe(sys, QN, RN)`` order (``W`` is ``QN``, ``V`` is ``RN``; the
time-varying ``C_k`` are not part of a ``DiscreteLTVSystem``, so they come right after it). Results unpack
as ``L, P, E = finite_horizon_kalman(...)`` like ``control.dlqe``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ShapeError
from ..linear.discretize import DiscreteLTVSystem
from .lqr import finite_horizon_lqr, periodic_lqr

__all__ = ["KalmanFilterResult", "PeriodicKalmanResult", "finite_horizon_kalman", "periodic_kalman"]


@dataclass(frozen=True)
class KalmanFilterResult:
    r"""Result of :func:`finite_horizon_kalman`.

    Unpacks as ``L, P, E`` (like ``control.dlqe``).

    Attributes
    ----------
    gains : ndarray, shape (K, N, ny)
        Predictor gains :math:`L_k` (``control.dlqe``'s ``L`` at each step).
    update_gains : ndarray, shape (K, N, ny)
        Filter gains :math:`M_k`, ``gains[k] = Ad[k] @ update_gains[k]``.
    covariance : ndarray, shape (K + 1, N, N)
        A-priori covariances :math:`P_k`, ``covariance[0] = P0``.
    posterior_covariance : ndarray, shape (K, N, N)
        :math:`P_{k|k} = (I - M_k C_k) P_k`.
    eigenvalues : ndarray, shape (K, N)
        Eigenvalues of the frozen error dynamics :math:`A_k - L_k C_k`.
    C : ndarray, shape (K, ny, N)
        Measurement matrices used.
    condition_numbers : ndarray, shape (K,)
        ``cond(V_k + C_k P_k C_k^T)``.
    """

    gains: np.ndarray
    update_gains: np.ndarray
    covariance: np.ndarray
    posterior_covariance: np.ndarray
    eigenvalues: np.ndarray
    C: np.ndarray
    condition_numbers: np.ndarray

    def __iter__(self):
        return iter((self.gains, self.covariance, self.eigenvalues))

    @property
    def horizon_steps(self) -> int:
        """Number of steps K."""
        return self.gains.shape[0]


@dataclass(frozen=True)
class PeriodicKalmanResult:
    r"""Result of :func:`periodic_kalman`; unpacks as ``L, P, E``.

    Attributes
    ----------
    gains : ndarray, shape (T, N, ny)
        Periodic predictor gains, step ``k`` uses ``gains[k % T]``.
    update_gains : ndarray, shape (T, N, ny)
        Periodic filter gains.
    covariance : ndarray, shape (T + 1, N, N)
        Periodic a-priori covariances (``covariance[T]`` equals ``covariance[0]``).
    eigenvalues : ndarray, shape (N,)
        Floquet multipliers of the error dynamics, eigenvalues of
        :math:`\prod_{k=T-1}^{0}(A_k - L_k C_k)`.
    spectral_radius : float
        Largest modulus of ``eigenvalues`` (< 1: the periodic filter is stable).
    periods : int
        Riccati sweeps until convergence.
    """

    gains: np.ndarray
    update_gains: np.ndarray
    covariance: np.ndarray
    eigenvalues: np.ndarray
    spectral_radius: float
    periods: int

    def __iter__(self):
        return iter((self.gains, self.covariance, self.eigenvalues))


def _arrays(sys, C, W, V):
    if not isinstance(sys, DiscreteLTVSystem):
        raise ParameterTypeError("sys must be a DiscreteLTVSystem (DiscreteLTVSystem.from_arrays(Ad, Bd) wraps "
                                 f"arrays), got {type(sys).__name__}")
    Ad = np.asarray(sys.Ad, dtype=float)
    K, N = Ad.shape[:2]
    C = np.asarray(C, dtype=float)
    if C.ndim == 2:
        C = np.broadcast_to(C, (K,) + C.shape)
    if C.ndim != 3 or C.shape[0] != K or C.shape[2] != N or C.shape[1] < 1:
        raise ShapeError(f"C must have shape (ny, N) or (K, ny, N) with N = {N}, K = {K}; got {C.shape}")
    ny = C.shape[1]
    out = []
    for M, name, shape in ((W, "W", (N, N)), (V, "V", (ny, ny))):
        M = np.asarray(M, dtype=float)
        if M.shape == shape:
            M = np.broadcast_to(M, (K,) + shape)
        elif M.shape != (K,) + shape:
            raise ShapeError(f"{name} must have shape {shape} or {(K,) + shape}, got {M.shape}")
        out.append(M)
    if not all(np.all(np.isfinite(a)) for a in (Ad, C, *out)):
        raise ParameterError("Ad, C, W and V must be finite")
    return Ad, C, out[0], out[1]


def _posterior(P, C, V):
    """Update gains M_k, posterior covariances and cond(S_k) from a-priori P_k."""
    PCt = P @ np.swapaxes(C, -1, -2)
    S = C @ PCt + V
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    M = np.swapaxes(np.linalg.solve(S, np.swapaxes(PCt, -1, -2)), -1, -2)
    I = np.eye(P.shape[-1])
    IMC = I - M @ C
    # Joseph form: symmetric and positive semidefinite in floating point
    Pp = IMC @ P @ np.swapaxes(IMC, -1, -2) + M @ V @ np.swapaxes(M, -1, -2)
    return M, 0.5 * (Pp + np.swapaxes(Pp, -1, -2)), np.linalg.cond(S)


def finite_horizon_kalman(sys: DiscreteLTVSystem, C, W, V, *, P0) -> KalmanFilterResult:
    r"""Time-varying discrete Kalman filter over a finite horizon (dual of :func:`~ballctl.finite_horizon_lqr`).

    Parameters
    ----------
    sys : DiscreteLTVSystem
        The discrete system, ``Ad (K, N, N)`` (its input matrices do not enter the covariances);
        :meth:`DiscreteLTVSystem.from_arrays` wraps plain arrays.
    C : ndarray, shape (ny, N) or (K, ny, N)
        Measurement matrices; a zero row at step k means that signal is not
        measured at step k.
    W : ndarray, shape (N, N) or (K, N, N)
        Process-noise covariance (state units squared), symmetric positive semidefinite.
    V : ndarray, shape (ny, ny) or (K, ny, ny)
        Measurement-noise covariance (m^2 or rad^2), symmetric positive definite.
    P0 : ndarray, shape (N, N)
        Covariance of the initial estimate, symmetric positive semidefinite.

    Returns
    -------
    KalmanFilterResult
        Unpacks as ``L (K, N, ny), P (K + 1, N, N), E (K, N)``.

    Notes
    -----
    The covariances come from :func:`~ballctl.finite_horizon_lqr` on the
    system ``(Ad[K-1-i]^T, C[K-1-i]^T)`` with ``Q = W[K-1-i]``, ``R = V[K-1-i]``
    and ``Q_N = P0``: its Riccati matrix at step ``K - k`` is :math:`P_k`, and
    its gain at step ``K - 1 - k`` is :math:`L_k^T`.

    References
    ----------
    R. E. Kalman, "A new approach to linear filtering and prediction problems",
    J. Basic Eng. 82 (1960); the duality with eqs. (28)-(29) of Agúndez et al. (2024).

    Examples
    --------
    >>> import numpy as np
    >>> sys = DiscreteLTVSystem.from_arrays(np.ones((50, 1, 1)), np.zeros((50, 1, 1)))
    >>> L, P, E = finite_horizon_kalman(sys, np.ones((1, 1)), np.eye(1), np.eye(1), P0=np.eye(1))
    >>> round(float(P[-1, 0, 0]), 6)  # the scalar DARE p = p + 1 - p^2/(1 + p): p = (1 + sqrt 5)/2
    1.618034
    """
    Ad, C, W, V = _arrays(sys, C, W, V)
    K, N = Ad.shape[:2]
    P0 = np.asarray(P0, dtype=float)
    if P0.shape != (N, N):
        raise ShapeError(f"P0 must have shape ({N}, {N}), got {P0.shape}")
    dual_sys = DiscreteLTVSystem.from_arrays(np.swapaxes(Ad[::-1], -1, -2), np.swapaxes(C[::-1], -1, -2))
    dual = finite_horizon_lqr(dual_sys, W[::-1], V[::-1], Q_N=P0)
    P = np.ascontiguousarray(dual.riccati[::-1])
    L = np.ascontiguousarray(np.swapaxes(dual.gains[::-1], -1, -2))
    M, Ppost, cond = _posterior(P[:-1], C, V)
    E = np.linalg.eigvals(Ad - L @ C)
    for a in (L, M, P, Ppost, E, cond):
        a.setflags(write=False)
    C = np.array(C)
    C.setflags(write=False)
    return KalmanFilterResult(L, M, P, Ppost, E, C, cond)


def periodic_kalman(sys: DiscreteLTVSystem, C, W, V, *, tol: float = 1e-12,
                    max_periods: int = 10_000) -> PeriodicKalmanResult:
    r"""Periodic discrete Kalman filter (dual of :func:`~ballctl.periodic_lqr`).

    Parameters
    ----------
    sys : DiscreteLTVSystem
        One period of the discrete system, ``Ad (T, N, N)``.
    C : ndarray, shape (ny, N) or (T, ny, N)
        One period of measurement matrices.
    W : ndarray, shape (N, N) or (T, N, N)
        Process-noise covariance.
    V : ndarray, shape (ny, ny) or (T, ny, ny)
        Measurement-noise covariance, positive definite.
    tol, max_periods
        Convergence controls of the periodic Riccati iteration.

    Returns
    -------
    PeriodicKalmanResult
        Unpacks as ``L (T, N, ny), P (T + 1, N, N), E (N,)`` (Floquet multipliers
        of the error dynamics; for T = 1 this is ``control.dlqe``'s ``E``).

    Raises
    ------
    ballctl.design.lqr.RiccatiConvergenceError
        If the periodic system is not detectable (the dual is not stabilizable).

    Examples
    --------
    >>> import numpy as np
    >>> sys = DiscreteLTVSystem.from_arrays(np.ones((1, 1, 1)), np.zeros((1, 1, 1)))
    >>> L, P, E = periodic_kalman(sys, np.ones((1, 1)), np.eye(1), np.eye(1))
    >>> round(float(P[0, 0, 0]), 6)
    1.618034
    """
    Ad, C, W, V = _arrays(sys, C, W, V)
    T = Ad.shape[0]
    dual_sys = DiscreteLTVSystem.from_arrays(np.swapaxes(Ad[::-1], -1, -2), np.swapaxes(C[::-1], -1, -2))
    dual = periodic_lqr(dual_sys, W[::-1], V[::-1], tol=tol, max_periods=max_periods)
    P = np.ascontiguousarray(dual.riccati[::-1])
    L = np.ascontiguousarray(np.swapaxes(dual.gains[::-1], -1, -2))
    M, _, _ = _posterior(P[:-1], C, V)
    Phi = np.eye(Ad.shape[1])
    for k in range(T):
        Phi = (Ad[k] - L[k] @ C[k]) @ Phi
    E = np.linalg.eigvals(Phi)
    for a in (L, M, P, E):
        a.setflags(write=False)
    return PeriodicKalmanResult(L, M, P, E, float(np.max(np.abs(E))), dual.periods)
