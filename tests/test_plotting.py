"""Every figure function returns a Figure that saves; saving is atomic; the figures show what a control engineer
reads them for: units on every axis, the reference on top, the verdict's threshold and window, the yaw error
wrapped, the plate's actual angles next to the commands and the tilt limit, equal 3-D scales."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from figure_checks import (artists, assert_equal_3d_scale, assert_horizontal_line, assert_reference_on_top,
                           assert_units_on_every_axis, panel, panels)

import ballctl
from ballctl.figures import plotting
from ballctl.hardware import RigLimits


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


def _servo_like(run, lag_steps=2):
    """``run`` as if from a servo plate: plate angles as coordinates (the command ``lag_steps`` samples late)."""
    actual = np.vstack([np.repeat(run.u[:1], lag_steps, axis=0), run.u[:-lag_steps]])
    return dataclasses.replace(run, coordinate_names=run.coordinate_names + ("alpha", "beta"),
                               x=np.hstack([run.x, actual]), xd=np.hstack([run.xd, np.zeros_like(actual)]),
                               x_ref=np.hstack([run.x_ref, np.full_like(actual, np.nan)]),
                               xd_ref=np.hstack([run.xd_ref, np.zeros_like(actual)]),
                               input_names=("alpha_cmd", "beta_cmd"))


FIGURES = [plotting.plot_path, plotting.plot_coordinates, plotting.plot_lean_roll, plotting.plot_inputs,
           plotting.plot_error, plotting.plot_yaw_error, plotting.plot_plate_tilts, plotting.plot_friction,
           plotting.plot_constraints, plotting.plot_tracking]


@pytest.mark.parametrize("fn", FIGURES)
def test_figures_save(fn, runs, tmp_path):
    fig = fn(runs)
    path = plotting.save_figure(fig, tmp_path / f"{fn.__name__}.svg")
    assert path.stat().st_size > 5000
    assert panels(fig)
    assert_units_on_every_axis(fig)  # every axis says what it shows, in which unit
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_failed_save_leaves_nothing(tmp_path, runs):
    fig = plotting.plot_path(runs)
    with pytest.raises(ValueError):
        plotting.save_figure(fig, tmp_path / "figure.notaformat")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ the tracking figure
THRESHOLD, WINDOW, TILT, MU = 0.005, 0.4, np.deg2rad(15.0), 0.3


@pytest.fixture(scope="module")
def tracking(runs):
    verdicts = {"NL": {"passed": True, "reason": "passes"},
                "L": (False, "RMS error 0.006 m >= 0.005 m"),
                "diverging design": (False, "diverged at t = 0.3 s")}
    fig = plotting.plot_tracking(runs, "circle", verdicts=verdicts, exported="NL", max_rms_error=THRESHOLD,
                                 window_s=WINDOW, limits=RigLimits(max_angle=TILT), friction_coefficient=MU,
                                 criterion="RMS contact error over the last 0.4 s below 5 mm")
    fig.canvas.draw()  # the table lays itself out when drawn
    return fig


def test_tracking_has_units_and_the_reference_on_top(tracking):
    assert_units_on_every_axis(tracking)
    assert_reference_on_top(panel(tracking, "path"))
    for gid in ("yaw error", "plate tilt 0", "plate tilt 1"):
        assert_reference_on_top(panel(tracking, gid))


def test_reference_on_top_fails_on_the_old_drawing_order(runs):
    # the check can fail: a run drawn above the reference is caught
    fig = plotting.plot_path(runs)
    ax = panel(fig, "path")
    ax.lines[0].set_zorder(100)
    with pytest.raises(AssertionError):
        assert_reference_on_top(ax)


def _x_extent(span):
    """Time range in s of an ``axvspan`` (a Rectangle, or a Polygon in older matplotlib)."""
    if hasattr(span, "get_width"):
        return span.get_x(), span.get_x() + span.get_width()
    x = np.asarray(span.get_xy())[:, 0]
    return x.min(), x.max()


def test_error_panel_has_the_threshold_the_window_and_each_runs_rms(tracking, runs):
    ax = panel(tracking, "error")
    assert_horizontal_line(ax, "pass threshold", THRESHOLD)
    span, = artists(ax, "verdict window")
    t_end = max(r.t[-1] for r in runs.values())
    assert np.allclose(_x_extent(span), (t_end - WINDOW, t_end))
    for label, r in runs.items():
        err = r.position_error[r.t >= r.t[-1] - WINDOW - 1e-9]  # the window ClosedLoopResult.summary rates
        assert_horizontal_line(ax, f"rms {label}", np.sqrt(np.mean(err ** 2)))
    with pytest.raises(AssertionError):
        assert_horizontal_line(ax, "pass threshold", 2 * THRESHOLD)


def test_yaw_panel_is_the_wrapped_yaw_error(runs):
    # five extra turns of yaw (and 30 deg off): the panel shows the error wrapped to (-180, 180] deg
    iyaw = runs["NL"].coordinate_names.index("yaw")
    x = runs["NL"].x.copy()
    x[:, iyaw] += 10 * np.pi + np.deg2rad(30.0)
    spun = {"NL": dataclasses.replace(runs["NL"], x=x)}
    ax = panel(plotting.plot_yaw_error(spun), "yaw error")
    line, = artists(ax, "run NL")
    y = np.asarray(line.get_ydata(), dtype=float)
    y = y[np.isfinite(y)]
    assert np.all((y > -180.0) & (y <= 180.0))
    expected = np.rad2deg(runs["NL"].x[:, iyaw] - runs["NL"].x_ref[:, iyaw]) + 30.0
    assert np.allclose(y, expected, atol=1e-9)
    assert ax.get_ylim()[0] >= -180.0 and ax.get_ylim()[1] <= 180.0


def test_plate_panels_show_actual_angle_command_and_tilt_limit(runs):
    servo = {k: _servo_like(r) for k, r in runs.items()}
    fig = plotting.plot_plate_tilts(servo, limits=RigLimits(max_angle=TILT))
    assert_units_on_every_axis(fig)
    for i, about in enumerate("xy"):
        ax = panel(fig, f"plate tilt {i}")
        assert ax.get_ylabel() == f"plate tilt about {about} [deg]"  # engineering name, not "alpha cmd"
        assert "cmd" not in ax.get_title()
        limits = sorted(float(line.get_ydata()[0]) for line in artists(ax, "tilt limit"))
        assert np.allclose(limits, [-15.0, 15.0])
        for label, r in servo.items():
            actual, = artists(ax, f"actual {label}")
            command, = artists(ax, f"command {label}")
            assert np.allclose(actual.get_ydata(), np.rad2deg(r.x[:, r.coordinate_names.index("alpha" if i == 0
                                                                                              else "beta")]))
            assert np.allclose(command.get_ydata(), np.rad2deg(r.u[:, i]))
            assert command.get_drawstyle() == "steps-post"  # a held command


def test_friction_panel_has_the_rigs_coefficient(tracking, runs):
    ax = panel(tracking, "friction")
    assert_horizontal_line(ax, "rig friction coefficient", MU)
    n, f = runs["NL"].normal_force, runs["NL"].friction_force
    line, = artists(ax, "run NL")
    y = np.asarray(line.get_ydata(), dtype=float)
    shown = np.isfinite(y)
    assert shown.any()
    assert np.allclose(y[shown], (np.linalg.norm(f, axis=1) / n)[shown])  # |F_t| / N


def test_verdicts_and_the_exported_design_are_on_the_figure(tracking):
    title = tracking.get_suptitle()
    assert "exported: NL (passes)" in title and "fail: L, diverging design" in title
    key = panel(tracking, "key")
    assert not key.axison  # outside the data
    table, = [t for t in key.tables if t.get_gid() == "verdict table"]
    cells = {(r, c): cell.get_text().get_text() for (r, c), cell in table.get_celld().items()}
    ncol = 1 + max(c for _, c in cells)
    assert cells[(0, ncol - 1)] == "verdict"
    rows = {cells[(r, 1)]: [cells[(r, c)] for c in range(ncol)] for r in range(1, 4)}
    assert set(rows) == {"NL (exported)", "L", "diverging design"}
    assert rows["NL (exported)"][-1] == "PASSES"
    assert rows["L"][-1].startswith("FAILS: RMS error")
    assert rows["diverging design"][2].startswith("not drawn") and rows["diverging design"][-1].startswith("FAILS")
    assert any("Pass criterion: RMS contact error" in t.get_text() for t in key.texts)
    legend_labels = [t.get_text() for t in key.get_legend().get_texts()]
    assert "NL (exported)" in legend_labels


def test_tracking_default_window_is_the_summarys(runs):
    fig = plotting.plot_tracking(runs, max_rms_error=THRESHOLD)
    span, = artists(panel(fig, "error"), "verdict window")
    r = runs["NL"]
    assert np.isclose(np.ptp(_x_extent(span)), 0.2 * (r.t[-1] - r.t[0]))  # no period: the last 20 %


def test_verdicts_of_a_bad_kind_name_the_parameter(runs):
    with pytest.raises(TypeError, match="verdicts"):
        plotting.plot_tracking(runs, verdicts={"NL": 3.0})


# --------------------------------------------------------------------------------------- the rolling-ball figure
@pytest.fixture(scope="module")
def paper_ball_run():
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
    from ballctl.plants.rolling_ball import RollingBall

    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, 2.0), lambda t: paper_rail_acceleration(t) * np.ones(3),
                        t_eval=np.linspace(0.0, 2.0, 41))
    return ball, run


def test_ball_paths_have_equal_scales_markers_and_say_nominal_units(paper_ball_run):
    ball, run = paper_ball_run
    fig = plotting.plot_ball_paths(ball, run, "paper ball")
    assert_units_on_every_axis(fig)
    for gid in ("body frame", "spatial frame"):
        ax = panel(fig, gid)
        assert_equal_3d_scale(ax)
        markers = {line.get_marker() for line in ax.lines}
        assert {"o", "s"} <= markers  # start and end of every path
    assert "g = 1" in fig.get_suptitle() and "r = 1 m" in fig.get_suptitle()
    assert "nominal" not in plotting.plot_ball_paths(ball, run, nominal_units=False).get_suptitle()


def test_equal_scale_check_fails_on_a_default_box(paper_ball_run):
    ball, run = paper_ball_run
    ax = panel(plotting.plot_ball_paths(ball, run), "spatial frame")
    ax.set_box_aspect((1, 1, 1))
    ax.set_zlim(-3, 3)
    with pytest.raises(AssertionError):
        assert_equal_3d_scale(ax)


# ------------------------------------------------------------------------------------------- the plan figures
def _stub_plan(n=3, inputs="acceleration"):
    from ballctl.plants.paper import paper_ball_parameters
    from ballctl.plants.rolling_ball import RollingBall

    plant = RollingBall(paper_ball_parameters(), inputs=inputs)
    nodes = np.linspace(0.0, 2.0, 5)
    problem = SimpleNamespace(obstacles=(), clearance_margin_m=0.0, target_contact_m=np.array([1.0, 0.5]))
    return SimpleNamespace(plant=plant, nodes=nodes, problem=problem,
                           report=SimpleNamespace(iterations=7, solve_time_s=0.1),
                           contact=lambda t: np.column_stack([np.asarray(t) / 2, np.asarray(t) / 4]),
                           state=lambda t: np.column_stack([np.sin(np.asarray(t) + k) for k in range(2 * n)]),
                           input=lambda t: np.column_stack([np.cos(np.asarray(t) + k) for k in range(n)]))


def _texts(fig):
    out = [fig.get_suptitle()]
    for ax in fig.axes:
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    for legend in fig.legends:
        out += [t.get_text() for t in legend.get_texts()]
    return out


def test_plan_figures_name_the_rail_inputs_one_way_with_units():
    from ballctl.planning.plots import plot_plan, plot_plan_tracking

    plan = _stub_plan()
    t = np.linspace(0.0, 2.0, 21)
    u = np.column_stack([np.cos(t + k) for k in range(3)])
    run = SimpleNamespace(t=t, x=np.column_stack([t / 2, t / 4]), x_ref=np.column_stack([t / 2, t / 4]), u=u,
                          u_ref=u)
    tracking = SimpleNamespace(closed_loop=run, open_loop=run, contact_error_m=np.full(21, 1e-3),
                               open_loop_contact_error_m=np.full(21, 1e-2))
    for fig in (plot_plan(plan), plot_plan_tracking(plan, tracking)):
        texts = _texts(fig)
        assert_units_on_every_axis(fig)
        assert "rail 1 acceleration [rad/s²]" in texts
        assert not [s for s in texts if "theta_ddot" in s or "input 1" in s or "/ s" in s]
        assert not [ax for ax in fig.axes if ax.get_legend() is not None]  # one legend below the panels


def test_rail_signal_names_follow_the_input_mode():
    from ballctl.planning.plots import rail_signal_names

    force = rail_signal_names(_stub_plan(inputs="force").plant)
    assert force["input"][0] == "rail 1 force [N m]" and force["input_axis"] == "rail force [N m]"
    accel = rail_signal_names(_stub_plan().plant)
    assert accel["position"][2] == "rail 3 position [rad]" and accel["input_axis"] == "rail acceleration [rad/s²]"
