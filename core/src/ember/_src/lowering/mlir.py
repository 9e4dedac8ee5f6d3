"""Emitting StableHLO as MLIR text.

The core builds StableHLO modules as text, in MLIR's generic operation syntax, so it needs no
MLIR bindings (and no jaxlib): every backend that speaks StableHLO can parse it. A lowering
rule receives a ``RuleContext`` and the SSA names of its operands, emits operations through
``ctx.op(...)`` and returns the SSA names of its results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import ShapedArray, check_size

_ELEMENT_TYPES: dict[np.dtype, str] = {
    dtypes.bool_: "i1",
    dtypes.int8: "i8",
    dtypes.int16: "i16",
    dtypes.int32: "i32",
    dtypes.int64: "i64",
    dtypes.uint8: "ui8",
    dtypes.uint16: "ui16",
    dtypes.uint32: "ui32",
    dtypes.uint64: "ui64",
    dtypes.float16: "f16",
    dtypes.float32: "f32",
    dtypes.float64: "f64",
    dtypes.complex64: "complex<f32>",
    dtypes.complex128: "complex<f64>",
}
if dtypes.bfloat16 is not None:
    _ELEMENT_TYPES[np.dtype(dtypes.bfloat16)] = "bf16"

_type_cache: dict[tuple, str] = {}


def element_type(dtype: np.dtype) -> str:
    try:
        return _ELEMENT_TYPES[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} cannot be lowered to StableHLO") from None


class TokenType:
    """The type of the tokens that order a program's effects (``!stablehlo.token``). Rules
    pass ``TOKEN`` where they pass an aval, e.g. to ``ctx.op`` and ``ctx.region``."""

    shape = None
    dtype = None


TOKEN: Any = TokenType()
_type_cache[(None, None)] = "!stablehlo.token"


def tensor_type(aval: ShapedArray) -> str:
    key = (aval.shape, aval.dtype)
    text = _type_cache.get(key)
    if text is None:
        check_size(aval.shape, aval.dtype, "an array of shape")
        dims = "".join(f"{d}x" for d in aval.shape)
        text = _type_cache[key] = f"tensor<{dims}{element_type(aval.dtype)}>"
    return text


def dense_attr(value: Any, aval: ShapedArray) -> str:
    """A ``dense<...> : tensor<...>`` attribute holding ``value`` (a splat if it is a scalar)."""
    array = np.asarray(value, dtype=aval.dtype)
    if aval.dtype == dtypes.bool_:
        body = _bool_literal(array)
    else:
        body = '"0x' + np.ascontiguousarray(array).tobytes().hex().upper() + '"'
    return f"dense<{body}> : {tensor_type(aval)}"


def _bool_literal(array: np.ndarray) -> str:
    if array.ndim == 0:
        return "true" if array else "false"
    return "[" + ", ".join(_bool_literal(row) for row in array) + "]"


def i64_array(values: Sequence[int]) -> str:
    """``array<i64: 1, 2>``, the form StableHLO uses for dimension lists."""
    if not values:
        return "array<i64>"
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


def bool_array(values: Sequence[bool]) -> str:
    if not values:
        return "array<i1>"
    return "array<i1: " + ", ".join("true" if v else "false" for v in values) + ">"


class FunctionEmitter:
    """Accumulates the body of one function: lines of text and the type of each SSA value."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.types: dict[str, str] = {}
        self._next = 0
        self._constants: dict[tuple, str] = {}

    def fresh(self) -> str:
        name = f"%{self._next}"
        self._next += 1
        return name


class RuleContext:
    """What a lowering rule sees: the equation's avals, the platform, and the emitter."""

    __slots__ = (
        "avals_in",
        "avals_out",
        "platform",
        "module",
        "fn",
        "indent",
        "loc",
        "scope",
        "caller",
    )

    def __init__(self, module: ModuleContext, fn: FunctionEmitter):
        self.module = module
        self.fn = fn
        self.platform = module.platform
        self.avals_in: list[ShapedArray] = []
        self.avals_out: list[ShapedArray] = []
        self.indent = "    "
        # The location every operation emitted now gets (" loc(...)", see ``location``); the
        # equation being lowered and its name scope ("outer/"): the equations of a jaxpr it
        # lowers inline (a call, a loop body) are named under both ("outer/jit(g)/...").
        self.loc = ""
        self.scope = ""
        self.caller: Any = None

    # -- emitting operations ---------------------------------------------------------------------

    def op(
        self,
        name: str,
        operands: Sequence[str],
        out: ShapedArray | Sequence[ShapedArray],
        attrs: dict[str, str] | None = None,
        regions: Sequence[str] = (),
        discardable: dict[str, str] | None = None,
    ) -> Any:
        """Emit ``"name"(operands) <{attrs}> (regions) {discardable} : (types) -> types``.

        ``attrs`` are the op's own properties; ``discardable`` attributes are those other
        dialects attach (``sdy.sharding``). Returns the result's SSA name, or a list of names
        when ``out`` is a sequence.
        """
        fn = self.fn
        types = fn.types
        multiple = not isinstance(out, ShapedArray)
        out_avals = list(out) if multiple else [out]
        out_types = [tensor_type(a) for a in out_avals]
        result = fn.fresh()
        if multiple:
            names = [f"{result}#{i}" for i in range(len(out_avals))]
            lhs = f"{result}:{len(out_avals)}" if out_avals else ""
        else:
            names = [result]
            lhs = result
        in_types = ", ".join(types[x] for x in operands)
        props = ""
        if attrs:
            props = " <{" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}>"
        region_text = " (" + ", ".join(regions) + ")" if regions else ""
        if discardable:
            region_text += " {" + ", ".join(f"{k} = {v}" for k, v in discardable.items()) + "}"
        out_type = out_types[0] if not multiple else "(" + ", ".join(out_types) + ")"
        prefix = f"{lhs} = " if lhs else ""
        fn.lines.append(
            f'{self.indent}{prefix}"{name}"({", ".join(operands)}){props}{region_text} : '
            f"({in_types}) -> {out_type}{self.loc}"
        )
        for n, t in zip(names, out_types):
            types[n] = t
        return names if multiple else names[0]

    def constant(self, value: Any, aval: ShapedArray) -> str:
        """A constant; identical scalar constants are emitted once per function. Not inside a
        shard_map body: its region is isolated from above, so it cannot use the function's."""
        array = np.asarray(value, dtype=aval.dtype)
        key = None
        if array.ndim == 0 and not self.module.in_manual:
            key = (aval.shape, aval.dtype, array.tobytes())
            cached = self.fn._constants.get(key)
            if cached is not None:
                return cached
        name = self.op("stablehlo.constant", [], aval, {"value": dense_attr(array, aval)})
        if key is not None and self.indent == "    ":
            self.fn._constants[key] = name
        return name

    def full(self, value: Any, aval: ShapedArray) -> str:
        """An array of ``aval``'s shape filled with ``value`` (a splat constant)."""
        scalar = np.asarray(value, dtype=aval.dtype)
        if not aval.shape:
            return self.constant(scalar, aval)
        return self.op("stablehlo.constant", [], aval, {"value": dense_attr(scalar, aval)})

    def broadcast_in_dim(self, x: str, out: ShapedArray, dims: Sequence[int]) -> str:
        return self.op(
            "stablehlo.broadcast_in_dim", [x], out, {"broadcast_dimensions": i64_array(dims)}
        )

    def convert(self, x: str, out: ShapedArray) -> str:
        return self.op("stablehlo.convert", [x], out)

    def region(
        self,
        arg_avals: Sequence[ShapedArray],
        body: Callable[..., Sequence[str]],
        terminator: str = "stablehlo.return",
    ) -> str:
        """A one-block region: ``body(ctx, *block_args)`` returns the values it yields."""
        fn = self.fn
        saved_lines, saved_indent = fn.lines, self.indent
        fn.lines = []
        self.indent = saved_indent + "  "
        args = []
        for aval in arg_avals:
            name = fn.fresh()
            fn.types[name] = tensor_type(aval)
            args.append(name)
        try:
            results = list(body(self, *args))
            result_types = ", ".join(fn.types[r] for r in results)
            fn.lines.append(
                f'{self.indent}"{terminator}"({", ".join(results)}) : ({result_types}) -> ()'
            )
            header = ", ".join(f"{a}: {fn.types[a]}" for a in args)
            inner = "\n".join(fn.lines)
        finally:
            fn.lines, self.indent = saved_lines, saved_indent
        return "{\n" + f"{self.indent}  ^bb0({header}):\n{inner}\n{self.indent}}}"

    def scalar_aval(self, dtype: np.dtype) -> ShapedArray:
        return ShapedArray((), dtype)


class ModuleContext:
    """Module-wide lowering state: the platform, the module's extra functions, the Python
    functions it calls back into, and the current token of each ordered effect."""

    def __init__(
        self,
        platform: str,
        name: str,
        mesh: Any = None,
        collectives: Any = None,
        host_callbacks: list[Callable[..., Any]] | None = None,
    ):
        self.platform = platform
        self.name = sanitize_name(name)
        self.extra_functions: list[str] = []
        # The functions the program calls back into; a callback is named by its index here.
        self.host_callbacks = host_callbacks if host_callbacks is not None else []
        # Ordered effect -> the SSA name of its token where the lowering is now: an effect's
        # next operation takes it and yields the next one (regions that run effects carry
        # them in and out, so program order holds inside loops and branches too).
        self.tokens: dict[Any, str] = {}
        # Module-level declarations besides the mesh (e.g. a one-device mesh for callbacks).
        self.declarations: dict[str, str] = {}
        # Inside a shard_map body: each device runs its own part.
        self.in_manual = False
        # The mesh axes still automatic there (a partial-manual shard_map's other axes).
        self.automatic_axes: tuple[str, ...] = ()
        # The device mesh of an SPMD module (declared as ``@mesh``), else None.
        self.mesh = mesh
        # Who implements each collective on this platform (the plugins' declarations).
        self.collectives = collectives
        self._channels = 0

    def collective_implementation(self, collective: str) -> Any:
        """``"xla"`` (XLA's own op) or the plugin's implementation of ``collective``."""
        if self.collectives is None:
            return "xla"
        return self.collectives.implementation(self.platform, collective)

    def add_host_callback(self, callback: Callable[..., Any]) -> int:
        """The index by which the program names ``callback`` (see ``Computation``)."""
        self.host_callbacks.append(callback)
        return len(self.host_callbacks) - 1

    def next_channel(self) -> int:
        """A fresh channel id: every collective of a module needs its own."""
        self._channels += 1
        return self._channels

    def require_mesh(self, mesh: Any, what: str) -> str:
        """The symbol of ``mesh`` in this module; ``what`` must use the module's own mesh."""
        if self.mesh is None:
            raise ValueError(f"{what} needs a computation over a device mesh")
        if not self.mesh.same_devices(mesh):  # axis types may differ: one layout
            raise ValueError(
                f"{what} uses mesh {mesh!r} inside a computation over {self.mesh!r}; one "
                f"computation runs on one mesh"
            )
        return "@mesh"


_quoted_files: dict[str, str] = {}


def location(name: str, source_info: Any) -> str:
    """`` loc("outer/inner/add"("file.py":12:0))``: an operation's name (its scope and
    primitive) and the user's line that traced it, as JAX writes StableHLO locations; XLA
    keeps the name as the HLO instruction's ``op_name`` (profiles, dumps)."""
    if '"' in name or "\\" in name:  # a named_scope may name anything
        name = mlir_string(name)[1:-1]
    if source_info is None:
        return f' loc("{name}")'
    filename = source_info.filename
    quoted = _quoted_files.get(filename)
    if quoted is None:
        quoted = _quoted_files[filename] = mlir_string(filename)
    return f' loc("{name}"({quoted}:{source_info.lineno}:0))'


def mlir_string(text: str) -> str:
    """``text`` as an MLIR string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


_LOCATION_SUFFIX = re.compile(r" loc\(.*\)$", re.MULTILINE)


def strip_locations(text: str) -> str:
    """Module text without the ``loc(...)`` of its operations (what ``as_text`` shows unless
    asked for debug information, as in JAX)."""
    return _LOCATION_SUFFIX.sub("", text)


def sdy_mesh_declaration(mesh: Any) -> str:
    axes = ", ".join(f'"{name}"={size}' for name, size in mesh.shape.items())
    return f"  sdy.mesh @mesh = <[{axes}]>\n"


def sanitize_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else "_" + cleaned
