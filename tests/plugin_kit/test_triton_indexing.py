"""Indexing Refs with integer arrays in the Triton lowering (gathers and scatters as pointer
arithmetic, NumPy's placement of the indexed dimensions), and 64-bit offsets into arrays of
2**31 elements or more."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
import ember.experimental.pallas as pl
from ember_plugin_kit.triton import lower_kernel, refs
from tests.plugin_kit import ttir_interpreter
from tests.plugin_kit.test_triton_lowering import checked_text, pallas_call_of

RNG = np.random.default_rng(4)
X = np.arange(8 * 16 * 4, dtype=np.float32).reshape(8, 16, 4)
ROWS = RNG.integers(0, 8, 16).astype(np.int32)
COLS = RNG.integers(0, 16, 16).astype(np.int32)

# name -> (read from x_ref given the index arrays, the NumPy answer)
GATHERS = {
    "rows": (lambda x, r, c: x[r[:8], :, :], lambda x, r, c: x[r[:8]]),
    "middle_dimension": (lambda x, r, c: x[:, c, :], lambda x, r, c: x[:, c, :]),
    "two_adjacent_arrays": (lambda x, r, c: x[r, c, :], lambda x, r, c: x[r, c, :]),
    "array_and_scalar": (lambda x, r, c: x[3, c, :], lambda x, r, c: x[3, c, :]),
    "arrays_apart_go_in_front": (
        lambda x, r, c: x[r[:4], :, c[:4] % 4],
        lambda x, r, c: x[r[:4], :, c[:4] % 4],
    ),
    "broadcast_arrays": (
        lambda x, r, c: x[r[:4][:, None], c[:8][None, :], 1],
        lambda x, r, c: x[r[:4][:, None], c[:8][None, :], 1],
    ),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gathers_compute_numpys_answer(name):
    read, expected = GATHERS[name]
    answer = expected(X, ROWS, COLS)

    def kernel(x_ref, r_ref, c_ref, o_ref):
        o_ref[...] = read(x_ref, r_ref[...], c_ref[...])

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct(answer.shape, np.float32))
    call = pallas_call_of(f, X, ROWS, COLS)
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call, X, ROWS, COLS)
    np.testing.assert_array_equal(result, answer)


def test_scatter_writes_through_a_permutation():
    permutation = RNG.permutation(16).astype(np.int32)
    values = np.arange(16 * 4, dtype=np.float32).reshape(16, 4)

    def kernel(v_ref, p_ref, o_ref):
        o_ref[p_ref[...], :] = v_ref[...] * 2.0

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((16, 4), np.float32))
    call = pallas_call_of(f, values, permutation)
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call, values, permutation)
    expected = np.empty_like(values)
    expected[permutation] = values * 2.0
    np.testing.assert_array_equal(result, expected)


def _copy_block_call(array_shape, block, index_map):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    out_block = tuple(b for b in block if b is not None)
    f = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct(out_block, np.int8),
        grid=(2,),
        in_specs=[pl.BlockSpec(block, index_map)],
        out_specs=pl.BlockSpec(out_block, lambda i: (0,) * len(out_block)),
    )
    return pallas_call_of(f, ember.ShapeDtypeStruct(array_shape, np.int8))


def test_arrays_of_two_to_the_31_elements_use_i64_offsets():
    # 2**31 int8 elements (never allocated here): the last block's offsets pass 2**31 - 1.
    call = _copy_block_call((2, 2**14, 2**16), (None, 16, 16), lambda i: (1, 2**10 - 1, 2**12 - 1))
    text = checked_text(call)
    assert "tt.addptr" in text and "tensor<16x16xi64>" in text
    assert "arith.muli" in text and "i64" in text


def test_i64_offsets_compute_the_same_addresses(monkeypatch):
    # Lowered with i64 offsets from a small size on, the kernel must read the same elements.
    monkeypatch.setattr(refs, "I64_OFFSETS_FROM", 64)
    x = np.arange(4 * 8 * 16, dtype=np.int8).reshape(4, 8, 16)

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    f = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((4, 4, 8), np.int8),
        grid=(4,),
        in_specs=[pl.BlockSpec((None, 4, 8), lambda i: (i, 1, 1))],
        out_specs=pl.BlockSpec((None, 4, 8), lambda i: (i, 0, 0)),
    )
    call = pallas_call_of(f, x)
    text = lower_kernel(call).text
    assert "tensor<4x8xi64>" in text
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(result, x[:, 4:8, 8:16] + 1)
