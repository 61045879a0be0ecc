"""What the figures and the animations share beyond the style constants: nominal units, equal 3-D scales, rails."""

from __future__ import annotations

import numpy as np

__all__ = ["NOMINAL_NOTE", "NOMINAL_SHORT", "is_nominal", "equal_3d_scale", "rail_curves"]


def is_nominal(params) -> bool:
    """True for a ball or disk in the paper's nominal units (g = 1 m/s², r = 1 m).

    Parameters
    ----------
    params : RollingBallParameters or RollingDiskParameters
    """
    return (float(getattr(params, "gravity_mps2", 0.0)) == 1.0 and float(getattr(params, "radius_m", 0.0)) == 1.0)


#: What a figure of a plant in the paper's nominal units says about them.
NOMINAL_NOTE = "nominal units of the paper: g = 1 m/s², ball radius r = 1 m (lengths are in ball radii)"
#: The same, short enough for an animation's title.
NOMINAL_SHORT = "the paper's nominal units: g = 1 m/s², ball radius r = 1 m"


def equal_3d_scale(ax, points, *, pad: float = 0.05) -> np.ndarray:
    """Limits around ``points`` and a box aspect proportional to their ranges: one metre is as long on every axis.

    A circle then looks like a circle from any view. A range below 10 % of the largest is widened to
    it (a flat path still gets a box), and every range is padded by ``pad`` of the largest.

    Parameters
    ----------
    ax : Axes3D
    points : array_like, shape (..., 3)
        Everything drawn (NaN ignored).
    pad : float
        Margin on each side, as a fraction of the largest range.

    Returns
    -------
    ndarray, shape (3,)
        The ranges of the x, y and z axes (the box aspect).
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    lo, hi = (pts.min(0), pts.max(0)) if pts.size else (np.full(3, -1.0), np.full(3, 1.0))
    centre, span = 0.5 * (lo + hi), hi - lo
    big = float(span.max()) if span.max() > 0 else 1.0
    span = np.maximum(span, 0.1 * big) + 2 * pad * big
    ax.set_xlim(centre[0] - span[0] / 2, centre[0] + span[0] / 2)
    ax.set_ylim(centre[1] - span[1] / 2, centre[1] + span[1] / 2)
    ax.set_zlim(centre[2] - span[2] / 2, centre[2] + span[2] / 2)
    ax.set_box_aspect(tuple(span))
    return span


def rail_curves(ball, n: int = 121) -> list[np.ndarray]:
    """Each mass's rail over its parameter range, body frame about the geometric centre, (n, 3) each.

    Parameters
    ----------
    ball : RollingBall
    n : int
        Points per rail.
    """
    curves = []
    for pm in ball.params.point_masses:
        lo, hi = pm.rail.parameter_range
        curves.append(np.asarray(pm.rail.evaluate(np.linspace(lo, hi, n))[0], dtype=float).reshape(n, -1))
    return curves
