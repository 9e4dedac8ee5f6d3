"""Static slices and concatenations of values inside a kernel (``tt.split`` / ``tt.join``):
what a register tensor can express, checked against NumPy by the TTIR interpreter, and the
refusals (with the Ref-slice form to use) for the rest. The rope kernel of
triton_kernels.CASES runs in test_triton_lowering.py."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax
from ember_plugin_kit.triton import lower_kernel
from tests.plugin_kit import ttir_interpreter
from tests.plugin_kit.test_triton_lowering import checked_text, pallas_call_of

X = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
X[5, 7] = np.nan  # an element read at a traced index comes back as it is
X[2, 3] = -0.0

SLICES = {
    "leading_columns": (lambda x: x[:, :4], lambda x: x[:, :4]),
    "third_quarter_of_rows": (lambda x: x[4:6], lambda x: x[4:6]),
    "even_columns": (lambda x: x[:, ::2], lambda x: x[:, ::2]),
    "odd_rows": (lambda x: x[1::2], lambda x: x[1::2]),
    "every_fourth_from_three": (
        lambda x: lax.slice(x, (0, 3), (8, 16), (1, 4)),
        lambda x: x[:, 3::4],
    ),
    "one_row": (lambda x: x[5], lambda x: x[5]),
    "one_element": (lambda x: enp.full((4,), x[6, 9]), lambda x: np.full((4,), x[6, 9])),
    "halves_swapped": (
        lambda x: enp.concatenate([x[:, 8:], x[:, :8]], axis=1),
        lambda x: np.concatenate([x[:, 8:], x[:, :8]], axis=1),
    ),
    "four_row_blocks_reversed": (
        lambda x: enp.concatenate([x[6:], x[4:6], x[2:4], x[:2]], axis=0),
        lambda x: np.concatenate([x[6:], x[4:6], x[2:4], x[:2]], axis=0),
    ),
    "row_at_a_traced_index": (
        lambda x: x[pl.program_id(0) + 5],
        lambda x: x[5],
    ),
    "column_at_a_traced_index_clamped": (
        lambda x: lax.dynamic_slice(x, (0, pl.program_id(0) + 20), (8, 1)),
        lambda x: x[:, 15:16],  # XLA clamps the start so that the slice fits
    ),
    "element_at_traced_indices": (
        lambda x: enp.full((4,), x[pl.program_id(0) + 2, pl.program_id(0) + 3]),
        lambda x: np.full((4,), x[2, 3]),
    ),
    "flip_columns": (lambda x: enp.flip(x, 1), lambda x: np.flip(x, 1)),
    "flip_both": (lambda x: enp.flip(x), lambda x: np.flip(x)),
    "flip_a_vector": (lambda x: enp.flip(x[3]), lambda x: np.flip(x[3])),
    "flip_a_pair": (lambda x: enp.flip(x[3, 4:6]), lambda x: np.flip(x[3, 4:6])),
    "interleave_by_stack": (
        lambda x: enp.stack([x[:, :8], x[:, 8:]], axis=-1).reshape(8, 16),
        lambda x: np.stack([x[:, :8], x[:, 8:]], axis=-1).reshape(8, 16),
    ),
}


def _call(fn, x):
    out_shape = np.asarray(SLICES_BY_FN[fn](x)).shape

    def kernel(x_ref, o_ref):
        o_ref[...] = fn(x_ref[...])

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct(out_shape, x.dtype), grid=(1,))
    return pallas_call_of(f, x)


SLICES_BY_FN = {fn: expected for fn, expected in SLICES.values()}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_value_slices_compute_numpys_answer(name):
    fn, expected = SLICES[name]
    call = _call(fn, X)
    text = checked_text(call)
    assert "tt.split" in text or "tt.join" in text or '"tt.reduce"' in text
    (result,) = ttir_interpreter.run_call(call, X)
    np.testing.assert_array_equal(result, expected(X))
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected(X)))


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: x[:, 2:6], r"elements 2:6:1 of dimension 1.*x_ref\[:, pl\.ds"),
        (lambda x: x[:, :3].sum(axis=1), r"elements 0:3:1 of dimension 1"),
        (
            lambda x: enp.concatenate([x[:, :4], x[:, :8]], axis=1).sum(axis=1),
            r"2 pieces of shapes \[\(8, 4\), \(8, 8\)\].*o_ref\[:, pl\.ds",
        ),
        (
            lambda x: enp.concatenate([x, x, x], axis=0)[:16],
            r"3 pieces of shapes",
        ),
        (
            lambda x: lax.dynamic_slice(x, (pl.program_id(0), 0), (2, 16)),
            r"2 elements of dimension 0 .* from a traced start.*x_ref\[pl\.ds",
        ),
    ],
)
def test_slices_a_register_tensor_cannot_express_are_refused(fn, message):
    def kernel(x_ref, o_ref):
        o_ref[...] = enp.zeros(o_ref.shape, enp.float32) + fn(x_ref[...]).sum()

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((8,), np.float32), grid=(1,))
    with pytest.raises(NotImplementedError, match=message):
        lower_kernel(pallas_call_of(f, X))
