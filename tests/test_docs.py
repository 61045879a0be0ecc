"""The documentation stays in step with the code: README commands, API pages, gallery examples."""

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from ballctl.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
ballctl_docs = pytest.importorskip("ballctl_docs")

DOCS_COMMAND = 'pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html'
TEST_COMMAND = 'pip install -e ".[test]" && python -m pytest -q'


def _table_commands(path: Path, heading: str) -> list[str]:
    text = path.read_text()
    table = text.split(heading, 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `ballctl ([a-z-]+)` \|", table, flags=re.MULTILINE)


@pytest.mark.parametrize("page, heading", [("README.md", "## Commands"),
                                           ("docs/getting_started.md", "## The command line")])
def test_command_tables_list_exactly_the_cli_subcommands(page, heading):
    listed = _table_commands(ROOT / page, heading)
    assert len(listed) == len(set(listed)), f"a command is listed twice in {page}: {listed}"
    assert sorted(listed) == sorted(c.NAME for c in COMMANDS), page


def test_readme_and_ci_carry_the_test_and_docs_commands():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().replace("pip install -q -e", "pip install -e")  # CI installs quietly
    for command in (TEST_COMMAND, DOCS_COMMAND):
        assert command in readme
    # CI runs the test command's two halves (the linter in between) and the docs command as written
    install, run = TEST_COMMAND.split(" && ")
    assert install in ci and run in ci and DOCS_COMMAND in ci
    assert ci.index(run) < ci.index(DOCS_COMMAND), "the site is built after the tests"
    # the default run leaves out the tests marked slow; CI runs them too, and the README says how
    slow = "python -m pytest -q -n auto -m slow"
    assert slow in ci and slow in readme


def test_api_pages_cover_every_public_name(tmp_path):
    modules = ballctl_docs.write_api_pages(tmp_path)
    pages = {p.stem: p.read_text() for p in tmp_path.glob("*.rst")}
    assert set(pages) == set(modules)
    canon = ballctl_docs.canonical_names(modules)
    for mod_name in modules:
        mod = importlib.import_module(mod_name)
        assert hasattr(mod, "__all__"), f"{mod_name} has no __all__"
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                assert f"api-{obj.__name__}" in pages[mod_name]
            elif inspect.isclass(obj) or inspect.isroutine(obj):
                full = canon[id(obj)]
                home, _, short = full.rpartition(".")
                # documented (with a stub page) in its canonical module's page, linked from every other one
                assert re.search(rf"^   (\w+\.)?{short}$", pages[home], flags=re.MULTILINE), full
                assert full in pages[mod_name] or home == mod_name
            else:
                assert f".. autodata:: {name}" in pages[mod_name]


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_is_a_gallery_page(example):
    source = example.read_text()
    doc = ast.get_docstring(ast.parse(source))
    assert doc, "the gallery needs a docstring"
    title, underline = doc.splitlines()[:2]
    assert underline == "=" * len(title), "the docstring opens with a title block"
    # the gallery executes the script as __main__; SystemExit would end the whole documentation build
    assert "SystemExit" not in source and "sys.exit" not in source
    assert example.name in ballctl_docs.EXAMPLE_ARGS, "give it its fast path for the gallery build"
