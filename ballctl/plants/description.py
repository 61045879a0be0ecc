r"""An internal-mass ball or planar disk described by a plain mapping (the ``[plant]`` table of a TOML file).

:func:`rolling_plant_from_mapping` builds a
:class:`~ballctl.plants.rolling_ball.RollingBall` or a
:class:`~ballctl.plants.rolling_disk.RollingDisk` and its initial state from a
mapping such as a parsed TOML table; :func:`plant_to_mapping` writes the
mapping back (a round trip), so a file can record the plant it was made for.
Keys carry their SI unit in their name; :data:`PLANT_KEYS` lists every key with
its unit, allowed values, default and meaning. Unknown keys, missing required
keys, wrong types and out-of-range values raise
:class:`~ballctl._errors.ConfigError` naming the key, its table, its unit and
the allowed range.

Format::

    [plant]
    kind = "ball"                  # or "disk"; or preset = "paper_ball" / "paper_disk" alone
    inputs = "acceleration"        # or "force" (meaning of u), default "acceleration"
    radius_m = 0.15                # shell (ball) or disk radius
    mass_kg = 0.8                  # shell or disk, without the point masses
    inertia_kgm2 = [0.006, 0.006, 0.006]   # ball: principal moments (or one number); disk: one number
    gravity_mps2 = 9.81            # default 9.81
    cm_offset_m = [0, 0, 0]        # ball: 3 numbers; disk: 2 numbers (E1, E3); default 0

    [[plant.masses]]               # one table per point mass (none: no moving mass)
    mass_kg = 0.3
    rail = "circle"                # "circle", "ellipse", "figure_eight" or "segment"
    radius_m = 0.12
    normal = [0, 0, 1]             # the rail's plane, by its normal (default [0, 1, 0])
    start_direction = [1, 0, 0]    # where theta = 0 points from center_m (optional)
    center_m = [0, 0, 0]           # default [0, 0, 0]
    theta0_rad = 0.0               # initial rail angle, default 0
    theta_dot0_rad_s = 0.0         # initial rail rate, default 0

    [[plant.masses]]
    mass_kg = 0.1
    rail = "segment"               # a magnet in a tube: parameter = arc length from start_m
    start_m = [0, -0.1, 0]
    end_m = [0, 0.1, 0]
    theta0_m = 0.1                 # in [0, |end_m - start_m|]
    theta_dot0_mps = 0.0

    [plant.initial]                # optional; default: at rest, identity attitude, contact at the origin
    quaternion = [1, 0, 0, 0]      # ball: attitude body -> spatial, scalar first, unit (to 1e-9)
    # rotation_vector_rad = [0, 0, 0.5]   # ball: the attitude as axis * angle instead of quaternion
    angular_velocity_rad_s = [0, 0, 0]    # ball: body angular velocity Omega; disk: phi_dot (one number)
    contact_m = [0, 0]             # ball only: spatial contact point (e1, e2)
    # angle_rad = 0.0              # disk only: phi

Orientation of a closed rail (circle, ellipse, figure eight): with ``n =
normal / |normal|`` and ``u = start_direction / |start_direction|`` (which must
be perpendicular to ``normal``), the rail's ``rotation`` is the matrix of
columns ``[u | n | u x n]`` (:class:`~ballctl.plants.rails.CircleRail`: the
rail lies in the plane of the first and third columns, as with
:func:`~ballctl.plants.rails.plane_rotation`). A circle is
``zeta(theta) = center_m + radius_m (cos(theta) u + sin(theta) (u x n))``:
``theta = 0`` puts the mass at ``center_m + radius_m u`` and ``theta`` turns
from ``u`` towards ``u x n`` (a right-handed turn about ``-n``). The ellipse's
``semi_axis_first_m`` and the figure eight's ``half_width_m`` lie along ``u``,
``semi_axis_third_m`` and ``half_height_m`` along ``u x n``. Without
``start_direction``, ``u`` is the body axis ``E1``, ``E2`` or ``E3`` least
aligned with ``normal`` (the first on a tie) projected onto the plane; the
defaults ``normal = [0, 1, 0]`` and ``u = E1`` give the identity rotation
(the ``E1``-``E3`` plane, the plane of the disk). A disk's rails must lie in
that plane: ``normal = [0, +-1, 0]``, ``center_m``, ``start_m`` and ``end_m``
with middle entry 0.

Every rail must stay inside the body: its farthest point over its parameter
range (a closed rail's whole curve, a segment's two ends) must be nearer to
the geometric centre than ``radius_m``. A
:class:`~ballctl.plants.rails.CallableRail` (a Python function) and an
``external_force`` (a Python callable) cannot be described in a file: build
such a plant in Python.

The whole initial state may be given instead as one vector, ``initial_state``
(length ``2n + 9`` for the ball, ``2n + 2`` for the disk; the layouts of
:class:`~ballctl.plants.rolling_ball.RollingBall` and
:class:`~ballctl.plants.rolling_disk.RollingDisk`), which excludes
``[plant.initial]`` and the masses' ``theta0``/``theta_dot0`` keys;
``initial_state`` set to None counts as absent. With a preset, ``[plant.initial]``
or ``initial_state`` change the preset's initial state (the paper's rail angles stay).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from .._errors import ConfigError, ParameterError
from .._validation import as_vector, check_finite_scalar, check_instance, short_repr
from .internal_masses import INPUT_MODES, PointMass
from .paper import paper_ball_initial_state, paper_ball_parameters, paper_disk_initial_state, paper_disk_parameters
from .rails import CircleRail, EllipseRail, FigureEightRail, Rail, SegmentRail
from .rolling_ball import RollingBall, RollingBallParameters
from .rolling_disk import RollingDisk, RollingDiskParameters

__all__ = ["PLANT_KEYS", "rolling_plant_from_mapping", "plant_to_mapping"]


class _Key(NamedTuple):
    """One key of the format: its unit ("" if dimensionless), allowed values, default and meaning."""

    unit: str
    allowed: str
    default: str
    meaning: str


_ORIENTATION = {
    "normal": _Key("", "3 numbers of nonzero length", "[0, 1, 0]",
                   "normal n of the rail's plane, body axes; the rail's rotation is [u | n | u x n]"),
    "start_direction": _Key("", "3 numbers of nonzero length, perpendicular to normal (|cos| <= 1e-9)",
                            "the body axis least aligned with normal, projected onto the plane",
                            "direction u (body axes) from center_m of the rail point at theta = 0"),
    "center_m": _Key("m", "3 numbers", "[0, 0, 0]", "centre of the rail, body axes from the geometric centre"),
}
_ANGLE_COORDINATE = {
    "theta0_rad": _Key("rad", "a finite number", "0", "initial rail angle theta"),
    "theta_dot0_rad_s": _Key("rad/s", "a finite number", "0", "initial rail rate theta_dot"),
}
_LENGTH_COORDINATE = {
    "theta0_m": _Key("m", "a number in [0, |end_m - start_m|]", "0", "initial arc length theta from start_m"),
    "theta_dot0_mps": _Key("m/s", "a finite number", "0", "initial speed theta_dot along the segment"),
}
_POSITIVE = "a number > 0"

#: Every key of the format, by table: ``PLANT_KEYS[table][key] = (unit, allowed, default, meaning)``.
#: Tables: ``"plant"``; ``"plant.masses"`` (every mass) and ``"plant.masses:<rail>"`` (the keys of one rail);
#: ``"plant.initial:ball"`` and ``"plant.initial:disk"``. A default of ``"required"`` marks a required key.
PLANT_KEYS: Mapping[str, Mapping[str, _Key]] = MappingProxyType({table: MappingProxyType(keys) for table, keys in {
    "plant": {
        "preset": _Key("", "'paper_ball' or 'paper_disk'", "none",
                       "a plant of Putkaradze & Rogers (2018) with its initial state (ball of section 7, disk of "
                       "section 6); excludes kind and the physical keys"),
        "kind": _Key("", "'ball' or 'disk'", "required without preset", "the plant described by the other keys"),
        "inputs": _Key("", "'acceleration' or 'force'", "'acceleration'",
                       "meaning of u: rail accelerations theta_ddot or generalized rail forces"),
        "radius_m": _Key("m", _POSITIVE, "required", "radius r of the ball's shell or of the disk"),
        "mass_kg": _Key("kg", _POSITIVE, "required", "mass m0 of the shell or disk without the point masses"),
        "inertia_kgm2": _Key("kg m^2", "ball: 3 principal moments (d1, d2, d3) > 0, each <= the sum of the other "
                             "two, or one number > 0 for all three; disk: one number > 0", "required",
                             "inertia of m0 about its own centre of mass (ball: along E1, E2, E3; disk: polar d2)"),
        "gravity_mps2": _Key("m/s^2", _POSITIVE, "9.81", "gravitational acceleration g"),
        "cm_offset_m": _Key("m", "ball: 3 numbers, disk: 2 numbers (E1, E3), with |cm_offset_m| < radius_m",
                            "0", "geometric centre -> centre of mass of m0, body axes"),
        "masses": _Key("", "an array of tables [[plant.masses]]", "none", "the point masses on rails"),
        "initial": _Key("", "a table [plant.initial]", "at rest, identity attitude, contact at the origin",
                        "the initial attitude and velocities of the body"),
        "initial_state": _Key("", "a vector of 2n + 9 (ball) or 2n + 2 (disk) numbers, or None", "none",
                              "the whole initial state; excludes [plant.initial] and the masses' theta0 keys"),
    },
    "plant.masses": {
        "mass_kg": _Key("kg", _POSITIVE, "required", "mass of the point mass"),
        "rail": _Key("", "'circle', 'ellipse', 'figure_eight' or 'segment'", "required",
                     "the curve the mass moves on, a rail of ballctl.plants.rails"),
    },
    "plant.masses:circle": {
        "radius_m": _Key("m", _POSITIVE, "required", "radius of the circle"),
        **_ORIENTATION, **_ANGLE_COORDINATE,
    },
    "plant.masses:ellipse": {
        "semi_axis_first_m": _Key("m", _POSITIVE, "required", "semi-axis along start_direction"),
        "semi_axis_third_m": _Key("m", _POSITIVE, "required", "semi-axis along start_direction x normal"),
        **_ORIENTATION, **_ANGLE_COORDINATE,
    },
    "plant.masses:figure_eight": {
        "half_width_m": _Key("m", _POSITIVE, "required", "half-width a along start_direction"),
        "half_height_m": _Key("m", _POSITIVE, "required",
                              "b: the lobes reach +-b/2 along start_direction x normal (FigureEightRail's b)"),
        **_ORIENTATION, **_ANGLE_COORDINATE,
    },
    "plant.masses:segment": {
        "start_m": _Key("m", "3 numbers", "required", "start of the segment (theta = 0), body axes"),
        "end_m": _Key("m", "3 numbers, not start_m", "required", "end of the segment, body axes"),
        **_LENGTH_COORDINATE,
    },
    "plant.initial:ball": {
        "quaternion": _Key("", "4 numbers, a unit quaternion (|q| = 1 within 1e-9), scalar first", "[1, 0, 0, 0]",
                           "attitude Lambda (body -> spatial); excludes rotation_vector_rad"),
        "rotation_vector_rad": _Key("rad", "3 numbers", "[0, 0, 0]",
                                    "attitude Lambda (body -> spatial) as axis * angle; excludes quaternion"),
        "angular_velocity_rad_s": _Key("rad/s", "3 numbers", "[0, 0, 0]", "body angular velocity Omega"),
        "contact_m": _Key("m", "2 numbers", "[0, 0]", "spatial (e1, e2) coordinates of the contact point"),
    },
    "plant.initial:disk": {
        "angle_rad": _Key("rad", "a finite number", "0", "angle phi from e1 to E1"),
        "angular_velocity_rad_s": _Key("rad/s", "a finite number", "0", "phi_dot"),
    },
}.items()})

_RAILS = {"circle": CircleRail, "ellipse": EllipseRail, "figure_eight": FigureEightRail, "segment": SegmentRail}
#: the size keys of each closed rail (the rail class's fields of the same names)
_DIMENSIONS = {"circle": ("radius_m",), "ellipse": ("semi_axis_first_m", "semi_axis_third_m"),
               "figure_eight": ("half_width_m", "half_height_m")}
_PRESETS = ("paper_ball", "paper_disk")
_KINDS = ("ball", "disk")
_PHYSICAL = ("radius_m", "mass_kg", "inertia_kgm2", "gravity_mps2", "cm_offset_m", "masses")
_COORDINATES = frozenset(_ANGLE_COORDINATE) | frozenset(_LENGTH_COORDINATE)
_PERPENDICULAR_TOL = 1e-9
_PLANAR_TOL = 1e-12  # RollingDiskParameters' tolerance on zeta_2
_PLANAR_SAMPLES = 257  # as RollingDiskParameters samples a rail


# ------------------------------------------------------------------ reading values
def _unit(key: _Key) -> str:
    return f" ({key.unit})" if key.unit else ""


def _bad(where: str, name: str, key: _Key, value, detail: str = "") -> ConfigError:
    return ConfigError(f"{where} {name}{_unit(key)} must be {key.allowed}{detail}; got {short_repr(value)}")


def _as_table(value, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table (a mapping of keys to values), got {type(value).__name__} "
                          f"{short_repr(value)}")
    return value


def _check_known(table: Mapping, known, where: str) -> None:
    unknown = [k for k in table if k not in known]
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)}; known keys: "
                          f"{', '.join(sorted(known))}")


def _required(table: Mapping, name: str, keys: Mapping[str, _Key], where: str):
    if name not in table:
        key = keys[name]
        raise ConfigError(f"{where} is missing the required key {name!r}{_unit(key)}: {key.allowed}; {key.meaning}")
    return table[name]


def _choice(table: Mapping, name: str, keys: Mapping[str, _Key], where: str, choices: Sequence[str],
            default: str | None = None) -> str:
    value = table[name] if name in table else default if default is not None else _required(table, name, keys, where)
    if not isinstance(value, str) or value not in choices:
        raise _bad(where, name, keys[name], value)
    return value


def _number(table: Mapping, name: str, keys: Mapping[str, _Key], where: str, default: float | None = None, *,
            positive: bool = False) -> float:
    if name not in table and default is not None:
        return float(default)
    value = _required(table, name, keys, where)
    try:
        out = check_finite_scalar(value, name, keys[name].unit)
    except (TypeError, ValueError):
        raise _bad(where, name, keys[name], value) from None
    if positive and not out > 0.0:
        raise _bad(where, name, keys[name], value)
    return out


def _vector(table: Mapping, name: str, keys: Mapping[str, _Key], where: str, size: int,
            default: Sequence[float] | None = None) -> np.ndarray:
    if name not in table and default is not None:
        return np.array(default, dtype=float)
    value = _required(table, name, keys, where)
    if isinstance(value, (int, float)):  # as_vector would read a number as a vector of length 1
        raise _bad(where, name, keys[name], value)
    try:
        return np.array(as_vector(value, name, size, unit=keys[name].unit), dtype=float)
    except (TypeError, ValueError):
        raise _bad(where, name, keys[name], value) from None


def _direction(table: Mapping, name: str, keys: Mapping[str, _Key], where: str,
               default: Sequence[float] | None = None) -> np.ndarray:
    v = _vector(table, name, keys, where, 3, default)
    scale = float(np.max(np.abs(v)))
    if not scale > 0.0:
        raise _bad(where, name, keys[name], table[name], " (a direction: zero length has none)")
    v = v / scale
    return v / np.linalg.norm(v)


def _wrapped(where: str, build, *args, **kwargs):
    """``build(*args, **kwargs)``, its ParameterError re-raised as a one-line ConfigError about ``where``."""
    try:
        return build(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {' '.join(str(exc).split())}") from None


def _child_tables(where: str) -> tuple[str, str]:
    """Names of the ``initial`` table and of the ``masses`` array below the table named ``where``."""
    match = re.fullmatch(r"(.*?)\[([^\[\]]+)\]", where)
    if match:
        prefix, inner = match.groups()
        return f"{prefix}[{inner}.initial]", f"{prefix}[[{inner}.masses]]"
    return f"{where}.initial", f"{where}.masses"


# ------------------------------------------------------------------ rails
def _plane_rotation(table: Mapping, keys: Mapping[str, _Key], where: str) -> np.ndarray:
    n = _direction(table, "normal", keys, where, default=(0.0, 1.0, 0.0))
    if "start_direction" in table:
        s = _direction(table, "start_direction", keys, where)
        cos = float(abs(s @ n))
        if cos > _PERPENDICULAR_TOL:
            raise ConfigError(f"{where} start_direction must be perpendicular to normal (|cos angle| <= "
                              f"{_PERPENDICULAR_TOL:g}, dimensionless); got |cos angle| = {cos:.3g} between "
                              f"{short_repr(table['start_direction'])} and normal {n.tolist()}")
    else:
        s = np.eye(3)[int(np.argmin(np.abs(n)))]
    u = s - (s @ n) * n
    u = u / np.linalg.norm(u)
    return np.column_stack([u, n, np.cross(u, n)])


def _rail(table: Mapping, rail: str, keys: Mapping[str, _Key], where: str) -> Rail:
    if rail == "segment":
        start = _vector(table, "start_m", keys, where, 3)
        end = _vector(table, "end_m", keys, where, 3)
        if not np.linalg.norm(end - start) > 0.0:
            raise _bad(where, "end_m", keys["end_m"], table["end_m"], f" (start_m = {start.tolist()} m)")
        return _wrapped(where, SegmentRail, start_m=start, end_m=end)
    sizes = {name: _number(table, name, keys, where, positive=True) for name in _DIMENSIONS[rail]}
    rotation = _plane_rotation(table, keys, where)
    center = _vector(table, "center_m", keys, where, 3, default=(0.0, 0.0, 0.0))
    return _wrapped(where, _RAILS[rail], **sizes, rotation=rotation, center_m=center)


def _point_mass(spec, where: str, kind: str, radius: float, plant_where: str):
    """``(PointMass, theta0, theta_dot0, has coordinates)`` of one ``[[plant.masses]]`` table."""
    table = _as_table(spec, where)
    common = PLANT_KEYS["plant.masses"]
    if isinstance(table.get("rail"), str) and table["rail"] == "callable":
        raise ConfigError(f"{where} rail = 'callable': a CallableRail is a Python function and cannot be described "
                          f"in a file; rail must be {common['rail'].allowed} (build such a plant in Python)")
    rail_name = _choice(table, "rail", common, where, tuple(_RAILS))
    keys = {**common, **PLANT_KEYS[f"plant.masses:{rail_name}"]}
    _check_known(table, keys, where)
    mass = _number(table, "mass_kg", keys, where, positive=True)
    rail = _rail(table, rail_name, keys, where)
    lo, hi = rail.parameter_range
    unit = "m" if rail_name == "segment" else "rad"
    body = "ball's shell" if kind == "ball" else "disk"
    distance = rail.max_distance_m()
    if not distance < radius:
        raise ConfigError(f"{where}: the {rail_name} rail leaves the {body}: its farthest point (theta in "
                          f"[{lo:g}, {hi:g}] {unit}) is {distance:.6g} m from the centre, must be < radius_m = "
                          f"{radius:g} m of {plant_where}")
    if kind == "disk":
        zeta, dzeta, _ = rail.evaluate(np.linspace(lo, hi, _PLANAR_SAMPLES))
        off = float(max(np.max(np.abs(zeta[:, 1])), np.max(np.abs(dzeta[:, 1]))))
        if off > _PLANAR_TOL:
            fix = ("start_m and end_m must have middle entry 0 m" if rail_name == "segment" else
                   "normal must be [0, 1, 0] or [0, -1, 0] and center_m must have middle entry 0 m")
            raise ConfigError(f"{where}: a disk's rails lie in its E1-E3 plane (|zeta_2| <= {_PLANAR_TOL:g} m): "
                              f"{fix}; got max |zeta_2| = {off:.3g} m")
    if rail_name == "segment":
        theta = _number(table, "theta0_m", keys, where, 0.0)
        if not 0.0 <= theta <= hi:
            raise _bad(where, "theta0_m", keys["theta0_m"], table["theta0_m"], f" (the segment is {hi:g} m long)")
        theta_dot = _number(table, "theta_dot0_mps", keys, where, 0.0)
    else:
        theta = _number(table, "theta0_rad", keys, where, 0.0)
        theta_dot = _number(table, "theta_dot0_rad_s", keys, where, 0.0)
    return PointMass(mass_kg=mass, rail=rail), theta, theta_dot, bool(_COORDINATES & set(table))


# ------------------------------------------------------------------ plants
def _inertia(table: Mapping, kind: str, keys: Mapping[str, _Key], where: str):
    value = _required(table, "inertia_kgm2", keys, where)
    if kind == "disk" or isinstance(value, (int, float)):
        d = _number(table, "inertia_kgm2", keys, where, positive=True)
        return d if kind == "disk" else np.full(3, d)
    d = _vector(table, "inertia_kgm2", keys, where, 3)
    if np.any(d <= 0.0) or 2.0 * np.max(d) > np.sum(d) * (1.0 + 1e-12):
        raise _bad(where, "inertia_kgm2", keys["inertia_kgm2"], value)
    return d


def _described_plant(table: Mapping, kind: str, inputs: str, where: str, masses_where: str):
    """The plant of a ``kind = ...`` table, and its masses' ``(theta0, theta_dot0, any given)``."""
    keys = PLANT_KEYS["plant"]
    radius = _number(table, "radius_m", keys, where, positive=True)
    mass = _number(table, "mass_kg", keys, where, positive=True)
    inertia = _inertia(table, kind, keys, where)
    gravity = _number(table, "gravity_mps2", keys, where, 9.81, positive=True)
    size = 3 if kind == "ball" else 2
    chi0 = _vector(table, "cm_offset_m", keys, where, size, default=np.zeros(size))
    if not np.linalg.norm(chi0) < radius:
        raise _bad(where, "cm_offset_m", keys["cm_offset_m"], table["cm_offset_m"],
                   f" (|cm_offset_m| = {np.linalg.norm(chi0):.6g} m, radius_m = {radius:g} m)")
    specs = table.get("masses", [])
    if isinstance(specs, (str, bytes, Mapping)) or not isinstance(specs, Sequence):
        raise _bad(where, "masses", keys["masses"], specs)
    rows = [_point_mass(s, f"{masses_where} #{k + 1}", kind, radius, where) for k, s in enumerate(specs)]
    point_masses = tuple(r[0] for r in rows)
    coordinates = (np.array([r[1] for r in rows], dtype=float), np.array([r[2] for r in rows], dtype=float),
                   any(r[3] for r in rows))
    if kind == "ball":
        params = _wrapped(where, RollingBallParameters, mass_kg=mass, radius_m=radius, principal_inertia_kgm2=inertia,
                          cm_offset_m=chi0, point_masses=point_masses, gravity_mps2=gravity)
        return RollingBall(params, inputs=inputs), coordinates
    params = _wrapped(where, RollingDiskParameters, mass_kg=mass, radius_m=radius, inertia_kgm2=inertia,
                      cm_offset_m=chi0, point_masses=point_masses, gravity_mps2=gravity)
    return RollingDisk(params, inputs=inputs), coordinates


def _quaternion_of_rotation_vector(v: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(v))
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(0.5 * angle)], np.sin(0.5 * angle) * v / angle])


def _body_state(table: Mapping, kind: str, where: str, default: np.ndarray) -> np.ndarray:
    """The body part of the state (ball: q, Omega, z; disk: phi, phi_dot) from ``[plant.initial]``."""
    keys = PLANT_KEYS[f"plant.initial:{kind}"]
    _check_known(table, keys, where)
    out = np.array(default, dtype=float)
    if kind == "disk":
        out[0] = _number(table, "angle_rad", keys, where, out[0])
        out[1] = _number(table, "angular_velocity_rad_s", keys, where, out[1])
        return out
    if "quaternion" in table and "rotation_vector_rad" in table:
        raise ConfigError(f"{where}: give the attitude once, as quaternion or as rotation_vector_rad, not both")
    if "quaternion" in table:
        out[0:4] = _vector(table, "quaternion", keys, where, 4)
    if "rotation_vector_rad" in table:
        out[0:4] = _quaternion_of_rotation_vector(_vector(table, "rotation_vector_rad", keys, where, 3))
    out[4:7] = _vector(table, "angular_velocity_rad_s", keys, where, 3, out[4:7])
    out[7:9] = _vector(table, "contact_m", keys, where, 2, out[7:9])
    return out


def rolling_plant_from_mapping(spec: Mapping, *,
                               where: str = "[plant]") -> tuple[RollingBall | RollingDisk, np.ndarray]:
    """Build an internal-mass ball or disk and its initial state from a mapping (a ``[plant]`` TOML table).

    The format is in the module docstring and :data:`PLANT_KEYS`.

    Parameters
    ----------
    spec : mapping
        The table: ``preset = "paper_ball"`` or ``"paper_disk"`` (the plants of
        :mod:`ballctl.plants.paper` with their initial states), or ``kind =
        "ball"`` or ``"disk"`` with the physical keys, ``[[masses]]`` and
        ``[initial]``; SI units, named in the keys.
    where : str
        Name of the table in messages; ``"[plant]"`` names the sub-tables
        ``[[plant.masses]] #k`` (counted from 1) and ``[plant.initial]``.

    Returns
    -------
    plant : RollingBall or RollingDisk
        The plant (``inputs`` as given, default ``"acceleration"``).
    x0 : ndarray, shape (n_states,)
        Its initial state, checked by ``plant.validate_state``: ball
        ``(theta (n), theta_dot (n), q (4), Omega (3), z (2))``, disk
        ``(theta (n), theta_dot (n), phi, phi_dot)``.

    Raises
    ------
    ConfigError
        On an unknown or missing key, a wrong type, a non-finite or
        out-of-range value, a rail leaving the body or an invalid initial
        state; the message names the key, its table, its unit and the allowed range.

    Examples
    --------
    >>> plant, x0 = rolling_plant_from_mapping({
    ...     "kind": "disk", "radius_m": 1.0, "mass_kg": 1.0, "inertia_kgm2": 1.0, "gravity_mps2": 1.0,
    ...     "masses": [{"mass_kg": 1.0, "rail": "circle", "radius_m": 0.5, "theta0_rad": -1.5}]})
    >>> type(plant).__name__, x0.tolist()
    ('RollingDisk', [-1.5, 0.0, 0.0, 0.0])
    """
    table = _as_table(spec, where)
    keys = PLANT_KEYS["plant"]
    _check_known(table, keys, where)
    initial_where, masses_where = _child_tables(where)
    inputs = _choice(table, "inputs", keys, where, INPUT_MODES, default="acceleration")
    if "preset" in table:
        clash = [k for k in ("kind", *_PHYSICAL) if k in table]
        if clash:
            raise ConfigError(f"{where}: preset fixes the plant, so {', '.join(clash)} cannot be given with it; "
                              f"describe your own plant with kind = 'ball' or 'disk' instead of preset")
        preset = _choice(table, "preset", keys, where, _PRESETS)
        kind = "ball" if preset == "paper_ball" else "disk"
        if kind == "ball":
            plant, x = RollingBall(paper_ball_parameters(), inputs=inputs), paper_ball_initial_state()
        else:
            plant, x = RollingDisk(paper_disk_parameters(), inputs=inputs), paper_disk_initial_state()
        rail_coordinates_given = False
    else:
        if "kind" not in table:
            raise ConfigError(f"{where} needs kind = 'ball' or 'disk' (a plant described by the other keys) or "
                              f"preset = 'paper_ball' or 'paper_disk'")
        kind = _choice(table, "kind", keys, where, _KINDS)
        plant, (theta, theta_dot, rail_coordinates_given) = _described_plant(table, kind, inputs, where,
                                                                               masses_where)
        body = np.array([1.0, 0, 0, 0, 0, 0, 0, 0, 0]) if kind == "ball" else np.zeros(2)
        x = np.concatenate([theta, theta_dot, body])
    n = plant.n_masses
    full = table.get("initial_state")
    context = initial_where
    if full is not None:
        context = f"{where} initial_state"
        if "initial" in table or rail_coordinates_given:
            raise ConfigError(f"{where}: initial_state gives the whole state; remove [{initial_where.strip('[]')}] "
                              f"and the masses' theta0/theta_dot0 keys, or remove initial_state")
        if isinstance(full, (str, bytes, Mapping, int, float)):
            raise _bad(where, "initial_state", keys["initial_state"], full)
        x = _wrapped(context, as_vector, full, "initial_state", plant.n_states)
    elif "initial" in table:
        x[2 * n:] = _body_state(_as_table(table["initial"], initial_where), kind, initial_where, x[2 * n:])
        if "quaternion" in table["initial"]:
            context = f"{initial_where} quaternion"
    x = _wrapped(context, plant.validate_state, x, "x0")
    return plant, np.array(x, dtype=float)


# ------------------------------------------------------------------ writing
def _rail_to_mapping(rail: Rail, k: int) -> dict:
    names = {cls: name for name, cls in _RAILS.items()}
    if type(rail) not in names:
        raise ParameterError(f"point_masses[{k}].rail is a {type(rail).__name__}, which a mapping cannot describe; "
                             f"rails of a file are {', '.join(c.__name__ for c in names)} (a CallableRail is a "
                             f"Python function)")
    name = names[type(rail)]
    if name == "segment":
        return {"rail": name, "start_m": rail.start_m.tolist(), "end_m": rail.end_m.tolist()}
    out = {"rail": name, **{d: float(getattr(rail, d)) for d in _DIMENSIONS[name]}}
    out.update(normal=rail.rotation[:, 1].tolist(), start_direction=rail.rotation[:, 0].tolist(),
               center_m=rail.center_m.tolist())
    return out


def plant_to_mapping(plant: RollingBall | RollingDisk, initial_state) -> dict:
    """The mapping of a ball or disk and its state that :func:`rolling_plant_from_mapping` reads back.

    Every key is written (no preset): plain floats, lists and strings, ready
    for TOML or JSON. Closed rails are written with ``normal`` and
    ``start_direction`` (the second and first columns of their rotation), so
    the round trip reproduces their rotation to rounding (1e-15), every other
    number exactly.

    Parameters
    ----------
    plant : RollingBall or RollingDisk
        The plant; its rails must be closed-form rails (circle, ellipse,
        figure eight, segment) and it must have no external force.
    initial_state : array_like, shape (n_states,)
        A state of the plant (checked by ``plant.validate_state``).

    Returns
    -------
    dict
        The ``[plant]`` table: ``kind``, ``inputs``, the physical keys,
        ``masses`` (one dict per point mass, with its rail coordinate and
        rate) and ``initial``.

    Raises
    ------
    ParameterTypeError
        If ``plant`` is not a RollingBall or RollingDisk.
    ParameterError
        If a rail or the external force cannot be described, or the state is invalid.
    """
    check_instance(plant, "plant", (RollingBall, RollingDisk))
    params = plant.params
    if params.external_force is not None:
        raise ParameterError("plant.params.external_force is a Python callable, which a mapping cannot describe; "
                             "record a plant without external force")
    x = plant.validate_state(initial_state, "initial_state")
    ball = isinstance(plant, RollingBall)
    n = plant.n_masses
    out = {"kind": "ball" if ball else "disk", "inputs": plant.inputs, "radius_m": float(params.radius_m),
           "mass_kg": float(params.mass_kg),
           "inertia_kgm2": params.principal_inertia_kgm2.tolist() if ball else float(params.inertia_kgm2),
           "gravity_mps2": float(params.gravity_mps2), "cm_offset_m": params.cm_offset_m.tolist()}
    masses = []
    for k, pm in enumerate(params.point_masses):
        row = {"mass_kg": float(pm.mass_kg), **_rail_to_mapping(pm.rail, k)}
        unit = ("m", "mps") if row["rail"] == "segment" else ("rad", "rad_s")
        row[f"theta0_{unit[0]}"] = float(x[k])
        row[f"theta_dot0_{unit[1]}"] = float(x[n + k])
        masses.append(row)
    out["masses"] = masses
    body = x[2 * n:]
    if ball:
        out["initial"] = {"quaternion": body[0:4].tolist(), "angular_velocity_rad_s": body[4:7].tolist(),
                          "contact_m": body[7:9].tolist()}
    else:
        out["initial"] = {"angle_rad": float(body[0]), "angular_velocity_rad_s": float(body[1])}
    return out
