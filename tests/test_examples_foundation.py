"""The example scripts run and print what they promise."""

import runpy
from pathlib import Path
import sys

import pytest
from figure_checks import assert_drawn_png, assert_drawn_svg

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_circle_reference_example(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["circle_reference.py", "--out", str(tmp_path)])
    ns = runpy.run_path(str(EXAMPLES / "circle_reference.py"))
    residual, drift = ns["main"](["--out", str(tmp_path)])
    assert residual < 1e-12 and drift < 1e-9
    assert_drawn_png(tmp_path / "reference.png")


def test_cli_reference(tmp_path, capsys):
    from ballctl.cli import main

    assert main(["reference", "--radius", "0.3", "--omega", "1.5", "--out", str(tmp_path / "r.svg")]) == 0
    out = capsys.readouterr().out
    assert "plate tilt (constant)" in out
    assert_drawn_svg(tmp_path / "r.svg")
    assert main(["reference", "--omega", "9"]) == 2
    assert "--roll-rate too low" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["reference", "--help"]])
def test_cli_help(argv, capsys):
    from ballctl.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "ballctl" in capsys.readouterr().out
