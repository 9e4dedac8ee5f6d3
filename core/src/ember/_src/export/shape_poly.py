"""Shape polymorphism for export: dimensions named by symbols (``symbolic_shape("b, 4")``) and
expressions of them (``2*b``, ``784*b``, ``b*t``).

ember's abstract values have integer shapes, so a polymorphic export is made from ordinary
traces: the function is traced three times, each symbol standing for a different prime
("sentinel") in each trace. The traces must be one program up to those sizes: every dimension
a constant or an expression of the symbols (``dim_expr.fit``: ``k*m + c``, ``m`` a symbol or a
product of two, found from two traces and confirmed by the third), and every scalar constant
that differs between them the value of such an expression or its reciprocal (``mean`` divides
by ``b``; ``x.shape[0] * 2`` is ``2*b``). Anything else is refused with ``ExportError`` naming
the operation and its line.

The first trace is then lowered and its StableHLO text generalised: each dimension that stands
for an expression becomes ``?`` in tensor types; the operations whose result shape cannot be
inferred from their operands (``broadcast_in_dim``, ``reshape``, ``iota``, splat constants)
become their dynamic forms, fed a shape computed from the arguments (``get_dimension_size``,
then ``multiply``/``add`` for expressions); constants that are values of the symbols are
computed the same way; and ``main`` asserts (``custom_call @shape_assertion``, checked when the
caller's module is refined) the constraints of the argument shapes: each symbol at least 1,
each argument dimension equal to its expression. Operations whose attributes hold a symbolic
size (``slice``, ``pad``, ``gather``) are refused. At the call, the caller's module is refined
to static shapes before it is compiled.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.export import dim_expr
from ember._src.export.dim_expr import DimExpr, SymbolicDim
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
        self.sizes = sizes
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


_TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([^<>]*(?:<[^<>]*>)?)>")
_OP = re.compile(r'^(\s*)(%[\w#:]+ = )?"([\w.]+)"\((.*?)\)(.*) : \((.*)\) -> (.*)$')
_MAIN = re.compile(r"^\s*func\.func public @main\(")
_DENSE = re.compile(r"dense<(.*)> : tensor<[^>]*>")
_LOC = re.compile(r'"([^"]+)":(\d+):\d+')
_LOC_SUFFIX = re.compile(r"\s*loc\(.*\)\s*$")
_I32 = "tensor<i32>"


def _code(line: str) -> str:
    """The line without its location, whose line numbers may look like symbolic sizes."""
    return _LOC_SUFFIX.sub("", line)


def _where(line: str) -> str:
    """`` at file:line``, from the location the lowering gave the operation."""
    match = _LOC.search(line)
    return f" at {match.group(1)}:{match.group(2)}" if match else ""


def _constant_bytes(body: str, element: str, dtype: np.dtype | None) -> bytes | None:
    """The bytes of one element of a ``dense<...>`` body, if it holds one repeated value."""
    if body.startswith('"0x'):
        return bytes.fromhex(body[3:-1])
    if dtype is None or body.startswith("["):
        return None
    try:
        number = body == "true" or (body != "false" and float(body))
        return np.asarray(number).astype(dtype).tobytes()
    except ValueError:
        return None


class Generalizer:
    """Rewrites one lowering's module text (see the module docstring)."""

    def __init__(
        self,
        found: Found,
        in_shapes: Sequence[tuple],
        in_names: Sequence[str],
        name: str,
    ):
        self.found = found
        self.in_shapes = in_shapes
        self.in_names = in_names
        self.name = name
        self.sources = symbol_sources(in_shapes, name)
        self.dtype_of_element = {key[0]: v.dtype for key, v in found.values.items()}
        self.arg_types: list[str] = []  # main's argument types, read by ``rewrite``
        self.prelude: list[str] = []  # shape computations, at the top of main
        self.cache: dict[Any, str] = {}  # computed values: dims, shapes, constants
        self.counter = 0
        self.sentinel = re.compile(
            r"(?<![\w.#%])(" + "|".join(str(s) for s in found.expr_of_size) + r")(?![\w.])"
        )

    def fresh(self) -> str:
        self.counter += 1
        return f"%_poly{self.counter}"

    def emit(self, op: str, operands: Sequence[str], types: str, attrs: str = "") -> str:
        value = self.fresh()
        self.prelude.append(f'    {value} = "{op}"({", ".join(operands)}){attrs} : {types}')
        return value

    def constant(self, value: Any, element: str = "i32") -> str:
        key = ("constant", value, element)
        if key not in self.cache:
            self.cache[key] = self.emit(
                "stablehlo.constant",
                [],
                f"() -> tensor<{element}>",
                f" <{{value = dense<{value}> : tensor<{element}>}}>",
            )
        return self.cache[key]

    def binary(self, op: str, x: str, y: str, element: str = "i32") -> str:
        t = f"tensor<{element}>"
        return self.emit(f"stablehlo.{op}", [x, y], f"({t}, {t}) -> {t}")

    def types(self, text: str) -> str:
        def replace(match: re.Match) -> str:
            dims = match.group(1)
            if not dims:
                return match.group(0)
            parts = dims[:-1].split("x")
            parts = ["?" if p.isdigit() and int(p) in self.found.expr_of_size else p for p in parts]
            return "tensor<" + "".join(p + "x" for p in parts) + match.group(2) + ">"

        return _TENSOR.sub(replace, text)

    def shape_of(self, type_text: str) -> list[Any]:
        """The dimensions of a (first trace's) tensor type: ints and expressions."""
        match = _TENSOR.search(type_text)
        dims = match.group(1)[:-1].split("x") if match and match.group(1) else []
        return [self.found.expr_of_size.get(int(d), int(d)) for d in dims]

    def has_symbol(self, type_text: str) -> bool:
        return any(isinstance(d, DimExpr) for d in self.shape_of(type_text))

    def arg_dim(self, arg: int, axis: int) -> str:
        """The SSA value (tensor<i32>) of dimension ``axis`` of argument ``arg``."""
        key = ("arg", arg, axis)
        if key not in self.cache:
            self.cache[key] = self.emit(
                "stablehlo.get_dimension_size",
                [f"%arg{arg}"],
                f"({self.arg_types[arg]}) -> {_I32}",
                f" <{{dimension = {axis} : i64}}>",
            )
        return self.cache[key]

    def symbol(self, name: str) -> str:
        """The SSA value of a symbol: its source dimension ``d``, or ``(d - c) / k``."""
        key = ("symbol", name)
        if key not in self.cache:
            source = self.sources[name]
            value = self.arg_dim(source.arg, source.axis)
            if source.c:
                value = self.binary("subtract", value, self.constant(source.c))
            if source.k != 1:
                value = self.binary("divide", value, self.constant(source.k))
            self.cache[key] = value
        return self.cache[key]

    def dim(self, expr: DimExpr) -> str:
        """The SSA value (tensor<i32>) of a dimension expression."""
        key = ("dim", expr)
        if key not in self.cache:
            total = None
            for monomial, k in expr.terms:
                term = None
                for name in monomial:
                    factor = self.symbol(name)
                    term = factor if term is None else self.binary("multiply", term, factor)
                if k != 1:
                    term = self.binary("multiply", term, self.constant(k))
                total = term if total is None else self.binary("add", total, term)
            if expr.constant:
                total = self.binary("add", total, self.constant(expr.constant))
            self.cache[key] = total
        return self.cache[key]

    def shape_value(self, dims: Sequence[Any]) -> str:
        """The SSA value (tensor<Nxi32>) of a shape with symbolic dimensions."""
        key = ("shape", tuple(dims))
        if key not in self.cache:
            pieces = []
            for d in dims:
                if isinstance(d, DimExpr):
                    pieces.append(
                        self.emit("stablehlo.reshape", [self.dim(d)], f"({_I32}) -> tensor<1xi32>")
                    )
                else:
                    pieces.append(self.constant(f"[{d}]", "1xi32"))
            types = ", ".join(["tensor<1xi32>"] * len(pieces))
            self.cache[key] = self.emit(
                "stablehlo.concatenate",
                pieces,
                f"({types}) -> tensor<{len(pieces)}xi32>",
                " <{dimension = 0 : i64}>",
            )
        return self.cache[key]

    def symbol_value(self, value: SymbolValue, element: str) -> str:
        """The SSA value (a scalar of ``element``) of a constant that is a symbol's value."""
        key = ("value", str(value), element)
        if key not in self.cache:
            result = self.emit(
                "stablehlo.convert", [self.dim(value.expr)], f"({_I32}) -> tensor<{element}>"
            )
            if value.reciprocal:
                one = self.constant("1.000000e+00", element)
                result = self.binary("divide", one, result, element)
            self.cache[key] = result
        return self.cache[key]

    def recorded_value(self, attrs: str, out_type: str) -> SymbolValue | None:
        """The symbol value a ``stablehlo.constant`` holds, if it holds one."""
        match = _DENSE.search(attrs)
        tensor = _TENSOR.search(out_type)
        if match is None or tensor is None or not self.found.values:
            return None
        element = tensor.group(2)
        data = _constant_bytes(match.group(1), element, self.dtype_of_element.get(element))
        return self.found.values.get((element, data)) if data is not None else None

    def rewrite(self, text: str) -> str:
        lines = text.splitlines()
        main_at = next((i for i, line in enumerate(lines) if _MAIN.match(line)), None)
        if main_at is None:
            raise errors.ExportError(f"internal error: no main in the lowering of {self.name}")
        header = self.types(lines[main_at])
        self.arg_types = [t.strip() for t in re.findall(r"%arg\d+: (tensor<[^>]*>)", header)]
        assertions = self.assertions()
        in_main = True
        body: list[str] = []
        for line in lines[main_at + 1 :]:
            if in_main and line.startswith("  }"):
                in_main = False
            if in_main:
                body.append(self.line(line))
                continue
            match = _OP.match(line)
            uses_value = (
                match is not None
                and match.group(3) == "stablehlo.constant"
                and self.recorded_value(match.group(5), match.group(7)) is not None
            )
            if self.sentinel.search(_code(line)) or uses_value:
                raise errors.ExportError(
                    f"shape polymorphism: {self.name} has a helper function over a symbolic "
                    f"dimension{_where(line)}; ember cannot export that yet"
                )
            body.append(line)
        return "\n".join([*lines[:main_at], header, *self.prelude, *assertions, *body]) + "\n"

    def line(self, line: str) -> str:
        match = _OP.match(line)
        if match is not None and match.group(3) == "stablehlo.constant":
            value = self.recorded_value(match.group(5), match.group(7))
            if value is not None:
                return self.types(self.value_constant(match, value))
        if match is not None and match.group(3) == "stablehlo.slice":
            if self.sentinel.search(match.group(5)):
                return self.checked(self.types(self.dynamic_slice(match)), "stablehlo.slice", line)
        if match is None or not self.has_symbol(match.group(7)):
            return self.checked(self.types(line), match.group(3) if match else line.strip(), line)
        indent, lhs, op, operands, attrs, in_types, out_type = match.groups()
        lhs = lhs or ""
        shape = self.shape_of(out_type)
        if op == "stablehlo.broadcast_in_dim":
            new = (
                f'{indent}{lhs}"stablehlo.dynamic_broadcast_in_dim"({operands}, '
                f"{self.shape_value(shape)}){attrs} : ({in_types}, tensor<{len(shape)}xi32>) -> "
                f"{out_type}"
            )
        elif op == "stablehlo.reshape":
            new = (
                f'{indent}{lhs}"stablehlo.dynamic_reshape"({operands}, '
                f"{self.shape_value(shape)}){attrs} : ({in_types}, tensor<{len(shape)}xi32>) -> "
                f"{out_type}"
            )
        elif op == "stablehlo.iota":
            new = (
                f'{indent}{lhs}"stablehlo.dynamic_iota"({self.shape_value(shape)}){attrs} : '
                f"(tensor<{len(shape)}xi32>) -> {out_type}"
            )
        elif op == "stablehlo.constant":
            new = self.splat_constant(indent, lhs, attrs, out_type, shape)
        else:
            new = line
        return self.checked(self.types(new), op, line)

    def checked(self, new: str, op: str, line: str) -> str:
        if self.sentinel.search(_code(new)):
            raise errors.ExportError(
                f"shape polymorphism: {op} in {self.name}{_where(line)} uses a symbolic "
                f"dimension in an attribute (a slice, pad or gather over it?); ember cannot "
                f"export that"
            )
        return new

    def dynamic_slice(self, match: re.Match) -> str:
        """A slice whose bounds are expressions of the symbols: ``real_dynamic_slice``, fed
        its start, limit and strides computed from the arguments."""
        indent, lhs, _, operands, attrs, in_types, out_type = match.groups()
        vectors = []
        for key in ("start_indices", "limit_indices", "strides"):
            found = re.search(key + r" = array<i64: ([\d, ]+)>", attrs)
            if found is None:
                raise errors.ExportError(
                    f"internal error: a slice in the lowering of {self.name} has no {key}"
                )
            numbers = [int(n) for n in found.group(1).split(",")]
            vectors.append(self.shape_value([self.found.expr_of_size.get(n, n) for n in numbers]))
        index_type = f"tensor<{len(numbers)}xi32>"
        return (
            f'{indent}{lhs or ""}"stablehlo.real_dynamic_slice"({operands}, '
            f"{', '.join(vectors)}) : ({in_types}, {index_type}, {index_type}, {index_type}) -> "
            f"{out_type}"
        )

    def value_constant(self, match: re.Match, value: SymbolValue) -> str:
        """A constant that is the value of a symbol expression: computed, then broadcast."""
        indent, lhs, _, _, _, _, out_type = match.groups()
        element = _TENSOR.search(out_type).group(2)
        scalar = self.symbol_value(value, element)
        return self.broadcast(indent, lhs or "", scalar, element, out_type)

    def broadcast(self, indent: str, lhs: str, scalar: str, element: str, out_type: str) -> str:
        shape = self.shape_of(out_type)
        if not any(isinstance(d, DimExpr) for d in shape):
            return (
                f'{indent}{lhs}"stablehlo.broadcast_in_dim"({scalar}) <{{broadcast_dimensions = '
                f"array<i64>}}> : (tensor<{element}>) -> {out_type}"
            )
        return (
            f'{indent}{lhs}"stablehlo.dynamic_broadcast_in_dim"({scalar}, '
            f"{self.shape_value(shape)}) <{{broadcast_dimensions = array<i64>}}> : "
            f"(tensor<{element}>, tensor<{len(shape)}xi32>) -> {out_type}"
        )

    def splat_constant(self, indent: str, lhs: str, attrs: str, out_type: str, shape) -> str:
        """A constant filling a symbolic shape: one scalar, broadcast."""
        match = _DENSE.search(attrs)
        element = _TENSOR.match(out_type).group(2)
        body = match.group(1) if match else ""
        itemsize = None
        if body.startswith('"0x'):
            itemsize = (len(body) - 4) // 2
        if match is None or (itemsize is not None and itemsize > 16) or body.startswith("["):
            raise errors.ExportError(
                f"shape polymorphism: {self.name} has a constant array over a symbolic "
                f"dimension that is not one repeated value; ember cannot export that"
            )
        scalar = self.constant(body, element)
        return self.broadcast(indent, lhs, scalar, element, out_type)

    def assertions(self) -> list[str]:
        """Each symbol is at least 1 (and its source dimension a multiple of its coefficient);
        every other symbolic argument dimension equals its expression."""
        lines: list[str] = []
        sources = {(s.arg, s.axis): n for n, s in self.sources.items()}
        for i, shape in enumerate(self.in_shapes):
            for axis, d in enumerate(shape):
                if not isinstance(d, DimExpr):
                    continue
                where = f"dimension {axis} of {self.in_names[i]}"
                actual = self.arg_dim(i, axis)
                symbol = sources.get((i, axis))
                if symbol is None and isinstance(d, SymbolicDim):
                    first = self.sources[d.name]
                    lines += self._assert(
                        actual,
                        self.dim(d),
                        "EQ",
                        f"symbolic dimension {d.name}: {where} is {{0}} but dimension "
                        f"{first.axis} of {self.in_names[first.arg]} is {{1}}",
                    )
                    continue
                if symbol is None:
                    lines += self._assert(
                        actual,
                        self.dim(d),
                        "EQ",
                        f"{where} must be {d}: it is {{0}}, but {d} is {{1}}",
                    )
                    continue
                source = self.sources[symbol]
                if source.k != 1:
                    rest = self.binary("subtract", actual, self.constant(source.c))
                    remainder = self.binary("remainder", rest, self.constant(source.k))
                    lines += self._assert(
                        remainder,
                        self.constant(0),
                        "EQ",
                        f"{where} must be {d} for an integer {symbol}: it is {{2}}",
                        show=actual,
                    )
                lines += self._assert(
                    self.symbol(symbol),
                    self.constant(1),
                    "GE",
                    f"symbolic dimension {symbol} ({where} is {d}) must be >= 1, got {{0}}",
                )
        return lines

    def _assert(self, x: str, y: str, direction: str, message: str, show: str = "") -> list[str]:
        ok = self.fresh()
        operands = [ok, x, y] + ([show] if show else [])
        types = ", ".join(["tensor<i1>"] + [_I32] * (len(operands) - 1))
        return [
            f'    {ok} = "stablehlo.compare"({x}, {y}) <{{comparison_direction = '
            f"#stablehlo<comparison_direction {direction}>}}> : ({_I32}, {_I32}) -> tensor<i1>",
            f'    "stablehlo.custom_call"({", ".join(operands)}) <{{call_target_name = '
            f'"shape_assertion", has_side_effect = true, api_version = 2 : i32}}> '
            f'{{error_message = "{message}"}} : ({types}) -> ()',
        ]


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
