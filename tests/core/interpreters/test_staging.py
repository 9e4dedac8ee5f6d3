"""The staging trace: how its tracers show themselves."""

import numpy as np

import ember


def test_a_value_traced_by_jit_shows_its_type_as_jax_prints_it():
    shown = []

    def f(x, y):
        shown.extend([repr(x), str(y)])
        return x + y

    ember.jit(f)(np.arange(5, dtype=np.int32), 1.0)
    assert shown == ["JitTracer(int32[5])", "JitTracer(~float32[])"]


def test_make_jaxpr_traces_show_the_same_way():
    shown = []
    ember.make_jaxpr(lambda x: shown.append(repr(x)) or x)(np.ones((2, 3), np.float32))
    assert shown == ["JitTracer(float32[2,3])"]
