"""Randomised differential tests: random programs over many primitives, checked against each
other under the transformations.

Each seed builds a small straight-line program (``program_gen.generate``) over elementwise ops,
reductions, shape ops, gathers and scatters, contractions, selections and control flow with
generated bodies, with float inputs plus an int ``k`` and a bool ``flag``. For every program:

- the default backend (XLA) agrees with the NumPy ``reference`` backend, values and gradients;
- ``jit(f)`` agrees with ``f`` run op by op;
- ``vmap(f)`` over a batch agrees with ``f`` called on each example;
- for programs of smooth ops: jvp and vjp agree with finite differences (``check_grads``), and
  ``grad`` agrees with ``jit(grad)``, ``grad(jit)``, ``vmap(grad)`` and across backends;
  ``jacfwd`` agrees with ``jacrev``.

A fixed set of seeds runs by default. A longer run is opt-in:
``EMBER_DIFFERENTIAL_PROGRAMS=500 pytest tests/core/test_differential.py -m slow`` (tox env
``slow``). A failure names its seed and prints the program and its jaxpr; rerun one program with
``EMBER_DIFFERENTIAL_SEED=<seed> pytest tests/core/test_differential.py``.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import ember
from ember.test_util import check_grads
from ember.tree_util import tree_leaves
from tests.core.program_gen import Program, generate
from tests.core.program_ops import OPS

DEFAULT_SEEDS = list(range(24))
# The opt-in long run draws from seeds that the default run never uses.
SLOW_COUNT = int(os.environ.get("EMBER_DIFFERENTIAL_PROGRAMS", "0"))
SLOW_SEEDS = list(range(10_000, 10_000 + SLOW_COUNT))
if os.environ.get("EMBER_DIFFERENTIAL_SEED"):
    DEFAULT_SEEDS = [int(os.environ["EMBER_DIFFERENTIAL_SEED"])]

BATCH = 3
ON_REFERENCE_ONLY = ember.default_backend() == "reference"
# Transformations of op-by-op (eager) code compile every primitive separately on XLA, which is
# slow: the default run checks them on the reference backend only (the long run and a rerun of
# one seed on both); their jit-compiled forms are checked everywhere.
EAGER = ON_REFERENCE_ONLY or "EMBER_DIFFERENTIAL_SEED" in os.environ


# ---------------------------------------------------------------------------------------------
# Failure reports.


def _jaxpr_text(program: Program, args: list) -> str:
    try:
        return str(ember.make_jaxpr(program)(*args))
    except Exception as error:  # the report must not hide the original failure
        return f"(make_jaxpr failed: {type(error).__name__}: {error})"


@contextlib.contextmanager
def reporting(program: Program, args: list, check: str, example: list | None = None):
    """Turn any failure inside into an AssertionError naming the seed, program and inputs.

    ``args`` are the inputs of the check (a batch, for vmap); ``example``, if given, one
    example's inputs, for the program's jaxpr."""
    try:
        yield
    except Exception as error:
        shapes = ", ".join(f"{np.asarray(a).dtype}{list(np.shape(a))}" for a in args)
        raise AssertionError(
            f"differential check {check!r} failed for seed {program.seed} "
            f"({'smooth' if program.smooth else 'value-only'} program)\n"
            f"{type(error).__name__}: {error}\n\n{program}\n\n"
            f"jaxpr:\n{_jaxpr_text(program, example or args)}"
            f"\n\ninputs: {shapes}; k={args[-2]!r}, flag={args[-1]!r}\n"
            f"reproduce: EMBER_DIFFERENTIAL_SEED={program.seed} "
            f"pytest tests/core/test_differential.py  (or: from tests.core.program_gen import "
            f"generate; generate({program.seed}))"
        ) from error


def _close(got, want, rtol: float, what: str) -> None:
    got_leaves, want_leaves = tree_leaves(got), tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), f"{what}: {len(got_leaves)} != {len(want_leaves)}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}, result #{i}: shape {g.shape} != {w.shape}"
        # Absolute slack in proportion to the result's scale: float32 sums of many terms.
        atol = rtol * max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{what}, result #{i}")


# ---------------------------------------------------------------------------------------------
# Programs, inputs and the scalar loss used for gradients.


def _setup(seed: int):
    program = generate(seed)
    rng = np.random.default_rng(seed + 1)
    return program, rng, program.example_args(rng)


def _batch(program: Program, rng: np.random.Generator):
    """Stacked inputs and ``in_axes``: each input is batched or shared, at least one batched."""
    examples = [program.example_args(rng) for _ in range(BATCH)]
    n = len(examples[0])
    batched = [bool(b) for b in rng.random(n) < 0.7]
    batched[int(rng.integers(0, n))] = True
    stacked = [
        np.stack([ex[i] for ex in examples]) if batched[i] else examples[0][i] for i in range(n)
    ]
    per_example = [
        [stacked[i][b] if batched[i] else stacked[i] for i in range(n)] for b in range(BATCH)
    ]
    in_axes = tuple(0 if b else None for b in batched)
    return stacked, per_example, in_axes


def _loss(program: Program, rng: np.random.Generator):
    """A scalar of all outputs, weighted so no output's gradient is a trivial constant."""
    weights = [rng.uniform(0.5, 1.5, v.shape).astype(np.float32) for v in program.outputs]

    def loss(*args):
        return sum((out * w).sum() for out, w in zip(program(*args), weights))

    return loss


def _float_argnums(program: Program) -> tuple[int, ...]:
    return tuple(range(len(program.inputs)))


def _smooth(seeds: list[int]) -> list[int]:
    return [s for s in seeds if generate(s).smooth]


# ---------------------------------------------------------------------------------------------
# The checks.


def check_backends(seed: int) -> None:
    program, rng, args = _setup(seed)
    here, reference = ember.devices()[0], ember.devices("reference")[0]
    with reporting(program, args, "XLA == reference"):
        _close(
            ember.jit(program, device=here)(*args),
            ember.jit(program, device=reference)(*args),
            2e-4,
            "default backend vs reference",
        )
    if program.smooth:
        grad = ember.grad(_loss(program, rng), argnums=_float_argnums(program))
        with reporting(program, args, "grad on XLA == grad on reference"):
            _close(
                ember.jit(grad, device=here)(*args),
                ember.jit(grad, device=reference)(*args),
                1e-3,
                "grad: default backend vs reference",
            )


def check_jit_and_vmap(seed: int, eager: bool) -> None:
    program, rng, args = _setup(seed)
    jitted = ember.jit(program)
    with reporting(program, args, "jit(f) == f"):
        _close(jitted(*args), program(*args), 1e-4, "jit(f) vs f")
    stacked, per_example, in_axes = _batch(program, rng)
    with reporting(program, stacked, f"vmap(f, in_axes={in_axes}) == stacked f", per_example[0]):
        want = [jitted(*example) for example in per_example]
        want = [np.stack([w[i] for w in want]) for i in range(len(program.outputs))]
        vmapped = ember.vmap(program, in_axes=in_axes)
        _close(ember.jit(vmapped)(*stacked), want, 1e-4, "jit(vmap(f)) vs loop")
        if eager:
            _close(vmapped(*stacked), want, 1e-4, "vmap(f) vs loop")


def check_finite_differences(seed: int, eager: bool) -> None:
    program, _, args = _setup(seed)
    *floats, k, flag = args
    order = 2 if seed % 4 == 0 else 1  # second order costs three times as much
    fun = lambda *xs: program(*xs, k, flag)
    with reporting(program, args, f"check_grads order {order} (jvp, vjp vs finite differences)"):
        check_grads(fun if eager else ember.jit(fun), floats, order=order, atol=3e-2, rtol=3e-2)


def check_compositions(seed: int, eager: bool) -> None:
    program, rng, args = _setup(seed)
    loss = _loss(program, rng)
    argnums = _float_argnums(program)
    grad = ember.grad(loss, argnums=argnums)
    jit_grad = ember.jit(grad)
    with reporting(program, args, "jit(grad(f)) == grad(jit(f)) == grad(f)"):
        want = jit_grad(*args)
        _close(
            ember.grad(ember.jit(loss), argnums=argnums)(*args),
            want,
            1e-4,
            "grad(jit(f)) vs jit(grad(f))",
        )
        if eager:
            _close(grad(*args), want, 1e-4, "grad(f) vs jit(grad(f))")
    stacked, per_example, in_axes = _batch(program, rng)
    with reporting(
        program, stacked, f"vmap(grad, in_axes={in_axes}) == stacked grad", per_example[0]
    ):
        each = [jit_grad(*example) for example in per_example]
        want = [np.stack([e[i] for e in each]) for i in range(len(argnums))]
        vmapped = ember.vmap(grad, in_axes=in_axes)
        _close(ember.jit(vmapped)(*stacked), want, 1e-4, "jit(vmap(grad(f))) vs loop")
        if eager:
            _close(vmapped(*stacked), want, 1e-4, "vmap(grad(f)) vs loop")
    *floats, k, flag = args
    first = lambda x: program(x, *floats[1:], k, flag)
    with reporting(program, args, "jacfwd == jacrev"):
        _close(
            ember.jit(ember.jacfwd(first))(floats[0]),
            ember.jit(ember.jacrev(first))(floats[0]),
            1e-4,
            "jacfwd vs jacrev",
        )


# ---------------------------------------------------------------------------------------------
# The default run: a fixed set of seeds.

needs_two_backends = pytest.mark.skipif(
    ON_REFERENCE_ONLY,
    reason="only the reference backend is installed: nothing to compare it with "
    "(the jit/vmap/grad checks still run on it)",
)


@needs_two_backends
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_backend_matches_reference(seed):
    check_backends(seed)


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_jit_and_vmap_agree_with_eager(seed):
    check_jit_and_vmap(seed, EAGER)


@pytest.mark.parametrize("seed", _smooth(DEFAULT_SEEDS))
def test_derivatives_match_finite_differences(seed):
    check_finite_differences(seed, EAGER)


@pytest.mark.parametrize("seed", _smooth(DEFAULT_SEEDS))
def test_derivative_compositions_agree(seed):
    check_compositions(seed, EAGER)


# ---------------------------------------------------------------------------------------------
# The long run, opt-in: EMBER_DIFFERENTIAL_PROGRAMS=<count> pytest ... -m slow


@pytest.mark.slow
@pytest.mark.skipif(
    not SLOW_SEEDS, reason="set EMBER_DIFFERENTIAL_PROGRAMS=<count> for the long run"
)
@pytest.mark.parametrize("seed", SLOW_SEEDS or [None])
def test_many_programs(seed):
    if not ON_REFERENCE_ONLY:
        check_backends(seed)
    check_jit_and_vmap(seed, eager=True)
    if generate(seed).smooth:
        check_finite_differences(seed, eager=True)
        check_compositions(seed, eager=True)


def test_generator_is_deterministic_and_covers_the_op_table():
    """The same seed gives the same program; 200 seeds reach every op at least once."""
    assert str(generate(7)) == str(generate(7))
    seen = set()

    def walk(program):
        for stmt in program.stmts:
            seen.add(stmt.op)
            for param in stmt.params.values():
                for body in param if isinstance(param, tuple) else (param,):
                    if isinstance(body, Program):
                        walk(body)

    for seed in range(200):
        walk(generate(seed))
    assert seen == set(OPS)
