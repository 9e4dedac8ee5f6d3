"""remat's partial evaluation hands the checkpoint policy down into loop and cond bodies:
the policy chooses per equation of the body, saved values are stacked across iterations,
and gradients are those without the checkpoint. The saved residuals are JAX 0.10.2's for
the same programs (pinned below)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import checkpoint_policies as policies, lax
from ember.ad_checkpoint import checkpoint_name, saved_residuals
from tests.core.util import assert_close


def _scan_layers(W, x):
    """Three layers of tanh(W @ h) as a scan over the stacked weights."""

    def layer(h, w):
        return enp.tanh(checkpoint_name(w @ h, "h")), None

    return enp.sum(lax.scan(layer, x, W)[0])


def _fori_layers(W, x):
    body = lambda i, h: enp.tanh(checkpoint_name(W[i] @ h, "h"))
    return enp.sum(lax.fori_loop(0, 3, body, x))


def _cond_layer(W, x):
    taken = lambda: enp.sin(checkpoint_name(W[0] @ x, "h"))
    other = lambda: enp.cos(W[1] @ x)
    return enp.sum(lax.cond(x[0] > 0, taken, other))


def _scan_then_sin(W, x):
    """The loop's results feed non-linear work after it: the policy decides them too."""

    def layer(h, w):
        z = checkpoint_name(w @ h, "h")
        return enp.tanh(z), enp.sin(z)

    h, ys = lax.scan(layer, x, W)
    return enp.sum(enp.sin(h)) + enp.sum(enp.cos(ys))


def _two_scans(W, x):
    layer = lambda h, w: (enp.tanh(checkpoint_name(w @ h, "h")), None)
    h, _ = lax.scan(layer, x, W)
    h, _ = lax.scan(layer, h, W)
    return enp.sum(h)


def _cond_then_sin(W, x):
    taken = lambda: enp.sin(checkpoint_name(W[0] @ x, "h"))
    other = lambda: enp.cos(W[1] @ x)
    return enp.sum(enp.sin(lax.cond(x[0] > 0, taken, other)))


@ember.jit
def _jitted_layer(W, h):
    return enp.tanh(checkpoint_name(W @ h, "h"))


def _two_jitted_layers(W, x):
    return enp.sum(_jitted_layer(W[0], _jitted_layer(W[1], x)))


def _reverse_scan_with_ys(W, x):
    def layer(h, w):
        z = checkpoint_name(w @ h, "h")
        return enp.tanh(z) * enp.sin(h), enp.exp(-z * z)

    h, ys = lax.scan(layer, x, W, reverse=True)
    return enp.sum(h * h) + enp.sum(ys * ys)


def _nested_scans(W, x):
    def inner(h, w):
        return enp.tanh(checkpoint_name(w @ h, "h")), enp.sin(h)

    def outer(h, _):
        h, ys = lax.scan(inner, h, W)
        return h * 0.5 + enp.sum(ys, axis=0), None

    return enp.sum(lax.scan(outer, x, enp.arange(2.0))[0] ** 2)


def _cond_in_scan(W, x):
    def layer(h, w):
        h = lax.cond(h[0] > 0, lambda: enp.tanh(checkpoint_name(w @ h, "h")), lambda: h * h)
        return h, None

    return enp.sum(lax.scan(layer, x, W)[0])


PROGRAMS = [
    _scan_layers,
    _fori_layers,
    _cond_layer,
    _scan_then_sin,
    _two_scans,
    _cond_then_sin,
    _two_jitted_layers,
    _reverse_scan_with_ys,
    _nested_scans,
    _cond_in_scan,
]

POLICIES = {
    "nothing": policies.nothing_saveable,
    "everything": policies.everything_saveable,
    "dots": policies.dots_saveable,
    "dots_without_batch_dims": policies.dots_with_no_batch_dims_saveable,
    "only_h": policies.save_only_these_names("h"),
    "any_names_but_h": policies.save_any_names_but_these("h"),
    "anything_except_h": policies.save_anything_except_these_names("h"),
    "offload_dots": policies.offload_dot_with_no_batch_dims("device", "pinned_host"),
    "both": policies.save_from_both_policies(
        policies.dots_saveable, policies.save_only_these_names("h")
    ),
}


@pytest.fixture
def weights_and_input(rng):
    W = (rng.normal(size=(3, 4, 4)) * 0.5).astype(np.float32)
    return W, rng.normal(size=(4,)).astype(np.float32)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_gradients_are_those_without_the_checkpoint(program, policy, weights_and_input):
    W, x = weights_and_input
    plain = ember.grad(program, argnums=(0, 1))(W, x)
    checkpointed = ember.grad(ember.checkpoint(program, policy=policy), argnums=(0, 1))
    for got in (checkpointed(W, x), ember.jit(checkpointed)(W, x)):
        for a, b in zip(got, plain):
            assert_close(a, b, rtol=1e-5, atol=1e-6)


# JAX 0.10.2's print_saved_residuals for jax.checkpoint(program, policy=...) on the same
# programs: (type, source). JAX says "output of closed_call" for a loop's stacked values,
# ember "output of scan"; "output" stands for both (and for a cond's or jitted function's).
JAX_SAVED = {
    ("dots", "_scan_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[3,4]", "output")],
    ("dots", "_fori_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[3,4]", "output")],
    ("dots", "_cond_layer"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[4]", "output")],
    ("nothing", "_scan_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x")],
    ("nothing", "_fori_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x")],
    ("nothing", "_cond_layer"): [("f32[3,4,4]", "W"), ("f32[4]", "x")],
    ("only_h", "_scan_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[3,4]", "output")],
    ("only_h", "_fori_layers"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[3,4]", "output")],
    ("only_h", "_cond_layer"): [("f32[3,4,4]", "W"), ("f32[4]", "x"), ("f32[4]", "output")],
    ("dots_without_batch_dims", "_scan_layers"): [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[3,4]", "output"),
    ],
    ("everything", "_scan_layers"): [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[3,4]", "output"),
        ("f32[3,4]", "output"),
    ],
    ("anything_except_h", "_scan_layers"): [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[3,4]", "output"),
        ("f32[3,4]", "output"),
    ],
}
for _policy in ("dots", "only_h"):
    JAX_SAVED[_policy, "_scan_then_sin"] = [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[3,4]", "output"),
    ]
    JAX_SAVED[_policy, "_two_scans"] = [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[3,4]", "output"),
        ("f32[3,4]", "output"),
    ]
    JAX_SAVED[_policy, "_cond_then_sin"] = [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[4]", "output"),
    ]
    JAX_SAVED[_policy, "_two_jitted_layers"] = [
        ("f32[3,4,4]", "W"),
        ("f32[4]", "x"),
        ("f32[4]", "output"),
        ("f32[4]", "output"),
    ]
for _program in ("_scan_then_sin", "_two_scans", "_cond_then_sin", "_two_jitted_layers"):
    JAX_SAVED["nothing", _program] = [("f32[3,4,4]", "W"), ("f32[4]", "x")]


def _kind(source: str) -> str:
    if source.startswith("from the argument "):
        return source.removeprefix("from the argument ")
    outputs = ("output of scan", "output of cond", "output of jitted function '_jitted_layer'")
    assert source.startswith(outputs), source
    return "output"


@pytest.mark.parametrize("case", JAX_SAVED, ids=lambda c: f"{c[0]}-{c[1].strip('_')}")
def test_saved_residuals_are_jaxs(case):
    policy_name, program_name = case
    program = globals()[program_name]
    W, x = np.ones((3, 4, 4), np.float32), np.ones(4, np.float32)
    saved = saved_residuals(ember.checkpoint(program, policy=POLICIES[policy_name]), W, x)
    got = [(aval.str_short(short_dtypes=True), _kind(source)) for aval, source in saved]
    assert sorted(got) == sorted(JAX_SAVED[case])


def _backward_eqns(policy, W, x):
    """The primitives of the backward pass's remat, nested jaxprs included."""
    jaxpr = ember.make_jaxpr(ember.grad(ember.checkpoint(_scan_layers, policy=policy)))(W, x)
    backward = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "remat"][-1]
    names: list[str] = []

    def walk(eqns):
        for eqn in eqns:
            names.append(eqn.primitive.name)
            for value in eqn.params.values():
                if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
                    walk(value.jaxpr.eqns)

    walk(backward.params["jaxpr"].jaxpr.eqns)
    return names


def test_dots_saveable_stacks_the_body_matmul_and_recomputes_the_tanh(weights_and_input):
    W, x = weights_and_input
    # The backward loop transposes w @ h (two matmuls per step); with the dots saved the
    # loop run again for the other residuals holds no matmul, only the tanh.
    dots = _backward_eqns(policies.dots_saveable, W, x)
    assert dots.count("dot_general") == 2 and dots.count("tanh") == 1
    nothing = _backward_eqns(policies.nothing_saveable, W, x)
    assert nothing.count("dot_general") == 3 and nothing.count("tanh") == 1
    # Everything saved: the backward pass runs only the transposed loop, nothing again.
    everything = _backward_eqns(policies.everything_saveable, W, x)
    assert everything.count("scan") == 1 and "tanh" not in everything


def test_names_inside_the_body_select_the_stacked_value(weights_and_input):
    W, x = weights_and_input
    named = saved_residuals(ember.checkpoint(_scan_layers, policy=POLICIES["only_h"]), W, x)
    other = saved_residuals(
        ember.checkpoint(_scan_layers, policy=policies.save_only_these_names("g")), W, x
    )
    assert [a.shape for a, _ in named] == [(3, 4, 4), (4,), (3, 4)]
    assert [a.shape for a, _ in other] == [(3, 4, 4), (4,)]
