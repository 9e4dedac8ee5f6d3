"""Lowering linear algebra primitives to a library's routines through XLA's typed FFI.

A plugin overrides a factorisation's lowering on its platform (``LoweringRegistry.register``)
with a rule that emits a custom call of a handler registered with XLA under a name (LAPACK's
``lapack_spotrf_ffi`` on the CPU, cuSOLVER's ``cusolver_potrf_ffi`` on CUDA, hipSOLVER's on
ROCm). What every such rule needs lives here, once:

- ``ffi_call`` emits the call (API version 4): the matrices travel column-major (the Fortran
  order the routines read), every other operand and result row-major; the leading dimensions
  are a batch the handler loops over, named in ``num_batch_dims`` so that XLA may split it
  across devices; results may reuse an operand's buffer (the routines work in place); the
  handler's attributes (``uplo``, ``mode``, ...) go in the call's backend_config, each typed
  the way the handler decodes it (``bool``, ``np.uint8`` for LAPACK's one-letter options and
  enums, ``int``/``np.int32``).
- ``info_ok`` and ``nan_where_failed`` turn the ``info`` a routine reports per matrix into NaN
  for that matrix only, as JAX does.
- small StableHLO helpers the rules share: ``adjoint``, ``conjugate``, ``triangle``,
  ``slice_to``, ``pad_to``, ``add_scalar``, ``complex_from_parts``.
- ``call_rule`` runs another lowering rule (the generic one, a helper primitive's) on part of
  the values, with that part's avals.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ember.extend import RuleContext, ShapedArray

# The dtypes LAPACK, cuSOLVER and hipSOLVER take; anything else (float16, bfloat16) is left to
# the primitive's generic lowering.
LINALG_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))

# The letter each library's routine name starts with, by dtype (LAPACK's s/d/c/z).
TYPE_LETTER = {
    np.dtype(np.float32): "s",
    np.dtype(np.float64): "d",
    np.dtype(np.complex64): "c",
    np.dtype(np.complex128): "z",
}

INT32 = np.dtype(np.int32)


def is_linalg_dtype(dtype: Any) -> bool:
    """Whether the libraries have routines for ``dtype``."""
    return np.dtype(dtype) in LINALG_DTYPES


def is_complex(dtype: Any) -> bool:
    return np.issubdtype(np.dtype(dtype), np.complexfloating)


def real_dtype(dtype: Any) -> np.dtype:
    """The real dtype of a (possibly complex) dtype: complex64 -> float32."""
    return np.empty((), dtype).real.dtype


def letter(character: str) -> np.uint8:
    """A LAPACK one-letter option (``uplo = 'L'``, ``mode = 'V'``) as the handlers decode it."""
    return np.uint8(ord(character))


def batch_of(aval: ShapedArray, matrix_rank: int = 2) -> tuple[int, ...]:
    """The batch dimensions of a stack of matrices (or of vectors, ``matrix_rank=1``)."""
    return tuple(aval.shape[: len(aval.shape) - matrix_rank])


def is_empty(avals: Sequence[ShapedArray]) -> bool:
    """Whether any of ``avals`` has no elements (nothing for a routine to compute)."""
    return any(0 in a.shape for a in avals)


# --------------------------------------------------------------------------------------------
# Emitting the call


def column_major_layout(rank: int) -> tuple[int, ...]:
    """minor-to-major of a batch of Fortran-order matrices: rows vary fastest, then columns,
    then the batch from its last dimension to its first."""
    return (rank - 2, rank - 1, *range(rank - 3, -1, -1))


def row_major_layout(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def _layout_attr(minor_to_major: Sequence[int]) -> str:
    if not minor_to_major:
        return "dense<> : tensor<0xindex>"
    dims = ", ".join(str(d) for d in minor_to_major)
    return f"dense<[{dims}]> : tensor<{len(minor_to_major)}xindex>"


def attribute(value: Any) -> str:
    """One backend_config entry's value, typed as the FFI handler decodes it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, np.uint8):
        return f"{int(value)} : ui8"
    if isinstance(value, (int, np.int32)):
        return f"{int(value)} : i32"
    if isinstance(value, np.int64):
        return f"{int(value)} : i64"
    if isinstance(value, (float, np.float32)):
        return f"{float(value)!r} : f32"
    raise TypeError(
        f"an FFI attribute must be a bool, np.uint8, int (int32), np.int64 or float, "
        f"got {value!r} ({type(value).__name__})"
    )


def output_operand_aliases(aliases: dict[int, int], num_results: int) -> str:
    """``{operand: result}``: the result is written in the operand's buffer. A call with one
    result names no tuple index."""
    entries = [
        "#stablehlo.output_operand_alias<output_tuple_indices = "
        f"{'[]' if num_results == 1 else [result]}, "
        f"operand_index = {operand}, operand_tuple_indices = []>"
        for operand, result in sorted(aliases.items())
    ]
    return "[" + ", ".join(entries) + "]"


def _factor_names() -> Iterator[str]:
    """Shardy's names for a rule's factors: i, j, ..., z, then z_1, z_2, ..."""
    yield from (chr(c) for c in range(ord("i"), ord("z") + 1))
    yield from (f"z_{n}" for n in itertools.count(1))


def _sharding_rule(
    num_batch_dims: int, avals_in: Sequence[ShapedArray], avals_out: Sequence[ShapedArray]
) -> str:
    """Shardy's rule for the call: the batch dimensions are shared by every operand and result
    (a split batch stays split), every other dimension is the call's own (it must not be split:
    Shardy gathers it)."""
    letters = _factor_names()
    batch = [next(letters) for _ in range(num_batch_dims)]
    sizes: dict[str, int] = {}

    def factors(aval: ShapedArray) -> str:
        names = []
        for i, size in enumerate(aval.shape):
            name = batch[i] if i < num_batch_dims else next(letters)
            sizes[name] = size
            names.append(name)
        return "[" + ", ".join(names) + "]"

    lhs = ", ".join(factors(a) for a in avals_in)
    rhs = ", ".join(factors(a) for a in avals_out)
    size_list = ", ".join(f"{name}={size}" for name, size in sizes.items())
    return f"#sdy.op_sharding_rule<({lhs})->({rhs}) {{{size_list}}}, custom>"


def ffi_call(
    ctx: RuleContext,
    target: str,
    operands: Sequence[str],
    avals_in: Sequence[ShapedArray],
    avals_out: Sequence[ShapedArray],
    *,
    aliases: dict[int, int] | None = None,
    column_major: bool = True,
    matrix_rank: int = 2,
    **attributes: Any,
) -> list[str]:
    """Emit a typed-FFI custom call (API version 4) of ``target``; returns the results' SSA
    names, one per ``avals_out``.

    The operands and results of the operands' largest rank are (stacks of) matrices, laid out
    column-major when ``column_major``; the others (pivots, taus, eigenvalues, info) row-major.
    The batch is the leading ``rank - matrix_rank`` dimensions (``num_batch_dims``).
    ``aliases`` maps an operand's index to the result written in its buffer. ``attributes``
    become the handler's attributes (see ``attribute`` for their types)."""
    top = max(len(a.shape) for a in avals_in)

    def layouts(avals: Sequence[ShapedArray]) -> str:
        entries = [
            _layout_attr(
                column_major_layout(len(a.shape))
                if column_major and len(a.shape) == top
                else row_major_layout(len(a.shape))
            )
            for a in avals
        ]
        return "[" + ", ".join(entries) + "]"

    config = ", ".join(f"{k} = {attribute(v)}" for k, v in sorted(attributes.items()))
    props = {
        "call_target_name": f'"{target}"',
        "api_version": "4 : i32",
        "backend_config": "{" + config + "}",
        "operand_layouts": layouts(avals_in),
        "result_layouts": layouts(avals_out),
    }
    if aliases:
        props["output_operand_aliases"] = output_operand_aliases(aliases, len(avals_out))
    num_batch_dims = top - matrix_rank
    discardable = {"mhlo.frontend_attributes": f'{{num_batch_dims = "{num_batch_dims}"}}'}
    if ctx.module.mesh is not None:
        discardable["sdy.sharding_rule"] = _sharding_rule(num_batch_dims, avals_in, avals_out)
    return ctx.op(
        "stablehlo.custom_call", list(operands), list(avals_out), props, discardable=discardable
    )


# --------------------------------------------------------------------------------------------
# A routine's info as NaN


def info_ok(ctx: RuleContext, info: str, batch: Sequence[int], direction: str = "EQ") -> str:
    """``info <direction> 0`` for each matrix of the batch (``EQ``: the routine succeeded;
    ``GE`` for getrf, whose positive info only reports a zero pivot)."""
    info_aval = ShapedArray(tuple(batch), INT32)
    return ctx.op(
        "stablehlo.compare",
        [info, ctx.full(0, info_aval)],
        ShapedArray(tuple(batch), np.dtype(np.bool_)),
        {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": "#stablehlo<comparison_type SIGNED>",
        },
    )


def nan_where_failed(
    ctx: RuleContext, ok: str, x: str, aval: ShapedArray, batch: Sequence[int]
) -> str:
    """``x`` (a stack of matrices or vectors over ``batch``) with every entry of the ones whose
    routine failed (``ok`` false) replaced by NaN."""
    mask = ctx.broadcast_in_dim(
        ok, ShapedArray(aval.shape, np.dtype(np.bool_)), list(range(len(batch)))
    )
    nan = complex(np.nan, np.nan) if is_complex(aval.dtype) else np.nan
    return ctx.op("stablehlo.select", [mask, x, ctx.full(nan, aval)], aval)


def finite_or_zero(
    ctx: RuleContext, x: str, aval: ShapedArray, batch: Sequence[int]
) -> tuple[str, str]:
    """``(x', ok)``: ``ok`` whether each matrix of the stack is all finite, and ``x`` with the
    others replaced by zeros. LAPACK's iterative routines (syevd, gesdd, geev, gees) may
    never return on an infinite or NaN entry; they get zeros instead, and ``ok`` turns their
    results into NaN (``nan_where_failed``)."""
    bool_aval = ShapedArray(aval.shape, np.dtype(np.bool_))
    if is_complex(aval.dtype):
        part = ShapedArray(aval.shape, real_dtype(aval.dtype))
        finite = ctx.op(
            "stablehlo.and",
            [
                ctx.op("stablehlo.is_finite", [ctx.op("stablehlo.real", [x], part)], bool_aval),
                ctx.op("stablehlo.is_finite", [ctx.op("stablehlo.imag", [x], part)], bool_aval),
            ],
            bool_aval,
        )
    else:
        finite = ctx.op("stablehlo.is_finite", [x], bool_aval)
    scalar = ShapedArray((), np.dtype(np.bool_))
    region = ctx.region([scalar, scalar], lambda c, a, b: [c.op("stablehlo.and", [a, b], scalar)])
    rank = len(aval.shape)
    ok = ctx.op(
        "stablehlo.reduce",
        [finite, ctx.constant(True, scalar)],
        ShapedArray(tuple(batch), np.dtype(np.bool_)),
        {"dimensions": _i64s([rank - 2, rank - 1])},
        regions=[region],
    )
    mask = ctx.broadcast_in_dim(ok, bool_aval, list(range(len(batch))))
    return ctx.op("stablehlo.select", [mask, x, ctx.full(0, aval)], aval), ok


def both(ctx: RuleContext, ok: str, other: str, batch: Sequence[int]) -> str:
    """Two per-matrix success flags combined."""
    return ctx.op("stablehlo.and", [ok, other], ShapedArray(tuple(batch), np.dtype(np.bool_)))


# --------------------------------------------------------------------------------------------
# Small StableHLO helpers


def _i64s(values: Sequence[int]) -> str:
    if not values:
        return "array<i64>"
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


def conjugate(ctx: RuleContext, x: str, aval: ShapedArray) -> str:
    """The complex conjugate (``x`` itself when real)."""
    if not is_complex(aval.dtype):
        return x
    real = ShapedArray(aval.shape, real_dtype(aval.dtype))
    re = ctx.op("stablehlo.real", [x], real)
    im = ctx.op("stablehlo.negate", [ctx.op("stablehlo.imag", [x], real)], real)
    return ctx.op("stablehlo.complex", [re, im], aval)


def adjoint(ctx: RuleContext, x: str, aval: ShapedArray) -> tuple[str, ShapedArray]:
    """The conjugate transpose of a stack of matrices, and its aval."""
    rank = len(aval.shape)
    *batch, m, n = aval.shape
    out = ShapedArray((*batch, n, m), aval.dtype)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    y = ctx.op("stablehlo.transpose", [x], out, {"permutation": _i64s(perm)})
    return conjugate(ctx, y, out), out


def complex_from_parts(ctx: RuleContext, re: str, im: str, aval: ShapedArray) -> str:
    """``re + i im`` (``aval``: the real parts'), of the matching complex dtype."""
    out = ShapedArray(aval.shape, np.result_type(aval.dtype, np.complex64))
    return ctx.op("stablehlo.complex", [re, im], out)


def triangle(ctx: RuleContext, x: str, aval: ShapedArray, *, lower: bool) -> str:
    """``x`` with the entries above (``lower``: ``tril``) or below (``triu``) the diagonal
    zeroed."""
    rank = len(aval.shape)
    index = ShapedArray(aval.shape, INT32)
    rows = ctx.op("stablehlo.iota", [], index, {"iota_dimension": f"{rank - 2} : i64"})
    cols = ctx.op("stablehlo.iota", [], index, {"iota_dimension": f"{rank - 1} : i64"})
    keep = ctx.op(
        "stablehlo.compare",
        [rows, cols],
        ShapedArray(aval.shape, np.dtype(np.bool_)),
        {
            "comparison_direction": f"#stablehlo<comparison_direction {'GE' if lower else 'LE'}>",
            "compare_type": "#stablehlo<comparison_type SIGNED>",
        },
    )
    return ctx.op("stablehlo.select", [keep, x, ctx.full(0, aval)], aval)


def slice_to(
    ctx: RuleContext,
    x: str,
    aval: ShapedArray,
    limits: Sequence[int],
    starts: Sequence[int] | None = None,
) -> tuple[str, ShapedArray]:
    """``x[starts[0]:limits[0], ...]`` (``starts`` zero by default), and its aval."""
    rank = len(aval.shape)
    starts = [0] * rank if starts is None else list(starts)
    out = ShapedArray(tuple(hi - lo for lo, hi in zip(starts, limits)), aval.dtype)
    if out.shape == tuple(aval.shape):
        return x, aval
    y = ctx.op(
        "stablehlo.slice",
        [x],
        out,
        {
            "start_indices": _i64s(starts),
            "limit_indices": _i64s(limits),
            "strides": _i64s([1] * rank),
        },
    )
    return y, out


def pad_to(
    ctx: RuleContext, x: str, aval: ShapedArray, shape: Sequence[int]
) -> tuple[str, ShapedArray]:
    """``x`` padded with zeros at the end of each dimension up to ``shape``, and its aval."""
    out = ShapedArray(tuple(shape), aval.dtype)
    if out.shape == tuple(aval.shape):
        return x, aval
    rank = len(aval.shape)
    y = ctx.op(
        "stablehlo.pad",
        [x, ctx.constant(0, ShapedArray((), aval.dtype))],
        out,
        {
            "edge_padding_low": _i64s([0] * rank),
            "edge_padding_high": _i64s([hi - d for d, hi in zip(aval.shape, shape)]),
            "interior_padding": _i64s([0] * rank),
        },
    )
    return y, out


def add_scalar(ctx: RuleContext, x: str, aval: ShapedArray, value: Any) -> str:
    """``x + value`` elementwise (one-based pivots to zero-based, and back)."""
    return ctx.op("stablehlo.add", [x, ctx.full(value, aval)], aval)


def call_rule(
    ctx: RuleContext,
    rule: Callable[..., Any],
    operands: Sequence[str],
    avals_in: Sequence[ShapedArray],
    avals_out: Sequence[ShapedArray],
    **params: Any,
) -> Any:
    """``rule(ctx, *operands, **params)`` as if lowering an equation with these avals (the
    context's own are restored after); returns what the rule returns."""
    saved = ctx.avals_in, ctx.avals_out
    ctx.avals_in, ctx.avals_out = list(avals_in), list(avals_out)
    try:
        return rule(ctx, *operands, **params)
    finally:
        ctx.avals_in, ctx.avals_out = saved
