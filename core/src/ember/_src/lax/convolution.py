"""lax's convolution conveniences, all expressed with ``conv_general_dilated``.

``conv_transpose`` is the gradient-style transposed convolution: the input is dilated by the
strides and convolved with unit strides, padded so that 'SAME' and 'VALID' give the shapes
(and values) JAX gives. ``conv_general_dilated_patches`` convolves with a one-hot kernel, one
output channel per (input channel, window position), in that order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.lax.numeric import canonical_precision
from ember._src.primitives import conv as _conv
from ember._src.primitives.conv import ConvDimensionNumbers, conv_general_dilated, padding_pairs
from ember._src.primitives.linalg import dot_general
from ember._src.primitives.reduce_window import windowed_shape
from ember._src.primitives.shape import transpose
from ember._src.primitives.slicing import rev

ConvGeneralDilatedDimensionNumbers = Any


def conv_dimension_numbers(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], dimension_numbers: Any
) -> ConvDimensionNumbers:
    """``ConvDimensionNumbers`` from None (NC.../OI.../NC...), three layout strings such as
    ("NHWC", "HWIO", "NHWC"), or explicit positions; checked against the operand ranks."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
            f"{len(rhs_shape)}{errors.where()}"
        )
    if len(lhs_shape) < 2:
        raise errors.EmberTypeError(
            f"convolution operands need rank >= 2, got {lhs_shape}{errors.where()}"
        )
    if isinstance(dimension_numbers, (tuple, list)) and not isinstance(
        dimension_numbers, ConvDimensionNumbers
    ):
        if len(dimension_numbers) != 3:
            raise TypeError(
                f"dimension_numbers must have three entries, got {dimension_numbers!r}"
                f"{errors.where()}"
            )
        lhs, rhs, out = dimension_numbers
        if isinstance(lhs, str):
            _check_layouts(lhs, rhs, out, len(lhs_shape))
    return _conv.conv_dimension_numbers_for_rank(len(lhs_shape), dimension_numbers)


def _check_layouts(lhs: str, rhs: str, out: str, ndim: int) -> None:
    for name, spec, special in (("lhs", lhs, "NC"), ("rhs", rhs, "OI"), ("out", out, "NC")):
        if len(spec) != ndim:
            raise TypeError(
                f"convolution dimension_numbers[{name}] {spec!r} must have length {ndim}"
                f"{errors.where()}"
            )
        if len(set(spec)) != len(spec) or any(c not in spec for c in special):
            raise TypeError(
                f"convolution dimension_numbers[{name}] {spec!r} must hold {special[0]!r}, "
                f"{special[1]!r} and distinct spatial letters{errors.where()}"
            )
    spatial = set(rhs) - set("OI")
    if set(lhs) - set("NC") != spatial or set(out) - set("NC") != spatial:
        raise TypeError(
            f"convolution dimension_numbers {(lhs, rhs, out)!r} must name the same spatial "
            f"dimensions{errors.where()}"
        )


def padtype_to_pads(
    in_shape: Sequence[int],
    window_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: Any,
) -> list[tuple[int, int]]:
    """The (low, high) padding of each spatial axis for 'SAME', 'SAME_LOWER' or 'VALID'."""
    if not isinstance(padding, str):
        raise errors.EmberTypeError(f"padding must be a string, got {padding!r}{errors.where()}")
    padding = padding.upper()
    ones = (1,) * len(in_shape)
    pairs = padding_pairs(padding, in_shape, window_shape, window_strides, ones, ones)
    return [tuple(p) for p in pairs]


def conv(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: str,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NC.../OI... layouts and no dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
    )


def conv_with_general_padding(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None,
    rhs_dilation: Sequence[int] | None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NC.../OI... layouts."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
    )


_TRANSPOSE_LAYOUTS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def _transpose_padding(kernel: int, stride: int, padding: str) -> tuple[int, int]:
    """Padding of the stride-dilated input so that the output has 'SAME' (input * stride)
    or 'VALID' ((input - 1) * stride + kernel) size along one axis."""
    if padding == "SAME":
        total = kernel + stride - 2
        low = kernel - 1 if stride > kernel - 1 else math.ceil(total / 2)
    elif padding == "VALID":
        total = kernel + stride - 2 + max(kernel - stride, 0)
        low = kernel - 1
    else:
        raise ValueError(f"Padding mode must be `SAME` or `VALID`, got {padding!r}")
    return low, total - low


def conv_transpose(
    lhs: Any,
    rhs: Any,
    strides: Sequence[int],
    padding: Any,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
    use_consistent_padding: bool = False,
) -> Any:
    """The transposed convolution: ``lhs`` dilated by ``strides``, then convolved.

    With ``transpose_kernel`` the kernel's spatial axes are flipped and its in/out feature
    axes swapped, which makes this the gradient of ``conv_general_dilated`` with respect to
    its input.
    """
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    ndim = len(lhs_shape)
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError(f"No {ndim - 2}+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    kernel_spatial = [rhs_shape[d] for d in dn.rhs_spec[2:]]
    rhs_dilation = tuple(rhs_dilation or (1,) * (ndim - 2))
    strides = tuple(int(s) for s in strides)
    pads: Any = padding
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_axis = [padding] * len(strides) if isinstance(padding, str) else padding
        dilated = [0 if k == 0 else 1 + d * (k - 1) for k, d in zip(kernel_spatial, rhs_dilation)]
        pads = tuple(_transpose_padding(k, s, p) for k, s, p in zip(dilated, strides, per_axis))
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * (ndim - 2),
        pads,
        lhs_dilation=strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_patches(
    lhs: Any,
    filter_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """The patches a convolution with ``filter_shape`` would see, flattened into the output
    feature axis (channel-major, then window positions in row-major order)."""
    aval = get_aval(lhs)
    filter_shape = tuple(int(k) for k in filter_shape)
    dn = conv_dimension_numbers(aval.shape, (1, 1, *filter_shape), dimension_numbers)
    window = math.prod(filter_shape)
    channels = aval.shape[dn.lhs_spec[1]]
    # One output channel per (channel, window position), picking that position.
    eye = np.eye(window, dtype=aval.dtype)
    kernel = np.broadcast_to(eye, (channels, window, window)).reshape(
        (channels * window, 1, *filter_shape)
    )
    kernel = np.moveaxis(kernel, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(
        lhs,
        np.ascontiguousarray(kernel),
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        feature_group_count=channels,
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    filter_shape: Sequence[int],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
) -> Any:
    """An unshared ("locally connected") convolution: every output position has its own
    kernel. ``rhs``'s spatial axes index output positions, and its ``I`` axis holds the
    flattened patch (channel-major, as ``conv_general_dilated_patches`` lays it out)."""
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
        dimension_numbers,
    )  # fmt: skip
    aval = get_aval(lhs)
    dn = conv_dimension_numbers(aval.shape, (1, 1, *filter_shape), dimension_numbers)
    # Batch over output positions, pairing the patches' spatial axes (in increasing order)
    # with the kernel's matching ones, and contract the patch axis with the kernel's I axis.
    pairs = sorted(zip(dn.out_spec[2:], dn.rhs_spec[2:]))
    numbers = (
        ((dn.out_spec[1],), (dn.rhs_spec[1],)),
        (tuple(p for p, _ in pairs), tuple(r for _, r in pairs)),
    )
    out = dot_general(patches, rhs, numbers, precision=canonical_precision(precision))
    # dot_general gives (spatial..., N, O): put N and O where the output layout wants them.
    ndim = aval.ndim
    order = [None] * ndim
    order[dn.out_spec[0]], order[dn.out_spec[1]] = ndim - 2, ndim - 1
    rest = iter(range(ndim - 2))
    return transpose(out, tuple(next(rest) if o is None else o for o in order))


# --------------------------------------------------------------------------------------------
# Output shapes


def _pairs(padding: Any, in_spatial, window, strides) -> list[tuple[int, int]]:
    if isinstance(padding, str):
        return padtype_to_pads(in_spatial, window, strides, padding)
    return [(int(lo), int(hi)) for lo, hi in padding]


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1) -> tuple:
    """The output shape of an NC.../OI... convolution."""
    in_spatial, window = tuple(lhs_shape[2:]), tuple(rhs_shape[2:])
    if len(in_spatial) != len(strides):
        raise TypeError(
            f"conv_shape_tuple: {len(strides)} strides for {len(in_spatial)} spatial "
            f"dimensions{errors.where()}"
        )
    pairs = _pairs(pads, in_spatial, window, strides)
    spatial = tuple(
        max(0, (n + lo + hi - k) // s + 1)
        for n, k, s, (lo, hi) in zip(in_spatial, window, strides, pairs)
    )
    return (lhs_shape[0] // batch_group_count, rhs_shape[0], *spatial)


def _in_layout(shape, spec) -> tuple[int, ...]:
    return tuple(shape[d] for d in spec)


def _out_layout(canonical, spec) -> tuple[int, ...]:
    out = [0] * len(spec)
    for position, size in zip(spec, canonical):
        out[position] = size
    return tuple(out)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_general_dilated`` (no dilation) in the output layout."""
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    canonical = conv_shape_tuple(
        _in_layout(lhs_shape, dn.lhs_spec),
        _in_layout(rhs_shape, dn.rhs_spec),
        window_strides,
        padding,
    )
    return _out_layout(canonical, dn.out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` in the output layout."""
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs, rhs = _in_layout(lhs_shape, dn.lhs_spec), _in_layout(rhs_shape, dn.rhs_spec)
    if isinstance(padding, str):
        pairs = [_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
    else:
        pairs = [(int(lo), int(hi)) for lo, hi in padding]
    spatial = tuple(
        max(0, (n - 1) * s + 1 + lo + hi - k + 1) if n else 0
        for n, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], window_strides, pairs)
    )
    return _out_layout((lhs[0], rhs[0], *spatial), dn.out_spec)


def conv_general_permutations(dimension_numbers: Any) -> tuple[tuple[int, ...], ...]:
    """The positions of (N, C, spatial...), (O, I, spatial...), (N, C, spatial...) in three
    layout strings."""
    lhs, rhs, out = dimension_numbers
    if not all(isinstance(spec, str) for spec in (lhs, rhs, out)):
        raise errors.EmberTypeError(
            f"conv_general_permutations needs three layout strings{errors.where()}"
        )
    _check_layouts(lhs, rhs, out, len(lhs))
    return tuple(_conv.conv_dimension_numbers_for_rank(len(lhs), dimension_numbers))


def reduce_window_shape_tuple(
    operand_shape,
    window_dimensions,
    window_strides,
    padding,
    base_dilation=None,
    window_dilation=None,
) -> tuple[int, ...]:
    """The output shape of ``reduce_window``."""
    ndim = len(operand_shape)
    base_dilation = tuple(base_dilation or (1,) * ndim)
    window_dilation = tuple(window_dilation or (1,) * ndim)
    pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    return tuple(
        windowed_shape(
            tuple(operand_shape),
            tuple(window_dimensions),
            tuple(window_strides),
            pairs,
            base_dilation,
            window_dilation,
        )
    )
