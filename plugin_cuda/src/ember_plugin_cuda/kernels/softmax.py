"""A fused softmax over the last axis: one CUDA block per row reads the row, reduces its
maximum and its sum of exponentials with warp shuffles, and writes the normalised row: one
pass over memory per step instead of XLA's separate reduce/subtract/exp/reduce/divide.

The same kernel scales the logits first and can mask them causally, which is what the
attention kernel (``attention.py``) needs between its two matrix products.
"""

from __future__ import annotations

from typing import Any

import cupy

from ember.extend import KernelContext
from ember_plugin_cuda.kernel_names import SOFTMAX
from ember_plugin_cuda.kernels.device import as_cupy, check_dtype, on_program_stream

# Row-wise softmax of x * scale; with causal, row r (query position r % q_len) keeps the
# columns c <= r % q_len and writes zeros after them. Float32 in and out.
_SOURCE = r"""
__device__ __forceinline__ float warp_reduce(float v, bool is_max) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other = __shfl_xor_sync(0xffffffff, v, offset);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}

// The block-wide max or sum of v (blockDim.x is a multiple of 32, at most 1024).
__device__ float block_reduce(float v, float* scratch, bool is_max) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce(v, is_max);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const float identity = is_max ? __int_as_float(0xff800000) : 0.0f;
    v = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : identity;
    if (warp == 0) v = warp_reduce(v, is_max);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();  // scratch is reused by the next reduction
    return v;
}

extern "C" __global__ void scaled_softmax_rows(
        const float* __restrict__ x, float* __restrict__ y, long long rows, int cols,
        float scale, int causal, int q_len) {
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    const int limit = causal ? min(cols, (int)(row % q_len) + 1) : cols;

    float m = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < limit; c += blockDim.x) m = fmaxf(m, xr[c] * scale);
    m = block_reduce(m, scratch, true);

    float s = 0.0f;
    for (int c = threadIdx.x; c < limit; c += blockDim.x) s += __expf(xr[c] * scale - m);
    s = block_reduce(s, scratch, false);

    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = c < limit ? __expf(xr[c] * scale - m) * inv : 0.0f;
}
"""

_THREADS = 256
_kernel = cupy.RawKernel(_SOURCE, "scaled_softmax_rows")


def softmax_rows(
    x: cupy.ndarray, out: cupy.ndarray, *, scale: float = 1.0, causal_q_len: int = 0
) -> None:
    """``out = softmax(x * scale)`` over the last axis, on cupy's current stream. Both are
    contiguous float32; ``causal_q_len`` > 0 masks row r to its first ``r % q_len + 1``
    columns."""
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    if rows == 0:
        return
    _kernel(
        (rows,),
        (_THREADS,),
        (
            x,
            out,
            cupy.int64(rows),
            cupy.int32(cols),
            cupy.float32(scale),
            cupy.int32(causal_q_len > 0),
            cupy.int32(max(causal_q_len, 1)),
        ),
    )


def softmax_kernel(ctx: KernelContext, outputs: list[Any], x: Any) -> None:
    """The named kernel ``cuda.softmax``: softmax over the last axis of a float32 or float16
    array (computed in float32)."""
    with on_program_stream(ctx, outputs[0]):
        (xs,) = as_cupy([x])
        (out,) = as_cupy(outputs)
        check_dtype(SOFTMAX, xs)
        if xs.dtype == cupy.float32:
            softmax_rows(cupy.ascontiguousarray(xs), out)
        else:
            result = cupy.empty(xs.shape, cupy.float32)
            softmax_rows(cupy.ascontiguousarray(xs, cupy.float32), result)
            out[...] = result.astype(out.dtype)
