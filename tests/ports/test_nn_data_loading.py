# ruff: noqa: B007, UP032 - the ported program is kept as written; pinned values are long
"""Port of JAX's tutorial "Training a simple neural network, with PyTorch data loading"
(docs/notebooks/Neural_Network_and_Data_Loading.md).

The notebook's code cells with the imports changed to ember. MNIST cannot be downloaded here,
so the PyTorch ``DataLoader`` over MNIST is replaced by a NumPy batch iterator over a small
deterministic fake MNIST of the same shapes and dtypes (flattened 28x28 float32 pixels in
[0, 255], integer labels), and two epochs stand for eight. ``print`` records its arguments,
compared with what JAX 0.10.2 gave for the same code and data.
"""

import numpy as np
import pytest

from tests.ports._util import assert_same


def fake_mnist(n_train=512, n_test=256, seed=0):
    """Images whose mean brightness in a label-dependent band makes the labels learnable."""
    rng = np.random.RandomState(seed)

    def make(n):
        labels = rng.randint(0, 10, size=n)
        images = rng.randint(0, 128, size=(n, 28, 28)).astype(np.uint8)
        for i, label in enumerate(labels):
            images[i, 2 * label : 2 * label + 6] += 120
        return images, labels

    return make(n_train), make(n_test)


def program():
    record = []

    def print(*args):
        record.append(args)

    import ember.numpy as jnp
    from ember import grad, jit, random, vmap

    # A helper function to randomly initialize weights and biases
    # for a dense neural network layer
    def random_layer_params(m, n, key, scale=1e-2):
        w_key, b_key = random.split(key)
        return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))

    # Initialize all layers for a fully-connected neural network with sizes "sizes"
    def init_network_params(sizes, key):
        keys = random.split(key, len(sizes))
        return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]

    layer_sizes = [784, 512, 512, 10]
    step_size = 0.01
    num_epochs = 2  # (8 in the notebook)
    batch_size = 128
    n_targets = 10
    params = init_network_params(layer_sizes, random.key(0))

    from ember.scipy.special import logsumexp

    def relu(x):
        return jnp.maximum(0, x)

    def predict(params, image):
        # per-example predictions
        activations = image
        for w, b in params[:-1]:
            outputs = jnp.dot(w, activations) + b
            activations = relu(outputs)

        final_w, final_b = params[-1]
        logits = jnp.dot(final_w, activations) + final_b
        return logits - logsumexp(logits)

    # This works on single examples
    random_flattened_image = random.normal(random.key(1), (28 * 28,))
    preds = predict(params, random_flattened_image)
    print(preds.shape)

    # Doesn't work with a batch
    random_flattened_images = random.normal(random.key(1), (10, 28 * 28))
    try:
        preds = predict(params, random_flattened_images)
    except TypeError:
        print("Invalid shapes!")

    # Let's upgrade it to handle batches using `vmap`

    # Make a batched version of the `predict` function
    batched_predict = vmap(predict, in_axes=(None, 0))

    # `batched_predict` has the same call signature as `predict`
    batched_preds = batched_predict(params, random_flattened_images)
    print(batched_preds.shape)

    def one_hot(x, k, dtype=jnp.float32):
        """Create a one-hot encoding of x of size k."""
        return jnp.array(x[:, None] == jnp.arange(k), dtype)

    def accuracy(params, images, targets):
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
        return jnp.mean(predicted_class == target_class)

    def loss(params, images, targets):
        preds = batched_predict(params, images)
        return -jnp.mean(preds * targets)

    @jit
    def update(params, x, y):
        grads = grad(loss)(params, x, y)
        return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]

    # (in place of torch's MNIST and DataLoader with numpy_collate: the same batches as NumPy)
    (train_data, train_targets), (test_data, test_targets) = fake_mnist()
    training_generator = [
        (
            train_data[i : i + batch_size].reshape(-1, 784).astype(np.float32),
            train_targets[i : i + batch_size],
        )
        for i in range(0, len(train_data), batch_size)
    ]

    # Get the full train dataset (for checking accuracy while training)
    train_images = np.array(train_data).reshape(len(train_data), -1)
    train_labels = one_hot(np.array(train_targets), n_targets)

    # Get full test dataset
    test_images = jnp.array(test_data.reshape(len(test_data), -1), dtype=jnp.float32)
    test_labels = one_hot(np.array(test_targets), n_targets)

    for epoch in range(num_epochs):
        for x, y in training_generator:
            y = one_hot(y, n_targets)
            params = update(params, x, y)

        train_acc = accuracy(params, train_images, train_labels)
        test_acc = accuracy(params, test_images, test_labels)
        print("Training set accuracy {}".format(train_acc))
        print("Test set accuracy {}".format(test_acc))
    print(loss(params, test_images, test_labels), params[-1][1])
    return record


EXPECTED = [
    ((10,),),
    ("Invalid shapes!",),
    ((10, 10),),
    ("Training set accuracy 0.80078125",),
    ("Test set accuracy 0.73828125",),
    ("Training set accuracy 0.98828125",),
    ("Test set accuracy 0.9609375",),
    (
        0.09290237724781036,
        [
            0.006637394428253174,
            -0.004105206113308668,
            0.0067438422702252865,
            -0.006082063540816307,
            -0.0171057116240263,
            0.0092466427013278,
            -0.0010890575358644128,
            -0.01946611888706684,
            0.011834347620606422,
            0.009417051449418068,
        ],
    ),
]


@pytest.mark.slow
def test_nn_data_loading_tutorial_gives_jax_numbers():
    assert_same(program(), EXPECTED)
