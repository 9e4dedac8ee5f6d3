"""Data-parallel training of an MLP on scikit-learn's digits across processes, each with
several CPU devices, following the single-process run's loss curve.

Every process loads the data (it ships inside scikit-learn) and draws the same global batches
from a seeded generator; process ``p`` of ``P`` keeps only rows ``[p*B/P, (p+1)*B/P)`` of each
batch of ``B``, and ``make_array_from_process_local_data`` joins the slices into one global
batch split over every device of the job. The parameters are replicated; in the jitted SGD
step, XLA's partitioner inserts the gradient all-reduce, which crosses the processes (gloo on
CPU). Process 0 prints the loss every few steps and the test accuracy.

    python -m ember launch -n 2 --devices-per-process 2 examples/multiprocess_digits.py [--steps 60]

The same training in one process over the same number of devices, for comparison:

    python examples/multiprocess_digits.py --single --devices 4 [--steps 60]

With ``--check-against-single`` (under the launcher), process 0 then runs that single-process
training too and exits with status 1 unless every step's loss agrees to 1e-5 relative. Each
run prints its whole loss curve as JSON on a line starting with ``losses: ``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from digits_mlp import init_params
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
import ember.distributed
import ember.numpy as enp
from ember.sharding import NamedSharding, P

HIDDEN = 64
BATCH = 240  # the global batch: divides evenly over 2, 4, 6 or 8 devices
LEARNING_RATE = 0.5
SEED = 0
PRINT_EVERY = 10
RELATIVE_TOLERANCE = 1e-5
# The single-process run of --check-against-single: it compiles and trains in a few seconds
# to a minute; the bound only stops a stuck one.
SINGLE_RUN_TIMEOUT_S = 300
# What a process of the job inherits from the launcher: the single-process run must not join.
JOB_VARIABLES = ("EMBER_COORDINATOR_ADDRESS", "EMBER_NUM_PROCESSES", "EMBER_PROCESS_ID")
CURVE_MARK = "losses: "
SINGLE_CURVE_MARK = "single-process losses: "


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train images, one-hot train labels, test images, test labels: the same in every process."""
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=SEED, stratify=digits.target
    )
    return x_train, np.eye(10, dtype=np.float32)[y_train], x_test, y_test


def predict(params, images):
    hidden = enp.tanh(images @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


def loss_fn(params, images, labels_one_hot):
    logits = predict(params, images)
    shifted = logits - enp.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - enp.log(enp.sum(enp.exp(shifted), axis=-1, keepdims=True))
    return -enp.mean(enp.sum(labels_one_hot * log_probs, axis=-1))


def sgd_step(params, images, labels_one_hot):
    loss, grads = ember.value_and_grad(loss_fn)(params, images, labels_one_hot)
    return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, loss


def accuracy(params, images, labels):
    return enp.mean(enp.argmax(predict(params, images), axis=-1) == labels)


def global_batch_order(rng: np.random.Generator, num_train: int, steps: int) -> list[np.ndarray]:
    """The rows of each global batch: drawn alike in every process, and in the single run."""
    return [rng.permutation(num_train)[:BATCH] for _ in range(steps)]


def this_process_rows(global_rows: np.ndarray) -> np.ndarray:
    """Process p's slice of a global batch: rows [p*B/P, (p+1)*B/P)."""
    p, count = ember.process_index(), ember.process_count()
    share = len(global_rows) // count
    return global_rows[p * share : (p + 1) * share]


def global_array(sharding: NamedSharding, local_data: np.ndarray) -> ember.Array:
    """The global array whose block on this process's devices is ``local_data``."""
    return ember.make_array_from_process_local_data(sharding, local_data)


def train(steps: int) -> tuple[list[float], float]:
    """SGD over every device of the job (or of this process alone): the loss of each step and
    the final test accuracy."""
    if BATCH % ember.device_count():
        raise SystemExit(
            f"the global batch of {BATCH} does not split over {ember.device_count()} devices"
        )
    x_train, y_train, x_test, y_test = load_data()
    rng = np.random.default_rng(SEED)
    params = init_params(rng, HIDDEN)
    order = global_batch_order(rng, len(x_train), steps)

    mesh = ember.make_mesh((ember.device_count(),), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    step = ember.jit(sgd_step, in_shardings=(replicated, rows, rows), out_shardings=replicated)
    params = {k: global_array(replicated, v) for k, v in params.items()}
    losses = []
    for i, global_rows in enumerate(order):
        mine = this_process_rows(global_rows)
        images, labels = global_array(rows, x_train[mine]), global_array(rows, y_train[mine])
        params, loss = step(params, images, labels)
        losses.append(float(loss))  # the loss is replicated: every process holds all of it
        if i % PRINT_EVERY == 0 or i == steps - 1:
            report(f"step {i:>4}  loss {losses[-1]:.6f}")

    # Every process holds the whole test set: replicated, like the result.
    test_accuracy = ember.jit(accuracy, out_shardings=replicated)(
        params, global_array(replicated, x_test), global_array(replicated, y_test)
    )
    return losses, float(test_accuracy)


def report(line: str) -> None:
    if ember.process_index() == 0:
        print(line)


def run_single_process(devices: int, steps: int) -> list[float]:
    """This script's --single run in a child process (a fresh ember: the job's backend is
    fixed), bounded by SINGLE_RUN_TIMEOUT_S; its loss curve."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARIABLES}
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--single",
        "--devices",
        str(devices),
        "--steps",
        str(steps),
    ]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=SINGLE_RUN_TIMEOUT_S
    )
    if done.returncode != 0:
        raise SystemExit(
            f"the single-process run failed (status {done.returncode}):\n{done.stderr[-2000:]}"
        )
    curve = [line for line in done.stdout.splitlines() if line.startswith(CURVE_MARK)]
    if not curve:
        raise SystemExit(f"the single-process run printed no loss curve:\n{done.stdout[-2000:]}")
    return json.loads(curve[-1].removeprefix(CURVE_MARK))


def compare(multi: list[float], single: list[float]) -> float:
    """The largest relative difference between two loss curves of the same length."""
    multi_arr, single_arr = np.asarray(multi), np.asarray(single)
    return float(np.max(np.abs(multi_arr - single_arr) / np.abs(single_arr)))


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=60)
    parser.add_argument("--single", action="store_true", help="train in this process alone")
    parser.add_argument(
        "--devices", type=positive_int, default=4, help="the CPU devices of --single"
    )
    parser.add_argument(
        "--check-against-single",
        action="store_true",
        help="then train in one process over as many devices and compare the loss curves",
    )
    args = parser.parse_args()
    if args.single and args.check_against_single:
        parser.error("--check-against-single compares a launched run with --single: not both")

    # Before any computation: the CPU backend fixes its devices (and its peers) when it starts.
    if args.single:
        ember.config.update("cpu_device_count", args.devices)
    else:
        ember.distributed.initialize()
    report(
        f"{ember.process_count()} process(es), {ember.device_count()} devices in all, "
        f"{ember.local_device_count()} each; global batch {BATCH}"
    )

    losses, test_accuracy = train(args.steps)
    report(f"test accuracy: {test_accuracy:.4f}")
    report(CURVE_MARK + json.dumps(losses))

    if args.check_against_single and ember.process_index() == 0:
        single = run_single_process(ember.device_count(), args.steps)
        print(SINGLE_CURVE_MARK + json.dumps(single))
        worst = compare(losses, single)
        verdict = "matches" if worst <= RELATIVE_TOLERANCE else "DIFFERS from"
        print(f"{verdict} the single-process curve (largest relative difference {worst:.1e})")
        if worst > RELATIVE_TOLERANCE:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
