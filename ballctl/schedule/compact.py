r"""The controller a microcontroller runs forever: compact data built from a verified design.

:func:`controller_data` turns an output-feedback :class:`~ballctl.TrackingController`
and the rig's command shaping into a :class:`ControllerData`: everything the C
step (``templates/ballctl_controller.c``) and its Python twin
(:class:`ballctl.deploy.runtime.ControllerRuntime`) need, and nothing that grows with
the run length.

Two representations
-------------------
``"fourier"`` (periodic references, ``reference.period``)
    Every time-varying array is a truncated Fourier series in the reference's
    phase :math:`\varphi_k = 2\pi\,\mathrm{frac}(k\,\Delta t / T)`,

    .. math::  A(\varphi) = A_0 + \sum_{h=1}^{H} A_{c,h}\cos h\varphi + A_{s,h}\sin h\varphi ,

    so the controller needs no whole number of steps per period and runs
    forever (the phase is a 64-bit fixed-point count of turns: it wraps
    exactly, with an increment error below :math:`2^{-65}` turn per step).
    What is fitted, by least squares over the design's last period (past its
    start-up: the filter's initial covariance, integrators that fade in; the
    zero-order-hold reference has settled there):

    * the prediction model ``Ad``, ``Bd`` and the measurement matrices ``C``
      (``C`` per residue of the sensors' sampling pattern, order 0 when it is
      constant, e.g. a camera on the contact point),
    * the feedforward ``u_ff`` and the reference of the measured signals,
    * the LQR's part of the control law: a backward Riccati sweep over two
      periods of the design's model and weights (fitted over its last period),
      from its Riccati matrix one period before the end, the first period kept
      (the periodic LQR, as far from the terminal weight as the design's first
      period and past its start-up); the law's other columns (a disturbance
      estimate's cancellation) as designed over the last period,
    * the Kalman update gains of the design's filter (its most settled
      stretch; a filter with undetectable modes, such as the ball's spin seen
      by a camera, never reaches a periodic solution, so the last verified
      period is wrapped rather than a ``periodic_kalman`` that would not
      converge).

    States that cannot influence the command (no column in the model apart
    from their own, none in ``C``, gains below ``1e-6`` of the largest: the
    ball's roll angle) are dropped (``drop_states="auto"``); the estimates of
    the other states are then exactly those of the full filter.

``"plan"`` (finite references)
    Per-step tables of the design over its horizon, then a hold forever: the
    last sample frozen, its stationary LQR (the design's Riccati sweep
    continued over the frozen sample until its gain converges; the last
    design gain where it does not, at the end of a plan that ends in motion)
    and the filter gains of the plan's last steps. A plan that ends at rest
    holds there. ``source["hold_gain"]`` says which.

RAM is fixed by the latency and the state size (ring buffers of
``latency_steps + 1`` steps, at least 2); flash by the representation.

The command shaping of the rig (:class:`~ballctl.RigLimits`: quantum, tilt,
slew, actuation latency) is part of the data: the C step applies quantum and
tilt to its command and feeds the estimator the input that acts on the plate
(slew-limited and delayed, averaged over the step), exactly as
:func:`ballctl.simulate_closed_loop` does.

The choice of ``fourier_order`` is a verification question (closed loop on
the truth plant against the design): :func:`ballctl.deploy.sil.export_controller`
answers it; this module builds the data for a given order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ScheduleFileError
from .._validation import check_choice, check_instance, check_integer, check_positive
from ..simulation.loop_step import delay_segments, shape_command
from ..design.lqr import riccati_sweep

__all__ = ["ControllerData", "ControllerDataOptions", "ControllerFootprint", "controller_data", "controller_footprint",
           "phase_step", "varying_entries", "model_copies",
           "REPRESENTATIONS", "REALS", "CONTROLLER_FORMAT_VERSION", "GROUPS"]

#: version of the exported controller (``BC_API_VERSION`` of the C header)
CONTROLLER_FORMAT_VERSION = 2
#: how the time-varying arrays are stored
REPRESENTATIONS = ("auto", "fourier", "plan")
#: scalar type of the exported controller
REALS = ("float32", "float64")
#: the time-varying arrays, in the order the C data header lists them: name -> (shape keys, per class)
GROUPS = {"Ad": (("N", "N"), False), "Bd": (("N", "nu"), False), "C": (("ny", "N"), True),
          "M": (("N", "ny"), True), "K": (("nu", "N"), False), "u_ff": (("nu",), False),
          "y_ref": (("ny",), False)}

_TWO64 = 1 << 64
#: bytes of the step function's code on a Cortex-M4F (arm-none-eabi-gcc -O2, measured by benchmarks/pil_cortex_m4.py)
CODE_BYTES_M4 = 4096


def phase_step(dt: float, period: float) -> int:
    """The phase increment per control step as a 64-bit fixed-point fraction of a turn.

    Parameters
    ----------
    dt : float
        Control period in s.
    period : float
        Reference period in s.

    Returns
    -------
    int
        ``round(dt / period * 2**64) mod 2**64``.
    """
    return int(round(dt / period * _TWO64)) % _TWO64


def _angles(k: np.ndarray, step: int) -> np.ndarray:
    """Phase angle in rad of steps ``k`` (the controller's fixed-point phase, as a double)."""
    theta = np.array([(int(j) * step) % _TWO64 for j in np.asarray(k).ravel()], dtype=object)
    return np.array([float(t >> 11) for t in theta]) * (2.0 ** -53) * (2.0 * np.pi)


def _basis(phi: np.ndarray, order: int) -> np.ndarray:
    """``(K, 2 order + 1)``: 1, cos phi, sin phi, cos 2phi, ..."""
    cols = [np.ones_like(phi)]
    for h in range(1, order + 1):
        cols += [np.cos(h * phi), np.sin(h * phi)]
    return np.stack(cols, axis=1)


def _fit(values: np.ndarray, phi: np.ndarray, order: int) -> tuple[np.ndarray, float]:
    """Least-squares Fourier coefficients ``(entries, 2 order + 1)`` of ``values (K, ...)`` and the max residual."""
    A = values.reshape(values.shape[0], -1)
    B = _basis(phi, order)
    coef, *_ = np.linalg.lstsq(B, A, rcond=None)
    resid = float(np.max(np.abs(A - B @ coef))) if A.size else 0.0
    return np.ascontiguousarray(coef.T), resid


@dataclass(frozen=True, eq=False)
class ControllerData:
    """Everything the exported controller holds (file format ``CONTROLLER_FORMAT_VERSION``).

    Arrays are float64 values already rounded to ``real`` (so the C header,
    the ``.npz`` file and the Python twin hold the same numbers).

    Attributes
    ----------
    kind : str
        ``"fourier"`` (periodic, runs forever) or ``"plan"`` (tables, then a hold).
    real : str
        ``"float32"`` or ``"float64"``.
    dt : float
        Control period in s.
    state_names, input_names, signal_names : tuple of str
        The filter's states (after dropped ones), inputs (rad), measured signals (m or rad).
    latency_steps : int
        Control steps until every sample of a step has arrived.
    sampled : ndarray of bool, shape (S, ny)
        Sampling pattern: signal m is sampled at step j when ``sampled[j % S, m]``.
    arrays : dict
        Per group (:data:`GROUPS`): ``"fourier"``: coefficients ``(entries, 2 H + 1)``, or per class
        ``(S, entries, 2 H + 1)`` for ``C`` and ``M``; ``"plan"``: tables ``(n_plan, *shape)``
        (``(n_plan, *shape)`` also for ``C`` and ``M``, which carry the pattern).
    orders : dict
        Fourier order H of each group (0: constant); empty for a plan.
    hold : dict
        ``"plan"``: the arrays used after the plan (``C``/``M`` per class ``(S, *shape)``); empty otherwise.
    period_s : float or None
        Reference period in s (fourier).
    phase_step : int
        Phase increment per step in 2**-64 turns (fourier; 0 for a plan).
    n_plan : int
        Steps of the plan's tables (0 for fourier).
    quantum, max_angle, max_rate : float
        Command shaping in rad, rad, rad/s (0: none).
    delay_steps : int
        Whole control steps of actuation latency.
    delay_frac_s : float
        Fraction of a step of actuation latency in s.
    u_start : ndarray, shape (nu,)
        Input the plate holds before the first command (rad).
    max_deviation : ndarray, shape (ny,)
        A measurement farther than this from the reference is refused (m or rad).
    innovation_limit : ndarray, shape (ny,)
        An innovation beyond this counts as large for the health flag (m or rad).
    health_steps : int
        Consecutive steps of large innovation (or without an accepted sample) that raise the health flag.
    dropped_states : tuple of str
        Design states left out (they cannot influence the command).
    fit_residuals : dict
        Largest least-squares residual of each fitted group (fourier).
    source : dict
        Where the data came from (plant, design, horizon).
    """

    kind: str
    real: str
    dt: float
    state_names: tuple
    input_names: tuple
    signal_names: tuple
    latency_steps: int
    sampled: np.ndarray
    arrays: dict
    orders: dict
    hold: dict
    period_s: float | None
    phase_step: int
    n_plan: int
    quantum: float
    max_angle: float
    max_rate: float
    delay_steps: int
    delay_frac_s: float
    u_start: np.ndarray
    max_deviation: np.ndarray
    innovation_limit: np.ndarray
    health_steps: int
    dropped_states: tuple = ()
    fit_residuals: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self) -> int:
        """Ne: the filter's state size."""
        return len(self.state_names)

    @property
    def n_inputs(self) -> int:
        """nu."""
        return len(self.input_names)

    @property
    def n_signals(self) -> int:
        """ny."""
        return len(self.signal_names)

    @property
    def n_classes(self) -> int:
        """S: period of the sampling pattern in steps."""
        return int(self.sampled.shape[0])

    @property
    def ring(self) -> int:
        """Steps kept in the ring buffers: ``max(latency_steps, 1) + 1``."""
        return max(self.latency_steps, 1) + 1

    @property
    def n_period(self) -> int:
        """Steps per period of a periodic controller, rounded up (0 for a plan)."""
        if self.kind != "fourier":
            return 0
        return int(math.ceil(self.period_s / self.dt - 1e-9))

    @property
    def n_basis(self) -> int:
        """Length ``2 H + 1`` of the Fourier basis (largest order; 1 for a plan)."""
        return 2 * max(self.orders.values(), default=0) + 1

    def shape_of(self, group: str) -> tuple[int, ...]:
        """Shape of one step's array of ``group``.

        Parameters
        ----------
        group : str
            One of :data:`GROUPS`.
        """
        sizes = {"N": self.n_states, "nu": self.n_inputs, "ny": self.n_signals}
        return tuple(sizes[s] for s in GROUPS[group][0])

    # ------------------------------------------------------------------ the file
    def to_npz(self) -> dict:
        """Plain arrays for ``numpy.savez`` (what :class:`ballctl.deploy.runtime.ControllerRuntime` loads)."""
        out = {"format_version": np.array(CONTROLLER_FORMAT_VERSION), "kind": np.array(self.kind),
               "real": np.array(self.real), "dt": np.array(self.dt),
               "state_names": np.array(self.state_names), "input_names": np.array(self.input_names),
               "signal_names": np.array(self.signal_names), "latency_steps": np.array(self.latency_steps),
               "sampled": self.sampled.astype(np.uint8), "period_s": np.array(np.nan if self.period_s is None
                                                                              else self.period_s),
               "phase_step_hi": np.array(self.phase_step >> 32, dtype=np.uint64),
               "phase_step_lo": np.array(self.phase_step & 0xFFFFFFFF, dtype=np.uint64),
               "n_plan": np.array(self.n_plan), "quantum": np.array(self.quantum),
               "max_angle": np.array(self.max_angle), "max_rate": np.array(self.max_rate),
               "delay_steps": np.array(self.delay_steps), "delay_frac_s": np.array(self.delay_frac_s),
               "u_start": self.u_start, "max_deviation": self.max_deviation,
               "innovation_limit": self.innovation_limit, "health_steps": np.array(self.health_steps),
               "dropped_states": np.array(self.dropped_states, dtype=str)}
        for g in GROUPS:
            out[f"a_{g}"] = self.arrays[g]
            if self.kind == "fourier":
                out[f"order_{g}"] = np.array(self.orders[g])
            else:
                out[f"hold_{g}"] = self.hold[g]
        return out

    @classmethod
    def from_npz(cls, data) -> "ControllerData":
        """Rebuild from the arrays of :meth:`to_npz` (a mapping or an ``NpzFile``).

        Parameters
        ----------
        data : mapping
            Arrays by name.
        """
        try:
            version = int(data["format_version"])
            if version != CONTROLLER_FORMAT_VERSION:
                raise ScheduleFileError(f"controller file format {version}, this ballctl reads "
                                        f"{CONTROLLER_FORMAT_VERSION}")
            kind = str(data["kind"])
            period = float(data["period_s"])
            return cls(
                kind=kind, real=str(data["real"]), dt=float(data["dt"]),
                state_names=tuple(str(s) for s in data["state_names"]),
                input_names=tuple(str(s) for s in data["input_names"]),
                signal_names=tuple(str(s) for s in data["signal_names"]),
                latency_steps=int(data["latency_steps"]), sampled=np.asarray(data["sampled"]).astype(bool),
                arrays={g: np.asarray(data[f"a_{g}"], dtype=float) for g in GROUPS},
                orders={g: int(data[f"order_{g}"]) for g in GROUPS} if kind == "fourier" else {},
                hold={g: np.asarray(data[f"hold_{g}"], dtype=float) for g in GROUPS} if kind == "plan" else {},
                period_s=None if not np.isfinite(period) else period,
                phase_step=(int(data["phase_step_hi"]) << 32) | int(data["phase_step_lo"]),
                n_plan=int(data["n_plan"]), quantum=float(data["quantum"]), max_angle=float(data["max_angle"]),
                max_rate=float(data["max_rate"]), delay_steps=int(data["delay_steps"]),
                delay_frac_s=float(data["delay_frac_s"]), u_start=np.asarray(data["u_start"], dtype=float),
                max_deviation=np.asarray(data["max_deviation"], dtype=float),
                innovation_limit=np.asarray(data["innovation_limit"], dtype=float),
                health_steps=int(data["health_steps"]),
                dropped_states=tuple(str(s) for s in data["dropped_states"]))
        except KeyError as exc:
            raise ScheduleFileError(f"not a ballctl controller file: missing {exc}") from None

    def footprint(self) -> "ControllerFootprint":
        """Flash, RAM and operations per step of this controller (see :func:`controller_footprint`)."""
        return controller_footprint(self)


@dataclass(frozen=True, kw_only=True)
class ControllerFootprint:
    """Size and cost of an exported controller on a 32-bit microcontroller (estimates, in bytes).

    Attributes
    ----------
    real : str
        Scalar type (``"float32"``: 4 bytes, ``"float64"``: 8).
    kind : str
        ``"fourier"`` or ``"plan"``.
    data_bytes : int
        Constant tables (flash), exact.
    code_bytes : int
        The step function's machine code: ``CODE_BYTES_M4``, measured on a Cortex-M4F
        (``benchmarks/pil_cortex_m4.py``; with float64 on a single-precision FPU the
        double arithmetic adds a software library).
    flash_bytes : int
        ``data_bytes + code_bytes``.
    state_bytes : int
        ``sizeof(ballctl_controller)`` (its fields with 8-byte alignment), exact on a 32-bit target.
    stack_bytes : int
        Largest stack frame of the step (its local arrays), an estimate.
    ram_bytes : int
        ``state_bytes + stack_bytes``.
    multiply_adds_per_step : int
        Floating-point multiply-adds of one step in steady state (one commit, the latency
        predictions, the law, one measurement, the Fourier sums).
    fourier_orders : dict
        Order of each group (fourier).
    """

    real: str
    kind: str
    data_bytes: int
    code_bytes: int
    flash_bytes: int
    state_bytes: int
    stack_bytes: int
    ram_bytes: int
    multiply_adds_per_step: int
    fourier_orders: dict

    def as_dict(self) -> dict:
        """Plain JSON-ready dictionary."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def controller_footprint(source) -> ControllerFootprint:
    """Flash and RAM in bytes and the multiply-adds per step of an exported controller.

    The data tables and the controller's state are counted exactly (as the C
    compiler lays them out on a 32-bit target); the code size is the one
    measured on a Cortex-M4F (:data:`CODE_BYTES_M4`); the operation count is
    that of one steady-state step (one Kalman commit, ``latency_steps - 1``
    latency predictions, the control law, one measurement and the Fourier
    sums of the step's new matrices). ``benchmarks/pil_cortex_m4.py`` measures
    the real numbers on the processor.

    Parameters
    ----------
    source : ControllerData or str or Path
        The data, or a directory written by :func:`ballctl.schedule.write_c_controller`
        (its ``ballctl_controller.npz``), or that file.

    Returns
    -------
    ControllerFootprint
    """
    if not isinstance(source, ControllerData):
        from pathlib import Path

        path = Path(source)
        if path.is_dir():
            path = path / "ballctl_controller.npz"
        if not path.is_file():
            raise ParameterError(f"source: no exported controller at {str(path)!r} (give a ControllerData, the "
                                 "directory written by write_c_controller, or its ballctl_controller.npz)")
        with np.load(path, allow_pickle=False) as npz:
            source = ControllerData.from_npz(npz)
    d = source
    b = 4 if d.real == "float32" else 8
    N, nu, ny, S, R = d.n_states, d.n_inputs, d.n_signals, d.n_classes, d.ring
    data = sum(np.asarray(d.arrays[g]).size for g in GROUPS) * b
    data += sum(np.asarray(a).size for a in d.hold.values()) * b
    data += S * ny + (3 * nu + 2 * ny + 8) * b   # pattern, u_start, limits, scalars
    model = N * N + N * nu
    if d.kind == "fourier":
        nb = {g: 2 * h + 1 for g, h in d.orders.items()}
        varying = {g: len(varying_entries(d, g)) for g in ("Ad", "Bd", "C", "M", "K")}
        varying["u_ff"], varying["y_ref"] = nu, ny
        fourier = sum(varying[g] * nb[g] for g in GROUPS) + 24 + 4 * max(nb.values())
    else:
        fourier = 0
    lat_predictions = max(d.latency_steps - 1, 0)
    ops = (fourier + 2 * ny * N + model + lat_predictions * model + nu * N + ny
           + (N * ny if d.latency_steps == 0 else 0))
    delay_ring = d.delay_steps + 2
    state = (3 * 8 + N * b + R * (ny * b + ny + nu * b + model * b + d.n_basis * b + 8)
             + delay_ring * nu * b + nu * b + 6 * 4)
    if d.kind == "fourier":
        state += (2 * S * ny * N + nu * N) * b   # the C, M and K being evaluated
    state = 8 * ((state + 7) // 8)
    stack = (2 * N + 2 * ny * N + nu * N + 2 * nu) * b + 160   # the step's arrays, saved registers, callees
    code = CODE_BYTES_M4
    return ControllerFootprint(real=d.real, kind=d.kind, data_bytes=int(data), code_bytes=code,
                               flash_bytes=int(data + code), state_bytes=int(state), stack_bytes=int(stack),
                               ram_bytes=int(state + stack), multiply_adds_per_step=int(ops),
                               fourier_orders=dict(d.orders))


def varying_entries(d: ControllerData, group: str) -> list[int]:
    """Entries of a Fourier group that the C step evaluates: harmonics not all zero (in some class), and for
    ``Ad`` not a copy (:func:`model_copies`).

    Parameters
    ----------
    d : ControllerData
        A fourier controller.
    group : str
        One of :data:`GROUPS`.

    Returns
    -------
    list of int
        Flat entry indices.
    """
    c = np.asarray(d.arrays[group])
    c = c.reshape(-1, c.shape[-2], c.shape[-1])
    idx = [int(i) for i in np.flatnonzero(np.any(c[:, :, 1:] != 0, axis=(0, 2)))]
    if group == "Ad":   # the model's entries that repeat one of Bd or an earlier one of Ad are copied, not summed
        dup = {dst for dst, _ in model_copies(d)[0]} | {dst for dst, _ in model_copies(d)[1]}
        idx = [i for i in idx if i not in dup]
    return idx


def model_copies(d: ControllerData) -> tuple[list, list]:
    """``(from Bd, from Ad)``: (Ad entry, source entry) pairs of varying Ad entries equal to a Bd entry or an
    earlier Ad entry (the augmented model of an offset-free filter repeats Bd in its disturbance columns).

    Parameters
    ----------
    d : ControllerData
        A fourier controller.

    Returns
    -------
    tuple of list
        Flat (Ad index, Bd index) and (Ad index, Ad index) pairs.
    """
    A, B = np.asarray(d.arrays["Ad"]), np.asarray(d.arrays["Bd"])
    seen_b = {B[j].tobytes(): j for j in range(B.shape[0]) if np.any(B[j, 1:] != 0)}
    seen_a: dict = {}
    from_b, from_a = [], []
    for i in range(A.shape[0]):
        if not np.any(A[i, 1:] != 0):
            continue
        key = A[i].tobytes()
        if key in seen_b:
            from_b.append((i, seen_b[key]))
        elif key in seen_a:
            from_a.append((i, seen_a[key]))
        else:
            seen_a[key] = i
    return from_b, from_a


# ---------------------------------------------------------------------- building
def _law_arrays(controller):
    """(feedback gains (Kt, nu, Ne), Ad (Kt, Ne, Ne), Bd (Kt, Ne, nu), C, M): the lead's names, or the older ones."""
    est = controller.estimator
    gains = getattr(controller, "feedback_gains", None)
    if gains is None:
        gains = controller.lqr.gains
    Ad = getattr(est, "Ad", None)
    Bd = getattr(est, "Bd", None)
    if Ad is None or Bd is None:
        Ad, Bd = controller.discrete.Ad, controller.discrete.Bd
    return (np.asarray(gains, float), np.asarray(Ad, float), np.asarray(Bd, float),
            np.asarray(est.kalman.C, float), np.asarray(est.kalman.update_gains, float))


def _filter_state_names(controller, Ne: int) -> tuple:
    """The filter's states: the design's, then its disturbance estimates and integrators (if any)."""
    names = tuple(controller.state_names)
    est = controller.estimator
    nd = int(getattr(est, "n_disturbances", 0) or 0)
    ni = int(getattr(est, "n_integrals", 0) or 0)
    inputs = tuple(controller.system.input_names)
    extra = (tuple(f"d_{inputs[i]}" if nd == len(inputs) else f"disturbance_{i}" for i in range(nd))
             + tuple(f"integral_{i}" for i in range(ni)))
    extra += tuple(f"extra_{i}" for i in range(Ne - len(names) - len(extra)))
    return (names + extra)[:Ne]


def _pattern(sampled: np.ndarray) -> np.ndarray:
    """The shortest period S with ``sampled[k] == sampled[k % S]`` over the horizon, as ``(S, ny)``."""
    K = sampled.shape[0]
    for S in range(1, K + 1):
        reps = -(-K // S)
        if np.array_equal(np.tile(sampled[:S], (reps, 1))[:K], sampled):
            return sampled[:S].copy()
    return sampled.copy()


def _droppable(gains, Ad, C, names, request) -> list[int]:
    """Indices of states that cannot influence the command (see the module docstring)."""
    Ne = Ad.shape[1]
    scale_a = max(float(np.max(np.abs(Ad))), 1.0)
    scale_g = max(float(np.max(np.abs(gains))), 1e-300)
    structural = []
    for i in range(Ne):
        col = np.abs(Ad[:, :, i]).copy()
        col[:, i] = 0.0
        if np.max(col) <= 1e-14 * scale_a and np.max(np.abs(C[:, :, i])) == 0.0:
            structural.append(i)
    if request == "auto":
        return [i for i in structural if np.max(np.abs(gains[:, :, i])) <= 1e-6 * scale_g]
    out = []
    for nm in request:
        if nm not in names:
            raise ParameterError(f"drop_states: unknown state {nm!r}; states are {names}")
        i = names.index(nm)
        if i not in structural:
            allowed = [names[j] for j in structural]
            raise ParameterError(f"drop_states: {nm!r} feeds other states or is measured; only states that "
                                 f"no other state and no signal depends on can be dropped ({allowed})")
        out.append(i)
    return sorted(out)


def _rounded(a, real: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return a.astype(np.float32).astype(float) if real == "float32" else a.copy()


def _limits_of(rig, limits):
    if rig is not None and limits is not None:
        raise ParameterError("give rig or limits, not both")
    if rig is not None:
        limits = rig.limits
    if limits is None:
        return 0.0, 0.0, 0.0, 0.0
    return (float(limits.quantum or 0.0), float(limits.max_angle or 0.0), float(limits.max_rate or 0.0),
            float(limits.delay))


@dataclass(frozen=True, kw_only=True)
class ControllerDataOptions:
    """What the exported controller is made of: representation, Fourier order, scalar type and its gates.

    Attributes
    ----------
    representation : {"auto", "fourier", "plan"}
        ``"auto"``: fourier for a periodic reference and a horizon of at least one period, else plan.
    fourier_order : int or mapping of str to int
        Largest harmonic H in 0..32 of the fitted groups (a group that is constant gets 0), or one per
        group of :data:`GROUPS` (``{"Ad": 2}``: the model at order 2, the others at the largest given).
        Used by the ``"fourier"`` representation only.
    real : {"float32", "float64"}
        Scalar type of the exported controller.
    drop_states : "auto", None or sequence of str
        States to leave out; ``"auto"``: those that cannot influence the command; ``()`` or None: none.
    max_deviation : float or sequence of float, optional
        Refuse a measurement farther than this from its reference (> 0, m or rad, per signal or one
        for all; default 0.25 m for a contact coordinate, 0.35 rad for a plate angle).
    health_sigma : float
        An innovation beyond ``health_sigma`` standard deviations (> 0, dimensionless; of the design's
        filter in its last period) counts as large.
    health_window_s : float
        Consecutive time in s (> 0) of large innovations (or without an accepted sample) that raises
        the health flag.
    """

    representation: str = "auto"
    fourier_order: int | Mapping[str, int] = 4
    real: str = "float32"
    drop_states: str | tuple[str, ...] | None = "auto"
    max_deviation: float | tuple[float, ...] | None = None
    health_sigma: float = 5.0
    health_window_s: float = 0.2

    def __post_init__(self) -> None:
        check_choice(self.representation, "representation", REPRESENTATIONS)
        check_choice(self.real, "real", REALS)
        if isinstance(self.fourier_order, Mapping):
            unknown = sorted(set(self.fourier_order) - set(GROUPS))
            if unknown:
                raise ParameterError(f"fourier_order: unknown groups {unknown}; groups are {tuple(GROUPS)}")
            order = {g: check_integer(h, f"fourier_order[{g!r}]", minimum=0, maximum=32)
                     for g, h in self.fourier_order.items()}
        else:
            order = check_integer(self.fourier_order, "fourier_order", minimum=0, maximum=32)
        object.__setattr__(self, "fourier_order", order)
        drop = self.drop_states
        if drop is not None and not (isinstance(drop, str) and drop == "auto"):
            try:
                names = None if isinstance(drop, (str, bytes)) else tuple(drop)
            except TypeError:
                names = None
            if names is None or not all(isinstance(nm, str) for nm in names):
                raise ParameterTypeError(f"drop_states must be 'auto', None or a sequence of state names, "
                                         f"got {drop!r}")
            object.__setattr__(self, "drop_states", names)
        if self.max_deviation is not None:
            dev = np.asarray(self.max_deviation, dtype=float)
            if dev.ndim > 1 or dev.size == 0 or not np.all(np.isfinite(dev)) or np.any(dev <= 0):
                raise ParameterError(f"max_deviation must be > 0 (m or rad) per signal, got {self.max_deviation!r}")
            object.__setattr__(self, "max_deviation", float(dev) if dev.ndim == 0 else tuple(float(v) for v in dev))
        object.__setattr__(self, "health_sigma", check_positive(self.health_sigma, "health_sigma"))
        object.__setattr__(self, "health_window_s", check_positive(self.health_window_s, "health_window_s", "s"))


def controller_data(controller, *, rig=None, limits=None, options: ControllerDataOptions | None = None
                    ) -> ControllerData:
    """Build the exported controller of an output-feedback design (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        A design with an estimator (``design_for_rig(..., output_feedback=True)``).
    rig : RigProfile, optional
        Its ``limits`` shape the commands (quantum, tilt, slew, actuation latency).
    limits : RigLimits, optional
        The shaping without a rig (give one of ``rig`` and ``limits``; neither: commands act as sent).
    options : ControllerDataOptions, optional
        Representation, Fourier order, scalar type, dropped states, the measurement gate and the
        health flag (default: ``ControllerDataOptions()``).

    Returns
    -------
    ControllerData

    Raises
    ------
    ParameterError
        No estimator; a fourier representation of a reference without a period, or a horizon
        shorter than one period; bad options.
    """
    options = ControllerDataOptions() if options is None else options
    check_instance(options, "options", ControllerDataOptions)
    est = getattr(controller, "estimator", None)
    if est is None:
        raise ParameterError("the exported controller needs an output-feedback design (controller.estimator is "
                             "None): design with sensors=... (design_for_rig(..., output_feedback=True))")
    representation, real, drop_states = options.representation, options.real, options.drop_states
    max_deviation, health_sigma, health_window_s = options.max_deviation, options.health_sigma, options.health_window_s
    fourier_order = options.fourier_order
    if isinstance(fourier_order, Mapping):   # the groups a mapping leaves out get its largest order
        top = max(fourier_order.values(), default=4)
        fourier_order = {g: fourier_order.get(g, top) for g in GROUPS}
    else:
        fourier_order = dict.fromkeys(GROUPS, fourier_order)
    quantum, max_angle, max_rate, delay = _limits_of(rig, limits)
    period = getattr(controller.reference, "period", None)
    if representation == "auto":   # fourier needs a period's worth of the design
        long_enough = period is not None and len(controller.times) * float(controller.dt) >= period - 1e-9
        representation = "fourier" if long_enough else "plan"
    if representation == "fourier" and period is None:
        raise ParameterError("representation='fourier' needs a periodic reference (controller.reference.period is "
                             "None); use representation='plan'")
    dt = float(controller.dt)
    gains, Ad, Bd, C, M = _law_arrays(controller)
    Kt, nu, Ne = gains.shape
    ny = C.shape[1]
    names = _filter_state_names(controller, Ne)
    drop = [] if drop_states == () or drop_states is None else _droppable(
        gains, Ad, C, names, "auto" if drop_states == "auto" else tuple(drop_states))
    keep = [i for i in range(Ne) if i not in drop]
    sampled_full = np.asarray(est.sampled[:Kt], dtype=bool)
    pattern = _pattern(sampled_full)
    S = pattern.shape[0]
    samples = controller.samples
    u_ff = np.asarray(samples.u[:Kt], float)
    y_ref = np.asarray(samples.x[:Kt], float)[:, list(est.coordinate_index)]
    noise = np.maximum(np.asarray(est.noise_std, float), 1e-4)
    P = np.asarray(est.kalman.covariance, float)
    window = slice(max(0, Kt - (int(math.ceil(period / dt - 1e-9)) if period else Kt)), Kt)
    innov_var = np.einsum("kmi,kij,kmj->km", C[window], P[:Kt][window], C[window]) + noise ** 2
    innovation_limit = health_sigma * np.sqrt(np.max(innov_var, axis=0))
    if max_deviation is None:
        max_dev = np.array([0.25 if s.startswith("contact") else 0.35 for s in est.signal_names])
    else:
        max_dev = np.broadcast_to(np.asarray(max_deviation, dtype=float), (ny,)).copy()   # > 0: the options check
    u_start, _ = shape_command(u_ff[0], u_ff[0], 0.0, max_angle or None, None, quantum or None)
    d_int, d_frac = delay_segments(delay, dt)
    common = dict(real=real, dt=dt, state_names=tuple(names[i] for i in keep),
                  input_names=tuple(controller.system.input_names), signal_names=tuple(est.signal_names),
                  latency_steps=int(est.latency_steps), sampled=pattern, quantum=quantum, max_angle=max_angle,
                  max_rate=max_rate, delay_steps=int(d_int), delay_frac_s=float(d_frac),
                  u_start=_rounded(u_start, real), max_deviation=_rounded(max_dev, real),
                  innovation_limit=_rounded(innovation_limit, real),
                  health_steps=max(1, int(math.ceil(health_window_s / dt - 1e-9))),
                  dropped_states=tuple(names[i] for i in drop),
                  source={"plant": getattr(controller.system, "name", type(controller.system).__name__),
                          "horizon_steps": int(Kt), "design_states": list(controller.state_names)})
    Ad_k, Bd_k = Ad[:, keep][:, :, keep], Bd[:, keep]
    C_k, M_k, G_k = C[:, :, keep], M[:, keep], gains[:, :, keep]
    law_full = _LawMap(controller, gains)
    if representation == "plan":
        hold, common["source"]["hold_gain"] = _plan_hold(controller, law_full, Ad_k, Bd_k, C_k, M_k, G_k, u_ff,
                                                         y_ref, keep, S)
        tables = {"Ad": Ad_k, "Bd": Bd_k, "C": C_k, "M": M_k, "K": G_k, "u_ff": u_ff, "y_ref": y_ref}
        return ControllerData(kind="plan", arrays={g: _rounded(a, real) for g, a in tables.items()}, orders={},
                              hold={g: _rounded(a, real) for g, a in hold.items()}, period_s=None, phase_step=0,
                              n_plan=int(Kt), **common)
    return _fourier(controller, law_full, common, period, fourier_order, Ad_k, Bd_k, C_k, M_k, G_k, u_ff, y_ref,
                    keep, S, real)


class _LawMap:
    """Where the LQR's gains sit among the control law's (``feedback_gains``) columns.

    The law is ``u = u_ff - G X_hat`` over the filter's states; some of its
    columns are the LQR's (the design's states, integrators), the others are
    not (a disturbance estimate's cancellation). The columns are matched by
    equality over the horizon, so any layout of ``feedback_gains`` works.
    """

    def __init__(self, controller, gains: np.ndarray) -> None:
        lqr = getattr(controller, "integral_lqr", None) or controller.lqr
        self.lqr = lqr
        K = np.asarray(lqr.gains, float)
        self.columns = []   # (law column, lqr column)
        used = set()
        for c in range(K.shape[2]):
            f = next((f for f in range(gains.shape[2]) if f not in used and gains.shape[0] == K.shape[0]
                      and np.array_equal(gains[:, :, f], K[:, :, c])), None)
            if f is None:
                self.columns = None
                break
            used.add(f)
            self.columns.append((f, c))

    def law(self, K_lqr: np.ndarray, G_rest: np.ndarray) -> np.ndarray:
        """Law gains ``(n, nu, Ne)``: the LQR columns from ``K_lqr``, the others from ``G_rest``."""
        out = np.array(G_rest, dtype=float)
        for f, c in self.columns:
            out[:, :, f] = K_lqr[:, :, c]
        return out


def _periodic_lqr_gains(lqr, phi_last: np.ndarray, last: np.ndarray, step: int, n_period: int) -> np.ndarray:
    """The LQR gains over one period (steps 0..n_period-1); model and weights fitted over the last period.

    A backward Riccati sweep (:func:`ballctl.design.lqr.riccati_sweep`) over two periods of the fitted model, from the
    design's Riccati matrix one period before the end of its horizon; the first period is kept: as far from
    the terminal weight as the design's own first period, and past the design's start-up (integrators that fade
    in). Marginal modes that no weight stabilizes (the ball's spin) make a longer sweep drift, not converge, so
    the length is that of the design's horizon (two periods for the main job).
    """
    hi = 16
    fits = {name: _fit(np.asarray(getattr(lqr, name), float)[last], phi_last, hi)[0] for name in ("Ad", "Bd", "Q", "R")}
    shapes = {name: np.asarray(getattr(lqr, name)).shape[1:] for name in fits}
    n = 2 * n_period
    B = _basis(_angles(np.arange(n), step), hi)
    arr = {name: (B @ fits[name].T).reshape((n,) + shapes[name]) for name in fits}
    Q = 0.5 * (arr["Q"] + np.swapaxes(arr["Q"], 1, 2))
    R = 0.5 * (arr["R"] + np.swapaxes(arr["R"], 1, 2))
    K, _, _ = riccati_sweep(arr["Ad"], arr["Bd"], Q, R, np.asarray(lqr.riccati[last[0]], float))
    return K[:n_period]


def _fourier(controller, law_map, common, period, order, Ad, Bd, C, M, G, u_ff, y_ref, keep, S, real
             ) -> ControllerData:
    dt = common["dt"]
    Kt = Ad.shape[0]
    n_period = int(math.ceil(period / dt - 1e-9))
    if Kt < n_period:
        raise ParameterError(f"a periodic export needs a design horizon of at least one period: horizon "
                             f"{Kt * dt:.6g} s < period {period:.6g} s (design with horizon >= period)")
    step = phase_step(dt, period)
    k_all = np.arange(Kt)
    phi_all = _angles(k_all, step)
    last = k_all[Kt - n_period:]
    coefs, orders, resid = {}, {}, {}

    def fit_group(name, values, idx, per_class):
        scale = max(1.0, float(np.max(np.abs(values[idx])))) if values.size else 1.0
        if per_class:
            const = all(_fit(values[idx[idx % S == r]], phi_all[idx[idx % S == r]], 0)[1] <= 1e-12 * scale
                        for r in range(S))
            h = 0 if const else order[name]
            fits = [_fit(values[idx[idx % S == r]], phi_all[idx[idx % S == r]], h) for r in range(S)]
            coefs[name], orders[name], resid[name] = np.stack([f[0] for f in fits]), h, max(f[1] for f in fits)
        else:
            h = 0 if _fit(values[idx], phi_all[idx], 0)[1] <= 1e-12 * scale else order[name]
            coefs[name], resid[name] = _fit(values[idx], phi_all[idx], h)
            orders[name] = h

    # everything over the last period: past the start-up of the design (the filter's initial covariance,
    # integrators that fade in), one period before the end
    for name, values in (("Ad", Ad), ("Bd", Bd), ("u_ff", u_ff), ("y_ref", y_ref)):
        fit_group(name, values, last, False)
    fit_group("C", C, last, True)
    fit_group("M", M, last, True)
    # the law: the periodic LQR's gains (a sweep of the design's model), the other columns as designed
    gains_full = np.asarray(_law_arrays(controller)[0], float)
    if law_map.columns is not None:
        K_per = _periodic_lqr_gains(law_map.lqr, phi_all[last], last, step, n_period)
        rest = gains_full[last]
        G_per = law_map.law(K_per, rest)[:, :, keep]
        phi_per = _angles(np.arange(n_period), step)
        h = 0 if _fit(G_per, phi_per, 0)[1] <= 1e-12 * max(1.0, float(np.max(np.abs(G_per)))) else order["K"]
        coefs["K"], resid["K"] = _fit(G_per, phi_per, h)
        orders["K"] = h
        # the non-LQR columns are fitted at the phases of the last period
        if len(law_map.columns) < gains_full.shape[2]:
            other = [j for j, i in enumerate(keep) if i not in {f for f, _ in law_map.columns}]
            c_rest, r_rest = _fit(gains_full[last][:, :, keep][:, :, other], phi_all[last], orders["K"])
            nb = coefs["K"].shape[1]
            ck = coefs["K"].reshape(G.shape[1], len(keep), nb)
            ck[:, other, :] = c_rest.reshape(G.shape[1], len(other), nb)
            coefs["K"] = ck.reshape(-1, nb)
            resid["K"] = max(resid["K"], r_rest)
    else:   # an unknown law layout: the design's gains over its first period
        fit_group("K", G, k_all[:n_period], False)
    for g in GROUPS:   # entries that do not vary with the phase carry exact zeros (the C evaluates the others)
        c = coefs[g]
        scale = max(float(np.max(np.abs(c))), 1e-300) if c.size else 1.0
        flat = c.reshape(-1, c.shape[-1])
        flat[np.max(np.abs(flat[:, 1:]), axis=1, initial=0.0) <= 1e-12 * scale, 1:] = 0.0
    arrays = {g: _rounded(coefs[g], real) for g in GROUPS}
    return ControllerData(kind="fourier", arrays=arrays, orders={g: orders[g] for g in GROUPS}, hold={},
                          period_s=float(period), phase_step=step, n_plan=0, fit_residuals=resid, **common)


#: steps of one chunk of the hold's Riccati sweep, and the most it runs (82 s of a 50 Hz loop)
HOLD_SWEEP_STEPS = 256
HOLD_SWEEP_MAX_STEPS = 4096
#: relative change of the hold gain over one more chunk at which the sweep has converged (a weakly
#: controllable mode, such as the main job's 0.99997 per step, converges slowly: the gain then keeps drifting
#: by about 1e-7 per chunk, 1e-5 in all, far below the float32 tables' own rounding effects on the loop)
HOLD_GAIN_RTOL = 1e-6
#: growth of the Riccati matrix at which the sweep stops: unstable modes no input reaches make it grow
#: geometrically, and the gain, computed from it, then loses about log10(growth) of its 16 digits
HOLD_RICCATI_GROWTH = 1e8


def _hold_gain(A: np.ndarray, B: np.ndarray, Q: np.ndarray, R: np.ndarray,
               P_end: np.ndarray) -> tuple[np.ndarray | None, str]:
    r"""Stationary LQR gain of the frozen last sample: the design's Riccati sweep continued backward.

    The sweep of eqs. (28)-(29) runs over the time-invariant ``(A, B, Q, R)``
    from the design's terminal matrix ``P_end``, in chunks of
    :data:`HOLD_SWEEP_STEPS`, until the gain changes by less than
    :data:`HOLD_GAIN_RTOL` (relative) over a chunk. Where the DARE has a
    stabilizing solution this is its gain (the sweep converges to it). At a
    sample with an uncontrollable mode on the unit circle (the ball's spin
    about the plate normal at rest, never reached by tilting) the DARE has
    none and :math:`P_k` grows along that mode's left eigenvector :math:`w`;
    since :math:`w^T B = 0` the gain :math:`(R + B^T P B)^{-1} B^T P A` still
    converges: the stationary LQR of the stabilizable part, with the
    feedforward of the uncontrollable state into the command. The last
    sample of a plan that ends in motion (a circle cut short) is no
    equilibrium: its frozen linearization has unstable modes the inputs do
    not reach, :math:`P_k` grows geometrically and the gain computed from it
    loses its digits, so the sweep stops when :math:`P_k` has grown by
    :data:`HOLD_RICCATI_GROWTH` (and after :data:`HOLD_SWEEP_MAX_STEPS`).

    Returns
    -------
    gain : ndarray, shape (nu, N), or None
        The converged gain; None when it has not converged after
        :data:`HOLD_SWEEP_MAX_STEPS` steps or the Riccati matrix has grown
        by :data:`HOLD_RICCATI_GROWTH` before.
    how : str
        What was found, in words (for the controller's ``source``).
    """
    n, nu = B.shape
    L = HOLD_SWEEP_STEPS
    stacks = (np.broadcast_to(A, (L, n, n)), np.broadcast_to(B, (L, n, nu)), np.broadcast_to(Q, (L, n, n)),
              np.broadcast_to(R, (L, nu, nu)))
    gain, P = None, np.array(P_end, dtype=float)
    bound = HOLD_RICCATI_GROWTH * max(np.linalg.norm(P), np.linalg.norm(Q))
    change = np.inf
    for chunk in range(HOLD_SWEEP_MAX_STEPS // L):
        try:
            K, Ps, _S = riccati_sweep(*stacks, P)
        except np.linalg.LinAlgError as exc:   # R + B^T P B singular, or P no longer finite
            return None, f"the Riccati sweep of the last sample failed after {chunk * L} steps ({exc})"
        P = Ps[0]
        if not np.linalg.norm(P) <= bound:
            return None, (f"the last sample has no stationary LQR: its Riccati matrix grows by more than "
                          f"{HOLD_RICCATI_GROWTH:.0e} in {(chunk + 1) * L} steps (unstable modes no input reaches: "
                          "the plan does not end at an equilibrium)")
        if gain is not None:
            change = float(np.linalg.norm(K[0] - gain) / max(np.linalg.norm(K[0]), np.finfo(float).tiny))
            if change <= HOLD_GAIN_RTOL:
                return K[0], f"the stationary LQR of the last sample (converged in {(chunk + 1) * L} steps)"
        gain = K[0]
    return None, (f"the last sample has no stationary LQR (its gain still changes by {change:.3g} per {L} steps "
                  f"after {HOLD_SWEEP_MAX_STEPS}): the plan does not end at an equilibrium")


def _plan_hold(controller, law_map, Ad, Bd, C, M, G, u_ff, y_ref, keep, S) -> tuple[dict, str]:
    """The arrays held after a plan and how its gain was found.

    The last sample, the last filter gains of each class, and as gain the
    stationary LQR of the last sample (:func:`_hold_gain`) in the LQR's columns
    of the law; the last design gain where that does not exist (a plan that
    ends in motion) or the law's columns are not the LQR's.
    """
    Kt = Ad.shape[0]
    G_hold = G[-1:].copy()
    how = "the last design gain (the control law's columns are not the LQR's)"
    if law_map.columns is not None:
        lqr = law_map.lqr
        K_hold, how = _hold_gain(np.asarray(lqr.Ad[-1], float), np.asarray(lqr.Bd[-1], float),
                                 np.asarray(lqr.Q[-1], float), np.asarray(lqr.R[-1], float),
                                 np.asarray(lqr.riccati[-1], float))
        if K_hold is None:
            how = f"the last design gain: {how}"
        else:
            full = np.asarray(_law_arrays(controller)[0], float)[-1:]
            G_hold = law_map.law(K_hold[None], full)[:, :, keep]
    last_of_class = [max(k for k in range(Kt - S, Kt) if k % S == r) for r in range(S)]
    return {"Ad": Ad[-1], "Bd": Bd[-1], "C": C[last_of_class], "M": M[last_of_class], "K": G_hold[0],
            "u_ff": u_ff[-1], "y_ref": y_ref[-1]}, how
