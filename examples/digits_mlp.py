"""The one-hidden-layer MLP that the sharded digits examples train (``spmd_mlp_digits.py``,
``explicit_sharding_mlp.py``, ``multiprocess_digits.py``): its initial parameters and its
loss, so that each example shows only how it lays the model out and runs it."""

from __future__ import annotations

import numpy as np

import ember.numpy as enp

FEATURES = 64  # 8 x 8 pixels
CLASSES = 10


def init_params(rng: np.random.Generator, hidden: int) -> dict[str, np.ndarray]:
    """Glorot-uniform weights and zero biases, as host arrays (each example places them)."""

    def glorot(m, n):
        limit = np.sqrt(6.0 / (m + n))
        return rng.uniform(-limit, limit, (m, n)).astype(np.float32)

    return {
        "w1": glorot(FEATURES, hidden),
        "b1": np.zeros(hidden, np.float32),
        "w2": glorot(hidden, CLASSES),
        "b2": np.zeros(CLASSES, np.float32),
    }


def cross_entropy(logits, labels_one_hot):
    """The mean softmax cross-entropy of ``logits`` against one-hot labels."""
    shifted = logits - enp.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - enp.log(enp.sum(enp.exp(shifted), axis=-1, keepdims=True))
    return -enp.mean(enp.sum(labels_one_hot * log_probs, axis=-1))
