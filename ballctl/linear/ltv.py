"""Linear time-varying systems sampled along a reference.

Conventions (see ``docs/conventions.md``): the time axis comes first,
``A`` has shape ``(K, N, N)`` and ``B`` shape ``(K, N, nu)``; the state is
``X = (dx_ai, dxd_ai, dx_ad)`` of the partition that produced it.

This module is LTV mathematics only: it does not import the multibody layer.
The partition that produced a system is carried as any object with the
attributes of :class:`StateReduction` (:class:`ballctl.linear.partition.Partition`
has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from .._errors import ParameterError, PartitionError, SampleIndexError, ShapeError

__all__ = ["LTVSystem", "StateReduction"]


@runtime_checkable
class StateReduction(Protocol):
    """How a reduced state ``X = (dx_ai, dxd_ai, dx_ad)`` selects from full deviations.

    Attributes
    ----------
    independent : sequence of int
        Coordinates whose deviations and velocities are states.
    admissible_dependent : sequence of int
        Coordinates whose deviations only are states.
    state_names : tuple of str
        Names of the reduced states in the order above.
    """

    independent: Sequence[int]
    admissible_dependent: Sequence[int]
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class LTVSystem:
    """Samples of ``Xdot = A(t) X + B(t) du`` (Agúndez et al. 2024, eq. 18).

    Attributes
    ----------
    t : ndarray, shape (K,)
        Sample times in s, strictly increasing.
    A : ndarray, shape (K, N, N)
        State matrices.
    B : ndarray, shape (K, N, nu)
        Input matrices.
    state_names : tuple of str
        Names of the N states.
    input_names : tuple of str
        Names of the nu inputs.
    partition : StateReduction or None
        The coordinate partition used by the linearizer (a
        :class:`ballctl.linear.partition.Partition`).
    state_map : ndarray, shape (K, 2n, N), optional
        Maps the reduced state to full deviations: ``(dx, dxd) = state_map[k] @ X``
        (dependent coordinates and velocities from the linearized constraints).
    derivative_method : str
        How the model callables were differentiated ("complex-step", or
        "central" when a callable was not complex-safe).
    """

    t: np.ndarray
    A: np.ndarray
    B: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    partition: StateReduction | None = field(default=None)
    state_map: np.ndarray | None = field(default=None, repr=False)
    derivative_method: str = "complex-step"

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=float)
        A = np.asarray(self.A, dtype=float)
        B = np.asarray(self.B, dtype=float)
        if t.ndim != 1 or A.ndim != 3 or B.ndim != 3:
            raise ParameterError(f"LTVSystem needs t (K,), A (K,N,N), B (K,N,nu); got {t.shape}, {A.shape}, {B.shape}")
        K, N = t.shape[0], A.shape[1]
        if A.shape != (K, N, N) or B.shape[:2] != (K, N):
            raise ParameterError(f"inconsistent shapes: t {t.shape}, A {A.shape}, B {B.shape}")
        for name, arr in (("t", t), ("A", A), ("B", B)):
            bad = ~np.isfinite(arr.reshape(K, -1)).all(axis=1) if K else np.zeros(0, bool)
            if bad.any():
                k = int(np.argmax(bad))
                raise ParameterError(f"LTVSystem {name} must be finite; sample {k} (t = {float(t[k]):.6g} s) "
                                     f"holds NaN or inf")
        if K > 1 and np.any(np.diff(t) <= 0):
            raise ParameterError("t must be strictly increasing")
        if len(self.state_names) != N or len(self.input_names) != B.shape[2]:
            raise ParameterError("state_names/input_names do not match the sizes of A and B")
        for arr in (t, A, B):
            arr.setflags(write=False)
        if self.state_map is not None:
            sm = np.asarray(self.state_map, dtype=float)
            if sm.ndim != 3 or sm.shape[0] != K or sm.shape[2] != N:
                raise ShapeError(f"state_map must have shape (K, 2n, N) = ({K}, 2n, {N}), got {sm.shape}")
            sm.setflags(write=False)
            object.__setattr__(self, "state_map", sm)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "state_names", tuple(self.state_names))
        object.__setattr__(self, "input_names", tuple(self.input_names))

    def reduce(self, dx, dxd) -> np.ndarray:
        """Reduced state ``X = (dx_ai, dxd_ai, dx_ad)`` from full deviations, shape (..., N).

        ``dx, dxd`` have shape (..., n); this is a selection, the same at every sample.

        Parameters
        ----------
        dx, dxd : array_like, shape (..., n)
            Deviations of the coordinates and velocities from the reference.
        """
        if self.partition is None:
            raise ParameterError("this LTVSystem has no partition to reduce full deviations with")
        p = self.partition
        dx = np.asarray(dx, dtype=float)
        dxd = np.asarray(dxd, dtype=float)
        full = np.concatenate([dx[..., list(p.independent)], dxd[..., list(p.independent)],
                               dx[..., list(p.admissible_dependent)]], axis=-1)
        if self.state_names == p.state_names:
            return full
        return full[..., [p.state_names.index(name) for name in self.state_names]]

    def expand(self, k: int, X) -> tuple[np.ndarray, np.ndarray]:
        """Full deviations ``(dx, dxd)``, each shape (n,), from the reduced state at sample ``k``.

        Parameters
        ----------
        k : int
            Sample index.
        X : array_like, shape (N,)
            Reduced state.
        """
        if self.state_map is None:
            raise ParameterError("this LTVSystem carries no state_map")
        full = self.state_map[k] @ np.asarray(X, dtype=float)
        n = full.shape[0] // 2
        return full[:n], full[n:]

    @property
    def n_states(self) -> int:
        """Number N of states."""
        return self.A.shape[1]

    @property
    def n_inputs(self) -> int:
        """Number nu of inputs."""
        return self.B.shape[2]

    def __len__(self) -> int:
        return self.t.shape[0]

    def state_index(self, name: str) -> int:
        """Index of a state by name.

        Parameters
        ----------
        name : str
            A state name.
        """
        try:
            return self.state_names.index(name)
        except ValueError:
            raise ParameterError(f"unknown state {name!r}; states are {self.state_names}") from None

    def to_statespace(self, k: int):
        """The frozen-time LTI snapshot at sample ``k`` as a python-control ``StateSpace``.

        Parameters
        ----------
        k : int
            Sample index.
        """
        import control

        if not -len(self) <= k < len(self):
            raise SampleIndexError(f"sample {k} out of range for {len(self)} samples")
        N = self.n_states
        return control.ss(self.A[k], self.B[k], np.eye(N), np.zeros((N, self.n_inputs)),
                          states=list(self.state_names), inputs=list(self.input_names),
                          outputs=list(self.state_names), name=f"ltv_sample_{k}")

    def select_states(self, names, *, coupling_tol: float = 1e-9) -> "LTVSystem":
        """The subsystem of the named states (e.g. the dynamic part ``(dx_ai, dxd_ai)``).

        Raises a :class:`~ballctl.errors.PartitionError` unless the other states do not
        drive the selected ones (``|A[:, sel, other]| <= coupling_tol * max|A|``),
        so the subsystem is exact, as for the ball-plate with independent (contact_x, contact_y,
        yaw), where A23 = 0 along the circle.

        Parameters
        ----------
        names : sequence of str
            States to keep, in the order given.
        coupling_tol : float
            Largest relative coupling from the other states that is accepted.
        """
        idx = [self.state_index(n) for n in names]
        other = [i for i in range(self.n_states) if i not in idx]
        if other:
            coupling = float(np.abs(self.A[:, idx][:, :, other]).max())
            scale = max(1.0, float(np.abs(self.A).max()))
            if coupling > coupling_tol * scale:
                raise PartitionError(
                    f"the states {[self.state_names[i] for i in other]} drive the selected ones "
                    f"(largest coupling {coupling:.3g}); the subsystem would not be exact")
        sm = None if self.state_map is None else self.state_map[:, :, idx]
        return LTVSystem(self.t, self.A[:, idx][:, :, idx], self.B[:, idx], tuple(self.state_names[i] for i in idx),
                         self.input_names, self.partition, sm, self.derivative_method)

    def subsample(self, step: int) -> "LTVSystem":
        """Every ``step``-th sample.

        Parameters
        ----------
        step : int
            Keep samples 0, step, 2 step, ... (>= 1).
        """
        sm = None if self.state_map is None else self.state_map[::step]
        return LTVSystem(self.t[::step], self.A[::step], self.B[::step], self.state_names,
                         self.input_names, self.partition, sm, self.derivative_method)
