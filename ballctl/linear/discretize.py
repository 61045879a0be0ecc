r"""Discretization of a sampled linear time-varying system.

The continuous system :math:`\dot X = A(t) X + B(t)\,\delta u` (Agúndez et al.
2024, eq. 18) is frozen at each sample :math:`t_k` and integrated exactly over
one step with the input held constant (zero-order hold, eqs. 22-23):

.. math::

    X_{k+1} = A_{d,k} X_k + B_{d,k}\,\delta u_k, \qquad
    A_{d,k} = e^{A_k \Delta t}, \qquad
    B_{d,k} = (e^{A_k \Delta t} - I) A_k^{-1} B_k = \Psi_k B_k .

:math:`\Psi_k = \sum_{j \ge 0} A_k^j \Delta t^{j+1} / (j+1)!` (eq. 86) exists
for every :math:`A_k`, singular ones included, so :math:`A_k` is never
inverted: both blocks come out of one exponential of the augmented matrix
(Van Loan 1978)

.. math::

    \exp\!\left(\begin{pmatrix} A_k & B_k \\ 0 & 0 \end{pmatrix} \Delta t\right)
    = \begin{pmatrix} A_{d,k} & B_{d,k} \\ 0 & I \end{pmatrix},

evaluated for all samples at once (``scipy.linalg.expm`` accepts stacks).
The truncated series of appendix A (eqs. 85-89) keeps the terms up to
:math:`\Delta t^{p}` of that same exponential, ``p = order``; ``order=1`` is
the explicit-Euler model of eq. (89). Its error is :math:`O(\Delta t^{p+1})`
in both blocks.

Time axis conventions (``docs/conventions.md``): the discrete system has one
transition per LTV sample, ``Ad (K, N, N)``, ``Bd (K, N, nu)``; transition
``k`` maps the state at ``t[k]`` to the state at ``t[k] + dt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import expm

from .._errors import ParameterError, ParameterTypeError, SampleIndexError, ShapeError
from .._validation import as_system_stacks, check_positive
from .ltv import LTVSystem, StateReduction

__all__ = ["DiscreteLTVSystem", "DiscretizationErrors", "discretize", "discretization_error"]

#: Names accepted by ``discretize(method=...)``.
DISCRETIZATION_METHODS = ("zoh", "series")

# Relative tolerance when comparing the LTV sample spacing with dt. Sample
# times built with ``np.arange``/``np.linspace`` differ from ``k * dt`` by a
# few ulps of ``max|t|``; anything beyond 1e-9 of a step is a genuine mismatch.
_SPACING_RTOL = 1e-9


def _check_stack(A: np.ndarray, B: np.ndarray, names: tuple[str, str] = ("A", "B")) -> tuple[np.ndarray, np.ndarray]:
    return as_system_stacks(A, B, names)


def _check_order(order) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ParameterError(f"order must be an integer >= 1 (order=1 is eq. 89), got {order!r}")
    return int(order)


def zoh_matrices(A, B, dt: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact zero-order-hold matrices of a stack of frozen-time systems (eq. 23).

    Parameters
    ----------
    A : ndarray, shape (K, N, N)
        Continuous state matrices :math:`A_k`; may be singular.
    B : ndarray, shape (K, N, nu)
        Continuous input matrices :math:`B_k`.
    dt : float
        Step in s, > 0.

    Returns
    -------
    Ad : ndarray, shape (K, N, N)
        :math:`e^{A_k \Delta t}`.
    Bd : ndarray, shape (K, N, nu)
        :math:`(e^{A_k \Delta t} - I) A_k^{-1} B_k`, computed without
        inverting :math:`A_k` from the exponential of the augmented matrix.

    References
    ----------
    Agúndez et al. (2024), eqs. (23) and (86); C. Van Loan, "Computing
    integrals involving the matrix exponential", IEEE TAC 23 (1978).

    Examples
    --------
    >>> import numpy as np
    >>> Ad, Bd = zoh_matrices(np.zeros((1, 1, 1)), np.ones((1, 1, 1)), 0.5)
    >>> float(Ad[0, 0, 0]), float(Bd[0, 0, 0])
    (1.0, 0.5)
    """
    A, B = _check_stack(A, B)
    dt = check_positive(dt, "dt", "s")
    K, N, nu = B.shape
    M = np.zeros((K, N + nu, N + nu))
    M[:, :N, :N] = A * dt
    M[:, :N, N:] = B * dt
    E = expm(M)
    return np.ascontiguousarray(E[:, :N, :N]), np.ascontiguousarray(E[:, :N, N:])


def series_matrices(A, B, dt: float, order: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Truncated-series discretization of appendix A (eqs. 85-89).

    Keeps the terms up to :math:`\Delta t^{p}`, ``p = order``:

    .. math::

        A_{d,k} \approx \sum_{j=0}^{p} \frac{(A_k \Delta t)^j}{j!}, \qquad
        B_{d,k} \approx \sum_{j=0}^{p-1} \frac{A_k^j \Delta t^{j+1}}{(j+1)!} B_k .

    Parameters
    ----------
    A : ndarray, shape (K, N, N)
        Continuous state matrices.
    B : ndarray, shape (K, N, nu)
        Continuous input matrices.
    dt : float
        Step in s, > 0.
    order : int
        Truncation order p >= 1; ``order=1`` gives eq. (89),
        ``Ad = I + A dt``, ``Bd = B dt``.

    Returns
    -------
    Ad : ndarray, shape (K, N, N)
    Bd : ndarray, shape (K, N, nu)

    References
    ----------
    Agúndez et al. (2024), appendix A, eqs. (85)-(89).

    Examples
    --------
    >>> import numpy as np
    >>> Ad, Bd = series_matrices(-np.ones((1, 1, 1)), np.ones((1, 1, 1)), 0.1, 1)
    >>> float(Ad[0, 0, 0]), float(Bd[0, 0, 0])
    (0.9, 0.1)
    """
    A, B = _check_stack(A, B)
    dt = check_positive(dt, "dt", "s")
    order = _check_order(order)
    K, N, _ = A.shape
    term = np.broadcast_to(np.eye(N), (K, N, N)).copy()  # (A dt)^j / j!
    Ad = term.copy()
    Psi = np.zeros((K, N, N))
    Adt = A * dt
    for j in range(order):
        Psi += term * (dt / (j + 1))  # A^j dt^(j+1) / (j+1)!
        term = Adt @ term / (j + 1)
        Ad += term
    return Ad, Psi @ B


@dataclass(frozen=True)
class DiscreteLTVSystem:
    r"""Discrete-time LTV system ``X[k+1] = Ad[k] X[k] + Bd[k] du[k]`` (eq. 23 or 87).

    Attributes
    ----------
    t : ndarray, shape (K,)
        Times in s at which each transition starts: ``Ad[k]`` maps the state
        at ``t[k]`` to the state at ``t[k] + dt``.
    dt : float
        Sample time in s.
    Ad : ndarray, shape (K, N, N)
        Discrete state matrices.
    Bd : ndarray, shape (K, N, nu)
        Discrete input matrices.
    state_names : tuple of str
        Names of the N states, ``X = (dx_ai, dxd_ai, dx_ad)``.
    input_names : tuple of str
        Names of the nu inputs.
    partition : StateReduction or None
        The partition of the LTV system this came from.
    method : str
        ``"zoh"`` (exact, eq. 23), ``"series"`` (appendix A), or ``"given"``
        for matrices supplied by the user (:meth:`from_arrays`).
    order : int or None
        Truncation order of the series; ``None`` for ``"zoh"``.
    """

    t: np.ndarray
    dt: float
    Ad: np.ndarray
    Bd: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    partition: StateReduction | None = field(default=None)
    method: str = "zoh"
    order: int | None = None

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=float)
        Ad, Bd = _check_stack(self.Ad, self.Bd, ("Ad", "Bd"))
        dt = check_positive(self.dt, "dt", "s")
        if t.shape != (Ad.shape[0],):
            raise ShapeError(f"t must have shape ({Ad.shape[0]},) to match Ad, got {t.shape}")
        if not np.all(np.isfinite(t)) or (t.size > 1 and np.any(np.diff(t) <= 0)):
            raise ParameterError("t must be finite and strictly increasing")
        if len(self.state_names) != Ad.shape[1] or len(self.input_names) != Bd.shape[2]:
            raise ParameterError(f"state_names ({len(self.state_names)}) / input_names ({len(self.input_names)}) "
                             f"do not match Ad {Ad.shape} and Bd {Bd.shape}")
        if self.method not in DISCRETIZATION_METHODS + ("given",):
            raise ParameterError(f"method must be one of {DISCRETIZATION_METHODS + ('given',)}, got {self.method!r}")
        if (self.method == "series") != (self.order is not None):
            raise ParameterError("order is required for method='series' and must be None for method='zoh'")
        for arr in (t, Ad, Bd):
            arr.setflags(write=False)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "dt", dt)
        object.__setattr__(self, "Ad", Ad)
        object.__setattr__(self, "Bd", Bd)
        object.__setattr__(self, "state_names", tuple(self.state_names))
        object.__setattr__(self, "input_names", tuple(self.input_names))

    @classmethod
    def from_arrays(cls, Ad, Bd, *, dt: float = 1.0, t0: float = 0.0, state_names=None,
                    input_names=None) -> "DiscreteLTVSystem":
        """A discrete system from given matrix stacks (``method="given"``).

        Parameters
        ----------
        Ad : array_like, shape (K, N, N)
            State matrices.
        Bd : array_like, shape (K, N, nu)
            Input matrices.
        dt : float
            Sample time in s (default 1).
        t0 : float
            Time of the first sample in s; ``t = t0 + dt * arange(K)``.
        state_names, input_names : sequence of str, optional
            Default ``X1..XN`` and ``du1..du_nu``.

        Returns
        -------
        DiscreteLTVSystem

        Examples
        --------
        >>> import numpy as np
        >>> DiscreteLTVSystem.from_arrays(np.ones((3, 1, 1)), np.ones((3, 1, 1)), dt=0.1).t
        array([0. , 0.1, 0.2])
        """
        Ad, Bd = (np.array(a) for a in _check_stack(Ad, Bd, ("Ad", "Bd")))
        K, N, nu = Bd.shape
        dt = check_positive(dt, "dt", "s")
        return cls(t=float(t0) + dt * np.arange(K), dt=dt, Ad=Ad, Bd=Bd,
                   state_names=tuple(state_names) if state_names is not None else
                   tuple(f"X{i + 1}" for i in range(N)),
                   input_names=tuple(input_names) if input_names is not None else
                   tuple(f"du{j + 1}" for j in range(nu)), method="given")

    @property
    def n_states(self) -> int:
        """Number N of states."""
        return self.Ad.shape[1]

    @property
    def n_inputs(self) -> int:
        """Number nu of inputs."""
        return self.Bd.shape[2]

    def __len__(self) -> int:
        return self.t.shape[0]

    def to_statespace(self, k: int):
        """The frozen-time discrete snapshot at sample ``k`` as a python-control ``StateSpace`` (with ``dt``).

        Parameters
        ----------
        k : int
            Sample index (negative counts from the end).
        """
        import control

        if not -len(self) <= k < len(self):
            raise SampleIndexError(f"sample {k} out of range for {len(self)} samples")
        N = self.n_states
        return control.ss(self.Ad[k], self.Bd[k], np.eye(N), np.zeros((N, self.n_inputs)), self.dt,
                          states=list(self.state_names), inputs=list(self.input_names),
                          outputs=list(self.state_names), name=f"discrete_sample_{k}")


def _check_spacing(t: np.ndarray, dt: float) -> None:
    if t.size < 2:
        return
    steps = np.diff(t)
    tol = _SPACING_RTOL * dt + 64 * np.finfo(float).eps * float(np.max(np.abs(t)))
    if np.all(np.abs(steps - dt) <= tol):
        return
    uniform = np.all(np.abs(steps - steps[0]) <= tol)
    if uniform:
        ratio = dt / steps[0]
        hint = ""
        if not np.isfinite(ratio) or ratio > 1e9:
            ratio = 0.5  # no subsampling hint
        if abs(ratio - round(ratio)) < 1e-9 and round(ratio) >= 1:
            hint = f" (dt is {round(ratio)} samples: use ltv.subsample({round(ratio)}))"
        raise ParameterError(
            f"dt={dt!r} s differs from the spacing {steps[0]!r} s of the LTV samples; the discrete system is "
            f"defined at the LTV samples, so resample the LTV system at the controller step first{hint}")
    raise ParameterError(
        f"the LTV samples are not uniformly spaced (steps from {steps.min()!r} to {steps.max()!r} s); "
        f"resample the LTV system on a uniform grid with step dt={dt!r} s first")


def discretize(ltv: LTVSystem, dt: float, *, method: str = "zoh", order: int | None = None) -> DiscreteLTVSystem:
    r"""Discretize a sampled LTV system with step ``dt`` (eqs. 22-23, appendix A).

    :math:`A(t), B(t)` are frozen at each LTV sample :math:`t_k` (eq. 22)
    and the input is held over :math:`[t_k, t_k + \Delta t)`. The discrete
    system therefore lives on the LTV samples: with more than one sample,
    ``ltv.t`` must be uniformly spaced with step ``dt`` (to within 1e-9 of a
    step), otherwise ``X[k+1]`` would not be the state at ``t[k+1]``. To use
    a controller step different from the linearization grid, resample first
    (``ltv.subsample(m)`` for ``dt = m`` samples, or relinearize on the new
    grid). A single sample (an LTI snapshot) accepts any ``dt``.

    Parameters
    ----------
    ltv : LTVSystem
        Samples of the continuous system, ``A (K, N, N)``, ``B (K, N, nu)``.
    dt : float
        Controller sample time in s, > 0.
    method : {"zoh", "series"}
        ``"zoh"``: exact zero-order hold (eq. 23) through the augmented
        matrix exponential, never inverting A. ``"series"``: the truncated
        series of appendix A (eqs. 85-89), which needs ``order``.
    order : int, optional
        Truncation order p >= 1 of the series; only with ``method="series"``.
        ``order=1`` is eq. (89). The error is :math:`O(\Delta t^{p+1})`.

    Returns
    -------
    DiscreteLTVSystem
        ``Ad (K, N, N)``, ``Bd (K, N, nu)`` at the times ``ltv.t``.

    Raises
    ------
    ValueError
        If ``dt`` is not positive, does not match the spacing of ``ltv.t``,
        or ``method``/``order`` are inconsistent.

    References
    ----------
    Agúndez et al. (2024), eqs. (22)-(23) and (85)-(89).

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl.linear.ltv import LTVSystem
    >>> A = np.array([[[0.0, 1.0], [0.0, 0.0]]])          # double integrator
    >>> B = np.array([[[0.0], [1.0]]])
    >>> d = discretize(LTVSystem([0.0], A, B, ("p", "v"), ("a",)), 0.1)
    >>> np.allclose(d.Bd[0], [[0.005], [0.1]])
    True
    """
    if not isinstance(ltv, LTVSystem):
        raise ParameterTypeError(f"ltv must be an LTVSystem, got {type(ltv).__name__}")
    dt = check_positive(dt, "dt", "s")
    if method not in DISCRETIZATION_METHODS:
        raise ParameterError(f"method must be one of {DISCRETIZATION_METHODS}, got {method!r}")
    if method == "zoh":
        if order is not None:
            raise ParameterError(f"order applies only to method='series', got order={order!r} with method='zoh'")
    else:
        if order is None:
            raise ParameterError("method='series' needs order (order=1 is eq. 89)")
        order = _check_order(order)
    _check_spacing(ltv.t, dt)
    if method == "zoh":
        Ad, Bd = zoh_matrices(ltv.A, ltv.B, dt)
    else:
        Ad, Bd = series_matrices(ltv.A, ltv.B, dt, order)
    return DiscreteLTVSystem(ltv.t, dt, Ad, Bd, ltv.state_names, ltv.input_names, ltv.partition,
                             method=method, order=order)


@dataclass(frozen=True)
class DiscretizationErrors:
    """Errors of truncated-series discretizations against the exact zero-order hold.

    Attributes
    ----------
    dt : float
        Step in s.
    orders : tuple of int
        Truncation orders compared.
    Ad : ndarray, shape (len(orders),)
        ``max_k ||Ad_series[k] - Ad_zoh[k]||_2`` (spectral norm).
    Bd : ndarray, shape (len(orders),)
        ``max_k ||Bd_series[k] - Bd_zoh[k]||_2``.
    Ad_scale, Bd_scale : float
        ``max_k ||Ad_zoh[k]||_2`` and ``max_k ||Bd_zoh[k]||_2``, to turn the
        errors into relative ones.
    """

    dt: float
    orders: tuple[int, ...]
    Ad: np.ndarray
    Bd: np.ndarray
    Ad_scale: float
    Bd_scale: float

    def as_table(self) -> str:
        """A small text table, one row per order."""
        rows = [f"dt = {self.dt:g} s   order   |dAd|_2      |dBd|_2"]
        for p, ea, eb in zip(self.orders, self.Ad, self.Bd):
            rows.append(f"{'':14}{p:5d}   {ea:.3e}   {eb:.3e}")
        return "\n".join(rows)


def discretization_error(ltv: LTVSystem, dt: float, orders: Sequence[int]) -> DiscretizationErrors:
    r"""Error of each truncated-series order against the exact zero-order hold.

    The comparison is per frozen sample, so unlike :func:`discretize` the
    spacing of ``ltv.t`` is not required to equal ``dt``: this is the tool
    to choose ``dt`` and the order before resampling.

    Parameters
    ----------
    ltv : LTVSystem
        Samples ``A (K, N, N)``, ``B (K, N, nu)``.
    dt : float
        Step in s, > 0.
    orders : sequence of int
        Truncation orders (each >= 1).

    Returns
    -------
    DiscretizationErrors
        Max over samples of the spectral-norm errors of ``Ad`` and ``Bd``;
        they scale like :math:`\Delta t^{p+1}` while that is above rounding.

    References
    ----------
    Agúndez et al. (2024), eqs. (23), (85)-(89).

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl.linear.ltv import LTVSystem
    >>> ltv = LTVSystem([0.0], -np.ones((1, 1, 1)), np.ones((1, 1, 1)), ("x",), ("u",))
    >>> e = discretization_error(ltv, 1e-2, [1, 2])
    >>> bool(e.Ad[1] < e.Ad[0])
    True
    """
    if not isinstance(ltv, LTVSystem):
        raise ParameterTypeError(f"ltv must be an LTVSystem, got {type(ltv).__name__}")
    orders_t = tuple(_check_order(p) for p in orders)
    if not orders_t:
        raise ParameterError("orders must list at least one order")
    Ad0, Bd0 = zoh_matrices(ltv.A, ltv.B, dt)
    ea, eb = [], []
    for p in orders_t:
        Ad, Bd = series_matrices(ltv.A, ltv.B, dt, p)
        ea.append(float(np.max(np.linalg.norm(Ad - Ad0, ord=2, axis=(1, 2)))))
        eb.append(float(np.max(np.linalg.norm(Bd - Bd0, ord=2, axis=(1, 2)))))
    return DiscretizationErrors(
        float(dt), orders_t, np.array(ea), np.array(eb),
        float(np.max(np.linalg.norm(Ad0, ord=2, axis=(1, 2)))),
        float(np.max(np.linalg.norm(Bd0, ord=2, axis=(1, 2)))))
