"""Shape polymorphism for export: dimensions named by symbols (``symbolic_shape("b, 4")``) and
expressions of them (``2*b``, ``784*b``, ``b*t``).

ember's abstract values have integer shapes, so a polymorphic export is made from ordinary
traces: the function is traced three times, each symbol standing for a different prime
("sentinel") in each trace. The traces must be one program up to those sizes: every dimension
a constant or an expression of the symbols (``dim_expr.fit``: ``k*m + c``, ``m`` a symbol or a
product of two, found from two traces and confirmed by the third), and every scalar constant
that differs between them the value of such an expression or its reciprocal (``mean`` divides
by ``b``; ``x.shape[0] * 2`` is ``2*b``). Anything else is refused with ``ExportError`` naming
the operation and its line. What the comparison found (``Found``) lets ``poly_lowering``
generalise the first trace's lowering; ``bind_dims`` checks a call's argument shapes against
the symbolic ones, naming the constraint that failed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import ShapedArray
from ember._src.export import dim_expr
from ember._src.export.dim_expr import DimExpr, SymbolicDim
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Literal
from ember._src.lowering.mlir import element_type
from ember._src.transforms.staging import ShapeDtypeStruct

# The sizes symbolic dimensions stand for in the three traces: primes, unlikely to be real sizes.
_SENTINELS = (
    (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049),
    (1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097),
    (1103, 1109, 1117, 1123, 1129, 1151, 1153, 1163),
)


def symbolic_shape(spec: str) -> tuple[int | DimExpr, ...]:
    """``"b, 2*b, 4"`` -> ``(b, 2*b, 4)``: each comma-separated dimension an integer, a name
    or an expression of names (sums of products with integer coefficients)."""
    if not isinstance(spec, str):
        raise TypeError(f"symbolic_shape expects a string such as 'b, 4', got {spec!r}")
    text = spec.strip().strip("()").strip()
    if not text:
        return ()
    dims: list[int | DimExpr] = []
    for token in (t.strip() for t in text.split(",")):
        try:
            dim = dim_expr.parse(token)
        except ValueError:
            raise ValueError(
                f"symbolic_shape({spec!r}): {token!r} is not a dimension: ember's symbolic "
                f"dimensions are integers, names and expressions such as 2*b + 1"
            ) from None
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"symbolic_shape({spec!r}): dimension {token!r} is negative")
        dims.append(dim)
    return tuple(dims)


def is_symbolic(shape: Sequence[Any]) -> bool:
    return any(isinstance(d, DimExpr) for d in shape)


def dim_names(shapes: Sequence[Sequence[Any]]) -> list[str]:
    """The symbols of ``shapes``, in order of first appearance."""
    names: list[str] = []
    for shape in shapes:
        for d in shape:
            if isinstance(d, DimExpr):
                names += [n for n in d.symbols() if n not in names]
    return names


def sentinels(names: Sequence[str]) -> list[dict[str, int]]:
    """The sizes the symbols stand for in each of the three traces."""
    if len(names) > len(_SENTINELS[0]):
        raise errors.ExportError(
            f"ember exports at most {len(_SENTINELS[0])} symbolic dimensions, got {len(names)}"
        )
    return [{n: primes[i] for i, n in enumerate(names)} for primes in _SENTINELS]


def specialize(leaf: Any, sizes: dict[str, int]) -> Any:
    """A ShapeDtypeStruct with symbolic dimensions, with ``sizes`` in their place."""
    if isinstance(leaf, ShapeDtypeStruct) and is_symbolic(leaf.shape):
        shape = [dim_expr.evaluate(d, sizes) for d in leaf.shape]
        return ShapeDtypeStruct(shape, leaf.dtype, leaf.weak_type)
    return leaf


# -- the traces must agree ---------------------------------------------------------------------


class SymbolValue:
    """A scalar constant of the program that is the value of a dimension expression (or its
    reciprocal), in the constant's dtype."""

    def __init__(self, expr: DimExpr, reciprocal: bool, dtype: np.dtype):
        self.expr = expr
        self.reciprocal = reciprocal
        self.dtype = dtype

    def __str__(self) -> str:
        return f"1/({self.expr})" if self.reciprocal else str(self.expr)


class Found:
    """What comparing the traces found, for generalising the first one's lowering: the
    expression each symbolic size of the first trace stands for, and the scalar constants
    that are values of expressions, keyed by (MLIR element type, bytes of the first value)."""

    def __init__(self, sizes: dict[str, int]):
        self.expr_of_size: dict[int, DimExpr] = {v: SymbolicDim(n) for n, v in sizes.items()}
        self.values: dict[tuple[str, bytes], SymbolValue] = {}


class _Comparison:
    """Walks the traces side by side, naming each dimension (constant or expression)."""

    def __init__(self, sizes: Sequence[dict[str, int]]):
        self.sizes = sizes
        self.found = Found(sizes[0])
        self.constants: dict[int, str] = {}  # constant dimensions, and where one was seen
        self.constant_values: set[tuple[str, bytes]] = set()

    def dim(self, ds: Sequence[int], what: str) -> int | DimExpr:
        if all(d == ds[0] for d in ds):
            self.constants.setdefault(ds[0], what)
            return ds[0]
        expr = dim_expr.fit(ds, self.sizes)
        if expr is None:
            raise errors.ExportError(
                f"shape polymorphism: {what} has a dimension that is no expression k*b + c of "
                f"the symbolic dimensions (sizes {list(ds)} in traces where they are "
                f"{[list(s.values()) for s in self.sizes]}); see docs/export.md"
            )
        known = self.found.expr_of_size.setdefault(ds[0], expr)
        if known != expr:
            raise errors.ExportError(
                f"shape polymorphism: {what}: the dimensions {known} and {expr} cannot be told "
                f"apart in ember's traces; use other sizes"
            )
        return expr

    def shape(self, shapes: Sequence[tuple], what: str) -> tuple:
        if any(len(s) != len(shapes[0]) for s in shapes):
            raise errors.ExportError(
                f"shape polymorphism: {what} has a rank that depends on the symbolic dimensions"
            )
        return tuple(self.dim(ds, what) for ds in zip(*shapes))

    def value(self, vs: Sequence[Any], what: str) -> Any:
        """A normal form of a parameter, the same for all traces or an error."""
        first = vs[0]
        if all(isinstance(v, ClosedJaxpr) for v in vs):
            self.jaxpr([v.jaxpr for v in vs], what)
            self.consts([v.consts for v in vs], what)
            return "jaxpr"
        if all(isinstance(v, Jaxpr) for v in vs):
            self.jaxpr(vs, what)
            return "jaxpr"
        if all(isinstance(v, ShapedArray) for v in vs):
            return (self.shape([v.shape for v in vs], what), first.dtype)
        if all(isinstance(v, (tuple, list)) and len(v) == len(first) for v in vs):
            if all(type(x) is int for v in vs for x in v):
                return self.shape([tuple(v) for v in vs], what)
            return tuple(self.value(xs, what) for xs in zip(*vs))
        if all(isinstance(v, np.ndarray) for v in vs):
            self.array(vs, what)
            return "array"
        if all(callable(v) and not isinstance(v, type) for v in vs):
            # A custom rule (a custom_jvp's jvp, a thunk) is a Python function each trace makes
            # anew; the lowering does not read it, only the jaxprs compared here.
            return "function"
        if all(type(v) is int for v in vs) and any(v != first for v in vs):
            return self.dim(vs, what)
        try:
            same = all(bool(v == first) for v in vs)
        except Exception:  # parameters without a usable ==: compare them by identity
            same = all(v is first for v in vs)
        if not same:
            raise self._uses_value(what)
        return "same"

    def array(self, vs: Sequence[np.ndarray], what: str) -> None:
        first = vs[0]
        if any(v.shape != first.shape for v in vs):
            raise errors.ExportError(
                f"shape polymorphism: {what} holds a constant array whose shape depends on "
                f"a symbolic dimension ({first.shape}); build it inside the function instead"
            )
        key = (element_type(first.dtype), first.tobytes())
        if all(np.array_equal(v, first) for v in vs):
            if first.ndim == 0:
                self.constant_values.add(key)
            return
        if first.ndim != 0:
            raise self._uses_value(what)
        found = self._symbol_value(vs)
        if found is None:
            raise self._uses_value(what)
        known = self.found.values.setdefault(key, found)
        if str(known) != str(found):
            raise self._uses_value(what)

    def _symbol_value(self, vs: Sequence[np.ndarray]) -> SymbolValue | None:
        """The expression (or reciprocal) that the scalar ``vs`` is the value of, cast to its
        dtype, in every trace; None if there is none."""
        dtype = vs[0].dtype
        if dtype.kind not in "iuf":
            return None
        numbers = [float(v) for v in vs]
        candidates = []
        if all(n.is_integer() for n in numbers):
            candidates.append(([int(n) for n in numbers], False))
        if dtype.kind == "f" and all(n > 0 for n in numbers):
            candidates.append(([round(1 / n) for n in numbers], True))
        for ints, reciprocal in candidates:
            expr = dim_expr.fit(ints, self.sizes)
            if expr is None:
                continue
            at = [expr.evaluate(s) for s in self.sizes]
            if reciprocal:
                expected = [np.asarray(1 / x).astype(dtype) for x in at]
            else:
                expected = [np.asarray(x).astype(dtype) for x in at]
            if all(np.array_equal(e, v) for e, v in zip(expected, vs)):
                return SymbolValue(expr, reciprocal, dtype)
        return None

    def _uses_value(self, what: str) -> errors.ExportError:
        return errors.ExportError(
            f"shape polymorphism: {what} depends on the symbolic dimensions in a way ember "
            f"cannot export (it exports constants that are k*b + c or 1/(k*b + c); see "
            f"docs/export.md)"
        )

    def consts(self, cs: Sequence[Sequence[Any]], what: str) -> None:
        for xs in zip(*cs):
            self.array([np.asarray(x) for x in xs], what)

    def jaxpr(self, js: Sequence[Jaxpr], what: str) -> None:
        first = js[0]
        if any(len(j.invars) != len(first.invars) for j in js):
            raise self._differ(js, what)
        for eqns in itertools.zip_longest(*(j.eqns for j in js)):
            e0 = eqns[0]
            if e0 is None or any(
                e is None or e.primitive is not e0.primitive or e.params.keys() != e0.params.keys()
                for e in eqns
            ):
                raise self._differ(js, what, eqns)
            at = f" at {e0.source_info}" if e0.source_info else ""
            name = f"{e0.primitive.name} in {what}{at}"
            for key in e0.params:
                self.value([e.params[key] for e in eqns], f"{name} (parameter {key})")
            for vs in zip(*(e.invars for e in eqns)):
                if type(vs[0]) is Literal:
                    self.array([np.asarray(v.val) for v in vs], name)
            for vs in zip(*(e.outvars for e in eqns)):
                self.shape([v.aval.shape for v in vs], name)
            self._expansions(eqns, name)

    def _expansions(self, eqns: Sequence[Any], name: str) -> None:
        """A primitive lowered as an expression of others (``rules.expansion``) is exported
        as that expression, whose structure may depend on the sizes (an associative scan
        of log2(n) rounds): compare its traces too."""
        expression = rules.expansion(eqns[0].primitive)
        if expression is None:
            return
        expanded = [
            trace_to_jaxpr(
                lambda *xs, e=e: _as_list(expression(*xs, **e.params)),
                [v.aval for v in e.invars],
            )
            for e in eqns
        ]
        self.consts([c.consts for c in expanded], name)
        self.jaxpr([c.jaxpr for c in expanded], name)

    def _differ(self, js: Sequence[Jaxpr], what: str, eqns: Sequence[Any] = ()) -> Exception:
        """The traces are of different programs: name the first operations that differ."""
        present = [e for e in eqns if e is not None]
        ops = " or ".join(dict.fromkeys(e.primitive.name for e in present))
        at = next((f" at {e.source_info}" for e in present if e.source_info), "")
        return errors.ExportError(
            f"shape polymorphism: {what} traces to different programs for different values of "
            f"its symbolic dimensions{f' ({ops}{at})' if ops else ''}: its structure depends on "
            f"them (a loop over b, as cumsum makes?); see docs/export.md"
        )

    def check_distinct(self, name: str) -> None:
        """No constant may look like a symbolic size or value in the first trace, whose
        lowering is generalised by recognising those."""
        for size, expr in self.found.expr_of_size.items():
            if size in self.constants:
                raise errors.ExportError(
                    f"shape polymorphism: {self.constants[size]} has a dimension of size "
                    f"{size}, which ember uses to stand for {expr}; use another size"
                )
        for key, value in self.found.values.items():
            if key in self.constant_values:
                raise errors.ExportError(
                    f"shape polymorphism: {name} has a constant equal to the value ember "
                    f"gives {value} while tracing; use another constant"
                )


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare_traces(
    traces: Sequence[ClosedJaxpr], sizes: Sequence[dict[str, int]], name: str
) -> tuple[list[tuple], list[tuple], Found]:
    """The symbolic input and output shapes of the program all traces are of, and what was
    found about it, or an ``ExportError`` saying why they are not of one program."""
    compare = _Comparison(sizes)
    compare.consts([t.consts for t in traces], name)
    compare.jaxpr([t.jaxpr for t in traces], name)
    ins = [
        compare.shape([a.shape for a in avals], f"argument of {name}")
        for avals in zip(*(t.in_avals for t in traces))
    ]
    outs = [
        compare.shape([a.shape for a in avals], f"result of {name}")
        for avals in zip(*(t.out_avals for t in traces))
    ]
    compare.check_distinct(name)
    return ins, outs, compare.found


# -- where each symbol's value is read from ----------------------------------------------------


class Source:
    """A symbol's value read from an argument dimension ``k*symbol + c``."""

    def __init__(self, arg: int, axis: int, k: int, c: int):
        self.arg, self.axis, self.k, self.c = arg, axis, k, c


def symbol_sources(in_shapes: Sequence[Sequence[Any]], name: str) -> dict[str, Source]:
    """For each symbol, the argument dimension it is read from: the first that is the symbol
    alone, else the first that is affine in it (``2*b`` gives ``b = d/2``)."""
    sources: dict[str, Source] = {}
    for wanted in ("symbol", "affine"):
        for i, shape in enumerate(in_shapes):
            for axis, d in enumerate(shape):
                affine = d.affine() if isinstance(d, DimExpr) else None
                if affine is None or affine[0] in sources:
                    continue
                symbol, k, c = affine
                if wanted == "affine" or (k, c) == (1, 0):
                    sources[symbol] = Source(i, axis, k, c)
    missing = [n for n in dim_names(in_shapes) if n not in sources]
    if missing:
        raise errors.ExportError(
            f"shape polymorphism: the symbolic dimension {missing[0]!r} of {name} is no "
            f"dimension k*{missing[0]} + c of an argument, so its value cannot be known"
        )
    return sources


# -- the generalised module --------------------------------------------------------------------


def symbolic_tensor_type(aval: ShapedArray) -> str:
    """``tensor<?x4xf32>`` for an aval of shape ``(b, 4)``."""
    dims = "".join(("?" if isinstance(d, DimExpr) else str(d)) + "x" for d in aval.shape)
    return f"tensor<{dims}{element_type(aval.dtype)}>"


def bind_dims(
    symbolic: Sequence[ShapedArray], actual: Sequence[tuple], names: Sequence[str], fun: str
) -> dict[str, int]:
    """The value of each symbol, from the actual argument shapes; ShapeMismatchError naming the
    argument and the constraint when they disagree with the symbolic shapes."""
    prefix = f"the exported function {fun}"
    for aval, shape, name in zip(symbolic, actual, names):
        if len(shape) != len(aval.shape):
            raise errors.ShapeMismatchError(
                f"argument {name} of {prefix} has shape {shape}, but it was exported for shape "
                f"{_shape_text(aval.shape)}{errors.where()}"
            )
    sources = symbol_sources([a.shape for a in symbolic], fun)
    values: dict[str, int] = {}
    origin: dict[str, str] = {}
    for symbol, source in sources.items():
        got = actual[source.arg][source.axis]
        want = symbolic[source.arg].shape[source.axis]
        name = names[source.arg]
        value, remainder = divmod(got - source.c, source.k)
        if want == SymbolicDim(symbol) and value < 1:
            raise errors.ShapeMismatchError(
                f"argument {name} of {prefix}: symbolic dimension {symbol} (dimension "
                f"{source.axis}) must be >= 1, got {got}{errors.where()}"
            )
        if remainder or value < 1:
            raise errors.ShapeMismatchError(
                f"argument {name} of {prefix}: dimension {source.axis} is {got}, but it must be "
                f"{want} for an integer {symbol} >= 1{errors.where()}"
            )
        values[symbol] = value
        origin[symbol] = name if source.k == 1 and not source.c else f"{name} ({want} is {got})"
    for aval, shape, name in zip(symbolic, actual, names):
        for axis, (want, got) in enumerate(zip(aval.shape, shape)):
            expected = dim_expr.evaluate(want, values)
            if expected == got:
                continue
            if not isinstance(want, DimExpr):
                raise errors.ShapeMismatchError(
                    f"argument {name} of {prefix} has shape {shape}, but it was exported for "
                    f"shape {_shape_text(aval.shape)}{errors.where()}"
                )
            if isinstance(want, SymbolicDim):
                raise errors.ShapeMismatchError(
                    f"argument {name} of {prefix} has shape {shape}: symbolic dimension "
                    f"{want.name} is {got} there but {expected} in {origin[want.name]}"
                    f"{errors.where()}"
                )
            bound = ", ".join(f"{s} = {values[s]} from {origin[s]}" for s in want.symbols())
            raise errors.ShapeMismatchError(
                f"argument {name} of {prefix} has shape {shape}: dimension {axis} must be "
                f"{want} = {expected} ({bound}), but it is {got}{errors.where()}"
            )
    return values


def _shape_text(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def substitute(aval: ShapedArray, values: Mapping[str, int]) -> ShapedArray:
    shape = tuple(dim_expr.evaluate(d, values) for d in aval.shape)
    return ShapedArray(shape, aval.dtype)
