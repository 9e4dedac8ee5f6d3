"""What the CUDA plugin's tests share: the plugin importable, an installed-looking
distribution for subprocesses, a stand-in NVIDIA driver, and fresh option state.

The tests run where the plugin is not installed (the ``cpu`` tox env keeps it out, so that
its suites see only cpu and reference): ``plugin_cuda/src`` is put on ``sys.path`` when
``ember_plugin_cuda`` cannot be imported, and subprocesses see the plugin through a
dist-info written from ``plugin_cuda/pyproject.toml`` (its real entry point).
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from tests.plugin_cuda.util import FAKE_DRIVER_SOURCE, PLUGIN, PLUGIN_SRC
from tests.plugin_support import compile_shared_library

try:
    import ember_plugin_cuda  # noqa: F401 - installed (the cuda tox env)
except ModuleNotFoundError:
    sys.path.insert(0, str(PLUGIN_SRC))

from ember_plugin_cuda import options

from ember import config


@pytest.fixture(scope="session")
def installed_plugin(tmp_path_factory) -> pathlib.Path:
    """A directory that makes ``ember-plugin-cuda`` look installed (its real entry point)."""
    return PLUGIN.install_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="session")
def fake_driver_dir(tmp_path_factory) -> pathlib.Path:
    """A directory holding a stand-in ``libcuda.so.1`` (compiled here; skipped without cc)."""
    root = tmp_path_factory.mktemp("driver")
    compile_shared_library(root, "libcuda.so.1", FAKE_DRIVER_SOURCE)
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
