"""The C output-feedback controller: compiled by gcc, it gives Python's commands for the same sensor samples."""

import shutil
import subprocess

import numpy as np
import pytest

import ballctl
from ballctl.rig import Sensor
from ballctl.schedule import C_TEMPLATES, write_c_controller
from ballctl.tracking import QS_STATE_ERRORS


@pytest.fixture(scope="module")
def run():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    contact = [n for n in part.state_names if n.startswith("contact")]
    # camera every other step, 1.5 steps of latency (used 2 steps later), 1 mm noise
    cam = Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.04, latency_s=0.03,
                 noise_std=(1e-3, 1e-3))
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=0.6, states=contact,
                                       max_state_errors={k: QS_STATE_ERRORS[k] for k in contact},
                                       max_input_errors={"alpha": 0.05, "beta": 0.05}, sensors=[cam])
    s0 = ref(0.0)
    x0 = s0.x[0].copy()
    x0[0] += 0.01
    r = ballctl.simulate_closed_loop(ctrl, x0, s0.xd[0], integrator="rk4", substeps=2, seed=2)
    return ctrl, r


def test_templates_are_package_data():
    from importlib import resources

    folder = resources.files("ballctl.schedule") / "templates"
    for name in C_TEMPLATES:
        assert "ballctl" in (folder / name).read_text()


def test_write_c_controller_needs_an_estimator(tmp_path):
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=0.1, Q=np.eye(8), R=np.eye(2),
                                       feedforward="sample")
    with pytest.raises(ballctl.ParameterError, match="needs an output-feedback design"):
        write_c_controller(ctrl, tmp_path)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")
def test_c_step_function_agrees_with_python(run, tmp_path):
    ctrl, r = run
    write_c_controller(ctrl, tmp_path)
    steps = len(ctrl.times)
    y = np.where(np.isnan(r.y), 0.0, r.y)[:steps]
    rows = ",\n".join("{" + ", ".join(repr(float(v)) for v in row) + "}" for row in y)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "ballctl_controller.h"\n'
        f"static const double ys[BC_N_SAMPLES][BC_N_SIGNALS] = {{{rows}}};\n"
        "static ballctl_controller c;\n"
        "int main(void) {\n  double u[BC_N_INPUTS];\n  long k;\n  int i;\n  ballctl_init(&c);\n"
        "  for (k = 0; k < BC_N_SAMPLES; ++k) {\n    ballctl_measure(&c, k, ys[k]);\n"
        "    if (ballctl_step(&c, u) != k) return 1;\n"
        '    for (i = 0; i < BC_N_INPUTS; ++i) printf("%.17g%c", u[i], i + 1 < BC_N_INPUTS ? \' \' : \'\\n\');\n'
        "  }\n  return ballctl_step(&c, u) == -1 ? 0 : 2;\n}\n")
    exe = tmp_path / "ctl"
    cc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o", str(exe),
                         str(tmp_path / "main.c"), str(tmp_path / "ballctl_controller.c"), "-I", str(tmp_path)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    u_c = np.array([[float(v) for v in line.split()] for line in res.stdout.strip().splitlines()])
    # the commands the Python loop applied (no rig limits: the command acts as sent), to printed precision
    np.testing.assert_allclose(u_c, r.u[:steps], rtol=1e-12, atol=1e-15)
    assert np.abs(r.u[:steps] - r.u_ref[:steps]).max() > 1e-4  # the feedback is doing something


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
    from ballctl.schedule.data import _checksum

    assert bare.checksum == _checksum(bare._metadata(), bare._arrays()) != plain.checksum
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
