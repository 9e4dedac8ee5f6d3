"""``checkify`` composed with jit, vmap and grad; outputs are the unchecked function's."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.experimental import checkify


def safe_log(x):
    checkify.check(enp.all(x > 0), "non-positive values: {x}", x=x)
    return enp.log(x)


def test_checkify_of_jit_and_jit_of_checkify_agree():
    x = enp.array([1.0, -2.0])
    for run in (checkify.checkify(ember.jit(safe_log)), ember.jit(checkify.checkify(safe_log))):
        err, out = run(x)
        assert err.get().startswith("non-positive values: [ 1. -2.] (`check` failed at")
        np.testing.assert_array_equal(out, enp.log(x))
    err, out = ember.jit(checkify.checkify(safe_log))(enp.array([1.0, 2.0]))
    assert err.get() is None
    np.testing.assert_allclose(out, np.log([1.0, 2.0]), rtol=1e-6)


def test_jit_of_checkify_is_traced_once():
    traces = []

    def f(x):
        traces.append(1)
        return safe_log(x)

    run = ember.jit(checkify.checkify(f))
    assert run(enp.array([-1.0]))[0].get() is not None
    assert run(enp.array([2.0]))[0].get() is None
    assert len(traces) == 1


def test_vmap_of_checkify_and_checkify_of_vmap():
    xs = enp.array([[1.0], [-1.0], [2.0]])
    err, out = ember.vmap(checkify.checkify(safe_log))(xs)
    assert err.get().startswith("at mapped index 1: non-positive values: [-1.]")
    np.testing.assert_array_equal(out, enp.log(xs))
    err, _ = checkify.checkify(ember.vmap(safe_log))(xs)  # one check over the batch
    assert err.get().startswith("non-positive values: [-1.]")


def test_checkify_of_grad_and_grad_through_checkify():
    def f(x):
        checkify.check(x > 0, "x = {}", x)
        return enp.sin(x) * x

    err, g = checkify.checkify(ember.grad(f))(np.float32(-1.0))
    assert err.get().startswith("x = -1.0")
    assert float(g) == pytest.approx(np.cos(-1.0) * -1.0 + np.sin(-1.0), rel=1e-6)
    through = ember.grad(lambda x: checkify.checkify(f)(x)[1])(np.float32(2.0))
    assert float(through) == pytest.approx(np.cos(2.0) * 2.0 + np.sin(2.0), rel=1e-6)


def test_pytrees_and_keyword_arguments_pass_through():
    def f(params, *, scale):
        checkify.check(scale > 0, "scale {}", scale)
        return {"w": params["w"] * scale, "n": params["n"] + 1}

    err, out = checkify.checkify(f)({"w": enp.ones(2), "n": 1}, scale=np.float32(3.0))
    assert err.get() is None
    np.testing.assert_array_equal(out["w"], [3.0, 3.0])
    assert int(out["n"]) == 2


def test_checkify_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        checkify.checkify(3)
