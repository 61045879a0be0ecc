"""The code of the README and of every page in docs/ runs, page by page, and prints what the page shows.

A page runs as one program, in order, in an empty folder, in one Python process (``docs_pages.run_page``):
its ```python blocks (in one namespace), the files it shows (a ```{code-block} with a ``:caption:`` file
name is written there when the run reaches it) and its command blocks that hold no ballctl command (e.g. the
C compiler on the header the page's code wrote; the blocks with a ballctl command are
``tests/test_docs_commands.py``'s). The environment has one BLAS thread and no display.

**Printed results come from running the page.** The convention (``tests/docs_pages.py``): a ```text block right
after a ```python block (only blank lines between) is that block's printed output, and in a ```console block the
lines under a ``$ command`` are what it prints. A marker between the steps splits what the run prints, and each
step's output is compared with the page's: words exactly (whitespace normalized, ``...`` for any text), numbers
to two significant digits (integers exactly), because BLAS, threads and the compiler move the last digits.
``python tests/docs_pages.py PAGE`` rewrites a page's output blocks from a run.

The runs are marked ``slow``; they run two at a time (``docs_pages.Prefetch``: the pages' runs and the command
sessions of ``tests/test_docs_commands.py`` together, about 1.5 minutes on 2 quiet cores, ``docs/planning.md``
the longest). The rules of the markup are checked in the default run.
"""

import re

import pytest

from docs_pages import (ROOT, Prefetch, blocks, command_lines, compare_output, doc_pages, outputs, page_id,
                        page_steps, run_page)

PAGES = doc_pages()
RUNNABLE = [p for p in PAGES if page_steps(p)]

#: ```text blocks that are not a python block's output, with the reason (they should become ```none)
NOT_OUTPUT = {
    ("docs/tracking.md", "{"): "the layout of summary.json, with placeholders",
}


Prefetch.register("test_the_page_runs_and_prints_what_it_shows", "page", run_page, key=page_id)


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_the_page_runs_and_prints_what_it_shows(page, request):
    run = Prefetch.result(request, "test_the_page_runs_and_prints_what_it_shows", page)
    shown = outputs(page)
    problems = []
    for step, printed in zip(run.steps, run.printed):
        if printed is None:
            continue
        expected = shown[step["block"]].body if step["kind"] == "python" and step["block"] in shown else None
        if step["kind"] == "shell":
            expected = step["output"]
        if expected is not None:
            difference = compare_output(expected, printed)
            if difference:
                problems.append(f"{step['where']}: what the block prints is not what the page shows: {difference}")
    if run.returncode:
        problems.append(f"the page's code fails:\n{run.stderr[-3000:]}")
    assert not problems, "\n\n".join(problems)


def test_every_fence_names_its_language():
    """A command line or an output cannot hide in an unmarked block (literal text is ```none)."""
    bare = [b.where for p in PAGES for b in blocks(p) if not b.lang]
    assert not bare, f"fenced blocks without a language (```python, ```console, ```text, ```none, ...): {bare}"


def test_text_blocks_are_outputs_of_the_block_before():
    stray = []
    for page in PAGES:
        shown = {b.line for b in outputs(page).values()}
        for b in blocks(page):
            first = b.body.strip().splitlines()[0] if b.body.strip() else ""
            if b.lang == "text" and b.line not in shown and (page_id(page), first) not in NOT_OUTPUT:
                stray.append(b.where)
    assert not stray, ("```text blocks that follow no ```python block (an output shown by hand? literal text is "
                       f"```none): {stray}")
    for (name, first), reason in NOT_OUTPUT.items():
        page_blocks = blocks(ROOT / name)
        assert any(b.lang == "text" and b.body.lstrip().startswith(first) for b in page_blocks), \
            f"{name} has no ```text block starting {first!r} any more ({reason}): remove it from NOT_OUTPUT"


def test_console_blocks_start_with_a_command_and_named_files_are_files():
    for page in PAGES:
        for b in blocks(page):
            if b.lang == "console":
                assert b.body.startswith("$ "), f"{b.where}: a console block starts with a `$ command` line"
            if b.lang == "{code-block}" and "caption" in b.options:
                assert re.fullmatch(r"[\w.-]+", b.file_name), f"{b.where}: the caption names the file it is"


def test_a_console_command_shows_its_exit_status_when_it_fails():
    """``# exit status N`` is read from the command line (and dropped from the command)."""
    page = ROOT / "docs" / "identification.md"
    failing = [c for c in command_lines(page) if c.status]
    assert failing and all(c.status == 2 and "#" not in c.text for c in failing)


@pytest.mark.parametrize("expected, printed, same", [
    ("final error 1.4e-04 m", "final error 1.43e-04 m", True),          # two significant digits
    ("final error 1.4e-04 m", "final error 6.0e-12 m", False),          # the stale number of the issue
    ("final error 1.4e-04 m", "final error 1.6e-04 m", False),
    ("k = 61, alpha = 0.070369703858 rad", "k = 61, alpha = 0.070613508413 rad", True),
    ("k = 61", "k = 62", False),                                        # integers exactly
    ("rank 6/6", "rank 5/6", False),
    ("eig 5.05e-28 NO", "eig 0.00e+00 NO", True),                       # both rounding
    ("eig 5.05e-28 NO", "eig 1.32e-06 NO", False),
    ("cond   1.33e+02  exact", "cond 1.33e+02 exact", True),            # whitespace
    ("cond 1.33e+02 exact", "cond 1.33e+02 inexact", False),            # words
    ("first line\n...\nlast 3", "first line\nmore\nand more\nlast 3", True),   # elision
    ("a ... c", "a b d", False),
    ("+0.70 lean", "-0.70 lean", False),
    ("", "something", False),
])
def test_outputs_are_compared_by_words_and_numbers(expected, printed, same):
    assert (compare_output(expected, printed) is None) == same
