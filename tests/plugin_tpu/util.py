"""Helpers of the TPU plugin's tests: the plugin's project metadata, whether libtpu is
installed, and a manager that has the plugin whether or not it is installed."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_ROOT = REPO / "plugin_tpu"
PLUGIN_SRC = PLUGIN_ROOT / "src"

HAVE_LIBTPU = importlib.util.find_spec("libtpu") is not None
NEEDS_LIBTPU = "libtpu is not installed (pip install 'libtpu==0.0.42.*', as the cpu tox env does)"


def project() -> dict:
    return tomllib.loads((PLUGIN_ROOT / "pyproject.toml").read_text())["project"]


def install_site(root: pathlib.Path) -> pathlib.Path:
    """Make ``ember-plugin-tpu`` look installed under ``root``: a dist-info with the name,
    version and entry points of pyproject.toml (the sources come from plugin_tpu/src)."""
    meta = project()
    info = root / f"ember_plugin_tpu-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
            for group, points in meta["entry-points"].items()
        )
    )
    return root


def run_python(args: list[str], site: pathlib.Path, timeout: float = 120, **env: str):
    """Python with the plugin installed (``site``) and its sources importable."""
    paths = [str(site), str(PLUGIN_SRC), *sys.path]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **env}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        cwd=REPO,
    )
