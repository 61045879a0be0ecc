"""Shape handling between the plant classes and the compiled kernels.

The kernels work on stacks ``(K, size)`` of one dtype (float64 or
complex128); the plant methods accept one state ``(size,)`` or any leading
batch shape ``(..., size)``. :func:`as_stacks` broadcasts the arguments,
casts them to their common dtype and flattens the leading axes;
:func:`restore` puts the leading shape back.
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
        Contiguous arrays of shape ``(K, sizes[i])``.
    """
    arrays = [np.asarray(a) for a in arrays]
    if dtype is None and all(a.ndim == 1 and a.dtype == np.float64 and a.shape[0] == s
                             for a, s in zip(arrays, sizes)):
        # fast path: one float state (the integrators' right-hand sides)
        return (), [a.reshape(1, s) for a, s in zip(arrays, sizes)]
    if dtype is None:
        dtype = np.result_type(*arrays, float)
    dtype = np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64
    for a, s in zip(arrays, sizes):
        if a.ndim == 0 or a.shape[-1] != s:
            raise ShapeError(f"expected an array of shape (..., {s}), got {a.shape}")
    lead = np.broadcast_shapes(*[a.shape[:-1] for a in arrays])
    K = int(np.prod(lead)) if lead else 1
    stacks = [np.ascontiguousarray(np.broadcast_to(a, lead + (s,)).reshape(K, s), dtype=dtype)
              for a, s in zip(arrays, sizes)]
    return lead, stacks


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
