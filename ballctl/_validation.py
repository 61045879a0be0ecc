"""One place that coerces and checks arguments, and guards integrations.

Every public function funnels its user input through these helpers so that
error messages share one wording: the parameter's name, its unit, what was
expected (the allowed range or shape) and what was received. Every error is a
:class:`~ballctl._errors.BallctlError` that also derives from the builtin a
caller expects (``ValueError``/``TypeError``).

The integration guards (:func:`check_finite_at`, :func:`guard_rhs`,
:class:`StepBudget`) turn a NaN or an endless step loop into an
:class:`~ballctl._errors.IntegrationError` that says when (time in s) and which
quantity failed.
"""

from __future__ import annotations

import numbers
import os
import time as _time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ._errors import (FileArgumentError, IntegrationBudgetError, MissingFileError, NonFiniteStateError,
                      ParameterError, ParameterTypeError, ShapeError)

__all__ = ["as_array", "as_vector", "as_matrix", "as_stack", "as_system_stacks", "as_time_span", "as_times",
           "check_uniform_spacing", "check_integer",
           "check_finite_scalar", "check_positive", "check_nonnegative", "check_in_range", "check_choice",
           "check_callable", "check_instance", "check_bool", "check_stabilization", "check_tolerances",
           "check_ivp_method", "IVP_METHODS", "names_tuple", "ProblemCollector",
           "check_output_path", "check_output_dir", "check_input_file", "check_finite_at", "guard_rhs",
           "checked_input", "StepBudget", "SPACING_RTOL"]

#: Relative tolerance of a uniform time grid: times built with ``np.arange`` or
#: ``np.linspace`` differ from ``k * dt`` by a few ulps of ``max|t|``; anything
#: beyond 1e-9 of a step is a genuine mismatch.
SPACING_RTOL = 1e-9


def _u(unit: str) -> str:
    return f" {unit}" if unit else ""


def _short(value) -> str:
    """A short repr of a user value for messages (arrays are summarised)."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}" if value.size > 6 else np.array2string(value, threshold=6)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _shape_text(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ------------------------------------------------------------------ arrays
def as_array(value, name: str, *, shape: Sequence[int | None] | None = None, ndim: int | None = None,
             unit: str = "", allow_complex: bool = False, finite: bool = True) -> np.ndarray:
    """Return ``value`` as a float (or complex) array, checking its shape and finiteness.

    Parameters
    ----------
    value : array_like
        The user's input.
    name : str
        Parameter name used in error messages.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries accept any length on that axis.
    ndim : int, optional
        Required number of dimensions (implied by ``shape`` when given).
    unit : str
        Unit of the values, used in messages.
    allow_complex : bool
        Keep complex dtypes (used by complex-step differentiation).
    finite : bool
        Require every entry to be finite.

    Returns
    -------
    ndarray
        The coerced array (not copied when already float).

    Raises
    ------
    ParameterTypeError
        If ``value`` is not numeric (strings, None, objects).
    ShapeError
        If the shape differs from the required one or ``value`` is ragged.
    ParameterError
        If an entry is NaN or infinite and ``finite`` is set.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise ParameterTypeError(f"{name} must be a numeric array{_u(unit and 'in ' + unit)}, got {_short(value)}")
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nested sequences
        raise ShapeError(f"{name} must be a rectangular numeric array, got a ragged sequence") from exc
    if allow_complex and np.iscomplexobj(arr) and arr.dtype != object:
        arr = arr.astype(complex, copy=False)
    else:
        if np.iscomplexobj(arr):
            raise ParameterTypeError(f"{name} must be real, got complex values")
        if arr.dtype.kind not in "biuf":
            try:
                arr = np.asarray(arr, dtype=float)
            except (TypeError, ValueError) as exc:
                raise ParameterTypeError(f"{name} must be numeric{_u(unit and '(' + unit + ')')}, "
                                         f"got {_short(value)}") from exc
        elif arr.dtype.kind == "b":
            raise ParameterTypeError(f"{name} must be numeric, got booleans")
        arr = arr.astype(float, copy=False)
    if shape is not None:
        shape = tuple(shape)
        ndim = len(shape)
    if ndim is not None and arr.ndim != ndim:
        want = _shape_text(shape) if shape is not None else f"{ndim}-D"
        raise ShapeError(f"{name} must have shape {want}, got shape {arr.shape}")
    if shape is not None and any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        raise ShapeError(f"{name} must have shape {_shape_text(shape)}, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = f" (first at index {tuple(int(i) for i in bad[0])})" if arr.ndim else ""
        raise ParameterError(f"{name} must be finite, got {bad.shape[0]} NaN/inf entr"
                             f"{'y' if bad.shape[0] == 1 else 'ies'}{where}")
    return arr


def as_vector(value, name: str, size: int | None = None, *, unit: str = "",
              allow_complex: bool = False) -> np.ndarray:
    """Return ``value`` as a finite 1-D float array, checking its length (a scalar becomes length 1).

    Parameters
    ----------
    value : array_like
        The user's input.
    name : str
        Parameter name used in error messages.
    size : int, optional
        Required length.
    unit : str
        Unit of the entries, used in messages.
    allow_complex : bool
        Keep complex dtypes (used by complex-step differentiation).

    Returns
    -------
    ndarray, shape (size,)
    """
    arr = as_array(value, name, unit=unit, allow_complex=allow_complex)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be a 1-D array{'' if size is None else f' of length {size}'}, "
                         f"got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ShapeError(f"{name} must have length {size}, got length {arr.shape[0]}")
    return arr


def as_matrix(value, name: str, shape: tuple[int, int] | None = None, *, unit: str = "") -> np.ndarray:
    """Return ``value`` as a finite 2-D float array of the given shape (a scalar fits shape (1, 1)).

    Parameters
    ----------
    value : array_like
        The user's input.
    name : str
        Parameter name used in error messages.
    shape : tuple of int, optional
        Required shape.
    unit : str
        Unit of the entries, used in messages.

    Returns
    -------
    ndarray, shape (rows, cols)
    """
    arr = as_array(value, name, unit=unit)
    if arr.ndim == 0 and shape is not None and tuple(shape) == (1, 1):
        arr = arr.reshape(1, 1)
    return as_array(arr, name, shape=(None, None) if shape is None else shape, unit=unit)


def as_stack(value, name: str, shape: Sequence[int | None], *, unit: str = "",
             allow_constant: bool = False, min_length: int = 0) -> np.ndarray:
    """Return a time series of arrays, shape ``(K, *shape[1:])`` (time axis first, conventions point 4).

    Parameters
    ----------
    value : array_like
        The user's stack.
    name : str
        Parameter name used in error messages.
    shape : sequence of int or None
        Required shape including the leading time axis; ``None`` accepts any length.
    unit : str
        Unit of the entries, used in messages.
    allow_constant : bool
        Accept one array of shape ``shape[1:]`` and broadcast it along the time
        axis (requires ``shape[0]``).
    min_length : int
        Smallest accepted number of samples K.

    Returns
    -------
    ndarray, shape (K, ...)
    """
    shape = tuple(shape)
    arr = as_array(value, name, unit=unit)
    if allow_constant and shape[0] is not None and arr.ndim == len(shape) - 1:
        if any(s is not None and s != a for s, a in zip(shape[1:], arr.shape)):
            raise ShapeError(f"{name} must have shape {_shape_text(shape[1:])} or {_shape_text(shape)}, "
                             f"got shape {arr.shape}")
        return np.broadcast_to(arr, (shape[0],) + arr.shape)
    if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        alt = f" or {_shape_text(shape[1:])}" if allow_constant else ""
        raise ShapeError(f"{name} must have shape {_shape_text(shape)}{alt}, got shape {arr.shape}")
    if arr.shape[0] < min_length:
        raise ShapeError(f"{name} must hold at least {min_length} sample{'s' if min_length != 1 else ''}, "
                         f"got {arr.shape[0]}")
    return arr


def as_system_stacks(A, B, names: tuple[str, str] = ("A", "B"), *, min_length: int = 1
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Return finite state and input matrix stacks ``A (K, N, N)``, ``B (K, N, nu)`` (conventions point 4).

    Parameters
    ----------
    A, B : array_like
        The user's stacks.
    names : (str, str)
        Parameter names used in error messages.
    min_length : int
        Smallest accepted number of samples K.

    Returns
    -------
    A : ndarray, shape (K, N, N)
    B : ndarray, shape (K, N, nu)
    """
    a, b = names
    A = as_array(A, a, ndim=3)
    if A.shape[1] != A.shape[2]:
        raise ShapeError(f"{a} must have shape (K, N, N), got shape {A.shape}")
    B = as_array(B, b, ndim=3)
    if B.shape[:2] != A.shape[:2]:
        raise ShapeError(f"{b} must have shape (K, N, nu) = ({A.shape[0]}, {A.shape[1]}, nu), got shape {B.shape}")
    if A.shape[0] < min_length:
        raise ShapeError(f"{a} must hold at least {min_length} step{'s' if min_length != 1 else ''}, got {A.shape[0]}")
    return A, B


def as_times(value, name: str = "t", *, increasing: bool = False, min_size: int = 1) -> np.ndarray:
    """Return times in s as a finite 1-D float array (a scalar becomes length 1).

    Parameters
    ----------
    value : float or array_like
        The user's times in s.
    name : str
        Parameter name used in error messages.
    increasing : bool
        Require strictly increasing times.
    min_size : int
        Smallest accepted number of times.

    Returns
    -------
    ndarray, shape (K,)
    """
    arr = as_array(value, name, unit="s")
    arr = np.atleast_1d(arr)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be a scalar or a 1-D array of times in s, got shape {arr.shape}")
    if arr.size < min_size:
        raise ShapeError(f"{name} must hold at least {min_size} time{'s' if min_size != 1 else ''} in s, "
                         f"got {arr.size}")
    if increasing and arr.size > 1 and np.any(np.diff(arr) <= 0):
        k = int(np.flatnonzero(np.diff(arr) <= 0)[0])
        raise ParameterError(f"{name} must be strictly increasing (s), but {name}[{k + 1}] = {arr[k + 1]!r} "
                             f"<= {name}[{k}] = {arr[k]!r}")
    return arr


def as_time_span(value, name: str = "t_span") -> tuple[float, float]:
    """Return an integration interval ``(t0, t1)`` in s with ``t1 > t0``, both finite.

    Parameters
    ----------
    value : array_like, shape (2,)
        The user's interval in s.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    (float, float)
    """
    span = as_times(value, name, increasing=True)
    if span.shape != (2,):
        raise ShapeError(f"{name} must be (t0, t1) with t1 > t0 in s, got {span!r}")
    return float(span[0]), float(span[1])


def check_uniform_spacing(times: np.ndarray, name: str = "times", dt: float | None = None, *,
                          rtol: float = SPACING_RTOL, hint: str = "") -> float:
    """Check that ``times`` (s) are uniformly spaced (with step ``dt`` when given); return the step in s.

    The tolerance is ``rtol * step + 64 eps max|t|`` (grids built with
    ``arange``/``linspace`` differ from ``k * dt`` by a few ulps of ``max|t|``).

    Parameters
    ----------
    times : ndarray, shape (K,)
        Increasing sample times in s (K >= 2).
    name : str
        Parameter name used in error messages.
    dt : float, optional
        Required step in s.
    rtol : float
        Relative tolerance on the step.
    hint : str
        Advice appended to the message.

    Returns
    -------
    float
        The step in s (``dt`` when given, else the mean step).
    """
    times = np.asarray(times, dtype=float)
    if times.size < 2:
        if dt is None:
            raise ShapeError(f"{name} must hold at least 2 times to define a step")
        return float(dt)
    steps = np.diff(times)
    step = float(steps.mean()) if dt is None else float(dt)
    tol = rtol * abs(step) + 64 * np.finfo(float).eps * float(np.max(np.abs(times)))
    if np.all(np.abs(steps - step) <= tol):
        return step
    want = f"with step dt={dt!r} s" if dt is not None else "uniformly spaced"
    raise ParameterError(f"{name} must be {want} (to {rtol:.0e} of a step); the steps range from "
                         f"{steps.min()!r} to {steps.max()!r} s{hint}")


# ------------------------------------------------------------------ scalars
def check_integer(value, name: str, *, minimum: int | None = None, maximum: int | None = None,
                  hint: str = "") -> int:
    """Return ``value`` as an int, raising unless it is an integer (not a bool) in ``[minimum, maximum]``.

    Parameters
    ----------
    value : int
        The user's input (Python or numpy integer; integral floats are rejected too).
    name : str
        Parameter name used in error messages.
    minimum, maximum : int, optional
        Inclusive bounds.
    hint : str
        Advice appended to the message (e.g. the equation it enters).

    Returns
    -------
    int
    """
    rng = ("" if minimum is None and maximum is None else
           f" >= {minimum}" if maximum is None else
           f" <= {maximum}" if minimum is None else f" in [{minimum}, {maximum}]")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ParameterTypeError(f"{name} must be an integer{rng}{hint}, got {_short(value)}")
    out = int(value)
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        raise ParameterError(f"{name} must be an integer{rng}{hint}, got {out}")
    return out


def check_finite_scalar(value, name: str, unit: str = "") -> float:
    """Return ``value`` as a finite float.

    Parameters
    ----------
    value : float
        The user's input (a real number; bools, strings and arrays are rejected).
    name : str
        Parameter name used in error messages.
    unit : str
        Unit of the value, used in messages.

    Returns
    -------
    float
    """
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None or isinstance(value, complex):
        raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, got {_short(value)}")
    if isinstance(value, np.ndarray):
        if value.size != 1 or np.iscomplexobj(value):
            raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, "
                                     f"got {_short(value)}")
        value = value.reshape(()).item()
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, "
                                 f"got {_short(value)}") from exc
    if not np.isfinite(out):
        raise ParameterError(f"{name} must be finite{_u(unit and '(' + unit + ')')}, got {value!r}")
    return out


def check_positive(value, name: str, unit: str = "") -> float:
    """Return ``value`` as a float, raising unless it is finite and > 0.

    Parameters
    ----------
    value : float
        The user's input.
    name : str
        Parameter name used in error messages.
    unit : str
        Unit of the value, used in messages.

    Returns
    -------
    float
    """
    out = check_finite_scalar(value, name, unit)
    if out <= 0.0:
        raise ParameterError(f"{name} must be > 0{_u(unit)}, got {value!r}")
    return out


def check_nonnegative(value, name: str, unit: str = "") -> float:
    """Return ``value`` as a float, raising unless it is finite and >= 0.

    Parameters
    ----------
    value : float
        The user's input.
    name : str
        Parameter name used in error messages.
    unit : str
        Unit of the value, used in messages.

    Returns
    -------
    float
    """
    out = check_finite_scalar(value, name, unit)
    if out < 0.0:
        raise ParameterError(f"{name} must be >= 0{_u(unit)}, got {value!r}")
    return out


def check_in_range(value, name: str, low: float, high: float, *, unit: str = "",
                   low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` as a float, raising unless it lies in the given interval.

    Parameters
    ----------
    value : float
        The user's input.
    name : str
        Parameter name used in error messages.
    low, high : float
        Bounds of the interval (may be infinite).
    unit : str
        Unit of the value and bounds, used in messages.
    low_inclusive, high_inclusive : bool
        Whether the bounds belong to the interval.

    Returns
    -------
    float
    """
    out = check_finite_scalar(value, name, unit)
    ok_low = out >= low if low_inclusive else out > low
    ok_high = out <= high if high_inclusive else out < high
    if not (ok_low and ok_high):
        lb = "[" if low_inclusive else "("
        hb = "]" if high_inclusive else ")"
        raise ParameterError(f"{name} must lie in {lb}{low:g}, {high:g}{hb}{_u(unit)}, got {value!r}")
    return out


def check_choice(value, name: str, choices: Sequence):
    """Return ``value`` if it is one of ``choices``, else raise naming the allowed values.

    Parameters
    ----------
    value : object
        The user's input.
    name : str
        Parameter name used in error messages.
    choices : sequence
        The allowed values.

    Returns
    -------
    object
        ``value``.
    """
    try:
        ok = value in tuple(choices)
    except TypeError:  # unhashable or incomparable
        ok = False
    if not ok:
        raise ParameterError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {_short(value)}")
    return value


def check_bool(value, name: str) -> bool:
    """Return ``value`` if it is a bool (Python or numpy), else raise.

    Parameters
    ----------
    value : bool
        The user's input.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    bool
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterTypeError(f"{name} must be True or False, got {_short(value)}")
    return bool(value)


def check_callable(value, name: str, signature: str = ""):
    """Return ``value`` if it is callable, else raise naming the expected signature.

    Parameters
    ----------
    value : callable
        The user's input.
    name : str
        Parameter name used in error messages.
    signature : str
        Expected call signature, e.g. ``"u(t) -> (nu,)"``.

    Returns
    -------
    callable
    """
    if not callable(value):
        sig = f" {signature}" if signature else ""
        raise ParameterTypeError(f"{name} must be callable{sig}, got {type(value).__name__} {_short(value)}")
    return value


def check_instance(value, name: str, types, what: str | None = None):
    """Return ``value`` if it is an instance of ``types``, else raise naming the expected kind.

    Parameters
    ----------
    value : object
        The user's input.
    name : str
        Parameter name used in error messages.
    types : type or tuple of type
        Accepted types.
    what : str, optional
        Human description of the expected kind (default: the type names).

    Returns
    -------
    object
        ``value``.
    """
    if not isinstance(value, types):
        if what is None:
            tup = types if isinstance(types, tuple) else (types,)
            what = " or ".join(t.__name__ for t in tup)
        raise ParameterTypeError(f"{name} must be a {what}, got {type(value).__name__}")
    return value


def check_stabilization(value, name: str = "stabilization") -> tuple[float, float] | None:
    """Return Baumgarte gains ``(a, b)`` in 1/s as floats, or None; both must be finite and >= 0.

    Negative gains make the constraint drift grow instead of decay.

    Parameters
    ----------
    value : (float, float) or None
        The user's gains.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    (float, float) or None
    """
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or len(value) != 2:
        raise ParameterTypeError(f"{name} must be None or a pair (a, b) of Baumgarte gains in 1/s, "
                                 f"got {_short(value)}")
    a = check_nonnegative(value[0], f"{name}[0]", "1/s")
    b = check_nonnegative(value[1], f"{name}[1]", "1/s")
    return a, b


def check_tolerances(rtol, atol, *, rtol_name: str = "rtol", atol_name: str = "atol") -> tuple[float, float]:
    """Return integration tolerances after checking ``100 eps <= rtol < 1`` and ``atol > 0`` (never clipped).

    ``solve_ivp`` would silently raise an ``rtol`` below ``100 eps`` (2.2e-14)
    with a warning; here it is an error. ``atol`` must be a normal float
    (>= 2.2e-308).

    Parameters
    ----------
    rtol, atol : float
        Relative and absolute tolerances (atol in the units of the state).
    rtol_name, atol_name : str
        Parameter names used in error messages.

    Returns
    -------
    (float, float)
    """
    rtol = check_in_range(rtol, rtol_name, 100 * np.finfo(float).eps, 1.0, high_inclusive=False)
    atol = check_in_range(atol, atol_name, np.finfo(float).tiny, np.inf)
    return rtol, atol


#: The methods of ``scipy.integrate.solve_ivp``.
IVP_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


def check_ivp_method(value, name: str = "method", extra: Sequence[str] = ()) -> str:
    """Return ``value`` if it names a ``solve_ivp`` method (or one of ``extra``), else raise.

    Parameters
    ----------
    value : str
        The user's method.
    name : str
        Parameter name used in error messages.
    extra : sequence of str
        Further accepted names (e.g. ``"rk4"``).

    Returns
    -------
    str
    """
    return check_choice(value, name, IVP_METHODS + tuple(extra))


def names_tuple(names: Sequence[str] | None, count: int, default_prefix: str, name: str) -> tuple[str, ...]:
    """Validate a sequence of unique names of the given length (or build defaults).

    Parameters
    ----------
    names : sequence of str or None
        The user's names; None builds ``default_prefix0, default_prefix1, ...``.
    count : int
        Required number of names.
    default_prefix : str
        Prefix of the default names.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    tuple of str
    """
    if names is None:
        return tuple(f"{default_prefix}{i}" for i in range(count))
    if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray)):
        raise ParameterTypeError(f"{name} must be a sequence of {count} strings, got {_short(names)}")
    out = tuple(str(s) for s in names)
    if len(out) != count:
        raise ShapeError(f"{name} must have {count} entries, got {len(out)}: {out}")
    if len(set(out)) != len(out):
        raise ParameterError(f"{name} must be unique, got {out}")
    return out


class ProblemCollector:
    """Collects every validation problem so a constructor reports all of them in one error.

    Parameters
    ----------
    what : str
        Name of the object being validated, used in the message.

    Examples
    --------
    >>> check = ProblemCollector("Params")
    >>> mass = check.attempt(lambda: check_positive(-1.0, "mass_kg", "kg"))
    >>> check.add("radius_m must be > 0 m")
    >>> check.raise_if_any()
    Traceback (most recent call last):
    ...
    ballctl._errors.ParameterError: invalid Params:
      mass_kg must be > 0 kg, got -1.0
      radius_m must be > 0 m
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.problems: list[str] = []
        self._types: set[type] = set()

    def attempt(self, fn: Callable):
        """Return ``fn()``, or record its ``ValueError``/``TypeError`` and return None.

        Parameters
        ----------
        fn : callable
            A check without arguments.

        Returns
        -------
        object or None
        """
        try:
            return fn()
        except (ValueError, TypeError) as exc:
            self.problems.append(str(exc))
            self._types.add(ParameterTypeError if isinstance(exc, TypeError) else ParameterError)
            return None

    def add(self, message: str) -> None:
        """Record one problem.

        Parameters
        ----------
        message : str
            The problem, naming the parameter, its unit and the allowed range.
        """
        self.problems.append(message)
        self._types.add(ParameterError)

    def raise_if_any(self) -> None:
        """Raise one error listing every recorded problem (a ``ParameterTypeError`` if all are type errors)."""
        if self.problems:
            cls = ParameterTypeError if self._types == {ParameterTypeError} else ParameterError
            raise cls(f"invalid {self.what}:\n  " + "\n  ".join(self.problems))


# ------------------------------------------------------------------ paths
def _file_ancestor(p: Path) -> Path | None:
    """The nearest existing ancestor of ``p`` if it is not a directory, else None."""
    for parent in p.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_path(path, name: str, *, create_parents: bool = False) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` a file can be written to, else raise.

    The path must not be an existing directory, and no ancestor may be a
    file; its parent must exist unless ``create_parents`` (the caller creates it).

    Parameters
    ----------
    path : str or os.PathLike
        The user's output file.
    name : str
        Parameter (or flag) name used in error messages.
    create_parents : bool
        Accept a missing parent folder (the caller creates it).

    Returns
    -------
    pathlib.Path
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ParameterTypeError(f"{name} must be a file path, got {_short(path)}")
    p = Path(path)
    if p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a directory; give a file name")
    bad = _file_ancestor(p)
    if bad is not None:
        raise FileArgumentError(f"{name} {str(p)!r}: {str(bad)!r} is a file, not a directory")
    if not create_parents and not p.parent.exists():
        raise FileArgumentError(f"{name} {str(p)!r}: the directory {str(p.parent)!r} does not exist")
    return p


def check_output_dir(path, name: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` to a folder that exists or can be created, else raise.

    Parameters
    ----------
    path : str or os.PathLike
        The user's output folder.
    name : str
        Parameter (or flag) name used in error messages.

    Returns
    -------
    pathlib.Path
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ParameterTypeError(f"{name} must name a folder, got {_short(path)}")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a file; give a folder")
    bad = _file_ancestor(p)
    if bad is not None:
        raise FileArgumentError(f"{name} {str(p)!r}: {str(bad)!r} is a file, not a directory")
    return p


def check_input_file(path, name: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` to an existing regular file, else raise.

    Parameters
    ----------
    path : str or os.PathLike
        The user's input file.
    name : str
        Parameter (or flag) name used in error messages.

    Returns
    -------
    pathlib.Path
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ParameterTypeError(f"{name} must be a file path, got {_short(path)}")
    p = Path(path)
    if p.is_dir():
        raise FileArgumentError(f"{name} {str(p)!r} is a directory, not a file")
    if not p.exists():
        raise MissingFileError(f"{name} {str(p)!r} does not exist")
    return p


# ------------------------------------------------------------------ integration guards
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
                                      f"not numeric ({_short(values)})", time=time, quantity=quantity) from exc
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
            raise ParameterTypeError(f"{name} returned a non-numeric value at t = {t:.6g} s: {_short(value)}") from exc
        if arr.shape != (size,):
            raise ShapeError(f"{name} must return shape ({size},), got shape {arr.shape} at t = {t:.6g} s")
        if not np.all(np.isfinite(arr)):
            check_finite_at(arr, time=t, quantity=name, context=context)
        return arr

    return u
