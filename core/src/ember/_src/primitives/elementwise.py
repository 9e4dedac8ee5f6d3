"""What the elementwise primitives share: operand checks, batching, lowering, scalar operands.

At this level operands must share a dtype, and their shapes must be equal, except that a
rank-0 operand broadcasts (so ``x * 2.0`` stays one equation). NumPy-style promotion and
broadcasting happen one level up, in ``ember.numpy``.

A member of the family spreads ``elementwise_rules`` into its ``define_primitive`` call and
adds its derivative rules beside it:

    neg_p = rules.define_primitive(
        "neg", **elementwise_rules(np.negative, "stablehlo.negate", _NUM),
        jvp=_neg_jvp, transpose=_neg_transpose,
    )

The members themselves live by concept: arithmetic, math_functions, comparisons, bits,
selection, special, precision.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import (
    Primitive,
    ShapedArray,
    Zero,
    get_aval,
    register_aval_getter,
    tangent_aval,
)
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.expressions import lower_via
from ember._src.primitives import sharding_rules
from ember._src.primitives.shape import (
    batch_size,
    broadcast_in_dim,
    move_axis,
    reduce_sum,
    typed_like,
)

# The dtypes an elementwise primitive accepts.
_FLOAT = "float"  # inexact: floating and complex
_ORDERED = "ordered"  # anything but complex (which has no order): lt, le, gt, ge
_INT = "int"  # integer or bool
_NUM = "number"  # anything numeric, not bool
_REAL = "real"  # numeric and not complex (integers or floating): rem
# floating, not complex (XLA has no complex floor, ceil, round, cbrt or is_finite)
_REAL_FLOAT = "real float"
_ANY = "any"


def _kind_ok(dtype: np.dtype, kinds: str) -> bool:
    if kinds == _ANY:
        return True
    if kinds == _FLOAT:
        return dtypes.is_inexact(dtype)
    if kinds == _INT:
        return dtype.kind in "iub"
    if kinds == _REAL:
        return dtype.kind in "iu" or (dtypes.is_inexact(dtype) and dtype.kind != "c")
    if kinds == _REAL_FLOAT:
        return dtypes.is_inexact(dtype) and dtype.kind != "c"
    if kinds == _ORDERED:
        return dtype.kind != "c"
    return dtype != dtypes.bool_


_KIND_WORDS = {
    _FLOAT: "floating-point or complex",
    _INT: "integer or boolean",
    _NUM: "numeric",
    _REAL: "real (integer or floating-point, not complex)",
    _REAL_FLOAT: "real floating-point",
    _ORDERED: "ordered (not complex)",
}


def nary_abstract_eval(name: str, kinds: str, result_dtype: np.dtype | None = None):
    """The abstract evaluation of an elementwise primitive named ``name``: operands of one
    dtype, among ``kinds``, of one shape or rank 0; the result has ``result_dtype`` if given."""

    def abstract_eval(*avals: ShapedArray, **params) -> ShapedArray:
        dtype = avals[0].dtype
        shape: tuple[int, ...] = ()
        for aval in avals:
            if aval.dtype != dtype:
                raise errors.EmberTypeError(
                    f"{name} requires arguments of one dtype, got "
                    f"{', '.join(dtypes.short_name(a.dtype) for a in avals)}{errors.where()}"
                )
            if aval.shape:
                if shape and aval.shape != shape:
                    raise errors.EmberTypeError(
                        f"{name} got incompatible shapes "
                        f"{', '.join(str(a.shape) for a in avals)}{errors.where()}"
                    )
                shape = aval.shape
        if not _kind_ok(dtype, kinds):
            raise errors.EmberTypeError(
                f"{name} needs {_KIND_WORDS[kinds]} operands, got {dtypes.short_name(dtype)}"
                f"{errors.where()}"
            )
        if result_dtype is not None:
            return ShapedArray(shape, result_dtype)
        return ShapedArray(shape, dtype, all(a.weak_type for a in avals))

    return abstract_eval


def elementwise_batch(primitive: Primitive):
    """Batching: operands carried to one batch axis (rank-0 unbatched ones still broadcast)."""

    def batch(vals, dims, **params):
        logical = [
            get_aval(x).shape if d is not_mapped else _drop(get_aval(x).shape, d)
            for x, d in zip(vals, dims)
        ]
        out_shape = builtins.max(logical, key=len)
        batched_dims = {d for d in dims if d is not not_mapped}
        simple = len(batched_dims) == 1 and all(
            (d is not_mapped and not shape) or (d is not not_mapped and shape == out_shape)
            for d, shape in zip(dims, logical)
        )
        if simple:
            return primitive.bind(*vals, **params), batched_dims.pop()
        size = batch_size(vals, dims)
        full = (size,) + out_shape
        aligned = []
        for x, d, shape in zip(vals, dims, logical):
            if d is not_mapped:
                if shape:
                    x = broadcast_in_dim(x, full, tuple(range(1, len(full))))
            else:
                x = move_axis(x, d, 0)
                if not shape and out_shape:
                    x = broadcast_in_dim(x, full, (0,))
            aligned.append(x)
        return primitive.bind(*aligned, **params), 0

    return batch


def _drop(shape: tuple[int, ...], d: int) -> tuple[int, ...]:
    return shape[:d] + shape[d + 1 :]


def broadcast_operands(ctx, operands: Sequence[str]) -> list[str]:
    """Lowering: broadcast rank-0 operands to the output shape."""
    out_aval = ctx.avals_out[0]
    if not out_aval.shape:
        return list(operands)
    result = []
    for x, aval in zip(operands, ctx.avals_in):
        if not aval.shape:
            x = ctx.broadcast_in_dim(x, ShapedArray(out_aval.shape, aval.dtype), ())
        result.append(x)
    return result


def hlo_lowering(hlo_op: str):
    """Lowering to one StableHLO (or CHLO) op of the same name for every dtype."""

    def lowering(ctx, *operands, **params):
        return ctx.op(hlo_op, broadcast_operands(ctx, operands), ctx.avals_out[0])

    return lowering


def lowering_for_complex(hlo_op: str, expression: Callable[..., Any]):
    """Lowering to ``hlo_op`` for real operands, and through ``expression`` for complex ones
    (where XLA's own op gives other answers than JAX)."""
    real_lowering = hlo_lowering(hlo_op)
    complex_lowering = lower_via(lambda *xs, **params: expression(*xs))

    def lowering(ctx, *operands, **params):
        if ctx.avals_in[0].dtype.kind == "c":
            return complex_lowering(ctx, *operands, **params)
        return real_lowering(ctx, *operands, **params)

    return lowering


def numpy_reference(numpy_fn: Callable[..., Any]):
    """The reference rule applying ``numpy_fn`` to the operands."""

    def reference(*args, **params):
        return numpy_fn(*args)

    return reference


def real_or_complex(real_fn: Callable[..., Any], complex_fn: Callable[..., Any]):
    """A NumPy evaluation by ``real_fn``, or by ``complex_fn`` (from ``complex_math``, which
    gives XLA's answers where NumPy's differ) for complex operands."""

    def evaluate(*args, **params):
        if args[0].dtype.kind == "c":
            with np.errstate(all="ignore"):
                return complex_fn(*args, **params)
        return real_fn(*args, **params)

    return evaluate


def elementwise_rules(
    numpy_fn: Callable[..., Any],
    lowering: str | Callable[..., Any],
    kinds: str,
    *,
    result_dtype: np.dtype | None = None,
) -> dict[str, Any]:
    """The rules every elementwise member has, for ``define_primitive``: the NumPy evaluation
    ``numpy_fn(*operands)``, the lowering (a StableHLO op's name, or a lowering rule), the
    operand check (dtypes among ``kinds``) and batching."""
    return {
        "abstract_eval": rules.per_primitive(
            lambda primitive: nary_abstract_eval(primitive.name, kinds, result_dtype)
        ),
        "batch": rules.per_primitive(elementwise_batch),
        "sharding": rules.per_primitive(sharding_rules.elementwise),
        "reference": numpy_reference(numpy_fn),
        "lowering": hlo_lowering(lowering) if isinstance(lowering, str) else lowering,
    }


def zero_tangent_like(x: Any) -> Zero:
    return Zero(tangent_aval(get_aval(x)))


def _zero_jvp(primitive: Primitive):
    def jvp(primals, tangents, **params):
        y = primitive.bind(*primals, **params)
        return y, zero_tangent_like(y)

    return jvp


# Piecewise-constant functions (comparisons, floor, sign, ...) have zero derivative.
zero_jvp = rules.per_primitive(_zero_jvp)


def unbroadcast(aval: ShapedArray, ct: Any) -> Any:
    """Sum a cotangent down to a rank-0 operand that was broadcast; type it as the operand
    (the result's consensus may be split where the operand was not)."""
    if type(ct) is Zero:
        return Zero(aval)
    ct_aval = get_aval(ct)
    if ct_aval.shape and not aval.shape:
        return reduce_sum(ct, tuple(range(ct_aval.ndim)))
    return typed_like(ct, aval)


def full_shape(t: Any, aval: ShapedArray) -> Any:
    """A tangent broadcast to ``aval``'s shape if it is rank 0 (a broadcast operand's)."""
    if type(t) is Zero:
        return t
    if not get_aval(t).shape and aval.shape:
        return broadcast_in_dim(t, aval.shape, ())
    return t


def scalar_like(x: Any, value: Any) -> Any:
    """A scalar of ``x``'s dtype."""
    return np.asarray(value, get_aval(x).dtype)[()]


def coerce_scalars(*args: Any) -> list[Any]:
    """Give Python scalars the dtype of the array operands (as weakly typed values).

    The primitives do not promote types (``ember.numpy`` does): a Python scalar of a wider
    kind than that dtype (``1.5`` for an integer array, ``1j`` for a real one) or operands
    that are all Python scalars of different kinds (``lax.add(1, 1.0)``) raise ``TypeError``,
    as in JAX, rather than being silently truncated or promoted.
    """
    arrays = [a for a in args if not dtypes.is_python_scalar(a)]
    if len(arrays) == len(args):
        return list(args)
    if arrays:
        aval = get_aval(arrays[0])
        dtype, weak = aval.dtype, True
        _check_scalar_kinds(args, dtype)
    else:
        kinds = {_SCALAR_KIND[type(a)] for a in args}
        if len(kinds) > 1:
            names = ", ".join(type(a).__name__ for a in args)
            raise TypeError(
                f"operands must have the same dtype, got Python scalars of types {names}; "
                "convert them explicitly, or use ember.numpy, which promotes types"
            )
        dtype, weak = dtypes.promote([(get_aval(a).dtype, True) for a in args])
    return [_scalar_constant(a, dtype, weak) if dtypes.is_python_scalar(a) else a for a in args]


# Python scalar types and NumPy dtype kinds, ordered bool < int < float < complex.
_SCALAR_KIND = {bool: 0, int: 1, float: 2, complex: 3}
_DTYPE_KIND = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}  # "V": bfloat16 and kin


def _check_scalar_kinds(args: Sequence[Any], dtype: np.dtype) -> None:
    dtype_kind = _DTYPE_KIND.get(np.dtype(dtype).kind, 2)
    for a in args:
        if dtypes.is_python_scalar(a) and _SCALAR_KIND[type(a)] > dtype_kind:
            raise TypeError(
                f"a Python {type(a).__name__} operand ({a!r}) cannot take the dtype {dtype} "
                "of the array operand without losing its value; convert it explicitly, or "
                "use ember.numpy, which promotes types"
            )


def _scalar_constant(value: Any, dtype: np.dtype, weak: bool) -> Any:
    array = np.asarray(value, dtype)
    return array.view(WeakScalar) if weak else array[()]


class WeakScalar(np.ndarray):
    """A Python scalar converted to an operand's dtype: a 0-d NumPy array that ember treats as
    weakly typed, so ``x_f16 * 2`` stays float16 through staging and eager dispatch alike."""


register_aval_getter(WeakScalar, lambda x: ShapedArray((), x.dtype, True))
