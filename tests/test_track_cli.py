"""``ballctl track``: verification on the truth plant, refusal to export a failing design, strict summary.json."""

import json
import re

import numpy as np
import pytest

import ballctl
from ballctl.cli import main


def _reject(token):
    raise ValueError(f"non-strict JSON constant {token}")


def test_track_verifies_exports_and_writes_strict_json(tmp_path, capsys):
    out = tmp_path / "out"
    cfg = tmp_path / "cfg.toml"
    # the plain LQG (no disturbance states): its estimator has the design's 4 states
    cfg.write_text('[track]\nrig = "ideal"\ndesign = "qs-contact"\nduration = 1.0\noffset = [0.0, 0.0]\n'
                   'max_rms_error = 0.05\noffset_free = false\n')
    assert main(["track", "--config", str(cfg), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Verification on the truth plant" in text and "Observability per sensor set" in text
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    assert summary["exported_design"] == "qs-contact" and summary["forced"] is False
    v = summary["verification"]["qs-contact"]
    assert v["converged"] is True and isinstance(v["rms_error_m"], float) and v["peak_tilt_deg"] < 15.0 + 1e-9
    assert summary["rig"]["name"] == "ideal" and summary["rig"]["dt_s"] == 0.02
    for name in ("gain_schedule.npz", "gain_schedule.json", "gain_schedule.h", "estimator.npz", "summary.md",
                 "tracking.png", "c_controller/ballctl_controller.c", "c_controller/ballctl_controller_data.h"):
        assert (out / name).stat().st_size > 0, name
    sched = ballctl.GainSchedule.load(out / "gain_schedule.npz")
    assert sched.gains.shape == (50, 2, 4)
    est = np.load(out / "estimator.npz")
    assert est["update_gains"].shape == (50, 4, 2) and int(est["latency_steps"]) == 0


def test_track_refuses_to_export_a_failing_design_unless_forced(tmp_path, capsys):
    args = ["track", "--rig", "ideal", "--design", "qs-contact", "--duration", "0.6", "--max-rms-error", "1e-9"]
    out = tmp_path / "refused"
    assert main(args + ["--out", str(out)]) == 1
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    assert summary["exported_design"] is None
    assert summary["verification"]["qs-contact"]["passed"] is False
    assert not (out / "gain_schedule.npz").exists()
    forced = tmp_path / "forced"
    assert main(args + ["--out", str(forced), "--force"]) == 0
    summary = json.loads((forced / "summary.json").read_text(), parse_constant=_reject)
    assert summary["exported_design"] == "qs-contact" and summary["forced"] is True
    assert "RMS error" in summary["reason"] and (forced / "gain_schedule.npz").exists()
    capsys.readouterr()


@pytest.mark.parametrize("argv, match", [
    (["--design", "lqg9"], "--design must be auto or one of"),
    (["--rig", "desk"], "unknown rig preset 'desk'"),
])
def test_track_bad_input_is_one_line(tmp_path, capsys, argv, match):
    assert main(["track", "--out", str(tmp_path)] + argv) == 2
    assert match in capsys.readouterr().err


def _rig_file(path, offset_deg):
    path.write_text(f'base = "tabletop"\n[imperfections]\nplate_offset_deg = [{offset_deg}, {-0.7 * offset_deg}]\n'
                    'rolling_resistance = 0.003\nframe_drop = 0.02\n')
    return str(path)


#: the exact design on the tabletop rig over 3 s, verified on its nominal truth only
EXACT_3S = ["track", "--design", "exact", "--duration", "3.0", "--robust-runs", "0"]


@pytest.fixture(scope="module")
def plain_exact_3s(tmp_path_factory):
    """The output folder of ``EXACT_3S`` on the bare tabletop preset: the design the two tests below compare
    theirs with (a rig with imperfections, a --truth), one job instead of one each."""
    out = tmp_path_factory.mktemp("plain") / "out"
    assert main(EXACT_3S + ["--max-rms-error", "0.02", "--out", str(out)]) == 0
    return out


def test_track_verifies_over_the_rigs_uncertainty_and_the_design_never_sees_the_truth(tmp_path, capsys,
                                                                                        plain_exact_3s):
    out = tmp_path / "level1.0"
    assert main(["track", "--design", "exact", "--duration", "3.0", "--robust-runs", "24", "--max-rms-error", "0.02",
                 "--rig", _rig_file(tmp_path / "rig1.0.toml", 1.0), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    v = summary["verification"]["exact"]
    robust = v["robust"]
    assert robust["runs"] == 24 and 0.0 <= robust["success_rate"] <= 1.0
    assert robust["rms_p50_m"] <= robust["rms_p95_m"] <= robust["worst_rms_m"]
    assert robust["criteria"] == {"min_success_rate": 0.99, "max_rms_p95_m": 0.02, "friction_coefficient": 0.3}
    assert v["offset_free"] is True and v["contact"]["rig_friction_coefficient"] == 0.3
    assert summary["rig"]["imperfections"]["plate_offset_deg"] == pytest.approx([1.0, -0.7])
    assert (out / "robust.png").stat().st_size > 0
    text = (out / "summary.md").read_text()
    assert "Pass criteria: at least 99 % of the runs converge" in text and "level error 1, -0.7 deg" in text
    # the truth's imperfections (level error, rolling resistance, lost frames) change the verification, never
    # the exported design: it is the bare preset's
    a = ballctl.GainSchedule.load(plain_exact_3s / "gain_schedule.npz")
    b = ballctl.GainSchedule.load(out / "gain_schedule.npz")
    assert a.checksum == b.checksum and a.is_identical(b)
    assert (plain_exact_3s / "gain_schedule.npz").read_bytes() == (out / "gain_schedule.npz").read_bytes()
    capsys.readouterr()


def test_track_writes_the_rig_log_and_verifies_on_another_truth(tmp_path, capsys, plain_exact_3s):
    from ballctl.ball_plate.rig_log import read_rig_log

    truth = _rig_file(tmp_path / "other.toml", 1.0)
    out, log = tmp_path / "out", tmp_path / "logs" / "run.csv"
    args = EXACT_3S + ["--max-rms-error", "0.03", "--out", str(out)]
    assert main(args + ["--truth", truth, "--log", str(log)]) == 0
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    assert summary["truth_rig"]["imperfections"]["plate_offset_deg"] == pytest.approx([1.0, -0.7])
    assert summary["rig"]["name"] == "tabletop"
    rig_log = read_rig_log(log)
    assert rig_log.dt == pytest.approx(0.02, rel=1e-12) and rig_log.n_steps == 151
    # the camera's 30 ms latency: the first two steps have no reading; a lost frame is an empty cell
    x = rig_log.reading("contact_x")
    assert np.isnan(x[:2]).all() and np.isfinite(x[2:]).mean() > 0.9
    # designed for --rig, verified on --truth: the exported design is the one without --truth
    assert (plain_exact_3s / "gain_schedule.npz").read_bytes() == (out / "gain_schedule.npz").read_bytes()
    assert main(args + ["--log", str(tmp_path / "run.txt")]) == 2
    assert "--log must name a .csv file" in capsys.readouterr().err


def test_a_design_that_does_not_apply_to_the_path_is_reported_and_the_job_goes_on(tmp_path, capsys):
    out = tmp_path / "ellipse"
    assert main(["track", "--path", "ellipse", "--duration", "2.0", "--robust-runs", "0", "--max-rms-error", "0.05",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    # the paper's 6-state subsystem is exact on the circle only: off it, lean and roll drive contact and yaw
    assert "drive the selected ones" in summary["not_applicable"]["qs-paper"]
    assert "qs-paper" not in summary["verification"] and summary["exported_design"] in ("exact", "qs-contact")
    assert "not applicable to this path" in (out / "summary.md").read_text()
    capsys.readouterr()


@pytest.mark.parametrize("argv, words", [
    (["--animate", "foo.avi"], "--animate 'foo.avi': an animation file must end in .gif (pillow) or .mp4 (ffmpeg)"),
    (["--animate", "sub/run.gif"], "--animate takes a file name, written into --out (e.g. run.gif), got"),
    (["--log", "run.csv", "--feedback", "state"], "--log needs --feedback output"),
    (["--radius", "0.05", "--offset", "0.3", "0"], "the initial offset (0.3 m) must be below 0.2 m"),
    (["--radius", "0.05", "--max-rms-error", "0.3"], "--max-rms-error must be below 0.2 m"),
    (["--duration", "0.001"], "--duration must be at least one control period of rig 'tabletop' (0.02 s)"),
    (["--duration", "601"], "argument --duration: must be <= 600 s, got 601"),
    (["--robust-runs", "20000"], "--robust-runs must be at most 10,000, got 20,000"),
    (["--search-runs", "20000"], "--search-runs must be at most 10,000, got 20,000"),
    (["--search-runs", "5000"], "--search-runs 5,000 over 630 control steps: runs x steps must be at most 2,000,000"),
    (["--search-runs", "-1"], "argument --search-runs: must be an integer >= 0, got -1"),
    (["--robust-runs", "5000"], "--robust-runs 5,000 over 630 control steps: runs x steps must be at most 2,000,000"),
    (["--weight-scale", "1e9"], "argument --weight-scale: must be <= 1e+06, got 1e9"),
    (["--weight-scale", "0"], "argument --weight-scale: must be >= 1e-06, got 0"),
    (["--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
    (["--feedback", "kalman"], "argument --feedback: invalid choice: 'kalman'"),
    (["--path", "spiral"], "argument --path: invalid choice: 'spiral'"),
    (["--truth", "lab"], "--truth 'lab' runs at dt = 0.005 s but --rig 'tabletop' at 0.02 s"),
    (["--path", "waypoints", "--duration", "100"], "--duration must be at most 10.26 s on --path waypoints"),
    (["--path", "figure8", "--omega", "6"], "the path needs a contact acceleration of 9.56 m/s^2"),
    (["--path", "figure8", "--omega", "3"], "needs 18.7 deg of plate angle, more than rig 'tabletop' allows (15 deg)"),
    (["--path", "circle", "--omega", "2"], "--roll-rate >= 50 rad/s, got 40 rad/s"),
])
def test_every_bad_flag_is_refused_in_one_line_before_any_design_work(tmp_path, capsys, argv, words):
    out = tmp_path / "out"
    assert main(["track", "--out", str(out)] + argv) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert words in last and last.startswith("ballctl track: error:") and "Traceback" not in err, err
    assert "[3/5]" not in err and not out.exists()   # no design started, nothing written


def test_an_output_folder_that_is_not_ballctls_or_the_current_folder_is_refused(tmp_path, capsys, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert main(["track", "--out", str(mine)]) == 2
    assert "is a folder of other files" in capsys.readouterr().err and (mine / "notes.txt").read_text() == "keep"
    monkeypatch.chdir(mine)
    assert main(["track", "--out", "."]) == 2
    assert "is the current folder or one of its ancestors" in capsys.readouterr().err


def test_a_reference_the_designs_cannot_use_is_named_in_the_flags_terms():
    import argparse

    from ballctl.cli.track import _Plan, _reference_reason
    from ballctl.errors import ChartSingularityError

    plan = _Plan(rig=None, truth_rig=None, designs=(), path=None, horizon=25.14, period=None, out=None,
                 own_names=(), log=None, log_in_out=None, animate=None, divergence=1.0,
                 args=argparse.Namespace(radius=0.5, omega=1.0))
    why = _reference_reason(ChartSingularityError("the ball's lean reaches 89 deg at t = 8.391 s; shorten duration "
                                                  "below 8.391 s or change spin/initial_orientation"), plan)
    assert "at t = 8.39 s" in why and "--duration below 8.39 s" in why and "--radius, --omega" in why
    assert "spin" not in why


def test_the_summary_states_its_criteria_and_names_every_unobservable_direction(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["track", "--rig", "ideal", "--duration", "1.0", "--offset", "0.01", "0", "--max-rms-error", "0.05",
                 "--robust-runs", "0", "--out", str(out)]) == 0
    text = (out / "summary.md").read_text()
    assert "Pass criteria: a design passes the nominal run when it does not diverge" in text
    assert "is the rig's limit itself" in text
    assert not re.search(r"\['|\('|\(0\.0, ", text), "no Python list or tuple reprs"
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    assert summary["pass_criteria"]["nominal"]["max_rms_error_m"] == 0.05
    rows = [line for line in text.splitlines() if line.startswith("| exact | contact point |")]
    rank = re.search(r"(\d+) of (\d+) \((\d+) unobservable\) \| (.*) \|", rows[0])
    assert rank, rows
    assert len(rank.group(4).split("; ")) == int(rank.group(3)) == int(rank.group(2)) - int(rank.group(1))
    capsys.readouterr()


def test_the_design_search_keeps_a_tuning_that_passes_its_pre_check_bit_for_bit(tmp_path, capsys, plain_exact_3s):
    out = tmp_path / "out"
    assert main(EXACT_3S[:-1] + ["4", "--search-runs", "6", "--max-rms-error", "0.02", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    search = summary["design_search"]
    assert search["runs"] == 6 and search["started"] is False and search["rig"] == "tabletop"
    # one pre-check of the job's own tuning, no candidate designed or run
    scores = search["designs"]["exact"]["candidates"]
    assert [s["candidate"] for s in scores] == ["default"] and scores[0]["meets"] is True
    assert search["designs"]["exact"]["chosen"] == "default" and search["designs"]["exact"]["searched"] is False
    assert summary["verification"]["exact"]["tuning"]["candidate"] == "default"
    assert "Design: robust pre-check and tuning search" in (out / "summary.md").read_text()
    # the exported design is the one without the search
    assert (plain_exact_3s / "gain_schedule.npz").read_bytes() == (out / "gain_schedule.npz").read_bytes()
    capsys.readouterr()


def test_the_design_search_tries_every_candidate_when_none_passes_and_reports_their_scores(tmp_path, capsys):
    from ballctl.ball_plate.design import DESIGN_CANDIDATES

    out = tmp_path / "out"
    # the plain LQG: no level-error states, every candidate can be built on a 1 s run
    assert main(["track", "--rig", "ideal", "--design", "qs-contact", "--duration", "1.0", "--offset", "0", "0",
                 "--max-rms-error", "1e-9", "--robust-runs", "2", "--search-runs", "2", "--no-offset-free",
                 "--out", str(out)]) == 1
    summary = json.loads((out / "summary.json").read_text(), parse_constant=_reject)
    search = summary["design_search"]
    assert search["started"] is True
    found = search["designs"]["qs-contact"]
    assert [s["candidate"] for s in found["candidates"]] == [c.name for c in DESIGN_CANDIDATES]
    assert all(s["meets"] is False and s["success_rate"] == 0.0 and s["rms_p95_m"] > 0 for s in found["candidates"])
    assert found["searched"] is True and found["reason"].startswith("no candidate passes the pre-check")
    assert summary["verification"]["qs-contact"]["tuning"]["candidate"] == found["chosen"]
    text = (out / "summary.md").read_text()
    assert all(f"| qs-contact | {c.name} |" in text for c in DESIGN_CANDIDATES)
    capsys.readouterr()


def test_the_search_stops_at_the_first_candidate_that_passes_on_the_same_draws():
    from dataclasses import replace

    from ballctl.ball_plate.design import DesignCandidate, RigDesignOptions, design_for_rig
    from ballctl.ball_plate.verification import VerificationSettings, search_robust_design, search_seed
    from ballctl.references import CircularMotion

    rig = ballctl.rig_preset("tabletop")
    ref = CircularMotion(rig.design_plant().quasi_static(), 0.3, 1.0, 40.0)
    calls = []

    def design(c):
        calls.append(c.name)
        return design_for_rig(rig, ref, "qs-contact", horizon=1.0, offset_free=False,
                              options=c.options(RigDesignOptions()))

    s0 = ref(0.0)
    x0, xd0 = np.concatenate([s0.x, s0.u]), np.concatenate([s0.xd, s0.ud])
    cands = (DesignCandidate(name="default"), DesignCandidate(name="gentle", max_input_error_factor=0.5),
             DesignCandidate(name="never", process_std=0.1))
    seed = search_seed(0)
    assert seed != 0 and seed == search_seed(0) != search_seed(1)
    kw = dict(window_s=0.5, seed=seed, settings=VerificationSettings(n_runs=3))
    first = search_robust_design(design, cands[:2], rig, x0, xd0, max_rms_error=1.0, **kw)
    assert calls == ["default"] and first.chosen == 0 and first.candidate.name == "default"
    # a threshold between the two: the default fails, the next passes and the search stops there
    p95 = [search_robust_design(design, (c,), rig, x0, xd0, max_rms_error=1.0, **kw).scores[0].check.rms_p95_m
           for c in cands[:2]]
    assert p95[1] < p95[0]   # 10.6 and 15.2 mm
    calls.clear()
    found = search_robust_design(design, cands, rig, x0, xd0, max_rms_error=0.5 * (p95[0] + p95[1]), **kw)
    assert calls == ["default", "gentle"] and found.chosen == 1 and found.scores[1].meets
    assert found.controller is found.scores[1].controller and "first candidate that passes" in found.reason
    assert found.scores[0].check.rms_p95_m == p95[0]   # the same draws for every candidate
    # the rig's imperfections are the truth's: the pre-check never reads them
    from ballctl.ball_plate.rig import Imperfections

    tilted = replace(rig, imperfections=Imperfections(plate_offset=(0.02, -0.01), rolling_resistance=0.01))
    same = search_robust_design(design, cands[:1], tilted, x0, xd0, max_rms_error=1.0, **kw)
    assert same.scores[0].check.rms_p95_m == p95[0]
    # scores already run are reused, not rerun
    calls.clear()
    again = search_robust_design(design, cands[:2], rig, x0, xd0, max_rms_error=1.0, scored=first.scores, **kw)
    assert calls == [] and again.scores == first.scores
    assert replace(cands[0]).options(RigDesignOptions()) == RigDesignOptions()
