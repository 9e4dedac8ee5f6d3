"""What the conformance checks share: running a function on the device under test, and
gradients by central differences to hold ember's derivatives against."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember


def on_device(device: Any, f: Callable[..., Any], *args: Any) -> Any:
    """``jit(f)(*args)`` on ``device``, checking that its results live there."""
    outs = ember.jit(f, device=device)(*args)
    for leaf in ember.tree_util.tree_leaves(outs):
        assert leaf.devices() == {device}
    return outs


def central_difference(f: Callable[[np.ndarray], Any], x: Any, eps: float = 1e-4) -> np.ndarray:
    """d sum(f(x)) / dx in float64, one coordinate at a time."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (np.sum(f(x + step)) - np.sum(f(x - step))) / (2 * eps)
    return grad
