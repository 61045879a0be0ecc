"""The import layers of docs/architecture.md hold in the code.

Walks every module of ``ballctl`` (its source, with ``ast``: imports inside
functions count too) and fails on an import of a higher layer or of another
module's private (``_name``) object. A new module must be given a layer here
and in ``docs/architecture.md``.
"""

import ast
import re
import pathlib

import pytest

import ballctl

ROOT = pathlib.Path(ballctl.__file__).parent

#: layer of every module, by longest matching prefix; the same table as docs/architecture.md
LAYERS = {
    # 0: utilities
    "ballctl._errors": 0, "ballctl.errors": 0, "ballctl._validation": 0, "ballctl._paths": 0, "ballctl._guards": 0,
    "ballctl._derivatives": 0, "ballctl._quaternion": 0, "ballctl._io": 0, "ballctl._linalg": 0, "ballctl._jit": 0,
    # 1: contracts, linear time-varying mathematics, plain descriptions of hardware, the loop's step kernels
    "ballctl.system": 1, "ballctl.ode": 1, "ballctl.linear.ltv": 1, "ballctl.hardware": 1,
    "ballctl.simulation.loop_step": 1,
    # 2: plants
    "ballctl.plants": 2,
    # 3: plant-level simulation, references, linear models along a reference, the compiled loop, gain files, figures
    "ballctl.simulate": 3, "ballctl.references": 3, "ballctl.linear": 3, "ballctl.simulation.engine": 3,
    "ballctl.simulation.arrays": 3, "ballctl.simulation.component": 3,
    "ballctl.figures": 3,
    "ballctl.schedule": 4,
    # 4: control design
    "ballctl.design": 4,
    # 5: simulation above the plants: the closed loop, controller components, Monte Carlo, verification
    "ballctl.simulation": 5,
    # 6: the ball-plate application and deployment
    "ballctl.ball_plate": 6, "ballctl.deploy": 6,
    # 7: planning and studies above the core
    "ballctl.studies": 7, "ballctl.planning": 7, "ballctl.ball_plate.plan_tracking": 7,
    # 8: the command line and the package namespace
    "ballctl.cli": 8, "ballctl": 8,
}


def layer_of(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len, default=None)
    if best is None:
        raise KeyError(f"{module} has no layer: add it to LAYERS and to docs/architecture.md")
    return LAYERS[best]


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports_in(source: str, module: str, is_package: bool) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for every ballctl import in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("ballctl"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    out.append((sub, None, node.lineno))
                else:
                    out.append((target, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((a.name, None, node.lineno) for a in node.names if a.name.startswith("ballctl"))
    return out


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Upward and private cross-module imports in ``source`` of ``module``."""
    mine = layer_of(module)
    problems = []
    for target, name, line in imports_in(source, module, is_package):
        if layer_of(target) > mine:
            problems.append(f"line {line}: {module} (layer {mine}) imports {target} (layer {layer_of(target)})")
        if name is not None and name.startswith("_") and target != module:
            problems.append(f"line {line}: {module} imports the private {target}.{name}")
    return problems


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_and_stay_public(module):
    path = MODULES[module]
    problems = violations(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
    assert not problems, "\n".join(problems)


def test_the_walk_sees_violations():
    """The checker itself: upward, private and function-local imports in a made-up plant module."""
    source = ("from ..design.tracking import TrackingController\n"
              "from .ball_plate import _cs\n"
              "def f():\n    import ballctl.cli\n")
    problems = violations(source, "ballctl.plants.made_up")
    assert len(problems) == 3, problems
    assert "imports ballctl.design.tracking (layer 4)" in problems[0]
    assert "private ballctl.plants.ball_plate._cs" in problems[1]
    assert violations("from .ball_plate import BallPlate\nfrom .._errors import BallctlError\n",
                      "ballctl.plants.made_up") == []


def test_layer_table_matches_the_document():
    doc = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for prefix, layer in LAYERS.items():
        assert f"`{prefix}`" in doc, f"{prefix} is not in docs/architecture.md"
    for layer in set(LAYERS.values()):
        assert f"| {layer} |" in doc


#: the generic core: what it says holds for any plant (its modules name no plant and no ball-plate quantity)
GENERIC_CORE = ("ballctl._", "ballctl.system", "ballctl.ode", "ballctl.hardware", "ballctl.simulate",
                "ballctl.linear", "ballctl.design", "ballctl.simulation", "ballctl.schedule")

#: plant classes, plant modules and ball-plate quantities (code, strings and imports; docstrings may cite them)
PLANT_NAMES = re.compile(r"ball_plate|BallPlate|ServoPlate|MovingPlate|RollingBall|RollingDisk|rolling_ball|"
                         r"rolling_disk|contact_[xy]|RigProfile|\bplate\b|\bservo\b")


def plant_names_in(source: str) -> list[str]:
    """``"line N: name"`` for every plant or ball-plate name in the code of ``source`` (docstrings excepted)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.ImportFrom):
            text = " ".join([node.module or ""] + [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            text = " ".join(a.name for a in node.names)
        else:
            continue
        found += [f"line {node.lineno}: {m}" for m in PLANT_NAMES.findall(text)]
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(GENERIC_CORE)))
def test_the_generic_core_names_no_plant(module):
    problems = plant_names_in(MODULES[module].read_text(encoding="utf-8"))
    assert not problems, f"{module} names a plant or a ball-plate quantity:\n" + "\n".join(sorted(set(problems)))


def test_the_plant_name_check_can_fail():
    """The checker itself: a plant class, a ball-plate coordinate and a plant import are found; a docstring is not."""
    source = ('"""Mentions BallPlate in prose."""\nfrom ..plants.ball_plate import BallPlate\n'
              'idx = names.index("contact_x")\n')
    found = plant_names_in(source)
    assert any("ball_plate" in f for f in found) and any("contact_x" in f for f in found)
    assert not any(f.startswith("line 1:") for f in found)
