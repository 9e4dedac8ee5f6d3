# ruff: noqa: UP032 - the ported program is kept as written
"""Port of JAX's ``examples/differentially_private_sgd.py`` (per-example clipped gradients of a
convolutional net with ``vmap``).

The program with its imports changed to ember. absl's flags are replaced by a stand-in with the
same ``DEFINE_x(...).value`` interface, MNIST by a small deterministic fake of the same shapes
(``tests.ports.fake_datasets``), the batch size is 32 (256) and one epoch stands for sixty; the
privacy accounting (``compute_epsilon``, from the ``dp_accounting`` package) is not run.
``print`` records its arguments, compared with what JAX 0.10.2 printed.
"""

import pytest

from tests.ports._util import assert_same, flags


def program():
    record = []

    def print(*args):  # the program's prints become records
        record.append(args)

    import itertools
    import time

    import numpy.random as npr

    import ember.numpy as jnp
    from ember import grad, jit, random, vmap
    from ember.example_libraries import optimizers, stax
    from ember.tree_util import tree_flatten, tree_unflatten
    from tests.ports import fake_datasets as datasets

    _DPSGD = flags.DEFINE_boolean(
        "dpsgd", True, "If True, train with DP-SGD. If False, train with vanilla SGD."
    )
    _LEARNING_RATE = flags.DEFINE_float("learning_rate", 0.15, "Learning rate for training")
    _NOISE_MULTIPLIER = flags.DEFINE_float(
        "noise_multiplier", 1.1, "Ratio of the standard deviation to the clipping norm"
    )
    _L2_NORM_CLIP = flags.DEFINE_float("l2_norm_clip", 1.0, "Clipping norm")
    _BATCH_SIZE = flags.DEFINE_integer("batch_size", 32, "Batch size")  # (256)
    _EPOCHS = flags.DEFINE_integer("epochs", 1, "Number of epochs")  # (60)
    _SEED = flags.DEFINE_integer("seed", 0, "Seed for jax PRNG")
    _MICROBATCHES = flags.DEFINE_integer(
        "microbatches", None, "Number of microbatches (must evenly divide batch_size)"
    )

    init_random_params, predict = stax.serial(
        stax.Conv(16, (8, 8), padding="SAME", strides=(2, 2)),
        stax.Relu,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Conv(32, (4, 4), padding="VALID", strides=(2, 2)),
        stax.Relu,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Flatten,
        stax.Dense(32),
        stax.Relu,
        stax.Dense(10),
    )

    def loss(params, batch):
        inputs, targets = batch
        logits = predict(params, inputs)
        logits = stax.logsoftmax(logits)  # log normalize
        return -jnp.mean(jnp.sum(logits * targets, axis=1))  # cross entropy loss

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    def clipped_grad(params, l2_norm_clip, single_example_batch):
        """Evaluate gradient for a single-example batch and clip its grad norm."""
        grads = grad(loss)(params, single_example_batch)
        nonempty_grads, tree_def = tree_flatten(grads)
        total_grad_norm = jnp.linalg.norm(
            jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads])
        )
        divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.0)
        normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
        return tree_unflatten(tree_def, normalized_nonempty_grads)

    def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
        """Return differentially private gradients for params, evaluated on batch."""
        clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
        clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
        aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
        rngs = random.split(rng, len(aggregated_clipped_grads))
        noised_aggregated_clipped_grads = [
            g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
            for r, g in zip(rngs, aggregated_clipped_grads)
        ]
        normalized_noised_aggregated_clipped_grads = [
            g / batch_size for g in noised_aggregated_clipped_grads
        ]
        return tree_unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)

    def shape_as_image(images, labels, dummy_dim=False):
        target_shape = (-1, 1, 28, 28, 1) if dummy_dim else (-1, 28, 28, 1)
        return jnp.reshape(images, target_shape), labels

    # (the program's main())
    if _MICROBATCHES.value:
        raise NotImplementedError("Microbatches < batch size not currently supported")

    train_images, train_labels, test_images, test_labels = datasets.mnist()
    train_images, train_labels = train_images[:128], train_labels[:128]  # (one epoch: 4 steps)
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, _BATCH_SIZE.value)
    num_batches = num_complete_batches + bool(leftover)
    key = random.key(_SEED.value)

    def data_stream():
        rng = npr.RandomState(_SEED.value)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * _BATCH_SIZE.value : (i + 1) * _BATCH_SIZE.value]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()

    opt_init, opt_update, get_params = optimizers.sgd(_LEARNING_RATE.value)

    @jit
    def update(_, i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    @jit
    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)  # get new key for new random numbers
        return opt_update(
            i,
            private_grad(
                params, batch, rng, _L2_NORM_CLIP.value, _NOISE_MULTIPLIER.value, _BATCH_SIZE.value
            ),
            opt_state,
        )

    _, init_params = init_random_params(key, (-1, 28, 28, 1))
    opt_state = opt_init(init_params)
    itercount = itertools.count()

    print("\nStarting training...")
    for epoch in range(1, _EPOCHS.value + 1):
        start_time = time.time()
        for _ in range(num_batches):
            if _DPSGD.value:
                opt_state = private_update(
                    key,
                    next(itercount),
                    opt_state,
                    shape_as_image(*next(batches), dummy_dim=True),
                )
            else:
                opt_state = update(key, next(itercount), opt_state, shape_as_image(*next(batches)))
        epoch_time = time.time() - start_time
        print(f"Epoch {epoch} in {epoch_time:0.2f} sec")

        # evaluate test accuracy
        params = get_params(opt_state)
        test_acc = accuracy(params, shape_as_image(test_images, test_labels))
        test_loss = loss(params, shape_as_image(test_images, test_labels))
        print("Test set loss, accuracy (%): ({:.2f}, {:.2f})".format(test_loss, 100 * test_acc))
        print(test_loss, params[-1][1])  # (not in the example: the full-precision numbers)
    return record


EXPECTED = [
    ("\nStarting training...",),
    ("Epoch 1 in 18.34 sec",),
    ("Test set loss, accuracy (%): (2.28, 7.03)",),
    (
        2.2794406414031982,
        [
            0.021010734140872955,
            -0.01353275217115879,
            -0.007583740632981062,
            0.030748212710022926,
            0.013362707570195198,
            0.004344945773482323,
            -0.01976919360458851,
            0.0006480418378487229,
            -0.029238902032375336,
            -0.01337332371622324,
        ],
    ),
]


@pytest.mark.slow
def test_differentially_private_sgd_gives_jax_numbers():
    assert_same(program(), EXPECTED)
