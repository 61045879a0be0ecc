"""Tests of ballctl.schedule: exact round trips, tamper detection, atomic writes, C export."""

import csv
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from ballctl._errors import ScheduleFileError
from ballctl.linear.discretize import DiscreteLTVSystem
from ballctl.design.lqr import finite_horizon_lqr
from ballctl.linear.partition import Partition
from ballctl.schedule import SCHEDULE_FORMAT_VERSION, GainSchedule, formats
from ballctl.schedule.data import canonical_checksum

KT, NU, N, NC = 6, 2, 5, 3


def _make(Q_varying=False, **over):
    rng = np.random.default_rng(0)
    gains = rng.normal(size=(KT, NU, N))
    # values that a sloppy float writer would not round-trip: signed zero, 1/3,
    # extremes of the exponent range, a subnormal
    gains[0, 0, :] = [-0.0, 1.0 / 3.0, 1e-300, 1.7976931348623157e308, 5e-324]
    dt = 0.01
    kwargs = dict(
        times=0.5 + np.arange(KT) * dt, gains=gains, x0=rng.normal(size=(KT, NC)), xd0=rng.normal(size=(KT, NC)),
        u0=rng.normal(size=(KT, NU)), state_names=("x_c", "y_c", "x_c_rate", "y_c_rate", "phi"),
        input_names=("alpha", "beta"), coordinate_names=("x_c", "y_c", "phi"), independent=("x_c", "y_c"),
        admissible_dependent=("phi",), dependent=(), dt=dt, plant_name="ball_plate",
        plant_parameters={"mass_kg": 0.1, "radius_m": 0.02, "g": 9.81},
        Q=rng.normal(size=(KT, N, N)) if Q_varying else np.diag([1.0, 2.0, 0.1, 0.1, 3.0]),
        R=np.eye(NU) * 0.7, Q_N=np.eye(N) * 10.0)
    kwargs.update(over)
    return GainSchedule(**kwargs)


@pytest.fixture
def sched():
    return _make()


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("suffix", [".npz", ".json"])
@pytest.mark.parametrize("Q_varying", [False, True])
def test_round_trip_is_exact(tmp_path, suffix, Q_varying):
    s = _make(Q_varying)
    path = s.save(tmp_path / f"sched{suffix}")
    back = GainSchedule.load(path)
    assert back.is_identical(s)
    assert np.signbit(back.gains[0, 0, 0]) and back.gains[0, 0, 4] == 5e-324  # bitwise, not approximately
    assert back.plant_parameters == {"mass_kg": 0.1, "radius_m": 0.02, "g": 9.81}
    assert back.checksum == s.checksum
    assert not s.is_identical(_make(Q_varying, dt=0.01, times=0.5 + np.arange(KT) * 0.01,
                                    plant_parameters={"mass_kg": 0.1, "radius_m": 0.02, "g": 9.8}))


def test_checksum_is_the_same_in_both_containers(tmp_path, sched):
    sched.save(tmp_path / "s.json")
    sched.save(tmp_path / "s.npz")
    doc = json.loads((tmp_path / "s.json").read_text())
    with np.load(tmp_path / "s.npz") as z:
        assert str(z["checksum"]) == doc["checksum"]["value"] == sched.checksum
    assert doc["format_version"] == SCHEDULE_FORMAT_VERSION


# ------------------------------------------------------------ tampered files
@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_truncated_file_raises(tmp_path, sched, suffix):
    path = sched.save(tmp_path / f"s{suffix}")
    raw = path.read_bytes()
    # (the JSON file ends in "}\n": losing only the newline leaves a complete document, so cut 2)
    for cut in (len(raw) // 2, len(raw) - 2, 10):
        path.write_bytes(raw[:cut])
        with pytest.raises(ScheduleFileError, match="truncated or corrupted"):
            GainSchedule.load(path)


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_a_flipped_byte_never_yields_different_data(tmp_path, sched, suffix):
    # Some bytes carry no data (a zip member's timestamp, JSON whitespace turned into
    # other whitespace): flipping them may load fine, but then the content must be
    # identical. Everything else must raise ScheduleFileError.
    path = sched.save(tmp_path / f"s{suffix}")
    raw = path.read_bytes()
    raised = 0
    positions = range(0, len(raw), 5)
    for pos in positions:
        bad = bytearray(raw)
        bad[pos] ^= 0x04
        path.write_bytes(bytes(bad))
        try:
            back = GainSchedule.load(path)
        except ScheduleFileError:
            raised += 1
        else:
            assert back.is_identical(sched), f"flip at byte {pos} changed the content silently"
    # zip local/central headers (names, timestamps, ~20 % of this small npz) are partly
    # unchecked; every byte of array data and metadata is covered by CRC-32 and checksum
    assert raised > 0.75 * len(positions)


def test_edited_number_in_json_raises(tmp_path, sched):
    path = sched.save(tmp_path / "s.json")
    doc = json.loads(path.read_text())
    doc["arrays"]["gains"]["data"][7] += 1e-12
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleFileError, match="checksum mismatch.*edited or corrupted"):
        GainSchedule.load(path)
    doc = json.loads(formats.schedule_bytes(sched, "json"))
    doc["metadata"]["plant_parameters"]["g"] = 9.80665
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleFileError, match="checksum mismatch"):
        GainSchedule.load(path)


def _rewrite_npz(src, dst, **replace):
    with np.load(src) as z:
        members = {k: z[k] for k in z.files}
    members.update(replace)
    np.savez(dst, **members)


def test_edited_array_in_npz_raises(tmp_path, sched):
    path = sched.save(tmp_path / "s.npz")
    gains = sched.gains.copy()
    gains[3, 1, 2] = np.nextafter(gains[3, 1, 2], np.inf)  # one ulp
    _rewrite_npz(path, path, array_gains=gains)
    with pytest.raises(ScheduleFileError, match="checksum mismatch"):
        GainSchedule.load(path)


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_wrong_version_and_format_raise(tmp_path, sched, suffix):
    path = sched.save(tmp_path / f"s{suffix}")
    if suffix == ".json":
        doc = json.loads(path.read_text())
        doc["format_version"] = 3
        path.write_text(json.dumps(doc))
    else:
        _rewrite_npz(path, path, format_version=np.array(3))
    with pytest.raises(ScheduleFileError, match="format version 3 is not supported; this ballctl reads versions 1, 2"):
        GainSchedule.load(path)
    if suffix == ".json":
        doc["format_version"], doc["format"] = 1, "something-else"
        path.write_text(json.dumps(doc))
    else:
        _rewrite_npz(path, path, format_version=np.array(1), format=np.array("something-else"))
    with pytest.raises(ScheduleFileError, match="not a ballctl gain-schedule file"):
        GainSchedule.load(path)


def test_inconsistent_but_checksummed_content_raises(tmp_path, sched):
    # a writer with a bug could produce a self-consistent checksum over bad data
    doc = json.loads(formats.schedule_bytes(sched, "json"))
    doc["metadata"]["state_names"] = ["a", "b", "c", "d"]
    arrays = {k: np.array(v["data"]).reshape(v["shape"]) for k, v in doc["arrays"].items()}
    doc["checksum"]["value"] = canonical_checksum(doc["metadata"], arrays)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleFileError, match="inconsistent schedule content: state_names must have 5 entries"):
        GainSchedule.load(path)


def test_path_errors(tmp_path, sched):
    with pytest.raises(ValueError, match="must end in .npz or .json"):
        sched.save(tmp_path / "s.txt")
    with pytest.raises(FileNotFoundError):
        GainSchedule.load(tmp_path / "missing.json")


# ------------------------------------------------------------- atomic writes
def test_atomic_write_leaves_no_temp_files_and_replaces(tmp_path, sched):
    path = tmp_path / "s.json"
    sched.save(path)
    other = _make(plant_name="other")
    other.save(path)
    assert GainSchedule.load(path).plant_name == "other"
    sched.to_csv(tmp_path / "s.csv")
    sched.to_c_header(tmp_path / "s.h")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.h", "s.json"]


def test_failed_serialization_keeps_the_old_file(tmp_path, sched, monkeypatch):
    path = sched.save(tmp_path / "s.json")
    before = path.read_bytes()

    def boom(schedule, kind):
        raise RuntimeError("serialization failed")

    monkeypatch.setattr(formats, "schedule_bytes", boom)
    with pytest.raises(RuntimeError, match="serialization failed"):
        _make(plant_name="other").save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def test_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path, sched, monkeypatch):
    path = sched.save(tmp_path / "s.npz")
    before = path.read_bytes()

    def fsync_fails(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync_fails)  # the temp file is written, then fsync fails
    with pytest.raises(OSError, match="No space left"):
        _make(plant_name="other").save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]


# ------------------------------------------------------------------- lookup
def test_gain_at_is_a_zero_order_hold(sched):
    t = sched.times
    assert sched.index_at(t[0]) == 0
    assert sched.index_at(t[3]) == 3
    assert sched.index_at(t[3] + 0.5 * sched.dt) == 3
    assert sched.index_at(np.nextafter(t[1], -np.inf)) == 0
    assert sched.index_at(np.nextafter(sched.end_time, -np.inf)) == KT - 1
    np.testing.assert_array_equal(sched.gain_at(t[2]), sched.gains[2])
    for bad in (np.nextafter(t[0], -np.inf), sched.end_time, 1e9):
        with pytest.raises(ValueError, match="outside the schedule"):
            sched.gain_at(bad)
    X = np.arange(N, dtype=float)
    np.testing.assert_array_equal(sched.du_at(t[4], X), -(sched.gains[4] @ X))


# ------------------------------------------------------------------- exports
def test_csv_export_is_exact(tmp_path, sched):
    path = sched.to_csv(tmp_path / "s.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][:4] == ["t", "u0_alpha", "u0_beta", "x0_x_c"] and rows[0][-1] == "K_beta_phi"
    assert len(rows) == KT + 1 and all(len(r) == 1 + NU + 2 * NC + NU * N for r in rows)
    values = np.array([[float(v) for v in r] for r in rows[1:]])
    np.testing.assert_array_equal(values[:, 0], sched.times)
    np.testing.assert_array_equal(values[:, -NU * N:].reshape(KT, NU, N), sched.gains)
    assert np.signbit(values[0, -NU * N])


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")
def test_c_header_compiles_and_matches_numpy(tmp_path, sched):
    sched.to_c_header(tmp_path / "sched.h", name="bp")
    X = np.array([0.3, -1.25, 2.0, 1e-3, -7.5])
    times = [sched.times[0], sched.times[2] + 0.3 * sched.dt, np.nextafter(sched.times[3], -np.inf),
             sched.times[5], np.nextafter(sched.end_time, -np.inf), sched.end_time, sched.times[0] - 1.0]
    main = ["#include <stdio.h>", '#include "sched.h"', "int main(void) {",
            f"    const double X[BP_N_STATES] = {{{', '.join(repr(float(v)) for v in X)}}};",
            f"    const double ts[] = {{{', '.join(repr(float(v)) for v in times)}}};",
            "    double du[BP_N_INPUTS];", "    long k; int i, j, m;",
            "    for (m = 0; m < (int)(sizeof ts / sizeof ts[0]); ++m) {",
            "        du[0] = du[1] = 0.0;",
            "        k = bp_du(ts[m], X, du);",
            '        printf("%ld %a %a\\n", k, du[0], du[1]);', "    }",
            "    for (k = 0; k < BP_N_SAMPLES; ++k) for (i = 0; i < BP_N_INPUTS; ++i) "
            "for (j = 0; j < BP_N_STATES; ++j)",
            '        printf("%a\\n", bp_gains[k][i][j]);',
            '    printf("%a %a\\n", bp_dt, bp_times[BP_N_SAMPLES - 1]);',
            "    return 0;", "}", ""]
    (tmp_path / "main.c").write_text("\n".join(main))
    exe = tmp_path / "main"
    cc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o", str(exe),
                         str(tmp_path / "main.c")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    for line, t in zip(out, times):
        k, du0, du1 = line.split()
        if t < sched.times[0] or t >= sched.end_time:
            assert int(k) == -1
            continue
        assert int(k) == sched.index_at(t)  # same doubles, same comparisons: identical index
        # du: C sums K[i][j] X[j] left to right, numpy may use another order or FMA, so
        # allow a few ulps of the largest term (|K| |X| <= ~1e1)
        np.testing.assert_allclose([float.fromhex(du0), float.fromhex(du1)], sched.du_at(t, X), rtol=0, atol=1e-13)
    # the compiler read every literal back to the same bits (printed as hex floats)
    gains_c = np.array([float.fromhex(v) for v in out[len(times):len(times) + KT * NU * N]])
    np.testing.assert_array_equal(gains_c.reshape(KT, NU, N), sched.gains)
    dt_c, tlast_c = (float.fromhex(v) for v in out[len(times) + KT * NU * N].split())
    assert dt_c == sched.dt and tlast_c == sched.times[-1]


def test_c_header_name_must_be_an_identifier(tmp_path, sched):
    for bad in ("1abc", "a-b", "static", ""):
        with pytest.raises(ValueError, match="name must be a C identifier"):
            sched.to_c_header(tmp_path / "x.h", name=bad)
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("over, match", [
    (dict(independent=("x_c",), admissible_dependent=("phi",)), r"missing \['y_c'\]"),
    (dict(independent=("x_c", "phi"), admissible_dependent=("y_c",)), "are not among the partition.s reduced states"),
    (dict(times=np.array([0.0, 0.01, 0.03, 0.04, 0.05, 0.06])), "uniformly spaced with step dt"),
    (dict(plant_parameters={"mass_kg": "heavy"}), r"plant_parameters\['mass_kg'\] must be a real number"),
    (dict(plant_parameters={"flag": True}), r"plant_parameters\['flag'\] must be a number"),
    (dict(u0=np.zeros((KT, 3))), r"u0 must have shape \(6, 2\)"),
    (dict(Q=np.eye(4)), r"Q must have shape \(5, 5\) or \(6, 5, 5\)"),
    (dict(dt=0.0), "dt must be > 0"),
    (dict(input_names=("alpha", "alpha")), "input_names must be unique"),
])
def test_constructor_validation(over, match):
    with pytest.raises(ValueError, match=match):
        _make(**over)


def test_from_lqr(sched):
    part = Partition((0, 1), (2,), (), ("x_c", "y_c", "phi"))
    rng = np.random.default_rng(1)
    Ad = np.eye(N) + 0.05 * rng.normal(size=(KT, N, N))
    Bd = 0.1 * rng.normal(size=(KT, N, NU))
    dsys = DiscreteLTVSystem(0.5 + np.arange(KT) * 0.01, 0.01, Ad, Bd, part.state_names, ("alpha", "beta"), part)
    lqr = finite_horizon_lqr(dsys, np.eye(N), np.eye(NU), Q_N=np.eye(N))
    s = GainSchedule.from_lqr(lqr, dsys, x0=sched.x0, xd0=sched.xd0, u0=sched.u0, plant_name="ball_plate",
                              plant_parameters={"g": 9.81})
    np.testing.assert_array_equal(s.gains, lqr.gains)
    assert s.Q.shape == (N, N) and s.state_names == ("x_c", "y_c", "x_c_rate", "y_c_rate", "phi")
    assert s.independent == ("x_c", "y_c") and s.admissible_dependent == ("phi",) and s.dependent == ()
