"""Meshes: ``make_mesh`` (the rest of mesh.py runs in tests/sharding/, on 8 devices)."""

from __future__ import annotations

import pytest

import ember
from ember._src.runtime import mesh as mesh_module


def test_make_mesh_smaller_than_the_devices_takes_the_first_ones():
    # as jax.make_mesh: JAX's shard_map tutorial makes a (2,) mesh on 8 CPU devices
    first, *_ = devices = ember.devices() * 3
    mesh = mesh_module.make_mesh((1,), ("i",), devices=devices)
    assert mesh.devices.shape == (1,) and mesh.devices.flat[0] is first
    assert ember.make_mesh((1,), ("i",)).devices.shape == (1,)


def test_make_mesh_larger_than_the_devices_is_an_error():
    with pytest.raises(ValueError, match=r"needs 4 devices, 1 are available"):
        mesh_module.make_mesh((2, 2), ("i", "j"), devices=ember.devices()[:1])
