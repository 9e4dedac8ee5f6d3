"""Flash attention written as Pallas kernels: forward, backward, and ``custom_vjp`` joining them.

Attention ``softmax(q k^T * scale) v`` over (batch, seq, heads, head_dim) arrays, the layout of
``ember.nn.dot_product_attention``, without ever holding the (seq, seq) matrix of weights.
Each forward program owns ``block_q`` queries of one (batch, head) and walks over the keys
``block_k`` at a time, keeping for each query a running max ``m`` of its logits, the running
sum ``denom`` of ``exp(logit - m)`` and the running weighted sum ``acc`` of the values; when a
new block raises the max, what was summed so far is rescaled by ``exp(m_old - m_new)``. The
output is ``acc / denom``; the program also writes ``lse = m + log(denom)``, the log of the
softmax's denominator, which is all the backward pass needs to rebuild any block of weights.

The backward pass is one kernel over blocks of keys (FlashAttention-2's): each program
walks the queries ``block_q`` at a time, rebuilds that block of weights once from ``lse``
and uses it for all three gradients: it accumulates its keys' ``dk`` and ``dv`` and writes
the terms of ``dq`` that come from its keys, its *share*, into its own slice of a
(key blocks, ...) output that is summed after the kernel (so that each program writes only
its own blocks: no two programs add into the same output). It rebuilds the weights
transposed, one row per key, so that ``dk`` and ``dv`` are plain products.

With ``causal=True`` query i sees keys 0..i, and the loops skip the blocks that lie wholly
above the diagonal.

    python examples/kernels/flash_attention.py
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax


def _logits(q, k, q_start, k_start, causal):
    """The (block_q, block_k) block of logits, ``-inf`` where causality hides a key."""
    s = pl.dot(q, k, trans_b=True)
    if causal:
        q_pos = q_start + enp.arange(q.shape[0])[:, None]
        k_pos = k_start + enp.arange(k.shape[0])[None, :]
        s = enp.where(q_pos >= k_pos, s, -enp.inf)
    return s


def _key_blocks_seen(q_start, block_q, block_k, seq_k, causal):
    """How many key blocks the queries q_start .. q_start + block_q - 1 look at."""
    if not causal:
        return seq_k // block_k
    return enp.minimum(lax.div(q_start + block_q + block_k - 1, block_k), seq_k // block_k)


def forward_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, *, scale, causal, block_k):
    block_q, head_dim = q_ref.shape
    q_start = pl.program_id(2) * block_q
    q = q_ref[...].astype(enp.float32) * scale

    def step(j, carry):
        m, denom, acc = carry
        k_start = j * block_k
        k = k_ref[pl.ds(k_start, block_k), :].astype(enp.float32)
        v = v_ref[pl.ds(k_start, block_k), :].astype(enp.float32)
        s = _logits(q, k, q_start, k_start, causal)
        m_new = enp.maximum(m, enp.max(s, axis=-1))
        rescale = enp.exp(m - m_new)
        p = enp.exp(s - m_new[:, None])
        denom = denom * rescale + enp.sum(p, axis=-1)
        acc = acc * rescale[:, None] + enp.dot(p, v)
        return m_new, denom, acc

    start = (
        enp.full((block_q,), -enp.inf, enp.float32),
        enp.zeros((block_q,), enp.float32),
        enp.zeros((block_q, head_dim), enp.float32),
    )
    stop = _key_blocks_seen(q_start, block_q, block_k, k_ref.shape[0], causal)
    m, denom, acc = lax.fori_loop(0, stop, step, start)
    o_ref[...] = (acc / denom[:, None]).astype(o_ref.dtype)
    lse_ref[...] = m + enp.log(denom)


def _logits_by_key(k, q, k_start, q_start, causal):
    """The logits of ``_logits`` transposed: a (block_k, block_q) block, one row per key."""
    s = pl.dot(k, q, trans_b=True)
    if causal:
        k_pos = k_start + enp.arange(k.shape[0])[:, None]
        q_pos = q_start + enp.arange(q.shape[0])[None, :]
        s = enp.where(q_pos >= k_pos, s, -enp.inf)
    return s


def backward_kernel(
    q_ref,
    k_ref,
    v_ref,
    do_ref,
    lse_ref,
    delta_ref,
    dq_ref,
    dk_ref,
    dv_ref,
    *,
    scale,
    causal,
    block_q,
):
    """Gradients for one block of keys: this block's ``dk`` and ``dv``, and its share of
    ``dq`` (the terms of ``dq`` that come from these keys) for every query.

    The weights are rebuilt key by query (transposed), so that ``dk`` and ``dv``, the sums
    over queries, are plain products (``p^T do`` is ``p_t do``); only ``dq`` contracts a
    leading dimension.
    """
    block_k, head_dim = k_ref.shape
    k_start = pl.program_id(2) * block_k
    # k carries the scale: the logits and dq's share need no other multiply, dk one at the end.
    k = k_ref[...].astype(enp.float32) * scale
    v = v_ref[...].astype(enp.float32)
    if causal:
        # The queries before this key block never see it: their share of dq is zero.
        dq_ref[...] = enp.zeros(dq_ref.shape, dq_ref.dtype)

    def step(i, carry):
        dk, dv = carry
        q_start = i * block_q
        rows = pl.ds(q_start, block_q)
        q = q_ref[rows, :].astype(enp.float32)
        do = do_ref[rows, :].astype(enp.float32)
        # The weights, rebuilt once for this (query block, key block) and used for all three.
        p_t = enp.exp(_logits_by_key(k, q, k_start, q_start, causal) - lse_ref[rows][None, :])
        # d logits = p * (d p - sum_over_keys(p * d p)), and that sum is delta = sum(o * do).
        ds_t = p_t * (pl.dot(v, do, trans_b=True) - delta_ref[rows][None, :])
        dq_ref[rows, :] = pl.dot(ds_t, k, trans_a=True).astype(dq_ref.dtype)
        return dk + pl.dot(ds_t, q), dv + pl.dot(p_t, do)

    first = lax.div(k_start, block_q) if causal else 0
    zeros = enp.zeros((block_k, head_dim), enp.float32)
    dk, dv = lax.fori_loop(first, q_ref.shape[0] // block_q, step, (zeros, zeros))
    dk_ref[...] = (dk * scale).astype(dk_ref.dtype)
    dv_ref[...] = dv.astype(dv_ref.dtype)


def _block_of_rows(rows, head_dim):
    """(batch, seq, heads, head_dim) -> block ``i`` of ``rows`` positions of one (b, h)."""
    return pl.BlockSpec((None, rows, None, head_dim), lambda b, h, i: (b, i, h, 0))


def _whole_sequence(seq, head_dim):
    """(batch, seq, heads, head_dim) -> every position of one (b, h), whatever the program."""
    return pl.BlockSpec((None, seq, None, head_dim), lambda b, h, i: (b, 0, h, 0))


def _stats_block(rows):
    """(batch, heads, seq) -> block ``i`` of ``rows`` positions of one (b, h)."""
    return pl.BlockSpec((None, None, rows), lambda b, h, i: (b, h, i))


def _stats_whole(seq):
    return pl.BlockSpec((None, None, seq), lambda b, h, i: (b, h, 0))


def _forward(q, k, v, causal, scale, block_q, block_k, interpret):
    batch, seq_q, heads, head_dim = q.shape
    seq_k = k.shape[1]
    kernel = functools.partial(forward_kernel, scale=scale, causal=causal, block_k=block_k)
    return pl.pallas_call(
        kernel,
        out_shape=(
            ember.ShapeDtypeStruct(q.shape, q.dtype),
            ember.ShapeDtypeStruct((batch, heads, seq_q), enp.float32),
        ),
        grid=(batch, heads, seq_q // block_q),
        in_specs=[
            _block_of_rows(block_q, head_dim),
            _whole_sequence(seq_k, head_dim),
            _whole_sequence(seq_k, head_dim),
        ],
        out_specs=(_block_of_rows(block_q, head_dim), _stats_block(block_q)),
        interpret=interpret,
    )(q, k, v)


def _dq_shares(key_blocks, seq, head_dim):
    """(key_blocks, batch, seq, heads, head_dim) -> key block ``j``'s share of dq for every
    position of one (b, h)."""
    return pl.BlockSpec((None, None, seq, None, head_dim), lambda b, h, j: (j, b, 0, h, 0))


def _backward(q, k, v, o, lse, do, causal, scale, block_q, block_k, interpret):
    batch, seq_q, heads, head_dim = q.shape
    seq_k = k.shape[1]
    key_blocks = seq_k // block_k
    # delta[b, h, i] = sum_d o * do: one number per query, the same for every key block.
    delta = enp.einsum("bshd,bshd->bhs", o.astype(enp.float32), do.astype(enp.float32))
    dq_shares, dk, dv = pl.pallas_call(
        functools.partial(backward_kernel, scale=scale, causal=causal, block_q=block_q),
        out_shape=(
            ember.ShapeDtypeStruct((key_blocks, *q.shape), enp.float32),
            ember.ShapeDtypeStruct(k.shape, k.dtype),
            ember.ShapeDtypeStruct(v.shape, v.dtype),
        ),
        grid=(batch, heads, key_blocks),
        in_specs=[
            _whole_sequence(seq_q, head_dim),
            _block_of_rows(block_k, head_dim),
            _block_of_rows(block_k, head_dim),
            _whole_sequence(seq_q, head_dim),
            _stats_whole(seq_q),
            _stats_whole(seq_q),
        ],
        out_specs=(
            _dq_shares(key_blocks, seq_q, head_dim),
            _block_of_rows(block_k, head_dim),
            _block_of_rows(block_k, head_dim),
        ),
        interpret=interpret,
    )(q, k, v, do, lse, delta)
    # Each program wrote only its own share, so no two programs add into the same block. The
    # shares are added one by one (one elementwise pass) rather than reduced along their
    # leading axis, which XLA's CPU backend walks with a stride of a whole share.
    dq = functools.reduce(operator.add, [dq_shares[j] for j in range(key_blocks)])
    dq = dq.astype(q.dtype)
    return dq, dk, dv


@functools.partial(ember.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
def _attention(q, k, v, causal, scale, block_q, block_k, interpret):
    return _forward(q, k, v, causal, scale, block_q, block_k, interpret)[0]


def _attention_fwd(q, k, v, causal, scale, block_q, block_k, interpret):
    o, lse = _forward(q, k, v, causal, scale, block_q, block_k, interpret)
    return o, (q, k, v, o, lse)


def _attention_bwd(causal, scale, block_q, block_k, interpret, residuals, do):
    q, k, v, o, lse = residuals
    return _backward(q, k, v, o, lse, do, causal, scale, block_q, block_k, interpret)


_attention.defvjp(_attention_fwd, _attention_bwd)


@functools.partial(
    ember.jit, static_argnames=("causal", "sm_scale", "block_q", "block_k", "interpret")
)
def flash_attention(
    q, k, v, *, causal=False, sm_scale=None, block_q=64, block_k=64, interpret=False
):
    """Attention over (batch, seq, heads, head_dim) arrays, as ``ember.nn.dot_product_attention``
    with ``is_causal=causal`` and ``scale=sm_scale`` (default ``1 / sqrt(head_dim)``).

    ``k`` and ``v`` have the same heads as ``q``; the query and key sequences must be
    multiples of ``block_q`` and ``block_k`` (each at most its sequence). Differentiable.
    """
    batch, _, heads, head_dim = q.shape if q.ndim == 4 else (None,) * 4
    if q.ndim != 4 or k.shape != v.shape or k.shape != (batch, k.shape[1], heads, head_dim):
        raise ValueError(
            f"flash_attention: expected q (batch, seq_q, heads, head_dim) and k, v "
            f"(batch, seq_k, heads, head_dim), got {q.shape}, {k.shape}, {v.shape}"
        )
    block_q, block_k = min(block_q, q.shape[1]), min(block_k, k.shape[1])
    if q.shape[1] % block_q or k.shape[1] % block_k:
        raise ValueError(
            f"flash_attention: sequences {q.shape[1]} and {k.shape[1]} are not multiples of "
            f"block_q={block_q} and block_k={block_k}"
        )
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else float(sm_scale)
    return _attention(q, k, v, causal, scale, block_q, block_k, interpret)


def main() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 128, 2, 32)).astype(np.float32) for _ in range(3))
    for causal in (False, True):
        out = flash_attention(q, k, v, causal=causal, block_q=32, block_k=32)
        want = ember.nn.dot_product_attention(q, k, v, is_causal=causal)
        np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-5, atol=1e-5)

        def loss(attention, q, k, v):
            return enp.sum(enp.sin(attention(q, k, v)))

        flash = functools.partial(flash_attention, causal=causal, block_q=32, block_k=32)
        plain = functools.partial(ember.nn.dot_product_attention, is_causal=causal)
        grads = ember.grad(functools.partial(loss, flash), argnums=(0, 1, 2))(q, k, v)
        expected = ember.grad(functools.partial(loss, plain), argnums=(0, 1, 2))(q, k, v)
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    print(
        "flash_attention: (2, 128, 2, 32) in 32-blocks, causal and not, matches "
        "ember.nn.dot_product_attention, and so do its gradients"
    )


if __name__ == "__main__":
    main()
