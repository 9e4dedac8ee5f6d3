"""What the ROCm plugin's tests share: the plugin importable, an installed-looking
distribution for subprocesses, a C compiler for stand-in libraries, and fresh option state.

The tests run where the plugin is not installed (the ``cpu`` tox env keeps it out, so that
its suites see only cpu and reference): ``plugin_rocm/src`` is put on ``sys.path`` when
``ember_plugin_rocm`` cannot be imported, and subprocesses see the plugin through a
dist-info written from ``plugin_rocm/pyproject.toml`` (its real entry point).
"""

from __future__ import annotations

import pathlib
import sys

import pytest

from tests.plugin_rocm.util import FAKE_HIP_SOURCE, PLUGIN, PLUGIN_SRC
from tests.plugin_support import compile_shared_library

try:
    import ember_plugin_rocm  # noqa: F401 - installed (the rocm tox env)
except ModuleNotFoundError:
    sys.path.insert(0, str(PLUGIN_SRC))

from ember_plugin_rocm import options

from ember import config


@pytest.fixture(scope="session")
def installed_plugin(tmp_path_factory) -> pathlib.Path:
    """A directory that makes ``ember-plugin-rocm`` look installed (its real entry point)."""
    return PLUGIN.install_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="session")
def compile_library(tmp_path_factory):
    """``compile_library(name, source, *flags, directory=...)``: a shared library built with
    the C compiler (the tests using it skip without one); returns its path."""
    root = tmp_path_factory.mktemp("libraries")

    def build(name: str, source: str, *flags: str, directory: pathlib.Path = root) -> pathlib.Path:
        return compile_shared_library(directory, name, source, *flags)

    return build


@pytest.fixture(scope="session")
def fake_hip(compile_library) -> pathlib.Path:
    """A stand-in ``libamdhip64.so.7`` answering as the FAKE_HIP_* variables say."""
    return compile_library("libamdhip64.so.7", FAKE_HIP_SOURCE)


@pytest.fixture
def fresh_options(monkeypatch):
    """No backend started, and none of JAX's variables for the options set. Tests set the
    options themselves with ``config.option`` (undone when the block ends)."""
    for names in options.JAX_VARIABLES.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(options.OPTIONS, "started_with", {})
    unset = [name for name in options.OPTIONS.names if config.is_set(name)]
    assert not unset, f"the environment sets {unset}: run the tests without EMBER_ROCM_*"
