"""The registries handed to plugins' hooks: collectives and their cross-process transports."""

from __future__ import annotations

import pytest

from ember import errors
from ember.extend import CollectiveRegistry


def test_a_platform_declares_its_collectives():
    registry = CollectiveRegistry()
    assert registry.implementation("foo", "all_reduce") == "xla"  # nothing declared
    registry.register("foo", "all_reduce", "xla")
    with pytest.raises(errors.BackendError, match="does not implement the collective 'all_gather'"):
        registry.implementation("foo", "all_gather")


def test_cross_process_transports_are_found_by_name():
    registry = CollectiveRegistry()

    def make(job):
        return ("transport for", job)

    registry.register_transport("foo", "tcp", make)
    assert registry.transport("foo", "tcp")("job") == ("transport for", "job")
    with pytest.raises(
        errors.BackendError,
        match=r"no cross-process collectives transport 'mpi'"
        r" \(registered: tcp\)",
    ):
        registry.transport("foo", "mpi")
    with pytest.raises(errors.BackendError, match=r"\(registered: none\)"):
        registry.transport("bar", "tcp")


def test_the_cpu_plugin_registers_gloo():
    plugin = pytest.importorskip("ember_plugin_cpu.plugin")
    registry = CollectiveRegistry()
    plugin.ember_register_collectives(registry)
    assert registry.transport("cpu", "gloo") is not None
    assert registry.implementation("cpu", "all_to_all") == "xla"
