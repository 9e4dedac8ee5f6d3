"""Stand-in for JAX's ``examples/datasets.py``: the same arrays, made up instead of downloaded.

``mnist()`` returns what the original does (flattened float32 images in [0, 1], one-hot float32
labels, train then test) for a small deterministic fake MNIST whose labels can be learned: each
digit lights up its own band of rows.
"""

import numpy as np


def _one_hot(x, k, dtype=np.float32):
    return np.array(x[:, None] == np.arange(k), dtype)


def mnist_raw(n_train=512, n_test=256, seed=0):
    """uint8 images (n, 28, 28) and integer labels, as the original's ``mnist_raw``."""
    rng = np.random.RandomState(seed)

    def make(n):
        labels = rng.randint(0, 10, size=n)
        images = rng.randint(0, 128, size=(n, 28, 28)).astype(np.uint8)
        for i, label in enumerate(labels):
            images[i, 2 * label : 2 * label + 6] += 120
        return images, labels

    (train_images, train_labels), (test_images, test_labels) = make(n_train), make(n_test)
    return train_images, train_labels, test_images, test_labels


def mnist(permute_train=False):
    """Flattened float32 images in [0, 1] and one-hot labels, as the original's ``mnist``."""
    train_images, train_labels, test_images, test_labels = mnist_raw()
    flatten = lambda x: np.reshape(x, (x.shape[0], -1)).astype(np.float32) / np.float32(255.0)
    train_images, test_images = flatten(train_images), flatten(test_images)
    train_labels, test_labels = _one_hot(train_labels, 10), _one_hot(test_labels, 10)
    if permute_train:
        perm = np.random.RandomState(0).permutation(train_images.shape[0])
        train_images, train_labels = train_images[perm], train_labels[perm]
    return train_images, train_labels, test_images, test_labels
