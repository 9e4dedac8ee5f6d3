"""``conv_general_dilated``: XLA's convolution, with JAX's signature and dimension numbers.

The transposes are the classic ones: the cotangent of the input is a convolution of the
output cotangent with the spatially reversed kernel (strides and input dilation swap roles),
and the cotangent of the kernel is a convolution of the input with the output cotangent
(strides and kernel dilation swap roles), with paddings that make the shapes line up.
Feature groups (depthwise convolutions) are supported throughout; batch groups only where
they arise from transposing feature groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember._src import errors, rules
from ember._src.core import ShapedArray, Zero, get_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives.shape import expand_dims, move_axis, reshape
from ember._src.primitives.sharding_constraint import laid_out
from ember._src.primitives.slicing import concatenate, rev, slice_op


class ConvDimensionNumbers(NamedTuple):
    """Positions of (batch, feature, spatial...) in the input, (out feature, in feature,
    spatial...) in the kernel, and (batch, feature, spatial...) in the output."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def conv_dimension_numbers_for_rank(lhs_ndim: int, dimension_numbers: Any) -> ConvDimensionNumbers:
    """Dimension numbers from None (NC... / OI... / NC...), strings such as
    ("NHWC", "HWIO", "NHWC"), or explicit position tuples."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if dimension_numbers is None:
        default = tuple(range(lhs_ndim))
        return ConvDimensionNumbers(default, default, default)
    lhs, rhs, out = dimension_numbers
    if isinstance(lhs, str):
        spatial = [c for c in rhs if c not in "OI"]

        def positions(spec: str, first: str, second: str) -> tuple[int, ...]:
            return (spec.index(first), spec.index(second), *[spec.index(c) for c in spatial])

        return ConvDimensionNumbers(
            positions(lhs, "N", "C"), positions(rhs, "O", "I"), positions(out, "N", "C")
        )
    return ConvDimensionNumbers(tuple(lhs), tuple(rhs), tuple(out))


def _dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def padding_pairs(
    padding: Any, in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
    lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
) -> tuple[tuple[int, int], ...]:  # fmt: skip
    if not isinstance(padding, str):
        return tuple((int(lo), int(hi)) for lo, hi in padding)
    if padding == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if padding not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or pairs, got {padding!r}")
    pairs = []
    for size, k, s, ld, rd in zip(in_shape, window, strides, lhs_dilation, rhs_dilation):
        size, k = _dilate(size, ld), _dilate(k, rd)
        out = -(-size // s)
        total = max((out - 1) * s + k - size, 0)
        lo = total // 2 if padding == "SAME" else total - total // 2
        pairs.append((lo, total - lo))
    return tuple(pairs)


def _out_spatial(lhs, rhs, dn, strides, padding, lhs_dilation, rhs_dilation) -> list[int]:
    sizes = []
    for i, (lhs_d, rhs_d) in enumerate(zip(dn.lhs_spec[2:], dn.rhs_spec[2:])):
        size = _dilate(lhs.shape[lhs_d], lhs_dilation[i]) + padding[i][0] + padding[i][1]
        k = _dilate(rhs.shape[rhs_d], rhs_dilation[i])
        sizes.append(max(0, (size - k) // strides[i] + 1) if size >= k else 0)
    return sizes


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count,
                        preferred_element_type):  # fmt: skip
    dn = dimension_numbers
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise errors.EmberTypeError(
            f"conv: operands of ranks {lhs.ndim} and {rhs.ndim}; both need rank >= 2 and equal"
            f"{errors.where()}"
        )
    if lhs.dtype != rhs.dtype:
        raise errors.EmberTypeError(
            f"conv: operands of dtypes {lhs.str_short()} and {rhs.str_short()}{errors.where()}"
        )
    in_features = lhs.shape[dn.lhs_spec[1]]
    if in_features != rhs.shape[dn.rhs_spec[1]] * feature_group_count:
        raise errors.EmberTypeError(
            f"conv: input features {in_features} must equal kernel input features "
            f"{rhs.shape[dn.rhs_spec[1]]} x feature_group_count {feature_group_count}"
            f"{errors.where()}"
        )
    out_features = rhs.shape[dn.rhs_spec[0]]
    if out_features % (feature_group_count * batch_group_count):
        raise errors.EmberTypeError(
            f"conv: kernel output features {out_features} are not divisible by the group count"
            f"{errors.where()}"
        )
    spatial = _out_spatial(lhs, rhs, dn, window_strides, padding, lhs_dilation, rhs_dilation)
    shape = [0] * lhs.ndim
    shape[dn.out_spec[0]] = lhs.shape[dn.lhs_spec[0]] // batch_group_count
    shape[dn.out_spec[1]] = out_features
    for d, size in zip(dn.out_spec[2:], spatial):
        shape[d] = size
    dtype = preferred_element_type or lhs.dtype
    return ShapedArray(tuple(shape), dtype)


def _layout(spec: Sequence[int], first: str, second: str) -> str:
    letters = [""] * len(spec)
    letters[spec[0]], letters[spec[1]] = first, second
    for i, d in enumerate(spec[2:]):
        letters[d] = str(i)
    return "[" + ", ".join(letters) + "]"


def _conv_lowering(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count,
                   preferred_element_type):  # fmt: skip
    dn = dimension_numbers
    layout = (
        f"{_layout(dn.lhs_spec, 'b', 'f')}x{_layout(dn.rhs_spec, 'o', 'i')}->"
        f"{_layout(dn.out_spec, 'b', 'f')}"
    )
    pad_rows = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    attrs = {
        "dimension_numbers": f"#stablehlo.conv<{layout}>",
        "window_strides": i64_array(window_strides),
        "padding": f"dense<[{pad_rows}]> : tensor<{len(padding)}x2xi64>"
        if padding
        else "dense<> : tensor<0x2xi64>",
        "lhs_dilation": i64_array(lhs_dilation),
        "rhs_dilation": i64_array(rhs_dilation),
        "feature_group_count": f"{feature_group_count} : i64",
        "batch_group_count": f"{batch_group_count} : i64",
        "precision_config": "[#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]",
    }
    return ctx.op("stablehlo.convolution", [lhs, rhs], ctx.avals_out[0], attrs)


def _conv_reference(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                    dimension_numbers, feature_group_count, batch_group_count,
                    preferred_element_type):  # fmt: skip
    dn = dimension_numbers
    x = np.transpose(lhs, dn.lhs_spec).astype(
        np.result_type(lhs.dtype, np.float64) if lhs.dtype.kind != "c" else np.complex128
    )
    w = np.transpose(rhs, dn.rhs_spec).astype(x.dtype)
    n_spatial = x.ndim - 2
    # Dilate the input, pad (negative padding crops), dilate the kernel.
    for i in range(n_spatial):
        axis = 2 + i
        x = _dilate_array(x, axis, lhs_dilation[i])
        lo, hi = padding[i]
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
        crop = [slice(None)] * x.ndim
        crop[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        x = x[tuple(crop)]
        w = _dilate_array(w, axis, rhs_dilation[i])
    if batch_group_count != 1:
        groups, batch = batch_group_count, x.shape[0] // batch_group_count
        xs = [x[g * batch : (g + 1) * batch] for g in range(groups)]
        per_group = w.shape[0] // groups
        outs = [
            _conv_valid(xs[g], w[g * per_group : (g + 1) * per_group], window_strides, 1)
            for g in range(groups)
        ]
        out = np.concatenate(outs, axis=1)
    else:
        out = _conv_valid(x, w, window_strides, feature_group_count)
    out_dtype = preferred_element_type or lhs.dtype
    return np.transpose(out, np.argsort(dn.out_spec)).astype(out_dtype)


def _dilate_array(x: np.ndarray, axis: int, dilation: int) -> np.ndarray:
    """``x`` with ``dilation - 1`` zeros between neighbours along ``axis``."""
    if dilation == 1:
        return x
    shape = list(x.shape)
    shape[axis] = _dilate(shape[axis], dilation)
    out = np.zeros(shape, x.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, dilation)
    out[tuple(index)] = x
    return out


def _conv_valid(x: np.ndarray, w: np.ndarray, strides, groups: int) -> np.ndarray:
    """An unpadded, undilated NC.../OI... convolution (cross-correlation), by windows."""
    n_spatial = x.ndim - 2
    window = w.shape[2:]
    out_shape = [(x.shape[2 + i] - window[i]) // strides[i] + 1 for i in range(n_spatial)]
    out_shape = [max(s, 0) for s in out_shape]
    batch, features = x.shape[0], w.shape[0]
    out = np.zeros((batch, features, *out_shape), x.dtype)
    per_in, per_out = x.shape[1] // groups, features // groups
    for position in np.ndindex(*out_shape):
        region = tuple(
            slice(position[i] * strides[i], position[i] * strides[i] + window[i])
            for i in range(n_spatial)
        )
        patch = x[(slice(None), slice(None), *region)]
        for g in range(groups):
            p = patch[:, g * per_in : (g + 1) * per_in]
            k = w[g * per_out : (g + 1) * per_out]
            value = np.tensordot(
                p, k, axes=([1, *range(2, 2 + n_spatial)], [1, *range(2, 2 + n_spatial)])
            )
            out[(slice(None), slice(g * per_out, (g + 1) * per_out), *position)] = value
    return out


# --------------------------------------------------------------------------------------------
# Differentiation


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    t_lhs, t_rhs = tangents
    out = conv_p.bind(lhs, rhs, **params)
    a = Zero(get_aval(out)) if type(t_lhs) is Zero else conv_p.bind(t_lhs, rhs, **params)
    b = Zero(get_aval(out)) if type(t_rhs) is Zero else conv_p.bind(lhs, t_rhs, **params)
    return out, add_tangents(a, b)


def _swap_first_two(spec: tuple[int, ...]) -> tuple[int, ...]:
    return (spec[1], spec[0], *spec[2:])


def _split_axis(x: Any, axis: int, parts: int) -> Any:
    """Split ``axis`` into (parts, size // parts), the new leading part at ``axis``."""
    shape = list(get_aval(x).shape)
    shape[axis : axis + 1] = [parts, shape[axis] // parts]
    return reshape(x, tuple(shape))


def _merge_major(x: Any, source: int, target: int) -> Any:
    """Merge axis ``source`` into axis ``target`` (numbered without ``source``) as its major
    part: (..., n, ..., m, ...) -> (..., n * m, ...)."""
    x = move_axis(x, source, target)
    shape = list(get_aval(x).shape)
    shape[target : target + 2] = [shape[target] * shape[target + 1]]
    return reshape(x, tuple(shape))


def _regroup(x: Any, from_dim: int, to_dim: int, groups: int) -> Any:
    """Move a factor ``groups`` out of dimension ``from_dim`` into ``to_dim``."""
    return _merge_major(_split_axis(x, from_dim, groups), from_dim, to_dim)


def _conv_transpose(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                    dimension_numbers, feature_group_count, batch_group_count,
                    preferred_element_type):  # fmt: skip
    dn = dimension_numbers
    if type(ct) is Zero:
        return [Zero(lhs.aval) if is_undefined(lhs) else None,
                Zero(rhs.aval) if is_undefined(rhs) else None]  # fmt: skip
    lhs_aval = lhs.aval if is_undefined(lhs) else get_aval(lhs)
    rhs_aval = rhs.aval if is_undefined(rhs) else get_aval(rhs)
    ct_shape = get_aval(ct).shape
    in_spatial = [lhs_aval.shape[d] for d in dn.lhs_spec[2:]]
    window = [rhs_aval.shape[d] for d in dn.rhs_spec[2:]]
    out_spatial = [ct_shape[d] for d in dn.out_spec[2:]]
    ct_lhs = ct_rhs = None
    if is_undefined(lhs):
        kernel = rhs
        groups = feature_group_count
        if feature_group_count > 1:
            kernel = _regroup(kernel, dn.rhs_spec[0], dn.rhs_spec[1], feature_group_count)
        elif batch_group_count > 1:
            kernel = _regroup(kernel, dn.rhs_spec[0], dn.rhs_spec[1], batch_group_count)
            groups = batch_group_count
        pads = []
        for i in range(len(in_spatial)):
            k = _dilate(window[i], rhs_dilation[i])
            before = k - padding[i][0] - 1
            after = (_dilate(in_spatial[i], lhs_dilation[i]) + k - 1
                     - _dilate(out_spatial[i], window_strides[i]) - before)  # fmt: skip
            pads.append((before, after))
        flipped = rev(kernel, tuple(dn.rhs_spec[2:]))
        ct_lhs = conv_p.bind(
            ct,
            flipped,
            window_strides=tuple(lhs_dilation),
            padding=tuple(pads),
            lhs_dilation=tuple(window_strides),
            rhs_dilation=tuple(rhs_dilation),
            dimension_numbers=ConvDimensionNumbers(
                dn.out_spec, _swap_first_two(dn.rhs_spec), dn.lhs_spec
            ),
            feature_group_count=groups,
            batch_group_count=1,
            preferred_element_type=preferred_element_type,
        )
        if batch_group_count > 1:
            ct_lhs = _regroup(ct_lhs, dn.lhs_spec[1], dn.lhs_spec[0], batch_group_count)
    if is_undefined(rhs):
        f_groups, b_groups = feature_group_count, batch_group_count
        if batch_group_count > 1:
            f_groups, b_groups = batch_group_count, 1
        elif feature_group_count > 1:
            f_groups, b_groups = 1, feature_group_count
        pads = []
        for i in range(len(in_spatial)):
            lo = padding[i][0]
            k = _dilate(window[i], rhs_dilation[i])
            from_lhs = _dilate(out_spatial[i], window_strides[i]) - _dilate(
                in_spatial[i], lhs_dilation[i]
            )
            hi = from_lhs + (k - lo - 1)
            pads.append((lo, hi))
        ct_rhs = conv_p.bind(
            lhs,
            ct,
            window_strides=tuple(rhs_dilation),
            padding=tuple(pads),
            lhs_dilation=tuple(lhs_dilation),
            rhs_dilation=tuple(window_strides),
            dimension_numbers=ConvDimensionNumbers(
                _swap_first_two(dn.lhs_spec),
                _swap_first_two(dn.out_spec),
                _swap_first_two(dn.rhs_spec),
            ),
            feature_group_count=f_groups,
            batch_group_count=b_groups,
            preferred_element_type=preferred_element_type,
        )
    return [ct_lhs, ct_rhs]


# --------------------------------------------------------------------------------------------
# Batching


def _conv_batch(vals, dims, **params):
    lhs, rhs = vals
    lhs_dim, rhs_dim = dims
    dn = params["dimension_numbers"]
    if rhs_dim is not_mapped and params["batch_group_count"] == 1:
        # Fold the vmapped axis into the convolution's own batch axis.
        merged = _merge_major(lhs, lhs_dim, dn.lhs_spec[0])
        out = conv_p.bind(merged, rhs, **params)
        return _split_axis(out, dn.out_spec[0], get_aval(lhs).shape[lhs_dim]), dn.out_spec[0]
    # Per-example kernels: one convolution per example (correct, not the fastest).
    size = get_aval(lhs if lhs_dim is not not_mapped else rhs).shape[
        lhs_dim if lhs_dim is not not_mapped else rhs_dim
    ]
    outs = []
    for i in range(size):
        li = _take(lhs, lhs_dim, i)
        ri = _take(rhs, rhs_dim, i)
        outs.append(expand_dims(conv_p.bind(li, ri, **params), (0,)))
    return concatenate(outs, 0), 0


def _take(x: Any, dim: int | None, i: int) -> Any:
    if dim is not_mapped:
        return x
    shape = get_aval(x).shape
    start = [0] * len(shape)
    limit = list(shape)
    start[dim], limit[dim] = i, i + 1
    return reshape(slice_op(x, start, limit), shape[:dim] + shape[dim + 1 :])


conv_p = rules.define_primitive(
    "conv_general_dilated",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_conv_abstract_eval,
    jvp=_conv_jvp,
    transpose=_conv_transpose,
    batch=_conv_batch,
    lowering=_conv_lowering,
    reference=_conv_reference,
)


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """General dilated convolution (XLA's ConvGeneralDilated); ``out_sharding`` lays out the
    result."""
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers_for_rank(lhs_aval.ndim, dimension_numbers)
    n_spatial = lhs_aval.ndim - 2
    lhs_dilation = tuple(lhs_dilation or (1,) * n_spatial)
    rhs_dilation = tuple(rhs_dilation or (1,) * n_spatial)
    window_strides = tuple(window_strides)
    in_spatial = [lhs_aval.shape[d] for d in dn.lhs_spec[2:]]
    window = [rhs_aval.shape[d] for d in dn.rhs_spec[2:]]
    pads = padding_pairs(padding, in_spatial, window, window_strides, lhs_dilation, rhs_dilation)
    out = conv_p.bind(
        lhs,
        rhs,
        window_strides=window_strides,
        padding=pads,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        preferred_element_type=None
        if preferred_element_type is None
        else np.dtype(preferred_element_type),
    )
    return out if out_sharding is None else laid_out(out, out_sharding)
