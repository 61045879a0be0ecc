"""The Python twin of the exported C controller, for rigs whose loop runs on a Linux board.

:class:`ControllerRuntime` loads ``ballctl_controller.npz`` (written next to
the C files by :func:`ballctl.schedule.write_c_controller`) and steps exactly
like ``ballctl_controller.c``: the same calls (``measure(j, y)``, ``step()``,
``reference(j)``, ``health``), the same steps in the same order, the same
fixed-point phase and polynomial sine and cosine, the same command shaping.
In double precision its commands equal the C ones to 1e-12
(``tests/test_sil.py``); with a ``float32`` export it computes in double on
the float32-rounded data.

It depends on numpy only (no other part of ballctl), so this one file and
the ``.npz`` run on a Raspberry Pi (Project Moab runs its controller in Python
at 30 Hz)::

    ctl = ControllerRuntime("ballctl_out/c_controller")
    while True:
        ctl.measure(j, camera_reading)      # the sample of step j (NaN: not received)
        servo.write(ctl.step())             # the plate command of the current step, rad

It implements the controller-component protocol of :mod:`ballctl.deploy.sil`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["ControllerRuntime", "BC_OK", "BC_REFUSED_NONFINITE", "BC_REFUSED_RANGE", "BC_ERR_LATE",
           "BC_ERR_FUTURE", "BC_HEALTH_INNOVATION", "BC_HEALTH_STALE", "BC_HEALTH_RESET"]

#: ``measure`` status bits (>= 0: the accepted signals are recorded) and errors (< 0: nothing recorded)
BC_OK, BC_REFUSED_NONFINITE, BC_REFUSED_RANGE, BC_ERR_LATE, BC_ERR_FUTURE = 0, 1, 2, -1, -2
#: ``health`` bits
BC_HEALTH_INNOVATION, BC_HEALTH_STALE, BC_HEALTH_RESET = 1, 2, 4

_MASK64 = (1 << 64) - 1
_GROUPS = ("Ad", "Bd", "C", "M", "K", "u_ff", "y_ref")


def _phase_basis(theta: int, nb: int) -> list:
    """1, cos, sin, cos 2, sin 2, ... of the phase ``theta`` in 2**-64 turns (the C's arithmetic, in double)."""
    t = (theta + (1 << 61)) & _MASK64
    n = t >> 62
    f = t & ((1 << 62) - 1)
    hi, lo = f >> 31, f & 0x7FFFFFFF
    x = ((float(hi) - 1073741824.0) + float(lo) * 4.656612873077393e-10) * 7.314590396335798e-10
    x2 = x * x
    s = x * (1.0 + x2 * (-0.16666666666666666 + x2 * (0.008333333333333333 + x2 * (
        -0.0001984126984126984 + x2 * (2.7557319223985893e-06 + x2 * (-2.505210838544172e-08 + x2 * (
            1.6059043836821613e-10 + x2 * -7.647163731819816e-13)))))))
    co = 1.0 + x2 * (-0.5 + x2 * (0.041666666666666664 + x2 * (-0.001388888888888889 + x2 * (
        2.48015873015873e-05 + x2 * (-2.755731922398589e-07 + x2 * (2.08767569878681e-09 + x2 * (
            -1.1470745597729725e-11 + x2 * 4.779477332387385e-14)))))))
    b = [1.0] * nb
    if nb > 1:
        c1, s1 = ((co, s), (-s, co), (-co, -s), (s, -co))[n]
        b[1], b[2] = c1, s1
        for h in range(3, nb - 1, 2):
            b[h] = b[h - 2] * c1 - b[h - 1] * s1
            b[h + 1] = b[h - 1] * c1 + b[h - 2] * s1
    return b


def _round_even(v: float) -> float:
    if v >= 2251799813685248.0 or v <= -2251799813685248.0:
        return v
    t = v + 6755399441055744.0
    return t - 6755399441055744.0


def _finite(v: float) -> bool:
    return v == v and v - v == 0.0


def _load(source) -> dict:
    if hasattr(source, "to_npz"):
        return dict(source.to_npz())
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            path = path / "ballctl_controller.npz"
        if not path.is_file():
            raise FileNotFoundError(f"no exported controller at {str(path)!r} (the directory written by "
                                    "ballctl.schedule.write_c_controller, or its ballctl_controller.npz)")
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    return dict(source)


class ControllerRuntime:
    """The exported controller, stepped in Python exactly like the C (``ballctl_controller.c``).

    Parameters
    ----------
    source : str, path-like, mapping or ControllerData
        The directory written by ``write_c_controller``, its ``ballctl_controller.npz``,
        the arrays of that file, or a :class:`ballctl.schedule.ControllerData`.

    Attributes
    ----------
    k : int
        The step of the next command (counts up forever).
    health : int
        ``BC_HEALTH_*`` bits (0: healthy).
    """

    def __init__(self, source) -> None:
        d = _load(source)
        if int(d.get("format_version", -1)) != 2:
            raise ValueError(f"source: not a version-2 ballctl controller file (format_version "
                             f"{d.get('format_version')!r})")
        self.kind = str(d["kind"])
        self.real = str(d["real"])
        self.dt = float(d["dt"])
        self.state_names = tuple(str(s) for s in d["state_names"])
        self.input_names = tuple(str(s) for s in d["input_names"])
        self.signal_names = tuple(str(s) for s in d["signal_names"])
        self.n_states, self.n_inputs, self.n_signals = (len(self.state_names), len(self.input_names),
                                                        len(self.signal_names))
        self.latency_steps = int(d["latency_steps"])
        self.sampled = np.asarray(d["sampled"]).astype(bool)
        self.n_classes = self.sampled.shape[0]
        period = float(d["period_s"])
        self.period_s = period if np.isfinite(period) else None
        self.n_period = int(np.ceil(period / self.dt - 1e-9)) if self.kind == "fourier" else 0
        self.phase_step = (int(d["phase_step_hi"]) << 32) | int(d["phase_step_lo"])
        self.n_plan = int(d["n_plan"])
        self.quantum, self.max_angle, self.max_rate = (float(d["quantum"]), float(d["max_angle"]),
                                                       float(d["max_rate"]))
        self.delay_steps = int(d["delay_steps"])
        frac = float(d["delay_frac_s"])
        self._span1, self._span2 = frac, self.dt - frac
        self._w1 = frac / self.dt
        self._w2 = 1.0 - self._w1
        self.u_start = np.asarray(d["u_start"], dtype=float)
        self.max_deviation = np.asarray(d["max_deviation"], dtype=float)
        self.innovation_limit = np.asarray(d["innovation_limit"], dtype=float)
        self.health_steps = int(d["health_steps"])
        self._stale_steps = self.health_steps + self.n_classes
        self.ring = max(self.latency_steps, 1) + 1
        N, nu, ny = self.n_states, self.n_inputs, self.n_signals
        a = {g: np.asarray(d[f"a_{g}"], dtype=float) for g in _GROUPS}
        if self.kind == "fourier":
            orders = {g: int(d[f"order_{g}"]) for g in _GROUPS}
            self.n_basis = 2 * max(orders.values()) + 1

            def pad(c):  # zero columns for the higher harmonics of a lower-order group: the same sums
                out = np.zeros(c.shape[:-1] + (self.n_basis,))
                out[..., :c.shape[-1]] = c
                return out
            self._f_model = np.concatenate([pad(a["Ad"]), pad(a["Bd"])], axis=0)
            self._f_law = np.concatenate([pad(a["K"]), pad(a["u_ff"])], axis=0)
            self._f_filter = [np.concatenate([pad(a["C"][r]), pad(a["M"][r])], axis=0) for r in range(self.n_classes)]
            self._f_yref = pad(a["y_ref"])
        else:
            self.n_basis = 1
            hold = {g: np.asarray(d[f"hold_{g}"], dtype=float) for g in _GROUPS}
            self._t, self._h = a, hold
        self._N, self._nu, self._ny = N, nu, ny
        self.reset()

    # ------------------------------------------------------------------ the data of a step
    def _basis(self, theta: int) -> np.ndarray:
        return np.array(_phase_basis(theta, self.n_basis))

    def _model(self, s: int, j: int) -> None:
        N = self._N
        if self.kind == "fourier":
            v = self._f_model @ self._basis_r[s]
            self._Ad[s] = v[:N * N].reshape(N, N)
            self._Bd[s] = v[N * N:].reshape(N, self._nu)
        elif j < self.n_plan:
            self._Ad[s], self._Bd[s] = self._t["Ad"][j], self._t["Bd"][j]
        else:
            self._Ad[s], self._Bd[s] = self._h["Ad"], self._h["Bd"]

    def _filter(self, s: int, j: int):
        N, ny = self._N, self._ny
        if self.kind == "fourier":
            v = self._f_filter[self._cls[s]] @ self._basis_r[s]
            return v[:ny * N].reshape(ny, N), v[ny * N:].reshape(N, ny)
        if j < self.n_plan:
            return self._t["C"][j], self._t["M"][j]
        return self._h["C"][self._cls[s]], self._h["M"][self._cls[s]]

    def _law(self, s: int, k: int):
        N, nu = self._N, self._nu
        if self.kind == "fourier":
            v = self._f_law @ self._basis_r[s]
            return v[:nu * N].reshape(nu, N), v[nu * N:]
        if k < self.n_plan:
            return self._t["K"][k], self._t["u_ff"][k]
        return self._h["K"], self._h["u_ff"]

    def _yref(self, b: np.ndarray, j: int) -> np.ndarray:
        if self.kind == "fourier":
            return self._f_yref @ b
        return self._t["y_ref"][j] if j < self.n_plan else self._h["y_ref"]

    def _enter(self, s: int, cls: int) -> None:
        self._cls[s] = cls
        self._basis_r[s] = self._basis(self._theta) if self.kind == "fourier" else 1.0
        self._y_dev[s] = 0.0
        self._got[s] = False

    # ------------------------------------------------------------------ the protocol
    def reset(self) -> None:
        """Start again at step 0 with the estimate on the reference (``ballctl_init``)."""
        R, N, nu, ny = self.ring, self._N, self._nu, self._ny
        self.k = 0
        self._j_c = 0
        self._theta = 0
        self._slot = 0
        self._dslot = 0
        self._n_large = 0
        self._n_stale = 0
        self.health = 0
        self._X_c = np.zeros(N)
        self._y_dev = np.zeros((R, ny))
        self._got = np.zeros((R, ny), dtype=bool)
        self._du = np.zeros((R, nu))
        self._Ad = np.zeros((R, N, N))
        self._Bd = np.zeros((R, N, nu))
        self._basis_r = np.ones((R, self.n_basis))
        self._cls = [0] * R
        self._cmd = np.tile(self.u_start, (self.delay_steps + 2, 1))
        self._u_applied = [float(v) for v in self.u_start]
        for s in range(R):
            self._enter(s, 0)
        self._enter(0, 0)

    def _back(self, back: int) -> int:
        return (self._slot + self.ring - back) % self.ring

    def reference(self, j: int) -> np.ndarray:
        """The reference of the measured signals at step ``j >= 0`` (m or rad), shape (ny,).

        Parameters
        ----------
        j : int
            Step number.
        """
        j = int(j)
        if j < 0:
            raise ValueError(f"j must be a step number >= 0, got {j}")
        b = self._basis((j * self.phase_step) & _MASK64) if self.kind == "fourier" else np.ones(1)
        return np.array(self._yref(b, j), dtype=float)

    def measure(self, j: int, y) -> int:
        """Record the sample taken at step ``j`` (``ballctl_measure``).

        Parameters
        ----------
        j : int
            Step at which the signals were sampled (``k - latency_steps <= j <= k``).
        y : array_like, shape (ny,)
            The signals in m or rad; NaN: not received.

        Returns
        -------
        int
            ``BC_OK``, refusal bits (>= 0) or ``BC_ERR_LATE`` / ``BC_ERR_FUTURE`` (< 0).
        """
        j = int(j)
        if j > self.k:
            return BC_ERR_FUTURE
        if j < self._j_c:
            return BC_ERR_LATE
        s = self._back(self.k - j)
        y_ref = self._yref(self._basis_r[s], j)
        pattern = self.sampled[self._cls[s]]
        status = BC_OK
        for m in range(self._ny):
            if not pattern[m]:
                continue
            v = float(y[m])
            if not _finite(v):
                status |= BC_REFUSED_NONFINITE
                continue
            dev = v - float(y_ref[m])
            if dev > self.max_deviation[m] or dev < -self.max_deviation[m]:
                status |= BC_REFUSED_RANGE
                continue
            self._y_dev[s, m] = dev
            self._got[s, m] = True
        return status

    def _update(self, X, s, C, M, commit: bool):
        got = self._got[s]
        inn = np.where(got, self._y_dev[s] - C @ X, 0.0)
        if commit:
            large = bool(np.any(got & ((inn > self.innovation_limit) | (inn < -self.innovation_limit))))
            self._n_large = min(self._n_large + 1, self.health_steps) if large else 0
            self._n_stale = 0 if got.any() else min(self._n_stale + 1, self._stale_steps)
        return X + M @ inn

    def step(self) -> np.ndarray:
        """The plate command of the current step in rad, shape (nu,); advances the step (``ballctl_step``).

        Returns
        -------
        ndarray, shape (nu,)
        """
        k = self.k
        lat = self.latency_steps
        while self._j_c <= k - lat and self._j_c < k:   # commit: update, then predict with the input that acted
            s = self._back(k - self._j_c)
            C, M = self._filter(s, self._j_c)
            X_post = self._update(self._X_c, s, C, M, True)
            self._X_c = self._Ad[s] @ X_post + self._Bd[s] @ self._du[s]
            self._j_c += 1
        if lat == 0:
            C, M = self._filter(self._slot, k)
            X = self._update(self._X_c, self._slot, C, M, False)
        else:
            X = self._X_c
            for j in range(self._j_c, k):   # latency compensation: predict with the inputs already sent
                s = self._back(k - j)
                X = self._Ad[s] @ X + self._Bd[s] @ self._du[s]
        G, uff = self._law(self._slot, k)
        u = uff - G @ X
        if not np.all(np.isfinite(u)):   # never propagate a NaN: restart the estimate on the reference
            self._X_c = np.zeros(self._N)
            self._du[:] = 0.0
            self.health |= BC_HEALTH_RESET
            u = np.array(uff, dtype=float)
        out = np.empty(self._nu)
        ds = self._dslot
        DR = self.delay_steps + 2
        for i in range(self._nu):
            q = float(u[i])
            if self.quantum > 0.0:
                q = _round_even(q / self.quantum) * self.quantum
            if self.max_angle > 0.0:
                q = self.max_angle if q > self.max_angle else (-self.max_angle if q < -self.max_angle else q)
            out[i] = q
            self._cmd[ds, i] = q
        d1 = (ds + DR - self.delay_steps - 1) % DR
        d2 = (ds + DR - self.delay_steps) % DR
        for i in range(self._nu):
            first = self._cmd[d1, i] if k - self.delay_steps - 1 >= 0 else self.u_start[i]
            second = self._cmd[d2, i] if k - self.delay_steps >= 0 else self.u_start[i]
            ua = self._u_applied[i]
            if self._span1 > 0.0:
                ua = self._slew(float(first), ua, self.max_rate * self._span1)
            held0 = ua
            ua = self._slew(float(second), ua, self.max_rate * self._span2)
            self._u_applied[i] = ua
            self._du[self._slot, i] = (self._w1 * held0 + self._w2 * ua) - float(uff[i])
        self._model(self._slot, k)
        self.health = ((self.health & BC_HEALTH_RESET)
                       | (BC_HEALTH_INNOVATION if self._n_large >= self.health_steps else 0)
                       | (BC_HEALTH_STALE if self._n_stale >= self._stale_steps else 0))
        cls = (self._cls[self._slot] + 1) % self.n_classes
        self.k = k + 1
        self._theta = (self._theta + self.phase_step) & _MASK64
        self._slot = (self._slot + 1) % self.ring
        self._dslot = (ds + 1) % DR
        self._enter(self._slot, cls)
        return out

    def _slew(self, target: float, prev: float, step: float) -> float:
        if not self.max_rate > 0.0:
            return target
        change = target - prev
        if change > step:
            return prev + step
        if change < -step:
            return prev + -step
        return target
