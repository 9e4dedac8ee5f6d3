"""The operations a Pallas kernel uses beyond plain array code.

Primitives and their operands (the triton lowering reads these):

- ``program_id`` (param ``axis``): the kernel's position along a grid axis, an int32 scalar.
  Bound on the kernel's own trace (``core.KernelContext``), so it appears only at the top
  level of a kernel jaxpr. ``num_programs`` (param ``axis``) exists for compilers, but
  ``pl.num_programs`` returns the static grid size, as JAX does for static grids.
- ``masked_load``: operands ``ref, [mask], [other], *index_values``; params ``indexer`` (a
  ``state_types.IndexerSpec``), ``has_mask``, ``has_other``. Reads ``ref[indexer]``; where
  ``mask`` is False the result is ``other`` (unspecified without one), and reads there may
  be out of the Ref's bounds.
- ``masked_swap``: operands ``ref, value, [mask], *index_values``; params ``indexer``,
  ``has_mask``. Writes ``value`` where ``mask`` holds (writes elsewhere, and out of bounds,
  are dropped) and returns the old value.
- ``atomic_rmw``: operands ``ref, value, [mask], *index_values``; params ``indexer``,
  ``atomic_type`` (add, max, min, and, or, xor, xchg), ``has_mask``. Returns the old value.
- ``atomic_cas``: operands ``ref, cmp, value, *index_values``; param ``indexer``. Writes
  ``value`` where the old value equals ``cmp``; returns the old value.
- ``multiple_of`` / ``max_contiguous`` (param ``values``): hints to a compiler; the identity.

Unmasked ``pl.load``/``pl.store`` are the state primitives ``get``/``swap``. In interpret
mode (and for any discharge) the masked and atomic primitives become reads and writes of the
block's value: one kernel instance runs at a time there, so an atomic is a plain update.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import callback, dtypes, errors, rules
from ember._src.core import ShapedArray, get_aval
from ember._src.lax.slicing import dynamic_slice, dynamic_update_slice
from ember._src.numpy import creation as enp_creation, elementwise as enp, padding as enp_padding
from ember._src.pallas.core import MemoryRef, check_axis, current_kernel, kernel_for
from ember._src.primitives.control_flow.cond import cond
from ember._src.primitives.linalg import dot_general
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.state import ref_get, ref_swap
from ember._src.state_types import (
    IndexerSpec,
    NDIndexer,
    Slice,
    accum_effect,
    is_ref,
    read_effect,
    write_effect,
)

_INT32 = np.dtype(np.int32)

# --------------------------------------------------------------------------------------------
# The grid


def _program_id_abstract_eval(*, axis: int) -> ShapedArray:
    return ShapedArray((), _INT32)


program_id_p = rules.define_primitive("program_id", abstract_eval=_program_id_abstract_eval)
num_programs_p = rules.define_primitive("num_programs", abstract_eval=_program_id_abstract_eval)


def program_id(axis: int) -> Any:
    """The kernel's position along grid axis ``axis`` (an int32 scalar)."""
    context = kernel_for("pl.program_id")
    axis = check_axis(context, axis, "pl.program_id")
    return context.program_id(axis, lambda a: program_id_p.bind(axis=a))


def num_programs(axis: int) -> int:
    """The size of the grid along ``axis`` (a static int: grids have static sizes)."""
    context = kernel_for("pl.num_programs")
    return context.grid[check_axis(context, axis, "pl.num_programs")]


# --------------------------------------------------------------------------------------------
# Helpers of the language


def cdiv(a: Any, b: Any) -> Any:
    """``ceil(a / b)`` for non-negative integers (ints stay ints)."""
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return -(-int(a) // int(b))
    return (a + b - 1) // b


def ds(start: Any, size: int | None = None, stride: int = 1) -> Slice:
    """``size`` elements from ``start`` (``ds(n)``: the first ``n``), for indexing Refs."""
    if size is None:
        return Slice(0, start, stride)
    return Slice(start, size, stride)


dslice = ds


def when(condition: Any) -> Callable[[Callable[[], None]], None]:
    """``@pl.when(cond)`` runs the decorated function (which returns nothing) if ``cond``."""

    def decorate(f: Callable[[], None]) -> None:
        if isinstance(condition, (bool, np.bool_)):
            if condition:
                f()
            return
        cond(condition, lambda: _returns_nothing(f), lambda: None)

    return decorate


def _returns_nothing(f: Callable[[], Any]) -> None:
    if f() is not None:
        raise ValueError(f"a function decorated with pl.when must return nothing{errors.where()}")


def _scratch_aval(t: Any) -> ShapedArray:
    if isinstance(t, MemoryRef):
        return t.get_aval()
    if isinstance(t, ShapedArray):
        return t
    if hasattr(t, "shape") and hasattr(t, "dtype"):
        return ShapedArray(tuple(t.shape), dtypes.canonicalize(t.dtype))
    raise TypeError(
        f"a scratch buffer's type must be a pl.MemoryRef or have a shape and dtype, got {t!r}"
        f"{errors.where()}"
    )


def scratch_aval(t: Any) -> ShapedArray:
    """The aval of one entry of ``scratch_shapes`` (for ``pallas_call``)."""
    return _scratch_aval(t)


def dot(
    a: Any,
    b: Any,
    trans_a: bool = False,
    trans_b: bool = False,
    allow_tf32: bool | None = None,
    precision: Any = None,
) -> Any:
    """``a @ b`` of two matrices (optionally transposed), accumulated in float32 for float
    operands (in int32 for integer ones), as ``pl.dot``."""
    del allow_tf32  # a hint to the GPU compiler; interpret mode computes in full precision
    a_aval, b_aval = get_aval(a), get_aval(b)
    if a_aval.ndim != 2 or b_aval.ndim != 2:
        raise ValueError(
            f"pl.dot takes two matrices, got shapes {a_aval.shape} and {b_aval.shape}"
            f"{errors.where()}"
        )
    contract_a = 0 if trans_a else 1
    contract_b = 1 if trans_b else 0
    if a_aval.shape[contract_a] != b_aval.shape[contract_b]:
        raise ValueError(
            f"pl.dot: the contracted dimensions differ: {a_aval.shape}"
            f"{' (transposed)' if trans_a else ''} and {b_aval.shape}"
            f"{' (transposed)' if trans_b else ''}{errors.where()}"
        )
    kind = "float" if dtypes.is_inexact(a_aval.dtype) else "int"
    out_dtype = np.dtype(np.float32) if kind == "float" else _INT32
    return dot_general(
        a,
        b,
        (((contract_a,), (contract_b,)), ((), ())),
        precision=precision,
        preferred_element_type=out_dtype,
    )


def debug_print(fmt: str, *args: Any) -> None:
    """Print ``fmt`` formatted with the values of ``args`` (``{}`` placeholders), from a
    kernel: in interpret mode once per grid point, as ``ember.debug.print``."""
    callback.debug_print(fmt, *args)


# --------------------------------------------------------------------------------------------
# Hints


def _identity_abstract_eval(x: ShapedArray, **params: Any) -> ShapedArray:
    return x


def _identity(x: Any, **params: Any) -> Any:
    return x


def _identity_batch(vals: Sequence[Any], dims: Sequence[Any], **params: Any) -> Any:
    return vals[0], dims[0]


def _identity_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
    return primals[0], tangents[0]


def _hint(name: str):
    return rules.define_primitive(
        name,
        abstract_eval=_identity_abstract_eval,
        reference=_identity,
        lowering=lambda ctx, x, **params: x,
        batch=_identity_batch,
        jvp=_identity_jvp,
        sharding=lambda aval, **params: aval.typed_sharding,
    )


multiple_of_p = _hint("multiple_of")
max_contiguous_p = _hint("max_contiguous")


def multiple_of(x: Any, values: int | Sequence[int]) -> Any:
    """``x``, with the promise (to a compiler) that it is a multiple of ``values``."""
    values = (values,) if isinstance(values, int) else tuple(values)
    return multiple_of_p.bind(x, values=values)


def max_contiguous(x: Any, values: int | Sequence[int]) -> Any:
    """``x``, with the promise (to a compiler) that runs of ``values`` elements are
    contiguous."""
    values = (values,) if isinstance(values, int) else tuple(values)
    return max_contiguous_p.bind(x, values=values)


# --------------------------------------------------------------------------------------------
# Masked loads and stores


def _indexer_for(ref: Any, idx: Any, what: str) -> NDIndexer:
    aval = get_aval(ref)
    if not is_ref(aval):
        raise errors.EmberTypeError(
            f"{what} needs a Ref (a kernel's argument), got a value of type "
            f"{aval.str_short()}{errors.where()}"
        )
    return NDIndexer.from_index(idx, aval.shape)


def _kernel_words() -> str:
    context = current_kernel()
    return f" in kernel {context.name!r}" if context else ""


def _check_mask(mask: Any, shape: tuple[int, ...], what: str) -> Any:
    aval = get_aval(mask)
    if aval.dtype != np.dtype(bool):
        raise errors.EmberTypeError(
            f"{what}{_kernel_words()}: the mask must be boolean, got {aval.str_short()}"
            f"{errors.where()}"
        )
    if aval.shape != shape:
        raise ValueError(
            f"{what}{_kernel_words()}: the mask has shape {aval.shape}, but the indexed "
            f"block has shape {shape}{errors.where()}"
        )
    return mask


def _value_for(ref_aval: Any, value: Any, shape: tuple[int, ...], what: str) -> Any:
    """``value`` checked against what it is stored into: same shape (a Python scalar
    broadcasts) and same dtype (a Python scalar takes the Ref's)."""
    if isinstance(value, (bool, int, float, complex)):
        return enp_creation.full(shape, value, ref_aval.dtype)
    aval = get_aval(value)
    if aval.shape != shape:
        raise ValueError(
            f"{what}{_kernel_words()}: storing a value of shape {aval.shape} into "
            f"{ref_aval.str_short()} at an index of shape {shape}{errors.where()}"
        )
    if aval.dtype != ref_aval.dtype:
        raise errors.EmberTypeError(
            f"{what}{_kernel_words()}: storing a value of dtype "
            f"{dtypes.short_name(aval.dtype)} into {ref_aval.str_short()}; convert it with "
            f".astype first{errors.where()}"
        )
    return value


def load(ref: Any, idx: Any = ..., *, mask: Any = None, other: Any = None, **_: Any) -> Any:
    """``ref[idx]``; where ``mask`` is False the result is ``other`` (unspecified without
    one), and those elements may lie outside the Ref."""
    indexer = _indexer_for(ref, idx, "pl.load")
    if mask is None:
        return ref_get(ref, indexer)
    shape = indexer.result_shape()
    mask = _check_mask(mask, shape, "pl.load")
    operands = [ref, mask]
    if other is not None:
        operands.append(_value_for(get_aval(ref), other, shape, "pl.load (other)"))
    spec, dynamic = indexer.flatten()
    return masked_load_p.bind(
        *operands, *dynamic, indexer=spec, has_mask=True, has_other=other is not None
    )


def store(ref: Any, idx: Any, val: Any, *, mask: Any = None, **_: Any) -> None:
    """``ref[idx] = val``, only where ``mask`` holds (elsewhere, even outside the Ref, no
    write happens)."""
    swap(ref, idx, val, mask=mask)


def swap(ref: Any, idx: Any, val: Any, *, mask: Any = None, **_: Any) -> Any:
    """``store``, returning the old value."""
    indexer = _indexer_for(ref, idx, "pl.store")
    shape = indexer.result_shape()
    val = _value_for(get_aval(ref), val, shape, "pl.store")
    if mask is None:
        return ref_swap(ref, indexer, val)
    mask = _check_mask(mask, shape, "pl.store")
    spec, dynamic = indexer.flatten()
    return masked_swap_p.bind(ref, val, mask, *dynamic, indexer=spec, has_mask=True)


def _read_abstract_eval(ref: Any, *rest: ShapedArray, indexer: IndexerSpec, **params) -> Any:
    dynamic = rest[_num_value_operands(params) :]
    shape = NDIndexer.unflatten(indexer, dynamic).result_shape()
    return ShapedArray(shape, ref.dtype)


def _num_value_operands(params: dict) -> int:
    """How many operands come between the Ref and the index values."""
    if "atomic_type" in params:
        return 1 + params["has_mask"]
    if "has_other" in params:  # masked_load: mask, other
        return params["has_mask"] + params["has_other"]
    if "has_mask" in params:  # masked_swap: value, mask
        return 1 + params["has_mask"]
    return 2  # atomic_cas: cmp, value


# -- discharge: reads and writes of the whole block's value -------------------------------------


def _padded_window(ref_value: Any, indexer: NDIndexer) -> tuple[Any, list[Any], tuple[int, ...]]:
    """``(padded, starts, sizes)``: the Ref's value padded at the end of each dimension by
    the window's extent, so that ``dynamic_slice`` at ``starts`` never clamps (a window
    that runs past the Ref reads the padding instead of shifting back, as on a GPU)."""
    starts, sizes = [], []
    for entry in indexer.indices:
        if isinstance(entry, Slice):
            starts.append(entry.start)
            sizes.append((entry.size - 1) * entry.stride + 1 if entry.size else 0)
        else:
            starts.append(entry)
            sizes.append(1)
    pad_width = [(0, s) for s in sizes]
    padded = enp_padding.pad(ref_value, pad_width)
    return padded, [_as_int32(s) for s in starts], tuple(sizes)


def _as_int32(x: Any) -> Any:
    if isinstance(x, int):
        return np.int32(x)
    return convert_element_type(x, _INT32)


def _strided(window: Any, indexer: NDIndexer) -> Any:
    """The window's elements at the slices' strides, integer-indexed dims dropped."""
    index = []
    for entry in indexer.indices:
        if isinstance(entry, Slice):
            index.append(slice(None, None, entry.stride))
        else:
            index.append(0)
    return window[tuple(index)]


def _check_supported(indexer: NDIndexer, what: str) -> None:
    if indexer.has_arrays:
        raise NotImplementedError(
            f"{what} with integer array indices is not supported in interpret mode; use "
            f"pl.ds slices with a mask{errors.where()}"
        )


def read_block(ref_value: Any, indexer: NDIndexer) -> Any:
    """``ref_value[indexer]``, where reads past the end give unspecified values."""
    _check_supported(indexer, "a masked load")
    padded, starts, sizes = _padded_window(ref_value, indexer)
    return _strided(dynamic_slice(padded, starts, sizes), indexer)


def write_block(ref_value: Any, indexer: NDIndexer, new: Any, mask: Any) -> Any:
    """``ref_value`` with ``new`` written at ``indexer`` where ``mask`` holds (None: all);
    writes past the end are dropped."""
    _check_supported(indexer, "a masked store")
    padded, starts, sizes = _padded_window(ref_value, indexer)
    window = dynamic_slice(padded, starts, sizes)
    index = tuple(
        slice(None, None, e.stride) if isinstance(e, Slice) else 0 for e in indexer.indices
    )
    old = window[index]
    merged = new if mask is None else enp.where(mask, new, old)
    window = window.at[index].set(merged)
    padded = dynamic_update_slice(padded, window, starts)
    return padded[tuple(slice(0, n) for n in get_aval(ref_value).shape)]


def _split_operands(args: Sequence[Any], count: int) -> tuple[Any, list[Any], list[Any]]:
    return args[0], list(args[1 : 1 + count]), list(args[1 + count :])


def _masked_load_discharge(in_avals, out_avals, *args, indexer, has_mask, has_other):
    ref, values, dynamic = _split_operands(args, has_mask + has_other)
    index = NDIndexer.unflatten(indexer, dynamic)
    out = read_block(ref, index)
    if has_mask and has_other:
        out = enp.where(values[0], out, values[1])
    return [None] * len(in_avals), out


def _masked_swap_discharge(in_avals, out_avals, *args, indexer, has_mask):
    ref, values, dynamic = _split_operands(args, 1 + has_mask)
    index = NDIndexer.unflatten(indexer, dynamic)
    old = read_block(ref, index)
    new_ref = write_block(ref, index, values[0], values[1] if has_mask else None)
    return [new_ref] + [None] * (len(in_avals) - 1), old


def _effects(*effects: Any) -> Callable[..., frozenset]:
    found = frozenset(effects)
    return lambda **params: found


masked_load_p = rules.define_primitive(
    "masked_load",
    abstract_eval=_read_abstract_eval,
    discharge=_masked_load_discharge,
    effects=_effects(read_effect),
)


def _swap_abstract_eval(ref, *rest, indexer, **params):
    return _read_abstract_eval(ref, *rest, indexer=indexer, **params)


masked_swap_p = rules.define_primitive(
    "masked_swap",
    abstract_eval=_swap_abstract_eval,
    discharge=_masked_swap_discharge,
    effects=_effects(read_effect, write_effect),
)


# --------------------------------------------------------------------------------------------
# Atomics


class AtomicOpType(enum.Enum):
    XCHG = "xchg"
    ADD = "add"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"


def _combine(atomic_type: str, old: Any, value: Any) -> Any:
    if atomic_type == "xchg":
        return value
    if atomic_type == "add":
        return old + value
    if atomic_type == "max":
        return enp.maximum(old, value)
    if atomic_type == "min":
        return enp.minimum(old, value)
    if atomic_type == "and":
        return old & value
    if atomic_type == "or":
        return old | value
    return old ^ value


def _atomic_rmw_discharge(in_avals, out_avals, *args, indexer, atomic_type, has_mask):
    ref, values, dynamic = _split_operands(args, 1 + has_mask)
    index = NDIndexer.unflatten(indexer, dynamic)
    old = read_block(ref, index)
    new = _combine(atomic_type, old, values[0])
    new_ref = write_block(ref, index, new, values[1] if has_mask else None)
    return [new_ref] + [None] * (len(in_avals) - 1), old


atomic_rmw_p = rules.define_primitive(
    "atomic_rmw",
    abstract_eval=_swap_abstract_eval,
    discharge=_atomic_rmw_discharge,
    effects=_effects(read_effect, accum_effect),
)


def _atomic_cas_discharge(in_avals, out_avals, *args, indexer):
    ref, (cmp, value), dynamic = _split_operands(args, 2)
    index = NDIndexer.unflatten(indexer, dynamic)
    old = read_block(ref, index)
    new_ref = write_block(ref, index, enp.where(old == cmp, value, old), None)
    return [new_ref] + [None] * (len(in_avals) - 1), old


atomic_cas_p = rules.define_primitive(
    "atomic_cas",
    abstract_eval=_swap_abstract_eval,
    discharge=_atomic_cas_discharge,
    effects=_effects(read_effect, write_effect),
)


def _atomic(atomic_type: AtomicOpType):
    what = f"pl.atomic_{atomic_type.value}"

    def atomic(x_ref_or_view: Any, idx: Any, val: Any, *, mask: Any = None) -> Any:
        indexer = _indexer_for(x_ref_or_view, idx, what)
        shape = indexer.result_shape()
        ref_aval = get_aval(x_ref_or_view)
        val = _value_for(ref_aval, val, shape, what)
        if atomic_type in (AtomicOpType.AND, AtomicOpType.OR, AtomicOpType.XOR) and not (
            dtypes.is_integer(ref_aval.dtype)
        ):
            raise errors.EmberTypeError(
                f"{what}{_kernel_words()} needs an integer Ref, got {ref_aval.str_short()}"
                f"{errors.where()}"
            )
        operands = [x_ref_or_view, val]
        if mask is not None:
            operands.append(_check_mask(mask, shape, what))
        spec, dynamic = indexer.flatten()
        return atomic_rmw_p.bind(
            *operands,
            *dynamic,
            indexer=spec,
            atomic_type=atomic_type.value,
            has_mask=mask is not None,
        )

    atomic.__name__ = f"atomic_{atomic_type.value}"
    atomic.__doc__ = (
        f"Atomically combine ``val`` into ``ref[idx]`` ({atomic_type.value}) where ``mask`` "
        f"holds; returns the old value."
    )
    return atomic


atomic_xchg = _atomic(AtomicOpType.XCHG)
atomic_add = _atomic(AtomicOpType.ADD)
atomic_max = _atomic(AtomicOpType.MAX)
atomic_min = _atomic(AtomicOpType.MIN)
atomic_and = _atomic(AtomicOpType.AND)
atomic_or = _atomic(AtomicOpType.OR)
atomic_xor = _atomic(AtomicOpType.XOR)


def atomic_cas(ref: Any, cmp: Any, val: Any) -> Any:
    """Atomically set the scalar Ref ``ref`` to ``val`` if it equals ``cmp``; returns the old
    value."""
    indexer = _indexer_for(ref, (), "pl.atomic_cas")
    shape = indexer.result_shape()
    ref_aval = get_aval(ref)
    cmp = _value_for(ref_aval, cmp, shape, "pl.atomic_cas (cmp)")
    val = _value_for(ref_aval, val, shape, "pl.atomic_cas")
    spec, dynamic = indexer.flatten()
    return atomic_cas_p.bind(ref, cmp, val, *dynamic, indexer=spec)
