"""Stax: a small neural-network specification library, with the names and behaviour of
``jax.example_libraries.stax``.

A layer is a pair ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape) -> (output_shape, params)``
- ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` reaches layers like Dropout)

Combinators (``serial``, ``parallel``, ``shape_dependent``) build layers from layers.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.lax.convolution import (
    conv_general_shape_tuple,
    conv_transpose,
    conv_transpose_shape_tuple,
    padtype_to_pads,
    reduce_window_shape_tuple,
)
from ember._src.nn.functions import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from ember._src.nn.initializers import glorot_normal, normal, ones, zeros
from ember._src.numpy import contractions, creation, elementwise as enp, manipulation, nonzero
from ember._src.primitives.arithmetic import add, max as max_
from ember._src.primitives.conv import conv_general_dilated
from ember._src.primitives.reduce_window import reduce_window
from ember._src.random.prng import bernoulli, split

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

Layer = tuple[Callable[..., Any], Callable[..., Any]]

# Default initialisers, made once (as JAX's signatures show them).
_GLOROT_NORMAL = glorot_normal()
_NORMAL = normal()
_BIAS_NORMAL = normal(1e-6)

# --------------------------------------------------------------------------------------------
# Layers with parameters


def Dense(out_dim, W_init=_GLOROT_NORMAL, b_init=_NORMAL):
    """A fully connected layer: ``inputs @ W + b``."""

    def init_fun(rng, input_shape):
        k1, k2 = split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return contractions.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_and_bias_shapes(dimension_numbers, out_chan, filter_shape, input_shape):
    """The kernel's shape in ``rhs_spec`` order and the bias's, broadcastable to the output."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = iter(filter_shape)
    in_chan = input_shape[lhs_spec.index("C")]
    kernel = [out_chan if c == "O" else in_chan if c == "I" else next(spatial) for c in rhs_spec]
    bias = [out_chan if c == "C" else 1 for c in out_spec]
    return kernel, bias


def _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
                transpose):  # fmt: skip
    _, rhs_spec, _ = dimension_numbers
    ones_ = (1,) * len(filter_shape)
    strides = strides or ones_
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))
    shape_tuple = conv_transpose_shape_tuple if transpose else conv_general_shape_tuple

    def init_fun(rng, input_shape):
        kernel_shape, bias_shape = _kernel_and_bias_shapes(
            dimension_numbers, out_chan, filter_shape, input_shape
        )
        output_shape = shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
        k1, k2 = split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        if transpose:
            out = conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
        else:
            out = conv_general_dilated(
                inputs, W, strides, padding, ones_, ones_, dimension_numbers=dimension_numbers
            )
        return out + b

    return init_fun, apply_fun


def GeneralConv(
    dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
    b_init=_BIAS_NORMAL,
):  # fmt: skip
    """A convolution layer; ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)`` as strings."""
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init, False
    )


def GeneralConvTranspose(
    dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
    b_init=_BIAS_NORMAL,
):  # fmt: skip
    """A transposed-convolution layer (``lax.conv_transpose``)."""
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init, True
    )


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(
    axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones
):
    """Normalise over ``axis`` (batch statistics), then scale by gamma and shift by beta."""
    axis = (operator.index(axis),) if np.ndim(axis) == 0 else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # Index that re-inserts the normalised axes, so beta/gamma broadcast against x.
        expand = tuple(None if i in axis else slice(None) for i in range(manipulation.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z

    return init_fun, apply_fun


# --------------------------------------------------------------------------------------------
# Layers without parameters


def elementwise(fun, **fun_kwargs):
    """A layer applying ``fun(inputs, **fun_kwargs)``."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(enp.tanh)
Relu = elementwise(relu)
Exp = elementwise(enp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _with_unit_dims(values: tuple, positions: Sequence[int]) -> tuple:
    """``values`` (one per spatial axis) with a 1 inserted at each non-spatial position."""
    values = tuple(values)
    for i in sorted(positions):
        values = values[:i] + (1,) + values[i:]
    return values


def _non_spatial_axes(spec, ndim):
    """Positions of the batch and channel axes: ``spec``'s N and C, else first and last."""
    if spec is None:
        return 0, ndim - 1
    return spec.index("N"), spec.index("C")


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """A pooling layer over the spatial axes (all but N and C)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = _non_spatial_axes(spec, len(window_shape) + 2)
        dims = _with_unit_dims(window_shape, non_spatial)
        full_strides = _with_unit_dims(strides, non_spatial)

        def init_fun(rng, input_shape):
            pads = padtype_to_pads(input_shape, dims, full_strides, padding)
            unit = (1,) * len(dims)
            return reduce_window_shape_tuple(input_shape, dims, full_strides, pads, unit, unit), ()

        def apply_fun(params, inputs, **kwargs):
            out = reduce_window(inputs, init_val, reducer, dims, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
    """Divide window sums by the number of in-bounds elements of each window (padding
    excluded), which makes SumPool an average."""

    def rescale(outputs, inputs, spec):
        non_spatial = _non_spatial_axes(spec, inputs.ndim)
        spatial_shape = tuple(n for i, n in enumerate(inputs.shape) if i not in non_spatial)
        counts = reduce_window(
            creation.ones(spatial_shape, dtype=inputs.dtype), 0.0, add, dims, strides,
            padding,
        )  # fmt: skip
        for i in sorted(non_spatial):
            counts = manipulation.expand_dims(counts, i)
        return outputs / counts

    return rescale


MaxPool = _pooling_layer(max_, -math.inf)
SumPool = _pooling_layer(add, 0.0)
AvgPool = _pooling_layer(add, 0.0, _normalize_by_window_size)


def _flatten_init(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()


def _flatten_apply(params, inputs, **kwargs):
    return manipulation.reshape(inputs, (inputs.shape[0], -1))


Flatten = (_flatten_init, _flatten_apply)
Identity = elementwise(lambda x: x)


def FanOut(num):
    """A layer copying its input into a list of ``num`` outputs."""

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum_init(rng, input_shape):
    return input_shape[0], ()


def _fan_in_sum_apply(params, inputs, **kwargs):
    return sum(inputs)


FanInSum = (_fan_in_sum_init, _fan_in_sum_apply)


def FanInConcat(axis=-1):
    """A layer concatenating its list of inputs along ``axis``."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1 :], ()

    def apply_fun(params, inputs, **kwargs):
        return manipulation.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout. As in JAX's stax, ``rate`` is the probability of *keeping* an element; kept
    elements are divided by ``rate``. ``mode`` other than "train" is the identity."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument: "
                "instead of `apply_fun(params, inputs)`, call `apply_fun(params, inputs, "
                f"rng=key)` with a key from ember.random.key{errors.where()}"
            )
        if mode != "train":
            return inputs
        keep = bernoulli(rng, rate, inputs.shape)
        return nonzero.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# --------------------------------------------------------------------------------------------
# Combinators


def _layer_keys(rng, n):
    return split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """Compose layers in sequence; each gets its own key split from ``rng``."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        keys = _layer_keys(kwargs.pop("rng", None), len(layers))
        for fun, param, key in zip(apply_funs, params, keys):
            inputs = fun(param, inputs, rng=key, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Apply layer ``k`` to input ``k`` of a sequence of inputs (often between FanOut and
    FanInSum/FanInConcat)."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        keys = split(rng, len(layers))
        results = [init(k, shape) for init, k, shape in zip(init_funs, keys, input_shape)]
        return tuple(zip(*results))

    def apply_fun(params, inputs, **kwargs):
        keys = _layer_keys(kwargs.pop("rng", None), len(layers))
        return [f(p, x, rng=k, **kwargs) for f, p, x, k in zip(apply_funs, params, inputs, keys)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
