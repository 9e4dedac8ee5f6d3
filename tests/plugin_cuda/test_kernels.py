"""The CUDA plugin's named kernels without a GPU: what the plugin registers and when, how the
kernels lower on ``cuda``, and the errors elsewhere (the kernels themselves run in
test_kernels_gpu.py)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from ember_plugin_cuda import kernel_names, plugin

import ember
from ember import errors
from ember._src.lowering.module import lower_module
from ember._src.nn.functions import CUDA_ATTENTION_KERNEL
from ember._src.plugin import registries
from ember.extend import LoweringRegistry
from tests.plugin_cuda.util import project

F32 = np.float32


@pytest.fixture
def no_named_kernels(monkeypatch):
    monkeypatch.setattr(registries, "_named_kernels", {})
    monkeypatch.setattr(registries, "_named_kernel_fallbacks", {})


def _stand_in_kernels(registry):
    """The plugin's kernel names registered for cuda with kernels that never run here."""
    for name in (kernel_names.SOFTMAX, kernel_names.BIAS_ACTIVATION, kernel_names.ATTENTION):
        registry.register_named_kernel(
            name, lambda ctx, outputs, *inputs, **params: None, platform="cuda"
        )


def test_the_kernels_are_registered_when_cupy_is_installed(tmp_path, monkeypatch):
    (tmp_path / "ember_test_kernels_stand_in.py").write_text(
        "calls = []\ndef register(registry, platform):\n    calls.append((registry, platform))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugin, "CUPY_MODULE", "numpy")  # any importable module
    monkeypatch.setattr(plugin, "KERNELS_MODULE", "ember_test_kernels_stand_in")
    registry = LoweringRegistry("cuda")
    plugin.ember_register_lowerings(registry)
    stand_in = importlib.import_module("ember_test_kernels_stand_in")
    assert stand_in.calls == [(registry, "cuda")]


def test_without_cupy_no_kernel_is_registered(monkeypatch, no_named_kernels):
    monkeypatch.setattr(plugin, "CUPY_MODULE", "ember_test_no_such_cupy")
    monkeypatch.setattr(plugin, "KERNELS_MODULE", "ember_test_no_such_kernels")  # never imported
    plugin.ember_register_lowerings(LoweringRegistry("cuda"))
    assert registries.named_kernel_platforms(kernel_names.ATTENTION) == []


def test_the_cuda12_extra_brings_cupy():
    extra = project()["optional-dependencies"]["cuda12"]
    assert any(spec.startswith("cupy-cuda12x") for spec in extra)


def test_ember_calls_the_attention_kernel_the_plugin_registers():
    assert CUDA_ATTENTION_KERNEL == kernel_names.ATTENTION


def test_on_cuda_the_kernels_are_gpu_buffer_callbacks(no_named_kernels):
    _stand_in_kernels(LoweringRegistry("cuda"))
    q = np.ones((1, 8, 2, 4), F32)

    def program(q, x, b):
        out = ember.nn.dot_product_attention(q, q, q, is_causal=True, implementation="cuda")
        y = ember.extend.call_named_kernel(
            kernel_names.BIAS_ACTIVATION,
            x,
            b,
            result_shape_dtypes=ember.ShapeDtypeStruct(x.shape, x.dtype),
            activation="gelu",
        )
        return out, y

    jaxpr = ember.make_jaxpr(program)(q, np.ones((3, 4), F32), np.ones(4, F32))
    text = lower_module(jaxpr, platform="cuda", name="k")
    assert text.count('"xla_buffer_python_gpu_callback"') == 2
    assert "tensor<1x8x2x4xf32>" in text


def test_cuda_attention_off_cuda_is_an_error_naming_the_platform(no_named_kernels):
    _stand_in_kernels(LoweringRegistry("cuda"))
    q = ember.device_put(np.ones((1, 8, 2, 4), F32), ember.devices("reference")[0])
    with pytest.raises(
        errors.LoweringError,
        match=r"'cuda.dot_product_attention' has no implementation on platform 'reference'.*"
        r"registered for 'cuda'",
    ):
        ember.nn.dot_product_attention(q, q, q, implementation="cuda")


def test_cuda_attention_refuses_what_its_kernel_does_not_do():
    q = np.ones((1, 8, 2, 4), F32)
    with pytest.raises(ValueError, match=r"does not support bias, return_residual"):
        ember.nn.dot_product_attention(
            q, q, q, bias=np.zeros((8, 8), F32), return_residual=True, implementation="cuda"
        )
    with pytest.raises(TypeError, match="takes float32 or float16 arrays, got query of dtype"):
        ember.nn.dot_product_attention(q.astype(ember.numpy.bfloat16), q, q, implementation="cuda")
    with pytest.raises(NotImplementedError, match="only None, 'xla' or 'cuda'"):
        ember.nn.dot_product_attention(q, q, q, implementation="triton")
