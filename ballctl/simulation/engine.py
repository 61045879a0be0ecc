r"""The compiled fixed-step closed loop: many runs of a sampled LQR or LQG tracking loop at once.

This is the fast backend of :func:`ballctl.simulate_closed_loop` (selected by
``ClosedLoopOptions(method="rk4")`` when the truth plant carries compiled kernels, see
:mod:`ballctl.plants.kernels`) and the engine under :func:`ballctl.monte_carlo`.
It runs the *same* loop as the Python reference path of
:mod:`ballctl.simulation.closed_loop`, step for step (:mod:`ballctl.simulation.loop_step`):

0. **stop** (with ``divergence_error``): a run whose contact point is farther
   than ``divergence_error`` m from its reference, or whose state is not
   finite, stops at that sample (``status``),
1. **sense and estimate**. State feedback: ``X_k = (y_k - y_ref,k)[sel] + e_k``
   (``e_k``: measurement noise and bias, drawn in Python from per-run seeds,
   so results do not depend on the engine). Output feedback (an
   :class:`EstimatorArrays`): every signal sampled at step k reads the truth
   plus bias and ``noise_std * z`` (standard normals drawn in Python, in the
   order of the Python loop), read ``shift`` s off its nominal instant
   (latency error, timing jitter: ``y + shift * y_dot``), or is lost
   (``received`` False: no update from it); the Kalman filter -- on the
   design's states and, offset-free, its disturbance states and integrators
   (``Ne`` states, :mod:`ballctl.design.estimator`) -- is committed up to the newest
   step whose samples have all arrived (update, then predict with the input
   that acted) and predicted forward to ``t_k`` with the inputs already sent
   (latency compensation),
2. ``cmd = u_ff,k - K_k X_k`` (eqs. 27, 30), quantized, then within the tilt
   limit (:func:`ballctl.simulation.loop_step.shape_command`); before the first command
   the plant holds the feedforward shaped the same way,
3. the command reaches the plant ``delay`` s later: the step splits at
   ``t_k + frac`` (:func:`ballctl.simulation.loop_step.delay_segments`) into two held
   segments, each slew-limited; the recorded input is their time average
   (:func:`ballctl.simulation.loop_step.effective_input`); a servo dead band
   (:func:`ballctl.simulation.loop_step.backlash`) stands between it and the plant,
4. classical RK4 with ``substeps`` steps per segment on the truth plant's
   index-1 equations with Baumgarte stabilization ``(a, b)``; then (``rechart``,
   :attr:`~ballctl.simulation.arrays.LoopArrays.rechart`) the truth
   ball is re-charted if its lean passed ``RECHART_LEAN`` (its kernel module's
   ``keep_chart``, e.g. :func:`ballctl.plants.kernels.ball_plate.keep_chart`:
   an isotropic ball's orientation angles are re-chosen, its motion is not
   changed), so a drawn rig whose ball turns away from the reference's
   orientation is not lost to the angles' singularity.

The truth plant may have more coordinates than the design (a quasi-static
design on the servo plate): the reference, the controller's state selection
and the sensor signals are given in the truth's coordinates.

Batch axis: a leading run axis ``B`` for initial states, measurement errors,
sensor draws, plant parameters (one kernel parameter vector per run) and
delays; the reference, the gains and the filter are shared. A run whose state
stops being finite is stopped and marked (``status``), the others go on.

Compilation: numba, ``cache=True`` (compiled code is cached on disk next to
the source, so only the first process on a machine pays the compile time).
One specialization serves every request: state and output feedback, every
plant of :data:`ballctl.plants.kernels.LOOP_KERNELS`, any limits (switched by
values, not by types; :class:`~ballctl.simulation.arrays.LoopArrays` fixes
every array's dtype, layout and writability). The engine names no plant: it
calls the truth plant's ``accelerations``, ``constraint_jacobian`` and
``keep_chart`` through the machine addresses of their C entry points
(:mod:`ballctl.plants.kernels.native`), so the loop's compiled code holds no
plant's code: a run compiles the kernels of its own truth plant only, and the
loop once. (Calling the kernels of every plant of the registry as compiled
callees linked and re-optimized their whole trees into the loop: it took 12 s
to compile in a first ``ballctl track``, 7 s now.) The thin layers between
the loop and the plant's kernels (:func:`rk4_hold`, the right-hand side) are
inlined into it (``inline="always"``). The loop copies arrays
element by element: an array assignment (``out[r, k] = y``) compiles numba's
shape-mismatch message formatting, seconds of a first run. The step logic is
the kernels of :mod:`ballctl.simulation.loop_step`, the same the Python driver
(:func:`ballctl.simulation.component.run_loop`) calls; that driver integrates
an RK4 segment of such a plant with :func:`hold_rk4`, the loop's integrator on
its own (one compiled call per segment).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._jit import njit
from .._errors import ParameterError, ShapeError
from .arrays import LoopArrays, RunDraws
from .loop_step import (backlash, control_law, effective_input, hold_segment, kalman_predict, kalman_update,
                        quantize_clamp, sense)
from ..plants.kernels import LOOP_KERNELS
from ..plants.kernels.native import EntryPoints, call, entry_points

__all__ = ["BACKGROUND_TIMEOUT_S", "CompiledLoopOutput", "background_wait_s", "compile_in_background", "hold_rk4",
           "hold_rk4_types", "kernel_code", "run_closed_loop"]


def kernel_code(system) -> int:
    """Index of the system's kernel module in :data:`~ballctl.plants.kernels.LOOP_KERNELS`, or -1 (Python loop only).

    Parameters
    ----------
    system : ConstrainedSystem
        A plant; built-in plants expose ``kernels`` (their kernel module) and
        ``kernel_parameters``.
    """
    module = getattr(system, "kernels", None)
    if module is None or not hasattr(system, "kernel_parameters"):
        return -1
    for i, m in enumerate(LOOP_KERNELS):
        if m is module:
            return i
    return -1


@njit(cache=True, nogil=True, inline="always")
def _rhs(plant, y, u, p, a, b, n, out, x, xd, xdd, lam):
    """``out = (xd, xdd)`` at ``y = (x, xd)``: the plant's accelerations through their C entry point."""
    for i in range(n):
        x[i] = y[i]
        xd[i] = y[n + i]
    call(plant.accelerations, x, xd, u, p, a, b, xdd, lam, n, u.shape[0], p.shape[0], lam.shape[0])
    for i in range(n):
        out[i] = y[n + i]
        out[n + i] = xdd[i]


@njit(cache=True, nogil=True, inline="always")
def rk4_hold(plant, y, h, substeps, u, p, a, b, n, ks, tmp, x, xd, xdd, lam):
    """``substeps`` classical RK4 steps of ``h / substeps`` with ``u`` held (same arithmetic as simulate.rk4).

    ``plant``: the truth's :class:`~ballctl.plants.kernels.native.EntryPoints`; ``ks (4, 2n)`` holds the four
    stages, ``x, xd (n,)`` the coordinates and velocities of a stage. The stages are one loop around one
    right-hand-side call (one call site of the plant's accelerations, not four).
    """
    hs = h / substeps
    half = hs / 2
    sixth = hs / 6
    for _ in range(substeps):
        for stage in range(4):
            if stage == 0:
                for i in range(2 * n):
                    tmp[i] = y[i]
            elif stage == 3:
                for i in range(2 * n):
                    tmp[i] = y[i] + hs * ks[2, i]
            else:
                for i in range(2 * n):
                    tmp[i] = y[i] + half * ks[stage - 1, i]
            _rhs(plant, tmp, u, p, a, b, n, ks[stage], x, xd, xdd, lam)
        for i in range(2 * n):
            y[i] = y[i] + sixth * (ks[0, i] + 2 * ks[1, i] + 2 * ks[2, i] + ks[3, i])


@njit(cache=True, nogil=True)
def hold_rk4(plant, y0, h, substeps, u, p, a, b, n_constraints):
    """One held segment of the truth plant: ``y0 (2n,)`` advanced by ``h`` s with ``u`` held, as a new array.

    :func:`rk4_hold` (the loop's integrator, the arithmetic of :func:`ballctl.simulate.rk4`) on its own,
    for a driver that runs the loop step by step in Python
    (:class:`~ballctl.simulation.component.NonlinearStepper`). ``plant``: the truth's
    :class:`~ballctl.plants.kernels.native.EntryPoints`; ``p``: its kernel parameters; ``(a, b)``: the
    Baumgarte gains in 1/s; ``n_constraints``: its number of velocity constraints.
    """
    ny = y0.shape[0]
    n = ny // 2
    y = np.empty(ny)
    for i in range(ny):
        y[i] = y0[i]
    ks, tmp, x, xd, xdd, lam = _rk4_workspace(n, n_constraints)
    rk4_hold(plant, y, h, substeps, u, p, a, b, n, ks, tmp, x, xd, xdd, lam)
    return y


@njit(cache=True, nogil=True, inline="always")
def _rk4_workspace(n, n_constraints):
    """:func:`rk4_hold`'s work arrays ``ks (4, 2n), tmp (2n,), x, xd, xdd (n,), lam (n_constraints,)``."""
    return (np.empty((4, 2 * n)), np.empty(2 * n), np.empty(n), np.empty(n), np.empty(n),
            np.empty(n_constraints))


@njit(cache=True, nogil=True, inline="always")
def _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas):
    """NaN in every output of run ``r`` after step ``k`` (the run stopped there)."""
    for kk in range(k + 1, out_y.shape[1]):
        out_y[r, kk] = np.nan
        out_X[r, kk] = np.nan
        out_Xm[r, kk] = np.nan
        out_d[r, kk] = np.nan
        out_res[r, kk] = np.nan
        out_u[r, kk] = np.nan
        out_meas[r, kk] = np.nan


@njit(cache=True, nogil=True)
def _loop(plant, n, n_constraints, Y0, params, T, dt, y_ref, u_ref, u_start, gains, sel, meas_err,
          feedback, quantum, max_angle, max_rate, d_int, d_frac, substeps, a, b, div_error, div_idx,
          has_est, sampled, Cm, Mg, Ad, Bd, sig_idx, sig_ref, bias, noise_std, z, lat, received, shift, deadband,
          rechart, out_y, out_u, out_X, out_Xm, out_d, out_res, out_meas, events, status):
    B = Y0.shape[0]
    K = out_y.shape[1]
    steps = K - 1
    nu = u_ref.shape[1]
    N = sel.shape[0]
    Ne = gains.shape[2]  # what the control law acts on: the design's states (+ disturbance estimates)
    ny = 2 * n
    n_sig = sig_idx.shape[0]
    Ks = sampled.shape[0]  # steps with sensing
    n_div = div_idx.shape[0]
    ks, tmp, x, xd, xdd, lam = _rk4_workspace(n, n_constraints)
    D = np.empty((n_constraints, n))
    y = np.empty(ny)
    X = np.empty(N)
    Xm = np.empty(Ne)
    cmd = np.empty(nu)
    u_app = np.empty(nu)
    u_plant = np.empty(nu)
    commands = np.empty((K, nu))
    held = np.empty((2, nu))
    du_eff = np.zeros((K, nu))
    y_dev = np.zeros((K, n_sig))
    avail = np.zeros((K, n_sig), dtype=np.bool_)
    reading = np.empty(n_sig)
    inn = np.empty(n_sig)
    X_c = np.empty(Ne)
    X_post = np.empty(Ne)
    X_tmp = np.empty(Ne)
    u_step = np.empty(nu)
    for r in range(B):
        p = params[r]
        for i in range(ny):  # element by element (an array assignment compiles numba's shape-error formatting)
            y[i] = Y0[r, i]
        for i in range(nu):
            u_app[i] = u_start[i]
            u_plant[i] = u_start[i]
        status[r] = -1
        for i in range(Ne):  # the estimate starts on the reference
            X_c[i] = 0.0
        j_c = 0
        for kk in range(K):
            for j in range(n_sig):
                y_dev[kk, j] = 0.0
                avail[kk, j] = False
        for k in range(K):
            for j in range(N):
                X[j] = y[sel[j]] - y_ref[k, sel[j]]
            for i in range(ny):
                out_y[r, k, i] = y[i]
            for j in range(N):
                out_X[r, k, j] = X[j]
            out_meas[r, k] = np.nan
            for i in range(n):
                x[i] = y[i]
            call(plant.constraint_jacobian, x, p, D, n, p.shape[0], n_constraints)
            for i in range(n_constraints):
                s = 0.0
                for j in range(n):
                    s += D[i, j] * y[n + j]
                out_res[r, k, i] = s
            # 0: divergence
            if div_error > 0 and k > 0:
                finite = True
                for i in range(ny):
                    if not np.isfinite(y[i]):
                        finite = False
                e2 = 0.0
                for i in range(n_div):
                    e2 += (y[div_idx[i]] - y_ref[k, div_idx[i]]) ** 2
                if not finite or np.sqrt(e2) > div_error:
                    status[r] = k
                    for j in range(N):
                        out_Xm[r, k, j] = X[j]
                    out_d[r, k] = np.nan
                    for i in range(nu):
                        out_u[r, k, i] = u_app[i]
                    _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas)
                    break
            # 1: sense and estimate
            if has_est:
                if k < Ks:
                    sense(y, n, sig_idx, shift[r, k], bias[r], noise_std, z[r, k], reading)
                    for j in range(n_sig):
                        if sampled[k, j] and received[r, k, j]:
                            out_meas[r, k, j] = reading[j]
                            y_dev[k, j] = reading[j] - sig_ref[k, j]
                            avail[k, j] = True
                while j_c <= k - lat and j_c < k:  # commit the steps whose samples have all arrived
                    kalman_update(X_c, y_dev[j_c], avail[j_c], Cm[j_c], Mg[j_c], inn, X_post)
                    kalman_predict(X_post, Ad[j_c], Bd[j_c], du_eff[j_c], X_c)
                    j_c += 1
                if lat == 0 and k < Ks:
                    kalman_update(X_c, y_dev[k], avail[k], Cm[k], Mg[k], inn, Xm)
                else:
                    for i in range(Ne):
                        Xm[i] = X_c[i]
                    for j in range(j_c, k):  # latency compensation: predict with the inputs already sent
                        kalman_predict(Xm, Ad[j], Bd[j], du_eff[j], X_tmp)
                        for i in range(Ne):
                            Xm[i] = X_tmp[i]
            else:
                for j in range(N):
                    Xm[j] = X[j] + meas_err[r, k, j]
            for j in range(N):
                out_Xm[r, k, j] = Xm[j]
            for j in range(N, Ne):
                out_d[r, k, j - N] = Xm[j]
            if k == steps:
                for i in range(nu):
                    out_u[r, k, i] = u_app[i]
                break
            # 2: control law and shaping
            if feedback:
                control_law(u_ref[k], gains[k], Xm, cmd)
            else:
                for i in range(nu):
                    cmd[i] = u_ref[k, i]
            hit_q, hit_a = quantize_clamp(cmd, quantum, max_angle)
            events[r, 2] += hit_q
            events[r, 0] += hit_a
            for i in range(nu):
                commands[k, i] = cmd[i]
            # 3-4: delay segments, slew limit, dead band, integration
            for seg in range(2):
                if seg == 0:
                    t_a = T[k]
                    t_b = T[k] + d_frac[r]
                else:
                    t_a = T[k] + d_frac[r]
                    t_b = T[k + 1]
                if t_b <= t_a:
                    for i in range(nu):
                        held[seg, i] = u_app[i]
                    continue
                events[r, 1] += hold_segment(commands, k - d_int[r] - 1 + seg, u_start, t_b - t_a, max_rate, u_app)
                for i in range(nu):
                    held[seg, i] = u_app[i]
                if deadband > 0:
                    backlash(u_app, deadband, u_plant)
                else:
                    for i in range(nu):
                        u_plant[i] = u_app[i]
                rk4_hold(plant, y, t_b - t_a, substeps, u_plant, p, a, b, n, ks, tmp, x, xd, xdd, lam)
            if rechart:
                call(plant.keep_chart, y, n)   # the truth ball's chart (a NaN state passes unchanged)
            effective_input(held[0], held[1], d_frac[r], dt, u_step)
            for i in range(nu):
                out_u[r, k, i] = u_step[i]
                du_eff[k, i] = u_step[i] - u_ref[k, i]
            if div_error <= 0:
                finite = True
                for i in range(ny):
                    if not np.isfinite(y[i]):
                        finite = False
                if not finite:
                    status[r] = k + 1
                    _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas)
                    break


@dataclass(frozen=True)
class CompiledLoopOutput:
    """Raw histories of a batch of closed-loop runs (leading run axis B).

    Attributes
    ----------
    x, xd : ndarray, shape (B, K, n)
        Coordinates and velocities at the control times.
    u : ndarray, shape (B, K, nu)
        Input applied over ``[t_k, t_k+1)``: the time average of its two held
        segments; the last sample is the input held at the end.
    X, X_measured : ndarray, shape (B, K, N)
        True reduced deviations and what the control law used (the measured
        state, or the estimate of the Kalman filter).
    velocity_residual : ndarray, shape (B, K, m + l)
        ``D(x) xd``.
    limit_events : ndarray of int, shape (B, 3)
        Control steps at which ``("max_angle", "max_rate", "quantum")`` changed the command.
    status : ndarray of int, shape (B,)
        -1 for a completed run, else the control step at which the run
        stopped: the first sample whose state was not finite, or (with a
        divergence stop) the sample at which it diverged; later samples are NaN.
    measurements : ndarray, shape (B, K, ny)
        Sensor readings (NaN where a signal was not sampled or its sample was
        lost); ny = 0 without an estimator.
    augmented_estimate : ndarray, shape (B, K, Ne - N)
        The filter's states beyond the design's: disturbance estimates (rad)
        and integrators (m s), in the estimator's order (none without them).
    """

    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    X: np.ndarray
    X_measured: np.ndarray
    velocity_residual: np.ndarray
    limit_events: np.ndarray
    status: np.ndarray
    measurements: np.ndarray
    augmented_estimate: np.ndarray


#: s the first closed loop waits at most for :func:`compile_in_background`'s process (a guard; it takes far less)
BACKGROUND_TIMEOUT_S = 300.0
#: what the second process of :func:`compile_in_background` prints when its plants' complex kernels are compiled
_COMPLEX_DONE = "complex-step kernels compiled"
#: what this process tells the second one when it compiles the loop itself (:func:`_wait_for_complex_step`)
_LOOP_TAKEN = "the first process compiles the loop"
#: the second process of :func:`compile_in_background` and how long the first loop waited for it (s)
_background: dict = {"process": None, "waited_s": None, "loop_started": False, "complex_pending": False,
                      "complex_waited_s": 0.0, "plants": ()}


def compile_in_background(complex_step: tuple[str, ...] = ()) -> bool:
    """Start a second process that compiles what this one needs later: a first run on two cores.

    The second process compiles, in order, the complex-step kernels of the
    plants named in ``complex_step`` (:func:`ballctl.plants.compile_ahead.compile_complex_step`:
    what their linearizations use), then the closed loop's one specialization
    and that of :func:`hold_rk4` (:func:`hold_rk4_types`). When this process first
    misses a complex specialization in the cache while the second one is still
    at those, it compiles the first plant's real kernels and C entry points
    (:func:`~ballctl.plants.compile_ahead.compile_real`; a first ``ballctl track``
    linearizes the servo plate early, in its exact inversion, and names it
    first); then the loop goes to whichever process is free first: when the
    complex kernels are not ready yet, this process takes the loop (and says so
    to the second one, which compiles :func:`hold_rk4` and the other plants'
    real kernels instead), else it compiles the other plants' real kernels and
    the second one the loop. It then waits for the complex kernels and reads
    them from the cache. The second process compiles last the helpers a design
    and a C export call from Python (:func:`ahead_specializations`). The first
    :func:`run_closed_loop` waits for the second process to end and reads from
    the cache what it compiled.

    The caller goes on with its own work (its real kernels compile in this
    process meanwhile). numba's disk cache is shared safely by the two
    (:mod:`ballctl._jit`: locked reads and writes), and neither compiles what the
    other does (the loop's callees are inlined into it,
    :mod:`~ballctl.simulation.loop_step`). A machine that has it all in its cache
    gains nothing: call it when this process first compiles, a sign of a cold
    cache (``ballctl track`` does). Each wait lasts at most
    :data:`BACKGROUND_TIMEOUT_S`; then the second process is ended and this
    one compiles what it needs itself.

    Parameters
    ----------
    complex_step : tuple of str
        Names in :data:`ballctl.plants.PLANTS` of the plants whose complex-step kernels the
        second process compiles first (default: none, the loop only).

    Returns
    -------
    bool
        Whether a process was started: not when this process has run the loop
        or started one before, on one core, with numba's JIT disabled, or
        where the cache cannot be locked (:data:`ballctl._jit.LOCKED`).
    """
    from numba import config

    from .._jit import LOCKED, set_miss_hook
    from ..plants import PLANTS

    unknown = [name for name in complex_step if name not in PLANTS]
    if unknown:
        raise ParameterError(f"complex_step names plants that ballctl.plants.PLANTS does not have: {unknown}")
    if (_loop.signatures or _background["loop_started"] or _background["process"] is not None
            or (os.cpu_count() or 1) < 2 or config.DISABLE_JIT or not sys.executable or not LOCKED):
        return False
    root = str(Path(__file__).resolve().parents[2])  # this ballctl, whatever the working folder holds
    code = (f"import sys; sys.path.insert(0, {root!r}); from ballctl.simulation import engine; "
            f"engine._compile_aside({tuple(complex_step)!r})")
    _background["process"] = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if complex_step:
        _background["plants"] = tuple(PLANTS[name]() for name in complex_step)
        _background["complex_pending"] = True
        set_miss_hook(_wait_for_complex_step)
    return True


def _compile_aside(complex_step: tuple[str, ...]) -> None:
    """The second process of :func:`compile_in_background`."""
    from ..plants import PLANTS
    from ..plants.compile_ahead import compile_complex_step

    if not complex_step:
        _compile_loop()
        return
    for name in complex_step:
        compile_complex_step(PLANTS[name]())
    print(_COMPLEX_DONE, flush=True)
    told, _, _ = select.select([sys.stdin], [], [], 0)
    if told and sys.stdin.readline().strip() == _LOOP_TAKEN:   # the first process was free first
        hold_rk4.compile(hold_rk4_types())
        for name in complex_step[1:]:
            _compile_real(PLANTS[name]())
    else:
        _compile_loop()
    for dispatcher, types in ahead_specializations():   # what the first process compiles last
        dispatcher.compile(types)


def _compile_loop() -> None:
    """Compile (or read from the cache) the loop's and :func:`hold_rk4`'s one specialization each."""
    _loop(*_template_arguments())
    hold_rk4.compile(hold_rk4_types())


def _compile_real(plant) -> None:
    """A plant's real kernels and, for a plant of the compiled loop, its C entry points."""
    from ..plants.compile_ahead import compile_real

    compile_real(plant)
    if getattr(plant, "kernels", None) in LOOP_KERNELS:
        entry_points(plant.kernels)


def _wait_for_complex_step(signature) -> bool:
    """:func:`ballctl._jit.set_miss_hook`'s hook: at the first complex miss, compile the first plant's real
    kernels, then the loop or the other plants' (:func:`compile_in_background`), then wait."""
    if not _background["complex_pending"] or "complex128" not in str(signature):
        return False
    _background["complex_pending"] = False
    plants, process = _background["plants"], _background["process"]
    _compile_real(plants[0])   # what this process needs first, while the second one compiles the complex
    complex_ready, _, _ = select.select([process.stdout], [], [], 0)
    taken = False
    if not complex_ready:   # this process is free first: it takes the loop
        try:
            process.stdin.write(_LOOP_TAKEN + "\n")
            process.stdin.flush()
            taken = True
        except OSError:   # the second process has ended
            pass
    if taken:
        _loop(*_template_arguments())
    else:
        for plant in plants[1:]:
            _compile_real(plant)
    t0 = time.perf_counter()
    ready, _, _ = select.select([process.stdout], [], [], BACKGROUND_TIMEOUT_S)
    if ready:
        process.stdout.readline()  # the line, or nothing: the process ended
    else:   # never seen: end it, so that it writes nothing while this one compiles
        process.kill()
        process.wait()
    _background["complex_waited_s"] = time.perf_counter() - t0
    return True


def background_wait_s() -> float | None:
    """Seconds this process waited for :func:`compile_in_background`'s (None: it started none, or the loop
    has not run yet)."""
    waited = _background["waited_s"]
    return None if waited is None else waited + _background["complex_waited_s"]


def _wait_for_background_compile() -> None:
    _background["loop_started"] = True  # from here on this process compiles (or loads) the loop itself
    _background["complex_pending"] = False
    process = _background["process"]
    if process is not None and _background["waited_s"] is None:
        t0 = time.perf_counter()
        try:
            process.wait(timeout=BACKGROUND_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # never seen: end it, so that it writes nothing while this one compiles
            process.kill()
            process.wait()
        process.stdout.close()
        process.stdin.close()
        _background["waited_s"] = time.perf_counter() - t0


def hold_rk4_types() -> tuple:
    """The numba types of :func:`hold_rk4`'s one specialization (those :class:`NonlinearStepper` passes)."""
    from numba import typeof, types

    vector = types.float64[::1]
    return (typeof(EntryPoints(0, 0, 0)), vector, types.float64, types.int64, vector, vector, types.float64,
            types.float64, types.int64)


def ahead_specializations() -> tuple:
    """``(dispatcher, types)`` of the compiled functions a design and its C export call from Python, one
    specialization each: the stacked matrix inverse of the linearizer and the loop steps of the Python
    driver of a controller component (:mod:`~ballctl.simulation.component`). The second process of
    :func:`compile_in_background` compiles them last, after its share of the kernels, so that a first
    ``ballctl track`` reads them from the cache."""
    from numba import types

    from .._linalg import inverse_stack

    f8, i8 = types.float64, types.int64
    vector, matrix = f8[::1], f8[:, ::1]
    return ((inverse_stack, (f8[:, :, ::1],)),
            (quantize_clamp, (vector, f8, f8)),
            (hold_segment, (matrix, i8, vector, f8, f8, vector)),
            (effective_input, (vector, vector, f8, f8, vector)),
            (backlash, (vector, f8, vector)),
            (sense, (vector, i8, i8[::1], f8, vector, vector, vector, vector)))


def _template_arguments() -> tuple:
    """Arguments of the loop's one specialization, for no runs (so no entry point is called: addresses 0)."""
    K, n, N = 2, 5, 10
    loop = LoopArrays(kernel_code=0, n_constraints=2, dt=0.01, times=np.array([0.0, 0.01]), x_ref=np.zeros((K, n)),
                      xd_ref=np.zeros((K, n)), u_ref=np.zeros((K, 2)), gains=np.zeros((K - 1, 2, N)),
                      selection=np.arange(N), tracked_index=np.arange(2))
    runs = RunDraws(params=np.zeros((0, 5)), x0=np.zeros((0, n)), xd0=np.zeros((0, n)),
                    measurement_error=np.zeros((0, K, N)), standard_normal=np.zeros((0, K, 0)),
                    bias=np.zeros((0, 0)), received=np.zeros((0, K, 0), dtype=bool), sample_shift=np.zeros((0, K)),
                    delay_s=np.zeros(0))
    return _arguments(loop, runs, EntryPoints(0, 0, 0))


def run_closed_loop(loop: LoopArrays, runs: RunDraws) -> CompiledLoopOutput:
    """Run the B runs of ``runs`` through the compiled loop (the arrays were checked when ``loop`` was built).

    Parameters
    ----------
    loop : LoopArrays
        The controller on the truth-plant layout; ``loop.kernel_code`` must be >= 0.
    runs : RunDraws
        Each run's plant parameters, initial state and draws.

    Returns
    -------
    CompiledLoopOutput
    """
    if loop.kernel_code < 0:
        raise ShapeError("internal: the compiled loop needs a truth plant with loop kernels (kernel_code >= 0)")
    args = _arguments(loop, runs, entry_points(LOOP_KERNELS[loop.kernel_code]))
    _wait_for_background_compile()
    _loop(*args)
    n = loop.n
    out_y, out_u, out_X, out_Xm, out_d, out_res, out_meas, events, status = args[-9:]
    return CompiledLoopOutput(out_y[:, :, :n], out_y[:, :, n:], out_u, out_X, out_Xm, out_res, events, status,
                              out_meas, out_d)


def _arguments(loop: LoopArrays, runs: RunDraws, plant: EntryPoints) -> tuple:
    """The compiled loop's arguments for ``runs`` through ``loop`` on the truth plant ``plant``; its outputs last."""
    B, K, n = len(runs), loop.K, loop.n
    nu = loop.u_ref.shape[1]
    N = loop.selection.shape[0]
    Ne = loop.gains.shape[2]
    e = loop.estimator
    if e is None:
        est = (np.zeros((0, 0), dtype=np.bool_), np.zeros((0, 0, N)), np.zeros((0, N, 0)), np.zeros((0, N, N)),
               np.zeros((0, N, nu)), np.zeros(0, dtype=np.int64), np.zeros((K, 0)))
        lat = 0
    else:
        est = (e.sampled, e.C, e.update_gains, e.Ad, e.Bd, e.signal_index, e.signal_reference)
        lat = e.latency_steps
    ny_s = loop.n_signals
    d_int, d_frac = runs.delay_split(loop.dt)
    Y0 = np.ascontiguousarray(np.concatenate([runs.x0, runs.xd0], axis=1))
    out_y = np.empty((B, K, 2 * n))
    out_u = np.empty((B, K, nu))
    out_X = np.empty((B, K, N))
    out_Xm = np.empty((B, K, N))
    out_d = np.zeros((B, K, Ne - N))
    out_res = np.empty((B, K, loop.n_constraints))
    out_meas = np.empty((B, K, ny_s))
    events = np.zeros((B, 3), dtype=np.int64)
    status = np.empty(B, dtype=np.int64)
    a, b = loop.stabilization
    return (plant, n, loop.n_constraints, Y0, runs.params, loop.times,
            loop.dt, loop.y_ref, loop.u_ref, loop.u_start, loop.gains, loop.selection, runs.measurement_error,
            loop.feedback, loop.quantum, loop.max_angle, loop.max_rate, d_int, d_frac, loop.substeps, a, b,
            loop.divergence_error, loop.tracked_index, e is not None, *est, runs.bias,
            (np.zeros(0) if e is None else e.noise_std), runs.standard_normal, lat, runs.received,
            runs.sample_shift, loop.deadband, loop.rechart, out_y, out_u, out_X, out_Xm, out_d, out_res, out_meas,
            events, status)
