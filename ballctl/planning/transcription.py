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

Both planners (:func:`~ballctl.planning.maneuver.plan_maneuver`,
:func:`~ballctl.planning.ball_plate.plan_plate_motion`) solve their transcription
with IPOPT the same way: :class:`SolverOptions` sets the solver, :func:`run_ipopt`
runs one solve, :func:`most_violated` names the worst constraint of an
:class:`NLPConstraints` and :class:`SolverReport` is the outcome.

References
----------
C.R. Hargraves, S.W. Paris, "Direct trajectory optimization using nonlinear
programming and collocation", J. Guidance 10(4) (1987) 338-342.
J.T. Betts, *Practical Methods for Optimal Control and Estimation Using
Nonlinear Programming*, 2nd ed., SIAM (2010), sections 4.5-4.7.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from .._validation import check_integer, check_positive
from ._casadi import require_casadi

__all__ = [
    "NLPConstraints",
    "SolverOptions",
    "SolverReport",
    "Transcription",
    "collocation_times",
    "dense_times",
    "hermite_simpson",
    "hermite_state",
    "most_violated",
    "quadratic_input",
    "run_ipopt",
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


def hermite_simpson(f, nodes, *, n_z: int = 0, algebraic=None, symbolic: str = "SX",
                    time_scale=1.0) -> Transcription:
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
    time_scale : float or casadi scalar
        The interval lengths are ``time_scale * diff(nodes)``: with ``nodes`` on
        ``[0, 1]`` and a symbolic duration ``T`` the same transcription serves
        every duration (the planner's re-solves). ``f`` is the derivative in
        physical time either way.

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
    h = time_scale * ca.DM(np.diff(nodes)).T
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


def dense_times(nodes, per_interval: int = 20) -> np.ndarray:
    """``per_interval`` equally spaced samples on every mesh interval (the nodes included once).

    The times at which a plan's contact force is sampled between its
    collocation points (:attr:`SolverReport.peak_friction_coefficient_required`).

    Parameters
    ----------
    nodes : ndarray, shape (N + 1,)
        Mesh nodes in s.
    per_interval : int
        Samples per interval (its start included, its end not).

    Returns
    -------
    ndarray, shape (N per_interval + 1,)
        Times in s.
    """
    nodes = np.asarray(nodes, dtype=float)
    s = np.linspace(0.0, 1.0, per_interval + 1)[:-1]
    return np.append((nodes[:-1, None] + np.diff(nodes)[:, None] * s).ravel(), nodes[-1])


@dataclass(frozen=True)
class NLPConstraints:
    """The constraints of a transcribed NLP by named group, with the bounds of the constraints and variables.

    Attributes
    ----------
    labels : tuple of str
        The name of each constraint group, in the order of ``g``.
    sizes : tuple of int
        The length of each group.
    lbg, ubg : ndarray, shape (n_g,)
        Bounds of the constraints, in the units of each constraint (``-inf``/``inf`` where free).
    lbw, ubw : ndarray, shape (n_w,)
        Simple bounds of the decision variables, in their units.
    bounds_label : str
        The name :func:`most_violated` reports when a simple bound is the most violated.
    """

    labels: tuple[str, ...]
    sizes: tuple[int, ...]
    lbg: np.ndarray
    ubg: np.ndarray
    lbw: np.ndarray
    ubw: np.ndarray
    bounds_label: str

    @classmethod
    def from_groups(cls, groups: Sequence[tuple], lbw, ubw, bounds_label: str) -> NLPConstraints:
        """Collect ``(label, expression, lower, upper)`` groups (bounds scalar or per row) into one layout.

        Parameters
        ----------
        groups : sequence of (str, casadi expression, float or array_like, float or array_like)
            The constraint groups in the order of ``g``.
        lbw, ubw : ndarray, shape (n_w,)
            Simple bounds of the decision variables.
        bounds_label : str
            Name reported when a simple bound is the most violated.

        Returns
        -------
        NLPConstraints
        """
        sizes = tuple(int(grp[1].numel()) for grp in groups)
        lbg = np.concatenate([np.broadcast_to(grp[2], (n,)) for grp, n in zip(groups, sizes)])
        ubg = np.concatenate([np.broadcast_to(grp[3], (n,)) for grp, n in zip(groups, sizes)])
        return cls(labels=tuple(grp[0] for grp in groups), sizes=sizes, lbg=lbg, ubg=ubg,
                   lbw=np.asarray(lbw, dtype=float), ubw=np.asarray(ubw, dtype=float), bounds_label=bounds_label)

    def relaxed(self, rows) -> NLPConstraints:
        """The same constraints with the rows ``rows`` left free (the diagnosis of an infeasible problem).

        Parameters
        ----------
        rows : ndarray of bool, shape (n_g,)
            The constraint rows to drop.

        Returns
        -------
        NLPConstraints
        """
        rows = np.asarray(rows, dtype=bool)
        return replace(self, lbg=np.where(rows, -np.inf, self.lbg), ubg=np.where(rows, np.inf, self.ubg))


def most_violated(g, w, constraints: NLPConstraints) -> tuple[float, str]:
    """Largest violation of an NLP's constraints and bounds, and the name of the group it falls in.

    Parameters
    ----------
    g : ndarray, shape (n_g,)
        Constraint values at the point.
    w : ndarray, shape (n_w,)
        The point.
    constraints : NLPConstraints
        The constraint groups and the bounds of ``g`` and ``w``.

    Returns
    -------
    violation : float
        In the units of the violated constraint (0 at a feasible point).
    name : str
        The group's label ("" when nothing is violated).
    """
    c = constraints
    viol = np.maximum(np.maximum(c.lbg - g, g - c.ubg), 0.0)
    worst, name, start = 0.0, "", 0
    for label, size in zip(c.labels, c.sizes):
        v = float(viol[start:start + size].max(initial=0.0))
        if v > worst:
            worst, name = v, label
        start += size
    wv = np.maximum(np.maximum(c.lbw - w, w - c.ubw), 0.0)
    if wv.size and wv.max() > worst:
        worst, name = float(wv.max()), c.bounds_label
    return worst, name


@dataclass(frozen=True, kw_only=True)
class SolverOptions:
    """How a planner runs IPOPT: limits, tolerances, output and its re-solve rounds (shared by both planners).

    Passed as ``solver=`` to :func:`~ballctl.planning.maneuver.plan_maneuver`,
    :func:`~ballctl.planning.maneuver.refine_plan` and
    :func:`~ballctl.planning.ball_plate.plan_plate_motion`.

    Attributes
    ----------
    max_iterations : int, optional
        IPOPT iterations per solve (``max_iter``), >= 1. ``None``: the planner's
        default, 1000 for :func:`~ballctl.planning.maneuver.plan_maneuver`, 3000
        for :func:`~ballctl.planning.ball_plate.plan_plate_motion`.
    max_cpu_time_s : float, optional
        CPU time of one solve in s (``max_cpu_time``), > 0. ``None``: the
        planner's default, 600 s for ``plan_maneuver``, 300 s for ``plan_plate_motion``.
    tolerance : float
        IPOPT's convergence tolerance on the scaled NLP error (``tol``, dimensionless), > 0.
    constraint_tolerance : float
        Largest constraint violation IPOPT accepts at convergence
        (``constr_viol_tol``, in the units of each constraint: m, m/s, rad...), > 0.
    print_level : int
        IPOPT's output, 0 (silent) to 12 (``print_level``).
    contact_rounds : int
        With contact constraints (``friction_coefficient``, ``min_normal_force_N``):
        how many times at most the bounds at the collocation points are tightened
        (or loosened) when the plan's contact force sampled between the points
        breaks them, and the problem re-solved, >= 0
        (:func:`~ballctl.planning.contact.update_contact_backoffs`; see the planners).
    clearance_rounds : int
        ``plan_maneuver`` with obstacles: how many times at most the obstacle
        constraints are tightened and the problem re-solved when the re-simulated
        path between the collocation points dips below the clearance margin, >= 0.
    ipopt_options : mapping
        Further IPOPT options by name, without the ``ipopt.`` prefix (e.g.
        ``{"mu_strategy": "adaptive"}``); they override the settings above.
    """

    max_iterations: int | None = None
    max_cpu_time_s: float | None = None
    tolerance: float = 1e-9
    constraint_tolerance: float = 1e-9
    print_level: int = 0
    contact_rounds: int = 4
    clearance_rounds: int = 3
    ipopt_options: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_iterations is not None:
            object.__setattr__(self, "max_iterations", check_integer(self.max_iterations, "max_iterations", minimum=1))
        if self.max_cpu_time_s is not None:
            object.__setattr__(self, "max_cpu_time_s", check_positive(self.max_cpu_time_s, "max_cpu_time_s", "s"))
        object.__setattr__(self, "tolerance", check_positive(self.tolerance, "tolerance"))
        object.__setattr__(self, "constraint_tolerance", check_positive(self.constraint_tolerance,
                                                                        "constraint_tolerance"))
        object.__setattr__(self, "print_level", check_integer(self.print_level, "print_level", minimum=0, maximum=12))
        object.__setattr__(self, "contact_rounds", check_integer(self.contact_rounds, "contact_rounds", minimum=0))
        object.__setattr__(self, "clearance_rounds", check_integer(self.clearance_rounds, "clearance_rounds",
                                                                    minimum=0))
        if not isinstance(self.ipopt_options, Mapping) or not all(isinstance(k, str) for k in self.ipopt_options):
            raise ParameterTypeError(f"ipopt_options must be a mapping of IPOPT option names (str) to values, got "
                                     f"{self.ipopt_options!r}")
        object.__setattr__(self, "ipopt_options", MappingProxyType(dict(self.ipopt_options)))

    def casadi_options(self, *, max_iterations: int, max_cpu_time_s: float) -> dict:
        """The options of ``casadi.nlpsol(..., "ipopt", ...)``, with the planner's defaults for the unset limits.

        Parameters
        ----------
        max_iterations : int
            Iterations per solve when :attr:`max_iterations` is None.
        max_cpu_time_s : float
            CPU time of one solve in s when :attr:`max_cpu_time_s` is None.

        Returns
        -------
        dict
        """
        opts = {"ipopt.print_level": self.print_level, "print_time": False, "ipopt.sb": "yes",
                "ipopt.tol": self.tolerance, "ipopt.constr_viol_tol": self.constraint_tolerance,
                "ipopt.max_iter": max_iterations if self.max_iterations is None else self.max_iterations,
                "ipopt.max_cpu_time": max_cpu_time_s if self.max_cpu_time_s is None else self.max_cpu_time_s}
        opts.update({f"ipopt.{k}": v for k, v in self.ipopt_options.items()})
        return opts


def run_ipopt(solver, w0, constraints: NLPConstraints, p) -> dict:
    """One IPOPT solve of a CasADi ``nlpsol`` from ``w0`` within the bounds of ``constraints``.

    Parameters
    ----------
    solver : casadi.Function
        From ``casadi.nlpsol`` with IPOPT.
    w0 : ndarray, shape (n_w,)
        Initial guess.
    constraints : NLPConstraints
        Bounds of the constraints and of the variables.
    p : array_like
        Values of the NLP's parameters.

    Returns
    -------
    dict
        ``w`` (the solution, shape (n_w,)), ``objective``, ``wall`` (wall time in s),
        ``iterations``, ``status`` (IPOPT's return status), ``success`` and
        ``inf_du`` (the final scaled dual infeasibility, ``nan`` if not reported).
    """
    start = time.perf_counter()
    sol = solver(x0=w0, lbx=constraints.lbw, ubx=constraints.ubw, lbg=constraints.lbg, ubg=constraints.ubg, p=p)
    wall = time.perf_counter() - start
    stats = solver.stats()
    its = stats.get("iterations", {})
    return {"w": np.asarray(sol["x"], dtype=float).ravel(), "objective": float(sol["f"]), "wall": wall,
            "iterations": int(stats.get("iter_count", 0)), "status": str(stats.get("return_status", "")),
            "success": bool(stats.get("success", False)),
            "inf_du": float(its["inf_du"][-1]) if its and its.get("inf_du") else float("nan")}


@dataclass(frozen=True)
class SolverReport:
    """Convergence report of an NLP solve (summed over continuation stages and clearance rounds).

    Attributes
    ----------
    converged : bool
        IPOPT reported success and the final constraint violation is below tolerance.
    status : str
        IPOPT's return status.
    message : str
        Human-readable outcome; names the most violated constraint when not converged.
    iterations : int
        IPOPT iterations, all stages.
    stage_iterations : tuple of int
        Iterations of each solve (continuation stages, clearance rounds).
    solve_time_s : float
        Wall time in IPOPT (all stages), s.
    build_time_s : float
        Time to build the NLP and its derivatives, s.
    objective : float
        Final cost.
    max_constraint_violation : float
        Largest violation of any constraint or bound at the returned point (defects in state units).
    dual_infeasibility : float
        IPOPT's final scaled dual infeasibility: the stationarity (KKT) residual.
    quaternion_norm_error : float
        ``max | |q| - 1 |`` over the collocation points before renormalization (ball only; 0 otherwise).
    n_variables, n_constraints : int
        NLP size.
    peak_friction_coefficient_required : float
        ``max |F_t| / N`` of the returned plan (dimensionless; ``inf`` where
        ``N <= 0``): the least friction coefficient it needs to roll without
        slipping, sampled at 20 points per mesh interval (the collocation
        points included) on the plan's collocation polynomials. ``nan`` when not computed.
    least_normal_force_N : float
        ``min N`` on the same samples, N (<= 0: the plan lifts off).
    binding_contact_constraints : tuple of str
        The contact constraints active at the returned plan: ``"friction_coefficient"``,
        ``"min_normal_force_N"``.
    """

    converged: bool
    status: str
    message: str
    iterations: int
    stage_iterations: tuple[int, ...]
    solve_time_s: float
    build_time_s: float
    objective: float
    max_constraint_violation: float
    dual_infeasibility: float
    quaternion_norm_error: float
    n_variables: int
    n_constraints: int
    peak_friction_coefficient_required: float = float("nan")
    least_normal_force_N: float = float("nan")
    binding_contact_constraints: tuple[str, ...] = ()
