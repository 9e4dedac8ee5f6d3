"""Sharding rules (primitives/sharding_rules.py): every primitive has one or says it has none,
and the toolkit's rules give the result types of JAX's explicit sharding.

The toolkit works on abstract values over an ``AbstractMesh``: no devices are needed.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import ember._src
from ember._src import rules
from ember._src.core import Primitive, ShapedArray
from ember._src.primitives import sharding_rules
from ember._src.runtime.mesh import AbstractMesh, AxisType
from ember._src.runtime.sharding import NamedSharding, PartitionSpec as P
from ember.errors import ShardingTypeError

MESH = AbstractMesh((4, 2), ("X", "Y"), (AxisType.Explicit,) * 2)
OTHER_MESH = AbstractMesh((2, 4), ("X", "Y"), (AxisType.Explicit,) * 2)


def f32(shape, *spec, mesh=MESH):
    typed = NamedSharding(mesh, P(*spec)) if any(e is not None for e in spec) else None
    return ShapedArray(shape, np.float32, sharding=typed)


def _every_primitive() -> dict[str, Primitive]:
    """Every primitive ember defines: each private module imported (some, such as the gamma
    sampler's, define theirs in a module that ``import ember`` does not load)."""
    for module in pkgutil.walk_packages(ember._src.__path__, "ember._src."):
        importlib.import_module(module.name)
    return rules.all_primitives()


def _without_sharding_rule(primitives: dict[str, Primitive]) -> list[str]:
    return sorted(name for name, p in primitives.items() if not rules.has_sharding_rule(p))


def test_every_primitive_has_a_sharding_rule_or_says_it_has_none():
    missing = _without_sharding_rule(_every_primitive())
    assert not missing, (
        "give these primitives a sharding rule, or sharding=rules.NOT_SHARDABLE, in "
        "define_primitive: " + ", ".join(missing)
    )


def test_the_coverage_check_reports_a_primitive_without_either():
    unregistered = Primitive("made_up_without_rules")  # not in the registry: no side effects
    assert _without_sharding_rule({"made_up_without_rules": unregistered}) == [
        "made_up_without_rules"
    ]
    known = rules.all_primitives()
    assert _without_sharding_rule({"sin": known["sin"], "gather": known["gather"]}) == []


# --------------------------------------------------------------------------------------------
# The toolkit


def test_entries_pad_the_spec_to_the_rank():
    assert sharding_rules.entries(f32((8, 4))) == (None, None)
    assert sharding_rules.entries(f32((8, 4, 2), "X")) == ("X", None, None)


def test_elementwise_consensus_broadcasts_rank_zero_and_refuses_disagreement():
    rule = sharding_rules.elementwise(rules.all_primitives()["add"])
    out = rule(f32((8, 4), "X"), f32((8, 4), None, "Y"))
    assert out == NamedSharding(MESH, P("X", "Y"))
    assert rule(f32((8, 4), "X"), f32(())) == NamedSharding(MESH, P("X", None))
    assert rule(f32((8, 4)), f32((8, 4))) is None
    with pytest.raises(ShardingTypeError, match=r"split differently \('X' and 'Y'\)"):
        rule(f32((8, 4), "X"), f32((8, 4), "Y"))
    with pytest.raises(ShardingTypeError, match="mesh axis 'X' twice"):
        rule(f32((8, 8), "X"), f32((8, 8), None, "X"))
    with pytest.raises(ShardingTypeError, match="typed over two meshes"):
        rule(f32((8, 4), "X"), f32((8, 4), "X", mesh=OTHER_MESH))


def test_reduction_drops_the_reduced_dimensions_splits():
    x = f32((8, 4), "X", "Y")
    assert sharding_rules.reduction(x, axes=(0,)) == NamedSharding(MESH, P("Y"))
    assert sharding_rules.reduction(x, axes=(-1,)) == NamedSharding(MESH, P("X"))
    assert sharding_rules.reduction(x, axes=(0, 1)) is None


def test_with_unsplit_refuses_a_split_dimension_it_must_see_whole():
    rule = sharding_rules.with_unsplit("sort", lambda x, **_: [1], "sort orders along it")
    assert rule(f32((8, 4), "X")) == NamedSharding(MESH, P("X"))
    with pytest.raises(ShardingTypeError, match="dimension 1 of f32\\[8,4@Y\\] is split"):
        rule(f32((8, 4), None, "Y"))


def test_carried_refuses_a_loop_body_that_changes_a_carry():
    carry = [f32((8, 4), "X")]
    assert sharding_rules.carried("scan", carry, carry) == [NamedSharding(MESH, P("X"))]
    with pytest.raises(ShardingTypeError, match="changes the sharding of carry #0"):
        sharding_rules.carried("scan", carry, [f32((8, 4), None, "Y")])
