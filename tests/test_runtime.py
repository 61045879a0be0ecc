"""The Python twin of the exported C controller steps exactly like the C (1e-12 in double), numpy only."""

import ast
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import ballctl
from ballctl.deploy import runtime as rt
from ballctl.deploy.runtime import ControllerRuntime
from ballctl.schedule import ControllerDataOptions, write_c_controller

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")


def design_plant(rig):
    """The rig's plant without its imperfections (what designs and references use)."""
    return getattr(rig, "design_plant", rig.truth_plant)()


@pytest.fixture(scope="module")
def design():
    """qs-paper design (6 states) of the tabletop rig on a circle at 2 rad/s (period pi s), two periods."""
    rig = ballctl.rig_preset("tabletop")
    ref = ballctl.CircularMotion(design_plant(rig).quasi_static(), 0.3, 2.0, 40.0)
    horizon = rig.dt * int(np.ceil(2 * ref.period / rig.dt))
    return rig, ballctl.ball_plate.design.design_for_rig(rig, ref, "qs-paper", horizon=horizon)


@pytest.fixture(scope="module")
def exported(design, tmp_path_factory):
    rig, ctrl = design
    out = {}
    for kind in ("fourier", "plan"):
        folder = tmp_path_factory.mktemp(kind)
        write_c_controller(ctrl, folder, rig=rig,
                           options=ControllerDataOptions(representation=kind, real="float64", fourier_order=4))
        out[kind] = folder
    return out


def _sequence(twin, steps, seed=0):
    """Measurements of step j (delivered at j + latency): reference + noise, some dropped, NaN or absurd."""
    rng = np.random.default_rng(seed)
    y = np.array([twin.reference(j) for j in range(steps)]) + 2e-3 * rng.standard_normal((steps, twin.n_signals))
    y[rng.random(steps) < 0.1] = np.nan            # dropped frames (no call)
    y[rng.random((steps, twin.n_signals)) < 0.03] = np.nan   # one signal lost
    y[rng.random(steps) < 0.02, 0] += 1.0          # an absurd reading (refused: out of range)
    return y


def _replay(component, y, steps, lat):
    u = np.empty((steps, component.n_inputs if hasattr(component, "n_inputs") else 2))
    status = []
    for k in range(steps):
        j = k - lat
        if j >= 0 and np.any(np.isfinite(y[j])):
            status.append(component.measure(j, y[j]))
        u[k] = component.step()
    return u, status


def test_runtime_depends_on_numpy_only():
    tree = ast.parse(Path(rt.__file__).read_text())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods <= {"__future__", "os", "pathlib", "numpy"}, mods
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


@needs_gcc
@pytest.mark.parametrize("kind", ["fourier", "plan"])
def test_twin_equals_the_c_to_1e_12(exported, kind):
    from ballctl.deploy.sil import CController

    twin = ControllerRuntime(exported[kind])
    c = CController.build(exported[kind])
    steps = 3 * max(twin.n_period, 158) + 7   # three periods (and past the plan: the hold)
    y = _sequence(twin, steps)
    u_t, s_t = _replay(twin, y, steps, twin.latency_steps)
    u_c, s_c = _replay(c, y, steps, twin.latency_steps)
    assert s_t == s_c and rt.BC_REFUSED_RANGE in s_t and rt.BC_REFUSED_NONFINITE in s_t
    assert np.abs(u_c - u_t).max() <= 1e-12 * np.abs(u_t).max()
    np.testing.assert_allclose([c.reference(j) for j in (0, 5, 1000)], [twin.reference(j) for j in (0, 5, 1000)],
                               rtol=1e-13, atol=1e-15)
    assert c.health == twin.health


def test_measure_status_codes(exported):
    twin = ControllerRuntime(exported["fourier"])
    lat = twin.latency_steps
    for _ in range(5):
        twin.step()
    y = twin.reference(4)
    assert twin.measure(6, y) == rt.BC_ERR_FUTURE
    assert twin.measure(5 - lat - 1, y) == rt.BC_ERR_LATE      # already committed
    assert twin.measure(4, y) == rt.BC_OK
    assert twin.measure(4, [np.nan, y[1]]) == rt.BC_REFUSED_NONFINITE
    assert twin.measure(4, [y[0] + 0.3, np.inf]) == rt.BC_REFUSED_RANGE | rt.BC_REFUSED_NONFINITE


def test_health_flags_a_persistent_large_innovation_and_silence(exported):
    twin = ControllerRuntime(exported["fourier"])
    lat = twin.latency_steps
    for k in range(60):   # the ball seen 0.1 m off the reference (within the range limit): a persistent innovation
        if k >= lat:
            twin.measure(k - lat, twin.reference(k - lat) + 0.1)
        twin.step()
        if k == lat + 2:
            assert twin.health == 0
    assert twin.health & rt.BC_HEALTH_INNOVATION
    for _ in range(twin.health_steps + 5):   # then no camera at all
        twin.step()
    assert twin.health == rt.BC_HEALTH_STALE
    twin.reset()
    assert twin.health == 0 and twin.k == 0


def test_a_nan_in_the_estimate_never_reaches_the_plate(exported):
    twin = ControllerRuntime(exported["fourier"])
    twin.step()
    twin._X_c[:] = np.nan   # a corrupted state (a NaN measurement itself is refused)
    for _ in range(5):
        u = twin.step()
        assert np.all(np.isfinite(u))
    assert twin.health & rt.BC_HEALTH_RESET


def test_runs_forever_and_repeats_its_reference(design, exported):
    rig, ctrl = design
    twin = ControllerRuntime(exported["fourier"])
    n = 3 * twin.n_period
    for k in range(n):
        twin.measure(k, twin.reference(k)) if k >= twin.latency_steps else None
        twin.step()
    assert twin.k == n
    # the reference of the measured signals is the design's, to the fit of its settled last period
    y_ref = ctrl.samples.x[:len(ctrl.times)][:, list(ctrl.estimator.coordinate_index)]
    last = range(len(ctrl.times) - twin.n_period, len(ctrl.times))
    err = max(np.abs(twin.reference(k) - y_ref[k]).max() for k in last)
    assert err < 1e-4


def test_time_per_step(exported):
    twin = ControllerRuntime(exported["fourier"])
    y = twin.reference(0)
    steps = 400
    start = time.perf_counter()
    for k in range(steps):
        twin.measure(k, y)
        twin.step()
    per_step = (time.perf_counter() - start) / steps
    print(f"twin: {per_step * 1e6:.1f} us per step")
    assert per_step < 1e-3   # the target, 100 us, is measured by benchmarks/pil_cortex_m4.py (a shared machine)


def test_loads_a_directory_or_its_file_and_refuses_others(exported, tmp_path):
    a = ControllerRuntime(exported["fourier"])
    b = ControllerRuntime(exported["fourier"] / "ballctl_controller.npz")
    assert a.n_period == b.n_period > 0 and a.signal_names == ("contact_x", "contact_y")
    with pytest.raises(FileNotFoundError, match="no exported controller"):
        ControllerRuntime(tmp_path)
    np.savez(tmp_path / "other.npz", x=np.zeros(1))
    with pytest.raises(ValueError, match="version-2"):
        ControllerRuntime(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="j must be"):
        a.reference(-1)
