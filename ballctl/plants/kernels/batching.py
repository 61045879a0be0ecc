"""Shape handling between the plant classes and the compiled kernels.

The kernels work on stacks ``(K, size)`` of one dtype (float64 or
complex128); the plant methods accept one state ``(size,)`` or any leading
batch shape ``(..., size)``. :func:`as_stacks` broadcasts the arguments,
casts them to their common dtype and flattens the leading axes;
:func:`restore` puts the leading shape back.

Every stack is a *writable* C-contiguous float64 or complex128 array (a
read-only input, e.g. a broadcast view or a frozen reference sample, is
copied): numba compiles one specialization per combination of argument
types, and the read-only flag is part of an array's type, so without this
the same kernel was compiled up to four times per dtype (once per
read-only pattern of ``x, xd, u``), about half of a first run's compile time.
"""

from __future__ import annotations

import numpy as np

from ..._errors import ShapeError

__all__ = ["as_stacks", "restore"]


def as_stacks(arrays, sizes, *, dtype=None):
    """Broadcast, cast and flatten arrays for a batch kernel.

    Parameters
    ----------
    arrays : sequence of array_like
        Each of shape ``(..., sizes[i])``.
    sizes : sequence of int
        Trailing size of each array.
    dtype : numpy dtype, optional
        Common dtype; by default ``result_type(*arrays, float)``, which is
        float64 or complex128.

    Returns
    -------
    lead : tuple
        The broadcast leading shape (``()`` for single states).
    stacks : list of ndarray
        Writable C-contiguous arrays of shape ``(K, sizes[i])`` (one numba
        specialization per dtype, see the module docstring).
    """
    arrays = [np.asarray(a) for a in arrays]
    if dtype is None and all(a.ndim == 1 and a.dtype == np.float64 and a.shape[0] == s
                             for a, s in zip(arrays, sizes)):
        # fast path: one float state (the integrators' right-hand sides)
        return (), [_writable(np.ascontiguousarray(a).reshape(1, s)) for a, s in zip(arrays, sizes)]
    if dtype is None:
        dtype = np.result_type(*arrays, float)
    dtype = np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64
    for a, s in zip(arrays, sizes):
        if a.ndim == 0 or a.shape[-1] != s:
            raise ShapeError(f"expected an array of shape (..., {s}), got {a.shape}")
    lead = np.broadcast_shapes(*[a.shape[:-1] for a in arrays])
    K = int(np.prod(lead)) if lead else 1
    stacks = [_writable(np.ascontiguousarray(np.broadcast_to(a, lead + (s,)).reshape(K, s), dtype=dtype))
              for a, s in zip(arrays, sizes)]
    return lead, stacks


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy of it when it is read-only (the same values: a kernel never writes its inputs)."""
    return a if a.flags.writeable else a.copy()


def restore(out, lead):
    """Reshape a kernel result to the caller's leading shape.

    Parameters
    ----------
    out : ndarray, shape (K, ...)
        Kernel result over the flattened samples.
    lead : tuple
        Leading shape returned by :func:`as_stacks`.
    """
    return out.reshape(lead + out.shape[1:])
