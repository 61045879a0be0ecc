"""Public API documentation, checked with numpydoc's validator (python-control's docstrings_test in spirit).

Every public function, class and method (names in a public module's ``__all__``, and the methods those
classes define) has a docstring, and every parameter of its signature is documented in it (numpydoc
errors PR01 "parameter not documented", PR02 "unknown parameter documented", GL08 "no docstring").
Dataclass fields count as documented in an ``Attributes`` section. A method without a docstring that
implements a documented method of a base class (the plant contract) is documented there.
"""

import importlib
import inspect
import pkgutil
import dataclasses

import pytest
from numpydoc.docscrape import NumpyDocString
from numpydoc.validate import validate

import ballctl

MODULES = sorted(m.name for m in pkgutil.walk_packages(ballctl.__path__, "ballctl.")
                 if not any(part.startswith("_") for part in m.name.split(".")))
CHECKED = ("PR01", "PR02", "GL08")


def _documented_by_base(cls, name) -> bool:
    return any(getattr(getattr(base, name, None), "__doc__", None) for base in cls.__mro__[1:])


def public_objects():
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or obj.__module__ != name:
                continue
            yield f"{name}.{attr}", obj, None
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for meth, value in vars(obj).items():
                    if meth.startswith("_") and meth != "__call__":
                        continue
                    func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                    if not inspect.isfunction(func):
                        continue
                    if func.__doc__ is None and _documented_by_base(obj, meth):
                        continue
                    yield f"{name}.{attr}.{meth}", func, obj


OBJECTS = list(public_objects())


def _problems(qualname, obj, owner):
    result = validate(qualname)
    errors = [(code, msg) for code, msg in result["errors"] if code in CHECKED]
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        errors = [(c, m) for c, m in errors if c != "PR01"]   # a Protocol's signature is typing's (*args, **kwargs)
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        documented = {p.name.strip("*") for p in NumpyDocString(inspect.getdoc(obj) or "")["Attributes"]}
        documented |= {n.strip() for p in NumpyDocString(inspect.getdoc(obj) or "")["Attributes"]
                       for n in p.name.split(",")}
        missing = [f.name for f in dataclasses.fields(obj) if f.init and f.name not in documented]
        errors = [(c, m) for c, m in errors if c != "PR01"]
        if missing:
            errors.append(("PR01", f"dataclass fields not documented under Attributes: {missing}"))
    return errors


def test_the_check_sees_undocumented_parameters():
    """The validator flags what this test is for (a function defined here, outside the package)."""
    res = validate(f"{__name__}._undocumented")
    assert any(code == "PR01" for code, _ in res["errors"])


def _undocumented(first, second):
    """A function whose parameters are not documented.

    Returns
    -------
    None
    """


@pytest.mark.parametrize("qualname, obj, owner", OBJECTS, ids=[q for q, _, _ in OBJECTS])
def test_public_objects_are_documented(qualname, obj, owner):
    problems = _problems(qualname, obj, owner)
    assert not problems, f"{qualname}: " + "; ".join(f"{c} {m}" for c, m in problems)


def test_every_module_has_a_docstring_and_declares_all():
    for name in MODULES:
        module = importlib.import_module(name)
        assert module.__doc__, f"{name} has no module docstring"
        assert hasattr(module, "__all__"), f"{name} has no __all__"
