"""The text of a Triton-dialect (TTIR) function, built line by line.

The lowering writes MLIR's textual form (as ember's StableHLO lowering does) rather than
building operations through jaxlib's bindings: the text needs no MLIR context while it is
made, and ``bytecode.to_bytecode`` parses and verifies it once at the end.

A value of the kernel is a ``Value``: its SSA name, shape and ember dtype. Shape ``()`` is a
plain scalar (``f32``), anything else a tensor (``tensor<16x32xf32>``); Triton has no 0-d
tensors. The dtype is kept (not only the MLIR element type) because MLIR integers are
signless: whether ``lt`` is ``slt`` or ``ult`` depends on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

try:  # bfloat16 comes from ml_dtypes, which jaxlib depends on.
    import ml_dtypes

    _BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - only without ml_dtypes
    _BFLOAT16 = None

_ELEMENT_TYPES = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "i8",
    np.dtype(np.uint16): "i16",
    np.dtype(np.uint32): "i32",
    np.dtype(np.uint64): "i64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}
if _BFLOAT16 is not None:
    _ELEMENT_TYPES[_BFLOAT16] = "bf16"

INDEX_DTYPE = np.dtype(np.int32)  # Triton's offsets, program ids and loop counters


def element_type(dtype: np.dtype) -> str:
    try:
        return _ELEMENT_TYPES[np.dtype(dtype)]
    except KeyError:
        raise NotImplementedError(
            f"dtype {np.dtype(dtype)} is not supported by the Triton lowering; use interpret=True"
        ) from None


def memory_element_type(dtype: np.dtype) -> str:
    """The element type of a pointer to an array of ``dtype``: XLA stores a bool in a byte."""
    return "i8" if np.dtype(dtype) == np.bool_ else element_type(dtype)


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == _BFLOAT16


def is_unsigned(dtype: np.dtype) -> bool:
    """Unsigned integers and bools (an ``i1`` extends with zeros)."""
    return np.dtype(dtype).kind in "ub"


def tensor_type(shape: Sequence[int], element: str) -> str:
    if not shape:
        return element
    return f"tensor<{'x'.join(str(d) for d in shape)}x{element}>"


@dataclass(frozen=True)
class Value:
    """An SSA value of the kernel: a scalar (shape ``()``) or a tensor."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def type(self) -> str:
        return tensor_type(self.shape, element_type(self.dtype))


@dataclass(frozen=True)
class Pointer:
    """An SSA value holding pointers into an array of ``dtype`` (one, or a tensor of them)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def type(self) -> str:
        return tensor_type(self.shape, f"!tt.ptr<{memory_element_type(self.dtype)}>")


def float_literal(value: float, dtype: np.dtype) -> str:
    """A float constant as MLIR's hexadecimal bit pattern: exact, and it spells inf and nan."""
    bits = np.asarray(value, dtype=dtype).reshape(()).view(f"u{np.dtype(dtype).itemsize}")
    return f"0x{int(bits):0{2 * np.dtype(dtype).itemsize}X}"


def scalar_literal(value, dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "true" if bool(value) else "false"
    if is_float(dtype):
        return float_literal(value, dtype)
    # Signless integers print as signed numbers of their width.
    signed = np.asarray(value).astype(dtype).reshape(()).view(f"i{dtype.itemsize}")
    return str(int(signed))


def bytes_literal(data: bytes) -> str:
    """``data`` as an MLIR string literal (bytes other than printable ASCII as ``\\XX``)."""
    parts = []
    for byte in data:
        if 0x20 <= byte < 0x7F and byte not in (0x22, 0x5C):  # not '"' or '\\'
            parts.append(chr(byte))
        else:
            parts.append(f"\\{byte:02X}")
    return '"' + "".join(parts) + '"'


class Emitter:
    """The lines of one function body, with fresh SSA names and the current indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = "    "
        self._next = 0
        self._constants: dict[tuple, Value] = {}

    def fresh(self) -> str:
        name = f"%v{self._next}"
        self._next += 1
        return name

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def op(self, text: str, shape: Sequence[int], dtype: np.dtype) -> Value:
        """Emit ``%new = text`` and return the new value of ``shape`` and ``dtype``."""
        name = self.fresh()
        self.line(f"{name} = {text}")
        return Value(name, tuple(shape), np.dtype(dtype))

    def constant(self, value, dtype: np.dtype, shape: Sequence[int] = ()) -> Value:
        """A constant scalar, or a tensor filled with one value. Scalars are emitted once per
        region level they are first used at (a constant made inside a loop body stays there,
        so it is not reused outside)."""
        dtype = np.dtype(dtype)
        literal = scalar_literal(value, dtype)
        key = (literal, dtype, tuple(shape), self.indent)
        cached = self._constants.get(key)
        if cached is not None:
            return cached
        element = element_type(dtype)
        if shape:
            text = f"arith.constant dense<{literal}> : {tensor_type(shape, element)}"
        elif dtype == np.bool_:  # the i1 type is implied by `true`/`false`
            text = f"arith.constant {literal}"
        else:
            text = f"arith.constant {literal} : {element}"
        result = self.op(text, shape, dtype)
        self._constants[key] = result
        return result

    @contextlib.contextmanager
    def nested(self) -> Iterator[None]:
        """Emit the body of a region: indented, and with constants of its own (those made
        inside are out of scope after it)."""
        outer = self.indent
        self.indent = outer + "  "
        try:
            yield
        finally:
            inner = self.indent
            self._constants = {k: v for k, v in self._constants.items() if k[3] != inner}
            self.indent = outer
