"""ember.ffi.ffi_call: C++ handlers (handlers.cc) called under jit and eagerly on cpu, checked
against NumPy; vmap with every vmap_method; the StableHLO a call lowers to; its errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import errors, ffi
from tests.core.ffi.conftest import RMS_NORM, SCALE_COUNT

X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def rms_norm_np(x, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def rms_norm(x, eps=1e-5, **options):
    out = ember.ShapeDtypeStruct(x.shape, x.dtype)
    return ffi.ffi_call(RMS_NORM, out, **options)(x, eps=np.float32(eps))


def scale_count(x, offset, **options):
    outs = (ember.ShapeDtypeStruct(x.shape, x.dtype), ember.ShapeDtypeStruct((), np.int32))
    return ffi.ffi_call(SCALE_COUNT, outs, **options)(x, offset=offset)


def test_a_handler_runs_under_jit_and_eagerly(handlers):
    np.testing.assert_allclose(ember.jit(rms_norm)(X), rms_norm_np(X), rtol=1e-6)
    np.testing.assert_allclose(rms_norm(ember.numpy.asarray(X), 0.5), rms_norm_np(X, 0.5), 1e-6)


def test_an_int64_attribute_and_two_results(handlers):
    scaled, count = ember.jit(scale_count, static_argnums=1)(X, 4)
    np.testing.assert_array_equal(scaled, X * 4)
    assert int(count) == 10 and count.dtype == np.int32
    out = scale_count(ember.numpy.asarray(X), 2)
    assert isinstance(out, tuple)
    np.testing.assert_array_equal(out[0], X * 2)


def test_a_list_of_results_comes_back_as_a_list(handlers):
    outs = [ember.ShapeDtypeStruct(X.shape, X.dtype), ember.ShapeDtypeStruct((), np.int32)]
    got = ember.jit(lambda x: ffi.ffi_call(SCALE_COUNT, outs)(x, offset=1))(X)
    assert isinstance(got, list) and int(got[1]) == 7


@pytest.mark.parametrize(
    "method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"]
)
def test_vmap_with_each_method(handlers, method):
    xs = np.stack([X, 2 * X + 1, X - 3])
    got = ember.vmap(lambda x: rms_norm(x, vmap_method=method))(xs)
    np.testing.assert_allclose(got, rms_norm_np(xs), rtol=1e-6)
    got = ember.jit(ember.vmap(lambda x: rms_norm(x, vmap_method=method)))(xs)
    np.testing.assert_allclose(got, rms_norm_np(xs), rtol=1e-6)


def test_sequential_unrolled_calls_the_handler_once_per_element_without_a_loop():
    def count_calls(method):
        call = ffi.ffi_call("t", ember.ShapeDtypeStruct((3,), np.float32), vmap_method=method)
        text = ember.jit(ember.vmap(call)).lower(np.ones((4, 3), np.float32)).as_text()
        return text.count("stablehlo.custom_call"), "stablehlo.while" in text

    assert count_calls("sequential") == (1, True)
    assert count_calls("sequential_unrolled") == (4, False)


def test_vmap_legacy_vectorized_passes_the_batch_through(handlers):
    xs = np.stack([X, X + 1])
    got = ember.jit(ember.vmap(lambda x: rms_norm(x, vmap_method="legacy_vectorized")))(xs)
    np.testing.assert_allclose(got, rms_norm_np(xs), rtol=1e-6)


def test_sequential_vmap_calls_once_per_element(handlers):
    # the handler sees one element: its count is the element's size, not the batch's
    xs = np.stack([X, X, X, X])
    scaled, count = ember.vmap(lambda x: scale_count(x, 3, vmap_method="sequential"))(xs)
    np.testing.assert_array_equal(count, [9, 9, 9, 9])
    np.testing.assert_array_equal(scaled, xs * 3)
    _, count = ember.vmap(lambda x: scale_count(x, 3, vmap_method="expand_dims"))(xs)
    # one call saw all 24 elements and wrote the first count (a batched handler must fill
    # its whole batched result: this one does not, which is the handler's business)
    assert int(count[0]) == 27


def test_broadcast_all_and_expand_dims_differ_for_an_unbatched_operand():
    def operand_types(method):
        call = ffi.ffi_call("t", ember.ShapeDtypeStruct((3,), np.float32), vmap_method=method)
        f = ember.vmap(lambda b, x: call(b, x), in_axes=(0, None))
        text = ember.jit(f).lower(np.zeros((5, 2), np.float32), np.ones(3, np.float32)).as_text()
        (line,) = [line for line in text.splitlines() if "custom_call" in line]
        return line.split(" : (")[1].split(")")[0], line

    # the unbatched operand: with a unit batch axis, or broadcast to the whole batch
    assert operand_types("expand_dims")[0] == "tensor<5x2xf32>, tensor<1x3xf32>"
    assert operand_types("broadcast_all")[0] == "tensor<5x2xf32>, tensor<5x3xf32>"
    # the batch axis is the most major: last in XLA's minor-to-major layouts
    line = operand_types("expand_dims")[1]
    assert "operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]>" in line
    # legacy_vectorized passes the unbatched operand as it is
    assert operand_types("legacy_vectorized")[0] == "tensor<5x2xf32>, tensor<3xf32>"


def test_a_column_major_input_layout_reaches_the_handler(handlers):
    # XLA hands the handler the operand's memory in the order asked for: the handler's
    # rows of three are then read down the columns of x
    got = ember.jit(lambda x: rms_norm(x, input_layouts=[(1, 0)]))(X)
    np.testing.assert_allclose(got, rms_norm_np(X.T.reshape(2, 3)), rtol=1e-6)


def test_an_input_output_alias(handlers):
    out = ember.jit(lambda x: rms_norm(x * 1, input_output_aliases={0: 0}))(X)
    np.testing.assert_allclose(out, rms_norm_np(X), rtol=1e-6)


def test_the_lowered_custom_call():
    def f(x):
        outs = (ember.ShapeDtypeStruct((2, 3), np.float32), ember.ShapeDtypeStruct((), np.int32))
        call = ffi.ffi_call("some_target", outs, has_side_effect=True, input_output_aliases={0: 0})
        return call(
            x,
            eps=np.float32(1e-5),
            n=3,
            flag=True,
            name="hi",
            f=1.5,
            i8=np.int8(2),
            arr=np.arange(3, dtype=np.int32),
        )

    text = ember.jit(f).lower(X).as_text()
    (line,) = [line for line in text.splitlines() if "stablehlo.custom_call" in line]
    # what JAX 0.10.2 writes for the same call (its attributes print in decimal, ours in hex)
    assert 'call_target_name = "some_target"' in line
    assert "api_version = 4 : i32" in line
    assert "has_side_effect = true" in line
    assert (
        'backend_config = {arr = dense<"0x000000000100000002000000"> : tensor<3xi32>, '
        "eps = 0x3727C5AC : f32, f = 0x3FF8000000000000 : f64, flag = true, i8 = 2 : i8, "
        'n = 3 : i64, name = "hi"}'
    ) in line
    assert "operand_layouts = [dense<[1, 0]> : tensor<2xindex>]" in line
    assert "result_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<> : tensor<0xindex>]" in line
    assert (
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], "
        "operand_index = 0, operand_tuple_indices = []>]"
    ) in line


def test_a_legacy_target_takes_a_string_backend_config():
    call = ffi.ffi_call(
        "old",
        ember.ShapeDtypeStruct((3,), np.float32),
        custom_call_api_version=2,
        legacy_backend_config="abc",
    )
    text = ember.jit(call).lower(np.ones(3, np.float32)).as_text()
    assert "api_version = 2 : i32" in text and 'backend_config = "abc"' in text


def test_a_call_with_a_side_effect_is_kept_when_unused():
    def f(x, effect):
        ffi.ffi_call("t", ember.ShapeDtypeStruct((3,), np.float32), has_side_effect=effect)(x)
        return x

    x = np.ones(3, np.float32)
    assert "ffi_call" in str(ember.make_jaxpr(lambda x: f(x, True))(x))
    assert "custom_call" in ember.jit(lambda x: f(x, True)).lower(x).as_text()
    assert "custom_call" not in ember.jit(lambda x: f(x, False)).lower(x).as_text()


def test_an_unknown_target_fails_to_compile_naming_it(cpu):
    call = ffi.ffi_call("ember_test_no_such_target", ember.ShapeDtypeStruct((3,), np.float32))
    with pytest.raises(errors.CompileError, match="ember_test_no_such_target"):
        ember.jit(call)(np.ones(3, np.float32))


def test_an_attribute_of_the_wrong_type_fails_naming_the_types(handlers):
    out = ember.ShapeDtypeStruct(X.shape, X.dtype)
    # a Python float is f64, as in JAX; the handler reads an f32
    with pytest.raises(errors.ExecutionError, match="expected F32 but got F64"):
        ember.jit(lambda x: ffi.ffi_call(RMS_NORM, out)(x, eps=1e-5))(X)
    with pytest.raises(TypeError, match="attribute eps=\\[1\\] has type list"):
        ffi.ffi_call(RMS_NORM, out)(X, eps=[1])
    with pytest.raises(TypeError, match="attribute eps"):
        ember.jit(lambda x: ffi.ffi_call(RMS_NORM, out)(x, eps=x))(X)


def test_a_call_is_not_differentiable():
    def f(x):
        return ffi.ffi_call("t", ember.ShapeDtypeStruct((3,), np.float32))(x).sum()

    with pytest.raises(ValueError, match="'t' cannot be differentiated.*custom_vjp"):
        ember.grad(f)(np.ones(3, np.float32))


def test_vmap_without_a_vmap_method_is_an_error():
    call = ffi.ffi_call("t", ember.ShapeDtypeStruct((3,), np.float32))
    with pytest.raises(NotImplementedError, match="needs vmap_method"):
        ember.make_jaxpr(ember.vmap(call))(np.ones((2, 3), np.float32))


def test_the_reference_backend_cannot_run_a_call():
    device = ember.devices("reference")[0]
    call = ffi.ffi_call("ember_test_somewhere", ember.ShapeDtypeStruct((3,), np.float32))
    x = ember.device_put(np.ones(3, np.float32), device)
    with pytest.raises(errors.BackendError, match="'ember_test_somewhere'.*reference backend"):
        call(x)
    with pytest.raises(errors.BackendError, match="reference backend"):
        ember.jit(call)(x)


def test_bad_arguments():
    out = ember.ShapeDtypeStruct((3,), np.float32)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        ffi.ffi_call("t", out, vmap_method="loop")
    with pytest.raises(ValueError, match="legacy_backend_config needs"):
        ffi.ffi_call("t", out, legacy_backend_config="x")
    with pytest.raises(TypeError, match="must have shape and dtype"):
        ffi.ffi_call("t", 3)
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="1 input layouts for 2 inputs"):
        ffi.ffi_call("t", out, input_layouts=[None])(x, x)
    with pytest.raises(ValueError, match="no order of its 1 dimensions"):
        ffi.ffi_call("t", out, input_layouts=[(0, 1)])(x)
    with pytest.raises(ValueError, match="maps input 0 .* to output 0"):
        ffi.ffi_call("t", out, input_output_aliases={0: 0})(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="there are 1 inputs"):
        ffi.ffi_call("t", out, input_output_aliases={1: 0})(x)


def test_an_exported_program_with_a_call_runs_after_a_round_trip(handlers):
    # The custom call and its typed attributes survive serialization; the handler is found by
    # name in the process that calls the deserialized program (registered here).
    exported = ember.export.export(ember.jit(rms_norm))(X)
    blob = exported.serialize()
    restored = ember.export.deserialize(blob)
    np.testing.assert_allclose(restored.call(X), rms_norm_np(X), rtol=1e-6)
    np.testing.assert_allclose(ember.jit(restored.call)(X * 2), rms_norm_np(X * 2), rtol=1e-6)
