"""Traces are cached per trace context: x64, the mesh in scope and the transformations that
change what tracing stages (checkify), for jit and custom derivatives alike."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.transforms.trace_context import trace_context, tracing_under
from ember.experimental import checkify


def test_tracing_under_a_name_changes_the_context_once():
    outside = trace_context()
    with tracing_under("checkify"):
        inside = trace_context()
        with tracing_under("checkify"):  # nesting the same name changes nothing
            assert trace_context() == inside
    assert inside != outside
    assert trace_context() == outside


def _checked_sqrt(x):
    checkify.check(x > 0, "x must be positive, got {}", x)
    return enp.sqrt(x)


def test_jit_traced_inside_checkify_then_called_outside_refuses_the_check():
    f = ember.jit(_checked_sqrt)
    err, out = checkify.checkify(f)(np.float32(4.0))
    assert err.get() is None and float(out) == 2.0
    err, _ = checkify.checkify(f)(np.float32(-1.0))
    assert err.get().startswith("x must be positive, got -1.0")
    with pytest.raises(ValueError, match="not functionalized"):
        f(np.float32(4.0))


def test_jit_refused_outside_checkify_then_works_inside_it():
    f = ember.jit(_checked_sqrt)
    with pytest.raises(ValueError, match="not functionalized"):
        f(np.float32(4.0))
    err, out = checkify.checkify(f)(np.float32(-4.0))
    assert err.get().startswith("x must be positive, got -4.0")
    assert np.isnan(float(out))
    err, out = ember.jit(checkify.checkify(f))(np.float32(9.0))
    assert err.get() is None and float(out) == 3.0


def test_custom_jvp_traced_inside_checkify_is_traced_again_outside():
    @ember.custom_jvp
    def g(x):
        checkify.check(x > 0, "g wants x > 0, got {}", x)
        return x * 2.0

    g.defjvp(lambda primals, tangents: (g(*primals), tangents[0] * 2.0))
    err, out = checkify.checkify(g)(np.float32(-1.0))
    assert err.get().startswith("g wants x > 0, got -1.0") and float(out) == -2.0
    with pytest.raises(ValueError, match="not functionalized"):
        ember.jit(g)(np.float32(1.0))
