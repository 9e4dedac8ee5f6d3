"""Pytrees: nested containers of arrays (tuples, lists, dicts, registered classes)."""

from ember._src.tree_util import (
    Partial as Partial,
    PyTreeDef as PyTreeDef,
    all_leaves as all_leaves,
    register_dataclass as register_dataclass,
    register_pytree_node as register_pytree_node,
    register_pytree_node_class as register_pytree_node_class,
    tree_all as tree_all,
    tree_flatten as tree_flatten,
    tree_leaves as tree_leaves,
    tree_map as tree_map,
    tree_reduce as tree_reduce,
    tree_structure as tree_structure,
    tree_unflatten as tree_unflatten,
    treedef_children as treedef_children,
    treedef_is_leaf as treedef_is_leaf,
)
