"""Riccati sweep: ballctl.design.lqr.riccati_sweep against a plain numpy sweep, measured in the same run.

The plain sweep is the textbook recursion of eqs. (28)-(29) returning what ``riccati_sweep`` returns (the gains
and the Riccati matrices of every step) with nothing else: no symmetrization, no health check.
``riccati_sweep`` adds the symmetrization of P, keeps S for the batched conditioning measure and checks
finiteness every ``check_every`` steps. Target (issue 10, section 4): at most 1.2x the plain sweep's
time with gains identical to 1e-12. The old sweep (an SVD condition number per step) is timed too.

Run with one BLAS thread on a shared machine::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_riccati.py [--steps 12566] [--states 8] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from ballctl.design.lqr import riccati_sweep  # noqa: E402

__all__ = ["main", "plain_sweep", "svd_sweep"]


def plain_sweep(Ad, Bd, Q, R, P_end):
    """Textbook eqs. (28)-(29): gains (Kt, nu, N) and Riccati matrices (Kt + 1, N, N)."""
    Kt, N, nu = Bd.shape
    gains = np.empty((Kt, nu, N))
    Ps = np.empty((Kt + 1, N, N))
    Ps[Kt] = P = P_end
    for k in range(Kt - 1, -1, -1):
        A, B = Ad[k], Bd[k]
        PB = P @ B
        BtPA = PB.T @ A
        gains[k] = np.linalg.solve(R[k] + B.T @ PB, BtPA)
        Ps[k] = P = Q[k] + A.T @ P @ A - BtPA.T @ gains[k]
    return gains, Ps


def svd_sweep(Ad, Bd, Q, R, P_end):
    """The 0.1 sweep: the plain one plus symmetrization and ``np.linalg.cond`` (an SVD) at every step."""
    Kt, N, nu = Bd.shape
    gains = np.empty((Kt, nu, N))
    P = P_end
    for k in range(Kt - 1, -1, -1):
        A, B = Ad[k], Bd[k]
        PB = P @ B
        S = R[k] + B.T @ PB
        S = 0.5 * (S + S.T)
        BtPA = PB.T @ A
        np.linalg.cond(S)
        gains[k] = np.linalg.solve(S, BtPA)
        P = Q[k] + A.T @ P @ A - BtPA.T @ gains[k]
        P = 0.5 * (P + P.T)
    return gains, P


def _best(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> int:
    """Time the three sweeps on a random stable-ish time-varying system and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12_566, help="horizon steps (default 12566: 4 pi s at 1 ms)")
    parser.add_argument("--states", type=int, default=8)
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    Kt, N, nu = args.steps, args.states, args.inputs
    Ad = np.eye(N) + 1e-3 * rng.standard_normal((Kt, N, N))
    Bd = 1e-3 * rng.standard_normal((Kt, N, nu))
    Q = np.broadcast_to(np.eye(N), (Kt, N, N))
    R = np.broadcast_to(np.eye(nu), (Kt, nu, nu))
    t_plain, (K_plain, _) = _best(lambda: plain_sweep(Ad, Bd, Q, R, np.eye(N)), args.repeat)
    t_new, (K_new, P_new, S) = _best(lambda: riccati_sweep(Ad, Bd, Q, R, np.eye(N)), args.repeat)
    t_cond, _ = _best(lambda: np.linalg.eigvalsh(S), args.repeat)
    t_svd, _ = _best(lambda: svd_sweep(Ad, Bd, Q, R, np.eye(N)), args.repeat)
    gain_diff = float(np.max(np.abs(K_new - K_plain)) / np.max(np.abs(K_plain)))
    print(f"Riccati sweep, {Kt} steps, N = {N}, nu = {nu}, best of {args.repeat}")
    print(f"{'sweep':<44} {'time / s':>9} {'/ plain':>8}")
    print(f"{'plain numpy (textbook, no checks)':<44} {t_plain:9.4f} {1.0:8.2f}")
    print(f"{'ballctl.design.lqr.riccati_sweep':<44} {t_new:9.4f} {t_new / t_plain:8.2f}")
    print(f"{'riccati_sweep + batched eigvalsh(S) (cond)':<44} {t_new + t_cond:9.4f} {(t_new + t_cond) / t_plain:8.2f}")
    print(f"{'0.1 sweep (SVD condition number per step)':<44} {t_svd:9.4f} {t_svd / t_plain:8.2f}")
    print(f"largest relative gain difference riccati_sweep vs plain: {gain_diff:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
