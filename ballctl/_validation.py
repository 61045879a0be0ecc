"""One place that coerces and checks arguments, with one wording for every error.

Every public function funnels its user input through these helpers so that
error messages share one wording: the parameter's name, its unit, what was
expected (the allowed range or shape) and what was received. Every error is a
:class:`~ballctl._errors.BallctlError` that also derives from the builtin a
caller expects (``ValueError``/``TypeError``). :class:`ProblemCollector` gathers
every problem of a constructor into one error.

File and output-path arguments are checked in :mod:`ballctl._paths`; the guards
that run during an integration (non-finite states, step budgets) live in
:mod:`ballctl._guards`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

import numpy as np

from ._errors import ParameterError, ParameterTypeError, ShapeError

#: ``np.linspace`` differ from ``k * dt`` by a few ulps of ``max|t|``; anything
#: beyond 1e-9 of a step is a genuine mismatch.
SPACING_RTOL = 1e-9


def _u(unit: str) -> str:
    return f" {unit}" if unit else ""


def short_repr(value) -> str:
    """A short repr of a user value for messages (arrays are summarised).

    Parameters
    ----------
    value : object
        The user's input.

    Returns
    -------
    str
        Its repr, at most 80 characters; arrays of more than 6 entries are named by their shape.
    """
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
        raise ParameterTypeError(f"{name} must be a numeric array{_u(unit and 'in ' + unit)}, got {short_repr(value)}")
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
                                         f"got {short_repr(value)}") from exc
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
        raise ParameterTypeError(f"{name} must be an integer{rng}{hint}, got {short_repr(value)}")
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
        raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, got {short_repr(value)}")
    if isinstance(value, np.ndarray):
        if value.size != 1 or np.iscomplexobj(value):
            raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, "
                                     f"got {short_repr(value)}")
        value = value.reshape(()).item()
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterTypeError(f"{name} must be a real number{_u(unit and 'in ' + unit)}, "
                                 f"got {short_repr(value)}") from exc
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
        raise ParameterError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {short_repr(value)}")
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
        raise ParameterTypeError(f"{name} must be True or False, got {short_repr(value)}")
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
        raise ParameterTypeError(f"{name} must be callable{sig}, got {type(value).__name__} {short_repr(value)}")
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
                                 f"got {short_repr(value)}")
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
        raise ParameterTypeError(f"{name} must be a sequence of {count} strings, got {short_repr(names)}")
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
