"""Every figure function returns a Figure that saves; saving is atomic."""

import numpy as np
import pytest

import ballctl
from ballctl.figures import plotting


@pytest.fixture(scope="module")
def runs():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.05, horizon=1.0,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6),
                                                                  R=np.eye(2)))
    s = ref(0.0)
    x0 = s.x + np.array([0.02, 0, 0, 0, 0])
    return {"NL": ballctl.simulate_closed_loop(ctrl, x0, s.xd),
            "L": ballctl.simulate_closed_loop(ctrl, x0, s.xd, options=ballctl.ClosedLoopOptions(model="linear"))}


@pytest.mark.parametrize("fn", [plotting.plot_path, plotting.plot_coordinates, plotting.plot_lean_roll,
                                plotting.plot_inputs, plotting.plot_error, plotting.plot_constraints,
                                plotting.plot_tracking])
def test_figures_save(fn, runs, tmp_path):
    fig = fn(runs)
    path = plotting.save_figure(fig, tmp_path / f"{fn.__name__}.svg")
    assert path.stat().st_size > 5000
    assert fig.axes and all(ax.get_xlabel() for ax in fig.axes)  # every axis says what it shows
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_failed_save_leaves_nothing(tmp_path, runs):
    fig = plotting.plot_path(runs)
    with pytest.raises(ValueError):
        plotting.save_figure(fig, tmp_path / "figure.notaformat")
    assert list(tmp_path.iterdir()) == []
