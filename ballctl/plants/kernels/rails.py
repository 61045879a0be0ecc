r"""Compiled geometry of the closed-form rails (:mod:`ballctl.plants.rails`).

A closed-form rail is ``zeta(theta) = c + R ell(theta)`` with a plane curve
``ell`` in the first-third coordinate plane; each rail is packed into one row
of a float64 table (``Rail.kernel_row()``)::

    (kind, a, b, R[0, 0], R[0, 1], ..., R[2, 2], c[0], c[1], c[2])      length ROW_SIZE = 15

==========  =========================================  ==============================
kind        ``ell(theta)``                             rail
==========  =========================================  ==============================
0           ``(a cos theta, 0, b sin theta)``          circle (a = b), ellipse
1           ``(a sin theta, 0, b sin 2 theta)``        figure eight (b = half height / 2)
2           ``(theta, 0, 0)``                          segment (R's first column the direction)
==========  =========================================  ==============================

Rails without a row (:class:`~ballctl.plants.rails.CallableRail`, user
subclasses) are evaluated in Python and handed to the dynamics kernels as
arrays, so those kernels never depend on how the geometry was obtained.
Float64 and complex128 ``theta`` run through the same code (complex-step
safe: only ``sin``, ``cos`` and arithmetic).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ROW_SIZE", "KIND_ELLIPSE", "KIND_FIGURE_EIGHT", "KIND_SEGMENT", "rail_geometry",
           "rail_geometry_batch"]

ROW_SIZE = 15
KIND_ELLIPSE = 0
KIND_FIGURE_EIGHT = 1
KIND_SEGMENT = 2


@njit(cache=True)
def rail_geometry(theta, table, zeta, dzeta, ddzeta):
    """``zeta, zeta', zeta''`` (each ``(n, 3)``, m and m per unit of theta) of ``n`` rails at ``theta (n,)``."""
    for i in range(table.shape[0]):
        row = table[i]
        kind = int(row[0])
        a = row[1]
        b = row[2]
        th = theta[i]
        if kind == KIND_ELLIPSE:
            c = np.cos(th)
            s = np.sin(th)
            l0, l2 = a * c, b * s
            d0, d2 = -a * s, b * c
            dd0, dd2 = -a * c, -b * s
        elif kind == KIND_FIGURE_EIGHT:
            c = np.cos(th)
            s = np.sin(th)
            c2 = np.cos(2.0 * th)
            s2 = np.sin(2.0 * th)
            l0, l2 = a * s, b * s2
            d0, d2 = a * c, 2.0 * b * c2
            dd0, dd2 = -a * s, -4.0 * b * s2
        else:
            l0, l2 = th, 0.0 * th
            d0, d2 = 1.0 + 0.0 * th, 0.0 * th
            dd0, dd2 = 0.0 * th, 0.0 * th
        for j in range(3):
            r0 = row[3 + 3 * j]
            r2 = row[5 + 3 * j]
            zeta[i, j] = r0 * l0 + r2 * l2 + row[12 + j]
            dzeta[i, j] = r0 * d0 + r2 * d2
            ddzeta[i, j] = r0 * dd0 + r2 * dd2


@njit(cache=True)
def rail_geometry_batch(theta, table):
    """``rail_geometry`` over a stack ``theta (K, n)``: returns three ``(K, n, 3)`` arrays of theta's dtype."""
    K, n = theta.shape
    zeta = np.empty((K, n, 3), dtype=theta.dtype)
    dzeta = np.empty((K, n, 3), dtype=theta.dtype)
    ddzeta = np.empty((K, n, 3), dtype=theta.dtype)
    for k in range(K):
        rail_geometry(theta[k], table, zeta[k], dzeta[k], ddzeta[k])
    return zeta, dzeta, ddzeta
