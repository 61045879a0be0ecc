r"""Gain schedules: the finite-horizon LQR gains with their reference, stored and exported.

A :class:`GainSchedule` holds everything a controller needs on the target,
:math:`u = u_0(t_k) + \delta u_k` with :math:`\delta u_k = -K_k X_k` (Agúndez
et al. 2024, eqs. 27 and 30), plus what is needed to reproduce it: the
partition, the plant and its parameters, the weights (eqs. 24-26).

Checksum
--------
:attr:`GainSchedule.checksum` is the SHA-256 of a canonical serialization
(:meth:`GainSchedule.canonical_parts`, :func:`canonical_checksum`: metadata as
sorted compact JSON, then each array as its name, shape and little-endian
float64 bytes), so it does not depend on the container. The files
(``.npz``/``.json``, CSV) are :mod:`ballctl.schedule.formats`; the C header is
:mod:`ballctl.schedule.c_export`. ``save``, ``load``, ``to_csv`` and
``to_c_header`` call them.

Time lookup
-----------
Gain ``k`` is held over :math:`[t_k, t_k + \Delta t)` (zero-order hold), so the
schedule covers :math:`[t_0, t_{K-1} + \Delta t)`: the index at ``t`` is the
last sample with ``times[k] <= t``. The C header implements the same rule
with a binary search on the same doubles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ShapeError
from .._validation import check_finite_scalar, check_positive
from ..linear.discretize import DiscreteLTVSystem

__all__ = ["SCHEDULE_FORMAT", "SCHEDULE_FORMAT_VERSION", "GainSchedule", "ScheduleEstimator", "canonical_checksum"]

#: Format name stored in every schedule file.
SCHEDULE_FORMAT = "ballctl-gain-schedule"
#: Version of the file layout and of the checksum's canonical serialization.
SCHEDULE_FORMAT_VERSION = 2
#: the arrays every schedule holds, in the order of the canonical serialization
ARRAY_FIELDS = ("times", "gains", "x0", "xd0", "u0", "Q", "R", "Q_N")
#: optional arrays, stored when present: the discrete model (for prediction) and the Kalman filter
OPTIONAL_FIELDS = ("Ad", "Bd", "estimator_gains", "measurement_matrices", "sampled", "feedback_gains")
_SPACING_RTOL = 1e-9  # as in ballctl.linear.discretize


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


def canonical_checksum(metadata: Mapping, arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 (hex) of a schedule's canonical serialization (the module docstring).

    Parameters
    ----------
    metadata : mapping
        The metadata of :meth:`GainSchedule.canonical_parts` (JSON types only).
    arrays : mapping of str to ndarray
        The arrays of :meth:`GainSchedule.canonical_parts`: every one of
        :data:`ARRAY_FIELDS` and the present ones of :data:`OPTIONAL_FIELDS`.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    h = hashlib.sha256()
    h.update(f"{SCHEDULE_FORMAT}\0{SCHEDULE_FORMAT_VERSION}\0".encode())
    h.update(json.dumps(metadata, sort_keys=True, separators=(",", ":"), allow_nan=False,
                        ensure_ascii=True).encode())
    for f in ARRAY_FIELDS + tuple(f for f in OPTIONAL_FIELDS if f in arrays):
        a = np.ascontiguousarray(arrays[f], dtype="<f8")
        h.update(f"\0{f}:{','.join(str(s) for s in a.shape)}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@dataclass(frozen=True, kw_only=True, eq=False)
class ScheduleEstimator:
    """The output feedback a schedule records: the design's Kalman filter and, offset-free, the law on its state.

    Attributes
    ----------
    estimator : StateEstimator
        The design's Kalman filter (:mod:`ballctl.design.estimator`); the schedule stores its
        prediction model ``estimator.Ad``, ``estimator.Bd`` (in place of the design's), its update
        gains, measurement matrices, sampling pattern, signal names and latency (control steps).
    feedback_gains : ndarray, shape (Kt, nu, Ne), optional
        With an offset-free estimator: the law on its state (input units per state unit).
    augmented_state_names : sequence of str
        With ``feedback_gains`` (and only with them): names of the estimator's states beyond the design's.
    """

    estimator: object
    feedback_gains: np.ndarray | None = None
    augmented_state_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        needed = ("Ad", "Bd", "kalman", "sampled", "signal_names", "latency_steps")
        missing = [name for name in needed if not hasattr(self.estimator, name)]
        if missing:
            raise ParameterTypeError(f"estimator must be a StateEstimator (ballctl.design.estimator), got "
                                     f"{type(self.estimator).__name__} without {missing}")
        names = _names(self.augmented_state_names, "augmented_state_names", allow_empty=True)
        object.__setattr__(self, "augmented_state_names", names)
        if bool(names) != (self.feedback_gains is not None):
            raise ParameterError("augmented_state_names and feedback_gains go together (an offset-free estimator)")
        if self.feedback_gains is not None:
            gains = np.asarray(self.feedback_gains, dtype=float)
            if gains.ndim != 3:
                raise ShapeError(f"feedback_gains must have shape (Kt, nu, Ne), got {gains.shape}")
            object.__setattr__(self, "feedback_gains", gains)


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
        return tuple(f for f in OPTIONAL_FIELDS if getattr(self, f) is not None)

    # ------------------------------------------------------------- builders
    @classmethod
    def from_lqr(cls, lqr, system: DiscreteLTVSystem, *, x0, xd0, u0, plant_name: str,
                 plant_parameters: Mapping[str, float],
                 output_feedback: ScheduleEstimator | None = None) -> "GainSchedule":
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
        output_feedback : ScheduleEstimator, optional
            The design's Kalman filter (:mod:`ballctl.design.estimator`), stored with
            its prediction model ``estimator.Ad``, ``estimator.Bd`` (without it the
            design's ``system.Ad``, ``system.Bd`` are stored), and, offset-free, the
            law on its state with the names of its extra states.

        Returns
        -------
        GainSchedule
        """
        if not isinstance(system, DiscreteLTVSystem):
            raise ParameterTypeError(f"system must be a DiscreteLTVSystem, got {type(system).__name__}")
        if output_feedback is not None and not isinstance(output_feedback, ScheduleEstimator):
            raise ParameterTypeError(f"output_feedback must be a ScheduleEstimator, "
                                     f"got {type(output_feedback).__name__}")
        estimator = None if output_feedback is None else output_feedback.estimator
        feedback_gains = None if output_feedback is None else output_feedback.feedback_gains
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
                       feedback_gains=feedback_gains, augmented_state_names=output_feedback.augmented_state_names)))

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
        (meta, arrays), (other_meta, other_arrays) = self.canonical_parts(), other.canonical_parts()
        if meta != other_meta or tuple(arrays) != tuple(other_arrays):
            return False
        return all(a.shape == other_arrays[f].shape and a.tobytes() == other_arrays[f].tobytes()
                   for f, a in arrays.items())

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
    def canonical_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The canonical serialization: what :attr:`checksum` covers and every file stores.

        Returns
        -------
        metadata : dict
            Plant, names, partition, ``dt`` (and, when present, the optional
            arrays' names and the estimator's names and latency), JSON types only.
        arrays : dict of str to ndarray
            :data:`ARRAY_FIELDS`, then the present :data:`OPTIONAL_FIELDS`, in that order (read-only).
        """
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
        return meta, {f: getattr(self, f) for f in ARRAY_FIELDS + optional}

    @property
    def checksum(self) -> str:
        """SHA-256 (hex) of the canonical serialization written into every file."""
        return canonical_checksum(*self.canonical_parts())

    @classmethod
    def from_canonical_parts(cls, metadata: Mapping, arrays: Mapping[str, np.ndarray]) -> "GainSchedule":
        """The schedule of a canonical serialization (the inverse of :meth:`canonical_parts`).

        Parameters
        ----------
        metadata : mapping
            As returned by :meth:`canonical_parts` (or read from a file).
        arrays : mapping of str to ndarray
            As returned by :meth:`canonical_parts`.

        Returns
        -------
        GainSchedule

        Raises
        ------
        ValueError, TypeError, KeyError
            When the parts are inconsistent or incomplete.
        """
        part = metadata["partition"]
        est = metadata.get("estimator")
        extra = {} if est is None else {"signal_names": est["signal_names"], "latency_steps": est["latency_steps"],
                                        "augmented_state_names": tuple(est.get("augmented_state_names", ()))}
        return cls(**arrays, **extra, plant_name=metadata["plant_name"], plant_parameters=metadata["plant_parameters"],
                   dt=metadata["dt"], state_names=metadata["state_names"], input_names=metadata["input_names"],
                   coordinate_names=metadata["coordinate_names"], independent=part["independent"],
                   admissible_dependent=part["admissible_dependent"], dependent=part["dependent"])

    # --------------------------------------------- files (ballctl.schedule.formats, .c_export)
    def save(self, path) -> Path:
        """Write the schedule atomically, ``.npz`` or ``.json`` by the suffix (:func:`.formats.save_schedule`).

        Parameters
        ----------
        path : str or os.PathLike
            Destination ending in ``.npz`` or ``.json``; returned as a :class:`pathlib.Path`.
        """
        from .formats import save_schedule

        return save_schedule(self, path)

    @classmethod
    def load(cls, path) -> "GainSchedule":
        """Read a schedule file, verifying format, version and checksum (:func:`.formats.load_schedule`).

        Parameters
        ----------
        path : str or os.PathLike
            A ``.npz`` or ``.json`` file written by :meth:`save`; the schedule read is bitwise equal to
            the saved one.
        """
        from .formats import load_schedule

        return load_schedule(path)

    def to_csv(self, path) -> Path:
        """Write one row per sample, atomically (:func:`.formats.write_schedule_csv`).

        Parameters
        ----------
        path : str or os.PathLike
            Destination file; returned as a :class:`pathlib.Path`.
        """
        from .formats import write_schedule_csv

        return write_schedule_csv(self, path)

    def to_c_header(self, path, *, name: str = "ballctl_schedule") -> Path:
        """Write a C99 header with the gain lookup, atomically (:func:`.c_export.write_schedule_c_header`).

        Parameters
        ----------
        path : str or os.PathLike
            Destination file; returned as a :class:`pathlib.Path`.
        name : str
            C identifier prefix of the arrays, macros and functions.
        """
        from .c_export import write_schedule_c_header

        return write_schedule_c_header(self, path, name=name)
