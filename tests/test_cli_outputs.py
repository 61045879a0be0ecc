"""Whole outputs: a job's folder appears complete or not at all (ballctl._io.atomic_directory), even under kill -9;
the first run says that it compiles the simulation kernels."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ballctl._errors import FileArgumentError
from ballctl._io import OUTPUT_MARKER, atomic_directory, check_output_folder
from processes import killed_at


def _siblings(out: Path):
    """The hidden temporary folders atomic_directory leaves next to ``out`` (none once it is done)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_the_folder_appears_whole_only_when_the_block_succeeds(tmp_path):
    out = tmp_path / "sub" / "out"            # missing parents are created
    with atomic_directory(out) as tmp:
        (tmp / "a.txt").write_text("a")
        (tmp / "nested").mkdir()
        (tmp / "nested" / "b.txt").write_text("b")
        assert not out.exists() and tmp.parent == out.parent   # built beside it, on the same file system
    assert (out / "a.txt").read_text() == "a" and (out / "nested" / "b.txt").read_text() == "b"
    assert (out / OUTPUT_MARKER).is_file() and _siblings(out) == []


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_exception_inside_leaves_nothing_new_and_the_old_folder_untouched(tmp_path, error):
    fresh = tmp_path / "fresh"
    with pytest.raises(type(error)):
        with atomic_directory(fresh) as tmp:
            (tmp / "half.txt").write_text("half")
            raise error
    assert not fresh.exists() and _siblings(fresh) == []
    # an earlier run's folder stays exactly as it was
    old = tmp_path / "old"
    with atomic_directory(old) as tmp:
        (tmp / "summary.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    with pytest.raises(type(error)):
        with atomic_directory(old) as tmp:
            (tmp / "summary.json").write_text('{"new": 1}')
            raise error
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before and _siblings(old) == []


def test_a_new_run_replaces_the_old_folder_whole(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out) as tmp:
        (tmp / "only_in_the_first_run.txt").write_text("1")
        (tmp / "summary.json").write_text("1")
    with atomic_directory(out) as tmp:
        (tmp / "summary.json").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "summary.json"]
    assert (out / "summary.json").read_text() == "2" and _siblings(out) == []


def test_a_stale_temporary_folder_of_a_killed_job_is_removed_by_the_next_job(tmp_path):
    out = tmp_path / "out"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs
    stale = tmp_path / f".out.partial-{dead.pid}-0a1b2c3d"
    stale.mkdir()
    (stale / "summary.json").write_text("half")
    stale_old = tmp_path / f".out.old-{dead.pid}-0a1b2c3e"
    stale_old.mkdir()
    alive = tmp_path / f".out.partial-{os.getppid()}-0a1b2c3f"   # a running job's: left alone
    alive.mkdir()
    with atomic_directory(out) as tmp:
        (tmp / "summary.json").write_text("new")
    assert not stale.exists() and not stale_old.exists() and alive.is_dir()
    assert (out / "summary.json").read_text() == "new"


def test_a_folder_of_other_files_or_the_current_folder_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me")
    with pytest.raises(FileArgumentError, match="is a folder of other files"):
        with atomic_directory(mine, flag="--out"):
            pytest.fail("the block must not run")
    assert (mine / "thesis.tex").read_text() == "keep me" and _siblings(mine) == []
    # an empty folder, or one with only the command's own file names (an earlier ballctl's output), is replaced
    (tmp_path / "empty").mkdir()
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "summary.json").write_text("{}")
    for folder in (tmp_path / "empty", legacy):
        check_output_folder(folder, "--out", own_names=("summary.json",))
    monkeypatch.chdir(mine)
    for here in (".", str(tmp_path)):
        with pytest.raises(FileArgumentError, match="is the current folder or one of its ancestors"):
            check_output_folder(here, "--out")


def test_the_first_compilation_is_announced_and_a_cached_run_says_nothing(monkeypatch):
    import numpy as np
    from numba import njit

    from ballctl.cli._common import compile_progress

    @njit(cache=False)
    def fresh(x):          # a function numba has never compiled: it compiles now
        return x * 2.0

    said = []
    with compile_progress(said.append):
        fresh(np.ones(3))
    assert said[0].strip() == "compiling the simulation kernels (first run only, cached afterwards)..."
    assert said[-1].strip().startswith("compiled the simulation kernels in")
    said.clear()
    with compile_progress(said.append):
        fresh(np.ones(3))  # compiled already: nothing to say
    assert said == []

    @njit(cache=False)
    def other(x):
        return x * 3.0

    from ballctl.simulation import engine

    started = []
    monkeypatch.setattr(engine, "compile_in_background", lambda complex_step=(): started.append(complex_step) or True)
    monkeypatch.setattr(engine, "background_wait_s", lambda: 2.0)
    with compile_progress(said.append, loop_aside=True):  # the first compilation starts the loop's, aside
        other(np.ones(3))
    assert started == [()]
    assert [s.strip() for s in said[:2]] == ["compiling the simulation kernels (first run only, cached afterwards)...",
                                             "compiling the closed loop in a second process ..."]
    assert "waited 2 s for the second process" in said[-1]
    said.clear()
    with compile_progress(said.append, loop_aside=True):  # a warm cache: nothing compiles, nothing starts
        other(np.ones(3))
    assert said == [] and started == [()]

    @njit(cache=False)
    def third(x):
        return x * 4.0

    with compile_progress(said.append, loop_aside=True, complex_step=("ball_plate",)):  # the plants it linearizes
        third(np.ones(3))
    assert started == [(), ("ball_plate",)]
    assert said[1].strip() == ("compiling the complex-step kernels in a second process and the closed loop in "
                               "whichever is free first ...")


# ------------------------------------------------------------------ kill -9 of a real job
_JOB = ["track", "--rig", "ideal", "--design", "qs-contact", "--duration", "1.0", "--offset", "0", "0",
        "--max-rms-error", "0.05", "--no-offset-free", "--robust-runs", "4"]


def _complete(out: Path) -> dict:
    """The summary of a complete output folder, after checking that every file it lists is there."""
    summary = json.loads((out / "summary.json").read_text())
    for name in summary["files"]:
        path = out / name
        assert path.exists(), name
        assert (any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0), name
    return summary


def _killed_at(out: Path, line: str, delay: float) -> bool:
    """The job killed -9 ``delay`` s after its stderr shows ``line``; whether it was still running."""
    return killed_at([sys.executable, "-m", "ballctl.cli", *_JOB, "--out", str(out)], line, delay)


@pytest.mark.slow
def test_a_killed_track_job_leaves_its_output_folder_absent_or_complete(tmp_path):
    # moments across the job: during the references and designs, while exporting, while writing the files
    moments = [("[2/5]", 0.0), ("[3/5]", 0.5), ("[4/5]", 0.0), ("[5/5]", 0.0), ("[5/5]", 0.4), ("[5/5]", 1.0),
               ("[5/5]", 1.6), ("[5/5]", 2.5)]
    killed = 0
    for i, (line, delay) in enumerate(moments):
        fresh = tmp_path / f"fresh{i}"
        killed += _killed_at(fresh, line, delay)
        assert not fresh.exists() or _complete(fresh)["exported_design"] == "qs-contact"
    assert killed >= 3   # the moments before the end did kill a running job
    # over an earlier run's folder: afterwards it is that run's, complete, or the new one's, complete
    out = tmp_path / "out"
    assert subprocess.run([sys.executable, "-m", "ballctl.cli", *_JOB, "--out", str(out)],
                          capture_output=True).returncode == 0
    (out / "from_the_first_run.txt").write_text("first")   # tells the two runs apart
    for line, delay in moments[2:]:
        _killed_at(out, line, delay)
        _complete(out)
        names = {p.name for p in out.iterdir()}
        listed = {name.rstrip("/") for name in _complete(out)["files"]}
        assert "from_the_first_run.txt" in names or names <= listed | {OUTPUT_MARKER}
    # the killed jobs' temporary folders do not confuse the next job, which removes them
    assert subprocess.run([sys.executable, "-m", "ballctl.cli", *_JOB, "--out", str(out)],
                          capture_output=True).returncode == 0
    assert "from_the_first_run.txt" not in {p.name for p in out.iterdir()}
    _complete(out)
    assert _siblings(out) == []
