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
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ._errors import IntegrationError, ParameterError
from ._validation import (as_time_span, as_times, as_vector, check_callable, check_ivp_method, check_tolerances,
                          guard_rhs)

__all__ = ["ODETrajectory", "integrate_piecewise"]

#: ``solve_ivp`` methods that use a Jacobian
IMPLICIT_METHODS = ("Radau", "BDF", "LSODA")


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

    @property
    def n_rhs_evaluations(self) -> int:
        """Deprecated spelling of :attr:`nfev` (removed in the next release)."""
        warnings.warn("ODETrajectory.n_rhs_evaluations is deprecated; use nfev", DeprecationWarning, stacklevel=2)
        return self.nfev


def integrate_piecewise(fun: Callable[[float, np.ndarray], np.ndarray], x0, t_span, *,
                        breakpoints: Sequence[float] = (), method: str = "DOP853", rtol: float = 1e-10,
                        atol: float = 1e-10, t_eval=None,
                        jac: Callable[[float, np.ndarray], np.ndarray] | None = None,
                        event: Callable[[float, np.ndarray], float] | None = None,
                        event_error: Callable[[float, np.ndarray], str] | None = None) -> ODETrajectory:
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
    method : str
        Any ``solve_ivp`` method.
    rtol, atol : float
        Integration tolerances.
    t_eval : array_like, optional
        Output times; the end time is always included. ``None`` returns
        the integrator's own steps.
    jac : callable, optional
        ``jac(t, x) -> (nx, nx)``, passed to the implicit methods
        (``Radau``, ``BDF``, ``LSODA``) only.
    event : callable, optional
        ``event(t, x) -> float``, positive while the state is admissible; the
        run stops with an error when it crosses zero (and is refused if it is
        not positive at ``t0``).
    event_error : callable, optional
        ``event_error(t, x) -> str``: the message of that error.

    Returns
    -------
    ODETrajectory

    Raises
    ------
    ParameterError
        If ``t_span``, ``t_eval``, ``breakpoints``, ``method`` or the tolerances
        are invalid, or ``event`` is crossed.
    NonFiniteStateError
        If the state or its derivative becomes NaN or infinite (the message
        gives the time and the entry); without this check the adaptive step
        becomes NaN and the solver never returns.
    IntegrationError
        If ``solve_ivp`` fails on a piece (the message names the piece and the time).
    """
    check_callable(fun, "fun", "fun(t, x) -> (nx,)")
    t0, t1 = as_time_span(t_span)
    method = check_ivp_method(method)
    rtol, atol = check_tolerances(rtol, atol)
    x0 = as_vector(x0, "x0")
    breakpoints = as_times(breakpoints, "breakpoints") if np.size(breakpoints) else ()
    cuts = [t0] + sorted(float(b) for b in breakpoints if t0 < float(b) < t1) + [t1]
    if t_eval is not None:
        t_eval = as_times(t_eval, "t_eval", increasing=True)
        if t_eval[0] < t0 or t_eval[-1] > t1:
            raise ParameterError(f"t_eval must lie within t_span = [{t0:g}, {t1:g}] s, got "
                                 f"[{t_eval[0]:g}, {t_eval[-1]:g}] s")
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
        sol = solve_ivp(fun, (a, b), x, method=method, rtol=rtol, atol=atol, t_eval=piece_eval, events=event,
                        **kwargs)
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
