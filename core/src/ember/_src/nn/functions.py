"""``ember.nn``: activations, normalisations and attention, written in ``ember.numpy``.

Every function is differentiable and batchable because it is built from primitives that are.
Numerically delicate ones (softmax, log_softmax, logsumexp) subtract the maximum first, with
``stop_gradient`` on it so that the derivative is the exact one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, get_aval
from ember._src.lax.operators import stop_gradient
from ember._src.numpy import contractions, creation, elementwise as enp, manipulation, reductions
from ember._src.primitives.named_kernels import call_named_kernel
from ember._src.primitives.slicing import slice_op
from ember._src.primitives.special import erf
from ember._src.transforms.custom_derivatives import custom_jvp


def _inexact(x: Any) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        x = x.astype(dtypes.default_float())
    return x


def _const(x: Any, value: float) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


# --------------------------------------------------------------------------------------------
# Activations


def _relu(x: Any) -> Any:
    return enp.maximum(x, _const(x, 0))


def _relu6(x: Any) -> Any:
    return enp.minimum(enp.maximum(x, _const(x, 0)), _const(x, 6))


# As JAX's: the derivative is 0 at the kinks (0, and 6 for relu6) rather than the 1/2 that
# differentiating maximum/minimum at a tie would give.
_relu_custom = custom_jvp(_relu)
_relu6_custom = custom_jvp(_relu6)


@_relu_custom.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = enp.greater(x, _const(x, 0))
    return _relu_custom(x), enp.where(inside, t, creation.zeros_like(t))


@_relu6_custom.defjvp
def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = enp.logical_and(enp.greater(x, _const(x, 0)), enp.less(x, _const(x, 6)))
    return _relu6_custom(x), enp.where(inside, t, creation.zeros_like(t))


def relu(x: Any) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        return _relu(x)
    return _relu_custom(x)


def relu6(x: Any) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        return _relu6(x)
    return _relu6_custom(x)


def sigmoid(x: Any) -> Any:
    x = _inexact(x)
    return enp.reciprocal(enp.add(_const(x, 1), enp.exp(enp.negative(x))))


def softplus(x: Any) -> Any:
    x = _inexact(x)
    return enp.logaddexp(x, _const(x, 0))


def silu(x: Any) -> Any:
    x = _inexact(x)
    return enp.multiply(x, sigmoid(x))


swish = silu


def log_sigmoid(x: Any) -> Any:
    return enp.negative(softplus(enp.negative(_inexact(x))))


def gelu(x: Any, approximate: bool = True) -> Any:
    """GELU; ``approximate=True`` (JAX's default) is the tanh form, else the exact erf form."""
    x = _inexact(x)
    if approximate:
        inner = enp.multiply(
            _const(x, math.sqrt(2 / math.pi)),
            enp.add(x, enp.multiply(_const(x, 0.044715), enp.power(x, 3))),
        )
        return enp.multiply(enp.multiply(_const(x, 0.5), x), enp.add(_const(x, 1), enp.tanh(inner)))
    return enp.multiply(
        enp.multiply(_const(x, 0.5), x),
        enp.add(_const(x, 1), erf(enp.divide(x, _const(x, math.sqrt(2))))),
    )


def elu(x: Any, alpha: float = 1.0) -> Any:
    x = _inexact(x)
    safe = enp.where(enp.greater(x, _const(x, 0)), _const(x, 0), x)
    return enp.where(
        enp.greater(x, _const(x, 0)), x, enp.multiply(_const(x, alpha), enp.expm1(safe))
    )


def selu(x: Any) -> Any:
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    x = _inexact(x)
    return enp.multiply(_const(x, scale), elu(x, alpha))


def celu(x: Any, alpha: float = 1.0) -> Any:
    x = _inexact(x)
    negative = enp.multiply(
        _const(x, alpha), enp.expm1(enp.divide(enp.minimum(x, _const(x, 0)), _const(x, alpha)))
    )
    return enp.add(enp.maximum(x, _const(x, 0)), negative)


def leaky_relu(x: Any, negative_slope: float = 1e-2) -> Any:
    x = _inexact(x)
    return enp.where(
        enp.greater_equal(x, _const(x, 0)), x, enp.multiply(_const(x, negative_slope), x)
    )


def hard_tanh(x: Any) -> Any:
    """``x`` limited to [-1, 1] (derivative 1 at the ends, as JAX's)."""
    x = _inexact(x)
    upper = enp.where(enp.greater(x, _const(x, 1)), _const(x, 1), x)
    return enp.where(enp.less(x, _const(x, -1)), _const(x, -1), upper)


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: the first half of ``axis`` times the sigmoid of the second half."""
    x = _inexact(x)
    size = get_aval(x).shape[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} has odd size {size}{errors.where()}")
    shape = get_aval(x).shape
    axis %= len(shape)
    half = size // 2
    start, limit = [0] * len(shape), list(shape)
    limit[axis] = half
    first = slice_op(x, start, limit)
    start[axis], limit[axis] = half, size
    second = slice_op(x, start, limit)
    return enp.multiply(first, sigmoid(second))


def hard_sigmoid(x: Any) -> Any:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid (with a zero derivative at the kinks
    -3 and 3, as JAX's)."""
    x = _inexact(x)
    ramp = enp.divide(enp.add(x, _const(x, 3)), _const(x, 6))
    ramp = enp.where(enp.greater_equal(x, _const(x, 3)), _const(x, 1), ramp)
    return enp.where(enp.less_equal(x, _const(x, -3)), _const(x, 0), ramp)


def hard_silu(x: Any) -> Any:
    """``x * hard_sigmoid(x)``."""
    x = _inexact(x)
    return enp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def identity(x: Any) -> Any:
    """``x`` itself, as an array."""
    return creation.asarray(x)


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(-x))`` for ``x > 0``, accurate near 0 (via expm1) and for large ``x``
    (via log1p)."""
    x = _inexact(x)
    near_zero = enp.log(enp.negative(enp.expm1(enp.negative(x))))
    far = enp.log1p(enp.negative(enp.exp(enp.negative(x))))
    return enp.where(enp.less(x, _const(x, math.log(2))), near_zero, far)


def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Any:
    """``log(mean(exp(x)))`` over ``axis`` (counting only the entries ``where`` selects)."""
    x = _inexact(x)
    if where is not None:
        x = enp.where(where, x, _const(x, -np.inf))
        selected = manipulation.broadcast_to(creation.asarray(where), get_aval(x).shape)
        count = reductions.sum(selected, axis=axis, keepdims=keepdims, dtype=get_aval(x).dtype)
    else:
        count = reductions.sum(
            creation.ones_like(x), axis=axis, keepdims=keepdims, dtype=get_aval(x).dtype
        )
    return enp.subtract(logsumexp(x, axis=axis, keepdims=keepdims), enp.log(count))


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    x = _inexact(x)
    return enp.multiply(x, enp.tanh(softplus(x)))


def soft_sign(x: Any) -> Any:
    """``x / (|x| + 1)``."""
    x = _inexact(x)
    return enp.divide(x, enp.add(enp.abs(x), _const(x, 1)))


def sparse_plus(x: Any) -> Any:
    """0 below -1, ``x`` above 1, and the parabola ``(x + 1)**2 / 4`` joining them."""
    x = _inexact(x)
    parabola = enp.divide(enp.square(enp.add(x, _const(x, 1))), _const(x, 4))
    upper = enp.where(enp.greater_equal(x, _const(x, 1)), x, parabola)
    return enp.where(enp.less_equal(x, _const(x, -1)), _const(x, 0), upper)


def sparse_sigmoid(x: Any) -> Any:
    """``clip(x + 1, 0, 2) / 2``: the derivative of ``sparse_plus``."""
    x = _inexact(x)
    clipped = enp.clip(enp.add(x, _const(x, 1)), _const(x, 0), _const(x, 2))
    return enp.multiply(_const(x, 0.5), clipped)


def squareplus(x: Any, b: Any = 4) -> Any:
    """``(x + sqrt(x**2 + b)) / 2``: a smooth ReLU."""
    x = _inexact(x)
    return enp.divide(enp.add(x, enp.sqrt(enp.add(enp.square(x), b))), _const(x, 2))


def tanh(x: Any, /) -> Any:
    """The hyperbolic tangent."""
    return enp.tanh(x)


# --------------------------------------------------------------------------------------------
# Normalisations


def logsumexp(
    a: Any,
    axis: Any = None,
    b: Any = None,
    keepdims: bool = False,
    return_sign: bool = False,
    where: Any = None,
) -> Any:
    """``log(sum(b * exp(a)))``, computed stably (as ``jax.nn.logsumexp``); entries where
    ``where`` is False are left out of the sum."""
    a = _inexact(a)
    if where is not None:
        a = enp.where(where, a, _const(a, -np.inf))
    amax = stop_gradient(reductions.max(a, axis=axis, keepdims=True))
    amax = enp.where(enp.isfinite(amax), amax, _const(amax, 0))
    exps = enp.exp(enp.subtract(a, amax))
    if b is not None:
        exps = enp.multiply(exps, b)
    if where is not None:
        exps = enp.where(where, exps, _const(exps, 0))
    total = reductions.sum(exps, axis=axis, keepdims=True)
    sign = enp.sign(total)
    out = enp.add(enp.log(enp.abs(total)), amax)
    if not keepdims:
        out = _squeeze_axes(out, axis, get_aval(a).ndim)
        sign = _squeeze_axes(sign, axis, get_aval(a).ndim)
    if return_sign:
        return out, sign
    return out


def _squeeze_axes(x: Any, axis: Any, ndim: int) -> Any:
    axes = tuple(range(ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return manipulation.squeeze(x, tuple(a % ndim for a in axes))


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    x = _inexact(x)
    if where is not None:
        x = enp.where(where, x, _const(x, -np.inf))
    shifted = enp.subtract(x, stop_gradient(reductions.max(x, axis=axis, keepdims=True)))
    unnormalized = enp.exp(shifted)
    result = enp.divide(unnormalized, reductions.sum(unnormalized, axis=axis, keepdims=True))
    if where is not None:
        result = enp.where(where, result, _const(result, 0))
    return result


def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    x = _inexact(x)
    if where is not None:
        x = enp.where(where, x, _const(x, -np.inf))
    shifted = enp.subtract(x, stop_gradient(reductions.max(x, axis=axis, keepdims=True)))
    result = enp.subtract(
        shifted, enp.log(reductions.sum(enp.exp(shifted), axis=axis, keepdims=True))
    )
    if where is not None:
        result = enp.where(where, result, _const(result, -np.inf))
    return result


def standardize(
    x: Any,
    axis: Any = -1,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 1e-5,
    where: Any = None,
    *,
    algorithm: str = "fast",
) -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``; the statistics are taken over
    the entries where ``where`` holds. The variance is ``mean(x**2) - mean(x)**2`` (clipped at
    0) for ``algorithm="fast"`` and ``mean((x - mean)**2)`` for ``"stable"``, as in JAX."""
    if algorithm not in ("fast", "stable"):
        raise ValueError(
            f"standardize: algorithm must be 'fast' or 'stable', got {algorithm!r}{errors.where()}"
        )
    x = _inexact(x)
    if mean is None:
        mean = reductions.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        variance = _variance(x, mean, axis, where, algorithm)
    return enp.divide(enp.subtract(x, mean), enp.sqrt(enp.add(variance, _const(x, epsilon))))


def _variance(x: Any, mean: Any, axis: Any, where: Any, algorithm: str) -> Any:
    if algorithm == "stable":
        centred = enp.subtract(x, mean)
        return reductions.mean(enp.square(centred), axis=axis, keepdims=True, where=where)
    mean_of_square = reductions.mean(enp.square(x), axis=axis, keepdims=True, where=where)
    return enp.maximum(enp.subtract(mean_of_square, enp.square(mean)), _const(x, 0))


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """``x``'s integers as one-hot vectors of length ``num_classes`` along a new ``axis``."""
    x = creation.asarray(x)
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_float())
    ndim = get_aval(x).ndim
    where = axis % (ndim + 1)
    classes = creation.arange(num_classes, dtype=get_aval(x).dtype)
    shape = [1] * (ndim + 1)
    shape[where] = num_classes
    expanded = manipulation.expand_dims(x, where)
    return enp.equal(expanded, manipulation.reshape(classes, tuple(shape))).astype(dtype)


# --------------------------------------------------------------------------------------------
# Attention


def dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    bias: Any = None,
    mask: Any = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    query_seq_lengths: Any = None,
    key_value_seq_lengths: Any = None,
    local_window_size: int | tuple[int, int] | None = None,
    implementation: str | None = None,
    return_residual: bool = False,
) -> Any:
    """Scaled dot-product attention on ``(batch, seq, heads, head_dim)`` arrays (JAX's layout).

    ``key``/``value`` may have fewer heads than ``query`` (grouped-query attention) if the
    query heads are a multiple of them. ``mask`` is boolean (True keeps), ``bias`` is added to
    the logits; ``is_causal`` masks future positions. ``query_seq_lengths`` and
    ``key_value_seq_lengths`` (one length per batch entry) mask padding, and the outputs of
    padded query positions are zero; ``local_window_size=(left, right)`` (or one int for both)
    lets query i see keys i - left .. i + right. With ``return_residual`` the result is
    ``(out, lse)``, ``lse`` the (batch, seq, heads) log-sum-exp of the masked logits.

    ``implementation``: None or ``"xla"`` (ember's generic attention, on every platform) or
    ``"cuda"``: the fused kernel of ember-plugin-cuda (float32/float16; ``scale`` and
    ``is_causal`` only, none of bias, mask, lengths, window or residual), a ``LoweringError``
    naming the platform anywhere but on ``cuda``.
    """
    if implementation not in (None, "xla", "cuda"):
        raise NotImplementedError(
            f"dot_product_attention: implementation={implementation!r} is not supported; only "
            f"None, 'xla' or 'cuda'{errors.where()}"
        )
    query, key, value = _inexact(query), _inexact(key), _inexact(value)
    q_shape, k_shape = get_aval(query).shape, get_aval(key).shape
    if len(q_shape) != 4 or len(k_shape) != 4:
        raise ValueError(
            f"dot_product_attention expects (batch, seq, heads, head_dim) arrays, got query "
            f"{q_shape} and key {k_shape}{errors.where()}"
        )
    batch, t, n_heads, head_dim = q_shape
    s, n_kv = k_shape[1], k_shape[2]
    if n_heads % n_kv:
        raise ValueError(
            f"dot_product_attention: {n_heads} query heads are not a multiple of {n_kv} key "
            f"heads{errors.where()}"
        )
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    if implementation == "cuda":
        unsupported = {
            "bias": bias,
            "mask": mask,
            "query_seq_lengths": query_seq_lengths,
            "key_value_seq_lengths": key_value_seq_lengths,
            "local_window_size": local_window_size,
            "return_residual": return_residual or None,
        }
        return _cuda_attention(query, key, value, scale, is_causal, unsupported)
    groups = n_heads // n_kv
    q = manipulation.reshape(query, (batch, t, n_kv, groups, head_dim))
    logits = contractions.einsum("btkgh,bskh->bkgts", q, key)
    logits = enp.multiply(logits, _const(logits, scale))
    logits = manipulation.reshape(logits, (batch, n_heads, t, s))
    if bias is not None:
        logits = enp.add(logits, bias)
    keep = _attention_keep_mask(
        t, s, mask, is_causal, query_seq_lengths, key_value_seq_lengths, local_window_size
    )
    if keep is not None:
        lowest = _const(logits, np.finfo(get_aval(logits).dtype).min)
        logits = enp.where(keep, logits, lowest)
    weights = softmax(logits, axis=-1)
    weights = manipulation.reshape(weights, (batch, n_kv, groups, t, s))
    out = contractions.einsum("bkgts,bskh->btkgh", weights, value)
    out = manipulation.reshape(out, (batch, t, n_heads, get_aval(value).shape[-1]))
    if query_seq_lengths is not None:
        # Padded query rows attend to nothing real; JAX zeroes their outputs.
        valid = _positions_below(t, query_seq_lengths)
        out = enp.multiply(out, manipulation.reshape(valid, (-1, t, 1, 1)).astype(out.dtype))
    if not return_residual:
        return out
    lse = stop_gradient(logsumexp(logits, axis=-1))
    return out, manipulation.transpose(lse, (0, 2, 1)).astype(out.dtype)


# The named kernel the CUDA plugin registers for ``cuda`` (ember_plugin_cuda.kernel_names).
CUDA_ATTENTION_KERNEL = "cuda.dot_product_attention"
_CUDA_ATTENTION_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def _cuda_attention(query, key, value, scale, is_causal, unsupported: dict[str, Any]) -> Any:
    """Attention by the CUDA plugin's fused kernel (cuBLAS products around a fused scaled,
    causally masked softmax). Lowered anywhere but on ``cuda`` it is a LoweringError naming
    the platform."""
    given = [name for name, value_ in unsupported.items() if value_ is not None]
    if given:
        raise ValueError(
            f"dot_product_attention(implementation='cuda') does not support "
            f"{', '.join(given)}: use implementation=None{errors.where()}"
        )
    for name, array in (("query", query), ("key", key), ("value", value)):
        dtype = get_aval(array).dtype
        if dtype not in _CUDA_ATTENTION_DTYPES:
            raise TypeError(
                f"dot_product_attention(implementation='cuda') takes float32 or float16 "
                f"arrays, got {name} of dtype {dtype}{errors.where()}"
            )
    q_shape, v_shape = get_aval(query).shape, get_aval(value).shape
    out = ShapedArray((*q_shape[:3], v_shape[-1]), get_aval(query).dtype)
    return call_named_kernel(
        CUDA_ATTENTION_KERNEL,
        query,
        key,
        value,
        result_shape_dtypes=out,
        scale=float(scale),
        is_causal=bool(is_causal),
    )


def _positions_below(size: int, lengths: Any) -> Any:
    """(batch, size) booleans: position p of entry b is below ``lengths[b]``."""
    lengths = manipulation.reshape(creation.asarray(lengths), (-1, 1))
    return enp.less(manipulation.reshape(creation.arange(size), (1, size)), lengths)


def _attention_keep_mask(
    t: int,
    s: int,
    mask: Any,
    is_causal: bool,
    query_seq_lengths: Any,
    key_value_seq_lengths: Any,
    local_window_size: int | tuple[int, int] | None,
) -> Any:
    """The logits to keep, broadcastable to (batch, heads, t, s), or None to keep all."""
    keep = None if mask is None else creation.asarray(mask).astype(bool)

    def both(extra: Any) -> Any:
        return extra if keep is None else enp.logical_and(keep, extra)

    query_pos = manipulation.reshape(creation.arange(t), (t, 1))
    key_pos = manipulation.reshape(creation.arange(s), (1, s))
    if is_causal:
        keep = both(enp.greater_equal(query_pos, key_pos))
    if local_window_size is not None:
        if isinstance(local_window_size, int):
            local_window_size = (local_window_size, local_window_size)
        left, right = local_window_size
        within_left = enp.less_equal(query_pos, enp.add(key_pos, left))
        within_right = enp.greater_equal(query_pos, enp.subtract(key_pos, right))
        keep = both(enp.logical_and(within_left, within_right))
    if query_seq_lengths is not None:
        keep = both(manipulation.reshape(_positions_below(t, query_seq_lengths), (-1, 1, t, 1)))
    if key_value_seq_lengths is not None:
        kv_valid = _positions_below(s, key_value_seq_lengths)
        keep = both(manipulation.reshape(kv_valid, (-1, 1, 1, s)))
    return keep
