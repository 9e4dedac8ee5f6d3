"""The distribution's metadata (plugin_cuda/pyproject.toml): its name, its entry point into
ember, and the CUDA wheels its ``cuda12`` extra pins for jaxlib 0.10.2."""

from __future__ import annotations

import importlib
import re

import tomllib

from ember._src.plugin import hookspecs
from tests.plugin_cuda.util import REPO, project

# jax-cuda12-plugin 0.10.2's requirements (its METADATA, extra "with-cuda"): the CUDA wheels
# XLA's CUDA plugin of that release was built and tested against.
JAX_CUDA12_PLUGIN_0_10_2_WITH_CUDA = {
    "nvidia-cublas-cu12>=12.1.3.1",
    "nvidia-cuda-cupti-cu12>=12.1.105",
    "nvidia-cuda-nvcc-cu12>=12.6.85",
    "nvidia-cuda-runtime-cu12>=12.1.105",
    "nvidia-cudnn-cu12>=9.8,<10.0",
    "nvidia-cufft-cu12>=11.0.2.54",
    "nvidia-cusolver-cu12>=11.4.5.107",
    "nvidia-cusparse-cu12>=12.1.0.106",
    "nvidia-nccl-cu12>=2.18.1",
    "nvidia-nvjitlink-cu12>=12.1.105",
    "nvidia-cuda-nvrtc-cu12>=12.1.55",
    "nvidia-nvshmem-cu12>=3.2.5",
}


def requirement(spec: str) -> tuple[str, frozenset[str]]:
    """``"name>=1,<2; marker"`` as ``("name", {">=1", "<2"})``."""
    text = spec.split(";")[0].replace(" ", "")
    name = re.match(r"[A-Za-z0-9_.-]+", text).group()
    return name, frozenset(text[len(name) :].split(","))


def test_name_and_entry_point():
    meta = project()
    assert meta["name"] == "ember-plugin-cuda"
    assert meta["entry-points"] == {"ember_plugins": {"cuda": "ember_plugin_cuda.plugin"}}


def test_the_entry_point_module_implements_ember_hooks_only():
    module = importlib.import_module(project()["entry-points"]["ember_plugins"]["cuda"])
    marker = f"{hookspecs.PROJECT_NAME}_impl"
    hooks = {name for name in dir(module) if hasattr(getattr(module, name), marker)}
    assert hooks == {
        "ember_platforms",
        "ember_register_collectives",
        "ember_register_lowerings",
        "ember_distributed_runtime",
    }
    assert all(hasattr(hookspecs, name) for name in hooks)  # each one a hook of the contract


def test_the_cuda12_extra_pins_the_wheels_of_jaxlib_0_10_2():
    extra = project()["optional-dependencies"]["cuda12"]
    exact = [spec for spec in extra if spec.startswith("jax-")]
    assert exact == ["jax-cuda12-pjrt==0.10.2", "jax-cuda12-plugin==0.10.2"]
    nvidia = {requirement(spec) for spec in extra if spec.startswith("nvidia")}
    assert nvidia == {requirement(spec) for spec in JAX_CUDA12_PLUGIN_0_10_2_WITH_CUDA}
    assert all("sys_platform == 'linux'" in spec for spec in extra if spec.startswith("nvidia"))


def test_jaxlib_is_pinned_as_the_kit_pins_it():
    with open(REPO / "plugins" / "pyproject.toml", "rb") as f:
        kit = tomllib.load(f)["project"]
    (kit_jaxlib,) = kit["optional-dependencies"]["pjrt"]
    dependencies = project()["dependencies"]
    assert kit_jaxlib in dependencies
    assert "ember-plugin-kit[pjrt]>=0.1,<0.2" in dependencies
