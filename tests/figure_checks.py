"""Checks that a written figure file holds a drawn figure (not just that the file exists)."""

from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["assert_drawn_png", "assert_drawn_svg"]


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
