"""Layer normalisation written as Pallas kernels, forward and backward.

Forward: each program normalises ``block_rows`` whole rows, ``(x - mean) / sqrt(var + eps)``
scaled by ``weight`` and shifted by ``bias``, and also writes each row's mean and 1/std for
the backward pass. Backward: each program computes the rows' input gradient and its block's
share of the weight and bias gradients (one partial sum per block, added up outside the
kernel: summing across programs inside it would need them to run in order). The two are tied
together with ``ember.custom_vjp``, so ``grad`` of a function that calls ``layer_norm`` runs
the backward kernel.

Rows need not be a multiple of ``block_rows``: the last block is padded, and since the
backward kernel sums over the rows of a block, it masks the padding rows out of its sums.

    python examples/kernels/layer_norm.py
"""

from __future__ import annotations

import functools

import numpy as np

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp


def forward_kernel(x_ref, w_ref, b_ref, y_ref, mean_ref, rstd_ref, *, eps):
    x = x_ref[...].astype(enp.float32)
    mean = enp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    rstd = 1.0 / enp.sqrt(enp.mean(centred * centred, axis=-1, keepdims=True) + eps)
    y = centred * rstd * w_ref[...] + b_ref[...]
    y_ref[...] = y.astype(y_ref.dtype)
    mean_ref[...] = mean[:, 0]
    rstd_ref[...] = rstd[:, 0]


def backward_kernel(x_ref, w_ref, mean_ref, rstd_ref, dy_ref, dx_ref, dw_ref, db_ref, *, rows):
    block_rows = x_ref.shape[0]
    x = x_ref[...].astype(enp.float32)
    dy = dy_ref[...].astype(enp.float32)
    rstd = rstd_ref[...][:, None]
    x_hat = (x - mean_ref[...][:, None]) * rstd
    g = dy * w_ref[...]
    # d/dx of (x - mean) * rstd, applied to g: the mean and the variance depend on every x.
    dx = rstd * (
        g
        - enp.mean(g, axis=-1, keepdims=True)
        - x_hat * enp.mean(g * x_hat, axis=-1, keepdims=True)
    )
    dx_ref[...] = dx.astype(dx_ref.dtype)
    # The padding rows of the last block hold whatever was read past the end: keep them out.
    row = pl.program_id(0) * block_rows + enp.arange(block_rows)[:, None]
    real = row < rows
    dw_ref[...] = enp.sum(enp.where(real, dy * x_hat, 0.0), axis=0, keepdims=True)
    db_ref[...] = enp.sum(enp.where(real, dy, 0.0), axis=0, keepdims=True)


def _row_spec(block_rows, d):
    return pl.BlockSpec((block_rows, d), lambda i: (i, 0))


def _vector_spec(size):
    return pl.BlockSpec((size,), lambda i: (0,))


def _forward(x, weight, bias, eps, block_rows, interpret):
    rows, d = x.shape
    stats = ember.ShapeDtypeStruct((rows,), enp.float32)
    stat_spec = pl.BlockSpec((block_rows,), lambda i: (i,))
    return pl.pallas_call(
        functools.partial(forward_kernel, eps=eps),
        out_shape=(ember.ShapeDtypeStruct(x.shape, x.dtype), stats, stats),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[_row_spec(block_rows, d), _vector_spec(d), _vector_spec(d)],
        out_specs=(_row_spec(block_rows, d), stat_spec, stat_spec),
        interpret=interpret,
    )(x, weight, bias)


def _backward(x, weight, mean, rstd, dy, block_rows, interpret):
    rows, d = x.shape
    blocks = pl.cdiv(rows, block_rows)
    partial_sums = ember.ShapeDtypeStruct((blocks, d), enp.float32)
    partial_spec = pl.BlockSpec((1, d), lambda i: (i, 0))
    stat_spec = pl.BlockSpec((block_rows,), lambda i: (i,))
    dx, dw, db = pl.pallas_call(
        functools.partial(backward_kernel, rows=rows),
        out_shape=(ember.ShapeDtypeStruct(x.shape, x.dtype), partial_sums, partial_sums),
        grid=(blocks,),
        in_specs=[
            _row_spec(block_rows, d),
            _vector_spec(d),
            stat_spec,
            stat_spec,
            _row_spec(block_rows, d),
        ],
        out_specs=(_row_spec(block_rows, d), partial_spec, partial_spec),
        interpret=interpret,
    )(x, weight, mean, rstd, dy)
    return dx, dw.sum(axis=0).astype(weight.dtype), db.sum(axis=0).astype(weight.dtype)


@functools.partial(ember.custom_vjp, nondiff_argnums=(3, 4, 5))
def _layer_norm_rows(x, weight, bias, eps, block_rows, interpret):
    return _forward(x, weight, bias, eps, block_rows, interpret)[0]


def _layer_norm_rows_fwd(x, weight, bias, eps, block_rows, interpret):
    y, mean, rstd = _forward(x, weight, bias, eps, block_rows, interpret)
    return y, (x, weight, mean, rstd)


def _layer_norm_rows_bwd(eps, block_rows, interpret, residuals, dy):
    x, weight, mean, rstd = residuals
    return _backward(x, weight, mean, rstd, dy, block_rows, interpret)


_layer_norm_rows.defvjp(_layer_norm_rows_fwd, _layer_norm_rows_bwd)


@functools.partial(ember.jit, static_argnames=("eps", "block_rows", "interpret"))
def layer_norm(x, weight, bias, *, eps=1e-5, block_rows=64, interpret=False):
    """Layer norm over the last axis of ``x`` (any leading axes), differentiable.

    ``weight`` and ``bias`` have the size of the last axis.
    """
    d = x.shape[-1]
    if weight.shape != (d,) or bias.shape != (d,):
        raise ValueError(
            f"layer_norm: weight {weight.shape} and bias {bias.shape} must both be ({d},)"
        )
    rows = x.reshape(-1, d)
    block_rows = min(block_rows, rows.shape[0])
    y = _layer_norm_rows(rows, weight, bias, eps, block_rows, interpret)
    return y.reshape(x.shape)


def reference_layer_norm(x, weight, bias, eps=1e-5):
    """The same layer norm in ember.numpy operations, differentiated by ember itself."""
    mean = enp.mean(x, axis=-1, keepdims=True)
    var = enp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / enp.sqrt(var + eps) * weight + bias


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 64)).astype(np.float32)
    w = rng.normal(size=64).astype(np.float32)
    b = rng.normal(size=64).astype(np.float32)
    y = layer_norm(x, w, b, block_rows=32)
    want = reference_layer_norm(x, w, b)
    np.testing.assert_allclose(np.asarray(y), np.asarray(want), rtol=1e-5, atol=1e-5)

    def loss(x, w, b):
        return enp.sum(enp.sin(layer_norm(x, w, b, block_rows=32)))

    def reference_loss(x, w, b):
        return enp.sum(enp.sin(reference_layer_norm(x, w, b)))

    grads = ember.grad(loss, argnums=(0, 1, 2))(x, w, b)
    expected = ember.grad(reference_loss, argnums=(0, 1, 2))(x, w, b)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    print("layer_norm: (100, 64) in blocks of 32 rows matches NumPy, and so do its gradients")


if __name__ == "__main__":
    main()
