r"""Geometry of the closed-form rails (:mod:`ballctl.plants.rails`): the one numeric copy of their curves.

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

The formulas are written once, as plain functions of a row:
:func:`plane_curve_with` (``ell`` and its two derivatives, for a given cosine
and sine) and :func:`body_component` (``R ell``, one body axis). They use only
the cosine, the sine and arithmetic, so the same source runs

* compiled (numba) in :func:`rail_geometry`, the geometry of the dynamics
  kernels, float64 and complex128 (complex-step safe), and through it in
  :func:`rail_curve` (one rail, ``theta`` of any shape), which the rail
  classes' ``evaluate`` calls;
* on CasADi symbols in :func:`rail_curve_casadi`, the planners' symbolic
  geometry (``tests/test_rails.py`` checks it against :func:`rail_curve`).

Rails without a row (:class:`~ballctl.plants.rails.CallableRail`, user
subclasses) are evaluated in Python and handed to the dynamics kernels as
arrays, so those kernels never depend on how the geometry was obtained.
"""

from __future__ import annotations

import numpy as np

from ..._jit import njit

__all__ = ["plane_curve_with", "rail_curve", "rail_curve_casadi"]

ROW_SIZE = 15
KIND_ELLIPSE = 0
KIND_FIGURE_EIGHT = 1
KIND_SEGMENT = 2


def plane_curve_with(cos, sin):
    """The plane curves of the rail kinds, written with the given cosine and sine.

    The one copy of the curves' formulas; :func:`rail_geometry` compiles it with
    ``np.cos``/``np.sin``, :func:`rail_curve_casadi` builds it with CasADi's.

    Parameters
    ----------
    cos, sin : callable
        Elementwise cosine and sine: ``np.cos``, ``np.sin`` (numbers, numpy
        arrays, numba) or ``casadi.cos``, ``casadi.sin`` (symbols).

    Returns
    -------
    callable
        ``plane_curve(kind, a, b, theta) -> (l0, l2, d0, d2, dd0, dd2)``.
    """
    def plane_curve(kind, a, b, theta):
        """The plane curve ``ell`` of a rail row and its derivatives, first and third components.

        Parameters
        ----------
        kind : int
            :data:`KIND_ELLIPSE`, :data:`KIND_FIGURE_EIGHT` or :data:`KIND_SEGMENT` (any other value: segment).
        a, b : float
            The row's shape parameters in m (see the module docstring; unused by a segment).
        theta : scalar, ndarray or CasADi expression
            Rail parameter (rad, or m for a segment); real or complex.

        Returns
        -------
        l0, l2, d0, d2, dd0, dd2 : like ``theta``
            ``ell[0], ell[2]`` in m and their first and second derivatives in ``theta``
            (``ell[1] = 0``).
        """
        if kind == KIND_ELLIPSE:
            c = cos(theta)
            s = sin(theta)
            return a * c, b * s, -a * s, b * c, -a * c, -b * s
        if kind == KIND_FIGURE_EIGHT:
            c = cos(theta)
            s = sin(theta)
            c2 = cos(2.0 * theta)
            s2 = sin(2.0 * theta)
            return a * s, b * s2, a * c, 2.0 * b * c2, -a * s, -4.0 * b * s2
        zero = 0.0 * theta
        return theta, zero, 1.0 + zero, zero, zero, zero

    return plane_curve


def body_component(row, j, v0, v2):
    """Component ``j`` of ``R v`` for a plane vector ``v = (v0, 0, v2)`` and the rotation ``R`` of a row.

    Parameters
    ----------
    row : ndarray, shape (ROW_SIZE,)
        A rail's row.
    j : int
        Body axis, 0, 1 or 2.
    v0, v2 : scalar, ndarray or CasADi expression
        First and third components of the plane vector.

    Returns
    -------
    like ``v0``
        ``R[j, 0] v0 + R[j, 2] v2``; add ``row[12 + j]`` (the centre) for a position.
    """
    return row[3 + 3 * j] * v0 + row[5 + 3 * j] * v2


_plane_curve = njit(cache=True)(plane_curve_with(np.cos, np.sin))
_body_component = njit(cache=True)(body_component)


@njit(cache=True)
def rail_geometry(theta, table, zeta, dzeta, ddzeta):
    """``zeta, zeta', zeta''`` (each ``(n, 3)``, m and m per unit of theta) of ``n`` rails at ``theta (n,)``."""
    for i in range(table.shape[0]):
        row = table[i]
        l0, l2, d0, d2, dd0, dd2 = _plane_curve(int(row[0]), row[1], row[2], theta[i])
        for j in range(3):
            zeta[i, j] = _body_component(row, j, l0, l2) + row[12 + j]
            dzeta[i, j] = _body_component(row, j, d0, d2)
            ddzeta[i, j] = _body_component(row, j, dd0, dd2)


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


def rail_curve(theta, row):
    """``zeta, zeta', zeta''`` of one rail at ``theta`` of any shape, through the compiled :func:`rail_geometry`.

    Parameters
    ----------
    theta : array_like, shape (...)
        Rail parameter (rad, or m for a segment); complex for a complex step.
    row : ndarray, shape (ROW_SIZE,)
        The rail's row (``Rail.kernel_row()``).

    Returns
    -------
    zeta, dzeta, ddzeta : ndarray, shape (..., 3)
        Position in m (body frame, GC origin) and its first and second
        derivatives in ``theta``; complex128 for a complex ``theta``, float64 otherwise.
    """
    theta = np.asarray(theta)
    dtype = np.complex128 if np.iscomplexobj(theta) else np.float64
    flat = np.ascontiguousarray(theta, dtype=dtype).reshape(-1, 1)
    out = rail_geometry_batch(flat, np.asarray(row, dtype=np.float64).reshape(1, ROW_SIZE))
    return tuple(a.reshape(theta.shape + (3,)) for a in out)


def rail_curve_casadi(theta, row):
    """``zeta, zeta', zeta''`` of one rail at a scalar CasADi symbol: :func:`rail_curve` written symbolically.

    The same formulas (:func:`plane_curve_with` built with CasADi's cosine and
    sine, :func:`body_component`) on CasADi expressions.

    Parameters
    ----------
    theta : casadi.SX or casadi.MX
        Rail parameter (rad, or m for a segment), a scalar expression.
    row : ndarray, shape (ROW_SIZE,)
        The rail's row (``Rail.kernel_row()``).

    Returns
    -------
    zeta, dzeta, ddzeta : casadi expression, shape (3, 1)
        Position in m (body frame about the GC) and its derivatives in ``theta``.
    """
    import casadi  # the optional extra ballctl[optimal]; only the planners get here

    row = tuple(float(v) for v in np.asarray(row, dtype=np.float64).reshape(ROW_SIZE))
    l0, l2, d0, d2, dd0, dd2 = plane_curve_with(casadi.cos, casadi.sin)(int(row[0]), row[1], row[2], theta)
    return (casadi.vertcat(*(body_component(row, j, l0, l2) + row[12 + j] for j in range(3))),
            casadi.vertcat(*(body_component(row, j, d0, d2) for j in range(3))),
            casadi.vertcat(*(body_component(row, j, dd0, dd2) for j in range(3))))
