"""Pytree structures as JSON, for the export format: no pickle, only named node kinds.

A structure is written as nested lists: ``["leaf"]``, ``["none"]``, ``["tuple", children]``,
``["list", children]``, ``["dict", keys, children]`` (string keys) and, for a custom node
(a type registered with ``tree_util.register_pytree_node``, a dataclass, a namedtuple),
``["custom", serialized_name, auxdata, children]``, ``auxdata`` being the base64 of the bytes
its ``serialize_auxdata`` wrote.

A custom node is written and read only through its serialisation registration
(``register_pytree_node_serialization``, ``register_namedtuple_serialization``): the name
stands for the Python type, which the file cannot carry, and the registration says how to
turn the node's aux data into bytes and back. The reader must register the same name.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ember._src import errors
from ember._src.tree.util import PyTreeDef, leaf_treedef

_KINDS = {tuple: "tuple", list: "list", dict: "dict", type(None): "none"}
_TYPES = {kind: node for node, kind in _KINDS.items()}

T = TypeVar("T")


class _Serialization(NamedTuple):
    nodetype: type
    serialized_name: str
    serialize_auxdata: Callable[[Any], bytes]
    deserialize_auxdata: Callable[[bytes], Any]


# node type -> how to write it; serialized name -> how to read it.
_by_type: dict[type, _Serialization] = {}
_by_name: dict[str, _Serialization] = {}


def register_pytree_node_serialization(
    nodetype: type[T],
    *,
    serialized_name: str,
    serialize_auxdata: Callable[[Any], bytes],
    deserialize_auxdata: Callable[[bytes], Any],
) -> type[T]:
    """Let exported functions take and return ``nodetype`` (a registered pytree node): it is
    written as ``serialized_name`` with its aux data as ``serialize_auxdata(aux) -> bytes``,
    and read back with ``deserialize_auxdata(bytes) -> aux``. Returns ``nodetype``."""
    if not isinstance(nodetype, type):
        raise TypeError(f"nodetype must be a type, got {nodetype!r}")
    if not isinstance(serialized_name, str) or not serialized_name:
        raise ValueError(f"serialized_name must be a non-empty string, got {serialized_name!r}")
    if serialized_name in _KINDS.values() or serialized_name in ("leaf", "custom"):
        raise ValueError(f"serialized_name {serialized_name!r} is reserved for built-in nodes")
    if not callable(serialize_auxdata) or not callable(deserialize_auxdata):
        raise TypeError("serialize_auxdata and deserialize_auxdata must be callables")
    if nodetype in _by_type:
        raise ValueError(
            f"duplicate serialization registration for the type {nodetype.__qualname__} "
            f"(registered as {_by_type[nodetype].serialized_name!r})"
        )
    if serialized_name in _by_name:
        raise ValueError(
            f"duplicate serialization registration for the serialized name {serialized_name!r} "
            f"(registered for {_by_name[serialized_name].nodetype.__qualname__})"
        )
    entry = _Serialization(nodetype, serialized_name, serialize_auxdata, deserialize_auxdata)
    _by_type[nodetype] = entry
    _by_name[serialized_name] = entry
    return nodetype


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str) -> type[T]:
    """Let exported functions take and return the namedtuple class ``nodetype``, written as
    ``serialized_name``; its field names are written too, and must match when read back."""
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)) or not hasattr(
        nodetype, "_fields"
    ):
        raise ValueError(f"cannot register {nodetype!r} as a namedtuple: it is not one")
    fields = ",".join(nodetype._fields)

    def serialize_auxdata(aux: Any) -> bytes:
        del aux  # a namedtuple's aux data is None: its type says everything
        return fields.encode()

    def deserialize_auxdata(data: bytes) -> None:
        if data.decode() != fields:
            raise errors.ExportError(
                f"the namedtuple {serialized_name!r} was exported with fields "
                f"({data.decode()}), but {nodetype.__qualname__} has ({fields})"
            )
        return None

    return register_pytree_node_serialization(
        nodetype,
        serialized_name=serialized_name,
        serialize_auxdata=serialize_auxdata,
        deserialize_auxdata=deserialize_auxdata,
    )


def encode(treedef: PyTreeDef) -> list[Any]:
    node = treedef.node
    if node is None:
        return ["leaf"]
    children = [encode(c) for c in treedef.subtrees]
    kind = _KINDS.get(node)
    if kind is None:
        return _encode_custom(treedef, children)
    if kind == "none":
        return ["none"]
    if kind == "dict":
        keys = list(treedef.aux)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"ember.export serialises dicts with string keys only, got {keys}")
        return ["dict", keys, children]
    return [kind, children]


def _encode_custom(treedef: PyTreeDef, children: list[Any]) -> list[Any]:
    entry = _by_type.get(treedef.node)
    name = treedef.node.__qualname__
    if entry is None:
        raise TypeError(
            f"ember.export cannot serialise the pytree node type {name}: register it with "
            f"ember.export.register_pytree_node_serialization (or, for a namedtuple, "
            f"register_namedtuple_serialization)"
        )
    data = entry.serialize_auxdata(treedef.aux)
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(
            f"serialize_auxdata of {name} (registered as {entry.serialized_name!r}) must return "
            f"bytes, got {type(data).__name__}"
        )
    return ["custom", entry.serialized_name, base64.b64encode(bytes(data)).decode(), children]


def decode(data: Any) -> PyTreeDef:
    """The structure ``encode`` wrote; ``ExportError`` if ``data`` is not one."""
    if not isinstance(data, list) or not data or data[0] not in ("leaf", "custom", *_TYPES):
        raise errors.ExportError(f"bad metadata: {data!r} is not a pytree structure")
    kind = data[0]
    if kind == "leaf":
        return leaf_treedef()
    if kind == "none":
        return PyTreeDef.from_node_data_and_children(None, (type(None), None), [])
    if kind == "custom":
        return _decode_custom(data)
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


def _decode_custom(data: list[Any]) -> PyTreeDef:
    if len(data) != 4 or not all(isinstance(x, t) for x, t in zip(data[1:], (str, str, list))):
        raise errors.ExportError(f"bad metadata: {data!r} is not a custom node structure")
    _, name, encoded, children = data
    entry = _by_name.get(name)
    if entry is None:
        raise errors.ExportError(
            f"the exported structure has a custom pytree node serialized as {name!r}, which is "
            f"not registered: call ember.export.register_pytree_node_serialization (or "
            f"register_namedtuple_serialization) with serialized_name={name!r} before "
            f"deserializing"
        )
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise errors.ExportError(f"bad metadata: the aux data of {name!r} is not base64") from None
    aux = entry.deserialize_auxdata(raw)
    node_data = (entry.nodetype, aux)
    return PyTreeDef.from_node_data_and_children(None, node_data, [decode(c) for c in children])
