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

from ._errors import ChartSingularityError, IntegrationError, ParameterError, ParameterTypeError
from ._validation import as_times, as_vector
from .system import ConstrainedSystem

__all__ = ["SimulationResult", "simulate", "input_function", "rk4"]


@dataclass(frozen=True)
class SimulationResult:
    """Time histories of a forward-dynamics run.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Output times in s.
    x, xd : ndarray, shape (K, n)
        Coordinates and velocities.
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

    @property
    def wall_time(self) -> float:
        """Deprecated spelling of :attr:`wall_time_s` (removed in the next release)."""
        warnings.warn("SimulationResult.wall_time is deprecated; use wall_time_s", DeprecationWarning, stacklevel=2)
        return self.wall_time_s

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


def input_function(inputs, n_inputs: int, *, feedback: Callable | None = None
                   ) -> Callable[[float, np.ndarray, np.ndarray], np.ndarray]:
    """Normalize the inputs of :func:`simulate` to a callable ``(t, x, xd) -> u`` of shape (nu,).

    Parameters
    ----------
    inputs : None, array_like or callable
        ``None`` (zero inputs), a constant array of shape (nu,) or a
        callable ``u(t)`` of time only.
    n_inputs : int
        Number of inputs.
    feedback : callable, optional
        State feedback ``u(t, x, xd)``; then ``inputs`` must be None.

    Returns
    -------
    callable
        ``(t, x, xd) -> ndarray, shape (nu,)``.
    """
    if feedback is not None:
        if inputs is not None:
            raise ParameterError("pass either inputs (u(t) or a constant) or feedback (u(t, x, xd)), not both")
        if not callable(feedback):
            raise ParameterTypeError(f"feedback must be a callable u(t, x, xd), got {feedback!r}")
        return lambda t, x, xd: np.asarray(feedback(t, x, xd), dtype=float).reshape(n_inputs)
    if inputs is None:
        zero = np.zeros(n_inputs)
        return lambda t, x, xd: zero
    if not callable(inputs):
        const = as_vector(inputs, "inputs", n_inputs) if n_inputs else np.zeros(0)
        return lambda t, x, xd: const
    if _required_positional(inputs) == 3:   # the 0.1 spelling of state feedback
        warnings.warn("simulate(..., inputs=u(t, x, xd)) is deprecated: pass state feedback as feedback=u",
                      DeprecationWarning, stacklevel=3)
        return lambda t, x, xd: np.asarray(inputs(t, x, xd), dtype=float).reshape(n_inputs)
    return lambda t, x, xd: np.asarray(inputs(t), dtype=float).reshape(n_inputs)


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


def simulate(system: ConstrainedSystem, x0, xd0, inputs, t_span, *, feedback: Callable | None = None, t_eval=None,
             method: str = "DOP853",
             rtol: float = 1e-10, atol: float = 1e-12, max_step: float = np.inf,
             stabilization: tuple[float, float] | None = (10.0, 10.0),
             projection_interval: float | None = None, project_initial: bool = False,
             rechart: bool = False, raise_on_failure: bool = True) -> SimulationResult:
    """Integrate the constrained equations of motion forward in time.

    Parameters
    ----------
    system : ConstrainedSystem
        Any system speaking the common interface.
    x0, xd0 : array_like, shape (n,)
        Initial coordinates and velocities; they should satisfy the
        constraints (set ``project_initial`` to project them first).
    inputs : None, array_like (nu,) or callable
        Zero, constant or time-dependent inputs ``u(t) -> (nu,)``.
    t_span : (float, float)
        Start and end times in s.
    feedback : callable, optional
        State feedback ``u(t, x, xd) -> (nu,)`` instead of ``inputs``
        (then pass ``inputs=None``). The 0.1 spelling, a three-argument
        callable as ``inputs``, works for one release with a
        ``DeprecationWarning``.
    t_eval : array_like, optional
        Output times (default: 501 evenly spaced).
    method : str
        Any ``scipy.integrate.solve_ivp`` method ("DOP853", "RK45", "Radau", "BDF", "LSODA").
    rtol, atol : float
        Integration tolerances (rtol down to 1e-13 is meaningful with DOP853).
    stabilization : (a, b) or None
        Baumgarte gains in 1/s; ``None`` integrates the bare index-1 equations.
    projection_interval : float, optional
        Project the state onto the constraint manifold every this many seconds.
    project_initial : bool
        Project ``(x0, xd0)`` onto the constraints before starting.
    rechart : bool
        When the state reaches the edge of the system's angle chart (the
        ball-plate's lean near 90 deg), switch to a fresh chart with
        ``system.rechart(x, xd)`` and go on; the switch times are returned
        in ``chart_changes``. Otherwise raise.
    raise_on_failure : bool
        Raise :class:`IntegrationError` when the integrator fails (default);
        otherwise return what was computed with ``success=False``.

    max_step : float
        Largest integrator step in s.

    Returns
    -------
    SimulationResult
        Use :meth:`SimulationResult.to_time_response` for python-control.

    Raises
    ------
    ChartSingularityError
        When the system reports that its angle chart became singular (the
        ball-plate's lean reaching ``LEAN_LIMIT``).
    """
    n, nu = system.n_coordinates, system.n_inputs
    x0 = as_vector(x0, "x0", n)
    xd0 = as_vector(xd0, "xd0", n)
    t_span = as_times(t_span, "t_span", increasing=True)
    if t_span.shape != (2,):
        raise ParameterError(f"t_span must be (t_start, t_end), got {t_span}")
    if t_eval is None:
        t_eval = np.linspace(t_span[0], t_span[1], 501)
    t_eval = as_times(t_eval, "t_eval", increasing=True)
    if t_eval[0] < t_span[0] - 1e-12 or t_eval[-1] > t_span[1] + 1e-12:
        raise ParameterError("t_eval must lie within t_span")
    if not (0 < rtol < 1) or not (0 < atol):
        raise ParameterError(f"rtol must be in (0, 1) and atol > 0, got rtol={rtol}, atol={atol}")
    ufun = input_function(inputs, nu, feedback=feedback)
    if project_initial:
        x0 = system.project_positions(x0)
        xd0 = system.project_velocities(x0, xd0, ufun(t_span[0], x0, xd0))

    def rhs(t, y):
        x, xd = y[:n], y[n:]
        xdd, _ = system.accelerations(x, xd, ufun(t, x, xd), stabilization=stabilization)
        return np.concatenate([xd, xdd])

    events = _chart_event(system)
    if projection_interval is not None:
        if projection_interval <= 0:
            raise ParameterError(f"projection_interval must be > 0 s, got {projection_interval}")
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
                    f"(for the ball-plate: |lean| reached the chart limit near 90 deg); pass rechart=True "
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
    return SimulationResult(t=t_out, x=X, xd=XD, u=U, position_residual=pos, velocity_residual=vel, nfev=int(nfev),
                            wall_time_s=wall, method=method, success=success, message=message,
                            chart_changes=tuple(changes), coordinate_names=tuple(system.coordinate_names),
                            input_names=tuple(system.input_names))


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
    """
    if steps < 1:
        raise ParameterError(f"steps must be >= 1, got {steps}")
    hs = h / steps
    y = np.asarray(y, dtype=float)
    for _ in range(steps):
        k1 = fun(t, y)
        k2 = fun(t + hs / 2, y + hs / 2 * k1)
        k3 = fun(t + hs / 2, y + hs / 2 * k2)
        k4 = fun(t + hs, y + hs * k3)
        y = y + hs / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + hs
    return y
