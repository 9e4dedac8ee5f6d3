"""ShapedArray's varying manual axes (``vma``): part of the type (equality, hashing), kept by
``update``, printed as JAX prints them, empty by default. ``ensure_compile_time_eval``: while
tracing, operations on known values run right away."""

from __future__ import annotations

import numpy as np

import ember
import ember.numpy as enp
from ember._src.core import ShapedArray, tangent_aval


def test_vma_is_empty_by_default_and_part_of_the_type():
    plain = ShapedArray((4,), np.float32)
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert plain.vma == frozenset()
    assert plain != varying and hash(plain) != hash(varying)
    assert varying == ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert plain.same_type(varying)  # shapes and dtypes only


def test_update_keeps_vma_unless_replaced():
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert varying.update(shape=(2, 2)).vma == frozenset({"i"})
    assert varying.update(dtype=np.int32).vma == frozenset({"i"})
    assert varying.update(vma=()).vma == frozenset()
    assert tangent_aval(varying.update(dtype=np.int32)).vma == frozenset({"i"})


def test_printed_as_jax_prints_them():
    one = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert one.str_short() == "f32[4]{V:i}"  # in jaxprs
    assert str(one) == "float32[4]{V:i}"  # typeof
    weak = ShapedArray((), np.float32, weak_type=True, vma=frozenset({"i"}))
    assert str(weak) == "~float32[]{V:i}"
    assert repr(one) == "ShapedArray(float32[4]{V:i})"
    assert str(ShapedArray((4,), np.float32)) == "float32[4]"


def test_manual_axis_type_is_jaxs_spelling_of_vma():
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert varying.manual_axis_type.varying == {"i"} and varying.mat.varying == {"i"}
    assert varying.manual_axis_type.unreduced == frozenset()


# --------------------------------------------------------------------------------------------
# ensure_compile_time_eval


def test_ensure_compile_time_eval_gives_concrete_values_python_can_branch_on():
    # JAX's own example: z is a concrete array inside jit, so `if z_positive:` works.
    @ember.jit
    def f(x):
        with ember.ensure_compile_time_eval():
            z = enp.sin(enp.sin(3.0))
            z_positive = z > 0
        return enp.sin(x) if z_positive else enp.cos(x)

    assert np.sin(np.sin(3.0)) > 0
    assert np.isclose(float(f(np.float32(1.0))), np.sin(1.0))

    seen = []

    @ember.jit
    def g():
        with ember.ensure_compile_time_eval():
            seen.append(enp.sin(3.0))
        return seen[-1]

    assert np.isclose(float(g()), np.sin(3.0))
    assert isinstance(seen[0], ember.Array)  # computed while tracing, not a tracer


def test_ensure_compile_time_eval_folds_constants_and_traces_the_arguments():
    def f(x):
        with ember.ensure_compile_time_eval():
            table = enp.arange(4.0) ** 2  # folded: the jaxpr holds the result as a constant
            scaled = table * x  # x is traced: this stays an equation
        return scaled

    jaxpr = ember.make_jaxpr(f)(np.float32(2.0))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["mul"]
    np.testing.assert_allclose(np.asarray(jaxpr.consts[0]), [0.0, 1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.asarray(ember.jit(f)(np.float32(2.0))), [0, 2, 8, 18])


def test_ensure_compile_time_eval_under_grad_vmap_and_scan():
    def f(x):
        with ember.ensure_compile_time_eval():
            n = int(enp.sum(enp.arange(4)))  # a Python int, inside every transformation
        return x**2 * n

    assert float(ember.jit(ember.grad(f))(np.float32(3.0))) == 36.0
    np.testing.assert_allclose(np.asarray(ember.vmap(f)(np.arange(3.0))), [0, 6, 24])
    _, ys = ember.lax.scan(lambda c, x: (c, f(x)), 0.0, np.arange(3.0, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(ys), [0, 6, 24])


def test_ensure_compile_time_eval_outside_a_trace_and_after_it():
    with ember.ensure_compile_time_eval():
        assert float(enp.sin(0.0)) == 0.0
    # The context ends with its block: staging records constants again.
    jaxpr = ember.make_jaxpr(lambda: enp.sin(np.float32(1.0)))()
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["sin"]
