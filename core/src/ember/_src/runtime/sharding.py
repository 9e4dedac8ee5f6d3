"""Shardings: how an array's data is laid out over devices.

Every ``ember.Array`` carries a sharding; an array on one device has a
``SingleDeviceSharding``. Shardings compare and hash by value so that caches keyed on them
(jit's executable cache) hit whenever the layout is the same.
"""

from __future__ import annotations

from typing import Any

from ember._src.runtime.backend import Device


class Sharding:
    """Base class of ember's shardings."""

    @property
    def device_set(self) -> set[Device]:
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    @property
    def is_fully_addressable(self) -> bool:
        return True

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        raise NotImplementedError


class SingleDeviceSharding(Sharding):
    """All of the array on one device."""

    __slots__ = ("_device", "_memory_kind")

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        self._device = device
        self._memory_kind = memory_kind

    @property
    def device(self) -> Device:
        return self._device

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    @property
    def device_set(self) -> set[Device]:
        return {self._device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def addressable_devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SingleDeviceSharding)
            and other._device == self._device
            and other._memory_kind == self._memory_kind
        )

    def __hash__(self) -> int:
        return hash((SingleDeviceSharding, self._device, self._memory_kind))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r})"
