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
    x : ndarray, shape (K, nx)
        States (layout of the plant that produced it).
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
                        jac: Callable[[float, np.ndarray], np.ndarray] | None = None) -> ODETrajectory:
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

    Returns
    -------
    ODETrajectory

    Raises
    ------
    ValueError
        If ``t_span`` is not increasing.
    IntegrationError
        If ``solve_ivp`` fails on a piece (the message names the piece).
    """
    t0, t1 = (float(v) for v in t_span)
    if not t1 > t0:
        raise ParameterError(f"t_span must be (t0, t1) with t1 > t0 in s, got {t_span!r}")
    cuts = [t0] + sorted(float(b) for b in breakpoints if t0 < float(b) < t1) + [t1]
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float)
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
        sol = solve_ivp(fun, (a, b), x, method=method, rtol=rtol, atol=atol, t_eval=piece_eval, **kwargs)
        if not sol.success:
            raise IntegrationError(f"{method} failed on [{a}, {b}] s: {sol.message}")
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
