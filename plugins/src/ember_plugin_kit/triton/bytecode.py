"""Triton modules through jaxlib's MLIR bindings: parse and verify the text, write bytecode,
and compile to PTX with the CUDA plugin's Triton compiler (no GPU needed).

jaxlib's MLIR and Triton modules are imported at first use, so importing the kit stays cheap
and the kit imports without jaxlib.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import threading
from typing import Any

_lock = threading.Lock()  # MLIR contexts are not thread-safe
_context: Any = None


def _context_made() -> Any:
    """One MLIR context with the Triton, arith, math and scf dialects. Callers hold _lock."""
    global _context
    if _context is None:
        ir = importlib.import_module("jaxlib.mlir.ir")
        triton = importlib.import_module("jaxlib.triton.dialect")
        context = ir.Context()
        triton.register_dialect(context)
        context.load_all_available_dialects()
        _context = context
    return _context


def _parsed(text: str) -> Any:
    ir = importlib.import_module("jaxlib.mlir.ir")
    with _context_made():
        module = ir.Module.parse(text)
        if not module.operation.verify():  # pragma: no cover - verify raises on failure
            raise ValueError("the Triton module does not verify")
    return module


def verify(text: str) -> str:
    """Parse and verify a Triton module; returns it as MLIR prints it (a ``ValueError``, from
    jaxlib's ``MLIRError``, names what is wrong)."""
    with _lock:
        return str(_parsed(text))


def to_bytecode(text: str) -> bytes:
    """The MLIR bytecode of a Triton module (what XLA's Triton custom call reads)."""
    with _lock:
        module = _parsed(text)
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
        return buffer.getvalue()


_CUDA_PLUGIN_LIBRARY = ("jax_plugins.xla_cuda12", "xla_cuda_plugin.so")
_CUDA_PLUGIN_EXTENSION = "jax_cuda12_plugin.cuda_plugin_extension"


def cuda_compiler_available() -> bool:
    """Whether the CUDA PJRT plugin wheels (which carry Triton's compiler) are installed."""
    return _cuda_plugin_library() is not None and (
        importlib.util.find_spec(_CUDA_PLUGIN_EXTENSION.rsplit(".", 1)[0]) is not None
    )


def _cuda_plugin_library() -> str | None:
    package, library = _CUDA_PLUGIN_LIBRARY
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, library)
        if os.path.exists(path):
            return path
    return None


def compile_to_ptx(
    bytecode: bytes, *, arch: str = "9.0", num_warps: int = 4, num_stages: int = 3
) -> str:
    """PTX for a Triton module (bytecode), compiled by the CUDA plugin's Triton pipeline for
    compute capability ``arch``; it needs the plugin's wheels, not a GPU."""
    library = _cuda_plugin_library()
    if library is None:
        raise RuntimeError(
            "compiling Triton to PTX needs the CUDA PJRT plugin's wheels (jax-cuda12-plugin and "
            "jax-cuda12-pjrt, which ember-plugin-cuda[cuda12] installs)"
        )
    # Imported here, not at the top: it loads jaxlib's XLA client, which only this needs.
    jaxlib_bridge = importlib.import_module("ember_plugin_kit.pjrt._jaxlib")
    c_api = jaxlib_bridge.plugin_c_api("cuda", library)
    if c_api is None:
        raise RuntimeError(
            "the CUDA PJRT plugin was loaded by another user of jaxlib in this process (JAX), "
            "which keeps its C API; compile Triton to PTX in a process without it"
        )
    extension = importlib.import_module(_CUDA_PLUGIN_EXTENSION)
    result = extension.compile_triton_to_asm(c_api, bytecode, arch, num_warps, 1, num_stages)
    return result.asm
