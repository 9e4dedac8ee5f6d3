"""Refs: the abstract value of a mutable reference to an array, how Refs are indexed, and the
effects of reading and writing them.

A Pallas kernel reads and writes *references* to blocks of memory. Inside a jaxpr a Ref is a
variable whose aval is an ``AbstractRef``; the primitives ``get``, ``swap`` and ``addupdate``
(``primitives/state.py``) read and write it through an ``NDIndexer``, and the discharge pass
(``interpreters/discharge.py``) turns a jaxpr over Refs into one over plain values.

An ``NDIndexer`` has one entry per dimension of the Ref: an integer index (a Python int or an
integer scalar, possibly traced), a ``Slice`` (a start, possibly traced, a static size and a
static stride), or an integer array. The result of indexing has the shape NumPy gives: the
integer entries' broadcast shape, placed where the first of them is when they are adjacent and
in front otherwise, and the sizes of the slices in order.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Effect, ShapedArray, Tracer, get_aval

# --------------------------------------------------------------------------------------------
# The aval of a Ref


class AbstractRef:
    """The abstract value of a mutable reference to an array of type ``inner_aval``.

    It answers ``shape``/``dtype``/``ndim`` like the array it refers to, and prints as
    ``Ref{f32[8,128]}``. It is not a ``ShapedArray``: array primitives refuse it (only the
    primitives with a discharge rule take Refs), and the discharge pass replaces it by its
    ``inner_aval``.
    """

    __slots__ = ("inner_aval", "_hash")
    # An aval's typed sharding is consulted by every abstract evaluation; a Ref has none.
    typed_sharding = None
    weak_type = False

    def __init__(self, inner_aval: ShapedArray):
        if not isinstance(inner_aval, ShapedArray):
            raise TypeError(f"AbstractRef takes a ShapedArray, got {inner_aval!r}")
        self.inner_aval = inner_aval.strip_weak_type()
        self._hash = hash(("Ref", self.inner_aval))

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)

    def __eq__(self, other: object) -> bool:
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self) -> int:
        return self._hash

    def same_type(self, other: Any) -> bool:
        return type(other) is AbstractRef and self.inner_aval.same_type(other.inner_aval)

    def strip_weak_type(self) -> AbstractRef:
        return self

    def str_short(self, short_dtypes: bool = True) -> str:
        return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

    def __repr__(self) -> str:
        return f"AbstractRef({self.inner_aval!r})"

    def __str__(self) -> str:
        return self.str_short(short_dtypes=False)


def is_ref(aval: Any) -> bool:
    """Whether ``aval`` is the abstract value of a Ref."""
    return type(aval) is AbstractRef


def not_a_ref_error(what: str, aval: Any) -> errors.EmberTypeError:
    return errors.EmberTypeError(
        f"{what} needs a Ref, got a value of type {aval.str_short()}{errors.where()}"
    )


# --------------------------------------------------------------------------------------------
# Ref effects: unordered (a kernel's reads and writes are ordered by its data dependencies,
# never by a token), and they keep swap and addupdate from being dropped as dead code.


class RefEffect(Effect):
    """An effect on a Ref. One instance per kind (``read_effect`` and its siblings)."""

    __slots__ = ()

    def __init__(self, name: str):
        super().__init__(name, ordered=False)


class ReadEffect(RefEffect):
    """Reading a Ref (``get``). Reading changes nothing, so an unused read may be dropped."""

    __slots__ = ()


class WriteEffect(RefEffect):
    """Writing a Ref (``swap``)."""

    __slots__ = ()


class AccumEffect(RefEffect):
    """Adding into a Ref (``addupdate``)."""

    __slots__ = ()


read_effect = ReadEffect("Read")
write_effect = WriteEffect("Write")
accum_effect = AccumEffect("Accum")


def has_lasting_effects(effects: frozenset[Effect]) -> bool:
    """Whether an equation with these effects must stay even when its results are unused:
    any effect but a read does."""
    return any(type(e) is not ReadEffect for e in effects)


# --------------------------------------------------------------------------------------------
# Indexers


class Slice:
    """``size`` elements from ``start`` in steps of ``stride`` along one dimension.

    ``start`` is a Python int or an integer scalar (traced or not); ``size`` and ``stride``
    are static ints (the shape of what is read must be known when tracing)."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: int, stride: int = 1):
        self.start = _static_int(start) if _is_static_int(start) else start
        try:
            self.size = operator.index(size)
            self.stride = operator.index(stride)
        except TypeError:
            raise errors.EmberTypeError(
                f"a Slice's size and stride must be static ints, got size={size!r}, "
                f"stride={stride!r}{errors.where()}"
            ) from None
        if self.size < 0 or self.stride < 1:
            raise ValueError(
                f"a Slice needs size >= 0 and stride >= 1, got size={self.size}, "
                f"stride={self.stride}{errors.where()}"
            )

    @property
    def is_dynamic_start(self) -> bool:
        return not isinstance(self.start, int)

    @classmethod
    def from_slice(cls, entry: slice, dim_size: int) -> Slice:
        """The ``Slice`` a static Python slice ``entry`` selects from a dimension of
        ``dim_size`` elements (negative steps are not supported: no Ref read runs backwards)."""
        for part in (entry.start, entry.stop, entry.step):
            if part is not None and not _is_static_int(part):
                raise errors.EmberTypeError(
                    f"a slice of a Ref with a traced bound ({entry}) has no static size; "
                    f"use pl.ds(start, size) (a Slice) instead{errors.where()}"
                )
        start, stop, step = entry.indices(dim_size)
        if step < 1:
            raise ValueError(f"a Ref can't be sliced with a negative step ({entry})")
        return cls(start, max(0, -(-(stop - start) // step)), step)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is Slice
            and not self.is_dynamic_start
            and not other.is_dynamic_start
            and (self.start, self.size, self.stride) == (other.start, other.size, other.stride)
        )

    __hash__ = None  # a start may be a traced value

    def __repr__(self) -> str:
        stride = f", {self.stride}" if self.stride != 1 else ""
        return f"Slice({self.start!r}, {self.size}{stride})"


class IndexerSpec(NamedTuple):
    """The static part of an ``NDIndexer``: the ``indexer`` parameter of get/swap/addupdate.

    ``shape`` is the indexed Ref's shape; ``entries`` has one tuple per dimension:

    - ``("index", k)``: an integer index; ``k`` is a static int, or None when the index is
      the next dynamic value (an integer scalar);
    - ``("slice", start, size, stride)``: a ``Slice``; ``start`` is a static int, or None
      when it is the next dynamic value; ``size`` and ``stride`` are ints;
    - ``("array",)``: an integer array index, the next dynamic value.

    The dynamic values follow the Ref (and the stored value) as the equation's operands, in
    the order of the entries.
    """

    shape: tuple[int, ...]
    entries: tuple[tuple, ...]

    def __repr__(self) -> str:
        dynamic = [e for e in self.entries if e[0] == "array" or e[1] is None]
        return self.pretty(["idx" if e[0] == "array" else "i" for e in dynamic])

    def pretty(self, dynamic_names: Sequence[str]) -> str:
        """The index as written, ``[b, 2:6, :]``, with the dynamic values shown by
        ``dynamic_names`` (in operand order)."""
        names = iter(dynamic_names)
        shown = []
        for entry, dim_size in zip(self.entries, self.shape):
            if entry[0] == "index":
                shown.append(next(names) if entry[1] is None else str(entry[1]))
            elif entry[0] == "array":
                shown.append(next(names))
            else:
                _, start, size, stride = entry
                start_name = next(names) if start is None else None
                shown.append(_slice_text(start, size, stride, dim_size, start_name))
        return "[" + ", ".join(shown) + "]"


def _slice_text(
    start: int | None, size: int, stride: int, dim_size: int, start_name: str | None
) -> str:
    """A slice as the user wrote it: ``:`` for a whole dimension, ``2:6`` or ``0:8:2`` for a
    static one, ``ds(b, 8)`` for one from a dynamic start ``b``."""
    if start is None:
        return f"ds({start_name}, {size})" if stride == 1 else f"ds({start_name}, {size}, {stride})"
    if start == 0 and stride == 1 and size == dim_size:
        return ":"
    stop = start + (size - 1) * stride + 1 if size else start
    return f"{start}:{stop}" + (f":{stride}" if stride != 1 else "")


class NDIndexer:
    """How a Ref of shape ``shape`` is indexed: one entry per dimension, each an integer
    index (int or integer scalar), a ``Slice`` or an integer array (see the module doc)."""

    __slots__ = ("indices", "shape")

    def __init__(self, indices: Sequence[Any], shape: Sequence[int]):
        self.indices = tuple(indices)
        self.shape = tuple(shape)
        if len(self.indices) != len(self.shape):
            raise ValueError(
                f"internal error: {len(self.indices)} index entries for shape {self.shape}"
            )

    @classmethod
    def from_index(cls, index: Any, shape: Sequence[int]) -> NDIndexer:
        """The indexer for what a user wrote in ``ref[index]``: ints, integer scalars or
        arrays, ``:`` slices, ``...`` and ``Slice``s (``pl.ds``)."""
        shape = tuple(shape)
        entries = index if isinstance(index, tuple) else (index,)
        entries = _expand_ellipsis(entries, len(shape))
        if len(entries) > len(shape):
            raise IndexError(
                f"too many indices for a Ref of rank {len(shape)} (shape {shape}): got "
                f"{len(entries)} index entries{errors.where()}"
            )
        entries = entries + (slice(None),) * (len(shape) - len(entries))
        return cls([_entry(e, d, size) for d, (e, size) in enumerate(zip(entries, shape))], shape)

    # -- the static description and the dynamic values --------------------------------------

    def flatten(self) -> tuple[IndexerSpec, list[Any]]:
        """``(spec, dynamic_values)``: the ``indexer`` parameter and the operands it needs."""
        spec, dynamic = [], []
        for entry in self.indices:
            if isinstance(entry, Slice):
                if entry.is_dynamic_start:
                    dynamic.append(entry.start)
                    spec.append(("slice", None, entry.size, entry.stride))
                else:
                    spec.append(("slice", entry.start, entry.size, entry.stride))
            elif isinstance(entry, int):
                spec.append(("index", entry))
            elif _shape_of(entry) == ():
                dynamic.append(entry)
                spec.append(("index", None))
            else:
                dynamic.append(entry)
                spec.append(("array",))
        return IndexerSpec(self.shape, tuple(spec)), dynamic

    @classmethod
    def unflatten(cls, indexer: IndexerSpec, dynamic_values: Sequence[Any]) -> NDIndexer:
        """The indexer ``flatten`` described; ``dynamic_values`` may be values, tracers or
        avals (abstract evaluation rebuilds an indexer of avals)."""
        values = iter(dynamic_values)
        indices: list[Any] = []
        for entry in indexer.entries:
            kind = entry[0]
            if kind == "slice":
                _, start, size, stride = entry
                indices.append(Slice(next(values) if start is None else start, size, stride))
            elif kind == "index":
                indices.append(next(values) if entry[1] is None else entry[1])
            elif kind == "array":
                indices.append(next(values))
            else:
                raise ValueError(f"internal error: unknown indexer entry {entry!r}")
        leftover = list(values)
        if leftover:
            raise ValueError(f"internal error: {len(leftover)} dynamic index values left over")
        return cls(indices, indexer.shape)

    # -- shapes -----------------------------------------------------------------------------

    def is_int_indexing(self) -> list[bool]:
        """Per dimension: whether it is indexed by an integer (scalar or array)."""
        return [not isinstance(e, Slice) for e in self.indices]

    @property
    def int_indexer_shape(self) -> tuple[int, ...]:
        """The broadcast shape of the integer entries (``()`` for scalars only)."""
        shapes = [_shape_of(e) for e in self.indices if not isinstance(e, Slice)]
        try:
            return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise IndexError(
                f"the integer array indices of a Ref have shapes {shapes}, which do not "
                f"broadcast together{errors.where()}"
            ) from None

    @property
    def has_arrays(self) -> bool:
        return any(not isinstance(e, (Slice, int)) and _shape_of(e) != () for e in self.indices)

    def result_shape(self) -> tuple[int, ...]:
        """The shape of what ``ref[indexer]`` reads (NumPy's rules, as in the module doc)."""
        ints = self.is_int_indexing()
        slice_sizes = [e.size for e in self.indices if isinstance(e, Slice)]
        if not any(ints):
            return tuple(slice_sizes)
        int_shape = self.int_indexer_shape
        positions = [d for d, is_int in enumerate(ints) if is_int]
        if positions[-1] - positions[0] + 1 != len(positions):  # not adjacent: in front
            return int_shape + tuple(slice_sizes)
        before = sum(1 for d in range(positions[0]) if not ints[d])
        return tuple(slice_sizes[:before]) + int_shape + tuple(slice_sizes[before:])

    def __repr__(self) -> str:
        return f"NDIndexer({list(self.indices)!r}, shape={self.shape})"


def _expand_ellipsis(entries: tuple, ndim: int) -> tuple:
    found = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(found) > 1:
        raise IndexError(f"an index can only have a single ellipsis ('...'){errors.where()}")
    if not found:
        return entries
    at = found[0]
    fill = max(0, ndim - (len(entries) - 1))
    return entries[:at] + (slice(None),) * fill + entries[at + 1 :]


def _entry(entry: Any, dim: int, size: int) -> Any:
    if isinstance(entry, Slice):
        if (
            not entry.is_dynamic_start
            and entry.size
            and (entry.start < 0 or entry.start + (entry.size - 1) * entry.stride >= size)
        ):
            raise IndexError(
                f"{entry} is out of bounds for dimension {dim} of a Ref, of size {size}"
                f"{errors.where()}"
            )
        return entry
    if isinstance(entry, slice):
        return Slice.from_slice(entry, size)
    if entry is None:
        raise IndexError(f"a Ref can't be indexed with None (np.newaxis){errors.where()}")
    if isinstance(entry, (bool, np.bool_)):
        raise IndexError(f"a Ref can't be indexed with a boolean{errors.where()}")
    if _is_static_int(entry):
        index = _static_int(entry)
        if not -size <= index < size:
            raise IndexError(
                f"index {index} is out of bounds for dimension {dim} of a Ref, of size {size}"
                f"{errors.where()}"
            )
        return index % size if size else index
    if isinstance(entry, (list, tuple)):
        entry = np.asarray(entry)
    try:
        aval = get_aval(entry)
    except errors.EmberTypeError:
        raise IndexError(
            f"a Ref can't be indexed with {type(entry).__name__} {entry!r}: use ints, integer "
            f"arrays, slices (:), ... or pl.ds(start, size){errors.where()}"
        ) from None
    if not dtypes.is_integer(aval.dtype):
        raise IndexError(
            f"a Ref's indices must be integers, got an index of type {aval.str_short()}"
            f"{errors.where()}"
        )
    return entry


def _is_static_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _static_int(value: Any) -> int:
    return operator.index(value)


def _shape_of(value: Any) -> tuple[int, ...]:
    if isinstance(value, (Tracer, ShapedArray)) or hasattr(value, "shape"):
        return tuple(value.shape)
    return ()
