"""Interpret mode: the grid as a loop of array operations, on reference and on cpu.

What JAX's interpreter gives, pinned: unwritten outputs read as NaN (floats) or the smallest
integer, blocks past the edge read the same and drop their writes.
"""

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember._src.pallas.interpret import interpret_jaxpr, uninitialized_fill

F32 = np.dtype(np.float32)


def test_uninitialized_fills():
    assert np.isnan(uninitialized_fill(np.dtype(np.float32)))
    assert np.isnan(uninitialized_fill(np.dtype(np.complex64)))
    assert uninitialized_fill(np.dtype(np.int32)) == -(2**31)
    assert uninitialized_fill(np.dtype(np.uint8)) == 0
    assert uninitialized_fill(np.dtype(bool)) is False


def test_outputs_the_kernel_does_not_write_are_uninitialised():
    def kernel(o_ref, i_ref):
        o_ref[0] = 1.0
        i_ref[0] = 1

    shapes = (ember.ShapeDtypeStruct((3,), F32), ember.ShapeDtypeStruct((3,), enp.int32))
    floats, ints = pl.pallas_call(kernel, out_shape=shapes)()
    floats, ints = np.asarray(floats), np.asarray(ints)
    assert floats[0] == 1.0 and np.isnan(floats[1:]).all()
    np.testing.assert_array_equal(ints, [1, -(2**31), -(2**31)])


def test_reads_past_the_edge_are_padding_and_writes_there_are_dropped():
    seen = []

    def kernel(x_ref, o_ref):
        block = x_ref[...]
        seen.append(block)
        o_ref[...] = enp.where(enp.isnan(block), -1.0, block)

    spec = pl.BlockSpec((4,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((6,), F32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    x = np.arange(6, dtype=F32)
    # The second block reads x[4:6] then two padding NaNs; its writes past 6 are dropped.
    np.testing.assert_array_equal(np.asarray(call(x)), x)


def test_a_grid_of_no_points_leaves_outputs_uninitialised():
    def kernel(o_ref):
        o_ref[...] = enp.zeros(2, enp.float32)

    out = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((2,), F32), grid=(0,))()
    assert np.isnan(np.asarray(out)).all()


def test_writes_to_an_input_block_persist_to_later_grid_steps():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        x_ref[...] = x_ref[...] + 1

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((2,), F32), grid=(3,))
    x = np.zeros(2, F32)
    np.testing.assert_array_equal(np.asarray(call(x)), [2, 2])
    np.testing.assert_array_equal(x, [0, 0])  # the caller's array is never changed


def test_a_parallel_grid_is_one_batched_step_and_a_reduction_axis_one_while_loop():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    def loops(grid, index_map):
        spec = pl.BlockSpec((4,), index_map)
        call = pl.pallas_call(
            kernel,
            out_shape=ember.ShapeDtypeStruct((16,), F32),
            grid=grid,
            in_specs=[spec],
            out_specs=spec,
            interpret=True,
        )
        (eqn,) = ember.make_jaxpr(call)(np.zeros(16, F32)).jaxpr.eqns
        loop = interpret_jaxpr(eqn.params["call"], [eqn.invars[0].aval])
        return [e.primitive.name for e in loop.jaxpr.eqns].count("while")

    assert loops((4,), lambda i: (i,)) == 0  # every block written by one point
    assert loops((4, 3), lambda i, k: (i,)) == 1  # k revisits the block: loop over k


@pytest.fixture
def cpu():
    try:
        return ember.devices("cpu")[0]
    except Exception as e:  # no cpu plugin, or the platforms chosen leave it out
        pytest.skip(f"no cpu device: {e}")


def _tiled_add(n, block):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...] * pl.program_id(0).astype(enp.float32)

    spec = pl.BlockSpec((block,), lambda i: (i,))
    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((n,), F32),
        grid=(pl.cdiv(n, block),),
        in_specs=[spec, spec],
        out_specs=spec,
    )


def test_on_cpu_eagerly_and_in_jit(cpu, rng):
    x, y = (ember.device_put(v, cpu) for v in rng.standard_normal((2, 100)).astype(F32))
    expected = np.asarray(x) + np.asarray(y) * (np.arange(100) // 32)
    call = _tiled_add(100, 32)
    np.testing.assert_allclose(np.asarray(call(x, y)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(call)(x, y)), expected, rtol=1e-6)
    batched = ember.jit(ember.vmap(call, in_axes=(0, None)))
    xs = ember.device_put(np.stack([np.asarray(x), -np.asarray(x)]), cpu)
    np.testing.assert_allclose(
        np.asarray(batched(xs, y))[1],
        -np.asarray(x) + np.asarray(y) * (np.arange(100) // 32),
        rtol=1e-6,
    )


def test_masked_ragged_kernel_on_cpu(cpu):
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        mask = i * 4 + enp.arange(4) < 10
        x = pl.load(x_ref, pl.ds(i * 4, 4), mask=mask, other=0.0)
        pl.store(o_ref, pl.ds(i * 4, 4), x + 1, mask=mask)

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((10,), F32), grid=(3,))
    x = ember.device_put(np.arange(10, dtype=F32), cpu)
    np.testing.assert_array_equal(np.asarray(ember.jit(call)(x)), np.arange(10) + 1)


def test_tiled_matmul_on_cpu(cpu, rng):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = enp.zeros_like(o_ref)

        o_ref[...] += pl.dot(x_ref[...], y_ref[...])

    x = rng.standard_normal((32, 64)).astype(F32)
    y = rng.standard_normal((64, 16)).astype(F32)
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((32, 16), F32),
        grid=(2, 4),
        in_specs=[
            pl.BlockSpec((16, 16), lambda i, k: (i, k)),
            pl.BlockSpec((16, 16), lambda i, k: (k, 0)),
        ],
        out_specs=pl.BlockSpec((16, 16), lambda i, k: (i, 0)),
    )
    result = ember.jit(call)(ember.device_put(x, cpu), ember.device_put(y, cpu))
    np.testing.assert_allclose(np.asarray(result), x @ y, rtol=1e-4, atol=1e-4)
