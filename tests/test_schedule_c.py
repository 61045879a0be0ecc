"""The C controller: compiled by gcc (-Wall -Wextra -Wconversion -Werror, C99), it gives Python's commands."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ballctl
from ballctl.ball_plate.rig import RigLimits, Sensor
from ballctl.schedule import (C_TEMPLATES, GENERATED_FILES, ControllerDataOptions, controller_data,
                              controller_footprint, write_c_controller, write_controller_files)
from ballctl.deploy.sil import C_FLAGS
from ballctl.ball_plate.design import QS_STATE_ERRORS

ROOT = Path(__file__).resolve().parents[1]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")


def design_plant(rig):
    """The rig's plant without its imperfections (what designs and references use)."""
    return getattr(rig, "design_plant", rig.truth_plant)()


@pytest.fixture(scope="module")
def run():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    contact = [n for n in part.state_names if n.startswith("contact")]
    # camera every other step, 1.5 steps of latency (used 2 steps later), 1 mm noise
    cam = Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.04, latency_s=0.03,
                 noise_std=(1e-3, 1e-3))
    weights = ballctl.LQRWeights(states=contact, max_state_errors={k: QS_STATE_ERRORS[k] for k in contact},
                                 max_input_errors={'alpha': 0.05, 'beta': 0.05})
    estimator = ballctl.design.EstimatorDesign(sensors=[cam])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=0.6, weights=weights, estimator=estimator)
    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.01
    r = ballctl.simulate_closed_loop(ctrl, x0, s0.xd, seed=2, options=ballctl.ClosedLoopOptions(method="rk4",
                                                                                                substeps=2))
    return ctrl, r


@pytest.fixture(scope="module")
def periodic():
    """A qs-contact design of the tabletop rig on a circle at 2 rad/s (period pi s), two periods."""
    rig = ballctl.rig_preset("tabletop")
    ref = ballctl.CircularMotion(design_plant(rig).quasi_static(), 0.3, 2.0, 40.0)
    horizon = rig.dt * int(np.ceil(2 * ref.period / rig.dt))
    ctrl = ballctl.ball_plate.design.design_for_rig(rig, ref, "qs-contact", horizon=horizon)
    return rig, ctrl


def _compile(tmp_path, sources, exe=None, compiler="gcc", extra=()):
    cmd = [compiler, *C_FLAGS, *extra, "-I", str(tmp_path)]
    cmd += ["-c"] if exe is None else ["-o", str(exe)]
    cmd += [str(s) for s in sources]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def test_templates_are_package_data():
    from importlib import resources

    folder = resources.files("ballctl.schedule") / "templates"
    for name in C_TEMPLATES:
        assert "ballctl" in (folder / name).read_text()


def test_write_c_controller_needs_an_estimator(tmp_path):
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=0.1,
                                       weights=ballctl.LQRWeights(Q=np.eye(8), R=np.eye(2)),
                                       options=ballctl.design.TrackingOptions(feedforward="sample"))
    with pytest.raises(ballctl.ParameterError, match="needs an output-feedback design"):
        write_c_controller(ctrl, tmp_path)


def test_bad_options_are_refused_early_with_the_parameter_named(run, periodic, tmp_path):
    ctrl, _ = run
    with pytest.raises(ballctl.ParameterError, match="fourier_order"):
        controller_data(periodic[1], options=ControllerDataOptions(fourier_order=40))
    with pytest.raises(ballctl.ParameterError, match="real"):
        controller_data(periodic[1], options=ControllerDataOptions(real="float16"))
    with pytest.raises(ballctl.ParameterError, match="representation"):
        controller_data(periodic[1], options=ControllerDataOptions(representation="table"))
    with pytest.raises(ballctl.ParameterError, match="max_deviation"):
        controller_data(periodic[1], options=ControllerDataOptions(max_deviation=-1.0))
    with pytest.raises(ballctl.ParameterError, match="at least one period"):   # 0.6 s of a 6.3 s period
        controller_data(ctrl, options=ControllerDataOptions(representation="fourier"))
    with pytest.raises(ballctl.ParameterError, match="give rig or limits"):
        controller_data(periodic[1], rig=periodic[0], limits=RigLimits())
    with pytest.raises(ballctl.ParameterError, match="drop_states"):
        controller_data(periodic[1], options=ControllerDataOptions(drop_states=["contact_x"]))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ballctl.errors.FileArgumentError, match="is a file"):
        write_c_controller(ctrl, tmp_path / "file")


def test_header_defines_the_version_2_api(periodic, tmp_path):
    rig, ctrl = periodic
    files = write_c_controller(ctrl, tmp_path, rig=rig, options=ControllerDataOptions(fourier_order=3))
    assert {p.name for p in files} == set(GENERATED_FILES) | set(C_TEMPLATES)
    api = (tmp_path / "ballctl_controller.h").read_text() + (tmp_path / "ballctl_controller_config.h").read_text()
    n_states = len(np.load(tmp_path / "ballctl_controller.npz")["state_names"])
    assert n_states >= 4   # contact point and rates (and any disturbance states)
    for name in ("BC_API_VERSION 2", "typedef float ballctl_real", "BC_N_SIGNALS 2", "BC_N_INPUTS 2",
                 f"BC_N_STATES {n_states}", "BC_N_PERIOD 158", "int ballctl_reference(", "int ballctl_measure(",
                 "ballctl_index ballctl_step(", "void ballctl_init("):
        assert name in api
    c_src = (tmp_path / "ballctl_controller.c").read_text()
    assert "malloc" not in c_src and "#include <math.h>" not in c_src  # no dynamic memory, no libm
    data = (tmp_path / "ballctl_controller_data.h").read_text()
    # the model: its constant entries once, Fourier coefficients only for the entries that vary with the phase
    assert "static const ballctl_real bc_c_Ad[" in data and "static const ballctl_real bc_v_Ad[" in data
    # the sizes of a periodic controller do not depend on the run length
    fp = controller_footprint(tmp_path)
    assert fp.flash_bytes < 16 * 1024 and fp.ram_bytes < 4 * 1024 and fp.multiply_adds_per_step < 2000


@needs_gcc
@pytest.mark.parametrize("representation, real", [("fourier", "float32"), ("fourier", "float64"),
                                                  ("plan", "float32"), ("plan", "float64")])
def test_c_compiles_warning_free(periodic, tmp_path, representation, real):
    rig, ctrl = periodic
    write_c_controller(ctrl, tmp_path, rig=rig,
                       options=ControllerDataOptions(representation=representation, real=real, fourier_order=2))
    res = _compile(tmp_path, [tmp_path / "ballctl_controller.c"])
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not available")
def test_c_compiles_warning_free_on_a_32_bit_target(periodic, tmp_path):
    rig, ctrl = periodic
    write_c_controller(ctrl, tmp_path, rig=rig, options=ControllerDataOptions(fourier_order=2))
    res = _compile(tmp_path, [tmp_path / "ballctl_controller.c"], compiler="arm-none-eabi-gcc",
                   extra=("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"))
    assert res.returncode == 0, res.stderr


@needs_gcc
def test_c_step_function_agrees_with_python(run, tmp_path):
    """The plan export in double gives the commands of the Python loop (no rig limits: the command acts as sent)."""
    ctrl, r = run
    write_c_controller(ctrl, tmp_path,
                       options=ControllerDataOptions(representation="plan", real="float64", drop_states=()))
    steps = len(ctrl.times)
    lat = ctrl.estimator.latency_steps
    y = np.where(np.isnan(r.y), 0.0, r.y)[:steps]
    rows = ",\n".join("{" + ", ".join(repr(float(v)) for v in row) + "}" for row in y)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "ballctl_controller.h"\n'
        f"static const ballctl_real ys[{steps}][BC_N_SIGNALS] = {{{rows}}};\n"
        "static ballctl_controller c;\n"
        "int main(void) {\n  ballctl_real u[BC_N_INPUTS];\n  ballctl_index k;\n  int i;\n  ballctl_init(&c);\n"
        f"  for (k = 0; k < {steps} + 5; ++k) {{\n"
        f"    if (k - {lat} >= 0 && k - {lat} < {steps}) ballctl_measure(&c, k - {lat}, ys[k - {lat}]);\n"
        "    if (ballctl_step(&c, u) != k) return 1;\n"
        '    for (i = 0; i < BC_N_INPUTS; ++i) printf("%.17g%c", u[i], i + 1 < BC_N_INPUTS ? \' \' : \'\\n\');\n'
        "  }\n  return 0;\n}\n")
    exe = tmp_path / "ctl"
    cc = _compile(tmp_path, [tmp_path / "main.c", tmp_path / "ballctl_controller.c"], exe=exe)
    assert cc.returncode == 0, cc.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    u_c = np.array([[float(v) for v in line.split()] for line in res.stdout.strip().splitlines()])
    # the commands the Python loop applied, to printed precision; after the plan the hold goes on
    np.testing.assert_allclose(u_c[:steps], r.u[:steps], rtol=1e-12, atol=1e-15)
    assert np.abs(r.u[:steps] - r.u_ref[:steps]).max() > 1e-4  # the feedback is doing something
    assert u_c.shape[0] == steps + 5 and np.all(np.isfinite(u_c))


@needs_gcc
def test_the_firmware_example_of_the_docs_compiles(periodic, tmp_path):
    rig, ctrl = periodic
    write_c_controller(ctrl, tmp_path, rig=rig, options=ControllerDataOptions(fourier_order=2))
    page = (ROOT / "docs" / "firmware.md").read_text()
    blocks = re.findall(r"```c\n(.*?)```", page, flags=re.S)
    main = next(b for b in blocks if "int main(void)" in b)
    (tmp_path / "firmware_main.c").write_text(main)
    res = _compile(tmp_path, [tmp_path / "firmware_main.c", tmp_path / "ballctl_controller.c"])
    assert res.returncode == 0, res.stderr


def test_controller_files_round_trip(periodic, tmp_path):
    rig, ctrl = periodic
    data = controller_data(ctrl, rig=rig, options=ControllerDataOptions(fourier_order=3))
    write_controller_files(data, tmp_path)
    from ballctl.schedule import ControllerData

    with np.load(tmp_path / "ballctl_controller.npz") as npz:
        back = ControllerData.from_npz(npz)
    assert back.orders == data.orders and back.phase_step == data.phase_step
    for g in data.arrays:
        np.testing.assert_array_equal(back.arrays[g], data.arrays[g])
    assert controller_footprint(tmp_path) == controller_footprint(data)
    with pytest.raises(ballctl.ParameterError, match="no exported controller"):
        controller_footprint(tmp_path / "missing")


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_schedule_files_carry_the_estimator(run, tmp_path, suffix):
    ctrl, _ = run
    sched = ctrl.to_schedule()
    est = ctrl.estimator
    assert sched.has_estimator and sched.signal_names == ("contact_x", "contact_y")
    assert sched.latency_steps == 2  # 30 ms at 20 ms control: used two steps later
    np.testing.assert_array_equal(sched.estimator_gains, est.kalman.update_gains)
    np.testing.assert_array_equal(sched.Ad, ctrl.discrete.Ad)
    back = ballctl.GainSchedule.load(sched.save(tmp_path / f"s{suffix}"))
    assert back.is_identical(sched) and back.checksum == sched.checksum
    csv_text = sched.to_csv(tmp_path / "s.csv").read_text().splitlines()
    assert "M_contact_x_contact_x" in csv_text[0] and "sampled_contact_y" in csv_text[0]
    assert len(csv_text) == sched.n_samples + 1


def test_schedule_without_estimator_keeps_its_version_1_checksum(run):
    # the optional arrays are left out of the canonical serialization when absent
    from dataclasses import replace

    ctrl, _ = run
    plain = replace(ctrl, estimator=None).to_schedule()
    assert not plain.has_estimator and plain.Ad is not None
    bare = ballctl.GainSchedule(**{f: getattr(plain, f) for f in (
        "times", "gains", "x0", "xd0", "u0", "state_names", "input_names", "coordinate_names", "independent",
        "admissible_dependent", "dependent", "dt", "plant_name", "plant_parameters", "Q", "R", "Q_N")})
    from ballctl.schedule.data import canonical_checksum

    assert bare.checksum == canonical_checksum(*bare.canonical_parts()) != plain.checksum
    with pytest.raises(ballctl.ParameterError, match="estimator needs"):
        replace(plain, estimator_gains=ctrl.estimator.kalman.update_gains)


def test_schedule_records_a_plants_flags_as_numbers(run):
    # the servo/moving plate's parameters carry a flag (with_spin); the exported file holds numbers only
    from dataclasses import replace

    ctrl, _ = run
    truth = ballctl.rig_preset("tabletop").truth_plant()
    sched = replace(ctrl, system=truth).to_schedule()
    assert sched.plant_parameters["with_spin"] == 0.0
    assert sched.plant_parameters["pivot_depth"] == truth.params.pivot_depth


def test_a_plan_holds_the_stationary_lqr_of_its_last_sample(run):
    """After its tables a plan holds the DARE gain of its frozen last sample: python-control's ``dlqr`` (slycot's
    DARE solver), an independent solution, to 1e-9 relative (the sweep stops when a 256-step chunk changes the
    gain by < 1e-6; this design's slowest closed-loop mode is fast enough that it has converged to rounding). The
    last design gain, what an error used to leave there, is far from it (the terminal weight is zero)."""
    import control

    ctrl, _ = run
    d = controller_data(ctrl, options=ControllerDataOptions(representation="plan", real="float64", drop_states=()))
    lqr = ctrl.lqr
    K_dare, _, E = control.dlqr(lqr.Ad[-1], lqr.Bd[-1], lqr.Q[-1], lqr.R[-1])
    assert np.all(np.abs(E) < 1.0)
    assert d.state_names == ctrl.state_names        # the LQR's columns come first, in its order
    assert d.source["hold_gain"].startswith("the stationary LQR of the last sample")
    held = d.hold["K"][:, :K_dare.shape[1]]
    assert np.abs(held - K_dare).max() <= 1e-9 * np.abs(K_dare).max()
    assert np.abs(lqr.gains[-1] - K_dare).max() > 0.5 * np.abs(K_dare).max()


def test_the_hold_gain_exists_where_the_dare_has_no_stabilizing_solution():
    """A sample with a mode no input reaches on the unit circle (the ball's spin at rest): ``dlqr`` refuses it
    (no stabilizing solution), the hold's sweep converges all the same, to the DARE gain of the controllable part
    (a 50 Hz double integrator) with a zero column on the decoupled mode, to 1e-10 relative."""
    import control

    from ballctl.schedule.compact import _hold_gain

    dt = 0.02
    A = np.array([[1.0, dt, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    B = np.array([[dt * dt / 2], [dt], [0.0]])
    Q, R = np.diag([100.0, 1.0, 5.0]), np.array([[0.1]])
    with pytest.raises(ArithmeticError, match="dimension of the solution"):   # slycot: no stabilizing solution
        control.dlqr(A, B, Q, R)
    K, how = _hold_gain(A, B, Q, R, Q)
    K_c, _, _ = control.dlqr(A[:2, :2], B[:2], Q[:2, :2], R)
    assert np.abs(K[:, :2] - K_c).max() <= 1e-10 * np.abs(K_c).max() and K[0, 2] == 0.0
    assert "stationary LQR" in how
    # an unstable mode no input reaches, feeding the controlled ones (a frozen sample of a motion, no
    # equilibrium): the Riccati matrix grows geometrically; no gain, and it says so
    A[1, 2], A[2, 2] = 1.0, 1.1
    K, how = _hold_gain(A, B, Q, R, Q)
    assert K is None and "no stationary LQR" in how
