"""What the TPU plugin's tests share: the plugin importable (from plugin_tpu/src when it is not
installed), a plugin manager with the plugin's hooks, and a stand-in PCI bus."""

from __future__ import annotations

import pathlib
import sys

import pytest

from tests.plugin_tpu.util import PLUGIN_SRC

try:
    import ember_plugin_tpu  # noqa: F401 - installed (the tpu tox env)
except ModuleNotFoundError:
    sys.path.insert(0, str(PLUGIN_SRC))

from ember_plugin_tpu import plugin

from ember._src.plugin import manager as manager_module
from ember._src.plugin.manager import PluginManager, PluginSource, discover_entry_points


@pytest.fixture
def with_tpu_plugin(monkeypatch):
    """The process's plugins, with the TPU plugin among them (installed or not)."""
    sources = [s for s in discover_entry_points() if s.name != "tpu"]
    sources.append(PluginSource("tpu", "ember_plugin_tpu.plugin", obj=plugin))
    monkeypatch.setattr(manager_module, "_manager", PluginManager(sources))


def write_pci_device(root: pathlib.Path, slot: str, vendor: str, device: str) -> None:
    """One PCI device of a stand-in ``/sys/bus/pci/devices``."""
    entry = root / slot
    entry.mkdir(parents=True)
    (entry / "vendor").write_text(vendor + "\n")
    (entry / "device").write_text(device + "\n")


@pytest.fixture
def pci_bus(tmp_path) -> pathlib.Path:
    """A stand-in PCI bus with a network card and a GPU, no TPU."""
    write_pci_device(tmp_path, "0000:00:04.0", "0x1af4", "0x1000")
    write_pci_device(tmp_path, "0000:00:05.0", "0x10de", "0x2330")
    return tmp_path
