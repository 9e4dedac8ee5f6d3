"""Where the ROCm parts are: XLA's ROCm PJRT library (the jax-rocm7-pjrt wheel), its FFI
extension (jax-rocm7-plugin), and the ROCm runtime libraries the PJRT library links.

Unlike CUDA's, the ROCm PJRT library links its runtime libraries directly (HIP, RCCL, MIOpen,
rocBLAS, hipBLASLt, hipFFT, ROCm SMI, the profiler SDK): without one of them it does not load
at all, and the loader's error names only the first. ``missing_runtime`` reads the library's
needs from its ELF dynamic section and loads each one, within a deadline, so the error names
every missing library and any other ROCm release found in its place.
"""

from __future__ import annotations

import importlib.util
import os

from ember_plugin_kit.gpu import MissingLibrary, call_within, missing_libraries, package_directory

# The wheel that ships XLA's ROCm 7 PJRT plugin, the package it installs and the library in it.
PJRT_DISTRIBUTION = "jax-rocm7-pjrt"
PJRT_PACKAGE = "jax_plugins.xla_rocm7"
PJRT_LIBRARY = "xla_rocm_plugin.so"

# The wheel with the FFI handlers XLA's ROCm plugin does not carry itself (host callbacks on
# the GPU), registered with it before its first client.
FFI_DISTRIBUTION = "jax-rocm7-plugin"
FFI_EXTENSION = "jax_rocm7_plugin.rocm_plugin_extension"

# What `pip install` brings (the ROCm runtime itself is AMD's install).
INSTALL_HINT = "pip install 'ember-plugin-rocm[rocm7]'"

# Where ROCm installs its libraries unless ROCM_PATH says otherwise.
DEFAULT_ROCM_PATH = "/opt/rocm"

# How long loading the runtime libraries may take (their initialisers run on load).
LOAD_TIMEOUT_S = 30.0


class MissingRocmPartError(Exception):
    """A part the platform needs is not installed; the message names it and how to get it."""


def rocm_library_dirs() -> list[str]:
    """Where ROCm's libraries are looked for besides the PJRT library's own run path (which
    has /opt/rocm/lib) and the loader's search: ``$ROCM_PATH/lib``."""
    root = os.environ.get("ROCM_PATH") or DEFAULT_ROCM_PATH
    return [os.path.join(root, "lib")]


def pjrt_library() -> str:
    """The path of XLA's ROCm PJRT library in the installed ``jax-rocm7-pjrt`` wheel."""
    directory = package_directory(PJRT_PACKAGE)
    if directory is None:
        raise MissingRocmPartError(
            f"missing ROCm wheel: {PJRT_DISTRIBUTION} (XLA's ROCm PJRT plugin, package "
            f"{PJRT_PACKAGE}) is not installed; {INSTALL_HINT}"
        )
    path = os.path.join(directory, PJRT_LIBRARY)
    if not os.path.isfile(path):
        raise MissingRocmPartError(
            f"the {PJRT_DISTRIBUTION} wheel at {directory} has no {PJRT_LIBRARY} (a broken "
            f"install?); reinstall it: {INSTALL_HINT}"
        )
    return path


def missing_runtime(library: str, timeout_s: float = LOAD_TIMEOUT_S) -> list[MissingLibrary]:
    """The libraries ``library`` needs that do not load here (the others are left loaded)."""
    return call_within(
        lambda: missing_libraries(library, rocm_library_dirs()),
        timeout_s,
        error=MissingRocmPartError,
        timeout_message=f"loading the ROCm libraries {library} needs did not finish within "
        f"{timeout_s:g} s",
        thread_name="ember-rocm-library-load",
    )


def load_runtime(library: str, timeout_s: float = LOAD_TIMEOUT_S) -> None:
    """Load the ROCm libraries ``library`` needs, or raise ``MissingRocmPartError`` naming
    each one missing (and another ROCm release found in its place)."""
    missing = missing_runtime(library, timeout_s)
    if missing:
        raise MissingRocmPartError(runtime_message(library, missing))


def runtime_message(library: str, missing: list[MissingLibrary]) -> str:
    names = ", ".join(m.soname for m in missing)
    lines = "\n".join(f"  {m.describe()}" for m in missing)
    text = (
        f"missing ROCm runtime libraries: {names} (needed by {os.path.basename(library)} of "
        f"{PJRT_DISTRIBUTION}; looked for in its run path, {', '.join(rocm_library_dirs())} "
        f"and the loader's path):\n{lines}\n"
    )
    if any(m.other_versions for m in missing):
        text += (
            "another ROCm release is installed: this plugin's PJRT library (jax-rocm7-pjrt "
            "0.10.2) needs ROCm 7; install ROCm 7, or point ROCM_PATH at it"
        )
    else:
        text += (
            "install ROCm 7 (AMD's packages put it in /opt/rocm), or set ROCM_PATH or "
            "LD_LIBRARY_PATH to where it is"
        )
    return text


def ffi_extension() -> str | None:
    """The module name of the FFI extension when its wheel is installed (found, not imported)."""
    try:
        spec = importlib.util.find_spec(FFI_EXTENSION)
    except (ImportError, ValueError):
        spec = None
    return FFI_EXTENSION if spec is not None else None
