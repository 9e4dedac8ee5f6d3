"""Pytrees: nested containers whose leaves are arrays.

Tuples, lists, dicts (keys sorted), namedtuples, ``None`` (a node with no children) and
registered classes are containers; anything else is a leaf. Every transformation flattens its
arguments and results with these functions, so registering a class here makes it work with
jit, grad and vmap.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, NamedTuple


class _NodeType(NamedTuple):
    name: str
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]]
    unflatten: Callable[[Hashable, Iterable[Any]], Any]


_registry: dict[type, _NodeType] = {}
# Types seen to be leaves (unregistered, not namedtuples), so that flattening a container of
# arrays needs no call per leaf. Registering a type removes it from here.
leaf_types: set[type] = set()


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Make instances of ``nodetype`` pytree containers.

    ``flatten_func(x) -> (children, aux_data)``; ``unflatten_func(aux_data, children) -> x``.
    ``aux_data`` must be hashable and comparable: it becomes part of jit's cache key.
    """
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _NodeType(nodetype.__qualname__, flatten_func, unflatten_func)
    leaf_types.discard(nodetype)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: use ``cls.tree_flatten`` and ``cls.tree_unflatten`` (a classmethod)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(
    cls: type | None = None,
    *,
    data_fields: Iterable[str] | None = None,
    meta_fields: Iterable[str] | None = None,
):
    """Register a dataclass as a pytree: ``data_fields`` are children, ``meta_fields`` static.

    Without explicit lists, fields declared with ``field(metadata={"static": True})`` are meta
    fields and the rest are data. Usable as a decorator with or without arguments.
    """

    def register(klass: type) -> type:
        if not dataclasses.is_dataclass(klass):
            raise TypeError(f"register_dataclass needs a dataclass, got {klass.__name__}")
        fields = [f for f in dataclasses.fields(klass) if f.init]
        if data_fields is None and meta_fields is None:
            meta = [f.name for f in fields if f.metadata.get("static", False)]
            data = [f.name for f in fields if not f.metadata.get("static", False)]
        else:
            data = list(data_fields or [])
            meta = list(meta_fields or [])
            missing = {f.name for f in fields} - set(data) - set(meta)
            if missing:
                raise ValueError(
                    f"register_dataclass({klass.__name__}): fields {sorted(missing)} are in "
                    f"neither data_fields nor meta_fields"
                )

        def flatten(x: Any) -> tuple[list[Any], tuple]:
            return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

        def unflatten(aux: tuple, children: Iterable[Any]) -> Any:
            kwargs = dict(zip(data, children))
            kwargs.update(zip(meta, aux))
            return klass(**kwargs)

        register_pytree_node(klass, flatten, unflatten)
        return klass

    return register if cls is None else register(cls)


def _dict_flatten(d: dict) -> tuple[list[Any], tuple]:
    keys = tuple(sorted(d, key=_sort_key))
    return [d[k] for k in keys], keys


def _sort_key(key: Any) -> Any:
    return (type(key).__name__, key) if not isinstance(key, str) else ("", key)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d.keys())),
    lambda keys, c: collections.OrderedDict(zip(keys, c)),
)
register_pytree_node(
    collections.defaultdict,
    lambda d: (_dict_flatten(d)[0], (d.default_factory, _dict_flatten(d)[1])),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
)


def _namedtuple_type(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class PyTreeDef:
    """The structure of a pytree: what ``tree_flatten`` returns besides the leaves.

    Treedefs with hashable auxiliary data are interned (one object per structure), so the
    caches keyed on them (jit's) compare by identity in the common case.
    """

    __slots__ = ("node", "aux", "children", "num_leaves", "_hash", "__weakref__")

    def __init__(self, node: Any, aux: Any, children: tuple[PyTreeDef, ...], num_leaves: int):
        self.node = node  # None for a leaf, else the container type
        self.aux = aux
        self.children = children
        self.num_leaves = num_leaves
        self._hash = hash((node, aux, children))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, PyTreeDef)
            and self._hash == other._hash
            and self.node is other.node
            and self.aux == other.aux
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return tree_unflatten(self, leaves)

    def __repr__(self) -> str:
        return f"PyTreeDef({self._describe()})"

    def _describe(self) -> str:
        if self.node is None:
            return "*"
        inner = ", ".join(c._describe() for c in self.children)
        if self.node is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node is list:
            return f"[{inner}]"
        if self.node is dict:
            return (
                "{"
                + ", ".join(f"{k!r}: {c._describe()}" for k, c in zip(self.aux, self.children))
                + "}"
            )
        if self.node is type(None):
            return "None"
        return f"{getattr(self.node, '__name__', self.node)}({inner})"


_LEAF = PyTreeDef(None, None, (), 1)
_interned: dict[tuple, PyTreeDef] = {}


def _treedef(node: Any, aux: Any, children: tuple[PyTreeDef, ...]) -> PyTreeDef:
    key = (node, aux, children)
    try:
        treedef = _interned.get(key)
    except TypeError:  # unhashable aux data: a fresh, uninterned treedef
        return PyTreeDef(node, aux, children, sum([c.num_leaves for c in children]))
    if treedef is None:
        treedef = PyTreeDef(node, aux, children, sum([c.num_leaves for c in children]))
        if len(_interned) < 100_000:  # a bound, in case a program makes structures endlessly
            _interned[key] = treedef
    return treedef


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """Flatten ``tree`` into its leaves (left to right) and its structure."""
    leaves: list[Any] = []
    if is_leaf is None:
        treedef = _flatten_fast(tree, leaves)
    else:
        treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _flatten_fast(node: Any, leaves: list[Any]) -> PyTreeDef:
    """``_flatten`` without ``is_leaf``, with the builtin containers handled inline (hot path)."""
    node_type = type(node)
    if node_type in leaf_types:
        leaves.append(node)
        return _LEAF
    if node_type is tuple or node_type is list:
        return _treedef(node_type, None, _flatten_children(node, leaves))
    if node_type is dict:
        keys = tuple(sorted(node, key=_sort_key)) if len(node) > 1 else tuple(node)
        return _treedef(dict, keys, _flatten_children([node[k] for k in keys], leaves))
    entry = _registry.get(node_type)
    if entry is None:
        if _namedtuple_type(node):
            return _treedef(node_type, None, _flatten_children(node, leaves))
        leaf_types.add(node_type)
        leaves.append(node)
        return _LEAF
    child_values, aux = entry.flatten(node)
    return _treedef(node_type, aux, _flatten_children(child_values, leaves))


def _flatten_children(values: Iterable[Any], leaves: list[Any]) -> tuple[PyTreeDef, ...]:
    children = []
    for value in values:
        if type(value) in leaf_types:
            leaves.append(value)
            children.append(_LEAF)
        else:
            children.append(_flatten_fast(value, leaves))
    return tuple(children)


def _flatten(node: Any, leaves: list[Any], is_leaf: Callable[[Any], bool]) -> PyTreeDef:
    if is_leaf(node):
        leaves.append(node)
        return _LEAF
    node_type = type(node)
    entry = _registry.get(node_type)
    if entry is None:
        if _namedtuple_type(node):
            return _treedef(node_type, None, tuple([_flatten(c, leaves, is_leaf) for c in node]))
        leaves.append(node)
        return _LEAF
    child_values, aux = entry.flatten(node)
    return _treedef(node_type, aux, tuple([_flatten(c, leaves, is_leaf) for c in child_values]))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    if treedef is _LEAF:
        (leaf,) = leaves
        return leaf
    iterator = iter(leaves)
    try:
        result = _unflatten(treedef, iterator)
    except StopIteration:
        raise ValueError(f"too few leaves for {treedef}") from None
    for extra in iterator:
        raise ValueError(f"too many leaves for {treedef} (extra: {extra!r})")
    return result


def _unflatten(treedef: PyTreeDef, leaves: Iterator[Any]) -> Any:
    node = treedef.node
    if node is None:
        return next(leaves)
    children = [next(leaves) if c is _LEAF else _unflatten(c, leaves) for c in treedef.children]
    if node is tuple:
        return tuple(children)
    if node is list:
        return children
    entry = _registry.get(node)
    if entry is None:  # a namedtuple
        return node(*children)
    return entry.unflatten(treedef.aux, children)


def node_unflattener(node: type) -> Callable[[Any, list[Any]], Any]:
    """How nodes of type ``node`` are rebuilt: ``fn(aux_data, children)``."""
    entry = _registry.get(node)
    if entry is None:  # a namedtuple
        return lambda _, children: node(*children)
    return entry.unflatten


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Apply ``f`` to corresponding leaves of ``tree`` and of each tree in ``rest``."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(treedef, r, i + 1) for i, r in enumerate(rest)]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def _flatten_up_to(treedef: PyTreeDef, tree: Any, position: int) -> list[Any]:
    leaves, other = tree_flatten(tree, is_leaf=None)
    if other == treedef:
        return leaves
    flat: list[Any] = []
    _collect_up_to(treedef, tree, flat, position)
    return flat


def _collect_up_to(treedef: PyTreeDef, tree: Any, out: list[Any], position: int) -> None:
    if treedef.node is None:
        out.append(tree)
        return
    entry = _registry.get(treedef.node)
    if type(tree) is not treedef.node:
        raise ValueError(
            f"tree_map: tree #{position} has a {type(tree).__name__} where the first tree has "
            f"a {getattr(treedef.node, '__name__', treedef.node)}"
        )
    if entry is None:
        children, aux = list(tree), None
    else:
        children, aux = entry.flatten(tree)
        children = list(children)
    if aux != treedef.aux or len(children) != len(treedef.children):
        raise ValueError(f"tree_map: tree #{position} does not match the structure {treedef}")
    for child_def, child in zip(treedef.children, children):
        _collect_up_to(child_def, child, out, position)


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, *initializer: Any) -> Any:
    return functools.reduce(function, tree_leaves(tree), *initializer)


def tree_all(tree: Any) -> bool:
    return all(tree_leaves(tree))


def all_leaves(iterable: Iterable[Any]) -> bool:
    return all(tree_structure(x) == _LEAF for x in iterable)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node is None


def leaf_treedef() -> PyTreeDef:
    return _LEAF


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are its children, so it
    can be passed through jit and other transformations."""

    def __new__(cls, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Partial:
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
