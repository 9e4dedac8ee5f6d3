"""Shape and layout primitives: broadcast_in_dim, reshape, transpose, squeeze (expand_dims).

``reduce_sum`` lives here too, because it is the transpose of ``broadcast_in_dim`` (and vice
versa); ``convert_element_type`` and ``iota`` because every other op family needs them. The
batching helpers at the end (moving and materialising batch axes) are used by all op families.
Static slicing and its transposes (slice, pad, concatenate, rev) are in ``slicing.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives import sharding_rules
from ember._src.primitives.sharding_constraint import (
    devices_for,
    laid_out,
    retype,
    typed_out_sharding,
)
from ember._src.runtime.sharding import NamedSharding, PartitionSpec


def shape_error(message: str) -> errors.EmberTypeError:
    return errors.EmberTypeError(message + errors.where())


def linear_jvp(primitive: Primitive):
    """JVP rule of a primitive linear in its (single) operand: apply it to the tangent."""

    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        if type(t) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        return out, primitive.bind(t, **params)

    return jvp


# --------------------------------------------------------------------------------------------
# broadcast_in_dim


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise shape_error(
            f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} broadcast_dimensions, "
            f"got {broadcast_dimensions}"
        )
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        if not 0 <= out_dim < len(shape) or x.shape[operand_dim] not in (1, shape[out_dim]):
            raise shape_error(
                f"broadcast_in_dim: cannot broadcast operand shape {x.shape} to {shape} with "
                f"broadcast_dimensions={broadcast_dimensions}"
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    # Dimensions of size 1 in the operand that were expanded are summed too, keeping rank.
    expanded = tuple(
        out_dim
        for operand_dim, out_dim in enumerate(broadcast_dimensions)
        if in_shape[operand_dim] == 1 and shape[out_dim] != 1
    )
    total = reduce_sum(ct, tuple(sorted(summed + expanded)))
    return [typed_like(total, x.aval)]


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    size = get_aval(x).shape[0]
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return broadcast_in_dim(x, (size,) + tuple(shape), new_dims), 0


def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
    return ctx.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)


def _broadcast_in_dim_reference(x, *, shape, broadcast_dimensions):
    expanded_shape = [1] * len(shape)
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        expanded_shape[out_dim] = x.shape[operand_dim]
    return np.broadcast_to(np.reshape(x, expanded_shape), shape)


def _broadcast_in_dim_sharding(x, *, shape, broadcast_dimensions):
    """Each operand dimension keeps its split where it lands; new dimensions are whole."""
    out = [None] * len(shape)
    for entry, d in zip(sharding_rules.entries(x), broadcast_dimensions):
        out[d] = entry
    return sharding_rules.build("broadcast_in_dim", (x,), x.typed_sharding.mesh, out)


broadcast_in_dim_p = rules.define_primitive(
    "broadcast_in_dim",
    sharding=_broadcast_in_dim_sharding,
    abstract_eval=_broadcast_in_dim_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_broadcast_in_dim_transpose,
    batch=_broadcast_in_dim_batch,
    lowering=_broadcast_in_dim_lowering,
    reference=_broadcast_in_dim_reference,
)


def broadcast_in_dim(
    operand: Any,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` broadcast to ``shape``; its axis i becomes ``broadcast_dimensions[i]``."""
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    if any(d < 0 for d in shape):  # past here XLA would refuse the program with a parse error
        raise ValueError(
            f"broadcast_in_dim: the shape must have non-negative dimensions, got {shape}"
            f"{errors.where()}"
        )
    aval = get_aval(operand)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        out = operand
    else:
        out = broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims)
    return out if out_sharding is None else laid_out(out, out_sharding)


def broadcast_to_shape(x: Any, shape: Sequence[int]) -> Any:
    """NumPy-style broadcast of ``x`` to ``shape`` (trailing dimensions aligned)."""
    aval = get_aval(x)
    shape = tuple(shape)
    if aval.shape == shape:
        return x
    offset = len(shape) - aval.ndim
    if offset < 0 or any(d != 1 and d != s for d, s in zip(aval.shape, shape[offset:])):
        raise shape_error(f"cannot broadcast shape {aval.shape} to {shape}")
    keep = [i for i, d in enumerate(aval.shape) if d == shape[offset + i]]
    if len(keep) != aval.ndim:
        x = reshape(x, tuple(aval.shape[i] for i in keep))
    return broadcast_in_dim(x, shape, tuple(offset + i for i in keep))


# --------------------------------------------------------------------------------------------
# reduce_sum


def reduced_shape(shape: tuple[int, ...], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def check_axes(name: str, aval: ShapedArray, axes: Sequence[int]) -> None:
    for axis in axes:
        if not 0 <= axis < aval.ndim:
            raise shape_error(f"{name}: axis {axis} is out of range for shape {aval.shape}")
    if len(set(axes)) != len(axes):
        raise shape_error(f"{name}: repeated axis in {tuple(axes)}")


def _reduce_sum_abstract_eval(x, *, axes):
    check_axes("reduce_sum", x, axes)
    return ShapedArray(reduced_shape(x.shape, axes), x.dtype, x.weak_type)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [typed_like(broadcast_in_dim(ct, shape, kept), x.aval)]


def _reduce_sum_batch(vals, dims, *, axes):
    (x,), (d,) = vals, dims
    new_axes = tuple(a + (a >= d) for a in axes)
    out_dim = d - sum(a < d for a in new_axes)
    return reduce_sum(x, new_axes), out_dim


def lower_reduction(ctx, x, axes, hlo_op: str, init: Any) -> str:
    """Lower a reduction over ``axes`` with the binary StableHLO op ``hlo_op``."""
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    scalar = ShapedArray((), in_aval.dtype)
    init_value = ctx.constant(init, scalar)
    body = ctx.region([scalar, scalar], lambda c, a, b: [c.op(hlo_op, [a, b], scalar)])
    return ctx.op(
        "stablehlo.reduce",
        [x, init_value],
        out_aval,
        {"dimensions": i64_array(axes)},
        regions=[body],
    )


def _reduce_sum_lowering(ctx, x, *, axes):
    return lower_reduction(ctx, x, axes, "stablehlo.add", 0)


def _reduce_sum_reference(x, *, axes):
    return np.sum(x, axis=axes, dtype=x.dtype)


reduce_sum_p = rules.define_primitive(
    "reduce_sum",
    sharding=sharding_rules.reduction,
    abstract_eval=_reduce_sum_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_reduce_sum_transpose,
    batch=_reduce_sum_batch,
    lowering=_reduce_sum_lowering,
    reference=_reduce_sum_reference,
)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """The sum of ``operand`` over ``axes``."""
    axes = tuple(axes)
    out = reduce_sum_p.bind(operand, axes=axes) if axes else operand
    return out if out_sharding is None else laid_out(out, out_sharding)


# --------------------------------------------------------------------------------------------
# reshape


# ``out_sharding``: the result's typed sharding when the caller chose it (None: the rule's).


def _reshape_abstract_eval(x, *, new_sizes, out_sharding):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise shape_error(
            f"cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {new_sizes}"
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_transpose(ct, x, *, new_sizes, out_sharding):
    return [typed_like(ct, x.aval)]


def _reshape_batch(vals, dims, *, new_sizes, out_sharding):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    if out_sharding is not None:  # the batch dimension, in front, stays whole
        out_sharding = NamedSharding(out_sharding.mesh, PartitionSpec(None, *out_sharding.spec))
    new_sizes = (get_aval(x).shape[0],) + new_sizes
    return reshape_p.bind(x, new_sizes=new_sizes, out_sharding=out_sharding), 0


def _reshape_lowering(ctx, x, *, new_sizes, out_sharding):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


def _reshape_reference(x, *, new_sizes, out_sharding):
    return np.reshape(x, new_sizes)


def _reshape_sharding(x, *, new_sizes, out_sharding):
    """Dimensions are matched up in groups of equal size (size-1 dimensions aside). A group
    that is one dimension on both sides keeps its split; a dimension split into several
    gives its split to the first of them if that one's size allows it; several merged into
    one give it the split of the first (major) one when the others are whole. Anything else
    is ambiguous: the caller says what it wants with out_sharding."""
    what = "reshape"
    spec = sharding_rules.entries(x)
    ins = [(d, n) for d, n in enumerate(x.shape) if n != 1]
    outs = [(d, n) for d, n in enumerate(new_sizes) if n != 1]
    out: list[Any] = [None] * len(new_sizes)
    i = j = 0
    while i < len(ins) and j < len(outs):
        group_in, group_out = [ins[i]], [outs[j]]
        size_in, size_out = ins[i][1], outs[j][1]
        i, j = i + 1, j + 1
        while size_in != size_out:
            if size_in < size_out:
                group_in.append(ins[i])
                size_in *= ins[i][1]
                i += 1
            else:
                group_out.append(outs[j])
                size_out *= outs[j][1]
                j += 1
        splits = [spec[d] for d, _ in group_in]
        if all(e is None for e in splits):
            continue
        first_out, first_size = group_out[0]
        axes = (splits[0],) if isinstance(splits[0], str) else splits[0] or ()
        parts = int(np.prod([x.typed_sharding.mesh.axis_size(a) for a in axes]))
        if (
            len(group_in) == 1
            and first_size % parts == 0
            or len(group_out) == 1
            and all(e is None for e in splits[1:])
        ):
            out[first_out] = splits[0]
        else:
            raise sharding_rules.fail(
                what,
                (x,),
                f"reshaping to {tuple(new_sizes)} moves split dimensions in a way that leaves "
                f"the result's sharding ambiguous",
                sharding_rules.AMBIGUOUS_FIX,
            )
    return sharding_rules.build(what, (x,), x.typed_sharding.mesh, out)


reshape_p = rules.define_primitive(
    "reshape",
    sharding=_reshape_sharding,
    abstract_eval=_reshape_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_reshape_transpose,
    batch=_reshape_batch,
    lowering=_reshape_lowering,
    reference=_reshape_reference,
)


def reshape(
    operand: Any,
    new_sizes: Sequence[int],
    dimensions: Sequence[int] | None = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """Reshape ``operand`` (read in row-major order) to ``new_sizes``; with ``dimensions``,
    transpose it by that permutation first."""
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if get_aval(operand).shape == new_sizes:
        out = operand
    else:
        typed = typed_out_sharding(out_sharding, len(new_sizes), "reshape", (operand,))
        out = reshape_p.bind(operand, new_sizes=new_sizes, out_sharding=typed)
    return out if out_sharding is None else laid_out(out, out_sharding)


def _only_less_split(want: Any, have: ShapedArray) -> bool:
    """Whether the type ``want`` splits nothing that ``have`` does not split the same way."""
    if want is None:
        return True
    held = sharding_rules.entries(have)
    return all(e is None or e == held[d] for d, e in enumerate(want.spec))


def typed_like(ct: Any, aval: ShapedArray) -> Any:
    """``ct`` reshaped to ``aval``'s shape and typed as ``aval``: a cotangent is typed as its
    primal. Transposes of operations that broadcast or agree on a consensus (elementwise
    ones, broadcast_in_dim, reduce_sum, reshape) would otherwise type it as the result.

    Retyping lays the value out (``retype``), which needs the mesh's devices: those of the
    mesh ``ct`` lives on, or of the mesh in scope. Without either, a reshape is typed by its
    chosen sharding and a value of the right shape is left as it is."""
    if type(ct) is Zero:
        return ct
    have = get_aval(ct)
    want = aval.typed_sharding
    if have.shape == aval.shape:
        if _only_less_split(want, have):
            # Gathering it here would cost a collective that the reduction the cotangent
            # usually flows into makes cheaper: it stays split, and is typed as its primal
            # where it leaves the derivative (grad/vjp's results).
            return ct
        return retype(ct, want, ct)
    typed = want if want is not None else have.typed_sharding
    if typed is None:  # only the shape changes
        return reshape_p.bind(ct, new_sizes=aval.shape, out_sharding=None)
    if devices_for(typed.mesh, ct) is None:  # no devices to lay out on: type the reshape
        whole = NamedSharding(typed.mesh, PartitionSpec(*[None] * aval.ndim))
        return reshape_p.bind(ct, new_sizes=aval.shape, out_sharding=want or whole)
    ct = retype(ct, None, ct)  # whole first, so that the reshape moves no split
    ct = reshape_p.bind(ct, new_sizes=aval.shape, out_sharding=None)
    return retype(ct, want, ct)


# --------------------------------------------------------------------------------------------
# transpose


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise shape_error(
            f"transpose: permutation {permutation} is not a permutation of the axes of a "
            f"rank-{x.ndim} array"
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_transpose(ct, x, *, permutation):
    return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch(vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    # Keep the batch axis where it is; permute the others around it.
    logical = [p + (p >= d) for p in permutation]
    perm = logical[:d] + [d] + logical[d:]
    return transpose(x, perm), d


def _transpose_lowering(ctx, x, *, permutation):
    return ctx.op(
        "stablehlo.transpose", [x], ctx.avals_out[0], {"permutation": i64_array(permutation)}
    )


def _transpose_reference(x, *, permutation):
    return np.transpose(x, permutation)


def _transpose_sharding(x, *, permutation):
    spec = sharding_rules.entries(x)
    return sharding_rules.build(
        "transpose", (x,), x.typed_sharding.mesh, [spec[p] for p in permutation]
    )


transpose_p = rules.define_primitive(
    "transpose",
    sharding=_transpose_sharding,
    abstract_eval=_transpose_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_transpose_transpose,
    batch=_transpose_batch,
    lowering=_transpose_lowering,
    reference=_transpose_reference,
)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


# --------------------------------------------------------------------------------------------
# squeeze and expand_dims (both reshapes; squeeze keeps its own name for readable jaxprs)


def _squeeze_abstract_eval(x, *, dimensions):
    check_axes("squeeze", x, dimensions)
    for d in dimensions:
        if x.shape[d] != 1:
            raise shape_error(
                f"cannot squeeze axis {d} of shape {x.shape}: its size is {x.shape[d]}, not 1"
            )
    return ShapedArray(reduced_shape(x.shape, dimensions), x.dtype, x.weak_type)


def _squeeze_transpose(ct, x, *, dimensions):
    return [reshape(ct, x.aval.shape)]


def _squeeze_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    return squeeze(x, tuple(a + 1 for a in dimensions)), 0


def _squeeze_lowering(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


def _squeeze_reference(x, *, dimensions):
    return np.squeeze(x, axis=dimensions)


def _squeeze_sharding(x, *, dimensions):
    dropped = {d % x.ndim for d in dimensions}
    kept = [e for d, e in enumerate(sharding_rules.entries(x)) if d not in dropped]
    return sharding_rules.build("squeeze", (x,), x.typed_sharding.mesh, kept)


squeeze_p = rules.define_primitive(
    "squeeze",
    sharding=_squeeze_sharding,
    abstract_eval=_squeeze_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_squeeze_transpose,
    batch=_squeeze_batch,
    lowering=_squeeze_lowering,
    reference=_squeeze_reference,
)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(sorted(int(d) for d in dimensions))
    if not dimensions:
        return array
    return squeeze_p.bind(array, dimensions=dimensions)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = sorted(d % out_ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


# --------------------------------------------------------------------------------------------
# convert_element_type


def _convert_abstract_eval(x, *, new_dtype, weak_type):
    dtypes.check_supported(new_dtype, "converting to {dtype}: arrays of dtype {dtype}")
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_tangent_aval = tangent_aval(get_aval(out))
    if type(t) is Zero or not dtypes.is_inexact(new_dtype):
        return out, Zero(out_tangent_aval)
    if dtypes.is_inexact(get_aval(x).dtype):
        return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=False)
    return out, Zero(out_tangent_aval)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


def _convert_batch(vals, dims, **params):
    return convert_element_type_p.bind(vals[0], **params), dims[0]


def _convert_lowering(ctx, x, *, new_dtype, weak_type):
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    if in_aval.dtype == out_aval.dtype:
        return x
    if out_aval.dtype == dtypes.bool_ and in_aval.dtype != dtypes.bool_:
        # XLA's convert to i1 truncates; NumPy's bool() means "nonzero".
        zero = ctx.full(0, in_aval)
        return ctx.op(
            "stablehlo.compare",
            [x, zero],
            out_aval,
            {
                "comparison_direction": "#stablehlo<comparison_direction NE>",
                "compare_type": compare_type(in_aval.dtype),
            },
        )
    if (
        dtypes.is_inexact(in_aval.dtype)
        and in_aval.dtype.kind == "c"
        and out_aval.dtype.kind != "c"
    ):
        x = ctx.op("stablehlo.real", [x], ShapedArray(in_aval.shape, _real_dtype(in_aval.dtype)))
    return ctx.convert(x, out_aval)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)


def compare_type(dtype: np.dtype) -> str:
    if dtypes.is_float(dtype) or dtype.kind == "c":
        return "#stablehlo<comparison_type FLOAT>"
    if dtype.kind == "u" or dtype == dtypes.bool_:
        return "#stablehlo<comparison_type UNSIGNED>"
    return "#stablehlo<comparison_type SIGNED>"


def _convert_reference(x, *, new_dtype, weak_type):
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)
    if dtypes.is_float(x.dtype) and new_dtype.kind in "iu":
        return _float_to_int_as_xla(np.asarray(x), new_dtype)
    return np.asarray(x).astype(new_dtype)


def _float_to_int_as_xla(x: np.ndarray, new_dtype: np.dtype) -> np.ndarray:
    """XLA's float-to-integer conversion: toward zero, saturating at the integer type's
    bounds, NaN to 0 (NumPy's cast wraps around or is undefined there)."""
    info = np.iinfo(new_dtype)
    whole = np.trunc(x.astype(np.float64))  # every float dtype ember has is exact in float64
    # float(info.max) may round up (2**63 for int64), so >= catches exactly the overflows
    high, low = whole >= float(info.max), whole <= float(info.min)
    inside = np.where(high | low | np.isnan(whole), 0, whole).astype(new_dtype)
    return np.where(high, info.max, np.where(low, info.min, inside)).astype(new_dtype)


convert_element_type_p = rules.define_primitive(
    "convert_element_type",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_convert_abstract_eval,
    jvp=_convert_jvp,
    transpose=_convert_transpose,
    batch=_convert_batch,
    lowering=_convert_lowering,
    reference=_convert_reference,
)


def convert_element_type(x: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    new_dtype = dtypes.canonicalize(new_dtype)
    aval = get_aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


# --------------------------------------------------------------------------------------------
# iota


def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < max(len(shape), 1):
        raise shape_error(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


def _iota_jvp(primals, tangents, **params):
    out = iota_p.bind(**params)
    return out, Zero(tangent_aval(get_aval(out)))


def _iota_lowering(ctx, *, dtype, shape, dimension):
    return ctx.op("stablehlo.iota", [], ctx.avals_out[0], {"iota_dimension": f"{dimension} : i64"})


def _iota_reference(*, dtype, shape, dimension):
    index = [1] * len(shape)
    index[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(index), shape)


iota_p = rules.define_primitive(
    "iota",
    sharding=sharding_rules.unsplit,
    abstract_eval=_iota_abstract_eval,
    jvp=_iota_jvp,
    lowering=_iota_lowering,
    reference=_iota_reference,
)


def iota_along(dtype: Any, shape: Sequence[int], dimension: int = 0) -> Any:
    return iota_p.bind(dtype=dtypes.canonicalize(dtype), shape=tuple(shape), dimension=dimension)


# --------------------------------------------------------------------------------------------
# Helpers shared by every op family


def zeros_like_tangent(zero: Zero) -> Any:
    return zeros(zero.aval)


def move_axis(x: Any, src: int | None, dst: int) -> Any:
    """Move axis ``src`` of ``x`` to position ``dst`` (a no-op when they match)."""
    if src == dst:
        return x
    ndim = get_aval(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def batch_size(vals: Sequence[Any], dims: Sequence[int | None]) -> int:
    for x, d in zip(vals, dims):
        if d is not not_mapped:
            return get_aval(x).shape[d]
    raise ValueError("internal error: no batched operand")


def bdim_to_front(x: Any, d: int | None, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast along a new one."""
    if d is not_mapped:
        aval = get_aval(x)
        return broadcast_in_dim(x, (size,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return move_axis(x, d, 0)
