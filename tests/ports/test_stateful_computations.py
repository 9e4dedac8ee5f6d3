"""Port of JAX's tutorial "Stateful computations" (docs/stateful-computations.md).

The page's code cells, in order, with ``import jax`` changed to ``import ember``; ``print``
records its arguments, compared with what JAX 0.10.2 gave for the same cells. The last cell's
plot is replaced by recording the fitted parameters.
"""

from tests.ports._util import assert_same


def program():
    record = []

    def print(*args):
        record.append(args)

    import ember
    import ember.numpy as jnp

    class Counter:
        """A simple counter."""

        def __init__(self):
            self.n = 0

        def count(self) -> int:
            """Increments the counter and returns the new value."""
            self.n += 1
            return self.n

        def reset(self):
            """Resets the counter to zero."""
            self.n = 0

    counter = Counter()

    for _ in range(3):
        print(counter.count())

    counter.reset()
    fast_count = ember.jit(counter.count)

    for _ in range(3):
        print(fast_count())

    CounterState = int

    class CounterV2:
        def count(self, n: CounterState) -> tuple[int, CounterState]:
            # You could just return n+1, but here we separate its role as
            # the output and as the counter state for didactic purposes.
            return n + 1, n + 1

        def reset(self) -> CounterState:
            return 0

    counter = CounterV2()
    state = counter.reset()

    for _ in range(3):
        value, state = counter.count(state)
        print(value)

    state = counter.reset()
    fast_count = ember.jit(counter.count)

    for _ in range(3):
        value, state = fast_count(state)
        print(value)

    from typing import NamedTuple

    class Params(NamedTuple):
        weight: jnp.ndarray
        bias: jnp.ndarray

    def init(rng) -> Params:
        """Returns the initial model params."""
        weights_key, bias_key = ember.random.split(rng)
        weight = ember.random.normal(weights_key, ())
        bias = ember.random.normal(bias_key, ())
        return Params(weight, bias)

    def loss(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
        """Computes the least squares error of the model's predictions on x against y."""
        pred = params.weight * x + params.bias
        return jnp.mean((pred - y) ** 2)

    LEARNING_RATE = 0.005

    @ember.jit
    def update(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> Params:
        """Performs one SGD update step on params using the given data."""
        grad = ember.grad(loss)(params, x, y)

        # If we were using Adam or another stateful optimizer,
        # we would also do something like
        #
        #   updates, new_optimizer_state = optimizer(grad, optimizer_state)
        #
        # and then use `updates` instead of `grad` to actually update the params.
        # (And we'd include `new_optimizer_state` in the output, naturally.)

        new_params = ember.tree.map(lambda param, g: param - g * LEARNING_RATE, params, grad)

        return new_params

    rng = ember.random.key(42)

    # Generate true data from y = w*x + b + noise
    true_w, true_b = 2, -1
    x_rng, noise_rng = ember.random.split(rng)
    xs = ember.random.normal(x_rng, (128, 1))
    noise = ember.random.normal(noise_rng, (128, 1)) * 0.5
    ys = xs * true_w + true_b + noise

    # Fit regression
    params = init(rng)
    for _ in range(1000):
        params = update(params, xs, ys)

    print(xs[:3], ys[:3])
    print(params)  # (the page plots the fit instead)
    return record


EXPECTED = [
    (1,),
    (2,),
    (3,),
    (1,),
    (1,),
    (1,),
    (1,),
    (2,),
    (3,),
    (1,),
    (2,),
    (3,),
    (
        [[0.07592553645372391], [-0.4863426387310028], [1.290320634841919]],
        [[-0.5452669262886047], [-1.5731632709503174], [1.1261777877807617]],
    ),
    ((1.9722790718078613, -1.033139705657959),),
]


def test_stateful_computations_tutorial_gives_jax_numbers():
    assert_same(program(), EXPECTED)
