"""Derivatives of model callables to machine precision.

The complex-step derivative ``Im f(x + i h v) / h`` has no subtractive
cancellation, so ``h = 1e-30`` gives the directional derivative to rounding
error (Squire & Trapp 1998; Martins et al. 2003). It needs callables that are
analytic in their arguments (no ``abs``, ``sign``, ``conj``, ``np.real``, no
casts to float). When a callable is not complex-safe (it raises, or returns a
real array for a complex argument) we fall back to fourth-order central
differences with a step scaled to the argument, accurate to about 1e-10
relative; the fallback is recorded on the result so callers can report it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._errors import ParameterError



COMPLEX_STEP = 1e-30


def central_difference(f: Callable[[np.ndarray], np.ndarray], x, v, h: float) -> np.ndarray:
    """Fourth-order central difference of ``f`` at ``x`` along ``v`` with step ``h``.

    ``(8 (f(x + h v) - f(x - h v)) - (f(x + 2 h v) - f(x - 2 h v))) / (12 h)``; truncation error
    ``h^4 |f^(5)| / 30``. The one finite-difference stencil of ballctl: it keeps the dtype of
    ``f`` (complex in, complex out), so it also serves nested differentiation.

    Parameters
    ----------
    f : callable
        ``f(x) -> ndarray`` of any shape.
    x : ndarray
        Point (any shape that ``x + h v`` accepts, including a batch of points).
    v : ndarray
        Direction, broadcast against ``x``.
    h : float
        Step along ``v``.

    Returns
    -------
    ndarray
        With the shape of ``f(x)``.
    """
    fp1, fm1 = np.asarray(f(x + h * v)), np.asarray(f(x - h * v))
    fp2, fm2 = np.asarray(f(x + 2 * h * v)), np.asarray(f(x - 2 * h * v))
    return (8.0 * (fp1 - fm1) - (fp2 - fm2)) / (12.0 * h)


def directional_derivative(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, v: np.ndarray,
                           *, method: str = "complex-step") -> tuple[np.ndarray, str]:
    """Return ``(df/dx @ v, method_used)`` for an array-valued callable.

    Parameters
    ----------
    f : callable
        ``f(x) -> ndarray`` of any shape.
    x, v : ndarray, shape (n,)
        Point and direction. ``v`` may also be a stack ``(k, n)`` of
        directions when ``f`` evaluates a stack of points ``(k, n)``: one call
        of ``f`` then gives the ``k`` derivatives, stacked on the first axis
        (with the unit vectors, the transposed Jacobian).
    method : {"complex-step", "central"}
        Requested method; "complex-step" falls back to "central" when ``f``
        is not complex-safe.
    """
    x = np.asarray(x, dtype=float)
    v = np.asarray(v, dtype=float)
    if method == "complex-step":
        try:
            with np.errstate(all="ignore"):
                val = np.asarray(f(x + 1j * COMPLEX_STEP * v))
        except (TypeError, ValueError):
            val = None
        if val is not None and np.iscomplexobj(val):
            return val.imag / COMPLEX_STEP, "complex-step"
        method = "central"
    if method != "central":
        raise ParameterError(f"method must be 'complex-step' or 'central', got {method!r}")
    scale = max(1.0, float(np.max(np.abs(x))) if x.size else 1.0)
    vnorm = float(np.max(np.abs(v))) if v.size else 0.0
    if vnorm == 0.0:
        return np.zeros_like(np.asarray(f(x), dtype=float)), "central"
    h = 1e-3 * scale / vnorm
    return np.asarray(central_difference(f, x, v, h), dtype=float), "central"


def jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, *,
             method: str = "complex-step") -> tuple[np.ndarray, str]:
    """Return ``(J, method_used)`` with ``J[..., j] = df/dx_j``.

    The output has the shape of ``f(x)`` with one trailing axis of length
    ``len(x)`` appended.
    """
    x = np.asarray(x, dtype=float)
    cols = []
    used = method
    for j in range(x.shape[0]):
        e = np.zeros_like(x)
        e[j] = 1.0
        col, m = directional_derivative(f, x, e, method=method)
        if m != "complex-step":
            used = m
        cols.append(col)
    if not cols:
        return np.zeros(np.shape(f(x)) + (0,)), used
    return np.stack(cols, axis=-1), used
