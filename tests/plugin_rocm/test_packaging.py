"""The distribution's metadata (plugin_rocm/pyproject.toml): its name, its entry point into
ember, and the ROCm wheels its ``rocm7`` extra pins for jaxlib 0.10.2."""

from __future__ import annotations

import importlib

import tomllib

from ember._src.plugin import hookspecs
from tests.plugin_rocm.util import REPO, project


def test_name_and_entry_point():
    meta = project()
    assert meta["name"] == "ember-plugin-rocm"
    assert meta["entry-points"] == {"ember_plugins": {"rocm": "ember_plugin_rocm.plugin"}}


def test_the_entry_point_module_implements_ember_hooks_only():
    module = importlib.import_module(project()["entry-points"]["ember_plugins"]["rocm"])
    marker = f"{hookspecs.PROJECT_NAME}_impl"
    hooks = {name for name in dir(module) if hasattr(getattr(module, name), marker)}
    # no ember_register_lowerings: the kit's Triton kernel compiler is CUDA-only
    assert hooks == {"ember_platforms", "ember_register_collectives", "ember_distributed_runtime"}
    assert all(hasattr(hookspecs, name) for name in hooks)  # each one a hook of the contract


def test_the_rocm7_extra_pins_the_wheels_of_jaxlib_0_10_2():
    assert project()["optional-dependencies"] == {
        "rocm7": ["jax-rocm7-pjrt==0.10.2", "jax-rocm7-plugin==0.10.2"]
    }


def test_jaxlib_is_pinned_as_the_kit_pins_it():
    with open(REPO / "plugins" / "pyproject.toml", "rb") as f:
        kit = tomllib.load(f)["project"]
    (kit_jaxlib,) = kit["optional-dependencies"]["pjrt"]
    dependencies = project()["dependencies"]
    assert kit_jaxlib in dependencies
    assert "ember-plugin-kit[pjrt]>=0.1,<0.2" in dependencies


def test_the_rocm_tox_env_installs_only_this_plugin():
    text = (REPO / "tox.ini").read_text()
    section = text.split("[testenv:rocm]", 1)[1].split("\n[", 1)[0]
    assert "-e plugin_rocm[rocm7]" in section
    assert "plugin_cuda" not in section and "plugin_cpu" not in section
    assert "pytest tests/plugin_rocm" in section
    envlist = next(line for line in text.splitlines() if line.startswith("envlist"))
    assert "rocm" not in envlist
