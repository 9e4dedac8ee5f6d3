"""Each traced equation's source line and named_scope names (source_info.py)."""

import pytest

import ember
import ember.numpy as enp
from ember._src.source_info import current_name_stack


def _eqn_scopes(jaxpr):
    return [(e.primitive.name, e.source_info.name_stack) for e in jaxpr.jaxpr.eqns]


def test_named_scopes_nest_and_are_recorded_per_equation():
    def f(x):
        y = x + 1
        with ember.named_scope("outer"):
            z = y * 2
            with ember.named_scope("inner"):
                w = enp.sin(z)
        return w - 1

    jaxpr = ember.make_jaxpr(f)(1.0)
    assert _eqn_scopes(jaxpr) == [
        ("add", ""),
        ("mul", "outer"),
        ("sin", "outer/inner"),
        ("sub", ""),
    ]
    info = jaxpr.jaxpr.eqns[2].source_info
    assert info.filename == __file__ and info.function == "f"


def test_scope_is_restored_after_an_error():
    with pytest.raises(KeyError), ember.named_scope("failing"):
        assert current_name_stack() == "failing"
        raise KeyError("inside the scope")
    assert current_name_stack() == ""


def test_a_traced_function_starts_with_no_scope():
    @ember.jit
    def inner(x):
        with ember.named_scope("in_g"):
            return x * 3

    def outer(x):
        with ember.named_scope("around"):
            return inner(x)

    (call,) = ember.make_jaxpr(outer)(1.0).jaxpr.eqns
    assert call.source_info.name_stack == "around"
    (mul,) = call.params["jaxpr"].jaxpr.eqns
    assert mul.source_info.name_stack == "in_g"  # the call's scope is put in front when lowered


def test_name_must_be_a_string():
    with pytest.raises(TypeError, match="must be a string"), ember.named_scope(3):
        pass


def test_equations_know_the_column_of_the_expression_that_made_them():
    def f(x):
        return x + ember.numpy.sin(x)  # add at column 15, sin at 19

    eqns = ember.make_jaxpr(f)(1.0).jaxpr.eqns
    by_name = {e.primitive.name: e.source_info for e in eqns}
    assert by_name["sin"].column == 19 and by_name["add"].column == 15
    where, function = by_name["sin"].summary().rsplit(" ", 1)
    assert where.endswith(f":{by_name['sin'].lineno}:19")
    assert function == f"({f.__qualname__})"


def test_a_jaxpr_evaluated_again_keeps_the_lines_that_made_its_equations():
    def inner(x):
        return ember.numpy.sin(x) * 2.0

    line = inner.__code__.co_firstlineno + 1
    # jvp of a jit call traces the body again from its jaxpr: sin and its cos keep inner's line
    jaxpr = ember.make_jaxpr(lambda x: ember.jvp(ember.jit(inner), (x,), (x,)))(1.0)
    body = next(e for e in jaxpr.jaxpr.eqns if e.primitive.name == "jit").params["jaxpr"].jaxpr
    made = {e.primitive.name: e.source_info for e in body.eqns}
    assert made["sin"].lineno == line and made["cos"].lineno == line
    assert made["sin"].function == "inner"
