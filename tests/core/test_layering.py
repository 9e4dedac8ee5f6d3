"""The core's modules import only downward, and never inside functions.

The layers are DESIGN.md's chain, lowest first; a module imports only from its own layer or
lower ones:

    foundation <- core <- ir <- rules <- interpreters <- lowering <- runtime <- plugin
    <- execution <- primitives <- transforms <- lax <- numpy <- libraries

The reference backend is a plugin; the libraries are random, nn, scipy, image, distributed
and the rest of what users import above ember.numpy; ``assembly``, which wires the few calls
up the chain, sits at the top.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2] / "core" / "src" / "ember" / "_src"

LAYERS = [
    ["errors", "config", "dtypes", "source_info", "traceback_filter", "tree"],  # foundation
    ["core", "state_types"],
    ["ir"],
    ["rules"],
    ["interpreters"],
    ["lowering"],
    ["runtime"],
    ["plugin", "reference"],
    ["execution"],
    ["primitives"],
    ["transforms"],
    ["lax"],
    ["numpy"],
    [
        "random",
        "nn",
        "scipy",
        "image",
        "distributed",
        "callback",
        "checkify",
        "pallas",
        "export",
        "profiler",
        "test_util",
        "example_libraries",
        "assembly",
        "topologies",
        "ode",
        "ffi",
    ],
]


def layer_of(module: str) -> int:
    best, rank = "", None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, rank = name, index
    if rank is None:
        raise AssertionError(f"ember._src.{module} is in no layer: add it to LAYERS")
    return rank


def modules() -> list[tuple[str, pathlib.Path]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            continue
        found.append((".".join(parts), path))
    return found


def imported(tree: ast.AST) -> list[tuple[str, int]]:
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.module.startswith("ember._src"):
            if node.module == "ember._src":
                names += [(alias.name, node.lineno) for alias in node.names]
            else:
                names.append((node.module.removeprefix("ember._src."), node.lineno))
    return names


@pytest.mark.parametrize("module,path", modules(), ids=lambda m: str(m))
def test_imports_point_downward(module, path):
    tree = ast.parse(path.read_text())
    own = layer_of(module)
    upward = [
        f"line {line}: imports {target} (layer {layer_of(target)})"
        for target, line in imported(tree)
        if target and layer_of(target) > own
    ]
    assert not upward, f"{module} (layer {own}) imports upward: {upward}"


@pytest.mark.parametrize("module,path", modules(), ids=lambda m: str(m))
def test_no_imports_inside_functions(module, path):
    tree = ast.parse(path.read_text())
    local = [
        f"line {inner.lineno}"
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(fn)
        if isinstance(inner, (ast.Import, ast.ImportFrom))
    ]
    assert not local, f"{module} imports inside functions at {local}"
