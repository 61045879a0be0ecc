r"""Forward dynamics of any :class:`~ballctl.ConstrainedSystem`.

The index-3 DAE is integrated in its index-1 form (see
:meth:`ConstrainedSystem.accelerations`) as a first-order ODE in
``y = (x, xd)``. Constraint drift is controlled in two ways, both optional
and both reported:

* Baumgarte stabilization (default gains ``(10, 10)`` 1/s): the
  acceleration-level constraint becomes
  ``D xdd + Ddot xd + 2a D xd + b^2 C = 0``, so drift decays at about ``a``
  per second; it changes nothing on the constraint manifold.
* Projection every ``projection_interval`` s: the integration restarts after
  projecting ``x`` onto ``C(x) = 0`` and ``xd`` onto ``D(x) xd = 0`` in the
  kinetic-energy metric.

The residuals ``C(x)`` and ``D(x) xd`` are returned at every output time.
"""

from __future__ import annotations

import inspect
import time as _time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from ._errors import (ChartSingularityError, ConstraintProjectionWarning, ConstraintViolationError,
                      IntegrationError, ParameterError, ParameterTypeError, ShapeError)
from ._guards import check_finite_at, guard_rhs
from ._validation import (as_array, as_stack, as_time_span, as_times, as_vector, check_bool, check_callable,
                          check_finite_scalar, check_instance, check_integer, check_nonnegative,
                          check_positive, check_stabilization)
from .ode import IntegrationOptions
from .plants.base import friction_coefficient_required
from .system import ConstrainedSystem

__all__ = ["SimulationOptions", "SimulationResult", "simulate", "CONSTRAINT_TOL"]

#: Default tolerance on the constraint residuals of an initial state: ``|C(x0)|``
#: (m or rad) and ``|D(x0) xd0|`` (m/s or rad/s). A consistent state built from
#: the plant's own formulas meets it by ~8 orders of magnitude; a state off by
#: more is a user error, not rounding.
CONSTRAINT_TOL = 1e-6

#: Largest number of integration steps a run may need at its ``max_step``
#: (an endless loop otherwise looks like a hang).
MAX_STEPS = 100_000_000


@dataclass(frozen=True, kw_only=True)
class SimulationOptions(IntegrationOptions):
    """Options of :func:`simulate`: the integration (:class:`~ballctl.ode.IntegrationOptions`: ``method``,
    ``rtol``, ``atol``, ``max_step``) and how the constraints of the DAE are kept.

    A plain :class:`~ballctl.ode.IntegrationOptions` is accepted by :func:`simulate` too (the fields below
    then take their defaults).

    Attributes
    ----------
    method, rtol, atol, max_step
        As :class:`~ballctl.ode.IntegrationOptions` (``max_step`` in s); tolerances left at None are
        ``rtol = 1e-10``, ``atol = 1e-12``.
    stabilization : (float, float) or None
        Baumgarte gains ``(a, b)`` in 1/s (default ``(10, 10)``); ``None`` integrates the bare index-1
        equations.
    projection_interval : float or None
        Project the state onto the constraint manifold every this many seconds (None: never).
    project_initial : bool
        Project ``(x0, xd0)`` onto the constraints before starting.
    rechart : bool
        When the state reaches the edge of the system's angle chart (the ball-plate's lean near 90 deg),
        switch to a fresh chart with ``system.rechart(x, xd)`` and go on; the switch times are returned in
        ``SimulationResult.chart_changes``. Otherwise raise.
    raise_on_failure : bool
        Raise :class:`IntegrationError` when the integrator fails (default); otherwise return what was
        computed with ``success=False``.
    constraint_tol : float
        Largest accepted constraint residual of the initial state, ``|C(x0)|`` (m or rad) and
        ``|D(x0) xd0|`` (m/s or rad/s); see :data:`CONSTRAINT_TOL`.

    Examples
    --------
    >>> SimulationOptions(rtol=1e-12, atol=1e-12, stabilization=None).stabilization is None
    True
    """

    stabilization: tuple[float, float] | None = (10.0, 10.0)
    projection_interval: float | None = None
    project_initial: bool = False
    rechart: bool = False
    raise_on_failure: bool = True
    constraint_tol: float = CONSTRAINT_TOL

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "stabilization", check_stabilization(self.stabilization))
        if self.projection_interval is not None:
            object.__setattr__(self, "projection_interval",
                               check_positive(self.projection_interval, "projection_interval", "s"))
        for name in ("project_initial", "rechart", "raise_on_failure"):
            object.__setattr__(self, name, check_bool(getattr(self, name), name))
        object.__setattr__(self, "constraint_tol", check_nonnegative(self.constraint_tol, "constraint_tol"))


def simulation_options(options) -> SimulationOptions:
    """``options`` as :class:`SimulationOptions`: ``None`` gives the defaults, an
    :class:`~ballctl.ode.IntegrationOptions` keeps its integration fields (the rest default)."""
    if options is None:
        return SimulationOptions()
    if isinstance(options, SimulationOptions):
        return options
    if isinstance(options, IntegrationOptions):
        return SimulationOptions(method=options.method, rtol=options.rtol, atol=options.atol,
                                 max_step=options.max_step)
    raise ParameterTypeError(f"options must be a SimulationOptions (or an IntegrationOptions), got "
                             f"{type(options).__name__}")


@dataclass(frozen=True)
class SimulationResult:
    """Time histories of a forward-dynamics run.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Output times in s.
    x, xd : ndarray, shape (K, n)
        Coordinates and velocities ((B, K, n) for a batch of B runs; the
        other histories likewise gain a leading run axis).
    u : ndarray, shape (K, nu)
        Inputs applied at the output times.
    position_residual : ndarray, shape (K, m)
        ``C(x)`` at the output times.
    velocity_residual : ndarray, shape (K, m + l)
        ``D(x) xd`` at the output times.
    nfev : int
        Right-hand-side evaluations.
    wall_time_s : float
        Wall-clock time of the integration in s.
    method : str
        Integrator used (a ``solve_ivp`` method name).
    success : bool
        False only when the caller asked to keep going after a failure.
    message : str
        Integrator message.
    chart_changes : tuple of float
        Times in s where the simulation switched to a fresh chart.
    coordinate_names, input_names : tuple of str
        Names of the system's coordinates and inputs.
    normal_force : ndarray, shape (K,)
        Normal contact force in N at the output times, for a plant with
        ``contact_forces(x, xd, u)`` (the ball-plates); empty otherwise.
    friction_force : ndarray, shape (K, 2)
        Tangential (friction) contact force in N, plate axes.
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    position_residual: np.ndarray
    velocity_residual: np.ndarray
    nfev: int
    wall_time_s: float
    method: str
    success: bool = True
    message: str = ""
    chart_changes: tuple[float, ...] = ()
    coordinate_names: tuple[str, ...] = field(default=(), repr=False)
    input_names: tuple[str, ...] = field(default=(), repr=False)
    normal_force: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    friction_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)

    @property
    def peak_friction_coefficient(self) -> float | None:
        """Largest friction coefficient the contact needed, ``max |F_t| / N`` (inf once N <= 0; None without
        contact forces): rolling without slipping holds while it stays below the contact's static friction."""
        if not self.normal_force.size:
            return None
        return float(np.max(friction_coefficient_required(self.normal_force, self.friction_force)))

    @property
    def least_normal_force_N(self) -> float | None:
        """Smallest normal contact force in N (<= 0: the ball lifts off; None without contact forces)."""
        return float(np.min(self.normal_force)) if self.normal_force.size else None

    @property
    def max_constraint_residual(self) -> float:
        """Largest absolute constraint residual (positions in m/rad, velocities in m/s)."""
        vals = [np.max(np.abs(a)) for a in (self.position_residual, self.velocity_residual) if a.size]
        return float(max(vals)) if vals else 0.0

    def to_time_response(self):
        """The run as a python-control ``TimeResponseData`` (signal-major, the one transpose).

        States and outputs are ``(x, xd)`` (2n signals, labels
        ``<coordinate>`` and ``<coordinate>_dot``), inputs ``u``; ``time``
        is :attr:`t`. See ``docs/conventions.md``.

        Returns
        -------
        control.TimeResponseData
        """
        import control

        n = self.x.shape[1]
        names = self.coordinate_names or tuple(f"x{i + 1}" for i in range(n))
        labels = list(names) + [f"{c}_dot" for c in names]
        states = np.concatenate([self.x, self.xd], axis=1).T
        inputs = self.u.T
        return control.TimeResponseData(
            self.t, states, states, inputs, output_labels=labels, state_labels=labels,
            input_labels=list(self.input_names or tuple(f"u{j + 1}" for j in range(inputs.shape[0]))),
            title="ballctl.simulate", success=self.success, message=self.message)


def _input_function(inputs, n_inputs: int, *, control_law: Callable | None = None
                   ) -> Callable[[float, np.ndarray, np.ndarray], np.ndarray]:
    """Normalize the inputs of :func:`simulate` to a callable ``(t, x, xd) -> u`` of shape (nu,).

    Parameters
    ----------
    inputs : None, array_like or callable
        ``None`` (zero inputs), a constant array of shape (nu,) or a
        callable ``u(t)`` of time only.
    n_inputs : int
        Number of inputs.
    control_law : callable, optional
        A state-feedback law ``u(t, x, xd)``; then ``inputs`` must be None.

    Returns
    -------
    callable
        ``(t, x, xd) -> ndarray, shape (nu,)``.
    """
    if control_law is not None:
        if inputs is not None:
            raise ParameterError("pass either inputs (u(t) or a constant) or control_law (u(t, x, xd)), not both")
        check_callable(control_law, "control_law", "u(t, x, xd) -> (nu,)")
        return lambda t, x, xd: _input_value(control_law(t, x, xd), n_inputs, t, "control_law")
    if inputs is None:
        zero = np.zeros(n_inputs)
        return lambda t, x, xd: zero
    if isinstance(inputs, (str, bytes)):
        raise ParameterTypeError(f"inputs must be None, an array of shape ({n_inputs},) or a callable u(t), "
                                 f"got {inputs!r}")
    if not callable(inputs):
        const = as_vector(inputs, "inputs", n_inputs) if n_inputs else np.zeros(0)
        return lambda t, x, xd: const
    nargs = _required_positional(inputs)
    if nargs not in (None, 0, 1):
        raise ParameterTypeError(f"inputs must be a callable u(t) of time only (a state-feedback law: "
                                 f"control_law=u(t, x, "
                                 f"xd)), got a callable with {nargs} required arguments")
    return lambda t, x, xd: _input_value(inputs(t), n_inputs, t, "inputs")


def _input_value(value, n_inputs: int, t: float, name: str) -> np.ndarray:
    """The value of a user's input callable as shape (nu,), with an error naming the time if it is not."""
    try:
        u = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"{name} returned a non-numeric value at t = {t:.6g} s: {value!r}") from exc
    if u.size != n_inputs:
        raise ShapeError(f"{name} must return shape ({n_inputs},), got shape {u.shape} at t = {t:.6g} s")
    return u.reshape(n_inputs)


def _check_initial_state(system: ConstrainedSystem, x0: np.ndarray, xd0: np.ndarray, *,
                        tol: float = CONSTRAINT_TOL, where: str = "") -> None:
    """Raise :class:`ConstraintViolationError` unless ``(x0, xd0)`` satisfies the constraints within ``tol``.

    Parameters
    ----------
    system : ConstrainedSystem
        The system.
    x0, xd0 : ndarray, shape (n,)
        Initial coordinates and velocities.
    tol : float
        Largest accepted ``|C(x0)|`` (m or rad) and ``|D(x0) xd0|`` (m/s or rad/s).
    where : str
        Name of the calling function, used in the message.
    """
    prefix = f"{where}: " if where else ""
    pos = np.asarray(system.holonomic(x0), dtype=float).reshape(-1) if system.n_holonomic else np.zeros(0)
    vel = np.asarray(system.constraint_jacobian(x0), dtype=float) @ xd0
    for label, res, unit, arg in (("position", pos, "m or rad", "x0"), ("velocity", vel, "m/s or rad/s", "xd0")):
        if res.size and not np.all(np.isfinite(res)):
            raise ConstraintViolationError(f"{prefix}the {label} constraint residual of {arg} is not finite")
        if res.size and np.max(np.abs(res)) > tol:
            i = int(np.argmax(np.abs(res)))
            raise ConstraintViolationError(
                f"{prefix}{arg} violates the {label} constraints: residual {res[i]:.3g} ({unit}) in constraint "
                f"{i} exceeds the tolerance {tol:g}; pass project_initial=True to project it onto the "
                f"constraints (reported with a ConstraintProjectionWarning), or fix {arg}")


def _required_positional(fn) -> int | None:
    """Number of required positional parameters of ``fn`` (None when it has no signature)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty])


def _chart_event(system: ConstrainedSystem):
    margin = getattr(system, "chart_margin", None)
    if margin is None:
        return None
    n = system.n_coordinates

    def event(t, y):
        return float(margin(y[:n]))

    event.terminal = True
    return event


def simulate(system: ConstrainedSystem, x0, xd0, inputs, t_span, *, control_law: Callable | None = None, t_eval=None,
             options: SimulationOptions | IntegrationOptions | None = None) -> SimulationResult:
    """Integrate the constrained equations of motion forward in time.

    Parameters
    ----------
    system : ConstrainedSystem
        Any system speaking the common interface.
    x0, xd0 : array_like, shape (n,) or (B, n)
        Initial coordinates and velocities; they should satisfy the
        constraints (set ``project_initial`` to project them first). A stack
        of B initial states is integrated as one system (one step-size
        sequence for all runs; plants with compiled kernels evaluate the
        stack in one call) and every history gains a leading run axis
        (``x`` of shape (B, K, n)); ``xd0`` may be one state for all.
    inputs : None, array_like (nu,) or callable
        Zero, constant or time-dependent inputs ``u(t) -> (nu,)``. For a
        batch: ``None``, a constant of shape (nu,) or (B, nu), or ``u(t)``
        returning (nu,) or (B, nu).
    t_span : (float, float)
        Start and end times in s.
    control_law : callable, optional
        A state-feedback law ``u(t, x, xd) -> (nu,)`` instead of ``inputs``
        (then pass ``inputs=None``).
    t_eval : array_like, optional
        Output times (default: 501 evenly spaced).
    options : SimulationOptions or IntegrationOptions, optional
        Integrator (``method``, ``rtol``, ``atol``, ``max_step``) and constraint handling
        (``stabilization``, ``projection_interval``, ``project_initial``, ``rechart``,
        ``raise_on_failure``, ``constraint_tol``); default ``SimulationOptions()``.

    Returns
    -------
    SimulationResult
        Use :meth:`SimulationResult.to_time_response` for python-control.

    Raises
    ------
    ConstraintViolationError
        When ``(x0, xd0)`` violates the constraints by more than
        ``constraint_tol`` and ``project_initial`` is False.
    ChartSingularityError
        When the system reports that its angle chart became singular (the
        ball-plate's lean reaching ``LEAN_LIMIT``), or ``x0`` lies beyond the
        chart's limit and ``rechart`` is False.
    NonFiniteStateError
        When the state, its derivative or the input becomes NaN or infinite;
        the message says at what time and which quantity.

    Warns
    -----
    ConstraintProjectionWarning
        When ``project_initial`` moved the initial state by more than
        ``constraint_tol`` (the residual before projection is reported).
    """
    check_instance(system, "system", ConstrainedSystem, "ConstrainedSystem")
    options = simulation_options(options).resolved(1e-10, 1e-12)
    method, rtol, atol, max_step = options.method, options.rtol, options.atol, options.max_step
    stabilization, projection_interval = options.stabilization, options.projection_interval
    project_initial, rechart = options.project_initial, options.rechart
    raise_on_failure, constraint_tol = options.raise_on_failure, options.constraint_tol
    if np.ndim(x0) == 2:
        if rechart or projection_interval is not None or project_initial or control_law is not None:
            raise ParameterError("control_law and the options rechart, projection_interval and project_initial "
                                 "apply to one run; "
                                 "simulate the runs of a batch one by one to use them")
        return _simulate_batch(system, x0, xd0, inputs, t_span, t_eval=t_eval, method=method, rtol=rtol,
                               atol=atol, max_step=max_step, stabilization=stabilization,
                               raise_on_failure=raise_on_failure)
    n, nu = system.n_coordinates, system.n_inputs
    x0 = as_vector(x0, "x0", n)
    xd0 = as_vector(xd0, "xd0", n)
    t_span = np.array(as_time_span(t_span))
    if t_eval is None:
        t_eval = np.linspace(t_span[0], t_span[1], 501)
    t_eval = as_times(t_eval, "t_eval", increasing=True)
    if t_eval[0] < t_span[0] - 1e-12 or t_eval[-1] > t_span[1] + 1e-12:
        raise ParameterError(f"t_eval must lie within t_span = [{t_span[0]:g}, {t_span[1]:g}] s, got "
                             f"[{t_eval[0]:g}, {t_eval[-1]:g}] s")
    if (t_span[1] - t_span[0]) / max_step > MAX_STEPS:
        raise ParameterError(f"max_step = {max_step:g} s needs more than {MAX_STEPS:.0e} steps over t_span "
                             f"({t_span[1] - t_span[0]:g} s); raise max_step")
    ufun = _input_function(inputs, nu, control_law=control_law)
    margin = getattr(system, "chart_margin", None)
    if margin is not None and float(np.real(margin(x0))) <= 0.0:
        if not (rechart and hasattr(system, "rechart")):
            raise ChartSingularityError(
                "x0 lies beyond the edge of the system's coordinate chart (its chart_margin(x0) <= 0); "
                "pass options=SimulationOptions(rechart=True) to start in a fresh chart")
        x0, xd0 = system.rechart(x0, xd0)
    u_start = ufun(t_span[0], x0, xd0)
    check_finite_at(u_start, time=t_span[0], quantity="input u", names=system.input_names, context="simulate")
    if project_initial:
        pos = np.asarray(system.holonomic(x0), dtype=float).reshape(-1) if system.n_holonomic else np.zeros(0)
        x0p = system.project_positions(x0)
        xd0p = system.project_velocities(x0p, xd0, ufun(t_span[0], x0p, xd0))
        vel = np.asarray(system.constraint_jacobian(x0), dtype=float) @ xd0
        moved = max(float(np.max(np.abs(x0p - x0), initial=0.0)), float(np.max(np.abs(xd0p - xd0), initial=0.0)))
        if moved > constraint_tol:
            warnings.warn(
                f"simulate projected the initial state onto the constraints (residuals before: position "
                f"{np.max(np.abs(pos), initial=0.0):.3g} m or rad, velocity {np.max(np.abs(vel), initial=0.0):.3g} "
                f"m/s or rad/s; largest change {moved:.3g})", ConstraintProjectionWarning, stacklevel=2)
        x0, xd0 = x0p, xd0p
    else:
        _check_initial_state(system, x0, xd0, tol=constraint_tol, where="simulate")

    def rhs_bare(t, y):
        x, xd = y[:n], y[n:]
        u = ufun(t, x, xd)
        check_finite_at(u, time=t, quantity="input u", names=system.input_names, context="simulate")
        xdd, _ = system.accelerations(x, xd, u, stabilization=stabilization)
        return np.concatenate([xd, xdd])

    state_names = tuple(system.coordinate_names) + tuple(f"{c}_rate" for c in system.coordinate_names)
    rhs = guard_rhs(rhs_bare, context="simulate", names=state_names)

    events = _chart_event(system)
    if projection_interval is not None:
        if (t_span[1] - t_span[0]) / projection_interval > MAX_STEPS:
            raise ParameterError(f"projection_interval = {projection_interval:g} s gives more than {MAX_STEPS:.0e} "
                                 f"restarts over t_span; raise it")
        edges = np.arange(t_span[0], t_span[1], projection_interval)
        edges = np.append(edges, t_span[1])
    else:
        edges = t_span
    y = np.concatenate([x0, xd0])
    ts, ys = [], []
    nfev = 0
    success, message = True, "success"
    start = _time.perf_counter()
    changes: list[float] = []
    segments = list(zip(edges[:-1], edges[1:]))
    while segments:
        a, b = segments.pop(0)
        last = b == edges[-1]
        mask = (t_eval >= a) & ((t_eval < b) | last)
        seg_eval = np.union1d(t_eval[mask], [b])
        sol = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol, max_step=max_step,
                        t_eval=seg_eval, events=events)
        nfev += sol.nfev
        keep = np.isin(sol.t, t_eval[mask])
        ts.append(sol.t[keep])
        ys.append(sol.y.T[keep])
        if sol.status == 1:
            t_hit = float(sol.t_events[0][0])
            if not (rechart and hasattr(system, "rechart")) or len(changes) > 10_000:
                raise ChartSingularityError(
                    f"the state reached the edge of the system's coordinate chart at t = {t_hit:.6g} s "
                    f"(its chart_margin reached 0); pass options=SimulationOptions(rechart=True) "
                    f"to continue in a fresh chart")
            y_hit = sol.y_events[0][0]
            xn, xdn = system.rechart(y_hit[:n], y_hit[n:])
            y = np.concatenate([xn, xdn])
            changes.append(t_hit)
            segments.insert(0, (t_hit, b))
            continue
        if not sol.success:
            success, message = False, sol.message
            if raise_on_failure:
                raise IntegrationError(f"integration failed at t = {sol.t[-1]:.6g} s: {sol.message}")
            break
        y = sol.y[:, -1]
        if projection_interval is not None:
            xp = system.project_positions(y[:n])
            up = ufun(b, xp, y[n:])
            y = np.concatenate([xp, system.project_velocities(xp, y[n:], up)])
    wall = _time.perf_counter() - start
    t_out = np.concatenate(ts) if ts else np.zeros(0)
    Y = np.vstack(ys) if ys else np.zeros((0, 2 * n))
    X, XD = Y[:, :n], Y[:, n:]
    U = np.array([ufun(t, x, xd) for t, x, xd in zip(t_out, X, XD)]).reshape(len(t_out), nu)
    pos = np.array([system.holonomic(x) for x in X]).reshape(len(t_out), system.n_holonomic)
    vel = np.array([system.constraint_jacobian(x) @ xd for x, xd in zip(X, XD)]).reshape(
        len(t_out), system.n_constraints)
    normal, friction = _contact(system, X, XD, U)
    return SimulationResult(t=t_out, x=X, xd=XD, u=U, position_residual=pos, velocity_residual=vel, nfev=int(nfev),
                            wall_time_s=wall, method=method, success=success, message=message,
                            chart_changes=tuple(changes), coordinate_names=tuple(system.coordinate_names),
                            input_names=tuple(system.input_names), normal_force=normal, friction_force=friction)


def _simulate_batch(system, x0, xd0, inputs, t_span, *, t_eval, method, rtol, atol, max_step, stabilization,
                    raise_on_failure) -> SimulationResult:
    """B runs as one stacked ODE (see :func:`simulate`)."""
    n, nu = system.n_coordinates, system.n_inputs
    X0 = as_stack(x0, "x0", (None, n), min_length=1)
    B = X0.shape[0]
    XD0 = np.asarray(xd0, dtype=float)
    if XD0.shape not in ((n,), (B, n)):
        raise ShapeError(f"xd0 must have shape ({n},) or ({B}, {n}) for a batch of {B}, got {XD0.shape}")
    XD0 = np.broadcast_to(XD0, (B, n))
    if not np.all(np.isfinite(XD0)):
        raise ParameterError("xd0 must be finite")
    if callable(inputs):
        nargs = len([p for p in inspect.signature(inputs).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty])
        if nargs != 1:
            raise ParameterError("for a batch, inputs must be None, a constant or a callable u(t)")

        def ufun(t):
            return np.broadcast_to(np.asarray(inputs(t), dtype=float), (B, nu))
    else:
        const = np.zeros((B, nu)) if inputs is None else np.asarray(inputs, dtype=float)
        if const.shape not in ((nu,), (B, nu)) or not np.all(np.isfinite(const)):
            raise ShapeError(f"inputs must be finite with shape ({nu},) or ({B}, {nu}), got {const.shape}")
        const = np.broadcast_to(const, (B, nu))

        def ufun(t):
            return const
    t_span = np.array(as_time_span(t_span))
    t_eval = np.linspace(t_span[0], t_span[1], 501) if t_eval is None else as_times(t_eval, "t_eval",
                                                                                  increasing=True)
    stacked = getattr(system, "kernels", None) is not None  # compiled kernels take stacks

    def rhs(t, y):
        Y = y.reshape(B, 2 * n)
        U = ufun(t)
        if stacked:
            xdd, _ = system.accelerations(Y[:, :n], Y[:, n:], U, stabilization=stabilization)
        else:
            xdd = np.stack([system.accelerations(Y[i, :n], Y[i, n:], U[i], stabilization=stabilization)[0]
                            for i in range(B)])
        return np.concatenate([Y[:, n:], xdd], axis=1).ravel()

    margin = getattr(system, "chart_margin", None)
    events = None
    if margin is not None:
        def events(t, y):
            return float(np.min(margin(y.reshape(B, 2 * n)[:, :n])))

        events.terminal = True
    start = _time.perf_counter()
    sol = solve_ivp(rhs, tuple(t_span), np.concatenate([X0, XD0], axis=1).ravel(), method=method, rtol=rtol,
                    atol=atol, max_step=max_step, t_eval=t_eval, events=events)
    wall = _time.perf_counter() - start
    if sol.status == 1:
        raise ChartSingularityError(
            f"a run of the batch reached the edge of the system's coordinate chart at t = "
            f"{float(sol.t_events[0][0]):.6g} s; simulate that run alone with SimulationOptions(rechart=True)")
    if not sol.success and raise_on_failure:
        raise IntegrationError(f"integration failed at t = {sol.t[-1]:.6g} s: {sol.message}")
    K = sol.t.shape[0]
    Y = sol.y.reshape(B, 2 * n, K).transpose(0, 2, 1)
    X, XD = np.ascontiguousarray(Y[:, :, :n]), np.ascontiguousarray(Y[:, :, n:])
    U = np.stack([ufun(t) for t in sol.t], axis=1) if K else np.zeros((B, 0, nu))
    pos = np.array([[system.holonomic(x) for x in run] for run in X]).reshape(B, K, system.n_holonomic)
    vel = np.einsum("bkij,bkj->bki", np.array([[system.constraint_jacobian(x) for x in run] for run in X]
                                              ).reshape(B, K, system.n_constraints, n), XD)
    normal, friction = _contact(system, X, XD, U)
    return SimulationResult(t=sol.t, x=X, xd=XD, u=U, position_residual=pos, velocity_residual=vel,
                            nfev=int(sol.nfev), wall_time_s=wall, method=method, success=bool(sol.success),
                            message=sol.message, coordinate_names=tuple(system.coordinate_names),
                            input_names=tuple(system.input_names), normal_force=normal, friction_force=friction)


def _contact(system, X, XD, U) -> tuple[np.ndarray, np.ndarray]:
    """Contact forces along a run (any leading axes) for a plant with ``contact_forces``; empty arrays otherwise."""
    if not hasattr(system, "contact_forces") or not X.size:
        return np.zeros(0), np.zeros((0, 0))
    ok = np.all(np.isfinite(X), axis=-1) & np.all(np.isfinite(XD), axis=-1) & np.all(np.isfinite(U), axis=-1)
    if not np.all(ok):  # a run kept after a failure: its contact is not reported
        return np.zeros(0), np.zeros((0, 0))
    normal, friction = system.contact_forces(X, XD, U)
    return np.asarray(normal), np.asarray(friction)


def rk4(fun: Callable[[float, np.ndarray], np.ndarray], y, t: float, h: float, steps: int = 1) -> np.ndarray:
    """Classical fourth-order Runge-Kutta: ``steps`` steps of ``h / steps`` from ``(t, y)``.

    ``y`` may be a stack ``(batch, nx)`` when ``fun`` accepts one. Used for
    fixed-step plant integration between controller samples and for batch runs.

    Parameters
    ----------
    fun : callable
        ``fun(t, y) -> dy/dt`` with the shape of ``y``.
    y : array_like, shape (nx,) or (batch, nx)
        State at ``t``.
    t : float
        Start time in s.
    h : float
        Total step in s.
    steps : int
        Number of substeps.

    Returns
    -------
    ndarray
        The state at ``t + h``.

    Raises
    ------
    NonFiniteStateError
        When a sub-step produces a NaN or infinite state (the message gives its time).
    """
    steps = check_integer(steps, "steps", minimum=1)
    t = check_finite_scalar(t, "t", "s")
    h = check_finite_scalar(h, "h", "s")
    y = as_array(y, "y")
    hs = h / steps
    for _ in range(steps):
        k1 = fun(t, y)
        k2 = fun(t + hs / 2, y + hs / 2 * k1)
        k3 = fun(t + hs / 2, y + hs / 2 * k2)
        k4 = fun(t + hs, y + hs * k3)
        y = y + hs / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + hs
        if not np.all(np.isfinite(y)):
            check_finite_at(y, time=t, quantity="state", context="rk4")
    return y
