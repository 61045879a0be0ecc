"""Every command line shown in the README and in docs/ runs, and every flag the pages name exists.

**Which command lines run.** Every line of a ```bash, ```shell or ```console block is a command line
(``tests/docs_pages.py`` has the markup: ``$`` prompts, continuations, ``# exit status N``); an ``a && b`` chain
is split into its commands. A block with a ballctl command (``ballctl ...``, ``python examples/...``,
``python benchmarks/...``) runs here as one session: its commands in order, in an empty temporary folder
(``examples/`` and ``benchmarks/`` linked in, so the pages' relative paths work; a command writing files writes
them there, under its default ``--out`` or the path the page gives). Each must end with exit status 0, or the
status the page states, and in a ```console block it must print what the page shows under it (words exactly,
numbers to two significant digits: ``docs_pages.compare_output``). The other command blocks belong to the
page's own run (``tests/test_docs_code.py``: e.g. the C compiler on the files the page's code wrote).

Not run, by the explicit list ``docs_pages.NOT_RUN`` (each with its reason): creating and activating a
virtual environment, ``pip install``, the test suite and the documentation build.

Long commands get fast-mode flags, only through :data:`FAST` (appended when the command does not set the flag).

**Inline commands** (a code span in the prose such as `` `ballctl track --animate` ``) are mentions, often with
placeholders (``FILE.csv``, ``N``, ``[--rig BASE]``, ``tabletop|lab``): they are checked, not run. The command or
script must exist, and an inline ballctl command without placeholders must parse with ballctl's own parser.

**Flags.** Every ``--flag`` the pages mention, in a command line or in a code span, must be in the ``--help`` of
the command it belongs to: in a command line, the command it follows; in a code span, the command the span
names, else one of the ballctl commands or scripts its paragraph (a table row is a paragraph) names, else one
of those its section names, else any ballctl command (``docs/conventions.md`` once cited flags no command has).
A ballctl command's flags are those of ``ballctl COMMAND --help`` (its parser's help text); a script's, the
option strings of its ``add_argument`` calls (read from its source, which is what its ``--help`` lists). Spans
that show another tool (``pip ...``, ``python -m ...``, ``gcc ...``) are not checked.
"""

import ast
import os
import re
import shlex
import subprocess

import pytest

from docs_pages import (NOT_RUN, ROOT, Prefetch, blocks, code_spans, command_lines, compare_output, doc_pages,
                        environment, is_ballctl_session, kind_of, page_id, prose)

from ballctl.cli import COMMANDS, build_parser

PAGES = doc_pages()

#: fast-mode flags appended to long commands (when the command does not set them itself), and why
FAST = {
    # the robust verification of every design over 200 drawn rigs is the largest part of a default job; 20 drawn
    # rigs run the same code (the batch, the percentiles, the verdict) in a fraction of the time
    "ballctl track": ["--robust-runs", "20"],
}

SESSIONS = [b for p in PAGES for b in blocks(p) if is_ballctl_session(b)]
COMMAND_LINES = [c for p in PAGES for c in command_lines(p)]

_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_SCRIPT = re.compile(r"(?<![\w/])((?:examples|benchmarks)/[\w-]+\.py)")
_BALLCTL = re.compile(r"(?<![\w./-])ballctl ([a-z][a-z-]*)(?=\s|$)")
_PLACEHOLDER = re.compile(r"[\[\]|<>…]|\.\.\.|\b[A-Z][A-Z0-9_]*\b")
ALWAYS = {"--help", "--version"}


def _with_fast_flags(command: str) -> str:
    for head, flags in FAST.items():
        if re.match(rf"{re.escape(head)}(\s|$)", command) and flags[0] not in command.split():
            command = f"{command} {shlex.join(flags)}"
    return command


def run_session(block, folder) -> list[str]:
    """Run the block's command lines in order in ``folder`` (an empty one); what went wrong."""
    for tree in ("examples", "benchmarks"):
        os.symlink(ROOT / tree, folder / tree)
    problems = []
    for c in (c for c in command_lines(block.page) if c.block == block):
        if not c.to_run:
            continue
        command = " && ".join(_with_fast_flags(part) for part in re.split(r"\s&&\s", c.to_run))
        run = subprocess.run(command, shell=True, executable="/bin/bash", cwd=folder, env=environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if run.returncode != c.status:
            problems.append(f"{c.where}: `{command}` ended with status {run.returncode}, the page says {c.status}:\n"
                            f"{run.stdout[-3000:]}")
            break       # the session's later commands need this one
        if c.output is not None:
            difference = compare_output(c.output, run.stdout)
            if difference:
                problems.append(f"{c.where}: `{command}` does not print what the page shows: {difference}")
    return problems


Prefetch.register("test_the_command_lines_run", "block", run_session, key=lambda b: b.where)


@pytest.mark.slow
@pytest.mark.parametrize("block", SESSIONS, ids=lambda b: b.where)
def test_the_command_lines_run(block, request):
    problems = Prefetch.result(request, "test_the_command_lines_run", block)
    assert not problems, "\n\n".join(problems)


def test_the_commands_are_found():
    """The extraction sees the pages' commands (a change of their markup must not silently run nothing)."""
    ballctl = [p for c in COMMAND_LINES for p in c.parts if kind_of(p) == "ballctl"]
    assert len(ballctl) >= 8 and any(p.startswith("ballctl track") for p in ballctl)
    assert len(SESSIONS) >= 4
    for pattern, reason in NOT_RUN.items():
        assert any(re.match(pattern, p) for c in COMMAND_LINES for p in c.parts), \
            f"no page has a command {pattern!r} any more ({reason}): remove it from NOT_RUN"
    for head in FAST:
        assert any(p.startswith(head) for c in COMMAND_LINES for p in c.parts), f"no command {head!r}: drop it"


# ------------------------------------------------------------------------------------------------ inline commands
def _spans_by_paragraph(page):
    """``[(section heading, [code spans of one paragraph])]`` of the page's prose (a table row is a paragraph)."""
    section, out = "", []
    for para in re.split(r"\n[ \t]*\n", prose(page)):
        rows = para.splitlines()
        if rows and rows[0].startswith("#"):
            section = rows[0]
        pieces = rows if rows and all(r.lstrip().startswith("|") for r in rows) else [para]
        out.extend((section, code_spans(piece)) for piece in pieces)
    return out


def _named(spans) -> set[str]:
    """The ballctl commands (``"track"``) and scripts (``"examples/x.py"``) a list of code spans names."""
    return {m for s in spans for m in _BALLCTL.findall(s) + _SCRIPT.findall(s)}


INLINE = [(page, s) for page in PAGES for _, spans in _spans_by_paragraph(page) for s in spans
          if _BALLCTL.match(s) or _SCRIPT.search(s)]


def test_inline_commands_name_what_exists():
    names = {c.NAME for c in COMMANDS}
    problems = []
    for page, span in INLINE:
        for command in _BALLCTL.findall(span):
            if command not in names:
                problems.append(f"{page_id(page)}: `{span}`: ballctl has no command {command!r}")
        for script in _SCRIPT.findall(span):
            if not (ROOT / script).is_file():
                problems.append(f"{page_id(page)}: `{span}`: there is no {script}")
    assert INLINE and not problems, "\n".join(problems)


def test_complete_inline_ballctl_commands_parse():
    """An inline ballctl command without placeholders is a command line ballctl accepts as written."""
    checked, problems = 0, []
    for page, span in INLINE:
        if not span.startswith("ballctl ") or _PLACEHOLDER.search(span):
            continue
        argv = shlex.split(span)[1:]
        if argv[0] not in {c.NAME for c in COMMANDS}:
            continue
        checked += 1
        try:
            try:
                build_parser().parse_args(argv)
            except Exception as exc:
                # `ballctl track --feedback` names the flag of a command: its value is the prose's business
                if not (argv[-1].startswith("--") and "expected one argument" in str(exc)):
                    raise
                build_parser().parse_args(argv[:-1])
        except (Exception, SystemExit) as exc:   # the parser raises a one-line usage error
            problems.append(f"{page_id(page)}: `{span}`: {exc}")
    assert checked >= 10 and not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ flags
def _ballctl_flags() -> dict[str, set[str]]:
    """The flags in the ``--help`` of every ballctl command (as ``ballctl COMMAND --help`` prints it)."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    return {name: set(_FLAG.findall(sub.format_help())) | ALWAYS for name, sub in subparsers.choices.items()}


def _script_flags(script: str) -> set[str]:
    """The flags a script's ``--help`` lists: the option strings of its ``add_argument`` calls (read from its
    source, so that the check need not import what the script imports)."""
    tree = ast.parse((ROOT / script).read_text(encoding="utf-8"))
    return {arg.value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "add_argument"
            for arg in node.args if isinstance(arg, ast.Constant) and str(arg.value).startswith("--")} | ALWAYS


def _mentions(pages=PAGES):
    """``(where, flag, names)``: every flag of the pages with the commands and scripts it may belong to."""
    every = {c.NAME for c in COMMANDS}
    found = []
    for c in (c for page in pages for c in command_lines(page)):
        for part in c.parts:
            if kind_of(part) == "ballctl" and _named([part]):
                found.extend((c.where, f, _named([part])) for f in _FLAG.findall(part))
    for page in pages:
        sections: dict[str, set] = {}
        for section, spans in _spans_by_paragraph(page):
            sections.setdefault(section, set()).update(_named(spans))
        for section, spans in _spans_by_paragraph(page):
            for span in spans:
                if span.startswith(("pip ", "python -m ", "gcc ")):     # other tools' flags
                    continue
                named = _named([span]) or _named(spans) or sections[section] or every
                found.extend((page_id(page), f, named) for f in _FLAG.findall(span))
    return found


def _problems(mentions, flags: dict[str, set]) -> list[str]:
    return [f"{where}: {flag} is in the --help of none of {sorted(named)}" for where, flag, named in mentions
            if not any(flag in flags.get(n, ()) for n in named)]


def test_every_flag_the_pages_name_is_in_the_help_of_its_ballctl_command():
    flags = _ballctl_flags()
    mentions = [m for m in _mentions() if not any(n.endswith(".py") for n in m[2])]
    assert len(mentions) > 100
    problems = _problems(mentions, flags)
    assert not problems, "flags the pages name that their command does not have:\n" + "\n".join(problems)


def test_every_flag_the_pages_name_for_a_script_is_in_its_help():
    mentions = [m for m in _mentions() if any(n.endswith(".py") for n in m[2])]
    scripts = sorted({n for _, _, named in mentions for n in named if n.endswith(".py")})
    assert scripts
    flags = {**_ballctl_flags(), **{s: _script_flags(s) for s in scripts}}
    problems = _problems(mentions, flags)
    assert not problems, "flags the pages name that their script does not have:\n" + "\n".join(problems)


def test_the_flag_check_catches_a_flag_no_command_has(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("## Section\n\nRun `ballctl track --max-tilt-deg 10`, or `ballctl partitions` with `--rig lab`.\n"
                    "\n| `ballctl identify` | `--excitation FILE.csv` and `--robust-runs` |\n"
                    "| `ballctl identify` | `--excitation FILE.csv`, `ballctl track --rig` and `--robust-runs` |\n"
                    "\n## Other\n\nA paragraph with no command: `--robust-runs`, `--no-such-flag`.\n")
    problems = _problems(_mentions([page]), _ballctl_flags())
    assert [p.split(" is ")[0] for p in problems] == ["page.md: --max-tilt-deg", "page.md: --robust-runs",
                                                       "page.md: --no-such-flag"], problems
