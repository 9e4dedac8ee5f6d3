"""What kernels call: program_id, masked loads and stores, atomics, dot, the hints and helpers."""

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import errors

F32 = np.dtype(np.float32)


def test_program_id_outside_a_kernel():
    with pytest.raises(errors.EmberError, match="only be called inside a Pallas kernel"):
        pl.program_id(0)


def test_program_id_axis_out_of_range():
    def kernel(o_ref):
        o_ref[...] = pl.program_id(2)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((), enp.int32), grid=(2, 3))
    with pytest.raises(ValueError, match=r"pl.program_id\(axis=2\) in kernel 'kernel': the grid"):
        call()


def test_helpers():
    assert pl.cdiv(10, 4) == 3 and pl.cdiv(8, 4) == 2
    assert int(pl.cdiv(np.int32(9), np.int32(2))) == 5
    s = pl.ds(4, 8)
    assert (s.start, s.size, s.stride) == (4, 8, 1)
    assert (pl.dslice(5).start, pl.dslice(5).size) == (0, 5)
    assert pl.Slice is type(s)


def _ragged_double(n, block, grid):
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        offsets = i * block + enp.arange(block)
        mask = offsets < n
        x = pl.load(x_ref, pl.ds(i * block, block), mask=mask, other=-1.0)
        pl.store(o_ref, pl.ds(i * block, block), x * 2, mask=mask)

    return pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((n,), F32), grid=grid)


def test_masked_loads_and_stores_on_a_ragged_size():
    x = np.arange(10, dtype=F32)
    np.testing.assert_array_equal(np.asarray(_ragged_double(10, 4, (3,))(x)), 2 * x)
    np.testing.assert_array_equal(np.asarray(ember.jit(_ragged_double(10, 4, (3,)))(x)), 2 * x)


def test_other_fills_the_masked_out_lanes():
    def kernel(x_ref, o_ref):
        mask = enp.arange(8) < 5
        o_ref[...] = pl.load(x_ref, pl.ds(0, 8), mask=mask, other=0.5)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((8,), F32))
    np.testing.assert_array_equal(np.asarray(call(np.ones(8, F32))), [1] * 5 + [0.5] * 3)


def test_an_unmasked_load_and_store_index_like_refs():
    def kernel(x_ref, o_ref):
        o_ref[pl.ds(1, 3)] = pl.load(x_ref, (pl.ds(0, 3),)) + 1
        pl.store(o_ref, 0, x_ref[3])

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((4,), F32))
    np.testing.assert_array_equal(np.asarray(call(np.arange(4, dtype=F32))), [3, 1, 2, 3])


def test_store_checks_shape_and_dtype():
    def wrong_shape(x_ref, o_ref):
        pl.store(o_ref, pl.ds(0, 4), x_ref[...][:2])

    call = pl.pallas_call(wrong_shape, out_shape=ember.ShapeDtypeStruct((4,), F32))
    with pytest.raises(
        errors.ShapeMismatchError, match=r"pl.store in kernel 'wrong_shape': .*shape \(2,\)"
    ):
        call(np.ones(4, F32))

    def wrong_mask(x_ref, o_ref):
        pl.store(o_ref, pl.ds(0, 4), x_ref[...], mask=enp.ones(3, bool))

    with pytest.raises(ValueError, match="the mask has shape"):
        pl.pallas_call(wrong_mask, out_shape=ember.ShapeDtypeStruct((4,), F32))(np.ones(4, F32))

    def not_a_ref(x_ref, o_ref):
        pl.load(x_ref[...], ())

    with pytest.raises(errors.EmberTypeError, match="pl.load needs a Ref"):
        pl.pallas_call(not_a_ref, out_shape=ember.ShapeDtypeStruct((4,), F32))(np.ones(4, F32))


@pytest.mark.parametrize(
    "name, start, values, expected",
    [
        ("add", 1, [3, 5, 2], 11),
        ("max", 1, [3, 5, 2], 5),
        ("min", 4, [3, 5, 2], 2),
        ("and", 7, [3, 5, 2], 0),
        ("or", 0, [3, 5, 2], 7),
        ("xor", 0, [3, 5, 2], 4),
        ("xchg", 9, [3, 5, 2], 2),
    ],
)
def test_atomics_combine_over_the_grid(name, start, values, expected):
    atomic = getattr(pl, f"atomic_{name}")

    def kernel(x_ref, acc_ref, o_ref):
        del acc_ref  # aliased to o_ref: the accumulator's start value
        atomic(o_ref, (), x_ref[0])

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((), enp.int32),
        grid=(len(values),),
        in_specs=[pl.BlockSpec((1,), lambda i: (i,)), pl.BlockSpec((), lambda i: ())],
        out_specs=pl.BlockSpec((), lambda i: ()),
        input_output_aliases={1: 0},
    )
    result = call(np.array(values, np.int32), np.int32(start))
    assert int(result) == expected


def test_atomic_add_returns_the_old_value_and_honours_the_mask():
    def kernel(x_ref, o_ref, old_ref):
        o_ref[...] = enp.zeros(4, enp.float32)
        old_ref[...] = pl.atomic_add(o_ref, pl.ds(0, 4), x_ref[...], mask=enp.arange(4) < 3)
        pl.atomic_add(o_ref, pl.ds(0, 4), x_ref[...], mask=enp.arange(4) < 3)

    shape = ember.ShapeDtypeStruct((4,), F32)
    out, old = pl.pallas_call(kernel, out_shape=(shape, shape))(np.arange(1, 5, dtype=F32))
    np.testing.assert_array_equal(np.asarray(out), [2, 4, 6, 0])
    np.testing.assert_array_equal(np.asarray(old), [0, 0, 0, 0])


def test_bitwise_atomics_need_integers():
    def kernel(o_ref):
        pl.atomic_or(o_ref, (), 1.0)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((), F32))
    with pytest.raises(errors.EmberTypeError, match="atomic_or in kernel 'kernel' needs an int"):
        call()


def test_atomic_cas_swaps_only_on_a_match():
    def kernel(x_ref, o_ref, old_ref):
        o_ref[...] = x_ref[...]
        old_ref[...] = pl.atomic_cas(o_ref, 3, 10)
        pl.atomic_cas(o_ref, 4, 20)  # o is 10 by now: no swap

    shape = ember.ShapeDtypeStruct((), enp.int32)
    out, old = pl.pallas_call(kernel, out_shape=(shape, shape))(np.int32(3))
    assert (int(out), int(old)) == (10, 3)


def test_dot_accumulates_in_float32(rng):
    a = rng.standard_normal((8, 16)).astype(F32)
    b = rng.standard_normal((8, 16)).astype(F32)

    def kernel(a_ref, b_ref, o_ref, t_ref):
        o_ref[...] = pl.dot(a_ref[...], b_ref[...], trans_b=True)
        t_ref[...] = pl.dot(a_ref[...], b_ref[...], trans_a=True)

    out, t = pl.pallas_call(
        kernel,
        out_shape=(ember.ShapeDtypeStruct((8, 8), F32), ember.ShapeDtypeStruct((16, 16), F32)),
    )(a, b)
    np.testing.assert_allclose(np.asarray(out), a @ b.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(t), a.T @ b, rtol=1e-5, atol=1e-5)

    def mismatched(a_ref, o_ref):
        o_ref[...] = pl.dot(a_ref[...], a_ref[...])

    with pytest.raises(ValueError, match="the contracted dimensions differ"):
        pl.pallas_call(mismatched, out_shape=ember.ShapeDtypeStruct((8, 16), F32))(a)


def test_hints_are_the_identity():
    def kernel(x_ref, o_ref):
        i = pl.multiple_of(pl.program_id(0) * 4, 4)
        o_ref[pl.ds(i, 4)] = pl.max_contiguous(x_ref[pl.ds(i, 4)], 4)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((8,), F32), grid=(2,))
    x = np.arange(8, dtype=F32)
    np.testing.assert_array_equal(np.asarray(call(x)), x)
    text = str(ember.make_jaxpr(lambda v: pl.multiple_of(v, 8))(np.int32(16)))
    assert "multiple_of[values=(8,)]" in text


def test_debug_print_prints_once_per_grid_point(capfd):
    def kernel(x_ref, o_ref):
        pl.debug_print("block {} first {}", pl.program_id(0), x_ref[0])
        o_ref[...] = x_ref[...]

    spec = pl.BlockSpec((2,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((4,), F32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    ember.block_until_ready(call(np.arange(4, dtype=F32)))
    printed = capfd.readouterr().out
    assert "block 0 first 0.0" in printed and "block 1 first 2.0" in printed


def test_when_runs_its_body_only_where_the_condition_holds():
    def kernel(o_ref):
        o_ref[...] = enp.zeros((1,), enp.int32)

        @pl.when(pl.program_id(0) % 2 == 1)
        def _():
            o_ref[...] = enp.ones((1,), enp.int32)

        @pl.when(True)  # a Python bool: decided when tracing
        def _():
            o_ref[...] += 10

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((4,), enp.int32),
        grid=(4,),
        out_specs=pl.BlockSpec((1,), lambda i: (i,)),
    )
    np.testing.assert_array_equal(np.asarray(call()), [10, 11, 10, 11])


def test_fori_loop_in_a_kernel_reads_and_writes_refs():
    def kernel(x_ref, o_ref):
        def body(i, total):
            o_ref[pl.ds(i, 1)] = x_ref[pl.ds(i, 1)] * i.astype(enp.float32)
            return total + x_ref[i] + pl.program_id(0).astype(enp.float32)  # in the body

        o_ref[0] = ember.lax.fori_loop(0, 8, body, 0.0)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((8,), F32), grid=(2,))
    x = np.arange(8, dtype=F32)
    expected = x * np.arange(8)
    expected[0] = x.sum() + 8 * 1  # the last grid step's program_id, added 8 times
    np.testing.assert_array_equal(np.asarray(call(x)), expected)


def test_run_scoped_gives_fresh_scratch():
    def kernel(x_ref, o_ref):
        def scoped(tmp_ref, *, other_ref):
            tmp_ref[...] = x_ref[...] * 2
            other_ref[...] = tmp_ref[...] + 1
            return other_ref[...]

        o_ref[...] = pl.run_scoped(
            scoped, pl.ANY((4,), F32), other_ref=ember.ShapeDtypeStruct((4,), F32)
        )

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((4,), F32))
    np.testing.assert_array_equal(np.asarray(call(np.arange(4, dtype=F32))), [1, 3, 5, 7])


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_masked_window_may_run_past_the_ref(dynamic):
    # The Triton pattern: one power-of-two block over a row of any length, masked.
    def kernel(x_ref, o_ref):
        start = pl.program_id(0) * 0 if dynamic else 0
        mask = enp.arange(128) < 100
        x = pl.load(x_ref, (pl.ds(start, 128),), mask=mask, other=0.0)
        pl.store(o_ref, pl.ds(start, 128), x + 1, mask=mask)
        pl.atomic_add(o_ref, (..., pl.ds(start, 128)), enp.ones(128, enp.float32), mask=mask)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((100,), F32), grid=(1,))
    x = np.arange(100, dtype=F32)
    np.testing.assert_array_equal(np.asarray(call(x)), x + 2)


def test_an_unmasked_window_past_the_ref_is_an_index_error():
    def kernel(x_ref, o_ref):
        o_ref[...] = pl.load(x_ref, pl.ds(0, 128))[:100]

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((100,), F32))
    with pytest.raises(IndexError, match="out of bounds"):
        call(np.zeros(100, F32))
