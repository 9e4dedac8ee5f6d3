"""The NVIDIA driver probe: each reason a machine cannot run the plugin, with the driver's
own error names, and the deadline on a driver that never answers."""

from __future__ import annotations

import threading

import pytest
from ember_plugin_cuda import driver
from ember_plugin_cuda.driver import DriverReport, DriverUnavailableError

NO_DEVICE = 100


class FakeDriver:
    """The driver API functions the probe calls, answering as told."""

    def __init__(self, version=12090, init=0, count=2, init_blocks_on=None):
        self.version, self.init, self.count = version, init, count
        self.init_blocks_on = init_blocks_on

    def cuDriverGetVersion(self, out):
        out.contents.value = self.version
        return 0

    def cuInit(self, flags):
        if self.init_blocks_on is not None:
            self.init_blocks_on.wait(10)
        return self.init

    def cuDeviceGetCount(self, out):
        out.contents.value = self.count
        return 0

    def cuGetErrorName(self, status, out):
        if status != NO_DEVICE:
            return 1
        out.contents.value = b"CUDA_ERROR_NO_DEVICE"
        return 0

    def cuGetErrorString(self, status, out):
        out.contents.value = b"no CUDA-capable device is detected"
        return 0


def test_a_working_driver_reports_its_gpus_and_cuda_version():
    assert driver.ask(FakeDriver(version=12040, count=8)) == DriverReport(8, (12, 4))


def test_no_driver_library():
    with pytest.raises(
        DriverUnavailableError,
        match=r"^no NVIDIA driver: libnot_cuda.so.7 could "
        r"not be loaded \(libnot_cuda.so.7: cannot open shared object file",
    ):
        driver.probe("libnot_cuda.so.7")


def test_a_driver_too_old_for_cuda_12():
    with pytest.raises(
        DriverUnavailableError,
        match=r"supports CUDA 11.8, but this plugin is "
        r"built for CUDA 12 .* upgrade the NVIDIA driver",
    ):
        driver.ask(FakeDriver(version=11080))


def test_cuinit_failing_is_named_by_the_driver():
    with pytest.raises(
        DriverUnavailableError,
        match=r"^No visible GPU devices: cuInit failed: "
        r"CUDA_ERROR_NO_DEVICE \(100\): no CUDA-capable device is detected$",
    ):
        driver.ask(FakeDriver(init=NO_DEVICE))
    # a code the driver has no name for is still reported
    with pytest.raises(DriverUnavailableError, match=r"cuInit failed: CUDA error 999$"):
        driver.ask(FakeDriver(init=999))


def test_a_driver_that_sees_no_gpu():
    with pytest.raises(
        DriverUnavailableError,
        match=r"^No visible GPU devices: the NVIDIA driver "
        r"is loaded but sees no GPU \(check CUDA_VISIBLE_DEVICES",
    ):
        driver.ask(FakeDriver(count=0))


def test_a_hung_driver_is_given_up_on_at_the_deadline():
    release = threading.Event()
    try:
        with pytest.raises(
            DriverUnavailableError,
            match=r"did not finish initialising within "
            r"0.2 s \(cuInit hung\)",
        ):
            driver.ask(FakeDriver(init_blocks_on=release), timeout_s=0.2)
    finally:
        release.set()


def test_the_real_ctypes_path_with_a_stand_in_driver(fake_driver_dir, monkeypatch):
    library = str(fake_driver_dir / "libcuda.so.1")
    monkeypatch.setenv("FAKE_CUDA_COUNT", "3")
    monkeypatch.setenv("FAKE_CUDA_VERSION", "12020")
    assert driver.probe(library) == DriverReport(3, (12, 2))
    monkeypatch.setenv("FAKE_CUDA_INIT", "100")
    with pytest.raises(
        DriverUnavailableError, match=r"cuInit failed: CUDA_ERROR_NO_DEVICE \(100\)"
    ):
        driver.probe(library)


def test_this_machines_driver_answers_quickly():
    # whatever this machine has (no driver, no GPU, GPUs), the answer comes at once
    try:
        found = driver.probe(timeout_s=10)
    except DriverUnavailableError as exc:
        assert str(exc).startswith(("no NVIDIA driver", "No visible GPU devices", "the NVIDIA"))
    else:
        assert found.device_count > 0 and found.cuda_version >= (12, 0)
