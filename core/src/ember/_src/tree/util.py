"""Pytrees: nested containers whose leaves are arrays.

Tuples, lists, dicts (keys sorted), namedtuples, ``None`` (a node with no children) and
registered classes are containers; anything else is a leaf. Every transformation flattens its
arguments and results with these functions, so registering a class here makes it work with
jit, grad and vmap.

A registered class's auxiliary data (what its flatten function returns besides the children)
becomes part of the structure, and so of jit's cache keys. It need only compare equal to itself:
unhashable aux data (a dict, a list) is hashed by a frozen copy of its contents.
"""

from __future__ import annotations

import collections
import dataclasses
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn

from ember._src.tree.keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, keystr

KeyedChildren = Iterable[tuple[Any, Any]]


class _NodeType(NamedTuple):
    name: str
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]]
    unflatten: Callable[[Hashable, Iterable[Any]], Any]
    # ``x -> (((key, child), ...), aux)``; None: the children are keyed by FlattenedIndexKey.
    flatten_with_keys: Callable[[Any], tuple[KeyedChildren, Hashable]] | None


_registry: dict[type, _NodeType] = {}
# Types seen to be leaves (unregistered, not namedtuples), so that flattening a container of
# arrays needs no call per leaf. Registering a type removes it from here.
leaf_types: set[type] = set()


def _register(nodetype: type, entry: _NodeType) -> None:
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = entry
    leaf_types.discard(nodetype)


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_with_keys_func: Callable[[Any], tuple[KeyedChildren, Hashable]] | None = None,
) -> None:
    """Make instances of ``nodetype`` pytree containers.

    ``flatten_func(x) -> (children, aux_data)``; ``unflatten_func(aux_data, children) -> x``;
    optionally ``flatten_with_keys_func(x) -> (((key, child), ...), aux_data)`` names the
    children in key paths. ``aux_data`` becomes part of jit's cache key: it must compare equal
    to the aux data of an equally structured instance (it need not be hashable).
    """
    _register(
        nodetype,
        _NodeType(nodetype.__qualname__, flatten_func, unflatten_func, flatten_with_keys_func),
    )


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[KeyedChildren, Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Register ``nodetype`` with a flatten function that names its children: key paths
    through it use those keys. ``flatten_func`` (a faster flatten without keys) defaults to
    dropping the keys."""
    if flatten_func is None:

        def flatten_func(x: Any) -> tuple[list[Any], Hashable]:
            keyed, aux = flatten_with_keys(x)
            return [child for _, child in keyed], aux

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: use ``cls.tree_flatten`` and ``cls.tree_unflatten`` (a classmethod)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: use ``cls.tree_flatten_with_keys``, ``cls.tree_unflatten`` and, if
    defined, ``cls.tree_flatten``."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(
        cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten
    )
    return cls


def register_static(cls: type) -> type:
    """Make instances of ``cls`` pytree nodes without children: the whole value is aux data
    (static under jit), so it must be hashable or at least comparable."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x, lambda x: ((), x))
    return cls


def register_dataclass(
    nodetype: type,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> type:
    """Register a dataclass (or a class built from keyword arguments) as a pytree node.

    ``data_fields`` are its children, ``meta_fields`` static aux data. Without both lists, a
    dataclass's fields declared with ``field(metadata={"static": True})`` are meta fields and
    the rest are data. Returns ``nodetype``, so it also works as a class decorator.
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified when "
                f"either is specified. Got data_fields={data_fields} meta_fields={meta_fields}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when nodetype "
                f"is not a dataclass. Got nodetype={nodetype}."
            )
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields)
    _check_dataclass_fields(nodetype, data, meta, drop_fields)

    def flatten(x: Any) -> tuple[tuple, tuple]:
        return tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta)

    def flatten_with_keys(x: Any) -> tuple[tuple, tuple]:
        keyed = tuple((GetAttrKey(n), getattr(x, n)) for n in data)
        return keyed, tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple, children: Iterable[Any]) -> Any:
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def _check_dataclass_fields(nodetype: type, data: tuple, meta: tuple, drop: Sequence[str]):
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop)
        given = {*data, *meta}
        if given != init_fields:
            message = (
                "data_fields and meta_fields must include all dataclass fields with "
                "``init=True`` and only them."
            )
            if missing := init_fields - given:
                message += (
                    f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
                )
            if unexpected := given - init_fields:
                message += f" Unexpected fields: {unexpected}."
            raise ValueError(message)
    if overlap := set(data) & set(meta):
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}."
        )


def _sort_key(key: Any) -> Any:
    # Keys of different types (1 and "a") cannot be compared: order them by type name first.
    return (type(key).__name__, key) if not isinstance(key, str) else ("", key)


def _sorted_keys(d: dict) -> tuple:
    return tuple(sorted(d, key=_sort_key)) if len(d) > 1 else tuple(d)


def _dict_flatten(d: dict) -> tuple[list[Any], tuple]:
    keys = _sorted_keys(d)
    return tuple([d[k] for k in keys]), keys


def _keyed_dict(d: dict, keys: Iterable[Any]) -> tuple:
    return tuple((DictKey(k), d[k]) for k in keys)


def _keyed_sequence(children: Iterable[Any]) -> tuple:
    return tuple((SequenceKey(i), c) for i, c in enumerate(children))


def _defaultdict_flatten(d: collections.defaultdict) -> tuple[list[Any], tuple]:
    values, keys = _dict_flatten(d)
    return values, (d.default_factory, keys)


register_pytree_node(
    tuple, lambda t: (t, None), lambda _, c: tuple(c), lambda t: (_keyed_sequence(t), None)
)
register_pytree_node(
    list, lambda t: (t, None), lambda _, c: list(c), lambda t: (_keyed_sequence(t), None)
)
register_pytree_node(
    dict,
    _dict_flatten,
    lambda keys, c: dict(zip(keys, c)),
    lambda d: (_keyed_dict(d, _sorted_keys(d)), _sorted_keys(d)),
)
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None, lambda _: ((), None))
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d.keys())),
    lambda keys, c: collections.OrderedDict(zip(keys, c)),
    lambda d: (_keyed_dict(d, d.keys()), tuple(d.keys())),
)
register_pytree_node(
    collections.defaultdict,
    _defaultdict_flatten,
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
    lambda d: (_keyed_dict(d, _sorted_keys(d)), (d.default_factory, _sorted_keys(d))),
)


def _namedtuple_type(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_tree_node(typ: type) -> bool:
    """Whether instances of ``typ`` are pytree containers (rather than leaves)."""
    return typ in _registry or (issubclass(typ, tuple) and hasattr(typ, "_fields"))


# -- structures ---------------------------------------------------------------------------------


def _freeze(value: Any) -> Hashable:
    """A hashable stand-in for unhashable aux data, equal for equal values: the contents of
    dicts, lists and sets; for any other unhashable object, its type (a coarse but valid hash,
    since equal objects of one type then hash alike)."""
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, dict):
        return frozenset((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return type(value)


def _aux_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception as e:  # e.g. arrays in aux data: `==` is elementwise, not a bool
        raise ValueError(
            f"could not compare the auxiliary data of two pytree nodes ({type(a).__name__} "
            f"and {type(b).__name__}): {e}. Aux data (a registered class's static metadata) "
            "must be hashable or have plain equality; arrays cannot be aux data."
        ) from e


class PyTreeDef:
    """The structure of a pytree: what ``tree_flatten`` returns besides the leaves.

    Treedefs are interned (one object per structure, as far as comparisons allow), so the
    caches keyed on them (jit's) usually compare by identity.
    """

    __slots__ = ("node", "aux", "subtrees", "num_leaves", "num_nodes", "_hash", "__weakref__")

    def __init__(self, node: Any, aux: Any, subtrees: tuple[PyTreeDef, ...], num_leaves: int):
        self.node = node  # None for a leaf, else the container type
        self.aux = aux
        self.subtrees = subtrees
        self.num_leaves = num_leaves
        self.num_nodes = 1 + sum([c.num_nodes for c in subtrees])
        try:
            self._hash = hash((node, aux, subtrees))
        except TypeError:
            self._hash = hash((node, _freeze(aux), subtrees))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, PyTreeDef)
            and self._hash == other._hash
            and self.node is other.node
            and self.num_nodes == other.num_nodes
            and _aux_equal(self.aux, other.aux)
            and self.subtrees == other.subtrees
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        return _treedef, (self.node, self.aux, self.subtrees)

    def children(self) -> list[PyTreeDef]:
        """The structures of this node's children (none for a leaf)."""
        return list(self.subtrees)

    def node_data(self) -> tuple[type, Any] | None:
        """``(type, aux_data)`` of the root node; None for a leaf."""
        if self.node is None:
            return None
        return (self.node, list(self.aux) if self.node is dict else self.aux)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at this structure's leaves (``tree`` must have this
        structure down to them)."""
        return flatten_up_to(self, tree, "flatten_up_to tree")

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with every leaf replaced by ``inner``."""
        if self.node is None:
            return inner
        return _treedef(self.node, self.aux, tuple([c.compose(inner) for c in self.subtrees]))

    def walk(
        self,
        f_node: Callable[[tuple, Any], Any],
        f_leaf: Callable[[Any], Any] | None,
        leaves: Iterable[Any],
    ) -> Any:
        """Fold ``leaves`` up this structure: ``f_node(children_results, aux_data)`` at each
        node, ``f_leaf(leaf)`` (or the leaf itself) at each leaf."""
        iterator = iter(leaves)

        def go(treedef: PyTreeDef) -> Any:
            if treedef.node is None:
                leaf = next(iterator)
                return leaf if f_leaf is None else f_leaf(leaf)
            return f_node(tuple(go(c) for c in treedef.subtrees), treedef.node_data()[1])

        return go(self)

    @staticmethod
    def from_node_data_and_children(
        registry: Any, node_data: tuple[type, Any] | None, children: Iterable[PyTreeDef]
    ) -> PyTreeDef:
        """A structure with root ``node_data`` (as ``node_data()`` returns it) and children."""
        del registry  # ember has one registry
        if node_data is None:
            return _LEAF
        node, aux = node_data
        if node is dict:
            aux = tuple(aux)
        return _treedef(node, aux, tuple(children))

    def __repr__(self) -> str:
        return f"PyTreeDef({self._describe()})"

    def _describe(self) -> str:
        if self.node is None:
            return "*"
        inner = ", ".join(c._describe() for c in self.subtrees)
        if self.node is tuple:
            return f"({inner}{',' if len(self.subtrees) == 1 else ''})"
        if self.node is list:
            return f"[{inner}]"
        if self.node is dict:
            items = (f"{k!r}: {c._describe()}" for k, c in zip(self.aux, self.subtrees))
            return "{" + ", ".join(items) + "}"
        if self.node is type(None):
            return "None"
        if self.node not in _registry:  # a namedtuple
            return f"CustomNode(namedtuple[{self.node.__name__}], [{inner}])"
        return f"CustomNode({self.node.__name__}[{self.aux}], [{inner}])"


_LEAF = PyTreeDef(None, None, (), 1)
_MAX_INTERNED = 100_000  # a bound, in case a program makes structures endlessly
_interned: dict[tuple, PyTreeDef] = {}
# Treedefs whose aux data is unhashable, interned by their own (contents-based) hash.
_interned_unhashable: dict[PyTreeDef, PyTreeDef] = {}


def _treedef(node: Any, aux: Any, children: tuple[PyTreeDef, ...]) -> PyTreeDef:
    key = (node, aux, children)
    try:
        treedef = _interned.get(key)
    except TypeError:  # unhashable aux data
        return _intern_unhashable(PyTreeDef(node, aux, children, _count_leaves(children)))
    if treedef is None:
        treedef = PyTreeDef(node, aux, children, _count_leaves(children))
        if len(_interned) < _MAX_INTERNED:
            _interned[key] = treedef
    elif not _same_structure(treedef, aux, children):
        # Equal but not the same (dict keys 1 and True, a static 1.0 and 1): a treedef of its
        # own, equal to the interned one, so that unflattening gives back exactly this aux.
        treedef = PyTreeDef(node, aux, children, treedef.num_leaves)
    return treedef


def _same_structure(treedef: PyTreeDef, aux: Any, children: tuple[PyTreeDef, ...]) -> bool:
    return _same_values(treedef.aux, aux) and all(map(operator.is_, treedef.subtrees, children))


def _same_values(a: Any, b: Any) -> bool:
    """``a == b`` (already known) holding with the same types throughout tuples."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is tuple or type(a) is list:
        return all(x is y or _same_values(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return all(_same_values(ka, kb) and _same_values(a[ka], b[kb]) for ka, kb in zip(a, b))
    return True


def _count_leaves(children: tuple[PyTreeDef, ...]) -> int:
    return sum([c.num_leaves for c in children])


def _intern_unhashable(treedef: PyTreeDef) -> PyTreeDef:
    try:
        existing = _interned_unhashable.get(treedef)
    except ValueError:  # aux data that cannot be compared (arrays): left uninterned
        return treedef
    if existing is None:
        if len(_interned_unhashable) < _MAX_INTERNED:
            _interned_unhashable[treedef] = treedef
        return treedef
    same = _same_structure(existing, treedef.aux, treedef.subtrees)
    return existing if same else treedef


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.subtrees)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is a single node: a leaf, ``None`` or an empty container."""
    return treedef.num_nodes == 1


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have the structures ``treedefs``."""
    return _treedef(tuple, None, tuple(treedefs))


def leaf_treedef() -> PyTreeDef:
    return _LEAF


# -- flattening ---------------------------------------------------------------------------------


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
        keys = _sorted_keys(node)
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


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """The children and aux data of the root of ``tree``; ValueError if it is a leaf."""
    entry = _registry.get(type(tree))
    if entry is not None:
        return entry.flatten(tree)
    if _namedtuple_type(tree):
        return tuple(tree), None
    raise ValueError(f"can't tree-flatten type: {type(tree)}")


def flatten_one_level_with_keys(tree: Any) -> tuple[KeyedChildren, Hashable]:
    """Like ``flatten_one_level``, with each child paired with its key."""
    entry = _registry.get(type(tree))
    if entry is None and not _namedtuple_type(tree):
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _keyed_children(entry, tree)


def _keyed_children(entry: _NodeType | None, node: Any) -> tuple[KeyedChildren, Hashable]:
    if entry is None:  # a namedtuple
        return tuple((GetAttrKey(f), c) for f, c in zip(node._fields, node)), None
    if entry.flatten_with_keys is not None:
        return entry.flatten_with_keys(node)
    children, aux = entry.flatten(node)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like ``tree_flatten``, with each leaf paired with its key path. ``is_leaf`` is called
    as ``is_leaf(path, x)`` when ``is_leaf_takes_path``."""
    if is_leaf is not None and not is_leaf_takes_path:
        leaf_test = is_leaf
        is_leaf = lambda _, x: leaf_test(x)
    pairs: list[tuple[tuple, Any]] = []
    treedef = _flatten_with_path(tree, (), pairs, is_leaf)
    return pairs, treedef


def _flatten_with_path(
    node: Any, path: tuple, pairs: list, is_leaf: Callable[[tuple, Any], bool] | None
) -> PyTreeDef:
    node_type = type(node)
    entry = _registry.get(node_type)
    if (is_leaf is not None and is_leaf(path, node)) or (
        entry is None and not _namedtuple_type(node)
    ):
        pairs.append((path, node))
        return _LEAF
    keyed, aux = _keyed_children(entry, node)
    children = [_flatten_with_path(c, (*path, k), pairs, is_leaf) for k, c in keyed]
    return _treedef(node_type, aux, tuple(children))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> list[tuple[tuple, Any]]:
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        few = "few" if len(leaves) < treedef.num_leaves else "many"
        raise ValueError(
            f"Too {few} leaves for PyTreeDef; expected {treedef.num_leaves}, got "
            f"{len(leaves)} (structure {treedef})"
        )
    if treedef is _LEAF:
        return leaves[0]
    return _unflatten(treedef, iter(leaves))


def _unflatten(treedef: PyTreeDef, leaves: Iterator[Any]) -> Any:
    node = treedef.node
    if node is None:
        return next(leaves)
    children = [next(leaves) if c is _LEAF else _unflatten(c, leaves) for c in treedef.subtrees]
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


# -- mapping over several trees -----------------------------------------------------------------


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Apply ``f`` to corresponding leaves of ``tree`` and of each tree in ``rest`` (whose
    structure must have ``tree``'s as a prefix)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r, f"tree_map tree #{i + 2}") for i, r in enumerate(rest)]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """``tree_map`` whose ``f`` gets each leaf's key path first: ``f(path, x, *xs)``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [flatten_up_to(treedef, r, f"tree_map tree #{i + 2}") for i, r in enumerate(rest)]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def flatten_up_to(treedef: PyTreeDef, tree: Any, what: Any) -> list[Any]:
    """The subtrees of ``tree`` at the leaves of ``treedef``; ValueError naming ``what`` and
    the key path where ``tree`` does not have ``treedef``'s structure."""
    if isinstance(what, int):  # callers that name no tree
        what = "the tree"
    leaves, other = tree_flatten(tree)
    if other == treedef:
        return leaves
    flat: list[Any] = []
    _collect_up_to(treedef, tree, flat, (), what)
    return flat


def _collect_up_to(treedef: PyTreeDef, tree: Any, out: list[Any], path: tuple, what: str):
    if treedef.node is None:
        out.append(tree)
        return
    expected = treedef.node
    if type(tree) is not expected:
        _mismatch(what, path, f"a {_type_name(tree)} where a {expected.__name__} was expected")
    keyed, aux = _keyed_children(_registry.get(expected), tree)
    keyed = list(keyed)
    name = expected.__name__
    if expected is dict and aux != treedef.aux:
        _mismatch(
            what, path, f"a dict with keys {list(aux)} where keys {list(treedef.aux)} were expected"
        )
    if len(keyed) != len(treedef.subtrees):
        _mismatch(
            what,
            path,
            f"a {name} of length {len(keyed)} where length {len(treedef.subtrees)} was expected",
        )
    if not _aux_equal(aux, treedef.aux):
        _mismatch(what, path, f"a {name} with aux data {aux!r} where {treedef.aux!r} was expected")
    for child_def, (key, child) in zip(treedef.subtrees, keyed):
        _collect_up_to(child_def, child, out, (*path, key), what)


def _type_name(x: Any) -> str:
    return type(x).__name__


def _mismatch(what: str, path: tuple, problem: str) -> NoReturn:
    where = f"at key path {keystr(path)}" if path else "at its root"
    raise ValueError(f"pytree structure error: {what} has {problem} {where}")


# The public name of the prefix walk, for the layers above that pair a pytree prefix (of
# shardings, of specs) with the values it describes.


class FlatFunction:
    """A function of pytrees seen as a function of flat leaves (see ``flatten_fun``)."""

    __slots__ = ("fun", "in_tree", "keep_output", "out_tree", "output")

    def __init__(self, fun: Callable[..., Any], in_tree: PyTreeDef, keep_output: bool):
        self.fun = fun
        self.in_tree = in_tree
        self.keep_output = keep_output
        self.out_tree: PyTreeDef | None = None
        self.output: Any = None

    def __call__(self, *leaves: Any) -> list[Any]:
        out = self.fun(*tree_unflatten(self.in_tree, leaves))
        out_leaves, out_tree = tree_flatten(out)
        if self.out_tree is None:  # the first call's structure, as tracing records it
            self.out_tree = out_tree
            if self.keep_output:
                self.output = out
        return out_leaves


def flatten_fun(
    fun: Callable[..., Any], in_tree: PyTreeDef, *, keep_output: bool = False
) -> FlatFunction:
    """``fun`` (called with the positional arguments that ``in_tree``, a tree of a tuple,
    describes) as a function of flat leaves returning flat leaves. After a call, ``.out_tree``
    is the structure of its (first) output; with ``keep_output``, ``.output`` is that output
    itself (for callers that match a prefix tree, like ``out_axes``, against it)."""
    return FlatFunction(fun, in_tree, keep_output)
