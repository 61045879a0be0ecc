r"""What the rolling ball and the rolling disk share: point masses on rails inside a rolling body.

Two bases, one per contract of :mod:`ballctl.plants.base`:

* :class:`InternalMassesPlant`, the ODE plant (state, ``rhs``, ``simulate``,
  ``to_constrained_system``): parameter and input-mode checks, the state
  layout ``(theta (n), theta_dot (n), body state)``, the complex-step
  Jacobian of ``rhs`` and the piecewise integration between input kinks.
* :class:`InternalMassesSystem`, its generalized-coordinate form as a
  :class:`~ballctl.system.ConstrainedSystem` with coordinates
  ``(body coordinates, theta_1, ..., theta_n)``, batched and compiled. The
  Lagrangian mass matrix and forces with the rail forces as inputs, and
  the input-mode elimination, are written once per plant in its compiled
  ``system_terms`` (:mod:`ballctl.plants.kernels.rolling_ball`,
  :mod:`ballctl.plants.kernels.rolling_disk`). With ``inputs="force"`` the
  rail forces enter ``Q`` on the ``theta`` rows. With
  ``inputs="acceleration"`` the ``theta`` rows become ``theta_ddot = u``:

  .. math::

      M = \begin{pmatrix} M_{bb} & 0 \\ 0 & 1 \end{pmatrix}, \qquad
      Q = \begin{pmatrix} Q_b - M_{b\theta} u \\ u \end{pmatrix},

  which keeps ``M`` symmetric positive definite and the constraints
  scleronomic (Putkaradze & Rogers 2018, eq. 7.2 for the prescribed masses).

The dynamics are the compiled kernels of :mod:`ballctl.plants.kernels`
(float64 and complex128 through the same code); the rail geometry is
compiled for closed-form rails and evaluated in Python for a
:class:`~ballctl.plants.rails.CallableRail`, then fed to the same kernels.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.23)-(5.28), (7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import block_diag

from .._derivatives import COMPLEX_STEP, jacobian
from .._errors import ParameterError, ParameterTypeError, ShapeError
from .._guards import check_finite_at, checked_input
from .._validation import as_vector, check_bool, check_callable, check_choice, check_instance, check_positive
from ..ode import IntegrationOptions, ODETrajectory, as_integration_options, integrate_piecewise
from ..system import ConstrainedSystem
from .kernels import rails as _rail_kernels
from .kernels.batching import as_stacks, restore
from .rails import Rail

__all__ = ["PointMass", "InternalMassesPlant", "InternalMassesSystem"]

#: meanings of the input ``u`` of the internally actuated plants
INPUT_MODES = ("acceleration", "force")

_NO_TABLE = np.zeros((0, _rail_kernels.ROW_SIZE))
_FLOAT = np.dtype(np.float64)


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or a copy when it is read-only (a broadcast view): numba compiles read-only arrays as a
    separate type, so every kernel argument that varies per call is passed writable (one specialization per dtype)."""
    return a if a.flags.writeable else a.copy()


@dataclass(frozen=True, kw_only=True)
class PointMass:
    """A point mass on a rail.

    Attributes
    ----------
    mass_kg : float
        Mass in kg, > 0.
    rail : Rail
        The curve it moves along (:mod:`ballctl.plants.rails`).
    """

    mass_kg: float
    rail: Rail

    def __post_init__(self) -> None:
        object.__setattr__(self, "mass_kg", check_positive(self.mass_kg, "mass_kg", "kg"))
        if not isinstance(self.rail, Rail):
            raise ParameterTypeError(f"rail must be a ballctl.plants.rails.Rail, got {type(self.rail).__name__}")

    def as_dict(self) -> dict:
        """``{"mass_kg": ..., "rail": <the rail's repr>}`` (for files and reports)."""
        return {"mass_kg": float(self.mass_kg), "rail": repr(self.rail)}


def rail_exit_event(point_masses, radius_m: float):
    """Event of a mass on a non-periodic rail reaching the shell of the body.

    Non-periodic rails (e.g. :class:`~ballctl.plants.rails.SegmentRail`) are
    extrapolated beyond their parameter range (no end stops are modelled); a
    mass driven that far would leave the ball or disk, which the model
    cannot describe.

    Parameters
    ----------
    point_masses : sequence of PointMass
        The masses, whose rail parameters are the first entries of the state.
    radius_m : float
        Radius of the body in m.

    Returns
    -------
    callable or None
        ``event(t, x)``: ``radius_m - max |zeta_i|`` in m, negative once a mass
        is outside, with ``event.describe(t, x)`` giving the error message;
        None when every rail is periodic (those are checked over their whole
        range when the parameters are built).
    """
    open_rails = [(i, pm.rail) for i, pm in enumerate(point_masses) if not pm.rail.periodic]
    if not open_rails:
        return None

    def distances(x):
        return [float(np.linalg.norm(np.real(rail.evaluate(np.asarray(x[i]))[0]))) for i, rail in open_rails]

    def event(t, x):
        return radius_m - max(distances(x))

    def describe(t, x):
        d, k = max(zip(distances(x), range(len(open_rails))))
        i = open_rails[k][0]
        return (f"rail_input drives mass {i} out of the body at t = {t:.6g} s: at rail parameter {x[i]:.6g} its "
                f"extrapolated rail reaches {d:.6g} m from the centre (radius {radius_m:g} m); the plant models no "
                f"end stops: keep the mass on its rail")

    event.describe = describe
    return event


class InternalMassesPlant:
    """Base of ODE plants driven by ``n`` point masses on rails (ball, disk).

    Parameters
    ----------
    params : parameters dataclass
        An instance of the subclass's :attr:`parameters_type` (with
        ``mass_kg``, ``point_masses`` and ``n_masses``).
    inputs : {"acceleration", "force"}
        Meaning of ``u``: prescribed rail accelerations ``theta_ddot`` or
        generalized rail forces ``tau``.

    Notes
    -----
    The state starts with ``(theta (n), theta_dot (n))``; subclasses define
    the body part, :meth:`rhs` and :meth:`to_constrained_system`. The plant
    is an immutable description; runs live in :class:`~ballctl.ode.ODETrajectory`.
    """

    #: the parameters dataclass the subclass accepts
    parameters_type: type = object
    #: short identifier of the plant
    name: str = ""
    #: default breakpoints of :meth:`simulate` (s)
    default_breakpoints: tuple[float, ...] = ()
    #: default integration tolerances of :meth:`simulate`
    default_tolerance: float = 1e-10

    def __init__(self, params, *, inputs: str = "acceleration") -> None:
        check_instance(params, "params", self.parameters_type)
        check_choice(inputs, "inputs", INPUT_MODES)
        self.params = params
        self.inputs = inputs
        self._n = params.n_masses
        self._masses = np.array([params.mass_kg] + [pm.mass_kg for pm in params.point_masses])
        rows = [pm.rail.kernel_row() for pm in params.point_masses]
        # compiled rail geometry when every rail has a closed form; rails evaluated in Python otherwise
        self._rail_table = np.array(rows, dtype=float).reshape(self._n, _rail_kernels.ROW_SIZE) if all(
            r is not None for r in rows) else None
        self._no_geometry = np.empty((0, self._n, 3))
        self._mode = INPUT_MODES.index(inputs)

    #: the compiled kernels of the plant (a module of :mod:`ballctl.plants.kernels`)
    kernels = None

    @property
    def kernel_parameters(self) -> np.ndarray:
        """Parameters packed for :attr:`kernels` (plant-specific), shape (p,)."""
        raise NotImplementedError

    @property
    def compiled_rails(self) -> bool:
        """True when every rail's geometry is compiled (no rail evaluated in Python per call)."""
        return self._rail_table is not None

    def _external(self, t):
        """External force packed for the kernels (plant-specific)."""
        raise NotImplementedError

    def rail_geometry(self, theta):
        """``zeta, zeta', zeta''`` of every moving mass, each of shape (..., n, 3), body frame about the GC.

        Compiled for closed-form rails, evaluated in Python otherwise (the
        same numbers: see :mod:`ballctl.plants.kernels.rails`).

        Parameters
        ----------
        theta : array_like, shape (..., n)
            Rail parameters.

        Returns
        -------
        zeta, dzeta, ddzeta : ndarray, shape (..., n, 3)
            Positions in m and their first and second derivatives along the rails.
        """
        lead, (th,) = as_stacks([theta], [self._n])
        out = self._geometry(_writable(th))
        return tuple(restore(a, lead) for a in out)

    def _geometry(self, theta):
        """Rail geometry of a stack ``theta (K, n)`` of one dtype: three ``(K, n, 3)`` arrays of that dtype."""
        if self._rail_table is not None:
            return _rail_kernels.rail_geometry_batch(theta, self._rail_table)
        K = theta.shape[0]
        complex_step = np.iscomplexobj(theta)
        arrays = [np.empty((K, self._n, 3), dtype=theta.dtype) for _ in range(3)]
        for i, pm in enumerate(self.params.point_masses):
            for a, value in zip(arrays, pm.rail.evaluate(theta[:, i])):
                if complex_step and not np.iscomplexobj(value):
                    # a rail that drops the imaginary part would make complex-step derivatives silently
                    # wrong; refusing makes ballctl's differentiation fall back to central differences
                    raise ParameterTypeError(f"the rail of point mass {i} is not complex-step safe: it returned "
                                             "a real array for a complex theta")
                a[:, i, :] = value
        return tuple(arrays)

    def _call(self, kernel, t, x, u, mode: int):
        """Run a batch kernel of :attr:`kernels` on ``x (..., n_states)``, ``u (..., n)``; returns (lead, outputs)."""
        nx = self.n_states
        if (type(x) is np.ndarray and type(u) is np.ndarray and x.dtype == _FLOAT and u.dtype == _FLOAT
                and x.shape == (nx,) and u.shape == (self._n,)):
            # fast path: one float state (the integrators' right-hand sides)
            lead, xs, us = (), x.reshape(1, nx), u.reshape(1, self._n)
        else:
            lead, (xs, us) = as_stacks([x, u], [nx, self._n])
            xs, us = _writable(xs), _writable(us)
        if self._rail_table is not None:
            dummy = self._no_geometry if xs.dtype == _FLOAT else np.empty((0, self._n, 3), dtype=xs.dtype)
            out = kernel(xs, us, self._rail_table, True, dummy, dummy, dummy, self.kernel_parameters,
                         self._external(t), mode)
        else:
            zeta, dzeta, ddzeta = self._geometry(xs[:, :self._n])
            out = kernel(xs, us, _NO_TABLE, False, zeta, dzeta, ddzeta, self.kernel_parameters,
                         self._external(t), mode)
        return lead, out

    def rhs(self, t, x, u):
        """ODE right-hand side ``x_dot = f(t, x, u)``, shape (..., n_states), by the compiled kernel.

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., n_states)
            Plant state (the module docstring of the plant gives the layout).
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        ndarray, shape (..., n_states)
        """
        lead, out = self._call(self.kernels.rhs_batch, t, x, u, self._mode)
        return restore(out, lead)

    def contact_forces(self, t, x, u) -> tuple[np.ndarray, np.ndarray]:
        """Force of the floor on the body at the contact point: normal and tangential parts (compiled kernel).

        Newton's equation of the whole plant, ``F = sum_i m_i a_i + M g e3 - F_e(t)``
        (``M`` the total mass, the sum over the body and every point mass,
        ``a_i`` their absolute accelerations under the inputs ``u``), so the
        normal force is the total weight plus the masses' vertical inertial
        forces. Subclasses give the shapes.

        Parameters
        ----------
        t : float
            Time in s (the external force).
        x : array_like, shape (..., n_states)
            Plant state.
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.

        Returns
        -------
        normal : ndarray, shape (...)
            Normal force in N (along e3, > 0 while pressing on the floor).
        tangential : ndarray, shape (..., k)
            Friction force in N in the floor plane (k = 2 for the ball, 1 for the disk).
        """
        lead, out = self._call(self.kernels.contact_force_batch, t, x, u, self._mode)
        F = restore(out, lead)
        return F[..., -1].copy(), F[..., :-1].copy()

    @property
    def n_masses(self) -> int:
        """Number n of moving masses."""
        return self._n

    @property
    def masses_kg(self) -> np.ndarray:
        """``(m0, m1, ..., mn)`` in kg: the body, then the point masses; shape (n + 1,)."""
        return self._masses.copy()

    @property
    def n_states(self) -> int:
        """State length (plant-specific)."""
        raise NotImplementedError

    @property
    def n_inputs(self) -> int:
        """Number of inputs, one per moving mass."""
        return self._n

    def validate_state(self, x, name: str = "x0") -> np.ndarray:
        """Check a single state: length and finiteness (subclasses add invariants).

        Parameters
        ----------
        x : array_like, shape (n_states,)
            The state.
        name : str
            Name of the argument, for error messages.

        Returns
        -------
        ndarray, shape (n_states,)
        """
        return as_vector(x, name, self.n_states)

    def rhs_jacobian(self, t, x, u) -> np.ndarray:
        """``df/dx`` by complex-step differentiation, shape (n_states, n_states).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (n_states,)
            State.
        u : array_like, shape (n,)
            Inputs.

        Returns
        -------
        ndarray, shape (n_states, n_states)
        """
        x = as_vector(x, "x", self.n_states)
        if self._rail_table is not None:
            # every column's complex step in one batched kernel call (the same numbers as column by column)
            X = x + 1j * COMPLEX_STEP * np.eye(x.shape[0])
            F = self.rhs(t, X, np.broadcast_to(np.asarray(u), (x.shape[0], self._n)))
            return np.ascontiguousarray(F.imag.T) / COMPLEX_STEP
        return jacobian(lambda z: self.rhs(t, z, u), x)[0]

    def simulate(self, x0, t_span, rail_input: Callable[[float], Sequence[float]], *,
                 options: IntegrationOptions | None = None, breakpoints: Sequence[float] | None = None, t_eval=None,
                 use_jacobian: bool = True, check_rails: bool = True) -> ODETrajectory:
        """Integrate the ODE with ``solve_ivp``, restarting at each kink of the input.

        Parameters
        ----------
        x0 : array_like, shape (n_states,) or (B, n_states)
            Initial state (checked by :meth:`validate_state`). A stack of B
            initial states is integrated as one system (one step-size
            sequence for all runs, the stack evaluated by one kernel call per
            stage) and the result's ``x`` gains a leading run axis, (B, K, n_states).
        t_span : (float, float)
            Start and end time in s.
        rail_input : callable
            ``u(t) -> (n,)``: rail accelerations or forces (per ``inputs``);
            for a batch ``(n,)`` (the same for every run) or ``(B, n)``.
        options : IntegrationOptions, optional
            Method (any ``solve_ivp`` method: ``"DOP853"``, ``"Radau"``, ``"BDF"``, ...), tolerances and
            largest step; default DOP853, and tolerances left at None are :attr:`default_tolerance`.
        breakpoints : sequence of float, optional
            Times (s) where ``rail_input`` is not smooth; the integration is
            restarted there so no step straddles a kink. Defaults to
            :attr:`default_breakpoints` (the kinks of the paper's input).
        t_eval : array_like, optional
            Output times (the end time is always included).
        use_jacobian : bool
            Pass the complex-step Jacobian to implicit methods.
        check_rails : bool
            Stop with an error when a mass on a non-periodic rail, extrapolated
            beyond its parameter range, reaches the shell (see
            :func:`rail_exit_event`); False integrates the extrapolated
            equations regardless.

        Returns
        -------
        ODETrajectory

        Raises
        ------
        ParameterError
            Invalid initial state, bad shapes, or a mass driven out of the body.
        NonFiniteStateError
            When ``rail_input``, the state or its derivative becomes NaN or
            infinite (the message names the time).
        IntegrationError
            When ``solve_ivp`` fails.
        """
        if np.ndim(x0) == 2:
            return self._simulate_batch(x0, t_span, rail_input, options=options, breakpoints=breakpoints,
                                        t_eval=t_eval, use_jacobian=use_jacobian, check_rails=check_rails)
        x0 = self.validate_state(x0)
        options = as_integration_options(options).resolved(self.default_tolerance, self.default_tolerance)
        if breakpoints is None:
            breakpoints = self.default_breakpoints
        u = checked_input(rail_input, "rail_input", self._n, context="simulate")

        def fun(t, x):
            return self.rhs(t, x, u(t))

        jac = (lambda t, x: self.rhs_jacobian(t, x, u(t))) if check_bool(use_jacobian, "use_jacobian") else None
        event = rail_exit_event(self.params.point_masses, self.params.radius_m) \
            if check_bool(check_rails, "check_rails") else None
        return integrate_piecewise(fun, x0, t_span, breakpoints=breakpoints, t_eval=t_eval, options=options,
                                   jac=jac, event=event)

    def _simulate_batch(self, x0, t_span, rail_input, *, options, breakpoints, t_eval, use_jacobian,
                        check_rails) -> ODETrajectory:
        """:meth:`simulate` of a stack of initial states ``(B, n_states)`` as one ODE of size ``B n_states``."""
        x0 = np.asarray(x0, dtype=float)
        B, nx, n = x0.shape[0], self.n_states, self._n
        if B < 1:
            raise ShapeError(f"x0 must hold at least one initial state, got shape {x0.shape}")
        X0 = np.array([self.validate_state(x, f"x0[{b}]") for b, x in enumerate(x0)])
        check_callable(rail_input, "rail_input", f"u(t) -> ({n},) or ({B}, {n})")
        options = as_integration_options(options).resolved(self.default_tolerance, self.default_tolerance)
        if breakpoints is None:
            breakpoints = self.default_breakpoints

        def u(t):
            value = rail_input(t)
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError) as exc:
                raise ParameterTypeError(f"rail_input returned a non-numeric value at t = {t:.6g} s") from exc
            if arr.shape == (n,):
                arr = np.broadcast_to(arr, (B, n))
            elif arr.shape != (B, n):
                raise ShapeError(f"rail_input must return shape ({n},) or ({B}, {n}) for a batch of {B} runs, "
                                 f"got {arr.shape} at t = {t:.6g} s")
            if not np.all(np.isfinite(arr)):
                check_finite_at(arr, time=t, quantity="rail_input", context="simulate")
            return arr

        def fun(t, y):
            return self.rhs(t, y.reshape(B, nx), u(t)).ravel()

        def jac(t, y):
            X, U = y.reshape(B, nx), u(t)
            if self._rail_table is not None:
                # every run's every column in one batched complex-step kernel call
                Xc = X[:, None, :] + 1j * COMPLEX_STEP * np.eye(nx)
                F = self.rhs(t, Xc, U[:, None, :])
                blocks = np.swapaxes(F.imag, 1, 2) / COMPLEX_STEP
            else:
                blocks = [self.rhs_jacobian(t, X[b], U[b]) for b in range(B)]
            return block_diag(list(blocks), format="csc")

        single = rail_exit_event(self.params.point_masses, self.params.radius_m) \
            if check_bool(check_rails, "check_rails") else None
        event = None
        if single is not None:
            def event(t, y):
                return min(single(t, x) for x in y.reshape(B, nx))

            def describe(t, y):
                Y = y.reshape(B, nx)
                b = int(np.argmin([single(t, x) for x in Y]))
                return f"run {b} of the batch: " + single.describe(t, Y[b])

            event.describe = describe
        traj = integrate_piecewise(fun, X0.ravel(), t_span, breakpoints=breakpoints, t_eval=t_eval, options=options,
                                   jac=jac if check_bool(use_jacobian, "use_jacobian") else None, event=event)
        x = np.ascontiguousarray(traj.x.reshape(traj.x.shape[0], B, nx).swapaxes(0, 1))
        return replace(traj, x=x)

    def to_constrained_system(self) -> "InternalMassesSystem":
        """This plant in the common interface (plant-specific)."""
        raise NotImplementedError


class InternalMassesSystem(ConstrainedSystem):
    """Base of the generalized-coordinate forms of :class:`InternalMassesPlant`.

    Coordinates ``(body coordinates, theta_1, ..., theta_n)``; inputs one
    per mass. ``M``, ``Q``, ``D``, ``Ddot xd`` (with the input-mode
    elimination of the module docstring) and the structured index-1 solve
    are the plant kernels' ``system_terms_batch`` and
    ``system_accelerations_batch``; subclasses supply their extra kernel
    arguments, the holonomic constraints and the conversions
    ``from_ode_state`` / ``to_ode_state``.

    Parameters
    ----------
    plant : InternalMassesPlant
        Must have no external force (the common interface is autonomous).
    body_coordinate_names : sequence of str
        Names of the coordinates before the rail parameters.
    n_holonomic, n_nonholonomic : int
        Constraint counts.
    """

    def __init__(self, plant: InternalMassesPlant, *, body_coordinate_names: Sequence[str], n_holonomic: int,
                 n_nonholonomic: int) -> None:
        if plant.params.external_force is not None:
            raise ParameterError(f"{type(self).__name__} needs external_force=None: ConstrainedSystem is autonomous")
        self.plant = plant
        n = plant.n_masses
        self._n_body = len(body_coordinate_names)
        prefix = "theta_ddot" if plant.inputs == "acceleration" else "tau"
        super().__init__(n_coordinates=self._n_body + n, n_holonomic=n_holonomic, n_nonholonomic=n_nonholonomic,
                         n_inputs=n, coordinate_names=tuple(body_coordinate_names)
                         + tuple(f"theta_{i + 1}" for i in range(n)),
                         input_names=tuple(f"{prefix}_{i + 1}" for i in range(n)))
        # the contact point is what a closed loop tracks
        self.tracked_coordinates = tuple(c for c in ("contact_x", "contact_y") if c in body_coordinate_names)

    @property
    def name(self) -> str:
        """``<plant name>_system``."""
        return f"{self.plant.name}_system"

    @property
    def params(self):
        """The plant's parameters."""
        return self.plant.params

    #: True: every callable accepts stacks (rule 8 of :mod:`ballctl.system`), evaluated by one kernel call
    batched = True

    def _kernel_arguments(self) -> tuple:
        """The system's own kernel arguments after the plant parameters (plant-specific)."""
        raise NotImplementedError

    def _check_coordinates(self, x) -> None:
        """Raise when coordinates ``x (K, N)`` are outside the chart (plant-specific; none by default)."""

    def _terms(self, x, xd=None, u=None):
        """``M, Q, D, Ddot xd`` of the compiled ``system_terms_batch`` at stacks of ``x, xd, u``."""
        x = np.asarray(x)
        xd = np.zeros_like(x) if xd is None else xd
        u = np.zeros(self.plant.n_masses) if u is None else u
        return self._system_call(self.plant.kernels.system_terms_batch, x, xd, u)

    def _system_call(self, kernel, x, xd, u, *extra):
        plant = self.plant
        N, b = self.n_coordinates, self._n_body
        lead, (xs, xds, us) = as_stacks([x, xd, u], [N, N, plant.n_masses])
        xs, xds, us = _writable(xs), _writable(xds), _writable(us)
        self._check_coordinates(xs)
        mode = INPUT_MODES.index(plant.inputs)
        if plant._rail_table is not None:
            dummy = np.empty((0, plant.n_masses, 3), dtype=xs.dtype)
            out = kernel(xs, xds, us, plant._rail_table, True, dummy, dummy, dummy, plant.kernel_parameters,
                         *self._kernel_arguments(), mode, *extra)
        else:
            zeta, dzeta, ddzeta = plant._geometry(xs[:, b:])
            out = kernel(xs, xds, us, _NO_TABLE, False, zeta, dzeta, ddzeta, plant.kernel_parameters,
                         *self._kernel_arguments(), mode, *extra)
        return tuple(restore(a, lead) for a in out)

    def mass_matrix(self, x, u=None) -> np.ndarray:
        """Mass matrix, shape (..., n_coordinates, n_coordinates) (module docstring for the input modes).

        Parameters
        ----------
        x : array_like, shape (..., n_coordinates)
            Coordinates.
        u : array_like, optional
            Inputs (``M`` does not depend on them).

        Returns
        -------
        ndarray, shape (..., n_coordinates, n_coordinates)
        """
        return self._terms(x)[0]

    def forces(self, x, xd, u) -> np.ndarray:
        """Generalized forces, shape (..., n_coordinates) (module docstring for the input modes).

        Parameters
        ----------
        x, xd : array_like, shape (..., n_coordinates)
            Coordinates and velocities.
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per the plant's ``inputs``.

        Returns
        -------
        ndarray, shape (..., n_coordinates)
        """
        return self._terms(x, xd, u)[1]

    def constraint_jacobian(self, x) -> np.ndarray:
        """Constraint Jacobian ``D(x)``, shape (..., m + l, n_coordinates) (compiled).

        Parameters
        ----------
        x : array_like, shape (..., n_coordinates)
            Coordinates.

        Returns
        -------
        ndarray, shape (..., m + l, n_coordinates)
        """
        return self._terms(x)[2]

    def constraint_bias(self, x, xd) -> np.ndarray:
        """``Ddot(x, xd) xd``, shape (..., m + l) (compiled).

        Parameters
        ----------
        x, xd : array_like, shape (..., n_coordinates)
            Coordinates and velocities.

        Returns
        -------
        ndarray, shape (..., m + l)
        """
        return self._terms(x, xd)[3]

    def accelerations(self, x, xd, u, *, stabilization: tuple[float, float] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Accelerations and multipliers by the structured index-1 solve (compiled; ``D = [I | E]``).

        Same equations and arguments as :meth:`ConstrainedSystem.accelerations`.

        Parameters
        ----------
        x, xd : array_like, shape (..., n_coordinates)
            Coordinates and velocities.
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per the plant's ``inputs``.
        stabilization : (float, float) or None
            Baumgarte gains ``(a, b)`` in 1/s.

        Returns
        -------
        xdd : ndarray, shape (..., n_coordinates)
        lam : ndarray, shape (..., m + l)
        """
        a, b = (0.0, 0.0) if stabilization is None else (float(stabilization[0]), float(stabilization[1]))
        return self._system_call(self.plant.kernels.system_accelerations_batch, x, xd, u, a, b)
