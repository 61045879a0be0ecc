r"""A rig's state estimator: the LTV Kalman filter of a tracking design, with its sensors.

:func:`design_estimator` builds, for a tracking controller's reduced discrete
model (:class:`~ballctl.DiscreteLTVSystem` along the reference), the
measurement matrices of the rig's sensors and the finite-horizon Kalman filter
(:func:`~ballctl.kalman.finite_horizon_kalman`):

* a sensor signal is a plant coordinate (``contact_x``, ``alpha``, ...); its
  deviation from the reference is row ``i`` of the linearization's state map,
  ``dx_i = state_map[k][i] @ X`` (exact for independent coordinates, first
  order for dependent ones);
* at steps where a sensor is not sampled its rows of ``C_k`` are zero;
* process noise is referred to the inputs, ``W_k = Bd_k diag(process_std^2) Bd_k^T``
  plus a small floor ``state_std^2 I`` (the model mismatch a truth plant brings);
  measurement noise ``V = diag(max(noise_std, min_noise_std)^2)``.

Signals that are not coordinates of the design's plant (plate angles for a
quasi-static design, whose plate follows its inputs) are left out and listed
in :attr:`StateEstimator.unused_signals`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._errors import ParameterError
from ._validation import check_positive
from .discretize import DiscreteLTVSystem
from .kalman import KalmanFilterResult, finite_horizon_kalman
from .loop_step import latency_steps
from .ltv import LTVSystem
from .rig import RigProfileError, Sensor

__all__ = ["StateEstimator", "design_estimator", "measurement_matrices"]


@dataclass(frozen=True)
class StateEstimator:
    """An LTV Kalman filter with the sensors it reads.

    Attributes
    ----------
    sensors : tuple of Sensor
        Sensors whose signals the filter uses (signals it cannot use removed).
    signal_names : tuple of str
        The ny measured coordinates, sensor by sensor.
    coordinate_index : tuple of int
        Index of each signal among the design plant's coordinates.
    sampled : ndarray of bool, shape (K, ny)
        Whether each signal is sampled at control step k.
    kalman : KalmanFilterResult
        Gains ``(K, N, ny)``, covariances, measurement matrices ``C (K, ny, N)``.
    latency_steps : int
        Control steps until every sample of a step has arrived (largest sensor latency, rounded up).
    unused_signals : tuple of str
        Measured signals the design's model has no coordinate for.
    process_std : float
        Input-referred process noise std in rad.
    """

    sensors: tuple[Sensor, ...]
    signal_names: tuple[str, ...]
    coordinate_index: tuple[int, ...]
    sampled: np.ndarray
    kalman: KalmanFilterResult
    latency_steps: int
    unused_signals: tuple[str, ...]
    process_std: float

    @property
    def noise_std(self) -> np.ndarray:
        """Noise std per signal (m or rad), shape (ny,)."""
        return np.array([v for s in self.sensors for v in s.noise_std])

    @property
    def bias(self) -> np.ndarray:
        """Bias per signal (m or rad), shape (ny,)."""
        return np.array([v for s in self.sensors for v in s.bias])

    @property
    def n_signals(self) -> int:
        return len(self.signal_names)


def measurement_matrices(ltv: LTVSystem, coordinate_names: Sequence[str], signals: Sequence[str]) -> np.ndarray:
    """``C (K, ny, N)``: the deviation of each measured coordinate from the reduced state.

    Parameters
    ----------
    ltv : LTVSystem
        With a ``state_map (K, 2n, N)``.
    coordinate_names : sequence of str
        The plant's n coordinates.
    signals : sequence of str
        Measured coordinates.
    """
    if ltv.state_map is None:
        raise ParameterError("the LTV model carries no state_map to build measurement matrices from")
    names = list(coordinate_names)
    idx = []
    for s in signals:
        if s not in names:
            raise ParameterError(f"signal {s!r} is not a coordinate of the plant; coordinates are {tuple(names)}")
        idx.append(names.index(s))
    return np.ascontiguousarray(ltv.state_map[:, idx, :])


def design_estimator(ltv: LTVSystem, discrete: DiscreteLTVSystem, coordinate_names: Sequence[str],
                     sensors: Sequence[Sensor], *, process_std: float = np.deg2rad(0.5), state_std: float = 1e-5,
                     min_noise_std: float = 1e-4, initial_std: float = 0.05) -> StateEstimator:
    """The finite-horizon Kalman filter of a design for a set of sensors.

    Parameters
    ----------
    ltv : LTVSystem
        Continuous linearization at the control samples (for the state map).
    discrete : DiscreteLTVSystem
        Its ZOH discretization ``Ad (K, N, N)``, ``Bd (K, N, nu)``.
    coordinate_names : sequence of str
        The design plant's coordinates.
    sensors : sequence of Sensor
        The rig's sensors (periods must be whole numbers of ``discrete.dt``).
    process_std : float
        Input-referred process-noise std in rad (plate-angle disturbance per step).
    state_std : float
        Floor of the process noise on every state (state units).
    min_noise_std : float
        Smallest measurement-noise std used in ``V`` (m or rad): a noiseless
        sensor is still trusted only to this level.
    initial_std : float
        Std of the initial estimate of every state (the initial estimate is
        the reference itself).

    Returns
    -------
    StateEstimator

    Raises
    ------
    RigProfileError
        If no sensor signal is a coordinate of the design plant.
    """
    process_std = check_positive(process_std, "process_std", "rad")
    state_std = check_positive(state_std, "state_std")
    min_noise_std = check_positive(min_noise_std, "min_noise_std")
    initial_std = check_positive(initial_std, "initial_std")
    coords = tuple(coordinate_names)
    dt = discrete.dt
    kept, unused = [], []
    for s in sensors:
        use = tuple(i for i, sig in enumerate(s.signals) if sig in coords)
        unused += [s.signals[i] for i in range(len(s.signals)) if i not in use]
        if use:
            kept.append(Sensor(name=s.name, signals=tuple(s.signals[i] for i in use), period_s=s.period_s,
                               latency_s=s.latency_s, noise_std=tuple(s.noise_std[i] for i in use),
                               bias=tuple(s.bias[i] for i in use)))
    if not kept:
        raise RigProfileError(f"no sensor measures a coordinate of the design plant {coords}; "
                              f"unusable signals {tuple(unused)}")
    signals = tuple(sig for s in kept for sig in s.signals)
    Kt = discrete.Ad.shape[0]
    sampled = np.zeros((Kt, len(signals)), dtype=bool)
    col = 0
    for s in kept:
        every = s.period_steps(dt)
        sampled[::every, col:col + len(s.signals)] = True
        col += len(s.signals)
    C_full = measurement_matrices(ltv, coords, signals)[:Kt]
    C = C_full * sampled[:, :, None]
    noise = np.maximum(np.array([v for s in kept for v in s.noise_std]), min_noise_std)
    V = np.diag(noise ** 2)
    Bd = discrete.Bd
    W = process_std ** 2 * Bd @ np.swapaxes(Bd, -1, -2) + state_std ** 2 * np.eye(discrete.n_states)
    P0 = initial_std ** 2 * np.eye(discrete.n_states)
    kalman = finite_horizon_kalman(discrete.Ad, C, W, V, P0=P0)
    lat = max(latency_steps(s.latency_s, dt) for s in kept)
    sampled.setflags(write=False)
    return StateEstimator(tuple(kept), signals, tuple(coords.index(s) for s in signals), sampled, kalman, lat,
                          tuple(unused), process_std)
