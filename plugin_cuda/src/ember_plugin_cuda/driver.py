"""A cheap look at the NVIDIA driver before XLA's CUDA plugin is loaded.

Loading the PJRT library and creating its client takes seconds and, without a GPU, ends in a
terse ``No visible GPU devices``. The driver API answers the questions that matter first (is
there a driver, does it support CUDA 12, how many GPUs does this process see) in
milliseconds, with the driver's own error names, so a machine without a GPU gets the real
reason at once. The calls run with a deadline (the kit's ``call_within``): a wedged driver
can block ``cuInit`` indefinitely, and the user then gets an error instead of a hang.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ember_plugin_kit.gpu import call_within

# The driver library every CUDA program loads; its soname is stable across driver releases.
DRIVER_LIBRARY = "libcuda.so.1"

# How long the driver may take to initialise before ember gives up on it.
PROBE_TIMEOUT_S = 20.0

# The oldest driver API version the plugin's CUDA 12 build runs on (CUDA 12.0 drivers run
# later 12.x builds through minor-version compatibility); cuDriverGetVersion reports
# 1000 * major + 10 * minor.
MINIMUM_DRIVER_VERSION = 12000

CUDA_SUCCESS = 0


@dataclass(frozen=True)
class DriverReport:
    """What the driver said: ``device_count`` GPUs visible to this process (after
    ``CUDA_VISIBLE_DEVICES``) and the CUDA version it supports, as ``(major, minor)``."""

    device_count: int
    cuda_version: tuple[int, int]


class DriverUnavailableError(Exception):
    """The driver cannot run the plugin here; the message says why, for a user to act on."""


def probe(library: str = DRIVER_LIBRARY, timeout_s: float = PROBE_TIMEOUT_S) -> DriverReport:
    """Ask the driver for its version and the number of visible GPUs, or raise
    ``DriverUnavailableError`` with the reason (no driver, too old, no GPU, initialisation
    failed, or no answer within ``timeout_s`` seconds)."""
    try:
        driver = ctypes.CDLL(library)
    except OSError as exc:
        raise DriverUnavailableError(
            f"no NVIDIA driver: {library} could not be loaded ({exc}); install the NVIDIA "
            f"driver, or run where one is (a container needs the GPU passed through)"
        ) from None
    return ask(driver, timeout_s)


def ask(driver: Any, timeout_s: float = PROBE_TIMEOUT_S) -> DriverReport:
    """``probe`` on a loaded driver library (any object with the driver API's functions)."""
    return call_within(
        lambda: _ask(driver),
        timeout_s,
        error=DriverUnavailableError,
        timeout_message=f"the NVIDIA driver did not finish initialising within {timeout_s:g} s "
        f"(cuInit hung): check the GPU with nvidia-smi",
        thread_name="ember-cuda-driver-probe",
    )


def _ask(driver: Any) -> DriverReport:
    version = ctypes.c_int(0)
    status = driver.cuDriverGetVersion(ctypes.pointer(version))
    if status != CUDA_SUCCESS:
        raise DriverUnavailableError(
            f"the NVIDIA driver's version is unknown: {_name(driver, status)}"
        )
    cuda_version = (version.value // 1000, version.value % 1000 // 10)
    if version.value < MINIMUM_DRIVER_VERSION:
        raise DriverUnavailableError(
            f"the NVIDIA driver supports CUDA {cuda_version[0]}.{cuda_version[1]}, but this "
            f"plugin is built for CUDA 12 (driver API {MINIMUM_DRIVER_VERSION // 1000}.0 or "
            f"later): upgrade the NVIDIA driver"
        )
    status = driver.cuInit(0)
    if status != CUDA_SUCCESS:
        raise DriverUnavailableError(
            f"No visible GPU devices: cuInit failed: {_name(driver, status)}"
        )
    count = ctypes.c_int(0)
    status = driver.cuDeviceGetCount(ctypes.pointer(count))
    if status != CUDA_SUCCESS:
        raise DriverUnavailableError(
            f"No visible GPU devices: cuDeviceGetCount failed: {_name(driver, status)}"
        )
    if count.value == 0:
        raise DriverUnavailableError(
            "No visible GPU devices: the NVIDIA driver is loaded but sees no GPU "
            "(check CUDA_VISIBLE_DEVICES and nvidia-smi)"
        )
    return DriverReport(count.value, cuda_version)


def _name(driver: Any, status: int) -> str:
    """The driver's name and description of an error code, e.g. ``CUDA_ERROR_NO_DEVICE (100):
    no CUDA-capable device is detected``."""
    name = ctypes.c_char_p()
    text = ctypes.c_char_p()
    if driver.cuGetErrorName(status, ctypes.pointer(name)) != CUDA_SUCCESS or not name.value:
        return f"CUDA error {status}"
    described = f"{name.value.decode()} ({status})"
    if driver.cuGetErrorString(status, ctypes.pointer(text)) == CUDA_SUCCESS and text.value:
        described += f": {text.value.decode()}"
    return described
