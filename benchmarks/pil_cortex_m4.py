"""Processor in the loop: the exported controller of the default job on a Cortex-M4F under QEMU.

What it does:

1. designs the default job's controller (rig ``tabletop``, circle of 0.5 m at 1 rad/s, the exact design,
   a horizon of two periods) and exports it with :func:`ballctl.deploy.sil.export_controller` (float32, the
   Fourier order chosen by the closed-loop check on the truth plant);
2. records a measurement sequence: the Python twin in the closed loop on the truth plant for
   ``--periods`` periods (the sensor readings as the controller received them);
3. cross-compiles the C controller with a test main for a Cortex-M4F (``arm-none-eabi-gcc``, newlib,
   semihosting; the warning flags of :data:`ballctl.deploy.sil.C_FLAGS`) and runs it under
   ``qemu-system-arm -M mps2-an386 -icount shift=0``: one instruction per ns of virtual time, so the
   SysTick (processor clock, calibrated on a loop of known length) counts instructions per step;
4. builds the same main for the host (gcc) and compares the two command sequences bit for bit, and
   the host's with the Python twin (double) replayed on the same sequence;
5. prints flash (code and tables of the controller object, ``arm-none-eabi-size``), RAM
   (``sizeof(ballctl_controller)`` plus the step's stack from ``-fstack-usage``), instructions per step
   (mean and max), steps run, and the twin's time per step next to the Python closed loop's.

Usage::

    python benchmarks/pil_cortex_m4.py [--periods 3] [--json out.json] [--keep DIR] [--without-imperfections]

Without ``arm-none-eabi-gcc`` (with newlib) or ``qemu-system-arm`` it prints why it skips and exits 0;
install them with ``apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["main", "tools_missing", "default_job_controller", "TARGET_FLAGS"]

#: the Cortex-M4F build (hard-float single-precision FPU)
TARGET_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-ffunction-sections",
                "-fdata-sections")
QEMU = ("qemu-system-arm", "-M", "mps2-an386", "-nographic", "-semihosting-config", "enable=on,target=native",
        "-icount", "shift=0", "-kernel")
INSTALL = "apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"

STARTUP = r"""#include <stdint.h>
extern int main(void);
extern void initialise_monitor_handles(void);
extern void exit(int);
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
void Reset_Handler(void);
void Default_Handler(void);
void Default_Handler(void) { for (;;) {} }
__attribute__((section(".isr_vector"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&_estack), Reset_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, 0, 0, 0, 0, Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler};
void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) { *dst++ = *src++; }
    for (dst = &_sbss; dst < &_ebss; ) { *dst++ = 0u; }
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);   /* CPACR: the FPU */
    __asm volatile ("dsb\n isb");
    initialise_monitor_handles();
    exit(main());
}
"""

LINKER = """MEMORY
{
  FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = 4M
  RAM   (rwx) : ORIGIN = 0x20000000, LENGTH = 4M
}
ENTRY(Reset_Handler)
SECTIONS
{
  .text : { KEEP(*(.isr_vector)) *(.text*) *(.rodata*) KEEP(*(.init)) KEEP(*(.fini)) . = ALIGN(4); } > FLASH
  .ARM.exidx : { *(.ARM.exidx*) } > FLASH
  _sidata = LOADADDR(.data);
  .data : { _sdata = .; *(.data*) . = ALIGN(4); _edata = .; } > RAM AT > FLASH
  .bss (NOLOAD) : { _sbss = .; __bss_start__ = .; *(.bss*) *(COMMON) . = ALIGN(4); _ebss = .; __bss_end__ = .; } > RAM
  . = ALIGN(8);
  end = .; __end__ = .;
  _estack = ORIGIN(RAM) + LENGTH(RAM);
}
"""

#: the test main: replays the sequence, prints every command as the bits of its scalars
MAIN = r"""#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
#include "ballctl_controller.h"
#include "pil_sequence.h"
#ifdef PIL_TARGET
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static void ticks_start(void) { SYST_RVR = 0xFFFFFFu; SYST_CVR = 0u; SYST_CSR = 5u; }
static uint32_t ticks(void) { return SYST_CVR; }
static uint32_t elapsed(uint32_t a, uint32_t b) { return (a - b) & 0xFFFFFFu; }
static uint32_t calibrate(void)
{
    uint32_t a = ticks(), b;
    __asm volatile ("ldr r0, =100000\n1: subs r0, r0, #1\n bne 1b" ::: "r0", "cc");
    b = ticks();
    return elapsed(a, b);   /* ticks for 200001 instructions */
}
#else
static void ticks_start(void) {}
static uint32_t ticks(void) { return 0u; }
static uint32_t elapsed(uint32_t a, uint32_t b) { return a - b; }
static uint32_t calibrate(void) { return 0u; }
#endif
static ballctl_controller ctl;
static void print_bits(const ballctl_real *v, int n)
{
    int i;
    for (i = 0; i < n; ++i) {
#if BC_REAL_IS_DOUBLE
        uint64_t b; memcpy(&b, &v[i], sizeof b);
        printf("%08lx%08lx%c", (unsigned long)(b >> 32), (unsigned long)(b & 0xFFFFFFFFu), i + 1 < n ? ' ' : '\n');
#else
        uint32_t b; memcpy(&b, &v[i], sizeof b);
        printf("%08lx%c", (unsigned long)b, i + 1 < n ? ' ' : '\n');
#endif
    }
}
int main(void)
{
    ballctl_real u[BC_N_INPUTS], y[BC_N_SIGNALS];
    ballctl_index k;
    uint32_t cal, overhead, worst = 0u;
    uint64_t total = 0u;
    int m;
    ticks_start();
    cal = calibrate();
    {
        uint32_t a = ticks(), b = ticks();
        overhead = elapsed(a, b);
    }
    ballctl_init(&ctl);
    for (k = 0; k < PIL_STEPS; ++k) {
        uint32_t a, b, t;
        const ballctl_index j = k - BC_LATENCY_STEPS;
        for (m = 0; m < BC_N_SIGNALS; ++m) {
            y[m] = j >= 0 && pil_has[j][m] ? pil_y[j][m] : (ballctl_real)NAN;
        }
        a = ticks();
        if (j >= 0) {
            (void)ballctl_measure(&ctl, j, y);
        }
        if (ballctl_step(&ctl, u) != k) {
            printf("step error at %ld\n", (long)k);
            return 1;
        }
        b = ticks();
        t = elapsed(a, b) - overhead;
        total += t;
        if (t > worst) {
            worst = t;
        }
        print_bits(u, BC_N_INPUTS);
    }
    printf("PIL steps %ld ticks_total %lu ticks_worst %lu calibration_ticks %lu sizeof %lu health %u\n",
           (long)PIL_STEPS, (unsigned long)total, (unsigned long)worst, (unsigned long)cal,
           (unsigned long)sizeof(ballctl_controller), ballctl_health(&ctl));
    return 0;
}
"""


def tools_missing() -> list[str]:
    """The PIL tools that are not installed (empty when the benchmark can run)."""
    missing = [t for t in ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm", "gcc")
               if shutil.which(t) is None]
    if not missing:
        probe = subprocess.run(["arm-none-eabi-gcc", *TARGET_FLAGS, "--specs=rdimon.specs",
                                "-print-file-name=librdimon.a"], capture_output=True, text=True)
        if probe.returncode != 0 or not Path(probe.stdout.strip()).is_file():
            missing.append("libnewlib-arm-none-eabi (librdimon.a)")
    return missing


def default_job_controller(*, imperfections: bool = True):
    """The default job's design: rig ``tabletop``, circle 0.5 m at 1 rad/s, the exact design, two periods.

    Parameters
    ----------
    imperfections : bool
        Keep the rig's imperfections (level error, rolling resistance, lost frames, dead band, jitter).

    Returns
    -------
    rig, controller, x0, xd0
    """
    from dataclasses import replace

    import ballctl
    from ballctl.references.moving_plate import exact_circular_motion
    from ballctl.ball_plate.design import design_for_rig

    rig = ballctl.rig_preset("tabletop")
    if not imperfections and hasattr(rig, "imperfections"):
        from ballctl.ball_plate.rig import Imperfections

        rig = replace(rig, imperfections=Imperfections())
    dt = rig.dt
    period = 2 * np.pi
    horizon = dt * int(np.ceil(2 * period / dt - 1e-9))
    plant = getattr(rig, "design_plant", rig.truth_plant)()   # the references are the design's
    ref = exact_circular_motion(plant, ballctl.LissajousPath.circle(0.5, 1.0), 40.0, duration=horizon + 2 * dt)
    import inspect

    job = {"offset_free": True} if "offset_free" in inspect.signature(design_for_rig).parameters else {}
    ctrl = design_for_rig(rig, ref, "exact", horizon=horizon, **job)   # as ballctl track designs it
    s = ref(0.0)
    x0, xd0 = s.x.copy(), s.xd.copy()
    x0[0] += 0.05   # the job's default initial offset
    x0 = getattr(rig, "truth_initial_state", lambda x: x)(x0)   # the plate rests at the rig's level error
    return rig, ctrl, x0, xd0


def _sequence_header(y: np.ndarray, real: str) -> str:
    has = np.isfinite(y)
    lit = (lambda v: np.format_float_scientific(np.float32(v), unique=True, trim="0") + "f") if real == "float32" \
        else (lambda v: repr(float(v)))
    rows = ",\n".join("{" + ", ".join(lit(v if np.isfinite(v) else 0.0) for v in row) + "}" for row in y)
    mask = ",\n".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in has)
    return (f"#define PIL_STEPS {y.shape[0]}LL\n"
            f"static const ballctl_real pil_y[{y.shape[0]}][BC_N_SIGNALS] = {{\n{rows}}};\n"
            f"static const unsigned char pil_has[{y.shape[0]}][BC_N_SIGNALS] = {{\n{mask}}};\n")


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({res.returncode}):\n{res.stdout[-2000:]}\n"
                           f"{res.stderr[-4000:]}")
    return res


def _parse(stdout: str, nu: int, double: bool):
    lines = stdout.strip().splitlines()
    summary = next(ln for ln in lines if ln.startswith("PIL steps"))
    vals = dict(zip(summary.split()[1::2], (int(v) for v in summary.split()[2::2])))
    rows = [ln.split() for ln in lines if re.fullmatch(r"[0-9a-f ]+", ln) and len(ln.split()) == nu]
    bits = np.array([[int(v, 16) for v in r] for r in rows], dtype=np.uint64)
    u = bits.view(np.float64) if double else bits.astype(np.uint32).view(np.float32).astype(float)
    return vals, bits, u


def main(argv=None) -> int:
    """Run the benchmark (see the module docstring).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments.

    Returns
    -------
    int
        0 on success or when skipped, 1 when a target is missed.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--periods", type=int, default=3, help="periods of the replayed sequence (default 3)")
    ap.add_argument("--real", choices=("float32", "float64"), default="float32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    ap.add_argument("--keep", default=None, help="build folder to keep (default: temporary)")
    ap.add_argument("--without-imperfections", action="store_true",
                    help="the tabletop rig without its imperfections (level error, rolling resistance, ...)")
    args = ap.parse_args(argv)
    # absolute at once: the compiler runs with cwd=the build folder, where a relative --keep would point elsewhere
    keep = Path(args.keep).resolve() if args.keep else None
    missing = tools_missing()
    if missing:
        print(f"PIL skipped: missing {', '.join(missing)}; install with: {INSTALL}")
        return 0
    from ballctl.deploy.runtime import ControllerRuntime
    from ballctl.schedule import controller_footprint
    from ballctl.deploy.sil import C_FLAGS, ComponentLoopOptions, ExportOptions, export_controller, run_component_loop

    t_start = time.perf_counter()
    rig, ctrl, x0, xd0 = default_job_controller(imperfections=not args.without_imperfections)
    work = keep if keep else Path(tempfile.mkdtemp(prefix="ballctl_pil_"))
    work.mkdir(parents=True, exist_ok=True)
    cdir = work / "c_controller"
    report = export_controller(ctrl, rig, cdir, x0=x0, xd0=xd0, seed=args.seed, options=ExportOptions(real=args.real))
    data = report.data
    steps = int(math.ceil(args.periods * data.period_s / data.dt)) + 1
    # the measurement sequence: the twin in the closed loop on the truth plant, as the controller received it
    twin = ControllerRuntime(cdir)
    imperfections = getattr(rig, "imperfections", None)
    extra = {} if imperfections is None else {"imperfections": imperfections.loop}   # the loop's share
    loop = run_component_loop(twin, rig, ctrl, x0, xd0, steps=steps, seed=args.seed,
                              options=ComponentLoopOptions(**extra))
    y = loop.y[:steps]
    t0 = time.perf_counter()
    from ballctl.simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop

    r_py = simulate_closed_loop(ctrl, x0, xd0, truth=rig.truth_plant(), seed=args.seed,
                                options=ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=2,
                                                          backend="python", **extra))
    python_loop_step_s = (time.perf_counter() - t0) / (len(r_py.t) - 1)
    # the twin replayed on the same sequence (open loop), timed per step
    twin.reset()
    u_twin = np.empty((steps, data.n_inputs))
    lat = data.latency_steps
    t0 = time.perf_counter()
    for k in range(steps):
        if k - lat >= 0:
            twin.measure(k - lat, y[k - lat])
        u_twin[k] = twin.step()
    twin_step_s = (time.perf_counter() - t0) / steps
    (cdir / "pil_sequence.h").write_text(_sequence_header(y, data.real))
    (cdir / "pil_main.c").write_text(MAIN)
    (work / "startup.c").write_text(STARTUP)
    (work / "link.ld").write_text(LINKER)
    flags = [f for f in C_FLAGS if f != "-pedantic"]   # the startup's inline assembly is not ISO C
    inc = ["-I", str(cdir)]
    # target
    _run(["arm-none-eabi-gcc", *TARGET_FLAGS, *C_FLAGS, "-fstack-usage", *inc, "-c", str(cdir / "ballctl_controller.c"),
          "-o", str(work / "ballctl_controller.o")], cwd=work)
    _run(["arm-none-eabi-gcc", *TARGET_FLAGS, *flags, "-DPIL_TARGET", *inc, "-c", str(cdir / "pil_main.c"),
          "-o", str(work / "pil_main.o")])
    _run(["arm-none-eabi-gcc", *TARGET_FLAGS, "-O2", "-c", str(work / "startup.c"), "-o", str(work / "startup.o")])
    elf = work / "pil.elf"
    _run(["arm-none-eabi-gcc", *TARGET_FLAGS, "--specs=rdimon.specs", "-nostartfiles", "-T", str(work / "link.ld"),
          "-Wl,--gc-sections", str(work / "pil_main.o"), str(work / "ballctl_controller.o"), str(work / "startup.o"),
          "-o", str(elf)])
    size = _run(["arm-none-eabi-size", str(work / "ballctl_controller.o")]).stdout.splitlines()[1].split()
    text, dat, bss = (int(v) for v in size[:3])
    su = (work / "ballctl_controller.su").read_text() if (work / "ballctl_controller.su").exists() else ""
    frames = {ln.split("\t")[0].rsplit(":", 1)[-1]: int(ln.split("\t")[1]) for ln in su.splitlines() if "\t" in ln}
    stack = frames.get("ballctl_step", 0) + max((v for f, v in frames.items() if f != "ballctl_step"), default=0)
    t0 = time.perf_counter()
    q = _run([*QEMU, str(elf)], timeout=600)
    qemu_s = time.perf_counter() - t0
    double = data.real == "float64"
    vals, bits_t, u_t = _parse(q.stdout, data.n_inputs, double)
    # host
    host = work / "pil_host"
    _run(["gcc", *C_FLAGS, *inc, "-o", str(host), str(cdir / "pil_main.c"), str(cdir / "ballctl_controller.c")])
    _, bits_h, u_h = _parse(_run([str(host)]).stdout, data.n_inputs, double)
    per_tick = 200001.0 / vals["calibration_ticks"]
    fp = controller_footprint(data)
    out = {
        "rig_imperfections": getattr(getattr(rig, "imperfections", None), "any", False),
        "design_offset_free": bool(getattr(ctrl, "offset_free", False)),
        "controller": {"kind": data.kind, "real": data.real, "fourier_order": report.fourier_order,
                       "states": data.n_states, "dropped_states": list(data.dropped_states),
                       "period_steps": data.n_period, "latency_steps": data.latency_steps},
        "steps_run": int(vals["steps"]), "periods_run": vals["steps"] / (data.period_s / data.dt),
        "flash_bytes": text + dat, "flash_code_and_tables": {"text": text, "data": dat},
        "ram_bytes": int(vals["sizeof"]) + stack + bss, "state_bytes": int(vals["sizeof"]), "stack_bytes": stack,
        "instructions_per_step_mean": vals["ticks_total"] * per_tick / vals["steps"],
        "instructions_per_step_max": vals["ticks_worst"] * per_tick,
        "instructions_per_tick": per_tick,
        "target_equals_host": bool(bits_t.shape == bits_h.shape and np.array_equal(bits_t, bits_h)),
        "host_vs_twin_max_abs_rad": float(np.max(np.abs(u_h - u_twin))),
        "twin_time_per_step_us": twin_step_s * 1e6, "python_loop_time_per_step_us": python_loop_step_s * 1e6,
        "twin_to_python_loop_ratio": twin_step_s / python_loop_step_s,
        "sil_design_rms_error_m": report.design_rms_error_m,
        "sil_checks": [dict(c) for c in report.checks], "sil_c_check": report.c_check,
        "estimate": fp.as_dict(), "health_at_end": int(vals["health"]),
        "qemu_wall_s": qemu_s, "wall_s": time.perf_counter() - t_start,
    }
    targets = {"flash <= 128 KiB": out["flash_bytes"] <= 128 * 1024, "RAM <= 16 KiB": out["ram_bytes"] <= 16 * 1024,
               "<= 10,000 instructions per step": out["instructions_per_step_max"] <= 10_000,
               ">= 3 periods without stopping": out["periods_run"] >= 3.0,
               "target output equal to the host build": out["target_equals_host"]}
    out["targets"] = targets
    print(f"controller: {data.kind}, {data.real}, Fourier order {report.fourier_order}, {data.n_states} states "
          f"(dropped {', '.join(data.dropped_states) or 'none'}), period {data.n_period} steps, latency "
          f"{data.latency_steps} steps")
    print(f"Cortex-M4F (QEMU mps2-an386): flash {out['flash_bytes']} B (code+tables {text} + data {dat}), RAM "
          f"{out['ram_bytes']} B (state {out['state_bytes']} + stack {stack} + static {bss})")
    print(f"instructions per step: mean {out['instructions_per_step_mean']:.0f}, max "
          f"{out['instructions_per_step_max']:.0f} ({per_tick:.1f} instructions per SysTick tick)")
    print(f"steps run: {out['steps_run']} ({out['periods_run']:.2f} periods); target output equal to the host "
          f"build: {out['target_equals_host']}; host float vs twin (double) max |du| "
          f"{out['host_vs_twin_max_abs_rad']:.3g} rad")
    print(f"Python twin: {out['twin_time_per_step_us']:.1f} us per step; Python closed loop (ballctl, python "
          f"backend): {out['python_loop_time_per_step_us']:.1f} us per step (ratio "
          f"{out['twin_to_python_loop_ratio']:.2f})")
    for name, ok in targets.items():
        print(f"  [{'ok' if ok else 'MISSED'}] {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
