"""The batched parallel step gives what the sequential grid loop gives, and picks its axes
only where that is safe."""

import dataclasses

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax
from ember._src.interpreters.discharge import discharge_state
from ember._src.pallas.interpret import _written_refs, interpret
from ember._src.pallas.parallel_grid import _axis_groups, parallel_axes, resident_operands

F32 = np.dtype(np.float32)


def _call_of(fn, *args):
    """The PallasCall that ``fn(*args)`` binds."""
    (eqn,) = [
        e for e in ember.make_jaxpr(fn)(*args).jaxpr.eqns if e.primitive.name == "pallas_call"
    ]
    return eqn.params["call"]


def _axes(call):
    kernel = discharge_state(call.kernel)
    return parallel_axes(call, kernel, _written_refs(kernel, len(call.block_mappings)))


def _both_ways(call, *args):
    """The outputs of the batched path and of the sequential loop."""
    batched = ember.jit(lambda *a: interpret(call, a))(*args)
    looped = ember.jit(lambda *a: interpret(call, a, batch_parallel=False))(*args)
    return [np.asarray(x) for x in batched], [np.asarray(x) for x in looped]


def _assert_same(call, *args):
    batched, looped = _both_ways(call, *args)
    for b, s in zip(batched, looped):
        np.testing.assert_array_equal(b, s)
    return batched


def _matmul(m, n, k, block):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = enp.zeros(o_ref.shape, o_ref.dtype)

        o_ref[...] += enp.dot(x_ref[...], y_ref[...])

    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((m, n), F32),
        grid=(pl.cdiv(m, block), pl.cdiv(n, block), pl.cdiv(k, block)),
        in_specs=[
            pl.BlockSpec((block, block), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((block, block), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((block, block), lambda i, j, kk: (i, j)),
    )


def test_a_reduction_axis_stays_sequential_and_the_others_batch(rng):
    x = rng.standard_normal((16, 24)).astype(F32)
    y = rng.standard_normal((24, 16)).astype(F32)
    call = _call_of(_matmul(16, 16, 24, 8), x, y)
    assert _axes(call) == (0, 1)
    (out,) = _assert_same(call, x, y)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def _primitive_names(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def test_a_revisited_output_stays_blocks_for_the_whole_loop(rng):
    # The output ignores the reduction axis: it is cut into blocks once, before the loop, and
    # written back once after it; the loop body moves no output block in or out of the array.
    x = rng.standard_normal((16, 24)).astype(F32)
    y = rng.standard_normal((24, 16)).astype(F32)
    call = _call_of(_matmul(16, 16, 24, 8), x, y)
    assert resident_operands(call, (0, 1)) == [False, False, True]
    jaxpr = ember.make_jaxpr(lambda x, y: interpret(call, (x, y)))(x, y).jaxpr
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    body = loop.params["body_jaxpr"].jaxpr
    assert "dynamic_update_slice" not in _primitive_names(body)
    assert _primitive_names(jaxpr).count("dynamic_update_slice") == 1


def test_a_resident_output_covering_part_of_its_array_keeps_the_rest_uninitialised(rng):
    # 12 elements, of which the (2,) parallel axis writes blocks 0 and 1 only; the second grid
    # axis sums into them. The last block is never written: it reads as uninitialised (NaN).
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = enp.zeros(o_ref.shape, o_ref.dtype)

        o_ref[...] += x_ref[...]

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((12,), F32),
        grid=(2, 3),
        in_specs=[pl.BlockSpec((4,), lambda i, k: (i + 2 * k,))],
        out_specs=pl.BlockSpec((4,), lambda i, k: (i,)),
    )
    x = rng.standard_normal(24).astype(F32)
    pc = _call_of(call, x)
    assert _axes(pc) == (0,) and resident_operands(pc, (0,)) == [False, True]
    (out,) = _assert_same(pc, x)
    np.testing.assert_allclose(out[:8], x.reshape(3, 8).sum(0), rtol=1e-5)
    assert np.isnan(out[8:]).all()


def test_ragged_blocks_read_padding_and_drop_writes_past_the_edge(rng):
    # 10x6 in 4x4 blocks; the second input is read transposed, the third at a computed index
    # (reversed rows: gathered per grid point instead of sliced once).
    def kernel(x_ref, t_ref, r_ref, o_ref):
        o_ref[...] = x_ref[...] + t_ref[...].T + enp.nan_to_num(r_ref[...], nan=100.0)

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((10, 6), F32),
        grid=(3, 2),
        in_specs=[
            pl.BlockSpec((4, 4), lambda i, j: (i, j)),
            pl.BlockSpec((4, 4), lambda i, j: (j, i)),
            pl.BlockSpec((4, 4), lambda i, j: (2 - i, j)),
        ],
        out_specs=pl.BlockSpec((4, 4), lambda i, j: (i, j)),
    )
    x = rng.standard_normal((10, 6)).astype(F32)
    t = rng.standard_normal((6, 10)).astype(F32)
    r = rng.standard_normal((10, 6)).astype(F32)
    pc = _call_of(call, x, t, r)
    assert _axes(pc) == (0, 1)
    (out,) = _assert_same(pc, x, t, r)
    padded = np.full((12, 8), np.nan, F32)
    padded[:10, :6] = r
    reversed_blocks = np.concatenate([padded[8:12], padded[4:8], padded[0:4]])
    expected = x + t.T + np.nan_to_num(reversed_blocks[:10, :6], nan=100.0)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_squeezed_dimensions(rng):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + pl.program_id(1).astype(enp.float32)

    spec = pl.BlockSpec((None, 8), lambda b, j: (b, j))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((3, 16), F32),
        grid=(3, 2),
        in_specs=[spec],
        out_specs=spec,
    )
    x = rng.standard_normal((3, 16)).astype(F32)
    pc = _call_of(call, x)
    assert _axes(pc) == (0, 1)
    (out,) = _assert_same(pc, x)
    np.testing.assert_allclose(out, x * 2 + (np.arange(16) // 8), rtol=1e-6)


def test_program_id_and_num_programs_per_point():
    def kernel(o_ref):
        value = pl.program_id(0) * pl.num_programs(1) + pl.program_id(1)
        o_ref[...] = enp.full(o_ref.shape, value, enp.int32)

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((4, 6), enp.int32),
        grid=(2, 3),
        out_specs=pl.BlockSpec((2, 2), lambda i, j: (i, j)),
    )
    pc = _call_of(call)
    assert _axes(pc) == (0, 1)
    (out,) = _assert_same(pc)
    expected = np.repeat(np.repeat(np.arange(6).reshape(2, 3), 2, axis=0), 2, axis=1)
    np.testing.assert_array_equal(out, expected)


def test_axes_every_operand_uses_alike_run_as_one_and_keep_their_program_ids(rng):
    # (b, h) lead every operand together and are mapped as one axis of 6 points; the query
    # axis i is used by the output only, as in an attention kernel's whole-sequence keys.
    def kernel(x_ref, o_ref):
        b, h, i = pl.program_id(0), pl.program_id(1), pl.program_id(2)
        rows = x_ref[pl.ds(i * 2, 2)]
        o_ref[...] = rows + (b * 100 + h * 10 + i).astype(enp.float32)

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((2, 3, 8), F32),
        grid=(2, 3, 4),
        in_specs=[pl.BlockSpec((None, None, 8), lambda b, h, i: (b, h, 0))],
        out_specs=pl.BlockSpec((None, None, 2), lambda b, h, i: (b, h, i)),
    )
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    pc = _call_of(call, x)
    assert _axes(pc) == (0, 1, 2)
    assert _axis_groups([0, 1, 2], [{0, 1}, {0, 1, 2}]) == [[0, 1], [2]]
    (out,) = _assert_same(pc, x)
    ids = np.arange(2)[:, None, None] * 100 + np.arange(3)[None, :, None] * 10
    expected = x + (ids + np.repeat(np.arange(4), 2)[None, None, :]).astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_vmap_of_a_kernel_batches_its_new_grid_axis(rng):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(0).astype(enp.float32)

    spec = pl.BlockSpec((4,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((8,), F32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    xs = rng.standard_normal((3, 8)).astype(F32)
    pc = _call_of(ember.vmap(call), xs)
    assert pc.grid == (3, 2) and _axes(pc) == (0, 1)
    (out,) = _assert_same(pc, xs)
    np.testing.assert_allclose(out, xs + np.arange(8) // 4, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(ember.vmap(call))(xs)), out, rtol=1e-6)


def test_scratch_is_carried_along_the_sequential_axis(rng):
    def kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            acc_ref[...] = enp.zeros(acc_ref.shape, acc_ref.dtype)

        acc_ref[...] += x_ref[...]

        @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((8,), F32),
        grid=(2, 3),
        in_specs=[pl.BlockSpec((4,), lambda i, k: (i + 2 * k,))],
        out_specs=pl.BlockSpec((4,), lambda i, k: (i,)),
        scratch_shapes=[pl.ANY((4,), enp.float32)],
    )
    x = rng.standard_normal(24).astype(F32)
    pc = _call_of(call, x)
    assert _axes(pc) == (0,)
    (out,) = _assert_same(pc, x)
    np.testing.assert_allclose(out, x.reshape(3, 8).sum(0), rtol=1e-5)


def _elementwise(index_map, grid, n=8, **kwargs):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    spec = pl.BlockSpec((4,), index_map)
    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((n,), F32),
        grid=grid,
        in_specs=[spec],
        out_specs=spec,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("index_map", "grid"),
    [
        (lambda i: (i // 2,), (4,)),  # two points write each block
        (lambda i: (0,), (2,)),  # every point writes the same block
        (lambda i: (i,), (3,)),  # the third block starts past the array: clamped onto another
        (lambda i: (1 - i,), (2,)),  # a computed index: not known to be one-to-one
    ],
)
def test_axes_whose_blocks_may_collide_stay_sequential(index_map, grid):
    x = np.arange(8, dtype=F32)
    pc = _call_of(_elementwise(index_map, grid), x)
    assert _axes(pc) == ()
    _assert_same(pc, x)


def test_aliased_outputs_and_written_inputs_keep_the_loop():
    x = np.arange(8, dtype=F32)
    aliased = _call_of(_elementwise(lambda i: (i,), (2,), input_output_aliases={0: 0}), x)
    assert _axes(aliased) == ()

    def kernel(x_ref, o_ref):
        x_ref[...] = x_ref[...] * 2
        o_ref[...] = x_ref[...]

    spec = pl.BlockSpec((4,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((8,), F32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    writes_input = _call_of(call, x)
    assert _axes(writes_input) == ()
    np.testing.assert_array_equal(np.asarray(call(x)), x * 2)


def test_a_dimension_semantics_hint_keeps_an_axis_in_order():
    x = np.arange(8, dtype=F32)
    pc = _call_of(_elementwise(lambda i: (i,), (2,)), x)
    assert _axes(pc) == (0,)
    hinted = dataclasses.replace(
        pc, compiler_params={"tpu": {"dimension_semantics": ("arbitrary",)}}
    )
    assert _axes(hinted) == ()


def _prefix_sums(rows, cols):
    """Row i of the output: the sum of the input's rows 0..i (a loop of i + 1 steps)."""

    def kernel(x_ref, o_ref):
        i = pl.program_id(1)

        def step(r, acc):
            return acc + x_ref[r, :]

        o_ref[...] = lax.fori_loop(0, i + 1, step, enp.zeros((cols,), enp.float32))

    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((2, rows, cols), F32),
        grid=(2, rows),
        in_specs=[pl.BlockSpec((None, rows, cols), lambda b, i: (b, 0, 0))],
        out_specs=pl.BlockSpec((None, None, cols), lambda b, i: (b, i, 0)),
    )


def test_an_axis_a_loop_bound_depends_on_is_looped_over(rng):
    # Batched, every program would run as many steps as the last one needs.
    x = rng.standard_normal((2, 5, 3)).astype(F32)
    pc = _call_of(_prefix_sums(5, 3), x)
    assert _axes(pc) == (0,)
    (out,) = _assert_same(pc, x)
    np.testing.assert_allclose(out, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-6)
