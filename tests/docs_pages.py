"""The documentation pages read as programs: fenced blocks, output blocks, command lines, inline code.

Shared by ``tests/test_docs_code.py`` (the pages' code, run page by page), ``tests/test_docs_commands.py``
(the command lines of the pages) and ``tests/test_docs_records.py`` (the measurement records). The conventions
the pages follow, and these tests check:

* **Every fence names its language.** ```` ```python ```` runs; ```` ```bash ````, ```` ```shell ```` and
  ```` ```console ```` hold command lines, which run; ```` ```text ```` is *output* (below); other literal text
  (a diagram, a file layout with placeholders, a sample message) is ```` ```none ````, and code that is shown
  but not run has its own language (```` ```c ````, ```` ```toml ````).
* **A ```` ```text ```` block directly after a ```` ```python ```` block** (only blank lines between) is what
  that block prints; a ```` ```text ```` block anywhere else is an error.
* **A ```` ```console ```` block is a terminal session**: a line ``$ command`` is a command (a trailing
  ``\\`` continues it), the lines after it, up to the next ``$``, are what it prints (stdout and stderr, as a
  terminal shows them). ```` ```bash ```` / ```` ```shell ```` blocks show commands only (every line not a
  comment is one, a trailing ``# comment`` is dropped). ``# exit status N`` at the end of a command says that
  it ends with status N (default 0).
* **A file the page's code needs** is a ```` ```{code-block} LANG ```` directive with ``:caption: NAME``:
  it is written to ``NAME`` in the page's folder when the run reaches it (e.g. the C program of the
  gain-schedule tutorial, which a ```` ```console ```` block then compiles and runs).
* **In an output**, ``...`` stands for any text (doctest's ELLIPSIS), whitespace is normalized, words must be
  equal and numbers must agree to two significant digits (:func:`compare_output`).
* **A measurement record** (:func:`records`) is what a command printed on one machine on one day, kept on the
  page because it takes minutes or its numbers are the machine's: a paragraph that starts with
  ``**Measurement record** (YYYY-MM-DD, ...)`` and names the commands that regenerate it in code spans, and the
  table right after it (:func:`tables`). ``tests/test_docs_records.py`` checks the commands and recomputes the
  entries that are not timings; a record without a table holds timings only and says so in its label.

``python tests/docs_pages.py PAGE...`` runs pages and rewrites their output blocks from the run
(:func:`update_outputs`): after a change of the code, paste nothing by hand.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def doc_pages() -> list[pathlib.Path]:
    """README.md and every Markdown page of ``docs/`` (not the build output nor the generated gallery)."""
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in pages if "_build" not in p.parts and "auto_examples" not in p.parts]


def page_id(page: pathlib.Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


# ------------------------------------------------------------------------------------------------ fenced blocks
@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: pathlib.Path
    line: int                   # line of the opening fence, 1-based
    body_line: int              # line of the body's first row
    end_line: int               # line of the closing fence
    lang: str                   # the info string's first word: "python", "text", "{code-block}", ...
    argument: str               # the rest of the info string (a directive's argument)
    options: dict               # a directive's ``:key: value`` options
    body: str

    @property
    def where(self) -> str:
        return f"{page_id(self.page)}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """The file a ``{code-block}`` with a ``:caption:`` stands for (written before later blocks run)."""
        if self.lang == "{code-block}":
            return self.options.get("caption")
        return None


_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def blocks(page: pathlib.Path) -> list[Block]:
    """The page's fenced blocks, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        info = m.group("info").strip()
        lang, _, argument = info.partition(" ")
        body, j = [], i + 1
        while j < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        options: dict = {}
        first = i + 2
        if lang.startswith("{"):
            while body and re.match(r"^:[\w-]+:", body[0]):
                key, _, value = body.pop(0)[1:].partition(":")
                options[key] = value.strip()
                first += 1
            while body and not body[0].strip():
                body.pop(0)
                first += 1
        found.append(Block(page, i + 1, first, j + 1, lang.lower(), argument.strip(), options,
                           "\n".join(body) + ("\n" if body else "")))
        i = j + 1
    return found


def prose(page: pathlib.Path) -> str:
    """The page without its fenced blocks (each replaced by a blank line, so paragraphs stay apart)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, inside, fence = [], False, ""
    for line in lines:
        m = _OPEN.match(line)
        if not inside and m:
            inside, fence = True, m.group("fence")
            out.append("")
            continue
        if inside:
            if re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", line):
                inside = False
            continue
        out.append(line)
    return "\n".join(out)


def code_spans(text: str) -> list[str]:
    """The inline code spans of a piece of prose (a span may wrap over lines: its whitespace is normalized)."""
    return [" ".join(m.group(1).split()) for m in re.finditer(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)*)`(?!`)", text)]


# ------------------------------------------------------------------------------------------------ tables, records
def _split_cells(row: str) -> tuple[str, ...]:
    r"""The cells of a Markdown table row (``\|`` and a ``|`` inside a code span do not split)."""
    cells, current, code = [], [], False
    text = row.strip()
    text = text[1:] if text.startswith("|") else text
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if c == "`":
            code = not code
        if c == "|" and not code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(c)
        i += 1
    if "".join(current).strip():
        cells.append("".join(current).strip())
    return tuple(cells)


@dataclasses.dataclass(frozen=True)
class Table:
    """A Markdown table of a page's prose."""

    page: pathlib.Path
    line: int                           # line of the header row, 1-based
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]   # the body rows (the ``|---|`` rule left out)
    caption: str                        # the paragraph right before the table ("" when there is none)

    @property
    def where(self) -> str:
        return f"{page_id(self.page)}:{self.line}"

    def column(self, name: str) -> int:
        """Index of the column whose header starts with ``name``."""
        found = [i for i, h in enumerate(self.header) if h.startswith(name)]
        if len(found) != 1:
            raise KeyError(f"{self.where}: no single column {name!r} in {self.header}")
        return found[0]

    def row(self, label: str) -> tuple[str, ...]:
        """The row whose first cell is ``label``."""
        found = [r for r in self.rows if r and r[0] == label]
        if len(found) != 1:
            raise KeyError(f"{self.where}: no single row {label!r} in {[r[0] for r in self.rows]}")
        return found[0]


def _items(page: pathlib.Path) -> list[tuple[str, int, object]]:
    """The page outside its fenced blocks, in order: ``("text", line, paragraph)``, ``("table", line, rows)``,
    ``("fence", line, Block)`` and ``("blank", line, "")`` items (a table row is a line starting with ``|``)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    fences = {b.line: b for b in blocks(page)}
    items: list = []
    i = 0
    while i < len(lines):
        if i + 1 in fences:
            items.append(("fence", i + 1, fences[i + 1]))
            i = fences[i + 1].end_line
            continue
        line = lines[i]
        if not line.strip():
            items.append(("blank", i + 1, ""))
        elif line.lstrip().startswith("|"):
            if items and items[-1][0] == "table":
                items[-1][2].append(line)
            else:
                items.append(("table", i + 1, [line]))
        elif items and items[-1][0] == "text":
            kind, first, text = items[-1]
            items[-1] = (kind, first, text + "\n" + line)
        else:
            items.append(("text", i + 1, line))
        i += 1
    return items


def tables(page: pathlib.Path) -> list[Table]:
    """The Markdown tables of the page's prose, each with the paragraph right before it as its caption."""
    items, found = _items(page), []
    for k, (kind, line, rows) in enumerate(items):
        if kind != "table":
            continue
        before = [it for it in items[:k] if it[0] != "blank"]
        caption = before[-1][2] if before and before[-1][0] == "text" else ""
        cells = [_split_cells(r) for r in rows]
        body = tuple(c for c in cells[1:] if not all(re.fullmatch(r":?-{3,}:?", x) for x in c))
        found.append(Table(page, line, cells[0], body, caption))
    return found


#: the label of a measurement record: a paragraph that starts with it, then the date of the measurement
RECORD_LABEL = re.compile(r"^\*\*Measurement record\*\* \((?P<date>\d{4}-\d{2}-\d{2})\b")


@dataclasses.dataclass(frozen=True)
class Record:
    """A measurement record: numbers a command printed on one machine on one day, which the page keeps.

    The paragraph that introduces it starts with ``**Measurement record** (YYYY-MM-DD, ...)`` and names, in code
    spans, the command lines that regenerate it; the record is that paragraph and the table right after it (or the
    first table of the file a ```{include} right after it includes), if any. ``tests/test_docs_records.py`` checks
    that the commands exist and parse, and recomputes the record's entries that are not timings.
    """

    page: pathlib.Path
    line: int
    date: str
    text: str                   # the introducing paragraph
    table: Table | None

    @property
    def where(self) -> str:
        return f"{page_id(self.page)}:{self.line}"

    @property
    def commands(self) -> list[str]:
        """The command lines of ballctl's (the CLI, an example, a benchmark) the paragraph names."""
        return [s for s in code_spans(self.text) if kind_of(s) == "ballctl"]


def records(page: pathlib.Path) -> list[Record]:
    """The page's measurement records, in order."""
    items = [it for it in _items(page) if it[0] != "blank"]
    page_tables = {t.line: t for t in tables(page)}
    found = []
    for k, (kind, line, text) in enumerate(items):
        if kind != "text":
            continue
        m = RECORD_LABEL.match(text)
        if not m:
            continue
        table = None
        if k + 1 < len(items) and items[k + 1][0] == "table":
            table = page_tables[items[k + 1][1]]
        elif k + 1 < len(items) and items[k + 1][0] == "fence" and items[k + 1][2].lang == "{include}":
            included = (page.parent / items[k + 1][2].argument).resolve()
            table = (tables(included) or [None])[0]
        found.append(Record(page, line, m.group("date"), text, table))
    return found


# ------------------------------------------------------------------------------------------------ outputs
def outputs(page: pathlib.Path) -> dict[int, Block]:
    """``{index of a python block in blocks(page): the text block right after it, its printed output}``."""
    page_blocks, lines = blocks(page), page.read_text(encoding="utf-8").splitlines()
    out = {}
    for k, (a, b) in enumerate(zip(page_blocks, page_blocks[1:])):
        if a.lang == "python" and b.lang == "text" and not "".join(lines[a.end_line:b.line - 1]).strip():
            out[k] = b
    return out


#: numbers below this in magnitude are rounding (of quantities of order one): any two of them agree
ROUNDING = 1e-13

_NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
_TOKEN = re.compile(rf"(?P<ellipsis>\s*\.\.\.\s*)|(?P<number>{_NUMBER})|(?P<space>\s+)|(?P<other>.)", re.S)


def _agree(expected: str, actual: str) -> bool:
    """Two printed numbers agree: integers exactly; others to two significant digits.

    Two significant digits: ``|a - e| <= max(10**(floor(log10 |e|) - 1), one unit in e's last printed
    digit)``, so ``1.4e-04`` accepts 1.3e-04 to 1.5e-04 (BLAS, threads and the compiler move the last
    digits of the pages' numbers; a stale number is off by far more). Two numbers both below
    :data:`ROUNDING` in magnitude agree: they are rounding errors (a Gramian's null eigenvalue, a residual),
    whose digits only the floating-point details decide.
    """
    if not re.search(r"[.eE]", expected):
        return int(expected) == int(float(actual)) if re.fullmatch(r"[-+]?\d+", actual) else False
    e, a = float(expected), float(actual)
    if abs(e) < ROUNDING and abs(a) < ROUNDING:
        return True
    mantissa, _, exponent = expected.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    unit = 10.0 ** (int(exponent or 0) - decimals)
    digits = 10.0 ** (math.floor(math.log10(abs(e))) - 1) if e else 0.0
    return abs(a - e) <= max(unit, digits) * (1 + 1e-9)


def compare_output(expected: str, actual: str) -> str | None:
    """None when ``actual`` is what ``expected`` shows, else a description of the difference.

    Whitespace is normalized, ``...`` matches any text, every other character must be equal, and numbers
    agree to two significant digits (:func:`_agree`).
    """
    pattern, numbers = [], []
    for m in _TOKEN.finditer(" ".join(expected.split())):
        if m.group("ellipsis") is not None:
            pattern.append(r".*?")
        elif m.group("number") is not None:
            pattern.append(f"({_NUMBER})")
            numbers.append(m.group("number"))
        elif m.group("space") is not None:
            pattern.append(r"\s+")
        else:
            pattern.append(re.escape(m.group("other")))
    shown = " ".join(actual.split())
    match = re.fullmatch("".join(pattern), shown, flags=re.S)
    diff = "\n".join(difflib.unified_diff(expected.strip().splitlines(), actual.strip().splitlines(),
                                          "on the page", "printed", lineterm="", n=1))
    if match is None:
        return f"the output differs in its text:\n{diff}"
    wrong = [f"{e} (page) vs {a} (printed)" for e, a in zip(numbers, match.groups()) if not _agree(e, a)]
    if wrong:
        return "numbers differ beyond two significant digits: " + "; ".join(wrong) + f"\n{diff}"
    return None


# ------------------------------------------------------------------------------------------------ command lines
COMMAND_LANGS = ("bash", "shell", "sh", "console")


@dataclasses.dataclass(frozen=True)
class CommandLine:
    """One command line of a ```bash/```shell/```console block."""

    block: Block
    line: int             # line on the page
    text: str             # the command line as shown (continuations joined, trailing comment dropped)
    status: int           # the exit status the page says (``# exit status N``), default 0
    output: str | None    # what a console block shows it printing (None: bash/shell, nothing shown)

    @property
    def where(self) -> str:
        return f"{page_id(self.block.page)}:{self.line}"

    @property
    def parts(self) -> list[str]:
        """The commands of an ``a && b && c`` chain."""
        return [p.strip() for p in re.split(r"\s&&\s", self.text) if p.strip()]

    @property
    def to_run(self) -> str:
        """The chain without its parts that are not run (:data:`NOT_RUN`); empty when nothing is left."""
        return " && ".join(p for p in self.parts if kind_of(p) != "not run")


def _strip_comment(line: str) -> tuple[str, int]:
    """A command line without its trailing ``# comment``, and the exit status the comment states."""
    status = 0
    m = re.search(r"#\s*exit status (\d+)", line)
    if m:
        status = int(m.group(1))
    cut, quote = len(line), None     # the first '#' outside quotes that starts a word begins the comment
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            cut = i
            break
    return line[:cut].rstrip(), status


def command_lines(page: pathlib.Path) -> list[CommandLine]:
    """Every command line of the page's ```bash, ```shell and ```console blocks, in order."""
    found = []
    for b in blocks(page):
        if b.lang not in COMMAND_LANGS:
            continue
        console = b.lang == "console"
        rows = b.body.splitlines()
        i = 0
        while i < len(rows):
            row = rows[i]
            if console and not row.startswith("$ "):
                i += 1          # output before the first prompt cannot occur (checked by a test)
                continue
            text = row[2:] if console else row
            start = i
            while text.rstrip().endswith("\\") and i + 1 < len(rows):
                i += 1
                text = text.rstrip()[:-1] + " " + rows[i].strip()
            i += 1
            command, status = _strip_comment(text.strip())
            if not command:
                continue
            output = None
            if console:
                shown = []
                while i < len(rows) and not rows[i].startswith("$ "):
                    shown.append(rows[i])
                    i += 1
                output = "\n".join(shown)
            found.append(CommandLine(b, b.body_line + start, command, status, output))
    return found


#: commands of the pages that no test runs, with the reason (matched against each part of an ``&&`` chain)
NOT_RUN = {
    r"python3? -m venv\b": "creates a virtual environment: the tests run in one already",
    r"(?:\.|source) \S*activate$": "activates that environment",
    r"pip install\b": "installs the package: the tests run the installed one",
    r"python3? -m pytest\b": "the test suite itself (CI runs it)",
    r"python3? -m sphinx\b": "the documentation build (CI runs it as written, tests/test_docs.py checks that it does)",
}

#: a command of ballctl's own: the CLI, an example or a benchmark (``VAR=value`` assignments may come first)
_OWN = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:ballctl(?:\s|$)|python3? (?:examples|benchmarks)/)")


def kind_of(command: str) -> str:
    """``"not run"`` (:data:`NOT_RUN`), ``"ballctl"`` (the CLI, an example, a benchmark) or ``"other"``."""
    if any(re.match(p, command) for p in NOT_RUN):
        return "not run"
    return "ballctl" if _OWN.match(command) else "other"


def is_ballctl_session(block: Block) -> bool:
    """A command block with a ballctl command in it: tests/test_docs_commands.py runs it, as one session in an
    empty folder (its other commands too, in order). The other command blocks (e.g. the C compiler on the
    files a page's code wrote) belong to the page's run (tests/test_docs_code.py, in the page's folder)."""
    return any(kind_of(part) == "ballctl" for c in command_lines(block.page) if c.block == block for part in c.parts)


# ------------------------------------------------------------------------------------------------ running a page
def page_steps(page: pathlib.Path) -> list[dict]:
    """The page as a program, in order: its python blocks, its files, its commands of other tools."""
    steps = []
    for k, b in enumerate(blocks(page)):
        if b.lang == "python":
            steps.append({"kind": "python", "block": k, "where": b.where, "line": b.body_line, "code": b.body})
        elif b.file_name:
            steps.append({"kind": "file", "block": k, "where": b.where, "name": b.file_name, "code": b.body})
    for c in command_lines(page):
        if not is_ballctl_session(c.block) and c.to_run:
            k = blocks(page).index(c.block)
            steps.append({"kind": "shell", "block": k, "where": c.where, "line": c.line, "code": c.to_run,
                          "status": c.status, "output": c.output})
    return sorted(steps, key=lambda s: (s["block"], s.get("line", 0)))


MARKER = "\x1e--- docs step {} ---\x1e"

DRIVER = """\
import json, subprocess, sys, time
import matplotlib
matplotlib.use("Agg")
steps = json.load(open(sys.argv[1], encoding="utf-8"))
namespace = {"__name__": "__main__"}
times = []
for i, step in enumerate(steps):
    print(MARKER.format(i), flush=True)
    start = time.perf_counter()
    if step["kind"] == "python":
        code = "\\n" * (step["line"] - 1) + step["code"]          # tracebacks give the page's line numbers
        exec(compile(code, step["where"].split(":")[0], "exec"), namespace)
    elif step["kind"] == "file":
        with open(step["name"], "w", encoding="utf-8") as f:
            f.write(step["code"])
    else:
        run = subprocess.run(step["code"], shell=True, executable="/bin/bash", stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        print(run.stdout, end="", flush=True)
        if run.returncode != step["status"]:
            sys.exit(f"{step['where']}: `{step['code']}` ended with status {run.returncode}, the page says "
                     f"{step['status']}")
    sys.stdout.flush()
    times.append(time.perf_counter() - start)
    json.dump(times, open(".times.json", "w"))
print(MARKER.format(len(steps)), flush=True)
""".replace("MARKER", repr(MARKER))


@dataclasses.dataclass(frozen=True)
class PageRun:
    steps: list
    seconds: list          # wall time of each step reached
    returncode: int
    printed: list          # what each step printed (the steps not reached: None)
    stderr: str


def environment() -> dict:
    """The environment the pages' code and commands run in: one BLAS thread (as the CLI and the tests),
    no figure windows, unbuffered output (stdout and stderr interleave as on a terminal), wide help texts."""
    import os
    import sys

    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               PYTHONUNBUFFERED="1", COLUMNS="200")
    env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_page(page: pathlib.Path, folder: pathlib.Path, timeout: float = 600) -> PageRun:
    """Run the page's steps in order, in one Python process, in ``folder`` (an empty one)."""
    import json
    import subprocess
    import sys

    steps = page_steps(page)
    (folder / ".steps.json").write_text(json.dumps(steps), encoding="utf-8")
    (folder / ".driver.py").write_text(DRIVER, encoding="utf-8")
    run = subprocess.run([sys.executable, ".driver.py", ".steps.json"], cwd=folder, capture_output=True,
                         text=True, timeout=timeout, env=environment())
    pieces = re.split(r"\x1e--- docs step (\d+) ---\x1e\n", run.stdout)
    printed: list = [None] * len(steps)
    for index, text in zip(pieces[1::2], pieces[2::2]):
        if int(index) < len(steps):
            printed[int(index)] = text
    times = folder / ".times.json"
    seconds = json.loads(times.read_text()) if times.exists() else []
    return PageRun(steps, seconds, run.returncode, printed, run.stderr)


def update_outputs(page: pathlib.Path, folder: pathlib.Path) -> list[str]:
    """Rewrite the page's output blocks from a run (``python tests/docs_pages.py PAGE...``); returns what changed.

    A block whose words differ from the run's at all is rewritten with the run's output, except one with
    ``...`` in it (its elisions are the author's): that one is only reported when it no longer matches.
    """
    run = run_page(page, folder)
    if run.returncode:
        raise RuntimeError(f"{page_id(page)} failed:\n{run.stderr[-3000:]}")
    shown = outputs(page)
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    changed, edits = [], []
    for step, printed in zip(run.steps, run.printed):
        block = shown.get(step["block"]) if step["kind"] == "python" else None
        if block is None or printed is None or block.body.split() == printed.split():
            continue
        if "..." in block.body:
            if compare_output(block.body, printed) is not None:
                changed.append(f"{block.where}: differs, has '...': edit it by hand")
            continue
        edits.append((block.body_line - 1, block.end_line - 1, printed))
        changed.append(f"{block.where}: rewritten")
    for start, end, printed in sorted(edits, reverse=True):
        lines[start:end] = [printed if printed.endswith("\n") else printed + "\n"]
    page.write_text("".join(lines), encoding="utf-8")
    return changed


if __name__ == "__main__":
    import sys
    import tempfile

    for name in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as tmp:
            for message in update_outputs(pathlib.Path(name).resolve(), pathlib.Path(tmp)) or ["up to date"]:
                print(f"{name}: {message}")


# ------------------------------------------------------------------------------------------------ two at a time
class Prefetch:
    """The slow docs runs, two at a time: each is a subprocess, so two of them use both cores of the machine.

    Each test module registers its job at import, ``Prefetch.register(test name, argname, job)`` with
    ``job(value, folder)``. The first test that asks for a result starts the jobs of every test the session will
    run (``-k`` and ``-m`` respected; the pages' runs and the command sessions together), longest first by the
    durations the pytest cache keeps, each in an empty folder of its own, on ``WORKERS`` threads; each test then
    waits for its own. Under pytest-xdist the workers already share the cores: there the jobs run one by one in
    their tests.
    """

    WORKERS = 2
    jobs: dict = {}             # test name -> (argname, job, key)
    _futures: dict | None = None
    _seconds: dict = {}
    _base = None

    @classmethod
    def register(cls, test_name: str, argname: str, job, key=str):
        cls.jobs[test_name] = (argname, job, key)

    @classmethod
    def result(cls, request, test_name: str, value):
        argname, job, key = cls.jobs[test_name]
        if cls._futures is None:
            cls._start(request)
        future = cls._futures.pop((test_name, key(value)), None)
        if future is not None:
            return future.result()
        return cls._run(request.config, test_name, job, value, key)

    @classmethod
    def _run(cls, config, test_name, job, value, key):
        import tempfile
        import time

        folder = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=cls._base))
        start = time.perf_counter()
        try:
            return job(value, folder)
        finally:
            cls._seconds[f"{test_name}::{key(value)}"] = round(time.perf_counter() - start, 1)

    @classmethod
    def _start(cls, request):
        from concurrent.futures import ThreadPoolExecutor

        config = request.config
        cache = getattr(config, "cache", None)
        cls._seconds = cache.get("docs_pages/seconds", {}) if cache else {}
        cls._base = request.getfixturevalue("tmp_path_factory").mktemp("docs")
        cls._futures = {}
        if cache:
            config.add_cleanup(lambda: cache.set("docs_pages/seconds", cls._seconds))
        if hasattr(config, "workerinput"):       # a pytest-xdist worker
            return
        todo = []
        for item in request.session.items:
            name = getattr(item, "originalname", None)
            if name in cls.jobs and hasattr(item, "callspec"):
                argname, job, key = cls.jobs[name]
                value = item.callspec.params[argname]
                todo.append((-cls._seconds.get(f"{name}::{key(value)}", 0.0), name, job, value, key))
        pool = ThreadPoolExecutor(max_workers=cls.WORKERS)
        for _, name, job, value, key in sorted(todo, key=lambda t: t[0]):
            cls._futures[(name, key(value))] = pool.submit(cls._run, config, name, job, value, key)

        def close():
            for future in cls._futures.values():
                future.cancel()
            pool.shutdown(wait=True)
        config.add_cleanup(close)
