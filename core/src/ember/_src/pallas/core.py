"""What a Pallas kernel call is made of: block specs, the grid, and the lowered ``PallasCall``.

A kernel runs once per point of its *grid*. ``BlockSpec(block_shape, index_map)`` says which
block of an operand (or output) the kernel sees there: ``index_map(*grid_indices)`` gives one
*block index* per dimension of the array, and the block starts at ``block index * block
size``. A dimension whose block size is ``None`` (or ``pl.squeezed``) is *squeezed*: the
block has size 1 there, the kernel's Ref drops that dimension, and the index map gives an
element index for it. No spec (``no_block_spec``) means the kernel sees the whole array.

``pallas_call`` traces the index maps and the kernel into a ``PallasCall``, the static
description every lowering works from (interpret mode here, a plugin's native compiler
elsewhere): its ``kernel`` is a jaxpr over Refs (inputs, then outputs, then scratch) and
each ``BlockMapping`` holds a traced index map from the grid indices (int32 scalars) to the
block indices (int32 scalars).

Blocks that do not divide their array are allowed, as in JAX: the array is treated as padded
to a whole number of blocks; reading the padding gives unspecified values (NaN for floats in
interpret mode) and writes to it are dropped.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, Trace, set_current_trace
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.primitives.shape import convert_element_type


class MemorySpace(enum.Enum):
    """Where a kernel's operand lives. ``ANY``: wherever the compiler chooses (the kernel
    gets a Ref to the whole array, and moves what it needs itself)."""

    ANY = "any"

    def __call__(self, shape: Sequence[int], dtype: Any) -> MemoryRef:
        """``pl.ANY((8, 128), jnp.float32)``: a scratch buffer in this memory space."""
        return MemoryRef(tuple(shape), dtype, self)


ANY = MemorySpace.ANY


class Squeezed:
    """The block size of a dimension the kernel does not see (size 1, dropped from its Ref);
    ``None`` in a block shape means the same."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "pl.squeezed"


squeezed = Squeezed()


@dataclasses.dataclass(frozen=True)
class MemoryRef:
    """The shape, dtype and memory space of a scratch buffer (``scratch_shapes``)."""

    shape: tuple[int, ...]
    dtype: Any
    memory_space: Any = None

    def get_aval(self) -> ShapedArray:
        return ShapedArray(tuple(self.shape), dtypes.canonicalize(self.dtype))


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """Which block of an array the kernel sees at each grid point: blocks of
    ``block_shape`` (None or ``pl.squeezed``: a squeezed dimension), the block at
    ``index_map(*grid_indices)`` (a tuple with one block index per dimension). Without a
    ``block_shape`` the block is the whole array; without an ``index_map`` it is the first."""

    block_shape: Sequence[int | None | Squeezed] | None = None
    index_map: Callable[..., Any] | None = None
    _: dataclasses.KW_ONLY
    memory_space: Any = None
    pipeline_mode: Any = None


class NoBlockSpec:
    """``in_specs``/``out_specs`` left out: every operand is seen whole."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "pl.no_block_spec"


no_block_spec = NoBlockSpec()


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """The grid and the block specs of a ``pallas_call``, as one value (``grid_spec=``)."""

    grid: int | Sequence[int] = ()
    in_specs: Any = no_block_spec
    out_specs: Any = no_block_spec
    scratch_shapes: Sequence[Any] = ()


# --------------------------------------------------------------------------------------------
# The lowered description


@dataclasses.dataclass(frozen=True, eq=False)
class BlockMapping:
    """How one operand or output is cut into blocks.

    ``block_shape`` has one entry per array dimension: an int, or None for a squeezed
    dimension. ``index_map`` is a jaxpr from the grid indices (int32 scalars) to one int32
    block index per dimension (for a squeezed dimension, the element index).
    ``array_aval`` is the whole array's; ``origin`` names it in messages ("input 0")."""

    block_shape: tuple[int | None, ...]
    index_map: ClosedJaxpr
    array_aval: ShapedArray
    origin: str

    @property
    def block_sizes(self) -> tuple[int, ...]:
        """The block's size in each dimension, 1 where squeezed."""
        return tuple(1 if b is None else b for b in self.block_shape)

    @property
    def squeezed_dims(self) -> tuple[int, ...]:
        return tuple(d for d, b in enumerate(self.block_shape) if b is None)

    @property
    def block_aval(self) -> ShapedArray:
        """The aval of what the kernel's Ref holds: the block without its squeezed dims."""
        shape = tuple(b for b in self.block_shape if b is not None)
        return ShapedArray(shape, self.array_aval.dtype)

    @property
    def padded_shape(self) -> tuple[int, ...]:
        """The array's shape rounded up to a whole number of blocks in each dimension."""
        return tuple(-(-n // b) * b for n, b in zip(self.array_aval.shape, self.block_sizes))


@dataclasses.dataclass(frozen=True, eq=False)
class PallasCall:
    """A kernel call, as every lowering sees it (the ``call`` parameter of ``pallas_call``).

    ``kernel`` is a jaxpr whose inputs are Refs to the blocks of the inputs, then of the
    outputs, then the scratch buffers; it returns nothing. ``block_mappings`` has one entry
    per input then per output. ``input_output_aliases`` pairs (input index, output index):
    that output starts as that input's value. ``compiler_params`` maps a compiler's name to
    its options (``{"triton": {"num_warps": 4, "num_stages": 3}}``)."""

    name: str
    kernel: ClosedJaxpr
    grid: tuple[int, ...]
    block_mappings: tuple[BlockMapping, ...]
    out_avals: tuple[ShapedArray, ...]
    input_output_aliases: tuple[tuple[int, int], ...]
    compiler_params: dict[str, Any]
    debug: bool
    num_inputs: int

    @property
    def in_block_mappings(self) -> tuple[BlockMapping, ...]:
        return self.block_mappings[: self.num_inputs]

    @property
    def out_block_mappings(self) -> tuple[BlockMapping, ...]:
        return self.block_mappings[self.num_inputs :]

    @property
    def scratch_avals(self) -> list[ShapedArray]:
        """The avals of the scratch buffers (the kernel's Ref inputs after the outputs)."""
        refs = self.kernel.jaxpr.in_avals[len(self.block_mappings) :]
        return [ref.inner_aval for ref in refs]

    @property
    def num_iterations(self) -> int:
        return math.prod(self.grid)

    def __repr__(self) -> str:
        return f"PallasCall({self.name!r}, grid={self.grid})"


# --------------------------------------------------------------------------------------------
# Building block mappings


def normalize_grid(grid: Any, kernel_name: str) -> tuple[int, ...]:
    """The grid as a tuple of non-negative ints (an int ``n`` is ``(n,)``)."""
    if grid is None:
        return ()
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        dims = tuple(grid)
    except TypeError:
        raise TypeError(
            f"pallas_call {kernel_name!r}: grid must be an int or a tuple of ints, got "
            f"{grid!r}{errors.where()}"
        ) from None
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ValueError(
                f"pallas_call {kernel_name!r}: grid dimensions must be non-negative ints, got "
                f"grid={dims!r} (grids of traced sizes are not supported){errors.where()}"
            )
    return tuple(int(d) for d in dims)


def block_mapping(
    spec: BlockSpec | None, aval: ShapedArray, grid: tuple[int, ...], origin: str, kernel_name: str
) -> BlockMapping:
    """Trace ``spec``'s index map for an array of type ``aval`` over ``grid``, checking it."""
    where = f"pallas_call {kernel_name!r}, {origin} ({aval.str_short()})"
    if spec is None or isinstance(spec, NoBlockSpec):
        spec = BlockSpec()
    if not isinstance(spec, BlockSpec):
        raise TypeError(f"{where}: expected a pl.BlockSpec, got {spec!r}{errors.where()}")
    if spec.block_shape is None:
        block_shape: tuple[int | None, ...] = tuple(aval.shape)
    else:
        block_shape = _normalize_block_shape(spec.block_shape, aval, where)
    index_map = spec.index_map or (lambda *_: (0,) * len(block_shape))
    _check_index_map_arity(index_map, len(grid), where)
    grid_avals = [ShapedArray((), np.dtype(np.int32))] * len(grid)

    def traced(*grid_indices: Any) -> list[Any]:
        result = index_map(*grid_indices)
        if not isinstance(result, (tuple, list)):
            result = (result,)
        if len(result) != len(block_shape):
            raise ValueError(
                f"{where}: the index_map returned {len(result)} block indices, but the block "
                f"shape {_show(block_shape)} has {len(block_shape)} dimensions{errors.where()}"
            )
        return [_as_int32_index(r, where) for r in result]

    closed = trace_to_jaxpr(traced, grid_avals, name=f"index_map of {origin}")
    return BlockMapping(block_shape, closed, aval, origin)


def _normalize_block_shape(block_shape: Any, aval: ShapedArray, where: str) -> tuple:
    try:
        dims = tuple(block_shape)
    except TypeError:
        raise TypeError(
            f"{where}: block_shape must be a tuple, got {block_shape!r}{errors.where()}"
        ) from None
    if len(dims) != aval.ndim:
        raise ValueError(
            f"{where}: the block shape {_show(dims)} has {len(dims)} dimensions, but the array "
            f"has {aval.ndim}{errors.where()}"
        )
    result: list[int | None] = []
    for d in dims:
        if d is None or isinstance(d, Squeezed):
            result.append(None)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0:
            result.append(int(d))
        else:
            raise ValueError(
                f"{where}: block dimensions must be positive ints or None (squeezed), got "
                f"{_show(dims)}{errors.where()}"
            )
    return tuple(result)


def _check_index_map_arity(index_map: Callable, num_grid_dims: int, where: str) -> None:
    try:
        signature = inspect.signature(index_map)
    except (TypeError, ValueError):  # a builtin or C function: let the call tell
        return
    try:
        signature.bind(*range(num_grid_dims))
    except TypeError:
        raise ValueError(
            f"{where}: the index_map {getattr(index_map, '__name__', index_map)!r} must take "
            f"{num_grid_dims} grid indices (one per grid dimension), but its signature is "
            f"{signature}{errors.where()}"
        ) from None


def _as_int32_index(value: Any, where: str) -> Any:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return np.int32(value)
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape != () or dtype is None or not dtypes.is_integer(dtype):
        raise TypeError(
            f"{where}: an index_map must return integer scalars, got {value!r}{errors.where()}"
        )
    return convert_element_type(value, np.dtype(np.int32))


def _show(block_shape: Sequence[Any]) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in block_shape) + ")"


# --------------------------------------------------------------------------------------------
# The kernel being traced: what program_id and the Ref helpers look up


class KernelContext:
    """The kernel being traced: its name, grid and trace. ``program_id`` binds its primitive
    on the kernel's own trace, once per axis, so that a body nested in the kernel (a
    ``fori_loop``) closes over it: a kernel's ``program_id`` equations are all at its top
    level, where interpret mode replaces them by the loop's grid indices."""

    def __init__(self, name: str, grid: tuple[int, ...], trace: Trace):
        self.name = name
        self.grid = grid
        self.trace = trace
        self.program_ids: dict[int, Any] = {}

    def program_id(self, axis: int, bind: Callable[[int], Any]) -> Any:
        if axis not in self.program_ids:
            with set_current_trace(self.trace):
                self.program_ids[axis] = bind(axis)
        return self.program_ids[axis]


class _Kernels(threading.local):
    def __init__(self) -> None:
        self.stack: list[KernelContext] = []


_kernels = _Kernels()


@contextmanager
def tracing_kernel(context: KernelContext) -> Iterator[KernelContext]:
    _kernels.stack.append(context)
    try:
        yield context
    finally:
        _kernels.stack.pop()


def current_kernel() -> KernelContext | None:
    return _kernels.stack[-1] if _kernels.stack else None


def kernel_for(what: str) -> KernelContext:
    """The kernel being traced; ``what`` (e.g. ``pl.program_id``) needs one."""
    context = current_kernel()
    if context is None:
        raise errors.EmberError(
            f"{what} can only be called inside a Pallas kernel (a function passed to "
            f"pl.pallas_call){errors.where()}"
        )
    return context


def check_axis(context: KernelContext, axis: int, what: str) -> int:
    if not isinstance(axis, (int, np.integer)) or not -len(context.grid) <= axis < len(
        context.grid
    ):
        raise ValueError(
            f"{what}(axis={axis!r}) in kernel {context.name!r}: the grid {context.grid} has "
            f"{len(context.grid)} dimensions{errors.where()}"
        )
    return int(axis) % len(context.grid)


@dataclasses.dataclass(frozen=True)
class TritonCompilerParams:
    """Options of the Triton compiler (``pl.triton.CompilerParams``): warps per program and
    software-pipelining stages (None: the compiler's default)."""

    PLATFORM = "triton"

    num_warps: int | None = None
    num_stages: int | None = None
