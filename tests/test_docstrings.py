"""Public API documentation is present (python-control's docstrings_test in spirit)."""

import importlib
import inspect
import pkgutil

import pytest

import ballctl

MODULES = sorted(m.name for m in pkgutil.walk_packages(ballctl.__path__, "ballctl.")
                 if not m.name.split(".")[-1].startswith("_"))


def public_objects():
    for name in MODULES:
        module = importlib.import_module(name)
        assert module.__doc__, f"{name} has no module docstring"
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name:
                yield f"{name}.{attr}", obj


@pytest.mark.parametrize("qualname, obj", list(public_objects()), ids=lambda v: v if isinstance(v, str) else "")
def test_public_objects_are_documented(qualname, obj):
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20, f"{qualname} lacks a docstring"
    if inspect.isfunction(obj):
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
        if len(params) >= 2:
            assert "Parameters" in doc or all(p in doc for p in params), \
                f"{qualname} documents neither a Parameters section nor its arguments"


def test_every_module_declares_all():
    for name in MODULES:
        module = importlib.import_module(name)
        if name in ("ballctl.cli",):
            continue
        assert hasattr(module, "__all__"), f"{name} has no __all__"
