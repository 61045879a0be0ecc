r"""What the rolling ball and the rolling disk share: point masses on rails inside a rolling body.

Two bases, one per contract of :mod:`ballctl.plants.base`:

* :class:`InternalMassesPlant`, the ODE plant (state, ``rhs``, ``simulate``,
  ``to_constrained_system``): parameter and input-mode checks, the state
  layout ``(theta (n), theta_dot (n), body state)``, the complex-step
  Jacobian of ``rhs`` and the piecewise integration between input kinks.
* :class:`InternalMassesSystem`, its generalized-coordinate form as a
  :class:`~ballctl.system.ConstrainedSystem` with coordinates
  ``(body coordinates, theta_1, ..., theta_n)``. Subclasses supply the full
  Lagrangian mass matrix and forces with the rail forces as inputs; the
  input-mode elimination is written here once. With ``inputs="force"`` the
  rail forces enter ``Q`` on the ``theta`` rows. With
  ``inputs="acceleration"`` the ``theta`` rows become ``theta_ddot = u``:

  .. math::

      M = \begin{pmatrix} M_{bb} & 0 \\ 0 & 1 \end{pmatrix}, \qquad
      Q = \begin{pmatrix} Q_b - M_{b\theta} u \\ u \end{pmatrix},

  which keeps ``M`` symmetric positive definite and the constraints
  scleronomic (Putkaradze & Rogers 2018, eq. 7.2 for the prescribed masses).

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.23)-(5.28), (7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._derivatives import jacobian
from .._errors import ParameterError, ParameterTypeError
from .._validation import as_vector, check_bool, check_choice, check_instance, check_positive, checked_input
from ..ode import ODETrajectory, integrate_piecewise
from ..system import ConstrainedSystem
from .rails import Rail

__all__ = ["PointMass", "INPUT_MODES", "InternalMassesPlant", "InternalMassesSystem", "rail_exit_event"]

#: meanings of the input ``u`` of the internally actuated plants
INPUT_MODES = ("acceleration", "force")


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

    @property
    def parameters(self):
        """Deprecated spelling of :attr:`params` (removed in the next release)."""
        import warnings
        warnings.warn(f"{type(self).__name__}.parameters is deprecated; use params", DeprecationWarning,
                      stacklevel=2)
        return self.params

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

    def rhs(self, t, x, u):
        """ODE right-hand side ``x_dot = f(t, x, u)``, shape (..., n_states) (plant-specific).

        Parameters
        ----------
        t : float
            Time in s.
        x : array_like, shape (..., n_states)
            Plant state (the module docstring gives the layout).
        u : array_like, shape (..., n)
            Rail accelerations or rail forces, per ``inputs``.
        """
        raise NotImplementedError

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
        return jacobian(lambda z: self.rhs(t, z, u), np.asarray(x, dtype=float))[0]

    def simulate(self, x0, t_span, rail_input: Callable[[float], Sequence[float]], *, method: str = "DOP853",
                 rtol: float | None = None, atol: float | None = None,
                 breakpoints: Sequence[float] | None = None, t_eval=None,
                 use_jacobian: bool = True, check_rails: bool = True) -> ODETrajectory:
        """Integrate the ODE with ``solve_ivp``, restarting at each kink of the input.

        Parameters
        ----------
        x0 : array_like, shape (n_states,)
            Initial state (checked by :meth:`validate_state`).
        t_span : (float, float)
            Start and end time in s.
        rail_input : callable
            ``u(t) -> (n,)``: rail accelerations or forces (per ``inputs``).
        method : str
            Any ``solve_ivp`` method (``"DOP853"``, ``"Radau"``, ``"BDF"``, ...).
        rtol, atol : float, optional
            Tolerances; default :attr:`default_tolerance`.
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
        x0 = self.validate_state(x0)
        tol = self.default_tolerance
        if breakpoints is None:
            breakpoints = self.default_breakpoints
        u = checked_input(rail_input, "rail_input", self._n, context="simulate")

        def fun(t, x):
            return self.rhs(t, x, u(t))

        jac = (lambda t, x: self.rhs_jacobian(t, x, u(t))) if check_bool(use_jacobian, "use_jacobian") else None
        event = rail_exit_event(self.params.point_masses, self.params.radius_m) \
            if check_bool(check_rails, "check_rails") else None
        return integrate_piecewise(fun, x0, t_span, breakpoints=breakpoints, method=method,
                                   rtol=tol if rtol is None else rtol, atol=tol if atol is None else atol,
                                   t_eval=t_eval, jac=jac, event=event,
                                   event_error=None if event is None else event.describe)

    def to_constrained_system(self) -> "InternalMassesSystem":
        """This plant in the common interface (plant-specific)."""
        raise NotImplementedError


class InternalMassesSystem(ConstrainedSystem):
    """Base of the generalized-coordinate forms of :class:`InternalMassesPlant`.

    Coordinates ``(body coordinates, theta_1, ..., theta_n)``; inputs one
    per mass. Subclasses implement :meth:`_full_mass_matrix` and
    :meth:`_full_forces` (the Lagrangian ``M`` and ``Q`` with the rail
    forces as inputs and ``u = 0``), the constraints and the conversions
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

    @property
    def name(self) -> str:
        """``<plant name>_system``."""
        return f"{self.plant.name}_system"

    @property
    def params(self):
        """The plant's parameters."""
        return self.plant.params

    def _full_mass_matrix(self, x) -> np.ndarray:
        raise NotImplementedError

    def _full_forces(self, x, xd) -> np.ndarray:
        raise NotImplementedError

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
        M = self._full_mass_matrix(np.asarray(x))
        if self.plant.inputs == "acceleration":
            b = self._n_body
            M[..., :b, b:] = 0.0
            M[..., b:, :b] = 0.0
            M[..., b:, b:] = np.eye(self.plant.n_masses)
        return M

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
        x, xd, u = np.asarray(x), np.asarray(xd), np.asarray(u)
        Q = self._full_forces(x, xd)
        Q = Q.astype(np.result_type(Q, u))
        b = self._n_body
        if self.plant.inputs == "acceleration":
            M = self._full_mass_matrix(x)
            Q[..., :b] = Q[..., :b] - np.einsum("...ij,...j->...i", M[..., :b, b:], u)
            Q[..., b:] = u
        else:
            Q[..., b:] = Q[..., b:] + u
        return Q
