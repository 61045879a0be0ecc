r"""Gain schedules: the finite-horizon LQR gains with their reference, stored and exported.

A :class:`GainSchedule` holds everything a controller needs on the target,
:math:`u = u_0(t_k) + \delta u_k` with :math:`\delta u_k = -K_k X_k` (Agúndez
et al. 2024, eqs. 27 and 30), plus what is needed to reproduce it: the
partition, the plant and its parameters, the weights (eqs. 24-26).

Files
-----
``save`` writes ``.npz`` (numpy arrays plus a JSON metadata member) or
``.json`` (every float written with ``repr``, which round-trips exactly).
Both carry the format name, :data:`SCHEDULE_FORMAT_VERSION` and a SHA-256
checksum over a canonical serialization (metadata as sorted compact JSON,
then each array as its name, shape and little-endian float64 bytes), so the
checksum does not depend on the container. ``load`` refuses, with
:class:`~ballctl._errors.ScheduleFileError` naming the problem, files that are
truncated, corrupted, edited or of another format version. Every write
(``save``, ``to_csv``, ``to_c_header``) is atomic: the content is serialized
in memory, written to a temporary file in the destination directory, flushed
and fsync'ed, then moved over the destination with ``os.replace``; on any
failure the temporary file is removed and an existing file is left intact.

Time lookup
-----------
Gain ``k`` is held over :math:`[t_k, t_k + \Delta t)` (zero-order hold), so the
schedule covers :math:`[t_0, t_{K-1} + \Delta t)`: the index at ``t`` is the
last sample with ``times[k] <= t``. The C header implements the same rule
with a binary search on the same doubles.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ScheduleFileError, ShapeError
from .._io import atomic_write
from .._validation import check_finite_scalar, check_input_file, check_positive
from ..linear.discretize import DiscreteLTVSystem

__all__ = ["SCHEDULE_FORMAT", "SCHEDULE_FORMAT_VERSION", "GainSchedule"]

#: Format name stored in every schedule file.
SCHEDULE_FORMAT = "ballctl-gain-schedule"
#: Version of the file layout and of the checksum's canonical serialization.
SCHEDULE_FORMAT_VERSION = 2
#: versions this ballctl reads (version 1 files have no model or estimator arrays)
_READABLE_VERSIONS = (1, 2)

_ARRAY_FIELDS = ("times", "gains", "x0", "xd0", "u0", "Q", "R", "Q_N")
#: optional arrays, stored when present: the discrete model (for prediction) and the Kalman filter
_OPTIONAL_FIELDS = ("Ad", "Bd", "estimator_gains", "measurement_matrices", "sampled", "feedback_gains")
_SPACING_RTOL = 1e-9  # as in ballctl.linear.discretize
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while".split())




# ---------------------------------------------------------------- validation
def _names(value, label: str, count: int | None = None, *, allow_empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ParameterError(f"{label} must be a sequence of names, not a single string {value!r}")
    out = tuple(value)
    bad = [s for s in out if not isinstance(s, str) or not s]
    if bad:
        raise ParameterError(f"{label} must be non-empty strings, got {bad}")
    if len(set(out)) != len(out):
        raise ParameterError(f"{label} must be unique, got {out}")
    if count is not None and len(out) != count:
        raise ParameterError(f"{label} must have {count} entries to match the arrays, got {len(out)}: {out}")
    if not out and not allow_empty:
        raise ParameterError(f"{label} must not be empty")
    return out


def _array(value, label: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.array(value, dtype=np.float64)  # always a private copy
    if shape is not None and arr.shape != shape:
        raise ShapeError(f"{label} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{label} must be finite")
    arr.setflags(write=False)
    return arr


def c_float_literal(x: float) -> str:
    """Shortest text that parses back to exactly ``x`` (Python repr, also a valid C double literal)."""
    return repr(float(x))


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class GainSchedule:
    r"""A time-varying LQR gain schedule with its reference motion (eqs. 27, 30).

    All arguments are keyword-only. Arrays are copied and made read-only.

    Attributes
    ----------
    times : ndarray, shape (Kt,)
        Sample times in s, uniformly spaced with step ``dt``.
    gains : ndarray, shape (Kt, nu, N)
        :math:`K_k`; the feedback is ``du = -gains[k] @ X`` (eq. 27).
    x0 : ndarray, shape (Kt, n)
        Reference coordinates :math:`x_0(t_k)` (SI units, radians).
    xd0 : ndarray, shape (Kt, n)
        Reference velocities :math:`\dot x_0(t_k)`.
    u0 : ndarray, shape (Kt, nu)
        Reference inputs :math:`u_0(t_k)`; the applied input is ``u0[k] + du`` (eq. 30).
    state_names : tuple of str
        The N states, ``X = (dx_ai, dxd_ai, dx_ad)``.
    input_names : tuple of str
        The nu inputs.
    coordinate_names : tuple of str
        The n generalized coordinates (columns of ``x0`` and ``xd0``).
    independent, admissible_dependent, dependent : tuple of str
        The coordinate partition (eqs. 9-12): every coordinate in exactly one
        set, and ``N = 2 len(independent) + len(admissible_dependent)``.
    dt : float
        Controller sample time in s.
    plant_name : str
        Name of the plant model (registry name).
    plant_parameters : mapping of str to float
        The plant's parameters, SI units (stored read-only).
    Q : ndarray, shape (N, N) or (Kt, N, N)
        State weight :math:`Q_w`.
    R : ndarray, shape (nu, nu) or (Kt, nu, nu)
        Input weight :math:`R_w`.
    Q_N : ndarray, shape (N, N)
        Terminal weight :math:`Q_{N_t}`.
    Ad, Bd : ndarray, shape (Kt, Ne, Ne) and (Kt, Ne, nu), optional
        The discrete model the estimator predicts with: the design's (Ne = N),
        or with an offset-free estimator the design's augmented by its
        disturbance states and integrators (Ne = N + len(augmented_state_names)).
    estimator_gains : ndarray, shape (Kt, Ne, ny), optional
        Kalman update gains :math:`M_k` (``X_post = X_prior + M_k (y - C_k X_prior)``).
    measurement_matrices : ndarray, shape (Kt, ny, Ne), optional
        :math:`C_k` (zero rows where a signal is not sampled).
    sampled : ndarray, shape (Kt, ny), optional
        1.0 where a signal is sampled at step k, else 0.0.
    signal_names : tuple of str
        The ny measured coordinates (empty without an estimator).
    latency_steps : int
        Control steps until a sample is used (the largest sensor latency, rounded up).
    augmented_state_names : tuple of str
        The estimator's states beyond the design's N (disturbances, integrators); empty without them.
    feedback_gains : ndarray, shape (Kt, nu, Ne), optional
        With augmented states: the output-feedback law ``du = -feedback_gains[k] @ X_hat``
        on the estimator's state (``gains`` stays the state-feedback LQR).
    """

    times: np.ndarray
    gains: np.ndarray
    x0: np.ndarray
    xd0: np.ndarray
    u0: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    coordinate_names: tuple[str, ...]
    independent: tuple[str, ...]
    admissible_dependent: tuple[str, ...]
    dependent: tuple[str, ...] = ()
    dt: float
    plant_name: str
    plant_parameters: Mapping[str, float] = field(default_factory=dict)
    Q: np.ndarray
    R: np.ndarray
    Q_N: np.ndarray
    Ad: np.ndarray | None = None
    Bd: np.ndarray | None = None
    estimator_gains: np.ndarray | None = None
    measurement_matrices: np.ndarray | None = None
    sampled: np.ndarray | None = None
    signal_names: tuple[str, ...] = ()
    latency_steps: int = 0
    augmented_state_names: tuple[str, ...] = ()
    feedback_gains: np.ndarray | None = None

    def __post_init__(self) -> None:
        gains = _array(self.gains, "gains")
        if gains.ndim != 3 or 0 in gains.shape:
            raise ShapeError(f"gains must have shape (Kt, nu, N) with Kt, nu, N >= 1, got {gains.shape}")
        Kt, nu, N = gains.shape
        times = _array(self.times, "times", (Kt,))
        dt = check_positive(self.dt, "dt", "s")
        if Kt > 1:
            steps = np.diff(times)
            tol = _SPACING_RTOL * dt + 64 * np.finfo(float).eps * float(np.max(np.abs(times)))
            if np.any(np.abs(steps - dt) > tol):
                raise ParameterError(f"times must be uniformly spaced with step dt={dt!r} s "
                                 f"(steps range from {steps.min()!r} to {steps.max()!r})")
        coords = _names(self.coordinate_names, "coordinate_names")
        n = len(coords)
        state_names = _names(self.state_names, "state_names", N)
        input_names = _names(self.input_names, "input_names", nu)
        ai = _names(self.independent, "independent")
        ad = _names(self.admissible_dependent, "admissible_dependent", allow_empty=True)
        d = _names(self.dependent, "dependent", allow_empty=True)
        listed = ai + ad + d
        unknown = sorted(set(listed) - set(coords))
        repeated = sorted({s for s in listed if listed.count(s) > 1})
        missing = [s for s in coords if s not in listed]
        if unknown or repeated or missing:
            raise ParameterError(f"the partition must list every coordinate exactly once (unknown {unknown}, "
                             f"repeated {repeated}, missing {missing})")
        full_states = ai + tuple(f"{a}_rate" for a in ai) + ad
        if not set(self.state_names) <= set(full_states):
            raise ParameterError(f"state names {self.state_names} are not among the partition's reduced states "
                             f"{full_states}")
        x0 = _array(self.x0, "x0", (Kt, n))
        xd0 = _array(self.xd0, "xd0", (Kt, n))
        u0 = _array(self.u0, "u0", (Kt, nu))
        Q = _array(self.Q, "Q")
        if Q.shape not in ((N, N), (Kt, N, N)):
            raise ShapeError(f"Q must have shape {(N, N)} or {(Kt, N, N)}, got {Q.shape}")
        R = _array(self.R, "R")
        if R.shape not in ((nu, nu), (Kt, nu, nu)):
            raise ShapeError(f"R must have shape {(nu, nu)} or {(Kt, nu, nu)}, got {R.shape}")
        Q_N = _array(self.Q_N, "Q_N", (N, N))
        if not isinstance(self.plant_name, str) or not self.plant_name:
            raise ParameterError(f"plant_name must be a non-empty string, got {self.plant_name!r}")
        if not isinstance(self.plant_parameters, Mapping):
            raise ParameterError(f"plant_parameters must be a mapping of str to float, got "
                             f"{type(self.plant_parameters).__name__}")
        params = {}
        for key in sorted(self.plant_parameters):
            value = self.plant_parameters[key]
            if not isinstance(key, str) or not key:
                raise ParameterError(f"plant_parameters keys must be non-empty strings, got {key!r}")
            if isinstance(value, bool):
                raise ParameterError(f"plant_parameters[{key!r}] must be a number, got {value!r}")
            params[key] = check_finite_scalar(value, f"plant_parameters[{key!r}]")
        for name, value in (("times", times), ("gains", gains), ("x0", x0), ("xd0", xd0), ("u0", u0), ("Q", Q),
                            ("R", R), ("Q_N", Q_N), ("dt", dt), ("state_names", state_names),
                            ("input_names", input_names), ("coordinate_names", coords), ("independent", ai),
                            ("admissible_dependent", ad), ("dependent", d),
                            ("plant_parameters", MappingProxyType(params))):
            object.__setattr__(self, name, value)
        self._check_optional(Kt, N, nu)

    def _check_optional(self, Kt: int, N: int, nu: int) -> None:
        """Model and estimator arrays: all of a group or none, with consistent shapes."""
        if (self.Ad is None) != (self.Bd is None):
            raise ParameterError("give both Ad and Bd (the discrete model) or neither")
        extra = _names(self.augmented_state_names, "augmented_state_names", allow_empty=True)
        object.__setattr__(self, "augmented_state_names", extra)
        if bool(extra) != (self.feedback_gains is not None):
            raise ParameterError("augmented_state_names and feedback_gains go together (an offset-free estimator)")
        N = N + len(extra)  # the estimator's state
        if self.feedback_gains is not None:
            object.__setattr__(self, "feedback_gains", _array(self.feedback_gains, "feedback_gains", (Kt, nu, N)))
        if self.Ad is not None:
            object.__setattr__(self, "Ad", _array(self.Ad, "Ad", (Kt, N, N)))
            object.__setattr__(self, "Bd", _array(self.Bd, "Bd", (Kt, N, nu)))
        est = (self.estimator_gains, self.measurement_matrices, self.sampled)
        if all(a is None for a in est):
            if self.signal_names or extra:
                raise ParameterError("signal_names or augmented states are given without estimator arrays")
            return
        if any(a is None for a in est) or self.Ad is None:
            raise ParameterError("an estimator needs estimator_gains, measurement_matrices, sampled and the model "
                                 "Ad, Bd together")
        signals = _names(self.signal_names, "signal_names")
        ny = len(signals)
        object.__setattr__(self, "signal_names", signals)
        object.__setattr__(self, "estimator_gains", _array(self.estimator_gains, "estimator_gains", (Kt, N, ny)))
        object.__setattr__(self, "measurement_matrices",
                           _array(self.measurement_matrices, "measurement_matrices", (Kt, ny, N)))
        sampled = _array(self.sampled, "sampled", (Kt, ny))
        if not np.all((sampled == 0.0) | (sampled == 1.0)):
            raise ParameterError("sampled must hold only 0.0 and 1.0")
        object.__setattr__(self, "sampled", sampled)
        lat = self.latency_steps
        if isinstance(lat, bool) or not isinstance(lat, (int, np.integer)) or lat < 0:
            raise ParameterError(f"latency_steps must be an integer >= 0 (control steps), got {lat!r}")
        object.__setattr__(self, "latency_steps", int(lat))

    @property
    def has_estimator(self) -> bool:
        """True when the schedule carries a Kalman filter."""
        return self.estimator_gains is not None

    @property
    def estimator_state_names(self) -> tuple[str, ...]:
        """The estimator's Ne states: the design's, then the augmented ones."""
        return self.state_names + self.augmented_state_names

    @property
    def output_feedback_gains(self) -> np.ndarray:
        """The output-feedback law's gains on the estimator's state, shape (Kt, nu, Ne)."""
        return self.gains if self.feedback_gains is None else self.feedback_gains

    def _present_optional(self) -> tuple[str, ...]:
        return tuple(f for f in _OPTIONAL_FIELDS if getattr(self, f) is not None)

    # ------------------------------------------------------------- builders
    @classmethod
    def from_lqr(cls, lqr, system: DiscreteLTVSystem, *, x0, xd0, u0, plant_name: str,
                 plant_parameters: Mapping[str, float], estimator=None, feedback_gains=None,
                 augmented_state_names=()) -> "GainSchedule":
        """Build a schedule from a :class:`~ballctl.design.lqr.FiniteHorizonLQR` and the system it was designed on.

        Times, ``dt``, names and the partition come from ``system`` (whose
        ``partition`` must be set); gains and weights from ``lqr``. A weight
        that is the same at every step is stored once, ``(N, N)``.

        Parameters
        ----------
        lqr : FiniteHorizonLQR
            Result of :func:`ballctl.design.lqr.finite_horizon_lqr` on ``system``.
        system : DiscreteLTVSystem
            The discrete system the LQR was designed on.
        x0, xd0 : ndarray, shape (Kt, n)
            Reference coordinates and velocities at ``system.t``.
        u0 : ndarray, shape (Kt, nu)
            Reference inputs at ``system.t``.
        plant_name : str
            Registry name of the plant.
        plant_parameters : mapping of str to float
            The plant's parameters (SI units).
        estimator : StateEstimator, optional
            The design's Kalman filter (:mod:`ballctl.design.estimator`); stored with
            its prediction model ``estimator.Ad``, ``estimator.Bd`` (without an
            estimator the design's ``system.Ad``, ``system.Bd`` are stored).
        feedback_gains : ndarray, shape (Kt, nu, Ne), optional
            With an offset-free estimator: the law on its state.
        augmented_state_names : sequence of str
            With ``feedback_gains``: names of the estimator's states beyond the design's.

        Returns
        -------
        GainSchedule
        """
        if not isinstance(system, DiscreteLTVSystem):
            raise ParameterTypeError(f"system must be a DiscreteLTVSystem, got {type(system).__name__}")
        if system.partition is None:
            raise ParameterError("system.partition is None: a gain schedule records the partition")
        if lqr.gains.shape[0] != len(system):
            raise ParameterError(f"lqr has {lqr.gains.shape[0]} steps but system has {len(system)} samples")

        def collapse(W):
            return W[0] if np.all(W == W[0]) else W

        part = system.partition
        return cls(times=system.t, gains=lqr.gains, x0=x0, xd0=xd0, u0=u0, state_names=system.state_names,
                   input_names=system.input_names, coordinate_names=part.coordinate_names,
                   independent=part.independent_names, admissible_dependent=part.admissible_dependent_names,
                   dependent=part.dependent_names, dt=system.dt, plant_name=plant_name,
                   plant_parameters=plant_parameters, Q=collapse(lqr.Q), R=collapse(lqr.R), Q_N=lqr.Q_N,
                   Ad=system.Ad if estimator is None else estimator.Ad,
                   Bd=system.Bd if estimator is None else estimator.Bd,
                   **({} if estimator is None else dict(
                       estimator_gains=estimator.kalman.update_gains, measurement_matrices=estimator.kalman.C,
                       sampled=estimator.sampled.astype(float), signal_names=estimator.signal_names,
                       latency_steps=estimator.latency_steps)),
                   **({} if feedback_gains is None else dict(
                       feedback_gains=feedback_gains, augmented_state_names=tuple(augmented_state_names))))

    # ---------------------------------------------------------- properties
    @property
    def n_samples(self) -> int:
        return self.gains.shape[0]

    @property
    def n_states(self) -> int:
        return self.gains.shape[2]

    @property
    def n_inputs(self) -> int:
        return self.gains.shape[1]

    @property
    def end_time(self) -> float:
        """End of the last hold interval, ``times[-1] + dt`` (excluded)."""
        return float(self.times[-1] + self.dt)

    def __repr__(self) -> str:
        return (f"GainSchedule(plant={self.plant_name!r}, samples={self.n_samples}, dt={self.dt!r} s, "
                f"t=[{float(self.times[0])!r}, {self.end_time!r}), N={self.n_states}, nu={self.n_inputs})")

    def is_identical(self, other: "GainSchedule") -> bool:
        """True when every array is bitwise equal (same shapes, signed zeros) and all metadata is equal.

        Parameters
        ----------
        other : GainSchedule
            The schedule to compare with.
        """
        if not isinstance(other, GainSchedule):
            return False
        if self._metadata() != other._metadata():
            return False
        if self._present_optional() != other._present_optional():
            return False
        return all(getattr(self, f).shape == getattr(other, f).shape
                   and getattr(self, f).tobytes() == getattr(other, f).tobytes()
                   for f in _ARRAY_FIELDS + self._present_optional())

    # -------------------------------------------------------------- lookup
    def index_at(self, t: float) -> int:
        """Index of the gain in force at ``t``: the last ``k`` with ``times[k] <= t`` (zero-order hold).

        Parameters
        ----------
        t : float
            Time in s.

        Returns
        -------
        int
            ``k`` in ``0 .. Kt - 1``.

        Raises
        ------
        ValueError
            If ``t`` is outside ``[times[0], times[-1] + dt)``.
        """
        t = check_finite_scalar(t, "t")
        if not (self.times[0] <= t < self.times[-1] + self.dt):
            raise ParameterError(f"t={t!r} s is outside the schedule [{float(self.times[0])!r}, {self.end_time!r}) s")
        return int(np.searchsorted(self.times, t, side="right")) - 1

    def gain_at(self, t: float) -> np.ndarray:
        """The gain in force at ``t`` (zero-order hold, see :meth:`index_at`).

        Parameters
        ----------
        t : float
            Time in s, in ``[times[0], times[-1] + dt)``.

        Returns
        -------
        ndarray, shape (nu, N)
            :math:`K_k` (eq. 28), read-only.
        """
        return self.gains[self.index_at(t)]

    def du_at(self, t: float, X) -> np.ndarray:
        """The feedback ``du = -K(t) X`` (eq. 27).

        Parameters
        ----------
        t : float
            Time in s.
        X : ndarray, shape (N,)
            State deviation ``(dx_ai, dxd_ai, dx_ad)``.

        Returns
        -------
        ndarray, shape (nu,)
            Input correction; the applied input is ``u0[k] + du`` (eq. 30).
        """
        X = np.asarray(X, dtype=float)
        if X.shape != (self.n_states,) or not np.all(np.isfinite(X)):
            raise ShapeError(f"X must be a finite vector of length {self.n_states}, got shape {X.shape}")
        return -(self.gain_at(t) @ X)

    # ------------------------------------------------- canonical serialization
    def _metadata(self) -> dict:
        meta = {
            "plant_name": self.plant_name,
            "plant_parameters": dict(self.plant_parameters),
            "dt": self.dt,
            "state_names": list(self.state_names),
            "input_names": list(self.input_names),
            "coordinate_names": list(self.coordinate_names),
            "partition": {"independent": list(self.independent),
                          "admissible_dependent": list(self.admissible_dependent),
                          "dependent": list(self.dependent)},
        }
        optional = self._present_optional()
        if optional:  # absent keys keep the checksum of schedules without them (version 1) unchanged
            meta["optional_arrays"] = list(optional)
        if self.has_estimator:
            meta["estimator"] = {"signal_names": list(self.signal_names), "latency_steps": self.latency_steps}
            if self.augmented_state_names:  # absent for a plain estimator: its checksum is unchanged
                meta["estimator"]["augmented_state_names"] = list(self.augmented_state_names)
        return meta

    def _arrays(self) -> dict[str, np.ndarray]:
        return {f: getattr(self, f) for f in _ARRAY_FIELDS + self._present_optional()}

    @property
    def checksum(self) -> str:
        """SHA-256 (hex) of the canonical serialization written into every file."""
        return _checksum(self._metadata(), self._arrays())

    @classmethod
    def _from_parts(cls, metadata: dict, arrays: dict[str, np.ndarray]) -> "GainSchedule":
        part = metadata["partition"]
        est = metadata.get("estimator")
        extra = {} if est is None else {"signal_names": est["signal_names"], "latency_steps": est["latency_steps"],
                                        "augmented_state_names": tuple(est.get("augmented_state_names", ()))}
        return cls(**arrays, **extra, plant_name=metadata["plant_name"], plant_parameters=metadata["plant_parameters"],
                   dt=metadata["dt"], state_names=metadata["state_names"], input_names=metadata["input_names"],
                   coordinate_names=metadata["coordinate_names"], independent=part["independent"],
                   admissible_dependent=part["admissible_dependent"], dependent=part["dependent"])

    # ----------------------------------------------------------- save/load
    def save(self, path) -> Path:
        """Write the schedule to ``path`` atomically; the format follows the suffix, ``.npz`` or ``.json``.

        Parameters
        ----------
        path : str or os.PathLike
            Destination ending in ``.npz`` or ``.json``; an existing file is
            replaced only once the new one is completely on disk.

        Returns
        -------
        pathlib.Path
            The path written.
        """
        path = Path(path)
        kind = _kind(path)
        data = self._npz_bytes() if kind == "npz" else self._json_bytes()
        atomic_write(path, data)
        return path

    @classmethod
    def load(cls, path) -> "GainSchedule":
        """Read a schedule written by :meth:`save`, verifying format, version and checksum.

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
        computed = _checksum(metadata, arrays)
        if computed != stored:
            raise ScheduleFileError(
                f"{path}: checksum mismatch (stored sha256 {stored[:16]}..., computed {computed[:16]}...): "
                f"the file was edited or corrupted after it was written")
        try:
            return cls._from_parts(metadata, arrays)
        except (ValueError, TypeError, KeyError) as exc:
            raise ScheduleFileError(f"{path}: inconsistent schedule content: {exc}") from exc

    def _json_bytes(self) -> bytes:
        doc = {
            "format": SCHEDULE_FORMAT,
            "format_version": SCHEDULE_FORMAT_VERSION,
            "checksum": {"algorithm": "sha256", "value": self.checksum},
            "metadata": self._metadata(),
            "arrays": {f: {"shape": list(a.shape), "data": a.ravel().tolist()} for f, a in self._arrays().items()},
        }
        # json writes floats with repr, which round-trips every finite double exactly
        return (json.dumps(doc, indent=1, allow_nan=False, ensure_ascii=False) + "\n").encode("utf-8")

    def _npz_bytes(self) -> bytes:
        buf = io.BytesIO()
        members = {f"array_{f}": np.ascontiguousarray(a, dtype="<f8") for f, a in self._arrays().items()}
        members["format"] = np.array(SCHEDULE_FORMAT)
        members["format_version"] = np.array(SCHEDULE_FORMAT_VERSION, dtype="<i8")
        members["checksum"] = np.array(self.checksum)
        members["metadata"] = np.array(json.dumps(self._metadata(), sort_keys=True, allow_nan=False))
        np.savez(buf, **members)
        return buf.getvalue()

    # -------------------------------------------------------------- exports
    def to_csv(self, path) -> Path:
        """Write one row per sample (atomically): ``t``, ``u0_*``, ``x0_*``, ``xd0_*``, ``K_<input>_<state>``
        (and with an estimator ``M_<state>_<signal>``, ``sampled_<signal>``).

        Values are written with ``repr`` (exact). This is an export for
        spreadsheets and plots; there is no CSV reader, use :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file.
        """
        path = Path(path)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        header = (["t"] + [f"u0_{s}" for s in self.input_names] + [f"x0_{s}" for s in self.coordinate_names]
                  + [f"xd0_{s}" for s in self.coordinate_names]
                  + [f"K_{i}_{j}" for i in self.input_names for j in self.state_names])
        if self.has_estimator:
            header += ([f"M_{i}_{j}" for i in self.state_names for j in self.signal_names]
                       + [f"sampled_{j}" for j in self.signal_names])
        writer.writerow(header)
        for k in range(self.n_samples):
            row = np.concatenate(([self.times[k]], self.u0[k], self.x0[k], self.xd0[k], self.gains[k].ravel()))
            if self.has_estimator:
                row = np.concatenate((row, self.estimator_gains[k].ravel(), self.sampled[k]))
            writer.writerow([c_float_literal(v) for v in row])
        atomic_write(path, buf.getvalue().encode("utf-8"))
        return path

    def to_c_header(self, path, *, name: str = "ballctl_schedule") -> Path:
        """Write a self-contained C99 header (atomically) with the schedule as ``static const double`` arrays.

        It defines ``<name>_times``, ``<name>_gains[K][NU][N]``, ``<name>_u0``,
        ``<name>_x0``, ``<name>_xd0``, ``<name>_dt``, the sizes as macros
        ``<NAME>_N_SAMPLES`` etc., and two functions:

        * ``long <name>_index(double t)``: the gain index in force at ``t``
          (binary search, last ``times[k] <= t``), ``-1`` outside
          ``[times[0], times[K-1] + dt)``, the rule of :meth:`index_at`;
        * ``long <name>_du(double t, const double X[N], double du[NU])``:
          ``du = -K[k] X`` (eq. 27), returning ``k`` (or ``-1``, ``du``
          untouched).

        Doubles are written with ``repr``, which a correctly rounding
        compiler (gcc, clang) reads back to the same bits.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file.
        name : str
            C identifier prefix of the arrays and macros.
        """
        if not isinstance(name, str) or not _C_IDENTIFIER.fullmatch(name) or name in _C_KEYWORDS:
            raise ParameterError(f"name must be a C identifier, got {name!r}")
        path = Path(path)
        atomic_write(path, self._c_header_text(name).encode("ascii"))
        return path

    def _c_header_text(self, name: str) -> str:
        up = name.upper()
        Kt, nu, N = self.gains.shape
        n = len(self.coordinate_names)

        def comment(text: str) -> str:
            return text.replace("*/", "* /").encode("ascii", "backslashreplace").decode("ascii")

        def initializer(arr: np.ndarray, indent: str = "    ") -> str:
            if arr.ndim == 1:
                vals = [c_float_literal(v) for v in arr]
                if len(vals) <= 6:
                    return "{" + ", ".join(vals) + "}"
                lines = [", ".join(vals[i:i + 6]) for i in range(0, len(vals), 6)]
                return "{\n" + ",\n".join(indent + ln for ln in lines) + "\n" + indent[:-4] + "}"
            inner = [initializer(sub, indent + "    ") for sub in arr]
            return "{\n" + ",\n".join(indent + s for s in inner) + "\n" + indent[:-4] + "}"

        guard = f"{up}_H_"
        params = ", ".join(f"{k}={c_float_literal(v)}" for k, v in self.plant_parameters.items())
        out = [
            f"/* {comment(name)}: ballctl gain schedule, format version {SCHEDULE_FORMAT_VERSION}, "
            f"sha256 {self.checksum}.",
            f" * Plant {comment(self.plant_name)} ({comment(params)}).",
            f" * {Kt} samples, dt = {c_float_literal(self.dt)} s, covering [{c_float_literal(self.times[0])}, "
            f"{c_float_literal(self.end_time)}) s.",
            " * Feedback (Aguendez et al. 2024, eqs. 27 and 30): du = -K[k] X, u = u0[k] + du,",
            f" * X = ({comment(', '.join(self.state_names))}),",
            f" * u = ({comment(', '.join(self.input_names))}),",
            f" * x0, xd0 columns = ({comment(', '.join(self.coordinate_names))}).",
            " * Generated file: do not edit. */",
            f"#ifndef {guard}",
            f"#define {guard}",
            "",
            f"#define {up}_N_SAMPLES {Kt}L",
            f"#define {up}_N_STATES {N}",
            f"#define {up}_N_INPUTS {nu}",
            f"#define {up}_N_COORDINATES {n}",
            "",
            f"static const double {name}_dt = {c_float_literal(self.dt)};",
            f"static const double {name}_times[{up}_N_SAMPLES] = {initializer(self.times)};",
            f"static const double {name}_gains[{up}_N_SAMPLES][{up}_N_INPUTS][{up}_N_STATES] = "
            f"{initializer(self.gains)};",
            f"static const double {name}_u0[{up}_N_SAMPLES][{up}_N_INPUTS] = {initializer(self.u0)};",
            f"static const double {name}_x0[{up}_N_SAMPLES][{up}_N_COORDINATES] = {initializer(self.x0)};",
            f"static const double {name}_xd0[{up}_N_SAMPLES][{up}_N_COORDINATES] = {initializer(self.xd0)};",
            "",
            "/* Index of the gain in force at t: the last k with times[k] <= t (zero-order hold),",
            " * or -1 when t is outside [times[0], times[N_SAMPLES-1] + dt) or NaN. */",
            f"static inline long {name}_index(double t)",
            "{",
            "    long lo = 0;",
            f"    long hi = {up}_N_SAMPLES - 1;",
            f"    if (!(t >= {name}_times[0]) || !(t < {name}_times[{up}_N_SAMPLES - 1] + {name}_dt)) {{",
            "        return -1;",
            "    }",
            "    while (lo < hi) {",
            "        long mid = lo + (hi - lo + 1) / 2;",
            f"        if ({name}_times[mid] <= t) {{",
            "            lo = mid;",
            "        } else {",
            "            hi = mid - 1;",
            "        }",
            "    }",
            "    return lo;",
            "}",
            "",
            "/* du = -K[k] X for the gain in force at t. Returns k, or -1 (du untouched) outside the schedule. */",
            f"static inline long {name}_du(double t, const double X[{up}_N_STATES], double du[{up}_N_INPUTS])",
            "{",
            f"    long k = {name}_index(t);",
            "    int i, j;",
            "    if (k < 0) {",
            "        return -1;",
            "    }",
            f"    for (i = 0; i < {up}_N_INPUTS; ++i) {{",
            "        double acc = 0.0;",
            f"        for (j = 0; j < {up}_N_STATES; ++j) {{",
            f"            acc += {name}_gains[k][i][j] * X[j];",
            "        }",
            "        du[i] = -acc;",
            "    }",
            "    return k;",
            "}",
            "",
            f"#endif /* {guard} */",
            "",
        ]
        return "\n".join(out)


# ------------------------------------------------------------ file helpers
def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".json"):
        raise ParameterError(f"path must end in .npz or .json to choose the format, got {str(path)!r}")
    return suffix[1:]


def _checksum(metadata: dict, arrays: Mapping[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    h.update(f"{SCHEDULE_FORMAT}\0{SCHEDULE_FORMAT_VERSION}\0".encode())
    h.update(json.dumps(metadata, sort_keys=True, separators=(",", ":"), allow_nan=False,
                        ensure_ascii=True).encode())
    for f in _ARRAY_FIELDS + tuple(f for f in _OPTIONAL_FIELDS if f in arrays):
        a = np.ascontiguousarray(arrays[f], dtype="<f8")
        h.update(f"\0{f}:{','.join(str(s) for s in a.shape)}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


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
    if not isinstance(listed, list) or not set(listed) <= set(_OPTIONAL_FIELDS):
        raise ScheduleFileError(f"{path}: optional_arrays must list some of {_OPTIONAL_FIELDS}, got {listed!r}")
    if "estimator" in metadata:
        est = metadata["estimator"]
        if not isinstance(est, dict) or not {"signal_names", "latency_steps"} <= set(est):
            raise ScheduleFileError(f"{path}: estimator metadata must hold signal_names and latency_steps")
    return tuple(f for f in _OPTIONAL_FIELDS if f in listed)


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
    for f in _ARRAY_FIELDS + _optional_listed(metadata, path):
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
    fields = _ARRAY_FIELDS + _optional_listed(metadata, path)
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
