"""pallas_call end to end (reference backend): grids, block specs, vmap, custom_vjp, aliasing,
scratch, and the errors of a call set up wrong."""

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import errors

F32 = np.dtype(np.float32)


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def blocked_add(n, block):
    spec = pl.BlockSpec((block,), lambda i: (i,))
    return pl.pallas_call(
        add_kernel,
        out_shape=ember.ShapeDtypeStruct((n,), F32),
        grid=(pl.cdiv(n, block),),
        in_specs=[spec, spec],
        out_specs=spec,
    )


def test_elementwise_add_over_a_grid(rng):
    x, y = rng.standard_normal((2, 1024)).astype(F32)
    np.testing.assert_allclose(np.asarray(blocked_add(1024, 128)(x, y)), x + y, rtol=1e-6)


def test_inside_jit_and_make_jaxpr(rng):
    x, y = rng.standard_normal((2, 256)).astype(F32)
    add = blocked_add(256, 64)
    np.testing.assert_allclose(np.asarray(ember.jit(add)(x, y)), x + y, rtol=1e-6)
    text = str(ember.make_jaxpr(add)(x, y))
    assert "pallas_call[call=PallasCall('add_kernel', grid=(4,))" in text


def test_a_ragged_size_pads_the_last_block(rng):
    x, y = rng.standard_normal((2, 1000)).astype(F32)
    np.testing.assert_allclose(np.asarray(blocked_add(1000, 128)(x, y)), x + y, rtol=1e-6)


def test_program_id_selects_the_block():
    def kernel(o_ref):
        o_ref[...] = enp.full((4,), pl.program_id(0) * 10 + pl.program_id(1), enp.int32)

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((3, 8), enp.int32),
        grid=(3, 2),
        out_specs=pl.BlockSpec((None, 4), lambda i, j: (i, j)),
    )
    expected = np.repeat(np.array([[0, 1], [10, 11], [20, 21]]), 4, axis=1)
    np.testing.assert_array_equal(np.asarray(call()), expected)


def test_num_programs_is_the_static_grid_size():
    def kernel(o_ref):
        o_ref[...] = enp.full((1,), pl.num_programs(0) * 100 + pl.num_programs(1), enp.int32)

    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((6,), enp.int32),
        grid=(6, 7),
        out_specs=pl.BlockSpec((1,), lambda i, j: (i,)),
    )
    np.testing.assert_array_equal(np.asarray(call()), [607] * 6)


def test_squeezed_dims_drop_from_the_ref(rng):
    x = rng.standard_normal((4, 3, 16)).astype(F32)
    seen = []

    def row_sum(x_ref, o_ref):
        seen.append(x_ref.shape)
        o_ref[...] = enp.sum(x_ref[...], axis=0)

    call = pl.pallas_call(
        row_sum,
        out_shape=ember.ShapeDtypeStruct((4, 16), F32),
        grid=(4,),
        in_specs=[pl.BlockSpec((pl.squeezed, 3, 16), lambda i: (i, 0, 0))],
        out_specs=pl.BlockSpec((None, 16), lambda i: (i, 0)),
    )
    np.testing.assert_allclose(np.asarray(call(x)), x.sum(axis=1), rtol=1e-5)
    assert seen == [(3, 16)]


def test_pytrees_of_inputs_and_outputs(rng):
    x = rng.standard_normal(8).astype(F32)

    def kernel(pair, outs_a, outs_b):
        a_ref, b_ref = pair
        outs_a[...] = a_ref[...] * 2
        outs_b[...] = b_ref[...] - 1

    out_shape = (ember.ShapeDtypeStruct((8,), F32), ember.ShapeDtypeStruct((8,), F32))
    a, b = pl.pallas_call(kernel, out_shape=out_shape)((x, x))
    np.testing.assert_allclose(np.asarray(a), 2 * x)
    np.testing.assert_allclose(np.asarray(b), x - 1)


def test_vmap_adds_a_grid_axis(rng):
    x = rng.standard_normal((3, 256)).astype(F32)
    y = rng.standard_normal(256).astype(F32)
    add = blocked_add(256, 64)
    np.testing.assert_allclose(
        np.asarray(ember.vmap(add, in_axes=(0, None))(x, y)), x + y, rtol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(ember.vmap(add, in_axes=(1, None))(x.T.copy(), y)), x + y, rtol=1e-6
    )


def test_vmap_keeps_program_ids_of_the_kernel(rng):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(0).astype(enp.float32)

    spec = pl.BlockSpec((2,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((6,), F32),
        grid=(3,),
        in_specs=[spec],
        out_specs=spec,
    )
    x = np.zeros((2, 6), F32)
    expected = np.broadcast_to(np.repeat([0.0, 1.0, 2.0], 2), (2, 6))
    np.testing.assert_array_equal(np.asarray(ember.vmap(call)(x)), expected)
    np.testing.assert_array_equal(np.asarray(ember.jit(ember.vmap(call))(x)), expected)


def _square_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * x_ref[...]


def _times_kernel(x_ref, g_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] * g_ref[...]


def test_custom_vjp_with_pallas_forward_and_backward(rng):
    x = rng.standard_normal(64).astype(F32)
    spec = pl.BlockSpec((16,), lambda i: (i,))
    shape = ember.ShapeDtypeStruct((64,), F32)
    square_call = pl.pallas_call(
        _square_kernel, out_shape=shape, grid=(4,), in_specs=[spec], out_specs=spec
    )
    backward_call = pl.pallas_call(
        _times_kernel, out_shape=shape, grid=(4,), in_specs=[spec, spec], out_specs=spec
    )

    @ember.custom_vjp
    def square(x):
        return square_call(x)

    square.defvjp(lambda x: (square_call(x), x), lambda x, g: (backward_call(x, g),))
    grad = ember.grad(lambda x: enp.sum(square(x)))
    np.testing.assert_allclose(np.asarray(grad(x)), 2 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(grad)(x)), 2 * x, rtol=1e-6)


def test_grad_of_a_bare_pallas_call_points_to_custom_vjp():
    square_call = pl.pallas_call(_square_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32))
    with pytest.raises(
        errors.CustomDerivativeError,
        match=r"'_square_kernel' cannot be diff.*"
        r"ember.custom_vjp",
    ):
        ember.grad(lambda x: enp.sum(square_call(x)))(np.ones(4, F32))
    with pytest.raises(errors.CustomDerivativeError):
        ember.jvp(square_call, (np.ones(4, F32),), (np.ones(4, F32),))


def test_an_aliased_output_starts_as_its_input():
    def kernel(x_ref, y_ref, o_ref):
        del y_ref  # aliased to o_ref: only the first half is written
        o_ref[:2] = x_ref[:2] * 10

    x = np.arange(4, dtype=F32)
    y = np.full(4, 7.0, F32)
    call = pl.pallas_call(
        kernel, out_shape=ember.ShapeDtypeStruct((4,), F32), input_output_aliases={1: 0}
    )
    np.testing.assert_array_equal(np.asarray(call(x, y)), [0, 10, 7, 7])
    np.testing.assert_array_equal(
        np.asarray(ember.vmap(call, in_axes=(0, None))(np.stack([x, x + 1]), y)),
        [[0, 10, 7, 7], [10, 20, 7, 7]],
    )


def test_aliases_must_match_in_type():
    call = pl.pallas_call(
        add_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32), input_output_aliases={0: 0}
    )
    with pytest.raises(ValueError, match=r"input 0 \(i32\[4\]\) is aliased to output 0"):
        call(np.zeros(4, np.int32), np.zeros(4, np.int32))
    bad = pl.pallas_call(
        add_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32), input_output_aliases={3: 0}
    )
    with pytest.raises(ValueError, match="out of range"):
        bad(np.zeros(4, F32), np.zeros(4, F32))


def test_scratch_buffers_hold_values_within_a_grid_step():
    def kernel(x_ref, o_ref, tmp_ref):
        tmp_ref[...] = x_ref[...] * 3
        o_ref[...] = tmp_ref[...] + 1

    spec = pl.BlockSpec((4,), lambda i: (i,))
    call = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((8,), F32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
        scratch_shapes=[pl.ANY((4,), F32)],
    )
    x = np.arange(8, dtype=F32)
    np.testing.assert_array_equal(np.asarray(call(x)), 3 * x + 1)


def test_specs_must_match_the_operands():
    spec = pl.BlockSpec((8,), lambda i: (i,))
    call = pl.pallas_call(
        add_kernel, out_shape=ember.ShapeDtypeStruct((8,), F32), in_specs=[spec], out_specs=spec
    )
    with pytest.raises(ValueError, match="in_specs has 1 entries, but there are 2 inputs"):
        call(np.zeros(8, F32), np.zeros(8, F32))
    with pytest.raises(TypeError, match="out_shape must be a pytree of shapes and dtypes"):
        pl.pallas_call(add_kernel, out_shape=(8,))


def test_a_kernel_returning_a_value_is_an_error():
    call = pl.pallas_call(lambda x_ref, o_ref: x_ref[...], out_shape=np.zeros(2, F32))
    with pytest.raises(ValueError, match="returned a value"):
        call(np.zeros(2, F32))


def test_storing_the_wrong_dtype_names_the_kernel():
    def to_int(x_ref, o_ref):
        o_ref[...] = x_ref[...].astype(enp.int32)

    call = pl.pallas_call(to_int, out_shape=ember.ShapeDtypeStruct((4,), F32))
    with pytest.raises(errors.EmberTypeError, match="in Pallas kernel 'to_int'.*int32"):
        call(np.zeros(4, F32))


def test_compiler_params_are_kept_per_compiler():
    params = pl.triton.CompilerParams(num_warps=4, num_stages=2)
    call = pl.pallas_call(
        add_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32), compiler_params=params
    )
    jaxpr = ember.make_jaxpr(call)(np.zeros(4, F32), np.zeros(4, F32))
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.params["call"].compiler_params == {"triton": {"num_warps": 4, "num_stages": 2}}
    assert eqn.params["interpret"] is False
    with pytest.raises(TypeError, match="compiler_params must be a dict"):
        pl.pallas_call(add_kernel, out_shape=np.zeros(4, F32), compiler_params=3)


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = enp.zeros_like(acc_ref)

    acc_ref[...] += pl.dot(x_ref[...], y_ref[...])

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def tiled_matmul(m, n, k, bm, bn, bk):
    return pl.pallas_call(
        matmul_kernel,
        out_shape=ember.ShapeDtypeStruct((m, n), F32),
        grid=(pl.cdiv(m, bm), pl.cdiv(n, bn), pl.cdiv(k, bk)),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pl.ANY((bm, bn), F32)],
    )


def test_tiled_matmul_with_an_accumulator_over_k(rng):
    x = rng.standard_normal((64, 96)).astype(F32)
    y = rng.standard_normal((96, 48)).astype(F32)
    call = tiled_matmul(64, 48, 96, 32, 16, 32)
    np.testing.assert_allclose(np.asarray(call(x, y)), x @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ember.jit(call)(x, y)), x @ y, rtol=1e-4, atol=1e-4)


def test_a_call_is_traced_once_per_argument_types():
    traces = []

    def kernel(x_ref, o_ref):
        traces.append(x_ref.shape)
        o_ref[...] = x_ref[...] + 1

    call = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((4,), F32))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(call(np.zeros(4, F32))), np.ones(4))
    assert traces == [(4,)]


def test_grad_through_a_call_on_values_it_does_not_depend_on():
    square_call = pl.pallas_call(_square_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32))
    y = np.arange(4, dtype=F32)

    def f(x):
        return enp.sum(x * square_call(ember.lax.stop_gradient(x) + y))

    x = np.ones(4, F32)
    np.testing.assert_allclose(np.asarray(ember.grad(f)(x)), (x + y) ** 2)


def test_a_kernel_may_capture_constants_but_not_traced_values():
    c = np.arange(4, dtype=F32)

    def with_constant(x_ref, o_ref):
        o_ref[...] = x_ref[...] + c

    call = pl.pallas_call(with_constant, out_shape=ember.ShapeDtypeStruct((4,), F32))
    np.testing.assert_array_equal(np.asarray(call(np.ones(4, F32))), c + 1)

    @ember.jit
    def f(x, y):
        def with_tracer(x_ref, o_ref):
            o_ref[...] = x_ref[...] + y

        return pl.pallas_call(with_tracer, out_shape=ember.ShapeDtypeStruct((4,), F32))(x)

    with pytest.raises(ValueError, match=r"'with_tracer' captures traced values \[f32\[4\]\]"):
        f(np.ones(4, F32), np.ones(4, F32))


def test_debug_prints_the_kernel_jaxpr(capsys):
    call = pl.pallas_call(
        _square_kernel, out_shape=ember.ShapeDtypeStruct((4,), F32), grid=(1,), debug=True
    )
    call(np.ones(4, F32))
    printed = capsys.readouterr().out
    assert "The kernel jaxpr of pallas_call '_square_kernel' (grid (1,))" in printed
    assert "Ref{f32[4]}" in printed
