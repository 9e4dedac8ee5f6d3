"""ember.lax: the primitive-level API (strict dtypes, explicit broadcasting)."""

import importlib as _importlib

from ember._src.lax.convolution import (
    ConvGeneralDilatedDimensionNumbers as ConvGeneralDilatedDimensionNumbers,
    conv as conv,
    conv_dimension_numbers as conv_dimension_numbers,
    conv_general_dilated_local as conv_general_dilated_local,
    conv_general_dilated_patches as conv_general_dilated_patches,
    conv_general_permutations as conv_general_permutations,
    conv_general_shape_tuple as conv_general_shape_tuple,
    conv_shape_tuple as conv_shape_tuple,
    conv_transpose as conv_transpose,
    conv_transpose_shape_tuple as conv_transpose_shape_tuple,
    conv_with_general_padding as conv_with_general_padding,
    padtype_to_pads as padtype_to_pads,
    reduce_window_shape_tuple as reduce_window_shape_tuple,
)
from ember._src.lax.cumulative import (
    cumlogsumexp as cumlogsumexp,
    cummax as cummax,
    cummin as cummin,
    cumprod as cumprod,
    cumsum as cumsum,
)
from ember._src.lax.implicit_solvers import (
    custom_linear_solve as custom_linear_solve,
    custom_root as custom_root,
)
from ember._src.lax.mapping import map as map
from ember._src.lax.numeric import (
    DotDimensionNumbers as DotDimensionNumbers,
    Precision as Precision,
    PrecisionLike as PrecisionLike,
    RoundingMethod as RoundingMethod,
    batch_matmul as batch_matmul,
    clz as clz,
    dot as dot,
    exp2 as exp2,
    mulhi as mulhi,
    ragged_dot as ragged_dot,
    reciprocal as reciprocal,
    reduce as reduce,
    reduce_xor as reduce_xor,
    round as round,
    square as square,
)
from ember._src.lax.operators import (
    broadcast as broadcast,
    convert_element_type as convert_element_type,
    iota as iota,
    select as select,
    stop_gradient as stop_gradient,
)
from ember._src.lax.slicing import (
    GatherDimensionNumbers as GatherDimensionNumbers,
    GatherScatterMode as GatherScatterMode,
    ScatterDimensionNumbers as ScatterDimensionNumbers,
    broadcast_shapes as broadcast_shapes,
    broadcast_to_rank as broadcast_to_rank,
    broadcasted_iota as broadcasted_iota,
    collapse as collapse,
    dynamic_index_in_dim as dynamic_index_in_dim,
    dynamic_slice as dynamic_slice,
    dynamic_slice_in_dim as dynamic_slice_in_dim,
    dynamic_update_index_in_dim as dynamic_update_index_in_dim,
    dynamic_update_slice as dynamic_update_slice,
    dynamic_update_slice_in_dim as dynamic_update_slice_in_dim,
    empty as empty,
    full as full,
    full_like as full_like,
    gather as gather,
    index_in_dim as index_in_dim,
    index_take as index_take,
    scatter as scatter,
    scatter_add as scatter_add,
    scatter_apply as scatter_apply,
    scatter_max as scatter_max,
    scatter_min as scatter_min,
    scatter_mul as scatter_mul,
    scatter_sub as scatter_sub,
    slice_in_dim as slice_in_dim,
    split as split,
    stack as stack,
    tile as tile,
    unstack as unstack,
)
from ember._src.lax.sorting import (
    approx_max_k as approx_max_k,
    approx_min_k as approx_min_k,
    top_k as top_k,
)
from ember._src.lax.special_compiled import (
    bessel_i0e as bessel_i0e,
    bessel_i1e as bessel_i1e,
    betainc as betainc,
    zeta as zeta,
)
from ember._src.primitives.arithmetic import (
    abs as abs,
    add as add,
    ceil as ceil,
    complex as complex,
    conj as conj,
    div as div,
    floor as floor,
    imag as imag,
    max as max,
    min as min,
    mul as mul,
    neg as neg,
    real as real,
    rem as rem,
    sign as sign,
    sub as sub,
)
from ember._src.primitives.bits import (
    bitcast_convert_type as bitcast_convert_type,
    bitwise_and as bitwise_and,
    bitwise_not as bitwise_not,
    bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor,
    population_count as population_count,
    shift_left as shift_left,
    shift_right_arithmetic as shift_right_arithmetic,
    shift_right_logical as shift_right_logical,
)
from ember._src.primitives.clamp import clamp as clamp
from ember._src.primitives.collective_rules import axis_size_of as axis_size
from ember._src.primitives.collectives import (
    all_gather as all_gather,
    all_to_all as all_to_all,
    axis_index as axis_index,
    pcast as pcast,
    pmax as pmax,
    pmean as pmean,
    pmin as pmin,
    ppermute as ppermute,
    psum as psum,
    psum_scatter as psum_scatter,
    pvary as pvary,
)
from ember._src.primitives.comparisons import (
    eq as eq,
    ge as ge,
    gt as gt,
    is_finite as is_finite,
    le as le,
    lt as lt,
    ne as ne,
)
from ember._src.primitives.control_flow.associative_scan import associative_scan as associative_scan
from ember._src.primitives.control_flow.cond import cond as cond, switch as switch
from ember._src.primitives.control_flow.loops import (
    fori_loop as fori_loop,
    while_loop as while_loop,
)
from ember._src.primitives.control_flow.platform_dependent import (
    platform_dependent as platform_dependent,
)
from ember._src.primitives.control_flow.scan import scan as scan
from ember._src.primitives.conv import (
    ConvDimensionNumbers as ConvDimensionNumbers,
    conv_general_dilated as conv_general_dilated,
)
from ember._src.primitives.fft import FftType as FftType, fft as fft
from ember._src.primitives.igamma import (
    igamma as igamma,
    igamma_grad_a as igamma_grad_a,
    igammac as igammac,
    random_gamma_grad as random_gamma_grad,
)
from ember._src.primitives.linalg import dot_general as dot_general
from ember._src.primitives.math_functions import (
    acos as acos,
    acosh as acosh,
    asin as asin,
    asinh as asinh,
    atan as atan,
    atan2 as atan2,
    atanh as atanh,
    cbrt as cbrt,
    cos as cos,
    cosh as cosh,
    exp as exp,
    expm1 as expm1,
    integer_pow as integer_pow,
    log as log,
    log1p as log1p,
    logistic as logistic,
    pow as pow,
    rsqrt as rsqrt,
    sin as sin,
    sinh as sinh,
    sqrt as sqrt,
    tan as tan,
    tanh as tanh,
)
from ember._src.primitives.optimization_barrier import (
    optimization_barrier as optimization_barrier,
)
from ember._src.primitives.precision import (
    nextafter as nextafter,
    reduce_precision as reduce_precision,
)
from ember._src.primitives.reduce import (
    argmax as argmax,
    argmin as argmin,
    reduce_and as reduce_and,
    reduce_max as reduce_max,
    reduce_min as reduce_min,
    reduce_or as reduce_or,
    reduce_prod as reduce_prod,
)
from ember._src.primitives.reduce_window import reduce_window as reduce_window
from ember._src.primitives.rng_bit_generator import (
    RandomAlgorithm as RandomAlgorithm,
    rng_bit_generator as rng_bit_generator,
)
from ember._src.primitives.selection import (
    select_n as select_n,
)
from ember._src.primitives.shape import (
    broadcast_in_dim as broadcast_in_dim,
    expand_dims as expand_dims,
    reduce_sum as reduce_sum,
    reshape as reshape,
    squeeze as squeeze,
    transpose as transpose,
)
from ember._src.primitives.sharding_constraint import (
    with_sharding_constraint as with_sharding_constraint,
)
from ember._src.primitives.slicing import (
    concatenate as concatenate,
    pad as pad,
    rev as rev,
    slice_op as slice,
)
from ember._src.primitives.sort import sort as sort, sort_key_val as sort_key_val
from ember._src.primitives.special import (
    digamma as digamma,
    erf as erf,
    erf_inv as erf_inv,
    erfc as erfc,
    lgamma as lgamma,
    polygamma as polygamma,
)


def __getattr__(name: str):
    # ``ember.lax.linalg`` is imported on first use, as ``ember.random`` is
    if name == "linalg":
        return _importlib.import_module("ember.lax.linalg")
    raise AttributeError(f"module 'ember.lax' has no attribute {name!r}")
