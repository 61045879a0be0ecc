r"""Reduced linearized equations of a constrained system along a reference solution.

Implements the coordinate-partition linearization of Agúndez et al. (2024),
section 2.2, eqs. (8)-(20), for any :class:`~ballctl.ConstrainedSystem`
(holonomic and nonholonomic constraints, inputs entering ``M`` and ``Q``).

Derivation used here (equivalent to eqs. (13)-(20)). Perturbing eq. (1) about
the reference :math:`(x_0, \dot x_0, \ddot x_0, \Lambda_0, u_0)`:

.. math::

    M_0\delta\ddot x + C_0\delta\dot x + K_0\delta x + D_0^T\delta\Lambda = B_u\delta u,

with :math:`K_0 = \partial_x(M\ddot x_0 + D^T\Lambda_0 - Q)`,
:math:`C_0 = -\partial_{\dot x} Q`, :math:`B_u = \partial_u(Q - M\ddot x_0)`
(eq. 13). The linearized velocity constraints
:math:`D_0\delta\dot x + E_0\delta x = 0`, :math:`E_0 = \partial_x(D\dot x_0)`,
give the dependent velocities, so
:math:`\delta\dot x = T_0\delta\dot x_{ai} + W_0\delta x` with
:math:`T_0` of eq. (12) and :math:`W_0 = -\Pi_{dep} D_{dd}^{-1}E_0`.
Differentiating, :math:`\delta\ddot x = T_0\delta\ddot x_{ai} + \dot T_0\delta\dot x_{ai}
+ \dot W_0\delta x + W_0\delta\dot x`, where the time derivatives along the
reference are first derivatives of model callables:
:math:`\dot T_0 = \partial_x T\cdot\dot x_0`,
:math:`\dot E_0 = \partial_x[\dot D(x,\dot x_0)\dot x_0] + \partial_x(D\ddot x_0)`.
Premultiplying by :math:`T_0^T` removes :math:`\delta\Lambda` (eq. 14) and, with
:math:`m_0 = T_0^T M_0 T_0`,

.. math::

    \delta\ddot x_{ai} = -m_0^{-1}T_0^T[(C_0 + M_0W_0)(T_0\delta\dot x_{ai} + W_0\delta x)
        + M_0\dot T_0\delta\dot x_{ai} + (K_0 + M_0\dot W_0)\delta x] + B_1\delta u,

:math:`B_1 = m_0^{-1}T_0^T B_u` (eq. 17). Holonomic dependents are eliminated
by :math:`\delta x_d = -C_{x,d}^{-1}(C_{x,ai}\delta x_{ai} + C_{x,ad}\delta x_{ad})`.
The state is :math:`X = (\delta x_{ai}, \delta\dot x_{ai}, \delta x_{ad})` of
size :math:`N = 2(n - m) - l` and ``A``, ``B`` have the block forms (19)-(20).

Derivatives are complex-step (exact to rounding) when the callables are
complex-safe; otherwise fourth-order central differences are used and the
result's ``derivative_method`` says so. Everything is evaluated for all K
samples at once when the system declares ``batched = True`` (rule 8 of
:mod:`ballctl.system`; our plants do); otherwise the samples are looped over.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._derivatives import COMPLEX_STEP, central_difference
from .._errors import PartitionError
from .._validation import as_times, as_vector, check_callable, check_instance
from .ltv import LTVSystem
from .partition import Partition
from .._linalg import inverse_stack
from ..references.base import Reference, ReferenceSample
from ..system import ConstrainedSystem

__all__ = ["linearize", "linearize_at", "linearize_samples"]


class _Batched:
    """Evaluates a per-state callable on (K, ...) stacks: in one call when the system is ``batched``, else looped."""

    def __init__(self, fn: Callable, batched: bool) -> None:
        self.fn = fn
        self.batched = batched

    def __call__(self, *args: np.ndarray) -> np.ndarray:
        if self.batched:
            return np.asarray(self.fn(*args))
        return np.stack([np.asarray(self.fn(*(a[k] for a in args))) for k in range(args[0].shape[0])])


def _jac(fn: _Batched, args: list[np.ndarray], wrt: int, state: dict) -> np.ndarray:
    """d fn / d args[wrt], shape (K,) + out_shape + (n_wrt,), by complex step.

    A callable that raises for complex input, or returns a real array although
    it depends on the argument, is differentiated by fourth-order central
    differences instead, and ``state["method"]`` records it.
    """
    base = args[wrt]
    n = base.shape[-1]
    out = None
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        pert = list(args)
        pert[wrt] = base + 1j * COMPLEX_STEP * e
        col, written = None, False
        try:
            with np.errstate(all="ignore"):
                val = fn(*pert)
            if np.iscomplexobj(val):
                if out is None:
                    out = np.empty(val.shape + (n,))
                col = np.divide(val.imag, COMPLEX_STEP, out=out[..., j])   # written in place: no temporaries
                written = True
        except (TypeError, ValueError):
            col = None
        if col is None:
            h = 1e-3 * max(1.0, float(np.max(np.abs(base)))) if base.size else 1e-3

            def along(z, _args=args):
                pert = list(_args)
                pert[wrt] = z
                return np.asarray(fn(*pert), dtype=float)

            col = central_difference(along, base, e, h)
            if np.any(col != 0.0):
                state["method"] = "central"
        if out is None:
            out = np.empty(np.shape(col) + (n,))
        if not written:
            out[..., j] = col
    return out if out is not None else np.zeros(base.shape[:1] + (0,))


def _contract(X: np.ndarray, v: np.ndarray, axis: int) -> np.ndarray:
    """``sum_j X[k, ..., j, ...] v[k, j]`` over ``axis`` 1 or 2 of a (K, a, b, c) stack, as a batched matmul.

    The same contraction as ``einsum("kjin,kj->kin")`` (axis 1) or ``einsum("kijn,kj->kin")`` (axis 2),
    several times faster for small blocks.
    """
    K, a, b, c = X.shape
    if axis == 1:
        return (v[:, None, :] @ X.reshape(K, a, b * c)).reshape(K, b, c)
    return (v[:, None, None, :] @ X)[:, :, 0, :]


class _TimeLabels:
    """``" at t=... s"`` for sample k, built only when an error message needs it."""

    def __init__(self, times: np.ndarray) -> None:
        self.times = times

    def __getitem__(self, k: int) -> str:
        return f" at t={self.times[k]:.6g} s"

    def __len__(self) -> int:
        return len(self.times)


def _inverse(A: np.ndarray, what: str, times: np.ndarray) -> np.ndarray:
    """Inverses of a (K, k, k) stack; a singular one raises :class:`PartitionError` naming its time."""
    inv, ok = inverse_stack(np.ascontiguousarray(A, dtype=float))
    if not ok.all():
        k = int(np.argmin(ok))
        raise PartitionError(f"{what} is singular at t={times[k]:.6g} s; choose other dependent coordinates, "
                             f"e.g. Partition.automatic(system, x)")
    return inv


def linearize_samples(system: ConstrainedSystem, sample: ReferenceSample, partition: Partition
                      ) -> LTVSystem:
    """Reduced linearization at every sample of a reference, vectorized over the samples.

    Parameters
    ----------
    system : ConstrainedSystem
    sample : ReferenceSample
        K samples of a reference solution (``lam`` is used as given).
    partition : Partition

    Returns
    -------
    LTVSystem
        With ``A (K, N, N)``, ``B (K, N, nu)`` and ``state_map (K, 2n, N)``.

    Raises
    ------
    PartitionError
        If ``D_dd`` is singular at some sample (the message names the time).
    """
    n, m, nu = system.n_coordinates, system.n_holonomic, system.n_inputs
    x0, xd0, xdd0 = sample.x, sample.xd, sample.xdd
    u0, lam0 = sample.u, sample.lam
    K = x0.shape[0]
    ai = list(partition.independent)
    ad = list(partition.admissible_dependent)
    dep = list(partition.dependent_all)
    nai, nad = len(ai), len(ad)
    N = 2 * nai + nad
    state = {"method": "complex-step"}

    batched = bool(getattr(system, "batched", False))
    Mf = _Batched(system.mass_matrix, batched)
    Qf = _Batched(system.forces, batched)
    Df = _Batched(system.constraint_jacobian, batched)
    biasf = _Batched(system.constraint_bias, batched)

    D0 = Df(x0)
    partition.check_jacobians(system, D0, _TimeLabels(sample.t))
    M0 = Mf(x0, u0)
    dDdx = _jac(Df, [x0], 0, state)                       # (K, k, n, n)
    Qx, Qxd = _jac(Qf, [x0, xd0, u0], 0, state), _jac(Qf, [x0, xd0, u0], 1, state)
    # K0 = d/dx (M xdd0 + D^T lam0 - Q), C0 = -dQ/dxd, Bu = d/du (Q - M xdd0)
    K0 = _contract(_jac(Mf, [x0, u0], 0, state), xdd0, 2) + _contract(dDdx, lam0, 1) - Qx
    C0 = -Qxd
    if nu:
        Bu = _jac(Qf, [x0, xd0, u0], 2, state) - _contract(_jac(Mf, [x0, u0], 1, state), xdd0, 2)
    else:
        Bu = np.zeros((K, n, 0))
    E0 = _contract(dDdx, xd0, 2)                          # d(D xd0)/dx
    Ddot0 = (dDdx @ xd0[:, None, :, None])[..., 0]        # dD/dt along the reference
    Edot0 = _jac(biasf, [x0, xd0], 0, state) + _contract(dDdx, xdd0, 2)

    Dai = D0[:, :, ai]
    Ddd = D0[:, :, dep]
    Ddd_dot = Ddot0[:, :, dep]
    Dai_dot = Ddot0[:, :, ai]
    # the small batched solves go through one compiled inverse each (numpy's call LAPACK per matrix)
    Ddd_inv = _inverse(Ddd, "D_dd", sample.t)
    G = Ddd_inv @ Dai                                      # Ddd^{-1} Dai
    H = Ddd_inv @ E0                                       # Ddd^{-1} E0
    # T0 and its time derivative: d/dt(-Ddd^{-1} Dai) = Ddd^{-1}(Ddd_dot G - Dai_dot)
    T0 = np.zeros((K, n, nai))
    T0[:, ai, :] = np.eye(nai)
    T0[:, dep, :] = -G
    T0dot = np.zeros((K, n, nai))
    T0dot[:, dep, :] = Ddd_inv @ (Ddd_dot @ G - Dai_dot)
    W0 = np.zeros((K, n, n))
    W0[:, dep, :] = -H
    W0dot = np.zeros((K, n, n))
    W0dot[:, dep, :] = Ddd_inv @ (Ddd_dot @ H - Edot0)

    # position map: dx = S (dx_ai, dx_ad); holonomic dependents from C_x dx = 0
    S = np.zeros((K, n, nai + nad))
    S[:, ai, :nai] = np.eye(nai)
    S[:, ad, nai:] = np.eye(nad)
    if m:
        d_idx = list(partition.dependent)
        Cx = D0[:, :m, :]
        S[:, d_idx, :] = -np.linalg.solve(Cx[:, :, d_idx], Cx[:, :, ai + ad])

    Tt = np.swapaxes(T0, 1, 2)
    m0_inv = _inverse(Tt @ M0 @ T0, "the reduced mass matrix T^T M T", sample.t)
    CW = C0 + M0 @ W0
    Fv = -m0_inv @ (Tt @ (CW @ T0 + M0 @ T0dot))
    Fx = -m0_inv @ (Tt @ (CW @ W0 + K0 + M0 @ W0dot))
    B1 = m0_inv @ (Tt @ Bu)

    FxS = Fx @ S
    WS = W0 @ S
    A = np.zeros((K, N, N))
    A[:, :nai, nai:2 * nai] = np.eye(nai)
    A[:, nai:2 * nai, :nai] = FxS[:, :, :nai]
    A[:, nai:2 * nai, nai:2 * nai] = Fv
    A[:, nai:2 * nai, 2 * nai:] = FxS[:, :, nai:]
    A[:, 2 * nai:, :nai] = WS[:, ad, :nai]
    A[:, 2 * nai:, nai:2 * nai] = T0[:, ad, :]
    A[:, 2 * nai:, 2 * nai:] = WS[:, ad, nai:]
    B = np.zeros((K, N, nu))
    B[:, nai:2 * nai, :] = B1

    # (dx, dxd) = state_map @ X
    smap = np.zeros((K, 2 * n, N))
    smap[:, :n, :nai] = S[:, :, :nai]
    smap[:, :n, 2 * nai:] = S[:, :, nai:]
    smap[:, n:, :nai] = WS[:, :, :nai]
    smap[:, n:, nai:2 * nai] = T0
    smap[:, n:, 2 * nai:] = WS[:, :, nai:]
    return LTVSystem(sample.t, A, B, partition.state_names, system.input_names, partition, smap, state["method"])


def linearize_at(system: ConstrainedSystem, x, xd, xdd, u, partition: Partition, lam=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Reduced linearized ``(A, B)`` about one point of a reference solution (eqs. 15-20).

    Parameters
    ----------
    system : ConstrainedSystem
    x, xd, xdd : array_like, shape (n,)
        Reference coordinates, velocities and accelerations.
    u : array_like, shape (nu,)
        Reference input.
    partition : Partition
    lam : array_like, shape (m + l,), optional
        Reference multipliers; solved from eq. (1) by least squares when omitted.

    Returns
    -------
    A : ndarray, shape (N, N)
    B : ndarray, shape (N, nu)
        For the state ``X = (dx_ai, dxd_ai, dx_ad)`` and input ``du``.
    """
    check_instance(system, "system", ConstrainedSystem)
    check_instance(partition, "partition", Partition)
    n, nu = system.n_coordinates, system.n_inputs
    x = as_vector(x, "x", n)
    xd = as_vector(xd, "xd", n)
    xdd = as_vector(xdd, "xdd", n)
    u = as_vector(u, "u", nu) if nu else np.zeros(0)
    if lam is not None:
        lam = as_vector(lam, "lam", system.n_constraints) if system.n_constraints else np.zeros(0)
    if lam is None:
        D = system.constraint_jacobian(x)
        rhs = system.forces(x, xd, u) - system.mass_matrix(x, u) @ xdd
        lam = np.linalg.lstsq(D.T, rhs, rcond=None)[0] if D.shape[0] else np.zeros(0)
    lam = np.asarray(lam, dtype=float)
    sample = ReferenceSample(np.zeros(1), x[None], xd[None], xdd[None], u[None], np.zeros((1, system.n_inputs)),
                             lam[None])
    ltv = linearize_samples(system, sample, partition)
    return ltv.A[0], ltv.B[0]


def linearize(system: ConstrainedSystem, reference: Reference, times, partition: Partition | None = None
              ) -> LTVSystem:
    """Linearize along a reference at the given times (vectorized over time).

    Parameters
    ----------
    system : ConstrainedSystem
    reference : Reference
        Any reference; ``reference(times)`` must return a :class:`ReferenceSample`.
    times : array_like, shape (K,)
        Strictly increasing sample times in s.
    partition : Partition, optional
        Default: :meth:`Partition.automatic` at the first sample.

    Returns
    -------
    LTVSystem
    """
    check_instance(system, "system", ConstrainedSystem)
    check_callable(reference, "reference", "reference(times) -> ReferenceSample")
    times = as_times(times, "times", increasing=True)
    if partition is not None and not isinstance(partition, Partition):
        raise PartitionError(f"partition must be a Partition, got {type(partition).__name__}")
    sample = reference(times)
    if partition is None:
        partition = Partition.automatic(system, sample.x[0])
    return linearize_samples(system, sample, partition)
