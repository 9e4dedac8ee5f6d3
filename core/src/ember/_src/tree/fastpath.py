"""Straight-line code for one pytree structure, for jit's per-call hot path.

Flattening a pytree in Python costs a function call per node. A jitted function is usually
called again and again with the same structure, so for a known ``PyTreeDef`` we generate
(once) a function without calls or loops:

- ``leaf_extractor(treedef)(tree)`` returns the leaves of ``tree`` if it has exactly that
  structure (checking every container's type, length and keys, and that every leaf is of a
  type seen to be a leaf), else ``None``, after which the caller flattens generically;
- ``builder(treedef)(leaves)`` rebuilds the pytree, like ``tree_unflatten``.

Extractors cover the builtin containers (tuple, list, dict, None); other structures get none.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ember._src.tree.util import PyTreeDef, leaf_types, node_unflattener

_extractors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_builders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_EXTRACTOR = object()


class _Codegen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.counter = 0

    def name(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        name = self.name("c")
        self.consts[name] = value
        return name

    def compile(self, source: str, fn_name: str) -> Callable[..., Any]:
        namespace = dict(self.consts)
        exec(compile(source, f"<pytree {fn_name}>", "exec"), namespace)
        return namespace[fn_name]


class _UnsupportedError(Exception):
    pass


def leaf_extractor(treedef: PyTreeDef) -> Callable[[Any], list[Any] | None] | None:
    """A guarded leaf extractor for ``treedef``, or None if its structure has no fast path."""
    extractor = _extractors.get(treedef)
    if extractor is None:
        extractor = _make_extractor(treedef)
        _extractors[treedef] = extractor
    return None if extractor is _NO_EXTRACTOR else extractor


def _make_extractor(treedef: PyTreeDef) -> Any:
    gen = _Codegen()
    gen.consts["leaf_types"] = leaf_types
    leaves: list[str] = []
    try:
        _emit_match(gen, treedef, "tree", leaves, indent="    ")
    except _UnsupportedError:
        return _NO_EXTRACTOR
    source = "def extract(tree):\n" + "\n".join(gen.lines) + f"\n    return [{', '.join(leaves)}]\n"
    return gen.compile(source, "extract")


def _emit_match(gen: _Codegen, treedef: PyTreeDef, var: str, leaves: list[str], indent: str):
    node = treedef.node
    lines = gen.lines
    if node is None:
        lines.append(f"{indent}if type({var}) not in leaf_types: return None")
        leaves.append(var)
        return
    if node is type(None):
        lines.append(f"{indent}if {var} is not None: return None")
        return
    children = [gen.name() for _ in treedef.subtrees]
    if node is tuple or node is list:
        kind = "tuple" if node is tuple else "list"
        n = len(children)
        lines.append(f"{indent}if type({var}) is not {kind} or len({var}) != {n}: return None")
        if children:
            lines.append(f"{indent}{', '.join(children)}{',' if n == 1 else ''} = {var}")
    elif node is dict:
        n = len(children)
        lines.append(f"{indent}if type({var}) is not dict or len({var}) != {n}: return None")
        missing = gen.const(object())
        for key, child in zip(treedef.aux, children):
            lines.append(f"{indent}{child} = {var}.get({gen.const(key)}, {missing})")
            lines.append(f"{indent}if {child} is {missing}: return None")
    else:
        raise _UnsupportedError
    for child_def, child in zip(treedef.subtrees, children):
        _emit_match(gen, child_def, child, leaves, indent)


def builder(treedef: PyTreeDef) -> Callable[[list[Any]], Any]:
    """A function rebuilding a pytree of structure ``treedef`` from its leaves."""
    build = _builders.get(treedef)
    if build is None:
        gen = _Codegen()
        expression = _emit_build(gen, treedef, iter(range(treedef.num_leaves)))
        build = gen.compile(f"def build(leaves):\n    return {expression}\n", "build")
        _builders[treedef] = build
    return build


def _emit_build(gen: _Codegen, treedef: PyTreeDef, positions: Any) -> str:
    node = treedef.node
    if node is None:
        return f"leaves[{next(positions)}]"
    parts = [_emit_build(gen, child, positions) for child in treedef.subtrees]
    inner = ", ".join(parts)
    if node is tuple:
        return f"({inner}{',' if len(parts) == 1 else ''})"
    if node is list:
        return f"[{inner}]"
    if node is type(None):
        return "None"
    if node is dict:
        items = ", ".join(f"{gen.const(k)}: {p}" for k, p in zip(treedef.aux, parts))
        return "{" + items + "}"
    unflatten = gen.const(node_unflattener(node))
    return f"{unflatten}({gen.const(treedef.aux)}, [{inner}])"
