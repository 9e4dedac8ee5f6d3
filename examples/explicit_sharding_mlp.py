"""Train an MLP on scikit-learn's digits over a 4 x 2 (data x model) mesh of CPU devices in
**explicit** sharding mode, and check it against the same training in automatic mode and on
one device.

- **explicit**: the mesh's axes are `Explicit`, so every array's split is part of its type
  (`ember.typeof(w1)` is `float32[64,64@model]`). The batch is split over `data`, the hidden
  layer's units over `model`; the types propagate through the forward pass and the gradients
  at trace time. One operation has no unambiguous type: `hidden @ w2` contracts the hidden
  units, which are split over `model`, so the program says how the logits are split
  (`out_sharding=P("data", None)`): the partitioner sums the per-device partial products.
- **automatic**: the same mesh with `Auto` axes; `jit`'s `in_shardings`/`out_shardings` and a
  `with_sharding_constraint` on the hidden activations say where things go, and XLA's
  partitioner decides the rest (as in `spmd_mlp_digits.py`).
- **one device**: the same step, jitted, unsharded.

    python examples/explicit_sharding_mlp.py [--steps 30]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("EMBER_CPU_DEVICE_COUNT", "8")  # before ember starts its CPU backend

import numpy as np
from digits_mlp import cross_entropy, init_params
from sklearn.datasets import load_digits

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import AxisType, NamedSharding, P, reshard, use_mesh

HIDDEN = 64  # split over "model" (2 devices)
BATCH = 256  # split over "data" (4 devices)
LEARNING_RATE = 0.5
# Each layout sums in its own order (per-device partial sums, then an all-reduce), so float32
# losses differ in the last bits at every step; SGD carries those differences on, and over
# 30 steps they stay a few float32 ulps (about 1e-7 relative; the loss is about 2.3 -> 0.4).
RELATIVE_TOLERANCE = 1e-5

# The layout of the parameters in both sharded modes: the hidden units over "model".
PARAM_SPECS = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
MATMUL = (((1,), (0,)), ((), ()))  # (rows, k) x (k, cols): contract k


def loss_fn(params, images, labels, *, logits_sharding=None, hidden_sharding=None):
    """The same loss in every mode. ``logits_sharding`` types the one ambiguous product in
    explicit mode; ``hidden_sharding`` pins the activations in automatic mode."""
    hidden = enp.tanh(images @ params["w1"] + params["b1"])
    if hidden_sharding is not None:
        hidden = lax.with_sharding_constraint(hidden, hidden_sharding)
    logits = lax.dot_general(hidden, params["w2"], MATMUL, out_sharding=logits_sharding)
    return cross_entropy(logits + params["b2"], labels)


def sgd_step(params, images, labels, **layout):
    loss, grads = ember.value_and_grad(loss_fn)(params, images, labels, **layout)
    return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, loss


def load_batches(steps: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """``steps`` random batches of the digits (8x8 images scaled to [0, 1], one-hot labels)."""
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    order = [rng.permutation(len(images))[:BATCH] for _ in range(steps)]
    return [(images[i], labels[i]) for i in order]


def run(step, params, batches, place_batch=lambda images, labels: (images, labels)) -> np.ndarray:
    losses = []
    for images, labels in batches:
        params, loss = step(params, *place_batch(images, labels))
        losses.append(float(loss))
    return np.array(losses)


def train_explicit(params, batches) -> np.ndarray:
    mesh = ember.make_mesh((4, 2), ("data", "model"))  # Explicit axes: make_mesh's default
    with use_mesh(mesh):
        params = {k: reshard(v, PARAM_SPECS[k]) for k, v in params.items()}
        print("explicit mode, parameter types:")
        for k, v in params.items():
            print(f"  {k}: {ember.typeof(v)}")

        @ember.jit
        def step(params, images, labels):
            new, loss = sgd_step(params, images, labels, logits_sharding=P("data", None))
            # The types made it through the gradients: each parameter keeps its split.
            assert all(ember.typeof(new[k]) == ember.typeof(params[k]) for k in params)
            return new, loss

        return run(step, params, batches, lambda *batch: reshard(batch, P("data")))


def train_automatic(params, batches) -> np.ndarray:
    mesh = ember.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    layout = {k: NamedSharding(mesh, spec) for k, spec in PARAM_SPECS.items()}
    batch_rows = NamedSharding(mesh, P("data"))
    hidden = NamedSharding(mesh, P("data", "model"))
    step = ember.jit(
        lambda p, x, y: sgd_step(p, x, y, hidden_sharding=hidden),
        in_shardings=(layout, batch_rows, batch_rows),
        out_shardings=(layout, None),
    )
    return run(step, params, batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    batches = load_batches(args.steps, rng)
    params = init_params(rng, HIDDEN)

    curves = {
        "one device": run(ember.jit(sgd_step), params, batches),
        "automatic": train_automatic(params, batches),
        "explicit": train_explicit(params, batches),
    }
    print(" ".join(f"{name:>12}" for name in ("step", *curves)))
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"{i:>12} " + " ".join(f"{curve[i]:>12.7f}" for curve in curves.values()))
    single = curves["one device"]
    for name in ("automatic", "explicit"):
        worst = float(np.max(np.abs(curves[name] - single) / np.abs(single)))
        print(f"{name}: largest relative difference from one device {worst:.1e}")
        np.testing.assert_allclose(curves[name], single, rtol=RELATIVE_TOLERANCE)
    print(f"loss {single[0]:.3f} -> {single[-1]:.3f} over {args.steps} steps: the three agree")


if __name__ == "__main__":
    main()
