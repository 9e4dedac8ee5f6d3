"""Helpers of the ROCm plugin's tests: the plugin's project metadata, a stand-in HIP runtime's
source, and running Python with the plugin installed."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_ROOT = REPO / "plugin_rocm"
PLUGIN_SRC = PLUGIN_ROOT / "src"

# The stand-in for libamdhip64.so.7: the HIP calls the probe makes, answering what the
# FAKE_HIP_* environment variables say (HIP 7.0.51831 with one GPU by default).
FAKE_HIP_SOURCE = r"""
#include <stdlib.h>
#include <unistd.h>
static int setting(const char *name, int fallback) {
  const char *value = getenv(name);
  return value ? atoi(value) : fallback;
}
int hipDriverGetVersion(int *version) {
  *version = setting("FAKE_HIP_VERSION", 70051831);
  return 0;
}
int hipGetDeviceCount(int *count) {
  if (getenv("FAKE_HIP_HANG")) sleep(60);
  *count = setting("FAKE_HIP_COUNT", 1);
  return setting("FAKE_HIP_STATUS", 0);
}
const char *hipGetErrorName(int status) {
  return status == 100 ? "hipErrorNoDevice" : "hipErrorUnknown";
}
const char *hipGetErrorString(int status) {
  return status == 100 ? "no ROCm-capable device is detected" : "unknown error";
}
"""


def project() -> dict:
    with open(PLUGIN_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def run_ember(
    code_or_args: list[str], site: pathlib.Path | None, *, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """``python ARGS`` with the plugin installed through ``site`` (the ``installed_plugin``
    fixture; None: as this environment has it). ``EMBER_*`` variables come only from ``env``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("EMBER_", "FAKE_HIP"))}
    if site is not None:
        path = [str(site), str(PLUGIN_SRC), *filter(None, [os.environ.get("PYTHONPATH")])]
        environ["PYTHONPATH"] = os.pathsep.join(path)
    environ.update(env)
    return subprocess.run(
        [sys.executable, *code_or_args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        cwd=REPO,
    )
