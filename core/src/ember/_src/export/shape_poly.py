"""Shape polymorphism for export: dimensions named by symbols (``symbolic_shape("b, 4")``).

ember's abstract values have integer shapes, so a polymorphic export is made from ordinary
traces: the function is traced twice, each symbolic dimension standing for a different prime
("sentinel") in each trace. The two jaxprs must be the same program up to those sizes, every
dimension being either a constant or exactly one symbol: anything else (a dimension ``2*b``,
the value of ``b`` used as a number, as ``mean`` does, a slice up to ``b``) is refused with
``ExportError`` naming the operation. This is the documented subset: elementwise operations,
broadcasting, reductions, dot/matmul, transposes, and reshapes that keep each symbolic
dimension as a dimension of its own.

The first trace is then lowered and its StableHLO text generalised: each sentinel in a
tensor type becomes ``?``; the operations whose result shape cannot be inferred from their
operands (``broadcast_in_dim``, ``reshape``, ``iota``, splat constants) become their dynamic
forms, fed a shape computed from the arguments (``get_dimension_size``); and ``main`` asserts
(``custom_call @shape_assertion``, checked when the caller's module is refined) that every
occurrence of a symbol has one value, at least 1. At the call, the caller's module is refined
to static shapes before it is compiled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.ir import ClosedJaxpr, Jaxpr, Literal
from ember._src.lowering.mlir import element_type
from ember._src.transforms.staging import ShapeDtypeStruct

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
# The sizes symbolic dimensions stand for in the two traces: primes, unlikely to be real sizes.
_SENTINELS = (
    (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049),
    (1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097),
)


class SymbolicDim:
    """A dimension known by name only until the exported program is called."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymbolicDim) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("SymbolicDim", self.name))


def symbolic_shape(spec: str) -> tuple[int | SymbolicDim, ...]:
    """``"b, 4"`` -> ``(b, 4)``: each comma-separated dimension an integer or a name."""
    if not isinstance(spec, str):
        raise TypeError(f"symbolic_shape expects a string such as 'b, 4', got {spec!r}")
    text = spec.strip().strip("()").strip()
    if not text:
        return ()
    dims: list[int | SymbolicDim] = []
    for token in (t.strip() for t in text.split(",")):
        if token.isdigit():
            dims.append(int(token))
        elif _NAME.match(token):
            dims.append(SymbolicDim(token))
        else:
            raise ValueError(
                f"symbolic_shape({spec!r}): {token!r} is not a dimension: ember's symbolic "
                f"shapes are integers and names (no expressions such as 2*b)"
            )
    return tuple(dims)


def is_symbolic(shape: Sequence[Any]) -> bool:
    return any(isinstance(d, SymbolicDim) for d in shape)


def dim_names(shapes: Sequence[Sequence[Any]]) -> list[str]:
    """The symbols of ``shapes``, in order of first appearance."""
    names: list[str] = []
    for shape in shapes:
        for d in shape:
            if isinstance(d, SymbolicDim) and d.name not in names:
                names.append(d.name)
    return names


def sentinels(names: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    if len(names) > len(_SENTINELS[0]):
        raise errors.ExportError(
            f"ember exports at most {len(_SENTINELS[0])} symbolic dimensions, got {len(names)}"
        )
    return (
        {n: _SENTINELS[0][i] for i, n in enumerate(names)},
        {n: _SENTINELS[1][i] for i, n in enumerate(names)},
    )


def specialize(leaf: Any, sizes: dict[str, int]) -> Any:
    """A ShapeDtypeStruct with symbolic dimensions, with ``sizes`` in their place."""
    if isinstance(leaf, ShapeDtypeStruct) and is_symbolic(leaf.shape):
        shape = [sizes[d.name] if isinstance(d, SymbolicDim) else d for d in leaf.shape]
        return ShapeDtypeStruct(shape, leaf.dtype, leaf.weak_type)
    return leaf


# -- the two traces must agree -----------------------------------------------------------------


class _Comparison:
    """Walks the two traces side by side, naming each dimension (constant or symbol)."""

    def __init__(self, a: dict[str, int], b: dict[str, int]):
        self.symbol_of = {(a[n], b[n]): n for n in a}
        # The first trace's sentinels: its lowering is generalised, so no constant may be one.
        self.reserved = set(a.values())

    def shape(self, shape_a: tuple, shape_b: tuple, what: str) -> tuple:
        if len(shape_a) != len(shape_b):
            raise self._differ(what, f"rank {len(shape_a)} or {len(shape_b)}")
        dims: list[int | SymbolicDim] = []
        for da, db in zip(shape_a, shape_b):
            if da == db:
                if da in self.reserved:
                    raise errors.ExportError(
                        f"shape polymorphism: {what} has a dimension of size {da}, which ember "
                        f"uses to stand for a symbolic dimension; use another size"
                    )
                dims.append(da)
            elif (da, db) in self.symbol_of:
                dims.append(SymbolicDim(self.symbol_of[(da, db)]))
            else:
                raise self._differ(what, "a dimension that is not a constant or one symbol")
        return tuple(dims)

    def _differ(self, what: str, detail: str) -> errors.ExportError:
        return errors.ExportError(
            f"shape polymorphism: {what} has {detail} (such as 2*b or b+1); ember exports "
            f"programs whose dimensions are constants or single symbols (see docs/export.md)"
        )

    def value(self, va: Any, vb: Any, what: str) -> Any:
        """A normal form of a parameter, equal for both traces or an error."""
        if isinstance(va, ClosedJaxpr) and isinstance(vb, ClosedJaxpr):
            self.jaxpr(va.jaxpr, vb.jaxpr, what)
            self.consts(va.consts, vb.consts, what)
            return "jaxpr"
        if isinstance(va, Jaxpr) and isinstance(vb, Jaxpr):
            self.jaxpr(va, vb, what)
            return "jaxpr"
        if isinstance(va, ShapedArray) and isinstance(vb, ShapedArray):
            return (self.shape(va.shape, vb.shape, what), va.dtype)
        if isinstance(va, (tuple, list)) and isinstance(vb, (tuple, list)) and len(va) == len(vb):
            if all(type(x) is int for x in [*va, *vb]):
                return self.shape(tuple(va), tuple(vb), what)
            return tuple(self.value(x, y, what) for x, y in zip(va, vb))
        if isinstance(va, np.ndarray) and isinstance(vb, np.ndarray):
            if va.shape != vb.shape or not np.array_equal(va, vb):
                raise self._uses_value(what)
            return "array"
        if type(va) is int and type(vb) is int and va != vb:
            if (va, vb) in self.symbol_of:
                return SymbolicDim(self.symbol_of[(va, vb)])
            raise self._uses_value(what)
        try:
            same = bool(va == vb)
        except Exception:  # parameters without a usable ==: compare them by identity
            same = va is vb
        if not same:
            raise self._uses_value(what)
        return "same"

    def _uses_value(self, what: str) -> errors.ExportError:
        return errors.ExportError(
            f"shape polymorphism: {what} depends on the value of a symbolic dimension (as "
            f"mean() or a slice up to b do); ember cannot export that (see docs/export.md)"
        )

    def consts(self, ca: Sequence[Any], cb: Sequence[Any], what: str) -> None:
        for x, y in zip(ca, cb):
            xa, ya = np.asarray(x), np.asarray(y)
            if xa.shape != ya.shape:
                raise errors.ExportError(
                    f"shape polymorphism: {what} holds a constant array whose shape depends on "
                    f"a symbolic dimension ({xa.shape}); build it inside the function instead"
                )
            if not np.array_equal(xa, ya):
                raise self._uses_value(what)

    def jaxpr(self, ja: Jaxpr, jb: Jaxpr, what: str) -> None:
        if len(ja.eqns) != len(jb.eqns) or len(ja.invars) != len(jb.invars):
            raise errors.ExportError(
                f"shape polymorphism: {what} traces to different programs for different "
                f"values of its symbolic dimensions"
            )
        for ea, eb in zip(ja.eqns, jb.eqns):
            name = f"{ea.primitive.name} in {what}"
            if ea.primitive is not eb.primitive or ea.params.keys() != eb.params.keys():
                raise errors.ExportError(
                    f"shape polymorphism: {what} traces to different programs ({ea.primitive}"
                    f" or {eb.primitive}) for different values of its symbolic dimensions"
                )
            for key in ea.params:
                self.value(ea.params[key], eb.params[key], f"{name} (parameter {key})")
            for va, vb in zip(ea.invars, eb.invars):
                if type(va) is Literal:
                    self.value(np.asarray(va.val), np.asarray(vb.val), name)
            for va, vb in zip(ea.outvars, eb.outvars):
                self.shape(va.aval.shape, vb.aval.shape, name)


def compare_traces(
    a: ClosedJaxpr, b: ClosedJaxpr, sizes_a: dict[str, int], sizes_b: dict[str, int], name: str
) -> tuple[list[tuple], list[tuple]]:
    """The symbolic input and output shapes of the program both traces are of, or an
    ``ExportError`` saying why they are not of one program."""
    compare = _Comparison(sizes_a, sizes_b)
    compare.consts(a.consts, b.consts, name)
    compare.jaxpr(a.jaxpr, b.jaxpr, name)
    ins = [
        compare.shape(x.shape, y.shape, f"argument of {name}")
        for x, y in zip(a.in_avals, b.in_avals)
    ]
    outs = [
        compare.shape(x.shape, y.shape, f"result of {name}")
        for x, y in zip(a.out_avals, b.out_avals)
    ]
    return ins, outs


# -- the generalised module --------------------------------------------------------------------


def symbolic_tensor_type(aval: ShapedArray) -> str:
    """``tensor<?x4xf32>`` for an aval of shape ``(b, 4)``."""
    dims = "".join(("?" if isinstance(d, SymbolicDim) else str(d)) + "x" for d in aval.shape)
    return f"tensor<{dims}{element_type(aval.dtype)}>"


_TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([^<>]*(?:<[^<>]*>)?)>")
_OP = re.compile(r'^(\s*)(%[\w#:]+ = )?"([\w.]+)"\((.*?)\)(.*) : \((.*)\) -> (.*)$')
_MAIN = re.compile(r"^\s*func\.func public @main\(")


class Generalizer:
    """Rewrites one lowering's module text (see the module docstring)."""

    def __init__(
        self,
        sizes: dict[str, int],
        in_shapes: Sequence[tuple],
        in_names: Sequence[str],
        name: str,
    ):
        self.symbol_of_size = {size: n for n, size in sizes.items()}
        self.in_shapes = in_shapes
        self.in_names = in_names
        self.name = name
        self.arg_types: list[str] = []  # main's argument types, read by ``rewrite``
        self.prelude: list[str] = []  # shape computations, at the top of main
        self.shapes: dict[tuple, str] = {}
        self.dims: dict[str, str] = {}
        self.counter = 0
        self.sentinel = re.compile(
            r"(?<![\w.#%])(" + "|".join(str(s) for s in sizes.values()) + r")(?![\w.])"
        )

    def fresh(self) -> str:
        self.counter += 1
        return f"%_poly{self.counter}"

    def types(self, text: str) -> str:
        def replace(match: re.Match) -> str:
            dims = match.group(1)
            if not dims:
                return match.group(0)
            parts = dims[:-1].split("x")
            parts = ["?" if p.isdigit() and int(p) in self.symbol_of_size else p for p in parts]
            return "tensor<" + "".join(p + "x" for p in parts) + match.group(2) + ">"

        return _TENSOR.sub(replace, text)

    def shape_of(self, type_text: str) -> list[Any]:
        """The dimensions of a (sentinel) tensor type: ints and symbol names."""
        match = _TENSOR.search(type_text)
        dims = match.group(1)[:-1].split("x") if match and match.group(1) else []
        return [self.symbol_of_size.get(int(d), int(d)) for d in dims]

    def has_symbol(self, type_text: str) -> bool:
        return any(isinstance(d, str) for d in self.shape_of(type_text))

    def dim(self, symbol: str) -> str:
        """The SSA value (tensor<i32>) of ``symbol``, read from the first argument having it."""
        value = self.dims.get(symbol)
        if value is None:
            for i, shape in enumerate(self.in_shapes):
                for axis, d in enumerate(shape):
                    if isinstance(d, SymbolicDim) and d.name == symbol:
                        value = self.fresh()
                        arg_type = self.arg_types[i]
                        self.prelude.append(
                            f'    {value} = "stablehlo.get_dimension_size"(%arg{i}) '
                            f"<{{dimension = {axis} : i64}}> : ({arg_type}) -> tensor<i32>"
                        )
                        self.dims[symbol] = value
                        return value
            raise errors.ExportError(
                f"shape polymorphism: the symbolic dimension {symbol!r} of a result of "
                f"{self.name} is no dimension of any argument"
            )
        return value

    def shape_value(self, dims: Sequence[Any]) -> str:
        """The SSA value (tensor<Nxi32>) of a shape with symbolic dimensions."""
        key = tuple(dims)
        value = self.shapes.get(key)
        if value is None:
            pieces = []
            for d in dims:
                piece = self.fresh()
                if isinstance(d, str):
                    self.prelude.append(
                        f'    {piece} = "stablehlo.reshape"({self.dim(d)}) : (tensor<i32>) -> '
                        f"tensor<1xi32>"
                    )
                else:
                    self.prelude.append(
                        f'    {piece} = "stablehlo.constant"() <{{value = dense<{d}> : '
                        f"tensor<1xi32>}}> : () -> tensor<1xi32>"
                    )
                pieces.append(piece)
            value = self.fresh()
            types = ", ".join(["tensor<1xi32>"] * len(pieces))
            self.prelude.append(
                f'    {value} = "stablehlo.concatenate"({", ".join(pieces)}) '
                f"<{{dimension = 0 : i64}}> : ({types}) -> tensor<{len(pieces)}xi32>"
            )
            self.shapes[key] = value
        return value

    def rewrite(self, text: str) -> str:
        lines = text.splitlines()
        main_at = next((i for i, line in enumerate(lines) if _MAIN.match(line)), None)
        if main_at is None:
            raise errors.ExportError(f"internal error: no main in the lowering of {self.name}")
        header = self.types(lines[main_at])
        self.arg_types = [t.strip() for t in re.findall(r"%arg\d+: (tensor<[^>]*>)", header)]
        in_main = True
        body: list[str] = []
        for line in lines[main_at + 1 :]:
            if in_main and line.startswith("  }"):
                in_main = False
            if in_main:
                body.append(self.line(line))
            else:
                if self.sentinel.search(line):
                    raise errors.ExportError(
                        f"shape polymorphism: {self.name} has a helper function over a symbolic "
                        f"dimension; ember cannot export that yet"
                    )
                body.append(line)
        assertions = self.assertions()
        return "\n".join([*lines[:main_at], header, *self.prelude, *assertions, *body]) + "\n"

    def line(self, line: str) -> str:
        match = _OP.match(line)
        if match is None or not self.has_symbol(match.group(7)):
            new = self.types(line)
            if self.sentinel.search(new):
                op = match.group(3) if match else line.strip()
                raise errors.ExportError(
                    f"shape polymorphism: {op} in {self.name} uses a symbolic dimension in an "
                    f"attribute (a slice, pad or gather over it?); ember cannot export that"
                )
            return new
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
        new = self.types(new)
        if self.sentinel.search(new):
            raise errors.ExportError(
                f"shape polymorphism: {op} in {self.name} uses a symbolic dimension in an "
                f"attribute (a slice, pad or gather over it?); ember cannot export that"
            )
        return new

    def splat_constant(self, indent: str, lhs: str, attrs: str, out_type: str, shape) -> str:
        """A constant filling a symbolic shape: one scalar, broadcast."""
        match = re.search(r"dense<(.*)> : (tensor<[^>]*>)", attrs)
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
        scalar = self.fresh()
        self.prelude.append(
            f'    {scalar} = "stablehlo.constant"() <{{value = dense<{body}> : '
            f"tensor<{element}>}}> : () -> tensor<{element}>"
        )
        return (
            f'{indent}{lhs}"stablehlo.dynamic_broadcast_in_dim"({scalar}, '
            f"{self.shape_value(shape)}) <{{broadcast_dimensions = array<i64>}}> : "
            f"(tensor<{element}>, tensor<{len(shape)}xi32>) -> {out_type}"
        )

    def assertions(self) -> list[str]:
        """Every occurrence of a symbol has the value of its first; each is at least 1."""
        lines: list[str] = []
        seen: dict[str, tuple[int, int]] = {}
        one = None
        for i, shape in enumerate(self.in_shapes):
            for axis, d in enumerate(shape):
                if not isinstance(d, SymbolicDim):
                    continue
                value = self.fresh()
                lines.append(
                    f'    {value} = "stablehlo.get_dimension_size"(%arg{i}) <{{dimension = '
                    f"{axis} : i64}}> : ({self.arg_types[i]}) -> tensor<i32>"
                )
                if d.name not in seen:
                    seen[d.name] = (i, axis)
                    if one is None:
                        one = self.fresh()
                        lines.append(
                            f'    {one} = "stablehlo.constant"() <{{value = dense<1> : '
                            f"tensor<i32>}}> : () -> tensor<i32>"
                        )
                    message = (
                        f"symbolic dimension {d.name} (dimension {axis} of "
                        f"{self.in_names[i]}) must be >= 1, got {{0}}"
                    )
                    lines += self._assert(value, one, "GE", message)
                    first = value
                    self.dims.setdefault(d.name, first)
                else:
                    j, axis0 = seen[d.name]
                    message = (
                        f"symbolic dimension {d.name}: dimension {axis} of {self.in_names[i]} "
                        f"is {{0}} but dimension {axis0} of {self.in_names[j]} is {{1}}"
                    )
                    lines += self._assert(value, self.dims[d.name], "EQ", message)
        return lines

    def _assert(self, x: str, y: str, direction: str, message: str) -> list[str]:
        ok = self.fresh()
        return [
            f'    {ok} = "stablehlo.compare"({x}, {y}) <{{comparison_direction = '
            f"#stablehlo<comparison_direction {direction}>}}> : (tensor<i32>, tensor<i32>) -> "
            f"tensor<i1>",
            f'    "stablehlo.custom_call"({ok}, {x}, {y}) <{{call_target_name = '
            f'"shape_assertion", has_side_effect = true, api_version = 2 : i32}}> '
            f'{{error_message = "{message}"}} : (tensor<i1>, tensor<i32>, tensor<i32>) -> ()',
        ]


def bind_dims(
    symbolic: Sequence[ShapedArray], actual: Sequence[tuple], names: Sequence[str], fun: str
) -> dict[str, int]:
    """The value of each symbol, from the actual argument shapes; ShapeMismatchError naming the
    argument and the symbol when they disagree."""
    values: dict[str, tuple[int, str]] = {}
    for aval, shape, name in zip(symbolic, actual, names):
        if len(shape) != len(aval.shape):
            raise errors.ShapeMismatchError(
                f"argument {name} of the exported function {fun} has shape {shape}, but it was "
                f"exported for shape {_shape_text(aval.shape)}{errors.where()}"
            )
        for axis, (want, got) in enumerate(zip(aval.shape, shape)):
            if isinstance(want, SymbolicDim):
                if got < 1:
                    raise errors.ShapeMismatchError(
                        f"argument {name} of the exported function {fun}: symbolic dimension "
                        f"{want.name} (dimension {axis}) must be >= 1, got {got}{errors.where()}"
                    )
                seen = values.get(want.name)
                if seen is not None and seen[0] != got:
                    raise errors.ShapeMismatchError(
                        f"argument {name} of the exported function {fun} has shape {shape}: "
                        f"symbolic dimension {want.name} is {got} there but {seen[0]} in "
                        f"{seen[1]}{errors.where()}"
                    )
                values.setdefault(want.name, (got, name))
            elif want != got:
                raise errors.ShapeMismatchError(
                    f"argument {name} of the exported function {fun} has shape {shape}, but it "
                    f"was exported for shape {_shape_text(aval.shape)}{errors.where()}"
                )
    return {n: v for n, (v, _) in values.items()}


def _shape_text(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def substitute(aval: ShapedArray, values: dict[str, int]) -> ShapedArray:
    shape = tuple(values[d.name] if isinstance(d, SymbolicDim) else d for d in aval.shape)
    return ShapedArray(shape, aval.dtype)
