"""Bad input gets a clear error: the hierarchy, the validation helpers, the integration guards."""

from __future__ import annotations

import ast
import builtins
import pathlib

import numpy as np
import pytest

import ballctl
from ballctl import _errors
from ballctl._validation import (StepBudget, as_stack, as_vector, check_finite_at, check_finite_scalar,
                                 check_integer, check_uniform_spacing, guard_rhs)

PACKAGE = pathlib.Path(ballctl.__file__).parent

# builtins a raise site may still use directly: abstract methods, the OS refusing a temporary file, and a
# module's __getattr__ (Python's protocol for deprecated names)
ALLOWED_BUILTIN_RAISES = {"NotImplementedError", "OSError", "AttributeError"}
BUILTIN_EXCEPTIONS = {name for name in dir(builtins) if name.endswith(("Error", "Exception"))} | {"Exception"}


# ------------------------------------------------------------------ hierarchy
def test_every_error_and_warning_is_exported_from_the_package():
    assert set(_errors.__all__) <= set(ballctl.__all__)
    for name in _errors.__all__:
        cls = getattr(ballctl, name)
        assert issubclass(cls, (ballctl.BallctlError, ballctl.BallctlWarning)), name


@pytest.mark.parametrize("cls, builtin", [
    (ballctl.ParameterError, ValueError), (ballctl.ShapeError, ValueError),
    (ballctl.ParameterTypeError, TypeError), (ballctl.ParameterTypeError, ValueError),
    (ballctl.ConstraintViolationError, ValueError), (ballctl.InfeasibleReferenceError, ValueError),
    (ballctl.ChartSingularityError, ValueError), (ballctl.PartitionError, ValueError),
    (ballctl.ConfigError, ValueError), (ballctl.FileArgumentError, ValueError),
    (ballctl.ScheduleFileError, ValueError), (ballctl.SampleIndexError, IndexError),
    (ballctl.NumericalError, RuntimeError), (ballctl.SingularMatrixError, np.linalg.LinAlgError),
    (ballctl.RiccatiConvergenceError, RuntimeError), (ballctl.IntegrationError, RuntimeError),
    (ballctl.NonFiniteStateError, RuntimeError), (ballctl.IntegrationBudgetError, RuntimeError),
])
def test_errors_derive_from_ballctl_error_and_the_matching_builtin(cls, builtin):
    assert issubclass(cls, ballctl.BallctlError)
    assert issubclass(cls, builtin)


def test_no_plain_builtin_raise_left_in_the_package():
    """Every raise site uses a BallctlError subclass (static scan of the source)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", None)
                if name in BUILTIN_EXCEPTIONS - ALLOWED_BUILTIN_RAISES or name == "LinAlgError":
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} raise {name}")
    assert not offenders, "\n".join(offenders)


# ------------------------------------------------------------------ validation helpers
@pytest.mark.parametrize("value, cls, match", [
    ("abc", ballctl.ParameterTypeError, "x must be a numeric array"),
    (None, ballctl.ParameterTypeError, "x must be a numeric array"),
    ([1.0, np.nan, 2.0], ballctl.ParameterError, r"x must be finite, got 1 NaN/inf entry \(first at index \(1,\)\)"),
    ([[1.0, 2.0]], ballctl.ShapeError, r"x must be a 1-D array of length 3, got shape \(1, 2\)"),
    ([1.0, 2.0], ballctl.ShapeError, "x must have length 3, got length 2"),
    ([[1.0], [1.0, 2.0]], ballctl.ShapeError, "ragged"),
    ([1 + 2j, 0, 0], ballctl.ParameterTypeError, "x must be real"),
])
def test_as_vector_names_the_parameter(value, cls, match):
    with pytest.raises(cls, match=match):
        as_vector(value, "x", 3)


def test_as_stack_accepts_a_constant_and_rejects_a_wrong_stack():
    Q = as_stack(np.eye(2), "Q", (5, 2, 2), allow_constant=True)
    assert Q.shape == (5, 2, 2)
    with pytest.raises(ballctl.ShapeError, match=r"Q must have shape \(5, 2, 2\) or \(2, 2\), got shape \(4, 2, 2\)"):
        as_stack(np.zeros((4, 2, 2)), "Q", (5, 2, 2), allow_constant=True)


@pytest.mark.parametrize("value, cls", [(True, ballctl.ParameterTypeError), (2.0, ballctl.ParameterTypeError),
                                        ("3", ballctl.ParameterTypeError), (0, ballctl.ParameterError)])
def test_check_integer(value, cls):
    with pytest.raises(cls, match=r"order must be an integer >= 1"):
        check_integer(value, "order", minimum=1)
    assert check_integer(np.int64(4), "order", minimum=1) == 4


@pytest.mark.parametrize("value", [np.nan, np.inf, "1.0", None, True, 1j, np.array([1.0, 2.0])])
def test_check_finite_scalar_rejects_non_numbers(value):
    with pytest.raises(ballctl.ParameterError if isinstance(value, float) else ballctl.ParameterTypeError,
                       match="dt must be"):
        check_finite_scalar(value, "dt", "s")


def test_uniform_spacing_tolerates_linspace_rounding_only():
    t = np.linspace(0.0, 10.0, 1001)  # ulp-level deviations from k * 0.01
    assert check_uniform_spacing(t, "times", 0.01) == 0.01
    t[500] += 1e-6  # 1e-4 of a step
    with pytest.raises(ballctl.ParameterError, match="times must be with step dt=0.01 s"):
        check_uniform_spacing(t, "times", 0.01)


# ------------------------------------------------------------------ integration guards
def test_check_finite_at_names_time_and_entry():
    with pytest.raises(ballctl.NonFiniteStateError, match=r"state became non-finite at t = 1.5 s \(y = nan") as info:
        check_finite_at([0.0, np.nan], time=1.5, quantity="state", names=["x", "y"])
    assert info.value.time == 1.5 and info.value.quantity == "state"


def test_guard_rhs_stops_solve_ivp_on_a_nan_derivative():
    """Without the guard a NaN derivative makes the adaptive step NaN and the solver loops for ever."""
    from scipy.integrate import solve_ivp

    def f(t, y):
        return np.array([np.nan if t > 0.3 else -y[0]])

    with pytest.raises(ballctl.NonFiniteStateError, match=r"demo: state derivative became non-finite at t = 0.3"):
        solve_ivp(guard_rhs(f, context="demo"), (0.0, 1.0), [1.0], rtol=1e-8)


def test_step_budget_stops_an_endless_loop():
    budget = StepBudget("loop", max_steps=100)
    with pytest.raises(ballctl.IntegrationBudgetError, match="loop: step budget of 100 steps exhausted at t = 100"):
        for k in range(10**9):
            budget.tick(float(k))
