r"""C export of ballctl data: the literal and initializer writer of both C generators, and the gain schedule's header.

Both generated C files of ballctl write their tables with the functions here:
:func:`c_initializer` (a brace initializer of a numpy array, six values a
line) with :func:`c_literal` (``float64``: the shortest decimal that reads
back to the same double, :func:`c_float_literal`; ``float32``: the shortest
that reads back to the same float, with an ``f`` suffix):

* :func:`write_schedule_c_header` -- a :class:`~ballctl.schedule.data.GainSchedule`
  as one self-contained C99 header (``GainSchedule.to_c_header``);
* :mod:`ballctl.schedule.c_controller` -- the controller a rig runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .._errors import ParameterError
from .._io import atomic_write
from .data import SCHEDULE_FORMAT_VERSION

__all__ = ["c_float_literal", "c_literal", "c_initializer", "write_schedule_c_header"]

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while".split())


def c_float_literal(x: float) -> str:
    """Shortest text that parses back to exactly ``x`` (Python repr, also a valid C double literal).

    Parameters
    ----------
    x : float
        A finite value (``inf`` and ``nan`` have no C literal).

    Returns
    -------
    str
        For example ``"0.1"``, ``"-0.0"``, ``"5e-324"``.
    """
    return repr(float(x))


def _float32_literal(x: float) -> str:
    return np.format_float_scientific(np.float32(x), unique=True, trim="0") + "f"


def c_literal(real: str):
    """The literal writer of a C scalar type.

    Parameters
    ----------
    real : {"float64", "float32"}
        ``"float32"``: the shortest text that reads back to the same float32,
        with the ``f`` suffix; anything else: :func:`c_float_literal`.

    Returns
    -------
    callable
        ``literal(value: float) -> str``.
    """
    return _float32_literal if real == "float32" else c_float_literal


def c_initializer(arr, literal=c_float_literal, indent: str = "    ") -> str:
    """Brace initializer of an array (nested braces per axis), six values a line.

    A 1-d array of at most six values is written on one line, ``{a, b, c}``.

    Parameters
    ----------
    arr : array_like
        Values, at least 1-d.
    literal : callable
        ``literal(value) -> str`` (:func:`c_literal`).
    indent : str
        Indentation of the values (the closing brace is indented four spaces less).

    Returns
    -------
    str
    """
    arr = np.asarray(arr)
    if arr.ndim == 1:
        vals = [literal(v) for v in arr]
        if len(vals) <= 6:
            return "{" + ", ".join(vals) + "}"
        lines = [", ".join(vals[i:i + 6]) for i in range(0, len(vals), 6)]
        return "{\n" + ",\n".join(indent + ln for ln in lines) + "\n" + indent[:-4] + "}"
    inner = [c_initializer(sub, literal, indent + "    ") for sub in arr]
    return "{\n" + ",\n".join(indent + s for s in inner) + "\n" + indent[:-4] + "}"


def _comment(text: str) -> str:
    """``text`` made safe inside a C block comment: ASCII, no ``*/``."""
    return text.replace("*/", "* /").encode("ascii", "backslashreplace").decode("ascii")


def _schedule_header(schedule, name: str) -> str:
    """The text of :func:`write_schedule_c_header` (ASCII); ``name`` is checked there."""
    up = name.upper()
    Kt, nu, N = schedule.gains.shape
    n = len(schedule.coordinate_names)
    guard = f"{up}_H_"
    params = ", ".join(f"{k}={c_float_literal(v)}" for k, v in schedule.plant_parameters.items())
    out = [
        f"/* {_comment(name)}: ballctl gain schedule, format version {SCHEDULE_FORMAT_VERSION}, "
        f"sha256 {schedule.checksum}.",
        f" * Plant {_comment(schedule.plant_name)} ({_comment(params)}).",
        f" * {Kt} samples, dt = {c_float_literal(schedule.dt)} s, covering [{c_float_literal(schedule.times[0])}, "
        f"{c_float_literal(schedule.end_time)}) s.",
        " * Feedback (Aguendez et al. 2024, eqs. 27 and 30): du = -K[k] X, u = u0[k] + du,",
        f" * X = ({_comment(', '.join(schedule.state_names))}),",
        f" * u = ({_comment(', '.join(schedule.input_names))}),",
        f" * x0, xd0 columns = ({_comment(', '.join(schedule.coordinate_names))}).",
        " * Generated file: do not edit. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        f"#define {up}_N_SAMPLES {Kt}L",
        f"#define {up}_N_STATES {N}",
        f"#define {up}_N_INPUTS {nu}",
        f"#define {up}_N_COORDINATES {n}",
        "",
        f"static const double {name}_dt = {c_float_literal(schedule.dt)};",
        f"static const double {name}_times[{up}_N_SAMPLES] = {c_initializer(schedule.times)};",
        f"static const double {name}_gains[{up}_N_SAMPLES][{up}_N_INPUTS][{up}_N_STATES] = "
        f"{c_initializer(schedule.gains)};",
        f"static const double {name}_u0[{up}_N_SAMPLES][{up}_N_INPUTS] = {c_initializer(schedule.u0)};",
        f"static const double {name}_x0[{up}_N_SAMPLES][{up}_N_COORDINATES] = {c_initializer(schedule.x0)};",
        f"static const double {name}_xd0[{up}_N_SAMPLES][{up}_N_COORDINATES] = {c_initializer(schedule.xd0)};",
        "",
        "/* Index of the gain in force at t: the last k with times[k] <= t (zero-order hold),",
        " * or -1 when t is outside [times[0], times[N_SAMPLES-1] + dt) or NaN. */",
        f"static inline long {name}_index(double t)",
        "{",
        "    long lo = 0;",
        f"    long hi = {up}_N_SAMPLES - 1;",
        f"    if (!(t >= {name}_times[0]) || !(t < {name}_times[{up}_N_SAMPLES - 1] + {name}_dt)) {{",
        "        return -1;",
        "    }",
        "    while (lo < hi) {",
        "        long mid = lo + (hi - lo + 1) / 2;",
        f"        if ({name}_times[mid] <= t) {{",
        "            lo = mid;",
        "        } else {",
        "            hi = mid - 1;",
        "        }",
        "    }",
        "    return lo;",
        "}",
        "",
        "/* du = -K[k] X for the gain in force at t. Returns k, or -1 (du untouched) outside the schedule. */",
        f"static inline long {name}_du(double t, const double X[{up}_N_STATES], double du[{up}_N_INPUTS])",
        "{",
        f"    long k = {name}_index(t);",
        "    int i, j;",
        "    if (k < 0) {",
        "        return -1;",
        "    }",
        f"    for (i = 0; i < {up}_N_INPUTS; ++i) {{",
        "        double acc = 0.0;",
        f"        for (j = 0; j < {up}_N_STATES; ++j) {{",
        f"            acc += {name}_gains[k][i][j] * X[j];",
        "        }",
        "        du[i] = -acc;",
        "    }",
        "    return k;",
        "}",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(out)


def write_schedule_c_header(schedule, path, *, name: str = "ballctl_schedule") -> Path:
    """Write a self-contained C99 header (atomically) with a schedule as ``static const double`` arrays.

    It defines ``<name>_times``, ``<name>_gains[K][NU][N]``, ``<name>_u0``,
    ``<name>_x0``, ``<name>_xd0``, ``<name>_dt``, the sizes as macros
    ``<NAME>_N_SAMPLES`` etc., and two functions:

    * ``long <name>_index(double t)``: the gain index in force at ``t``
      (binary search, last ``times[k] <= t``), ``-1`` outside
      ``[times[0], times[K-1] + dt)``, the rule of ``GainSchedule.index_at``;
    * ``long <name>_du(double t, const double X[N], double du[NU])``:
      ``du = -K[k] X`` (eq. 27), returning ``k`` (or ``-1``, ``du``
      untouched).

    Doubles are written with ``repr``, which a correctly rounding
    compiler (gcc, clang) reads back to the same bits.

    Parameters
    ----------
    schedule : GainSchedule
        The schedule to export (gains, reference, names; its checksum goes into the header comment).
    path : str or os.PathLike
        Destination header file (``.h``).
    name : str
        C identifier prefix of the arrays and macros.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ParameterError
        If ``name`` is not a C identifier (or is a keyword).
    """
    if not isinstance(name, str) or not _C_IDENTIFIER.fullmatch(name) or name in _C_KEYWORDS:
        raise ParameterError(f"name must be a C identifier, got {name!r}")
    path = Path(path)
    atomic_write(path, _schedule_header(schedule, name).encode("ascii"))
    return path
