"""Finding the CUDA parts by where their packages are installed: the PJRT library of
jax-cuda12-pjrt, NVIDIA's CUDA libraries, ptxas and libdevice (a fake site-packages tree)."""

from __future__ import annotations

import importlib
import pathlib
import shutil
import sys
from collections.abc import Iterator

import pytest
from ember_plugin_cuda import libraries
from ember_plugin_cuda.libraries import CudaLibrary, MissingCudaPartError

from tests.plugin_cuda.util import project

# The fakes are installed under names of their own, so that real CUDA wheels installed
# here (the cuda tox env) neither hide nor join them.
FAKE_JAX_PLUGINS = "ember_test_jax_plugins"
FAKE_NVIDIA = "ember_test_nvidia"


@pytest.fixture
def site(tmp_path, monkeypatch) -> Iterator[pathlib.Path]:
    """An empty directory first on sys.path, for fake installed packages."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(libraries, "PJRT_PACKAGE", f"{FAKE_JAX_PLUGINS}.xla_cuda12")
    monkeypatch.setattr(libraries, "NVIDIA_NAMESPACE", FAKE_NVIDIA)
    importlib.invalidate_caches()
    yield tmp_path
    monkeypatch.undo()
    for name in list(sys.modules):  # the fakes' namespace packages remember where they were
        if name.partition(".")[0] in (FAKE_JAX_PLUGINS, FAKE_NVIDIA):
            del sys.modules[name]


def install_pjrt(site: pathlib.Path, *, with_library: bool = True) -> pathlib.Path:
    package = site / FAKE_JAX_PLUGINS / "xla_cuda12"
    package.mkdir(parents=True)
    # jax's own module imports jax: finding it must not run it
    (package / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    if with_library:
        (package / "xla_cuda_plugin.so").write_bytes(b"\x7fELF")
    return package


def install_library(site: pathlib.Path, package: str, soname: str, source: str) -> pathlib.Path:
    lib = site / FAKE_NVIDIA / package / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, lib / soname)
    return lib / soname


def test_the_pjrt_library_is_found_where_its_wheel_is_installed(site):
    package = install_pjrt(site)
    assert libraries.pjrt_library() == str(package / "xla_cuda_plugin.so")
    assert f"{FAKE_JAX_PLUGINS}.xla_cuda12" not in sys.modules


def test_a_missing_pjrt_wheel_is_named_with_the_install_command(site):
    with pytest.raises(
        MissingCudaPartError,
        match=r"^missing CUDA wheel: jax-cuda12-pjrt .* is "
        r"not installed; pip install 'ember-plugin-cuda\[cuda12\]'$",
    ):
        libraries.pjrt_library()


def test_a_pjrt_wheel_without_its_library(site):
    install_pjrt(site, with_library=False)
    with pytest.raises(MissingCudaPartError, match=r"has no xla_cuda_plugin.so \(a broken install"):
        libraries.pjrt_library()


def test_required_libraries_missing_everywhere_name_their_wheels(site):
    wanted = (
        CudaLibrary("cuda_runtime", "libember_no_cudart.so.12", "nvidia-cuda-runtime-cu12", True),
        CudaLibrary("cudnn", "libember_no_cudnn.so.9", "nvidia-cudnn-cu12", True),
        CudaLibrary("nccl", "libember_no_nccl.so.2", "nvidia-nccl-cu12"),
    )
    with pytest.raises(MissingCudaPartError) as caught:
        libraries.preload_cuda_libraries(wanted)
    message = str(caught.value)
    assert "libember_no_cudart.so.12 (nvidia-cuda-runtime-cu12): not installed" in message
    assert "libember_no_cudnn.so.9 (nvidia-cudnn-cu12): not installed" in message
    assert "nccl" not in message  # optional
    assert message.endswith("(or pip install nvidia-cuda-runtime-cu12 nvidia-cudnn-cu12)")


def test_libraries_load_from_their_wheels_and_optional_ones_may_be_missing(site, fake_driver_dir):
    # any shared library stands in for a CUDA one: the stand-in driver
    source = str(fake_driver_dir / "libcuda.so.1")
    path = install_library(site, "cuda_runtime", "libcudart_ember_test.so.12", source)
    wanted = (
        CudaLibrary("cuda_runtime", "libcudart_ember_test.so.12", "nvidia-cuda-runtime-cu12", True),
        CudaLibrary("nccl", "libember_no_nccl.so.2", "nvidia-nccl-cu12"),
    )
    found = libraries.preload_cuda_libraries(wanted)
    assert found.loaded == (str(path),)
    assert [lib.soname for lib in found.missing_optional] == ["libember_no_nccl.so.2"]


def test_a_wheels_library_that_fails_to_load_says_why(site):
    lib = site / FAKE_NVIDIA / "cublas" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcublas_ember_test.so.12").write_text("not a shared object")
    wanted = (CudaLibrary("cublas", "libcublas_ember_test.so.12", "nvidia-cublas-cu12", True),)
    with pytest.raises(
        MissingCudaPartError,
        match=r"libcublas_ember_test.so.12 "
        r"\(nvidia-cublas-cu12\): .*libcublas_ember_test.so.12 failed to load",
    ):
        libraries.preload_cuda_libraries(wanted)


def test_the_plugins_library_list_matches_the_wheels_it_pins():
    # every library comes from a wheel of the cuda12 extra, under its real soname
    pinned = {
        spec.split(">")[0].split("=")[0] for spec in project()["optional-dependencies"]["cuda12"]
    }
    assert {lib.distribution for lib in libraries.CUDA_LIBRARIES} <= pinned
    required = {lib.soname for lib in libraries.CUDA_LIBRARIES if lib.required}
    assert required == {"libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9"}


def test_ptxas_and_libdevice_come_from_the_nvcc_wheel(site):
    assert libraries.cuda_data_dir() is None
    nvcc = site / FAKE_NVIDIA / "cuda_nvcc"
    (nvcc / "bin").mkdir(parents=True)
    (nvcc / "nvvm" / "libdevice").mkdir(parents=True)
    assert libraries.cuda_data_dir() is None  # no ptxas yet
    (nvcc / "bin" / "ptxas").write_text("")
    importlib.invalidate_caches()
    assert libraries.cuda_data_dir() == str(nvcc)
