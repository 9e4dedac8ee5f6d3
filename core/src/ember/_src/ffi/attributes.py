"""A handler's keyword attributes as MLIR attribute text (the custom call's backend_config).

The types follow JAX's: a Python ``bool`` is ``i1``, ``int`` is ``i64``, ``float`` is ``f64``,
``str`` is a string; a NumPy scalar keeps its dtype (``np.float32(1e-5)`` is ``f32``: what a
handler's ``Attr<float>`` reads); a NumPy array is a dense array attribute (``Span<const T>``);
a dict is a nested dictionary attribute (``Dictionary`` / a decoded struct).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import ShapedArray
from ember._src.lowering.mlir import dense_attr, element_type


def backend_config(target_name: str, attributes: dict[str, Any]) -> str:
    """``{name = value : type, ...}``, names sorted (MLIR dictionaries are)."""
    return (
        "{"
        + ", ".join(
            f"{name} = {attribute(target_name, name, value)}"
            for name, value in sorted(attributes.items())
        )
        + "}"
    )


def attribute(target_name: str, name: str, value: Any) -> str:
    """One attribute's MLIR text; TypeError for a value of no attribute type."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return _float(np.float64(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, np.generic) and value.dtype.kind in "iu":
        return f"{int(value)} : {element_type(value.dtype)}"
    if isinstance(value, np.generic) and value.dtype.kind == "f":
        return _float(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return dense_attr(value, ShapedArray(value.shape, value.dtype))
    if isinstance(value, dict):
        return backend_config(target_name, value)
    raise TypeError(
        f"ffi_call({target_name!r}): attribute {name}={value!r} has type "
        f"{type(value).__name__}, which is no FFI attribute type: attributes are static "
        f"Python or NumPy scalars, strings, NumPy arrays or dicts of them (an array computed "
        f"by the program is an operand: pass it positionally)"
    )


def _float(value: np.generic) -> str:
    # The bits in hexadecimal, as MLIR reads them: exact, and NaN and infinities too.
    bits = value.view(f"u{value.dtype.itemsize}")
    return f"0x{int(bits):0{2 * value.dtype.itemsize}X} : {element_type(value.dtype)}"


def _string(text: str) -> str:
    # MLIR strings escape a quote, a backslash and anything unprintable as \XX (hex bytes).
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        out.append(ch if 0x20 <= byte < 0x7F and ch not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'
