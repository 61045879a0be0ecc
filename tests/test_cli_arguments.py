"""Command-line arguments refused up front, in one line with exit status 2; the version flag."""

import pytest

import ballctl
from ballctl.cli import main


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"ballctl {ballctl.__version__}"


@pytest.mark.parametrize("argv, words", [
    (["montecarlo", "--dt", "0"], "--dt must be a finite number > 0 s, got 0.0"),
    (["montecarlo", "--dt", "-0.01"], "--dt must be a finite number > 0 s, got -0.01"),
    (["montecarlo", "--dt", "nan"], "--dt must be a finite number > 0 s"),
    (["montecarlo", "--duration", "0"], "--duration must be a finite number > 0 s"),
    (["montecarlo", "--duration", "0.001"], "--duration must be at least one control period"),
])
def test_montecarlo_refuses_a_bad_time_step_before_any_work(argv, words, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "mc")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "mc").exists()   # nothing written


def test_a_bad_rig_file_is_one_readable_line(capsys, tmp_path):
    rig = tmp_path / "rig_dt0.toml"
    rig.write_text("dt_s = 0\n")
    assert main(["track", "--rig", str(rig), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    # the file, its key, the unit and the range, in one line
    assert "rig file '" in err and "rig_dt0.toml': dt_s must be a number > 0 s (the control period), got 0" in err
    assert ":;" not in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, words", [
    (["partitions", "--path", "spiral"], "argument --path: invalid choice: 'spiral'"),
    (["partitions", "--rig", "nope"], "unknown rig preset 'nope'"),
    (["partitions", "--path", "figure8", "--dt", "5"],
     "argument --dt: must be at most a third of the figure-eight's period, 4.18879 s, got 5 s"),
    (["partitions", "--mass", "0"], "argument --mass: must be > 0 kg, got 0"),
    (["montecarlo", "--rig", "nope"], "unknown rig preset 'nope'"),
    (["montecarlo", "--mass-std", "-1"], "argument --mass-std: must be >= 0 kg, got -1"),
    (["montecarlo", "--noise", "nan"], "argument --noise: must be a finite number in m"),
    (["montecarlo", "--offset", "0.1", "x"], "argument --offset: must be a number in m, got 'x'"),
])
def test_partitions_and_montecarlo_refuse_bad_flags_in_one_line(argv, words, capsys, tmp_path):
    out = ["--out", str(tmp_path / "mc")] if argv[0] == "montecarlo" else []
    assert main(argv + out) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "mc").exists()


def test_partitions_and_montecarlo_take_the_rig_and_path_flags_of_track():
    from ballctl.cli import build_parser

    parser = build_parser()
    track = parser.parse_args(["track"])
    for command in ("partitions", "montecarlo"):
        args = parser.parse_args([command])
        assert args.rig == track.rig == "tabletop"
        for flag in ("radius", "omega", "roll_rate"):
            assert getattr(args, flag) == getattr(track, flag), (command, flag)
        assert tuple(args.center) == tuple(track.center)
    assert parser.parse_args(["partitions"]).path == track.path == "circle"
    choices = {a.dest: a.choices for a in parser._subparsers._group_actions[0].choices["partitions"]._actions}
    track_choices = {a.dest: a.choices for a in parser._subparsers._group_actions[0].choices["track"]._actions}
    assert choices["path"] == track_choices["path"]
    offset = parser.parse_args(["montecarlo", "--offset", "0.01", "-0.02"]).offset
    assert offset == [0.01, -0.02] and list(track.offset) == [0.05, 0.0]


@pytest.mark.parametrize("argv, words", [
    # the library's CircularMotion says "radius*omega^2 ... roll_rate": the command line names its flags
    (["reference", "--radius", "50"],
     ["infeasible circle (--radius 50 m, --omega 1 rad/s, --roll-rate 40 rad/s)",
      "the plate cannot supply the centripetal acceleration --radius x --omega^2 = 50 m/s^2, at most 7.007 m/s^2",
      "allowed |--omega| < 0.3744 rad/s at this --radius, or --radius < 7.007 m at this --omega",
      "also --roll-rate too low to roll", "allowed 2500 <= --roll-rate <= 1.432e+05 rad/s"]),
    (["reference", "--roll-rate", "10"],
     ["--roll-rate too low to roll at the circle's speed (--radius x |--omega| = 0.5 m/s, --ball-radius 0.02 m): "
      "allowed 25 <= --roll-rate <= 1432 rad/s"]),
    (["reference", "--roll-rate", "0"], ["allowed 25 <= --roll-rate <= 1432 rad/s"]),
    (["montecarlo", "--omega", "20"],
     ["infeasible circle (--radius 0.5 m, --omega 20 rad/s", "allowed |--omega| < 3.744 rad/s at this --radius"]),
    (["montecarlo", "--roll-rate", "5000"],
     ["--roll-rate so high the ball's lean comes within 1 deg of 90 deg", "allowed 25 <= --roll-rate <= 1432 rad/s"]),
])
def test_an_infeasible_circle_is_refused_in_the_flags_terms(argv, words, capsys, tmp_path):
    out = ["--out", str(tmp_path / ("mc" if argv[0] == "montecarlo" else "ref.png"))]
    assert main(argv + out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    assert "roll_rate" not in err and "radius*omega" not in err   # no keyword arguments of the library
    assert not list(tmp_path.iterdir())   # refused before any work
