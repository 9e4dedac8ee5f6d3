"""make_jaxpr, the pretty-printer, the type checker and eval_jaxpr."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.core import Primitive, ShapedArray
from ember._src.interpreters.eval import JaxprTypeError, eval_jaxpr, typecheck
from ember._src.ir import Eqn, Jaxpr, Var


def test_pretty_printed_jaxpr_is_readable_and_exact():
    jaxpr = ember.make_jaxpr(lambda x, y: enp.sum(enp.tanh(x) * y + 1.0))(
        np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)
    )
    assert str(jaxpr) == (
        "{ lambda ; a:f32[2,3] b:f32[2,3]. let\n"
        "    c:f32[2,3] = tanh a\n"
        "    d:f32[2,3] = mul c b\n"
        "    e:f32[2,3] = add d 1.0:f32[]\n"
        "    f:f32[] = reduce_sum[axes=(0, 1)] e\n"
        "  in (f,) }"
    )


def test_jaxpr_without_equations_prints_on_one_line_as_jax_does():
    jaxpr = ember.make_jaxpr(lambda x: x)(np.arange(3, dtype=np.int32))
    assert str(jaxpr) == "{ lambda ; a:i32[3]. let  in (a,) }"


def test_closed_over_arrays_become_constvars():
    w = enp.ones((3,))
    jaxpr = ember.make_jaxpr(lambda x: x * w)(np.ones(3, np.float32))
    assert len(jaxpr.jaxpr.constvars) == 1
    assert str(jaxpr).startswith("{ lambda a:f32[3]; b:f32[3]. let")


def test_eval_jaxpr_reproduces_the_function():
    f = lambda x: enp.exp(x) / (1 + x * x)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    closed = ember.make_jaxpr(f)(x)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x)
    np.testing.assert_allclose(out, np.exp(x) / (1 + x * x), rtol=1e-6)


def test_typecheck_accepts_staged_jaxprs_and_rejects_wrong_types():
    closed = ember.make_jaxpr(lambda x: enp.sin(x) + x)(np.ones(4, np.float32))
    typecheck(closed.jaxpr)
    eqn = closed.jaxpr.eqns[0]
    bad_out = Var(ShapedArray((5,), np.float32))
    broken = Jaxpr(
        closed.jaxpr.constvars,
        closed.jaxpr.invars,
        [bad_out],
        [Eqn(eqn.primitive, eqn.invars, [bad_out], eqn.params)],
    )
    with pytest.raises(JaxprTypeError, match="sin"):
        typecheck(broken)


def test_typecheck_catches_use_before_definition():
    a = Var(ShapedArray((2,), np.float32))
    b = Var(ShapedArray((2,), np.float32))
    sin = ember.make_jaxpr(enp.sin)(np.ones(2, np.float32)).jaxpr.eqns[0].primitive
    with pytest.raises(JaxprTypeError, match="before it is defined"):
        typecheck(Jaxpr([], [a], [a], [Eqn(sin, [b], [a], {})]))


def test_equations_record_the_users_line():
    def f(x):
        return enp.cos(x)  # the line recorded

    closed = ember.make_jaxpr(f)(np.ones(2, np.float32))
    info = closed.jaxpr.eqns[0].source_info
    assert info.filename.endswith("test_ir.py") and info.function == "f"


def test_nested_jit_appears_as_one_equation_with_its_sub_jaxpr():
    inner = ember.jit(lambda x: x * 2.0)
    text = str(ember.make_jaxpr(lambda x: inner(x) + 1.0)(np.ones(2, np.float32)))
    assert "jit[" in text and "mul" in text


def test_missing_rule_names_the_primitive():
    lonely = Primitive("lonely_op")
    with pytest.raises(NotImplementedError, match="lonely_op"):
        ember.make_jaxpr(lambda x: lonely.bind(x))(np.ones(2, np.float32))


def test_dtype_parameters_are_printed_by_their_full_names_as_jax_does():
    jaxpr = ember.make_jaxpr(lambda x: x.astype(np.int8))(np.ones(2, np.float32))
    assert "convert_element_type[new_dtype=int8 weak_type=False] a" in str(jaxpr)


def test_a_nested_jaxpr_is_indented_as_jax_prints_it():
    jaxpr = ember.make_jaxpr(lambda x: ember.jit(enp.sin)(x) * 2.0)(np.ones(3, np.float32))
    lines = str(jaxpr).splitlines()
    param = next(line for line in lines if "jaxpr={" in line)
    body = lines[lines.index(param) + 1]
    closing = next(line for line in lines if line.strip().startswith("in (") and "}" in line)
    indent = len(param) - len(param.lstrip())
    assert len(body) - len(body.lstrip()) == indent + 4  # equations 4 deeper than jaxpr=
    assert len(closing) - len(closing.lstrip()) == indent + 2


def test_string_parameters_are_printed_bare_as_jax_does():
    def layer(x):
        return enp.tanh(x)

    jaxpr = ember.make_jaxpr(lambda x: ember.jit(layer)(x))(np.ones(3, np.float32))
    assert "name=layer" in str(jaxpr)
