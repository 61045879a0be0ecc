"""Software in the loop: the generated C, compiled at test time, runs as the controller of the truth plant.

* the plan export (double, every state) in the loop is the verified loop: it gives the commands of
  ``simulate_closed_loop`` (same sensor draws) to 1e-12;
* the compact periodic export (float32 by default, Fourier order chosen by ``export_controller``) on the
  default job (rig ``tabletop``, circle, the exact design) and on a harder rig: double C = Python twin
  to 1e-12 on the commands, float32 RMS error within 5 % of double, three periods without stopping;
* the processor in the loop (``benchmarks/pil_cortex_m4.py``) where its tools are installed (slow).
"""

import inspect
import math
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import ballctl
from ballctl.references.moving_plate import exact_circular_motion
from ballctl.ball_plate.rig import RigLimits, Sensor
from ballctl.deploy.runtime import ControllerRuntime
from ballctl.schedule import ControllerDataOptions, controller_data, write_c_controller, write_controller_files
from ballctl.deploy.sil import (RMS_FLOOR_M, CController, ComponentLoopOptions, ControllerComponent, ExportOptions,
                                ExportVerificationError, export_controller, run_component_loop)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")
DEG = np.pi / 180


def harder_rig():
    """The tabletop rig (with its imperfections) with a 25 Hz camera (50 ms latency, 2.5 mm noise), a 10 ms
    actuation delay, +-12 deg tilt, 200 deg/s slew and continuous commands."""
    base = ballctl.rig_preset("tabletop")
    return replace(base, name="harder", limits=RigLimits(max_angle=12 * DEG, max_rate=200 * DEG, delay=0.01),
                   sensors=(Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.04, latency_s=0.05,
                                   noise_std=(2.5e-3, 2.5e-3)),))


def default_job(rig):
    """The main job's design on ``rig``: circle of 0.5 m at 1 rad/s, the exact design (offset-free), two periods,
    5 cm offset."""
    dt = rig.dt
    horizon = dt * math.ceil(2 * 2 * np.pi / dt - 1e-9)
    ref = exact_circular_motion(design_plant(rig), ballctl.LissajousPath.circle(0.5, 1.0), 40.0,
                                duration=horizon + 2 * dt)
    design = ballctl.ball_plate.design.design_for_rig
    job = {"offset_free": True} if "offset_free" in inspect.signature(design).parameters else {}  # as track designs it
    ctrl = ballctl.ball_plate.design.design_for_rig(rig, ref, "exact", horizon=horizon, **job)
    s = ref(0.0)
    x0, xd0 = s.x.copy(), s.xd.copy()
    x0[0] += 0.05
    return ctrl, truth_state(rig, x0), xd0


def design_plant(rig):
    """The rig's plant without its imperfections (what designs and references use)."""
    return getattr(rig, "design_plant", rig.truth_plant)()


def truth_state(rig, x0):
    """The truth's initial state for a design state (the plate resting at the rig's level error)."""
    return getattr(rig, "truth_initial_state", lambda x: x)(x0)


def loop_imperfections(rig) -> dict:
    """The loop's share of the rig's imperfections, as simulate_closed_loop takes it."""
    imp = getattr(rig, "imperfections", None)
    return {} if imp is None else {"imperfections": imp.loop}


@pytest.fixture(scope="module", params=["tabletop", "harder"])
def job(request, tmp_path_factory):
    rig = ballctl.rig_preset("tabletop") if request.param == "tabletop" else harder_rig()
    ctrl, x0, xd0 = default_job(rig)
    folder = tmp_path_factory.mktemp(f"c_{request.param}")
    report = export_controller(ctrl, rig, folder, x0=x0, xd0=xd0, seed=0, options=ExportOptions(check_c=False))
    return rig, ctrl, x0, xd0, report, folder


def test_components_implement_the_protocol(job):
    rig, ctrl, x0, xd0, report, folder = job
    assert isinstance(ControllerRuntime(folder), ControllerComponent)
    assert isinstance(CController.build(folder), ControllerComponent)


def test_plan_export_in_the_loop_is_the_verified_loop(tmp_path):
    """Tables of the design in double: the C in the loop gives simulate_closed_loop's commands and states."""
    rig = harder_rig()
    ref = ballctl.CircularMotion(design_plant(rig).quasi_static(), 0.3, 2.0, 40.0)
    ctrl = ballctl.ball_plate.design.design_for_rig(rig, ref, "qs-contact", horizon=1.0)
    write_c_controller(ctrl, tmp_path, rig=rig,
                       options=ControllerDataOptions(representation="plan", real="float64", drop_states=()))
    s = ref(0.0)
    x0 = np.concatenate([s.x, s.u])
    xd0 = np.concatenate([s.xd, s.ud])
    x0[0] += 0.02
    x0 = truth_state(rig, x0)
    steps = len(ctrl.times)
    c = run_component_loop(CController.build(tmp_path), rig, ctrl, x0, xd0, steps=steps, seed=3,
                           options=ComponentLoopOptions(**loop_imperfections(rig)))
    sim = dict(limits=rig.limits, method="rk4", substeps=2, **loop_imperfections(rig))
    py = ballctl.simulate_closed_loop(ctrl, x0, xd0, truth=rig.truth_plant(), seed=3,
                                      options=ballctl.ClosedLoopOptions(backend="python", **sim))
    scale = np.abs(py.u).max()
    assert np.abs(c.u - py.u).max() <= 1e-12 * scale      # the input that acted (slew, 10 ms delay)
    assert np.abs(c.x - py.x).max() <= 1e-12
    assert np.abs(c.commands - py.u[:-1]).max() > 1e-4    # the command is not what acted: the delay and slew
    # the compiled backend of the same loop agrees to its own tolerance (numba's arithmetic order)
    compiled = ballctl.simulate_closed_loop(ctrl, x0, xd0, truth=rig.truth_plant(), seed=3,
                                            options=ballctl.ClosedLoopOptions(**sim))
    assert np.abs(c.x - compiled.x).max() <= 1e-9


def test_export_chooses_its_order_by_verification(job):
    rig, ctrl, x0, xd0, report, folder = job
    data = report.data
    full, *tried = report.checks
    uniform = [c for c in tried if isinstance(c["order"], int)]
    assert data.kind == "fourier" and data.real == "float32" and report.fourier_order == uniform[-1]["order"]
    assert full["full_precision"] and full["passed"]
    assert full["rms_error_design_window_m"] <= 1.05 * report.design_rms_error_m + 1e-4
    assert uniform[-1]["passed"] and not any(c["passed"] for c in uniform[:-1])
    assert all(abs(c["relative_to_full"]) <= 0.05 for c in tried if c["passed"])
    # the model's own order: the lowest that passed (or the chosen one)
    lowered = [c["order"]["Ad"] for c in tried if isinstance(c["order"], dict) and c["passed"]]
    assert data.orders["Ad"] == min(lowered, default=report.fourier_order)
    assert "roll" in data.dropped_states   # the ball's roll angle cannot influence the command
    fp = report.footprint
    assert fp.flash_bytes <= 128 * 1024 and fp.ram_bytes <= 16 * 1024
    print(f"{rig.name}: order {report.fourier_order}, design {report.design_rms_error_m:.4g} m, "
          f"checks {report.checks}, footprint {fp}")


def test_c_equals_twin_and_float32_is_within_5_percent_of_double(job, tmp_path):
    rig, ctrl, x0, xd0, report, folder = job
    order = report.fourier_order
    d64 = controller_data(ctrl, rig=rig, options=ControllerDataOptions(fourier_order=order, real="float64"))
    write_controller_files(d64, tmp_path / "f64")
    steps = 3 * d64.n_period   # three periods: the controller does not stop after the design's horizon
    period = d64.period_s
    runs = {}
    for name, comp in (("twin", ControllerRuntime(d64)), ("c64", CController.build(tmp_path / "f64")),
                       ("c32", CController.build(folder))):
        runs[name] = run_component_loop(comp, rig, ctrl, x0, xd0, steps=steps, seed=0,
                                        options=ComponentLoopOptions(**loop_imperfections(rig)))
        assert runs[name].diverged_at_s is None and len(runs[name].t) == steps + 1
    u_t, u_c = runs["twin"].commands, runs["c64"].commands
    assert np.abs(u_c - u_t).max() <= 1e-12 * np.abs(u_t).max()
    e64, e32 = runs["c64"].rms_last(period), runs["c32"].rms_last(period)
    assert abs(e32 - e64) <= 0.05 * e64
    assert e64 <= 1.1 * report.design_rms_error_m
    assert runs["c32"].health[-1] == 0
    print(f"{rig.name}: RMS last period double {e64:.5g} m, float32 {e32:.5g} m ({e32 / e64 - 1:+.2e}); "
          f"max |u32 - u64| {np.abs(runs['c32'].commands - u_c).max():.3g} rad")


def test_the_python_driver_uses_the_specializations_a_first_run_compiles_ahead(job):
    """A design (its linearization) and the Python driver of a component call the compiled helpers with the
    types ``engine.ahead_specializations`` lists, which the second process of a first run compiles for the
    first one: a type that drifts (a layout, an integer width) would make that work useless, not wrong."""
    from ballctl.simulation.engine import ahead_specializations

    rig, ctrl, x0, xd0, report, folder = job
    run_component_loop(ControllerRuntime(report.data), rig, ctrl, x0, xd0, steps=4, seed=0,
                       options=ComponentLoopOptions(**loop_imperfections(rig)))
    for dispatcher, types in ahead_specializations():
        assert tuple(types) in dispatcher.signatures, (dispatcher.__name__, dispatcher.signatures)


def test_dropped_frames_are_no_update(job):
    rig, ctrl, x0, xd0, report, folder = job
    twin, c = ControllerRuntime(report.data), CController.build(folder)
    steps = 2 * report.data.n_period
    ny = report.data.n_signals
    received = np.random.default_rng(1).random((steps, 1)) > 0.15   # 15 % of the frames lost
    received = np.repeat(received, ny, axis=1)
    lossy = ComponentLoopOptions(received=received, **loop_imperfections(rig))
    r_t = run_component_loop(twin, rig, ctrl, x0, xd0, steps=steps, seed=0, options=lossy)
    r_c = run_component_loop(c, rig, ctrl, x0, xd0, steps=steps, seed=0, options=lossy)
    assert r_t.diverged_at_s is None and r_c.diverged_at_s is None
    assert r_t.rms_last(report.data.period_s) < 2 * report.design_rms_error_m + 1e-3
    assert np.all(np.isnan(r_t.y[:-1][~received]))


def test_run_component_loop_checks_its_arguments(job):
    rig, ctrl, x0, xd0, report, folder = job
    twin = ControllerRuntime(folder)
    with pytest.raises(ballctl.ParameterError, match="steps"):
        run_component_loop(twin, rig, ctrl, x0, xd0, steps=0)
    with pytest.raises(ballctl.ParameterError, match="x0"):
        run_component_loop(twin, rig, ctrl, x0[:3], xd0, steps=2)
    with pytest.raises(ballctl.ParameterError, match="ControllerComponent"):
        run_component_loop(object(), rig, ctrl, x0, xd0, steps=2)
    with pytest.raises(ballctl.ParameterError, match="received"):
        run_component_loop(twin, rig, ctrl, x0, xd0, steps=2,
                           options=ComponentLoopOptions(received=np.ones((3, 2), bool)))


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("arm-none-eabi-gcc", "qemu-system-arm")),
                    reason="PIL tools not installed (apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi "
                           "qemu-system-arm)")
def test_processor_in_the_loop(tmp_path):
    out = tmp_path / "pil.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "pil_cortex_m4.py"), "--json", str(out)],
                         capture_output=True, text=True, timeout=900)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    import json

    numbers = json.loads(out.read_text())
    assert all(numbers["targets"].values()), numbers["targets"]


# ------------------------------------------------------------------ a reference error of zero
@pytest.fixture(scope="module")
def ideal_on_reference():
    """The ideal rig (no noise, no latency, no imperfections) started on the exact circle: one period."""
    rig = ballctl.rig_preset("ideal")
    dt = rig.dt
    horizon = dt * math.ceil(2 * np.pi / dt - 1e-9)
    ref = exact_circular_motion(design_plant(rig), ballctl.LissajousPath.circle(0.5, 1.0), 40.0,
                                duration=horizon + 2 * dt)
    ctrl = ballctl.ball_plate.design.design_for_rig(rig, ref, "exact", horizon=horizon, offset_free=True)
    s = ref(0.0)
    return rig, ctrl, truth_state(rig, s.x.copy()), s.xd.copy()


def _errors_set_to(monkeypatch, design: float, full: float, others: float):
    """Every loop of export_controller reports a constant contact error: the design's run ``design``, the first
    component loop (the full-precision controller) ``full``, every later one (orders, the compiled C) ``others``."""
    import dataclasses

    from ballctl.deploy import sil

    design_run, component_loop = sil._design_run, sil.run_component_loop
    calls = []

    class Constant:
        def __init__(self, r):
            self._r, self.t, self.position_error = r, r.t, np.full(r.t.shape, design)

        def summary(self):
            return self._r.summary()

    def loop(*args, **kwargs):
        r = component_loop(*args, **kwargs)
        calls.append(r)
        value = full if len(calls) == 1 else others
        return dataclasses.replace(r, position_error=np.full(r.position_error.shape, value))

    monkeypatch.setattr(sil, "_design_run", lambda *a, **k: Constant(design_run(*a, **k)))
    monkeypatch.setattr(sil, "run_component_loop", loop)
    return calls


def test_a_zero_reference_error_is_compared_with_the_absolute_floor(ideal_on_reference, tmp_path, monkeypatch):
    """Design, twin and compiled C exactly on the reference (RMS 0.0, as on the ideal rig started on its path): the
    checks pass within RMS_FLOOR_M instead of dividing by zero, and no ratio is reported."""
    import json

    rig, ctrl, x0, xd0 = ideal_on_reference
    _errors_set_to(monkeypatch, 0.0, 0.0, 0.0)
    report = export_controller(ctrl, rig, tmp_path / "zero", x0=x0, xd0=xd0,
                               options=ExportOptions(periods=1, orders=(1, 2), check_c=True))
    full, *tried = report.checks
    assert report.design_rms_error_m == 0.0 and full["rms_error_m"] == 0.0
    assert full["passed"] and full["relative_to_design"] is None
    assert report.fourier_order == 1 and tried[0]["passed"] and tried[0]["relative_to_full"] is None
    assert report.c_check == {"real": "float32", "rms_error_m": 0.0, "relative_to_twin": None, "passed": True}
    assert report.files and all(f.is_file() for f in report.files)
    json.dumps(report.as_dict(), allow_nan=False)   # strict JSON for summary.json
    # the floor is an allowance of 1 um, not a pass for anything: 2 um from a zero reference fails every order
    assert RMS_FLOOR_M == 1e-6
    monkeypatch.undo()
    _errors_set_to(monkeypatch, 0.0, 0.0, 2e-6)
    with pytest.raises(ExportVerificationError, match="no Fourier order in") as info:
        export_controller(ctrl, rig, tmp_path / "two_um", x0=x0, xd0=xd0,
                          options=ExportOptions(periods=1, orders=(1, 2), check_c=False, reduce_model_order=False))
    assert [c["passed"] for c in info.value.report.checks] == [True, False, False]
    assert not (tmp_path / "two_um").exists()


def test_the_ideal_rig_on_its_reference_exports(ideal_on_reference, tmp_path):
    """The real loops (no forced errors): the design's error is rounding (1e-16 m), the exported controller's a few
    um; the drift check compares with the floor instead of refusing 2 x 1e-16 m (what it did before)."""
    rig, ctrl, x0, xd0 = ideal_on_reference
    report = export_controller(ctrl, rig, tmp_path, x0=x0, xd0=xd0,
                               options=ExportOptions(periods=1, orders=(3,), check_c=False))
    full = report.checks[0]
    assert report.design_rms_error_m < 1e-12 and 0 < full["rms_error_m"] < 0.2 * ExportOptions().distance_floor_m
    assert full["passed"] and full["relative_to_design"] is None and report.fourier_order == 3
