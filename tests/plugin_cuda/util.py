"""Helpers of the CUDA plugin's tests: the plugin's project metadata, a stand-in NVIDIA
driver's source, and running Python with the plugin installed."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_ROOT = REPO / "plugin_cuda"
PLUGIN_SRC = PLUGIN_ROOT / "src"

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
    with open(PLUGIN_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


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
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("EMBER_", "FAKE_CUDA"))}
    if site is not None:
        path = [str(site), str(PLUGIN_SRC), *filter(None, [os.environ.get("PYTHONPATH")])]
        environ["PYTHONPATH"] = os.pathsep.join(path)
    if driver_dir is not None:
        library_path = [str(driver_dir), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
        environ["LD_LIBRARY_PATH"] = os.pathsep.join(library_path)
    environ.update(env)
    return subprocess.run(
        [sys.executable, *code_or_args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        cwd=REPO,
    )
