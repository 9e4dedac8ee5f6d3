"""ember_plugin_kit.linalg_ffi: the typed-FFI custom call a linear algebra override emits
(layouts, attributes, aliases, batch), checked on modules parsed and verified by jaxlib's MLIR
bindings; the info-as-NaN and StableHLO helpers; and the jaxlib bridge's LAPACK registration."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
from ember._src import rules
from ember._src.lowering.module import lower_module
from ember_plugin_kit import linalg_ffi
from ember_plugin_kit.pjrt import _jaxlib

ShapedArray = ember.extend.ShapedArray


def test_layouts():
    assert linalg_ffi.column_major_layout(2) == (0, 1)
    assert linalg_ffi.column_major_layout(4) == (2, 3, 1, 0)
    assert linalg_ffi.row_major_layout(3) == (2, 1, 0)


def test_attributes_are_typed_as_the_handlers_decode_them():
    assert linalg_ffi.attribute(True) == "true"
    assert linalg_ffi.attribute(linalg_ffi.letter("L")) == "76 : ui8"
    assert linalg_ffi.attribute(np.int32(5)) == "5 : i32"
    assert linalg_ffi.attribute(7) == "7 : i32"
    assert linalg_ffi.attribute(np.int64(7)) == "7 : i64"
    with pytest.raises(TypeError, match="FFI attribute"):
        linalg_ffi.attribute("L")


def test_aliases():
    one = linalg_ffi.output_operand_aliases({1: 0}, num_results=1)
    assert "output_tuple_indices = []" in one and "operand_index = 1" in one
    two = linalg_ffi.output_operand_aliases({0: 0, 3: 1}, num_results=2)
    assert "output_tuple_indices = [1], operand_index = 3" in two


def test_dtypes():
    assert linalg_ffi.is_linalg_dtype(np.complex64)
    assert not linalg_ffi.is_linalg_dtype(np.float16)
    assert linalg_ffi.real_dtype(np.complex128) == np.float64
    assert linalg_ffi.TYPE_LETTER[np.dtype(np.complex64)] == "c"


def _module_of(rule, *args):
    """A module lowering ``-x`` with ``rule`` (standing in for a factorisation's rule: one
    operand, one result of its shape) on a platform no other test uses; the parsed module and
    its text."""
    neg = rules.all_primitives()["neg"]
    previous = rules.remove_lowering(neg, "kit-test")
    rules.register_lowering(neg, rule, "kit-test")
    try:
        closed = ember.make_jaxpr(lambda x: -x)(*args)
        text = lower_module(closed, platform="kit-test", name="f")
    finally:
        rules.remove_lowering(neg, "kit-test")
        if previous is not None:
            rules.register_lowering(neg, previous, "kit-test")
    module = _jaxlib.parse_module(text)
    assert module.operation.verify()
    return module, text


def test_ffi_call_and_nan_where_failed_emit_a_valid_module():
    def rule(ctx, x):
        (aval,) = ctx.avals_in
        batch = linalg_ffi.batch_of(aval)
        factor, info = linalg_ffi.ffi_call(
            ctx,
            "some_potrf_ffi",
            [x],
            [aval],
            [aval, ShapedArray(batch, linalg_ffi.INT32)],
            aliases={0: 0},
            uplo=linalg_ffi.letter("L"),
            flag=True,
        )
        ok = linalg_ffi.info_ok(ctx, info, batch)
        upper = linalg_ffi.triangle(ctx, factor, aval, lower=False)
        adjoint, adjoint_aval = linalg_ffi.adjoint(ctx, upper, aval)
        sliced, sliced_aval = linalg_ffi.slice_to(ctx, adjoint, adjoint_aval, (2, 3, 2, 2))
        padded, _ = linalg_ffi.pad_to(ctx, sliced, sliced_aval, adjoint_aval.shape)
        return linalg_ffi.nan_where_failed(ctx, ok, padded, aval, batch)

    module, text = _module_of(rule, np.zeros((2, 3, 4, 4), np.complex64))
    assert '"some_potrf_ffi"' in text
    assert "api_version = 4 : i32" in text
    assert "backend_config = {flag = true, uplo = 76 : ui8}" in text
    assert "operand_layouts = [dense<[2, 3, 1, 0]> : tensor<4xindex>]" in text
    assert "dense<[1, 0]> : tensor<2xindex>" in text  # info, row-major
    assert 'num_batch_dims = "2"' in text
    assert "output_operand_alias" in text
    assert "sdy.sharding_rule" not in text  # no mesh: nothing to partition


def test_call_rule_restores_the_avals():
    seen = []

    def inner(ctx, x):
        seen.append(list(ctx.avals_in))
        return x

    def rule(ctx, x):
        before = list(ctx.avals_in)
        out = linalg_ffi.call_rule(ctx, inner, [x], [ShapedArray((9,), np.float32)], [])
        assert ctx.avals_in == before
        return out

    _module_of(rule, np.zeros((3,), np.float32))
    assert seen == [[ShapedArray((9,), np.float32)]]


def test_the_bridge_registers_lapack_once():
    first = _jaxlib.register_lapack_handlers()
    assert "lapack_spotrf_ffi" in first and "lapack_zgeev_ffi" in first
    assert _jaxlib.register_lapack_handlers() == first
    values = _jaxlib.lapack_enum_values()
    assert values["svd.ComputationMode.kComputeFullUVt"] == ord("A")
