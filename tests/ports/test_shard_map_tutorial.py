# ruff: noqa: E501, I001, F841 - the ported program is kept as written (its imports and unused results too); pinned values are long
"""Port of JAX's tutorial "Manual parallelism with shard_map" (docs/notebooks/shard_map.md).

The page's code cells, in order, with ``jax`` changed to ``ember`` in the imports and calls,
on 8 CPU devices as the page sets them up (``XLA_FLAGS=--xla_force_host_platform_device_count=8``,
which ember's CPU backend reads too); the tutorial runs in a process of its own, since the
device count is fixed when a backend starts. Cells that end in a bare expression print it,
``print`` records its arguments, and what the library prints itself
(``debug.visualize_array_sharding``) is recorded line by line as ``stdout: ...``; JAX 0.10.2's
records for the same cells are pinned in shard_map_tutorial_records.py.

Where ember differs on purpose the test says how:

- the jaxpr with the ``pvary`` JAX inserts prints the ``shard_map`` equation's parameters
  as ember has them (``PartitionSpec('i')``, ``Mesh(...)``, no ``newly_manual_axes``): its
  body is compared line by line;
- the page's scan cell passes an unsplit ``x`` with ``in_specs=P('i')`` over an Explicit
  mesh: JAX 0.10.2 refuses that before tracing (its in_specs must match the argument's
  type), ember splits ``x`` as ``in_specs`` say and shows the carry error the page is about,
  in its own words;
- a ``shard_map`` called outside ``jit`` compiles its body as one SPMD program, as under
  ``jit`` (docs/differences.md): a ``print`` in the body shows the traced block
  (``JitTracer(int32[4])``), where JAX runs the body eagerly and prints each device's block;
- ``visualize_array_sharding`` draws its own boxes: the same blocks with the same devices
  (compared), in boxes of other widths.
"""

import json
import pathlib
import re

import pytest

from tests.core.util import run_ok
from tests.ports._util import assert_same, record_program
from tests.ports.shard_map_tutorial_records import (
    CHECK_REP_ERROR,
    EMBER_BLOCK_PRINTS,
    EXPECTED,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytest.importorskip("ember_plugin_cpu", reason="the tutorial runs on 8 CPU devices")
RECORD_MARK = "record: "


def program():
    return record_program(run_cells)


def run_cells(print, shows_error):

    import os

    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # Use 8 CPU devices

    from functools import partial

    import ember
    import ember.numpy as jnp

    from ember.sharding import Mesh, PartitionSpec as P

    Explicit = ember.sharding.AxisType.Explicit
    Auto = ember.sharding.AxisType.Auto

    mesh = ember.make_mesh((4, 2), ("x", "y"))
    ember.set_mesh(mesh)

    a = ember.device_put(jnp.arange(8 * 16.0).reshape(8, 16), P("x", "y"))
    b = ember.device_put(jnp.arange(16 * 4.0).reshape(16, 4), P("y", None))

    @ember.shard_map(in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    def matmul_basic(a_block, b_block):
        # a_block: f32[2, 8]
        # b_block: f32[8, 4]
        c_partialsum = jnp.dot(a_block, b_block)
        c_block = ember.lax.psum(c_partialsum, "y")
        # c_block: f32[2, 4]
        return c_block

    c = matmul_basic(a, b)  # c: f32[8, 4]

    from ember.tree_util import tree_map, tree_all

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    print(allclose(c, jnp.dot(a, b, out_sharding=P("x", None))))  # (the cell shows its value)

    ember.debug.visualize_array_sharding(c)

    from ember.sharding import NamedSharding

    a = ember.device_put(a, P("x", "y"))
    b = ember.device_put(b, P("y", None))

    @ember.jit
    def matmul_reference(a, b):
        return jnp.dot(a, b, out_sharding=P("x", None))

    c_ref = matmul_reference(a, b)
    print(allclose(c_ref, jnp.dot(a, b, out_sharding=P("x", None))))  # (the cell shows its value)

    print("a blocks:")
    ember.debug.visualize_array_sharding(a)
    print("b blocks:")
    ember.debug.visualize_array_sharding(b)
    print("c blocks:")
    ember.debug.visualize_array_sharding(c)

    def check_vmap(f, xs):
        ans = ember.vmap(f, in_axes=(0,), out_axes=0)(xs)
        expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
        print(allclose(ans, expected))

    check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))

    import numpy as np

    devices = np.array(ember.devices()[:4])
    mesh = Mesh(devices, ("i",))  # mesh.shape['i'] = 4
    ember.set_mesh(mesh)

    def check_shmap(f, y):
        ans = ember.shard_map(f, in_specs=P("i"), out_specs=P("i"))(y)
        expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape["i"])])
        print(allclose(ans, expected))

    check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))

    mesh = ember.make_mesh((4, 2), ("i", "j"))
    ember.set_mesh(mesh)

    @ember.shard_map(in_specs=P("i", None), out_specs=P("i", "j"))
    def f1(x_block):
        print(x_block.shape)  # prints (3, 12)
        return x_block

    x1 = ember.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", None))
    y = f1(x1)

    @ember.shard_map(in_specs=P("i", "j"), out_specs=P("i", "j"))
    def f2(x_block):
        print(x_block.shape)
        return x_block

    x = jnp.arange(12 * 12).reshape(12, 12)
    x_ = jnp.tile(x, (1, mesh.shape["j"]))  # x_ has shape (12, 24)
    x_ = ember.device_put(x, P("i", "j"))
    y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)

    auto_mesh = ember.make_mesh((4, 2), ("i", "j"), (Auto, Auto))
    with ember.set_mesh(auto_mesh):
        x = jnp.array([[3.0]])

        z = ember.shard_map(lambda: x, in_specs=(), out_specs=P("i", "j"))()
        print(z)  # prints the same as jnp.tile(x, (4, 2))

        z = ember.shard_map(lambda: x, in_specs=(), out_specs=P("i", None))()
        print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))

        z = ember.shard_map(lambda: x, in_specs=(), out_specs=P(None, None))()
        print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x

    @ember.shard_map(in_specs=P("i", "j"), out_specs=P("i", None))
    def f3(x_block):
        return ember.lax.psum(x_block, "j")

    x = ember.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", "j"))
    y3 = f3(x)
    print(y3.shape)

    @ember.shard_map(in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f4(x_block):
        return ember.lax.psum(x_block, "i")

    x = ember.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", "j"))
    y4 = f4(x)
    print(y4.shape)  # (3,12)

    @ember.shard_map(in_specs=P("i", "j"), out_specs=P(None, None))
    def f5(x_block):
        return ember.lax.psum(x_block, ("i", "j"))

    y5 = f5(x)
    print(y5.shape)  # (3,6)

    mesh = ember.make_mesh((2,), ("i",))
    ember.set_mesh(mesh)

    @ember.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f(x):
        print(x)
        return 2 * x

    x = ember.device_put(jnp.arange(6.0), P("i"))
    print(f(x))  # (the cell shows its value)

    @ember.shard_map(in_specs=P(), out_specs=P())
    def f(x):
        print(x)
        return 2 * x

    x = jnp.arange(6.0)
    print(f(x))  # (the cell shows its value)

    @ember.shard_map(in_specs=P("i"), out_specs=P())
    def f(x):
        y = ember.lax.psum(x, "i")
        print(y)
        return y

    x = ember.device_put(jnp.arange(6.0), P("i"))
    print(f(x))  # (the cell shows its value)

    @ember.shard_map(in_specs=P("i"), out_specs=P())
    def f(x):
        print(ember.typeof(x))  # f32[3]{V:i}
        y = ember.lax.psum(x, "i")
        print(ember.typeof(y))  # f32[3]
        return y

    x = ember.device_put(jnp.arange(6.0), P("i"))
    print(f(x))  # (the cell shows its value)

    mesh = ember.make_mesh((4, 2), ("i", "j"))
    ember.set_mesh(mesh)

    @ember.shard_map(in_specs=P("i", "j"), out_specs=P("i"))
    def f(x):
        print(ember.typeof(x))  # f32[2,2]{V:(i,j)}
        y = ember.lax.psum(x, "j")
        assert ember.typeof(y).manual_axis_type.varying == {"i"}
        print(ember.typeof(y))  # f32[2,2]{V:i}
        return y

    x = ember.device_put(jnp.arange(8 * 4.0).reshape(8, 4), P("i", "j"))
    print(f(x))  # (the cell shows its value)

    mesh = ember.make_mesh((2,), ("i",))
    ember.set_mesh(mesh)

    x = ember.device_put(jnp.arange(6.0), P("i"))
    try:
        y = ember.shard_map(lambda x: x, in_specs=P("i"), out_specs=P())(x)
    except Exception as e:
        print(e)

    @ember.shard_map(in_specs=P(), out_specs=None)
    def f(x):
        print(ember.typeof(x))  # f32[6]
        y = ember.lax.pcast(x, "i", to="varying")
        print(ember.typeof(y))  # f32[6]{i}

    x = jnp.arange(6.0)
    print(f(x))  # (the cell shows its value)

    @ember.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        return x * y

    x = ember.device_put(jnp.arange(6.0), P("i"))
    y = jnp.arange(3.0)
    print(ember.make_jaxpr(f)(x, y))

    mesh = ember.make_mesh((2,), ("i",))
    ember.set_mesh(mesh)

    @ember.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        def body(carry, _):
            c1, c2 = carry
            return (c2, c1), ()  # swap the carry

        (x_, y_), _ = ember.lax.scan(body, (x, y), (), length=2)
        return x_, y_

    x = jnp.arange(6.0)
    y = jnp.arange(3.0)

    try:
        f(x, y)
    except Exception as e:
        print(e)

    mesh = ember.make_mesh((2,), ("i",))
    ember.set_mesh(mesh)

    @ember.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        def body(carry, _):
            c1, c2 = carry
            return (c2, c1), ()  # swap the carry

        y = ember.lax.pcast(y, "i", to="varying")  # apply pcast to fix the error
        (x_, y_), _ = ember.lax.scan(body, (x, y), (), length=2)
        return x_, y_

    x = ember.device_put(jnp.arange(6.0), P("i"))
    y = jnp.arange(3.0)

    print(f(x, y))  # (the cell shows its value)

    import ember
    import ember.numpy as jnp
    from ember import lax

    from ember.sharding import Mesh, PartitionSpec as P

    mesh1d = Mesh(ember.devices()[:4], ("i",))
    ember.set_mesh(mesh1d)

    @ember.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P(None))
    def f1(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f1(x)
    print("FINAL RESULT:\n", y)

    mesh2d = Mesh(np.array(ember.devices()[:4]).reshape(2, 2), ("i", "j"))
    ember.set_mesh(mesh2d)

    @ember.shard_map(mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f2(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    y = f2(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)

    @ember.shard_map(mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, None))
    def f3(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.psum(x_block, ("i", "j"))
        print("AFTER:\n", y_block)
        return y_block

    y = f3(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)

    ember.set_mesh(mesh1d)

    @ember.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f4(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.all_gather(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 9, 5, 2])
    y = f4(x)
    print("FINAL RESULT:\n", y)

    @ember.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f5(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.all_gather(x_block, "i", tiled=False)
        print("AFTER:\n", y_block)
        return y_block

    y = f5(x)
    print("FINAL RESULT:\n", y)

    @ember.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f6(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f6(x)
    print("FINAL RESULT:\n", y)

    @ember.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f7(x_block):
        sz = ember.lax.axis_size("i")
        print("BEFORE:\n", x_block)
        y_block = ember.lax.ppermute(x_block, "i", [(i, (i + 1) % sz) for i in range(sz)])
        print("AFTER:\n", y_block)
        return y_block

    y = f7(jnp.arange(8))
    print("FINAL RESULT:\n", y)

    def psum_scatter(x, axis_name, *, tiled=False):
        size = ember.lax.axis_size(axis_name)
        idx = ember.lax.axis_index(axis_name)  # function instance index along axis_name
        if tiled:
            x = x.reshape(size, -1, *x.shape[1:])  # split leading axis
        shift = partial(
            ember.lax.ppermute, axis_name=axis_name, perm=[(i, (i - 1) % size) for i in range(size)]
        )
        for i in range(1, size):
            update = shift(x[(idx + i) % size])
            x = x.at[(idx + i + 1) % size].add(update)
        return x[idx]

    @ember.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f8(x_block):
        print("BEFORE:\n", x_block)
        y_block = psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f8(x)
    print("FINAL RESULT:\n", y)

    @ember.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f9(x_block):
        print("BEFORE:\n", x_block)
        y_block = ember.lax.all_to_all(x_block, "i", split_axis=0, concat_axis=0, tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f9(x)
    print("FINAL RESULT:\n", y)

    import ember
    import ember.numpy as jnp

    from ember.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(ember.devices()[:4], ("i",))
    ember.set_mesh(mesh)

    def device_put(x, pspec):
        return ember.device_put(x, NamedSharding(mesh, pspec))

    lhs_spec = P("i", None)
    lhs = device_put(ember.random.normal(ember.random.key(0), (8, 8)), lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(ember.random.normal(ember.random.key(1), (8, 4)), rhs_spec)

    @ember.jit
    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather(lhs_block, rhs_block):
        rhs = ember.lax.all_gather(rhs_block, "i", tiled=True)
        return lhs_block @ rhs

    out = matmul_allgather(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    @ember.jit
    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped(lhs_block, rhs_block):
        size = ember.lax.axis_size("i")
        idx = ember.lax.axis_index("i")
        shift = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size
        lhs_blocks = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)

        out_block = lhs_blocks(idx) @ rhs_block
        for i in range(1, size):
            rhs_block = shift(rhs_block)
            out_block += lhs_blocks((idx - i) % size) @ rhs_block
        return out_block

    out = matmul_allgather_overlapped(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    @ember.jit
    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped_bidi(lhs_block, rhs_block):
        size = ember.lax.axis_size("i")
        idx = ember.lax.axis_index("i")
        shift_up = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 1)

        rhs_block_lo, rhs_block_hi = jnp.split(rhs_block, 2, axis=0)
        out_block = lhs_blocks(idx, 0) @ rhs_block_lo
        out_block += lhs_blocks(idx, 1) @ rhs_block_hi
        for i in range(1, size):
            rhs_block_lo = shift_up(rhs_block_lo)
            rhs_block_hi = shift_dn(rhs_block_hi)
            out_block += lhs_blocks((idx - i) % size, 0) @ rhs_block_lo
            out_block += lhs_blocks((idx + i) % size, 1) @ rhs_block_hi
        return out_block

    out = matmul_allgather_overlapped_bidi(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    lhs_spec = P(None, "i")
    lhs = device_put(lhs, lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(rhs, rhs_spec)

    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter(lhs_block, rhs_block):
        out_summand = lhs_block @ rhs_block
        return ember.lax.psum_scatter(out_summand, "i", tiled=True)

    out = matmul_psumscatter(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped(lhs_block, rhs_block):
        size = ember.lax.axis_size("i")
        idx = ember.lax.axis_index("i")
        shift = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )
        lhs_block = lhs_block.reshape(size, -1, lhs_block.shape[1])  # split 1st axis

        out_summand = lhs_block[(idx + 1) % size] @ rhs_block
        for i in range(1, size):
            out_summand = shift(out_summand)
            out_summand += lhs_block[(idx + i + 1) % size] @ rhs_block
        return out_summand

    out = matmul_psumscatter_overlapped(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    @ember.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped_bidi(lhs_block, rhs_block):
        size = ember.lax.axis_size("i")
        idx = ember.lax.axis_index("i")
        shift_up = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            ember.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[0] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 0)

        out_summand_lo = lhs_blocks((idx - 1) % size, 0) @ rhs_block
        out_summand_hi = lhs_blocks((idx + 1) % size, 1) @ rhs_block
        for i in range(1, size):
            out_summand_lo = shift_up(out_summand_lo)
            out_summand_hi = shift_dn(out_summand_hi)
            out_summand_lo += lhs_blocks((idx - i - 1) % size, 0) @ rhs_block
            out_summand_hi += lhs_blocks((idx + i + 1) % size, 1) @ rhs_block
        return jnp.concatenate([out_summand_lo, out_summand_hi])

    out = matmul_psumscatter_overlapped_bidi(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))

    import ember
    import ember.numpy as jnp

    def predict(params, inputs):
        for W, b in params:
            outputs = jnp.dot(inputs, W) + b
            inputs = ember.nn.relu(outputs)
        return outputs

    def loss(params, batch):
        inputs, targets = batch
        predictions = predict(params, inputs)
        return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))

    def init_layer(key, n_in, n_out):
        k1, k2 = ember.random.split(key)
        W = ember.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
        b = ember.random.normal(k2, (n_out,))
        return W, b

    def init(key, layer_sizes, batch_size):
        key, *keys = ember.random.split(key, len(layer_sizes))
        params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

        key, *keys = ember.random.split(key, 3)
        inputs = ember.random.normal(keys[0], (batch_size, layer_sizes[0]))
        targets = ember.random.normal(keys[1], (batch_size, layer_sizes[-1]))

        return params, (inputs, targets)

    layer_sizes = [784, 128, 128, 128, 128, 128, 8]
    batch_size = 32

    params, batch = init(ember.random.key(0), layer_sizes, batch_size)

    from ember.sharding import Mesh, PartitionSpec as P

    mesh = ember.make_mesh((8,), ("batch",))
    ember.set_mesh(mesh)

    # replicate initial params on all devices, shard data batch over devices
    batch = ember.device_put(batch, NamedSharding(mesh, P("batch")))
    params = ember.device_put(params, NamedSharding(mesh, P()))

    # adapt the loss function to sum the losses across devices
    @ember.shard_map(out_specs=P())
    def loss_dp(params, local_batch):
        inputs, targets = local_batch
        predictions = predict(params, inputs)  # use reference 'predict`
        local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
        return ember.lax.pmean(local_loss, "batch")

    print(ember.jit(loss)(params, batch))
    print(ember.jit(loss_dp)(params, batch))

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    print(
        allclose(
            ember.jit(ember.grad(loss))(params, batch),
            ember.jit(ember.grad(loss_dp))(params, batch),
        )
    )

    # shard data batch *and params* over devices
    mesh = ember.make_mesh((4,), ("batch",))
    ember.set_mesh(mesh)
    batch = ember.device_put(batch, P("batch"))
    params = ember.device_put(params, P("batch"))

    # adapt the prediction function to gather weights just before their use,
    # and to re-gather them on the backward pass (rather than saving them)
    @partial(ember.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
    def predict_fsdp(params_frag, inputs):
        for W_frag, b_frag in params_frag:
            W = ember.lax.all_gather(W_frag, "batch", tiled=True)
            b = ember.lax.all_gather(b_frag, "batch", tiled=True)
            outputs = jnp.dot(inputs, W) + b
            inputs = ember.nn.relu(outputs)
        return outputs

    @ember.shard_map(out_specs=P())
    def loss_fsdp(local_params, local_batch):
        inputs, targets = local_batch
        predictions = predict_fsdp(local_params, inputs)
        local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
        return ember.lax.pmean(local_loss, "batch")

    repl_params = ember.device_put(params, P())
    repl_batch = ember.device_put(batch, P())
    print(ember.jit(loss)(repl_params, repl_batch))
    print(ember.jit(loss_fsdp)(params, batch))

    print(
        allclose(
            ember.jit(ember.grad(loss))(repl_params, repl_batch),
            ember.jit(ember.grad(loss_fsdp))(params, batch),
        )
    )

    mesh = ember.make_mesh((8,), ("feats",))
    ember.set_mesh(mesh)

    batch = ember.device_put(batch, NamedSharding(mesh, P(None, "feats")))
    params = ember.device_put(params, NamedSharding(mesh, P("feats")))

    def predict_tp(params, inputs):
        for W, b in params:
            outputs = gemm_tp(inputs, W, b)
            inputs = ember.nn.relu(outputs)
        return outputs

    @ember.shard_map(
        in_specs=(P(None, "feats"), P("feats", None), P("feats")), out_specs=P(None, "feats")
    )
    def gemm_tp(inputs, W, b):
        block_result = jnp.dot(inputs, W)
        return ember.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b

    def loss_tp(params, batch):
        inputs, targets = batch
        predictions = predict_tp(params, inputs)
        return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))  # NOTE psum!

    mesh = ember.make_mesh((4, 2), ("batch", "feats"))
    ember.set_mesh(mesh)

    batch = ember.device_put(batch, NamedSharding(mesh, P("batch", "feats")))
    params = ember.device_put(params, NamedSharding(mesh, P(("feats", "batch"))))

    # mostly same as previous predict_fsdp definition, except we call gemm_tp
    @partial(ember.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
    def predict_fsdp_tp(params_frag, inputs):
        for W_frag, b_frag in params_frag:
            W = ember.lax.all_gather(W_frag, "batch", tiled=True)
            b = ember.lax.all_gather(b_frag, "batch", tiled=True)
            block_result = jnp.dot(inputs, W)
            outputs = (
                ember.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b
            )
            inputs = ember.nn.relu(outputs)
        return outputs

    @ember.shard_map(in_specs=(P(("feats", "batch")), P("batch", "feats")), out_specs=P())
    def loss_fsdp_tp(local_params, local_batch):
        inputs, targets = local_batch
        predictions = predict_fsdp_tp(local_params, inputs)
        sq_err = ember.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), "feats")
        return ember.lax.pmean(jnp.mean(sq_err), "batch")

    repl_params = ember.device_put(params, P())
    repl_batch = ember.device_put(batch, P())
    print(ember.jit(loss)(repl_params, repl_batch))
    print(ember.jit(loss_fsdp_tp)(params, batch))

    print(
        allclose(
            ember.jit(ember.grad(loss))(repl_params, repl_batch),
            ember.jit(ember.grad(loss_fsdp_tp))(params, batch),
        )
    )

    L = len(params) - 2  # num layers, excluding first and last
    N = batch_size  # batch size
    F = params[0][0].shape[1]  # num features

    # choose some pipeline parameters
    S = 2  # number of stages
    B = 8  # size of each microbatch
    assert L % S == 0, "S (number of stages) must divide L (number of inner layers)"

    # compute some useful quantities
    M, ragged = divmod(N, B)  # M is number of microbatches
    assert not ragged, "B (size of each microbatch) must divide total batch size"
    K, ragged = divmod(M, S)  # K is microbatches per stage
    assert not ragged, "S (number of stages) must divide number of microbatches"
    print(f"{S} stages, {L // S} layer(s) per stage, {L} pipelined layers total")
    print(f"{B} examples per microbatch, {M} microbatches total")

    mesh = Mesh(ember.devices()[:S], ("stages",))

    def predict_pp(params, inputs):
        (W_first, b_first), inner_params, (W_last, b_last) = params
        inputs = ember.nn.relu(jnp.dot(inputs, W_first) + b_first)
        inputs = spmd_pipeline(lambda Wb, x: ember.nn.relu(x @ Wb[0] + Wb[1]), inner_params, inputs)
        outputs = jnp.dot(inputs, W_last) + b_last
        return outputs

    @ember.shard_map(in_specs=((P(), P("stages"), P()), P("stages")), out_specs=P())
    def loss_pp(params, batch):
        inputs, targets = batch
        predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
        local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
        return ember.lax.pmean(local_loss, "stages")

    def spmd_pipeline(fn, stage_params, inputs):
        stage = ember.lax.axis_index("stages")
        outputs = jnp.zeros_like(inputs) * jnp.nan
        state = jnp.zeros((L // S, B, F)) * jnp.nan
        for i in range(M + L - 1):
            state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
            state = ember.vmap(fn)(stage_params, state)
            outputs = outputs.at[(i - L + 1) % K].set(
                jnp.where(stage == S - 1, state[-1], outputs[(i - L + 1) % K])
            )
            state, inputs, outputs = shift(i, state, inputs, outputs)
        outputs = ember.lax.ppermute(outputs, "stages", [(i, (i + 1) % S) for i in range(S)])
        return outputs

    def shift(i, state, inputs, outputs):
        sh = lambda x, d: ember.lax.ppermute(x, "stages", [(i, (i + d) % S) for i in range(S)])
        state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
        if (i % K) == (-1 % K):
            inputs = sh(inputs, +1)
        if ((i - L + 1) % K) == (-1 % K):
            outputs = sh(outputs, +1)
        return state, inputs, outputs

    first_params, *inner_params, last_params = params
    Ws, bs = zip(*inner_params)
    params_stacked = jnp.stack(Ws), jnp.stack(bs)
    first_params = ember.device_put(first_params, NamedSharding(mesh, P()))
    params_stacked = ember.device_put(params_stacked, NamedSharding(mesh, P("stages")))
    last_params = ember.device_put(last_params, NamedSharding(mesh, P()))
    params_ = first_params, params_stacked, last_params

    batch_ = ember.device_put(batch, NamedSharding(mesh, P("stages")))

    ember.set_mesh(mesh)
    print(ember.jit(loss_pp)(params_, batch_))

    _ = ember.jit(ember.grad(loss_pp))(params_, batch_)  # don't crash


def as_ember_records(expected):
    """JAX's records as ember gives them, where ember differs on purpose (module docstring)."""
    blocks = iter(EMBER_BLOCK_PRINTS)
    out = []
    for record in expected:
        fixed = []
        for a in record:
            if isinstance(a, str) and a.startswith("On cpu:"):
                a = next(blocks)
            fixed.append(a)
        out.append(tuple(fixed))
    assert next(blocks, None) is None
    return drawings_as_blocks(out)


def drawings_as_blocks(records):
    """Each run of ``stdout:`` lines (one drawing) as the device labels of its blocks."""
    out = []
    for record in records:
        text = record[0] if len(record) == 1 and isinstance(record[0], str) else None
        if text is not None and text.startswith("stdout: "):
            labels = re.findall(r"CPU [\d,]+", text)
            if out and out[-1][0] == "drawing":
                out[-1][1].extend(labels)
            else:
                out.append(("drawing", labels))
            continue
        out.append(record)
    return out


def run_with_8_devices():
    """The program's records, from a process of its own (the backend starts with 8 devices)."""
    code = (
        # the page's own setup (XLA_FLAGS) gives the 8 devices: no device count from outside
        "import os\n"
        "os.environ.pop('EMBER_CPU_DEVICE_COUNT', None)\n"
        "import json\n"
        "from tests.ports._util import plain\n"
        "from tests.ports.test_shard_map_tutorial import RECORD_MARK, program\n"
        "print(RECORD_MARK + json.dumps(plain(program().record)))\n"
    )
    out = run_ok(["-c", code], cwd=ROOT, EMBER_PLATFORMS="cpu")
    lines = [line for line in out.splitlines() if line.startswith(RECORD_MARK)]
    assert len(lines) == 1, out
    return [tuple(args) for args in json.loads(lines[0].removeprefix(RECORD_MARK))]


@pytest.mark.slow
def test_shard_map_tutorial_gives_jax_answers():
    got = drawings_as_blocks(run_with_8_devices())
    expected = as_ember_records(EXPECTED)
    # out_specs=P() for a value that differs along 'i': the error the page shows on purpose
    # says what JAX's says, in ember's words.
    (jax_error,) = EXPECTED[CHECK_REP_ERROR]
    assert (
        jax_error.startswith("shard_map applied to the function")
        and "out_specs is P()" in jax_error
    )
    at = expected.index((jax_error,))
    (error,) = got[at]
    assert error.startswith(
        "shard_map output #0 has out_specs PartitionSpec(), which says it is the same on every device along mesh axes ['i']"
    ), error
    got[at] = expected[at]
    # make_jaxpr of x * y: the body, with the pvary JAX inserts, is JAX's line for line
    at = next(i for i, r in enumerate(expected) if str(r[0]).startswith("{ lambda ; a:f32[6@i]"))
    (jax_jaxpr,), (jaxpr,) = expected[at], got[at]
    assert _body_of(jaxpr) == _body_of(jax_jaxpr), jaxpr
    got[at] = expected[at]
    # the scan cell: ember reaches the scan and names the carry types JAX's page describes
    at = next(i for i, r in enumerate(expected) if str(r[0]).startswith("in_specs passed to"))
    (error,) = got[at]
    assert error.startswith(
        "scan body function carry input and carry output must have equal types, but they "
        "differ:\n\n  * the input carry component #0 has type float32[3]{V:i} but the "
        "corresponding output carry component has type float32[3], so the manual axis types "
        "do not match;"
    ), error
    assert "applying `ember.lax.pcast(..., ('i',), to='varying')` to the initial carry" in error
    got[at] = expected[at]
    assert_same(got, expected)


def _body_of(jaxpr_text):
    """The lines of the shard_map body in a printed jaxpr (from its ``jaxpr={`` to ``in``)."""
    lines = jaxpr_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "jaxpr={" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("in ("))
    return [lines[start].split("jaxpr=")[1]] + [line.strip() for line in lines[start + 1 : end + 1]]
