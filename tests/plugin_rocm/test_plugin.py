"""The ROCm plugin's hooks, and the order in which starting the backend checks things:
options, the driver, the PJRT wheel and the ROCm runtime it links, then XLA's PJRT plugin
(each stage faked here)."""

from __future__ import annotations

import pytest
from ember_plugin_rocm import backend as rocm_backend, driver, libraries, plugin
from ember_plugin_rocm.driver import DriverReport, DriverUnavailableError
from ember_plugin_rocm.libraries import MissingRocmPartError

from ember import config
from ember._src.plugin import registries
from ember.errors import BackendError
from ember.extend import CollectiveRegistry
from ember_plugin_kit import pjrt
from ember_plugin_kit.gpu import MissingLibrary


def test_the_platform_is_rocm_above_cpu():
    (spec,) = plugin.ember_platforms()
    assert (spec.name, spec.aliases, spec.priority) == ("rocm", (), 500)
    assert spec.make_backend is plugin.make_backend


def test_xla_runs_every_collective_on_rocm():
    registry = CollectiveRegistry()
    plugin.ember_register_collectives(registry)
    for name in plugin.XLA_COLLECTIVES:
        assert registry.implementation("rocm", name) == "xla"


def test_multi_process_jobs_use_xlas_coordination_service():
    assert isinstance(plugin.ember_distributed_runtime(), pjrt.XlaCoordination)


def test_no_pallas_kernel_compiler_is_registered_for_rocm():
    # the kit's Triton compiler calls CUDA's libdevice: Pallas kernels run interpreted here
    assert not hasattr(plugin, "ember_register_lowerings")
    assert registries.kernel_compiler("rocm") is None


class Stages:
    """Records which stages of make_backend ran; each stage's answer can be set."""

    def __init__(self, monkeypatch):
        self.ran: list[str] = []
        self.driver: DriverReport | Exception = DriverReport(2, 70051831)
        self.library: str | Exception = "/site/jax_plugins/xla_rocm7/xla_rocm_plugin.so"
        self.runtime: None | Exception = None
        self.missing: list[MissingLibrary] = []
        self.client: object = pjrt.XlaRuntimeError("INTERNAL: no ROCm device")
        self.client_call: tuple | None = None
        self.ffi: list[str] | Exception = ["xla_ffi_python_gpu_callback"]
        self.ffi_call: tuple | None = None
        monkeypatch.setattr(libraries, "ffi_extension", lambda: "fake_rocm_extension")
        monkeypatch.setattr(pjrt, "register_plugin_extension", self._register)
        monkeypatch.setattr(driver, "probe", self._stage("driver"))
        monkeypatch.setattr(libraries, "pjrt_library", self._stage("library"))
        monkeypatch.setattr(libraries, "load_runtime", self._stage("runtime"))
        monkeypatch.setattr(libraries, "missing_runtime", self._stage("missing"))
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
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", "0")
    with pytest.raises(ValueError, match=r"XLA_PYTHON_CLIENT_MEM_FRACTION='0': the memory"):
        plugin.make_backend()
    assert stages.ran == []


def test_no_driver_is_the_reason_with_a_note_on_the_missing_wheel(stages):
    stages.driver = DriverUnavailableError("no AMD GPU driver: /dev/kfd does not exist")
    stages.library = MissingRocmPartError("missing ROCm wheel: jax-rocm7-pjrt")
    with pytest.raises(BackendError) as caught:
        plugin.make_backend()
    assert str(caught.value) == (
        "no AMD GPU driver: /dev/kfd does not exist; the ROCm PJRT wheel is not installed "
        "either (pip install 'ember-plugin-rocm[rocm7]')"
    )
    assert stages.ran == ["driver", "library"]


def test_no_driver_is_the_reason_with_a_note_on_the_missing_runtime(stages):
    stages.driver = DriverUnavailableError("no AMD GPU driver: /dev/kfd does not exist")
    stages.missing = [MissingLibrary("librccl.so.1", "x"), MissingLibrary("libamdhip64.so.7", "y")]
    with pytest.raises(BackendError) as caught:
        plugin.make_backend()
    assert str(caught.value) == (
        "no AMD GPU driver: /dev/kfd does not exist; ROCm runtime libraries are missing too: "
        "librccl.so.1, libamdhip64.so.7"
    )


def test_visible_devices_beyond_the_gpus_fail_before_loading_anything(stages):
    with config.option("rocm_visible_devices", "1,2"):
        with pytest.raises(ValueError, match="GPU 2 does not exist; this process sees 2 GPU"):
            plugin.make_backend()
    assert stages.ran == ["driver"]


def test_a_missing_runtime_library_fails_before_the_pjrt_library_is_loaded(stages):
    stages.runtime = MissingRocmPartError("missing ROCm runtime libraries: librccl.so.1 (...)")
    with pytest.raises(BackendError, match=r"^missing ROCm runtime libraries: librccl.so.1"):
        plugin.make_backend()
    assert stages.ran == ["driver", "library", "runtime"]


def test_xlas_error_is_reported_with_what_the_driver_said(stages):
    with config.option("rocm_visible_devices", "1"), config.option("rocm_allocator", "bfc"):
        with pytest.raises(BackendError) as caught:
            plugin.make_backend()
    assert str(caught.value) == (
        "XLA's ROCm plugin could not start (2 GPU(s) visible, HIP driver 7.0.51831, options "
        "{'platform_name': 'ROCM', 'allocator': 'bfc', 'visible_devices': [1]}): INTERNAL: no "
        "ROCm device"
    )
    assert stages.ran == ["driver", "library", "runtime", "ffi", "client"]
    assert stages.ffi_call == ("rocm", stages.library, "fake_rocm_extension", "ROCM")
    assert stages.client_call[:3] == (
        "rocm",
        stages.library,
        {"platform_name": "ROCM", "allocator": "bfc", "visible_devices": [1]},
    )


def test_a_started_backend_reports_the_rocm_parts_and_fixes_its_options(stages):
    stages.client = pjrt.make_cpu_client(2)  # a real client stands in for the GPUs
    with config.option("rocm_memory_fraction", 0.5):
        backend = plugin.make_backend()
        assert isinstance(backend, rocm_backend.RocmBackend)
        assert backend.platform == "rocm" and len(backend.devices()) == 2
        versions = backend.versions()
        assert versions["HIP driver"] == "7.0.51831"
        assert versions["FFI handlers registered"] == "xla_ffi_python_gpu_callback"
        assert versions["Pallas kernels"].startswith("interpreted")
    with pytest.raises(BackendError, match="already started with rocm_memory_fraction=0.5"):
        with config.option("rocm_memory_fraction", 0.9):
            pass


def test_an_ffi_extension_that_fails_to_import_is_reported_not_raised(stages):
    stages.client = pjrt.make_cpu_client(1)
    stages.ffi = ImportError("libamdhip64.so.7: cannot open shared object file")
    backend = plugin.make_backend()
    assert backend.versions()["host callbacks on the GPU"] == (
        "unavailable: fake_rocm_extension could not be imported: libamdhip64.so.7: cannot open "
        "shared object file"
    )


def test_without_the_ffi_extension_the_backend_starts(stages, monkeypatch):
    stages.client = pjrt.make_cpu_client(1)
    monkeypatch.setattr(libraries, "ffi_extension", lambda: None)
    backend = plugin.make_backend()
    assert "ffi" not in stages.ran
    assert backend.versions()["host callbacks on the GPU"] == (
        "unavailable: jax-rocm7-plugin is not installed"
    )
