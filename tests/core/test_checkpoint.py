"""checkpoint/remat: same gradients as without it, and the policy decides what is saved."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import checkpoint_policies as policies

from .util import assert_close


def block(W, h):
    return enp.tanh(enp.sin(h @ W) * 2.0)


def loss(Ws, x, policy=None, remat=True):
    h = x
    for W in Ws:
        h = (ember.checkpoint(block, policy=policy) if remat else block)(W, h)
    return enp.sum(h**2)


@pytest.fixture
def problem(rng):
    Ws = [(rng.normal(size=(6, 6)) * 0.4).astype(np.float32) for _ in range(3)]
    return Ws, rng.normal(size=(4, 6)).astype(np.float32)


POLICIES = [
    policies.nothing_saveable,
    policies.everything_saveable,
    policies.dots_saveable,
    policies.dots_with_no_batch_dims_saveable,
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.__name__)
def test_gradients_are_unchanged(problem, policy):
    Ws, x = problem
    plain = ember.grad(lambda Ws: loss(Ws, x, remat=False))(Ws)
    for g in (
        ember.grad(lambda Ws: loss(Ws, x, policy))(Ws),
        ember.jit(ember.grad(lambda Ws: loss(Ws, x, policy)))(Ws),
    ):
        for a, b in zip(g, plain):
            assert_close(a, b, rtol=1e-5, atol=1e-6)


def _backward_remat(policy, problem):
    Ws, x = problem
    jaxpr = ember.make_jaxpr(ember.grad(lambda W: loss([W], x, policy)))(Ws[0])
    eqn = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "remat"][-1]
    return [e.primitive.name for e in eqn.params["jaxpr"].jaxpr.eqns]


def test_nothing_saveable_recomputes_the_matmul(problem):
    assert _backward_remat(policies.nothing_saveable, problem).count("dot_general") == 2


def test_dots_saveable_saves_the_matmul_and_recomputes_the_rest(problem):
    names = _backward_remat(policies.dots_saveable, problem)
    assert names.count("dot_general") == 1  # only the backward one
    assert "sin" in names and "tanh" in names


def test_checkpoint_under_vmap_and_static_args(problem):
    Ws, x = problem
    f = ember.checkpoint(lambda W, n: block(W, x) * n, static_argnums=(1,))
    got = ember.vmap(lambda W: f(W, 3).sum())(np.stack(Ws))
    assert_close(got, [float(block(W, x).sum() * 3) for W in Ws], rtol=1e-5)
