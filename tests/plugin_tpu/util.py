"""Helpers of the TPU plugin's tests: the plugin's project metadata, whether libtpu is
installed, and a manager that has the plugin whether or not it is installed."""

from __future__ import annotations

import importlib.util
import pathlib

import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_ROOT = REPO / "plugin_tpu"
PLUGIN_SRC = PLUGIN_ROOT / "src"

HAVE_LIBTPU = importlib.util.find_spec("libtpu") is not None
NEEDS_LIBTPU = "libtpu is not installed (pip install 'libtpu==0.0.42.*', as the cpu tox env does)"


def project() -> dict:
    return tomllib.loads((PLUGIN_ROOT / "pyproject.toml").read_text())["project"]
