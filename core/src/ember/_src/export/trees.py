"""Pytree structures as JSON, for the export format: no pickle, only named node kinds.

A structure is written as nested lists: ``["leaf"]``, ``["none"]``, ``["tuple", children]``,
``["list", children]`` and ``["dict", keys, children]`` (string keys). These are the
containers an exported function may take and return; a custom pytree node has no portable
name yet, so exporting a function over one raises a ``TypeError`` that says so.
"""

from __future__ import annotations

from typing import Any

from ember._src import errors
from ember._src.tree.util import PyTreeDef, leaf_treedef

_KINDS = {tuple: "tuple", list: "list", dict: "dict", type(None): "none"}
_TYPES = {kind: node for node, kind in _KINDS.items()}


def encode(treedef: PyTreeDef) -> list[Any]:
    node = treedef.node
    if node is None:
        return ["leaf"]
    kind = _KINDS.get(node)
    if kind is None:
        raise TypeError(
            f"ember.export cannot serialise the pytree node type {node.__qualname__}: exported "
            f"functions take and return tuples, lists, dicts with string keys, None and arrays"
        )
    children = [encode(c) for c in treedef.subtrees]
    if kind == "none":
        return ["none"]
    if kind == "dict":
        keys = list(treedef.aux)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"ember.export serialises dicts with string keys only, got {keys}")
        return ["dict", keys, children]
    return [kind, children]


def decode(data: Any) -> PyTreeDef:
    """The structure ``encode`` wrote; ``ExportError`` if ``data`` is not one."""
    if not isinstance(data, list) or not data or data[0] not in ("leaf", *_TYPES):
        raise errors.ExportError(f"bad metadata: {data!r} is not a pytree structure")
    kind = data[0]
    if kind == "leaf":
        return leaf_treedef()
    if kind == "none":
        return PyTreeDef.from_node_data_and_children(None, (type(None), None), [])
    if kind == "dict":
        if len(data) != 3 or not isinstance(data[1], list) or not isinstance(data[2], list):
            raise errors.ExportError(f"bad metadata: {data!r} is not a dict structure")
        keys, children = data[1], data[2]
        if len(keys) != len(children) or not all(isinstance(k, str) for k in keys):
            raise errors.ExportError(f"bad metadata: dict keys {keys!r} do not fit its children")
        aux: Any = tuple(keys)
    else:
        if len(data) != 2 or not isinstance(data[1], list):
            raise errors.ExportError(f"bad metadata: {data!r} is not a {kind} structure")
        children, aux = data[1], None
    node_data = (_TYPES[kind], list(aux) if kind == "dict" else aux)
    return PyTreeDef.from_node_data_and_children(None, node_data, [decode(c) for c in children])
