r"""C entry points of the loop kernels, and the call through their address.

The compiled closed loop (:mod:`ballctl.simulation.engine`) runs the truth
plant's ``accelerations``, ``constraint_jacobian`` and ``keep_chart``
(the kernel contract of :mod:`ballctl.plants.kernels`). It calls them through
their machine address, not as compiled callees, for the first run's sake:
numba links every callee's whole tree into its caller's library and optimizes
and emits it again there, so a loop that called the plants' kernels directly
compiled every plant of :data:`~ballctl.plants.kernels.LOOP_KERNELS` a second
time, whether the run used it or not (7 s of the 38 s a first ``ballctl track``
spent compiling). Through
an address, the loop's code holds none of a plant's, and a run compiles the
entry points of its own truth plant only.

Each kernel module of the loop defines three plain functions on raw pointers
(C ABI, see the signatures below), which view their pointers as arrays with
:func:`numba.carray` and call the module's kernel; :func:`entry_points`
compiles them with :func:`numba.cfunc` (``cache=True``, on first use) and
returns their addresses, which the loop receives as integers and calls with
:func:`call`. The address is a value, not a constant of the loop's code, so
the loop is compiled once, cached on disk, and serves every plant. A kernel
module may call its own entry points the same way to keep its tree out of its
other compiled functions (:mod:`~ballctl.plants.kernels.moving_plate` does, for
its real stacks of accelerations).

===================================  ===================================================================
entry point                          C signature (``double *`` arrays, C-contiguous; ``int64_t`` sizes)
===================================  ===================================================================
``loop_accelerations``               ``(x, xd, u, p, a, b, xdd, lam, n, n_u, n_p, n_c)``
``loop_constraint_jacobian``         ``(x, p, out, n, n_p, n_c)``: ``out (n_c, n)``
``loop_keep_chart``                  ``(y, n)``: ``y (2n,)``
===================================  ===================================================================
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import NamedTuple

from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

__all__ = ["ACCELERATIONS", "CONSTRAINT_JACOBIAN", "KEEP_CHART", "EntryPoints", "call", "entry_points"]

_vector = types.CPointer(types.float64)
_size = types.int64

#: C signature of ``loop_accelerations(x, xd, u, p, a, b, xdd, lam, n, n_u, n_p, n_c)``
ACCELERATIONS = types.void(_vector, _vector, _vector, _vector, types.float64, types.float64, _vector, _vector,
                           _size, _size, _size, _size)
#: C signature of ``loop_constraint_jacobian(x, p, out, n, n_p, n_c)``
CONSTRAINT_JACOBIAN = types.void(_vector, _vector, _vector, _size, _size, _size)
#: C signature of ``loop_keep_chart(y, n)``
KEEP_CHART = types.void(_vector, _size)


class EntryPoints(NamedTuple):
    """Machine addresses of a kernel module's C entry points (valid while the process runs).

    Parameters
    ----------
    accelerations, constraint_jacobian, keep_chart : int
        Addresses of ``loop_accelerations``, ``loop_constraint_jacobian`` and ``loop_keep_chart``.
    """

    accelerations: int
    constraint_jacobian: int
    keep_chart: int


@functools.cache
def _compiled(function, signature):
    return cfunc(signature, cache=True, nogil=True)(function)


def entry_points(module: ModuleType) -> EntryPoints:
    """Compile (first use; then numba's disk cache) a kernel module's C entry points and return their addresses.

    Parameters
    ----------
    module : module
        A kernel module of :data:`ballctl.plants.kernels.LOOP_KERNELS`, with the plain functions
        ``loop_accelerations``, ``loop_constraint_jacobian`` and ``loop_keep_chart`` (module docstring).

    Returns
    -------
    EntryPoints
    """
    return EntryPoints(_compiled(module.loop_accelerations, ACCELERATIONS).address,
                       _compiled(module.loop_constraint_jacobian, CONSTRAINT_JACOBIAN).address,
                       _compiled(module.loop_keep_chart, KEEP_CHART).address)


@intrinsic
def call(typingctx, address, *args):
    """Call the C function at ``address`` (an int) with ``args``: float64 arrays by data pointer, numbers by value.

    Compiled code only. The arrays must be C-contiguous float64 (checked when the call is compiled); the
    function returns nothing (a C ``void``). The address is a run-time value, so the caller's compiled code
    holds no trace of the callee and is cached like any other.
    """
    if not isinstance(address, types.Integer):
        raise TypingError(f"call: the address must be an integer, got {address}")
    c_types = []
    for ty in args:
        if isinstance(ty, types.Array):
            if ty.dtype != types.float64 or ty.layout != "C":
                raise TypingError(f"call: arrays must be C-contiguous float64, got {ty}")
            c_types.append(ir.DoubleType().as_pointer())
        elif isinstance(ty, types.Float):
            c_types.append(ir.DoubleType())
        elif isinstance(ty, types.Integer):
            c_types.append(ir.IntType(64))
        else:
            raise TypingError(f"call: arguments must be float64 arrays or numbers, got {ty}")
    signature = types.void(address, types.StarArgTuple(args))

    def codegen(context, builder, sig, llargs):
        function_type = ir.FunctionType(ir.VoidType(), c_types)
        function = builder.inttoptr(llargs[0], function_type.as_pointer())
        c_args = []
        for ty, value in zip(args, cgutils.unpack_tuple(builder, llargs[1], len(args))):
            if isinstance(ty, types.Array):
                c_args.append(context.make_array(ty)(context, builder, value).data)
            else:
                c_args.append(context.cast(builder, value, ty, types.int64 if isinstance(ty, types.Integer)
                                           else types.float64))
        builder.call(function, c_args)
        return context.get_dummy_value()

    return signature, codegen

