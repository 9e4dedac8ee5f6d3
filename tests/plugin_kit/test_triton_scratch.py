"""Scratch Refs in the Triton lowering (``scratch_shapes``, ``pl.run_scoped``): kept in
registers, carried through loops and branches, refused clearly where registers cannot hold
them. The scratch kernel of triton_kernels.CASES runs in test_triton_lowering.py."""

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


def _struct(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


def _scratch_call(kernel, x, scratch_shape, scratch_dtype=np.float32):
    f = pl.pallas_call(
        kernel,
        out_shape=_struct(x.shape, x.dtype),
        grid=(1,),
        scratch_shapes=[_struct(scratch_shape, scratch_dtype)],
    )
    return pallas_call_of(f, x)


def test_scratch_carried_through_a_while_loop_and_a_cond():
    # acc doubles while it is below 100 (a while loop), then is negated where odd.
    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] = x_ref[...]

        def cond(i):
            return enp.max(acc_ref[...]) < 100

        def body(i):
            acc_ref[...] = acc_ref[...] * 2
            return i + 1

        steps = lax.while_loop(cond, body, 0)
        acc_ref[...] = lax.cond(steps % 2 == 1, lambda a: -a, lambda a: a, acc_ref[...])
        o_ref[...] = acc_ref[...]

    x = np.arange(1, 17, dtype=np.int32)
    call = _scratch_call(kernel, x, (16,), np.int32)
    text = checked_text(call)
    assert "scf.while" in text and "scf.if" in text
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(result, -x * 8)  # 16 * 8 >= 100 after 3 doublings


def test_a_scalar_scratch_counts_loop_steps():
    def kernel(x_ref, o_ref, count_ref):
        count_ref[...] = 0

        def step(i, carry):
            count_ref[...] += i
            return carry

        lax.fori_loop(0, 5, step, 0)
        o_ref[...] = x_ref[...] + count_ref[...]

    x = np.zeros(16, np.int32)
    call = _scratch_call(kernel, x, (), np.int32)
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(result, np.full(16, 10))


def test_rows_of_a_scratch_at_static_and_traced_indices():
    # Row i of the scratch gets x's row i times i (a traced index in a loop); row 1 is then
    # overwritten (a static index); the output reads rows back at traced indices, reversed,
    # and adds the even columns' slice of row 0 to the first half.
    def kernel(x_ref, o_ref, rows_ref):
        rows_ref[...] = enp.zeros(rows_ref.shape, enp.float32)

        def fill(i, carry):
            rows_ref[i] = x_ref[i, :] * i.astype(enp.float32)
            return carry

        lax.fori_loop(0, 8, fill, 0)
        rows_ref[1, :] = enp.full((16,), -1.0, enp.float32)
        rows_ref[2] += 100.0

        def read_back(i, carry):
            o_ref[i, :] = rows_ref[7 - i]
            return carry

        lax.fori_loop(0, 8, read_back, 0)
        o_ref[0, pl.ds(0, 8)] = o_ref[0, pl.ds(0, 8)] + rows_ref[0, ::2]

    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) - 50
    x[3, 4] = np.nan
    x[5, 0] = -0.0
    call = _scratch_call(kernel, x, (8, 16))
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call, x)
    rows = x * np.arange(8, dtype=np.float32)[:, None]
    rows[1] = -1.0
    rows[2] += 100.0
    expected = rows[::-1].copy()
    expected[0, :8] += rows[0, ::2]
    np.testing.assert_array_equal(result, expected)  # NaN where x had it
    assert np.signbit(result[2, 0])  # -0.0 * 5 read back exactly


def test_partial_scratch_writes_are_refused_with_the_reason():
    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[pl.ds(0, 8)] = x_ref[pl.ds(0, 8)]
        o_ref[...] = x_ref[...]

    call = _scratch_call(kernel, np.ones(16, np.float32), (16,))
    with pytest.raises(NotImplementedError, match=r"whole \(ref\[\.\.\.\]\), at integer "):
        lower_kernel(call)


def test_scratch_reads_at_a_traced_slice_start_are_refused():
    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] = x_ref[...]
        o_ref[pl.ds(0, 8)] = acc_ref[pl.ds(pl.program_id(0), 8)]

    call = _scratch_call(kernel, np.ones(16, np.float32), (16,))
    with pytest.raises(NotImplementedError, match="not slices with a traced start"):
        lower_kernel(call)


def test_masked_scratch_accesses_are_refused():
    def kernel(x_ref, o_ref, acc_ref):
        pl.store(acc_ref, pl.ds(0, 16), x_ref[...], mask=x_ref[...] > 0)
        o_ref[...] = acc_ref[...]

    call = _scratch_call(kernel, np.ones(16, np.float32), (16,))
    with pytest.raises(NotImplementedError, match="not masked or atomic accesses"):
        lower_kernel(call)


def test_scratch_too_large_for_registers_is_refused():
    def kernel(x_ref, o_ref, big_ref):
        o_ref[...] = x_ref[...]

    call = _scratch_call(kernel, np.ones(16, np.float32), (2048, 1024))
    with pytest.raises(NotImplementedError, match=r"scratch operand 0 of shape \(2048, 1024\)"):
        lower_kernel(call)


def test_run_scoped_scratch_must_be_a_power_of_two():
    def kernel(x_ref, o_ref):
        def body(tmp_ref):
            tmp_ref[...] = enp.zeros(tmp_ref.shape, enp.float32)

        pl.run_scoped(body, _struct((12,)))
        o_ref[...] = x_ref[...]

    x = np.ones(16, np.float32)
    call = pallas_call_of(pl.pallas_call(kernel, out_shape=_struct((16,)), grid=(1,)), x)
    with pytest.raises(NotImplementedError, match=r"run_scoped scratch Ref has shape \(12,\)"):
        lower_kernel(call)
