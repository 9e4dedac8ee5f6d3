"""ember.tree: the short-named pytree functions (expected values are JAX 0.10.2's answers)."""

import dataclasses
import inspect

import numpy as np
import pytest

import ember
import ember.tree_util as tu

JAX_TREE_NAMES = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]

JAX_TREE_UTIL_NAMES = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def test_public_names_are_jaxs():
    assert _public(ember.tree) == JAX_TREE_NAMES
    assert _public(tu) == JAX_TREE_UTIL_NAMES


@pytest.mark.parametrize(
    "fn, params",
    [
        (ember.tree.map, ["f", "tree", "rest", "is_leaf"]),
        (ember.tree.map_with_path, ["f", "tree", "rest", "is_leaf", "is_leaf_takes_path"]),
        (ember.tree.flatten_with_path, ["tree", "is_leaf", "is_leaf_takes_path"]),
        (ember.tree.reduce, ["function", "tree", "initializer", "is_leaf"]),
        (ember.tree.reduce_associative, ["operation", "tree", "identity", "is_leaf"]),
        (ember.tree.transpose, ["outer_treedef", "inner_treedef", "pytree_to_transpose"]),
        (ember.tree.broadcast, ["prefix_tree", "full_tree", "is_leaf"]),
        (ember.tree.all, ["tree", "is_leaf"]),
        (tu.keystr, ["keys", "simple", "separator"]),
        (tu.register_dataclass, ["nodetype", "data_fields", "meta_fields", "drop_fields"]),
        (
            tu.register_pytree_node,
            ["nodetype", "flatten_func", "unflatten_func", "flatten_with_keys_func"],
        ),
        (
            tu.register_pytree_with_keys,
            ["nodetype", "flatten_with_keys", "unflatten_func", "flatten_func"],
        ),
        (tu.all_leaves, ["iterable", "is_leaf"]),
    ],
)
def test_signatures_match_jax(fn, params):
    assert list(inspect.signature(fn).parameters) == params


def test_map_leaves_structure_flatten_unflatten():
    tree = {"b": [1, 2], "a": (3, None)}
    assert ember.tree.leaves(tree) == [3, 1, 2]
    leaves, treedef = ember.tree.flatten(tree)
    assert treedef == ember.tree.structure(tree) and ember.tree.unflatten(treedef, leaves) == tree
    assert ember.tree.map(lambda x, y: x + y, tree, tree) == {"b": [2, 4], "a": (6, None)}
    assert ember.tree.leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]


def test_reduce_and_reduce_associative():
    assert ember.tree.reduce(lambda a, b: a + b, [1, 2, 3]) == 6
    assert ember.tree.reduce(lambda a, b: a + b, [1, 2, 3], 10) == 16
    assert ember.tree.reduce(
        lambda a, b: (a, b), [None, [1, None]], is_leaf=lambda x: x is None
    ) == (
        (None, 1),
        None,
    )
    with pytest.raises(TypeError, match="reduce"):
        ember.tree.reduce(lambda a, b: a + b, [])
    joined = ember.tree.reduce_associative(lambda a, b: f"({a}+{b})", ["1", "2", "3", "4", "5"])
    assert joined == "((1+2)+(3+(4+5)))"
    assert ember.tree.reduce_associative(lambda a, b: a + b, {"x": 1, "y": [2, 3]}) == 6
    assert ember.tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError, match="Must specify identity"):
        ember.tree.reduce_associative(lambda a, b: a + b, [])


def test_all_and_all_leaves():
    assert ember.tree.all([1, None, True]) is True
    assert ember.tree.all([None], is_leaf=lambda x: x is None) is False
    assert ember.tree.all([1, [0]]) is False
    results = [tu.all_leaves([1, 2]), tu.all_leaves([1, [2]]), tu.all_leaves([None])]
    assert results == [True, False, False]
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)


def test_transpose():
    outer, inner = ember.tree.structure([0, 0]), ember.tree.structure((0, 0))
    assert ember.tree.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert ember.tree.transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    by_key = ember.tree.structure({"a": 0, "b": 0})
    out = ember.tree.transpose(outer, by_key, [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    assert out == {"a": [1, 3], "b": [2, 4]}
    with pytest.raises(TypeError, match=r"Mismatch\nPyTreeDef\(\[\(\*, \*\), \(\*, \*, \*\)\]\)"):
        ember.tree.transpose(outer, inner, [(1, 2), (3, 4, 5)])


def test_broadcast():
    assert ember.tree.broadcast([1, {"a": 2}], [(5, 6), {"a": [7, 8]}]) == [(1, 1), {"a": [2, 2]}]
    assert ember.tree.broadcast(1, {"a": 2, "b": [3]}) == {"a": 1, "b": [1]}
    assert ember.tree.broadcast([1, None], [[1, 2], None]) == [[1, 1], None]
    with pytest.raises(ValueError, match="length 3 where length 2"):
        ember.tree.broadcast([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"NoneType was expected at key path \[1\]"):
        ember.tree.broadcast([1, None], [[1, 2], 3])


def test_paths_through_the_short_names():
    tree = {"a": [1, 2], "b": 3}
    assert [tu.keystr(p) for p, _ in ember.tree.leaves_with_path(tree)] == [
        "['a'][0]",
        "['a'][1]",
        "['b']",
    ]
    pairs, treedef = ember.tree.flatten_with_path([1, 2], is_leaf=lambda x: isinstance(x, list))
    assert pairs == [((), [1, 2])] and treedef == ember.tree.structure(0)
    out = ember.tree.map_with_path(lambda p, x: tu.keystr(p, simple=True) + str(x), tree)
    assert out == {"a": ["a01", "a12"], "b": ["b3"][0]}


def test_static_dataclass_fields_through_jit_vmap_and_grad():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        b: object
        op: str = ember.tree.static(default="add")
        config: dict = ember.tree.static(default_factory=lambda: {"scale": 2.0})

    def apply(layer, x):
        y = layer.w * x + layer.b if layer.op == "add" else layer.w * x - layer.b
        return y * layer.config["scale"]

    treedef = ember.tree.structure(Layer(1.0, 2.0))
    assert repr(treedef) == "PyTreeDef(CustomNode(Layer[('add', {'scale': 2.0})], [*, *]))"
    layer = Layer(np.float32(3.0), np.float32(1.0))
    x = np.float32(2.0)
    np.testing.assert_allclose(ember.jit(apply)(layer, x), 14.0)
    np.testing.assert_allclose(ember.jit(apply)(Layer(layer.w, layer.b, "sub"), x), 10.0)
    grads = ember.grad(apply)(layer, x)
    assert isinstance(grads, Layer) and grads.config == {"scale": 2.0}
    np.testing.assert_allclose([grads.w, grads.b], [4.0, 2.0])
    batched = Layer(np.arange(3, dtype=np.float32), np.ones(3, np.float32))
    np.testing.assert_allclose(ember.vmap(apply, in_axes=(0, None))(batched, x), [2.0, 6.0, 10.0])
