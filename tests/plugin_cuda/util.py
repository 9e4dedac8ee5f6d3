"""Helpers of the CUDA plugin's tests: the plugin's project metadata, a stand-in NVIDIA
driver's source, and running Python with the plugin installed."""

from __future__ import annotations

import pathlib
import subprocess

from tests.plugin_support import REPO, PluginProject

PLUGIN = PluginProject("plugin_cuda")
PLUGIN_ROOT, PLUGIN_SRC = PLUGIN.root, PLUGIN.src
__all__ = ["REPO", "PLUGIN_ROOT", "PLUGIN_SRC", "FAKE_DRIVER_SOURCE", "project", "run_ember"]

# The stand-in for libcuda.so.1: the driver API calls the plugin makes, answering what the
# FAKE_CUDA_* environment variables say (a driver for CUDA 12.9 with one GPU by default).
FAKE_DRIVER_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
static int setting(const char *name, int fallback) {
  const char *value = getenv(name);
  return value ? atoi(value) : fallback;
}
static void trace(const char *call) {  /* FAKE_CUDA_TRACE: a file each call is logged to */
  const char *path = getenv("FAKE_CUDA_TRACE");
  FILE *log = path ? fopen(path, "a") : NULL;
  if (log) { fprintf(log, "%s\n", call); fclose(log); }
}
int cuDriverGetVersion(int *version) {
  trace("cuDriverGetVersion");
  *version = setting("FAKE_CUDA_VERSION", 12090);
  return 0;
}
int cuInit(unsigned flags) { trace("cuInit"); return setting("FAKE_CUDA_INIT", 0); }
int cuDeviceGetCount(int *count) { *count = setting("FAKE_CUDA_COUNT", 1); return 0; }
int cuGetErrorName(int status, const char **name) {
  if (status != 100) return 1;
  *name = "CUDA_ERROR_NO_DEVICE";
  return 0;
}
int cuGetErrorString(int status, const char **text) {
  if (status != 100) return 1;
  *text = "no CUDA-capable device is detected";
  return 0;
}
"""


def project() -> dict:
    return PLUGIN.project()


def run_ember(
    code_or_args: list[str],
    site: pathlib.Path | None,
    *,
    driver_dir: pathlib.Path | None = None,
    timeout: float = 120,
    **env: str,
) -> subprocess.CompletedProcess:
    """``python ARGS`` with the plugin installed through ``site`` (the ``installed_plugin``
    fixture; None: as this environment has it) and, when given, the stand-in driver found
    first on the library path. ``EMBER_*`` variables come only from ``env``."""
    return PLUGIN.run_python(
        code_or_args,
        site,
        timeout=timeout,
        drop_variables=("EMBER_", "FAKE_CUDA"),
        library_dirs=(driver_dir,) if driver_dir is not None else (),
        **env,
    )
