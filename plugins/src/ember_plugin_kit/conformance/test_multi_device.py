"""Conformance checks for a backend with several devices: transfers between them, arrays laid
out over them, SPMD-partitioned jit and every collective the backend declares, against NumPy.

They skip on a platform with one device; give it more (``--ember-config cpu_device_count=8``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.extend
from ember import lax
from ember.sharding import Mesh, NamedSharding, P

# The collective each declared implementation name serves, as shard_map users write it.
COLLECTIVE_CHECKS = {
    "all_reduce": "psum",
    "all_gather": "all_gather",
    "reduce_scatter": "psum_scatter",
    "all_to_all": "all_to_all",
    "collective_permute": "ppermute",
}


@pytest.fixture(scope="module")
def mesh(platform_devices):
    """A 1-D mesh over an even number of the platform's devices (at most 8)."""
    count = min(8, len(platform_devices) - len(platform_devices) % 2)
    return Mesh(np.array(platform_devices[:count]), ("x",))


def _data(rows, cols=4, seed=0):
    return np.random.default_rng(seed).normal(size=(rows, cols)).astype(np.float32)


def test_transfer_between_devices(platform_devices):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_first = ember.device_put(x, platform_devices[0])
    on_second = ember.device_put(on_first, platform_devices[1])
    assert on_second.devices() == {platform_devices[1]}
    np.testing.assert_array_equal(np.asarray(on_second), x)
    np.testing.assert_array_equal(np.asarray(on_second * 2), x * 2)


def test_sharded_array_round_trip(mesh):
    n = mesh.shape["x"]
    x = _data(2 * n)
    sharded = ember.device_put(x, NamedSharding(mesh, P("x")))
    assert len(sharded.addressable_shards) == n
    for shard in sharded.addressable_shards:
        assert shard.data.devices() == {shard.device}
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
    np.testing.assert_array_equal(np.asarray(sharded), x)
    replicated = ember.device_put(x, NamedSharding(mesh, P()))
    assert replicated.is_fully_replicated
    for shard in replicated.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x)


def test_partitioned_jit(mesh):
    n = mesh.shape["x"]
    x, w = _data(2 * n), _data(4, 3, seed=1)
    sharded = ember.device_put(x, NamedSharding(mesh, P("x")))
    f = ember.jit(lambda a, b: (np.float32(2.0) * a @ b).sum(axis=0))
    got = f(sharded, w)
    np.testing.assert_allclose(np.asarray(got), (2 * x @ w).sum(axis=0), rtol=1e-5, atol=1e-5)
    keep = ember.jit(lambda a: a + 1, out_shardings=NamedSharding(mesh, P("x")))(sharded)
    assert keep.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 2)
    np.testing.assert_allclose(np.asarray(keep), x + 1)


def _collective_program(name, mesh):
    n = mesh.shape["x"]

    def run(body, in_spec, out_spec, **kw):
        return ember.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_spec, **kw)

    x = _data(2 * n)
    blocks = x.reshape(n, 2, 4)
    if name == "psum":
        return run(lambda a: lax.psum(a, "x"), P("x"), P()), x, blocks.sum(0)
    if name == "all_gather":
        # gathered to="invarying": the same on every device, so out_specs may say P()
        gather = run(lambda a: lax.all_gather(a, "x", tiled=True, to="invarying"), P("x"), P())
        return gather, x, x
    if name == "psum_scatter":
        body = run(lambda a: lax.psum_scatter(a, "x", tiled=True), P(), P("x"), check_rep=False)
        return body, x, n * x
    if name == "all_to_all":
        square = _data(n * n, n)  # each device's (n, n) block is transposed across devices
        body = run(lambda a: lax.all_to_all(a, "x", 1, 0, tiled=True), P("x"), P("x"))
        return body, square, _all_to_all_expected(square, n)
    if name == "ppermute":
        ring = [(i, (i + 1) % n) for i in range(n)]
        body = run(lambda a: lax.ppermute(a, "x", ring), P("x"), P("x"))
        return body, x, np.roll(blocks, 1, axis=0).reshape(2 * n, 4)
    raise AssertionError(name)


def _all_to_all_expected(x, n):
    """all_to_all(split_axis=1, concat_axis=0, tiled): device i's column block j goes to
    device j, stacked along rows in the order of the senders."""
    rows = x.shape[0] // n
    cols = x.shape[1] // n
    pieces = [[x[i * rows : (i + 1) * rows, j * cols : (j + 1) * cols] for j in range(n)]
              for i in range(n)]  # fmt: skip
    return np.concatenate(
        [np.concatenate([pieces[i][j] for i in range(n)], axis=0) for j in range(n)], axis=0
    )


@pytest.mark.parametrize("implementation", sorted(COLLECTIVE_CHECKS))
def test_declared_collectives(mesh, ember_platform, implementation):
    try:
        ember.extend.collective_registry().implementation(ember_platform, implementation)
    except ember.errors.BackendError:
        pytest.skip(f"{ember_platform} does not implement {implementation}")
    program, x, want = _collective_program(COLLECTIVE_CHECKS[implementation], mesh)
    got = program(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
