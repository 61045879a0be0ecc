"""The paper's rolling-ball example (Putkaradze & Rogers 2018, section 7) for the CLI.

:func:`simulate_paper_ball` integrates the ball of eqs. (7.8)-(7.12) under the
rail accelerations (7.11), saves the figure of the paths (like the paper's
fig. 7.2: masses and total CM in the body and spatial frames about the GC,
and the contact point), optionally an animation, and returns the key numbers.
``ballctl simulate-ball`` calls it; ``examples/rolling_ball_paper.py`` also draws the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .._errors import ParameterError
from .._validation import check_positive
from ..figures.plotting import plot_ball_paths, save_figure
from ..plants.paper import PAPER_KINK_TIMES, paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
from ..plants.rolling_ball import RollingBall

__all__ = ["simulate_paper_ball"]


def simulate_paper_ball(out_dir: str | os.PathLike, *, t_final: float = 20.0, samples: int = 2001,
                        animation: str | None = None) -> dict:
    """Run the paper's ball example, save ``ball_paths.png`` and return the key numbers.

    Parameters
    ----------
    out_dir : str or path
        Folder for the figure (created if needed).
    t_final : float
        End time in s (the paper: 20 s).
    samples : int
        Output samples (>= 2).
    animation : str, optional
        Also write an animation of the ball (shell, rails, masses;
        :func:`ballctl.figures.animation.animate_rolling_ball`)
        to this file name in ``out_dir`` (``.gif`` or ``.mp4``).

    Returns
    -------
    dict
        ``t_final_s``, ``final_contact_point_m`` (list of 2), ``distance_travelled_m`` (path length),
        ``max_quaternion_norm_error``, ``max_horizontal_cm_offset_m`` (total CM off the vertical
        through the GC), ``nfev``, ``wall_time_s``, ``method`` and ``figures`` (paths).

    References
    ----------
    V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), eqs. (7.1)-(7.12), fig. 7.2.

    Examples
    --------
    >>> import tempfile
    >>> out = simulate_paper_ball(tempfile.mkdtemp(), t_final=0.5, samples=51)
    >>> sorted(out)[:3]
    ['distance_travelled_m', 'figures', 'final_contact_point_m']
    """
    t_final = check_positive(t_final, "t_final", "s")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ParameterError(f"samples must be an integer >= 2, got {samples!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, t_final),
                        lambda t: paper_rail_acceleration(t) * np.ones(3), t_eval=np.linspace(0.0, t_final, samples),
                        breakpoints=PAPER_KINK_TIMES)
    cm = ball.total_cm_body(run.x)
    cm_spatial = ball.to_spatial_about_gc(run.x, cm[:, None, :])[:, 0]
    cp = ball.contact_point(run.x)
    q = ball.split_state(run.x)[2]
    path = save_figure(plot_ball_paths(ball, run, f"Rolling ball, Putkaradze & Rogers (2018) section 7, "
                                                  f"t = 0..{t_final:g} s"), out / "ball_paths.png", dpi=110)
    figures = [str(path)]
    if animation:
        from ..figures.animation import animate_rolling_ball

        figures.append(str(animate_rolling_ball(ball, run, out / animation)))

    return {
        "t_final_s": float(run.t[-1]),
        "final_contact_point_m": [float(v) for v in cp[-1, :2]],
        "distance_travelled_m": float(np.sum(np.linalg.norm(np.diff(cp[:, :2], axis=0), axis=1))),
        "max_quaternion_norm_error": float(np.max(np.abs(np.linalg.norm(q, axis=1) - 1.0))),
        "max_horizontal_cm_offset_m": float(np.max(np.linalg.norm(cm_spatial[:, :2], axis=1))),
        "nfev": int(run.nfev),
        "wall_time_s": float(run.wall_time_s),
        "method": run.method,
        "figures": figures,
    }
