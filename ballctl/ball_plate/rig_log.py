r"""The rig log: what a ball-plate firmware records while it runs, as a CSV file.

A rig log is the input of the identification (:func:`ballctl.ball_plate.identification.identify_rig`):
one row per control step :math:`t_k = t_0 + k\,\Delta t` with

====================  ========  ===================================================================
column                unit      content
====================  ========  ===================================================================
``t_s``               s         control step time (strictly increasing, uniform step)
``alpha_cmd_rad``     rad       command sent at that step (after the firmware's quantum,
``beta_cmd_rad``      rad       tilt and slew shaping): it acts over :math:`[t_k, t_{k+1})`
``contact_x_m``       m         the contact-point reading the controller **received** at that
``contact_y_m``       m         step; empty where none arrived (not sampled, lost, not yet arrived)
``alpha_rad``         rad       optional: plate angles read by encoders, received at that step
``beta_rad``          rad       (both or neither; empty where none arrived)
``alpha_dither_rad``  rad       optional: the identification dither included in the commands
``beta_dither_rad``   rad       (written by ``ballctl identify --excitation``; not read by the fit)
====================  ========  ===================================================================

Lines starting with ``#`` before the header are comments (the writer puts the
format version and the rig's name there). Columns may come in any order;
unknown columns are refused (a misspelt unit never passes silently). A reading
received at step :math:`k` was *taken* earlier: the sensor latency is what
:func:`~ballctl.ball_plate.identification.identify_rig` estimates from the log.

:meth:`RigLog.from_closed_loop` turns a simulated run on a rig's truth
(:func:`ballctl.simulate_closed_loop` with ``truth=rig.truth_plant()`` and
``options=ClosedLoopOptions(limits=rig.limits, imperfections=rig.imperfections.loop)``) into the log
its firmware would have
written: the commands that acted, and each sensor's readings (with the rig's
noise, lost frames and timing jitter) shifted to the control step at which
they arrived. :func:`read_rig_log` loads a file and refuses a malformed one
naming the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._errors import ConfigError, ParameterError, ShapeError
from .._io import atomic_write_text
from .._paths import check_input_file, check_output_path
from ..simulation.loop_step import latency_steps

__all__ = ["RigLog", "RigLogError", "read_rig_log", "LOG_FORMAT_VERSION", "COMMAND_COLUMNS", "SIGNAL_COLUMNS",
           "DITHER_COLUMNS", "MAX_COMMAND_RAD", "MAX_CONTACT_M", "SPACING_TOLERANCE"]

#: version written in the first comment line
LOG_FORMAT_VERSION = 1
#: the time and command columns (required)
COMMAND_COLUMNS = ("t_s", "alpha_cmd_rad", "beta_cmd_rad")
#: measured signal -> column (the contact point is required, the plate angles optional)
SIGNAL_COLUMNS = {"contact_x": "contact_x_m", "contact_y": "contact_y_m", "alpha": "alpha_rad", "beta": "beta_rad"}
#: the optional dither columns of an excitation
DITHER_COLUMNS = ("alpha_dither_rad", "beta_dither_rad")
#: |plate angle| in rad from which a value is taken for degrees written by mistake (40 deg)
MAX_COMMAND_RAD = 0.7
#: |contact coordinate| in m from which a value is taken for millimetres written by mistake
MAX_CONTACT_M = 2.0
#: largest deviation of a time step from the median step, as a fraction of it
SPACING_TOLERANCE = 0.01

_PAIRS = (("contact_x", "contact_y"), ("alpha", "beta"))


class RigLogError(ConfigError):
    """A rig log file is malformed; ``line`` and ``column`` (1-based, None when not one cell) say where.

    Parameters
    ----------
    message : str
        What is wrong.
    line, column : int, optional
        1-based line of the file and column of the row.
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class RigLog:
    """A log of a ball-plate rig running: commands sent and readings received, one row per control step.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Control step times in s (strictly increasing, uniform to :data:`SPACING_TOLERANCE` of a step).
    commands : ndarray, shape (K, 2)
        Plate commands ``(alpha, beta)`` in rad that acted over ``[t_k, t_k+1)``.
    readings : ndarray, shape (K, ny)
        What the controller received at each step (m for the contact point, rad
        for plate angles), NaN where nothing arrived.
    signal_names : tuple of str
        The measured signals, ``("contact_x", "contact_y")`` optionally followed
        by ``("alpha", "beta")``.
    source : str
        Where the log came from (file name or a description).
    dither : ndarray, shape (K, 2), optional
        The identification dither included in the commands (rad), or None.
    comments : tuple of str
        Comment lines of the file (without ``#``).
    """

    t: np.ndarray
    commands: np.ndarray
    readings: np.ndarray
    signal_names: tuple[str, ...] = ("contact_x", "contact_y")
    source: str = "<memory>"
    dither: np.ndarray | None = None
    comments: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        t = np.array(self.t, dtype=float)
        u = np.array(self.commands, dtype=float)
        y = np.array(self.readings, dtype=float)
        names = tuple(str(s) for s in self.signal_names)
        if t.ndim != 1 or t.size < 3:
            raise ShapeError(f"t must be a vector of at least 3 control times in s, got shape {t.shape}")
        K = t.size
        if u.shape != (K, 2):
            raise ShapeError(f"commands must have shape ({K}, 2) (alpha, beta in rad), got {u.shape}")
        if y.shape != (K, len(names)):
            raise ShapeError(f"readings must have shape ({K}, {len(names)}) for signals {names}, got {y.shape}")
        if names not in (("contact_x", "contact_y"), ("contact_x", "contact_y", "alpha", "beta")):
            raise ParameterError(f"signal_names must be ('contact_x', 'contact_y') optionally followed by "
                                 f"('alpha', 'beta'), got {names}")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(u))):
            raise ParameterError("t (s) and commands (rad) must be finite")
        if np.any(np.isinf(y)):
            raise ParameterError("readings must be finite or NaN (no reading), got an infinity")
        step = np.diff(t)
        if np.any(step <= 0):
            k = int(np.argmax(step <= 0))
            raise ParameterError(f"t must be strictly increasing, got t[{k}] = {t[k]!r} s, t[{k + 1}] = {t[k + 1]!r} s")
        dt = float(np.median(step))
        bad = np.abs(step - dt) > SPACING_TOLERANCE * dt
        if np.any(bad):
            k = int(np.argmax(bad))
            raise ParameterError(f"t must be uniformly spaced (control steps of {dt:.6g} s to "
                                 f"{100 * SPACING_TOLERANCE:g} %), got a step of {step[k]:.6g} s after t[{k}] = "
                                 f"{t[k]:.6g} s")
        if np.any(np.abs(u) >= MAX_COMMAND_RAD):
            raise ParameterError(f"commands must be plate angles in rad with |angle| < {MAX_COMMAND_RAD} rad, got "
                                 f"{np.max(np.abs(u)):.6g} (degrees written as radians?)")
        for a, b in _PAIRS:
            if a in names:
                ia, ib = names.index(a), names.index(b)
                if np.any(np.isnan(y[:, ia]) != np.isnan(y[:, ib])):
                    raise ParameterError(f"readings of {a} and {b} come from one sensor: both or neither at each "
                                         f"step")
        if np.all(np.isnan(y[:, 0])):
            raise ParameterError("the log has no contact-point reading")
        dither = None
        if self.dither is not None:
            dither = np.array(self.dither, dtype=float)
            if dither.shape != (K, 2) or not np.all(np.isfinite(dither)):
                raise ShapeError(f"dither must be finite with shape ({K}, 2) in rad, got {dither.shape}")
            dither.setflags(write=False)
        for a in (t, u, y):
            a.setflags(write=False)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "commands", u)
        object.__setattr__(self, "readings", y)
        object.__setattr__(self, "signal_names", names)
        object.__setattr__(self, "dither", dither)
        object.__setattr__(self, "comments", tuple(str(c) for c in self.comments))

    # ----------------------------------------------------------------- views
    @property
    def dt(self) -> float:
        """Control period in s (the median step of :attr:`t`)."""
        return float(np.median(np.diff(self.t)))

    @property
    def n_steps(self) -> int:
        """Number of rows K."""
        return int(self.t.size)

    @property
    def duration_s(self) -> float:
        """``t[-1] - t[0]`` in s."""
        return float(self.t[-1] - self.t[0])

    @property
    def has_plate_angles(self) -> bool:
        """True when the log carries encoder readings of the plate angles."""
        return "alpha" in self.signal_names

    def reading(self, signal: str) -> np.ndarray:
        """The readings of one signal, shape (K,) (NaN where none arrived).

        Parameters
        ----------
        signal : str
            One of :attr:`signal_names`.

        Returns
        -------
        ndarray, shape (K,)
        """
        if signal not in self.signal_names:
            raise ParameterError(f"signal must be one of {self.signal_names}, got {signal!r}")
        return self.readings[:, self.signal_names.index(signal)]

    @property
    def columns(self) -> tuple[str, ...]:
        """The CSV header this log writes."""
        cols = COMMAND_COLUMNS + tuple(SIGNAL_COLUMNS[s] for s in self.signal_names)
        return cols + (DITHER_COLUMNS if self.dither is not None else ())

    def as_dict(self) -> dict:
        """A JSON-ready summary (not the data): rows, period, duration, signals, received fraction per signal."""
        return {"source": self.source, "rows": self.n_steps, "dt_s": self.dt, "duration_s": self.duration_s,
                "signals": list(self.signal_names),
                "received_fraction": {s: float(np.mean(np.isfinite(self.reading(s)))) for s in self.signal_names},
                "dither": self.dither is not None}

    # ------------------------------------------------------------ from a run
    @classmethod
    def from_closed_loop(cls, result, rig, controller=None, *, source: str | None = None) -> "RigLog":
        """The log a rig's firmware would have written during a simulated closed-loop run.

        Parameters
        ----------
        result : ClosedLoopResult
            An output-feedback run on the rig's truth
            (``simulate_closed_loop(controller, ..., truth=rig.truth_plant(),
            options=ClosedLoopOptions(limits=rig.limits, imperfections=rig.imperfections.loop))``); its
            ``u`` are the commands that acted over each step, its ``y`` the
            sensor samples taken at each step (NaN where not sampled or lost).
        rig : RigProfile
            The rig that ran (its control period ``dt`` and, without a
            ``controller``, its sensors' latencies).
        controller : TrackingController, optional
            The controller that ran; its estimator's sensors give the
            latencies the run used (default: ``rig.sensors``).
        source : str, optional
            Description stored in :attr:`source`.

        Returns
        -------
        RigLog

        Notes
        -----
        The loop samples each sensor at :math:`t_j` (plus the timing jitter);
        the sample arrives after the sensor's latency :math:`\\ell` and is in
        the firmware's hands from the first control step at or after
        :math:`t_j + \\ell`, i.e. step :math:`k = j + \\lceil \\ell/\\Delta t \\rceil`
        (:func:`ballctl.simulation.loop_step.latency_steps`, the rounding of the Kalman
        filter). Row :math:`k` therefore carries ``y[k - L]`` of each sensor
        with its own :math:`L`; the first :math:`L` rows have no reading, and
        the samples of the last :math:`L` steps never arrive within the run.
        For a rig with one sensor :math:`L` is ``controller.estimator.latency_steps``.
        With an actuation delay (``rig.limits.delay > 0``) the logged commands
        are the inputs that acted (their time average over each step), so the
        delay is already in them.
        """
        y = np.asarray(getattr(result, "y", np.zeros((0, 0))), dtype=float)
        names = tuple(getattr(result, "signal_names", ()))
        if not names or y.ndim != 2 or y.shape[1] != len(names):
            raise ParameterError("result must be an output-feedback ClosedLoopResult (readings y with signal_names); "
                                 "run simulate_closed_loop with a controller designed with the rig's sensors")
        if set(names) - set(SIGNAL_COLUMNS):
            raise ParameterError(f"result.signal_names {names} must be among {tuple(SIGNAL_COLUMNS)}")
        sensors = tuple(controller.estimator.sensors) if controller is not None and controller.estimator is not None \
            else tuple(rig.sensors)
        dt = float(rig.dt)
        if abs(float(np.median(np.diff(result.t))) - dt) > 1e-9 * dt:
            raise ParameterError(f"result.t is not on the rig's control period dt = {dt} s")
        arrival = {}
        for s in sensors:
            for sig in s.signals:
                arrival[sig] = latency_steps(s.latency_s, dt)
        missing = [s for s in names if s not in arrival]
        if missing:
            raise ParameterError(f"no sensor of the rig measures {missing}")
        order = [s for s in SIGNAL_COLUMNS if s in names]
        if order[:2] != ["contact_x", "contact_y"]:
            raise ParameterError(f"a rig log needs the contact point among the readings, got {names}")
        K = y.shape[0]
        out = np.full((K, len(order)), np.nan)
        for c, sig in enumerate(order):
            L = arrival[sig]
            if L < K:
                out[L:, c] = y[:K - L, names.index(sig)]
        info = (f"rig = {rig.name}", f"dt_s = {dt!r}",
                "readings received at the control step they arrived (latency steps: "
                + ", ".join(f"{s} {arrival[s]}" for s in order) + ")")
        return cls(np.asarray(result.t, dtype=float), np.asarray(result.u, dtype=float), out, tuple(order),
                   source=source or f"simulated run on rig {rig.name!r}", comments=info)

    # ------------------------------------------------------------------- CSV
    def to_csv_text(self) -> str:
        """The log as CSV text (comment lines, header, one row per step; empty cells where no reading).

        Returns
        -------
        str
        """
        buf = io.StringIO()
        buf.write(f"# ballctl rig log {LOG_FORMAT_VERSION}\n")
        for c in self.comments:
            if not c.startswith("ballctl rig log"):
                buf.write(f"# {c}\n")
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        parts = [self.t[:, None], self.commands, self.readings]
        if self.dither is not None:
            parts.append(self.dither)
        data = np.concatenate(parts, axis=1)
        for row in data:
            writer.writerow(["" if math.isnan(v) else f"{v:.10g}" for v in row])
        return buf.getvalue()

    def write_csv(self, path) -> Path:
        """Write the log as CSV (atomically).

        Parameters
        ----------
        path : str or path-like
            Destination file (its folder must exist).

        Returns
        -------
        pathlib.Path
        """
        path = check_output_path(path, "path")
        return atomic_write_text(path, self.to_csv_text())

    @classmethod
    def from_csv_text(cls, text: str, *, source: str = "<text>") -> "RigLog":
        """Parse a rig log from CSV text (see the module docstring for the format).

        Parameters
        ----------
        text : str
            The file's content.
        source : str
            Name used in error messages.

        Returns
        -------
        RigLog

        Raises
        ------
        RigLogError
            Naming the line and column of the first problem.
        """
        return _parse(text, source)

    @classmethod
    def read_csv(cls, path) -> "RigLog":
        """Read a rig log file (see :func:`read_rig_log`).

        Parameters
        ----------
        path : str or path-like
            The CSV file.

        Returns
        -------
        RigLog
        """
        return read_rig_log(path)


def read_rig_log(path) -> RigLog:
    """Load a rig log CSV file, refusing a malformed one with the line and the column.

    Parameters
    ----------
    path : str or path-like
        The CSV file (see :mod:`ballctl.ball_plate.rig_log` for the columns).

    Returns
    -------
    RigLog

    Raises
    ------
    RigLogError
        For a malformed file: ``"log.csv line 7, column 4 (contact_x_m): ..."``.
    MissingFileError
        When the file does not exist.
    """
    p = check_input_file(path, "log")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RigLogError(f"{str(p)!r} is not UTF-8 text") from None
    return _parse(text, str(p))


def _parse(text: str, source: str) -> RigLog:
    lines = text.splitlines()
    comments: list[str] = []
    header_line = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if header_line is None:
                comments.append(stripped[1:].strip())
                continue
        header_line = i
        break
    if header_line is None:
        raise RigLogError(f"{source}: no header line (expected the columns {', '.join(COMMAND_COLUMNS)}, "
                          f"contact_x_m, contact_y_m)")

    def where(line_no: int, col: int | None = None, name: str | None = None) -> str:
        at = f"{source} line {line_no}"
        return at + (f", column {col} ({name})" if col is not None else "")

    header = next(csv.reader([lines[header_line]]))
    header = [h.strip() for h in header]
    known = set(COMMAND_COLUMNS) | set(SIGNAL_COLUMNS.values()) | set(DITHER_COLUMNS)
    for c, name in enumerate(header):
        if name not in known:
            raise RigLogError(f"{where(header_line + 1, c + 1, name)}: unknown column {name!r}; columns are "
                              f"{', '.join(sorted(known))}", line=header_line + 1, column=c + 1)
        if header.index(name) != c:
            raise RigLogError(f"{where(header_line + 1, c + 1, name)}: column {name!r} appears twice",
                              line=header_line + 1, column=c + 1)
    required = list(COMMAND_COLUMNS) + ["contact_x_m", "contact_y_m"]
    absent = [n for n in required if n not in header]
    if absent:
        raise RigLogError(f"{where(header_line + 1)}: missing column(s) {', '.join(absent)}", line=header_line + 1)
    for group in (("alpha_rad", "beta_rad"), DITHER_COLUMNS):
        if (group[0] in header) != (group[1] in header):
            raise RigLogError(f"{where(header_line + 1)}: give both columns {group[0]} and {group[1]} or neither",
                              line=header_line + 1)
    signals = [s for s, col in SIGNAL_COLUMNS.items() if col in header]
    optional = {SIGNAL_COLUMNS[s] for s in signals}
    rows: list[list[float]] = []
    line_numbers: list[int] = []
    for i in range(header_line + 1, len(lines)):
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        fields = next(csv.reader([raw]))
        if len(fields) != len(header):
            raise RigLogError(f"{where(i + 1)}: {len(fields)} fields, the header has {len(header)}", line=i + 1)
        values = []
        for c, (name, cell) in enumerate(zip(header, fields)):
            cell = cell.strip()
            if cell == "":
                if name in optional:
                    values.append(math.nan)
                    continue
                raise RigLogError(f"{where(i + 1, c + 1, name)}: empty (only readings may be empty)",
                                  line=i + 1, column=c + 1)
            try:
                v = float(cell)
            except ValueError:
                raise RigLogError(f"{where(i + 1, c + 1, name)}: {cell!r} is not a number", line=i + 1,
                                  column=c + 1) from None
            if not math.isfinite(v):
                raise RigLogError(f"{where(i + 1, c + 1, name)}: {cell!r} is not a finite number (leave the cell "
                                  f"empty for a missing reading)", line=i + 1, column=c + 1)
            if name.endswith("_rad") and abs(v) >= MAX_COMMAND_RAD:
                raise RigLogError(f"{where(i + 1, c + 1, name)}: {v:g} rad is beyond {MAX_COMMAND_RAD} rad "
                                  f"({np.rad2deg(MAX_COMMAND_RAD):.0f} deg): angles must be radians", line=i + 1,
                                  column=c + 1)
            if name.endswith("_m") and abs(v) >= MAX_CONTACT_M:
                raise RigLogError(f"{where(i + 1, c + 1, name)}: {v:g} m is beyond {MAX_CONTACT_M} m: the contact "
                                  f"point must be metres", line=i + 1, column=c + 1)
            values.append(v)
        for a, b in (("contact_x_m", "contact_y_m"), ("alpha_rad", "beta_rad")):
            if a in header:
                ia, ib = header.index(a), header.index(b)
                if math.isnan(values[ia]) != math.isnan(values[ib]):
                    c = ia if math.isnan(values[ia]) else ib
                    raise RigLogError(f"{where(i + 1, c + 1, header[c])}: empty while {header[ib if c == ia else ia]} "
                                      f"has a reading (one sensor gives both)", line=i + 1, column=c + 1)
        rows.append(values)
        line_numbers.append(i + 1)
    if len(rows) < 3:
        raise RigLogError(f"{source}: {len(rows)} data row(s); a log needs at least 3 control steps")
    data = np.array(rows)
    col = {name: c for c, name in enumerate(header)}
    t = data[:, col["t_s"]]
    step = np.diff(t)
    tc = col["t_s"] + 1
    if np.any(step <= 0):
        k = int(np.argmax(step <= 0)) + 1
        raise RigLogError(f"{where(line_numbers[k], tc, 't_s')}: t_s = {t[k]:g} s does not increase (previous row "
                          f"{t[k - 1]:g} s)", line=line_numbers[k], column=tc)
    dt = float(np.median(step))
    bad = np.abs(step - dt) > SPACING_TOLERANCE * dt
    if np.any(bad):
        k = int(np.argmax(bad)) + 1
        raise RigLogError(f"{where(line_numbers[k], tc, 't_s')}: step {step[k - 1]:.6g} s from the previous row; the "
                          f"control steps must be uniform ({dt:.6g} s to {100 * SPACING_TOLERANCE:g} %)",
                          line=line_numbers[k], column=tc)
    readings = data[:, [col[SIGNAL_COLUMNS[s]] for s in signals]]
    if np.all(np.isnan(readings[:, 0])):
        raise RigLogError(f"{source}: the contact_x_m and contact_y_m columns are empty on every row")
    dither = data[:, [col[c] for c in DITHER_COLUMNS]] if DITHER_COLUMNS[0] in col else None
    try:
        return RigLog(t, data[:, [col["alpha_cmd_rad"], col["beta_cmd_rad"]]], readings, tuple(signals),
                      source=source, dither=dither, comments=tuple(comments))
    except ParameterError as exc:  # pragma: no cover - the row checks above catch these first
        raise RigLogError(f"{source}: {exc}") from None
