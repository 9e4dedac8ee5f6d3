"""A cheap look at the AMD GPU driver before XLA's ROCm plugin is loaded.

Two questions, in milliseconds: does the kernel driver offer GPUs to this process
(``/dev/kfd``, the amdgpu driver's compute interface, present and open to this user), and how
many does HIP see (``hipGetDeviceCount`` in ``libamdhip64``, after ``HIP_VISIBLE_DEVICES``)?

HIP is asked in a child process, for two reasons: initialising HIP in this process before
XLA's plugin starts can spoil the profiler SDK's own initialisation inside it (JAX avoids it
for the same reason), and a wedged driver (a GPU fallen off the bus, a hung kernel module)
blocks HIP's first call indefinitely, where a child can be given a deadline and killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The amdgpu kernel driver's compute device (KFD: kernel fusion driver); every ROCm program
# opens it. A container sees it only when started with --device=/dev/kfd.
KFD_DEVICE = "/dev/kfd"

# HIP's runtime library of ROCm 7, which the plugin's PJRT library links.
HIP_LIBRARY = "libamdhip64.so.7"

# How long HIP may take to count the GPUs before ember gives up on it.
PROBE_TIMEOUT_S = 20.0

HIP_SUCCESS = 0

# What the child runs: load HIP, ask its version and device count, print the answers as JSON.
# Only ctypes and json, so the child starts in milliseconds (python -I -S).
_CHILD = r"""
import ctypes, json, sys
answer = {}
try:
    hip = ctypes.CDLL(sys.argv[1])
except OSError as exc:
    answer["load_error"] = str(exc)
else:
    def described(status):
        hip.hipGetErrorName.restype = hip.hipGetErrorString.restype = ctypes.c_char_p
        name, text = hip.hipGetErrorName(status), hip.hipGetErrorString(status)
        return "%s (%d): %s" % ((name or b"hipError").decode(), status, (text or b"").decode())
    version = ctypes.c_int(0)
    status = hip.hipDriverGetVersion(ctypes.byref(version))
    answer["driver_version"] = version.value if status == 0 else None
    count = ctypes.c_int(0)
    status = hip.hipGetDeviceCount(ctypes.byref(count))
    answer["count"] = count.value
    if status != 0:
        answer["count_error"] = described(status)
print(json.dumps(answer))
"""


@dataclass(frozen=True)
class DriverReport:
    """What the driver said: ``device_count`` GPUs visible to this process (after
    ``HIP_VISIBLE_DEVICES``) and HIP's driver version (``hipDriverGetVersion``: major *
    10**7 + minor * 10**5 + patch; None when HIP did not say)."""

    device_count: int
    driver_version: int | None

    @property
    def version_text(self) -> str:
        if self.driver_version is None:
            return "unknown"
        major, rest = divmod(self.driver_version, 10**7)
        minor, patch = divmod(rest, 10**5)
        return f"{major}.{minor}.{patch}"


class DriverUnavailableError(Exception):
    """The driver cannot run the plugin here; the message says why, for a user to act on."""


def probe(
    library: str = HIP_LIBRARY,
    kfd: str = KFD_DEVICE,
    timeout_s: float = PROBE_TIMEOUT_S,
    search_dirs: Sequence[str] = (),
) -> DriverReport:
    """Check ``kfd`` and ask HIP (``library``, looked for in ``search_dirs`` first) for the
    number of visible GPUs, or raise ``DriverUnavailableError`` with the reason (no kernel
    driver, no access to it, no HIP runtime, no GPU, or no answer within ``timeout_s``)."""
    check_kfd(kfd)
    candidates = (os.path.join(d, library) for d in search_dirs)
    path = next((c for c in candidates if os.path.isfile(c)), library)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD, path],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise DriverUnavailableError(
            f"HIP did not count the GPUs within {timeout_s:g} s (hipGetDeviceCount hung): "
            f"check the GPUs with rocm-smi"
        ) from None
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise DriverUnavailableError(
            f"HIP's device count could not be read: the probe process exited with status "
            f"{done.returncode}: {done.stderr.strip()[-500:]}"
        ) from None
    return interpret(answer, library)


def check_kfd(kfd: str = KFD_DEVICE) -> None:
    """Raise ``DriverUnavailableError`` unless the KFD device exists and this user may open it."""
    if not os.path.exists(kfd):
        raise DriverUnavailableError(
            f"no AMD GPU driver: {kfd} does not exist (the amdgpu kernel driver is not loaded "
            f"here; a container needs --device={kfd} --device=/dev/dri)"
        )
    if not os.access(kfd, os.R_OK | os.W_OK):
        raise DriverUnavailableError(
            f"no access to the AMD GPU driver: {kfd} cannot be opened for reading and writing "
            f"by this user (add the user to the 'render' and 'video' groups)"
        )


def interpret(answer: dict[str, Any], library: str = HIP_LIBRARY) -> DriverReport:
    """The report from the child's answers, or the ``DriverUnavailableError`` they mean."""
    if "load_error" in answer:
        raise DriverUnavailableError(
            f"no HIP runtime: {library} could not be loaded ({answer['load_error']}); install "
            f"ROCm 7, and set ROCM_PATH or LD_LIBRARY_PATH if it is not in /opt/rocm"
        )
    if "count_error" in answer:
        raise DriverUnavailableError(
            f"No visible GPU devices: hipGetDeviceCount failed: {answer['count_error']}"
        )
    if answer.get("count", 0) <= 0:
        raise DriverUnavailableError(
            "No visible GPU devices: HIP is loaded but sees no GPU (check HIP_VISIBLE_DEVICES, "
            "ROCR_VISIBLE_DEVICES and rocm-smi)"
        )
    return DriverReport(answer["count"], answer.get("driver_version"))
