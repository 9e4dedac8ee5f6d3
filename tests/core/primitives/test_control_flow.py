"""cond, switch, scan, while_loop, fori_loop and map under every transformation.

Values are compared with plain NumPy loops; derivatives with finite differences (through
check_grads) and, for reverse mode, with forward mode; jitted results with eager ones and
with the reference backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import EmberTypeError
from ember.test_util import check_grads
from tests.core.util import assert_close, skip_without_ml_dtypes

# --------------------------------------------------------------------------------------------
# cond and switch


def piecewise(p, x):
    return lax.cond(p > 0, lambda x: enp.sin(x) * p, lambda x: enp.cos(x) + p, x)


def piecewise_np(p, x):
    return np.sin(x) * p if p > 0 else np.cos(x) + p


@pytest.mark.parametrize("p", [1.5, -0.5])
def test_cond_values_and_grads(p):
    x = np.float32(0.3)
    assert_close(piecewise(np.float32(p), x), piecewise_np(p, 0.3))
    assert_close(ember.jit(piecewise)(np.float32(p), x), piecewise_np(p, 0.3))
    check_grads(piecewise, (np.float32(p), x), order=2)


def test_cond_vmap_with_batched_predicate_selects_per_lane(rng):
    ps = np.array([1.0, -1.0, 2.0, -3.0], np.float32)
    xs = rng.normal(size=4).astype(np.float32)
    expected = [piecewise_np(p, x) for p, x in zip(ps, xs)]
    assert_close(ember.vmap(piecewise)(ps, xs), expected)
    grads = ember.vmap(ember.grad(piecewise, argnums=1))(ps, xs)
    assert_close(grads, [np.cos(x) * p if p > 0 else -np.sin(x) for p, x in zip(ps, xs)])


def test_cond_vmap_with_unbatched_predicate(rng):
    xs = rng.normal(size=5).astype(np.float32)
    assert_close(ember.vmap(piecewise, in_axes=(None, 0))(np.float32(2.0), xs), np.sin(xs) * 2)


def test_switch_clamps_index_like_jax():
    branches = [lambda x: x * 2.0, lambda x: x + 10.0, lambda x: -x]
    f = ember.jit(lambda i, x: lax.switch(i, branches, x))
    got = [float(f(i, np.float32(3.0))) for i in range(-2, 5)]
    assert got == [6.0, 6.0, 6.0, 13.0, -3.0, -3.0, -3.0]


def test_cond_with_pytrees_and_captured_values():
    w = enp.asarray(np.arange(3.0, dtype=np.float32))

    def f(p, state):
        return lax.cond(
            p,
            lambda s: {"a": s["a"] * w, "b": s["b"]},
            lambda s: {"a": s["a"], "b": -s["b"]},
            state,
        )

    state = {"a": np.ones(3, np.float32), "b": np.float32(2.0)}
    out = ember.jit(f)(True, state)
    assert_close(out["a"], [0.0, 1.0, 2.0])
    assert float(f(False, state)["b"]) == -2.0


def test_cond_branch_type_mismatch_names_the_line():
    with pytest.raises(EmberTypeError, match=r"same types.*test_control_flow.py"):
        lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), np.float32(1.0))
    with pytest.raises(EmberTypeError, match="same structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, np.float32(1.0))


def test_cond_predicate_must_be_scalar():
    with pytest.raises(EmberTypeError, match="must be a scalar"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)


# --------------------------------------------------------------------------------------------
# scan


def rnn(W, h0, xs):
    def step(h, x):
        h = enp.tanh(h @ W + x)
        return h, enp.sum(h)

    h, ys = lax.scan(step, h0, xs)
    return enp.sum(h) + enp.sum(ys * ys)


def rnn_np(W, h0, xs):
    h, total = h0, 0.0
    for x in xs:
        h = np.tanh(h @ W + x)
        total += h.sum() ** 2
    return h.sum() + total


@pytest.fixture
def rnn_args(rng):
    W = (rng.normal(size=(3, 3)) * 0.5).astype(np.float32)
    h0 = rng.normal(size=3).astype(np.float32) * 0.1
    xs = rng.normal(size=(6, 3)).astype(np.float32)
    return W, h0, xs


def test_scan_matches_a_python_loop(rnn_args):
    assert_close(rnn(*rnn_args), rnn_np(*rnn_args), rtol=1e-5)
    assert_close(ember.jit(rnn)(*rnn_args), rnn_np(*rnn_args), rtol=1e-5)


def test_scan_gradients(rnn_args):
    check_grads(rnn, rnn_args, order=2, modes=("fwd", "rev"))


def test_scan_reverse_and_length():
    xs = np.arange(4.0, dtype=np.float32)
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=True)
    assert float(carry) == 6.0
    assert_close(ys, [0.0 * 6, 1.0 * 5, 2.0 * 3, 3.0 * 0])
    count, _ = lax.scan(lambda c, _: (c + 1, None), 0, None, length=7)
    assert int(count) == 7


def test_jit_vmap_grad_scan_nesting(rnn_args):
    W, h0, xs = rnn_args
    Ws = np.stack([W, W * 0.5, W * -1.0])
    got = ember.jit(ember.vmap(ember.grad(rnn), in_axes=(0, None, None)))(Ws, h0, xs)
    for k in range(3):
        assert_close(got[k], ember.grad(rnn)(Ws[k], h0, xs), rtol=1e-5, atol=1e-6)


def test_vmap_over_scanned_inputs(rnn_args):
    W, h0, xs = rnn_args
    stacked = np.stack([xs, xs * 2.0], axis=1)
    got = ember.vmap(rnn, in_axes=(None, None, 1))(W, h0, stacked)
    assert_close(got, [rnn_np(W, h0, xs), rnn_np(W, h0, xs * 2.0)], rtol=1e-5)


def test_scan_saves_loop_invariant_residuals_once(rnn_args):
    """The weight matrix is a residual of the backward scan, but it is not stacked."""
    jaxpr = ember.make_jaxpr(ember.grad(rnn))(*rnn_args)
    text = str(jaxpr)
    assert "f32[6,3,3]" not in text  # no per-step copy of W


def test_scan_carry_type_change_is_an_error():
    with pytest.raises(EmberTypeError, match=r"carry must keep its type.*leaves as i32"):
        lax.scan(lambda c, x: (c.astype(np.int32), x), np.float32(0), np.ones(3, np.float32))


def test_scan_weakly_typed_init_takes_the_body_type():
    carry, _ = lax.scan(lambda c, x: (c + x, None), 0.0, np.ones(3, np.float16))
    assert carry.dtype == np.float16


def test_map_and_fori_loop():
    assert_close(lax.map(lambda x: x**2, np.arange(4.0, dtype=np.float32)), [0, 1, 4, 9])
    f = lambda x: lax.fori_loop(0, 5, lambda i, v: v * x + i, 1.0)
    assert float(f(np.float32(2.0))) == 58.0
    assert float(ember.grad(f)(np.float32(2.0))) == 103.0  # 5x^4 + 3x^2 + 4x + 3
    dynamic = ember.jit(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * x + i, 1.0))
    assert float(dynamic(5, np.float32(2.0))) == 58.0


# --------------------------------------------------------------------------------------------
# while_loop


def collatz_steps(n):
    def body(state):
        k, steps = state
        k = lax.cond(k % 2 == 0, lambda k: k // 2, lambda k: 3 * k + 1, k)
        return k, steps + 1

    return lax.while_loop(lambda s: s[0] != 1, body, (n, 0))[1]


def test_while_loop_values():
    assert int(collatz_steps(27)) == 111
    assert int(ember.jit(collatz_steps)(6)) == 8


def test_while_loop_vmap_with_batched_predicate():
    got = ember.vmap(collatz_steps)(np.array([1, 6, 27, 7], np.int32))
    assert_close(got, [0, 8, 111, 16])


def test_while_loop_forward_mode():
    def f(x):
        return lax.while_loop(
            lambda c: c[0] < 4, lambda c: (c[0] + 1, enp.sin(c[1]) * 1.5), (0, x)
        )[1]

    check_grads(f, (np.float32(0.7),), order=1, modes=("fwd",))
    jac = ember.jacfwd(f)(np.float32(0.7))
    assert np.isfinite(float(jac))


def test_grad_through_while_loop_is_a_clear_error():
    def f(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)

    with pytest.raises(EmberTypeError, match=r"use lax.scan.*test_control_flow.py"):
        ember.grad(f)(np.float32(1.0))


def test_while_loop_cond_must_return_a_bool_scalar():
    with pytest.raises(EmberTypeError, match="boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c + 1, np.float32(0))


# --------------------------------------------------------------------------------------------
# Every construct agrees with the reference backend


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: lax.cond(x.sum() > 0, enp.sin, enp.cos, x),
        lambda x: lax.scan(lambda c, xi: (c * 0.5 + xi, c), x[0], x)[1],
        lambda x: lax.fori_loop(0, 3, lambda i, v: v * 1.5 + i, x),
        lambda x: lax.while_loop(lambda c: c.sum() < 50.0, lambda c: c * 2.0 + 1.0, x),
    ],
    ids=["cond", "scan", "fori_loop", "while_loop"],
)
def test_matches_reference_backend(fn, reference_device):
    x = np.array([0.5, 1.5, -0.25], np.float32)
    here = ember.jit(fn)(x)
    there = ember.jit(fn, device=reference_device)(x)
    assert_close(here, there, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# associative_scan


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_associative_scan_matches_cumulative_sums(n):
    x = np.arange(1, n + 1, dtype=np.float32)
    assert_close(lax.associative_scan(lambda a, b: a + b, x), np.cumsum(x))
    assert_close(
        lax.associative_scan(lambda a, b: a + b, x, reverse=True), np.cumsum(x[::-1])[::-1]
    )


def test_associative_scan_linear_recurrence_with_grad_and_vmap(rng):
    a = rng.uniform(0.5, 1.0, 6).astype(np.float32)
    b = rng.normal(size=6).astype(np.float32)

    def combine(left, right):
        return left[0] * right[0], right[0] * left[1] + right[1]

    def recurrence(b):
        return lax.associative_scan(combine, (a, b))[1]

    expected, h = [], 0.0
    for ai, bi in zip(a, b):
        h = ai * h + bi
        expected.append(h)
    assert_close(recurrence(b), expected, rtol=1e-5)
    check_grads(lambda b: enp.sum(recurrence(b) ** 2), (b,), order=1)
    x = rng.normal(size=(3, 7)).astype(np.float32)
    got = ember.jit(ember.vmap(lambda v: lax.associative_scan(enp.maximum, v)))(x)
    assert_close(got, np.maximum.accumulate(x, axis=1))


# --------------------------------------------------------------------------------------------
# switch under reverse mode: branches with different residuals


def _mixed_branches():
    # Each branch saves different residuals: none, an f32[3] and sin/cos values, a bool and
    # powers, an f16 value.
    return [
        lambda v: v * 2.0,
        lambda v: enp.sin(v * enp.arange(3.0)).sum(),
        lambda v: enp.where(v > 1, v**3, v),
        lambda v: (v.astype(enp.float16) ** 2).astype(enp.float32),
    ]


def _mixed_derivative(i, v):
    return [2.0, float((np.arange(3.0) * np.cos(v * np.arange(3.0))).sum()), 3 * v**2, 2 * v][i]


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_grad_through_switch_with_many_branches(index):
    def f(x):
        return lax.switch(index, _mixed_branches(), x)

    expected = _mixed_derivative(index, 2.0)
    assert_close(ember.grad(f)(2.0), expected, rtol=1e-5)
    assert_close(ember.jit(ember.grad(f))(2.0), expected, rtol=1e-5)
    assert_close(ember.grad(ember.jit(f))(2.0), expected, rtol=1e-5)


def test_grad_through_switch_picks_the_branch_jax_does():
    f = lambda x: lax.switch(1, [enp.sin, lambda v: v * v, enp.cos], x)
    assert float(ember.grad(f)(2.0)) == 4.0  # JAX: 4.0


def test_grad_of_switch_with_traced_and_batched_index():
    def f(x, i):
        return lax.switch(i, _mixed_branches(), x)

    expected = [_mixed_derivative(i, 2.0) for i in range(4)]
    assert_close(ember.jit(ember.grad(f))(2.0, 1), expected[1], rtol=1e-5)
    assert_close(ember.vmap(ember.grad(f), (None, 0))(2.0, np.arange(4)), expected, rtol=1e-5)
    xs = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    got = ember.vmap(ember.grad(f))(xs, np.arange(4))
    assert_close(got, [_mixed_derivative(i, float(x)) for i, x in enumerate(xs)], rtol=1e-5)
    summed = ember.grad(lambda x: ember.vmap(f, (None, 0))(x, np.arange(4)).sum())(2.0)
    assert_close(summed, sum(expected), rtol=1e-5)


def test_grad_of_switch_with_several_operands_and_pytrees():
    branches = [
        lambda d: d["a"] * d["b"],
        lambda d: d["a"] ** 2 * d["b"],
        lambda d: d["b"],
    ]
    g = ember.grad(lambda d: lax.switch(1, branches, d))({"a": 1.5, "b": np.float32(3)})
    assert_close(g["a"], 9.0)
    assert_close(g["b"], 2.25)


# --------------------------------------------------------------------------------------------
# Per-example gradients and higher derivatives of loops that close over a scalar


def test_hessian_and_jacfwd_of_grad_through_loops_closing_over_a_scalar():
    fori = lambda s: lax.fori_loop(0, 3, lambda i, c: c * s, s)  # s^4
    assert_close(ember.hessian(fori)(1.5), 27.0)  # 12 s^2
    scanned = lambda s: lax.scan(  # s^4 + s + 2
        lambda c, x: (c * s + x, None), s, enp.arange(3.0)
    )[0]
    assert_close(ember.jacfwd(ember.grad(scanned))(1.5), 27.0)
    assert_close(ember.vmap(ember.grad(scanned))(enp.arange(3.0)), [1.0, 5.0, 33.0])


def _closing_over(name):
    """Functions of x whose bodies close over the scalar s = x (the per-example pattern)."""

    def f(x):
        s = x
        return {
            "cond": lambda: lax.cond(x > s - 0.5, lambda v: enp.sin(v) * s, lambda v: v * s, x),
            "switch": lambda: lax.switch(
                2, [enp.sin, lambda v: v * s, lambda v: enp.cos(v) * s * v], x
            ),
            "scan": lambda: lax.scan(lambda c, y: (c * s + y * x, c * x), x, enp.arange(3.0))[
                1
            ].sum(),
            "map": lambda: lax.map(lambda y: y * x * s, enp.arange(3.0)).sum(),
        }[name]()

    return f


# (grad at 1.3, second derivative at 1.3), from JAX.
CLOSING_OVER = {
    "cond": (1.311307, -0.717628),
    "switch": (-0.932916, -4.927578),
    "scan": (19.058, 32.080),
    "map": (7.8, 6.0),
}


@pytest.mark.parametrize("name", sorted(CLOSING_OVER))
def test_derivative_compositions_through_control_flow(name):
    f = _closing_over(name)
    first, second = CLOSING_OVER[name]
    assert_close(ember.grad(f)(1.3), first, rtol=1e-4)
    for hess in (ember.hessian(f), ember.jacfwd(ember.grad(f)), ember.jacrev(ember.jacfwd(f))):
        assert_close(hess(1.3), second, rtol=1e-4)
    xs = np.array([0.7, 1.3, 2.1], np.float32)
    per_example = [float(ember.grad(f)(x)) for x in xs]
    assert_close(ember.vmap(ember.grad(f))(xs), per_example, rtol=1e-5)
    assert_close(ember.jit(ember.vmap(ember.grad(f)))(xs), per_example, rtol=1e-5)
    assert_close(ember.vmap(ember.jacfwd(f))(xs), per_example, rtol=1e-5)
    check_grads(f, (np.float32(1.3),), order=2)


def test_forward_mode_twice_through_while_loop_closing_over_a_scalar():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x + x), (0, x))[
            1
        ]  # x^4 + x^3 + x^2 + x

    assert_close(ember.jacfwd(ember.jacfwd(f))(1.3), 30.08, rtol=1e-4)
    xs = np.array([0.7, 1.3, 2.1], np.float32)
    assert_close(ember.vmap(ember.jacfwd(f))(xs), 4 * xs**3 + 3 * xs**2 + 2 * xs + 1, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# Zero-length scans


def test_scan_of_length_zero_returns_init_and_empty_outputs():
    def f(c, xs):
        return lax.scan(lambda c, x: (c * x + enp.sin(c), (x * c, c)), c, xs)

    for run in (f, ember.jit(f)):
        carry, (ys, cs) = run(np.float32(1.5), np.zeros((0,), np.float32))
        assert float(carry) == 1.5 and ys.shape == (0,) and cs.shape == (0,)
        carry, (ys, cs) = run(np.ones(3, np.float32), np.zeros((0, 3), np.float32))
        assert_close(carry, np.ones(3))
        assert ys.shape == (0, 3) and cs.shape == (0, 3) and ys.dtype == np.float32
    carry, ys = lax.scan(lambda c, x: (c + x, x), 0.0, enp.zeros((0,)))
    assert float(carry) == 0.0 and ys.shape == (0,)
    carry, ys = lax.scan(lambda c, _: (c + 1.0, c), np.float32(2), None, length=0)
    assert float(carry) == 2.0 and ys.shape == (0,)
    assert lax.map(lambda x: x * 2, enp.zeros((0, 2))).shape == (0, 2)


def test_scan_of_length_zero_under_transformations():
    def f(c, xs):
        return lax.scan(lambda c, x: (c * x + enp.sin(c), c * x), c, xs)

    empty = np.zeros((0,), np.float32)
    assert float(ember.grad(lambda c: f(c, empty)[0])(1.5)) == 1.0
    assert float(ember.jit(ember.grad(lambda c: f(c, empty)[0]))(1.5)) == 1.0
    g = ember.grad(lambda xs, c: f(c, xs)[1].sum() + f(c, xs)[0])(empty, 1.5)
    assert g.shape == (0,)
    carry, ys = ember.vmap(f)(np.arange(3.0, dtype=np.float32), np.zeros((3, 0), np.float32))
    assert_close(carry, [0.0, 1.0, 2.0])
    assert ys.shape == (3, 0)
    assert_close(ember.vmap(ember.grad(lambda c: f(c, empty)[0]))(np.ones(3, np.float32)), 1.0)
    _, tangent = ember.jvp(lambda c: f(c, empty)[0], (1.5,), (2.0,))
    assert float(tangent) == 2.0


# --------------------------------------------------------------------------------------------
# Carry types


def test_loop_carry_type_checks():
    with pytest.raises(EmberTypeError, match=r"leaves as f16"):
        lax.scan(lambda c, x: (c.astype(np.float16), None), np.float32(1), None, length=2)
    with pytest.raises(EmberTypeError, match=r"leaves as f32\[2\]"):
        lax.scan(lambda c, x: (enp.stack([c, c]), None), np.float32(1), None, length=2)
    with pytest.raises(EmberTypeError, match=r"leaves as i32"):
        lax.fori_loop(0, 3, lambda i, c: c.astype(np.int32), np.float32(1))
    with pytest.raises(EmberTypeError, match=r"while_loop.*leaves as i32"):
        lax.while_loop(lambda c: c < 10, lambda c: (c * 2).astype(np.int32), np.float32(1))
    with pytest.raises(EmberTypeError, match=r"branch 0 and branch 2 must return the same"):
        lax.switch(1, [lambda: np.float32(1), lambda: np.float32(1), lambda: np.float16(1)])


def test_weakly_typed_carries_take_the_body_type_as_in_jax():
    two = np.float32(2)
    for out in (
        lax.scan(lambda c, x: (c * two, None), 1.0, None, length=2)[0],
        lax.scan(lambda c, x: (c * two, None), 1, None, length=2)[0],
        lax.fori_loop(0, 3, lambda i, c: c * two, 1.0),
        ember.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c * two, 1.0))(3),
        lax.while_loop(lambda c: c < 10, lambda c: c * two, 1.0),
    ):
        assert out.dtype == np.float32 and not out.weak_type
    skip_without_ml_dtypes("bfloat16")
    bf16 = lax.scan(lambda c, x: (c * enp.bfloat16(2), None), 1.0, None, length=2)[0]
    assert bf16.dtype == enp.bfloat16 and float(bf16) == 4.0


def test_a_weakly_typed_float_carry_cannot_become_an_integer():
    """A Python float init takes the body's type only where promoting it with that type gives
    that type: float -> int32 (or int -> bool) is a changed carry, an error as in JAX (ember
    used to run it and return an int)."""
    with pytest.raises(EmberTypeError, match=r"enters as f32\[\] and leaves as i32"):
        lax.scan(lambda c, x: (c.astype(np.int32), x), 0.0, np.ones(3, np.float32))
    with pytest.raises(EmberTypeError, match=r"leaves as i32"):
        lax.fori_loop(0, 3, lambda i, c: c.astype(np.int32), 0.0)
    with pytest.raises(EmberTypeError, match=r"enters as i32\[\] and leaves as bool"):
        lax.while_loop(lambda c: c < 3, lambda c: (c + 1).astype(bool), 0)
    assert float(lax.fori_loop(0, 3, lambda i, c: c + 1.5, 0)) == 4.5  # int -> float is fine
    assert complex(lax.fori_loop(0, 3, lambda i, c: c * 1j, 1.0)) == -1j


def test_fori_loop_index_is_weakly_typed_with_python_int_bounds():
    # JAX: the index takes the carry's narrower integer type in ``c + i``.
    out = lax.fori_loop(0, 3, lambda i, c: c + i, np.int8(0))
    assert out.dtype == np.int8 and int(out) == 3
    out = ember.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, np.uint8(0)))(3)
    assert out.dtype == np.uint8 and int(out) == 3
    index = lax.fori_loop(0, 3, lambda i, c: i, 0)
    assert index.dtype == np.int32 and index.weak_type and int(index) == 2
    strong = lax.fori_loop(np.int16(0), 3, lambda i, c: c + i, np.int16(0))
    assert strong.dtype == np.int16 and int(strong) == 3


@pytest.mark.parametrize("index", [0, 1, 2])
def test_switch_grad_with_residuals_in_several_branches(index):
    # Each branch saves different residuals for reverse mode; the middle branch's residual
    # slots once landed after the last branch's, so vjp failed with a branch type mismatch.
    def f(a):
        s = enp.sum(a)
        branches = [
            lambda m: enp.sin(m) * m,
            lambda m: enp.sin(m / s) * m,
            lambda m: enp.exp(m) * s,
        ]
        return lax.switch(np.int32(index), branches, a)

    x = np.array([0.3, 0.1], np.float32)
    check_grads(f, (x,), order=1, modes=("rev",))


# --------------------------------------------------------------------------------------------
# Inside a shard_map body typed by varying manual axes: carries keep them, branches agree

ONE = ember.make_mesh((1,), ("i",))


def _in_body(body):
    split = ember.sharding.PartitionSpec("i")
    return ember.shard_map(body, mesh=ONE, in_specs=split, out_specs=split)(
        np.arange(2.0, dtype=np.float32)
    )


def test_a_scan_carry_must_keep_its_varying_axes():
    with pytest.raises(ember.errors.ControlFlowTypeError) as caught:
        _in_body(lambda x: lax.scan(lambda c, v: (c + v, None), 0.0, x)[0][None])
    message = str(caught.value)
    # JAX 0.10.2's wording, the component named by position
    assert message.startswith(
        "scan body function carry input and carry output must have equal types, but they "
        "differ:\n\nThe input carry component #0 has type float32[] but the corresponding "
        "output carry component has type float32[]{V:i}, so the manual axis types do not match."
    )
    assert "applying `ember.lax.pcast(..., ('i',), to='varying')` to the initial carry" in message

    def made_varying(x):
        init = lax.pcast(0.0, "i", to="varying")
        return lax.scan(lambda c, v: (c + v, None), init, x)[0][None]

    out = _in_body(made_varying)
    assert float(out[0]) == 1.0


def test_a_while_loop_carry_must_keep_its_varying_axes():
    def made_invariant(x):
        return lax.while_loop(lambda c: c < 100.0, lambda c: lax.psum(c, "i") + 1, x[0])[None]

    with pytest.raises(ember.errors.ControlFlowTypeError, match="while_loop body function") as c:
        _in_body(made_invariant)
    assert "has type float32[]{V:i} but the corresponding output carry component has type " in str(
        c.value
    )
    assert "pcast" not in str(c.value)  # nothing to cast: the body drops an axis
    with pytest.raises(ember.errors.ControlFlowTypeError, match="carry component #1"):
        _in_body(lambda x: lax.fori_loop(0, 3, lambda i, c: c + x.sum(), 0.0)[None])


def test_cond_and_switch_branches_must_agree_on_varying_axes():
    with pytest.raises(ember.errors.ControlFlowTypeError) as caught:
        _in_body(lambda x: lax.cond(x[0] > 0, lambda: x.sum(), lambda: 0.0)[None])
    assert str(caught.value).startswith(
        "cond branches must have equal output types but they differ.\n\nThe output #0 of "
        "false_fun has type float32[] but the corresponding output of true_fun has type "
        "float32[]{V:i}, so the manual axis types do not match."
    )
    assert "pcast(..., ('i',), to='varying')` to the output #0 of false_fun" in str(caught.value)
    with pytest.raises(ember.errors.ControlFlowTypeError, match="switch branches"):
        _in_body(lambda x: lax.switch(1, [lambda: x.sum(), lambda: 0.0])[None])
