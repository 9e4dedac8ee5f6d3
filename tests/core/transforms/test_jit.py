"""jit: caching, static and donated arguments, lowering and compilation introspection."""

import functools
import gc
import weakref

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close


def test_traces_once_per_signature():
    traces = []

    @ember.jit
    def f(x, y):
        traces.append(1)
        return x * y + 1.0

    a = np.ones(3, np.float32)
    assert_close(f(a, a), 2 * a)
    f(a * 2, a)
    assert len(traces) == 1
    f(np.ones(4, np.float32), np.ones(4, np.float32))
    assert len(traces) == 2
    f(np.ones(3, np.int32), np.ones(3, np.int32))
    assert len(traces) == 3


def test_jit_of_the_same_function_again_reuses_its_trace_as_in_jax():
    traces = []

    def f(x):
        traces.append(x)
        return x * 2

    assert_close(ember.jit(f)(4.0), 8.0)
    assert_close(ember.jit(f)(5.0), 10.0)  # a new jit object, the same function: no trace
    assert len(traces) == 1
    ember.jit(f, static_argnums=0)(5.0)  # other options: a cache of their own
    assert len(traces) == 2
    assert_close(ember.jit(f)(np.ones(2, np.float32)), [2.0, 2.0])  # a new signature
    assert len(traces) == 3
    # a new partial (or lambda) each time is a new function, traced again
    ember.jit(functools.partial(f))(4.0)
    ember.jit(functools.partial(f))(4.0)
    assert len(traces) == 5


def test_the_shared_caches_go_with_their_function():
    f = lambda x: x * 2  # a temporary function, as jit(lambda ...) in a loop
    ember.jit(f)(1.0)
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None


def test_clear_caches_empties_the_caches_jit_objects_share():
    traces = []

    def f(x):
        traces.append(x)
        return x + 1

    ember.jit(f)(1.0)
    ember.clear_caches()
    ember.jit(f)(1.0)
    assert len(traces) == 2


def test_pytree_inputs_and_outputs():
    f = ember.jit(lambda d: {"sum": d["a"] + d["b"], "pair": (d["a"], None)})
    out = f({"a": np.float32(1.0), "b": np.float32(2.0)})
    assert_close(out["sum"], 3.0)
    assert out["pair"][1] is None


def test_static_argnums_and_argnames():
    traces = []

    def power(x, n, *, mode="plain"):
        traces.append((n, mode))
        y = x**n
        return y * 2 if mode == "double" else y

    f = ember.jit(power, static_argnums=1, static_argnames="mode")
    x = np.float32(3.0)
    assert_close(f(x, 2), 9.0)
    assert_close(f(x, 3), 27.0)
    assert_close(f(x, 3, mode="double"), 54.0)
    f(np.float32(4.0), 3, mode="double")
    assert len(traces) == 3


def test_static_values_by_position_with_arrays_reuse_their_executable():
    traces = []

    def scale(x, factor, flag):
        traces.append((factor, flag))
        return x * factor if flag else x - factor

    f = ember.jit(scale, static_argnums=(1, 2))
    x = enp.arange(3.0)
    for _ in range(3):
        assert_close(f(x, 2, True), [0.0, 2.0, 4.0])
    assert_close(f(x, 2, False), [-2.0, -1.0, 0.0])
    assert_close(f(x, 2.5, True), [0.0, 2.5, 5.0])  # 2.5 is not 2: its own program
    assert_close(f(x, True, True), [0.0, 1.0, 2.0])  # True == 1 but is another static value
    assert_close(f(x + 1, 2, True), [2.0, 4.0, 6.0])
    assert traces == [(2, True), (2, False), (2.5, True), (True, True)]
    with pytest.raises(TypeError, match="must be hashable"):
        f(x, [2], True)


def test_unhashable_static_argument_is_a_clear_error():
    f = ember.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(TypeError, match="static argument .* must be hashable.*list"):
        f(np.ones(4), [2, 2])


def test_tracer_in_python_control_flow_names_the_users_line():
    def f(x):
        if x > 0:  # the offending line
            return x
        return -x

    with pytest.raises(ember.errors.TracerBoolConversionError) as info:
        ember.jit(f)(np.float32(1.0))
    message = str(info.value)
    assert "test_jit.py" in message and "in f" in message
    assert "lax.cond" in message


def test_static_argument_makes_python_control_flow_work():
    f = ember.jit(lambda x, flag: x + 1 if flag else x - 1, static_argnums=1)
    assert_close(f(np.float32(1.0), True), 2.0)
    assert_close(f(np.float32(1.0), False), 0.0)


def test_lower_gives_stablehlo_text():
    lowered = ember.jit(lambda x, y: enp.tanh(x @ y)).lower(
        np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    )
    text = lowered.as_text()
    assert "func.func public @main" in text
    assert "stablehlo.dot_general" in text and "stablehlo.tanh" in text
    assert "tensor<2x4xf32>" in text


def test_closed_over_arrays_are_hoisted_into_arguments():
    w = enp.ones((64, 64))
    text = ember.jit(lambda x: x @ w).lower(np.ones((1, 64), np.float32)).as_text()
    assert "%arg1: tensor<64x64xf32>" in text or "%arg0: tensor<64x64xf32>" in text
    assert text.count("dense<") <= 1


def test_disable_jit_runs_eagerly():
    seen = []

    def f(x):
        seen.append(type(x).__name__)
        return x + 1

    with ember.config.option("disable_jit", True):
        ember.jit(f)(np.float32(1.0))
    assert seen == ["float32"]


def test_jit_on_methods_with_a_static_self():
    class Model:
        def __init__(self, scale):
            self.scale = scale

        @functools.partial(ember.jit, static_argnums=0)
        def apply(self, x):
            return x * self.scale

    assert_close(Model(3.0).apply(np.float32(2.0)), 6.0)
    with pytest.raises(TypeError, match="Model"):
        ember.jit(Model.apply)(Model(1.0), np.float32(1.0))


def test_python_scalar_arguments_are_weakly_typed():
    out = ember.jit(lambda x, s: x * s)(np.ones(2, np.float16), 3.0)
    assert out.dtype == np.float16


_FLOAT0 = np.dtype([("float0", np.void, 0)])


def test_jit_of_grad_with_integer_input_returns_host_float0():
    # JAX 0.10.2: (3.0, float0 NumPy zeros) — float0 never enters the compiled program.
    f = ember.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)
    for g in (ember.jit(f), f):
        dx, dn = g(1.5, 3)
        assert float(dx) == 3.0
        assert isinstance(dn, np.ndarray) and dn.dtype == _FLOAT0 and dn.shape == ()
    pull = ember.jit(lambda x, n: ember.vjp(lambda x, n: x * n, x, n)[1](1.0))
    pull = ember.jit(lambda x, n: ember.vjp(lambda x, n: x * n, x, n)[1](enp.ones(3)))
    dx, dn = pull(2.5, np.arange(3))
    assert float(dx) == 3.0
    assert dn.dtype == _FLOAT0 and dn.shape == (3,)


def test_aot_lowering_of_float0_outputs_leaves_them_out():
    f = ember.jit(ember.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True))
    lowered = f.lower(1.5, 3)
    assert "float0" not in lowered.as_text()
    dx, dn = lowered.compile()(1.5, 3)
    assert float(dx) == 3.0 and dn.dtype == _FLOAT0


def test_jacrev_allow_int_gives_zeros_of_the_input_dtype():
    # JAX 0.10.2: jacrev(..., allow_int=True)(1.5, 3) == (3.0, 0 as weak int32)
    jac = ember.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)
    for j in (jac, ember.jit(jac)):
        dx, dn = j(1.5, 3)
        assert float(dx) == 3.0
        assert dn.dtype == np.int32 and int(dn) == 0


def test_float0_inputs_pass_through_jit_and_device_put():
    zeros = np.zeros((2,), _FLOAT0)
    for out in (ember.jit(lambda z: z)(zeros), ember.device_put(zeros), enp.asarray(zeros)):
        assert isinstance(out, np.ndarray) and out.dtype == _FLOAT0 and out.shape == (2,)
    both = ember.jit(lambda z, x: (x * 2, z))(zeros, enp.ones(2))
    np.testing.assert_array_equal(both[0], [2.0, 2.0])
    assert both[1].dtype == _FLOAT0


def test_calls_with_host_scalars_reuse_one_program_on_the_arrays_device():
    # Host scalars are placed where the Arrays are (from the placement cache) and the call
    # finds its program without tracing: one program for every value of the scalar.
    f = ember.jit(lambda x, s: x * s)
    x = ember.numpy.arange(3.0)
    for s in (0.5, 2.0, -1.0, 0.5):
        np.testing.assert_array_equal(np.asarray(f(x, s)), np.arange(3.0, dtype=np.float32) * s)
    assert len(f._exec_cache) == 1
    # A float0 scalar (an integer's tangent) carries no data and takes the general path.
    g = ember.jit(lambda x, t: x)
    np.testing.assert_array_equal(np.asarray(g(x, np.zeros((), ember.dtypes.float0))), x)


def test_disable_jit_context_manager_restores_the_option():
    traced = []

    @ember.jit
    def f(x):
        traced.append(type(x).__name__)
        return x + 1

    x = enp.asarray(1.0)
    with ember.disable_jit():
        assert ember.config.disable_jit is True
        f(x)
        f(x)
        with ember.disable_jit(False):
            f(x)
    assert ember.config.disable_jit is False
    f(x)
    assert traced[:2] == ["Array", "Array"]  # run as plain Python, twice
    assert len(traced) == 3 and traced[2] != "Array"  # then traced once, and cached


def test_lowered_text_shows_locations_only_with_debug_info():
    def f(x):
        with ember.named_scope("block"):
            return enp.sin(x)

    lowered = ember.jit(f).lower(enp.ones(3))
    assert "loc(" not in lowered.as_text()
    assert 'loc("block/sin"(' in lowered.as_text(debug_info=True)


def test_disable_jit_has_jaxs_option_name():
    ember.config.update("jax_disable_jit", True)
    try:
        assert ember.config.disable_jit is True
    finally:
        ember.config.update("disable_jit", False)
