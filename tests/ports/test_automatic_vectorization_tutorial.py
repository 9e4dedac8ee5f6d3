"""Port of JAX's tutorial "Automatic vectorization" (docs/automatic-vectorization.md).

The page's code cells, in order, with ``import jax`` changed to ``import ember``; cells that
end in a bare expression print it, and ``print`` records its arguments, compared with what
JAX 0.10.2 gave for the same cells.
"""

from tests.ports._util import assert_same


def program():
    record = []

    def print(*args):  # the page's prints become records
        record.append(args)

    import ember
    import ember.numpy as jnp

    x = jnp.arange(5)
    w = jnp.array([2.0, 3.0, 4.0])

    def convolve(x, w):
        output = []
        for i in range(1, len(x) - 1):
            output.append(jnp.dot(x[i - 1 : i + 2], w))
        return jnp.array(output)

    print(convolve(x, w))

    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])

    def manually_batched_convolve(xs, ws):
        output = []
        for i in range(xs.shape[0]):
            output.append(convolve(xs[i], ws[i]))
        return jnp.stack(output)

    print(manually_batched_convolve(xs, ws))

    def manually_vectorized_convolve(xs, ws):
        output = []
        for i in range(1, xs.shape[-1] - 1):
            output.append(jnp.sum(xs[:, i - 1 : i + 2] * ws, axis=1))
        return jnp.stack(output, axis=1)

    print(manually_vectorized_convolve(xs, ws))

    auto_batch_convolve = ember.vmap(convolve)

    print(auto_batch_convolve(xs, ws))

    auto_batch_convolve_v2 = ember.vmap(convolve, in_axes=1, out_axes=1)

    xst = jnp.transpose(xs)
    wst = jnp.transpose(ws)

    print(auto_batch_convolve_v2(xst, wst))

    batch_convolve_v3 = ember.vmap(convolve, in_axes=[0, None])

    print(batch_convolve_v3(xs, w))

    jitted_batch_convolve = ember.jit(auto_batch_convolve)

    print(jitted_batch_convolve(xs, ws))

    def pairwise(f, xs):
        return ember.vmap(lambda x: ember.vmap(lambda y: f(x, y))(xs))(xs)

    print(pairwise(jnp.dot, ws), pairwise(jnp.subtract, x))  # (not on the page: a use)
    for value in list(record):
        print(value[0].dtype.name, value[0].shape)
    return record


EXPECTED = [
    ([11.0, 20.0, 29.0],),
    ([[11.0, 20.0, 29.0], [11.0, 20.0, 29.0]],),
    ([[11.0, 20.0, 29.0], [11.0, 20.0, 29.0]],),
    ([[11.0, 20.0, 29.0], [11.0, 20.0, 29.0]],),
    ([[11.0, 11.0], [20.0, 20.0], [29.0, 29.0]],),
    ([[11.0, 20.0, 29.0], [11.0, 20.0, 29.0]],),
    ([[11.0, 20.0, 29.0], [11.0, 20.0, 29.0]],),
    (
        [[29.0, 29.0], [29.0, 29.0]],
        [
            [0, -1, -2, -3, -4],
            [1, 0, -1, -2, -3],
            [2, 1, 0, -1, -2],
            [3, 2, 1, 0, -1],
            [4, 3, 2, 1, 0],
        ],
    ),
    ("float32", (3,)),
    ("float32", (2, 3)),
    ("float32", (2, 3)),
    ("float32", (2, 3)),
    ("float32", (3, 2)),
    ("float32", (2, 3)),
    ("float32", (2, 3)),
    ("float32", (2, 2)),
]


def test_automatic_vectorization_tutorial_gives_jax_numbers():
    assert_same(program(), EXPECTED)
