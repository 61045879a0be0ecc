"""Checks that a written figure file holds a drawn figure, and checks on the figures' contents (units, reference on
top, thresholds, equal 3-D scales) that fail when a figure loses what a control engineer reads it for."""

import re
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["assert_drawn_png", "assert_drawn_svg", "panels", "panel", "artists", "assert_units_on_every_axis",
           "assert_reference_on_top", "assert_horizontal_line", "assert_equal_3d_scale"]


def assert_drawn_png(path, *, min_size=(300, 200)):
    """A PNG at least ``min_size`` pixels whose pixels are not all alike (axes, curves, labels drawn)."""
    with Image.open(Path(path)) as img:
        assert img.format == "PNG", f"{path} is not a PNG"
        assert img.size[0] >= min_size[0] and img.size[1] >= min_size[1], f"{path} is only {img.size}"
        pixels = np.asarray(img.convert("L"), dtype=float)
    # a blank canvas has one grey level; a drawn figure has a white background and dark ink on a few % of pixels
    ink = np.mean(pixels < 128)
    assert 0.001 < ink < 0.5, f"{path}: {ink:.2%} dark pixels"


def assert_drawn_svg(path, *, labels=()):
    """An SVG with drawn paths and the given axis-label texts."""
    text = Path(path).read_text(encoding="utf-8")
    assert text.lstrip().startswith(("<?xml", "<svg")) and "<path" in text, f"{path} is not a drawn SVG"
    for label in labels:
        assert label in text, f"{path} lacks {label!r}"


# ----------------------------------------------------------------------------------- checks on Figure objects
#: An axis label ends in its unit in brackets: "time [s]", "plate tilt about x [deg]", "friction needed [-]".
UNIT = re.compile(r"\[[^\[\]]+\]\s*$")


def panels(fig):
    """The axes of ``fig`` that show data (not the legend/verdict key, whose axis is off)."""
    return [ax for ax in fig.axes if ax.axison]


def panel(fig, gid):
    """The one axes of ``fig`` with this gid (e.g. ``"path"``, ``"error"``, ``"yaw error"``)."""
    found = [ax for ax in fig.axes if ax.get_gid() == gid]
    assert len(found) == 1, f"{len(found)} axes with gid {gid!r}; gids: {[ax.get_gid() for ax in fig.axes]}"
    return found[0]


def artists(ax, gid):
    """Lines, collections and patches of ``ax`` with this gid."""
    return [a for a in list(ax.lines) + list(ax.collections) + list(ax.patches) if a.get_gid() == gid]


def assert_units_on_every_axis(fig):
    """Every data panel labels its x and y axis (and z of a 3-D panel) with a unit in brackets."""
    for ax in panels(fig):
        labels = [ax.get_xlabel(), ax.get_ylabel()] + ([ax.get_zlabel()] if hasattr(ax, "get_zlabel") else [])
        for label in labels:
            assert UNIT.search(label), f"axes {ax.get_gid() or ax.get_title()!r}: label {label!r} has no [unit]"


def assert_reference_on_top(ax):
    """The reference line exists once and is drawn above every other artist of ``ax`` (highest zorder)."""
    ref = artists(ax, "reference")
    assert len(ref) == 1, f"{len(ref)} reference lines"
    others = [a.get_zorder() for a in list(ax.lines) + list(ax.collections) + list(ax.patches) if a is not ref[0]]
    assert others and ref[0].get_zorder() > max(others), (ref[0].get_zorder(), max(others))


def assert_horizontal_line(ax, gid, value, *, rtol=1e-12):
    """A horizontal line with this gid lies at ``value`` (in data units)."""
    lines = artists(ax, gid)
    assert lines, f"no line {gid!r}"
    for line in lines:
        y = np.asarray(line.get_ydata(), dtype=float)
        assert np.allclose(y, value, rtol=rtol, atol=0), f"{gid} at {y}, expected {value}"


def assert_equal_3d_scale(ax, *, rtol=1e-9):
    """A 3-D panel's box aspect is proportional to its axis ranges: a metre is as long on every axis."""
    ranges = np.array([np.ptp(ax.get_xlim3d()), np.ptp(ax.get_ylim3d()), np.ptp(ax.get_zlim3d())])
    box = np.asarray(ax.get_box_aspect(), dtype=float)
    assert box.shape == (3,), box
    assert np.allclose(box / box.sum(), ranges / ranges.sum(), rtol=rtol, atol=0), (box, ranges)
