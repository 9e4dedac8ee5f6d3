"""Discharging state (``interpreters/discharge.py``): a jaxpr over Refs becomes a jaxpr over
values, whose results equal a NumPy emulation of the same reads and writes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.interpreters.discharge import discharge_state
from ember._src.interpreters.eval import eval_closed_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.primitives.state import ref_addupdate, ref_swap
from ember._src.state_types import AbstractRef, Slice, is_ref


def ref(*shape, dtype=np.float32):
    return AbstractRef(ShapedArray(shape, dtype))


def scalar(dtype=np.int32):
    return ShapedArray((), dtype)


def trace(fn, *avals):
    def flat(*args):
        out = fn(*args)
        return [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]

    return trace_to_jaxpr(flat, avals, name=fn.__name__)


def run(fn, avals, *args, should_discharge=None):
    """``fn`` traced over ``avals``, discharged and evaluated on ``args`` (NumPy arrays)."""
    discharged = discharge_state(trace(fn, *avals), should_discharge)
    return [np.asarray(x) for x in eval_closed_jaxpr(discharged, *args)]


def arange(*shape, dtype=np.float32):
    return np.arange(np.prod(shape), dtype=dtype).reshape(shape)


def test_discharged_refs_become_value_inputs_and_final_values_come_last():
    def kernel(x_ref, n, o_ref):
        o_ref[...] = x_ref[...] * 2.0
        return n + 1

    closed = discharge_state(trace(kernel, ref(4), scalar(), ref(4)))
    assert [a.str_short() for a in closed.in_avals] == ["f32[4]", "i32[]", "f32[4]"]
    assert [a.str_short() for a in closed.out_avals] == ["i32[]", "f32[4]", "f32[4]"]
    assert not closed.jaxpr.effects
    x = arange(4)
    n, x_final, o_final = eval_closed_jaxpr(closed, x, np.int32(3), np.zeros(4, np.float32))
    assert int(n) == 4
    np.testing.assert_array_equal(x_final, x)
    np.testing.assert_array_equal(o_final, x * 2)


def test_static_and_integer_indices_match_numpy():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        o_ref[1, :] += x_ref[2, :]
        o_ref[0, 1:3] = o_ref[0, 2:4] + 7.0
        o_ref[-1, -1] = x_ref[0, 0]

    x = arange(4, 8)
    expected = x.copy()
    expected[1, :] += x[2, :]
    expected[0, 1:3] = expected[0, 2:4] + 7.0
    expected[-1, -1] = x[0, 0]
    _, o = run(kernel, [ref(4, 8), ref(4, 8)], x, np.zeros((4, 8), np.float32))
    np.testing.assert_array_equal(o, expected)


def test_dynamic_slice_starts_and_traced_indices_match_numpy():
    def kernel(x_ref, i, j, o_ref):
        o_ref[Slice(j, 3)] = x_ref[i, Slice(j, 3)]
        o_ref[i] += 1.0

    x = arange(4, 8)
    for i, j in [(0, 0), (2, 5), (3, 1)]:
        expected = np.zeros(8, np.float32)
        expected[j : j + 3] = x[i, j : j + 3]
        expected[i] += 1.0
        *_, o = run(kernel, [ref(4, 8), scalar(), scalar(), ref(8)], x, np.int32(i), np.int32(j),
                    np.zeros(8, np.float32))  # fmt: skip
        np.testing.assert_array_equal(o, expected)


def test_strided_slices_and_integer_arrays_match_numpy():
    def kernel(x_ref, idx, o_ref):
        o_ref[::2, :] = x_ref[idx, 1:7:2]
        o_ref[1, idx[:2]] += 10.0
        return x_ref[:, idx], x_ref[1:3, idx]

    x = arange(3, 8)
    idx = np.array([2, 0, 1, 2], np.int32)
    expected = np.zeros((8, 3), np.float32)
    expected[::2, :] = x[idx, 1:7:2]
    expected[1, idx[:2]] += 10.0
    cols, mixed, _, o_final = run(
        kernel, [ref(3, 8), ShapedArray((4,), np.int32), ref(8, 3)],
        x, idx, np.zeros((8, 3), np.float32),
    )  # fmt: skip
    np.testing.assert_array_equal(cols, x[:, idx])
    np.testing.assert_array_equal(mixed, x[1:3, idx])
    np.testing.assert_array_equal(o_final, expected)


def test_integer_indices_apart_put_their_dimensions_in_front_as_numpy():
    def kernel(y_ref, idx):
        return y_ref[1, :, idx], y_ref[idx[:2], 1:3, idx[1:3]]

    y = arange(2, 3, 4)
    idx = np.array([1, 0, 3], np.int32)
    apart, together, _ = run(kernel, [ref(2, 3, 4), ShapedArray((3,), np.int32)], y, idx % 2)
    np.testing.assert_array_equal(apart, y[1, :, idx % 2])
    np.testing.assert_array_equal(together, y[(idx % 2)[:2], 1:3, (idx % 2)[1:3]])


def test_swap_returns_the_old_value_and_addupdate_accumulates():
    def kernel(o_ref, v):
        old = ref_swap(o_ref, (Slice(1, 2),), v)
        ref_addupdate(o_ref, ..., enp.ones(4, np.float32))
        ref_addupdate(o_ref, 3, np.float32(5.0))
        return old

    o = arange(4)
    old, o_final = run(kernel, [ref(4), ShapedArray((2,), np.float32)], o,
                          np.array([10, 20], np.float32))  # fmt: skip
    np.testing.assert_array_equal(old, [1, 2])
    np.testing.assert_array_equal(o_final, [1, 11, 21, 9])


def test_only_the_refs_marked_are_discharged():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    closed = discharge_state(trace(kernel, ref(3), ref(3)), should_discharge=[False, True])
    assert is_ref(closed.in_avals[0]) and not is_ref(closed.in_avals[1])
    assert [e.primitive.name for e in closed.eqns] == ["get", "add"]
    assert len(closed.out_avals) == 1


def test_should_discharge_must_name_every_input():
    with pytest.raises(ValueError, match="2 entries for a jaxpr with 1 inputs"):
        discharge_state(trace(lambda x_ref: x_ref[0], ref(3)), [True, True])


def test_returning_a_ref_is_an_error():
    with pytest.raises(errors.EmberTypeError, match=r"returned a Ref \(Ref\{f32\[3\]\}\)"):
        trace(lambda x_ref: x_ref, ref(3))
    with pytest.raises(errors.EmberTypeError, match="returned a Ref"):
        trace(lambda x_ref: lax.fori_loop(0, 2, lambda i, c: x_ref, 0), ref(3))


def test_a_ref_given_twice_to_a_call_that_writes_is_refused():
    @ember.jit
    def copy(a_ref, b_ref):
        b_ref[...] = a_ref[...]

    with pytest.raises(NotImplementedError, match="jit is given the same Ref twice"):
        discharge_state(trace(lambda o_ref: copy(o_ref, o_ref), ref(3)))


def test_the_discharged_jaxpr_runs_under_jit_on_the_default_backend():
    def kernel(x_ref, i, o_ref):
        o_ref[Slice(i, 2)] += x_ref[Slice(i, 2)] * 3.0

    closed = discharge_state(trace(kernel, ref(6), scalar(), ref(6)))
    fn = ember.jit(lambda *args: eval_closed_jaxpr(closed, *args))
    x, o = arange(6), np.ones(6, np.float32)
    _, o_final = fn(x, np.int32(3), o)
    expected = o.copy()
    expected[3:5] += x[3:5] * 3
    np.testing.assert_array_equal(np.asarray(o_final), expected)


# --------------------------------------------------------------------------------------------
# Through control flow: a Ref a body closes over becomes a carried value


def test_a_fori_loop_with_static_bounds_accumulates_into_a_ref():
    def kernel(x_ref, o_ref):
        def body(i, total):
            o_ref[i] = x_ref[i] * 2.0 + total
            o_ref[0] += 1.0
            return total + x_ref[i]

        return lax.fori_loop(0, 4, body, np.float32(0))

    x = arange(4) + 2
    expected, total = np.zeros(4, np.float32), np.float32(0)
    for i in range(4):
        expected[i] = x[i] * 2 + total
        expected[0] += 1
        total += x[i]
    got_total, x_final, o = run(kernel, [ref(4), ref(4)], x, np.zeros(4, np.float32))
    assert float(got_total) == float(total)
    np.testing.assert_array_equal(x_final, x)
    np.testing.assert_array_equal(o, expected)


def test_a_ref_a_loop_only_reads_stays_a_constant_of_the_loop():
    def kernel(x_ref, o_ref):
        def body(i, carry):
            o_ref[i] = x_ref[i]
            return carry

        lax.fori_loop(0, 4, body, 0)

    closed = discharge_state(trace(kernel, ref(4), ref(4)))
    (loop,) = [e for e in closed.eqns if e.primitive.name == "scan"]
    assert (loop.params["num_consts"], loop.params["num_carry"]) == (1, 3)  # x; o, i, carry


def test_a_fori_loop_with_traced_bounds_is_a_while_loop_over_the_refs_value():
    def kernel(x_ref, n, o_ref):
        def body(i, carry):
            o_ref[Slice(i, 2)] += x_ref[Slice(i, 2)]
            return carry

        lax.fori_loop(1, n, body, 0)

    x = arange(8)
    for n in (1, 3, 7):
        expected = np.ones(8, np.float32)
        for i in range(1, n):
            expected[i : i + 2] += x[i : i + 2]
        *_, o = run(kernel, [ref(8), scalar(), ref(8)], x, np.int32(n), np.ones(8, np.float32))
        np.testing.assert_array_equal(o, expected)


def test_nested_loops_discharge_both_levels():
    def kernel(o_ref):
        def outer(i, carry):
            def inner(j, carry):
                o_ref[i, j] = (i * 10 + j).astype(np.float32)
                o_ref[i, 0] += 0.5
                return carry

            return lax.fori_loop(0, 3, inner, carry)

        lax.fori_loop(0, 2, outer, 0)

    expected = np.zeros((2, 3), np.float32)
    for i in range(2):
        for j in range(3):
            expected[i, j] = i * 10 + j
            expected[i, 0] += 0.5
    (o,) = run(kernel, [ref(2, 3)], np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(o, expected)


def test_a_while_loop_condition_may_read_a_ref_the_body_does_not_write():
    def kernel(limit_ref, start):
        return lax.while_loop(lambda c: c < limit_ref[0], lambda c: c + 2, start)

    out, _ = run(kernel, [ref(1, dtype=np.int32), scalar()], np.array([7], np.int32), np.int32(0))
    assert int(out) == 8


def test_a_while_loop_whose_condition_reads_a_ref_and_body_writes_one_is_refused():
    def kernel(limit_ref, o_ref):
        def body(c):
            o_ref[c] = 1.0
            return c + 1

        return lax.while_loop(lambda c: c < limit_ref[0], body, 0)

    closed = trace(kernel, ref(1, dtype=np.int32), ref(8))
    with pytest.raises(NotImplementedError, match="condition reads a Ref and whose body writes"):
        discharge_state(closed)


def test_scan_over_xs_accumulates_into_a_ref_and_returns_ys():
    def kernel(xs, o_ref):
        def step(carry, x):
            o_ref[...] += x
            return carry + 1, o_ref[0]

        return lax.scan(step, 0, xs)

    xs = arange(3, 2)
    expected_ys = np.cumsum(xs, axis=0)[:, 0]
    avals = [ShapedArray((3, 2), np.float32), ref(2)]
    count, ys, o = run(kernel, avals, xs, np.ones(2, np.float32))
    assert int(count) == 3
    np.testing.assert_array_equal(ys, expected_ys + 1)
    np.testing.assert_array_equal(o, xs.sum(0) + 1)


def test_cond_writes_a_ref_in_the_branch_taken():
    def kernel(p, x_ref, o_ref):
        def double():
            o_ref[...] = x_ref[...] * 2.0
            return np.int32(1)

        def negate():
            o_ref[1] = -x_ref[1]
            return np.int32(2)

        return lax.cond(p > 0, double, negate)

    x = arange(3) + 1
    which, _, o = run(kernel, [scalar(), ref(3), ref(3)], np.int32(1), x, np.ones(3, np.float32))
    assert int(which) == 1
    np.testing.assert_array_equal(o, x * 2)
    which, _, o = run(kernel, [scalar(), ref(3), ref(3)], np.int32(0), x, np.ones(3, np.float32))
    assert int(which) == 2
    np.testing.assert_array_equal(o, [1, -2, 1])


def test_a_cond_with_no_operands_and_no_results_is_pallas_when():
    def kernel(i, o_ref):
        def when(pred):
            return lambda f: lax.cond(pred, f, lambda: None)

        @when(i == 0)
        def _():
            o_ref[...] = enp.zeros(4, np.float32)

        o_ref[i] += 5.0

    for i in (0, 2):
        expected = np.full(4, 9, np.float32)
        if i == 0:
            expected[:] = 0
        expected[i] += 5
        (o,) = run(kernel, [scalar(), ref(4)], np.int32(i), np.full(4, 9, np.float32))
        np.testing.assert_array_equal(o, expected)


def test_a_nested_jit_given_a_ref_returns_its_final_value():
    @ember.jit
    def store_doubled(a_ref, b):
        a_ref[0] = b
        return b * 2.0

    def kernel(x_ref, o_ref):
        return store_doubled(o_ref, x_ref[1])

    closed = discharge_state(trace(kernel, ref(4), ref(4)))
    assert [e.primitive.name for e in closed.eqns][-1] == "jit"
    x = arange(4) + 2
    doubled, _, o = [np.asarray(v) for v in eval_closed_jaxpr(closed, x, np.zeros(4, np.float32))]
    assert float(doubled) == 6.0
    np.testing.assert_array_equal(o, [3, 0, 0, 0])


def test_a_custom_jvp_function_closing_over_a_ref_is_inlined():
    def kernel(x_ref, o_ref):
        @ember.custom_jvp
        def scaled(v):
            return v * x_ref[0]

        scaled.defjvp(lambda primals, tangents: (scaled(*primals), tangents[0]))
        o_ref[...] = scaled(x_ref[...]) + ember.nn.relu(x_ref[...] - 3.0)

    x = arange(4) + 2
    _, o = run(kernel, [ref(4), ref(4)], x, np.zeros(4, np.float32))
    np.testing.assert_array_equal(o, x * x[0] + np.maximum(x - 3, 0))


def test_a_discharged_loop_runs_under_jit_on_the_default_backend():
    def kernel(x_ref, n, o_ref):
        def body(i, carry):
            o_ref[i % 4] += x_ref[i]
            return carry

        lax.fori_loop(0, n, body, 0)

    closed = discharge_state(trace(kernel, ref(8), scalar(), ref(4)))
    fn = ember.jit(lambda *args: eval_closed_jaxpr(closed, *args))
    x = arange(8)
    _, o = fn(x, np.int32(8), np.zeros(4, np.float32))
    np.testing.assert_array_equal(np.asarray(o), x[:4] + x[4:])
