r"""Hermite-Simpson direct collocation (separated form) of ``x_dot = f(x, u, z)``, ``h(x) = 0``.

On a mesh ``t_0 < t_1 < ... < t_N`` (not necessarily uniform, step
``h_k = t_{k+1} - t_k``) the unknowns are the states, inputs and algebraic
variables at the ``P = 2N + 1`` collocation points: the nodes and the interval
midpoints ``t_{k+1/2}``, stored point-major (time axis first, like every stack
in ballctl). Per interval the two defect equations are::

    x_{k+1/2} = (x_k + x_{k+1}) / 2 + h_k (f_k - f_{k+1}) / 8          (Hermite interpolation)
    x_{k+1}   = x_k + h_k (f_k + 4 f_{k+1/2} + f_{k+1}) / 6             (Simpson quadrature)

i.e. the 3-stage Lobatto IIIA collocation method: the state is the cubic
Hermite interpolant of ``(x_k, f_k)``, ``(x_{k+1}, f_{k+1})``, the input is the
quadratic through its three values, and the local error is ``O(h^5)``, so
the states converge at order 4 in ``h``. Algebraic variables ``z`` with
algebraic constraints ``h(x) = 0`` at every point but the first (the initial
state is fixed and consistent) turn an ODE with an invariant into a
square DAE transcription (used for the unit quaternion of the ball:
``q_dot = q Omega / 2 + mu q``, ``|q|^2 = 1``; the multiplier ``mu`` is 0 for
the exact solution and ``O(h^4)`` for the discrete one).

Integral costs use the same Simpson rule: :attr:`Transcription.quadrature_weights`.

References
----------
C.R. Hargraves, S.W. Paris, "Direct trajectory optimization using nonlinear
programming and collocation", J. Guidance 10(4) (1987) 338-342.
J.T. Betts, *Practical Methods for Optimal Control and Estimation Using
Nonlinear Programming*, 2nd ed., SIAM (2010), sections 4.5-4.7.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError
from ._casadi import require_casadi

__all__ = [
    "Transcription",
    "collocation_times",
    "hermite_simpson",
    "hermite_state",
    "most_violated",
    "quadratic_input",
    "simpson_weights",
]


def collocation_times(nodes) -> np.ndarray:
    """Nodes and midpoints in time order.

    Parameters
    ----------
    nodes : array_like, shape (N + 1,)
        Mesh nodes in s.

    Returns
    -------
    ndarray, shape (2N + 1,)
    """
    nodes = np.asarray(nodes, dtype=float)
    t = np.empty(2 * nodes.size - 1)
    t[0::2] = nodes
    t[1::2] = 0.5 * (nodes[:-1] + nodes[1:])
    return t


def simpson_weights(nodes) -> np.ndarray:
    """Composite Simpson weights on the collocation points: ``int g dt = w @ g``.

    Parameters
    ----------
    nodes : array_like, shape (N + 1,)
        Mesh nodes in s.

    Returns
    -------
    ndarray, shape (2N + 1,)
    """
    h = np.diff(np.asarray(nodes, dtype=float))
    w = np.zeros(2 * h.size + 1)
    w[0:-1:2] += h / 6.0
    w[2::2] += h / 6.0
    w[1::2] = 4.0 * h / 6.0
    return w


@dataclass(frozen=True)
class Transcription:
    """Decision variables and defects of a Hermite-Simpson transcription (built once).

    Attributes
    ----------
    nodes : ndarray, shape (N + 1,)
        Mesh nodes in s.
    times : ndarray, shape (P,)
        Collocation points (nodes and midpoints), ``P = 2N + 1``.
    quadrature_weights : ndarray, shape (P,)
        Simpson weights on ``times``.
    n_x, n_u, n_z : int
        Numbers of states, inputs and algebraic variables.
    w : casadi.SX
        All decision variables, ``vec`` of ``X``, ``U``, ``Z``.
    X, U, Z : casadi.SX, shapes (n_x, P), (n_u, P), (n_z, P)
        Symbolic states, inputs, algebraic variables (column j = point j).
    F : casadi.SX, shape (n_x, P)
        ``f`` at every point.
    defects : casadi.SX
        Interpolation and quadrature defects, then the algebraic constraints (all = 0).
    """

    nodes: np.ndarray
    times: np.ndarray
    quadrature_weights: np.ndarray
    n_x: int
    n_u: int
    n_z: int
    w: object
    X: object
    U: object
    Z: object
    F: object
    defects: object

    @property
    def n_points(self) -> int:
        """Number P of collocation points."""
        return self.times.size

    def pack(self, X, U, Z=None) -> np.ndarray:
        """Decision vector of point-major arrays.

        Parameters
        ----------
        X : array_like, shape (P, n_x)
        U : array_like, shape (P, n_u)
        Z : array_like, shape (P, n_z), optional
            Zeros by default.

        Returns
        -------
        ndarray, shape (P (n_x + n_u + n_z),)
        """
        P = self.n_points
        Z = np.zeros((P, self.n_z)) if Z is None else Z
        return np.concatenate([np.asarray(X, float).reshape(P, self.n_x).ravel(),
                               np.asarray(U, float).reshape(P, self.n_u).ravel(),
                               np.asarray(Z, float).reshape(P, self.n_z).ravel()])

    def unpack(self, w) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Point-major arrays of a decision vector.

        Parameters
        ----------
        w : array_like, shape (P (n_x + n_u + n_z),)

        Returns
        -------
        X, U, Z : ndarray, shapes (P, n_x), (P, n_u), (P, n_z)
        """
        w = np.asarray(w, dtype=float).ravel()
        P, a, b = self.n_points, self.n_x, self.n_u
        X = w[:P * a].reshape(P, a)
        U = w[P * a:P * (a + b)].reshape(P, b)
        Z = w[P * (a + b):].reshape(P, self.n_z)
        return X, U, Z


def hermite_simpson(f, nodes, *, n_z: int = 0, algebraic=None, symbolic: str = "SX") -> Transcription:
    """Build the Hermite-Simpson transcription of ``x_dot = f(x, u, z)`` on a mesh.

    Parameters
    ----------
    f : casadi.Function
        ``f(x (n_x), u (n_u), z (n_z)) -> x_dot (n_x)``.
    nodes : array_like, shape (N + 1,)
        Strictly increasing mesh nodes in s, ``N >= 1``.
    n_z : int
        Number of algebraic variables.
    algebraic : casadi.Function, optional
        ``h(x) -> (n_z)``: imposed at every point except the first.
    symbolic : {"SX", "MX"}
        CasADi expression graph: ``"SX"`` inlines ``f`` at every point (fast
        evaluation, slower to build the exact Hessian), ``"MX"`` calls the
        mapped ``f`` and its derivative functions (fast to build).

    Returns
    -------
    Transcription
    """
    ca = require_casadi()
    nodes = np.asarray(nodes, dtype=float)
    if nodes.ndim != 1 or nodes.size < 2 or np.any(np.diff(nodes) <= 0) or not np.all(np.isfinite(nodes)):
        raise ParameterError("nodes must be a strictly increasing 1-D array of at least 2 finite times in s")
    if (n_z > 0) != (algebraic is not None):
        raise ParameterError("give n_z > 0 together with the algebraic constraint function h(x)")
    n_x, n_u = f.size1_in(0), f.size1_in(1)
    N = nodes.size - 1
    P = 2 * N + 1
    if symbolic not in ("SX", "MX"):
        raise ParameterError(f"symbolic must be 'SX' or 'MX', got {symbolic!r}")
    sym = getattr(ca, symbolic)
    X = sym.sym("X", n_x, P)
    U = sym.sym("U", n_u, P)
    Z = sym.sym("Z", n_z, P)
    F = f.map(P)(X, U, Z)
    h = ca.DM(np.diff(nodes)).T
    xk, xm, xn = X[:, 0:-1:2], X[:, 1::2], X[:, 2::2]
    fk, fm, fn = F[:, 0:-1:2], F[:, 1::2], F[:, 2::2]
    H = ca.repmat(h, n_x, 1)
    mid = xm - 0.5 * (xk + xn) - H / 8.0 * (fk - fn)
    simpson = xn - xk - H / 6.0 * (fk + 4.0 * fm + fn)
    parts = [ca.vec(mid), ca.vec(simpson)]
    if n_z:
        parts.append(ca.vec(algebraic.map(P - 1)(X[:, 1:])))
    w = ca.vertcat(ca.vec(X), ca.vec(U), ca.vec(Z))  # point-major
    return Transcription(nodes=nodes, times=collocation_times(nodes), quadrature_weights=simpson_weights(nodes),
                         n_x=n_x, n_u=n_u, n_z=n_z, w=w, X=X, U=U, Z=Z, F=F, defects=ca.vertcat(*parts))


def hermite_state(nodes, X_nodes, F_nodes, t) -> np.ndarray:
    """Cubic Hermite interpolant of node states and slopes at times ``t`` (the collocation polynomial).

    Parameters
    ----------
    nodes : ndarray, shape (N + 1,)
    X_nodes, F_nodes : ndarray, shape (N + 1, n_x)
        States and their derivatives at the nodes.
    t : array_like, shape (K,)
        Times in ``[nodes[0], nodes[-1]]``, s.

    Returns
    -------
    ndarray, shape (K, n_x)
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    k = np.clip(np.searchsorted(nodes, t, side="right") - 1, 0, nodes.size - 2)
    h = (nodes[k + 1] - nodes[k])[:, None]
    s = ((t - nodes[k]) / h[:, 0])[:, None]
    h00, h10 = 2 * s ** 3 - 3 * s ** 2 + 1, s ** 3 - 2 * s ** 2 + s
    h01, h11 = -2 * s ** 3 + 3 * s ** 2, s ** 3 - s ** 2
    return h00 * X_nodes[k] + h10 * h * F_nodes[k] + h01 * X_nodes[k + 1] + h11 * h * F_nodes[k + 1]


def quadratic_input(nodes, U_points, t) -> np.ndarray:
    """The input's quadratic through its node, midpoint and node values on each interval.

    Parameters
    ----------
    nodes : ndarray, shape (N + 1,)
    U_points : ndarray, shape (2N + 1, n_u)
        Inputs at the collocation points.
    t : array_like, shape (K,)
        Times in s.

    Returns
    -------
    ndarray, shape (K, n_u)
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    k = np.clip(np.searchsorted(nodes, t, side="right") - 1, 0, nodes.size - 2)
    s = ((t - nodes[k]) / (nodes[k + 1] - nodes[k]))[:, None]
    u0, um, u1 = U_points[2 * k], U_points[2 * k + 1], U_points[2 * k + 2]
    return u0 * (2 * s - 1) * (s - 1) + um * 4 * s * (1 - s) + u1 * s * (2 * s - 1)


def most_violated(g, lbg, ubg, labels: Sequence[str], sizes: Sequence[int], w, lbw, ubw,
                  bounds_label: str) -> tuple[float, str]:
    """Largest violation of an NLP's constraints and bounds, and the name of the group it falls in.

    Parameters
    ----------
    g, lbg, ubg : ndarray, shape (n_g,)
        Constraint values at the point and their bounds.
    labels, sizes : sequence
        The constraint groups in the order of ``g``: a name and a length each.
    w, lbw, ubw : ndarray, shape (n_w,)
        The point and its simple bounds.
    bounds_label : str
        Name reported when a simple bound is the most violated.

    Returns
    -------
    violation : float
        In the units of the violated constraint (0 at a feasible point).
    name : str
        The group's label ("" when nothing is violated).
    """
    viol = np.maximum(np.maximum(lbg - g, g - ubg), 0.0)
    worst, name, start = 0.0, "", 0
    for label, size in zip(labels, sizes):
        v = float(viol[start:start + size].max(initial=0.0))
        if v > worst:
            worst, name = v, label
        start += size
    wv = np.maximum(np.maximum(lbw - w, w - ubw), 0.0)
    if wv.size and wv.max() > worst:
        worst, name = float(wv.max()), bounds_label
    return worst, name
