"""Which TPU chips this machine has, read from the PCI bus, before libtpu is loaded.

libtpu answers "is there a TPU?" slowly off a TPU VM: it first asks the cloud's metadata
server, retrying for minutes where there is none. The PCI bus answers in milliseconds: every
TPU chip is a PCI device of Google's vendor id with a device id naming its generation (the
same table JAX's hardware check reads).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Where Linux lists PCI devices, one directory each with ``vendor`` and ``device`` files.
PCI_DEVICES = "/sys/bus/pci/devices"

GOOGLE_VENDOR_ID = "0x1ae0"

# PCI device id -> TPU generation.
TPU_DEVICE_IDS = {
    "0x0027": "v3",
    "0x0056": "v4 (PLC)",
    "0x005e": "v4",
    "0x0062": "v5p",
    "0x0063": "v5e",
    "0x006f": "v6e",
    "0x0076": "v7x",
}


@dataclass(frozen=True)
class TpuChips:
    """``count`` TPU chips of generation ``generation`` (e.g. "v5e") on this machine."""

    count: int
    generation: str


def find_chips(pci_devices: str = PCI_DEVICES) -> TpuChips | None:
    """The TPU chips on this machine's PCI bus, or None when it has none (or no PCI listing,
    as in a container without /sys)."""
    try:
        entries = sorted(os.listdir(pci_devices))
    except OSError:
        return None
    generations = []
    for entry in entries:
        vendor = _read(os.path.join(pci_devices, entry, "vendor"))
        if vendor != GOOGLE_VENDOR_ID:
            continue
        generation = TPU_DEVICE_IDS.get(_read(os.path.join(pci_devices, entry, "device")))
        if generation is not None:
            generations.append(generation)
    if not generations:
        return None
    return TpuChips(len(generations), generations[0])


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip().lower()
    except OSError:
        return ""
