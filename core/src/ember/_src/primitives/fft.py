"""``fft``: XLA's fast Fourier transforms over the trailing axes (FFT, IFFT, RFFT, IRFFT).

Transposes follow JAX's convention (no conjugation for complex-linear maps): the transpose of
an FFT is an FFT and of an IFFT an IFFT; the real transforms transpose through their complex
counterparts (RFFT: zero-pad the spectrum, FFT, take the real part; IRFFT: an RFFT with the
Hermitian weights, conjugated).
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import conj, mul, real
from ember._src.primitives.shape import broadcast_in_dim, convert_element_type, move_axis
from ember._src.primitives.slicing import pad

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


class FftType(enum.IntEnum):
    """The kind of transform ``fft`` computes (its name or this enum are accepted)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _fft_abstract_eval(x: ShapedArray, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    if not 1 <= k <= 3 or x.ndim < k:
        raise errors.EmberTypeError(
            f"fft over {k} axes of an array of rank {x.ndim} (1 to 3 axes){errors.where()}"
        )
    shape = list(x.shape)
    if fft_type == "RFFT":
        if x.dtype.kind != "f":
            raise errors.EmberTypeError(f"RFFT needs a real operand, got {x.str_short()}")
        if tuple(shape[-k:]) != tuple(fft_lengths):
            raise errors.EmberTypeError(f"RFFT lengths {fft_lengths} differ from {x.shape}")
        shape[-1] = fft_lengths[-1] // 2 + 1
        return ShapedArray(tuple(shape), dtypes.complex_dtype(x.dtype))
    if x.dtype.kind != "c":
        raise errors.EmberTypeError(f"{fft_type} needs a complex operand, got {x.str_short()}")
    if fft_type == "IRFFT":
        if tuple(shape[-k:-1]) != tuple(fft_lengths[:-1]) or shape[-1] != fft_lengths[-1] // 2 + 1:
            raise errors.EmberTypeError(f"IRFFT lengths {fft_lengths} do not fit {x.shape}")
        shape[-1] = fft_lengths[-1]
        return ShapedArray(tuple(shape), dtypes.real_dtype(x.dtype))
    if tuple(shape[-k:]) != tuple(fft_lengths):
        raise errors.EmberTypeError(f"{fft_type} lengths {fft_lengths} differ from {x.shape}")
    return ShapedArray(x.shape, x.dtype)


def _fft_reference(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == "FFT":
        out = np.fft.fftn(x, axes=axes)
    elif fft_type == "IFFT":
        out = np.fft.ifftn(x, axes=axes)
    elif fft_type == "RFFT":
        out = np.fft.rfftn(x, axes=axes)
    else:
        out = np.fft.irfftn(x, s=fft_lengths, axes=axes)
    return out


def _fft_lowering(ctx, x, *, fft_type, fft_lengths):
    attrs = {
        "fft_type": f"#stablehlo<fft_type {fft_type}>",
        "fft_length": i64_array(fft_lengths),
    }
    return ctx.op("stablehlo.fft", [x], ctx.avals_out[0], attrs)


def _fft_jvp(primals, tangents, *, fft_type, fft_lengths):
    (x,), (t,) = primals, tangents
    out = fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)
    if type(t) is Zero:
        return out, Zero(get_aval(out))
    return out, fft_p.bind(t, fft_type=fft_type, fft_lengths=fft_lengths)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    if fft_type in ("FFT", "IFFT"):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    if fft_type == "RFFT":
        # RFFT = the first n//2+1 outputs of an FFT of the (real) input.
        n = fft_lengths[-1]
        aval = get_aval(ct)
        widths = [(0, 0, 0)] * (aval.ndim - 1) + [(0, n - aval.shape[-1], 0)]
        padded = pad(ct, np.zeros((), aval.dtype), widths)
        return [real(fft_p.bind(padded, fft_type="FFT", fft_lengths=fft_lengths))]
    # IRFFT: an RFFT weighted by how often each half-spectrum bin appears, scaled, conjugated.
    spectrum = fft_p.bind(ct, fft_type="RFFT", fft_lengths=fft_lengths)
    aval = get_aval(spectrum)
    bins = aval.shape[-1]
    odd = fft_lengths[-1] % 2
    weights = np.concatenate([[1.0], np.full(bins - 2 + odd, 2.0), np.ones(1 - odd)])
    weights = weights[:bins] / math.prod(fft_lengths)
    weight = broadcast_in_dim(
        np.asarray(weights, dtypes.real_dtype(aval.dtype)), aval.shape, (aval.ndim - 1,)
    )
    weighted = mul(spectrum, convert_element_type(weight, aval.dtype))
    return [conj(weighted)]


def _fft_batch(vals, dims, *, fft_type, fft_lengths):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0) if d is not not_mapped else x
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


def _transformed_dims(x, *, fft_type, fft_lengths):
    return range(x.ndim - len(fft_lengths), x.ndim)


fft_p = rules.define_primitive(
    "fft",
    sharding=sharding_rules.with_unsplit(
        "fft", _transformed_dims, "the transform mixes its elements"
    ),
    abstract_eval=_fft_abstract_eval,
    jvp=_fft_jvp,
    transpose=_fft_transpose,
    batch=_fft_batch,
    lowering=_fft_lowering,
    reference=_fft_reference,
)


def fft(x: Any, fft_type: FftType | str, fft_lengths: tuple[int, ...]) -> Any:
    if isinstance(fft_type, FftType):
        fft_type = fft_type.name
    elif isinstance(fft_type, str):
        fft_type = fft_type.upper()
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=tuple(int(n) for n in fft_lengths))
