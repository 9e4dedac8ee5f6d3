"""Pytree structures as JSON for the export format, custom nodes by their registrations."""

import base64
import collections
import dataclasses
import json

import numpy as np
import pytest

import ember
from ember._src.export import trees
from ember.errors import EmberTypeError, ExportError


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


# -- custom nodes: registered by a serialized name ---------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])
ember.export.register_namedtuple_serialization(Point, serialized_name="tests.Point")


@dataclasses.dataclass
class Layer:
    w: object
    b: object
    activation: str = dataclasses.field(metadata={"static": True}, default="relu")


ember.tree_util.register_dataclass(Layer)
ember.export.register_pytree_node_serialization(
    Layer,
    serialized_name="tests.Layer",
    serialize_auxdata=lambda aux: json.dumps(aux).encode(),
    deserialize_auxdata=lambda data: tuple(json.loads(data)),
)


class Box:
    """A node registered with register_pytree_node, its aux data a string."""

    def __init__(self, label, value):
        self.label, self.value = label, value


class Tagged(Box):
    """Like Box, and registered for serialisation too."""


for node in (Box, Tagged):
    ember.tree_util.register_pytree_node(
        node, lambda b: ((b.value,), b.label), lambda a, c, node=node: node(a, *c)
    )
ember.export.register_pytree_node_serialization(
    Tagged,
    serialized_name="tests.Tagged",
    serialize_auxdata=str.encode,
    deserialize_auxdata=bytes.decode,
)


@pytest.mark.parametrize(
    "tree",
    [
        Point(1, 2),
        {"layers": [Layer(1, 2, "tanh"), Layer(3, 4)], "p": Point((5,), None)},
        (Tagged("scale", [1, 2]), 3),
    ],
)
def test_registered_custom_nodes_round_trip(tree):
    treedef = ember.tree.structure(tree)
    encoded = json.loads(json.dumps(trees.encode(treedef)))
    assert trees.decode(encoded) == treedef
    leaves = ember.tree.leaves(tree)
    rebuilt = trees.decode(encoded).unflatten(leaves)
    assert type(rebuilt) is type(tree) and ember.tree.leaves(rebuilt) == leaves


def test_custom_node_encoding_names_the_serialized_name_and_auxdata():
    encoded = trees.encode(ember.tree.structure(Layer(1, 2, "tanh")))
    assert encoded[:2] == ["custom", "tests.Layer"]
    assert base64.b64decode(encoded[2]) == b'["tanh"]'
    assert encoded[3] == [["leaf"], ["leaf"]]


def test_unregistered_custom_node_is_refused_naming_the_type():
    with pytest.raises(TypeError, match="Box.*register_pytree_node_serialization"):
        trees.encode(ember.tree.structure(Box("a", 1)))


def test_deserializing_an_unknown_serialized_name_names_it():
    with pytest.raises(ExportError, match="'tests.Missing'.*not registered"):
        trees.decode(["custom", "tests.Missing", "", []])


def test_namedtuple_fields_must_match():
    encoded = trees.encode(ember.tree.structure(Point(1, 2)))
    encoded[2] = base64.b64encode(b"x,z").decode()
    with pytest.raises(ExportError, match=r"fields \(x,z\).*has \(x,y\)"):
        trees.decode(encoded)


def test_registration_errors():
    with pytest.raises(ValueError, match="duplicate.*Point"):
        ember.export.register_namedtuple_serialization(Point, serialized_name="tests.Other")
    Other = collections.namedtuple("Other", ["a"])
    with pytest.raises(ValueError, match="duplicate.*'tests.Point'"):
        ember.export.register_namedtuple_serialization(Other, serialized_name="tests.Point")
    with pytest.raises(ValueError, match="not one"):
        ember.export.register_namedtuple_serialization(Box, serialized_name="tests.Box")
    with pytest.raises(ValueError, match="reserved"):
        ember.export.register_namedtuple_serialization(Other, serialized_name="dict")


def test_serialize_auxdata_must_return_bytes():
    class Bad:
        pass

    ember.tree_util.register_pytree_node(Bad, lambda b: ((), "aux"), lambda a, c: Bad())
    ember.export.register_pytree_node_serialization(
        Bad, serialized_name="tests.Bad", serialize_auxdata=str, deserialize_auxdata=bytes.decode
    )
    with pytest.raises(TypeError, match="must return bytes, got str"):
        trees.encode(ember.tree.structure(Bad()))


def test_export_over_custom_nodes_round_trips_and_runs():
    if ember.default_backend() == "reference":
        pytest.skip("exports StableHLO: needs a PJRT backend")
    f32 = np.float32
    layer = Layer(np.ones((2, 3), f32), np.arange(3, dtype=f32), "tanh")

    def apply(layer, x):
        y = x @ layer.w + layer.b
        return Point(ember.numpy.tanh(y) if layer.activation == "tanh" else y, y.sum())

    blob = ember.export.export(ember.jit(apply))(layer, np.ones((4, 2), f32)).serialize()
    exported = ember.export.deserialize(blob)
    out = exported.call(layer, np.full((4, 2), 0.5, f32))
    assert type(out) is Point
    expected = np.full((4, 3), 1.0, f32) + np.arange(3, dtype=f32)
    np.testing.assert_allclose(out.x, np.tanh(expected), rtol=1e-6)
    np.testing.assert_allclose(out.y, expected.sum(), rtol=1e-6)
    with pytest.raises(EmberTypeError, match="structure"):
        exported.call(Layer(layer.w, layer.b, "relu"), np.ones((4, 2), f32))
