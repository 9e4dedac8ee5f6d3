# ruff: noqa: E501 - the ported program is kept as written; pinned values are long
"""Port of JAX's tutorial "Key concepts" (docs/key-concepts.md).

The page's code cells, in order, with ``import jax`` changed to ``import ember``; cells that
end in a bare expression print it, and ``print`` records its arguments, compared with what
JAX 0.10.2 gave for the same cells. The cell that shows an error on purpose records the
exception's type name, and its message is kept for the test to check.
"""

from tests.ports._util import Recorder, assert_same


def program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember
    import ember.numpy as jnp

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    selu_jit = ember.jit(selu)
    print(selu_jit(1.0))

    @ember.jit
    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    @ember.jit
    def f(x):
        print(x)
        return x + 1

    x = jnp.arange(5)
    result = f(x)

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    x = jnp.arange(5.0)
    print(ember.make_jaxpr(selu)(x))

    # (nested) list of parameters
    params = [1, 2, (jnp.arange(3), jnp.ones(2))]

    print(ember.tree.structure(params))
    print(ember.tree.leaves(params))

    # Dictionary of parameters
    params = {"n": 5, "W": jnp.ones((2, 2)), "b": jnp.zeros(2)}

    print(ember.tree.structure(params))
    print(ember.tree.leaves(params))

    # Named tuple of parameters
    from typing import NamedTuple

    class Params(NamedTuple):
        a: int
        b: float

    params = Params(1, 5.0)
    print(ember.tree.structure(params))
    print(ember.tree.leaves(params))

    import ember.numpy as jnp

    print(jnp.add(1, 1.0))  # jax.numpy API implicitly promotes mixed types.

    from ember import lax

    try:
        lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.
    except Exception as e:
        shows_error(e)

    print(lax.add(jnp.float32(1), 1.0))

    x = jnp.array([1, 2, 1])
    y = jnp.ones(10)
    print(jnp.convolve(x, y))

    from ember import lax

    result = lax.conv_general_dilated(
        x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
        y.reshape(1, 1, 10),
        window_strides=(1,),
        padding=[(len(y) - 1, len(y) - 1)],
    )  # equivalent of padding='full' in NumPy
    print(result[0, 0])

    return recorder.record, recorder.messages


EXPECTED = [
    (1.0499999523162842,),
    ("JitTracer(int32[5])",),
    (
        "{ lambda ; a:f32[5]. let\n    b:bool[5] = gt a 0.0:f32[]\n    c:f32[5] = exp a\n    d:f32[5] = mul 1.6699999570846558:f32[] c\n    e:f32[5] = sub d 1.6699999570846558:f32[]\n    f:f32[5] = jit[\n      name=_where\n      jaxpr={ lambda ; b:bool[5] a:f32[5] e:f32[5]. let\n          f:f32[5] = select_n b e a\n        in (f,) }\n    ] b a e\n    g:f32[5] = mul 1.0499999523162842:f32[] f\n  in (g,) }",
    ),
    ("PyTreeDef([*, *, (*, *)])",),
    ([1, 2, [0, 1, 2], [1.0, 1.0]],),
    ("PyTreeDef({'W': *, 'b': *, 'n': *})",),
    ([[[1.0, 1.0], [1.0, 1.0]], [0.0, 0.0], 5],),
    ("PyTreeDef(CustomNode(namedtuple[Params], [*, *]))",),
    ([1, 5.0],),
    (2.0,),
    ("TypeError",),
    (2.0,),
    ([1.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.0, 1.0],),
    ([1.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.0, 1.0],),
]

# ember.numpy functions are not wrapped in a jit of their own (docs/differences.md), so the
# jaxpr of selu shows where's select_n inline where JAX shows a nested jit named _where.
SELU_JAXPR = "{ lambda ; a:f32[5]. let\n    b:bool[5] = gt a 0.0:f32[]\n    c:f32[5] = exp a\n    d:f32[5] = mul 1.6699999570846558:f32[] c\n    e:f32[5] = sub d 1.6699999570846558:f32[]\n    f:f32[5] = select_n b e a\n    g:f32[5] = mul 1.0499999523162842:f32[] f\n  in (g,) }"


def test_key_concepts_tutorial_gives_jax_answers():
    record, messages = program()
    expected = list(EXPECTED)
    assert "name=_where" in expected[2][0]
    expected[2] = (SELU_JAXPR,)
    assert_same(record, expected)
    # lax.add(1, 1.0) is refused for its mixed dtypes: the message says so
    (message,) = messages
    assert "dtype" in message and "float" in message
