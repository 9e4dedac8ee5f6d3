"""A ring all-reduce written by hand with ppermute inside shard_map, checked against psum.

Each of the 8 devices holds a vector. The vector is cut into 8 chunks; in n-1 steps every
device passes one chunk to its right neighbour and adds the chunk it receives
(reduce-scatter), then in n-1 more steps passes the finished chunks round (all-gather). Every
device ends with the full sum, having sent 2(n-1)/n of its data: the algorithm collective
libraries use for large arrays.

    python examples/ring_allreduce.py
"""

from __future__ import annotations

import os

os.environ.setdefault("EMBER_CPU_DEVICE_COUNT", "8")  # before ember starts its CPU backend

import numpy as np

import ember
from ember import lax
from ember.sharding import P

N = 8


def ring_allreduce(x):
    """x: this device's (N * chunk,) vector; returns the sum over the ring."""
    me = lax.axis_index("ring")
    chunks = x.reshape(N, -1)
    right = [(i, (i + 1) % N) for i in range(N)]
    # Reduce-scatter: after step s, device d holds the running sum of chunk (d - s - 1) % N.
    for step in range(N - 1):
        send = chunks[(me - step) % N]
        received = lax.ppermute(send, "ring", right)
        index = (me - step - 1) % N
        chunks = chunks.at[index].add(received)
    # All-gather: pass the finished chunks round the ring.
    for step in range(N - 1):
        send = chunks[(me + 1 - step) % N]
        received = lax.ppermute(send, "ring", right)
        chunks = chunks.at[(me - step) % N].set(received)
    return chunks.reshape(-1)


def main() -> None:
    mesh = ember.make_mesh((N,), ("ring",))
    rng = np.random.default_rng(0)
    data = rng.normal(size=(N, N * 4)).astype(np.float32)  # one row per device
    ring = ember.jit(
        ember.shard_map(
            lambda row: ring_allreduce(row[0])[None],
            mesh=mesh,
            in_specs=P("ring"),
            out_specs=P("ring"),
        )
    )
    builtin = ember.jit(
        ember.shard_map(
            lambda row: lax.psum(row, "ring"), mesh=mesh, in_specs=P("ring"), out_specs=P()
        )
    )
    by_hand = np.asarray(ring(data))
    expected = np.asarray(builtin(data))[0]
    assert np.allclose(by_hand, expected[None, :], rtol=1e-5, atol=1e-5)
    print(f"every device holds the sum: max |ring - psum| = {np.abs(by_hand - expected).max():.2e}")
    print(f"max |psum - numpy| = {np.abs(expected - data.sum(0)).max():.2e}")


if __name__ == "__main__":
    main()
