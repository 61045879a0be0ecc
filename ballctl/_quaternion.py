"""Quaternion helpers (Putkaradze & Rogers 2018, appendix 2).

Pure array functions on the last axis, so they accept a single quaternion of
shape (4,) or a stack of shape (..., 4). Everything is polynomial in the
components, hence complex-step safe. Quaternions are ``(q0, q1, q2, q3)`` with
the scalar first (eq. 2.1).

The rotation matrix of a quaternion is written once, in
:func:`rotation_entries` (plain arithmetic on the four components); it serves
numpy (:func:`quat_to_matrix`), the compiled kernels (the numba dispatcher
:data:`rotation_entries_compiled`, e.g. in
:mod:`ballctl.plants.kernels.rolling_ball`) and CasADi symbols
(:func:`ballctl.planning.symbolic.quat_to_matrix_casadi`).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


def cross(a, b) -> np.ndarray:
    """Cross product on the last axis, complex-step safe and broadcasting."""
    a = np.asarray(a)
    b = np.asarray(b)
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def hat(v) -> np.ndarray:
    """Hat map ``hat(v) @ w == cross(v, w)``; shape (..., 3) -> (..., 3, 3)."""
    v = np.asarray(v)
    zero = np.zeros_like(v[..., 0])
    return np.stack([np.stack([zero, -v[..., 2], v[..., 1]], axis=-1),
                     np.stack([v[..., 2], zero, -v[..., 0]], axis=-1),
                     np.stack([-v[..., 1], v[..., 0], zero], axis=-1)], axis=-2)


def quat_multiply(p, q) -> np.ndarray:
    """Hamilton product ``p q`` (eq. 2.7), shape (..., 4)."""
    p = np.asarray(p)
    q = np.asarray(q)
    p0, pv = p[..., :1], p[..., 1:]
    q0, qv = q[..., :1], q[..., 1:]
    scalar = p0 * q0 - np.sum(pv * qv, axis=-1, keepdims=True)
    vector = p0 * qv + q0 * pv + cross(pv, qv)
    return np.concatenate([scalar, vector], axis=-1)


def quat_conjugate(q) -> np.ndarray:
    """Conjugate ``q*`` (eq. 2.10), shape (..., 4)."""
    q = np.asarray(q)
    return np.concatenate([q[..., :1], -q[..., 1:]], axis=-1)


def rotation_entries(q0, q1, q2, q3):
    """The nine entries of ``Lambda`` (eq. 2.15), row by row, from the components of a quaternion.

    The one copy of the formula: plain arithmetic, so the components may be
    numbers (real or complex), numpy arrays (elementwise) or CasADi symbols;
    :data:`rotation_entries_compiled` is the same function compiled for the
    numba kernels. Used as written, without renormalising: for a non-unit
    quaternion the matrix is not orthogonal.

    Parameters
    ----------
    q0, q1, q2, q3 : scalar, array or CasADi expression
        The scalar part and the vector part of the quaternion (eq. 2.1).

    Returns
    -------
    tuple of 9
        ``(L00, L01, L02, L10, L11, L12, L20, L21, L22)``.
    """
    return (1 - 2 * (q2 * q2 + q3 * q3), 2 * (q1 * q2 - q0 * q3), 2 * (q1 * q3 + q0 * q2),
            2 * (q1 * q2 + q0 * q3), 1 - 2 * (q1 * q1 + q3 * q3), 2 * (q2 * q3 - q0 * q1),
            2 * (q1 * q3 - q0 * q2), 2 * (q2 * q3 + q0 * q1), 1 - 2 * (q1 * q1 + q2 * q2))


#: :func:`rotation_entries` compiled (numba, float64 and complex128) for the plant kernels
rotation_entries_compiled = njit(cache=True)(rotation_entries)


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix ``Lambda`` of a versor (eq. 2.15), shape (..., 3, 3).

    ``Lambda`` maps body-frame vectors to the spatial frame. The formula
    (:func:`rotation_entries`) is used as written, without renormalising
    ``q``: for a non-unit ``q`` the result is not orthogonal, which the
    integrators' invariant checks expose.
    """
    q = np.asarray(q)
    e = rotation_entries(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
    return np.stack([np.stack(e[3 * i:3 * i + 3], axis=-1) for i in range(3)], axis=-2)


def quat_from_matrix(matrix) -> np.ndarray:
    """Versor with non-negative scalar part for a rotation matrix, shape (4,) (Shepperd's method)."""
    R = np.asarray(matrix, dtype=float)
    trace = np.trace(R)
    candidates = np.array([trace, R[0, 0], R[1, 1], R[2, 2]])
    k = int(np.argmax(candidates))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = np.array([(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s])
    return q if q[0] >= 0 else -q
