"""Animations: the ball on the tilting plate, and the ball rolled by internal masses
=================================================================================

Two GIFs made with :mod:`ballctl.figures.animation` (MP4 works too where ffmpeg is installed: give the file a
``.mp4`` suffix).

1. **Ball-plate**: the paper's controller (finite-horizon LQR on the contact point and the yaw) tracks
   the 0.5 m circle at 1 rad/s from a start 5 cm outside it. The plate is drawn at its true angles
   about the pivot (+); the dashed circle is the reference, the blue line the contact point's path so
   far, and the black stripe and dot are fixed to the ball, so its rolling (about 40 rad/s) and its
   slow spin about the plate normal are visible. The ball is drawn enlarged.
2. **Internal-mass ball** (Putkaradze & Rogers 2018, section 7): three masses (one colour each) driven
   along circular rails inside the shell by the paper's rail accelerations (7.11); the view follows
   the ball, the grey line is the contact point's path on the floor.

The same animations come from the command line: ``ballctl track --animate`` and
``ballctl simulate-ball --animate``.

Run: ``python examples/animate_tracking.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import ballctl
from ballctl.figures.animation import animate_ball_plate, animate_rolling_ball
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
from ballctl.plants.rolling_ball import RollingBall

#: Bryson limits of the paper's tracking design (m, rad, m/s, rad/s)
MAX_STATE_ERRORS = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1,
                        yaw_rate=5.0)


def ball_plate_animation(out: Path, *, frames: int, dt: float):
    """Track one revolution of the circle and animate the closed loop on the nonlinear plant.

    Returns the GIF's path and the closed-loop run.
    """
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, radius=0.5, omega=1.0, roll_rate=40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    horizon = dt * int(ref.period / dt)  # one revolution, a whole number of samples
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=horizon,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6],
                                                                  max_state_errors=MAX_STATE_ERRORS,
                                                                  max_input_errors={"alpha": np.deg2rad(3.0),
                                                                                    "beta": np.deg2rad(3.0)}))
    s0 = ref(0.0)
    x0 = s0.x + np.array([0.05, 0.0, 0.0, 0.0, 0.0])
    run = ballctl.simulate_closed_loop(ctrl, x0, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4", substeps=4))
    print(f"ball-plate: final distance to the reference {run.position_error[-1]:.2e} m")
    return animate_ball_plate(run, out / "ball_plate.gif", ball_radius=plant.params.radius, max_frames=frames), run


def rolling_ball_animation(out: Path, *, frames: int, t_final: float) -> Path:
    """The paper's internal-mass ball under its rail accelerations (7.11)."""
    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, t_final),
                        lambda t: paper_rail_acceleration(t) * np.ones(3),
                        t_eval=np.linspace(0.0, t_final, 4 * frames + 1))
    return animate_rolling_ball(ball, run, out / "rolling_ball.gif", max_frames=frames)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--out", default="out/animations", help="output folder")
    parser.add_argument("--quick", action="store_true", help="fewer frames and a coarser controller (docs build)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    frames = 30 if args.quick else 120
    paths = [ball_plate_animation(out, frames=frames, dt=0.05 if args.quick else 0.01)[0],
             rolling_ball_animation(out, frames=frames, t_final=6.0 if args.quick else 20.0)]
    for p in paths:
        print(f"wrote {p}")
    return paths


if __name__ == "__main__":
    main()
