"""One place that coerces and checks array and scalar arguments.

Every public function funnels its user input through these helpers so that
error messages share one wording: the parameter's name, what was expected and
what was received.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["as_vector", "as_matrix", "as_times", "check_positive", "check_finite_scalar", "check_in_range",
           "names_tuple", "ProblemCollector"]


def as_vector(value, name: str, size: int | None = None, *, allow_complex: bool = False) -> np.ndarray:
    """Return ``value`` as a finite 1-D float array, checking its length.

    Parameters
    ----------
    value : array_like
        The user's input.
    name : str
        Parameter name used in error messages.
    size : int, optional
        Required length.
    allow_complex : bool
        Keep complex dtypes (used by complex-step differentiation).
    """
    arr = np.asarray(value)
    if not allow_complex or not np.iscomplexobj(arr):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric, got {value!r}") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got length {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    return arr


def as_matrix(value, name: str, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Return ``value`` as a finite 2-D float array of the given shape."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0 and shape is not None and shape == (1, 1):
        arr = arr.reshape(1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def as_times(value, name: str = "t", *, increasing: bool = False) -> np.ndarray:
    """Return times as a finite 1-D float array (a scalar becomes length 1)."""
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D array of times in s, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    if increasing and arr.size > 1 and np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing")
    return arr


def check_finite_scalar(value, name: str) -> float:
    """Return ``value`` as a finite float."""
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number, got {value!r}") from exc
    if not np.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def check_positive(value, name: str, unit: str = "") -> float:
    """Return ``value`` as a float, raising unless it is finite and > 0."""
    out = check_finite_scalar(value, name)
    if out <= 0.0:
        suffix = f" {unit}" if unit else ""
        raise ValueError(f"{name} must be > 0{suffix}, got {value!r}")
    return out


def check_in_range(value, name: str, low: float, high: float, *, unit: str = "",
                   low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` as a float, raising unless it lies in the given interval."""
    out = check_finite_scalar(value, name)
    ok_low = out >= low if low_inclusive else out > low
    ok_high = out <= high if high_inclusive else out < high
    if not (ok_low and ok_high):
        lb = "[" if low_inclusive else "("
        hb = "]" if high_inclusive else ")"
        suffix = f" {unit}" if unit else ""
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{hb}{suffix}, got {value!r}")
    return out


def names_tuple(names: Sequence[str] | None, count: int, default_prefix: str, name: str) -> tuple[str, ...]:
    """Validate a sequence of unique names of the given length (or build defaults)."""
    if names is None:
        return tuple(f"{default_prefix}{i}" for i in range(count))
    out = tuple(str(s) for s in names)
    if len(out) != count:
        raise ValueError(f"{name} must have {count} entries, got {len(out)}: {out}")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must be unique, got {out}")
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
    ValueError: invalid Params:
      mass_kg must be > 0 kg, got -1.0
      radius_m must be > 0 m
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.problems: list[str] = []

    def attempt(self, fn):
        """Return ``fn()``, or record its ``ValueError`` and return None."""
        try:
            return fn()
        except ValueError as exc:
            self.problems.append(str(exc))
            return None

    def add(self, message: str) -> None:
        """Record one problem."""
        self.problems.append(message)

    def raise_if_any(self) -> None:
        """Raise one ``ValueError`` listing every recorded problem."""
        if self.problems:
            raise ValueError(f"invalid {self.what}:\n  " + "\n  ".join(self.problems))
