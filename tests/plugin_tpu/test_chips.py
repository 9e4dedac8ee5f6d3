"""Finding TPU chips on the PCI bus (a stand-in /sys/bus/pci/devices)."""

from __future__ import annotations

from ember_plugin_tpu import chips

from tests.plugin_tpu.conftest import write_pci_device


def test_a_machine_without_google_tpu_devices_has_no_chips(pci_bus):
    assert chips.find_chips(str(pci_bus)) is None


def test_tpu_chips_are_counted_with_their_generation(pci_bus):
    for slot in range(4):
        write_pci_device(pci_bus, f"0000:00:{slot + 6:02x}.0", "0x1ae0", "0x0063")
    assert chips.find_chips(str(pci_bus)) == chips.TpuChips(4, "v5e")


def test_other_google_devices_are_not_tpus(pci_bus):
    write_pci_device(pci_bus, "0000:00:07.0", "0x1ae0", "0x0042")  # a gVNIC, say
    assert chips.find_chips(str(pci_bus)) is None


def test_no_pci_listing_means_no_chips(tmp_path):
    assert chips.find_chips(str(tmp_path / "absent")) is None
