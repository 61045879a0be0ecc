"""The tracking-study example (quick mode): the paper's claims and the paths, end to end."""

import runpy
from pathlib import Path

import numpy as np
import pytest
from figure_checks import assert_drawn_png

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
def test_tracking_study_quick(tmp_path):
    ns = runpy.run_path(str(EXAMPLES / "tracking_study.py"))
    res = ns["main"](["--quick", "--out", str(tmp_path)])
    paper = res["paper"]
    assert paper["base NL"].final_error_m < 1e-3 < paper["open loop"].final_error_m
    assert paper["heavy (84) NL"].peak_input_rad["beta"] < 0.5 * paper["base NL"].peak_input_rad["beta"]
    assert paper["noisy NL"].steady_state_error_m < 5e-3
    for name, sm in res["paths"].items():
        assert sm.final_error_m < 1e-3, name
    slow, fast = res["sweep"]
    assert slow[4] < 1e-3          # 30 % of the feasible speed: tracked
    assert fast[6] > 0             # 97 %: the 15 deg rig limit saturates
    assert not fast[4] < 0.01 * fast[0]  # and tracking degrades
    assert_drawn_png(tmp_path / "paper_base.png")
    assert_drawn_png(tmp_path / "path_figure-eight.png")
    assert np.isfinite(paper["base L"].final_error_m)
