"""``ballctl plan`` with a TOML problem file, and the example script (small meshes; issue 13)."""

import json
import pathlib
import re
import runpy

import numpy as np
import pytest

pytest.importorskip("casadi")

from ballctl.cli import main
from ballctl.cli.plan import load_problem

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

SMALL = """
[maneuver]
duration_s = 6.0
target_contact_m = [0.0, 1.2]
clearance_margin_m = 0.05
max_rail_speed = 1.5
[[obstacles]]
center_m = [0.15, 0.6]
radius_m = 0.25
[solver]
intervals = 16
obstacle_continuation = [0.5, 1.0]
accuracy_tolerance = 1e-4
[closed_loop]
enabled = false
"""

DISK = """
obstacles = []
[plant]
kind = "disk"
radius_m = 1.0
mass_kg = 1.0
inertia_kgm2 = 1.0
gravity_mps2 = 1.0
[[plant.masses]]
mass_kg = 1.0
rail = "circle"
radius_m = 0.5
theta0_rad = -1.5707963267948966
[maneuver]
duration_s = 5.0
target_contact_m = [1.0]
clearance_margin_m = 0.0
max_rail_speed = 100.0
max_rail_acceleration = 100.0
"""


def test_cli_plan_writes_plan_json_with_checked_numbers(tmp_path):
    problem = tmp_path / "small.toml"
    problem.write_text(SMALL)
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out)]) == 0
    data = json.loads((out / "plan.json").read_text())
    assert data["converged"] is True and data["solve_time_s"] > 0 and data["iterations"] > 0
    assert data["max_constraint_violation"] < 1e-8
    # 16 intervals: the plan and the tight re-simulation agree to < 1 mm; the clearance holds on the
    # re-simulated path sampled 40 times per interval, not only at the collocation points
    assert data["resimulation_error_m"] < 1e-3
    assert data["min_obstacle_clearance_m"] >= 0.05 - 1e-9
    assert data["max_rail_speed_used"] <= 1.5 + 1e-7
    # the accuracy: the mesh was halved until the cost estimate and every replay check met 1e-4
    acc = data["accuracy"]
    assert acc["meets"] and acc["relative_cost_error"] <= 1e-4 and all(c["passed"] for c in acc["checks"])
    assert data["intervals"][0] == 16 and data["intervals"][-1] > 16
    assert data["second_order"]["satisfied"] is True
    # both sides of the obstacle were tried; the returned family is marked
    assert {b["branch"].split("sides ")[-1] for b in data["branches"] if b["converged"]} >= {"(left)", "(right)"}
    assert sum(b["chosen"] for b in data["branches"]) == 1
    assert (out / "plan.png").stat().st_size > 0
    P = 2 * data["intervals"][-1] + 1
    with np.load(out / "plan.npz") as arrays:
        assert arrays["x"].shape == (P, 15) and arrays["u"].shape == (P, 3)


def test_cli_plans_a_disk_described_in_the_file(tmp_path):
    """[plant] describes the one-mass disk; the planner returns the over-the-top family (cost 4.8957)."""
    problem = tmp_path / "disk.toml"
    problem.write_text(DISK)
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out)]) == 0
    data = json.loads((out / "plan.json").read_text())
    assert data["plant"]["kind"] == "disk" and data["converged"] and data["accuracy"]["meets"]
    assert abs(data["objective"] - 4.895737) < 1e-5
    assert abs(data["resimulated_target_error_m"]) < 1e-6


def _binding_duration(message):
    """The duration the diagnosis names, and the infeasible one it bisected from."""
    m = re.search(r"from duration_s = ([0-9.]+) s \(infeasible at ([0-9.]+) s", message)
    assert m, message
    return float(m.group(1)), float(m.group(2))


def test_cli_infeasible_request_names_the_time_that_binds(tmp_path, capsys):
    """The one-mass disk 20 m in 5 s with the rail limits: not the dynamics IPOPT names, the duration (25 s).

    The diagnosis (planner.diagnose) is the same code for every plant; the disk's NLP solves in
    milliseconds, so the CLI path costs about 1 s of CPU here instead of 13 s with the 3-mass ball (that
    request, 20 m in 5 s, is ``test_cli_infeasible_ball_request_names_the_time_that_binds``, marked slow).
    """
    problem = tmp_path / "far.toml"
    problem.write_text(DISK.replace("target_contact_m = [1.0]", "target_contact_m = [20.0]")
                       .replace("max_rail_speed = 100.0", "max_rail_speed = 2.0")
                       .replace("max_rail_acceleration = 100.0", "max_rail_acceleration = 2.0")
                       + "[solver]\nintervals = 16\n[closed_loop]\nenabled = false\n")
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out)]) == 1
    message = json.loads((out / "plan.json").read_text())["message"]
    assert "the time binds" in message and "lengthen duration_s to at least" in message
    # bracketed above the requested 5 s (at 2, 4 or 8 times it), then bisected 5 times: the named durations
    # are at most (8 - 4) 5 s / 2^5 apart (plus the rounding to 3 digits); measured 24.4 and 25 s
    feasible, infeasible = _binding_duration(message)
    assert 5.0 < infeasible < feasible <= infeasible + 4 * 5.0 / 2 ** 5 + 0.1


@pytest.mark.slow
def test_cli_infeasible_ball_request_names_the_time_that_binds(tmp_path, capsys):
    """20 m in 5 s with the rail limits: not the rest condition IPOPT names, the duration (about 13 s)."""
    problem = tmp_path / "far.toml"
    problem.write_text("obstacles = []\n[maneuver]\nduration_s = 5.0\ntarget_contact_m = [0.0, 20.0]\n"
                       "[solver]\nintervals = 16\n[closed_loop]\nenabled = false\n")
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out)]) == 1
    message = json.loads((out / "plan.json").read_text())["message"]
    assert "the time binds" in message and "lengthen duration_s to at least" in message
    feasible, infeasible = _binding_duration(message)
    assert 5.0 < infeasible < feasible


def test_cli_plan_rejects_unknown_keys_and_bad_requests(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[maneuver]\nduration = 3.0\n")
    with pytest.raises(ValueError, match="unknown key 'duration' in \\[maneuver\\]"):
        load_problem(str(bad))
    covered = tmp_path / "covered.toml"
    covered.write_text(SMALL.replace("center_m = [0.15, 0.6]", "center_m = [0.0, 0.1]"))
    assert main(["plan", str(covered), "--out", str(tmp_path / "o")]) == 2
    assert "covers the start" in capsys.readouterr().err


@pytest.mark.slow
def test_example_plan_maneuver(tmp_path):
    ns = runpy.run_path(str(EXAMPLES / "plan_maneuver.py"))
    numbers = ns["run"](tmp_path, intervals=24, tolerance=1e-3, closed_loop=False)
    assert numbers["branches_found"] >= 2 and numbers["estimated_relative_cost_error"] <= 1e-3
    assert numbers["min_obstacle_clearance_m"] >= 0.05 - 1e-9
    assert numbers["resimulation_error_m"] < 1e-3
    assert (tmp_path / "plan.png").exists()


BALL_PLATE = """
[ball_plate]
rig = "tabletop"
waypoints_m = [[0.0, 0.0], [0.15, 0.05], [0.2, 0.2]]
objective = "time"
limit_margin = 0.2
[solver]
intervals = 8
[closed_loop]
enabled = true
hold_s = 0.5
"""


def test_cli_plan_ball_plate_problem_file(tmp_path, capsys):
    """A [ball_plate] table plans the limit-aware reference; limits, re-simulation and tracking are reported."""
    problem = tmp_path / "plate.toml"
    problem.write_text(BALL_PLATE)
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out)]) == 0
    data = json.loads((out / "plan.json").read_text())
    assert data["plant"] == "ball_plate" and data["converged"] is True
    assert data["peak_angle_deg"] <= 0.8 * data["limit_angle_deg"] + 1e-6
    assert data["peak_rate_deg_s"] <= 0.8 * data["limit_rate_deg_s"] + 1e-6
    assert data["resimulation_error_m"] < 2e-3          # 8 intervals per leg
    assert np.isclose(data["waypoint_times_s"][-1], data["duration_s"])
    cl = data["closed_loop"]
    assert cl["peak_angle_deg"] <= data["limit_angle_deg"] + 1e-9 and cl["final_error_m"] < 2e-3
    assert (out / "plan.png").stat().st_size > 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[ball_plate]\nwaypoint = [[0, 0], [1, 0]]\n")
    assert main(["plan", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "unknown key 'waypoint' in [ball_plate]" in capsys.readouterr().err


def test_example_plan_ball_plate(tmp_path):
    ns = runpy.run_path(str(EXAMPLES / "plan_ball_plate.py"))
    numbers = ns["run"](tmp_path, intervals=8, tilts_deg=(10.0, 20.0))
    assert numbers["min_time_s_at_10_deg"] > numbers["min_time_s_at_20_deg"]
    assert numbers["peak_angle_deg"] <= 12.0 + 1e-6 and numbers["closed_loop_peak_angle_deg"] <= 15.0 + 1e-9
    assert numbers["resimulation_error_m"] < 2e-3
    assert (tmp_path / "plate_plan.png").exists()
