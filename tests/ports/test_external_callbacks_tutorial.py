# ruff: noqa: I001, F811, F841, UP032 - the ported program is kept as written (its imports, redefinitions and unused results too)
"""Port of JAX's tutorial "External callbacks" (docs/external-callbacks.md).

The page's code cells, in order, with ``jax`` changed to ``ember`` in the imports and calls.
Cells that end in a bare expression (without ``;``) print it, and ``print`` records its
arguments, the host functions' own prints included; what the library itself prints
(``debug.print``) is recorded line by line, in order, as ``stdout: ...``. The cells that
raise on purpose (tagged ``raises-exception`` on the page) record the exception's type name,
and their messages are checked apart. JAX 0.10.2's records for the same cells are pinned below.
"""

from tests.ports._util import assert_same, record_program


def program():
    return record_program(run_cells)


def run_cells(print, shows_error):
    # (the page's hidden %xmode cell is left out)

    import ember

    @ember.jit
    def f(x):
        y = x + 1
        print("intermediate value: {}".format(y))
        return y * 2

    result = f(2)

    @ember.jit
    def f(x):
        y = x + 1
        ember.debug.print("intermediate value: {}", y)
        return y * 2

    result = f(2)

    import ember
    import ember.numpy as jnp
    import numpy as np

    def f_host(x):
        # call a numpy (not ember.numpy) operation:
        return np.sin(x).astype(x.dtype)

    def f(x):
        result_shape = ember.ShapeDtypeStruct.like(x)
        return ember.pure_callback(f_host, result_shape, x, vmap_method="sequential")

    x = jnp.arange(5.0)
    print(f(x))  # (the cell shows its value)

    print(ember.jit(f)(x))  # (the cell shows its value)

    def body_fun(_, x):
        return _, f(x)

    print(ember.lax.scan(body_fun, None, jnp.arange(5.0))[1])  # (the cell shows its value)

    print(ember.vmap(f)(x))  # (the cell shows its value)

    try:  # (the cell raises on purpose)
        ember.grad(f)(x)
    except Exception as e:
        shows_error(e)

    def print_something():
        print("printing something")
        return np.int32(0)

    @ember.jit
    def f1():
        return ember.pure_callback(print_something, np.int32(0))

    f1()

    @ember.jit
    def f2():
        ember.pure_callback(print_something, np.int32(0))
        return 1.0

    f2()
    from ember.experimental import io_callback
    from functools import partial

    global_rng = np.random.default_rng(0)

    def host_side_random_like(x):
        """Generate a random array like x using the global_rng state"""
        # We have two side-effects here:
        # - printing the shape and dtype
        # - calling global_rng, thus updating its state
        print(f"generating {x.dtype}{list(x.shape)}")
        return global_rng.uniform(size=x.shape).astype(x.dtype)

    @ember.jit
    def numpy_random_like(x):
        return io_callback(host_side_random_like, x, x)

    x = jnp.zeros(5)
    print(numpy_random_like(x))  # (the cell shows its value)

    print(ember.vmap(numpy_random_like)(x))  # (the cell shows its value)

    @ember.jit
    def numpy_random_like_ordered(x):
        return io_callback(host_side_random_like, x, x, ordered=True)

    try:  # (the cell raises on purpose)
        ember.vmap(numpy_random_like_ordered)(x)
    except Exception as e:
        shows_error(e)

    def body_fun(_, x):
        return _, numpy_random_like_ordered(x)

    print(ember.lax.scan(body_fun, None, jnp.arange(5.0))[1])  # (the cell shows its value)

    try:  # (the cell raises on purpose)
        ember.grad(numpy_random_like)(x)
    except Exception as e:
        shows_error(e)

    @ember.jit
    def f(x):
        io_callback(lambda: print("hello"), None)
        return x

    ember.grad(f)(1.0)
    from ember import debug

    def log_value(x):
        # This could be an actual logging call; we'll use
        # print() for demonstration
        print("log:", x)

    @ember.jit
    def f(x):
        debug.callback(log_value, x)
        return x

    f(1.0)
    x = jnp.arange(5.0)
    ember.vmap(f)(x)
    ember.grad(f)(1.0)
    import ember
    import ember.numpy as jnp
    import scipy.special

    def jv(v, z):
        v, z = jnp.asarray(v), jnp.asarray(z)

        # Require the order v to be integer type: this simplifies
        # the JVP rule below.
        assert jnp.issubdtype(v.dtype, jnp.integer)

        # Promote the input to inexact (float/complex).
        # Note that jnp.result_type() accounts for the enable_x64 flag.
        z = z.astype(jnp.result_type(float, z.dtype))

        # Wrap scipy function to return the expected dtype.
        _scipy_jv = lambda v, z: scipy.special.jv(v, z).astype(z.dtype)

        # Define the expected shape & dtype of output.
        result_shape_dtype = ember.ShapeDtypeStruct(
            shape=jnp.broadcast_shapes(v.shape, z.shape), dtype=z.dtype
        )

        # Use vmap_method="broadcast_all" because scipy.special.jv handles broadcasted inputs.
        return ember.pure_callback(_scipy_jv, result_shape_dtype, v, z, vmap_method="broadcast_all")

    from functools import partial

    j1 = partial(jv, 1)
    z = jnp.arange(5.0)

    print(j1(z))

    print(ember.jit(j1)(z))

    print(ember.vmap(j1)(z))

    try:  # (the cell raises on purpose)
        ember.grad(j1)(z)
    except Exception as e:
        shows_error(e)

    jv = ember.custom_jvp(jv)

    @jv.defjvp
    def _jv_jvp(primals, tangents):
        v, z = primals
        _, z_dot = tangents  # Note: v_dot is always 0 because v is integer.
        jv_minus_1, jv_plus_1 = jv(v - 1, z), jv(v + 1, z)
        djv_dz = jnp.where(v == 0, -jv_plus_1, 0.5 * (jv_minus_1 - jv_plus_1))
        return jv(v, z), z_dot * djv_dz

    j1 = partial(jv, 1)
    print(ember.grad(j1)(2.0))

    print(ember.hessian(j1)(2.0))  # (the cell shows its value)


EXPECTED = [
    ("intermediate value: JitTracer(~int32[])",),
    ("stdout: intermediate value: 3",),
    ([0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.756802499294281],),
    ([0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.756802499294281],),
    ([0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.756802499294281],),
    ([0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.756802499294281],),
    ("ValueError",),
    ("printing something",),
    ("generating float32[5]",),
    (
        [
            0.6369616985321045,
            0.2697867155075073,
            0.04097352549433708,
            0.016527635976672173,
            0.8132702112197876,
        ],
    ),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    (
        [
            0.91275554895401,
            0.6066357493400574,
            0.7294965386390686,
            0.543624997138977,
            0.9350724220275879,
        ],
    ),
    ("ValueError",),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    ("generating float32[]",),
    (
        [
            0.8158535361289978,
            0.0027385002467781305,
            0.8574042916297913,
            0.033585574477910995,
            0.7296554446220398,
        ],
    ),
    ("ValueError",),
    ("hello",),
    ("log:", 1.0),
    ("log:", 0.0),
    ("log:", 1.0),
    ("log:", 2.0),
    ("log:", 3.0),
    ("log:", 4.0),
    ("log:", 1.0),
    ([0.0, 0.44005057215690613, 0.5767248272895813, 0.3390589654445648, -0.06604332476854324],),
    ([0.0, 0.44005057215690613, 0.5767248272895813, 0.3390589654445648, -0.06604332476854324],),
    ([0.0, 0.44005057215690613, 0.5767248272895813, 0.3390589654445648, -0.06604332476854324],),
    ("ValueError",),
    (-0.06447161734104156,),
    (-0.4003078043460846,),
]


def test_external_callbacks_tutorial_gives_jax_answers():
    recorder = program()
    assert_same(recorder.record, EXPECTED)
    # The errors say what JAX's say, in ember's words and naming the callback.
    grad_pure, vmap_ordered, grad_io, grad_jv = recorder.messages
    assert grad_pure.startswith("pure_callback (f_host") and "custom_jvp" in grad_pure
    assert "ordered=True cannot be vmapped" in vmap_ordered
    assert grad_io.startswith("io_callback (host_side_random_like") and "differentiated" in grad_io
    assert "cannot be differentiated" in grad_jv
