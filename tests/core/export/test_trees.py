"""Pytree structures as JSON for the export format."""

import collections
import json

import pytest

import ember
from ember._src.export import trees
from ember.errors import ExportError


@pytest.mark.parametrize(
    "tree",
    [1, None, (1, 2), [1, (2, None)], {"b": 1, "a": [2, 3]}, ((1,), {"x": {"y": 2}}), {}, ()],
)
def test_round_trip(tree):
    treedef = ember.tree.structure(tree)
    encoded = json.loads(json.dumps(trees.encode(treedef)))
    assert trees.decode(encoded) == treedef


def test_unsupported_nodes_are_named():
    with pytest.raises(TypeError, match="OrderedDict"):
        trees.encode(ember.tree.structure(collections.OrderedDict(a=1)))
    with pytest.raises(TypeError, match="string keys"):
        trees.encode(ember.tree.structure({1: 2}))


@pytest.mark.parametrize(
    "data", [[], ["set", []], ["dict", ["a"], []], ["tuple"], "leaf", ["dict", [1], [["leaf"]]]]
)
def test_bad_structures_raise_export_error(data):
    with pytest.raises(ExportError, match="bad metadata"):
        trees.decode(data)
