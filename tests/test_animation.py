"""Animations: the drawn geometry is the plant's (plate angles, ball orientation), files are whole and 0644."""

import os
import runpy
import stat
from pathlib import Path

import numpy as np
import pytest
from figure_checks import assert_equal_3d_scale, assert_units_on_every_axis

import ballctl
from ballctl.figures import animation

PIL = pytest.importorskip("PIL.Image")


def test_plate_rotation_is_the_plants_gravity_map():
    # eq. 33: gravity in the plate frame is R_2^T (0, 0, -g); BallPlate.gravity_in_plate is an independent formula
    plant = ballctl.BallPlate()
    rng = np.random.default_rng(1)
    u = rng.uniform(-0.6, 0.6, size=(20, 2))
    g = np.einsum("kji,j->ki", animation.plate_rotation(u), [0.0, 0.0, -plant.params.gravity])
    expected = np.array([plant.gravity_in_plate(uk) for uk in u])
    assert np.allclose(g, expected, rtol=0, atol=1e-12)  # same closed form, rounding only


def test_ball_orientation_rotates_with_the_plants_angular_velocity():
    # d/dt R(x(t)) R^T = hat(omega) with omega from BallPlate.angular_velocity (plate frame); central differences,
    # step 1e-5 s: truncation error ~ h^2 |x'''| ~ 1e-9, so 1e-7 is a safe bound
    plant = ballctl.BallPlate()
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = np.concatenate([rng.uniform(-0.3, 0.3, 2), rng.uniform(-1.2, 1.2, 3)])
        xd = rng.uniform(-2.0, 2.0, 5)
        h = 1e-5
        rp, rm = animation.ball_orientation(x + h * xd), animation.ball_orientation(x - h * xd)
        w_hat = (rp - rm) / (2 * h) @ animation.ball_orientation(x).T
        omega = np.array([w_hat[2, 1], w_hat[0, 2], w_hat[1, 0]])
        assert np.allclose(w_hat, -w_hat.T, atol=1e-7)
        assert np.allclose(omega, plant.angular_velocity(x, xd), rtol=0, atol=1e-7)


@pytest.fixture(scope="module")
def ball_plate_run():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.05, horizon=0.5,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6),
                                                                  R=np.eye(2)))
    s = ref(0.0)
    return plant, ballctl.simulate_closed_loop(ctrl, s.x + np.array([0.02, 0, 0, 0, 0]), s.xd)


def test_ball_plate_gif(ball_plate_run, tmp_path):
    plant, run = ball_plate_run
    path = animation.animate_ball_plate(run, tmp_path / "ball.gif", ball_radius=plant.params.radius, max_frames=4)
    with PIL.open(path) as im:
        assert im.n_frames == 4 and im.size[0] > 200
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in tmp_path.iterdir()] == ["ball.gif"]  # no temporary left


def test_bad_arguments_name_the_parameter(ball_plate_run, tmp_path):
    plant, run = ball_plate_run
    with pytest.raises(ValueError, match="path must end in one of"):
        animation.animate_ball_plate(run, tmp_path / "ball.avi", ball_radius=0.02, max_frames=2)
    with pytest.raises(ValueError, match="ball_radius must be > 0 m"):
        animation.animate_ball_plate(run, tmp_path / "ball.gif", ball_radius=-1.0)
    with pytest.raises(ValueError, match="max_frames must be an integer >= 2"):
        animation.animate_ball_plate(run, tmp_path / "ball.gif", ball_radius=0.02, max_frames=1)
    assert list(tmp_path.iterdir()) == []


def test_rolling_ball_gif(tmp_path):
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
    from ballctl.plants.rolling_ball import RollingBall

    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, 0.5), lambda t: paper_rail_acceleration(t) * np.ones(3),
                        t_eval=np.linspace(0.0, 0.5, 11))
    path = animation.animate_rolling_ball(ball, run, tmp_path / "sub" / "ball.gif", max_frames=3)
    with PIL.open(path) as im:
        assert im.n_frames == 3


def test_rolling_ball_frame_draws_the_total_centre_of_mass_where_the_plant_has_it():
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
    from ballctl.plants.rolling_ball import RollingBall

    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, 3.0), lambda t: paper_rail_acceleration(t) * np.ones(3),
                        t_eval=np.linspace(0.0, 3.0, 31))
    fig, draw, idx = animation._rolling_ball_scene(ball, run, max_frames=4)
    k = 2
    draw(k)
    ax, = fig.axes
    cm_markers = [line for line in ax.lines if line.get_gid() == animation.TOTAL_CM_GID]
    assert len(cm_markers) == 1
    drawn = np.array([np.ravel(v)[0] for v in cm_markers[0].get_data_3d()])
    # from the plant: the shell's centre of mass and each point mass, in space, weighted by their masses
    x = run.x[idx[k]]
    gc = ball.contact_point(x) + np.array([0.0, 0.0, ball.params.radius_m])
    bodies = np.vstack([ball.params.cm_offset_m, ball.mass_positions_body(x)])       # (1 + n, 3), body frame
    spatial = ball.to_spatial_about_gc(x, bodies) + gc
    m = np.array([ball.params.mass_kg] + [pm.mass_kg for pm in ball.params.point_masses])
    expected = m @ spatial / m.sum()
    assert np.allclose(drawn, expected, rtol=0, atol=1e-12)
    assert np.linalg.norm(expected[:2] - gc[:2]) > 1e-3  # off the vertical through the centre: a real test
    # a legend names every mass and the total centre of mass; the title reads at a glance
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert [lab for lab in labels if lab.startswith("mass ")] == [f"mass {i} (1 kg) and its rail" for i in (1, 2, 3)]
    assert any(lab.startswith("total centre of mass") for lab in labels)
    assert fig.get_suptitle().startswith("ball rolled by 3 internal masses") and "r = 1 m" in fig.get_suptitle()
    assert fig._suptitle.get_fontsize() >= 12 and ax.title.get_fontsize() >= 12
    assert_equal_3d_scale(ax)
    assert_units_on_every_axis(fig)


def test_the_frame_count_follows_the_runs_length():
    # duration x fps frames, so the file plays in real time; at least 2; at most max_frames (80: a long run's look)
    assert animation.frame_count(0.5, 15.0) == 8
    assert animation.frame_count(3.0, 15.0) == 45
    assert animation.frame_count(0.01, 15.0) == animation.frame_count(0.0, 15.0) == 2
    assert animation.frame_count(20.0, 15.0) == 80 == animation.MAX_FRAMES
    assert animation.frame_count(20.0, 15.0, max_frames=200) == 200
    assert animation.frame_count(6.0, 10.0, max_frames=24) == 24
    with pytest.raises(ValueError, match="fps must be > 0 frames/s"):
        animation.frame_count(1.0, 0.0)
    with pytest.raises(ValueError, match="max_frames must be an integer >= 2"):
        animation.frame_count(1.0, 15.0, max_frames=1)
    with pytest.raises(ValueError, match="duration"):
        animation.frame_count(-1.0, 15.0)


def test_a_short_run_is_animated_in_few_frames(ball_plate_run, tmp_path):
    # the 0.5 s run (11 samples) at 4 frames/s: 2 frames, not one per sample (the cap of 80 used to decide alone)
    plant, run = ball_plate_run
    assert run.t[-1] - run.t[0] == pytest.approx(0.5) and len(run.t) == 11
    path = animation.animate_ball_plate(run, tmp_path / "ball.gif", ball_radius=plant.params.radius, fps=4.0)
    with PIL.open(path) as im:
        assert im.n_frames == 2
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
    from ballctl.plants.rolling_ball import RollingBall

    ball = RollingBall(paper_ball_parameters())
    for t_final, frames in ((0.5, 8), (6.0, 80)):   # the default 15 frames/s, and a long run capped at 80
        run = ball.simulate(paper_ball_initial_state(), (0.0, t_final),
                            lambda t: paper_rail_acceleration(t) * np.ones(3), t_eval=np.linspace(0.0, t_final, 201))
        _, _, idx = animation._rolling_ball_scene(ball, run)
        assert len(idx) == frames and idx[0] == 0 and idx[-1] == 200
        assert np.ptp(np.diff(run.t[idx])) < 0.6 * np.diff(run.t[idx]).min()   # evenly spread over the run


def test_simulate_ball_animates_a_short_run_quickly(tmp_path, capsys):
    # `ballctl simulate-ball --t-final 0.5 --animate` drew 80 frames (47 s against 1 s without --animate)
    from ballctl.cli import main

    assert main(["simulate-ball", "--t-final", "0.2", "--animate", "--out", str(tmp_path / "out")]) == 0
    with PIL.open(tmp_path / "out" / "ball_rolling.gif") as im:
        assert im.n_frames == 3   # 0.2 s at 15 frames/s


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_animation_example(tmp_path):
    """examples/"animate_tracking.py": the animated closed loop converges and both GIFs are whole (3 frames)."""
    ns = runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "animate_tracking.py"))
    path, run = ns["ball_plate_animation"](tmp_path, frames=3, dt=0.05)
    # 5 cm start offset; the paper's design settles in ~0.6 s and ends within 1 mm of the circle (measured 0.6 mm)
    assert run.position_error[0] > 0.049 and run.position_error[-1] < 2e-3
    gif = ns["rolling_ball_animation"](tmp_path, frames=3, t_final=0.5)
    for p in (path, gif):
        with PIL.open(p) as im:
            assert im.n_frames == 3
