"""Pytrees: flatten/unflatten/map over containers, registered classes and dataclasses."""

import collections
import dataclasses

import numpy as np
import pytest

import ember
from ember.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    Partial,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_structure,
    tree_unflatten,
)

Point = collections.namedtuple("Point", ["x", "y"])


def test_flatten_orders_dict_keys_and_round_trips():
    tree = {"b": [1, 2], "a": (3, None, Point(4, 5))}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 4, 5, 1, 2]
    assert tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == 5


def test_structures_compare_and_hash():
    assert tree_structure({"a": 1, "b": (2,)}) == tree_structure({"b": (9,), "a": 0})
    assert hash(tree_structure([1, 2])) == hash(tree_structure([3, 4]))
    assert tree_structure([1, 2]) != tree_structure((1, 2))


def test_tree_map_over_several_trees():
    out = tree_map(lambda a, b: a * 10 + b, {"x": 1, "y": [2, 3]}, {"x": 4, "y": [5, 6]})
    assert out == {"x": 14, "y": [25, 36]}
    with pytest.raises(ValueError):
        tree_map(lambda a, b: a, {"x": 1}, {"z": 1})


def test_registered_class_and_dataclass_work_through_jit_and_grad():
    @register_pytree_node_class
    class Scale:
        def __init__(self, factor, name):
            self.factor, self.name = factor, name

        def tree_flatten(self):
            return (self.factor,), self.name

        @classmethod
        def tree_unflatten(cls, name, children):
            return cls(children[0], name)

    @register_dataclass
    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        label: str = dataclasses.field(default="layer", metadata={"static": True})

    params = Params(np.float32(2.0), np.float32(1.0))
    f = lambda p, s, x: (p.w * x + p.b) * s.factor
    grads = ember.grad(f)(params, Scale(np.float32(3.0), "s"), np.float32(5.0))
    assert isinstance(grads, Params) and grads.label == "layer"
    np.testing.assert_allclose([grads.w, grads.b], [15.0, 3.0])
    out = ember.jit(f)(params, Scale(np.float32(3.0), "s"), np.float32(5.0))
    np.testing.assert_allclose(out, 33.0)


def test_partial_is_a_pytree_that_jit_accepts():
    add = Partial(lambda a, b: a + b, np.float32(1.0))
    assert ember.jit(lambda p, x: p(x))(add, np.float32(2.0)) == 3.0
    assert len(tree_leaves(add)) == 1


# -- key paths (expected values are JAX 0.10.2's answers) -------------------------------------


class Node:
    """A registered class without keys, whose aux data is a dict (unhashable)."""

    def __init__(self, a, b, meta):
        self.a, self.b, self.meta = a, b, meta


register_pytree_node(Node, lambda n: ((n.a, n.b), n.meta), lambda m, ch: Node(*ch, m))


def test_paths_and_keystr_of_builtin_containers():
    tree = {"b": [1, (2, None)], "a": Point(3, 4)}
    pairs, treedef = tree_flatten_with_path(tree)
    assert [x for _, x in pairs] == [3, 4, 1, 2]
    assert pairs[3][0] == (DictKey("b"), SequenceKey(1), SequenceKey(0))
    assert pairs[0][0] == (DictKey("a"), GetAttrKey("x"))
    assert treedef == tree_structure(tree)
    assert (
        repr(treedef)
        == "PyTreeDef({'a': CustomNode(namedtuple[Point], [*, *]), 'b': [*, (*, None)]})"
    )
    paths = [p for p, _ in pairs]
    assert [keystr(p) for p in paths] == ["['a'].x", "['a'].y", "['b'][0]", "['b'][1][0]"]
    assert [keystr(p, simple=True) for p in paths] == ["ax", "ay", "b0", "b10"]
    assert [keystr(p, simple=True, separator="/") for p in paths] == ["a/x", "a/y", "b/0", "b/1/0"]
    mixed = (DictKey(1), DictKey("s"), SequenceKey(0), GetAttrKey("g"), FlattenedIndexKey(3))
    assert keystr(mixed) == "[1]['s'][0].g[<flat index 3>]"
    assert keystr(mixed, simple=True, separator=".") == "1.s.0.g.3"
    assert keystr((GetAttrKey("a"), "custom", 3)) == ".acustom3"
    assert keystr(()) == ""


def test_key_entries_compare_hash_print_and_match():
    assert repr(DictKey("a")) == "DictKey(key='a')"
    assert repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(SequenceKey(1)) == "SequenceKey(idx=1)"
    assert repr(FlattenedIndexKey(2)) == "FlattenedIndexKey(key=2)"
    assert DictKey("a") == DictKey("a") and hash(DictKey("a")) == hash(DictKey("a"))
    assert SequenceKey(1) != FlattenedIndexKey(1)
    match SequenceKey(4):
        case SequenceKey(idx=i):
            assert i == 4
    with pytest.raises(TypeError, match="SequenceKey"):
        SequenceKey("a")
    with pytest.raises(TypeError, match="GetAttrKey"):
        GetAttrKey(1)
    import pickle

    assert pickle.loads(pickle.dumps(GetAttrKey("q"))) == GetAttrKey("q")


def test_paths_of_custom_nodes_ordered_dicts_and_defaultdicts():
    pairs, treedef = tree_flatten_with_path(Node(1, [2, 3], {"k": 1}))
    assert [keystr(p) for p, _ in pairs] == [
        "[<flat index 0>]",
        "[<flat index 1>][0]",
        "[<flat index 1>][1]",
    ]
    assert repr(treedef) == "PyTreeDef(CustomNode(Node[{'k': 1}], [*, [*, *]]))"
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert [p for p, _ in tree_leaves_with_path(ordered)] == [(DictKey("b"),), (DictKey("a"),)]
    assert repr(tree_structure(ordered)) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"
    default = collections.defaultdict(list, {"b": 1, "a": 2})
    assert [p for p, _ in tree_leaves_with_path(default)] == [(DictKey("a"),), (DictKey("b"),)]
    assert tree_leaves_with_path(None) == [] and tree_leaves_with_path(7) == [((), 7)]


def test_is_leaf_with_and_without_path():
    tree = {"a": [1, 2], "b": 3}
    by_path = tree_leaves_with_path(tree, is_leaf=lambda p, x: len(p) == 1, is_leaf_takes_path=True)
    assert by_path == [((DictKey("a"),), [1, 2]), ((DictKey("b"),), 3)]
    by_value = tree_leaves_with_path(tree, is_leaf=lambda x: isinstance(x, list))
    assert by_value == by_path
    out = tree_map_with_path(
        lambda p, x, y: (keystr(p), x + y), {"a": 1, "b": [2]}, {"a": 10, "b": [20]}
    )
    assert out == {"a": ("['a']", 11), "b": [("['b'][0]", 22)]}


def test_registration_with_keys_and_static():
    from ember.tree_util import (
        flatten_one_level,
        register_pytree_with_keys,
        register_pytree_with_keys_class,
        register_static,
    )

    class Keyed:
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_with_keys(
        Keyed,
        lambda k: (((GetAttrKey("a"), k.a), (DictKey("bee"), k.b)), "aux"),
        lambda aux, ch: Keyed(*ch),
    )
    pairs, treedef = tree_flatten_with_path(Keyed(1, [2]))
    assert pairs == [((GetAttrKey("a"),), 1), ((DictKey("bee"), SequenceKey(0)), 2)]
    assert repr(treedef) == "PyTreeDef(CustomNode(Keyed[aux], [*, [*]]))"
    assert tree_leaves(Keyed(1, [2])) == [1, 2] and flatten_one_level(Keyed(1, 2)) == (
        [1, 2],
        "aux",
    )

    @register_pytree_with_keys_class
    class KeyedClass:
        def __init__(self, a):
            self.a = a

        def tree_flatten_with_keys(self):
            return ((GetAttrKey("a"), self.a),), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert tree_leaves_with_path(KeyedClass(3)) == [((GetAttrKey("a"),), 3)]

    @dataclasses.dataclass(frozen=True)
    class Static:
        v: int

    assert register_static(Static) is Static
    leaves, treedef = tree_flatten([Static(1), 2])
    assert leaves == [2] and tree_unflatten(treedef, [5]) == [Static(1), 5]
    assert repr(treedef) == f"PyTreeDef([CustomNode(Static[{Static(1)!r}], []), *])"
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        register_static(Static)


def test_register_dataclass_forms_and_errors():
    @register_dataclass
    @dataclasses.dataclass
    class Inferred:
        x: float
        y: float
        name: str = ember.tree.static(default="n")

    pairs, treedef = tree_flatten_with_path(Inferred(1.0, 2.0))
    assert pairs == [((GetAttrKey("x"),), 1.0), ((GetAttrKey("y"),), 2.0)]
    assert repr(treedef) == "PyTreeDef(CustomNode(Inferred[('n',)], [*, *]))"
    assert treedef.node_data() == (Inferred, ("n",))

    @dataclasses.dataclass
    class Explicit:
        x: float
        s: str
        dropped: int = dataclasses.field(default=0, init=False)

    assert register_dataclass(Explicit, ["x"], ["s"], drop_fields=["dropped"]) is Explicit
    assert tree_unflatten(tree_structure(Explicit(1.0, "z")), [4.0]) == Explicit(4.0, "z")

    @dataclasses.dataclass
    class Bad:
        x: float
        s: str

    with pytest.raises(ValueError, match=r"Missing fields: \{'s'\}"):
        register_dataclass(Bad, data_fields=["x"], meta_fields=[])
    with pytest.raises(TypeError, match="must both be specified"):
        register_dataclass(Bad, data_fields=["x"])
    with pytest.raises(ValueError, match="must not overlap"):
        register_dataclass(Bad, data_fields=["x", "s"], meta_fields=["s"])

    class Plain:
        def __init__(self, x, s):
            self.x, self.s = x, s

    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        register_dataclass(Plain)
    register_dataclass(Plain, data_fields=["x"], meta_fields=["s"])
    rebuilt = tree_unflatten(tree_structure(Plain(1, "q")), [9])
    assert (rebuilt.x, rebuilt.s) == (9, "q")


# -- structures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tree, text, num_leaves, num_nodes",
    [
        (1, "PyTreeDef(*)", 1, 1),
        ((1,), "PyTreeDef((*,))", 1, 2),
        ((), "PyTreeDef(())", 0, 1),
        ({}, "PyTreeDef({})", 0, 1),
        (None, "PyTreeDef(None)", 0, 1),
        ([None], "PyTreeDef([None])", 0, 2),
        ({"a": 1, "b": (2,)}, "PyTreeDef({'a': *, 'b': (*,)})", 2, 4),
        ({1: 2, 0: 3}, "PyTreeDef({0: *, 1: *})", 2, 3),
    ],
)
def test_treedef_repr_and_counts(tree, text, num_leaves, num_nodes):
    treedef = tree_structure(tree)
    assert (repr(treedef), treedef.num_leaves, treedef.num_nodes) == (text, num_leaves, num_nodes)


def test_treedef_methods():
    from ember.tree_util import PyTreeDef, default_registry, treedef_is_leaf, treedef_tuple

    treedef = tree_structure([1, (2, 3)])
    assert treedef.children() == [tree_structure(1), tree_structure((2, 3))]
    assert treedef.node_data() == (list, None) and tree_structure(1).node_data() is None
    assert tree_structure({"b": 1, "a": 2}).node_data() == (dict, ["a", "b"])
    assert treedef.flatten_up_to([[9], ("a", "b")]) == [[9], "a", "b"]
    with pytest.raises(ValueError, match=r"tuple was expected at key path \[1\]"):
        treedef.flatten_up_to([1, 2])
    with pytest.raises(ValueError, match="length 3 where length 2"):
        treedef.flatten_up_to([1, (2, 3), 4])
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 3, got 2"):
        treedef.unflatten([1, 2])
    with pytest.raises(ValueError, match="Too many leaves"):
        treedef.unflatten([1, 2, 3, 4])
    composed = treedef.compose(tree_structure((1, 2)))
    assert repr(composed) == "PyTreeDef([(*, *), ((*, *), (*, *))])"
    walked = treedef.walk(lambda children, aux: (children, aux), lambda x: x * 10, [1, 2, 3])
    assert walked == ((10, ((20, 30), None)), None)
    rebuilt = PyTreeDef.from_node_data_and_children(
        default_registry, (list, None), [tree_structure(1)] * 2
    )
    assert rebuilt == tree_structure([0, 0])
    assert (
        repr(treedef_tuple([tree_structure(1), tree_structure([1, 2])])) == "PyTreeDef((*, [*, *]))"
    )
    assert [treedef_is_leaf(tree_structure(x)) for x in (1, None, [], [1])] == [True] * 3 + [False]
    assert default_registry.is_node(list) and not default_registry.is_node(int)
    assert default_registry.flatten_one_level(1) is None


def test_treedef_pickles():
    import pickle

    treedef = tree_structure({"a": [1, (2,)], "p": Point(1, 2)})
    assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_flatten_keeps_equal_keys_of_different_types_apart():
    # 1 == True == 1.0 hash alike: the structures are equal (as in JAX) but each unflattens
    # to its own keys and aux data.
    for key in (1, True, 1.0):
        out = tree_unflatten(*reversed(tree_flatten([{key: "a"}])))
        assert type(next(iter(out[0]))) is type(key)
    assert tree_structure({1: 0}) == tree_structure({True: 0})


# -- unhashable aux data ----------------------------------------------------------------------


def test_dict_and_list_aux_data_compare_by_value_and_hash():
    first = tree_structure(Node(1, [2, 3], {"k": 1}))
    same = tree_structure(Node(5, [6, 7], {"k": 1}))
    other = tree_structure(Node(5, [6, 7], {"k": 2}))
    assert first == same and hash(first) == hash(same) and first != other
    assert first.node_data() == (Node, {"k": 1})
    assert {first: "x"}[same] == "x"
    listed = tree_structure(Node(1, 2, [1, {"n": [2]}]))
    assert listed == tree_structure(Node(3, 4, [1, {"n": [2]}]))
    assert listed != tree_structure(Node(3, 4, [1, {"n": [3]}]))


def test_array_aux_data_is_a_clear_error_when_compared():
    first = tree_structure(Node(1, 2, np.arange(3)))
    second = tree_structure(Node(1, 2, np.arange(3)))
    with pytest.raises(ValueError, match="arrays cannot be aux data"):
        first == second  # noqa: B015


def test_jit_vmap_grad_through_nodes_with_dict_aux_data():
    traces = []

    @ember.jit
    def f(node):
        traces.append(1)
        return node.a * node.b[0] + node.meta["k"]

    x = np.float32(2.0)
    np.testing.assert_allclose(f(Node(x, [np.float32(3.0)], {"k": 1})), 7.0)
    np.testing.assert_allclose(f(Node(x, [np.float32(4.0)], {"k": 1})), 9.0)
    assert len(traces) == 1  # equal aux data: the cached executable
    np.testing.assert_allclose(f(Node(x, [np.float32(4.0)], {"k": 5})), 13.0)
    assert len(traces) == 2
    out = ember.vmap(lambda n: n.a * n.b[1])(
        Node(np.ones(3, np.float32), [np.ones(3), np.arange(3.0, dtype=np.float32)], {"k": [1]})
    )
    np.testing.assert_allclose(out, [0.0, 1.0, 2.0])
    grads = ember.grad(lambda n: n.a * n.b[1])(
        Node(np.float32(2.0), [np.float32(1.0), np.float32(3.0)], {"k": [1]})
    )
    assert isinstance(grads, Node) and grads.meta == {"k": [1]}
    np.testing.assert_allclose([grads.a, grads.b[0], grads.b[1]], [3.0, 0.0, 2.0])
    # A jitted function returning the node: the output structure keeps the dict aux data.
    back = ember.jit(lambda n: n)(Node(x, [x], {"k": 1}))
    assert isinstance(back, Node) and back.meta == {"k": 1}


def test_partial_around_a_partial_keeps_the_inner_arguments_static():
    inner = Partial(lambda a, b, c: a + 10 * b + 100 * c, np.float32(1.0))
    outer = Partial(inner, np.float32(2.0))
    assert outer.args == (np.float32(2.0),)
    assert len(tree_leaves(outer)) == 1
    np.testing.assert_allclose(ember.jit(lambda p, x: p(x))(outer, np.float32(3.0)), 321.0)


def test_vmap_in_axes_prefix_through_a_registered_node():
    # The axis spec stops above the node's list child: 0 for `a`, None for the whole list.
    value = Node(np.arange(3.0, dtype=np.float32), [np.float32(2.0), np.float32(1.0)], {"k": 1})
    f = ember.vmap(lambda n: n.a * n.b[0] + n.b[1], in_axes=(Node(0, None, {"k": 1}),))
    np.testing.assert_allclose(f(value), [1.0, 3.0, 5.0])
    with pytest.raises(ValueError, match="is not a prefix of the value's structure"):
        ember.vmap(lambda n: n.a, in_axes=(Node(0, None, {"k": 2}),))(value)
