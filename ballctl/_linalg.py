"""Small dense linear algebra for the compiled kernels, analytic in the entries.

The symmetric solves below do not pivot and never conjugate, so a
complex-step perturbation of the inputs propagates as the analytic
continuation (Martins, Sturdza & Alonso 2003). :func:`inverse_stack` (real
matrices only, for the linearizer's reduced equations) pivots partially.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True)
def zero_matrix(a):
    """Set every entry of the 2-d array ``a`` to zero, in place.

    Element by element: the slice assignment ``a[:, :] = 0`` compiles
    numba's broadcasting machinery into every kernel that uses it. Not
    inlined by numba (``inline="always"`` types a copy at every call site,
    and the kernels call it at several); LLVM inlines the compiled one.
    """
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = 0.0


@njit(cache=True, inline="always")
def solve_symmetric_inplace(A, b):
    """Solve ``A z = b`` for a symmetric positive definite ``A`` by LDL^T (no pivoting).

    Parameters
    ----------
    A : ndarray, shape (k, k)
        Overwritten with its factors.
    b : ndarray, shape (k,)
        Overwritten with the solution.
    """
    k = A.shape[0]
    for j in range(k):
        for i in range(j + 1, k):
            f = A[i, j] / A[j, j]
            for c in range(j, k):
                A[i, c] -= f * A[j, c]
            b[i] -= f * b[j]
    for i in range(k - 1, -1, -1):
        s = b[i]
        for c in range(i + 1, k):
            s -= A[i, c] * b[c]
        b[i] = s / A[i, i]


@njit(cache=True)
def solve_unit_constrained(M, Q, E, r, xdd, lam):
    r"""Index-1 solve for constraints ``D = [I_c | E]`` (the first c coordinates are dependent).

    Solves ``M xdd + D^T lam = Q``, ``D xdd = r`` through the null-space
    form: with ``Z = [-E; I]``, ``(Z^T M Z) xdd_a = Q_a - M_ac r - E^T (Q_c - M_cc r)``
    (symmetric positive definite), then ``xdd_c = r - E xdd_a`` and
    ``lam = Q_c - M_cc xdd_c - M_ca xdd_a``.

    Parameters
    ----------
    M : ndarray, shape (n, n)
    Q : ndarray, shape (n,)
    E : ndarray, shape (c, n - c)
    r : ndarray, shape (c,)
    xdd : ndarray, shape (n,)
        Output accelerations.
    lam : ndarray, shape (c,)
        Output multipliers.
    """
    c = E.shape[0]
    n = M.shape[0]
    k = n - c
    dt = xdd.dtype
    # W = M_ca - M_cc E  (c x k);  A = M_aa - M_ac E - E^T W
    W = np.empty((c, k), dtype=dt)
    for i in range(c):
        for j in range(k):
            acc = M[i, c + j]
            for l in range(c):
                acc -= M[i, l] * E[l, j]
            W[i, j] = acc
    A = np.empty((k, k), dtype=dt)
    for i in range(k):
        for j in range(k):
            acc = M[c + i, c + j]
            for l in range(c):
                acc -= M[c + i, l] * E[l, j] + E[l, i] * W[l, j]
            A[i, j] = acc
    # z = Q_a - M_ac r - E^T (Q_c - M_cc r)
    t = np.empty(c, dtype=dt)
    for i in range(c):
        acc = Q[i]
        for l in range(c):
            acc -= M[i, l] * r[l]
        t[i] = acc
    z = np.empty(k, dtype=dt)
    for i in range(k):
        acc = Q[c + i]
        for l in range(c):
            acc -= M[c + i, l] * r[l] + E[l, i] * t[l]
        z[i] = acc
    solve_symmetric_inplace(A, z)
    for i in range(k):
        xdd[c + i] = z[i]
    for i in range(c):
        acc = r[i]
        for j in range(k):
            acc -= E[i, j] * z[j]
        xdd[i] = acc
    for i in range(c):
        acc = Q[i]
        for l in range(c):
            acc -= M[i, l] * xdd[l]
        for j in range(k):
            acc -= M[i, c + j] * z[j]
        lam[i] = acc


@njit(cache=True)
def inverse_stack(A):
    """Inverses of a stack of small real matrices: Gauss-Jordan with partial pivoting on ``[A | I]``.

    numpy's batched ``inv``/``solve`` call LAPACK once per matrix, which
    dominates for 2x2 to 6x6 matrices; this loop does one elimination per
    matrix for all right-hand sides at once, without the per-matrix overhead.

    Parameters
    ----------
    A : ndarray, shape (K, k, k), float64

    Returns
    -------
    inv : ndarray, shape (K, k, k)
        ``A[j]^{-1}``; NaN where ``A[j]`` is singular.
    ok : ndarray of bool, shape (K,)
        False where a pivot was exactly zero.
    """
    K, k = A.shape[0], A.shape[1]
    inv = np.empty((K, k, k))
    ok = np.ones(K, dtype=np.bool_)
    a = np.empty((k, k))
    b = np.empty((k, k))
    # element loops, not slice assignments: a slice assignment compiles numba's broadcasting (and its error
    # messages), several seconds of the first run for nothing
    for j in range(K):
        for i in range(k):
            for m in range(k):
                a[i, m] = A[j, i, m]
                b[i, m] = 0.0
            b[i, i] = 1.0
        for c in range(k):
            piv = c
            best = abs(a[c, c])
            for i in range(c + 1, k):
                v = abs(a[i, c])
                if v > best:
                    best = v
                    piv = i
            if best == 0.0:
                ok[j] = False
                break
            if piv != c:
                for m in range(k):
                    t = a[c, m]
                    a[c, m] = a[piv, m]
                    a[piv, m] = t
                    t = b[c, m]
                    b[c, m] = b[piv, m]
                    b[piv, m] = t
            for i in range(c + 1, k):
                f = a[i, c] / a[c, c]
                for m in range(c, k):
                    a[i, m] -= f * a[c, m]
                for m in range(k):
                    b[i, m] -= f * b[c, m]
        if not ok[j]:
            for i in range(k):
                for m in range(k):
                    inv[j, i, m] = np.nan
            continue
        for i in range(k - 1, -1, -1):
            for m in range(k):
                acc = b[i, m]
                for c in range(i + 1, k):
                    acc -= a[i, c] * b[c, m]
                b[i, m] = acc / a[i, i]
        for i in range(k):
            for m in range(k):
                inv[j, i, m] = b[i, m]
    return inv, ok
