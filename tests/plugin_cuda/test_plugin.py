"""The CUDA plugin's hooks, and the order in which starting the backend checks things:
options, the driver, the CUDA wheels, then XLA's PJRT plugin (each stage faked here)."""

from __future__ import annotations

import importlib

import pytest
from ember_plugin_cuda import backend as cuda_backend, driver, libraries, plugin
from ember_plugin_cuda.driver import DriverReport, DriverUnavailableError
from ember_plugin_cuda.libraries import CudaLibrary, MissingCudaPartError, Preloaded

from ember import config
from ember._src.plugin import registries
from ember.errors import BackendError
from ember.extend import CollectiveRegistry, LoweringRegistry
from ember_plugin_kit import pjrt, triton


def test_the_platform_is_cuda_with_alias_gpu_above_cpu():
    (spec,) = plugin.ember_platforms()
    assert (spec.name, spec.aliases, spec.priority) == ("cuda", ("gpu",), 500)
    assert spec.make_backend is plugin.make_backend


def test_xla_runs_every_collective_on_cuda():
    registry = CollectiveRegistry()
    plugin.ember_register_collectives(registry)
    for name in plugin.XLA_COLLECTIVES:
        assert registry.implementation("cuda", name) == "xla"


def test_multi_process_jobs_use_xlas_coordination_service():
    assert isinstance(plugin.ember_distributed_runtime(), pjrt.XlaCoordination)


# -- the Pallas kernel compiler: ember_plugin_kit.triton, when the kit ships it --------------


def test_the_kits_triton_compiler_compiles_pallas_kernels_on_cuda(monkeypatch):
    monkeypatch.setattr(registries, "_kernel_compilers", {})
    registry = LoweringRegistry("cuda")
    plugin.ember_register_lowerings(registry)
    assert ("pallas_call", "cuda") in registry.registered
    assert registries.kernel_compiler("cuda") is triton.compile_pallas_call
    assert registries.kernel_compiler("cpu") is None


def test_the_triton_compiler_is_registered_for_cuda_when_the_kit_has_it(tmp_path, monkeypatch):
    (tmp_path / "ember_test_triton_stand_in.py").write_text(
        "calls = []\ndef register(registry, platform):\n    calls.append((registry, platform))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugin, "TRITON_MODULE", "ember_test_triton_stand_in")
    registry = LoweringRegistry("cuda")
    plugin.ember_register_lowerings(registry)
    stand_in = importlib.import_module("ember_test_triton_stand_in")
    assert stand_in.calls == [(registry, "cuda")]


def test_without_the_kits_triton_module_nothing_is_registered(monkeypatch):
    monkeypatch.setattr(plugin, "TRITON_MODULE", "ember_plugin_kit.no_such_triton")
    plugin.ember_register_lowerings(LoweringRegistry("cuda"))  # no error, nothing to register


# -- make_backend's stages -----------------------------------------------------------------------


class Stages:
    """Records which stages of make_backend ran; each stage's answer can be set."""

    def __init__(self, monkeypatch):
        self.ran: list[str] = []
        self.driver: DriverReport | Exception = DriverReport(2, (12, 9))
        self.library: str | Exception = "/site/jax_plugins/xla_cuda12/xla_cuda_plugin.so"
        self.preloaded: Preloaded | Exception = Preloaded(("libcudart.so.12",), ())
        self.client: object = pjrt.XlaRuntimeError("FAILED_PRECONDITION: No visible GPU devices.")
        self.client_call: tuple | None = None
        self.ffi: list[str] | Exception = ["xla_ffi_python_gpu_callback"]
        self.ffi_call: tuple | None = None
        monkeypatch.setattr(libraries, "ffi_extension", lambda: "fake_ffi_extension")
        monkeypatch.setattr(pjrt, "register_plugin_extension", self._register)
        monkeypatch.setattr(driver, "probe", self._stage("driver"))
        monkeypatch.setattr(libraries, "pjrt_library", self._stage("library"))
        monkeypatch.setattr(libraries, "preload_cuda_libraries", self._stage("preloaded"))
        monkeypatch.setattr(pjrt, "make_plugin_client", self._make_client)

    def _stage(self, name):
        def run(*args, **kwargs):
            self.ran.append(name)
            answer = getattr(self, name)
            if isinstance(answer, Exception):
                raise answer
            return answer

        return run

    def _register(self, *args):
        self.ran.append("ffi")
        self.ffi_call = args
        if isinstance(self.ffi, Exception):
            raise self.ffi
        return self.ffi

    def _make_client(self, name, library, options, job):
        self.ran.append("client")
        self.client_call = (name, library, options, job)
        if isinstance(self.client, Exception):
            raise self.client
        return self.client


@pytest.fixture
def stages(monkeypatch, fresh_options):
    return Stages(monkeypatch)


def test_bad_options_fail_before_the_driver_is_touched(stages, monkeypatch):
    # values from the environment arrive unchecked (ember's own are covered by the
    # subprocess tests): they are checked when the backend starts, before anything else
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "best")
    with pytest.raises(ValueError, match="XLA_PYTHON_CLIENT_ALLOCATOR='best': the allocator"):
        plugin.make_backend()
    assert stages.ran == []


def test_no_driver_is_the_reason_given_with_a_note_on_missing_wheels(stages):
    stages.driver = DriverUnavailableError("no NVIDIA driver: libcuda.so.1 could not be loaded")
    stages.library = MissingCudaPartError("missing CUDA wheel: jax-cuda12-pjrt")
    with pytest.raises(BackendError) as caught:
        plugin.make_backend()
    assert str(caught.value) == (
        "no NVIDIA driver: libcuda.so.1 could not be loaded; the CUDA wheels are not installed "
        "either (pip install 'ember-plugin-cuda[cuda12]')"
    )
    assert stages.ran == ["driver", "library"]


def test_visible_devices_beyond_the_gpus_fail_before_loading_anything(stages):
    with config.option("cuda_visible_devices", "1,2"):
        with pytest.raises(ValueError, match=r"GPU 2 does not exist; this process sees 2 GPU"):
            plugin.make_backend()
    assert stages.ran == ["driver"]


def test_missing_wheels_are_the_reason_when_the_driver_is_fine(stages):
    stages.preloaded = MissingCudaPartError("missing CUDA wheel(s): libcudnn.so.9")
    with pytest.raises(BackendError, match=r"^missing CUDA wheel\(s\): libcudnn.so.9$"):
        plugin.make_backend()
    assert stages.ran == ["driver", "library", "preloaded"]


def test_the_pjrt_client_gets_the_options_and_its_failure_is_explained(stages):
    with (
        config.option("cuda_visible_devices", [1]),
        config.option("cuda_memory_fraction", 0.5),
        config.option("cuda_allocator", "bfc"),
    ):
        with pytest.raises(BackendError) as caught:
            plugin.make_backend()
    assert stages.ran == ["driver", "library", "preloaded", "ffi", "client"]
    assert stages.ffi_call == (
        "cuda",
        stages.library,
        "fake_ffi_extension",
        "CUDA",
        ("jax_cuda12_plugin._solver", "jax_cuda12_plugin._linalg"),
    )
    name, library, options, job = stages.client_call
    assert (name, library, job) == ("cuda", stages.library, None)
    assert options == {
        "platform_name": "cuda",
        "allocator": "bfc",
        "memory_fraction": 0.5,
        "visible_devices": [1],
    }
    assert str(caught.value) == (
        "XLA's CUDA plugin could not start (2 GPU(s) visible, driver for CUDA 12.9, options "
        f"{options}): FAILED_PRECONDITION: No visible GPU devices."
    )


def test_a_started_backend_reports_its_cuda_parts_and_fixes_its_options(stages, monkeypatch):
    # XLA's CPU client stands in for the CUDA one: the backend around it is the same
    stages.client = pjrt.make_cpu_client(2)
    nvcc = "/site/nvidia/cuda_nvcc"
    monkeypatch.setattr(libraries, "cuda_data_dir", lambda: nvcc)
    stages.preloaded = Preloaded(
        ("libcudart.so.12",), (CudaLibrary("nccl", "libnccl.so.2", "nvidia-nccl-cu12"),)
    )
    with config.option("cuda_memory_fraction", 0.5):
        backend = plugin.make_backend()
        assert isinstance(backend, cuda_backend.CudaBackend)
        assert backend.platform == "cuda" and len(backend.devices()) == 2
        assert backend.debug_options == {"xla_gpu_cuda_data_dir": nvcc}
        versions = backend.versions()
        assert versions["NVIDIA driver"] == "supports CUDA 12.9"
        assert versions["ptxas and libdevice"] == nvcc
        assert versions["CUDA libraries not found (some operations will fail)"] == (
            "libnccl.so.2 (nvidia-nccl-cu12)"
        )
        assert versions["FFI handlers registered"] == "xla_ffi_python_gpu_callback"
        assert "jaxlib" in versions
    with pytest.raises(BackendError, match="already started with cuda_memory_fraction=0.5"):
        with config.option("cuda_memory_fraction", 0.9):
            pass


def test_a_multi_process_job_is_handed_to_the_pjrt_client(stages, monkeypatch):
    # the kit's make_plugin_client turns the job into the client's distributed client and
    # node_id / num_nodes / visible_devices options (NCCL's ids travel through its store)
    job = object()
    monkeypatch.setattr(plugin, "current_job", lambda: job)
    with pytest.raises(BackendError):
        plugin.make_backend()
    assert stages.client_call[3] is job


def test_without_the_ffi_extension_the_backend_starts_and_says_what_is_missing(stages, monkeypatch):
    stages.client = pjrt.make_cpu_client(1)
    monkeypatch.setattr(libraries, "ffi_extension", lambda: None)
    backend = plugin.make_backend()
    assert "ffi" not in stages.ran
    assert backend.versions()["host callbacks on the GPU"] == (
        "unavailable: jax-cuda12-plugin is not installed"
    )


def test_an_ffi_extension_that_fails_to_import_is_reported_not_raised(stages, monkeypatch):
    stages.client = pjrt.make_cpu_client(1)
    stages.ffi = ImportError("libcudart.so.12: cannot open shared object file")
    backend = plugin.make_backend()
    assert backend.versions()["host callbacks on the GPU"] == (
        "unavailable: fake_ffi_extension could not be imported: libcudart.so.12: cannot open "
        "shared object file"
    )
