"""Integration of plain ODE plants ``x_dot = f(t, x)`` across kinks of their input.

The rolling ball and disk (:mod:`ballctl.plants`) are ODE plants: their
``simulate`` methods call :func:`integrate_piecewise`, which restarts
``scipy.integrate.solve_ivp`` at every breakpoint of the input so that no
step straddles a kink (a high-order method loses its order there), and
returns an :class:`ODETrajectory`. Nothing here knows about a particular
plant.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.integrate import solve_ivp

from ._errors import IntegrationError, ParameterError, ParameterTypeError
from ._guards import guard_rhs
from ._validation import (as_time_span, as_times, as_vector, check_callable, check_ivp_method, check_positive,
                          check_tolerances)

__all__ = ["IntegrationOptions", "ODETrajectory", "integrate_piecewise"]

#: ``solve_ivp`` methods that use a Jacobian
IMPLICIT_METHODS = ("Radau", "BDF", "LSODA")


@dataclass(frozen=True, kw_only=True)
class IntegrationOptions:
    """How a plant's equations are integrated by ``scipy.integrate.solve_ivp``: the one options type of
    :func:`integrate_piecewise`, the ODE plants' ``simulate``, :class:`~ballctl.references.rolling.IntegratedReference`
    and (extended by :class:`~ballctl.simulate.SimulationOptions`) :func:`ballctl.simulate`.

    Attributes
    ----------
    method : str
        Any ``solve_ivp`` method: ``"DOP853"`` (default), ``"RK45"``, ``"RK23"``, ``"Radau"``, ``"BDF"``,
        ``"LSODA"``.
    rtol : float or None
        Relative tolerance (dimensionless), ``100 eps <= rtol < 1``; down to 1e-13 is meaningful with DOP853.
        None: the default of the function it is passed to (1e-10; an ODE plant's ``default_tolerance``).
    atol : float or None
        Absolute tolerance in the units of the state (m, rad, m/s, rad/s), > 0. None: the default of the
        function it is passed to (1e-12 for :func:`ballctl.simulate` and ``IntegratedReference``, 1e-10 for
        :func:`integrate_piecewise`, an ODE plant's ``default_tolerance``).
    max_step : float
        Largest integrator step in s, > 0 (``inf``: no limit, scipy's default).

    Examples
    --------
    >>> IntegrationOptions(method="Radau", rtol=1e-8, atol=1e-10).method
    'Radau'
    >>> IntegrationOptions().resolved(1e-10, 1e-12).atol
    1e-12
    """

    method: str = "DOP853"
    rtol: float | None = None
    atol: float | None = None
    max_step: float = np.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", check_ivp_method(self.method))
        rtol, atol = check_tolerances(1e-10 if self.rtol is None else self.rtol,
                                      1e-10 if self.atol is None else self.atol)
        object.__setattr__(self, "rtol", None if self.rtol is None else rtol)
        object.__setattr__(self, "atol", None if self.atol is None else atol)
        if not (isinstance(self.max_step, (float, np.floating)) and self.max_step == np.inf):
            object.__setattr__(self, "max_step", check_positive(self.max_step, "max_step", "s"))
        else:
            object.__setattr__(self, "max_step", float(self.max_step))

    def resolved(self, rtol: float, atol: float):
        """These options with the tolerances left at None set to a caller's defaults.

        Parameters
        ----------
        rtol, atol : float
            The defaults (dimensionless; the units of the state).

        Returns
        -------
        IntegrationOptions
        """
        return replace(self, rtol=rtol if self.rtol is None else self.rtol,
                       atol=atol if self.atol is None else self.atol)

    def solver_arguments(self) -> dict:
        """``{"method", "rtol", "atol", "max_step"}`` as keyword arguments of ``solve_ivp`` (tolerances resolved)."""
        if self.rtol is None or self.atol is None:
            raise ParameterError("resolve the default tolerances first: options.resolved(rtol, atol)")
        return {"method": self.method, "rtol": self.rtol, "atol": self.atol, "max_step": self.max_step}


@dataclass(frozen=True)
class ODETrajectory:
    """A simulated run of an ODE plant.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Times in s.
    x : ndarray, shape (K, nx) or (B, K, nx)
        States (layout of the plant that produced it); a batch of B runs
        integrated together (e.g. ``RollingBall.simulate`` of a stack) has a
        leading run axis.
    method : str
        Integrator used (a ``solve_ivp`` method name).
    nfev : int
        Right-hand-side evaluations, summed over the pieces between breakpoints.
    wall_time_s : float
        Wall-clock time of the integration in s.
    """

    t: np.ndarray
    x: np.ndarray
    method: str
    nfev: int
    wall_time_s: float


def integrate_piecewise(fun: Callable[[float, np.ndarray], np.ndarray], x0, t_span, *,
                        breakpoints: Sequence[float] = (), t_eval=None, options: IntegrationOptions | None = None,
                        jac: Callable[[float, np.ndarray], np.ndarray] | None = None,
                        event: Callable[[float, np.ndarray], float] | None = None) -> ODETrajectory:
    """Integrate ``x_dot = fun(t, x)`` with ``solve_ivp``, restarting at every breakpoint.

    Parameters
    ----------
    fun : callable
        ``fun(t, x) -> (nx,)``, the right-hand side.
    x0 : array_like, shape (nx,)
        Initial state.
    t_span : (float, float)
        Start and end time in s, ``t1 > t0``.
    breakpoints : sequence of float
        Times in s where ``fun`` is not smooth in t (kinks of an input);
        those inside ``t_span`` split the integration.
    t_eval : array_like, optional
        Output times; the end time is always included. ``None`` returns
        the integrator's own steps.
    options : IntegrationOptions, optional
        Method, tolerances and largest step (default ``IntegrationOptions()``: DOP853,
        ``rtol = atol = 1e-10``).
    jac : callable, optional
        ``jac(t, x) -> (nx, nx)``, passed to the implicit methods
        (``Radau``, ``BDF``, ``LSODA``) only.
    event : callable, optional
        ``event(t, x) -> float``, positive while the state is admissible; the
        run stops with an error when it crosses zero (and is refused if it is
        not positive at ``t0``). An attribute ``event.describe(t, x) -> str``,
        when present, gives the message of that error (as
        :func:`~ballctl.plants.internal_masses.rail_exit_event` builds it).

    Returns
    -------
    ODETrajectory

    Raises
    ------
    ParameterError
        If ``t_span``, ``t_eval`` or ``breakpoints`` are invalid, or ``event`` is crossed.
    NonFiniteStateError
        If the state or its derivative becomes NaN or infinite (the message
        gives the time and the entry); without this check the adaptive step
        becomes NaN and the solver never returns.
    IntegrationError
        If ``solve_ivp`` fails on a piece (the message names the piece and the time).
    """
    check_callable(fun, "fun", "fun(t, x) -> (nx,)")
    t0, t1 = as_time_span(t_span)
    options = as_integration_options(options).resolved(1e-10, 1e-10)
    method = options.method
    x0 = as_vector(x0, "x0")
    breakpoints = as_times(breakpoints, "breakpoints") if np.size(breakpoints) else ()
    cuts = [t0] + sorted(float(b) for b in breakpoints if t0 < float(b) < t1) + [t1]
    if t_eval is not None:
        t_eval = as_times(t_eval, "t_eval", increasing=True)
        if t_eval[0] < t0 or t_eval[-1] > t1:
            raise ParameterError(f"t_eval must lie within t_span = [{t0:g}, {t1:g}] s, got "
                                 f"[{t_eval[0]:g}, {t_eval[-1]:g}] s")
    event_error = getattr(event, "describe", None)
    if event is not None:
        event.terminal = True
        event.direction = -1
        if event(t0, x0) <= 0.0:
            raise ParameterError(f"x0 is not admissible: {event_error(t0, x0) if event_error else 'event <= 0'}")
    fun = guard_rhs(fun, context="simulate")
    ts, xs = [np.array([t0])], [np.asarray(x0, dtype=float)[None, :]]
    nfev = 0
    x = np.asarray(x0, dtype=float)
    start = time.perf_counter()
    kwargs = {"jac": jac} if (jac is not None and method in IMPLICIT_METHODS) else {}
    for a, b in zip(cuts[:-1], cuts[1:]):
        if t_eval is not None:
            piece_eval = t_eval[(t_eval > a) & (t_eval <= b)]
            if piece_eval.size == 0 or piece_eval[-1] != b:
                piece_eval = np.append(piece_eval, b)
        else:
            piece_eval = None
        sol = solve_ivp(fun, (a, b), x, t_eval=piece_eval, events=event, **options.solver_arguments(), **kwargs)
        if not sol.success:
            raise IntegrationError(f"{method} failed on [{a}, {b}] s at t = {sol.t[-1]:.6g} s: {sol.message}",
                                   time=float(sol.t[-1]))
        if sol.status == 1:
            t_hit, x_hit = float(sol.t_events[0][0]), sol.y_events[0][0]
            raise ParameterError(event_error(t_hit, x_hit) if event_error else
                                 f"the state left its admissible region at t = {t_hit:.6g} s")
        nfev += sol.nfev
        ts.append(sol.t)
        xs.append(sol.y.T)
        x = sol.y[:, -1]
    wall = time.perf_counter() - start
    t = np.concatenate(ts)
    xk = np.concatenate(xs)
    if t_eval is not None:
        keep = np.isin(t, t_eval) if t_eval.size else np.ones(t.shape, bool)
        keep[-1] = keep[-1] or t_eval.size == 0
        t, xk = t[keep], xk[keep]
    return ODETrajectory(t=t, x=xk, method=method, nfev=int(nfev), wall_time_s=wall)


def as_integration_options(options) -> IntegrationOptions:
    """``options`` itself, ``IntegrationOptions()`` for None, or a ParameterTypeError."""
    if options is None:
        return IntegrationOptions()
    if not isinstance(options, IntegrationOptions):
        raise ParameterTypeError(f"options must be an IntegrationOptions (method, rtol, atol, max_step), got "
                                 f"{type(options).__name__}")
    return options
