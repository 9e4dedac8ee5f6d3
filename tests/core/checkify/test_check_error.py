"""``check_error``: throw outside checkify, hand an error on inside it."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import CheckifyError
from ember.experimental import checkify


def halve(x):
    checkify.check(x % 2 == 0, "odd: {}", x)
    return x // 2


def test_check_error_raises_a_failed_error_and_passes_a_clean_one():
    err, _ = checkify.checkify(halve)(np.int32(3))
    with pytest.raises(CheckifyError, match="odd: 3"):
        checkify.check_error(err)
    err, _ = checkify.checkify(halve)(np.int32(4))
    checkify.check_error(err)


def test_inside_checkify_the_error_is_handed_on():
    def twice(x):
        err, y = checkify.checkify(halve)(x)
        checkify.check_error(err)
        checkify.check(y > 0, "not positive: {}", y)
        return halve(y)

    run = ember.jit(checkify.checkify(twice))
    assert run(np.int32(3))[0].get().startswith("odd: 3")
    assert run(np.int32(6))[0].get().startswith("odd: 3")  # the second halving
    assert run(np.int32(-4))[0].get().startswith("not positive: -2")
    err, out = run(np.int32(8))
    assert err.get() is None and int(out) == 2


def test_a_batched_error_hands_on_its_first_failing_lane():
    def f(xs):
        err, ys = ember.vmap(checkify.checkify(halve))(xs)
        checkify.check_error(err)
        return ys

    err, _ = checkify.checkify(f)(enp.array([2, 4, 5, 7]))
    assert err.get().startswith("odd: 5")
    batched, _ = ember.vmap(checkify.checkify(halve))(enp.array([2, 5, 7]))
    with pytest.raises(CheckifyError, match="at mapped index 1: odd: 5"):
        checkify.check_error(batched)


def test_staged_without_checkify_it_asks_to_be_functionalized():
    def f(x):
        err, y = checkify.checkify(halve)(x)
        checkify.check_error(err)
        return y

    with pytest.raises(ValueError, match="not functionalized"):
        ember.jit(f)(np.int32(2))
    with pytest.raises(TypeError, match="the Error a checkified function returned"):
        checkify.check_error("no error")


def test_an_error_passes_into_jit_as_an_argument():
    def g(err, x):
        checkify.check_error(err)
        return x + 1

    failed, _ = checkify.checkify(halve)(np.int32(5))
    clean, _ = checkify.checkify(halve)(np.int32(6))
    run = ember.jit(checkify.checkify(g))
    assert run(failed, 1.0)[0].get().startswith("odd: 5")
    err, out = run(clean, 1.0)
    assert err.get() is None and float(out) == 2.0
    assert ember.jit(lambda e: e)(failed).get() == failed.get()
