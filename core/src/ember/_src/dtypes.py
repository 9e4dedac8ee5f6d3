"""Dtypes: canonicalisation (32-bit unless x64 is on), weak types and type promotion.

Promotion follows JAX's lattice: Python scalars are *weakly typed* (they adopt the dtype of
the array they meet), and mixed signed/unsigned or int/float combinations climb the lattice
to their least upper bound instead of NumPy's value-based rules.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.config import config

try:  # bfloat16 comes from ml_dtypes, which jaxlib depends on; the core runs without it.
    import ml_dtypes

    bfloat16: type | None = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    bfloat16 = None

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# The floats narrower than float32, which algorithms compute in float32 (bfloat16 only where
# ml_dtypes is installed: without it, ``np.dtype(None)`` would be float64).
HALF_FLOATS = frozenset({float16} | ({np.dtype(bfloat16)} if bfloat16 is not None else set()))

# The three weak "types" of Python scalars, as lattice nodes.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "int*", "float*", "complex*"

_lattice: dict[Any, list[Any]] = {
    bool_: [_WEAK_INT],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: [_WEAK_FLOAT],
    _WEAK_INT: [uint8, int8],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [float16, _WEAK_COMPLEX],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _WEAK_COMPLEX: [complex64],
    complex64: [complex128],
    complex128: [],
}
if bfloat16 is not None:
    _bf16 = np.dtype(bfloat16)
    _lattice[_WEAK_FLOAT].insert(0, _bf16)
    _lattice[_bf16] = [float32]


def _upper_sets() -> dict[Any, frozenset]:
    uppers: dict[Any, frozenset] = {}

    def visit(node: Any) -> frozenset:
        if node not in uppers:
            result = {node}
            for parent in _lattice[node]:
                result |= visit(parent)
            uppers[node] = frozenset(result)
        return uppers[node]

    for node in _lattice:
        visit(node)
    return uppers


_UPPER = _upper_sets()

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

# Read on every eager operation: a fast reader instead of config's attribute lookup.
x64_enabled = config.reader("enable_x64")


def canonicalize(dtype: Any) -> np.dtype:
    """The dtype ember computes in for ``dtype``: 64-bit kinds narrow unless x64 is on."""
    if type(dtype) is not np.dtype:
        dtype = np.dtype(dtype)
    if not x64_enabled():
        return _TO_32.get(dtype, dtype)
    return dtype


def check_requested(dtype: Any, where: str) -> None:
    """Warn, as JAX does, when a user asks ``where`` (a function's name) for a 64-bit dtype that
    x64 being off narrows to 32 bits. Python's own types (``float``, ``int``) mean "the
    default" and are not warned about."""
    # (by identity: np.dtype("float64") == float is True)
    if dtype is None or x64_enabled() or any(dtype is t for t in (bool, int, float, complex)):
        return
    requested = np.dtype(dtype)
    narrowed = _TO_32.get(requested)
    if narrowed is not None:
        warnings.warn(
            f"Explicitly requested dtype {requested} requested in {where} is not available, "
            f"and will be truncated to dtype {narrowed}. To enable more dtypes, set the "
            "enable_x64 option (ember.config.update('enable_x64', True)) or the "
            "EMBER_ENABLE_X64 environment variable.",
            UserWarning,
            stacklevel=3,
        )


def default_int() -> np.dtype:
    return int64 if x64_enabled() else int32


def default_float() -> np.dtype:
    return float64 if x64_enabled() else float32


def to_inexact(dtype: Any) -> np.dtype:
    """The floating dtype an integer or bool dtype becomes where an inexact one is needed (as
    JAX): 64-bit integers become float64, narrower ones float32 (not the default float)."""
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return dtype
    return float64 if dtype.itemsize == 8 else float32


def default_complex() -> np.dtype:
    return complex128 if x64_enabled() else complex64


def _weak_node(dtype: np.dtype) -> Any:
    if dtype.kind in "iu":
        return _WEAK_INT
    if dtype.kind == "f" or dtype == np.dtype(bfloat16 or np.float32):
        return _WEAK_FLOAT
    if dtype.kind == "c":
        return _WEAK_COMPLEX
    return dtype


@functools.lru_cache(maxsize=1024)
def _join(nodes: tuple) -> Any:
    common = frozenset.intersection(*(_UPPER[node] for node in nodes))
    for candidate in common:
        if _UPPER[candidate] == common:
            return candidate
    raise TypeError(f"no common dtype for {nodes}")  # the lattice is a join-semilattice


def promote(dtypes_and_weak: list[tuple[np.dtype, bool]]) -> tuple[np.dtype, bool]:
    """The result (dtype, weak_type) of combining operands per JAX's promotion lattice."""
    nodes = tuple(_weak_node(d) if weak else d for d, weak in dtypes_and_weak)
    joined = _join(nodes)
    if joined == _WEAK_INT:
        return default_int(), True
    if joined == _WEAK_FLOAT:
        return default_float(), True
    if joined == _WEAK_COMPLEX:
        return default_complex(), True
    all_weak = all(weak for _, weak in dtypes_and_weak)
    return canonicalize(joined), all_weak


def python_scalar_dtype(value: Any) -> np.dtype:
    """The (weak) dtype a Python scalar takes: bool, default int, float or complex."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return default_int()
    if isinstance(value, float):
        return default_float()
    if isinstance(value, complex):
        return default_complex()
    raise TypeError(f"not a Python scalar: {type(value).__name__}")


def is_python_scalar(value: Any) -> bool:
    return type(value) in (bool, int, float, complex)


_subdtype_cache: dict[tuple, bool] = {}


def issubdtype(arg1: Any, arg2: Any) -> bool:
    # Memoised: np.issubdtype costs ~1 us and sits on the eager-dispatch path.
    dtype, category = arg1, arg2
    key = (dtype, category)
    try:
        return _subdtype_cache[key]
    except (KeyError, TypeError):
        pass
    if bfloat16 is not None and np.dtype(dtype) == np.dtype(bfloat16):
        result = category in (np.floating, np.inexact, np.number, np.generic)
    else:
        result = bool(np.issubdtype(dtype, category))
    try:
        _subdtype_cache[key] = result
    except TypeError:
        pass
    return result


def is_float(dtype: Any) -> bool:
    return issubdtype(dtype, np.floating)


def is_inexact(dtype: Any) -> bool:
    return issubdtype(dtype, np.inexact)


def is_integer(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "iu"


def finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype, bfloat16 included (NumPy's finfo rejects it)."""
    dtype = np.dtype(dtype)
    if bfloat16 is not None and dtype == np.dtype(bfloat16):
        return ml_dtypes.finfo(bfloat16)
    return np.finfo(dtype)


def real_dtype(dtype: Any) -> np.dtype:
    """The dtype of the real and imaginary parts of ``dtype`` (itself if it is not complex)."""
    dtype = np.dtype(dtype)
    if dtype == np.complex64:
        return np.dtype(np.float32)
    if dtype == np.complex128:
        return np.dtype(np.float64)
    return dtype


def complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype with parts of ``dtype``."""
    return np.dtype(np.complex128) if np.dtype(dtype) == np.float64 else np.dtype(np.complex64)


def short_name(dtype: np.dtype) -> str:
    """f32, i32, u8, bool, bf16, c64: the compact names used in jaxprs and error messages."""
    return _SHORT_NAMES.get(np.dtype(dtype), str(dtype))


_SHORT_NAMES = {
    bool_: "bool",
    int8: "i8",
    int16: "i16",
    int32: "i32",
    int64: "i64",
    uint8: "u8",
    uint16: "u16",
    uint32: "u32",
    uint64: "u64",
    float16: "f16",
    float32: "f32",
    float64: "f64",
    complex64: "c64",
    complex128: "c128",
}
if bfloat16 is not None:
    _SHORT_NAMES[np.dtype(bfloat16)] = "bf16"

# float0 is the dtype of tangents of integer and boolean values (they have no tangent space).
float0 = np.dtype([("float0", np.void, 0)])


_UNSUPPORTED_KINDS = {
    "O": "Python objects",
    "S": "byte strings",
    "U": "unicode strings",
    "M": "datetimes",
    "m": "timedeltas",
}


def check_supported(dtype: np.dtype, what: str = "dtype {dtype}") -> None:
    """Strings, objects, dates and structured records have no device representation: say so
    where they come in, rather than let a backend fail on an unknown dtype later.
    ``what`` names the offender, with ``{dtype}`` standing for the dtype."""
    if dtype.kind in _UNSUPPORTED_KINDS or dtype.type is np.void and dtype != float0:
        kind = _UNSUPPORTED_KINDS.get(dtype.kind, "records")
        raise errors.EmberTypeError(
            f"{what.format(dtype=dtype)} ({kind}) cannot be ember arrays: only boolean, integer, "
            f"floating and complex dtypes are supported{errors.where()}"
        )
