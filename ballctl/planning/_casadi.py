"""Lazy import of CasADi (the ``optimal`` extra) with an error that names the extra."""

from __future__ import annotations

from .._errors import MissingExtraError


def require_casadi():
    """Return the ``casadi`` module, or raise :class:`MissingExtraError` naming ``ballctl[optimal]``."""
    try:
        import casadi
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in the tests
        raise MissingExtraError(
            "trajectory optimization needs CasADi (with its bundled IPOPT): install the optional extra with "
            "`pip install ballctl[optimal]` (casadi>=3.6)") from exc
    try:
        casadi.GlobalOptions.setNumpyMode(-1)  # keep legacy numpy interop silent (we never mix them)
    except AttributeError:  # older casadi
        pass
    return casadi
