"""Host callbacks (``ember.debug.print``/``callback``, ``ember.pure_callback``,
``ember.experimental.io_callback``) under every transformation, on the default backend; also
covers ``primitives/callbacks.py`` (their primitives and rules)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.errors import CallbackError, EmberTypeError
from ember.experimental import io_callback

F32 = ember.ShapeDtypeStruct((3,), np.float32)
SCALAR = ember.ShapeDtypeStruct((), np.float32)


def lines(capsys) -> list[str]:
    ember.effects_barrier()
    return capsys.readouterr().out.splitlines()


# -- debug.print -------------------------------------------------------------------------------


def test_debug_print_formats_values_eagerly_and_under_jit(capsys):
    ember.debug.print("eager {x} {}", jnp.arange(3), x=2.5)
    f = ember.jit(lambda x: (ember.debug.print("jit {} and {y:.2f}", x, y=x.sum()), x * 2)[1])
    out = f(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])
    assert lines(capsys) == ["eager 2.5 [0 1 2]", "jit [1. 1.] and 2.00"]


def test_debug_print_formats_arguments_that_are_not_arrays(capsys):
    ember.jit(lambda x: ember.debug.print("{} {name}", x, name="tag"))(jnp.int32(4))
    assert lines(capsys) == ["4 tag"]


def test_debug_print_under_grad_shows_primal_values(capsys):
    def f(x):
        ember.debug.print("x={}", x)
        return x * x

    assert float(ember.grad(f)(3.0)) == 6.0
    assert float(ember.jit(ember.grad(f))(2.0)) == 4.0
    assert lines(capsys) == ["x=3.0", "x=2.0"]


def test_debug_print_under_vmap_prints_each_element_in_order(capsys):
    ember.vmap(lambda x, y: ember.debug.print("{} {}", x, y), in_axes=(0, None))(
        jnp.arange(3.0), jnp.float32(7)
    )
    ember.jit(ember.vmap(lambda x: ember.debug.print("j{}", x)))(jnp.arange(2))
    assert lines(capsys) == ["0.0 7.0", "1.0 7.0", "2.0 7.0", "j0", "j1"]


def test_ordered_prints_keep_program_order_in_loops_and_branches(capsys):
    def body(i, c):
        ember.debug.print("loop {}", i, ordered=True)
        c = lax.cond(i % 2 == 0, lambda c: c + 1, lambda c: c, c)
        lax.cond(
            i == 1,
            lambda: ember.debug.print("branch at {}", i, ordered=True),
            lambda: None,
        )
        return c

    def f(n):
        ember.debug.print("before", ordered=True)
        c = lax.fori_loop(0, 3, body, 0)
        _, ys = lax.scan(lambda c, x: (c, ember.debug.print("scan {}", x, ordered=True)), 0, n)
        ember.debug.print("after {}", c, ordered=True)
        return c

    assert int(ember.jit(f)(jnp.arange(2))) == 2
    assert lines(capsys) == [
        "before",
        "loop 0",
        "loop 1",
        "branch at 1",
        "loop 2",
        "scan 0",
        "scan 1",
        "after 2",
    ]


def test_debug_print_refuses_a_format_naming_missing_arguments():
    with pytest.raises(ValueError, match="positional argument 1"):
        ember.debug.print("{} {}", 1.0)
    with pytest.raises(ValueError, match="'y'"):
        ember.jit(lambda x: ember.debug.print("{y}", x=x))(1.0)
    with pytest.raises(TypeError, match="must be a str"):
        ember.debug.print(3)


def test_debug_print_describes_its_format_for_device_printers():
    # Compilers that print on the device (Triton's tt.print) read the format from here.
    def f(x, y):
        ember.debug.print("a {0} b {1:.2f} s={2} {3} {1} {y} {0!r} end", x, y, "str", 3, y=y)

    closed = ember.make_jaxpr(f)(1.0, jnp.ones(4))
    (eqn,) = closed.jaxpr.eqns
    assert eqn.params["callback"].printed == (
        "a ",
        (0, ""),
        " b ",
        (1, ".2f"),
        " s=str ",  # a static argument is formatted into the text
        (2, ""),  # the int 3 is an array operand, as in JAX
        " ",
        (1, ""),
        " ",
        (None, "y"),  # keywords are printed only on the host
        " ",
        (None, "0"),  # so are conversions
        " end",
    )


def test_effects_are_part_of_the_jaxpr():
    closed = ember.make_jaxpr(lambda x: ember.debug.print("x={}", x, ordered=True))(1.0)
    text = str(closed)
    assert "debug_callback[callback=debug.print ordered=True result_avals=()] a" in text
    assert [e.name for e in closed.effects] == ["OrderedDebug"]
    io = ember.make_jaxpr(lambda x: io_callback(np.sin, SCALAR, x))(1.0)
    assert [e.name for e in io.effects] == ["IO"]
    pure = ember.make_jaxpr(lambda x: ember.pure_callback(np.sin, SCALAR, x))(1.0)
    assert pure.effects == frozenset()


def test_a_callback_whose_results_are_unused_still_runs_when_it_has_effects():
    calls = []

    def record(x):
        calls.append(float(x))
        return np.float32(0)

    def f(x):
        io_callback(record, SCALAR, x)  # result unused: kept for its effect
        ember.pure_callback(record, SCALAR, x + 1)  # pure, result unused: dropped
        return x

    ember.jit(f)(jnp.float32(5))
    ember.effects_barrier()
    assert calls == [5.0]


# -- debug.callback ------------------------------------------------------------------------------


def test_debug_callback_gets_ember_arrays_and_pytrees():
    seen = []

    def show(tree, scale=None):
        seen.append((type(tree["a"]), np.asarray(tree["a"]).tolist(), float(scale)))

    f = ember.jit(lambda t, s: ember.debug.callback(show, t, scale=s))
    assert f({"a": jnp.arange(2)}, jnp.float32(0.5)) is None
    ember.effects_barrier()
    assert seen == [(ember.Array, [0, 1], 0.5)]


# -- pure_callback -------------------------------------------------------------------------------


def test_pure_callback_matches_numpy_under_jit_and_eagerly():
    x = np.array([0.1, 0.2, 0.3], np.float32)

    def f(x):
        return ember.pure_callback(lambda v: np.sin(np.asarray(v)), F32, x) * 2

    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.sin(x) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 2, rtol=1e-6)


def test_pure_callback_returns_pytrees():
    out_shapes = {"s": SCALAR, "v": F32}

    def host(x):
        x = np.asarray(x)
        return {"s": x.sum(), "v": x[::-1].copy()}

    out = ember.jit(lambda x: ember.pure_callback(host, out_shapes, x))(jnp.arange(3.0))
    assert float(out["s"]) == 3.0
    np.testing.assert_array_equal(np.asarray(out["v"]), [2.0, 1.0, 0.0])


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_under_vmap(method):
    calls = []

    def host(x, y):
        x, y = np.asarray(x), np.asarray(y)
        calls.append(x.shape)
        return (x * y).astype(np.float32)

    def f(x, y):
        return ember.pure_callback(
            host, ember.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method
        )

    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([10, 20], np.float32)
    got = ember.jit(ember.vmap(f, in_axes=(0, None)))(xs, y)
    np.testing.assert_array_equal(np.asarray(got), xs * y)
    ember.effects_barrier()
    assert (
        calls
        == {"sequential": [(2,)] * 3, "expand_dims": [(3, 2)], "broadcast_all": [(3, 2)]}[method]
    )


def test_pure_callback_under_vmap_needs_a_method():
    f = ember.vmap(lambda x: ember.pure_callback(np.sin, SCALAR, x))
    with pytest.raises(NotImplementedError, match="vmap_method"):
        f(jnp.ones(3))


def test_pure_callback_is_not_differentiable():
    with pytest.raises(ValueError, match="custom_jvp"):
        ember.grad(lambda x: ember.pure_callback(np.sin, SCALAR, x))(1.0)


def test_pure_callback_with_custom_jvp_is_differentiable():
    @ember.custom_jvp
    def sin(x):
        return ember.pure_callback(lambda v: np.sin(v).astype(np.float32), SCALAR, x)

    @sin.defjvp
    def sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin(x), jnp.cos(x) * t

    assert float(ember.grad(sin)(0.5)) == pytest.approx(np.cos(0.5), rel=1e-6)


# -- io_callback ---------------------------------------------------------------------------------


def test_ordered_io_callbacks_happen_in_call_order_across_calls():
    log = []

    def record(x):
        log.append(int(x))
        return np.int32(x) * 10

    f = ember.jit(
        lambda x: io_callback(record, ember.ShapeDtypeStruct((), np.int32), x, ordered=True)
    )
    outs = [int(f(jnp.int32(i))) for i in range(6)]
    ember.effects_barrier()
    assert log == list(range(6))
    assert outs == [i * 10 for i in range(6)]


def test_unordered_io_callback_under_vmap_runs_per_element():
    log = []

    def record(x):
        log.append(float(x))
        return np.float32(x) + 1

    out = ember.vmap(lambda x: io_callback(record, SCALAR, x))(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0, 3.0])
    assert log == [0.0, 1.0, 2.0]


def test_ordered_io_callback_refuses_vmap_and_grad():
    with pytest.raises(ValueError, match="cannot be vmapped"):
        ember.vmap(lambda x: io_callback(np.sin, SCALAR, x, ordered=True))(jnp.ones(2))
    with pytest.raises(ValueError, match="cannot be differentiated"):
        ember.grad(lambda x: io_callback(np.sin, SCALAR, x))(1.0)


# -- bad callbacks -------------------------------------------------------------------------------


def test_a_raising_callback_is_a_callback_error_naming_it_and_the_line():
    def broken(x):
        raise ZeroDivisionError("no")

    f = ember.jit(lambda x: ember.pure_callback(broken, F32, x))
    with pytest.raises(
        CallbackError, match=r"pure_callback broken \(at .*test_callback.py"
    ) as info:
        np.asarray(f(jnp.ones(3)))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    # the next run is not confused by the earlier failure
    g = ember.jit(lambda x: ember.pure_callback(lambda v: np.asarray(v) + 1, F32, x))
    np.testing.assert_array_equal(np.asarray(g(jnp.ones(3))), [2.0, 2.0, 2.0])


def test_wrong_results_are_callback_errors_never_memory_corruption():
    def run(result, declared=F32):
        return np.asarray(
            ember.jit(lambda x: ember.pure_callback(lambda v: result, declared, x))(jnp.ones(3))
        )

    with pytest.raises(CallbackError, match=r"shape \(4,\) for result 0, declared f32\[3\]"):
        run(np.ones(4, np.float32))
    with pytest.raises(CallbackError, match="dtype int32"):
        run(np.ones(3, np.int32))
    with pytest.raises(CallbackError, match="structure"):
        run((np.ones(3, np.float32),))
    # float64 for a float32 result is what a NumPy function gives: converted, as JAX does
    np.testing.assert_array_equal(run(np.full(3, 0.5)), [0.5, 0.5, 0.5])


def test_bad_result_shape_dtypes_is_a_type_error():
    with pytest.raises(EmberTypeError, match="ShapeDtypeStruct"):
        ember.pure_callback(np.sin, "f32", jnp.ones(3))
    with pytest.raises(EmberTypeError, match="must be arrays"):
        ember.debug.callback(print, object())
