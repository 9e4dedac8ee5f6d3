"""Scaled dot-product attention on ``(batch, seq, heads, head_dim)`` arrays (JAX's layout):
``softmax(q kᵀ · scale [causal]) v``, with the two matrix products done by cuBLAS (cupy's
batched ``matmul``) and scaling, causal masking and the softmax fused into one kernel between
them (``softmax.py``). Grouped-query attention (fewer key/value heads) is supported. This is
what ``ember.nn.dot_product_attention(..., implementation="cuda")`` calls."""

from __future__ import annotations

from typing import Any

import cupy

from ember.extend import KernelContext
from ember_plugin_cuda.kernel_names import ATTENTION
from ember_plugin_cuda.kernels.device import as_cupy, check_dtype, on_program_stream
from ember_plugin_cuda.kernels.softmax import softmax_rows


def attention_kernel(
    ctx: KernelContext,
    outputs: list[Any],
    query: Any,
    key: Any,
    value: Any,
    *,
    scale: float,
    is_causal: bool,
) -> None:
    """The named kernel ``cuda.dot_product_attention``: ``outputs[0]`` (batch, q_len, heads,
    v_dim) from query (batch, q_len, heads, dim), key (batch, kv_len, kv_heads, dim) and
    value (batch, kv_len, kv_heads, v_dim); ``heads`` a multiple of ``kv_heads``."""
    with on_program_stream(ctx, outputs[0]):
        q, k, v = as_cupy([query, key, value])
        (out,) = as_cupy(outputs)
        for array in (q, k, v):
            check_dtype(ATTENTION, array)
        q_len, heads = q.shape[1], q.shape[2]
        kv_heads = k.shape[2]
        groups = heads // kv_heads
        # (batch, heads, seq, dim), float32: the logits and their softmax are kept in float32
        qh = q.transpose(0, 2, 1, 3).astype(cupy.float32)
        kh = k.transpose(0, 2, 1, 3).astype(cupy.float32)
        vh = v.transpose(0, 2, 1, 3).astype(cupy.float32)
        if groups > 1:  # query head h reads key/value head h // groups
            kh = cupy.repeat(kh, groups, axis=1)
            vh = cupy.repeat(vh, groups, axis=1)
        logits = cupy.matmul(qh, kh.transpose(0, 1, 3, 2))  # (batch, heads, q_len, kv_len)
        weights = cupy.empty_like(logits)
        softmax_rows(logits, weights, scale=scale, causal_q_len=q_len if is_causal else 0)
        result = cupy.matmul(weights, vh)  # (batch, heads, q_len, v_dim)
        out[...] = result.transpose(0, 2, 1, 3).astype(out.dtype)
