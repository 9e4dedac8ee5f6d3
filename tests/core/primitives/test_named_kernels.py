"""Named kernels: registered by a plugin for its platform, called inside compiled programs
through XLA's buffer callback (for real on cpu), with fallbacks and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors
from ember._src.lowering.module import lower_module
from ember._src.plugin import registries
from ember._src.plugin.manager import PluginManager, PluginSource
from ember.extend import LoweringRegistry, call_named_kernel, hookimpl

F32 = np.float32


def _cpu_device():
    try:
        return ember.devices("cpu")[0]
    except errors.BackendError as err:  # not installed or not selected (EMBER_PLATFORMS)
        pytest.skip(f"needs the cpu platform: {err}")


class _NumpyKernelsPlugin:
    """A plugin registering kernels written with NumPy for ``cpu`` (and one for
    ``reference``), the way plugin_cuda registers its cupy kernels for ``cuda``."""

    def __init__(self):
        self.contexts = []
        self.input_types = []

    @hookimpl
    def ember_register_lowerings(self, registry):
        registry.register_named_kernel("scaled_add", self.scaled_add, platform="cpu")
        registry.register_named_kernel(
            "softmax_rows", self.softmax_rows, platform="cpu", fallback=_softmax_with_ember_ops
        )
        registry.register_named_kernel("sum_and_max", self.sum_and_max, platform="cpu")
        registry.register_named_kernel("scaled_add", self.scaled_add, platform="reference")
        registry.register_named_kernel("wrong_shape", _writes_a_wrong_shape, platform="cpu")
        registry.register_named_kernel("returns", _returns_a_value, platform="cpu")

    def scaled_add(self, ctx, outputs, x, y, *, scale):
        self.contexts.append(ctx)
        self.input_types.append(type(x))
        (out,) = outputs
        np.asarray(out)[...] = np.asarray(x) + scale * np.asarray(y)

    def softmax_rows(self, ctx, outputs, x):
        x = np.asarray(x)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        np.asarray(outputs[0])[...] = e / e.sum(axis=-1, keepdims=True)

    def sum_and_max(self, ctx, outputs, x):
        total, biggest = outputs
        np.asarray(total)[...] = np.asarray(x).sum(axis=0)
        np.asarray(biggest)[...] = np.asarray(x).max()


def _softmax_with_ember_ops(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _writes_a_wrong_shape(ctx, outputs, x):
    np.asarray(outputs[0])[...] = np.zeros((5, 7), F32)


def _returns_a_value(ctx, outputs, x):
    return np.asarray(x) * 2


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setattr(registries, "_named_kernels", {})
    monkeypatch.setattr(registries, "_named_kernel_fallbacks", {})
    plugin = _NumpyKernelsPlugin()
    PluginManager([PluginSource(name="numpy_kernels", module=__name__, obj=plugin)]).load()
    return plugin


def _spec(shape, dtype=F32):
    return ember.ShapeDtypeStruct(shape, dtype)


def _scaled_add(x, y, scale=2.0):
    return call_named_kernel("scaled_add", x, y, result_shape_dtypes=_spec(x.shape), scale=scale)


# -- compiled, on cpu: the buffer callback --------------------------------------------------


def test_a_kernel_runs_inside_a_jitted_program_on_cpu(kernels):
    cpu = _cpu_device()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 4, 3)).astype(F32)

    @ember.jit
    def program(x, y):
        return jnp.sin(_scaled_add(x, y, scale=3.0)) + 1.0

    for k in range(3):  # several calls of the same executable
        args = ember.device_put(x + k, cpu), ember.device_put(y, cpu)
        got = program(*args)
        np.testing.assert_allclose(np.asarray(got), np.sin(x + k + 3.0 * y) + 1.0, rtol=1e-6)
    ctx = kernels.contexts[-1]
    assert ctx.platform == "cpu" and ctx.stream is None  # XLA's CPU runs have no stream
    # the kernel gets XLA's own buffers, not NumPy copies
    assert kernels.input_types[-1] is not np.ndarray
    text = program.lower(*args).as_text()
    assert "xla_buffer_python_cpu_callback" in text


def test_eager_calls_and_several_results(kernels):
    cpu = _cpu_device()
    x = ember.device_put(np.arange(12, dtype=F32).reshape(4, 3), cpu)
    np.testing.assert_allclose(np.asarray(_scaled_add(x, x, scale=0.5)), 1.5 * np.asarray(x))
    total, biggest = call_named_kernel(
        "sum_and_max", x, result_shape_dtypes=(_spec((3,)), _spec(()))
    )
    np.testing.assert_array_equal(np.asarray(total), [18.0, 22.0, 26.0])
    assert float(biggest) == 11.0


def test_a_kernel_and_its_fallback_agree_with_numpy(kernels):
    cpu = _cpu_device()
    x = np.random.default_rng(1).standard_normal((5, 7)).astype(F32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    kernel = ember.jit(
        lambda x: call_named_kernel("softmax_rows", x, result_shape_dtypes=_spec(x.shape))
    )
    np.testing.assert_allclose(np.asarray(kernel(ember.device_put(x, cpu))), want, rtol=1e-5)
    on_reference = kernel(ember.device_put(x, ember.devices("reference")[0]))
    np.testing.assert_allclose(np.asarray(on_reference), want, rtol=1e-5)


def test_a_kernel_writing_the_wrong_shape_is_a_callback_error(kernels):
    cpu = _cpu_device()
    x = ember.device_put(np.ones((2, 3), F32), cpu)
    run = ember.jit(
        lambda x: call_named_kernel("wrong_shape", x, result_shape_dtypes=_spec((2, 3)))
    )
    with pytest.raises(errors.CallbackError, match=r"named kernel 'wrong_shape' on platform 'cpu'"):
        np.asarray(run(x))


def test_a_kernel_returning_a_value_is_a_callback_error(kernels):
    cpu = _cpu_device()
    x = ember.device_put(np.ones((2,), F32), cpu)
    with pytest.raises(errors.CallbackError, match=r"returns None"):
        np.asarray(call_named_kernel("returns", x, result_shape_dtypes=_spec((2,))))


# -- lowering, the reference backend and errors (no jaxlib needed) ---------------------------


def test_the_lowering_is_a_buffer_callback_custom_call(kernels):
    jaxpr = ember.make_jaxpr(_scaled_add)(np.ones(3, F32), np.ones(3, F32))
    text = lower_module(jaxpr, platform="cpu", name="k")
    assert '"xla_buffer_python_cpu_callback"' in text
    assert "backend_config = {index = 0 : ui64}" in text and "has_side_effect = false" in text
    assert "named_kernel" in str(jaxpr)


def test_a_gpu_platform_uses_the_gpu_buffer_callback(kernels):
    registry = LoweringRegistry("fake_cuda")
    registry.register_named_kernel(
        "scaled_add", lambda ctx, outs, x, y, scale: None, platform="cuda"
    )
    jaxpr = ember.make_jaxpr(_scaled_add)(np.ones(3, F32), np.ones(3, F32))
    assert '"xla_buffer_python_gpu_callback"' in lower_module(jaxpr, platform="cuda", name="k")


def test_the_reference_backend_calls_a_kernel_registered_for_it_with_numpy(kernels):
    ref = ember.devices("reference")[0]
    x = ember.device_put(np.arange(3, dtype=F32), ref)
    np.testing.assert_allclose(np.asarray(_scaled_add(x, x, scale=2.0)), [0.0, 3.0, 6.0])
    assert kernels.input_types[-1] is np.ndarray


def test_no_kernel_for_the_platform_and_no_fallback_names_the_platform(kernels):
    jaxpr = ember.make_jaxpr(
        lambda x: call_named_kernel("sum_and_max", x, result_shape_dtypes=(_spec((3,)), _spec(())))
    )(np.ones((2, 3), F32))
    with pytest.raises(
        errors.LoweringError,
        match=r"'sum_and_max' has no implementation on platform 'rocm' and no fallback: "
        r"it is registered for 'cpu'",
    ):
        lower_module(jaxpr, platform="rocm", name="k")


def test_an_unregistered_kernel_is_a_clear_error(kernels):
    ref = ember.devices("reference")[0]
    x = ember.device_put(np.ones(2, F32), ref)
    with pytest.raises(errors.LoweringError, match=r"no plugin registers it for any platform"):
        call_named_kernel("nobody_has_it", x, result_shape_dtypes=_spec((2,)))


def test_a_fallback_disagreeing_with_the_declared_results_is_a_value_error(kernels):
    ref = ember.devices("reference")[0]
    x = ember.device_put(np.ones((2, 3), F32), ref)
    with pytest.raises(ValueError, match=r"computes \[f32\[2,3\]\] where result_shape_dtypes"):
        call_named_kernel("softmax_rows", x, result_shape_dtypes=_spec((3, 2)))
    with pytest.raises(ValueError, match=r"declares \[i32\[2,3\]\]"):
        call_named_kernel("softmax_rows", x, result_shape_dtypes=_spec((2, 3), np.int32))


def test_bad_result_declarations_and_parameters_are_type_errors(kernels):
    x = np.ones(2, F32)
    with pytest.raises(TypeError, match="must have shape and dtype"):
        call_named_kernel("scaled_add", x, x, result_shape_dtypes=[(2,)], scale=1.0)
    with pytest.raises(ValueError, match="declares no outputs"):
        call_named_kernel("scaled_add", x, x, result_shape_dtypes=(), scale=1.0)
    with pytest.raises(TypeError, match="must be hashable"):
        call_named_kernel("scaled_add", x, x, result_shape_dtypes=_spec((2,)), scale=[1.0])


def test_kernels_are_neither_differentiable_nor_batchable(kernels):
    x = np.ones(3, F32)
    with pytest.raises(ValueError, match="'scaled_add' cannot be differentiated"):
        ember.grad(lambda x: _scaled_add(x, x).sum())(x)
    with pytest.raises(NotImplementedError, match="'scaled_add' cannot be vmapped"):
        ember.vmap(lambda x: _scaled_add(x, x))(np.ones((2, 3), F32))


def test_registration_is_checked():
    registry = LoweringRegistry("numpy_kernels")
    with pytest.raises(ValueError, match="must name its platform"):
        registry.register_named_kernel("k", lambda *a: None, platform="")
    with pytest.raises(TypeError, match="kernel of named kernel 'k' must be callable"):
        registry.register_named_kernel("k", None, platform="cpu")
    with pytest.raises(TypeError, match="fallback of named kernel 'k' must be callable"):
        registry.register_named_kernel("k", lambda *a: None, platform="cpu", fallback=3)
    with pytest.raises(TypeError, match="non-empty string"):
        registry.register_named_kernel("", lambda *a: None, platform="cpu")
