"""The distribution's metadata (plugin_tpu/pyproject.toml): its name, its entry point into
ember, and the libtpu builds that pair with jaxlib 0.10.2."""

from __future__ import annotations

import importlib

from ember._src.plugin import hookspecs
from tests.plugin_tpu.util import project


def test_name_and_entry_point():
    meta = project()
    assert meta["name"] == "ember-plugin-tpu"
    assert meta["entry-points"] == {"ember_plugins": {"tpu": "ember_plugin_tpu.plugin"}}


def test_it_pins_the_libtpu_that_pairs_with_jaxlib_0_10_2():
    dependencies = project()["dependencies"]
    assert "libtpu==0.0.42.*" in dependencies
    assert "jaxlib>=0.10.2,<0.11" in dependencies
    assert "ember-plugin-kit[pjrt]>=0.1,<0.2" in dependencies


def test_every_hook_the_plugin_implements_is_an_ember_hook():
    module = importlib.import_module("ember_plugin_tpu.plugin")
    hooks = {name for name in dir(module) if name.startswith("ember_")}
    assert hooks == {
        "ember_platforms",
        "ember_register_collectives",
        "ember_cluster_environments",
        "ember_distributed_runtime",
    }
    for name in hooks:
        assert hasattr(hookspecs, name), name
