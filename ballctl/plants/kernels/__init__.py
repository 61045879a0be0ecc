r"""Compiled plant kernels: each built-in plant's equations written once.

Every built-in plant keeps its equations of motion here, as numba functions
(``@njit(cache=True)``, compiled on first use and cached on disk next to the
source) on plain arrays, following QuantEcon's pattern of pure compiled
functions under thin Python classes. The plant classes validate, broadcast
and dispatch; they call these kernels for ``M``, ``Q``, the constraint
Jacobian, the constraint bias and the structured index-1 solve, so there is
one source of truth per plant. The same kernels serve

* simulation and the closed loop (float64),
* the complex-step linearizer (complex128: every kernel is an analytic
  function of its array arguments, with no ``abs``/``conj``/``real``),
* the compiled batched closed loop of :mod:`ballctl.simulation.engine`.

Kernel contract (one module per plant, parameters packed in a float64 vector ``p``):

==========================================================  ======================================
kernel                                                      writes
==========================================================  ======================================
``mass_matrix(x, p, out)``                                  ``out (n, n)``
``forces(x, xd, u, p, out)``                                ``out (n,)``
``constraint_jacobian(x, p, out)``                          ``out (m + l, n)``
``constraint_bias(x, xd, p, out)``                          ``out (m + l,)``: ``Ddot(x, xd) xd``
``accelerations(x, xd, u, p, a, b, xdd, lam)``              ``xdd (n,)``, ``lam (m + l,)``
==========================================================  ======================================

``a, b`` are the Baumgarte gains in 1/s (0 for the exact index-1 equations).
Each kernel has a ``*_batch`` twin over a leading sample axis, which the
plant classes use for stacks of states.

User systems: a :class:`~ballctl.ConstrainedSystem` built from plain Python
callables keeps working on the generic path. To make it fast, compile the
callables yourself (``numba.njit`` functions returning arrays are ordinary
callables) and pass them to ``ConstrainedSystem``; the generic dense
index-1 solve is then the only Python left per call.
"""

from . import ball_plate, batching, moving_plate, native, rails, rolling_ball, rolling_disk

#: The kernel modules that give the compiled closed loop (:mod:`ballctl.simulation.engine`) its truth
#: plant, in the order of their ``kernel_code``. Each has ``accelerations(x, xd, u, p, a, b, xdd, lam)``,
#: ``constraint_jacobian(x, p, out)``, ``keep_chart(y, n)`` (re-charts the state ``y = (x, xd)`` in place when
#: its chart needs it and says whether it did; a plant without a chart returns False) and ``CHART_COORDINATES``
#: (the coordinates a re-chart changes, ``()`` without a chart), and their C entry points
#: ``loop_accelerations``, ``loop_constraint_jacobian``, ``loop_keep_chart`` (:mod:`.native`: the loop calls
#: them by address); the plant's ``kernels`` attribute names its module. A new plant joins the compiled loop
#: by this one entry, and the plant-contract test checks its kernels and entry points against the plant.
LOOP_KERNELS = (ball_plate, moving_plate)

__all__ = ["LOOP_KERNELS", "ball_plate", "batching", "moving_plate", "native", "rails", "rolling_ball",
           "rolling_disk"]
