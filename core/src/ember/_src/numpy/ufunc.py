"""NumPy's ufunc objects: ``enp.ufunc``, ``enp.frompyfunc`` and the ufunc instances JAX makes
of ``add``, ``multiply``, ``maximum``, ``logical_and``, ``bitwise_or``, ... with their
``reduce``/``accumulate``/``at``/``reduceat``/``outer`` methods.

Each method has a general form built from the ufunc's own call (a ``scan`` along the reduced
axis, an ``associative_scan`` for an associative accumulate) and, for the built-in ufuncs, a
faster one through the existing reductions, cumulative ops and ``.at[]`` updates. Everything is
traceable, so the methods work under ``jit``, ``vmap`` and ``grad``. Plain calls go straight to
the elementwise function, so ``enp.add(x, y)`` costs one extra Python call."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.lax.cumulative import cummax, cummin
from ember._src.lax.numeric import reduce as lax_reduce
from ember._src.numpy import elementwise, float_functions, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.creation import arange, asarray, full
from ember._src.numpy.functional import vectorize
from ember._src.numpy.joining import append
from ember._src.numpy.manipulation import broadcast_to, expand_dims, moveaxis, reshape
from ember._src.numpy.nonzero import where as select_where
from ember._src.numpy.operands import canonicalize_axis, cast
from ember._src.numpy.sorting import cumprod, cumsum
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.control_flow.scan import scan
from ember._src.transforms.jit import jit
from ember._src.transforms.staging import eval_shape

_AT_INPLACE_MESSAGE = (
    "ember arrays are immutable, so ufunc.at() cannot update its operand in place as "
    "np.ufunc.at() does. Pass inplace=False and use the returned array: "
    "arr = enp.add.at(arr, indices, values, inplace=False)"
)


class ufunc:  # noqa: N801 - the name NumPy and JAX give the type
    """A function applied elementwise to broadcast arrays, with NumPy's ufunc methods.

    ``func`` takes ``nin`` arrays (or scalars, for :func:`frompyfunc`) and returns ``nout``.
    ``call``/``reduce``/``accumulate``/``at``/``reduceat`` optionally give faster forms of
    the methods; without them each method is derived from ``func``.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs: int | None = None,
        identity: Any = None,
        call: Callable[..., Any] | None = None,
        reduce: Callable[..., Any] | None = None,
        accumulate: Callable[..., Any] | None = None,
        at: Callable[..., Any] | None = None,
        reduceat: Callable[..., Any] | None = None,
    ):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self._func = func
        self._nin = operator.index(nin)
        self._nout = operator.index(nout)
        self._nargs = operator.index(nargs or nin)
        self._identity = identity
        # Whether func(func(a, b), c) == func(a, func(b, c)) and func(a, b) == func(b, a):
        # then reduce may take several axes and fold in any order, and accumulate may use a
        # parallel prefix scan. Only the built-in ufuncs promise it.
        self._associative = False
        self._call = call or jit(vectorize(func))
        self._reduce = reduce or jit(
            self._reduce_from_func, static_argnames=("axis", "dtype", "keepdims")
        )
        self._accumulate = accumulate or jit(
            self._accumulate_from_func, static_argnames=("axis", "dtype")
        )
        self._at = at or self._at_from_func
        self._reduceat = reduceat or jit(
            self._reduceat_from_func, static_argnames=("axis", "dtype")
        )
        self._outer = jit(self._outer_via_broadcast)

    nin = property(lambda self: self._nin, doc="The number of inputs.")
    nout = property(lambda self: self._nout, doc="The number of outputs.")
    nargs = property(lambda self: self._nargs, doc="The number of arguments.")
    identity = property(lambda self: self._identity, doc="The identity value, or None.")

    def _key(self) -> tuple:
        return (self._func, self.__name__, self._identity, self._nin, self._nout, self._nargs)

    # Two ufuncs made alike from one function are equal (as JAX's are), so either can be a
    # static argument to jit and hit the other's cache entry.
    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"<enp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is None and where is None and len(args) == self._nin:
            return self._call(*args)
        if out is not None:
            raise NotImplementedError(
                f"The 'out' argument to {self.__name__} is not supported.{errors.where()}"
            )
        if where is not None:
            raise NotImplementedError(
                f"The 'where' argument to {self.__name__} is not supported.{errors.where()}"
            )
        raise TypeError(
            f"{self.__name__}() takes {self._nin} positional arguments, got {len(args)}"
            f"{errors.where()}"
        )

    # ----------------------------------------------------------------------------------------
    # reduce

    def reduce(
        self,
        a: Any,
        axis: Any = 0,
        dtype: Any = None,
        out: None = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = None,
    ) -> Any:
        """``func`` folded along ``axis`` (an int, a tuple for the associative built-ins, or
        None for all axes), as :meth:`numpy.ufunc.reduce`."""
        self._check_binary("reduce", out)
        if where is not None:
            if self._identity is None and initial is None:
                raise ValueError(
                    f"reduction operation {self.__name__!r} does not have an identity, so to "
                    f"use a where mask one has to specify 'initial'.{errors.where()}"
                )
            where_dtype = get_aval(asarray(where)).dtype
            if where_dtype != np.bool_:
                raise ValueError(
                    f"where argument must have dtype=bool; got dtype={where_dtype}{errors.where()}"
                )
        if isinstance(axis, list):
            axis = tuple(axis)
        if dtype is not None:
            dtype = dtypes.canonicalize(dtype)
        return self._reduce(
            a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
        )

    def _reduce_from_func(
        self, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any, where: Any
    ) -> Any:
        a = asarray(a)
        shape = get_aval(a).shape
        if initial is None:
            initial = self._identity
        if dtype is None:
            dtype = self._result_dtype(a, a)
        if where is not None:
            where = broadcast_to(where, shape)
        axes = self._reduced_axes(axis, len(shape))
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        final_shape = tuple(1 if d in axes else shape[d] for d in range(len(shape)))
        if not keepdims:
            final_shape = tuple(shape[d] for d in kept)
        # The reduced axes, in order, become one leading axis for the fold to walk along.
        rows = reshape(moveaxis(a, axes, tuple(range(len(axes)))), (-1, *(shape[d] for d in kept)))
        if where is not None:
            where = reshape(moveaxis(where, axes, tuple(range(len(axes)))), get_aval(rows).shape)
        length = get_aval(rows).shape[0]
        if length == 0:
            if initial is None:
                raise ValueError(
                    f"zero-size array to reduction operation {self.__name__} which has no "
                    f"identity{errors.where()}"
                )
            return full(final_shape, initial, dtype)
        if initial is None:
            start, rows = cast(rows[0], dtype), rows[1:]
        else:
            start = broadcast_to(cast(asarray(initial), dtype), get_aval(rows).shape[1:])

        if self._associative and self._identity is not None:
            result = self._reduce_in_halves(start, rows, where, dtype)
        else:
            result = self._reduce_in_order(start, rows, where, dtype)
        return reshape(result, final_shape)

    def _reduce_in_halves(self, start: Any, rows: Any, where: Any, dtype: Any) -> Any:
        """An associative, commutative func with an identity folds the rows pairwise (log-depth
        and parallel); masked-out entries become the identity."""
        identity = cast(asarray(self._identity), dtype)
        rows = cast(rows, dtype)
        if where is not None:
            rows = select_where(where, rows, identity)
        total = lax_reduce(rows, identity, lambda x, y: cast(self(x, y), dtype), (0,))
        return cast(self(start, total), dtype)

    def _reduce_in_order(self, start: Any, rows: Any, where: Any, dtype: Any) -> Any:
        """Any other func folds the rows one after another, as NumPy does."""

        def fold(total, step):
            row, mask = step
            combined = cast(self(total, cast(row, dtype)), dtype)
            return (combined if mask is None else select_where(mask, combined, total)), None

        result, _ = scan(fold, start, (rows, where))
        return result

    def _reduced_axes(self, axis: Any, ndim: int) -> tuple[int, ...]:
        if axis is None:
            axes = tuple(range(ndim))
        elif isinstance(axis, tuple):
            axes = tuple(canonicalize_axis(ax, ndim) for ax in axis)
            if len(set(axes)) != len(axes):
                raise ValueError(f"duplicate value in 'axis': {axis}{errors.where()}")
        else:
            axes = (canonicalize_axis(axis, ndim),)
        # JAX folds a non-reorderable func over the flattened array for axis=None (in C
        # order); an explicit tuple of axes it, like NumPy, refuses.
        if axis is not None and len(axes) > 1 and not self._associative:
            raise ValueError(
                f"reduction operation {self.__name__!r} is not reorderable, so at most one "
                f"axis may be specified{errors.where()}"
            )
        return tuple(sorted(axes))

    # ----------------------------------------------------------------------------------------
    # accumulate

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running results of :meth:`reduce` along ``axis``, as
        :meth:`numpy.ufunc.accumulate`; ``axis=None`` (as JAX's ``add``/``multiply`` take it)
        accumulates over the flattened array."""
        self._check_binary("accumulate", out)
        if isinstance(axis, (tuple, list)):
            raise ValueError(f"accumulate does not allow multiple axes{errors.where()}")
        if axis is None:
            a, axis = reshape(asarray(a), (-1,)), 0
        if dtype is not None:
            dtype = dtypes.canonicalize(dtype)
        return self._accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_from_func(self, a: Any, axis: int, dtype: Any) -> Any:
        a = asarray(a)
        shape = get_aval(a).shape
        if dtype is None:
            dtype = self._result_dtype(a, a)
        if not shape:  # a scalar has no axis to accumulate along
            raise np.exceptions.AxisError(
                f"axis {axis} is out of bounds for array of dimension 0{errors.where()}"
            )
        axis = canonicalize_axis(axis, len(shape))
        a = cast(a, dtype)
        if 0 in shape:
            return full(shape, 0, dtype)
        if self._associative:
            return associative_scan(lambda x, y: cast(self(x, y), dtype), a, axis=axis)
        rows = moveaxis(a, axis, 0)

        def step(total, row):
            total = cast(self(total, row), dtype)
            return total, total

        _, rest = scan(step, rows[0], rows[1:])
        return moveaxis(append(rows[:1], rest, axis=0), 0, axis)

    # ----------------------------------------------------------------------------------------
    # at

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """``a`` with ``func`` applied at ``indices`` (with ``b`` for a binary ufunc), each
        repeated index applied again, as :meth:`numpy.ufunc.at`; returns the new array."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE_MESSAGE)
        expected = self._nin - 1
        if (b is not None) != (expected == 1) or self._nout != 1:
            raise ValueError(
                f"{self.__name__}.at needs {expected} value operand(s) and one output"
                f"{errors.where()}"
            )
        return self._at(a, indices) if b is None else self._at(a, indices, b)

    def _at_from_func(self, a: Any, indices: Any, *values: Any) -> Any:
        dtype = self._result_dtype(a, *values)
        a = cast(asarray(a), dtype)
        shape = get_aval(a).shape
        values = tuple(cast(asarray(v), dtype) for v in values)
        indices = indices if isinstance(indices, tuple) else (indices,)
        indices = tuple(asarray(i) if isinstance(i, (list, np.ndarray)) else i for i in indices)
        if not any(_may_repeat(i) for i in indices):
            # Basic indexing selects each element at most once: one gather-apply-scatter.
            return a.at[indices].set(self(a.at[indices].get(), *values))
        # Where each selected element lives in the flattened array, in the order NumPy
        # applies the updates (C order of a[indices]).
        positions = reshape(arange(int(np.prod(shape)), dtype=np.int32), shape)[indices]
        selected = get_aval(positions).shape
        values = tuple(reshape(broadcast_to(v, selected), (-1,)) for v in values)

        # A repeated index must see the previous update, so the updates go one at a time.
        def update(flat, step):
            position, step_values = step
            return flat.at[position].set(self(flat[position], *step_values)), None

        flat, _ = scan(update, reshape(a, (-1,)), (reshape(positions, (-1,)), values))
        return reshape(flat, shape)

    # ----------------------------------------------------------------------------------------
    # reduceat

    def reduceat(
        self, a: Any, indices: Any, axis: int = 0, dtype: Any = None, out: None = None
    ) -> Any:
        """``reduce`` over the slices ``a[indices[i]:indices[i+1]]`` along ``axis`` (just
        ``a[indices[i]]`` where ``indices[i] >= indices[i+1]``), as
        :meth:`numpy.ufunc.reduceat`."""
        self._check_binary("reduceat", out)
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"reduceat requires a single integer axis.{errors.where()}")
        if dtype is not None:
            dtype = dtypes.canonicalize(dtype)
        a, indices = asarray(a), asarray(indices)
        self._check_reduceat_indices(a, indices, axis)
        return self._reduceat(a, indices, axis=axis, dtype=dtype)

    def _check_reduceat_indices(self, a: Any, indices: Any, axis: int) -> None:
        """NumPy's IndexError for indices known now to fall outside the axis (a gather would
        clamp them into a wrong answer)."""
        aval = get_aval(a)
        if isinstance(indices, Tracer) or aval.ndim == 0:
            return
        known = np.asarray(indices)
        if known.size == 0 or not np.issubdtype(known.dtype, np.integer):
            return
        length = aval.shape[canonicalize_axis(axis, aval.ndim)]
        outside = known[(known < 0) | (known >= length)]
        if outside.size:
            raise IndexError(
                f"index {outside[0]} out-of-bounds in {self.__name__}.reduceat [0, {length})"
                f"{errors.where()}"
            )

    def _reduceat_from_func(self, a: Any, indices: Any, axis: int, dtype: Any) -> Any:
        a = asarray(a)
        shape = get_aval(a).shape
        if not shape:
            raise ValueError(
                f"reduceat: a must have 1 or more dimension, got a.shape={shape}{errors.where()}"
            )
        if get_aval(indices).ndim != 1:
            raise ValueError(
                f"reduceat: indices must be one-dimensional, got "
                f"indices.shape={get_aval(indices).shape}{errors.where()}"
            )
        if dtype is None:
            dtype = get_aval(a).dtype
        axis = canonicalize_axis(axis, len(shape))
        rows = cast(moveaxis(a, axis, 0), dtype)
        starts = indices
        ends = append(indices[1:], shape[axis])
        # Broadcast the per-segment bounds against the trailing axes of each row.
        spread = tuple(range(1, len(shape)))
        starts, ends = expand_dims(starts, spread), expand_dims(ends, spread)

        def fold(totals, step):
            position, row = step
            inside = (position > starts) & (position < ends)
            return select_where(inside, cast(self(totals, row), dtype), totals), None

        positions = np.arange(shape[axis], dtype=np.int32)
        result, _ = scan(fold, take(rows, indices, axis=0), (positions, rows))
        return moveaxis(result, 0, axis)

    # ----------------------------------------------------------------------------------------
    # outer

    def outer(self, A: Any, B: Any, /) -> Any:
        """``func`` of every pair of elements: ``result[i..., j...] = func(A[i...], B[j...])``."""
        self._check_binary("outer", None)
        return self._outer(A, B)

    def _outer_via_broadcast(self, A: Any, B: Any) -> Any:
        A, B = asarray(A), asarray(B)
        trailing = tuple(range(-get_aval(B).ndim, 0))
        return self(expand_dims(A, trailing) if trailing else A, B)

    # ----------------------------------------------------------------------------------------

    def _check_binary(self, method: str, out: Any) -> None:
        if self._nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs{errors.where()}")
        if self._nout != 1:
            raise ValueError(
                f"{method} only supported for functions returning a single value{errors.where()}"
            )
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.{method}(){errors.where()}")

    def _result_dtype(self, *operands: Any) -> np.dtype:
        return _result_dtype(self._func, *operands)


def _result_dtype(func: Callable[..., Any], *operands: Any) -> np.dtype:
    """The dtype ``func`` gives for scalars of the operands' dtypes."""
    scalars = [np.zeros((), get_aval(asarray(x)).dtype) for x in operands]
    return eval_shape(func, *scalars).dtype


def _may_repeat(index: Any) -> bool:
    """Whether an index entry is an array of rank one or more, the only kind that can select
    an element twice."""
    if index is None or index is Ellipsis or isinstance(index, (slice, int)):
        return False
    return get_aval(asarray(index)).ndim > 0


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A :class:`ufunc` from ``func``, a traceable function of ``nin`` scalars returning
    ``nout`` values; calls broadcast their operands and map ``func`` over the elements."""
    return ufunc(func, nin, nout, identity=identity)


# --------------------------------------------------------------------------------------------
# The built-in ufuncs: the ones JAX makes ufunc objects of.


def _with_dtype(a: Any, dtype: Any) -> Any:
    return asarray(a) if dtype is None else cast(asarray(a), dtype)


def _reduce_extremum(reducer):
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        return reducer(_with_dtype(a, dtype), axis, keepdims=keepdims, initial=initial, where=where)

    return reduce


def _reduce_logical(reducer, combine):
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        result = reducer(a, axis, keepdims=keepdims, where=where)
        if initial is not None:
            result = combine(result, cast(asarray(initial), np.bool_))
        return result if dtype is None else cast(result, dtype)

    return reduce


def _accumulate_cumulative(cumulative):
    def accumulate(a, *, axis, dtype):
        a = _with_dtype(a, dtype)
        return cumulative(a, canonicalize_axis(axis, get_aval(a).ndim))

    return accumulate


def _reduce_sum(a, *, axis, dtype, keepdims, initial, where):
    return reductions.sum(a, axis, dtype, keepdims=keepdims, initial=initial, where=where)


def _reduce_prod(a, *, axis, dtype, keepdims, initial, where):
    return reductions.prod(a, axis, dtype, keepdims=keepdims, initial=initial, where=where)


def _at_update(method: str, bool_via_int: bool = False):
    """``.at[indices].<method>(b)``; booleans go through int32 (a scatter-add of bools would
    saturate differently from NumPy's logical-or-like result)."""

    def at(a, indices, b):
        a = asarray(a)
        if bool_via_int and get_aval(a).dtype == np.bool_:
            b = cast(cast(asarray(b), np.bool_), np.int32)
            updated = getattr(cast(a, np.int32).at[indices], method)(b)
            return cast(updated, np.bool_)
        return getattr(a.at[indices], method)(b)

    return at


def _at_extremum(func, method: str):
    """``.at[indices].max(b)`` (or ``min``) in the promoted dtype, as JAX's ``maximum.at``
    answers: a repeated index keeps the extreme of all its values, as the one-by-one
    updates would."""

    def at(a, indices, b):
        dtype = _result_dtype(func, a, b)
        return getattr(cast(asarray(a), dtype).at[indices], method)(cast(asarray(b), dtype))

    return at


def _binary(func, identity, associative=False, **methods):
    # The call goes to the function under elementwise's argument checks: ufunc.__call__
    # makes the same checks, so a plain call costs no more than before ufunc objects.
    call = func.__wrapped__
    made = ufunc(func, 2, 1, name=func.__name__, identity=identity, call=call, **methods)
    made.__doc__ = func.__doc__ or (
        f"NumPy's ``{func.__name__}`` of two broadcast operands, with the ufunc methods "
        f"(``reduce``, ``accumulate``, ``at``, ``reduceat``, ``outer``)."
    )
    made._associative = associative
    return made


add = _binary(
    elementwise.add,
    0,
    reduce=_reduce_sum,
    accumulate=lambda a, *, axis, dtype: cumsum(a, axis, dtype),
    at=_at_update("add", bool_via_int=True),
    associative=True,
)
multiply = _binary(
    elementwise.multiply,
    1,
    reduce=_reduce_prod,
    accumulate=lambda a, *, axis, dtype: cumprod(a, axis, dtype),
    at=_at_update("multiply", bool_via_int=True),
    associative=True,
)
subtract = _binary(elementwise.subtract, None, at=_at_update("subtract"))
maximum = _binary(
    elementwise.maximum,
    None,
    reduce=_reduce_extremum(reductions.max),
    accumulate=_accumulate_cumulative(cummax),
    at=_at_extremum(elementwise.maximum, "max"),
    associative=True,
)
minimum = _binary(
    elementwise.minimum,
    None,
    reduce=_reduce_extremum(reductions.min),
    accumulate=_accumulate_cumulative(cummin),
    at=_at_extremum(elementwise.minimum, "min"),
    associative=True,
)
logical_and = _binary(
    elementwise.logical_and,
    True,
    reduce=_reduce_logical(reductions.all, elementwise.logical_and),
    associative=True,
)
logical_or = _binary(
    elementwise.logical_or,
    False,
    reduce=_reduce_logical(reductions.any, elementwise.logical_or),
    associative=True,
)
logical_xor = _binary(elementwise.logical_xor, False, associative=True)
bitwise_and = _binary(elementwise.bitwise_and, -1, associative=True)
bitwise_or = _binary(elementwise.bitwise_or, 0, associative=True)
bitwise_xor = _binary(elementwise.bitwise_xor, 0, associative=True)
logaddexp = _binary(elementwise.logaddexp, -np.inf, associative=True)
logaddexp2 = _binary(float_functions.logaddexp2, -np.inf, associative=True)
negative = ufunc(elementwise.negative, 1, 1, name="negative", call=elementwise.negative.__wrapped__)
negative.__doc__ = "NumPy's ``negative``: ``-x`` elementwise, as a ufunc (with ``at``)."
