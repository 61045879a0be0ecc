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
    assert "invalid RigProfile 'rig_dt0': dt must be > 0 s" in err and ":;" not in err and err.count("\n") == 1
