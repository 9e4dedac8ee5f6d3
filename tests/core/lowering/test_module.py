"""StableHLO text emission and per-platform lowering overrides."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src import rules
from ember._src.core import ShapedArray
from ember._src.lowering.mlir import dense_attr, tensor_type
from ember._src.lowering.module import lower_module
from ember._src.plugin.registries import LoweringRegistry
from ember._src.primitives.math_functions import exp_p


def test_tensor_types_and_constants():
    assert tensor_type(ShapedArray((2, 3), np.float32)) == "tensor<2x3xf32>"
    assert tensor_type(ShapedArray((), np.bool_)) == "tensor<i1>"
    assert tensor_type(ShapedArray((4,), np.uint8)) == "tensor<4xui8>"
    assert dense_attr(1.0, ShapedArray((), np.float32)) == 'dense<"0x0000803F"> : tensor<f32>'
    assert dense_attr(True, ShapedArray((2,), np.bool_)) == "dense<true> : tensor<2xi1>"


def test_module_has_main_with_donation_attributes():
    closed = ember.make_jaxpr(lambda x, y: x * y)(np.ones(3, np.float32), np.ones(3, np.float32))
    text = lower_module(closed, platform="cpu", name="f", donated_invars=[True, False])
    assert text.startswith("module @f attributes {mhlo.num_partitions = 1 : i32")
    assert "%arg0: tensor<3xf32> {jax.buffer_donor = true}" in text
    assert "%arg1: tensor<3xf32>," in text or "%arg1: tensor<3xf32>)" in text
    assert '"stablehlo.multiply"(%arg0, %arg1)' in text


def test_scalar_operands_are_broadcast_in_the_lowering():
    text = ember.jit(lambda x: x + 2.0).lower(np.ones((2, 2), np.float32)).as_text()
    assert "stablehlo.broadcast_in_dim" in text and "stablehlo.add" in text


def test_platform_override_replaces_the_rule_on_that_platform_only():
    closed = ember.make_jaxpr(enp.exp)(np.ones(2, np.float32))
    registry = LoweringRegistry("test-plugin")

    def exp_via_power(ctx, x):
        e = ctx.full(np.e, ctx.avals_out[0])
        return ctx.op("stablehlo.power", [e, x], ctx.avals_out[0])

    registry.register("exp", exp_via_power, platform="test-platform")
    try:
        assert "stablehlo.power" in lower_module(closed, platform="test-platform", name="f")
        assert "stablehlo.exponential" in lower_module(closed, platform="cpu", name="f")
        assert registry.registered == [("exp", "test-platform")]
    finally:
        rules._lowering[exp_p].pop("test-platform")


def test_override_needs_a_platform_and_a_known_primitive():
    registry = LoweringRegistry("test-plugin")
    with pytest.raises(ValueError, match="name its platform"):
        registry.register("exp", lambda ctx, x: x, platform="")
    with pytest.raises(ValueError, match="unknown primitive 'no_such_op'"):
        registry.register("no_such_op", lambda ctx, x: x, platform="p")


def test_every_primitive_has_a_lowering_and_a_reference_rule():
    missing = [
        name
        for name, primitive in rules.all_primitives().items()
        if not rules.has_lowering(primitive) or not rules.has_reference(primitive)
    ]
    assert missing == []
