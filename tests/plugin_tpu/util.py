"""Helpers of the TPU plugin's tests: the plugin's project metadata, whether libtpu is
installed, and a manager that has the plugin whether or not it is installed."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess

from tests.plugin_support import REPO, PluginProject

PLUGIN = PluginProject("plugin_tpu")
PLUGIN_ROOT, PLUGIN_SRC = PLUGIN.root, PLUGIN.src
__all__ = ["REPO", "PLUGIN_ROOT", "PLUGIN_SRC", "project", "install_site", "run_python"]

HAVE_LIBTPU = importlib.util.find_spec("libtpu") is not None
NEEDS_LIBTPU = "libtpu is not installed (pip install 'libtpu==0.0.42.*', as the cpu tox env does)"


def project() -> dict:
    return PLUGIN.project()


def install_site(root: pathlib.Path) -> pathlib.Path:
    """Make ``ember-plugin-tpu`` look installed under ``root`` (see ``PluginProject``)."""
    return PLUGIN.install_site(root)


def run_python(
    args: list[str], site: pathlib.Path, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """Python with the plugin installed (``site``) and its sources importable."""
    return PLUGIN.run_python(args, site, timeout=timeout, drop_variables=(), **env)
