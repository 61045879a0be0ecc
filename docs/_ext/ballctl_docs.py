"""Build helpers for the ballctl documentation (used by ``docs/conf.py`` only).

* :func:`write_api_pages` writes the API reference sources from the ``__all__`` of
  ``ballctl`` and of every public subpackage and module, so a name another engineer
  adds to an ``__all__`` appears in the reference without editing the docs.
* :func:`reset_argv` gives each gallery example its fast path (``--quick`` where it
  has one) and an output folder under ``docs/_build/gallery_out``.
* :class:`OutputFileScraper` shows in the gallery the PNG and GIF files an example
  wrote (ballctl's plotting functions build figures with the object-oriented API, so
  matplotlib's own scraper never sees them).
"""

from __future__ import annotations

import importlib
import inspect
import re
import pkgutil
import shutil
from pathlib import Path

__all__ = ["escape_bars", "public_modules", "canonical_names", "write_api_pages", "reset_argv", "OutputFileScraper"]

DOCS = Path(__file__).resolve().parents[1]
GALLERY_OUT = DOCS / "_build" / "gallery_out"

#: Arguments each example gets in the gallery build (its fast path); the output folder is added per example.
EXAMPLE_ARGS = {
    "circle_reference.py": ["--out", "{out}"],
    "linearize_user_system.py": [],
    "quasi_static_cost.py": ["--quick", "--out", "{out}"],
    "rolling_ball_paper.py": ["{out}", "--quick"],
    "rolling_ball_tracking.py": ["{out}"],  # the full 10 s: a shorter horizon is not representative
    "rolling_disk_control.py": ["{out}"],
    "tracking_study.py": ["--quick", "--out", "{out}"],
    "animate_tracking.py": ["--quick", "--out", "{out}"],
    "plan_maneuver.py": ["{out}", "--intervals", "20", "--tolerance", "1e-4"],
    "plan_ball_plate.py": ["{out}", "--intervals", "12"],
}


def public_modules(package: str = "ballctl") -> list[str]:
    """Names of the package and its public submodules (no component starting with ``_``), sorted."""
    pkg = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names, key=lambda n: (n.count("."), n))


def canonical_names(modules: list[str]) -> dict[int, str]:
    """Map ``id(obj)`` to the one full name under which each public object is documented.

    The shortest public path wins (``ballctl.BallPlate`` rather than
    ``ballctl.plants.ball_plate.BallPlate``), so each object has one page.
    """
    canon: dict[int, str] = {}
    for mod_name in modules:  # modules are ordered by depth
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue  # constants are documented where they are defined
            full = f"{mod_name}.{name}"
            if full in modules:  # e.g. the function ballctl.linear.discretize shadows the module: document it inside
                continue
            canon.setdefault(id(obj), full)
    return canon


_SUBSTITUTION = re.compile(r"(?<![`\\\w])\|([^|\s`][^|`\n]*?)\|(?![_\w])")


def escape_bars(app, what, name, obj, options, lines) -> None:
    """Escape ``|x|`` (absolute values in plain text) so reST does not read it as a substitution.

    Lines in literal blocks, math directives and doctests are left alone.
    """
    block_indent = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if block_indent is not None:
            if stripped and indent <= block_indent:
                block_indent = None
            else:
                continue
        if stripped.startswith(">>>") or stripped.startswith("..."):
            continue
        if stripped.startswith(".. math::") or (stripped.endswith("::") and not stripped.startswith(".. ")):
            block_indent = indent
        if stripped.startswith(".. math::"):
            continue
        lines[i] = _SUBSTITUTION.sub(lambda m: "\\|" + m.group(1) + "\\|", line)


def _title(text: str, char: str = "=") -> str:
    return f"{text}\n{char * len(text)}\n"


def write_api_pages(out_dir: Path = DOCS / "api" / "generated") -> list[str]:
    """Write one reST page per public module into ``out_dir``; return the module names.

    Each page has the module docstring, an autosummary (with stub pages) of the
    names whose canonical home is this module, a table linking the names it
    re-exports, and links to its public submodules.
    """
    modules = public_modules()
    canon = canonical_names(modules)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    for mod_name in modules:
        mod = importlib.import_module(mod_name)
        own, reexported, constants, submodules = [], [], [], []
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                submodules.append(obj.__name__)
            elif inspect.isclass(obj) or inspect.isroutine(obj):
                full = canon[id(obj)]
                (own if full == f"{mod_name}.{name}" else reexported).append(full)
            else:
                constants.append(name)
        lines = [f".. _api-{mod_name}:", "", _title(f"``{mod_name}``"),
                 f".. automodule:: {mod_name}", "   :no-members:", ""]
        if own:
            # relative to the parent package, so a function named like its module (ballctl.simulate.simulate)
            # is not mistaken for the module itself
            parent, _, last = mod_name.rpartition(".")
            prefix = f"{last}." if parent else ""
            lines += [".. currentmodule:: " + (parent or mod_name), "", ".. autosummary::", "   :toctree: objects",
                      "   :nosignatures:", ""]
            lines += [f"   {prefix}{full.rsplit('.', 1)[1]}" for full in own] + [""]
        if constants:
            lines += [".. currentmodule:: " + mod_name, ""]
            for name in constants:
                lines += [f".. autodata:: {name}", "   :no-value:", ""]
        if reexported:
            lines += [".. currentmodule:: None", "", "Also available here (documented at their canonical path):", "",
                      ".. autosummary::", "   :nosignatures:", ""]
            lines += [f"   ~{full}" for full in reexported] + [""]
        children = sorted({m for m in modules if m.rsplit(".", 1)[0] == mod_name} | set(submodules))
        if children:
            lines += ["Modules:", ""] + [f"* :ref:`api-{m}`" for m in children] + [""]
        (out_dir / f"{mod_name}.rst").write_text("\n".join(lines))
    return modules


def reset_argv(gallery_conf, script_vars) -> list[str]:
    """Command-line arguments for one gallery example: its fast path and an output folder."""
    src = Path(script_vars["src_file"])
    out = GALLERY_OUT / src.stem
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return [a.format(out=out) for a in EXAMPLE_ARGS.get(src.name, [])]


class OutputFileScraper:
    """Sphinx-gallery image scraper: the PNG/GIF files the running example wrote to its output folder."""

    def __init__(self):
        self.seen: set[Path] = set()

    def __repr__(self) -> str:  # stable, so sphinx-gallery's cache key does not change between builds
        return "OutputFileScraper"

    def __call__(self, block, block_vars, gallery_conf) -> str:
        from sphinx_gallery.scrapers import figure_rst

        out = GALLERY_OUT / Path(block_vars["src_file"]).stem
        files = sorted(p for p in out.rglob("*") if p.suffix in (".png", ".gif") and p not in self.seen)
        image_names = []
        for path, image_path in zip(files, block_vars["image_path_iterator"]):
            image_path = Path(image_path).with_suffix(path.suffix)
            shutil.copyfile(path, image_path)
            image_names.append(image_path)
            self.seen.add(path)
        return figure_rst(image_names, gallery_conf["src_dir"])


#: The scraper instance sphinx-gallery imports by name.
output_file_scraper = OutputFileScraper()
