"""Train an MLP on scikit-learn's digits over 8 CPU devices, three ways, and check that each
follows the single-device run's loss curve.

- **data parallel** (`jit` with shardings): the batch is split over all 8 devices, the
  parameters are replicated; XLA's partitioner inserts the gradient all-reduce.
- **2-D, data x model** (`jit` with shardings): a 4 x 2 mesh; the batch is split over `data`,
  the hidden layer's units over `model` (first weight matrix by columns, second by rows).
- **2-D by hand** (`shard_map`): the same layout, written as what one device does, with the
  collectives spelled out: `psum` over `model` after the row-split matmul, `pmean` of the
  loss over `data`; `grad` of the shard_map gives the sharded gradients.

    python examples/spmd_mlp_digits.py [--steps 60]
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
from ember.sharding import AxisType, NamedSharding, P

HIDDEN = 64
BATCH = 256
LEARNING_RATE = 0.5


def loss_fn(params, images, labels):
    hidden = enp.tanh(images @ params["w1"] + params["b1"])
    return cross_entropy(hidden @ params["w2"] + params["b2"], labels)


def sgd_step(params, images, labels):
    loss, grads = ember.value_and_grad(loss_fn)(params, images, labels)
    new = {k: params[k] - LEARNING_RATE * grads[k] for k in params}
    return new, loss


def per_device_loss(params, images, labels):
    """One device's part of the 2-D loss: its rows of the batch, its hidden units."""
    hidden = enp.tanh(images @ params["w1"] + params["b1"])  # this device's units
    logits = lax.psum(hidden @ params["w2"], "model") + params["b2"]
    # Each data shard holds an equal share of the batch: the mean of the shards' means.
    return lax.pmean(cross_entropy(logits, labels), "data")


def run(step, params, batches) -> np.ndarray:
    losses = []
    for images, labels in batches:
        params, loss = step(params, images, labels)
        losses.append(float(loss))
    return np.array(losses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    rng = np.random.default_rng(0)
    order = [rng.permutation(len(images))[:BATCH] for _ in range(args.steps)]
    batches = [(images[i], labels[i]) for i in order]
    params = init_params(rng, HIDDEN)

    single = run(ember.jit(sgd_step), params, batches)

    flat = ember.make_mesh((8,), ("batch",), axis_types=(AxisType.Auto,))
    rows, replicated = NamedSharding(flat, P("batch")), NamedSharding(flat, P())
    data_parallel = ember.jit(
        sgd_step, in_shardings=(replicated, rows, rows), out_shardings=replicated
    )

    mesh = ember.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    layout = {
        "w1": NamedSharding(mesh, P(None, "model")),
        "b1": NamedSharding(mesh, P("model")),
        "w2": NamedSharding(mesh, P("model", None)),
        "b2": NamedSharding(mesh, P()),
    }
    batch_rows = NamedSharding(mesh, P("data"))
    two_d = ember.jit(
        sgd_step, in_shardings=(layout, batch_rows, batch_rows), out_shardings=(layout, None)
    )

    spec = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
    sharded_loss = ember.shard_map(
        per_device_loss, mesh=mesh, in_specs=(spec, P("data"), P("data")), out_specs=P()
    )

    # The gradient is taken of the whole shard_map: its transpose is a shard_map too, whose
    # collectives XLA runs on the same devices (psum's cotangent is shared out correctly).
    @ember.jit
    def by_hand(params, images, labels):
        loss, grads = ember.value_and_grad(sharded_loss)(params, images, labels)
        return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, loss

    print(
        f"{'step':>5} {'1 device':>10} {'data parallel':>14} {'2-D jit':>10} {'2-D shard_map':>14}"
    )
    curves = {
        "data parallel": run(data_parallel, params, batches),
        "2-D jit": run(two_d, params, batches),
        "2-D shard_map": run(by_hand, params, batches),
    }
    for i in range(0, args.steps, max(1, args.steps // 10)):
        row = " ".join(f"{curves[k][i]:>{len(k)}.6f}" for k in curves)
        print(f"{i:>5} {single[i]:>10.6f} {row}")
    for name, curve in curves.items():
        worst = float(np.max(np.abs(curve - single) / np.abs(single)))
        verdict = "matches" if worst <= 1e-5 else "DIFFERS from"
        print(
            f"{name}: {verdict} the single-device curve (largest relative difference {worst:.1e})"
        )
    print(f"loss {single[0]:.3f} -> {single[-1]:.3f} over {args.steps} steps")


if __name__ == "__main__":
    main()
