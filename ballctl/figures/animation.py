"""Animations of closed-loop and open-loop runs, saved as GIF (pillow) or MP4 (ffmpeg).

* :func:`animate_ball_plate`: the ball rolling on the tilting plate from a
  ball-plate :class:`~ballctl.ClosedLoopResult`: the plate drawn at its angles
  ``(alpha, beta)`` about the pivot (eq. 33 of Agúndez et al. 2024, plate
  orientation ``R_x(alpha) R_y(beta)``), the reference path and the contact
  point's trace on it, and the ball with a body-fixed stripe and pole that
  show its rotation (``R_z(yaw) R_x(lean) R_y(roll)`` relative to the plate).
* :func:`animate_rolling_ball`: the ball rolled by internal point masses
  (Putkaradze & Rogers 2018, section 7) from a
  :class:`~ballctl.plants.rolling_ball.ODETrajectory`: the shell with a
  body-fixed stripe, each rail and its mass (one colour per mass, as in
  :func:`ballctl.figures.plotting.plot_ball_paths`, named in a legend), the total
  centre of mass (a black star, dotted down to the floor) and the contact point's
  trace on the floor.
* :func:`save_animation`: writes any matplotlib animation atomically; the file
  gets the permissions of a normally created file (0644 with umask 022).

Frames: a run is drawn at ``fps`` frames per second of its time (:data:`FPS`, 15 by default) and the file
plays at the same rate, so a short run is a short, quick-to-draw animation in real time; the count,
``duration * fps``, is at least 2 and at most ``max_frames`` (:data:`MAX_FRAMES`, 80 by default: a run
longer than 80 / 15 = 5.3 s keeps 80 frames and plays faster). See :func:`frame_count`.

Colours follow :mod:`ballctl.figures.plotting`: the reference is black dashed, the run
is the first run colour.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.animation import Animation, FFMpegWriter, FuncAnimation, PillowWriter, writers
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .._errors import ParameterError, ParameterTypeError
from .._io import atomic_path
from .._quaternion import quat_to_matrix
from .._validation import check_in_range, check_integer, check_positive
from ._shared import NOMINAL_SHORT, is_nominal, rail_curves
from .plotting import OPEN_LOOP_COLOR, REFERENCE_STYLE, RUN_COLORS

__all__ = ["available_formats", "frame_count", "save_animation", "animate_ball_plate", "animate_rolling_ball"]

#: Default cap on an animation's frames (:func:`frame_count`): a run longer than MAX_FRAMES / FPS s is drawn in
#: this many frames.
MAX_FRAMES = 80

#: Default frames per second of an animation file, and of the run sampled (a short run plays in real time).
FPS = 15.0

#: File suffixes :func:`save_animation` can write, and the matplotlib writer each needs.
FORMATS = {".gif": "pillow", ".mp4": "ffmpeg"}

#: Colour of the body-fixed stripe and pole that show a ball's rotation.
_STRIPE = "0.15"

_BALL_PLATE_COORDINATES = ("contact_x", "contact_y", "yaw", "lean", "roll")


def available_formats() -> tuple[str, ...]:
    """The suffixes of :data:`FORMATS` whose writer is installed here (``.mp4`` needs ffmpeg on the PATH)."""
    return tuple(suffix for suffix, writer in FORMATS.items() if writers.is_available(writer))


def _check_path(path) -> tuple[Path, str]:
    """The output path and its suffix, raising unless this machine can write that format."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError(f"path must end in one of {sorted(FORMATS)} (animation format), got {str(path)!r}")
    if not writers.is_available(FORMATS[suffix]):
        raise ParameterError(f"path {str(path)!r}: writing {suffix} needs {FORMATS[suffix]}, which is not installed; "
                         f"available here: {list(available_formats())}")
    return path, suffix


def save_animation(animation: Animation, path: str | os.PathLike, *, fps: float = 20.0, dpi: int = 80) -> Path:
    """Write ``animation`` to ``path`` (GIF or MP4, from the suffix) via a temporary file and an atomic rename.

    Parameters
    ----------
    animation : matplotlib.animation.Animation
    path : path-like
        Target file, ``.gif`` (needs pillow) or ``.mp4`` (needs ffmpeg). Parent folders are created.
    fps : float
        Frames per second of the file, > 0.
    dpi : int
        Resolution in dots per inch.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        If the suffix is not one of :data:`FORMATS` or its writer is not installed.
    """
    path, suffix = _check_path(path)
    fps = check_positive(fps, "fps", "frames/s")
    writer = PillowWriter(fps=fps) if suffix == ".gif" else FFMpegWriter(fps=fps)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        animation.save(tmp, writer=writer, dpi=dpi)
    return path


def frame_count(duration: float, fps: float, max_frames: int = MAX_FRAMES) -> int:
    """Frames of an animation of a run of ``duration`` s: ``round(duration * fps)``, at least 2, at most ``max_frames``.

    A run up to ``max_frames / fps`` s long (about 5.3 s at the defaults, 80 frames at 15 frames/s) plays in
    real time; a longer one is sampled at ``max_frames`` frames and plays faster, so its file and its drawing
    time stay bounded.

    Parameters
    ----------
    duration : float
        The run's length in s (>= 0).
    fps : float
        Frames per second of the file (> 0).
    max_frames : int
        The cap (>= 2).

    Returns
    -------
    int

    Examples
    --------
    >>> frame_count(0.5, 15.0), frame_count(20.0, 15.0), frame_count(0.0, 15.0)
    (8, 80, 2)
    """
    max_frames = check_integer(max_frames, "max_frames", minimum=2)
    fps = check_positive(fps, "fps", "frames/s")
    duration = check_in_range(duration, "duration", 0.0, np.inf, unit="s", high_inclusive=False)
    return int(min(max_frames, max(2, round(duration * fps))))


def _frame_indices(t, max_frames: int, fps: float) -> np.ndarray:
    """The samples of ``t`` drawn: :func:`frame_count` of them (at most all), evenly spaced."""
    t = np.asarray(t, dtype=float)
    n = frame_count(float(t[-1] - t[0]) if len(t) else 0.0, fps, max_frames)
    return np.unique(np.linspace(0, len(t) - 1, min(n, len(t))).round().astype(int))


def _rot(axis: int, angle) -> np.ndarray:
    """Rotation matrices about a coordinate axis, shape (..., 3, 3)."""
    angle = np.asarray(angle, dtype=float)
    c, s = np.cos(angle), np.sin(angle)
    out = np.zeros(angle.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    out[..., axis, axis] = 1.0
    out[..., i, i] = c
    out[..., j, j] = c
    out[..., i, j] = -s
    out[..., j, i] = s
    return out


def plate_rotation(u) -> np.ndarray:
    """Orientation of the plate, ``R_2 = R_x(alpha) R_y(beta)`` (plate frame -> ground frame).

    Parameters
    ----------
    u : array_like, shape (..., 2)
        Plate angles ``(alpha, beta)`` in rad.

    Returns
    -------
    ndarray, shape (..., 3, 3)

    References
    ----------
    A.G. Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, eq. 33.
    """
    u = np.asarray(u, dtype=float)
    return _rot(0, u[..., 0]) @ _rot(1, u[..., 1])


def ball_orientation(x) -> np.ndarray:
    """Orientation of the ball relative to the plate, ``R_z(yaw) R_x(lean) R_y(roll)`` (ball -> plate frame).

    Parameters
    ----------
    x : array_like, shape (..., 5)
        Ball-plate coordinates ``(contact_x, contact_y, yaw, lean, roll)`` (m, m, rad, rad, rad).

    Returns
    -------
    ndarray, shape (..., 3, 3)
        Its time derivative satisfies ``dR/dt R^T = hat(omega)`` with ``omega`` from
        :meth:`ballctl.BallPlate.angular_velocity` (checked in the tests).
    """
    x = np.asarray(x, dtype=float)
    return _rot(2, x[..., 2]) @ _rot(0, x[..., 3]) @ _rot(1, x[..., 4])


def _sphere_lines(radius: float, n: int = 9) -> list[np.ndarray]:
    """Meridians and parallels of a sphere (body frame), each an (m, 3) polyline."""
    s = np.linspace(0.0, 2.0 * np.pi, 37)
    lines = []
    for lon in np.linspace(0.0, np.pi, n, endpoint=False):
        lines.append(radius * np.stack([np.cos(lon) * np.sin(s), np.sin(lon) * np.sin(s), np.cos(s)], -1))
    for lat in np.linspace(-np.pi / 2, np.pi / 2, n)[1:-1]:
        lines.append(radius * np.stack([np.cos(lat) * np.cos(s), np.cos(lat) * np.sin(s),
                                        np.full_like(s, np.sin(lat))], -1))
    return lines


def _stripe(radius: float) -> np.ndarray:
    """A body-fixed great circle in the body x-z plane: it turns as the ball rolls."""
    s = np.linspace(0.0, 2.0 * np.pi, 61)
    return radius * np.stack([np.sin(s), np.zeros_like(s), np.cos(s)], -1)


def animate_ball_plate(result, path: str | os.PathLike, *, ball_radius: float, max_frames: int = MAX_FRAMES,
                       fps: float = FPS, ball_scale: float | None = None, dpi: int = 80) -> Path:
    """Animate a ball-plate run: the plate tilting about its pivot and the ball rolling on it.

    The plate is drawn at the run's plate angles (inputs ``alpha``, ``beta``; true angles, not
    exaggerated), with the reference path (black dashed) and the trace of the contact point so
    far. The ball carries a body-fixed stripe (a great circle) and a dot at one pole, turned by
    its orientation ``R_x(alpha) R_y(beta) R_z(yaw) R_x(lean) R_y(roll)``, so its rolling and
    spinning are visible. A small ball is drawn enlarged (``ball_scale``), and the title says so.

    Parameters
    ----------
    result : ClosedLoopResult
        A ball-plate run: coordinates ``(contact_x, contact_y, yaw, lean, roll, ...)``, and the
        plate angles ``alpha``, ``beta`` in rad either as inputs (quasi-static
        :class:`~ballctl.BallPlate`) or as coordinates (moving or servo plate: the true angles are
        drawn, not the commands).
    path : path-like
        Output file, ``.gif`` or ``.mp4`` (see :func:`save_animation`).
    ball_radius : float
        The ball's radius in m (> 0), e.g. ``plant.params.radius``.
    max_frames : int
        At most this many frames (>= 2), sampled evenly over the run.
    fps : float
        Frames per second of the file, and of the run: the frame count follows the run's length,
        ``duration * fps`` frames (at least 2, at most ``max_frames``; :func:`frame_count`), so a short run
        is drawn in few frames and plays in real time.
    ball_scale : float, optional
        Drawing scale of the ball; default: enlarge it to 7 % of the plate's side if smaller.
    dpi : int
        Resolution in dots per inch.

    Returns
    -------
    pathlib.Path

    References
    ----------
    A.G. Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, eq. 33 (plate orientation) and the
    yaw-lean-roll angles of the ball relative to the plate.
    """
    names = tuple(getattr(result, "coordinate_names", ()))
    plate_in_state = "alpha" in names and "beta" in names   # moving/servo plate: the true plate angles
    if names[:5] != _BALL_PLATE_COORDINATES or not (
            plate_in_state or tuple(getattr(result, "input_names", ()))[:2] == ("alpha", "beta")):
        raise ParameterTypeError(f"result must be a ball-plate run with coordinates {_BALL_PLATE_COORDINATES} and "
                                 f"plate angles alpha, beta (inputs or coordinates), got coordinates {names}")
    radius = check_positive(ball_radius, "ball_radius", "m")
    check_positive(fps, "fps", "frames/s")
    _check_path(path)
    idx = _frame_indices(result.t, max_frames, fps)
    x, x_ref, u, t = result.x, result.x_ref, result.u, result.t
    if plate_in_state:
        u = x[:, [names.index("alpha"), names.index("beta")]]
    pts = np.concatenate([x[:, :2], x_ref[:, :2]])
    center = 0.5 * (pts.min(0) + pts.max(0))
    half = 0.6 * float(np.max(pts.max(0) - pts.min(0))) + 4 * radius
    if ball_scale is None:
        ball_scale = max(1.0, 0.07 * 2 * half / radius)
    ball_scale = check_positive(ball_scale, "ball_scale")
    r_draw = radius * ball_scale
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]], float) * half + center
    corners = np.column_stack([corners, np.zeros(5)])
    sphere, stripe = _sphere_lines(r_draw), _stripe(r_draw)
    pole = np.array([0.0, 0.0, r_draw])
    ref_plate = np.column_stack([x_ref[:, :2], np.zeros(len(t))])
    trace_plate = np.column_stack([x[:, :2], np.zeros(len(t))])

    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    run_color = OPEN_LOOP_COLOR if getattr(result, "feedback", True) in (False, "open") else RUN_COLORS[0]
    title = "ball on the tilting plate" + (f" (ball drawn ×{ball_scale:.0f})" if ball_scale > 1.5 else "")

    def draw(k):
        i = idx[k]
        ax.cla()
        plate = plate_rotation(u[i, :2])
        ball = plate @ ball_orientation(x[i, :5])
        gc = plate @ np.array([x[i, 0], x[i, 1], r_draw])
        ax.plot(*(corners @ plate.T).T, color="0.35", lw=1.5)
        ax.add_collection3d(_plate_patch(corners[:4] @ plate.T))
        ax.plot(*(ref_plate @ plate.T).T, **REFERENCE_STYLE)
        ax.plot(*(trace_plate[: i + 1] @ plate.T).T, color=run_color, lw=2.0, zorder=5)
        for line in sphere:
            ax.plot(*(line @ ball.T + gc).T, color="0.55", lw=0.6)
        ax.plot(*(stripe @ ball.T + gc).T, color=_STRIPE, lw=2.4)
        ax.plot(*(ball @ pole + gc), "o", color=_STRIPE, ms=6)
        ax.plot([0.0], [0.0], [0.0], "+", color="black", ms=10)
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
        ax.set_zlim(-0.5 * half, 0.5 * half)
        ax.set_box_aspect((1, 1, 0.5))
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
        ax.set_title(f"{title}\nt = {t[i]:.2f} s, α = {np.rad2deg(u[i, 0]):+.2f} deg, "
                     f"β = {np.rad2deg(u[i, 1]):+.2f} deg", fontsize=10)
        return []

    anim = FuncAnimation(fig, draw, frames=len(idx), blit=False)
    return save_animation(anim, path, fps=fps, dpi=dpi)


def _plate_patch(vertices):
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    return Poly3DCollection([vertices], facecolor="#D9D9D9", edgecolor="none", alpha=0.5)


def animate_rolling_ball(ball, run, path: str | os.PathLike, *, max_frames: int = MAX_FRAMES, fps: float = FPS,
                         follow: bool = True, dpi: int = 80) -> Path:
    """Animate the ball rolled by internal point masses: shell, rails, masses, total CM and the contact point's trace.

    Each mass and its rail keep one colour (as in :func:`~ballctl.figures.plotting.plot_ball_paths`,
    named in the legend below the view); the total centre of mass (shell and masses) is a black star
    with a dotted drop line to the floor, so its offset from the contact point -- what rolls the
    ball -- is visible. A ball in the paper's nominal units (g = 1, r = 1 m) says so in the title.

    Parameters
    ----------
    ball : RollingBall
        The plant that produced ``run``.
    run : ODETrajectory
        From ``ball.simulate`` (states in the quaternion layout of :class:`~ballctl.RollingBall`).
    path : path-like
        Output file, ``.gif`` or ``.mp4`` (see :func:`save_animation`).
    max_frames : int
        At most this many frames (>= 2), sampled evenly over the run.
    fps : float
        Frames per second of the file, and of the run: the frame count follows the run's length,
        ``duration * fps`` frames (at least 2, at most ``max_frames``; :func:`frame_count`), so a short run
        is drawn in few frames and plays in real time.
    follow : bool
        Keep the view centred on the ball (True) or show the whole path (False).
    dpi : int
        Resolution in dots per inch.

    Returns
    -------
    pathlib.Path

    References
    ----------
    V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), section 7 (eqs. 7.1-7.12).
    """
    check_positive(fps, "fps", "frames/s")
    _check_path(path)
    fig, draw, idx = _rolling_ball_scene(ball, run, max_frames=max_frames, fps=fps, follow=follow)
    anim = FuncAnimation(fig, draw, frames=len(idx), blit=False)
    return save_animation(anim, path, fps=fps, dpi=dpi)


#: gid of the total centre of mass's marker in :func:`animate_rolling_ball` (tests find it by it).
TOTAL_CM_GID = "total centre of mass"


def _rolling_ball_scene(ball, run, *, max_frames: int = MAX_FRAMES, fps: float = FPS, follow: bool = True):
    """The figure of :func:`animate_rolling_ball`, its frame function ``draw(k)`` and the sample of each frame.

    Returns
    -------
    fig : Figure
    draw : callable
        ``draw(k)`` draws frame ``k`` (sample ``idx[k]`` of the run).
    idx : ndarray of int
    """
    x = np.asarray(run.x, dtype=float)
    t = np.asarray(run.t, dtype=float)
    idx = _frame_indices(t, max_frames, fps)
    r = ball.params.radius_m
    rot = quat_to_matrix(ball.split_state(x[idx])[2])             # body -> spatial, (F, 3, 3)
    gc = ball.contact_point(x) + np.array([0.0, 0.0, r])          # geometric centre, (K, 3)
    masses = ball.mass_positions_body(x[idx])                     # (F, n, 3)
    cm = ball.total_cm_body(x[idx])                               # (F, 3): shell and masses
    rails = rail_curves(ball, 73)
    sphere, stripe = _sphere_lines(r), _stripe(r)
    lo_xy = gc[:, :2].min(0) - 1.5 * r
    span = float(np.max(gc[:, :2].max(0) + 1.5 * r - lo_xy))
    colors = [RUN_COLORS[j % len(RUN_COLORS)] for j in range(len(rails))]

    fig = Figure(figsize=(7.2, 6.8), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    note = NOMINAL_SHORT if is_nominal(ball.params) else ""
    fig.suptitle(f"ball rolled by {len(rails)} internal masses on rails" + (f"\n{note}" if note else ""),
                 fontsize=13)
    handles = [Line2D([], [], color=c, marker="o", ms=7, lw=1.0,
                      label=f"mass {j + 1} ({ball.params.point_masses[j].mass_kg:g} kg) and its rail")
               for j, c in enumerate(colors)]
    handles += [Line2D([], [], color="black", marker="*", ms=12, ls=(0, (1, 1.5)), lw=1.0,
                       label="total centre of mass (shell + masses), dotted to the floor"),
                Line2D([], [], color=_STRIPE, lw=2.4, label="stripe fixed to the shell"),
                Line2D([], [], color=OPEN_LOOP_COLOR, lw=1.8, label="path of the contact point")]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False, fontsize=10)

    def draw(k):
        i = idx[k]
        ax.cla()
        c = gc[i]
        floor = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], float) * 1.6 * r + c[:2]
        ax.add_collection3d(_plate_patch(np.column_stack([floor, np.full(4, -r)])))
        trail = gc[: i + 1, :2].copy()
        if follow:  # 3-D axes do not clip: leave out the part of the path outside the view
            trail[np.any(np.abs(trail - c[:2]) > 1.6 * r, axis=1)] = np.nan
        ax.plot(trail[:, 0], trail[:, 1], np.full(i + 1, -r), color=OPEN_LOOP_COLOR, lw=1.8)
        for line in sphere:
            ax.plot(*(line @ rot[k].T + c).T, color="0.7", lw=0.5)
        ax.plot(*(stripe @ rot[k].T + c).T, color=_STRIPE, lw=2.4)
        for j, rail in enumerate(rails):
            ax.plot(*(rail @ rot[k].T + c).T, color=colors[j], lw=1.0, alpha=0.8)
            ax.plot(*(rot[k] @ masses[k, j] + c), "o", color=colors[j], ms=7)
        p = rot[k] @ cm[k] + c
        ax.plot([p[0], p[0]], [p[1], p[1]], [p[2], -r], color="black", lw=1.0, ls=(0, (1, 1.5)))
        ax.plot([p[0]], [p[1]], [p[2]], "*", color="black", ms=13, markeredgecolor="white", markeredgewidth=0.6,
                gid=TOTAL_CM_GID, zorder=20)
        if follow:
            ax.set_xlim(c[0] - 1.6 * r, c[0] + 1.6 * r)
            ax.set_ylim(c[1] - 1.6 * r, c[1] + 1.6 * r)
        else:
            ax.set_xlim(lo_xy[0], lo_xy[0] + span)
            ax.set_ylim(lo_xy[1], lo_xy[1] + span)
        ax.set_zlim(c[2] - 1.6 * r, c[2] + 1.6 * r)
        xr, yr = np.diff(ax.get_xlim())[0], np.diff(ax.get_ylim())[0]
        ax.set_box_aspect((xr, yr, 3.2 * r))
        ax.set_xlabel("e1 [m]")
        ax.set_ylabel("e2 [m]")
        ax.set_zlabel("e3 [m]")
        ax.set_title(f"t = {t[i]:.2f} s", fontsize=12)
        return []

    return fig, draw, idx
