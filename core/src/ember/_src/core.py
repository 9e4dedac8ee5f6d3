"""Abstract values, primitives, traces and tracers.

ember uses a *current trace* rather than a stack of trace levels: ``Primitive.bind`` hands the
operation to whichever trace is current. A transformation (jvp, vmap, staging) installs its
own trace as current while the user's function runs; its rules then bind their own operations
on the trace that was current before it (its ``parent``). Values that belong to some other
trace are constants to it. The bottom trace, ``EvalTrace``, runs each primitive eagerly on a
backend.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ember._src import dtypes, errors

# --------------------------------------------------------------------------------------------
# Abstract values

_KEEP: Any = object()  # ShapedArray.update: this field as it is
NO_AXES: frozenset = frozenset()  # the varying manual axes of a value the same everywhere


class ManualAxisType(NamedTuple):
    """How a value relates to the manual mesh axes of the shard_map body it is in: the axes
    it may vary over (ember has no reduced or unreduced values: those stay empty)."""

    varying: frozenset
    unreduced: frozenset = NO_AXES
    reduced: frozenset = NO_AXES


class ShapedArray:
    """The abstract value of an array: its shape, dtype, whether its dtype is weak, and its
    typed sharding.

    ``typed_sharding`` is how the array is split over the *Explicit* axes of a mesh (a
    ``NamedSharding`` over an ``AbstractMesh`` whose spec names only Explicit axes), or None
    when no dimension is split over one: the common case, which costs nothing. Auto axes are
    the partitioner's business and never appear in a type. ``sharding`` is what JAX users
    read (``typeof(x).sharding``): the typed sharding, or an unsplit one.

    ``vma`` ("varying manual axes") is the set of a shard_map's mesh axes along which the
    value may differ from device to device, inside a body traced with ``check_vma=True``;
    empty everywhere else. A non-empty set prints after the shape: ``f32[4]{V:i}``.
    """

    __slots__ = ("shape", "dtype", "weak_type", "typed_sharding", "vma", "_hash")
    array_abstraction_level: ClassVar[int] = 1

    def __init__(
        self,
        shape: Sequence[int],
        dtype: Any,
        weak_type: bool = False,
        sharding: Any = None,
        vma: frozenset = NO_AXES,
    ):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.typed_sharding = sharding
        self.vma = vma if type(vma) is frozenset else frozenset(vma)
        self._hash = hash((self.shape, self.dtype, self.weak_type, sharding, self.vma))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: _prod(self.shape))

    @property
    def manual_axis_type(self) -> ManualAxisType:
        """JAX's spelling of ``vma``: ``typeof(x).manual_axis_type.varying``."""
        return ManualAxisType(self.vma)

    mat = manual_axis_type

    @property
    def sharding(self) -> Any:
        typed = self.typed_sharding
        return typed if typed is not None else _unsplit_sharding(len(self.shape))

    def update(
        self, shape=None, dtype=None, weak_type=None, sharding=_KEEP, vma=None
    ) -> ShapedArray:
        """A copy with the given fields replaced. The typed sharding is kept unless replaced,
        or dropped when the rank changes (its spec would no longer fit); ``vma`` is kept
        unless replaced."""
        if sharding is _KEEP:
            sharding = self.typed_sharding
            if shape is not None and len(shape) != len(self.shape):
                sharding = None
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            sharding,
            self.vma if vma is None else frozenset(vma),
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
            and self.typed_sharding == other.typed_sharding
            and self.vma == other.vma
        )

    def __hash__(self) -> int:
        return self._hash

    def str_short(self, short_dtypes: bool = True) -> str:
        typed = self.typed_sharding
        if typed is None:
            dims = ",".join(map(str, self.shape))
        else:  # f32[8@X,4]: dimension 0 split over mesh axis X
            dims = ",".join(
                str(size) + _axes_text(typed.spec[d] if d < len(typed.spec) else None)
                for d, size in enumerate(self.shape)
            )
        name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
        return f"{name}[{dims}]" + (vma_text(self.vma) if self.vma else "")

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

    def __str__(self) -> str:  # as JAX prints typeof(x): float32[8@X,4], ~float32[] if weak
        return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)

    def same_type(self, other: ShapedArray) -> bool:
        """Equal shapes and dtypes (weak types and shardings may differ)."""
        return self.shape == other.shape and self.dtype == other.dtype


def vma_text(vma: frozenset) -> str:
    """How JAX prints varying manual axes after a type: ``{V:i}``, ``{V:(i,j)}`` (in the
    order the mesh names them)."""
    names = [str(n) for n in ordered_axes(vma)]
    return "{V:" + (names[0] if len(names) == 1 else "(" + ",".join(names) + ")") + "}"


def ordered_axes(names: Any) -> tuple:
    """``names`` in the order their mesh (the innermost binding of each) lists them."""
    return tuple(sorted(names, key=lambda n: (_axis_rank.get(n, len(_axis_rank)), str(n))))


def _axes_text(entry: Any) -> str:
    if entry is None:
        return ""
    if isinstance(entry, str):
        return f"@{entry}"
    return "@(" + ",".join(entry) + ")"


def _no_unsplit_sharding(ndim: int) -> Any:
    return None


_unsplit_sharding: Callable[[int], Any] = _no_unsplit_sharding


def set_unsplit_sharding(factory: Callable[[int], Any]) -> None:
    """Install the function giving the ``sharding`` of an aval split over no Explicit axis
    (a ``NamedSharding`` over the abstract mesh in scope): set once by
    ``ember._src.assembly``, since shardings are defined above this layer."""
    global _unsplit_sharding
    _unsplit_sharding = factory


def _prod(values: Sequence[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def raise_to_shaped(aval: ShapedArray) -> ShapedArray:
    return aval


# Abstract values of host data, memoised: eager operations ask for them on every call.
_host_avals: dict[tuple, ShapedArray] = {}


def _aval_of_numpy(x: np.ndarray | np.generic) -> ShapedArray:
    key = (x.shape, x.dtype, dtypes.x64_enabled())
    aval = _host_avals.get(key)
    if aval is None:
        dtypes.check_supported(x.dtype, "NumPy arrays of dtype {dtype}")
        aval = ShapedArray(x.shape, dtypes.canonicalize(x.dtype))
        if len(_host_avals) < 4096:
            _host_avals[key] = aval
    return aval


def _aval_of_python_scalar(x: Any) -> ShapedArray:
    key = (type(x), dtypes.x64_enabled())
    aval = _host_avals.get(key)
    if aval is None:
        aval = _host_avals[key] = ShapedArray(
            (), dtypes.python_scalar_dtype(x), type(x) is not bool
        )
    return aval


_aval_getters: dict[type, Callable[[Any], ShapedArray]] = {
    np.ndarray: _aval_of_numpy,
    bool: _aval_of_python_scalar,
    int: _aval_of_python_scalar,
    float: _aval_of_python_scalar,
    complex: _aval_of_python_scalar,
}
for _t in np.ScalarType:
    if isinstance(_t, type) and issubclass(_t, np.generic):
        _aval_getters[_t] = _aval_of_numpy
# Scalars of dtypes NumPy does not list (ml_dtypes' bfloat16 and friends), found by isinstance.
_aval_getters[np.generic] = _aval_of_numpy


def register_aval_getter(cls: type, getter: Callable[[Any], ShapedArray]) -> None:
    """Teach ember the abstract value of a new array-like type (ember.Array registers here)."""
    _aval_getters[cls] = getter


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of any array-like: a tracer, an ember.Array, NumPy data, a scalar."""
    if isinstance(x, Tracer):
        return x.aval
    getter = _aval_getters.get(type(x))
    if getter is not None:
        return getter(x)
    for cls, getter in _aval_getters.items():
        if isinstance(x, cls):
            return getter(x)
    raise errors.EmberTypeError(
        f"value of type {type(x).__name__} is not a valid ember type: expected an array, "
        f"a NumPy array or a Python scalar{errors.where()}"
    )


def is_arraylike(x: Any) -> bool:
    return (
        isinstance(x, Tracer)
        or type(x) in _aval_getters
        or any(isinstance(x, cls) for cls in _aval_getters)
    )


# --------------------------------------------------------------------------------------------
# Primitives


class Effect:
    """A side effect an equation has besides computing its results (calling back into Python).

    Equations with effects are never dropped as dead code, and a program's *ordered* effects
    happen in program order, also from one call of a compiled program to the next (the
    lowering threads a token per ordered effect through them). One instance per kind.
    """

    __slots__ = ("name", "ordered")

    def __init__(self, name: str, *, ordered: bool):
        self.name = name
        self.ordered = ordered

    def __repr__(self) -> str:
        return self.name


NO_EFFECTS: frozenset[Effect] = frozenset()


class Primitive:
    """A named operation. Its rules (abstract evaluation, differentiation, batching, lowering,
    reference evaluation) are registered beside it through ``ember._src.rules``.

    ``effects``: for a primitive with side effects, the function from an equation's parameters
    to its effects (a frozenset of ``Effect``); None for pure primitives.

    ``own_vma``: the primitive types its results' varying manual axes itself (collectives,
    and the primitives that run a jaxpr, typed by it). Any other primitive follows the
    standard rule: inside a shard_map body checking them, ``bind`` first casts the operands
    that vary over fewer axes to vary over all of them (``pvary``), and results vary over
    the operands' axes."""

    __slots__ = ("name", "multiple_results", "effects", "own_vma", "__weakref__")

    def __init__(
        self,
        name: str,
        *,
        multiple_results: bool = False,
        effects: Callable[..., frozenset[Effect]] | None = None,
        own_vma: bool = False,
    ):
        self.name = name
        self.multiple_results = multiple_results
        self.effects = effects
        self.own_vma = own_vma

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        context = _context
        if context.vma_axes and not self.own_vma and len(args) > 1:
            args = _vary_alike(args)
        return context.trace.process_primitive(self, args, params)


def _vma_of(x: Any) -> frozenset:
    # Values from outside the shard_map body (host data, outer tracers) are the same on
    # every device.
    return getattr(x.aval, "vma", NO_AXES) if isinstance(x, Tracer) else NO_AXES


def _vary_alike(args: Sequence[Any]) -> Sequence[Any]:
    """``args`` with those varying over fewer manual axes than the others pvaried to vary
    over all of them (JAX inserts the same casts): a real equation, so that transposition
    turns it into the psum that sums the cotangent's device-varying parts."""
    vmas = [_vma_of(x) for x in args]
    union = frozenset().union(*vmas)
    if all(v == union for v in vmas):
        return args
    return [
        x if v == union else _bind_pvary(x, ordered_axes(union - v)) for x, v in zip(args, vmas)
    ]


def _no_pvary(x: Any, axes: tuple) -> Any:
    raise errors.BackendError("ember's runtime is not initialised; import ember first")


_bind_pvary: Callable[[Any, tuple], Any] = _no_pvary


def set_pvary(binder: Callable[[Any, tuple], Any]) -> None:
    """Install the function binding ``pvary`` (defined with the collectives, above this
    layer): set once when they are imported."""
    global _bind_pvary
    _bind_pvary = binder


# --------------------------------------------------------------------------------------------
# Traces and tracers


class Trace:
    """Interprets primitives applied to its own tracers."""

    __slots__ = ("parent", "__weakref__")

    def __init__(self, parent: Trace | None):
        self.parent = parent

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        raise NotImplementedError(f"{type(self).__name__} cannot interpret primitives")

    def owns(self, x: Any) -> bool:
        return isinstance(x, Tracer) and x._trace is self

    def __repr__(self) -> str:
        return f"{type(self).__name__}"

    def describe(self) -> str:
        """What the user wrote that created this trace, in their words (for error messages)."""
        return "a transformation"


class EvalTrace(Trace):
    """The bottom trace: runs each primitive eagerly on the default backend."""

    __slots__ = ()

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        for x in args:
            if isinstance(x, Tracer):
                raise _leaked_tracer_error(x, primitive)
        context = _context
        if not context.fold_constants:
            return _eager_dispatcher(primitive, args, params)
        # Running a primitive traces and compiles its program: nothing folds in there.
        context.fold_constants = False
        try:
            return _eager_dispatcher(primitive, args, params)
        finally:
            context.fold_constants = True


def _leaked_tracer_error(tracer: Tracer, primitive: Primitive) -> errors.UnexpectedTracerError:
    return errors.UnexpectedTracerError(
        f"{primitive.name} was applied to a tracer ({tracer.aval.str_short()}) that escaped the "
        f"transformation which created it ({tracer._trace.describe()}). A value computed inside "
        f"jit/grad/vmap was stored somewhere (a global, an attribute, a closure) and used after "
        f"the transformation returned; return it from the function instead{errors.where()}"
    )


def _no_dispatcher(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    raise errors.BackendError("ember's runtime is not initialised; import ember first")


_eager_dispatcher: Callable[[Primitive, Sequence[Any], dict], Any] = _no_dispatcher


def set_eager_dispatcher(dispatcher: Callable[[Primitive, Sequence[Any], dict], Any]) -> None:
    """Install the function that runs a primitive eagerly: execution's ``apply_primitive``,
    set once by ``ember._src.assembly`` (core sits below execution and cannot import it)."""
    global _eager_dispatcher
    _eager_dispatcher = dispatcher


class _TraceContext(threading.local):
    def __init__(self) -> None:
        self.trace: Trace = EvalTrace(None)
        # Named axes in scope (vmap's axis_name, later shard_map's mesh axes): (name, size).
        self.axis_env: list[tuple[Any, int]] = []
        # The manual mesh axes whose variation values' types track (inside a shard_map body
        # traced with check_vma=True); empty elsewhere, where binding costs nothing more.
        self.vma_axes: frozenset = NO_AXES
        # Inside ``ensure_compile_time_eval``: staging runs an operation on values that are
        # not tracers eagerly instead of recording it.
        self.fold_constants = False


_context = _TraceContext()
_EVAL_TRACE = EvalTrace(None)


def current_trace() -> Trace:
    return _context.trace


class set_current_trace:  # noqa: N801 - used like a function: `with set_current_trace(t):`
    """``with set_current_trace(trace):`` makes ``trace`` current for the block."""

    __slots__ = ("trace", "previous")

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> Trace:
        self.previous = _context.trace
        _context.trace = self.trace
        return self.trace

    def __exit__(self, *exc: Any) -> None:
        _context.trace = self.previous


def eval_trace_is_current() -> bool:
    return isinstance(_context.trace, EvalTrace)


class ensure_compile_time_eval:  # noqa: N801 - a context manager, named as JAX's
    """``with ensure_compile_time_eval():`` runs, while tracing (under ``jit``, ``scan``,
    ``make_jaxpr``...), every operation whose operands are all known values (no tracers)
    right away, as JAX's: its result is a concrete array that Python control flow can use,
    and the traced program holds it as a constant. Operations on traced values are traced
    as usual. Outside any trace it changes nothing."""

    __slots__ = ("previous",)

    def __enter__(self) -> None:
        self.previous = _context.fold_constants
        _context.fold_constants = True

    def __exit__(self, *exc: Any) -> None:
        _context.fold_constants = self.previous


def folding_constants() -> bool:
    """Whether ``ensure_compile_time_eval`` is in effect (for the staging trace)."""
    return _context.fold_constants


def evaluate_eagerly(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    """``primitive`` run now on the concrete ``args``, whatever trace is current."""
    return _EVAL_TRACE.process_primitive(primitive, args, params)


# --------------------------------------------------------------------------------------------
# Named axes


# Each axis name's position in the axis environment when last bound: a mesh's axes are bound
# in the mesh's order, which is the order JAX prints varying axes in (also after tracing).
_axis_rank: dict[Any, int] = {}


class extend_axis_env:  # noqa: N801 - used like a function: `with extend_axis_env(name, size):`
    """``with extend_axis_env(name, size):`` puts a named axis in scope for collectives."""

    __slots__ = ("frame",)

    def __init__(self, name: Any, size: int):
        self.frame = (name, size)

    def __enter__(self) -> None:
        _axis_rank[self.frame[0]] = len(_context.axis_env)
        _context.axis_env.append(self.frame)

    def __exit__(self, *exc: Any) -> None:
        _context.axis_env.pop()


class checking_vma:  # noqa: N801 - used like a function: `with checking_vma(axes):`
    """``with checking_vma(axes):`` types values inside a shard_map body by the manual axes
    ``axes`` they vary over (empty: they are not typed so, as with ``check_vma=False``)."""

    __slots__ = ("axes", "previous")

    def __init__(self, axes: Any):
        self.axes = frozenset(axes)

    def __enter__(self) -> None:
        self.previous = _context.vma_axes
        _context.vma_axes = self.axes

    def __exit__(self, *exc: Any) -> None:
        _context.vma_axes = self.previous


def vma_axes() -> frozenset:
    """The manual axes values' types track here (see ``checking_vma``)."""
    return _context.vma_axes


def axis_size(name: Any) -> int:
    """The size of the named axis ``name`` in scope (innermost binding wins)."""
    for bound, size in reversed(_context.axis_env):
        if bound == name:
            return size
    in_scope = ", ".join(repr(n) for n, _ in _context.axis_env) or "none"
    raise errors.UnboundAxisError(
        f"unbound axis name: {name!r}; collectives need an enclosing vmap(axis_name=...) or "
        f"shard_map naming it (axis names in scope: {in_scope}){errors.where()}"
    )


class Tracer:
    """A value flowing through a trace. Operators are installed by ember's array API layer."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __bool__(self) -> bool:
        raise errors.TracerBoolConversionError(_concretization_message(self, "bool", "if/while"))

    def __int__(self) -> int:
        raise errors.TracerIntegerConversionError(_concretization_message(self, "int", "int()"))

    def __index__(self) -> int:
        raise errors.TracerIntegerConversionError(
            _concretization_message(self, "int", "an index or a shape")
        )

    def __float__(self) -> float:
        raise errors.ConcretizationTypeError(_concretization_message(self, "float", "float()"))

    def __complex__(self) -> complex:
        raise errors.ConcretizationTypeError(_concretization_message(self, "complex", "complex()"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise errors.TracerArrayConversionError(
            f"a traced array {self.aval.str_short()} was converted to a NumPy array. Inside "
            f"jit/grad/vmap use ember.numpy functions instead of NumPy's; for a debugging "
            f"printout use ember.debug.print{errors.where()}"
        )

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self) -> str:
        return f"Traced<{self.aval.str_short()}>with<{self._trace!r}>"

    def item(self) -> Any:
        raise errors.ConcretizationTypeError(
            _concretization_message(self, "Python scalar", "item()")
        )

    def tolist(self) -> Any:
        raise errors.ConcretizationTypeError(_concretization_message(self, "list", "tolist()"))


def _concretization_message(tracer: Tracer, wanted: str, context: str) -> str:
    return (
        f"a traced array {tracer.aval.str_short()} was used where a concrete {wanted} is needed "
        f"({context}) inside {tracer._trace.describe()}, where its value is not known. Use "
        f"ember.numpy.where or ember.lax.cond/while_loop for value-dependent control flow, or "
        f"mark the argument static (jit's static_argnums){errors.where()}"
    )


# --------------------------------------------------------------------------------------------
# Symbolic zeros (tangents and cotangents known to be zero cost nothing)


class Zero:
    """A symbolic zero of the given abstract value."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The type of tangents of ``aval``: itself for inexact dtypes, float0 otherwise."""
    if dtypes.is_inexact(aval.dtype):
        return aval.update(weak_type=False) if aval.weak_type else aval
    return ShapedArray(aval.shape, dtypes.float0, vma=aval.vma)


# --------------------------------------------------------------------------------------------
# Small shared helpers

_counter = itertools.count()


def fresh_id() -> int:
    return next(_counter)


def concrete_or_error(value: Any, context: str) -> Any:
    """``value`` as a Python/NumPy value; a tracer raises a ConcretizationTypeError."""
    if isinstance(value, Tracer):
        raise errors.ConcretizationTypeError(_concretization_message(value, "value", context))
    return value


def canonicalize_shape(shape: Any, context: str = "shape") -> tuple[int, ...]:
    """A shape argument as a tuple of non-negative ints, with clear errors for tracers."""
    if isinstance(shape, (int, np.integer)) or isinstance(shape, Tracer) and not shape.aval.shape:
        shape = (shape,)
    try:
        # operator.index on a tracer raises TracerIntegerConversionError, naming the problem.
        dims = tuple(operator.index(d) for d in shape)
    except TypeError as err:
        if isinstance(err, errors.ConcretizationTypeError):
            raise
        raise errors.EmberTypeError(
            f"{context} must be a sequence of integers, got {shape!r}{errors.where()}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{context} must have non-negative dimensions, got {dims}{errors.where()}")
    check_size(dims, None, context)
    return dims


# The byte size of an array must fit XLA's 64-bit sizes; past it XLA aborts the interpreter.
MAX_ARRAY_BYTES = 2**63 - 1


def check_size(shape: Sequence[int], dtype: Any = None, context: str = "shape") -> None:
    """Refuse a shape whose element count (or, given a dtype, byte size) no 64-bit size can
    hold: the backend would abort the process rather than raise."""
    itemsize = 1 if dtype is None else np.dtype(dtype).itemsize
    if _prod(shape) * itemsize > MAX_ARRAY_BYTES:
        what = "elements" if dtype is None else f"bytes of {np.dtype(dtype)}"
        raise ValueError(
            f"{context} {tuple(shape)} is too big: it has more {what} than a 64-bit size can "
            f"count (arrays are limited to {MAX_ARRAY_BYTES} bytes){errors.where()}"
        )
