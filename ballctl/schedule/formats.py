r"""Gain-schedule files: ``.npz`` and ``.json`` (read and written, checksummed) and the CSV export.

:func:`save_schedule` writes ``.npz`` (numpy arrays plus a JSON metadata
member) or ``.json`` (every float written with ``repr``, which round-trips
exactly). Both carry the format name, :data:`~ballctl.schedule.data.SCHEDULE_FORMAT_VERSION`
and the SHA-256 checksum of the schedule's canonical serialization
(:func:`~ballctl.schedule.data.canonical_checksum`), so the checksum does not
depend on the container. :func:`load_schedule` refuses, with
:class:`~ballctl._errors.ScheduleFileError` naming the problem, files that are
truncated, corrupted, edited or of another format version. Every write
(:func:`save_schedule`, :func:`write_schedule_csv` and the C header of
:mod:`ballctl.schedule.c_export`) is atomic: the content is serialized in
memory, written to a temporary file in the destination directory, flushed and
fsync'ed, then moved over the destination with ``os.replace``; on any failure
the temporary file is removed and an existing file is left intact.

``GainSchedule.save``, ``GainSchedule.load`` and ``GainSchedule.to_csv``
call these functions.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np

from .._errors import ParameterError, ScheduleFileError
from .._io import atomic_write
from .._paths import check_input_file
from .c_export import c_float_literal
from .data import (ARRAY_FIELDS, OPTIONAL_FIELDS, SCHEDULE_FORMAT, SCHEDULE_FORMAT_VERSION, GainSchedule,
                   canonical_checksum)

__all__ = ["save_schedule", "load_schedule", "write_schedule_csv", "schedule_bytes"]

#: versions this ballctl reads (version 1 files have no model or estimator arrays)
_READABLE_VERSIONS = (1, 2)


def save_schedule(schedule: GainSchedule, path) -> Path:
    """Write a schedule to ``path`` atomically; the format follows the suffix, ``.npz`` or ``.json``.

    Parameters
    ----------
    schedule : GainSchedule
        The schedule.
    path : str or os.PathLike
        Destination ending in ``.npz`` or ``.json``; an existing file is
        replaced only once the new one is completely on disk.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    path = Path(path)
    atomic_write(path, schedule_bytes(schedule, _kind(path)))
    return path


def load_schedule(path) -> GainSchedule:
    """Read a schedule written by :func:`save_schedule`, verifying format, version and checksum.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npz`` or ``.json`` schedule file.

    Returns
    -------
    GainSchedule
        Bitwise equal to the schedule that was saved.

    Raises
    ------
    ScheduleFileError
        If the file is truncated or corrupted, of another format or
        version, edited after writing (checksum mismatch) or inconsistent.
    MissingFileError
        If ``path`` does not exist (also a ``FileNotFoundError``).
    FileArgumentError
        If ``path`` is a directory.
    """
    path = check_input_file(path, "path")
    kind = _kind(path)
    raw = path.read_bytes()
    metadata, arrays, stored = (_read_npz if kind == "npz" else _read_json)(raw, path)
    computed = canonical_checksum(metadata, arrays)
    if computed != stored:
        raise ScheduleFileError(
            f"{path}: checksum mismatch (stored sha256 {stored[:16]}..., computed {computed[:16]}...): "
            f"the file was edited or corrupted after it was written")
    try:
        return GainSchedule.from_canonical_parts(metadata, arrays)
    except (ValueError, TypeError, KeyError) as exc:
        raise ScheduleFileError(f"{path}: inconsistent schedule content: {exc}") from exc


def schedule_bytes(schedule: GainSchedule, kind: str) -> bytes:
    """The content of a schedule file, ``.json`` (UTF-8 text) or ``.npz``.

    Parameters
    ----------
    schedule : GainSchedule
        The schedule.
    kind : {"json", "npz"}
        The container.

    Returns
    -------
    bytes
        The whole file: format, version, checksum, metadata and arrays.
    """
    metadata, arrays = schedule.canonical_parts()
    checksum = canonical_checksum(metadata, arrays)
    if kind == "json":
        doc = {
            "format": SCHEDULE_FORMAT,
            "format_version": SCHEDULE_FORMAT_VERSION,
            "checksum": {"algorithm": "sha256", "value": checksum},
            "metadata": metadata,
            "arrays": {f: {"shape": list(a.shape), "data": f"\0{f}\0"} for f, a in arrays.items()},
        }
        # the structure indented, each array's data on one line (json's C encoder: an indented list of
        # a million numbers goes through its Python encoder, one number per line); json writes floats
        # with repr, which round-trips every finite double exactly
        text = json.dumps(doc, indent=1, allow_nan=False, ensure_ascii=False)
        for f, a in arrays.items():   # the arrays come last: their placeholder is the last match
            head, _, tail = text.rpartition(json.dumps(f"\0{f}\0"))
            text = head + json.dumps(a.ravel().tolist(), allow_nan=False) + tail
        return (text + "\n").encode("utf-8")
    buf = io.BytesIO()
    members = {f"array_{f}": np.ascontiguousarray(a, dtype="<f8") for f, a in arrays.items()}
    members["format"] = np.array(SCHEDULE_FORMAT)
    members["format_version"] = np.array(SCHEDULE_FORMAT_VERSION, dtype="<i8")
    members["checksum"] = np.array(checksum)
    members["metadata"] = np.array(json.dumps(metadata, sort_keys=True, allow_nan=False))
    np.savez(buf, **members)
    return buf.getvalue()


def write_schedule_csv(schedule: GainSchedule, path) -> Path:
    """Write one row per sample (atomically): ``t``, ``u0_*``, ``x0_*``, ``xd0_*``, ``K_<input>_<state>``
    (and with an estimator ``M_<state>_<signal>``, ``sampled_<signal>``).

    Values are written with ``repr`` (exact). This is an export for
    spreadsheets and plots; there is no CSV reader, use :func:`save_schedule`.

    Parameters
    ----------
    schedule : GainSchedule
        The schedule to export.
    path : str or os.PathLike
        Destination file (``.csv``).

    Returns
    -------
    pathlib.Path
        The path written.
    """
    path = Path(path)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = (["t"] + [f"u0_{s}" for s in schedule.input_names] + [f"x0_{s}" for s in schedule.coordinate_names]
              + [f"xd0_{s}" for s in schedule.coordinate_names]
              + [f"K_{i}_{j}" for i in schedule.input_names for j in schedule.state_names])
    if schedule.has_estimator:
        header += ([f"M_{i}_{j}" for i in schedule.state_names for j in schedule.signal_names]
                   + [f"sampled_{j}" for j in schedule.signal_names])
    writer.writerow(header)
    for k in range(schedule.n_samples):
        row = np.concatenate(([schedule.times[k]], schedule.u0[k], schedule.x0[k], schedule.xd0[k],
                              schedule.gains[k].ravel()))
        if schedule.has_estimator:
            row = np.concatenate((row, schedule.estimator_gains[k].ravel(), schedule.sampled[k]))
        writer.writerow([c_float_literal(v) for v in row])
    atomic_write(path, buf.getvalue().encode("utf-8"))
    return path


# ------------------------------------------------------------ file helpers
def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".json"):
        raise ParameterError(f"path must end in .npz or .json to choose the format, got {str(path)!r}")
    return suffix[1:]


def _check_header(fmt, version, path: Path) -> None:
    if fmt != SCHEDULE_FORMAT:
        raise ScheduleFileError(f"{path}: not a ballctl gain-schedule file (format {fmt!r}, "
                                f"expected {SCHEDULE_FORMAT!r})")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ScheduleFileError(f"{path}: format_version must be an integer, got {version!r}")
    if version not in _READABLE_VERSIONS:
        raise ScheduleFileError(f"{path}: format version {version} is not supported; this ballctl reads "
                                f"versions {', '.join(str(v) for v in _READABLE_VERSIONS)}")


def _check_metadata(metadata, path: Path) -> dict:
    required = ("plant_name", "plant_parameters", "dt", "state_names", "input_names", "coordinate_names",
                "partition")
    if not isinstance(metadata, dict):
        raise ScheduleFileError(f"{path}: metadata must be an object, got {type(metadata).__name__}")
    missing = [k for k in required if k not in metadata]
    if not missing and not isinstance(metadata["partition"], dict):
        missing = ["partition (not an object)"]
    elif not missing:
        missing = [f"partition.{k}" for k in ("independent", "admissible_dependent", "dependent")
                   if k not in metadata["partition"]]
    if missing:
        raise ScheduleFileError(f"{path}: metadata is missing {missing}")
    return metadata


def _optional_listed(metadata: dict, path: Path) -> tuple[str, ...]:
    """The optional arrays a file's metadata lists (checked against the known ones)."""
    listed = metadata.get("optional_arrays", [])
    if not isinstance(listed, list) or not set(listed) <= set(OPTIONAL_FIELDS):
        raise ScheduleFileError(f"{path}: optional_arrays must list some of {OPTIONAL_FIELDS}, got {listed!r}")
    if "estimator" in metadata:
        est = metadata["estimator"]
        if not isinstance(est, dict) or not {"signal_names", "latency_steps"} <= set(est):
            raise ScheduleFileError(f"{path}: estimator metadata must hold signal_names and latency_steps")
    return tuple(f for f in OPTIONAL_FIELDS if f in listed)


def _read_json(raw: bytes, path: Path) -> tuple[dict, dict, str]:
    def reject_constant(token):
        raise ParameterError(f"non-finite number {token}")

    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
    except UnicodeDecodeError as exc:
        raise ScheduleFileError(f"{path}: not UTF-8 text (corrupted?): {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(f"{path}: not valid JSON (truncated or corrupted) at line {exc.lineno} "
                                f"column {exc.colno}: {exc.msg}") from exc
    except ValueError as exc:
        raise ScheduleFileError(f"{path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise ScheduleFileError(f"{path}: not a ballctl gain-schedule file (top level is not an object)")
    _check_header(doc.get("format"), doc.get("format_version"), path)
    missing = [k for k in ("checksum", "metadata", "arrays") if k not in doc]
    if missing:
        raise ScheduleFileError(f"{path}: missing {missing}")
    checksum = doc["checksum"]
    if (not isinstance(checksum, dict) or checksum.get("algorithm") != "sha256"
            or not isinstance(checksum.get("value"), str)):
        raise ScheduleFileError(f"{path}: checksum must be {{'algorithm': 'sha256', 'value': hex}}, got {checksum!r}")
    metadata = _check_metadata(doc["metadata"], path)
    arrays_doc = doc["arrays"]
    if not isinstance(arrays_doc, dict):
        raise ScheduleFileError(f"{path}: arrays must be an object")
    arrays = {}
    for f in ARRAY_FIELDS + _optional_listed(metadata, path):
        entry = arrays_doc.get(f)
        if not isinstance(entry, dict) or "shape" not in entry or "data" not in entry:
            raise ScheduleFileError(f"{path}: array {f!r} is missing or lacks 'shape'/'data'")
        shape, data = entry["shape"], entry["data"]
        if (not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                   for s in shape)):
            raise ScheduleFileError(f"{path}: array {f!r} has an invalid shape {shape!r}")
        if not isinstance(data, list) or len(data) != math.prod(shape):
            raise ScheduleFileError(f"{path}: array {f!r} has {len(data) if isinstance(data, list) else '?'} "
                                    f"values, its shape {shape} needs {math.prod(shape)}")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
            raise ScheduleFileError(f"{path}: array {f!r} contains values that are not numbers")
        arrays[f] = np.array(data, dtype=np.float64).reshape(shape)
    unknown = sorted(set(arrays_doc) - set(arrays))
    if unknown:
        raise ScheduleFileError(f"{path}: unexpected arrays {unknown}")
    return metadata, arrays, checksum["value"]


def _read_npz(raw: bytes, path: Path) -> tuple[dict, dict, str]:
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            members = {k: z[k] for k in z.files}  # reading every member checks its CRC-32
    except Exception as exc:  # zipfile, zlib, numpy header and EOF errors all mean the same here
        raise ScheduleFileError(f"{path}: cannot read as an npz gain schedule (truncated or corrupted): "
                                f"{type(exc).__name__}: {exc}") from exc
    for key in ("format", "format_version"):
        if key not in members:
            raise ScheduleFileError(f"{path}: not a ballctl gain-schedule file (no {key!r} member)")
    fmt, version = members["format"], members["format_version"]
    fmt = str(fmt[()]) if fmt.dtype.kind == "U" and fmt.ndim == 0 else repr(fmt)
    version = int(version[()]) if version.dtype.kind == "i" and version.ndim == 0 else repr(version)
    _check_header(fmt, version, path)
    missing = [k for k in ("checksum", "metadata") if k not in members]
    if missing:
        raise ScheduleFileError(f"{path}: missing members {missing}")
    try:
        metadata = json.loads(str(members["metadata"][()]))
    except (json.JSONDecodeError, ValueError) as exc:
        raise ScheduleFileError(f"{path}: metadata member is not valid JSON: {exc}") from exc
    metadata = _check_metadata(metadata, path)
    fields = ARRAY_FIELDS + _optional_listed(metadata, path)
    missing = [f"array_{f}" for f in fields if f"array_{f}" not in members]
    if missing:
        raise ScheduleFileError(f"{path}: missing members {missing}")
    arrays = {}
    for f in fields:
        a = members[f"array_{f}"]
        if a.dtype != np.dtype("<f8"):
            raise ScheduleFileError(f"{path}: array {f!r} has dtype {a.dtype}, expected float64")
        arrays[f] = a
    return metadata, arrays, str(members["checksum"][()])
