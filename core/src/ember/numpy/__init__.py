"""ember.numpy: a NumPy-compatible namespace (``import ember.numpy as enp``)."""

import numpy as _np

from ember._src import dtypes as _dtypes
from ember._src.numpy.advanced_indexing import take as take, take_along_axis as take_along_axis
from ember._src.numpy.contractions import (
    dot as dot,
    einsum as einsum,
    inner as inner,
    matmul as matmul,
    outer as outer,
    tensordot as tensordot,
    vdot as vdot,
    vecdot as vecdot,
)
from ember._src.numpy.creation import (
    arange as arange,
    array as array,
    asarray as asarray,
    empty as empty,
    empty_like as empty_like,
    eye as eye,
    full as full,
    full_like as full_like,
    identity as identity,
    linspace as linspace,
    ones as ones,
    ones_like as ones_like,
    zeros as zeros,
    zeros_like as zeros_like,
)
from ember._src.numpy.elementwise import (
    abs as abs,
    absolute as absolute,
    add as add,
    arccos as arccos,
    arccosh as arccosh,
    arcsin as arcsin,
    arcsinh as arcsinh,
    arctan as arctan,
    arctan2 as arctan2,
    arctanh as arctanh,
    around as around,
    bitwise_and as bitwise_and,
    bitwise_not as bitwise_not,
    bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor,
    cbrt as cbrt,
    ceil as ceil,
    clip as clip,
    conj as conj,
    conjugate as conjugate,
    cos as cos,
    cosh as cosh,
    divide as divide,
    equal as equal,
    exp as exp,
    exp2 as exp2,
    expm1 as expm1,
    floor as floor,
    floor_divide as floor_divide,
    fmod as fmod,
    greater as greater,
    greater_equal as greater_equal,
    imag as imag,
    invert as invert,
    isfinite as isfinite,
    isinf as isinf,
    isnan as isnan,
    less as less,
    less_equal as less_equal,
    log as log,
    log1p as log1p,
    log2 as log2,
    log10 as log10,
    logaddexp as logaddexp,
    logical_and as logical_and,
    logical_not as logical_not,
    logical_or as logical_or,
    logical_xor as logical_xor,
    maximum as maximum,
    minimum as minimum,
    mod as mod,
    multiply as multiply,
    negative as negative,
    not_equal as not_equal,
    positive as positive,
    pow as pow,
    power as power,
    real as real,
    reciprocal as reciprocal,
    remainder as remainder,
    rint as rint,
    round as round,
    sign as sign,
    sin as sin,
    sinh as sinh,
    sqrt as sqrt,
    square as square,
    subtract as subtract,
    tan as tan,
    tanh as tanh,
    true_divide as true_divide,
    trunc as trunc,
)
from ember._src.numpy.extras import (
    allclose as allclose,
    argwhere as argwhere,
    array_equal as array_equal,
    convolve as convolve,
    count_nonzero as count_nonzero,
    diff as diff,
    digitize as digitize,
    flatnonzero as flatnonzero,
    histogram as histogram,
    interp as interp,
    isclose as isclose,
    median as median,
    meshgrid as meshgrid,
    nanmax as nanmax,
    nanmean as nanmean,
    nanmin as nanmin,
    nanprod as nanprod,
    nanstd as nanstd,
    nansum as nansum,
    nanvar as nanvar,
    nonzero as nonzero,
    pad as pad,
    percentile as percentile,
    polyval as polyval,
    quantile as quantile,
    repeat as repeat,
    roll as roll,
    searchsorted as searchsorted,
    tile as tile,
    unique as unique,
    where as where,
)
from ember._src.numpy.manipulation import (
    astype as astype,
    atleast_1d as atleast_1d,
    atleast_2d as atleast_2d,
    broadcast_arrays as broadcast_arrays,
    broadcast_to as broadcast_to,
    concat as concat,
    concatenate as concatenate,
    expand_dims as expand_dims,
    flip as flip,
    hstack as hstack,
    moveaxis as moveaxis,
    ndim as ndim,
    permute_dims as permute_dims,
    ravel as ravel,
    reshape as reshape,
    shape as shape,
    size as size,
    squeeze as squeeze,
    stack as stack,
    swapaxes as swapaxes,
    transpose as transpose,
    vstack as vstack,
)
from ember._src.numpy.reductions import (
    all as all,
    amax as amax,
    amin as amin,
    any as any,
    argmax as argmax,
    argmin as argmin,
    max as max,
    mean as mean,
    min as min,
    prod as prod,
    std as std,
    sum as sum,
    var as var,
)
from ember._src.numpy.sorting import (
    argsort as argsort,
    cumprod as cumprod,
    cumsum as cumsum,
    sort as sort,
)
from ember._src.runtime.array import Array as ndarray
from ember.numpy import fft as fft

bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
if _dtypes.bfloat16 is not None:
    bfloat16 = _dtypes.bfloat16
dtype = _np.dtype
float_ = float64
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
finfo, iinfo = _np.finfo, _np.iinfo
issubdtype = _dtypes.issubdtype


def result_type(*args):
    """The dtype ember's promotion rules give for combining ``args``."""
    from ember._src.core import get_aval as _get_aval  # noqa: PLC0415 - keeps namespace clean

    avals = [_get_aval(a) if not isinstance(a, (type, _np.dtype, str)) else None for a in args]
    pairs = [
        (a.dtype, a.weak_type) if a is not None else (_dtypes.canonicalize(_np.dtype(x)), False)
        for a, x in zip(avals, args)
    ]
    return _dtypes.promote(pairs)[0]
