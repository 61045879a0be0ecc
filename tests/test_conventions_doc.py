"""``docs/conventions.md`` agrees with the code.

* every dotted ``ballctl.…`` name in backquotes resolves (a module, an attribute, a dataclass field or an
  attribute a class sets on its instances);
* every call the page writes in backquotes, ``name(...)``, that resolves to ballctl matches its signature:
  the keywords exist and the arguments bind; a call written as a signature (with a bare ``*``) names the
  positional parameters in order, puts the keyword-only ones after the star and states their literal defaults
  as they are, and names every parameter (unless it ends with ``...``); every row of the table of options is
  such a signature; a call with keywords to a name that is neither ballctl's nor numpy's/python-control's fails;
* every CLI flag ``--xxx`` the page mentions exists in a subcommand's parser (in the one the code span names,
  when it names one: ``ballctl track --feedback``), and every ``ballctl <command>`` it names exists;
* every public dataclass is frozen (the page says results are);
* the page's python code blocks run, in order, in one namespace, in a temporary directory.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re
import types
from pathlib import Path

import pytest

import ballctl
from ballctl.cli import COMMANDS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "conventions.md"
TEXT = PAGE.read_text(encoding="utf-8")

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
BLOCKS = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(TEXT)]
PYTHON_BLOCKS = [code for lang, code in BLOCKS if lang in ("python", "py", "python3")]
PROSE = _FENCE.sub("", TEXT)
#: inline code spans (a span may wrap over lines; its whitespace is normalized)
SPANS = [" ".join(m.group(1).split()) for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", PROSE)]

#: call heads that are not ballctl's (calls to them are not checked)
FOREIGN = ("np", "numpy", "scipy", "control", "solve_ivp", "math", "json", "matplotlib", "plt")

_DOTTED = re.compile(r"(?<![\w.])ballctl(?:\.[A-Za-z_]\w*)+")
_CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_COMMAND = re.compile(r"(?<![\w.])ballctl ([a-z][a-z0-9-]*)")
_KEYWORD = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)\s*(.*)$", re.DOTALL)

_MISSING = object()
_INSTANCE_ATTRIBUTE = object()   # a name that exists on instances only (dataclass field, annotation, self.x = ...)


# ------------------------------------------------------------------------------------------------ resolving names
def _member(obj, name: str):
    """``obj.name``; for a class also a dataclass field, an annotation or an attribute ``__init__`` sets."""
    if obj is _INSTANCE_ATTRIBUTE:
        return _MISSING
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    if not inspect.isclass(obj):
        return _MISSING
    if dataclasses.is_dataclass(obj) and name in {f.name for f in dataclasses.fields(obj)}:
        return _INSTANCE_ATTRIBUTE
    for klass in obj.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return _INSTANCE_ATTRIBUTE
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{name}\s*(?::[^=\n]+)?=(?!=)", source):
            return _INSTANCE_ATTRIBUTE
    return _MISSING


def resolve(dotted: str):
    """The object a dotted ``ballctl.…`` name denotes, and whether calling it through its class needs ``self``.

    Attributes are looked up first (``ballctl.simulate`` is the function), then modules
    (``ballctl.simulate.SimulationOptions`` is found in the module of that name).

    Raises
    ------
    LookupError
        When a part does not exist.
    """
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    needs_self = False
    for i, part in enumerate(parts[1:], start=1):
        value = _member(obj, part)
        if value is _MISSING:
            try:
                value = _member(importlib.import_module(".".join(parts[:i])), part)
            except ImportError:
                pass
        if value is _MISSING:
            try:
                value = importlib.import_module(".".join(parts[:i + 1]))
            except ImportError:
                raise LookupError(f"{'.'.join(parts[:i])} has no {part!r}") from None
        needs_self = inspect.isclass(obj) and isinstance(inspect.getattr_static(obj, part, None), types.FunctionType)
        obj = value
    return obj, needs_self


def _public_modules() -> list[str]:
    return ["ballctl"] + sorted(m.name for m in pkgutil.walk_packages(ballctl.__path__, "ballctl.")
                                if not any(part.startswith("_") for part in m.name.split(".")))


@functools.lru_cache(maxsize=None)
def _registry() -> dict[str, list]:
    """Public names of every public ballctl module (``__all__``), short name -> the distinct objects."""
    names: dict[str, list] = {}
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not any(o is obj for o in names.setdefault(name, [])):
                names[name].append(obj)
    return names



def _candidates(name: str) -> list[tuple[object, bool]]:
    """What a call head denotes in ballctl: ``[(callable, needs_self)]``; empty when it is not ballctl's."""
    parts = name.split(".")
    if parts[0] == "ballctl":
        return [resolve(name)]
    found = []
    for head in _registry().get(parts[0], ()):
        obj, needs_self = head, False
        for part in parts[1:]:
            value = _member(obj, part)
            needs_self = inspect.isclass(obj) and isinstance(inspect.getattr_static(obj, part, None),
                                                             types.FunctionType)
            obj = value
            if obj is _MISSING:
                break
        if obj is not _MISSING:
            found.append((obj, needs_self))
    return found


# ------------------------------------------------------------------------------------------------ parsing calls
def _closing(text: str, start: int) -> int | None:
    """Index of the ``)`` closing the parenthesis opened just before ``start`` (None if it is not closed)."""
    depth, quote = 1, None
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _split(arguments: str) -> list[str]:
    """Top-level comma-separated pieces of an argument list."""
    pieces, depth, quote, current = [], 0, None, []
    for i, c in enumerate(arguments):
        if quote:
            if c == quote and arguments[i - 1] != "\\":
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    pieces.append("".join(current).strip())
    return [p for p in pieces if p]


@dataclasses.dataclass
class Call:
    name: str
    text: str
    positional: list[str]
    keywords: dict[str, str]
    open_ended: bool      # ``...`` or ``*args`` among the positionals: their number is not known
    signature: bool       # written as a signature (a bare ``*``)


def calls(code: str) -> list[Call]:
    """Every ``name(...)`` in a piece of code, nested ones included."""
    found = []
    for m in _CALL.finditer(code):
        end = _closing(code, m.end())
        if end is None:
            continue
        positional, keywords, open_ended, star = [], {}, False, False
        for piece in _split(code[m.end():end]):
            kw = _KEYWORD.match(piece)
            if piece == "*":
                star = True
            elif piece in ("...", "…"):
                open_ended = True
            elif piece.startswith("**"):
                pass
            elif piece.startswith("*"):
                open_ended = True
            elif kw:
                keywords[kw.group(1)] = kw.group(2).strip()
            elif star and piece.isidentifier():
                keywords[piece] = ""          # keyword-only without a default, as a signature writes it
            else:
                positional.append(piece)
        found.append(Call(m.group(1), code[m.start():end + 1], positional, keywords, open_ended, star))
    return found


def _signature_problems(call: Call, func, needs_self: bool) -> list[str]:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return [f"`{call.text}`: {call.name} has no signature to check against"]
    params = list(sig.parameters.values())
    if needs_self:
        params = params[1:]
        sig = sig.replace(parameters=params)
    problems = []
    try:
        if call.open_ended:
            sig.bind_partial(**dict.fromkeys(call.keywords))
        else:
            sig.bind_partial(*call.positional, **dict.fromkeys(call.keywords))
    except TypeError as exc:
        problems.append(f"`{call.text}` does not fit {call.name}{sig}: {exc}")
    if call.signature and not call.open_ended:
        written = set(call.positional) | set(call.keywords)
        missing = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in written]
        if missing:
            problems.append(f"`{call.text}` is written as the signature of {call.name}{sig} but leaves out {missing} "
                            "(end it with `...` if it shows a part)")
    if call.signature:
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if call.positional != positional[:len(call.positional)]:
            problems.append(f"`{call.text}`: the positional parameters of {call.name} are {positional}")
        for name, written in call.keywords.items():
            param = sig.parameters.get(name)
            if param is None:
                continue  # reported by the binding above
            if param.kind is not param.KEYWORD_ONLY:
                problems.append(f"`{call.text}`: {name} is not keyword-only in {call.name}{sig}")
            try:
                value = ast.literal_eval(written) if written else _MISSING
            except (ValueError, SyntaxError):
                continue  # not a literal (e.g. ``...``): nothing to compare
            actual = _MISSING if param.default is param.empty else param.default
            if value is not _MISSING and value != actual:
                problems.append(f"`{call.text}`: the default of {name} is {param.default!r}, not {written}")
    return problems


def _page_code() -> list[str]:
    return SPANS + [code for _, code in BLOCKS]


# ------------------------------------------------------------------------------------------------ CLI flags
def _flags(parser: argparse.ArgumentParser) -> set[str]:
    out: set[str] = set()
    for action in parser._actions:
        out.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _flags(sub)
    return out


def _command_flags() -> dict[str, set[str]]:
    """The long flags of every subcommand, built as ``ballctl.cli.build_parser`` builds them."""
    flags = {}
    for command in COMMANDS:
        parser = argparse.ArgumentParser(prog=f"ballctl {command.NAME}")
        command.add_arguments(parser)
        flags[command.NAME] = _flags(parser)
    return flags


# ------------------------------------------------------------------------------------------------ tests
def test_the_page_is_parsed():
    """The extraction sees the page (a change of its markup must not silently check nothing)."""
    assert len(SPANS) > 100
    assert any(_DOTTED.search(s) for s in SPANS)
    assert any(c.keywords for code in _page_code() for c in calls(code))
    assert _FLAG.search(PROSE)


def test_the_checks_catch_mistakes():
    """The call check rejects an unknown keyword, a keyword-only parameter given by position and a stale default."""
    wrong = ["ballctl.simulate_closed_loop(ctrl, x0, xd0, feedback='state')",
             "ballctl.discretize(ltv, dt, 'zoh')",
             "ballctl.finite_horizon_lqr(sys, Q, R, *, Q_N=0, cond_limit=1e12)",
             "ballctl.finite_horizon_lqr(sys, Q, R, *, Q_N=None)"]           # a signature that leaves one out
    for text in wrong:
        (call,) = [c for c in calls(text) if c.name.startswith("ballctl")]
        (func, needs_self), = _candidates(call.name)
        assert _signature_problems(call, func, needs_self), text
    with pytest.raises(LookupError):
        resolve("ballctl.ClosedLoopOptions.no_such_field")
    assert resolve("ballctl.SimulationResult.nfev")[0] is _INSTANCE_ATTRIBUTE    # a dataclass field


def test_every_signature_row_is_checked():
    """Each row of the options table writes its call as a signature (a bare ``*``) that resolves to the one
    ballctl callable it names, so that test_calls_match_the_signatures checks it whole."""
    table = TEXT.split("| call | its options |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    assert len(rows) >= 6
    for row in rows:
        cell = row.split(" | ")[0]
        heads = [c for span in re.findall(r"`([^`]+)`", cell) for c in calls(span) if c.name.startswith("ballctl.")]
        assert heads and heads[0].signature, f"the row does not write its call as a signature: {row[:100]}"
        assert len(_candidates(heads[0].name)) == 1, f"{heads[0].name} does not resolve to one callable"


def test_dotted_names_resolve():
    names = sorted({m.group(0) for span in SPANS for m in _DOTTED.finditer(span)})
    assert names
    problems = []
    for name in names:
        try:
            resolve(name)
        except LookupError as exc:
            problems.append(f"`{name}`: {exc}")
    assert not problems, "names in docs/conventions.md that do not exist:\n" + "\n".join(problems)


def test_calls_match_the_signatures():
    problems, checked = [], 0
    for code in _page_code():
        for call in calls(code):
            if call.name.split(".")[0] in FOREIGN:
                continue
            try:
                candidates = _candidates(call.name)
            except LookupError as exc:
                problems.append(f"`{call.text}`: {exc}")
                continue
            candidates = [(f, s) for f, s in candidates if callable(f) and f is not _INSTANCE_ATTRIBUTE]
            if not candidates:
                if call.keywords:
                    problems.append(f"`{call.text}` calls {call.name} with keywords, but it is no ballctl callable")
                continue
            checked += 1
            found = [_signature_problems(call, f, s) for f, s in candidates]
            if all(found):
                problems.extend(found[0])
    assert checked > 20
    assert not problems, "calls in docs/conventions.md that do not match the code:\n" + "\n".join(problems)


def test_cli_flags_exist():
    flags = _command_flags()
    every = set().union(*flags.values())
    problems = [f"{flag} is no flag of any subcommand" for flag in sorted(set(_FLAG.findall(TEXT)) - every)]
    for span in SPANS:
        named = [c for c in _COMMAND.findall(span)]
        problems += [f"`{span}`: ballctl has no command {c!r}" for c in named if c not in flags]
        named = [c for c in named if c in flags]
        if named:
            allowed = set().union(*(flags[c] for c in named))
            problems += [f"`{span}`: {flag} is no flag of ballctl {'/'.join(named)}"
                         for flag in _FLAG.findall(span) if flag not in allowed]
    assert not problems, "CLI flags in docs/conventions.md:\n" + "\n".join(problems)


def test_public_dataclasses_are_frozen():
    """The page says results (and options) are frozen dataclasses."""
    mutable = []
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__module__ == module_name
                    and not obj.__dataclass_params__.frozen):
                mutable.append(f"{module_name}.{name}")
    assert not mutable, f"public dataclasses that are not frozen: {mutable}"


@pytest.mark.skipif(not PYTHON_BLOCKS, reason="docs/conventions.md has no python code blocks")
def test_python_blocks_run(tmp_path, monkeypatch):
    """The blocks run in order in one namespace (kept fast: a couple of seconds together)."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "conventions_doc"}
    for i, code in enumerate(PYTHON_BLOCKS):
        exec(compile(code, f"{PAGE.name} (python block {i + 1})", "exec"), namespace)
