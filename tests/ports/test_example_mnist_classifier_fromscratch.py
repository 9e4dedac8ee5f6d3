# ruff: noqa: B008 - the ported program is kept as written
"""Port of JAX's ``examples/mnist_classifier_fromscratch.py``.

The program with its imports changed to ember; MNIST is replaced by a small deterministic fake
of the same shapes (``tests.ports.fake_datasets``) and two epochs stand for ten. ``print``
records its arguments, compared with what JAX 0.10.2 printed for the same code and data.
"""

import pytest

from tests.ports._util import assert_same


def program():
    record = []

    def print(*args):  # the program's prints become records
        record.append(args)

    import time

    import numpy.random as npr

    import ember.numpy as jnp
    from ember import grad, jit
    from ember.scipy.special import logsumexp
    from tests.ports import fake_datasets as datasets

    def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
        return [
            (scale * rng.randn(m, n), scale * rng.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
        ]

    def predict(params, inputs):
        activations = inputs
        for w, b in params[:-1]:
            outputs = jnp.dot(activations, w) + b
            activations = jnp.tanh(outputs)

        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    # (the program's `if __name__ == "__main__":` body)
    layer_sizes = [784, 1024, 1024, 10]
    param_scale = 0.1
    step_size = 0.001
    num_epochs = 2  # (10 in the example)
    batch_size = 128

    train_images, train_labels, test_images, test_labels = datasets.mnist()
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size : (i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(param_scale, layer_sizes)
    for epoch in range(num_epochs):
        start_time = time.time()
        for _ in range(num_batches):
            params = update(params, next(batches))
        epoch_time = time.time() - start_time

        train_acc = accuracy(params, (train_images, train_labels))
        test_acc = accuracy(params, (test_images, test_labels))
        print(f"Epoch {epoch} in {epoch_time:0.2f} sec")
        print(f"Training set accuracy {train_acc}")
        print(f"Test set accuracy {test_acc}")
    print(loss(params, (test_images, test_labels)), params[-1][1])
    return record


EXPECTED = [
    ("Epoch 0 in 1.20 sec",),
    ("Training set accuracy 0.095703125",),
    ("Test set accuracy 0.1171875",),
    ("Epoch 1 in 0.03 sec",),
    ("Training set accuracy 0.134765625",),
    ("Test set accuracy 0.12890625",),
    (
        2.8544082641601562,
        [
            -0.01568741351366043,
            -0.16602297127246857,
            -0.12389669567346573,
            0.15403637290000916,
            -0.11009035259485245,
            0.012076688930392265,
            0.01812715269625187,
            -0.01680377498269081,
            -0.13283753395080566,
            0.13293682038784027,
        ],
    ),
]


@pytest.mark.slow
def test_mnist_classifier_fromscratch_gives_jax_numbers():
    assert_same(program(), EXPECTED)
