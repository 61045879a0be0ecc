r"""The common interface of constrained multibody systems.

Every plant in ballctl, and any system a user writes, is described by the
index-3 differential-algebraic equations of Agúndez et al. (2024), eqs. (1)-(4):

.. math::

    M(x, u)\,\ddot x + D(x)^T \Lambda = Q(x, \dot x, u), \qquad
    C(x) = 0 \;(m), \qquad B(x)\,\dot x = 0 \;(l), \qquad
    D = \begin{pmatrix} C_x \\ B \end{pmatrix}.

The contract a system must honour (the numbered rules in the spirit of
scipy's ``OdeSolver``):

1. ``mass_matrix(x, u)`` returns ``(n, n)``, symmetric, positive definite on
   the null space of ``D(x)``.
2. ``forces(x, xd, u)`` returns ``(n,)``: every applied, gravity and
   quadratic-velocity force, *not* the constraint reactions.
3. ``holonomic(x)`` returns ``(m,)`` (``None`` allowed when ``m == 0``).
4. ``constraint_jacobian(x)`` returns ``(m + l, n)``, holonomic rows
   ``C_x`` first, then the nonholonomic ``B``; full row rank.
5. Constraints are scleronomic and do not depend on ``u``.
6. Every callable is complex-step safe: evaluated with complex ``x``, ``xd``
   or ``u`` it returns the analytic continuation (use ``np.sin``/``np.cos``,
   build arrays with a dtype from the arguments; no ``abs``, ``sign``,
   ``conj``, ``np.real`` and no casts to ``float``). A callable that is not
   complex-safe still works: derivatives then fall back to central
   differences, and the linearizer reports it.
7. Units are SI; angles in radians.
8. Batch axis: when the attribute ``batched`` is True, every callable also
   accepts stacks, ``x`` of shape ``(K, n)`` (and ``xd (K, n)``,
   ``u (K, nu)``), and returns the per-sample results stacked along a
   leading axis, ``M (K, n, n)``, ``Q (K, n)``, ``D (K, m + l, n)``. The
   linearizer then evaluates a whole reference in one call; otherwise it
   loops over the samples. ``batched`` defaults to False for a system built
   from callables (pass ``SystemEquations(..., batched=True)`` when yours accept stacks).

Optional members the pipeline uses when present (the built-in plants have
them; :mod:`ballctl.plants.base` states the full plant contract):
``chart_margin(x)`` (positive while the angle chart is usable; a simulation
stops, or re-charts, where it reaches zero), ``rechart(x, xd)`` (the same
physical state in a fresh chart), ``name`` and ``params`` with ``as_dict()``.

The acceleration-level term :math:`\dot D(x,\dot x)\dot x` (``constraint_bias``)
is supplied analytically by our plants and, for user systems, computed as the
complex-step directional derivative of ``D`` along ``xd``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dataclasses import dataclass

import numpy as np

from ._derivatives import central_difference, directional_derivative, jacobian
from ._errors import ParameterError, ParameterTypeError, SingularMatrixError
from ._validation import names_tuple

__all__ = ["ConstrainedSystem", "SystemEquations", "check_system"]


def _dtype(*arrays) -> np.dtype:
    return np.result_type(*[np.asarray(a) for a in arrays], float)


@dataclass(frozen=True, kw_only=True)
class SystemEquations:
    """The callables of a constrained system (eqs. 1-4 of the reference below).

    Attributes
    ----------
    mass_matrix : callable
        ``M(x, u) -> (n, n)``.
    forces : callable
        ``Q(x, xd, u) -> (n,)``.
    holonomic : callable or None
        ``C(x) -> (m,)``; may be ``None`` when ``m == 0``.
    constraint_jacobian : callable
        ``D(x) -> (m + l, n)``, holonomic rows first.
    constraint_bias : callable, optional
        ``Ddot(x, xd) @ xd -> (m + l,)``. Computed by complex-step
        differentiation of ``constraint_jacobian`` when omitted.
    batched : bool, optional
        True when every callable accepts a leading batch axis (rule 8 of
        the module docstring). Defaults to the class attribute of the system (False).

    References
    ----------
    A.G. Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, eqs. (1)-(4).
    """

    mass_matrix: Callable | None = None
    forces: Callable | None = None
    holonomic: Callable | None = None
    constraint_jacobian: Callable | None = None
    constraint_bias: Callable | None = None
    batched: bool | None = None


class ConstrainedSystem:
    """A multibody system with holonomic and nonholonomic constraints.

    Parameters
    ----------
    n_coordinates : int
        Number n of generalized coordinates.
    n_holonomic : int
        Number m of holonomic constraints ``C(x) = 0``.
    n_nonholonomic : int
        Number l of nonholonomic constraints ``B(x) xd = 0``.
    n_inputs : int
        Number of inputs ``u``.
    equations : SystemEquations, optional
        The callables of eqs. (1)-(4) (required unless a subclass overrides the methods).
    coordinate_names, input_names : sequence of str, optional
        Names used in tables, partitions and plots.
    name : str, optional
        Short identifier used in reports (default ``"system"``).

    Notes
    -----
    Subclasses (the plants) override the methods :meth:`mass_matrix`,
    :meth:`forces`, :meth:`holonomic`, :meth:`constraint_jacobian` and
    :meth:`constraint_bias` and pass ``None`` for the callables.

    References
    ----------
    A.G. Agúndez, A. Saccon, D. García-Vallejo, E. Freire, "Dynamic inversion
    and optimal tracking control on the ball-plate system based on a
    linearized nonholonomic multibody model", Mech. Mach. Theory 203 (2024)
    105795, eqs. (1)-(4).

    Examples
    --------
    A particle on a circle of radius 1 (one holonomic constraint):

    >>> import numpy as np, ballctl
    >>> eqs = ballctl.SystemEquations(
    ...     mass_matrix=lambda x, u: np.eye(2),
    ...     forces=lambda x, xd, u: np.zeros(2, dtype=np.result_type(x, float)),
    ...     holonomic=lambda x: np.array([x[0]**2 + x[1]**2 - 1.0]),
    ...     constraint_jacobian=lambda x: np.array([[2 * x[0], 2 * x[1]]]))
    >>> sys = ballctl.ConstrainedSystem(n_coordinates=2, n_holonomic=1, n_nonholonomic=0, n_inputs=0,
    ...                                 equations=eqs)
    >>> xdd, lam = sys.accelerations([1.0, 0.0], [0.0, 2.0], [])
    >>> np.round(xdd, 12)
    array([-4.,  0.])
    """

    #: Coordinates of the point a closed loop tracks (its position error, divergence stop); a plant
    #: declares them (the ball-plate and the rolling ball: the contact point), a user's system may set them.
    tracked_coordinates: tuple[str, ...] = ()

    def __init__(self, *, n_coordinates: int, n_holonomic: int, n_nonholonomic: int, n_inputs: int,
                 equations: "SystemEquations | None" = None, coordinate_names: Sequence[str] | None = None,
                 input_names: Sequence[str] | None = None, name: str | None = None) -> None:
        if equations is not None and not isinstance(equations, SystemEquations):
            raise ParameterTypeError(f"equations must be a SystemEquations, got {type(equations).__name__}")
        eq = equations or SystemEquations()
        mass_matrix, forces, holonomic = eq.mass_matrix, eq.forces, eq.holonomic
        constraint_jacobian, constraint_bias, batched = eq.constraint_jacobian, eq.constraint_bias, eq.batched
        for label, value in (("n_coordinates", n_coordinates), ("n_holonomic", n_holonomic),
                             ("n_nonholonomic", n_nonholonomic), ("n_inputs", n_inputs)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
                raise ParameterError(f"{label} must be a non-negative integer, got {value!r}")
        if n_coordinates < 1:
            raise ParameterError(f"n_coordinates must be >= 1, got {n_coordinates}")
        if n_holonomic + n_nonholonomic >= n_coordinates:
            raise ParameterError(
                "n_holonomic + n_nonholonomic must be < n_coordinates (at least one degree of "
                f"freedom), got {n_holonomic} + {n_nonholonomic} >= {n_coordinates}")
        self._n = int(n_coordinates)
        self._m = int(n_holonomic)
        self._l = int(n_nonholonomic)
        self._nu = int(n_inputs)
        overridden = type(self) is not ConstrainedSystem
        missing = []
        for label, fn in (("mass_matrix", mass_matrix), ("forces", forces),
                          ("constraint_jacobian", constraint_jacobian)):
            if fn is None and not (overridden and self._overrides(label)):
                missing.append(label)
            elif fn is not None and not callable(fn):
                raise ParameterTypeError(f"{label} must be callable, got {fn!r}")
        if self._m > 0 and holonomic is None and not (overridden and self._overrides("holonomic")):
            missing.append("holonomic (required because n_holonomic > 0)")
        if missing:
            raise ParameterError("ConstrainedSystem is missing: " + ", ".join(missing))
        self._mass_matrix = mass_matrix
        self._forces = forces
        self._holonomic = holonomic
        self._constraint_jacobian = constraint_jacobian
        self._constraint_bias = constraint_bias
        if batched is not None:
            if not isinstance(batched, bool):
                raise ParameterTypeError(f"batched must be True or False, got {batched!r}")
            self.batched = batched
        if name is not None:
            if not isinstance(name, str) or not name:
                raise ParameterError(f"name must be a non-empty string, got {name!r}")
            self.name = name
        self.coordinate_names = names_tuple(coordinate_names, self._n, "x", "coordinate_names")
        self.input_names = names_tuple(input_names, self._nu, "u", "input_names")

    #: True when every callable accepts a leading batch axis (rule 8)
    batched: bool = False
    #: short identifier used in reports
    name: str = "system"

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(ConstrainedSystem, name)

    # ------------------------------------------------------------------ sizes
    @property
    def n_coordinates(self) -> int:
        """Number n of generalized coordinates."""
        return self._n

    @property
    def n_holonomic(self) -> int:
        """Number m of holonomic constraints."""
        return self._m

    @property
    def n_nonholonomic(self) -> int:
        """Number l of nonholonomic constraints."""
        return self._l

    @property
    def n_constraints(self) -> int:
        """Number m + l of rows of ``D``."""
        return self._m + self._l

    @property
    def n_inputs(self) -> int:
        """Number of inputs."""
        return self._nu

    @property
    def n_dof(self) -> int:
        """Number n - m - l of independent velocities."""
        return self._n - self._m - self._l

    @property
    def n_reduced_states(self) -> int:
        """Size N = 2(n - m) - l of the reduced linearized state (eq. 18)."""
        return 2 * (self._n - self._m) - self._l

    # ------------------------------------------------------------ callables
    def mass_matrix(self, x, u) -> np.ndarray:
        """Mass matrix ``M(x, u)``, shape (n, n).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        u : array_like, shape (..., nu), optional
            Inputs.
        """
        return np.asarray(self._mass_matrix(np.asarray(x), np.asarray(u)))

    def forces(self, x, xd, u) -> np.ndarray:
        """Generalized forces ``Q(x, xd, u)``, shape (n,), constraint reactions excluded.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        u : array_like, shape (..., nu)
            Inputs.
        """
        return np.asarray(self._forces(np.asarray(x), np.asarray(xd), np.asarray(u)))

    def holonomic(self, x) -> np.ndarray:
        """Holonomic constraints ``C(x)``, shape (m,).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        """
        if self._holonomic is None:
            return np.zeros(0, dtype=_dtype(x))
        return np.asarray(self._holonomic(np.asarray(x)))

    def constraint_jacobian(self, x) -> np.ndarray:
        """Constraint Jacobian ``D(x) = [C_x; B]``, shape (m + l, n).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        """
        return np.asarray(self._constraint_jacobian(np.asarray(x)))

    def constraint_bias(self, x, xd) -> np.ndarray:
        """Acceleration-level term ``Ddot(x, xd) @ xd``, shape (m + l,).

        Differentiating ``D(x) xd = 0`` in time gives
        ``D(x) xdd + Ddot(x, xd) xd = 0``. User systems without an analytic
        expression get the complex-step directional derivative
        ``(dD/dx . xd) xd``.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        if self._constraint_bias is not None:
            return np.asarray(self._constraint_bias(np.asarray(x), np.asarray(xd)))
        x = np.asarray(x)
        xd = np.asarray(xd)
        if np.iscomplexobj(x) or np.iscomplexobj(xd):
            # nested differentiation (the linearizer differentiates this term): a
            # fourth-order central difference along the real direction keeps it complex-safe
            h = 1e-3 / max(1.0, float(np.max(np.abs(xd.real))))
            return central_difference(self.constraint_jacobian, x, xd.real, h) @ xd
        dD, _ = directional_derivative(self.constraint_jacobian, np.asarray(x, dtype=float),
                                       np.asarray(xd, dtype=float))
        return dD @ xd

    # ------------------------------------------------------------- dynamics
    def accelerations(self, x, xd, u, *, stabilization: tuple[float, float] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        r"""Solve the index-1 system for the accelerations and multipliers.

        .. math::

            \begin{pmatrix} M & D^T \\ D & 0 \end{pmatrix}
            \begin{pmatrix} \ddot x \\ \Lambda \end{pmatrix} =
            \begin{pmatrix} Q \\ -\dot D \dot x - 2a\,D\dot x - b^2 \bar C \end{pmatrix}

        Parameters
        ----------
        x, xd : array_like, shape (n,)
            Coordinates and velocities.
        u : array_like, shape (nu,)
            Inputs.
        stabilization : (a, b), optional
            Baumgarte gains in 1/s. The velocity-level residual ``D xd`` is
            damped at rate ``2a`` and the holonomic residual ``C`` (padded
            with zeros for the nonholonomic rows) at ``b**2``. ``None``
            solves the exact index-1 equations.

        Returns
        -------
        xdd : ndarray, shape (n,)
        lam : ndarray, shape (m + l,)
        """
        x = np.asarray(x)
        xd = np.asarray(xd)
        u = np.asarray(u)
        M = self.mass_matrix(x, u)
        Q = self.forces(x, xd, u)
        D = self.constraint_jacobian(x)
        rhs_c = -self.constraint_bias(x, xd)
        if stabilization is not None:
            a, b = stabilization
            rhs_c = rhs_c - 2.0 * a * (D @ xd)
            if self._m:
                C = self.holonomic(x)
                rhs_c = rhs_c.astype(np.result_type(rhs_c, C))
                rhs_c[: self._m] -= b * b * C
        return self._solve_kkt(M, D, Q, rhs_c)

    def _solve_kkt(self, M, D, Q, rhs_c):
        n, k = self._n, self._m + self._l
        dtype = np.result_type(M, D, Q, rhs_c)
        K = np.zeros((n + k, n + k), dtype=dtype)
        K[:n, :n] = M
        K[:n, n:] = D.T
        K[n:, :n] = D
        rhs = np.concatenate([Q, rhs_c]).astype(dtype)
        try:
            sol = np.linalg.solve(K, rhs)
        except np.linalg.LinAlgError as exc:
            raise SingularMatrixError(
                "the index-1 matrix [[M, D^T], [D, 0]] is singular: M must be positive definite "
                "on the null space of D and D must have full row rank") from exc
        return sol[:n], sol[n:]

    def dynamics_residual(self, x, xd, xdd, lam, u) -> np.ndarray:
        """Residual ``M xdd + D^T lam - Q`` of eq. (1), shape (n,).

        Parameters
        ----------
        x, xd, xdd : array_like, shape (n,)
            Coordinates, velocities and accelerations.
        lam : array_like, shape (m + l,)
            Multipliers (eq. 1).
        u : array_like, shape (nu,)
            Inputs.
        """
        M = self.mass_matrix(x, u)
        D = self.constraint_jacobian(x)
        return M @ np.asarray(xdd) + D.T @ np.asarray(lam) - self.forces(x, xd, u)

    def constraint_residuals(self, x, xd) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(C(x), D(x) xd)``: position-level (m,) and velocity-level (m + l,) residuals.

        Parameters
        ----------
        x, xd : array_like, shape (n,)
            Coordinates and velocities.
        """
        return self.holonomic(x), self.constraint_jacobian(x) @ np.asarray(xd)

    def project_velocities(self, x, xd, u=None) -> np.ndarray:
        """Project ``xd`` onto ``D(x) xd = 0`` in the metric of ``M`` (kinetic-energy projection).

        Falls back to the Euclidean metric when no input is given.

        Parameters
        ----------
        x, xd : array_like, shape (n,)
            Coordinates and velocities.
        u : array_like, shape (nu,), optional
            Inputs: the metric is ``M(x, u)``; without them the Euclidean one.
        """
        x = np.asarray(x, dtype=float)
        xd = np.asarray(xd, dtype=float)
        D = self.constraint_jacobian(x)
        W = self.mass_matrix(x, u) if u is not None else np.eye(self._n)
        Winv_Dt = np.linalg.solve(W, D.T)
        corr = Winv_Dt @ np.linalg.solve(D @ Winv_Dt, D @ xd)
        return xd - corr

    def project_positions(self, x, *, tol: float = 1e-13, max_iter: int = 20) -> np.ndarray:
        """Project ``x`` onto ``C(x) = 0`` by Gauss-Newton on the minimum-norm correction.

        Parameters
        ----------
        x : array_like, shape (n,)
            Coordinates.
        tol : float
            Stop when ``max |C(x)|`` is below this (constraint units).
        max_iter : int
            Largest number of Gauss-Newton steps.
        """
        x = np.array(x, dtype=float)
        if self._m == 0:
            return x
        for _ in range(max_iter):
            C = self.holonomic(x)
            if np.max(np.abs(C)) < tol:
                break
            Cx = self.constraint_jacobian(x)[: self._m]
            x = x - Cx.T @ np.linalg.solve(Cx @ Cx.T, C)
        return x

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_coordinates={self._n}, n_holonomic={self._m}, "
                f"n_nonholonomic={self._l}, n_inputs={self._nu}, "
                f"coordinate_names={self.coordinate_names}, input_names={self.input_names})")


def check_system(system: ConstrainedSystem, x, xd, u, *, rtol: float = 1e-8) -> list[str]:
    """Check a system against the interface contract at one state.

    Collects every problem found (shapes, symmetry of ``M``, consistency of the
    holonomic rows of ``D`` with ``C_x``, of ``constraint_bias`` with ``D``, and
    complex-step safety) and returns them as a list of messages; an empty list
    means the system passed. Use it when writing a new plant.

    Parameters
    ----------
    system : ConstrainedSystem
    x, xd : array_like, shape (n,)
        A state to check at (away from singular configurations).
    u : array_like, shape (nu,)
    rtol : float
        Relative tolerance of the symmetry check.

    Returns
    -------
    list of str
    """
    problems: list[str] = []
    n, m, k, nu = system.n_coordinates, system.n_holonomic, system.n_constraints, system.n_inputs
    x = np.asarray(x, dtype=float)
    xd = np.asarray(xd, dtype=float)
    u = np.asarray(u, dtype=float)
    M = system.mass_matrix(x, u)
    Q = system.forces(x, xd, u)
    D = system.constraint_jacobian(x)
    C = system.holonomic(x)
    for label, arr, shape in (("mass_matrix", M, (n, n)), ("forces", Q, (n,)),
                              ("constraint_jacobian", D, (k, n)), ("holonomic", C, (m,))):
        if np.shape(arr) != shape:
            problems.append(f"{label} returned shape {np.shape(arr)}, expected {shape}")
    if problems:
        return problems
    if not np.allclose(M, M.T, rtol=rtol, atol=rtol * np.max(np.abs(M))):
        problems.append("mass_matrix is not symmetric")
    if np.linalg.matrix_rank(D) < k:
        problems.append(f"constraint_jacobian has rank {np.linalg.matrix_rank(D)} < {k}")
    scale = max(1.0, float(np.max(np.abs(D))))
    if m:
        Cx, used = jacobian(system.holonomic, x)
        if np.max(np.abs(Cx - D[:m])) > 1e-6 * scale:
            problems.append("the holonomic rows of constraint_jacobian differ from dC/dx")
    dD, _ = directional_derivative(system.constraint_jacobian, x, xd)
    bias = system.constraint_bias(x, xd)
    ref = dD @ xd
    if np.max(np.abs(bias - ref)) > 1e-6 * max(1.0, float(np.max(np.abs(ref)))):
        problems.append("constraint_bias differs from (dD/dx . xd) xd")
    for label, fn in (("mass_matrix", lambda z: system.mass_matrix(z, u)),
                      ("forces", lambda z: system.forces(z, xd, u)),
                      ("constraint_jacobian", system.constraint_jacobian)):
        val, used = directional_derivative(fn, x, np.ones(n))
        if used != "complex-step" and np.max(np.abs(val), initial=0.0) > 0.0:
            problems.append(f"{label} is not complex-step safe in x (central differences will be used)")
    if nu:
        val, used = directional_derivative(lambda v: system.forces(x, xd, v), u, np.ones(nu))
        if used != "complex-step" and np.max(np.abs(val), initial=0.0) > 0.0:
            problems.append("forces is not complex-step safe in u")
    return problems
