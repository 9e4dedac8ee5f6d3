"""A fused bias + activation: ``activation(x + bias)`` with ``bias`` broadcast along the last
axis, in one elementwise CUDA kernel (one read of ``x``, one write), computed in float32."""

from __future__ import annotations

from typing import Any

import cupy

from ember.extend import KernelContext
from ember_plugin_cuda.kernel_names import BIAS_ACTIVATION
from ember_plugin_cuda.kernels.device import as_cupy, check_dtype, on_program_stream

# activation name -> CUDA expression of the float32 ``v`` (x + bias); gelu is the tanh
# approximation (ember.nn.gelu's default, approximate=True).
ACTIVATIONS = {
    "identity": "v",
    "relu": "fmaxf(v, 0.0f)",
    "gelu": "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))",
    "silu": "v / (1.0f + __expf(-v))",
    "sigmoid": "1.0f / (1.0f + __expf(-v))",
    "tanh": "tanhf(v)",
}

_kernels: dict[str, cupy.ElementwiseKernel] = {}


def _kernel(activation: str) -> cupy.ElementwiseKernel:
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"the cuda kernel {BIAS_ACTIVATION!r} has no activation {activation!r}; it has "
            f"{', '.join(sorted(ACTIVATIONS))}"
        )
    if activation not in _kernels:
        _kernels[activation] = cupy.ElementwiseKernel(
            "T x, raw T bias, int64 width",
            "T y",
            f"float v = (float)x + (float)bias[i % width]; y = (T)({ACTIVATIONS[activation]});",
            f"ember_bias_{activation}",
        )
    return _kernels[activation]


def bias_activation_kernel(
    ctx: KernelContext, outputs: list[Any], x: Any, bias: Any, *, activation: str
) -> None:
    """The named kernel ``cuda.bias_activation``: ``outputs[0] = activation(x + bias)``,
    ``bias`` of shape ``x.shape[-1:]``; static parameter ``activation`` (see ACTIVATIONS)."""
    kernel = _kernel(activation)
    with on_program_stream(ctx, outputs[0]):
        xs, bs = as_cupy([x, bias])
        (out,) = as_cupy(outputs)
        check_dtype(BIAS_ACTIVATION, xs)
        if bs.shape != xs.shape[-1:]:
            raise ValueError(
                f"the cuda kernel {BIAS_ACTIVATION!r} needs a bias of shape {xs.shape[-1:]}, "
                f"got {bs.shape}"
            )
        kernel(cupy.ascontiguousarray(xs), bs.astype(xs.dtype), xs.shape[-1], out)
