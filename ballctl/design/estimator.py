r"""A rig's state estimator: the LTV Kalman filter of a tracking design, with its sensors.

:func:`design_estimator` builds, for a tracking controller's reduced discrete
model (:class:`~ballctl.DiscreteLTVSystem` along the reference), the
measurement matrices of the rig's sensors and the finite-horizon Kalman filter
(:func:`~ballctl.design.kalman.finite_horizon_kalman`):

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

Offset-free estimation
----------------------
With an :class:`InputDisturbance` the filter also estimates ``nd`` disturbance
states ``d`` that act through given input directions ``T_k`` (``(nu, nd)``
per step, ``InputDisturbance.directions``; default the identity: a constant disturbance
on every input, such as a plate level error), the disturbance model of
offset-free MPC (Pannocchia & Rawlings, AIChE J. 49 (2003) 426-437):

.. math::

    \begin{bmatrix} X \\ d \end{bmatrix}_{k+1} =
    \begin{bmatrix} A_{d,k} & B_{d,k} T_k \\ 0 & I \end{bmatrix}
    \begin{bmatrix} X \\ d \end{bmatrix}_k +
    \begin{bmatrix} B_{d,k} \\ 0 \end{bmatrix} \delta u_k,
    \qquad y_k = [\,C_k \;\; 0\,] \begin{bmatrix} X \\ d \end{bmatrix}_k,

with a random walk of std ``InputDisturbance.std`` per step on ``d`` (so a slowly
varying disturbance is followed too). A disturbance constant in a frame that
turns with the reference (a rolling resistance opposing the motion) is a
column of ``T_k`` that turns with it. The control law then cancels the
estimate, ``u = u_ff - K X_hat - T_k d_hat`` (:meth:`StateEstimator.feedback_gains`):
with ``d_hat = d`` the disturbance has no effect at all (it is matched: it
enters where the input does), so a constant disturbance leaves no steady
tracking error. The disturbances must be observable (for a constant input
disturbance: the plant has no transmission zero at z = 1 from the inputs to
the measured signals): :func:`design_estimator` checks on the observability
Gramian of the augmented pair over its first :data:`OBSERVABILITY_WINDOW_S`
seconds (:func:`ballctl.observability_gramian`) that
what the sensors see of the disturbances is not explained by the design's
own states (``_disturbance_information``; directions the sensors never
see, such as the ball's roll angle, drop out) and records the report in
:attr:`StateEstimator.disturbance_observability`.

Integral action
---------------
A model error that is no disturbance through the inputs (a servo softer
than designed lets the plate sag towards the ball: the ball drifts outwards
on a circle) is rejected by integrating the measured error. With an
:class:`IntegralAction` the filter's state ends with ``ni`` integrator
states (m s),

.. math::

    \zeta_{k+1} = \zeta_k + \Delta t\, G_k\, \hat y_k,

where ``y_hat_k`` is the measured deviation of the named signals where a
sample arrived and the estimate ``C X_post`` where none did. In the filter's
form this is one more block of rows: ``Ad[zeta, X] = dt G_k C_k``,
``Ad[zeta, zeta] = I`` and the update gain ``M[zeta] = dt G_k (I - C_k M_k)``
(so ``zeta_post + Ad[zeta, X] X_post`` adds exactly ``dt G_k y_k``); the
integrators are known exactly, so their covariance rows are zero. The LQR
that weighs them is :func:`ballctl.design.tracking.design_tracking_lqr`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError
from .._validation import check_instance, check_positive
from .controllability.gramians import RANK_RTOL, jacobi_scaled
from ..linear.discretize import DiscreteLTVSystem
from .kalman import KalmanFilterResult, finite_horizon_kalman
from ..simulation.loop_step import latency_steps
from ..linear.ltv import LTVSystem
from ..hardware import Sensor, per_signal

__all__ = ["StateEstimator", "EstimatorSettings", "InputDisturbance", "IntegralAction", "design_estimator",
           "measurement_matrices"]


#: default random walk of the disturbance states per control step, and their initial std (rad)
DISTURBANCE_STD = float(np.deg2rad(0.003))
INITIAL_DISTURBANCE_STD = float(np.deg2rad(0.3))


@dataclass(frozen=True, kw_only=True)
class EstimatorSettings:
    """The noise model of :func:`design_estimator`'s Kalman filter.

    Attributes
    ----------
    process_std : float
        Input-referred process-noise std in rad (plate-angle disturbance per control step), > 0:
        ``W_k = Bd_k Bd_k^T process_std^2 + state_std^2 I``.
    state_std : float
        Floor of the process noise on every state, in the state's unit (m, rad, m/s, rad/s), > 0.
    min_noise_std : float
        Smallest measurement-noise std used in ``V``, in the signal's unit (m or rad), > 0: a noiseless
        sensor is still trusted only to this level.
    initial_std : float
        Std of the initial estimate of every state (the initial estimate is the reference itself), in the
        state's unit, > 0.
    """

    process_std: float = float(np.deg2rad(0.5))
    state_std: float = 1e-5
    min_noise_std: float = 1e-4
    initial_std: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "process_std", check_positive(self.process_std, "process_std", "rad"))
        for name in ("state_std", "min_noise_std", "initial_std"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))


@dataclass(frozen=True, kw_only=True)
class InputDisturbance:
    """Disturbance states acting through the inputs (offset-free estimation, see the module docstring).

    Attributes
    ----------
    directions : ndarray, shape (K, nu, nd), optional
        Their input directions ``T_k`` per control step (default None: the identity, one constant
        disturbance per input).
    std : float or array_like, shape (nd,)
        Random-walk std of the disturbance states per control step in rad, > 0: how fast the estimate may
        follow a changing disturbance.
    initial_std : float or array_like, shape (nd,)
        Std of the initial disturbance estimate (0) in rad, > 0. Kept near the steady-state uncertainty on
        purpose: a large value gives large early filter gains, and their noisy disturbance estimates,
        cancelled at once, drive the servos into their torque limit (the estimate then winds up on the
        saturation it cannot see).
    """

    directions: np.ndarray | None = None
    std: float | np.ndarray = DISTURBANCE_STD
    initial_std: float | np.ndarray = INITIAL_DISTURBANCE_STD


@dataclass(frozen=True)
class IntegralAction:
    """Integrators of the measured error (see the module docstring): ``zeta += dt * directions_k @ y_named``.

    Attributes
    ----------
    signals : tuple of str
        The measured signals integrated (e.g. ``("contact_x", "contact_y")``).
    directions : ndarray, shape (K, ni, len(signals))
        Per control step, the combinations integrated (e.g. the error along
        and across the reference path, so that an error constant in the
        path's frame is integrated on a curved path).
    max_integral_error : float
        Bryson limit of each integrator state in the LQR, in the signals' unit times s.
    """

    signals: tuple[str, ...]
    directions: np.ndarray
    max_integral_error: float

    def __post_init__(self) -> None:
        d = np.asarray(self.directions, dtype=float)
        signals = tuple(str(v) for v in self.signals)
        if d.ndim != 3 or d.shape[2] != len(signals) or d.shape[1] < 1 or not np.all(np.isfinite(d)):
            raise ParameterError(f"IntegralAction.directions must be a finite array of shape (K, ni >= 1, "
                                 f"{len(signals)}), got shape {d.shape}")
        check_positive(self.max_integral_error, "max_integral_error", "signal unit * s")
        object.__setattr__(self, "signals", signals)
        object.__setattr__(self, "directions", d)

    @property
    def n_integrals(self) -> int:
        """Integrator states ni."""
        return int(self.directions.shape[1])


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
    Ad, Bd : ndarray, shapes (K, Ne, Ne), (K, Ne, nu)
        The filter's prediction model: the design's discrete model, augmented
        by the disturbance states when there are any (Ne = N + n_disturbances).
    n_disturbances : int
        Disturbance states nd appended to the design's state (0 without them).
    disturbance_std : ndarray, shape (nd,)
        Random-walk std of each disturbance state per step in rad.
    disturbance_map : ndarray, shape (K, nu, nd)
        Input directions ``T_k`` of the disturbance states (empty without them).
    disturbance_observability : ObservabilityReport or None
        Observability of the augmented pair over the first period (None without disturbance states).
    n_integrals : int
        Integrator states ni at the end of the filter's state (0 without integral action).
    integral_map : ndarray, shape (K, ni, N)
        ``dt G_k C_k``: the integrators' increment per unit of the design's states
        (what the LQR's model integrates; empty without them).
    integral : IntegralAction or None
        The integral action the filter was built with.
    """

    sensors: tuple[Sensor, ...]
    signal_names: tuple[str, ...]
    coordinate_index: tuple[int, ...]
    sampled: np.ndarray
    kalman: KalmanFilterResult
    latency_steps: int
    unused_signals: tuple[str, ...]
    process_std: float
    Ad: np.ndarray
    Bd: np.ndarray
    n_disturbances: int = 0
    disturbance_std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    disturbance_map: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    disturbance_observability: object = None
    n_integrals: int = 0
    integral_map: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    integral: IntegralAction | None = None

    @property
    def n_states(self) -> int:
        """Ne: the filter's state size (the design's N, then the disturbance and the integrator states)."""
        return int(self.Ad.shape[1])

    @property
    def noise_std(self) -> np.ndarray:
        """Noise std per signal (m or rad), shape (ny,)."""
        return per_signal(self.sensors, "noise_std")

    @property
    def bias(self) -> np.ndarray:
        """Bias per signal (m or rad), shape (ny,)."""
        return per_signal(self.sensors, "bias")

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


#: least scaled information a disturbance state must keep beyond the design's states (see _disturbance_information)
DISTURBANCE_OBSERVABILITY_RTOL = 1e-8
#: the disturbances must be observable from this much data (s): what the filter has to learn them from
OBSERVABILITY_WINDOW_S = 5.0


def _disturbance_information(W: np.ndarray, N: int) -> float:
    r"""How well the sensors see the disturbance states beyond the design's own: the least eigenvalue of

    .. math::

        S = \hat W_{dd} - \hat W_{dx}\,\hat W_{xx}^{+}\,\hat W_{xd},
        \qquad \hat W_{xx}^{+} = \sum_{\lambda_i > \tau} u_i u_i^T / \lambda_i,
        \qquad \tau = \mathrm{RANK\_RTOL}\cdot\lambda_{\max}(\hat W),

    the Schur complement of the Jacobi-scaled observability Gramian
    :math:`\hat W = D^{-1/2} W D^{-1/2}`, :math:`D = \mathrm{diag}(W)`
    (:func:`~ballctl.design.controllability.gramians.jacobi_scaled`), on its
    disturbance block; :math:`(\lambda_i, u_i)` are the eigenpairs of the
    symmetric :math:`\hat W_{xx}`. It is 0 when some disturbance's output
    could as well come from the design's states, and 1 when its output is
    orthogonal to theirs; unlike a rank count on the whole Gramian it does not
    depend on how far the other states' eigenvalues spread over a long horizon.

    **The tolerance** :math:`\tau`: a direction of the design's states whose
    scaled information is at most :data:`~ballctl.design.controllability.RANK_RTOL`
    (1e-8) times the largest eigenvalue of :math:`\hat W` counts as unseen and
    drops out of the pseudo-inverse -- the same verdict as the package's rank
    test (:func:`~ballctl.design.controllability.gramian_rank`), which counts
    it as unobservable. Such directions (the ball's roll, an invariant leaking
    through the discretization at 1e-8 and below) are where the computed
    Gramian's rounding lives, and the pseudo-inverse multiplies that rounding
    by :math:`1/\lambda_i`. Measured on the design ``ballctl track --duration 4``
    builds (tabletop rig, exact design, offset-free, 200 steps):
    :math:`\hat W_{xx}` has eigenvalues 6.8e-9, 2.0e-8 and 6.8e-8 next to
    6.7, and :math:`\hat W` an eigenvalue of -2.5e-8 (a Gramian has none
    below 0: that is its rounding). A cut at 1e-10 relative (the former
    ``pinv(rcond=1e-10)``) kept the first three and gave
    :math:`\lambda_{\min}(S) = -0.15`, reported as unobservable; the
    Gramian computed in extended precision as :math:`O^T O` from the
    observability matrix gives 0.0048 with every direction kept and 0.0051
    with this cut, which gives 0.0051 from the float64 Gramian too.

    Parameters
    ----------
    W : ndarray, shape (N + nd, N + nd)
        Observability Gramian of the augmented pair (unscaled).
    N : int
        The design's states (the disturbances are the last ``nd``).

    Returns
    -------
    float
        In [0, 1]; 0 also when a disturbance has no output energy at all.
    """
    Ws, seen = jacobi_scaled(W)
    if not np.all(seen[N:]):
        return 0.0
    top = float(np.linalg.eigvalsh(Ws)[-1])
    lam, U = np.linalg.eigh(Ws[:N, :N])
    keep = lam > RANK_RTOL * top
    G = U[:, keep].T @ Ws[:N, N:]              # the disturbances' share along each seen direction
    S = Ws[N:, N:] - G.T @ (G / lam[keep, None])
    return float(max(np.linalg.eigvalsh(0.5 * (S + S.T))[0], 0.0))


def _augment_input_disturbance(Ad: np.ndarray, Bd: np.ndarray, disturbance_map: np.ndarray | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
    """The model with disturbance states acting through the inputs: ``([[Ad, Bd T], [0, I]], [[Bd], [0]])``.

    Parameters
    ----------
    Ad : ndarray, shape (K, N, N)
    Bd : ndarray, shape (K, N, nu)
    disturbance_map : ndarray, shape (K, nu, nd), optional
        Input directions ``T_k`` of the nd disturbance states (default: the identity, nd = nu).

    Returns
    -------
    Ad_aug : ndarray, shape (K, N + nd, N + nd)
    Bd_aug : ndarray, shape (K, N + nd, nu)
    """
    K, N, nu = Bd.shape
    T = np.broadcast_to(np.eye(nu), (K, nu, nu)) if disturbance_map is None else np.asarray(disturbance_map)
    nd = T.shape[2]
    A = np.zeros((K, N + nd, N + nd))
    A[:, :N, :N] = Ad
    A[:, :N, N:] = Bd @ T[:K]
    A[:, N:, N:] = np.eye(nd)
    B = np.zeros((K, N + nd, nu))
    B[:, :N] = Bd
    return A, B


def design_estimator(ltv: LTVSystem, discrete: DiscreteLTVSystem, coordinate_names: Sequence[str],
                     sensors: Sequence[Sensor], *, settings: EstimatorSettings | None = None,
                     disturbance: InputDisturbance | None = None, integral: IntegralAction | None = None
                     ) -> StateEstimator:
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
    settings : EstimatorSettings, optional
        Process, floor, measurement and initial noise (default ``EstimatorSettings()``).
    disturbance : InputDisturbance, optional
        Also estimate disturbance states acting through the inputs (offset-free tracking, see the module
        docstring); None (default) estimates none.
    integral : IntegralAction, optional
        Integrators of the measured error appended to the filter's state.

    Returns
    -------
    StateEstimator

    Raises
    ------
    ParameterError
        If no sensor signal is a coordinate of the design plant.
    ParameterError
        If the disturbance-augmented pair is not observable from the sensors.
    """
    settings = EstimatorSettings() if settings is None else check_instance(settings, "settings", EstimatorSettings)
    if disturbance is not None:
        check_instance(disturbance, "disturbance", InputDisturbance)
    process_std, state_std = settings.process_std, settings.state_std
    min_noise_std, initial_std = settings.min_noise_std, settings.initial_std
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
        raise ParameterError(f"no sensor measures a coordinate of the design plant {coords}; "
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
    Ad, Bd = discrete.Ad, discrete.Bd
    N = discrete.n_states
    W = process_std ** 2 * Bd @ np.swapaxes(Bd, -1, -2) + state_std ** 2 * np.eye(N)
    P0 = initial_std ** 2 * np.eye(N)
    T = np.zeros((Kt, Bd.shape[2], 0))
    sigma_w = sigma_0 = np.zeros(0)
    report = None
    if disturbance is not None:
        nu = Bd.shape[2]
        disturbance_map = disturbance.directions
        T = np.broadcast_to(np.eye(nu), (Kt, nu, nu)) if disturbance_map is None else np.asarray(disturbance_map,
                                                                                                 dtype=float)
        if T.ndim != 3 or T.shape[0] < Kt or T.shape[1] != nu or T.shape[2] < 1 or not np.all(np.isfinite(T)):
            raise ParameterError(f"disturbance directions must be a finite array of shape (K >= {Kt}, {nu}, "
                                 f"nd >= 1), got shape {np.shape(disturbance_map)}")
        T = np.ascontiguousarray(T[:Kt])
        nd = T.shape[2]
        sigma_w = np.broadcast_to(np.asarray(disturbance.std, dtype=float), (nd,)).copy()
        sigma_0 = np.broadcast_to(np.asarray(disturbance.initial_std, dtype=float), (nd,)).copy()
        for label, values in (("InputDisturbance.std", sigma_w), ("InputDisturbance.initial_std", sigma_0)):
            if not (np.all(np.isfinite(values)) and np.all(values > 0)):
                raise ParameterError(f"{label} must be > 0 rad (one value or one per disturbance state), "
                                     f"got {values}")
        Ad, Bd = _augment_input_disturbance(Ad, Bd, T)
        C = np.concatenate([C, np.zeros((Kt, C.shape[1], nd))], axis=2)
        W_aug = np.zeros((Kt, N + nd, N + nd))
        W_aug[:, :N, :N] = W
        W_aug[:, N:, N:] = np.diag(sigma_w ** 2)
        W = W_aug
        P0 = np.diag(np.concatenate([np.full(N, initial_std ** 2), sigma_0 ** 2]))
        from .observability import observability_gramian  # the observability layer builds on this module

        names = tuple(ltv.state_names) + tuple(f"disturbance_{i}" for i in range(nd))
        # over the first seconds: the open-loop Gramian of a long horizon is dominated by the ball's growing modes
        window = max(1, min(Kt, int(np.ceil(OBSERVABILITY_WINDOW_S / dt))))
        report = observability_gramian(DiscreteLTVSystem.from_arrays(Ad[:window], Bd[:window], dt=dt,
                                                                     state_names=names), C[:window])
        weakest = _disturbance_information(report.W, N)
        if not weakest > DISTURBANCE_OBSERVABILITY_RTOL:
            raise ParameterError(f"the disturbance states are not observable from the signals {signals} along "
                                 f"this reference: what the sensors see of them is explained by the design's own "
                                 f"states (scaled information {weakest:.1e} <= {DISTURBANCE_OBSERVABILITY_RTOL:g}); "
                                 f"estimate fewer disturbances (disturbance=None or other directions) "
                                 f"or add sensors")
    kalman = finite_horizon_kalman(DiscreteLTVSystem.from_arrays(Ad, Bd, dt=dt), C, W, V, P0=P0)
    n_int, H = 0, np.zeros((Kt, 0, N))
    if integral is not None:
        kalman, Ad, Bd, H = _with_integrators(kalman, Ad, Bd, C_full, signals, integral, dt, N)
        n_int = integral.n_integrals
    lat = max(latency_steps(s.latency_s, dt) for s in kept)
    sampled.setflags(write=False)
    return StateEstimator(tuple(kept), signals, tuple(coords.index(s) for s in signals), sampled, kalman, lat,
                          tuple(unused), process_std, np.ascontiguousarray(Ad), np.ascontiguousarray(Bd), T.shape[2],
                          sigma_w, T, report, n_int, H, integral)


def _with_integrators(kalman: KalmanFilterResult, Ad, Bd, C_full, signals, integral: IntegralAction, dt, N):
    """Append the integrator rows of the module docstring to a filter (its model, gains and covariances)."""
    missing = [s for s in integral.signals if s not in signals]
    if missing:
        raise ParameterError(f"IntegralAction.signals {missing} are not measured by the filter's sensors "
                             f"(signals {signals})")
    Kt, Ne0 = Ad.shape[0], Ad.shape[1]
    if integral.directions.shape[0] < Kt:
        raise ParameterError(f"IntegralAction.directions covers {integral.directions.shape[0]} steps, the filter "
                             f"{Kt}")
    ni = integral.n_integrals
    G = np.zeros((Kt, ni, len(signals)))
    G[:, :, [signals.index(s) for s in integral.signals]] = dt * integral.directions[:Kt]
    C0 = np.zeros((Kt, len(signals), Ne0))
    C0[:, :, :N] = C_full
    M, C = kalman.update_gains, kalman.C
    A = np.zeros((Kt, Ne0 + ni, Ne0 + ni))
    A[:, :Ne0, :Ne0] = Ad
    A[:, Ne0:, :Ne0] = G @ C0
    A[:, Ne0:, Ne0:] = np.eye(ni)
    B = np.zeros((Kt, Ne0 + ni, Bd.shape[2]))
    B[:, :Ne0] = Bd
    M_zeta = G @ (np.eye(len(signals)) - C @ M)
    M_all = np.concatenate([M, M_zeta], axis=1)
    C_all = np.concatenate([C, np.zeros((Kt, C.shape[1], ni))], axis=2)

    def pad(P):
        out = np.zeros(P.shape[:1] + (Ne0 + ni, Ne0 + ni))
        out[:, :Ne0, :Ne0] = P
        return out

    eig = np.concatenate([kalman.eigenvalues, np.ones((Kt, ni), dtype=kalman.eigenvalues.dtype)], axis=1)
    kal = KalmanFilterResult(A @ M_all, M_all, pad(kalman.covariance), pad(kalman.posterior_covariance), eig,
                             C_all, kalman.condition_numbers)
    return kal, A, B, np.ascontiguousarray((G @ C0)[:, :, :N])

