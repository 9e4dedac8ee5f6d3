"""Under disable_jit, scan, while_loop, fori_loop, cond and switch run as Python, op by op
(as JAX runs them), and fall back to the primitive where the predicate is traced."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


def _visits(record):
    """A body that records each value it sees as a Python number (only possible eagerly)."""

    def body(carry, x):
        record.append(float(x))
        return carry + x, carry * x

    return body


def test_scan_runs_each_iteration_in_python():
    seen = []
    with ember.disable_jit():
        carry, ys = lax.scan(_visits(seen), 0.0, enp.arange(4.0))
    assert seen == [0.0, 1.0, 2.0, 3.0]
    assert float(carry) == 6.0
    np.testing.assert_allclose(np.asarray(ys), [0.0, 0.0, 2.0, 9.0])


def test_scan_reverse_and_pytrees_match_the_compiled_scan():
    def body(carry, x):
        return {"s": carry["s"] + x["a"] * x["b"]}, (x["a"] - carry["s"], x["b"])

    xs = {"a": enp.arange(3.0), "b": enp.asarray(np.array([[1, 2], [3, 4], [5, 6]], np.float32))}
    init = {"s": enp.zeros(2)}
    expected = lax.scan(body, init, xs, reverse=True)
    seen = []
    with ember.disable_jit():
        got = lax.scan(lambda c, x: (seen.append(1), body(c, x))[1], init, xs, reverse=True)
    assert len(seen) == 3
    for e, g in zip(ember.tree.leaves(expected), ember.tree.leaves(got)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e))


def test_zero_length_scan_is_refused_as_in_jax():
    with ember.disable_jit(), pytest.raises(ValueError, match="zero-length scan"):
        lax.scan(lambda c, x: (c, x), 0.0, enp.zeros((0,)))


def test_while_fori_cond_and_switch_run_in_python():
    calls = []
    with ember.disable_jit():
        out = lax.while_loop(lambda v: v < 10, lambda v: (calls.append(int(v)), v * 2)[1], 1)
        total = lax.fori_loop(0, 5, lambda i, v: v + i, 0)
        traced_bounds = lax.fori_loop(0, enp.asarray(3), lambda i, v: v + i, 0)
        chosen = lax.cond(enp.asarray(True), lambda a: a + 1, lambda a: a - 1, 5.0)
        branch = lax.switch(7, [lambda a: a, lambda a: -a], 5.0)  # clamped to the last
    assert calls == [1, 2, 4, 8] and int(out) == 16
    assert int(total) == 10 and int(traced_bounds) == 3
    assert float(chosen) == 6.0 and float(branch) == -5.0


def test_only_the_branch_taken_runs():
    ran = []
    with ember.disable_jit():
        lax.cond(False, lambda: ran.append("true"), lambda: ran.append("false"))
    assert ran == ["false"]


def test_traced_predicates_fall_back_to_the_primitive():
    def loop(v):
        return lax.while_loop(lambda v: v < 10, lambda v: v * 2, v)

    def pick(p, x):
        return lax.cond(p, lambda a: a + 1, lambda a: a - 1, x)

    with ember.disable_jit():
        loops = ember.vmap(loop)(enp.arange(1, 4))
        picks = ember.vmap(pick)(enp.asarray([True, False]), enp.asarray([1.0, 1.0]))
        jaxpr = ember.make_jaxpr(loop)(1)
    np.testing.assert_array_equal(np.asarray(loops), [16, 16, 12])
    np.testing.assert_array_equal(np.asarray(picks), [2.0, 0.0])
    assert "while" in str(jaxpr)


def test_nan_inside_a_scan_is_found_at_its_iteration():
    def body(carry, x):
        return carry, enp.log(x)

    f = ember.jit(lambda xs: lax.scan(body, 0.0, xs)[1])
    with ember.debug_nans(), pytest.raises(FloatingPointError, match="encountered in log"):
        f(enp.asarray([1.0, -1.0]))
