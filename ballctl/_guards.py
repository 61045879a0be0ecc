"""Runtime guards of an integration or a simulation loop: non-finite values, step and wall-clock budgets.

The guards (:func:`check_finite_at`, :func:`guard_rhs`, :func:`checked_input`,
:class:`StepBudget`) turn a NaN or an endless step loop into an
:class:`~ballctl._errors.IntegrationError` that says when (time in s) and which
quantity failed. Arguments are checked before the run by :mod:`ballctl._validation`.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Sequence

import numpy as np

from ._errors import IntegrationBudgetError, NonFiniteStateError, ParameterTypeError, ShapeError
from ._validation import check_callable, check_integer, check_positive, short_repr


def check_finite_at(values, *, time: float, quantity: str, names: Sequence[str] | None = None,
                    context: str = "") -> None:
    """Raise :class:`NonFiniteStateError` if ``values`` holds NaN or inf, saying when and where.

    Parameters
    ----------
    values : array_like
        The quantity at time ``time`` (state, derivative, input...).
    time : float
        Time in s, reported in the message.
    quantity : str
        What ``values`` is (e.g. ``"state"``, ``"input u"``).
    names : sequence of str, optional
        Names of the entries of ``values`` (flattened), to name the first bad one.
    context : str
        Where the run happened (e.g. ``"simulate"``), prefixed to the message.
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "fc" and np.all(np.isfinite(arr)):
        return
    try:
        time = float(np.real(np.ravel(np.asarray(time, dtype=complex))[0]))
    except (TypeError, ValueError, IndexError):
        time = float("nan")
    if arr.dtype.kind not in "fcbiu":
        try:
            arr = np.asarray(arr, dtype=complex)
        except (TypeError, ValueError) as exc:
            raise NonFiniteStateError(f"{context + ': ' if context else ''}{quantity} at t = {time:.6g} s is "
                                      f"not numeric ({short_repr(values)})", time=time, quantity=quantity) from exc
        if np.all(np.isfinite(arr)):
            return
    elif arr.dtype.kind in "biu":
        return
    flat = arr.reshape(-1)
    bad = np.flatnonzero(~np.isfinite(flat))
    i = int(bad[0])
    which = names[i] if names is not None and i < len(names) else f"entry {i}"
    raise NonFiniteStateError(
        f"{context + ': ' if context else ''}{quantity} became non-finite at t = {time:.6g} s "
        f"({which} = {flat[i]}; {bad.size} of {flat.size} entries non-finite)", time=float(time), quantity=quantity)


class StepBudget:
    """A step and wall-clock budget for a loop a user could make endless.

    Parameters
    ----------
    what : str
        Name of the run, used in messages.
    max_steps : int, optional
        Largest number of :meth:`tick` calls.
    max_wall_s : float, optional
        Largest wall-clock time in s since construction.

    Examples
    --------
    >>> budget = StepBudget("demo", max_steps=2)
    >>> budget.tick(0.0); budget.tick(0.1)
    >>> budget.tick(0.2)
    Traceback (most recent call last):
    ...
    ballctl._errors.IntegrationBudgetError: demo: step budget of 2 steps exhausted at t = 0.2 s ...
    """

    def __init__(self, what: str, *, max_steps: int | None = None, max_wall_s: float | None = None) -> None:
        self.what = what
        self.max_steps = None if max_steps is None else check_integer(max_steps, "max_steps", minimum=1)
        self.max_wall_s = None if max_wall_s is None else check_positive(max_wall_s, "max_wall_s", "s")
        self.steps = 0
        self._start = _time.perf_counter()

    def tick(self, t: float) -> None:
        """Count one step at time ``t`` (s); raise :class:`IntegrationBudgetError` when the budget is spent.

        Parameters
        ----------
        t : float
            Simulated time in s of the step.
        """
        self.steps += 1
        if self.max_steps is not None and self.steps > self.max_steps:
            raise IntegrationBudgetError(
                f"{self.what}: step budget of {self.max_steps} steps exhausted at t = {t:.6g} s "
                f"(the step size collapsed or the horizon is too long; raise max_steps to allow more)",
                time=float(t), quantity="steps")
        if self.max_wall_s is not None and (self.steps & 63) == 0:
            elapsed = _time.perf_counter() - self._start
            if elapsed > self.max_wall_s:
                raise IntegrationBudgetError(
                    f"{self.what}: wall-clock budget of {self.max_wall_s:g} s exhausted at t = {t:.6g} s "
                    f"after {self.steps} steps (raise max_wall_s to allow more)", time=float(t), quantity="wall time")


def guard_rhs(fun: Callable, *, context: str, names: Sequence[str] | None = None,
              budget: StepBudget | None = None) -> Callable:
    """Wrap an ODE right-hand side ``fun(t, y)`` so a non-finite state or derivative raises.

    Without the guard a NaN derivative makes an adaptive solver's step size
    NaN, and its step loop never ends.

    Parameters
    ----------
    fun : callable
        ``fun(t, y) -> ydot``.
    context : str
        Name of the run, used in messages.
    names : sequence of str, optional
        Names of the state entries.
    budget : StepBudget, optional
        Ticked once per evaluation.

    Returns
    -------
    callable
        ``guarded(t, y) -> ydot`` raising :class:`NonFiniteStateError`.
    """

    def guarded(t, y):
        check_finite_at(y, time=t, quantity="state", names=names, context=context)
        out = fun(t, y)
        check_finite_at(out, time=t, quantity="state derivative", names=names, context=context)
        if budget is not None:
            budget.tick(t)
        return out

    return guarded


def checked_input(fun: Callable, name: str, size: int, *, context: str = "") -> Callable:
    """Wrap a user's input function ``u(t)`` so a wrong shape or a NaN names the time and the input.

    Parameters
    ----------
    fun : callable
        ``fun(t) -> (size,)``.
    name : str
        Parameter name used in error messages.
    size : int
        Number of inputs.
    context : str
        Name of the run, used in messages.

    Returns
    -------
    callable
        ``u(t) -> ndarray, shape (size,)``.
    """
    check_callable(fun, name, f"u(t) -> ({size},)")

    def u(t):
        value = fun(t)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ParameterTypeError(f"{name} returned a non-numeric value at t = {t:.6g} s: "
                                     f"{short_repr(value)}") from exc
        if arr.shape != (size,):
            raise ShapeError(f"{name} must return shape ({size},), got shape {arr.shape} at t = {t:.6g} s")
        if not np.all(np.isfinite(arr)):
            check_finite_at(arr, time=t, quantity=name, context=context)
        return arr

    return u
