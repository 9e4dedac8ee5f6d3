"""The ``scan`` primitive's lowering honours ``unroll``: the loop's body holds ``unroll``
iterations, the iterations left over follow the loop, and a scan unrolled into one trip has
no loop at all. Every split gives the values of a plain Python loop, forwards and reversed,
with stacked outputs, under ``grad``, and with ordered effects in program order."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from tests.core.util import assert_close


def _step(c, x):
    c = enp.sin(c) * 0.9 + x
    return c, c * 2.0


def _python_loop(c, xs, reverse):
    ys = [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        c = np.sin(c) * 0.9 + xs[i]
        ys[i] = c * 2.0
    return c, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, 5, 7, True])
def test_unrolled_scan_matches_a_python_loop(unroll, reverse):
    xs = np.linspace(-1.0, 1.0, 7 * 3, dtype=np.float32).reshape(7, 3)
    c0 = np.full(3, 0.25, np.float32)
    run = ember.jit(lambda c, xs: lax.scan(_step, c, xs, unroll=unroll, reverse=reverse))
    carry, ys = run(c0, xs)
    want_carry, want_ys = _python_loop(c0, xs, reverse)
    assert_close(carry, want_carry, rtol=1e-5)
    assert_close(ys, want_ys, rtol=1e-5)


@pytest.mark.parametrize(
    ("unroll", "loops"),
    [(1, 1), (2, 1), (4, 0), (True, 0), (8, 0)],
)
def test_a_scan_unrolled_into_one_trip_has_no_loop(unroll, loops):
    def step(c, _):
        return enp.sin(c), c

    run = ember.jit(lambda c: lax.scan(step, c, None, length=4, unroll=unroll))
    assert run.lower(np.float32(0.5)).as_text().count("stablehlo.while") == loops
    carry, ys = run(np.float32(0.5))
    want = [np.float32(0.5)]
    for _ in range(4):
        want.append(np.sin(want[-1]))
    assert_close(carry, want[-1], rtol=1e-6)
    assert_close(ys, np.array(want[:-1]), rtol=1e-6)


def test_gradient_through_an_unrolled_scan_matches_the_rolled_one():
    xs = np.linspace(-1.0, 1.0, 10, dtype=np.float32)

    def loss(c, unroll):
        return enp.sum(lax.scan(_step, c, xs, unroll=unroll)[1])

    c0 = np.float32(0.3)
    want = ember.grad(lambda c: loss(c, 1))(c0)
    for unroll in (3, True):
        got = ember.jit(ember.grad(loss), static_argnums=1)(c0, unroll)
        assert_close(got, want, rtol=1e-5)


def test_fori_loop_unroll_keeps_ordered_effects_in_order(capsys):
    def body(i, c):
        ember.debug.print("step {}", i, ordered=True)
        return c + i

    total = ember.jit(lambda: lax.fori_loop(0, 5, body, 0, unroll=2))()
    assert int(total) == 10
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert printed == [f"step {i}" for i in range(5)]
