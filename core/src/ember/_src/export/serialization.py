"""The file format of an exported program: versioned, self-describing, no pickle.

    offset 0   8 bytes   magic b"EMBEREXP"
           8   2 bytes   format version, little-endian unsigned (FORMAT_VERSION)
          10   4 bytes   length M of the metadata, little-endian unsigned
          14   M bytes   metadata: UTF-8 JSON object (see ``METADATA_FIELDS``)
      14 + M   N bytes   the StableHLO module as a portable artifact (VHLO bytecode), N being
                         the metadata's ``module_size``
  14 + M + N   V bytes   the exported VJP, itself a whole file of this format, V being the
                         metadata's ``vjp_size`` (0: exported without its VJP)

A reader refuses a file of a newer format version than it knows, and checks every size, so a
truncated, empty or foreign file raises ``ExportError`` saying what is wrong instead of
crashing later. Everything about the program except the module itself is in the JSON, so a
file can be inspected without any StableHLO library.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from ember._src import errors

MAGIC = b"EMBEREXP"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHI")
HEADER_SIZE = _HEADER.size
# MLIR bytecode (and so every VHLO portable artifact) starts with these bytes.
MLIR_BYTECODE_MAGIC = b"ML\xefR"

# field -> the JSON types it may have. Readers ignore fields they do not know.
METADATA_FIELDS: dict[str, tuple[type, ...]] = {
    "function_name": (str,),
    "in_tree": (list,),
    "out_tree": (list,),
    "in_avals": (list,),
    "out_avals": (list,),
    "in_shardings": (list,),
    "out_shardings": (list,),
    "platforms": (list,),
    "nr_devices": (int,),
    "ordered_effects": (list,),
    "unordered_effects": (list,),
    "disabled_checks": (list,),
    "calling_convention_version": (int,),
    "stablehlo_version": (str,),
    "stablehlo_producer_version": (str,),
    "module_size": (int,),
    "vjp_size": (int,),
}
# Fields a file may lack (those of older versions of this format) -> their JSON types.
OPTIONAL_FIELDS: dict[str, tuple[type, ...]] = {
    "mesh": (dict, type(None)),  # absent: one device
}


def write(metadata: dict[str, Any], module: bytes, vjp: bytes | None) -> bytes:
    """The file holding ``metadata`` (sizes filled in here), ``module`` and ``vjp``."""
    vjp = vjp or b""
    metadata = dict(metadata, module_size=len(module), vjp_size=len(vjp))
    encoded = json.dumps(metadata, sort_keys=True, separators=(",", ":")).encode()
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(encoded)) + encoded + module + vjp


def read(blob: bytes) -> tuple[dict[str, Any], bytes, bytes | None]:
    """(metadata, module, vjp file or None) of a file ``write`` made; ``ExportError`` naming
    what is wrong otherwise."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize expects bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if not blob:
        raise errors.ExportError("not an ember export: the data is empty")
    if len(blob) < _HEADER.size:
        if MAGIC.startswith(blob[: len(MAGIC)]):
            raise errors.ExportError(
                f"truncated ember export: {len(blob)} bytes, shorter than its {_HEADER.size}-byte"
                f" header"
            )
        raise errors.ExportError("not an ember export: bad magic bytes")
    magic, version, size = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise errors.ExportError(
            f"not an ember export: bad magic bytes {magic!r} (expected {MAGIC!r})"
        )
    if version > FORMAT_VERSION or version < 1:
        raise errors.ExportError(
            f"unsupported ember export format version {version}: this ember reads versions 1 "
            f"to {FORMAT_VERSION} (a newer ember wrote it?)"
        )
    start = _HEADER.size
    if len(blob) < start + size:
        raise errors.ExportError(
            f"truncated ember export: the metadata needs {size} bytes, {len(blob) - start} remain"
        )
    try:
        metadata = json.loads(blob[start : start + size].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise errors.ExportError(f"bad metadata in ember export: not JSON ({exc})") from None
    check_metadata(metadata)
    module_start = start + size
    module_end = module_start + metadata["module_size"]
    end = module_end + metadata["vjp_size"]
    if len(blob) < end:
        raise errors.ExportError(
            f"truncated ember export: {len(blob)} bytes, the metadata announces {end}"
        )
    if len(blob) > end:
        raise errors.ExportError(
            f"bad ember export: {len(blob) - end} bytes follow the end the metadata announces"
        )
    module = blob[module_start:module_end]
    if not module.startswith(MLIR_BYTECODE_MAGIC):
        raise errors.ExportError("bad StableHLO artifact in ember export: it is not MLIR bytecode")
    vjp = blob[module_end:end] if metadata["vjp_size"] else None
    return metadata, module, vjp


def check_metadata(metadata: Any) -> None:
    if not isinstance(metadata, dict):
        raise errors.ExportError("bad metadata in ember export: not a JSON object")
    for field in METADATA_FIELDS:
        if field not in metadata:
            raise errors.ExportError(f"bad metadata in ember export: no {field!r}")
    for field, types in {**METADATA_FIELDS, **OPTIONAL_FIELDS}.items():
        if field not in metadata:
            continue
        value = metadata[field]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise errors.ExportError(
                f"bad metadata in ember export: {field!r} is {value!r}, expected "
                f"{' or '.join(t.__name__ for t in types)}"
            )
        if isinstance(value, int) and value < 0:
            raise errors.ExportError(f"bad metadata in ember export: {field!r} is {value}")
