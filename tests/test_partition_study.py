"""Partition comparison: the paper's controllability finding, reproduced and explained."""


import numpy as np

import ballctl
from ballctl.studies.partitions import compare_partitions, enumerate_partitions


def test_paper_finding_and_the_spin_mode(capsys):
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    table = compare_partitions(plant, ref, np.linspace(0, ref.period, 629))
    rows = {r.partition.independent_names: r for r in table.rows}
    assert len(table.rows) == len(enumerate_partitions(plant)) == 10
    good = rows[("contact_x", "contact_y", "yaw")]
    bad = rows[("yaw", "lean", "roll")]
    # (x_C, y_C, yaw): a controllable 6-state system, decoupled from lean and roll (A23 = 0)
    assert good.decoupled and good.dynamic.rank == 6
    # (yaw, lean, roll): decoupled too, but one mode is out of reach
    assert bad.decoupled and bad.dynamic.rank == 5
    # that mode is the linearized spin about the plate normal, yaw' + roll' sin(lean):
    # its direction lives on yaw_rate, roll_rate and lean only
    top = {name for name, _ in bad.dynamic.directions[0][:3]}
    assert top == {"yaw_rate", "roll_rate", "lean"}
    # the full 8-state reduced systems both keep the spin: rank 7 of 8
    assert good.full.rank == 7 and bad.full.rank == 7
    # every other split has a singular D_dd somewhere on the circle
    assert sum(r.admissible for r in table.rows) == 2
    assert good.ddd_condition < 1e3 and bad.ddd_condition < 1e3  # 1/(R cos(lean)) = 80 for the first
    text = str(table)
    coarse = compare_partitions(plant, ref, np.linspace(0, ref.period, 600))  # misses t = T/4 exactly
    assert sum(r.admissible and not r.nearly_singular for r in coarse.rows) == 2
    assert "not admissible" in text and "6/6" in text and "5/6" in text


def test_the_circle_recommends_the_papers_partition_and_6_state_subsystem():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    table = compare_partitions(plant, ref, np.linspace(0, ref.period, 315))
    rec = table.recommendation
    assert rec is not None and table.rows[0] is rec.row
    assert rec.row.partition.independent_names == ("contact_x", "contact_y", "yaw")
    assert rec.subsystem.kind == "dynamic" and rec.subsystem.states == (
        "contact_x", "contact_y", "yaw", "contact_x_rate", "contact_y_rate", "yaw_rate")
    # the 4 contact-point states are an exact, controllable subsystem too, but smaller
    contact = [s for s in rec.row.subsystems if s.label == "contact_x, contact_y + rates"]
    assert len(contact) == 1 and contact[0].controllable
    text = str(table)
    assert "recommended: independent (contact_x, contact_y, yaw), admissible dependent (lean, roll); control the " \
           "6-state dynamic subsystem contact_x, contact_y, yaw + rates" in text


def _figure_eight(dt=0.02):
    plant = ballctl.rig_preset("tabletop").design_plant().quasi_static()   # what `ballctl partitions` uses
    path = ballctl.LissajousPath.figure_eight(0.5, 1.0)
    steps = int(round(path.period / dt))
    ref = ballctl.PathMotion(plant, path, duration=steps * dt + 2 * dt, spin=0.0)
    return plant, ref, np.linspace(0.0, steps * dt, steps + 1)


def test_figure_eight_decides_for_the_4_state_contact_subsystem():
    """docs/tutorials/partitions.md: on the figure-eight the 4-state contact-point subsystem is the exact one."""
    plant, ref, times = _figure_eight()
    table = compare_partitions(plant, ref, times)
    rows = {r.partition.independent_names: r for r in table.rows}
    good = rows[("contact_x", "contact_y", "yaw")]
    subs = {s.label: s for s in good.subsystems}
    contact = subs["contact_x, contact_y + rates"]
    assert contact.exact and contact.controllable and contact.rank == 4 and contact.sigma_min_fine > 1e-2
    # the paper's 6-state subsystem is not exact off the circle: the lean drives the yaw
    assert not good.dynamic.exact and good.dynamic.drivers[0] == "lean" and good.dynamic.coupling > 1.0
    # the conserved spin leaks into the 20 ms ZOH model above the rank tolerance; halving the step shows it
    assert good.full.coarse.rank == 8 and good.full.rank == 7
    assert good.full.sigma_min > 1e-8 > good.full.sigma_min_fine
    assert good.full.sigma_min / good.full.sigma_min_fine > 8      # falls as dt^4
    bad = rows[("yaw", "lean", "roll")]
    assert bad.dynamic.exact and bad.dynamic.rank == 5 and bad.full.rank == 7
    # every other split is singular somewhere on the path, four of them between two samples
    assert [r.usable for r in table.rows].count(True) == 2
    straddled = [r for r in table.rows if "changes sign" in r.reason]
    assert len(straddled) == 4 and not any(r.admissible for r in straddled)
    rec = table.recommendation
    assert rec.row is good and rec.subsystem is contact and table.rows[0] is good
    assert "not exact: driven by lean" in rec.reason and "rank 7/8" in rec.reason


def test_the_table_is_deterministic():
    plant, ref, times = _figure_eight()
    assert str(compare_partitions(plant, ref, times)) == str(compare_partitions(plant, ref, times))


def test_cli_partitions_on_the_figure_eight(capsys):
    from ballctl.cli import main

    assert main(["partitions", "--path", "figure8"]) == 0
    out = capsys.readouterr().out
    assert "figure8 of size 0.5 m at 1 rad/s" in out and "rig 'tabletop'" in out and "dt = 0.02 s" in out
    assert "contact_x, contact_y + rates (4)" in out
    assert ("recommended: independent (contact_x, contact_y, yaw), admissible dependent (lean, roll); control the "
            "4-state subsystem contact_x, contact_y + rates") in out


def test_cli_partitions_on_the_circle_with_the_ball_flags(capsys):
    from ballctl.cli import main

    assert main(["partitions", "--radius", "0.3", "--omega", "1.2", "--dt", "0.02", "--mass", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "ball 0.2 kg" in out and "6-state dynamic subsystem contact_x, contact_y, yaw + rates" in out


def test_silverman_meadows_and_floquet_along_the_circle():
    # spectral derivatives of the periodic samples (uniform, one period)
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    T = ref.period
    for independent, admissible, rank in [(["contact_x", "contact_y", "yaw"], ["lean", "roll"], 6),
                                          (["yaw", "lean", "roll"], ["contact_x", "contact_y"], 5)]:
        part = ballctl.Partition.from_coordinates(plant, independent, admissible)
        ltv = ballctl.linearize(plant, ref, np.linspace(0, T, 257), part)
        sub = ltv.select_states(part.state_names[:6])
        sm = ballctl.design.silverman_meadows(sub, [0.3, 1.7, 4.0], period=T)
        assert list(sm.ranks) == [rank] * 3
        pc = ballctl.design.periodic_controllability(sub)
        assert pc.gramian.rank == rank
        # every Floquet multiplier is 1: the uncontrolled motion along the circle neither grows nor decays
        np.testing.assert_allclose(np.abs(ballctl.design.monodromy(sub).multipliers), 1.0, atol=1e-6)
    # the unreachable direction is the linearized spin yaw' + sin(lean0) roll' + Omega cos(lean0) lean
    expected = np.array([1.0, np.sin(ref.lean), ref.roll_rate * np.cos(ref.lean)])
    expected /= np.linalg.norm(expected)
    U = sm.left_singular_vectors[0][:, -1]
    names = sub.state_names
    got = np.array([U[names.index(n)] for n in ("yaw_rate", "roll_rate", "lean")])
    got *= np.sign(got[2])
    # spectral derivatives of 256 samples: the null vector to ~1e-6
    np.testing.assert_allclose(got, expected, atol=1e-6)
    others = [U[names.index(n)] for n in names if n not in ("yaw_rate", "roll_rate", "lean")]
    assert np.abs(others).max() < 1e-6
