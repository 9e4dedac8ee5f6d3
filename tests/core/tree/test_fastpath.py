"""The straight-line pytree code that jit uses on its hot path agrees with tree_util."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.tree.fastpath import builder, leaf_extractor
from ember.tree_util import tree_flatten, tree_unflatten

Point = namedtuple("Point", "x y")
a, b, c = np.zeros(1), np.ones(1), np.full(1, 2.0)

STRUCTURES = [
    a,
    (a,),
    [a, b],
    ((a, [b, c]), {}),
    {"w": a, "b": (b, None)},
    {"z": a, 3: b},
    ([], (), {}, None),
]


@pytest.mark.parametrize("tree", STRUCTURES, ids=repr)
def test_extractor_and_builder_round_trip(tree):
    leaves, treedef = tree_flatten(tree)
    extract = leaf_extractor(treedef)
    assert extract is not None
    got = extract(tree)
    assert got is not None and len(got) == len(leaves)
    assert all(x is y for x, y in zip(got, leaves))
    rebuilt = builder(treedef)(leaves)
    assert tree_flatten(rebuilt)[1] == treedef
    assert repr(rebuilt) == repr(tree_unflatten(treedef, leaves))


@pytest.mark.parametrize(
    "other",
    [
        [a, b, c],  # longer
        (a, b),  # tuple instead of list
        [a, [b]],  # a leaf became a container
        [a, None],  # a leaf became None
        {"w": a},  # a dict instead
    ],
    ids=repr,
)
def test_extractor_rejects_other_structures(other):
    _, treedef = tree_flatten([a, b])
    assert leaf_extractor(treedef)(other) is None


def test_extractor_rejects_dicts_with_other_keys():
    _, treedef = tree_flatten({"w": a, "b": b})
    extract = leaf_extractor(treedef)
    assert extract({"w": a, "c": b}) is None
    assert extract({"b": b, "w": a}) == [b, a]  # insertion order does not matter


def test_custom_nodes_have_a_builder_but_no_extractor():
    tree = [Point(a, b), c]
    leaves, treedef = tree_flatten(tree)
    assert leaf_extractor(treedef) is None
    assert builder(treedef)(leaves) == tree_unflatten(treedef, leaves)


def test_jit_with_alternating_structures():
    f = ember.jit(lambda xs: sum(enp.sum(x) for x in ember.tree_util.tree_leaves(xs)))
    one, two = enp.ones(2), enp.ones(3)
    for _ in range(2):
        assert float(f([one, two])) == 5.0
        assert float(f([one])) == 2.0
        assert float(f({"a": two, "b": [one, one]})) == 7.0
        assert float(f((two,))) == 3.0
        assert float(f([one, np.ones(4, np.float32)])) == 6.0  # a NumPy leaf
