"""ember.numpy: a NumPy-compatible namespace (``import ember.numpy as enp``)."""

import numpy as _np

from ember._src import dtypes as _dtypes
from ember._src.numpy.advanced_indexing import take as take, take_along_axis as take_along_axis
from ember._src.numpy.arrangement import (
    copy as copy,
    fliplr as fliplr,
    flipud as flipud,
    resize as resize,
    rollaxis as rollaxis,
    rot90 as rot90,
    trim_zeros as trim_zeros,
)
from ember._src.numpy.array_api import (
    __array_namespace_info__ as __array_namespace_info__,
    acos as acos,
    acosh as acosh,
    asin as asin,
    asinh as asinh,
    atan as atan,
    atan2 as atan2,
    atanh as atanh,
    bitwise_invert as bitwise_invert,
    bitwise_left_shift as bitwise_left_shift,
    bitwise_left_shift as left_shift,
    bitwise_right_shift as bitwise_right_shift,
    bitwise_right_shift as right_shift,
    cumulative_prod as cumulative_prod,
    cumulative_sum as cumulative_sum,
    from_dlpack as from_dlpack,
    isdtype as isdtype,
    nextafter as nextafter,
    unique_all as unique_all,
    unique_counts as unique_counts,
    unique_inverse as unique_inverse,
    unique_values as unique_values,
    unstack as unstack,
)
from ember._src.numpy.broadcasting import (
    array_equiv as array_equiv,
    broadcast_shapes as broadcast_shapes,
)
from ember._src.numpy.calculus import (
    diff as diff,
    ediff1d as ediff1d,
    gradient as gradient,
    trapezoid as trapezoid,
    unwrap as unwrap,
)
from ember._src.numpy.comparison import (
    allclose as allclose,
    array_equal as array_equal,
    isclose as isclose,
)
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
from ember._src.numpy.diagonals import (
    diag as diag,
    diag_indices as diag_indices,
    diag_indices_from as diag_indices_from,
    diagflat as diagflat,
    diagonal as diagonal,
    fill_diagonal as fill_diagonal,
    mask_indices as mask_indices,
    trace as trace,
    tri as tri,
    tril as tril,
    tril_indices as tril_indices,
    tril_indices_from as tril_indices_from,
    triu as triu,
    triu_indices as triu_indices,
    triu_indices_from as triu_indices_from,
    vander as vander,
)
from ember._src.numpy.dtype_functions import (
    can_cast as can_cast,
    finfo as finfo,
    iinfo as iinfo,
    promote_types as promote_types,
    result_type as result_type,
)
from ember._src.numpy.elementwise import (
    abs as abs,
    absolute as absolute,
    arccos as arccos,
    arccosh as arccosh,
    arcsin as arcsin,
    arcsinh as arcsinh,
    arctan as arctan,
    arctan2 as arctan2,
    arctanh as arctanh,
    around as around,
    bitwise_not as bitwise_not,
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
    logical_not as logical_not,
    mod as mod,
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
    tan as tan,
    tanh as tanh,
    true_divide as true_divide,
    trunc as trunc,
)
from ember._src.numpy.float_functions import (
    angle as angle,
    bitwise_count as bitwise_count,
    copysign as copysign,
    deg2rad as deg2rad,
    degrees as degrees,
    divmod as divmod,
    fabs as fabs,
    float_power as float_power,
    fmax as fmax,
    fmin as fmin,
    frexp as frexp,
    gcd as gcd,
    heaviside as heaviside,
    hypot as hypot,
    i0 as i0,
    iscomplex as iscomplex,
    iscomplexobj as iscomplexobj,
    isneginf as isneginf,
    isposinf as isposinf,
    isreal as isreal,
    isrealobj as isrealobj,
    lcm as lcm,
    ldexp as ldexp,
    modf as modf,
    nan_to_num as nan_to_num,
    rad2deg as rad2deg,
    radians as radians,
    signbit as signbit,
    sinc as sinc,
    spacing as spacing,
)
from ember._src.numpy.functional import (
    apply_along_axis as apply_along_axis,
    apply_over_axes as apply_over_axes,
    fromfunction as fromfunction,
    vectorize as vectorize,
)
from ember._src.numpy.host import (
    ComplexWarning as ComplexWarning,
    array_repr as array_repr,
    array_str as array_str,
    frombuffer as frombuffer,
    fromfile as fromfile,
    fromiter as fromiter,
    fromstring as fromstring,
    get_printoptions as get_printoptions,
    isscalar as isscalar,
    iterable as iterable,
    load as load,
    printoptions as printoptions,
    save as save,
    savez as savez,
    set_printoptions as set_printoptions,
)
from ember._src.numpy.index_tricks import (
    c_ as c_,
    index_exp as index_exp,
    indices as indices,
    ix_ as ix_,
    meshgrid as meshgrid,
    mgrid as mgrid,
    ogrid as ogrid,
    r_ as r_,
    ravel_multi_index as ravel_multi_index,
    s_ as s_,
    unravel_index as unravel_index,
)
from ember._src.numpy.interpolation import interp as interp
from ember._src.numpy.joining import (
    append as append,
    atleast_3d as atleast_3d,
    block as block,
    column_stack as column_stack,
    delete as delete,
    dstack as dstack,
    insert as insert,
)
from ember._src.numpy.linalg import matrix_transpose as matrix_transpose
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
from ember._src.numpy.nan_reductions import (
    nanmax as nanmax,
    nanmean as nanmean,
    nanmin as nanmin,
    nanprod as nanprod,
    nanstd as nanstd,
    nansum as nansum,
    nanvar as nanvar,
)
from ember._src.numpy.nonzero import (
    argwhere as argwhere,
    count_nonzero as count_nonzero,
    flatnonzero as flatnonzero,
    nonzero as nonzero,
    where as where,
)
from ember._src.numpy.packing import (
    packbits as packbits,
    unpackbits as unpackbits,
)
from ember._src.numpy.padding import pad as pad
from ember._src.numpy.partitioning import (
    argpartition as argpartition,
    lexsort as lexsort,
    partition as partition,
    sort_complex as sort_complex,
)
from ember._src.numpy.polynomials import (
    poly as poly,
    polyadd as polyadd,
    polyder as polyder,
    polydiv as polydiv,
    polyfit as polyfit,
    polyint as polyint,
    polymul as polymul,
    polysub as polysub,
    polyval as polyval,
    roots as roots,
)
from ember._src.numpy.products import (
    convolve as convolve,
    correlate as correlate,
    cross as cross,
    einsum_path as einsum_path,
    kron as kron,
    matvec as matvec,
    vecmat as vecmat,
)
from ember._src.numpy.quantiles import (
    median as median,
    percentile as percentile,
    quantile as quantile,
)
from ember._src.numpy.ranges import (
    geomspace as geomspace,
    logspace as logspace,
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
from ember._src.numpy.repetition import repeat as repeat, roll as roll, tile as tile
from ember._src.numpy.scalar_types import scalar_type as _scalar_type
from ember._src.numpy.searching import digitize as digitize, searchsorted as searchsorted
from ember._src.numpy.selection import (
    choose as choose,
    compress as compress,
    extract as extract,
    piecewise as piecewise,
    place as place,
    put as put,
    put_along_axis as put_along_axis,
    select as select,
)
from ember._src.numpy.set_routines import (
    intersect1d as intersect1d,
    isin as isin,
    setdiff1d as setdiff1d,
    setxor1d as setxor1d,
    union1d as union1d,
    unique as unique,
)
from ember._src.numpy.sorting import (
    argsort as argsort,
    cumprod as cumprod,
    cumsum as cumsum,
    sort as sort,
)
from ember._src.numpy.splitting import (
    array_split as array_split,
    dsplit as dsplit,
    hsplit as hsplit,
    split as split,
    vsplit as vsplit,
)
from ember._src.numpy.statistics import (
    average as average,
    bincount as bincount,
    corrcoef as corrcoef,
    cov as cov,
    histogram as histogram,
    histogram2d as histogram2d,
    histogram_bin_edges as histogram_bin_edges,
    histogramdd as histogramdd,
    nanargmax as nanargmax,
    nanargmin as nanargmin,
    nancumprod as nancumprod,
    nancumsum as nancumsum,
    nanmedian as nanmedian,
    nanpercentile as nanpercentile,
    nanquantile as nanquantile,
    ptp as ptp,
)
from ember._src.numpy.ufunc import (
    add as add,
    bitwise_and as bitwise_and,
    bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor,
    frompyfunc as frompyfunc,
    logaddexp as logaddexp,
    logaddexp2 as logaddexp2,
    logical_and as logical_and,
    logical_or as logical_or,
    logical_xor as logical_xor,
    maximum as maximum,
    minimum as minimum,
    multiply as multiply,
    negative as negative,
    subtract as subtract,
    ufunc as ufunc,
)
from ember._src.numpy.windows import (
    bartlett as bartlett,
    blackman as blackman,
    hamming as hamming,
    hanning as hanning,
    kaiser as kaiser,
)
from ember._src.runtime.array import Array as ndarray
from ember.numpy import fft as fft, linalg as linalg

# Scalar types as JAX's: calling one makes an array (jnp.float32(1) is an Array)
bool_ = bool = _scalar_type(_np.bool_, "bool")
int8, int16 = _scalar_type(_np.int8), _scalar_type(_np.int16)
int32, int64 = _scalar_type(_np.int32), _scalar_type(_np.int64)
uint8, uint16 = _scalar_type(_np.uint8), _scalar_type(_np.uint16)
uint32, uint64 = _scalar_type(_np.uint32), _scalar_type(_np.uint64)
float16, float32, float64 = (
    _scalar_type(_np.float16),
    _scalar_type(_np.float32),
    _scalar_type(_np.float64),
)
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
if _dtypes.bfloat16 is not None:
    bfloat16 = _scalar_type(_dtypes.bfloat16)
dtype = _np.dtype
float_ = float64
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
issubdtype = _dtypes.issubdtype

# NumPy's scalar-type hierarchy and its aliases, as JAX exposes them
character, complexfloating, flexible = _np.character, _np.complexfloating, _np.flexible
floating, generic, inexact, integer = _np.floating, _np.generic, _np.inexact, _np.integer
number, object_, signedinteger = _np.number, _np.object_, _np.signedinteger
unsignedinteger = _np.unsignedinteger
single, double, csingle, cdouble = float32, float64, complex64, complex128
int_, uint, complex_ = int64, uint64, complex128
euler_gamma = 0.5772156649015329

__array_api_version__ = "2024.12"
