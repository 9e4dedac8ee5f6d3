"""The lowering of a polymorphic export, generalised to every size of its symbols.

The first trace (see ``shape_poly``) is lowered as usual and its StableHLO text rewritten: each
dimension that stands for an expression of the symbols becomes ``?`` in tensor types; the
operations whose result shape cannot be inferred from their operands (``broadcast_in_dim``,
``reshape``, ``iota``, ``slice``, splat constants) become their dynamic forms, fed shapes
computed from the arguments (``get_dimension_size``, then ``multiply``/``add``/``divide`` for
expressions); constants that are values of the symbols are computed the same way and converted
to their dtype; and ``main`` asserts (``custom_call @shape_assertion``, checked when the
caller's module is refined) the constraints of the argument shapes: each symbol at least 1,
each argument dimension equal to its expression. Operations whose attributes hold a symbolic
size (``pad``, ``gather``) are refused, naming the operation and its line. At the call, the
caller's module is refined to static shapes before it is compiled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.export.dim_expr import DimExpr, SymbolicDim
from ember._src.export.shape_poly import Found, SymbolValue, symbol_sources

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


def _constant_bytes(body: str, dtype: np.dtype | None) -> bytes | None:
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
        data = _constant_bytes(match.group(1), self.dtype_of_element.get(element))
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
