"""The measurement records of the pages, and the numbers of the prose that come from the code.

**A measurement record** is what a command printed on one machine on one day, kept on a page because running
it takes minutes or its numbers are the machine's (``docs_pages.Record``): a paragraph that starts with
``**Measurement record** (YYYY-MM-DD, ...)`` and names the commands that regenerate it in code spans, and the
table right after it (or the table of the file a ```{include} right after it includes). Here

* every record is dated and every command it names exists and parses with the program's own parser (the
  CLI's, or the ``argparse`` parser of the example or benchmark, stopped right after parsing), in the default
  run;
* every record's table is recomputed by a test below: the command runs again (``slow``; the runs go two at a
  time with the pages' runs, ``docs_pages.Prefetch``) and every entry that is not a timing is compared, words
  exactly and numbers to two significant digits (``docs_pages.compare_output``). A record without a table
  holds timings only (its label says so) and needs the command check alone; its ratios, measured in the same
  run, are what the page states for speed;
* every other table of the pages with numbers in it is either the printed output of a page's code (then it is
  no table of the prose) or listed in :data:`NOT_MEASURED` with the reason (e.g. the tolerances a named test
  asserts); a new table of measured numbers therefore fails here until it is executed or a record;
* the numbers the prose takes from the code (the presets, the CLI's defaults, the counts of the engine
  benchmark) are compared with the code.

A number that needs the ARM cross compiler (``arm-none-eabi-gcc``, ``qemu-system-arm``) is skipped with the
reason when the tools are absent.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest

from docs_pages import (ROOT, Prefetch, compare_output, doc_pages, environment, kind_of, page_id, records, tables)

PAGES = doc_pages()
RECORDS = [r for p in PAGES for r in records(p)]
MINUS = str.maketrans({"−": "-", "–": "-"})

#: the recomputed tables: (page, first header cell of the table) -> the test that recomputes it (a record's table,
#: or another table of the same record; a second record table of a page with the same first cell gains a space)
RECOMPUTED = {
    ("docs/engine.md", "what"): "test_engine_benchmark_record",
    ("docs/tracking.md", "design"): "test_records_of_the_default_job",
    ("docs/firmware.md", "RMS contact error, last period (with the imperfections)"): "test_records_of_the_default_job",
    ("docs/tracking.md", "design "): "test_record_of_the_imperfect_rig_benchmark",
    ("docs/firmware.md", ""): "test_record_of_the_processor_in_the_loop",
    ("docs/identification.md", "parameter"): "test_record_of_the_identification_benchmark",
    # the record's other tables (sections 3 and 2 of the same benchmark, as its label says)
    ("docs/identification.md", "parameter (60 s excitation, tabletop)"): "test_record_of_the_identification_benchmark",
    ("docs/identification.md", "rig"): "test_record_of_the_identification_benchmark",
    ("docs/moving_plate.md", "radius m"): "test_record_of_the_quasi_static_study",
}

#: tables of the prose with numbers in them that are no measurement, and why
NOT_MEASURED = {
    ("README.md", "command"): "the CLI's commands; the numbers in it are defaults (test_readme_numbers_are_the_code_s)",
    ("docs/architecture.md", "layer"): "the import layers, numbered (tests/test_architecture.py checks the rule)",
    ("docs/figures.md", "panel"): "how to read a figure; its ranges describe the figure of the default job",
    ("docs/getting_started.md", "command"): "the CLI's commands (tests/test_docs.py checks the list)",
    ("docs/identification.md", "column"): "the log format (tests/test_rig_log.py reads and refuses it)",
    ("docs/moving_plate.md", "check"): "the tolerances tests/test_ball_plate_moving.py asserts",
    ("docs/planning.md", "check"): "the tolerances tests/test_planning*.py assert; the 'measured' entries are "
                                   "the margins those tests had when they were written (their oracles are the "
                                   "tests' own code)",
    ("docs/rolling_ball.md", "Module"): "the modules, with the paper's equation numbers",
    ("docs/theory/dae.md", "equation"): "where each equation lives in the code",
    ("docs/theory/lqr_kalman.md", "equation"): "where each equation lives in the code",
}

_NUMBER_IN_PROSE = re.compile(r"(?<![\w.])[-+−]?\d")
_NOT_A_MEASUREMENT = re.compile(r"`[^`]*`|\$[^$]*\$|\{[a-z]+\}`[^`]*`|\beqs?\.\s*\(?\d[\d.,–-]*\)?|\(\d+\)")


def _key(table) -> tuple[str, str]:
    """``(page, first header cell)``: how :data:`NOT_MEASURED` names a table."""
    return page_id(table.page), table.header[0] if table.header else ""


def _has_numbers(table) -> bool:
    body = " ".join(" ".join(r) for r in table.rows)
    return bool(_NUMBER_IN_PROSE.search(_NOT_A_MEASUREMENT.sub(" ", body)))


def _record_keys() -> dict:
    """Each record with a table under its :data:`RECOMPUTED` key (a repeated key of a page gains a space)."""
    keys: dict = {}
    for r in RECORDS:
        if r.table is None:
            continue
        page = page_id(r.page)
        key = (page, r.table.header[0])
        while key in keys:
            key = (page, key[1] + " ")
        keys[key] = r
    return keys


def _close(shown: str, value: float) -> bool:
    """A number the prose rounds (a ratio, a quoted cell) agrees with the value to its two significant digits:
    ``|value - shown| <= max(10**(floor(log10|shown|) - 1), one unit in its last digit)``, integers too."""
    e = float(str(shown).translate(MINUS).replace(",", ""))
    decimals = len(str(shown).partition(".")[2])
    digits = 10.0 ** (math.floor(math.log10(abs(e))) - 1) if e else 0.0
    return abs(float(value) - e) <= max(10.0 ** -decimals if decimals else 0.0, digits) * (1 + 1e-9)


def _differences(pairs) -> list[str]:
    """``[(where, on the page, recomputed)]`` -> the descriptions of those that differ."""
    problems = []
    for where, shown, computed in pairs:
        difference = compare_output(str(shown).translate(MINUS), str(computed))
        if difference:
            problems.append(f"{where}: the page shows {shown!r}, the rerun gives {computed!r}")
    return problems


def _run(command: list[str], folder, timeout: float = 3600) -> subprocess.CompletedProcess:
    for tree in ("examples", "benchmarks"):
        if not (folder / tree).exists():
            (folder / tree).symlink_to(ROOT / tree)
    run = subprocess.run(command, cwd=folder, env=environment(), capture_output=True, text=True, timeout=timeout)
    (folder / "stdout.txt").write_text(run.stdout, encoding="utf-8")       # kept with pytest's temporary folders
    (folder / "stderr.txt").write_text(run.stderr, encoding="utf-8")
    assert run.returncode == 0, f"`{shlex.join(command)}` failed ({run.returncode}):\n{run.stderr[-3000:]}"
    return run


def _table_of(text: str, folder, name: str, first_header: str):
    """The first Markdown table in ``text`` whose first header cell is ``first_header``."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    found = [t for t in tables(path) if t.header and t.header[0] == first_header]
    assert found, f"no table with the column {first_header!r} in:\n{text[-3000:]}"
    return found


# ------------------------------------------------------------------------------------------------ the records
def test_records_are_found():
    """The extraction sees the records (a change of their markup must not silently check nothing)."""
    assert len(RECORDS) >= 9
    assert len(_record_keys()) >= 7 and all(r.commands for r in RECORDS)


def test_records_are_dated_and_name_their_commands():
    problems = []
    for r in RECORDS:
        if not r.commands:
            problems.append(f"{r.where}: the record names no command that regenerates it (in a code span)")
        if r.table is None and "timings" not in r.text.split(")")[0]:
            problems.append(f"{r.where}: a record without a table holds timings only and says so "
                            "(`**Measurement record** (DATE, timings)`)")
        if not "2026-01-01" <= r.date <= "2100-01-01":
            problems.append(f"{r.where}: {r.date} is no date of a measurement")
    assert not problems, "\n".join(problems)


class _Parsed(Exception):
    """Raised right after a program's parser accepted its arguments (the program does not run)."""


def _parse(command: str, monkeypatch, capsys) -> str | None:
    """None when ``command`` (a ballctl command, an example or a benchmark) parses, else why not."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words.pop(0)
    if words[0] == "ballctl":
        from ballctl.cli import build_parser

        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            return capsys.readouterr().err.strip().splitlines()[-1]
        except Exception as exc:     # the CLI's parser raises a one-line usage error
            return str(exc)
        return None
    if words[0] not in ("python", "python3") or len(words) < 2:
        return "not a ballctl command, an example or a benchmark"
    script = ROOT / words[1]
    if not script.is_file():
        return f"there is no {words[1]}"
    spec = importlib.util.spec_from_file_location(f"_docs_record_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)     # its dataclasses look their module up there
    spec.loader.exec_module(module)
    parse_args = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        parse_args(self, args, namespace)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    try:
        if inspect.signature(module.main).parameters:
            module.main(words[2:])
        elif words[2:]:
            return f"{words[1]} takes no arguments"
        else:
            return None
    except _Parsed:
        return None
    except SystemExit:
        return capsys.readouterr().err.strip().splitlines()[-1]
    finally:
        monkeypatch.undo()
    return f"{words[1]} never parsed its arguments"


@pytest.mark.parametrize("command", sorted({c for r in RECORDS for c in r.commands}))
def test_record_commands_exist_and_parse(command, monkeypatch, capsys):
    assert kind_of(command) == "ballctl"
    problem = _parse(command, monkeypatch, capsys)
    assert problem is None, f"`{command}`: {problem}"


def test_the_command_check_catches_a_wrong_flag(monkeypatch, capsys):
    assert _parse("python benchmarks/run_all.py --repeat 5", monkeypatch, capsys) is None
    assert "unrecognized arguments: --no-such-flag" in _parse("python benchmarks/run_all.py --no-such-flag",
                                                              monkeypatch, capsys)
    assert "invalid int value" in _parse("python benchmarks/run_all.py --repeat five", monkeypatch, capsys)
    assert "takes no arguments" in _parse("python benchmarks/bench_imperfect_rig.py --quick", monkeypatch, capsys)
    assert _parse("python benchmarks/no_such_script.py", monkeypatch, capsys).startswith("there is no")
    assert "unrecognized arguments" in _parse("ballctl track --no-such-flag", monkeypatch, capsys)


def test_every_record_is_recomputed():
    keys = _record_keys()
    missing = [f"{r.where} (key {k})" for k, r in keys.items() if k not in RECOMPUTED]
    assert not missing, f"records whose table no test recomputes (add one to RECOMPUTED): {missing}"
    every = set(keys) | {_key(t) for p in PAGES for t in tables(p)}
    stale = [k for k in RECOMPUTED if k not in every]
    assert not stale, f"RECOMPUTED names records the pages do not have any more: {stale}"
    here = {name for name, _ in inspect.getmembers(sys.modules[__name__], inspect.isfunction)}
    assert set(RECOMPUTED.values()) <= here


def test_every_table_with_numbers_is_executed_or_a_record():
    in_records = {(r.table.page, r.table.line) for r in RECORDS if r.table is not None}
    unaccounted, seen = [], set()
    for page in PAGES:
        for t in tables(page):
            if not _has_numbers(t) or (t.page, t.line) in in_records:
                continue
            key = _key(t)
            seen.add(key)
            if key not in NOT_MEASURED and key not in RECOMPUTED:
                unaccounted.append(f"{t.where} {t.header}")
    assert not unaccounted, ("tables of measured numbers that no code prints and no record keeps (make them the "
                             "output of a python block, or a measurement record with its test, or list them in "
                             f"NOT_MEASURED with the reason): {unaccounted}")
    stale = [k for k in NOT_MEASURED if k not in seen]
    assert not stale, f"NOT_MEASURED lists tables the pages do not have any more: {stale}"


# ------------------------------------------------------------------------------------------------ engine.md
def _ratio(text: str, pattern: str) -> float:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {text!r}"
    return float(m.group(1).replace(",", ""))


def test_engine_benchmark_record():
    """The benchmark table of docs/engine.md: its problem sizes are the code's and every ratio divides the two
    times of its row (the times themselves are the machine's)."""
    import ballctl

    (record,) = [r for r in RECORDS if page_id(r.page) == "docs/engine.md" and r.table is not None]
    assert record.commands == ["OPENBLAS_NUM_THREADS=1 python benchmarks/run_all.py --repeat 5"]
    t = record.table
    rows = {r[0].split(",")[0].split(" (")[0]: r for r in t.rows}
    ratio, ours, peer = t.column("ratio"), t.column("ballctl"), t.column("peer")

    def seconds(cell, label=""):
        return _ratio(cell, rf"{label}([\d.]+) s")

    problems = []
    # problem sizes: the steps of 4 pi s at 1 ms, 20 ms and 10 ms, the reduced state of the paper's partition
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    steps_1ms = math.floor(4 * np.pi / 1e-3)
    disc = ballctl.discretize(ballctl.linearize(plant, ref, 1e-3 * np.arange(5), part), 1e-3)
    counts = {"ball-plate closed loop": [f"{steps_1ms:,} steps"],
              "default rig loop": [f"{int(np.ceil(4 * np.pi / 0.02)):,} steps"],
              "Monte Carlo": [f"1,000 runs x {round(4 * np.pi / 0.01):,} steps"],
              "finite-horizon Riccati sweep": [f"{disc.Ad.shape[0] * steps_1ms // 5:,} steps",
                                               f"N = {disc.Ad.shape[1]}"]}
    for label, phrases in counts.items():
        problems += [f"{label}: {p!r} is not in {rows[label][0]!r}" for p in phrases if p not in rows[label][0]]
    # the linearizer's kernel evaluations: every callable once, then once per complex-step direction
    calls = {"real": 0, "complex": 0}

    def counting(f):
        def counted(*args, **kwargs):
            calls["complex" if any(np.iscomplexobj(a) for a in args) else "real"] += 1
            return f(*args, **kwargs)
        return counted

    for name in ("mass_matrix", "forces", "constraint_jacobian", "constraint_bias"):
        setattr(plant, name, counting(getattr(plant, name)))
    ballctl.linearize(plant, ref, np.linspace(0.0, ref.period, 10), part)
    shown = rows["linearize 10^4 samples of the circle"][0]
    expected = f"{calls['real'] + calls['complex']} kernel evaluations of 10^4 states, {calls['complex']} of them"
    if expected not in shown:
        problems.append(f"linearize: {shown!r} does not say {expected!r}")
    # every ratio is the ratio of the two times of its row
    loop = rows["ball-plate closed loop"]
    mc = rows["Monte Carlo"]
    riccati = rows["finite-horizon Riccati sweep"]
    ball = rows["the paper's rolling ball"]
    checks = [("closed loop vs peer", _ratio(loop[ratio], r"([\d.]+)x faster"),
               seconds(loop[peer]) / seconds(loop[ours])),
              ("closed loop real time", _ratio(loop[ratio], r"([\d.]+)x real time"), 4 * np.pi / seconds(loop[ours])),
              ("rig loop", _ratio(rows["default rig loop"][ratio], r"([\d.]+)x faster"),
               seconds(rows["default rig loop"][peer]) / seconds(rows["default rig loop"][ours])),
              ("Monte Carlo, threads", _ratio(mc[ratio], r"([\d.]+)x on 2 threads"),
               seconds(mc[ours], "") / _ratio(mc[ours], r"([\d.]+) s on 2 threads")),
              ("Monte Carlo, cluster", _ratio(mc[ratio], r"([\d.]+)x on a 2-worker"),
               seconds(mc[ours], "") / _ratio(mc[ours], r"([\d.]+) s on the cluster")),
              ("Monte Carlo vs peer", _ratio(mc[ratio], r"([\d.]+)x faster"), seconds(mc[peer]) / seconds(mc[ours])),
              ("Riccati", _ratio(riccati[ratio], r"^([\d.]+)"), seconds(riccati[ours]) / seconds(riccati[peer])),
              ("rolling ball", _ratio(ball[ratio], r"([\d.]+)x faster"), seconds(ball[peer]) / seconds(ball[ours]))]
    problems += [f"{t.where} {what}: the page says {shown:g}, the times of its row give {computed:.3g}"
                 for what, shown, computed in checks if not _close(f"{shown:g}", computed)]
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ the default job
def _default_job(_, folder) -> dict:
    """``ballctl track`` as the records name it: its summary.json and summary.md, and its C controller's config."""
    _run(["ballctl", "track"], folder)
    out = folder / "ballctl_out"
    return {"summary": json.loads((out / "summary.json").read_text()), "summary_md": (out / "summary.md").read_text(),
            "config": (out / "c_controller" / "ballctl_controller_config.h").read_text(),
            "data": dict(np.load(out / "c_controller" / "ballctl_controller.npz", allow_pickle=False))}


Prefetch.register("test_records_of_the_default_job", "job", _default_job)


def _mm(value) -> str:
    return f"{1e3 * value:.4g} mm"


@pytest.mark.slow
@pytest.mark.parametrize("job", ["ballctl track"])
def test_records_of_the_default_job(job, request):
    """docs/tracking.md's table of the default job and its contact check, docs/firmware.md's choice of the
    Fourier order and the size of the exported controller: all from one run of ``ballctl track``."""
    run = Prefetch.result(request, "test_records_of_the_default_job", job)
    d = run["summary"]
    keys = _record_keys()
    problems, pairs = [], []
    # docs/tracking.md: the three designs
    t = keys[("docs/tracking.md", "design")].table
    limit = np.rad2deg(d["rig"]["limits"]["max_angle_rad"])
    for row in t.rows:
        name, v = row[0], d["verification"][row[0]]
        rb = v.get("robust")
        tilt = f"{v['peak_tilt_deg']:.3g}" + (" (limit)" if abs(v["peak_tilt_deg"] - limit) < 1e-6 else "")
        robust = ("not run" if rb is None else
                  f"{100 * rb['success_rate']:.1f} %, {rb['rms_p50_m']:.3g} / "
                  + ("diverging runs" if rb["rms_p95_m"] is None else f"{rb['rms_p95_m']:.3g}"))
        if v["passed"]:
            verdict = "passes (exported)" if d["exported_design"] == name else "passes"
        elif v["reason"].startswith("fails over the rig's uncertainty"):
            verdict = "fails over the uncertainty"
        else:
            verdict = v["reason"]
        rms = "-" if v["rms_error_m"] is None else f"{v['rms_error_m']:.3g}"
        pairs += [(f"{t.where} {name} {c}", row[t.column(c)], value) for c, value in
                  (("RMS", rms), ("peak tilt", tilt), ("over", robust), ("verdict", verdict))]
        if rb is not None and f"over {rb['runs']} drawn rigs" not in t.header[t.column("over")]:
            problems.append(f"{t.where}: the robust verification drew {rb['runs']} rigs")
    # its contact check, from the exported design's run
    page = " ".join((ROOT / "docs" / "tracking.md").read_text(encoding="utf-8").translate(MINUS).split())
    m = re.search(r"at up to ([\d.]+) rad/s².*?down to ([\d.]+) N of its ([\d.]+) N weight.*?peaks at ([\d.]+) "
                  r"against the rig's ([\d.]+); over the last revolution it needs ([\d.]+)", page)
    assert m, "docs/tracking.md: the contact check's sentence changed: update the pattern here"
    c = d["verification"][d["exported_design"]]["contact"]
    accel = re.search(r"turns this plate at up to ([\d.]+) rad/s\^2", run["summary_md"]).group(1)
    weight = d["rig"]["ball"]["mass_kg"] * 9.81
    computed = (accel, f"{c['least_normal_force_N']:.3g}", f"{weight:.3g}", f"{c['peak_friction_coefficient']:.3g}",
                f"{c['rig_friction_coefficient']:g}", f"{c['peak_friction_coefficient_last_period']:.3g}")
    pairs += [("docs/tracking.md contact check", a, b) for a, b in zip(m.groups(), computed)]
    # docs/firmware.md: the Fourier order chosen by verification
    t = keys[("docs/firmware.md", "RMS contact error, last period (with the imperfections)")].table
    ctl = d["controller"]
    checks = ctl["checks"]
    full = next(x for x in checks if x["full_precision"])
    by_order = {x["order"]: x for x in checks if isinstance(x["order"], int) and not x["full_precision"]}
    lower_ad = next(x for x in checks if isinstance(x["order"], dict)
                    and x["order"]["Ad"] == ctl["fourier_order"] - 1)

    def order(x):
        return (f"{_mm(x['rms_error_m'])} ({_mm(x['peak_distance_to_full_m'])})"
                + (": passes" if x["passed"] else ""))

    expected = {"the verified design (finite horizon, `simulate_closed_loop`)":
                _mm(d["verification"][d["exported_design"]]["rms_error_m"]),
                f"full-precision periodic export (order {full['order']}, double), same window":
                _mm(full["rms_error_design_window_m"]),
                "the same over the last of three periods": _mm(full["rms_error_m"]),
                "order 1 (peak separation from the full loop)": order(by_order[1]),
                "order 2": order(by_order[2]),
                "order 3": order(by_order[3]),
                "the model `Ad` one order lower":
                f"{_mm(lower_ad['rms_error_m'])} ({_mm(lower_ad['peak_distance_to_full_m'])}): "
                + ("passes" if lower_ad["passed"] else
                   f"rejected ({100 * lower_ad['relative_to_full']:.2g} % above the full loop)"),
                "exported": f"order {ctl['fourier_order']}"}
    shown = {row[0]: row[1] for row in t.rows}
    problems += [f"{t.where}: the table has no row {label!r}" for label in expected if label not in shown]
    pairs += [(f"{t.where} {label}", shown[label], value) for label, value in expected.items() if label in shown]
    # docs/firmware.md: the exported controller's states and the model entries the step sums
    firmware = " ".join((ROOT / "docs" / "firmware.md").read_text(encoding="utf-8").split())
    m = re.search(r"The controller has (\d+) states: the design's (\d+) without the (\w+) angle \(dropped\), the "
                  r"(\w+) level-error estimates and the (\w+) integrators\. Of the model's (\d+) entries the step "
                  r"sums the Fourier series of (\d+)", firmware)
    assert m, "docs/firmware.md: the sentence on the controller's states changed: update the pattern here"
    names = [str(n) for n in run["data"]["state_names"]]
    dropped = [str(n) for n in run["data"]["dropped_states"]]
    levels = [n for n in names if n.startswith("d_")]
    integrators = [n for n in names if n.startswith("integral_")]
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    config = {k: int(v) for k, v in re.findall(r"#define (BC_N_STATES|BC_NV_AD) (\d+)", run["config"])}
    computed = (config["BC_N_STATES"], len(names) - len(levels) - len(integrators) + len(dropped), " ".join(dropped),
                words.get(len(levels)), words.get(len(integrators)), config["BC_N_STATES"] ** 2, config["BC_NV_AD"])
    if len(names) != config["BC_N_STATES"]:
        problems.append(f"the controller's data names {len(names)} states, its config {config['BC_N_STATES']}")
    pairs.append(("docs/firmware.md states", " ".join(m.groups()), " ".join(map(str, computed))))
    problems += _differences(pairs)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ imperfect rigs
#: the benchmark without its section 3 (the timings of six more `ballctl track` jobs): it stops there
_WITHOUT_TIMINGS = ("import runpy, subprocess, sys\n"
                    "def stop(*args, **kwargs):\n"
                    "    sys.exit(0)\n"
                    "subprocess.run = stop\n"
                    "runpy.run_path('benchmarks/bench_imperfect_rig.py', run_name='__main__')\n")


def _imperfect_rig(_, folder) -> str:
    return _run([sys.executable, "-c", _WITHOUT_TIMINGS], folder).stdout


Prefetch.register("test_record_of_the_imperfect_rig_benchmark", "job", _imperfect_rig)


@pytest.mark.records
@pytest.mark.parametrize("job", ["python benchmarks/bench_imperfect_rig.py"])
def test_record_of_the_imperfect_rig_benchmark(job, request, tmp_path):
    """docs/tracking.md's level-error table and the target rig's numbers: sections 1 and 2 of the benchmark."""
    out = Prefetch.result(request, "test_record_of_the_imperfect_rig_benchmark", job)
    (computed,) = _table_of(out, tmp_path, "out.md", "design")
    t = _record_keys()[("docs/tracking.md", "design ")].table
    names = {"exact, plain LQG": "exact", "exact, offset-free": "exact offset-free",
             "qs-contact, plain LQG": "qs-contact", "qs-contact, offset-free": "qs-contact offset-free"}
    assert len(t.header) == len(computed.header)
    pairs = [(f"{t.where} {row[0]}, {t.header[i]}", row[i], computed.row(names[row[0]])[i])
             for row in t.rows for i in range(1, len(row))]
    page = (ROOT / "docs" / "tracking.md").read_text(encoding="utf-8")
    m = re.search(r"design keeps ([\d.]+) mm RMS nominally and ([\d.]+) mm at the 95th percentile of (\d+) drawn "
                  r"rigs\s+\(([\d.]+) % converge\)", page)
    assert m, "docs/tracking.md: the target rig's sentence changed: update the pattern here"
    n = re.search(r"nominal RMS last revolution ([\d.]+) mm, final [\d.]+ mm; over (\d+) drawn rigs: success rate "
                  r"([\d.]+), RMS p50 [\d.]+ mm, p95 ([\d.]+) mm", out)
    assert n, f"the benchmark's section 2 changed:\n{out}"
    pairs.append(("docs/tracking.md target rig", " ".join(m.groups()),
                  f"{n.group(1)} {n.group(4)} {n.group(2)} {100 * float(n.group(3)):.3g}"))
    problems = _differences(pairs)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ PIL
def _processor_in_the_loop(_, folder) -> dict:
    out = {}
    for name, extra in (("with", []), ("without", ["--without-imperfections"])):
        _run([sys.executable, "benchmarks/pil_cortex_m4.py", *extra, "--json", f"{name}.json"], folder)
        out[name] = json.loads((folder / f"{name}.json").read_text())
    return out


Prefetch.register("test_record_of_the_processor_in_the_loop", "job", _processor_in_the_loop)
PIL_TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm")


@pytest.mark.slow
@pytest.mark.skipif(not all(shutil.which(t) for t in PIL_TOOLS),
                    reason=f"the footprint on the Cortex-M4F needs {', '.join(PIL_TOOLS)} (apt-get install -y "
                           "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
@pytest.mark.parametrize("job", ["python benchmarks/pil_cortex_m4.py"])
def test_record_of_the_processor_in_the_loop(job, request):
    """docs/firmware.md's footprint table, its "after" columns (the "before" column is the replaced export)."""
    runs = Prefetch.result(request, "test_record_of_the_processor_in_the_loop", job)
    t = _record_keys()[("docs/firmware.md", "")].table
    columns = {"with": t.column("after, with the"), "without": t.column("after, without")}
    problems, pairs = [], []
    for name, i in columns.items():
        o = runs[name]
        orders = o["estimate"]["fourier_orders"]
        order = o["controller"]["fourier_order"]
        expected = {"Fourier order exported": f"{order}" + (f" (`Ad` {orders['Ad']})" if orders["Ad"] != order else ""),
                    "flash (controller code and tables)": f"{o['flash_bytes']:,} B",
                    "RAM (controller state + the step's stack)": f"{o['state_bytes']:,} + {o['stack_bytes']:,} B",
                    "instructions per step (mean; max)": f"{o['instructions_per_step_mean']:,.0f}; "
                                                         f"{o['instructions_per_step_max']:,.0f}",
                    "steps run": f"{o['steps_run']:,}",
                    "target output equal to the host build": "yes, bit for bit" if o["target_equals_host"] else "no"}
        for label, value in expected.items():
            cell = t.row(label)[i]
            if label == "steps run" and "(" in cell:
                value += f" ({round(o['periods_run'])} periods; it counts up forever)"
            pairs.append((f"{t.where} {label}, {t.header[i]}", cell, value))
        if not o["targets"] or not all(o["targets"].values()):
            problems.append(f"{name} the imperfections: targets missed: {o['targets']}")
    problems += _differences(pairs)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ identification
def _identification(_, folder) -> str:
    return _run([sys.executable, "benchmarks/bench_identify.py"], folder).stdout


Prefetch.register("test_record_of_the_identification_benchmark", "job", _identification)

#: the page's column -> the benchmark's rig
RIGS = {"tabletop 1": "tabletop draw 1", "tabletop 2": "tabletop draw 2",
        "tabletop 3 (10 % lost)": "tabletop draw 3, 10 % frames lost", "lab 1": "lab draw 1", "lab 2": "lab draw 2"}
_VALUE = r"[-+]?\d[\d.]*(?:e[-+]?\d+)?"


def _identified(cell: str) -> dict:
    """A cell of the benchmark's per-rig or excitation table -> {"value", "se"} or {"held", "base", "se"}."""
    cell = " ".join(cell.split())
    m = re.fullmatch(rf"held at base (?:({_VALUE}) [a-z]* ?)?\(SE ({_VALUE})(?: [a-z]+)?\)", cell)
    if m:
        return {"held": True, "base": m.group(1), "se": m.group(2)}
    m = re.fullmatch(rf"({_VALUE}) \+- ({_VALUE})(?: [a-z]+)?", cell)
    assert m, f"unexpected cell of the benchmark: {cell!r}"
    return {"held": False, "value": m.group(1), "se": m.group(2)}


def _number(cell: str) -> str:
    return cell.split()[0]


@pytest.mark.records
@pytest.mark.parametrize("job", ["python benchmarks/bench_identify.py"])
def test_record_of_the_identification_benchmark(job, request, tmp_path):
    """docs/identification.md's three tables of results and the counts the prose quotes."""
    out = Prefetch.result(request, "test_record_of_the_identification_benchmark", job)
    per_rig = {t.caption.split("**")[1]: t for t in _table_of(out, tmp_path, "out.md", "parameter")}
    (excitation,) = _table_of(out, tmp_path, "out.md", "parameter (excitation on the tabletop rig itself)")
    (designs,) = _table_of(out, tmp_path, "out.md", "rig")
    keys = _record_keys()
    page_tables = {t.header[0]: t for t in tables(ROOT / "docs" / "identification.md")}
    pairs, problems = [], []
    # section 1: one column per rig, one row per parameter (noise contact_y, noise beta, bias beta left out)
    t = keys[("docs/identification.md", "parameter")].table
    for row in t.rows:
        key = row[0].split(" [")[0]
        for i, label in enumerate(t.header[1:], start=1):
            cell = row[i].translate(MINUS)
            found = [r for r in per_rig[RIGS[label]].rows if r[0] == key]
            if cell.strip() == "-":
                if found:
                    problems.append(f"{t.where} {key}, {label}: the benchmark identifies it ({found[0]})")
                continue
            assert found, f"{t.where} {key}, {label}: the benchmark has no such parameter"
            true, got = _number(found[0][1]), _identified(found[0][2])
            shown_true, _, shown = cell.partition(" / ")
            pairs.append((f"{t.where} {key}, {label} (true)", shown_true, true))
            if got["held"]:
                m = re.fullmatch(rf"\*held\*(?: \(({_VALUE})\))?", shown)
                if not m:
                    problems.append(f"{t.where} {key}, {label}: the benchmark holds it, the page shows {shown!r}")
                elif m.group(1):
                    pairs.append((f"{t.where} {key}, {label} (held at)", m.group(1), got["base"]))
            else:
                pairs.append((f"{t.where} {key}, {label}", shown, f"{got['value']} ± {got['se']}"))
    # section 3: the excitation of the tabletop rig itself (rows of two parameters: "a, _b")
    t = page_tables["parameter (60 s excitation, tabletop)"]
    for row in t.rows:
        names = row[0].split(" [")[0].split(", ")
        stem = names[0].rsplit("_", 1)[0] if names[0].startswith("plate") else names[0].rsplit("_", 1)[0]
        keys_ = [names[0]] + [stem + n for n in names[1:]]
        trues, values = row[1].translate(MINUS).split(", "), row[2].translate(MINUS).split(", ")
        for j, key in enumerate(keys_):
            found = excitation.row(key)
            true, got = _number(found[1]), _identified(found[2])
            pairs.append((f"{t.where} {key} (true)", trues[min(j, len(trues) - 1)], true))
            if got["held"]:
                pairs.append((f"{t.where} {key}", values[j], f"*held* (SE {got['se']})"))
            else:
                pairs.append((f"{t.where} {key}", values[j], f"{got['value']} ± {got['se']}"))
    # section 2: the designs for the identified and the true rig
    t = page_tables["rig"]
    compared = {r[0]: r for r in designs.rows}
    shown_rigs = set()
    for row in t.rows:
        bench = compared[RIGS[row[0]]]
        shown_rigs.add(RIGS[row[0]])
        pairs += [(f"{t.where} {row[0]}, {t.header[i]}", row[i], bench[i]) for i in range(1, 4)]
    page = (ROOT / "docs" / "identification.md").read_text(encoding="utf-8")
    for label, bench in compared.items():
        if label in shown_rigs:
            continue
        short = next(k for k, v in RIGS.items() if v == label).split(" (")[0].capitalize()
        if "refused" not in bench[1] or not re.search(rf"\({short}: the\s+design for the \*true\* rig is refused",
                                                     page):
            problems.append(f"{t.where}: the page neither shows nor explains the benchmark's row {bench}")
    # the counts of the prose
    m = re.search(r"within the issue's targets: (\d+) of (\d+); inside \+-3 SE: (\d+) of (\d+) excited", out)
    shown = re.search(r"all (\d+) excited parameters lie inside their ±3 standard errors, and all (\d+) with an "
                      r"issue\s+target meet it", page)
    assert m and shown, "the counts of section 1 or their sentence changed: update the patterns here"
    if not (m.group(1) == m.group(2) and m.group(3) == m.group(4)):
        problems.append(f"not every parameter meets its target or lies inside 3 SE any more: {m.group(0)}")
    pairs.append(("docs/identification.md counts", " ".join(shown.groups()), f"{m.group(4)} {m.group(2)}"))
    cost = re.search(r"\((\d+) iterations, (\d+) windows;", out)
    quoted = re.search(r"has (\d+) windows and takes (\d+) Levenberg–Marquardt", page)
    pairs.append(("docs/identification.md cost", " ".join(quoted.groups()), f"{cost.group(2)} {cost.group(1)}"))
    not_excited = re.search(r"not excited by the excitation log: (.*)", out).group(1).strip()
    if not_excited != "servo_deadband" or "every parameter but the dead band is excited" not in " ".join(page.split()):
        problems.append(f"the excitation leaves {not_excited!r} not excited; the page says: all but the dead band")
    problems += _differences(pairs)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ moving plate
def _quasi_static_study(_, folder) -> str:
    _run([sys.executable, "examples/quasi_static_cost.py", "--out", "out"], folder)
    return (folder / "out" / "moving_plate_table.md").read_text(encoding="utf-8")


Prefetch.register("test_record_of_the_quasi_static_study", "job", _quasi_static_study)


@pytest.mark.records
@pytest.mark.parametrize("job", ["python examples/quasi_static_cost.py --out docs"])
def test_record_of_the_quasi_static_study(job, request):
    """docs/moving_plate_table.md is what the study writes (rerun into a temporary folder, not into docs/)."""
    written = Prefetch.result(request, "test_record_of_the_quasi_static_study", job)
    shown = (ROOT / "docs" / "moving_plate_table.md").read_text(encoding="utf-8")
    difference = compare_output(shown, written)
    assert difference is None, f"docs/moving_plate_table.md is not what the study writes now: {difference}"


#: what docs/moving_plate.md quotes from its table: the words on the page, and each number in them with its
#: cell: ((radius, omega, offset), column)
QUOTED = [
    ("0.03 % and 0.35 % of\nthe radius on the 0.5 m circle at 0.5 and 1 rad/s",
     [("0.03", (0.5, 0.5, 0), "(b')"), ("0.35", (0.5, 1, 0), "(b')")]),
    ("1.5 % on a 0.1 m circle at 2 rad/s", [("1.5", (0.1, 2, 0), "(b')")]),
    ("tracks to 0.01–0.09 % on the 0.5 m circle up to 0.5 m/s",
     [("0.01", (0.5, 0.5, 0), "(c)"), ("0.09", (0.5, 1, 0), "(c)")]),
    ("about 1.1–1.2 % at 1 m/s\n  (centred and off-centre)",
     [("1.1", (0.5, 2, 0), "(c)"), ("1.2", (0.5, 2, 0.2), "(c)")]),
    ("0.65 % on the 0.1 m circle at 0.2 m/s", [("0.65", (0.1, 2, 0), "(c)")]),
    ("degrades (5.1–83 %), where the plate tilts 13–66 degrees",
     [("5.1", (0.1, 4, 0), "(c)"), ("83", (0.1, 8, 0), "(c)"), ("13", (0.1, 4, 0), "QS tilt"),
      ("66", (0.1, 8, 0), "QS tilt")]),
]


def test_moving_plate_prose_quotes_its_table():
    """The numbers of "What the assumption costs" are the table's (the table itself is the study's record)."""
    page = " ".join((ROOT / "docs" / "moving_plate.md").read_text(encoding="utf-8").split())
    (t,) = tables(ROOT / "docs" / "moving_plate_table.md")
    rows = {tuple(float(c) for c in r[:3]): r for r in t.rows}
    problems = []
    for words, cells in QUOTED:
        if " ".join(words.split()) not in page:
            problems.append(f"docs/moving_plate.md no longer says {words!r}: update QUOTED")
            continue
        for number, key, column in cells:
            assert number in words, (number, words)
            cell = rows[key][t.column(column)]
            if not _close(number, float(cell)):
                problems.append(f"docs/moving_plate.md {words!r}: {number} against the table's {cell}")
    # "The paper's 6-state quasi-static design does not survive a real plate, at any speed tried"
    survived = [r[:3] for r in t.rows if r[t.column("(b)")] not in ("inf", "")]
    if survived:
        problems.append(f"the page says the 6-state design diverges on every circle; it does not on {survived}")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------ the prose's code numbers
def test_readme_numbers_are_the_code_s():
    """The numbers the README gives a user: the default job's path, rig, robust runs, controller, Python."""
    import tomllib

    from ballctl.ball_plate.rig import rig_preset
    from ballctl.cli import build_parser
    from ballctl.plants.paper import paper_ball_parameters
    from ballctl.schedule import ControllerDataOptions

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    args = build_parser().parse_args(["track"])
    rig = rig_preset(args.rig)
    (camera,) = rig.sensors
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    expected = [f"a {args.radius:g} m circle on the default {args.rig} rig",
                f"a {1 / camera.period_s:g} Hz camera, {1e3 * camera.noise_std[0]:g} mm noise and "
                f"{1e3 * camera.latency_s:g} ms latency, then over {args.robust_runs} rigs drawn",
                f"then over {args.robust_runs} rigs drawn from the rig's uncertainty",
                f"a periodic {ControllerDataOptions().real} C controller",
                f"the paper's {len(paper_ball_parameters().point_masses)}-mass ball",
                f"Python {python.replace('>=', '>= ')}"]
    missing = [e for e in expected if e not in " ".join(readme.split())]
    assert not missing, f"the README does not say what the code does: {missing}"


def _deg(rad: float) -> str:
    return f"{np.rad2deg(rad):.3g}"


def test_the_presets_the_tracking_page_describes_are_the_code_s():
    from ballctl.ball_plate.rig import rig_preset

    page = " ".join((ROOT / "docs" / "tracking.md").read_text(encoding="utf-8").translate(MINUS).split())
    tab, lab = rig_preset("tabletop"), rig_preset("lab")
    (cam,), (lab_cam, enc) = tab.sensors, lab.sensors
    imp = tab.imperfections
    expected = [
        f"**tabletop** (default: camera or touch panel at {1 / cam.period_s:g} Hz, {1e3 * cam.noise_std[0]:g} mm, "
        f"{1e3 * cam.latency_s:g} ms; hobby servos {tab.servo.bandwidth:g} rad/s; ±{_deg(tab.limits.max_angle)}°, "
        f"{_deg(tab.limits.max_rate)}°/s, {_deg(tab.limits.quantum)}° quantum; control {1 / tab.dt:g} Hz; level error "
        f"{_deg(imp.plate_offset[0])}°/{_deg(imp.plate_offset[1])}°, rolling resistance {imp.rolling_resistance:g}, "
        f"{100 * imp.frame_drop:g} % frames lost, {_deg(imp.servo_deadband)}° dead band, "
        f"{1e3 * imp.timing_jitter_s:g} ms jitter)",
        f"**lab** ({1 / lab_cam.period_s:g} Hz camera {1e3 * lab_cam.noise_std[0]:g} mm/{1e3 * lab_cam.latency_s:g} ms "
        f"+ servo {enc.name}; {lab.servo.bandwidth:g} rad/s servos; control {1 / lab.dt:g} Hz; calibrated: "
        f"{_deg(lab.imperfections.plate_offset[0])}° level error)",
        f"Tabletop rig (camera {1 / cam.period_s:g} Hz, {1e3 * cam.noise_std[0]:g} mm noise, "
        f"{1e3 * cam.latency_s:g} ms latency; ±{_deg(tab.limits.max_angle)}°, {_deg(tab.limits.max_rate)}°/s, "
        f"{_deg(tab.limits.quantum)}° quantum; {tab.servo.bandwidth:g} rad/s servos; truth: the exact servo plate "
        f"with the preset's level error of {_deg(imp.plate_offset[0])}°/{_deg(imp.plate_offset[1])}°, "
        f"rolling resistance {imp.rolling_resistance:g}, {100 * imp.frame_drop:g} % lost frames, "
        f"{_deg(imp.servo_deadband)}° dead band and {1e3 * imp.timing_jitter_s:g} ms jitter)",
    ]
    missing = [e for e in expected if e not in page]
    assert not missing, "docs/tracking.md describes the presets otherwise than ballctl/ball_plate/rig.py:\n" + \
        "\n".join(missing)


def test_the_tracking_page_quotes_the_job_s_defaults():
    from ballctl.ball_plate.verification import VerificationSettings
    from ballctl.cli import build_parser
    from ballctl.cli.track import MAX_SATURATED_FRACTION

    page = " ".join((ROOT / "docs" / "tracking.md").read_text(encoding="utf-8").split())
    args = build_parser().parse_args(["track"])
    expected = [f"from `--offset`, default {100 * args.offset[0]:g} cm",
                f"`--robust-runs` drawn rigs, {args.robust_runs} by default",
                f"below `--max-rms-error` (default {1e3 * args.max_rms_error:g} mm)",
                f"the tilt limit is active in less than {100 * MAX_SATURATED_FRACTION:g} % of the last period",
                f"at least {100 * VerificationSettings().min_success_rate:g} % of the drawn rigs converge",
                f"{args.radius:g} m circle at {args.omega:g} rad/s"]
    missing = [e for e in expected if e not in page]
    assert not missing, f"docs/tracking.md quotes other defaults than `ballctl track` has: {missing}"
