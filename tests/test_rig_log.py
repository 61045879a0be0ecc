"""The rig log: CSV round trip, a simulated run as its firmware would log it, malformed files named by line/column."""

import math
from dataclasses import replace

import numpy as np
import pytest

from ballctl.simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
from ballctl.references.moving_plate import exact_circular_motion
from ballctl.references.paths import LissajousPath
from ballctl.ball_plate.rig import rig_preset
from ballctl.ball_plate.rig_log import RigLog, RigLogError, read_rig_log
from ballctl.ball_plate.design import design_for_rig


def _small_log(rng, *, encoders=False, K=40):
    t = 0.02 * np.arange(K)
    u = np.deg2rad(1.0) * rng.standard_normal((K, 2))
    y = 0.1 * rng.standard_normal((K, 4 if encoders else 2))
    if encoders:
        y[:, 2:] = np.deg2rad(2.0) * rng.standard_normal((K, 2))
        y[5, 2:] = np.nan
    y[:2, :2] = np.nan
    y[17, :2] = np.nan
    names = ("contact_x", "contact_y", "alpha", "beta") if encoders else ("contact_x", "contact_y")
    return RigLog(t, u, y, names, source="test")


@pytest.mark.parametrize("encoders", [False, True])
def test_csv_round_trip_keeps_every_value_and_every_gap(tmp_path, rng, encoders):
    log = _small_log(rng, encoders=encoders)
    path = log.write_csv(tmp_path / "log.csv")
    back = read_rig_log(path)
    assert back.signal_names == log.signal_names and back.n_steps == log.n_steps
    np.testing.assert_allclose(back.t, log.t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(back.commands, log.commands, rtol=1e-9, atol=1e-15)
    assert np.array_equal(np.isnan(back.readings), np.isnan(log.readings))
    np.testing.assert_allclose(back.readings, log.readings, rtol=1e-9, atol=1e-15)
    text = path.read_text()
    assert text.startswith("# ballctl rig log 1\n")
    header = text.splitlines()[1]
    assert header.startswith("t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_m,contact_y_m")
    assert ("alpha_rad,beta_rad" in header) == encoders
    assert back.dt == pytest.approx(0.02) and back.duration_s == pytest.approx(0.78)


def test_columns_may_come_in_any_order_and_comments_are_kept():
    text = "# a comment\n# another\ncontact_y_m,t_s,contact_x_m,beta_cmd_rad,alpha_cmd_rad\n" + "".join(
        f"{0.01 * k},{0.02 * k},{-0.01 * k},0.001,{0.002 * k}\n" for k in range(5))
    log = RigLog.from_csv_text(text)
    np.testing.assert_allclose(log.reading("contact_y"), 0.01 * np.arange(5))
    np.testing.assert_allclose(log.commands[:, 0], 0.002 * np.arange(5))
    assert log.comments == ("a comment", "another")


def _lines(k=6):
    return ["t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_m,contact_y_m"] + [
        f"{0.02 * i:.2f},0.01,-0.02,{0.1 + 0.001 * i},0.2" for i in range(k)]


def _with(line_no, text):
    lines = _lines()
    lines[line_no - 1] = text
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, line, column, match", [
    (_with(1, "t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_mm,contact_y_m"), 1, 4, "unknown column 'contact_x_mm'"),
    (_with(1, "t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_m"), 1, None, "missing column.*contact_y_m"),
    (_with(1, "t_s,alpha_cmd_rad,alpha_cmd_rad,contact_x_m,contact_y_m"), 1, 3, "appears twice"),
    (_with(3, "0.02,0.01,abc,0.1,0.2"), 3, 3, r"column 3 \(beta_cmd_rad\): 'abc' is not a number"),
    (_with(4, "0.04,0.01,-0.02,nan,0.2"), 4, 4, "not a finite number"),
    (_with(2, "0.00,,-0.02,0.1,0.2"), 2, 2, r"alpha_cmd_rad\): empty"),
    (_with(5, "0.06,0.01,-0.02,,0.2"), 5, 4, "empty while contact_y_m has a reading"),
    (_with(4, "0.02,0.01,-0.02,0.1,0.2"), 4, 1, "does not increase"),
    (_with(4, "0.05,0.01,-0.02,0.1,0.2"), 4, 1, "control steps must be uniform"),
    (_with(3, "0.02,15.0,-0.02,0.1,0.2"), 3, 2, "angles must be radians"),
    (_with(6, "0.10,0.01,-0.02,120.5,0.2"), 6, 4, "must be metres"),
    (_with(6, "0.10,0.01,-0.02,0.1"), 6, None, "4 fields, the header has 5"),
])
def test_malformed_logs_are_refused_naming_line_and_column(tmp_path, text, line, column, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(RigLogError, match=match) as info:
        read_rig_log(path)
    assert info.value.line == line and info.value.column == column
    assert f"line {line}" in str(info.value) and str(path) in str(info.value)
    if column is not None:
        assert f"column {column} (" in str(info.value)


@pytest.mark.parametrize("text, match", [
    ("", "no header line"),
    ("# only a comment\n", "no header line"),
    ("\n".join(_lines(2)) + "\n", "2 data row"),
    ("t_s,alpha_cmd_rad,beta_cmd_rad,contact_x_m,contact_y_m,alpha_rad\n0,0,0,0,0,0\n", "alpha_rad and beta_rad"),
    ("\n".join(_lines(1)[:1] + [f"{0.02 * i},0,0,," for i in range(5)]) + "\n", "empty on every row"),
])
def test_logs_without_usable_data_are_refused(text, match):
    with pytest.raises(RigLogError, match=match):
        RigLog.from_csv_text(text, source="bad.csv")


def test_missing_file_and_bad_arrays_are_refused(tmp_path, rng):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_rig_log(tmp_path / "missing.csv")
    log = _small_log(rng)
    with pytest.raises(ValueError, match=r"commands must have shape \(40, 2\)"):
        RigLog(log.t, log.commands[:, :1], log.readings)
    with pytest.raises(ValueError, match="strictly increasing"):
        RigLog(log.t[::-1], log.commands, log.readings)
    with pytest.raises(ValueError, match="degrees written as radians"):
        RigLog(log.t, np.full((40, 2), 5.0), log.readings)
    with pytest.raises(ValueError, match="both or neither"):
        y = log.readings.copy()
        y[10, 0] = np.nan
        RigLog(log.t, log.commands, y)
    with pytest.raises(ValueError, match="signal must be one of"):
        log.reading("alpha")


@pytest.fixture(scope="module")
def lab_run():
    """A short output-feedback run on a lab rig (camera 8 ms: 2 steps late; encoders 0 ms) with lost frames."""
    rig = rig_preset("lab")
    rig = replace(rig, imperfections=replace(rig.imperfections, frame_drop=0.05))
    ref = exact_circular_motion(rig.design_plant(), LissajousPath.circle(0.3, 1.0), 40.0, duration=1.1)
    ctrl = design_for_rig(rig, ref, "exact", horizon=1.0, offset_free=True)
    s = ref(0.0)
    result = simulate_closed_loop(ctrl, rig.truth_initial_state(s.x), s.xd, truth=rig.truth_plant(), seed=3,
                                  options=ClosedLoopOptions(method="rk4", imperfections=rig.imperfections.loop,
                                                            limits=rig.limits, substeps=2))
    return rig, ctrl, result


def test_a_run_is_logged_as_its_firmware_received_it(lab_run, tmp_path):
    rig, ctrl, result = lab_run
    log = RigLog.from_closed_loop(result, rig, ctrl)
    assert log.signal_names == ("contact_x", "contact_y", "alpha", "beta")
    np.testing.assert_array_equal(log.t, result.t)
    np.testing.assert_array_equal(log.commands, result.u)  # no actuation delay: what the firmware sent
    # the camera's sample of step j (8 ms latency) is in hand at step j + 2; the encoders' at once
    assert ctrl.estimator.latency_steps == 2
    cam, enc = [result.signal_names.index(s) for s in ("contact_x", "alpha")]
    assert np.all(np.isnan(log.readings[:2, 0]))
    np.testing.assert_array_equal(log.readings[2:, 0], result.y[:-2, cam])
    np.testing.assert_array_equal(log.readings[:, 2], result.y[:, enc])
    lost = np.isnan(result.y[:-2, cam])
    assert 0 < np.count_nonzero(lost) < lost.size // 4  # 5 % of the frames lost
    back = read_rig_log(log.write_csv(tmp_path / "run.csv"))
    assert np.array_equal(np.isnan(back.readings), np.isnan(log.readings))
    assert "rig = lab" in back.comments


def test_from_closed_loop_needs_an_output_feedback_run(lab_run):
    rig, ctrl, result = lab_run
    with pytest.raises(ValueError, match="output-feedback ClosedLoopResult"):
        RigLog.from_closed_loop(replace(result, y=np.zeros((len(result.t), 0)), signal_names=()), rig, ctrl)
    with pytest.raises(ValueError, match="control period"):
        RigLog.from_closed_loop(result, rig_preset("tabletop"))


def test_the_csv_cells_are_empty_not_nan(rng):
    text = _small_log(rng).to_csv_text()
    assert "nan" not in text.lower()
    row = text.splitlines()[2].split(",")
    assert row[3] == "" and row[4] == "" and not math.isnan(float(row[0]))
