"""What the CUDA plugin's tests share: the plugin importable, an installed-looking
distribution for subprocesses, a stand-in NVIDIA driver, and fresh option state.

The tests run where the plugin is not installed (the ``cpu`` tox env keeps it out, so that
its suites see only cpu and reference): ``plugin_cuda/src`` is put on ``sys.path`` when
``ember_plugin_cuda`` cannot be imported, and subprocesses see the plugin through a
dist-info written from ``plugin_cuda/pyproject.toml`` (its real entry point).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.plugin_cuda.util import FAKE_DRIVER_SOURCE, PLUGIN_SRC, project

try:
    import ember_plugin_cuda  # noqa: F401 - installed (the cuda tox env)
except ModuleNotFoundError:
    sys.path.insert(0, str(PLUGIN_SRC))

from ember_plugin_cuda import options

from ember import config


@pytest.fixture(scope="session")
def installed_plugin(tmp_path_factory) -> pathlib.Path:
    """A directory that makes ``ember-plugin-cuda`` look installed: a dist-info with the
    name, version and entry points of pyproject.toml."""
    meta = project()
    root = tmp_path_factory.mktemp("site")
    info = root / f"ember_plugin_cuda-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    groups = meta["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
            for group, points in groups.items()
        )
    )
    return root


@pytest.fixture(scope="session")
def fake_driver_dir(tmp_path_factory) -> pathlib.Path:
    """A directory holding a stand-in ``libcuda.so.1`` (compiled here; skipped without cc)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in NVIDIA driver")
    root = tmp_path_factory.mktemp("driver")
    source = root / "fake_cuda.c"
    source.write_text(FAKE_DRIVER_SOURCE)
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(root / "libcuda.so.1"), str(source)],
        check=True,
        timeout=120,
    )
    return root


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def fresh_options(monkeypatch):
    """No backend started, and none of JAX's variables for the options set. Tests set the
    options themselves with ``config.option`` (undone when the block ends)."""
    for names in options.JAX_VARIABLES.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(options.OPTIONS, "started_with", {})
    unset = [name for name in options.OPTIONS.names if config.is_set(name)]
    assert not unset, f"the environment sets {unset}: run the tests without EMBER_CUDA_*"
