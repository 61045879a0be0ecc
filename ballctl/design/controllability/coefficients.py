"""Coefficients of ``Xdot = A(t) X + B(t) u``: callables or splines through samples, and their time derivatives.

See :mod:`ballctl.design.controllability` for the conventions (spline interpolation, periodic copies, derivative
methods). Also the small helpers the controllability modules share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from ..._errors import IntegrationError, ParameterError, ParameterTypeError, ShapeError
from ..._guards import guard_rhs
from ..._validation import check_finite_scalar, check_positive, names_tuple
from ...linear.ltv import LTVSystem

__all__ = ["LTVCallables"]

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


class Coefficients:
    """A(t), B(t) and their derivatives, built once from an LTVSystem or LTVCallables.

    Parameters
    ----------
    system : LTVSystem or LTVCallables
        The system.
    period : float or None
        Period in s (module docstring of :mod:`ballctl.design.controllability`).
    require_period : bool
        Raise when no period is given or implied.
    """

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
        """Raise a ValueError naming ``name`` when a time lies outside the system's range.

        Parameters
        ----------
        times : ndarray
            Times in s.
        name : str
            Argument name for the error message.
        """
        lo, hi = self.t_range
        tol = _TIME_RTOL * max(1.0, abs(lo) if np.isfinite(lo) else 1.0, abs(hi) if np.isfinite(hi) else 1.0)
        bad = times[(times < lo - tol) | (times > hi + tol)]
        if bad.size:
            raise ParameterError(f"{name} = {bad[0]:.9g} s lies outside the system's time range "
                             f"[{lo:.9g}, {hi:.9g}] s (give a period to wrap periodic systems)")

    def AB(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """A(t) (N, N) and B(t) (N, nu).

        Parameters
        ----------
        t : float
            Time in s.
        """
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
        """``(dA, dB)``: ``dA[m]`` = m-th derivative of A at ``times``, shapes (order+1, T, N, N/nu).

        Parameters
        ----------
        times : ndarray, shape (T,)
            Times in s.
        order : int
            Highest derivative.
        stride : int
            Stencil spacing in samples for local polynomials.
        """
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


def check_interval(coef: Coefficients, t0, t1, *, allow_reverse: bool = False) -> tuple[float, float]:
    """Check that ``t0``, ``t1`` (s) are finite, ordered and inside the system's time range.

    Parameters
    ----------
    coef : Coefficients
        The system's coefficients.
    t0, t1 : float
        Start and end in s.
    allow_reverse : bool
        Accept ``t1 <= t0``.

    Returns
    -------
    (float, float)
    """
    t0 = check_finite_scalar(t0, "t0")
    t1 = check_finite_scalar(t1, "t1")
    if not allow_reverse and t1 <= t0:
        raise ParameterError(f"t1 must be > t0, got t0 = {t0!r} s, t1 = {t1!r} s")
    coef.check_times(np.array([t0]), "t0")
    coef.check_times(np.array([t1]), "t1")
    return t0, t1


def integrate_matrix_ode(rhs, t_span, y0, rtol, atol, what: str) -> np.ndarray:
    """Integrate a flattened matrix ODE with DOP853 and return its final value.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, y)``.
    t_span : (float, float)
        Interval in s.
    y0 : ndarray
        Initial value.
    rtol, atol : float
        Tolerances.
    what : str
        Name used in the error message.

    Returns
    -------
    ndarray
        ``y(t_span[1])``.

    Raises
    ------
    IntegrationError
        With the time where the integrator failed.
    """
    sol = solve_ivp(guard_rhs(rhs, context=f"integration of the {what}"), t_span, y0, method="DOP853",
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise IntegrationError(f"integration of the {what} failed at t = {sol.t[-1]:.6g} s: {sol.message}",
                               time=float(sol.t[-1]))
    return sol.y[:, -1]


def named_vector(vec: np.ndarray, names: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """Unit vector as (state, weight) pairs sorted by |weight|, largest weight made positive.

    Parameters
    ----------
    vec : ndarray, shape (N,)
        A direction in state space.
    names : sequence of str
        The N state names.

    Returns
    -------
    tuple of (str, float)
    """
    v = np.asarray(vec, dtype=float)
    norm = np.linalg.norm(v)
    if norm > 0:
        v = v / norm
    order = np.argsort(-np.abs(v), kind="stable")
    if v.size and v[order[0]] < 0:
        v = -v
    return tuple((names[i], float(v[i])) for i in order)


def format_direction(pairs, count: int = 3) -> str:
    """``"name +0.123, ..."`` for the first ``count`` (state, weight) pairs.

    Parameters
    ----------
    pairs : sequence of (str, float)
        From :func:`named_vector`.
    count : int
        Pairs to show.

    Returns
    -------
    str
    """
    return ", ".join(f"{n} {w:+.3f}" for n, w in pairs[:count])
