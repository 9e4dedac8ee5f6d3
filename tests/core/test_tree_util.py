"""Pytrees: flatten/unflatten/map over containers, registered classes and dataclasses."""

import collections
import dataclasses

import numpy as np
import pytest

import ember
from ember.tree_util import (
    Partial,
    register_dataclass,
    register_pytree_node_class,
    tree_flatten,
    tree_leaves,
    tree_map,
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
