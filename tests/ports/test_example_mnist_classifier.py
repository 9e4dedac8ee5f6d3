"""Port of JAX's ``examples/mnist_classifier.py`` (stax and optimizers).

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

    import itertools
    import time

    import numpy.random as npr

    import ember.numpy as jnp
    from ember import grad, jit, random
    from ember.example_libraries import optimizers, stax
    from ember.example_libraries.stax import Dense, LogSoftmax, Relu
    from tests.ports import fake_datasets as datasets

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    init_random_params, predict = stax.serial(
        Dense(1024), Relu, Dense(1024), Relu, Dense(10), LogSoftmax
    )

    # (the program's `if __name__ == "__main__":` body)
    rng = random.key(0)

    step_size = 0.001
    num_epochs = 2  # (10 in the example)
    batch_size = 128
    momentum_mass = 0.9

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

    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 28 * 28))
    opt_state = opt_init(init_params)
    itercount = itertools.count()

    print("\nStarting training...")
    for epoch in range(num_epochs):
        start_time = time.time()
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        epoch_time = time.time() - start_time

        params = get_params(opt_state)
        train_acc = accuracy(params, (train_images, train_labels))
        test_acc = accuracy(params, (test_images, test_labels))
        print(f"Epoch {epoch} in {epoch_time:0.2f} sec")
        print(f"Training set accuracy {train_acc}")
        print(f"Test set accuracy {test_acc}")
    print(loss(params, (test_images, test_labels)), params[-2][1][:8])
    return record


EXPECTED = [
    ("\nStarting training...",),
    ("Epoch 0 in 1.50 sec",),
    ("Training set accuracy 0.126953125",),
    ("Test set accuracy 0.15234375",),
    ("Epoch 1 in 0.03 sec",),
    ("Training set accuracy 0.298828125",),
    ("Test set accuracy 0.3046875",),
    (
        2.1958203315734863,
        [
            0.0012206158135086298,
            -0.0051283156499266624,
            0.007758708670735359,
            -0.01832999475300312,
            0.009250575676560402,
            -0.010018751956522465,
            0.005605197045952082,
            0.013956048525869846,
        ],
    ),
]


@pytest.mark.slow
def test_mnist_classifier_gives_jax_numbers():
    assert_same(program(), EXPECTED)
