"""Helpers of the ROCm plugin's tests: the plugin's project metadata, a stand-in HIP runtime's
source, and running Python with the plugin installed."""

from __future__ import annotations

import pathlib
import subprocess

from tests.plugin_support import REPO, PluginProject

PLUGIN = PluginProject("plugin_rocm")
PLUGIN_ROOT, PLUGIN_SRC = PLUGIN.root, PLUGIN.src
__all__ = ["REPO", "PLUGIN_ROOT", "PLUGIN_SRC", "FAKE_HIP_SOURCE", "project", "run_ember"]

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
    return PLUGIN.project()


def run_ember(
    code_or_args: list[str], site: pathlib.Path | None, *, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """``python ARGS`` with the plugin installed through ``site`` (the ``installed_plugin``
    fixture; None: as this environment has it). ``EMBER_*`` variables come only from ``env``."""
    return PLUGIN.run_python(
        code_or_args, site, timeout=timeout, drop_variables=("EMBER_", "FAKE_HIP"), **env
    )
