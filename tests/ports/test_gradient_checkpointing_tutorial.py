# ruff: noqa: E501, I001, F811, F821, F841 - the ported program is kept as written (its imports, redefinitions, and the page's sketches that name undefined h, self, np, ... too); pinned values are long
"""Port of JAX's tutorial "Gradient checkpointing with jax.checkpoint (jax.remat)"
(docs/gradient-checkpointing.md).

The page's code cells, in order, with ``jax`` changed to ``ember`` in the imports and calls;
``print_saved_residuals`` prints to stdout, recorded line by line as ``stdout: ...`` (the
file in each source location is shortened to its name). JAX 0.10.2's records for the same
cells, run from a copy of this program with the imports changed back, are pinned below.

Where the port differs on purpose:

- the page's ``print_fwd_bwd`` draws the forward and backward jaxprs side by side with
  ``rich``; the port prints, for each, how many ``sin``, ``cos`` and ``dot_general``
  equations it holds (nested jaxprs included) — what the page's text reads off the tables
  (what is recomputed in the backward pass), and comparable between the two libraries,
  whose jaxprs differ in details;
- the page imports JAX's internal ``test_util`` for an example it defines without calling:
  left out;
- the page defines the offloading examples and the scan-over-layers network without running
  them: the port runs them too (marked "(ported: ...)"), with JAX's values pinned (the
  offloading examples' gradients only: ember has no host memory space to offload to, see
  docs/differences.md);
- one record is ember's, not JAX's (marked in ``EXPECTED``): JAX's ``checkpoint`` reuses its
  trace of ``loss`` from two cells earlier, made before ``predict`` was redefined with
  ``checkpoint_name``, so it finds no names to save; run in a fresh process, JAX saves
  ``layer0_output`` there too, as ember does.
"""

import re

from tests.ports._util import assert_same, record_program

_LOCATION = re.compile(r"from \S*/([^/\s]+\.py):")


def program():
    return record_program(run_cells)


def run_cells(print, shows_error):
    import ember
    import ember.numpy as jnp

    def g(W, x):
        y = jnp.dot(W, x)
        return jnp.sin(y)

    def f(W1, W2, W3, x):
        x = g(W1, x)
        x = g(W2, x)
        x = g(W3, x)
        return x

    W1 = jnp.ones((5, 4))
    W2 = jnp.ones((6, 5))
    W3 = jnp.ones((7, 6))
    x = jnp.ones(4)

    # Inspect the 'residual' values to be saved on the forward pass
    # if you were to evaluate `ember.grad(f)(W1, W2, W3, x)`
    from ember.ad_checkpoint import print_saved_residuals

    print_saved_residuals(f, W1, W2, W3, x)

    def f2(W1, W2, W3, x):
        x = ember.checkpoint(g)(W1, x)
        x = ember.checkpoint(g)(W2, x)
        x = ember.checkpoint(g)(W3, x)
        return x

    print_saved_residuals(f2, W1, W2, W3, x)

    f3 = ember.checkpoint(f, policy=ember.checkpoint_policies.dots_with_no_batch_dims_saveable)
    print_saved_residuals(f3, W1, W2, W3, x)

    from ember.ad_checkpoint import checkpoint_name

    def f4(W1, W2, W3, x):
        x = checkpoint_name(g(W1, x), name="a")
        x = checkpoint_name(g(W2, x), name="b")
        x = checkpoint_name(g(W3, x), name="c")
        return x

    f4 = ember.checkpoint(f4, policy=ember.checkpoint_policies.save_only_these_names("a"))
    print_saved_residuals(f4, W1, W2, W3, x)

    from ember.tree_util import tree_flatten, tree_unflatten

    def print_fwd_bwd(f, *args, **kwargs) -> None:
        args, in_tree = tree_flatten((args, kwargs))

        def f_(*args):
            args, kwargs = tree_unflatten(in_tree, args)
            return f(*args, **kwargs)

        fwd = ember.make_jaxpr(lambda *args: ember.vjp(f_, *args))(*args).jaxpr

        y, f_vjp = ember.vjp(f_, *args)
        res, in_tree = tree_flatten(f_vjp)

        def g_(*args):
            *res, y = args
            f_vjp = tree_unflatten(in_tree, res)
            return f_vjp(y)

        bwd = ember.make_jaxpr(g_)(*res, y).jaxpr

        # (ported: counts instead of the page's rich table, see the module docstring)
        print("forward computation:", _counts(fwd))
        print("backward computation:", _counts(bwd))

    # Without using `ember.checkpoint`:
    print_fwd_bwd(f, W1, W2, W3, x)

    # Using `ember.checkpoint` with policy=ember.checkpoint_policies.dots_with_no_batch_dims_saveable:
    print_fwd_bwd(f3, W1, W2, W3, x)

    def sin_vjp(x):
        y = jnp.sin(x)
        cos_x = jnp.cos(x)
        return y, lambda y_bar: cos_x * y_bar

    def sin_vjp2(x):
        y = jnp.sin(x)
        return y, lambda y_bar: jnp.cos(x) * y_bar

    def f(x):
        y = g(x)
        z = h(y)
        return z

    def f_vjp(x):
        y, g_vjp = ember.vjp(g, x)
        z, h_vjp = ember.vjp(h, y)

        def f_bwd(z_bar):
            (y_bar,) = h_vjp(z_bar)
            (x_bar,) = g_vjp(y_bar)
            return x_bar

        return z, f_bwd

    def f_vjp_checkpoint(x):
        y = g(x)
        z, h_vjp = ember.vjp(h, y)

        def f_bwd2(z_bar):
            (y_bar,) = h_vjp(z_bar)
            _, g_vjp = ember.vjp(g, x)
            (x_bar,) = g_vjp(y_bar)
            return x_bar

        return z, f_bwd2

    def f_checkpoint(x):
        y = ember.checkpoint(g)(x)
        z = h(y)
        return z

    def f_checkpoint_grad(x):
        y = g(x)  # step 1
        _, h_vjp = ember.vjp(h)(y)  # step 2
        (y_bar,) = h_vjp(1.0)  # step 3
        _, g_vjp = ember.vjp(g, x)  # step 4
        (x_bar,) = g_vjp(y_bar)  # step 5
        return x_bar

    def f_grad_bad(x):
        _ = f(x)  # step 1
        _, f_vjp = ember.vjp(f, x)  # step 2
        (x_bar,) = f_vjp(1.0)  # step 3
        return x_bar

    def f_grad_bad2(x):
        y, g_vjp = ember.vjp(g, x)  # step 1
        z = h(y)  # step 2
        _, h_vjp = ember.vjp(h, y)  # step 3
        (y_bar,) = h_vjp(1.0)  # step 3
        (x_bar,) = g_vjp(y_bar)  # step 5
        return x_bar

    def loss(params, x, y):
        return jnp.sum((predict(params, x) - y) ** 2)

    def predict(params, x):
        *Ws, Wlast = params
        for W in Ws:
            x = layer(W, x)
        x = jnp.dot(Wlast, x)
        return x

    def layer(W, x):
        return jnp.sin(jnp.dot(W, x))

    W1 = W2 = W3 = jnp.ones((4, 4))
    params = [W1, W2, W3]
    x = jnp.ones(4)
    y = jnp.ones(4)

    print_saved_residuals(loss, params, x, y)

    loss_checkpoint = ember.checkpoint(
        loss, policy=ember.checkpoint_policies.dots_with_no_batch_dims_saveable
    )
    print_saved_residuals(loss_checkpoint, params, x, y)

    from ember.ad_checkpoint import checkpoint_name

    def predict(params, x):
        *Ws, Wlast = params
        for i, W in enumerate(Ws):
            x = layer(W, x)
            x = checkpoint_name(x, name=f"layer{i}_output")
        x = jnp.dot(Wlast, x)
        return x

    print_saved_residuals(loss, params, x, y)

    loss_checkpoint2 = ember.checkpoint(
        loss, policy=ember.checkpoint_policies.save_any_names_but_these("layer1_output")
    )
    print_saved_residuals(loss_checkpoint2, params, x, y)

    from ember import checkpoint

    def checkpoint_offload_dot_with_no_batch_dims(self):
        policy = ember.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")

        @functools.partial(checkpoint, policy=policy)
        def f(x):
            x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
            x = jnp.sin(x)
            x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
            x = jnp.sin(x)
            x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
            x = jnp.sin(x)
            x = jnp.sum(x)
            return x

    from ember import checkpoint
    from ember.ad_checkpoint import checkpoint_name
    # (the page imports JAX's internal test_util here, for the function below, which it
    # defines without calling: left out)

    def checkpoint_names_saved_offloaded_recomputed(self):
        mesh = jtu.create_mesh((2,), ("x",))
        shape = (256, 128)
        np_inp = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
        s = NamedSharding(mesh, P("x"))
        inp = ember.device_put(np_inp, s)

        policy = ember.checkpoint_policies.save_and_offload_only_these_names(
            names_which_can_be_saved=["y"],
            names_which_can_be_offloaded=["z"],
            offload_src="device",
            offload_dst="pinned_host",
        )

        @functools.partial(checkpoint, policy=policy)
        def f(x):
            def g(ys, _):
                y, _ = ys
                y = checkpoint_name(jnp.sin(y), "y")
                z = checkpoint_name(jnp.sin(y), "z")
                z = z.T
                w = checkpoint_name(jnp.sin(z), "w")
                return (w.T, jnp.sum(w)), None

            _, scan_out = ember.lax.scan(g, (x, np.array(1, dtype=np.float32)), [np_inp])[0]
            return scan_out

    # (ported: the two offloading examples run, on one device and smaller inputs, with what
    # they leave undefined imported)
    import functools
    import math
    import numpy as np
    from ember import lax

    policy = ember.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")

    @functools.partial(checkpoint, policy=policy)
    def f_offload(x):
        x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
        x = jnp.sin(x)
        x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
        x = jnp.sin(x)
        x = jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST)
        x = jnp.sin(x)
        x = jnp.sum(x)
        return x

    x_offload = jnp.arange(16.0).reshape(4, 4) / 16.0
    print(ember.grad(f_offload)(x_offload))

    shape = (8, 4)
    np_inp = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) / 32
    policy = ember.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"],
        names_which_can_be_offloaded=["z"],
        offload_src="device",
        offload_dst="pinned_host",
    )

    @functools.partial(checkpoint, policy=policy)
    def f_names(x):
        def g(ys, _):
            y, _ = ys
            y = checkpoint_name(jnp.sin(y), "y")
            z = checkpoint_name(jnp.sin(y), "z")
            z = z.T
            w = checkpoint_name(jnp.sin(z), "w")
            return (w.T, jnp.sum(w)), None

        _, scan_out = ember.lax.scan(g, (x, np.array(1, dtype=np.float32)), [np_inp])[0]
        return scan_out

    print(ember.grad(f_names)(jnp.asarray(np_inp)))

    def chain_compose(funs):
        def f(x):
            for fun in funs:
                x = fun(x)
            return x

        return f

    f = chain_compose([jnp.sin] * 8)
    print_saved_residuals(f, 3.0)

    f = chain_compose([jnp.sin] * 16)
    print_saved_residuals(f, 3.0)

    def recursive_checkpoint(funs):
        if len(funs) == 1:
            return funs[0]
        elif len(funs) == 2:
            f1, f2 = funs
            return lambda x: f1(f2(x))
        else:
            f1 = recursive_checkpoint(funs[: len(funs) // 2])
            f2 = recursive_checkpoint(funs[len(funs) // 2 :])
            return lambda x: f1(ember.checkpoint(f2)(x))

    f = recursive_checkpoint([jnp.sin] * 8)
    print_saved_residuals(f, 3.0)

    f = recursive_checkpoint([jnp.sin] * 16)
    print_saved_residuals(f, 3.0)

    f = chain_compose([jnp.sin] * 8)
    print_fwd_bwd(f, 3.0)

    f = recursive_checkpoint([jnp.sin] * 8)
    print_fwd_bwd(f, 3.0)

    LayerParam = tuple[jnp.ndarray, jnp.ndarray]  # Weights-bias pair for a layer.
    ParamsList = list[LayerParam]

    def net(params: ParamsList, x: jnp.ndarray):
        for W, b in params:
            x = jnp.maximum(jnp.dot(x, W) + b, 0.0)
        return x

    params = [
        (jnp.array([[0.5, 0.5], [1.0, 1.0]]), jnp.array([0.5, 0.5])),
        (jnp.array([[0.5, 0.5], [1.0, 1.0]]), jnp.array([0.5, 0.5])),
    ]

    all_weights = jnp.stack([W for W, _ in params])
    all_biases = jnp.stack([b for _, b in params])

    def layer(x, W_b_pair):
        W, b = W_b_pair
        out = jnp.maximum(jnp.dot(x, W) + b, 0.0)
        return out, None

    def net(all_weights, all_biases, x):
        x, _ = ember.lax.scan(layer, x, (all_weights, all_biases))
        return x

    from functools import partial

    @partial(ember.checkpoint, policy=ember.checkpoint_policies.dots_with_no_batch_dims_saveable)
    def layer(x, W_b_pair):
        W, b = W_b_pair
        out = jnp.maximum(jnp.dot(x, W) + b, 0.0)
        return out, None

    # (ported: the scan-over-layers network runs, with and without the checkpointed layer)
    x_net = jnp.array([1.0, -2.0])
    print(net(all_weights, all_biases, x_net))
    net_loss = lambda w, b, x: jnp.sum(net(w, b, x) ** 2)
    print(ember.grad(net_loss, argnums=(0, 1))(all_weights, all_biases, x_net))
    print_saved_residuals(net_loss, all_weights, all_biases, x_net)


def _counts(jaxpr):
    """How many sin, cos and dot_general equations ``jaxpr`` holds, nested jaxprs included."""
    counts = {"sin": 0, "cos": 0, "dot_general": 0}

    def visit(j):
        for eqn in j.eqns:
            if eqn.primitive.name in counts:
                counts[eqn.primitive.name] += 1
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        visit(inner)

    visit(jaxpr)
    return counts


def _shortened(record):
    """The record, each location's file shortened to its name, without the empty lines
    ``print`` writes after each printed line."""
    return [
        tuple(_LOCATION.sub(r"from \1:", a) if isinstance(a, str) else a for a in entry)
        for entry in record
        if entry != ("stdout: ",)
    ]


EXPECTED = [
    ("stdout: f32[5,4] from the argument W1",),
    ("stdout: f32[6,5] from the argument W2",),
    ("stdout: f32[7,6] from the argument W3",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[5] output of sin from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[5] output of cos from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[6] output of sin from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[6] output of cos from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[7] output of cos from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    ("stdout: f32[5,4] from the argument W1",),
    ("stdout: f32[6,5] from the argument W2",),
    ("stdout: f32[7,6] from the argument W3",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[5] output of sin from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[6] output of sin from test_gradient_checkpointing_tutorial.py:46:15 "
        "(run_cells.<locals>.g)",
    ),
    ("stdout: f32[5,4] from the argument W1",),
    ("stdout: f32[6,5] from the argument W2",),
    ("stdout: f32[7,6] from the argument W3",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[5] output of dot_general from test_gradient_checkpointing_tutorial.py:45:12 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[6] output of dot_general from test_gradient_checkpointing_tutorial.py:45:12 "
        "(run_cells.<locals>.g)",
    ),
    (
        "stdout: f32[7] output of dot_general from test_gradient_checkpointing_tutorial.py:45:12 "
        "(run_cells.<locals>.g)",
    ),
    ("stdout: f32[5,4] from the argument W1",),
    ("stdout: f32[6,5] from the argument W2",),
    ("stdout: f32[7,6] from the argument W3",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[5] named 'a' from test_gradient_checkpointing_tutorial.py:79:12 "
        "(run_cells.<locals>.f4)",
    ),
    ("forward computation:", {"cos": 3, "dot_general": 3, "sin": 3}),
    ("backward computation:", {"cos": 0, "dot_general": 6, "sin": 0}),
    ("forward computation:", {"cos": 0, "dot_general": 3, "sin": 3}),
    ("backward computation:", {"cos": 3, "dot_general": 6, "sin": 2}),
    ("stdout: f32[4,4] from the argument params[0]",),
    ("stdout: f32[4,4] from the argument params[1]",),
    ("stdout: f32[4,4] from the argument params[2]",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[4] output of sin from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of cos from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of sin from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of cos from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of mul from test_gradient_checkpointing_tutorial.py:183:23 "
        "(run_cells.<locals>.loss)",
    ),
    ("stdout: f32[4,4] from the argument params[0]",),
    ("stdout: f32[4,4] from the argument params[1]",),
    ("stdout: f32[4,4] from the argument params[2]",),
    ("stdout: f32[4] from the argument x",),
    ("stdout: f32[4] from the argument y",),
    (
        "stdout: f32[4] output of dot_general from test_gradient_checkpointing_tutorial.py:193:23 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of dot_general from test_gradient_checkpointing_tutorial.py:193:23 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] output of dot_general from test_gradient_checkpointing_tutorial.py:189:12 "
        "(run_cells.<locals>.predict)",
    ),
    ("stdout: f32[4,4] from the argument params[0]",),
    ("stdout: f32[4,4] from the argument params[1]",),
    ("stdout: f32[4,4] from the argument params[2]",),
    ("stdout: f32[4] from the argument x",),
    (
        "stdout: f32[4] output of cos from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] named 'layer0_output' from test_gradient_checkpointing_tutorial.py:213:16 "
        "(run_cells.<locals>.predict)",
    ),
    (
        "stdout: f32[4] output of cos from test_gradient_checkpointing_tutorial.py:193:15 "
        "(run_cells.<locals>.layer)",
    ),
    (
        "stdout: f32[4] named 'layer1_output' from test_gradient_checkpointing_tutorial.py:213:16 "
        "(run_cells.<locals>.predict)",
    ),
    (
        "stdout: f32[4] output of mul from test_gradient_checkpointing_tutorial.py:183:23 "
        "(run_cells.<locals>.loss)",
    ),
    ("stdout: f32[4,4] from the argument params[0]",),
    ("stdout: f32[4,4] from the argument params[1]",),
    ("stdout: f32[4,4] from the argument params[2]",),
    ("stdout: f32[4] from the argument x",),
    ("stdout: f32[4] from the argument y",),
    # (ember's record: JAX 0.10.2 omits this line, its checkpoint reusing a stale trace of
    # loss, see the module docstring)
    (
        "stdout: f32[4] named 'layer0_output' from test_gradient_checkpointing_tutorial.py:213:16 "
        "(run_cells.<locals>.predict)",
    ),
    (
        [
            [-0.7125144600868225, -2.416790008544922, -3.279439926147461, -4.357641696929932],
            [0.5389034748077393, 1.3540767431259155, 3.2129173278808594, 4.782577037811279],
            [-0.1073906421661377, -0.8428921699523926, -0.332684725522995, -0.18528717756271362],
            [0.2543276846408844, 0.0648241937160492, 1.3230713605880737, 2.1448795795440674],
        ],
    ),
    (
        [
            [1.0, 0.9883908629417419, 0.9548352956771851, 0.9028400778770447],
            [0.8373461365699768, 0.7637454271316528, 0.6870244145393372, 0.6112207174301147],
            [0.5392211079597473, 0.4728141725063324, 0.41288796067237854, 0.3596703112125397],
            [0.31295323371887207, 0.27227240800857544, 0.2370375692844391, 0.20661966502666473],
            [0.1804046332836151, 0.15782193839550018, 0.13835935294628143, 0.12156584858894348],
            [0.10705102235078812, 0.09447940438985825, 0.08356523513793945, 0.07406559586524963],
            [0.0657748207449913, 0.05851885676383972, 0.052150264382362366, 0.04654426872730255],
            [0.04159504547715187, 0.03721267357468605, 0.03332062065601349, 0.02985352650284767],
        ],
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:322:20 "
        "(run_cells.<locals>.chain_compose.<locals>.f)",
    ),
    ("stdout: f32[] from the argument x",),
    (
        "stdout: f32[] output of sin from test_gradient_checkpointing_tutorial.py:338:29 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:338:32 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:338:29 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    ("stdout: f32[] from the argument x",),
    (
        "stdout: f32[] output of sin from test_gradient_checkpointing_tutorial.py:338:29 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    (
        "stdout: f32[] output of sin from test_gradient_checkpointing_tutorial.py:338:29 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:338:32 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    (
        "stdout: f32[] output of cos from test_gradient_checkpointing_tutorial.py:338:29 "
        "(run_cells.<locals>.recursive_checkpoint.<locals>.<lambda>)",
    ),
    ("forward computation:", {"cos": 8, "dot_general": 0, "sin": 8}),
    ("backward computation:", {"cos": 0, "dot_general": 0, "sin": 0}),
    ("forward computation:", {"cos": 2, "dot_general": 0, "sin": 8}),
    ("backward computation:", {"cos": 6, "dot_general": 0, "sin": 5}),
    ([0.5, 0.5],),
    (([[[0.0, 0.0], [-0.0, -0.0]], [[0.0, 0.0], [0.0, 0.0]]], [[0.0, 0.0], [1.0, 1.0]]),),
    ("stdout: f32[2,2,2] from the argument w",),
    ("stdout: f32[2,2] from the argument b",),
    (
        "stdout: f32[2,2] output of scan from test_gradient_checkpointing_tutorial.py:378:15 "
        "(run_cells.<locals>.net)",
    ),
    (
        "stdout: f32[2,2] output of scan from test_gradient_checkpointing_tutorial.py:378:15 "
        "(run_cells.<locals>.net)",
    ),
    (
        "stdout: f32[2] output of mul from test_gradient_checkpointing_tutorial.py:392:39 "
        "(run_cells.<locals>.<lambda>)",
    ),
]


def test_gradient_checkpointing_tutorial_gives_jax_answers():
    recorder = program()
    assert_same(_shortened(recorder.record), EXPECTED)
