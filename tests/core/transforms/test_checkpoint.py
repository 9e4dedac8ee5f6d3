"""checkpoint/remat: same gradients as without it, and the policy decides what is saved."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import checkpoint_policies as policies, lax
from ember.ad_checkpoint import (
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    saved_residuals,
)
from ember.test_util import check_grads
from tests.core.util import assert_close


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


POLICY_IDS = ["nothing", "everything", "dots", "dots_without_batch_dims"]


@pytest.mark.parametrize("policy", POLICIES, ids=POLICY_IDS)
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


# --------------------------------------------------------------------------------------------
# Control flow inside a checkpoint: each splits by its own partial-evaluation rule


def _fori(x):
    return lax.fori_loop(0, 3, lambda i, c: c * x, x)  # x^4


def _fori_int_carry(x):
    # (1, x) -> (2, x^2) -> (3, 2x^3) -> (4, 6x^4)
    body = lambda i, c: (c[0] + 1, c[1] * x * c[0].astype(np.float32))
    return lax.fori_loop(0, 3, body, (1, x))[1]


def _scan(x):
    return lax.scan(lambda c, y: (enp.sin(c) * x + y, c * c), x, enp.arange(3.0))


def _cond(x):
    return lax.cond(x > 1, lambda v: enp.sin(v) * v, lambda v: v**3, x)


def _switch(x):
    index = (x > 0).astype(np.int32) + 1
    return lax.switch(index, [enp.sin, lambda v: v * enp.exp(v), lambda v: enp.cos(v) * v], x)


def _nested(x):
    return ember.checkpoint(lambda y: enp.sin(y) * y)(x) * x


def _dot(x):
    return ((enp.tanh(enp.ones((3, 3)) * x) @ enp.ones((3,))) * x).sum()


BODIES = {
    "fori": _fori,
    "fori_int_carry": _fori_int_carry,
    "scan_carry": lambda x: _scan(x)[0],
    "scan_ys": lambda x: _scan(x)[1].sum(),
    "cond": _cond,
    "switch": _switch,
    "nested": _nested,
    "dot": _dot,
}


@pytest.mark.parametrize("policy", POLICIES[:3], ids=POLICY_IDS[:3])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_checkpoint_around_control_flow(name, policy):
    f = BODIES[name]
    g = ember.checkpoint(f, policy=policy)
    expected = float(ember.grad(f)(1.5))
    assert_close(ember.grad(g)(1.5), expected, rtol=1e-5)
    assert_close(ember.jit(ember.grad(g))(1.5), expected, rtol=1e-5)
    assert_close(ember.grad(ember.jit(g))(1.5), expected, rtol=1e-5)
    xs = np.array([1.5, 0.5], np.float32)
    assert_close(ember.vmap(ember.grad(g))(xs), ember.vmap(ember.grad(f))(xs), rtol=1e-5)
    assert_close(ember.hessian(g)(1.5), ember.hessian(f)(1.5), rtol=1e-5)


def test_checkpointed_loops_give_jax_values():
    assert_close(ember.grad(ember.checkpoint(_fori))(1.5), 13.5)  # 4 x^3
    assert_close(ember.grad(ember.checkpoint(_fori_int_carry))(1.5), 81.0)  # 24 x^3
    jac = ember.jacrev(ember.checkpoint(lambda x: _scan(x)[1]))(1.5)
    assert_close(jac, [3.0, 3.3025088, 5.5932827])  # JAX
    assert_close(ember.linearize(ember.checkpoint(_fori), 1.5)[1](1.0), 13.5)


def test_checkpoint_around_a_while_loop_in_forward_mode():
    def f(v):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * v), (0, v))[1]

    g = ember.checkpoint(f)
    assert_close(ember.jvp(g, (1.5,), (1.0,))[1], 13.5)
    assert_close(ember.jit(ember.jacfwd(g))(1.5), 13.5)
    # a while_loop that does not touch the differentiated value is fine in reverse mode
    h = ember.checkpoint(lambda v: v * lax.while_loop(lambda c: c < 5, lambda c: c + 2, 0))
    assert_close(ember.grad(lambda v: h(v).astype(np.float32))(1.5), 6.0)


def test_checkpoint_with_integer_arguments_and_outputs():
    def f(v, n):
        loop = lax.fori_loop(0, 3, lambda i, c: c + n, n).astype(np.float32)
        return v * n.astype(np.float32) + loop * v

    assert_close(ember.grad(ember.checkpoint(f))(1.5, 3), 15.0)
    pair = ember.checkpoint(lambda v: (v * v, (v > 1).astype(np.int32)))
    assert_close(ember.grad(lambda v: pair(v)[0])(1.5), 3.0)
    assert_close(ember.jit(ember.grad(lambda v: pair(v)[0]))(1.5), 3.0)


def test_checkpoint_in_a_scan_body_and_a_cond_branch():
    def f(v):
        body = ember.checkpoint(lambda c, y: (enp.sin(c) * v + y, c))
        return lax.scan(body, v, enp.arange(3.0))[0]

    assert_close(ember.grad(f)(1.5), -0.7405431, rtol=1e-5)  # JAX
    assert_close(ember.jit(ember.grad(f))(1.5), ember.grad(f)(1.5), rtol=1e-5)
    check_grads(f, (np.float32(1.5),), order=1)


def test_checkpoint_around_a_loop_recomputes_its_forward_part():
    def backward_scans(policy):
        g = ember.checkpoint(lambda x: _scan(x)[0], policy=policy)
        jaxpr = ember.make_jaxpr(ember.grad(g))(1.5)
        remats = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "remat"]
        inner = remats[-1].params["jaxpr"].jaxpr.eqns
        return [e.primitive.name for e in inner].count("scan")

    # nothing saved: the backward part reruns the loop's forward half, then its transpose
    assert backward_scans(policies.nothing_saveable) == 2
    assert backward_scans(policies.everything_saveable) == 1


# --------------------------------------------------------------------------------------------
# Names and the policies that select by name


def _named_layers(x):
    a = checkpoint_name(enp.sin(x), "a")
    b = checkpoint_name(enp.sin(a), "b")
    c = checkpoint_name(enp.sin(b), "c")
    return enp.sum(c * c)


def _saved(policy, x):
    """What grad of the checkpointed function saves, as print_saved_residuals says."""
    return [
        source for _, source in saved_residuals(ember.checkpoint(_named_layers, policy=policy), x)
    ]


def _named(sources):
    return sorted(s.split("'")[1] for s in sources if s.startswith("named"))


NAME_POLICIES = {
    "only_a": (policies.save_only_these_names("a"), ["a"]),
    "only_a_c": (policies.save_only_these_names("a", "c"), ["a", "c"]),
    "names_but_b": (policies.save_any_names_but_these("b"), ["a", "c"]),
    "anything_but_b": (policies.save_anything_except_these_names("b"), ["c"]),  # a: not needed
    "both": (
        policies.save_from_both_policies(
            policies.save_only_these_names("a"), policies.save_only_these_names("b")
        ),
        ["a", "b"],
    ),
    "offload_names": (
        policies.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"],
            names_which_can_be_offloaded=["c"],
            offload_src="device",
            offload_dst="pinned_host",
        ),
        ["a", "c"],
    ),
}


@pytest.mark.parametrize("case", NAME_POLICIES)
def test_name_policies_save_the_named_values_and_keep_the_gradient(case):
    policy, names = NAME_POLICIES[case]
    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    assert _named(_saved(policy, x)) == names
    expected = ember.grad(_named_layers)(x)
    assert_close(ember.grad(ember.checkpoint(_named_layers, policy=policy))(x), expected)
    assert_close(ember.jit(ember.grad(ember.checkpoint(_named_layers, policy=policy)))(x), expected)


def test_save_anything_except_these_names_saves_the_excluded_array_under_no_name():
    def f(x):
        b = checkpoint_name(enp.sin(x), "b")
        return enp.sum(b * b)  # the backward pass needs b

    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    saved = lambda policy: [s for _, s in saved_residuals(ember.checkpoint(f, policy=policy), x)]
    assert any(s.startswith("named 'b'") for s in saved(policies.everything_saveable))
    # sin's output is the same array as b: it is recomputed too, not saved in b's place
    excluding = saved(policies.save_anything_except_these_names("b"))
    assert not any(s.startswith(("named 'b'", "output of sin")) for s in excluding)
    assert any(s.startswith("output of cos") for s in excluding)
    policy = policies.save_anything_except_these_names("b")
    assert_close(ember.grad(ember.checkpoint(f, policy=policy))(x), ember.grad(f)(x))


def test_checkpoint_name_is_the_identity_on_every_leaf_and_under_transformations():
    tree = {"w": np.arange(3.0, dtype=np.float32), "b": np.float32(2.0)}
    named = checkpoint_name(tree, "p")
    assert_close(named["w"], tree["w"])
    assert_close(named["b"], tree["b"])
    jaxpr = ember.make_jaxpr(lambda x: checkpoint_name(x, "p"))(tree["w"])
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["name"]
    assert jaxpr.jaxpr.eqns[0].params == {"name": "p"}
    f = lambda x: enp.sum(checkpoint_name(enp.sin(x), "s") ** 2)
    x = np.linspace(0.0, 1.0, 4).astype(np.float32)
    assert_close(ember.grad(f)(x), 2 * np.sin(x) * np.cos(x), rtol=1e-5)
    xs = np.stack([x, x + 1])
    assert_close(ember.vmap(ember.grad(f))(xs), 2 * np.sin(xs) * np.cos(xs), rtol=1e-5)
    check_grads(lambda x: checkpoint_name(x * x, "sq"), (x,), order=2)


def test_dots_saveable_saves_convolutions_too():
    def f(x, k):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME")
        return enp.sum(enp.sin(y))

    x = np.ones((1, 2, 5, 5), np.float32)
    k = np.ones((3, 2, 3, 3), np.float32) * 0.1
    sources = [
        s for _, s in saved_residuals(ember.checkpoint(f, policy=policies.dots_saveable), x, k)
    ]
    assert any(s.startswith("output of conv_general_dilated") for s in sources)
    sources = [
        s
        for _, s in saved_residuals(
            ember.checkpoint(f, policy=policies.dots_with_no_batch_dims_saveable), x, k
        )
    ]
    assert not any(s.startswith("output of conv_general_dilated") for s in sources)


def test_policies_may_answer_saveable_recompute_or_offloadable():
    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    by_name = {"a": Saveable, "b": Recompute, "c": Offloadable("device", "pinned_host")}

    def policy(prim, *avals, **params):
        return by_name[params["name"]] if prim.name == "name" else Recompute

    assert _named(_saved(policy, x)) == ["a", "c"]


def test_offload_dot_with_no_batch_dims_saves_those_dots_in_place():
    def f(w, x):
        return enp.sum(enp.sin(enp.sin(x @ w) @ w))

    w = np.full((3, 3), 0.5, np.float32)
    x = np.ones((2, 3), np.float32)
    policy = policies.offload_dot_with_no_batch_dims("device", "pinned_host")
    sources = [s for _, s in saved_residuals(ember.checkpoint(f, policy=policy), w, x)]
    assert sum(s.startswith("output of dot_general") for s in sources) == 2
    assert not any(s.startswith("output of sin") for s in sources)
    assert_close(ember.grad(ember.checkpoint(f, policy=policy))(w, x), ember.grad(f)(w, x))
    batched = lambda w, x: enp.sum(enp.sin(enp.einsum("bij,bjk->bik", x, w)))
    ws, xs = np.ones((2, 3, 3), np.float32), np.ones((2, 2, 3), np.float32)
    sources = [s for _, s in saved_residuals(ember.checkpoint(batched, policy=policy), ws, xs)]
    assert not any(s.startswith("output of dot_general") for s in sources)


def test_bad_policies_and_names_are_refused_clearly():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="Offloadable\\(src, dst\\), not the class"):
        ember.grad(ember.checkpoint(_named_layers, policy=lambda *a, **k: Offloadable))(x)
    with pytest.raises(TypeError, match="answered 'yes'"):
        ember.grad(ember.checkpoint(_named_layers, policy=lambda *a, **k: "yes"))(x)
    with pytest.raises(TypeError, match="name must be a string"):
        checkpoint_name(x, 3)
    with pytest.raises(TypeError, match="names must be strings"):
        policies.save_only_these_names("a", 1)
    with pytest.raises(ValueError, match="must not share names"):
        policies.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"],
            names_which_can_be_offloaded=["a"],
            offload_src="device",
            offload_dst="pinned_host",
        )
    with pytest.raises(ValueError, match="memory kind 'disk'"):
        policies.offload_dot_with_no_batch_dims("device", "disk")
    both = policies.save_from_both_policies(
        policies.offload_dot_with_no_batch_dims("device", "pinned_host"),
        policies.nothing_saveable,
    )
    with pytest.raises(ValueError, match="True or False"):
        ember.grad(ember.checkpoint(_named_layers, policy=both))(x)


def test_the_policies_namespace_has_jax_names():
    names = {
        "everything_saveable", "nothing_saveable", "dots_saveable", "checkpoint_dots",
        "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims",
        "offload_dot_with_no_batch_dims", "save_anything_except_these_names",
        "save_any_names_but_these", "save_only_these_names", "save_from_both_policies",
        "save_and_offload_only_these_names",
    }  # fmt: skip
    assert set(vars(policies)) == names
    assert ember.ad_checkpoint.checkpoint_policies is policies
