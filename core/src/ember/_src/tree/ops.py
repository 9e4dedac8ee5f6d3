"""Pytree operations built on flattening: reductions, transposition, prefix broadcasting,
``Partial`` and the registry object."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember._src.tree import util as tu
from ember._src.tree.util import (
    PyTreeDef,
    flatten_up_to,
    tree_flatten,
    tree_leaves,
    tree_structure,
)


class Unspecified:
    """The default of an optional argument that may legitimately be None."""

    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED = Unspecified()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _UNSPECIFIED,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``functools.reduce`` over the leaves of ``tree``, left to right."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = _UNSPECIFIED,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Reduce the leaves of ``tree`` with an associative ``operation`` as a balanced tree of
    calls (depth log2 of the number of leaves, not linear)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _UNSPECIFIED:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return _reduce_balanced(operation, leaves)


def _reduce_balanced(operation: Callable[[Any, Any], Any], items: Sequence[Any]) -> Any:
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    return operation(
        _reduce_balanced(operation, items[:middle]), _reduce_balanced(operation, items[middle:])
    )


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of ``tree`` is truthy."""
    return all(tree_leaves(tree, is_leaf))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every item of ``iterable`` is a leaf (``None`` is a node, not a leaf)."""
    items = list(iterable)
    if is_leaf is None:
        return all(tree_structure(x) is tu._LEAF for x in items)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turn a tree of structure ``outer`` of trees of structure ``inner`` into a tree of
    structure ``inner`` of trees of structure ``outer``. ``inner`` None: taken from the first
    of the inner trees."""
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_structure(first)
    leaves, treedef = tree_flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    width = inner_treedef.num_leaves
    rows = [leaves[i * width : (i + 1) * width] for i in range(outer_treedef.num_leaves)]
    columns = [outer_treedef.unflatten(column) for column in zip(*rows)] if rows else []
    if not rows:  # an empty outer tree: every inner position holds an empty outer tree
        columns = [outer_treedef.unflatten([]) for _ in range(width)]
    return inner_treedef.unflatten(columns)


def tree_broadcast(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``full_tree``'s structure with each leaf replaced by the leaf of ``prefix_tree`` above
    it (``prefix_tree``'s structure must be a prefix of ``full_tree``'s)."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = flatten_up_to(prefix_def, full_tree, "broadcast prefix_tree")
    leaves = []
    for leaf, subtree in zip(prefix_leaves, subtrees):
        leaves.extend([leaf] * tree_structure(subtree).num_leaves)
    return tree_structure(full_tree).unflatten(leaves)


def static(**kwargs: Any) -> Any:
    """``dataclasses.field(**kwargs)`` marked ``static`` for ``register_dataclass``: the field
    is aux data (part of jit's cache key), not a child."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


class _HashableCallable:
    """Holds a ``functools.partial`` given to ``Partial`` so that its bound arguments stay in
    the aux data instead of being merged into the new ``Partial``'s children."""

    __slots__ = ("fun",)

    def __init__(self, fun: Callable[..., Any]) -> None:
        self.fun = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _HashableCallable) and self.fun == other.fun

    def __hash__(self) -> int:
        return hash(self.fun)

    def __repr__(self) -> str:
        return repr(self.fun)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are its children (traced
    under jit), the function its aux data.

    Wrapping another ``functools.partial`` keeps that partial (and its bound arguments) whole
    as the function, rather than merging its arguments into this one's.
    """

    def __new__(cls, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Partial:
        if isinstance(func, functools.partial):
            func = _HashableCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


tu.register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)


class PyTreeRegistry:
    """The table of pytree node types, as an object (ember has exactly one:
    ``default_registry``)."""

    def flatten(
        self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None
    ) -> tuple[list[Any], PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(
        self, tree: Any, leaf_predicate: Callable[[Any, Any], bool] | None = None
    ) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
        return tu.tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable[Any], Any] | None:
        return tu.flatten_one_level(tree) if tu.is_tree_node(type(tree)) else None

    def flatten_one_level_with_keys(self, tree: Any) -> tuple[Iterable[Any], Any] | None:
        return tu.flatten_one_level_with_keys(tree) if tu.is_tree_node(type(tree)) else None

    def is_node(self, type: type) -> bool:
        return tu.is_tree_node(type)

    def register_node(self, type, to_iterable, from_iterable, to_iterable_with_keys=None):
        tu.register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, type, data_fields, meta_fields, /):
        tu.register_dataclass(type, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "<ember default pytree registry>"


default_registry = PyTreeRegistry()
