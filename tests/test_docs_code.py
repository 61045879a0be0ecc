"""The Python code of the README and of every page in docs/ runs, page by page, in order, in an empty folder.

Marked ``slow`` (about a minute over all pages on 2 cores): CI runs it with the other long checks. A page
listed in ``NOT_SELF_CONTAINED`` has fragments that need objects from the prose or a cluster; it is
named here so that the list cannot silently grow, and it leaves the list once it runs.
"""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md"] + list((ROOT / "docs").glob("*.md")) + list((ROOT / "docs").glob("*/*.md")))
PAGES = [p for p in PAGES if "_build" not in p.parts and "auto_examples" not in p.parts]

#: pages whose fragments refer to objects the page does not build (a dask scheduler, a run from the prose)
NOT_SELF_CONTAINED = {"docs/engine.md", "docs/animations.md"}


def python_blocks(page: pathlib.Path) -> list[str]:
    """The page's ```python fenced blocks, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


RUNNABLE = [p for p in PAGES if python_blocks(p) and str(p.relative_to(ROOT)) not in NOT_SELF_CONTAINED]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_of_the_page_runs(page, tmp_path):
    script = tmp_path / "page.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(python_blocks(page)), encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{page.name}: {run.stderr[-2000:]}"


def test_the_pages_left_out_still_have_code():
    """Each page left out exists and has Python blocks (else it leaves the list)."""
    for name in NOT_SELF_CONTAINED:
        assert python_blocks(ROOT / name), f"{name} has no Python blocks any more: remove it from the list"
