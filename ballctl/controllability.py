r"""Controllability of linear time-varying systems ``Xdot = A(t) X + B(t) u``.

Three complementary tests (Agúndez et al. 2024, section 2.3 and the
nomenclature: :math:`W_c(t_0, t_1)`, :math:`\Phi(t_1, \tau)`, :math:`Q_{N-1}(t)`):

* the **controllability Gramian** (Brogan 1991, ch. 11)

  .. math::

      W_c(t_0, t_1) = \int_{t_0}^{t_1} \Phi(t_1, \tau) B(\tau) B(\tau)^T
                      \Phi(t_1, \tau)^T \, d\tau ,

  positive definite iff every state can be reached from the origin on
  :math:`[t_0, t_1]`. :func:`gramian` integrates the matrix ODE it solves,
  :math:`\dot W = A W + W A^T + B B^T`, :math:`W(t_0) = 0`;
  :func:`discrete_gramian` sums its discrete counterpart;
  :func:`transition_matrix` integrates :math:`\dot\Phi = A \Phi`, :math:`\Phi(t_0, t_0) = I`;
* the **Silverman–Meadows rank test** (Silverman & Meadows 1967):
  :math:`Q_k(t) = [B_0(t), \dots, B_k(t)]` with :math:`B_0 = B` and
  :math:`B_{j+1} = -A B_j + \dot B_j`; if :math:`\operatorname{rank} Q_{N-1}(t) = N`
  at some :math:`t` the system is controllable on every interval containing
  :math:`t` (for analytic :math:`A, B` the condition is also necessary);
* for **periodic** references, the monodromy matrix :math:`\Phi(t_0 + T, t_0)`,
  its Floquet multipliers and a PBH-like test of the pair
  (monodromy, one-period Gramian): :func:`monodromy`, :func:`periodic_controllability`.

Systems
-------
Every function takes either a sampled :class:`~ballctl.ltv.LTVSystem` or an
:class:`LTVCallables` (``A_of_t``, ``B_of_t`` and optional derivative
callables).

* Between the samples of an ``LTVSystem``, :math:`A(t)` and :math:`B(t)` are
  **cubic splines** through the samples (``scipy.interpolate.CubicSpline``,
  not-a-knot ends; periodic ends when a ``period`` is given), so Gramians and
  transition matrices carry an interpolation error :math:`O(\Delta t^4)`.
  Times must lie in ``[t[0], t[-1]]`` unless a ``period`` is given, in which
  case they are wrapped into one period.
* The time derivatives needed by the Silverman–Meadows test are, for an
  ``LTVSystem``, taken from the samples: **spectral** (trigonometric
  interpolation of the FFT) for a periodic uniformly sampled system, else a
  **local polynomial** through the :math:`k + 7` nearest samples
  (Fornberg 1988 weights, error :math:`O(\Delta t^{7 + k - m})` for the
  :math:`m`-th derivative). For callables, missing derivative callables are
  replaced by the **Cauchy integral** on a circle of radius ``time_scale / 2``
  in the complex plane (Lyness & Moler 1967) when the callables are complex
  safe, else by the local polynomial on a uniform grid of step
  ``time_scale / 20``. The method used is recorded in the report.

Periodic convention
-------------------
An ``LTVSystem`` over one period has samples ``t[0] < ... < t[K-1]``. With
``period=None`` the **last sample is the periodic copy of the first**:
``period = t[-1] - t[0]`` and ``A[-1] == A[0]``, ``B[-1] == B[0]`` (checked
to a relative 1e-6). With an explicit ``period``, either the same holds
(``t[-1] - t[0] == period``) or the samples cover ``[t[0], t[0] + period)``
without the copy (``t[-1] < t[0] + period``), the sample at ``t[0] + period``
being taken as the first one.

Rank tolerances are relative: an eigenvalue of :math:`W_c` (a singular value
of :math:`Q_k`) counts when it exceeds ``rank_rtol`` times the largest one.

References
----------
A.G. Agúndez, A. Saccon, D. García-Vallejo, E. Freire, "Dynamic inversion and
optimal tracking control on the ball-plate system based on a linearized
nonholonomic multibody model", Mech. Mach. Theory 203 (2024) 105795.

L.M. Silverman, H.E. Meadows, "Controllability and observability in
time-variable linear systems", SIAM J. Control 5 (1967) 64-73.

C. Van Loan, "Computing integrals involving the matrix exponential", IEEE
Trans. Autom. Control 23 (1978) 395-404.

B. Fornberg, "Generation of finite difference formulas on arbitrarily spaced
grids", Math. Comp. 51 (1988) 699-706.

J.N. Lyness, C.B. Moler, "Numerical differentiation of analytic functions",
SIAM J. Numer. Anal. 4 (1967) 202-210.

S. Bittanti, P. Colaneri, *Periodic Systems: Filtering and Control*,
Springer 2009, ch. 4 (reachability and the PBH test of periodic systems).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from ._errors import IntegrationError, ParameterError, ParameterTypeError, SampleIndexError, ShapeError
from ._validation import as_times, check_finite_scalar, check_positive, guard_rhs, names_tuple
from .ltv import LTVSystem

__all__ = [
    "GRAMIAN_METHODS",
    "LTVCallables",
    "GramianReport",
    "SilvermanMeadowsReport",
    "MonodromyReport",
    "PeriodicControllabilityReport",
    "transition_matrix",
    "gramian",
    "discrete_gramian",
    "silverman_meadows",
    "monodromy",
    "periodic_controllability",
]

#: Values accepted by ``gramian(method=...)``: ``"integrate"`` integrates the
#: Lyapunov ODE forward; ``"transition"`` integrates the definition backward
#: in ``tau`` together with ``Phi(t1, tau)`` (an independent cross-check).
GRAMIAN_METHODS = ("integrate", "transition")

#: Default relative rank tolerance of the Gramian: two orders above the
#: default integration tolerance ``rtol = 1e-10``.
GRAMIAN_RANK_RTOL = 1e-8
#: Default relative rank tolerance of Q_k: numerical derivatives of the
#: samples are accurate to about 1e-9 .. 1e-7 relative (see tests).
SM_RANK_RTOL = 1e-6
# Relative mismatch allowed between the periodic copy and the first sample.
_PERIODIC_COPY_RTOL = 1e-6
# Relative tolerance when comparing sample spacings / periods (rounding of linspace).
_TIME_RTOL = 1e-9
# Fourier coefficients below this fraction of the largest one (per entry) are rounding noise.
_SPECTRAL_FLOOR = 4 * np.finfo(float).eps
# Nodes of the Cauchy contour for derivatives of complex-safe callables.
_CONTOUR_NODES = 64


# ---------------------------------------------------------------- systems
@dataclass(frozen=True, kw_only=True)
class LTVCallables:
    r"""``Xdot = A(t) X + B(t) u`` given by callables of time.

    Attributes
    ----------
    A_of_t : callable
        ``A_of_t(t) -> ndarray, shape (N, N)``; ``t`` in s. Complex-safe
        (analytic in ``t``) callables get machine-precision derivatives.
    B_of_t : callable
        ``B_of_t(t) -> ndarray, shape (N, nu)``.
    A_derivatives : sequence of callable
        ``A_derivatives[i](t)`` is the ``(i+1)``-th time derivative of A;
        may be shorter than needed (or empty), the rest is numerical.
    B_derivatives : sequence of callable
        Same for B.
    state_names, input_names : sequence of str, optional
        Default ``x0..``, ``u0..``.
    t_range : (float, float)
        Times in s where the callables are valid; default the real line.
    time_scale : float
        A time in s over which A and B change appreciably: the radius of the
        Cauchy contour is ``time_scale / 2`` (callables must be analytic in
        that disc), the fallback finite-difference step ``time_scale / 20``.
    """

    A_of_t: Callable[[float], np.ndarray]
    B_of_t: Callable[[float], np.ndarray]
    A_derivatives: Sequence[Callable[[float], np.ndarray]] = ()
    B_derivatives: Sequence[Callable[[float], np.ndarray]] = ()
    state_names: Sequence[str] | None = None
    input_names: Sequence[str] | None = None
    t_range: tuple[float, float] = (-np.inf, np.inf)
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not callable(self.A_of_t) or not callable(self.B_of_t):
            raise ParameterTypeError("A_of_t and B_of_t must be callables of time t in s")
        lo, hi = (float(v) for v in self.t_range)
        if np.isnan(lo) or np.isnan(hi) or not lo < hi:
            raise ParameterError(f"t_range must be (low, high) with low < high, got {self.t_range!r}")
        check_positive(self.time_scale, "time_scale", "s")
        t_ref = 0.0 if not (np.isfinite(lo) and np.isfinite(hi)) else 0.5 * (lo + hi)
        t_ref = min(max(t_ref, lo), hi)
        A = np.asarray(self.A_of_t(t_ref), dtype=float)
        B = np.asarray(self.B_of_t(t_ref), dtype=float)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ShapeError(f"A_of_t must return shape (N, N), got {A.shape}")
        if B.ndim != 2 or B.shape[0] != A.shape[0]:
            raise ShapeError(f"B_of_t must return shape (N, nu) = ({A.shape[0]}, nu), got {B.shape}")
        for name, seq in (("A_derivatives", self.A_derivatives), ("B_derivatives", self.B_derivatives)):
            if not all(callable(f) for f in seq):
                raise ParameterTypeError(f"{name} must be a sequence of callables")
        object.__setattr__(self, "A_derivatives", tuple(self.A_derivatives))
        object.__setattr__(self, "B_derivatives", tuple(self.B_derivatives))
        object.__setattr__(self, "t_range", (lo, hi))
        object.__setattr__(self, "state_names", names_tuple(self.state_names, A.shape[0], "x", "state_names"))
        object.__setattr__(self, "input_names", names_tuple(self.input_names, B.shape[1], "u", "input_names"))

    @property
    def n_states(self) -> int:
        return len(self.state_names)

    @property
    def n_inputs(self) -> int:
        return len(self.input_names)


def _fornberg_weights(z: float, x: np.ndarray, m: int) -> np.ndarray:
    """Weights ``c[j, d]``: ``f^(d)(z) ~ sum_j c[j, d] f(x[j])`` for d <= m (Fornberg 1988)."""
    n = x.shape[0]
    c = np.zeros((n, m + 1))
    c1 = 1.0
    c4 = x[0] - z
    c[0, 0] = 1.0
    for i in range(1, n):
        mn = min(i, m)
        c2 = 1.0
        c5 = c4
        c4 = x[i] - z
        for j in range(i):
            c3 = x[i] - x[j]
            c2 *= c3
            if j == i - 1:
                for d in range(mn, 0, -1):
                    c[i, d] = c1 * (d * c[i - 1, d - 1] - c5 * c[i - 1, d]) / c2
                c[i, 0] = -c1 * c5 * c[i - 1, 0] / c2
            for d in range(mn, 0, -1):
                c[j, d] = (c4 * c[j, d] - d * c[j, d - 1]) / c3
            c[j, 0] = c4 * c[j, 0] / c3
        c1 = c2
    return c


def _local_polynomial_derivatives(t_nodes: np.ndarray, values: np.ndarray, times: np.ndarray,
                                  order: int, stencil: int, stride: int = 1) -> np.ndarray:
    """Derivatives 0..order at ``times`` of the polynomial through ``stencil`` nearby nodes.

    The nodes are every ``stride``-th node around each time. ``values`` has
    shape (K, P); returns (order+1, T, P).
    """
    K = t_nodes.shape[0]
    stride = max(1, min(stride, (K - 1) // max(stencil - 1, 1)))
    S = min(stencil, (K - 1) // stride + 1)
    width = (S - 1) * stride
    out = np.empty((order + 1, times.shape[0], values.shape[1]))
    for i, t in enumerate(times):
        i0 = int(np.clip(np.searchsorted(t_nodes, t) - width // 2, 0, K - 1 - width))
        idx = i0 + stride * np.arange(S)
        nodes = t_nodes[idx]
        h = float(np.mean(np.diff(nodes))) if S > 1 else 1.0
        w = _fornberg_weights(0.0, (nodes - t) / h, order)           # (S, order+1), unit step
        w = w / h ** np.arange(order + 1)
        base = values[idx[S // 2]]                  # differencing first makes constant entries exact
        out[:, i, :] = w.T @ (values[idx] - base)
        out[0, i, :] += base
    return out


class _Coefficients:
    """A(t), B(t) and their derivatives, built once from an LTVSystem or LTVCallables."""

    def __init__(self, system, period: float | None, *, require_period: bool = False) -> None:
        if isinstance(system, LTVSystem):
            self._init_samples(system, period, require_period)
        elif isinstance(system, LTVCallables):
            self._init_callables(system, period, require_period)
        else:
            raise ParameterTypeError(f"system must be an LTVSystem or LTVCallables, got {type(system).__name__}")

    # -- construction
    def _init_samples(self, ltv: LTVSystem, period, require_period) -> None:
        self.kind = "samples"
        self.state_names, self.input_names = ltv.state_names, ltv.input_names
        self.N, self.nu = ltv.n_states, ltv.n_inputs
        t, A, B = ltv.t, ltv.A, ltv.B
        K = t.shape[0]
        if K < 2:
            raise ParameterError(f"system must have at least 2 samples, got {K}")
        span = float(t[-1] - t[0])
        if period is None and require_period:
            period = span
        self.t0 = float(t[0])
        flat = np.concatenate([A.reshape(K, -1), B.reshape(K, -1)], axis=1)
        scale = max(float(np.max(np.abs(flat))), 1e-300)
        if period is None:
            self.period = None
            self.t_range = (float(t[0]), float(t[-1]))
            self._spline = CubicSpline(t, flat, axis=0, bc_type="not-a-knot")
            self._nodes, self._values, self._spectral = t, flat, None
            self.interpolation = f"cubic spline through {K} samples"
            self.derivative_method = (f"local polynomial through the nearest samples (Fornberg weights), "
                                      f"{K} samples, non-periodic")
            return
        period = check_positive(period, "period", "s")
        if abs(span - period) <= _TIME_RTOL * period:           # last sample is the periodic copy
            if np.max(np.abs(flat[-1] - flat[0])) > _PERIODIC_COPY_RTOL * scale:
                raise ParameterError(
                    f"period: the last sample (t = {t[-1]:.9g} s) should be the periodic copy of the first, "
                    f"but A/B differ by {np.max(np.abs(flat[-1] - flat[0])):.3g} (relative tolerance "
                    f"{_PERIODIC_COPY_RTOL:g}); pass period explicitly if the samples do not include the copy")
            t_one, flat_one = t[:-1], flat[:-1]
        elif span < period:
            t_one, flat_one = t, flat
        else:
            raise ParameterError(f"period = {period:.9g} s is shorter than the span of the samples "
                             f"t[-1] - t[0] = {span:.9g} s")
        self.period = period
        self.t_range = (-np.inf, np.inf)
        K1 = t_one.shape[0]
        t_ext = np.append(t_one, t_one[0] + period)
        flat_ext = np.concatenate([flat_one, flat_one[:1]], axis=0)
        self._spline = CubicSpline(t_ext, flat_ext, axis=0, bc_type="periodic")
        self.interpolation = f"periodic cubic spline through {K1} samples per period"
        dt = period / K1
        uniform = np.all(np.abs(np.diff(t_ext) - dt) <= _TIME_RTOL * period)
        if uniform and K1 >= 3:
            self._spectral = np.fft.rfft(flat_one, axis=0)            # (K1//2+1, P)
            weights = np.full(self._spectral.shape[0], 2.0)
            weights[0] = 1.0
            if K1 % 2 == 0:
                weights[-1] = 1.0
            self._spectral = self._spectral * (weights / K1)[:, None]
            # drop coefficients at the rounding floor: differentiation would amplify their noise by k^m
            # (the floor is the larger of a few ulps and 8x the median magnitude of the upper
            # three quarters of the harmonics, which holds only noise for a resolved smooth signal)
            mag = np.abs(self._spectral)
            floor = np.maximum(_SPECTRAL_FLOOR * np.max(mag, axis=0, keepdims=True),
                               8.0 * np.median(mag[mag.shape[0] // 4:], axis=0, keepdims=True))
            self._spectral = np.where(np.abs(self._spectral) > floor, self._spectral, 0.0)
            self._harmonics = 2.0 * np.pi / period * np.arange(self._spectral.shape[0])
            self.derivative_method = f"spectral (FFT of {K1} uniform samples per period)"
        else:
            self._spectral = None
            # nodes wrapped over three periods so stencils never run off the ends
            self._nodes = np.concatenate([t_one - period, t_one, t_one + period])
            self._values = np.concatenate([flat_one] * 3, axis=0)
            self.derivative_method = (f"local polynomial through the nearest samples (Fornberg weights), "
                                      f"{K1} non-uniform samples per period, periodic")

    def _init_callables(self, sys_: LTVCallables, period, require_period) -> None:
        self.kind = "callables"
        self.state_names, self.input_names = sys_.state_names, sys_.input_names
        self.N, self.nu = sys_.n_states, sys_.n_inputs
        self.sys = sys_
        self.t_range = sys_.t_range
        self.t0 = sys_.t_range[0] if np.isfinite(sys_.t_range[0]) else 0.0
        if period is None and require_period:
            raise ParameterError("period is required (in s) for a system given by callables")
        self.period = None if period is None else check_positive(period, "period", "s")
        self.interpolation = "callables"
        self._complex_safe = {id(f): self._probe_complex(f) for f in (sys_.A_of_t, sys_.B_of_t)}
        nA, nB = len(sys_.A_derivatives), len(sys_.B_derivatives)
        how = {True: "Cauchy contour integral (complex evaluation, radius time_scale/2)",
               False: "local polynomial on a uniform grid of step time_scale/20 (not complex safe)"}
        self.derivative_method = (f"callables: {nA} derivative callable(s) of A, {nB} of B; higher orders of "
                                  f"A by {how[self._complex_safe[id(sys_.A_of_t)]]}, of B by "
                                  f"{how[self._complex_safe[id(sys_.B_of_t)]]}")

    def _probe_complex(self, f) -> bool:
        t = 0.5 * (self.t_range[0] + self.t_range[1]) if np.all(np.isfinite(self.t_range)) else 0.0
        try:
            with np.errstate(all="ignore"):
                val = np.asarray(f(t + 1e-3j))
        except (TypeError, ValueError):
            return False
        return bool(np.iscomplexobj(val))

    # -- evaluation
    def check_times(self, times: np.ndarray, name: str) -> None:
        lo, hi = self.t_range
        tol = _TIME_RTOL * max(1.0, abs(lo) if np.isfinite(lo) else 1.0, abs(hi) if np.isfinite(hi) else 1.0)
        bad = times[(times < lo - tol) | (times > hi + tol)]
        if bad.size:
            raise ParameterError(f"{name} = {bad[0]:.9g} s lies outside the system's time range "
                             f"[{lo:.9g}, {hi:.9g}] s (give a period to wrap periodic systems)")

    def AB(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """A(t) (N, N) and B(t) (N, nu)."""
        if self.kind == "callables":
            return (np.asarray(self.sys.A_of_t(t), dtype=float).reshape(self.N, self.N),
                    np.asarray(self.sys.B_of_t(t), dtype=float).reshape(self.N, self.nu))
        tt = t
        if self.period is not None:
            tt = self.t0 + (t - self.t0) % self.period
        else:
            tt = min(max(t, self.t_range[0]), self.t_range[1])
        v = self._spline(tt)
        NN = self.N * self.N
        return v[:NN].reshape(self.N, self.N), v[NN:].reshape(self.N, self.nu)

    def derivatives(self, times: np.ndarray, order: int, stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """``(dA, dB)``: ``dA[m]`` = m-th derivative of A at ``times``, shapes (order+1, T, N, N/nu)."""
        T = times.shape[0]
        NN = self.N * self.N
        if self.kind == "samples":
            if self._spectral is not None:
                tau = (times - self.t0)[:, None] * self._harmonics[None, :]           # (T, M)
                phase = np.exp(1j * tau)
                flat = np.empty((order + 1, T, self._spectral.shape[1]))
                for m in range(order + 1):
                    coef = self._spectral * ((1j * self._harmonics) ** m)[:, None]
                    flat[m] = (phase @ coef).real
            else:
                tt = times
                if self.period is not None:
                    tt = self.t0 + (times - self.t0) % self.period
                flat = _local_polynomial_derivatives(self._nodes, self._values, tt, order, order + 7, stride)
            dA = flat[..., :NN].reshape(order + 1, T, self.N, self.N)
            dB = flat[..., NN:].reshape(order + 1, T, self.N, self.nu)
            return dA, dB
        dA = self._callable_derivatives(self.sys.A_of_t, self.sys.A_derivatives, times, order, (self.N, self.N))
        dB = self._callable_derivatives(self.sys.B_of_t, self.sys.B_derivatives, times, order, (self.N, self.nu))
        return dA, dB

    def _callable_derivatives(self, f, given, times, order, shape) -> np.ndarray:
        out = np.empty((order + 1, times.shape[0]) + shape)
        for i, t in enumerate(times):
            out[0, i] = np.asarray(f(t), dtype=float).reshape(shape)
            for m in range(1, min(order, len(given)) + 1):
                out[m, i] = np.asarray(given[m - 1](t), dtype=float).reshape(shape)
        if order <= len(given):
            return out
        ts = self.sys.time_scale
        for i, t in enumerate(times):
            if self._complex_safe[id(f)]:
                r = 0.5 * ts
                theta = 2.0 * np.pi * np.arange(_CONTOUR_NODES) / _CONTOUR_NODES
                vals = np.stack([np.asarray(f(t + r * np.exp(1j * th))).reshape(shape) for th in theta])
                for m in range(len(given) + 1, order + 1):
                    kernel = np.exp(-1j * m * theta)
                    out[m, i] = (math.factorial(m) / (_CONTOUR_NODES * r ** m)
                                 * np.tensordot(kernel, vals, axes=(0, 0))).real
            else:
                S = order + 7
                h = ts / 20.0
                nodes = t + h * (np.arange(S) - (S - 1) / 2.0)
                vals = np.stack([np.asarray(f(s), dtype=float).reshape(-1) for s in nodes])
                d = _local_polynomial_derivatives(nodes, vals, np.array([t]), order, S)
                for m in range(len(given) + 1, order + 1):
                    out[m, i] = d[m, 0].reshape(shape)
        return out


def _check_interval(coef: _Coefficients, t0, t1, *, allow_reverse: bool = False) -> tuple[float, float]:
    t0 = check_finite_scalar(t0, "t0")
    t1 = check_finite_scalar(t1, "t1")
    if not allow_reverse and t1 <= t0:
        raise ParameterError(f"t1 must be > t0, got t0 = {t0!r} s, t1 = {t1!r} s")
    coef.check_times(np.array([t0]), "t0")
    coef.check_times(np.array([t1]), "t1")
    return t0, t1


def _integrate(rhs, t_span, y0, rtol, atol, what: str) -> np.ndarray:
    sol = solve_ivp(guard_rhs(rhs, context=f"integration of the {what}"), t_span, y0, method="DOP853",
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise IntegrationError(f"integration of the {what} failed at t = {sol.t[-1]:.6g} s: {sol.message}",
                               time=float(sol.t[-1]))
    return sol.y[:, -1]


def _named(vec: np.ndarray, names: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """Unit vector as (state, weight) pairs sorted by |weight|, largest weight made positive."""
    v = np.asarray(vec, dtype=float)
    norm = np.linalg.norm(v)
    if norm > 0:
        v = v / norm
    order = np.argsort(-np.abs(v), kind="stable")
    if v.size and v[order[0]] < 0:
        v = -v
    return tuple((names[i], float(v[i])) for i in order)


def _fmt_direction(pairs, count: int = 3) -> str:
    return ", ".join(f"{n} {w:+.3f}" for n, w in pairs[:count])


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
    coef = _Coefficients(system, period)
    t0, t1 = _check_interval(coef, t0, t1, allow_reverse=True)
    N = coef.N
    if t1 == t0:
        return np.eye(N)

    def rhs(t, y):
        A, _ = coef.AB(t)
        return (A @ y.reshape(N, N)).ravel()

    return _integrate(rhs, (t0, t1), np.eye(N).ravel(), rtol, atol, "transition matrix").reshape(N, N)


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
        Number of eigenvalues above ``rank_rtol * eigenvalues[-1]``.
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

    @property
    def n_states(self) -> int:
        return self.W.shape[0]

    @property
    def controllable(self) -> bool:
        """True when ``W`` has full rank."""
        return self.rank == self.n_states

    @property
    def least_controllable(self) -> tuple:
        """Directions of the eigenvalues below the tolerance, or the smallest one if none."""
        return self.directions[:max(self.n_states - self.rank, 1)]

    def to_table(self, *, weights: int = 3) -> str:
        """Plain-text table: eigenvalues ascending with their largest state weights."""
        lines = [f"Controllability Gramian W_c({self.t0:.6g}, {self.t1:.6g}) [{self.method}]",
                 f"rank {self.rank} of {self.n_states} (eigenvalues > {self.rank_rtol:g} * max), "
                 f"condition number {self.condition_number:.4g}",
                 f"{'#':>3}  {'eigenvalue':>12}  {'':3}  direction (largest |weight| first)"]
        tol = self.rank_rtol * max(self.eigenvalues[-1], 0.0)
        for i, (lam, pairs) in enumerate(zip(self.eigenvalues, self.directions)):
            flag = "  *" if lam <= tol else "   "
            lines.append(f"{i:>3}  {lam:>12.4e}  {flag}  {_fmt_direction(pairs, weights)}")
        lines.append("(* below the rank tolerance: uncontrollable direction)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def _gramian_report(W: np.ndarray, names, t0, t1, method, rank_rtol) -> GramianReport:
    W = 0.5 * (W + W.T)
    lam, V = np.linalg.eigh(W)
    lam_max = max(float(lam[-1]), 0.0)
    rank = int(np.sum(lam > rank_rtol * lam_max)) if lam_max > 0 else 0
    cond = float(lam[-1] / lam[0]) if lam[0] > 0 else float("inf")
    for arr in (W, lam, V):
        arr.setflags(write=False)
    directions = tuple(_named(V[:, i], names) for i in range(V.shape[1]))
    return GramianReport(W, lam, V, cond, rank, float(rank_rtol), directions, tuple(names),
                         float(t0), float(t1), method)


def _check_rtol(value, name: str) -> float:
    out = check_finite_scalar(value, name)
    if not 0.0 < out < 1.0:
        raise ParameterError(f"{name} must lie in (0, 1), got {value!r}")
    return out


def gramian(system: LTVSystem | LTVCallables, t0: float, t1: float, *, method: str = "integrate",
            period: float | None = None, rank_rtol: float = GRAMIAN_RANK_RTOL,
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
        Relative rank tolerance on the eigenvalues (default 1e-8).
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
    rank_rtol = _check_rtol(rank_rtol, "rank_rtol")
    coef = _Coefficients(system, period)
    t0, t1 = _check_interval(coef, t0, t1)
    N = coef.N
    if method == "integrate":
        def rhs(t, y):
            A, B = coef.AB(t)
            W = y.reshape(N, N)
            AW = A @ W
            return (AW + AW.T + B @ B.T).ravel()

        W = _integrate(rhs, (t0, t1), np.zeros(N * N), rtol, atol, "Gramian").reshape(N, N)
    else:
        def rhs(tau, y):
            A, B = coef.AB(tau)
            Psi = y[:N * N].reshape(N, N)
            PB = Psi @ B
            return np.concatenate([-(Psi @ A).ravel(), -(PB @ PB.T).ravel()])

        y0 = np.concatenate([np.eye(N).ravel(), np.zeros(N * N)])
        W = _integrate(rhs, (t1, t0), y0, rtol, atol, "Gramian")[N * N:].reshape(N, N)
    return _gramian_report(W, coef.state_names, t0, t1, method, rank_rtol)


def discrete_gramian(Ad, Bd=None, *, state_names: Sequence[str] | None = None,
                     rank_rtol: float = GRAMIAN_RANK_RTOL) -> GramianReport:
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
    Ad : ndarray, shape (K, N, N), or DiscreteLTVSystem
        Discrete state matrices, or an object with ``Ad``, ``Bd``, ``state_names``.
    Bd : ndarray, shape (K, N, nu)
        Discrete input matrices (``None`` when ``Ad`` is a system).
    state_names : sequence of str, optional
        Names of the states (default the system's, else ``x0..``).
    rank_rtol : float
        Relative rank tolerance on the eigenvalues.

    Returns
    -------
    GramianReport
        With ``t0 = 0`` and ``t1 = K`` (steps) and ``method = "discrete"``.

    Examples
    --------
    >>> import numpy as np
    >>> rep = discrete_gramian(np.ones((2, 1, 1)), np.ones((2, 1, 1)))
    >>> rep.W
    array([[2.]])
    """
    if Bd is None:
        if not (hasattr(Ad, "Ad") and hasattr(Ad, "Bd")):
            raise ParameterError("Bd is required unless Ad is a discrete system with Ad and Bd attributes")
        if state_names is None:
            state_names = getattr(Ad, "state_names", None)
        Ad, Bd = Ad.Ad, Ad.Bd
    Ad = np.asarray(Ad, dtype=float)
    Bd = np.asarray(Bd, dtype=float)
    if Ad.ndim != 3 or Ad.shape[1] != Ad.shape[2]:
        raise ShapeError(f"Ad must have shape (K, N, N), got {Ad.shape}")
    if Bd.ndim != 3 or Bd.shape[:2] != Ad.shape[:2]:
        raise ShapeError(f"Bd must have shape (K, N, nu) = ({Ad.shape[0]}, {Ad.shape[1]}, nu), got {Bd.shape}")
    if Ad.shape[0] < 1:
        raise ParameterError("Ad must hold at least one step")
    if not (np.all(np.isfinite(Ad)) and np.all(np.isfinite(Bd))):
        raise ParameterError("Ad and Bd must be finite")
    rank_rtol = _check_rtol(rank_rtol, "rank_rtol")
    names = names_tuple(state_names, Ad.shape[1], "x", "state_names")
    W = np.zeros(Ad.shape[1:])
    for A_k, B_k in zip(Ad, Bd):
        W = A_k @ W @ A_k.T + B_k @ B_k.T
    return _gramian_report(W, names, 0.0, float(Ad.shape[0]), "discrete", rank_rtol)


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
        """Left null directions of ``Q[i]`` (``v^T Q = 0``) as ``((state, weight), ...)`` tuples."""
        if not -len(self.times) <= i < len(self.times):
            raise SampleIndexError(f"time index {i} out of range for {len(self.times)} times")
        U = self.left_singular_vectors[i]
        return tuple(_named(U[:, j], self.state_names) for j in range(int(self.ranks[i]), self.n_states))

    def to_table(self, *, weights: int = 3) -> str:
        """Plain-text table: rank, extreme singular values and null directions per time."""
        lines = [f"Silverman-Meadows test, Q_{self.order} = [B_0 .. B_{self.order}], N = {self.n_states} "
                 f"(rank tolerance {self.rank_rtol:g} * max singular value)",
                 f"derivatives: {self.derivative_method}",
                 f"{'t [s]':>12}  {'rank':>4}  {'s_max':>10}  {'s_min':>10}  uncontrollable directions"]
        for i, t in enumerate(self.times):
            dirs = "; ".join("(" + _fmt_direction(p, weights) + ")" for p in self.uncontrollable_directions(i))
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
    coef = _Coefficients(system, period)
    times = as_times(times, "times")
    if times.size == 0:
        raise ParameterError("times must hold at least one time in s")
    coef.check_times(times, "times")
    if order is None:
        order = coef.N - 1
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ParameterError(f"order must be a non-negative integer, got {order!r}")
    order = int(order)
    rank_rtol = _check_rtol(rank_rtol, "rank_rtol")
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
    period : float
        T in s.
    state_names : tuple of str
    """

    matrix: np.ndarray
    multipliers: np.ndarray
    exponents: np.ndarray
    left_eigenvectors: np.ndarray
    t0: float
    period: float
    state_names: tuple[str, ...]

    @property
    def spectral_radius(self) -> float:
        return float(np.max(np.abs(self.multipliers)))

    @property
    def stable(self) -> bool:
        """True when every multiplier lies strictly inside the unit circle."""
        return self.spectral_radius < 1.0

    def to_table(self) -> str:
        lines = [f"Monodromy over [{self.t0:.6g}, {self.t0 + self.period:.6g}] s (period {self.period:.6g} s), "
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
        coef = _Coefficients(system, period, require_period=True)
        return coef, coef.t0, coef.period
    coef = _Coefficients(system, period, require_period=True)
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

    M = _integrate(rhs, (t0, t0 + T), np.eye(N).ravel(), rtol, atol, "monodromy").reshape(N, N)
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
                         f"{self.modal_controllability[i]:>14.4e}  {_fmt_direction(_named(v_real, names))}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def periodic_controllability(system: LTVSystem | LTVCallables, period: float | None = None, *,
                             rank_rtol: float = GRAMIAN_RANK_RTOL, rtol: float = 1e-10,
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
    rank_rtol = _check_rtol(rank_rtol, "rank_rtol")
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
