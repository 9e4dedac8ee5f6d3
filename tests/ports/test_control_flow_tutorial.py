"""Port of JAX's tutorial "Control flow and logical operators with JIT" (docs/control-flow.md).

The page's code cells, in order, with ``import jax`` changed to ``import ember``; cells that
end in a bare expression print it (and so do the expressions whose values the page gives in
comments), and ``print`` records its arguments, compared with what JAX 0.10.2 gave for the
same cells. The cells that show an error on purpose record the exception's type name, and
their messages are kept for the test to check.
"""

import ember.errors
from tests.ports._util import Recorder, assert_same


def program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember.numpy as jnp
    from ember import grad, jit

    @jit
    def f(x):
        for i in range(3):  # noqa: B007 - as the page writes it
            x = 2 * x
        return x

    print(f(3))

    @jit
    def g(x):
        y = 0.0
        for i in range(x.shape[0]):
            y = y + x[i]
        return y

    print(g(jnp.array([1.0, 2.0, 3.0])))

    @jit
    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    try:
        # This will fail!
        f(2)
    except Exception as e:
        shows_error(e)

    @jit
    def g(x):
        return (x > 0) and (x < 3)

    try:
        # This will fail!
        g(2)
    except Exception as e:
        shows_error(e)

    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    f = jit(f, static_argnames="x")

    print(f(2.0))

    def f(x, n):
        y = 0.0
        for i in range(n):
            y = y + x[i]
        return y

    f = jit(f, static_argnames="n")

    print(f(jnp.array([2.0, 3.0, 4.0]), 2))

    def example_fun(length, val):
        return jnp.ones((length,)) * val

    # un-jit'd works fine
    print(example_fun(5, 4))

    bad_example_jit = jit(example_fun)
    try:
        # this will fail:
        bad_example_jit(10, 4)
    except Exception as e:
        shows_error(e)

    # static_argnames tells JAX to recompile on changes at these argument positions:
    good_example_jit = jit(example_fun, static_argnames="length")
    # first compile
    print(good_example_jit(10, 4))
    # recompiles
    print(good_example_jit(5, 4))

    @jit
    def f(x):
        print(x)
        y = 2 * x
        print(y)
        return y

    print(f(2))

    from ember import lax

    operand = jnp.array([0.0])
    print(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand))
    # --> array([1.], dtype=float32)
    print(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand))
    # --> array([-1.], dtype=float32)

    init_val = 0
    cond_fun = lambda x: x < 10
    body_fun = lambda x: x + 1
    print(lax.while_loop(cond_fun, body_fun, init_val))
    # --> array(10, dtype=int32)

    init_val = 0
    start = 0
    stop = 10
    body_fun = lambda i, x: x + i
    print(lax.fori_loop(start, stop, body_fun, init_val))
    # --> array(45, dtype=int32)

    def python_check_positive_even(x):
        is_even = x % 2 == 0
        # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
        return is_even and (x > 0)

    @jit
    def jax_check_positive_even(x):
        is_even = x % 2 == 0
        # `logical_and` does not short circuit, so `x > 0` is always evaluated.
        return jnp.logical_and(is_even, x > 0)

    print(python_check_positive_even(24))
    print(jax_check_positive_even(24))

    x = jnp.array([-1, 2, 5])
    print(jax_check_positive_even(x))

    try:
        print(python_check_positive_even(x))
    except Exception as e:
        shows_error(e)

    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    print(grad(f)(2.0))  # ok!
    print(grad(f)(4.0))  # ok!

    return recorder.record, recorder.messages


EXPECTED = [
    (24,),
    (6.0,),
    ("TracerBoolConversionError",),
    ("TracerBoolConversionError",),
    (12.0,),
    (5.0,),
    ([4.0, 4.0, 4.0, 4.0, 4.0],),
    ("TypeError",),
    ([4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0],),
    ([4.0, 4.0, 4.0, 4.0, 4.0],),
    ("JitTracer(~int32[])",),
    ("JitTracer(~int32[])",),
    (4,),
    ([1.0],),
    ([-1.0],),
    (10,),
    (45,),
    (True,),
    (True,),
    ([False, True, False],),
    ("ValueError",),
    (12.0,),
    (-4.0,),
]


def test_control_flow_tutorial_gives_jax_answers():
    record, messages = program()
    expected = list(EXPECTED)
    # A traced shape: JAX raises a plain TypeError, ember the TypeError that names the case.
    assert expected[7] == ("TypeError",)
    assert issubclass(ember.errors.TracerIntegerConversionError, TypeError)
    expected[7] = ("TracerIntegerConversionError",)
    assert_same(record, expected)
    # the messages name the problem: a traced bool in f and g, a traced shape, a Python `and`
    # of an array of several elements
    assert "bool" in messages[0] and "in f" in messages[0]
    assert "bool" in messages[1] and "in g" in messages[1]
    assert "shape" in messages[2] and "example_fun" in messages[2]
    assert "ambiguous" in messages[3] and ".any()" in messages[3]
