r"""Discrete-time linear-quadratic regulators for time-varying systems.

The finite-horizon LQR of Agúndez et al. (2024), section 2.4, minimises
(eq. 24)

.. math::

    J = X_{N_t}^T Q_{N_t} X_{N_t} + \sum_{k=0}^{N_t-1} \left(X_k^T Q_w X_k
        + \delta u_k^T R_w\, \delta u_k\right)

subject to :math:`X_{k+1} = A_{d,k} X_k + B_{d,k}\,\delta u_k` (eq. 23). The
optimum is the feedback :math:`\delta u_k = -K_k X_k` (eq. 27, the sign
convention of ``docs/conventions.md``), with (eqs. 28-29)

.. math::

    K_k = (R_w + B_k^T P_{k+1} B_k)^{-1} B_k^T P_{k+1} A_k, \qquad
    P_k = Q_w + A_k^T P_{k+1} A_k - A_k^T P_{k+1} B_k K_k, \qquad
    P_{N_t} = Q_{N_t} .

Weights are built by Bryson's rule (eq. 26) with :func:`bryson`.
:func:`periodic_lqr` iterates the same backward sweep over a periodic system
until the Riccati matrix is periodic (the periodic Riccati solution).

Shapes follow the time-axis-first convention: ``Ad (Kt, N, N)``,
``Bd (Kt, N, nu)``, gains ``(Kt, nu, N)``, Riccati ``(Kt + 1, N, N)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import (ParameterError, ParameterTypeError, RiccatiConditioningWarning, RiccatiConvergenceError,
                      ShapeError, SingularMatrixError)
from .._validation import as_array, as_stack, check_positive
from ..linear.discretize import DiscreteLTVSystem

__all__ = [
    "bryson",
    "riccati_sweep",
    "LQRRollout",
    "FiniteHorizonLQR",
    "finite_horizon_lqr",
    "PeriodicLQR",
    "periodic_lqr",
]

#: Condition number of ``R + B^T P B`` above which a warning is issued: the
#: gains then carry fewer than ~4 significant digits in double precision.
DEFAULT_COND_LIMIT = 1e12


# --------------------------------------------------------------------- weights
def bryson(state_names: Sequence[str], input_names: Sequence[str], max_state_errors: Mapping[str, float],
           max_input_errors: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    r"""Diagonal weights by Bryson's rule, :math:`Q_{ii} = 1/E_{s,i}^2`, :math:`R_{jj} = 1/E_{u,j}^2` (eq. 26).

    Parameters
    ----------
    state_names : sequence of str
        The N state names, in state order.
    input_names : sequence of str
        The nu input names, in input order.
    max_state_errors : mapping of str to float
        Largest acceptable error of every state, in the state's unit (m,
        rad, m/s, rad/s); every state name is required.
    max_input_errors : mapping of str to float
        Largest acceptable error of every input (rad for plate angles).

    Returns
    -------
    Q : ndarray, shape (N, N)
        Diagonal state weight :math:`Q_w` (eq. 25).
    R : ndarray, shape (nu, nu)
        Diagonal input weight :math:`R_w` (eq. 25).

    Raises
    ------
    ParameterTypeError
        When ``state_names`` or ``input_names`` is not a sequence of str (e.g. None).
    ValueError
        Listing at once every unknown name, missing name and non-positive
        or non-finite value.

    References
    ----------
    Agúndez et al. (2024), eqs. (25)-(26); Bryson & Ho (1975).

    Examples
    --------
    >>> Q, R = bryson(["x", "v"], ["a"], {"x": 0.5, "v": 0.25}, {"a": 2.0})
    >>> Q.diagonal().tolist(), R.diagonal().tolist()
    ([4.0, 16.0], [0.25])
    """
    for label, names in (("state", state_names), ("input", input_names)):
        if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray)) or \
                not all(isinstance(s, str) for s in names):
            if isinstance(names, (str, bytes)) or names is None:
                shown = repr(names)
            elif isinstance(names, (Sequence, np.ndarray)):
                bad = next(s for s in names if not isinstance(s, str))
                shown = f"a {type(names).__name__} with the entry {bad!r} ({type(bad).__name__})"
            else:
                shown = type(names).__name__
            raise ParameterTypeError(f"bryson: {label}_names must be a sequence of the {label} names (str), in "
                                     f"{label} order, e.g. the LTV system's {label}_names; got {shown}")
    problems: list[str] = []

    def diag(names, errors, label):
        names = tuple(str(s) for s in names)
        if len(set(names)) != len(names):
            problems.append(f"{label} names are not unique: {names}")
        if not isinstance(errors, Mapping):
            problems.append(f"max_{label}_errors must be a mapping of name to error, got {type(errors).__name__}")
            return np.zeros(len(names))
        unknown = [k for k in errors if k not in names]
        missing = [k for k in names if k not in errors]
        if unknown:
            problems.append(f"max_{label}_errors has unknown {label} names {unknown}; {label}s are {list(names)}")
        if missing:
            problems.append(f"max_{label}_errors is missing {missing}")
        out = np.zeros(len(names))
        for i, s in enumerate(names):
            if s not in errors:
                continue
            try:
                e = float(errors[s])
            except (TypeError, ValueError):
                problems.append(f"max_{label}_errors[{s!r}] must be a number, got {errors[s]!r}")
                continue
            if not np.isfinite(e) or e <= 0.0:
                problems.append(f"max_{label}_errors[{s!r}] must be finite and > 0, got {errors[s]!r}")
                continue
            out[i] = 1.0 / e**2
        return out

    q = diag(state_names, max_state_errors, "state")
    r = diag(input_names, max_input_errors, "input")
    if problems:
        raise ParameterError("bryson: " + "; ".join(problems))
    return np.diag(q), np.diag(r)


# ------------------------------------------------------------------ helpers
def _as_stack(value, name: str, Kt: int, shape: tuple[int, int]) -> np.ndarray:
    """Return a weight as a (Kt, *shape) stack, accepting a constant (shape) matrix."""
    return as_stack(value, name, (Kt,) + tuple(shape), allow_constant=True)


def _check_weights(Q: np.ndarray, R: np.ndarray, Q_N: np.ndarray | None) -> None:
    """Symmetric, Q and Q_N positive semidefinite, R positive definite (section 2.4); aggregate problems."""
    problems = []

    def sym_eigs(M, name):
        scale = max(1.0, float(np.max(np.abs(M)))) if M.size else 1.0
        asym = float(np.max(np.abs(M - np.swapaxes(M, -1, -2)))) if M.size else 0.0
        if asym > 1e-10 * scale:
            problems.append(f"{name} must be symmetric (max |M - M^T| = {asym:.3g})")
            return None, scale
        return np.linalg.eigvalsh(M), scale

    for M, name, definite in ((Q, "Q", False), (R, "R", True), (Q_N, "Q_N", False)):
        if M is None:
            continue
        eig, scale = sym_eigs(M, name)
        if eig is None:
            continue
        lo = float(np.min(eig))
        if definite and lo <= 0.0:
            problems.append(f"{name} must be positive definite (smallest eigenvalue {lo:.3g})")
        elif not definite and lo < -1e-12 * scale:
            problems.append(f"{name} must be positive semidefinite (smallest eigenvalue {lo:.3g})")
    if problems:
        raise ParameterError("; ".join(problems))


def _system_arrays(sys) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(sys, DiscreteLTVSystem):
        raise ParameterTypeError("sys must be a DiscreteLTVSystem (DiscreteLTVSystem.from_arrays(Ad, Bd) wraps "
                                 f"arrays), got {type(sys).__name__}")
    return sys.Ad, sys.Bd


def riccati_sweep(Ad: np.ndarray, Bd: np.ndarray, Q: np.ndarray, R: np.ndarray, P_end: np.ndarray, *,
                  check_every: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Backward Riccati sweep of eqs. (28)-(29) on plain arrays (no validation).

    For ``k = Kt-1 .. 0``: :math:`S_k = R_k + B_k^T P_{k+1} B_k`,
    :math:`K_k = S_k^{-1} B_k^T P_{k+1} A_k`,
    :math:`P_k = Q_k + A_k^T P_{k+1} A_k - A_k^T P_{k+1} B_k K_k`, each
    :math:`P_k` symmetrised (so :math:`S_k` is symmetric to rounding). No factorisation beyond the one
    solve per step: a singular :math:`S_k` raises at once, non-finite
    Riccati matrices are caught every ``check_every`` steps and at the end,
    and the conditioning of every :math:`S_k` is measured afterwards in one
    batched call by the callers (:func:`finite_horizon_lqr`). The Kalman
    filter is the same sweep on the dual system (``Ad^T``, ``C^T``).

    Parameters
    ----------
    Ad : ndarray, shape (Kt, N, N)
        State matrices.
    Bd : ndarray, shape (Kt, N, nu)
        Input matrices.
    Q : ndarray, shape (Kt, N, N)
        State weights, symmetric positive semidefinite.
    R : ndarray, shape (Kt, nu, nu)
        Input weights, symmetric positive definite.
    P_end : ndarray, shape (N, N)
        Terminal Riccati matrix :math:`P_{N_t}`.
    check_every : int
        Steps between finiteness checks of :math:`P_k`.

    Returns
    -------
    gains : ndarray, shape (Kt, nu, N)
        :math:`K_k`; the feedback is ``du[k] = -gains[k] @ X[k]``.
    riccati : ndarray, shape (Kt + 1, N, N)
        :math:`P_k`, ``riccati[Kt] = P_end``.
    S : ndarray, shape (Kt, nu, nu)
        :math:`R_k + B_k^T P_{k+1} B_k`.

    Raises
    ------
    numpy.linalg.LinAlgError
        If some :math:`S_k` is singular or a :math:`P_k` is not finite (the
        message names the step).

    References
    ----------
    Agúndez et al. (2024), eqs. (28)-(29).

    Examples
    --------
    >>> import numpy as np
    >>> K, P, S = riccati_sweep(np.ones((2, 1, 1)), np.ones((2, 1, 1)), np.ones((2, 1, 1)), np.ones((2, 1, 1)),
    ...                         np.eye(1))
    >>> float(K[1, 0, 0]), float(P[1, 0, 0])
    (0.5, 1.5)
    """
    Kt, N, nu = Bd.shape
    gains = np.empty((Kt, nu, N))
    P = np.empty((Kt + 1, N, N))
    S = np.empty((Kt, nu, nu))
    P[Kt] = P_end
    Pn = P[Kt]
    solve = np.linalg.solve
    k = Kt
    try:
        for k in range(Kt - 1, -1, -1):
            A = Ad[k]
            B = Bd[k]
            PB = Pn @ B
            Sk = R[k] + B.T @ PB        # symmetric to rounding: P is exactly symmetric
            BtPA = PB.T @ A
            Kk = solve(Sk, BtPA)
            Pk = Q[k] + A.T @ Pn @ A - BtPA.T @ Kk
            Pn = 0.5 * (Pk + Pk.T)
            P[k] = Pn
            gains[k] = Kk
            S[k] = Sk
            if not k % check_every and not np.isfinite(Pn).all():
                raise SingularMatrixError("the Riccati matrix is not finite")
    except np.linalg.LinAlgError as exc:
        raise SingularMatrixError(f"Riccati sweep failed at step {k} of {Kt}: {exc} (R + B^T P B singular or "
                                  "P not finite)") from exc
    if not np.isfinite(P[0]).all():
        raise SingularMatrixError("Riccati sweep: P[0] is not finite")
    S += np.swapaxes(S, 1, 2)     # one batched symmetrization of the stored S, outside the loop
    S *= 0.5
    return gains, P, S


def _backward_sweep(Ad, Bd, Q, R, P_end):
    """Eqs. (28)-(29); returns gains, Riccati (Kt+1), cond(R + B^T P B) measured in one batched call."""
    gains, P, S = riccati_sweep(Ad, Bd, Q, R, P_end)
    lam = np.sort(np.abs(np.linalg.eigvalsh(S)), axis=1)   # S symmetric: cond_2 = max|lambda| / min|lambda|
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = lam[:, -1] / lam[:, 0]
    if not np.all(np.isfinite(cond)):
        k = int(np.flatnonzero(~np.isfinite(cond))[-1])
        raise SingularMatrixError(f"R + B^T P B is singular at step {k}")
    return gains, P, cond


def _warn_conditioning(cond: np.ndarray, cond_limit: float) -> None:
    bad = np.flatnonzero(cond > cond_limit)
    if bad.size:
        warnings.warn(
            f"R + B^T P B is ill-conditioned at {bad.size} of {cond.size} steps (worst {cond.max():.3g} at step "
            f"{int(np.argmax(cond))} > {cond_limit:.0e}); the gains there carry about "
            f"{max(0, int(16 - np.log10(cond.max())))} significant digits: increase R or check that every input "
            f"acts on the state", RiccatiConditioningWarning, stacklevel=3)


def _freeze(*arrays):
    for a in arrays:
        if isinstance(a, np.ndarray) and a.flags.owndata:
            a.setflags(write=False)


# ------------------------------------------------------------ finite horizon
@dataclass(frozen=True)
class LQRRollout:
    """Closed-loop linear trajectory ``X[k+1] = (Ad[k] - Bd[k] K[k]) X[k]``.

    Attributes
    ----------
    X : ndarray, shape (Kt + 1, N)
        States, ``X[0]`` the initial state.
    du : ndarray, shape (Kt, nu)
        Inputs ``du[k] = -gains[k] @ X[k]`` (eq. 27).
    cost : float
        The cost (eq. 24) of this trajectory.
    """

    X: np.ndarray
    du: np.ndarray
    cost: float


@dataclass(frozen=True)
class FiniteHorizonLQR:
    r"""Result of :func:`finite_horizon_lqr`: time-varying gains and Riccati matrices.

    Attributes
    ----------
    gains : ndarray, shape (Kt, nu, N)
        :math:`K_k` of eq. (28); the feedback is ``du[k] = -gains[k] @ X[k]``.
    riccati : ndarray, shape (Kt + 1, N, N)
        :math:`P_k` of eq. (29), ``riccati[Kt] = Q_N``; the optimal cost from
        ``X`` at step k is ``X @ riccati[k] @ X``.
    condition_numbers : ndarray, shape (Kt,)
        2-norm condition numbers of :math:`R_w + B_k^T P_{k+1} B_k`.
    cond_limit : float
        Threshold above which a step counts as ill-conditioned.
    Ad : ndarray, shape (Kt, N, N)
    Bd : ndarray, shape (Kt, N, nu)
    Q : ndarray, shape (Kt, N, N)
        State weight :math:`Q_w` per step (constant weights are broadcast).
    R : ndarray, shape (Kt, nu, nu)
        Input weight :math:`R_w` per step.
    Q_N : ndarray, shape (N, N)
        Terminal weight :math:`Q_{N_t}`.
    """

    gains: np.ndarray
    riccati: np.ndarray
    condition_numbers: np.ndarray
    cond_limit: float
    Ad: np.ndarray
    Bd: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    Q_N: np.ndarray

    @property
    def horizon_steps(self) -> int:
        """Number of steps :math:`N_t`."""
        return self.gains.shape[0]

    @property
    def closed_loop_eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``Ad[k] - Bd[k] @ gains[k]`` for every step, shape (Kt, N)."""
        return np.linalg.eigvals(self.Ad - self.Bd @ self.gains)

    def __iter__(self):
        """Unpack as python-control's ``dlqr``: ``K, S, E = result`` (gains, Riccati, closed-loop eigenvalues)."""
        return iter((self.gains, self.riccati, self.closed_loop_eigenvalues))

    @property
    def ill_conditioned_steps(self) -> np.ndarray:
        """Indices k where ``cond(R + B^T P B) > cond_limit``."""
        return np.flatnonzero(self.condition_numbers > self.cond_limit)

    def report(self) -> str:
        """A short text summary of the conditioning of the Riccati recursion."""
        c = self.condition_numbers
        bad = self.ill_conditioned_steps
        lines = [f"finite-horizon LQR: {self.horizon_steps} steps, N={self.gains.shape[2]}, nu={self.gains.shape[1]}",
                 f"cond(R + B^T P B): min {c.min():.3g}, max {c.max():.3g} (step {int(np.argmax(c))})"]
        lines.append(f"ill-conditioned steps (> {self.cond_limit:.0e}): {bad.size}" +
                     (f", first {bad[:10].tolist()}" if bad.size else ""))
        return "\n".join(lines)

    def _x0(self, X0) -> np.ndarray:
        X0 = np.asarray(X0, dtype=float)
        N = self.gains.shape[2]
        if X0.shape != (N,) or not np.all(np.isfinite(X0)):
            raise ShapeError(f"X0 must be a finite vector of length {N}, got shape {X0.shape}")
        return X0

    def cost(self, X0, du_sequence) -> float:
        r"""The cost :math:`J` of eq. (24) for an input sequence applied open loop from ``X0``.

        Parameters
        ----------
        X0 : ndarray, shape (N,)
            Initial state.
        du_sequence : ndarray, shape (Kt, nu)
            Inputs :math:`\delta u_0 \dots \delta u_{N_t-1}`.

        Returns
        -------
        float
            :math:`X_{N_t}^T Q_{N_t} X_{N_t} + \sum_k (X_k^T Q_w X_k + \delta u_k^T R_w \delta u_k)`.
        """
        X = self._x0(X0)
        du = np.asarray(du_sequence, dtype=float)
        Kt, nu = self.gains.shape[:2]
        if du.shape != (Kt, nu) or not np.all(np.isfinite(du)):
            raise ShapeError(f"du_sequence must be a finite array of shape ({Kt}, {nu}), got {du.shape}")
        J = 0.0
        for k in range(Kt):
            J += X @ self.Q[k] @ X + du[k] @ self.R[k] @ du[k]
            X = self.Ad[k] @ X + self.Bd[k] @ du[k]
        return float(J + X @ self.Q_N @ X)

    def rollout(self, X0) -> LQRRollout:
        """Closed-loop linear trajectory from ``X0`` under ``du[k] = -gains[k] @ X[k]`` (eqs. 23, 27).

        Parameters
        ----------
        X0 : ndarray, shape (N,)
            Initial state.

        Returns
        -------
        LQRRollout
            States ``(Kt + 1, N)``, inputs ``(Kt, nu)`` and the cost (eq. 24),
            which equals ``X0 @ riccati[0] @ X0``.
        """
        X0 = self._x0(X0)
        Kt, nu, N = self.gains.shape
        X = np.empty((Kt + 1, N))
        du = np.empty((Kt, nu))
        X[0] = X0
        for k in range(Kt):
            du[k] = -self.gains[k] @ X[k]
            X[k + 1] = self.Ad[k] @ X[k] + self.Bd[k] @ du[k]
        J = float(np.einsum("ki,kij,kj->", X[:-1], self.Q, X[:-1]) + np.einsum("ki,kij,kj->", du, self.R, du)
                  + X[-1] @ self.Q_N @ X[-1])
        return LQRRollout(X, du, J)


def finite_horizon_lqr(sys: DiscreteLTVSystem, Q, R, *, Q_N=None,
                       cond_limit: float = DEFAULT_COND_LIMIT) -> FiniteHorizonLQR:
    r"""Discrete finite-horizon LQR of a time-varying system (eqs. 24-29).

    Parameters
    ----------
    sys : DiscreteLTVSystem
        The discrete system (eq. 23), ``Ad (Kt, N, N)``, ``Bd (Kt, N, nu)``;
        :meth:`DiscreteLTVSystem.from_arrays` wraps plain arrays.
    Q : ndarray, shape (N, N) or (Kt, N, N)
        State weight :math:`Q_w`, symmetric positive semidefinite; may vary
        with the step.
    R : ndarray, shape (nu, nu) or (Kt, nu, nu)
        Input weight :math:`R_w`, symmetric positive definite.
    Q_N : ndarray, shape (N, N), optional
        Terminal weight :math:`Q_{N_t}`, symmetric positive semidefinite;
        default the last stage weight ``Q[-1]``.
    cond_limit : float
        A :class:`RiccatiConditioningWarning` is issued when
        ``cond(R + B^T P B)`` exceeds it at any step.

    Returns
    -------
    FiniteHorizonLQR
        Gains ``(Kt, nu, N)`` with ``du[k] = -gains[k] @ X[k]`` (eq. 27),
        Riccati matrices ``(Kt + 1, N, N)``, condition numbers. It unpacks
        like python-control's ``dlqr``: ``K, S, E = finite_horizon_lqr(...)``
        gives the gains, the Riccati matrices and the closed-loop eigenvalues
        of every step ``(Kt, N)``.

    Notes
    -----
    The sweep is :func:`riccati_sweep`. Each :math:`P_k` is symmetrised,
    :math:`(P_k + P_k^T)/2`, so rounding does not accumulate an
    antisymmetric part over long horizons.

    References
    ----------
    Agúndez et al. (2024), eqs. (24)-(29); Shaiju & Petersen (2008).

    Examples
    --------
    >>> import numpy as np
    >>> sys = DiscreteLTVSystem.from_arrays(np.ones((3, 1, 1)), np.ones((3, 1, 1)))
    >>> K, S, E = finite_horizon_lqr(sys, np.eye(1), np.eye(1), Q_N=np.eye(1))
    >>> K.shape, S.shape, E.shape
    ((3, 1, 1), (4, 1, 1), (3, 1))
    """
    Ad, Bd = _system_arrays(sys)
    Kt, N, nu = Bd.shape
    Qs = _as_stack(Q, "Q", Kt, (N, N))
    Rs = _as_stack(R, "R", Kt, (nu, nu))
    Q_N = np.array(Qs[-1]) if Q_N is None else as_array(Q_N, "Q_N", finite=False)
    if Q_N.shape != (N, N) or not np.all(np.isfinite(Q_N)):
        raise ShapeError(f"Q_N must be a finite ({N}, {N}) matrix, got shape {Q_N.shape}")
    _check_weights(Qs, Rs, Q_N)
    cond_limit = check_positive(cond_limit, "cond_limit")
    gains, P, cond = _backward_sweep(Ad, Bd, Qs, Rs, Q_N)
    _warn_conditioning(cond, cond_limit)
    # Own read-only copies: the result must not change when the caller edits its arrays.
    Ad, Bd, Qs, Rs, Q_N = (np.array(a) for a in (Ad, Bd, Qs, Rs, Q_N))
    _freeze(gains, P, cond, Ad, Bd, Qs, Rs, Q_N)
    return FiniteHorizonLQR(gains, P, cond, cond_limit, Ad, Bd, Qs, Rs, Q_N)


# ------------------------------------------------------------------ periodic
@dataclass(frozen=True)
class PeriodicLQR:
    r"""Periodic LQR: the periodic solution of the Riccati equation (29) and its gains.

    Attributes
    ----------
    gains : ndarray, shape (T, nu, N)
        Periodic gains, ``du[k] = -gains[k % T] @ X[k]``.
    riccati : ndarray, shape (T + 1, N, N)
        Periodic Riccati matrices; ``riccati[T]`` equals ``riccati[0]`` to the
        convergence tolerance.
    periods : int
        Number of backward sweeps over one period until convergence.
    residual : float
        Relative change of :math:`P_0` in the last sweep,
        ``||P0_new - P0_old||_F / ||P0_new||_F``.
    monodromy : ndarray, shape (N, N)
        Closed-loop monodromy :math:`\prod_{k=T-1}^{0} (A_k - B_k K_k)`.
    spectral_radius : float
        Largest modulus of the eigenvalues of ``monodromy`` (< 1: stable).
    condition_numbers : ndarray, shape (T,)
        ``cond(R + B^T P B)`` of the final sweep.
    """

    gains: np.ndarray
    riccati: np.ndarray
    periods: int
    residual: float
    monodromy: np.ndarray
    spectral_radius: float
    condition_numbers: np.ndarray

    @property
    def period_steps(self) -> int:
        """Number of steps T in one period."""
        return self.gains.shape[0]

    @property
    def floquet_multipliers(self) -> np.ndarray:
        """Eigenvalues of the closed-loop monodromy, shape (N,)."""
        return np.linalg.eigvals(self.monodromy)

    def __iter__(self):
        """Unpack as python-control's ``dlqr``: ``K, S, E = result`` (gains, Riccati, Floquet multipliers)."""
        return iter((self.gains, self.riccati, self.floquet_multipliers))

    def report(self) -> str:
        """A short text summary: convergence, closed-loop stability and conditioning."""
        return (f"periodic LQR: T={self.period_steps} steps, converged in {self.periods} periods "
                f"(relative residual {self.residual:.3g}); closed-loop monodromy spectral radius "
                f"{self.spectral_radius:.6g}; max cond(R + B^T P B) {self.condition_numbers.max():.3g}")


def _monodromy(Ad, Bd, gains) -> np.ndarray:
    Phi = np.eye(Ad.shape[1])
    for k in range(Ad.shape[0]):
        Phi = (Ad[k] - Bd[k] @ gains[k]) @ Phi
    return Phi


def periodic_lqr(sys: DiscreteLTVSystem, Q, R, *, tol: float = 1e-12, max_periods: int = 10_000,
                 cond_limit: float = DEFAULT_COND_LIMIT) -> PeriodicLQR:
    r"""LQR of a periodic discrete system by iterating the Riccati sweep over periods.

    Starting from :math:`P = Q_w` at the end of the period, the backward
    sweep (eqs. 28-29) over one period is repeated, feeding :math:`P_0` back
    as the terminal condition, until :math:`P_0` stops changing. For a
    stabilizable and detectable periodic system this converges to the
    stabilizing periodic Riccati solution (Bittanti, Colaneri & De Nicolao
    1991); the closed-loop monodromy is then checked to be stable.

    Parameters
    ----------
    sys : DiscreteLTVSystem
        One period of the discrete system, ``Ad (T, N, N)``, ``Bd (T, N, nu)``
        (the step after ``T - 1`` is step 0 again);
        :meth:`DiscreteLTVSystem.from_arrays` wraps plain arrays.
    Q : ndarray, shape (N, N) or (T, N, N)
        State weight, symmetric positive semidefinite.
    R : ndarray, shape (nu, nu) or (T, nu, nu)
        Input weight, symmetric positive definite.
    tol : float
        Convergence threshold on the relative change of :math:`P_0` over
        one period.
    max_periods : int
        Maximum number of sweeps.
    cond_limit : float
        Threshold for the :class:`RiccatiConditioningWarning`.

    Returns
    -------
    PeriodicLQR
        Periodic gains and Riccati matrices, sweeps used, residual,
        closed-loop monodromy and its spectral radius. Unpacks as
        ``K, S, E``: gains, Riccati matrices and the closed-loop Floquet
        multipliers (eigenvalues of the monodromy).

    Raises
    ------
    RiccatiConvergenceError
        If the iteration has not converged after ``max_periods`` sweeps
        (the residual is reported), or if the closed-loop monodromy is not
        stable (the system is then not stabilizable).

    References
    ----------
    Agúndez et al. (2024), eqs. (28)-(29); S. Bittanti, P. Colaneri,
    G. De Nicolao, "The periodic Riccati equation", in *The Riccati
    Equation*, Springer (1991).

    Examples
    --------
    >>> import numpy as np
    >>> sys = DiscreteLTVSystem.from_arrays(np.full((2, 1, 1), 1.1), np.ones((2, 1, 1)))
    >>> K, S, E = periodic_lqr(sys, np.eye(1), np.eye(1))
    >>> bool(np.all(np.abs(E) < 1.0))
    True
    """
    Ad, Bd = _system_arrays(sys)
    T, N, nu = Bd.shape
    Qs = _as_stack(Q, "Q", T, (N, N))
    Rs = _as_stack(R, "R", T, (nu, nu))
    _check_weights(Qs, Rs, None)
    tol = check_positive(tol, "tol")
    if isinstance(max_periods, bool) or not isinstance(max_periods, (int, np.integer)) or max_periods < 1:
        raise ParameterError(f"max_periods must be a positive integer, got {max_periods!r}")
    cond_limit = check_positive(cond_limit, "cond_limit")
    P_end = np.array(Qs[-1])
    residual = np.inf
    for period in range(1, int(max_periods) + 1):
        gains, P, cond = _backward_sweep(Ad, Bd, Qs, Rs, P_end)
        scale = np.linalg.norm(P[0])
        residual = float(np.linalg.norm(P[0] - P_end) / scale) if scale > 0 else float(np.linalg.norm(P[0] - P_end))
        P_end = P[0]
        if residual <= tol:
            break
    else:
        raise RiccatiConvergenceError(
            f"periodic Riccati iteration did not converge in {max_periods} periods (relative residual "
            f"{residual:.3g} > tol {tol:.3g}); the system may not be stabilizable, or raise max_periods")
    # One more sweep from the converged P0 makes riccati[T] the fixed point itself.
    gains, P, cond = _backward_sweep(Ad, Bd, Qs, Rs, P_end)
    _warn_conditioning(cond, cond_limit)
    Phi = _monodromy(Ad, Bd, gains)
    rho = float(np.max(np.abs(np.linalg.eigvals(Phi))))
    if not rho < 1.0:
        raise RiccatiConvergenceError(
            f"closed-loop monodromy of the periodic LQR is not stable (spectral radius {rho:.6g} >= 1): "
            f"the periodic system is not stabilizable with these inputs, or Q does not observe the unstable modes")
    _freeze(gains, P, cond, Phi)
    return PeriodicLQR(gains, P, period, residual, Phi, rho, cond)
