"""Where the CUDA parts are installed: XLA's CUDA PJRT library and NVIDIA's CUDA wheels.

Everything is found through Python's import system (``importlib.util.find_spec``), without
importing the packages: ``jax_plugins.xla_cuda12`` would import jax, and the ``nvidia.*``
packages are namespace packages with nothing to run. The PJRT library is used where it is
installed, never copied: its RPATH (``$ORIGIN/../../nvidia/<part>/lib``) finds the CUDA
libraries of the wheels installed beside it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from dataclasses import dataclass

from ember_plugin_kit.gpu import package_directory

# The wheel that ships XLA's CUDA 12 PJRT plugin, the package it installs and the library in it.
PJRT_DISTRIBUTION = "jax-cuda12-pjrt"
PJRT_PACKAGE = "jax_plugins.xla_cuda12"
PJRT_LIBRARY = "xla_cuda_plugin.so"

# What `pip install` brings everything the platform needs.
INSTALL_HINT = "pip install 'ember-plugin-cuda[cuda12]'"


@dataclass(frozen=True)
class CudaLibrary:
    """A CUDA library from one of NVIDIA's wheels: ``nvidia.<package>/lib/<soname>``.
    ``required``: XLA cannot compile or run any program on a GPU without it; the others serve
    some operations only (collectives, FFTs, the profiler, ...)."""

    package: str
    soname: str
    distribution: str
    required: bool = False


# The libraries XLA's CUDA plugin opens (with dlopen, when it needs them), in an order where
# each one's own dependencies come first (nvJitLink before cuSPARSE and cuSOLVER, cuBLASLt
# before cuBLAS). They are loaded before the plugin, as JAX's CUDA plugin does, so that
# XLA's later dlopen of each soname finds the wheels' copy rather than an older system CUDA
# on the loader's path.
CUDA_LIBRARIES = (
    CudaLibrary("cuda_runtime", "libcudart.so.12", "nvidia-cuda-runtime-cu12", required=True),
    CudaLibrary("cuda_nvrtc", "libnvrtc.so.12", "nvidia-cuda-nvrtc-cu12"),
    CudaLibrary("nvjitlink", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12"),
    CudaLibrary("cublas", "libcublasLt.so.12", "nvidia-cublas-cu12", required=True),
    CudaLibrary("cublas", "libcublas.so.12", "nvidia-cublas-cu12", required=True),
    CudaLibrary("nccl", "libnccl.so.2", "nvidia-nccl-cu12"),
    CudaLibrary("cuda_cupti", "libcupti.so.12", "nvidia-cuda-cupti-cu12"),
    CudaLibrary("cusparse", "libcusparse.so.12", "nvidia-cusparse-cu12"),
    CudaLibrary("cusolver", "libcusolver.so.11", "nvidia-cusolver-cu12"),
    CudaLibrary("cufft", "libcufft.so.11", "nvidia-cufft-cu12"),
    CudaLibrary("nvshmem", "libnvshmem_host.so.3", "nvidia-nvshmem-cu12"),
    CudaLibrary("cudnn", "libcudnn.so.9", "nvidia-cudnn-cu12", required=True),
)

# The wheel with the FFI handlers XLA's CUDA plugin does not carry itself, registered with it
# before its first client: host callbacks on the GPU (debug.print, pure_callback, io_callback:
# ``xla_ffi_python_gpu_callback``, buffer callbacks) and the types they use.
FFI_DISTRIBUTION = "jax-cuda12-plugin"
FFI_EXTENSION = "jax_cuda12_plugin.cuda_plugin_extension"
# The same wheel's cuSOLVER handlers (``cusolver_potrf_ffi``, ...) and GPU linear algebra
# helpers (``cu_lu_pivots_to_permutation``, ...), for lowerings of linear algebra on cuda.
LINALG_HANDLER_MODULES = ("jax_cuda12_plugin._solver", "jax_cuda12_plugin._linalg")

# The namespace package NVIDIA's CUDA wheels install into (``nvidia.cublas``, ...).
NVIDIA_NAMESPACE = "nvidia"

# The wheel with ptxas and libdevice, which XLA's GPU compiler runs and links.
NVCC_PACKAGE = "cuda_nvcc"
NVCC_DISTRIBUTION = "nvidia-cuda-nvcc-cu12"


class MissingCudaPartError(Exception):
    """A part the platform needs is not installed; the message names it and how to get it."""


def pjrt_library() -> str:
    """The path of XLA's CUDA PJRT library in the installed ``jax-cuda12-pjrt`` wheel."""
    directory = package_directory(PJRT_PACKAGE)
    if directory is None:
        raise MissingCudaPartError(
            f"missing CUDA wheel: {PJRT_DISTRIBUTION} (XLA's CUDA PJRT plugin, package "
            f"{PJRT_PACKAGE}) is not installed; {INSTALL_HINT}"
        )
    path = os.path.join(directory, PJRT_LIBRARY)
    if not os.path.isfile(path):
        raise MissingCudaPartError(
            f"the {PJRT_DISTRIBUTION} wheel at {directory} has no {PJRT_LIBRARY} (a broken "
            f"install?); reinstall it: {INSTALL_HINT}"
        )
    return path


def ffi_extension() -> str | None:
    """The module name of the FFI extension when its wheel is installed (found, not imported:
    its package's ``__init__`` is empty)."""
    try:
        spec = importlib.util.find_spec(FFI_EXTENSION)
    except (ImportError, ValueError):
        spec = None
    return FFI_EXTENSION if spec is not None else None


def library_path(library: CudaLibrary) -> str | None:
    """Where ``library``'s wheel put it, or None when that wheel is not installed."""
    directory = package_directory(f"{NVIDIA_NAMESPACE}.{library.package}")
    if directory is None:
        return None
    path = os.path.join(directory, "lib", library.soname)
    return path if os.path.isfile(path) else None


@dataclass(frozen=True)
class Preloaded:
    """What ``preload_cuda_libraries`` found: the paths loaded (a bare soname: from the
    loader's search path) and the optional libraries found nowhere."""

    loaded: tuple[str, ...]
    missing_optional: tuple[CudaLibrary, ...]


def preload_cuda_libraries(libraries: tuple[CudaLibrary, ...] = CUDA_LIBRARIES) -> Preloaded:
    """Load the CUDA libraries, each from its wheel when installed, else from the loader's
    search path (a system CUDA install). Raises ``MissingCudaPartError`` naming every required
    library found nowhere and the wheels that bring them."""
    loaded, missing = [], []
    for library in libraries:
        path = library_path(library)
        try:
            ctypes.CDLL(path or library.soname)
        except OSError as exc:
            missing.append((library, path, exc))
            continue
        loaded.append(path or library.soname)
    required = [(lib, path, exc) for lib, path, exc in missing if lib.required]
    if required:
        lines = [
            f"  {library.soname} ({library.distribution}): "
            + (f"{path} failed to load: {exc}" if path else "not installed")
            for library, path, exc in required
        ]
        wheels = " ".join(sorted({library.distribution for library, _, _ in required}))
        raise MissingCudaPartError(
            "missing CUDA wheel(s): these CUDA libraries were found neither in NVIDIA's "
            "wheels nor on the library path:\n" + "\n".join(lines) + f"\n{INSTALL_HINT} "
            f"(or pip install {wheels})"
        )
    optional = tuple(lib for lib, _, _ in missing if not lib.required)
    return Preloaded(tuple(loaded), optional)


def cuda_data_dir() -> str | None:
    """The directory XLA's GPU compiler finds ``bin/ptxas`` and ``nvvm/libdevice`` in: the
    ``nvidia-cuda-nvcc-cu12`` wheel's, when installed (else XLA searches its own defaults,
    such as ``/usr/local/cuda``)."""
    directory = package_directory(f"{NVIDIA_NAMESPACE}.{NVCC_PACKAGE}")
    if directory is None or not os.path.isfile(os.path.join(directory, "bin", "ptxas")):
        return None
    return directory
