"""The AMD driver probe: /dev/kfd, HIP's device count asked in a child process (a stand-in
libamdhip64 here), each reason a machine cannot run the plugin, and the deadline."""

from __future__ import annotations

import os
import time

import pytest
from ember_plugin_rocm import driver
from ember_plugin_rocm.driver import DriverReport, DriverUnavailableError


@pytest.fixture
def kfd(tmp_path):
    """A stand-in for /dev/kfd: a file this user can open."""
    path = tmp_path / "kfd"
    path.write_bytes(b"")
    return str(path)


def test_answers_become_a_report_or_the_reason():
    assert driver.interpret({"count": 8, "driver_version": 70051831}) == DriverReport(8, 70051831)
    assert DriverReport(8, 70051831).version_text == "7.0.51831"
    assert DriverReport(1, None).version_text == "unknown"
    with pytest.raises(DriverUnavailableError, match=r"^No visible GPU devices: HIP is loaded"):
        driver.interpret({"count": 0, "driver_version": 70051831})
    with pytest.raises(
        DriverUnavailableError,
        match=r"^no HIP runtime: libamdhip64.so.7 could not be loaded \(nope\); install ROCm 7",
    ):
        driver.interpret({"load_error": "nope"})


def test_no_kernel_driver(tmp_path):
    missing = str(tmp_path / "kfd")
    with pytest.raises(
        DriverUnavailableError,
        match=rf"^no AMD GPU driver: {missing} does not exist \(the amdgpu kernel driver",
    ):
        driver.probe(kfd=missing)


def test_a_kernel_driver_this_user_cannot_open(kfd):
    os.chmod(kfd, 0)
    if os.access(kfd, os.R_OK):
        pytest.skip("this user (root) may open any file")
    with pytest.raises(
        DriverUnavailableError, match=r"no access to the AMD GPU driver: .* 'render'"
    ):
        driver.probe(kfd=kfd)


def test_hip_through_the_child_process(fake_hip, kfd, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_COUNT", "4")
    assert driver.probe(str(fake_hip), kfd=kfd) == DriverReport(4, 70051831)


def test_the_hip_library_is_looked_for_in_the_rocm_directories_first(fake_hip, kfd):
    found = driver.probe(kfd=kfd, search_dirs=["/no/such/dir", str(fake_hip.parent)])
    assert found == DriverReport(1, 70051831)


def test_hip_failing_to_count_is_named_by_hip(fake_hip, kfd, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_STATUS", "100")
    with pytest.raises(
        DriverUnavailableError,
        match=r"^No visible GPU devices: hipGetDeviceCount failed: hipErrorNoDevice \(100\): "
        r"no ROCm-capable device is detected$",
    ):
        driver.probe(str(fake_hip), kfd=kfd)


def test_hip_that_sees_no_gpu(fake_hip, kfd, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_COUNT", "0")
    with pytest.raises(DriverUnavailableError, match=r"HIP is loaded but sees no GPU \(check HIP"):
        driver.probe(str(fake_hip), kfd=kfd)


def test_no_hip_runtime(kfd):
    with pytest.raises(
        DriverUnavailableError,
        match=r"^no HIP runtime: libnot_hip.so.7 could not be loaded \(libnot_hip.so.7: cannot "
        r"open shared object file",
    ):
        driver.probe("libnot_hip.so.7", kfd=kfd)


def test_a_hung_hip_is_given_up_on_at_the_deadline(fake_hip, kfd, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_HANG", "1")
    started = time.monotonic()
    with pytest.raises(
        DriverUnavailableError,
        match=r"^HIP did not count the GPUs within 1 s \(hipGetDeviceCount hung\)",
    ):
        driver.probe(str(fake_hip), kfd=kfd, timeout_s=1)
    assert time.monotonic() - started < 10  # the child was killed, not waited for


def test_this_machines_driver_answers_quickly():
    started = time.monotonic()
    try:
        found = driver.probe(timeout_s=10)
    except DriverUnavailableError as exc:
        assert str(exc).startswith(("no AMD GPU driver", "no access", "no HIP", "No visible GPU"))
    else:
        assert found.device_count > 0
    assert time.monotonic() - started < 15
