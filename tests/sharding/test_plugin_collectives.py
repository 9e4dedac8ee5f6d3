"""Collectives come from plugins: a platform's declared implementation lowers them."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember._src.plugin import manager
from ember.sharding import P


class GatherThenSum:
    """A stand-in transport: all_reduce(sum) done as all_gather + a local sum, which is what a
    plugin without a native all-reduce might emit."""

    def __init__(self):
        self.calls = []

    def lower(self, ctx, x, *, collective, device_groups, reduction, axes):
        self.calls.append((collective, reduction, device_groups.tolist()))
        aval = ctx.avals_in[0]
        members = device_groups.shape[1]
        stacked = aval.update(shape=(members, *aval.shape))
        flat = ", ".join("[" + ", ".join(str(d) for d in g) + "]" for g in device_groups)
        groups = f"dense<[{flat}]> : tensor<{device_groups.shape[0]}x{members}xi64>"
        expanded = ctx.op("stablehlo.reshape", [x], aval.update(shape=(1, *aval.shape)))
        gathered = ctx.op(
            "stablehlo.all_gather",
            [expanded],
            stacked,
            {
                "all_gather_dim": "0 : i64",
                "channel_handle": f"#stablehlo.channel_handle<handle = "
                f"{ctx.module.next_channel()}, type = 1>",
                "replica_groups": groups,
                "use_global_device_ids": "unit",
            },
        )
        scalar = aval.update(shape=())
        region = ctx.region(
            [scalar, scalar], lambda c, a, b: [c.op("stablehlo.add", [a, b], scalar)]
        )
        zero = ctx.constant(0, scalar)
        return ctx.op(
            "stablehlo.reduce",
            [gathered, zero],
            aval,
            {"dimensions": "array<i64: 0>"},
            regions=[region],
        )


@pytest.fixture
def registry():
    if ember.default_backend() == "reference":
        pytest.skip("the reference backend interprets programs: nothing is lowered")
    registry = manager.collective_registry()
    saved = dict(registry._impls)
    yield registry
    registry._impls.clear()
    registry._impls.update(saved)


def test_a_declared_implementation_lowers_the_collective(mesh, registry):
    transport = GatherThenSum()
    registry.register("cpu", "all_reduce", transport)
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    f = ember.jit(
        ember.shard_map(lambda a: lax.psum(a, "data"), mesh=mesh, in_specs=P("data"), out_specs=P())
    )
    np.testing.assert_allclose(np.asarray(f(x)), x.reshape(4, 2, 4).sum(0))
    assert transport.calls == [("all_reduce", "sum", [[0, 2, 4, 6], [1, 3, 5, 7]])]


def test_an_undeclared_collective_is_refused(mesh, registry):
    registry._impls = {k: v for k, v in registry._impls.items() if k != ("cpu", "all_to_all")}
    f = ember.jit(
        ember.shard_map(
            lambda a: lax.all_to_all(a, "data", 0, 0, tiled=True),
            mesh=mesh,
            in_specs=P("data"),
            out_specs=P("data"),
        )
    )
    with pytest.raises(Exception, match="does not implement the collective 'all_to_all'"):
        f(np.zeros((16, 4), np.float32))
