"""Sphinx configuration of the ballctl documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (from the repository root).
The API reference is generated at configuration time from the ``__all__`` lists
(``docs/_ext/ballctl_docs.py``); the gallery runs every script in ``examples/``.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import ballctl  # noqa: E402
import ballctl_docs  # noqa: E402

ballctl_docs.write_api_pages()

project = "ballctl"
author = "the ballctl developers"
copyright = "the ballctl developers"
release = ballctl.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "moving_plate_table.md", "sg_execution_times.rst", "**/GALLERY_HEADER.rst",
                    "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5"]
templates_path = ["_templates"]

# --- API reference ---------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc types in the docstrings say it, with shapes and units
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set = set()
intersphinx_mapping: dict = {}  # offline builds: no inventories fetched

# --- Markdown pages ------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# --- gallery -------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(DOCS.parent / "examples"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": r".*\.py$",  # every example runs during the build
    "ignore_pattern": r"__init__\.py",
    "reset_argv": "ballctl_docs.reset_argv",
    "image_scrapers": ("ballctl_docs.output_file_scraper",),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "show_memory": False,
    "capture_repr": (),
}

# --- HTML ----------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"ballctl {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2, "secondary_sidebar_items": ["page-toc"]}
html_show_sourcelink = False


def setup(app):
    """Escape plain-text ``|x|`` in docstrings after numpydoc has formatted them."""
    app.connect("autodoc-process-docstring", ballctl_docs.escape_bars, priority=900)
