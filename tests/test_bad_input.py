"""Bad input gets a clear error: the hierarchy, the validation helpers, the integration guards."""

from __future__ import annotations

import ast
import builtins
import pathlib

import numpy as np
import pytest

import ballctl
from ballctl import _errors
from ballctl._guards import StepBudget, check_finite_at, guard_rhs
from ballctl._validation import as_stack, as_vector, check_finite_scalar, check_integer, check_uniform_spacing

PACKAGE = pathlib.Path(ballctl.__file__).parent

# builtins a raise site may still use directly: abstract methods, the OS refusing a temporary file, and a
# module's __getattr__ (Python's protocol for deprecated names)
ALLOWED_BUILTIN_RAISES = {"NotImplementedError", "OSError", "AttributeError"}
BUILTIN_EXCEPTIONS = {name for name in dir(builtins) if name.endswith(("Error", "Exception"))} | {"Exception"}


# ------------------------------------------------------------------ hierarchy
def test_every_error_and_warning_is_exported_from_the_package():
    # the classes ballctl._errors defines (a private module has no __all__), all public in ballctl.errors
    error_names = [name for name, obj in vars(_errors).items()
                   if isinstance(obj, type) and obj.__module__ == _errors.__name__]
    assert set(error_names) == set(ballctl.errors.__all__)
    for name in error_names:
        cls = getattr(ballctl.errors, name)
        assert issubclass(cls, (ballctl.BallctlError, ballctl.BallctlWarning)), name


@pytest.mark.parametrize("cls, builtin", [
    (ballctl.ParameterError, ValueError), (ballctl.errors.ShapeError, ValueError),
    (ballctl.errors.ParameterTypeError, TypeError), (ballctl.errors.ParameterTypeError, ValueError),
    (ballctl.errors.ConstraintViolationError, ValueError), (ballctl.errors.InfeasibleReferenceError, ValueError),
    (ballctl.errors.ChartSingularityError, ValueError), (ballctl.errors.PartitionError, ValueError),
    (ballctl.errors.ConfigError, ValueError), (ballctl.errors.FileArgumentError, ValueError),
    (ballctl.errors.ScheduleFileError, ValueError), (ballctl.errors.SampleIndexError, IndexError),
    (ballctl.NumericalError, RuntimeError), (ballctl.errors.SingularMatrixError, np.linalg.LinAlgError),
    (ballctl.errors.RiccatiConvergenceError, RuntimeError), (ballctl.errors.IntegrationError, RuntimeError),
    (ballctl.errors.NonFiniteStateError, RuntimeError), (ballctl.errors.IntegrationBudgetError, RuntimeError),
])
def test_errors_derive_from_ballctl_error_and_the_matching_builtin(cls, builtin):
    assert issubclass(cls, ballctl.BallctlError)
    assert issubclass(cls, builtin)


def test_no_plain_builtin_raise_left_in_the_package():
    """Every raise site uses a BallctlError subclass (static scan of the source)."""
    offenders = []
    # the runtime twin imports numpy only (it is copied alone to a rig's Linux board): builtin errors there
    standalone = {PACKAGE / "deploy" / "runtime.py"}
    for path in sorted(set(PACKAGE.rglob("*.py")) - standalone):
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
    ("abc", ballctl.errors.ParameterTypeError, "x must be a numeric array"),
    (None, ballctl.errors.ParameterTypeError, "x must be a numeric array"),
    ([1.0, np.nan, 2.0], ballctl.ParameterError, r"x must be finite, got 1 NaN/inf entry \(first at index \(1,\)\)"),
    ([[1.0, 2.0]], ballctl.errors.ShapeError, r"x must be a 1-D array of length 3, got shape \(1, 2\)"),
    ([1.0, 2.0], ballctl.errors.ShapeError, "x must have length 3, got length 2"),
    ([[1.0], [1.0, 2.0]], ballctl.errors.ShapeError, "ragged"),
    ([1 + 2j, 0, 0], ballctl.errors.ParameterTypeError, "x must be real"),
])
def test_as_vector_names_the_parameter(value, cls, match):
    with pytest.raises(cls, match=match):
        as_vector(value, "x", 3)


def test_as_stack_accepts_a_constant_and_rejects_a_wrong_stack():
    Q = as_stack(np.eye(2), "Q", (5, 2, 2), allow_constant=True)
    assert Q.shape == (5, 2, 2)
    with pytest.raises(ballctl.errors.ShapeError,
                       match=r"Q must have shape \(5, 2, 2\) or \(2, 2\), got shape \(4, 2, 2\)"):
        as_stack(np.zeros((4, 2, 2)), "Q", (5, 2, 2), allow_constant=True)


@pytest.mark.parametrize("value, cls", [(True, ballctl.errors.ParameterTypeError), (2.0,
                                                                                    ballctl.errors.ParameterTypeError),
                                        ("3", ballctl.errors.ParameterTypeError), (0, ballctl.ParameterError)])
def test_check_integer(value, cls):
    with pytest.raises(cls, match=r"order must be an integer >= 1"):
        check_integer(value, "order", minimum=1)
    assert check_integer(np.int64(4), "order", minimum=1) == 4


@pytest.mark.parametrize("value", [np.nan, np.inf, "1.0", None, True, 1j, np.array([1.0, 2.0])])
def test_check_finite_scalar_rejects_non_numbers(value):
    with pytest.raises(ballctl.ParameterError if isinstance(value, float) else ballctl.errors.ParameterTypeError,
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
    with pytest.raises(ballctl.errors.NonFiniteStateError,
                       match=r"state became non-finite at t = 1.5 s \(y = nan") as info:
        check_finite_at([0.0, np.nan], time=1.5, quantity="state", names=["x", "y"])
    assert info.value.time == 1.5 and info.value.quantity == "state"


def test_guard_rhs_stops_solve_ivp_on_a_nan_derivative():
    """Without the guard a NaN derivative makes the adaptive step NaN and the solver loops for ever."""
    from scipy.integrate import solve_ivp

    def f(t, y):
        return np.array([np.nan if t > 0.3 else -y[0]])

    with pytest.raises(ballctl.errors.NonFiniteStateError,
                       match=r"demo: state derivative became non-finite at t = 0.3"):
        solve_ivp(guard_rhs(f, context="demo"), (0.0, 1.0), [1.0], rtol=1e-8)


def test_step_budget_stops_an_endless_loop():
    budget = StepBudget("loop", max_steps=100)
    with pytest.raises(ballctl.errors.IntegrationBudgetError,
                       match="loop: step budget of 100 steps exhausted at t = 100"):
        for k in range(10**9):
            budget.tick(float(k))


# ------------------------------------------------------------------ integration paths: NaN stops, never hangs
@pytest.fixture(scope="module")
def ball_plate_circle():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    return plant, ref


def test_simulate_stops_on_an_input_that_turns_nan(ball_plate_circle):
    plant, ref = ball_plate_circle
    s = ref(0.0)

    def u(t):
        return np.array([np.nan, 0.0]) if t > 0.05 else s.u

    with pytest.raises(ballctl.errors.NonFiniteStateError,
                       match=r"simulate: input u became non-finite at t = 0.05\d* s "
                                                           r"\(alpha = nan"):
        ballctl.simulate(plant, s.x, s.xd, u, (0.0, 0.2))


@pytest.mark.parametrize("stabilization, match", [
    ((-1.0, 10.0), r"stabilization\[0\] must be >= 0 1/s, got -1.0"),
    ((10.0, np.nan), r"stabilization\[1\] must be finite \(1/s\)"),
    ("10", "stabilization must be None or a pair"),
])
def test_simulate_rejects_bad_stabilization(ball_plate_circle, stabilization, match):
    plant, ref = ball_plate_circle
    s = ref(0.0)
    with pytest.raises(ballctl.BallctlError, match=match):
        ballctl.simulate(plant, s.x, s.xd, s.u, (0.0, 0.1),
                         options=ballctl.SimulationOptions(stabilization=stabilization))


def test_simulate_checks_the_initial_velocity_constraint(ball_plate_circle):
    """A 0.3 m/s rolling-constraint violation is refused; projecting it is explicit and reported."""
    plant, ref = ball_plate_circle
    s = ref(0.0)
    xd = s.xd.copy()
    xd[0] += 0.3
    with pytest.raises(ballctl.errors.ConstraintViolationError, match=r"xd0 violates the velocity constraints: "
                                                               r"residual -?0.3 \(m/s or rad/s\)"):
        ballctl.simulate(plant, s.x, xd, s.u, (0.0, 0.1))
    with pytest.warns(ballctl.errors.ConstraintProjectionWarning, match="velocity 0.3 m/s"):
        run = ballctl.simulate(plant, s.x, xd, s.u, (0.0, 0.1), options=ballctl.SimulationOptions(project_initial=True))
    assert run.max_constraint_residual < 1e-9  # projected onto D xd = 0, then held by Baumgarte


def test_simulate_refuses_a_start_beyond_the_chart(ball_plate_circle):
    plant, ref = ball_plate_circle
    s = ref(0.0)
    x = s.x.copy()
    x[3] = np.deg2rad(89.5)  # beyond LEAN_LIMIT = 89 deg
    with pytest.raises(ballctl.errors.ChartSingularityError, match="x0 lies beyond the edge"):
        ballctl.simulate(plant, x, plant.project_velocities(x, s.xd), s.u, (0.0, 0.1))


def test_rolling_ball_stops_on_nan_rail_input():
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters

    ball = ballctl.RollingBall(paper_ball_parameters())
    with pytest.raises(ballctl.errors.NonFiniteStateError, match=r"rail_input became non-finite at t = 0.1\d* s"):
        ball.simulate(paper_ball_initial_state(), (0.0, 0.5),
                      lambda t: np.array([1.0, np.nan, 0.0]) if t > 0.1 else np.ones(3), breakpoints=(0.1,))


def test_rolling_ball_stops_a_mass_leaving_the_ball():
    from ballctl.plants.rails import SegmentRail

    params = ballctl.plants.RollingBallParameters(
        mass_kg=1.0, radius_m=0.5, principal_inertia_kgm2=[0.1, 0.1, 0.1],
        point_masses=(ballctl.PointMass(mass_kg=0.2, rail=SegmentRail(start_m=[0, 0, 0], end_m=[0.2, 0, 0])),))
    ball = ballctl.RollingBall(params)
    x0 = np.concatenate([[0.1, 0.0], [1, 0, 0, 0], [0, 0, 0], [0, 0]])
    # constant acceleration 1 m/s^2 along the rail: |zeta| = 0.1 + t^2/2 reaches the 0.5 m shell at t = sqrt(0.8)
    with pytest.raises(ballctl.ParameterError, match=r"drives mass 0 out of the body at t = 0.894"):
        ball.simulate(x0, (0.0, 2.0), lambda t: np.array([1.0]), breakpoints=())


def test_rigid_body_inertia_must_satisfy_the_triangle_inequality():
    with pytest.raises(ballctl.ParameterError, match="triangle inequality"):
        ballctl.plants.RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.1, 0.1, 0.5])


def test_overflowing_ball_parameters_are_refused():
    with pytest.raises(ballctl.ParameterError, match="overflow"):
        ballctl.plants.BallPlateParameters(mass=1e300, radius=1e200)
    with pytest.raises(ballctl.errors.ParameterTypeError, match="params must be a BallPlateParameters"):
        ballctl.BallPlate({"mass": 0.1})


# ------------------------------------------------------------------ reference feasibility
def test_circle_reports_the_binding_limit_first():
    plant = ballctl.BallPlate()
    with pytest.raises(ballctl.errors.InfeasibleReferenceError,
                       match=r"^the plate cannot supply .* need \|omega\| < 3.74\d* rad/s; also: roll_rate too low"):
        ballctl.CircularMotion(plant, 0.5, 5.0, 40.0)


def test_large_tilt_warns_with_the_tilt():
    plant = ballctl.BallPlate()
    with pytest.warns(ballctl.errors.LargeTiltWarning, match=r"plate tilt of 7\d(\.\d)? deg"):
        ballctl.CircularMotion(plant, 0.5, 3.65, 200.0)  # k = sin(tilt) = rho w^2 / (k_b g) = 0.95


def test_a_path_that_does_not_move_is_refused():
    with pytest.raises(ballctl.ParameterError, match=r"omega_x and omega_y \(rad/s\) cannot both be zero"):
        ballctl.LissajousPath.circle(0.5, 0.0)


def test_a_users_path_that_raises_or_has_the_wrong_shape_is_named():
    plant = ballctl.BallPlate()
    with pytest.raises(ballctl.ParameterError, match=r"the path raised ZeroDivisionError: .* in \[0, 1\] s"):
        ballctl.PathMotion(plant, lambda t: 1 / 0, duration=1.0)

    def three_d(t):
        z = np.zeros((np.size(t), 3))
        return z, z, z

    with pytest.raises(ballctl.errors.ShapeError, match=r"the path's position must have shape \(K, 2\)"):
        ballctl.PathMotion(plant, three_d, duration=1.0)


@pytest.mark.parametrize("path, match", [
    ("figure8", r"path must be a callable path\(t\) -> \(p, v, a\[, jerk\]\).*not the string 'figure8' .*--path\); "
                r"build it with ballctl\.LissajousPath\.figure_eight\(size, omega\)"),
    ("spiral", r"not the string 'spiral' .*build one with ballctl\.LissajousPath"),
    (None, r"path must be a callable .*e\.g\. ballctl\.LissajousPath\.figure_eight\(0\.5, 1\.0\); got NoneType"),
])
def test_a_path_given_by_name_or_not_callable_is_named(path, match):
    with pytest.raises(ballctl.errors.ParameterTypeError, match=match):
        ballctl.PathMotion(ballctl.BallPlate(), path, duration=1.0)
    servo = ballctl.rig_preset("tabletop").design_plant()
    with pytest.raises(ballctl.errors.ParameterTypeError, match=match):
        ballctl.MovingPlateMotion(servo, path, spin=0.0, duration=1.0)


def test_a_singular_partition_names_the_velocities_it_cannot_complete():
    plant = ballctl.BallPlate()
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "lean"], ["yaw", "roll"])
    with pytest.raises(ballctl.errors.PartitionError,
                       match=r"complete_velocities: the partition ai=\(contact_x, contact_y, lean\) ad=\(yaw, roll\) "
                             r"cannot complete the velocities at x=\[0\. 0\. 0\. 0\. 0\.\]: D_dd, the constraint "
                             r"columns of the dependent coordinates yaw, roll, is singular there .*do not determine "
                             r"the velocities yaw_rate, roll_rate from those of contact_x, contact_y, lean") as info:
        part.complete_velocities(plant, np.zeros(5), np.ones(5))
    assert not isinstance(info.value, np.linalg.LinAlgError)
    # an admissible one completes them exactly
    good = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    xd = good.complete_velocities(plant, np.zeros(5), np.ones(5))
    np.testing.assert_allclose(plant.constraint_jacobian(np.zeros(5)) @ xd, 0.0, atol=1e-15)


@pytest.mark.parametrize("state_names, input_names, match", [
    (None, ["a"], "bryson: state_names must be a sequence of the state names \\(str\\).*; got None"),
    (["x"], None, "bryson: input_names must be a sequence of the input names \\(str\\).*; got None"),
    ("xv", ["a"], "state_names .*got 'xv'"),
    ([1, 2], ["a"], r"state_names .*got a list with the entry 1 \(int\)"),
])
def test_bryson_names_a_missing_or_malformed_name_list(state_names, input_names, match):
    with pytest.raises(ballctl.errors.ParameterTypeError, match=match):
        ballctl.bryson(state_names, input_names, {"x": 1.0}, {"a": 1.0})


def test_exact_circle_names_the_plant_it_needs():
    with pytest.raises(ballctl.errors.ParameterTypeError,
                       match="MovingPlateBallPlate or ServoPlateBallPlate .*got BallPlate"):
        ballctl.exact_circular_motion(ballctl.BallPlate(), ballctl.LissajousPath.circle(0.5, 1.0), 40.0)


def test_ltv_system_refuses_non_finite_matrices_naming_the_sample():
    A = np.zeros((3, 2, 2))
    A[2, 1, 0] = np.nan
    with pytest.raises(ballctl.ParameterError, match=r"LTVSystem A must be finite; sample 2 \(t = 2 s\)"):
        ballctl.LTVSystem(np.arange(3.0), A, np.zeros((3, 2, 1)), ("a", "b"), ("u",))


# ------------------------------------------------------------------ CLI: one line, exit 2, no traceback
@pytest.mark.parametrize("argv, match", [
    ([], "a command is required"),
    (["nope"], "invalid choice: 'nope'"),
    (["partitions", "--dt", "0"], "argument --dt: must be > 0 s, got 0"),
    (["partitions", "--dt", "nan"], "argument --dt: must be a finite number in s"),
    (["partitions", "--dt", "100"], r"argument --dt: must be at most a third of the circle's period, 2.09\d* s"),
    (["track", "--max-rms-error", "-0.01"], "argument --max-rms-error: must be > 0 m"),
    (["track", "--max-input-error-deg", "-5"], "argument --max-input-error-deg: must be > 0 deg, got -5"),
    (["reference", "--ball-radius", "0"], "argument --ball-radius: must be > 0 m"),
    (["reference", "--omega", "abc"], "argument --omega: must be a number in rad/s"),
    (["track", "--seed", "1.5"], "argument --seed: must be an integer"),
    (["track", "--duration", "0"], "argument --duration: must be > 0 s, got 0"),
    (["track", "--config", "{missing}"], "does not exist"),
    (["track", "--config", "{dir}"], "is a directory, not a TOML file"),
    (["track", "--config", "{malformed}"], "is not valid TOML"),
    (["track", "--config", "{badvalue}"],
     r"argument --duration: must be a number in s, got 'x' .*a value from --config"),
    (["track", "--out", "{file}"], "is a file; give a folder"),
    (["track", "--out", "{file}/sub"], "is a file, not a directory"),
    (["reference", "--out", "{dir}"], "is a directory; give a file name"),
    (["reference", "--out", "{file}/x.png"], "is a file, not a directory"),
    (["reference", "--omega", "5", "--out", ""], "plate cannot supply"),
    (["simulate-ball", "--t-final", "inf"], "argument --t-final: must be a finite number in s"),
])
def test_cli_user_errors_are_one_line_with_status_2(tmp_path, capsys, argv, match):
    from ballctl.cli import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "malformed.toml").write_text("dt = \n")
    (tmp_path / "badvalue.toml").write_text('[track]\nduration = "x"\n')
    paths = {"missing": tmp_path / "missing.toml", "dir": tmp_path, "malformed": tmp_path / "malformed.toml",
             "badvalue": tmp_path / "badvalue.toml", "file": tmp_path / "file"}
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("ballctl")
    import re

    assert re.search(match, err), err
