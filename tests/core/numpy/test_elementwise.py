"""ember.numpy against NumPy: elementwise, reductions, shapes, creation, contractions, indexing,
and complex operands (which ordering and the real-only functions treat as NumPy and JAX do)."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import EmberTypeError
from tests.core.util import assert_close

UNARY = [
    "exp",
    "log1p",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "arctan",
    "arcsinh",
    "sqrt",
    "cbrt",
    "negative",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "square",
    "abs",
    "expm1",
    "rint",
]


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_match_numpy(name, rng):
    x = rng.uniform(0.1, 2.0, size=(3, 4)).astype(np.float32) * rng.choice([-1, 1], (3, 4))
    if name in ("sqrt", "log1p"):
        x = np.abs(x)
    assert_close(getattr(enp, name)(x), getattr(np, name)(x), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctanh"])
def test_inverse_functions_on_their_domain(name, rng):
    x = rng.uniform(-0.95, 0.95, size=(7,)).astype(np.float32)
    assert_close(getattr(enp, name)(x), getattr(np, name)(x), rtol=1e-5, atol=1e-6)


def test_log_and_arccosh(rng):
    x = rng.uniform(1.1, 5.0, size=(6,)).astype(np.float32)
    assert_close(enp.log(x), np.log(x))
    assert_close(enp.arccosh(x), np.arccosh(x), rtol=1e-5)
    assert_close(enp.log2(x), np.log2(x))
    assert_close(enp.log10(x), np.log10(x))


BINARY = [
    "add",
    "subtract",
    "multiply",
    "true_divide",
    "maximum",
    "minimum",
    "power",
    "arctan2",
    "logaddexp",
]


@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_broadcast_like_numpy(name, rng):
    x = rng.uniform(0.5, 2.0, size=(3, 1, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, size=(5, 1)).astype(np.float32)
    assert_close(getattr(enp, name)(x, y), getattr(np, name)(x, y), rtol=2e-5)


def test_integer_division_and_remainder_follow_numpy_signs():
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    assert_close(enp.floor_divide(a, b), np.floor_divide(a, b))
    assert_close(enp.remainder(a, b), np.remainder(a, b))
    assert_close(enp.fmod(a, b), np.fmod(a, b))
    assert enp.true_divide(a, b).dtype == np.float32


def test_integer_power():
    a = np.array([2, 3, -2, 5], np.int32)
    assert_close(enp.power(a, 3), a**3)
    assert_close(enp.power(a, np.array([0, 1, 2, 3], np.int32)), a ** np.array([0, 1, 2, 3]))


def test_comparisons_and_where(rng):
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(3,)).astype(np.float32)
    for name in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]:
        np.testing.assert_array_equal(getattr(enp, name)(x, y), getattr(np, name)(x, y))
    assert_close(enp.where(x > 0, x, y), np.where(x > 0, x, y))
    assert_close(enp.clip(x, -0.5, 0.5), np.clip(x, -0.5, 0.5))


def test_logical_and_bitwise():
    a = np.array([True, False, True])
    b = np.array([True, True, False])
    np.testing.assert_array_equal(enp.logical_and(a, b), a & b)
    np.testing.assert_array_equal(enp.logical_not(a), ~a)
    i = np.array([12, 5, 7], np.int32)
    np.testing.assert_array_equal(enp.bitwise_xor(i, 3), i ^ 3)
    with pytest.raises(TypeError, match="bitwise_and"):
        enp.bitwise_and(np.ones(2, np.float32), 1)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std"])
def test_reductions_match_numpy(name, axis, keepdims, rng):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert_close(getattr(enp, name)(x, axis=axis, keepdims=keepdims), expected, rtol=2e-5)


def test_argmax_argmin_and_boolean_reductions(rng):
    x = rng.normal(size=(4, 5)).astype(np.float32)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(enp.argmax(x, axis=axis), np.argmax(x, axis=axis))
        np.testing.assert_array_equal(enp.argmin(x, axis=axis), np.argmin(x, axis=axis))
    ties = np.array([1.0, 3.0, 3.0, np.nan, 2.0], np.float32)
    assert int(enp.argmax(ties)) == np.argmax(ties) == 3
    np.testing.assert_array_equal(enp.all(x > -10, axis=0), np.all(x > -10, axis=0))
    np.testing.assert_array_equal(enp.any(x > 1, axis=1), np.any(x > 1, axis=1))


def test_sum_of_booleans_and_small_ints_uses_the_default_int():
    assert enp.sum(np.array([True, True, False])).dtype == np.int32
    assert int(enp.sum(np.array([True, True, False]))) == 2
    assert enp.sum(np.ones(3, np.int8)).dtype == np.int32


def test_shape_manipulation(rng):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    assert_close(enp.reshape(x, (4, -1)), x.reshape(4, -1))
    assert_close(enp.transpose(x), x.T)
    assert_close(enp.transpose(x, (1, 0, 2)), x.transpose(1, 0, 2))
    assert_close(enp.swapaxes(x, 0, 2), np.swapaxes(x, 0, 2))
    assert_close(enp.moveaxis(x, 0, -1), np.moveaxis(x, 0, -1))
    assert_close(enp.broadcast_to(x[:, :1], (2, 3, 4)), np.broadcast_to(x[:, :1], (2, 3, 4)))
    assert_close(enp.concatenate([x, x], axis=1), np.concatenate([x, x], axis=1))
    assert_close(enp.stack([x, x], axis=-1), np.stack([x, x], axis=-1))
    assert_close(enp.squeeze(x[:, :1]), np.squeeze(x[:, :1]))
    assert_close(enp.expand_dims(x, (0, 2)), np.expand_dims(x, (0, 2)))
    assert_close(enp.ravel(x), x.ravel())
    assert_close(enp.flip(x, 1), np.flip(x, 1))
    assert enp.astype(x, np.int32).dtype == np.int32
    assert_close(enp.vstack([x[0], x[1]]), np.vstack([x[0], x[1]]))


def test_shape_errors_are_numpy_like():
    with pytest.raises(ValueError, match="cannot reshape"):
        enp.reshape(np.ones(6), (4, 2))
    with pytest.raises(ValueError, match="broadcast"):
        enp.add(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="same shape"):
        enp.stack([np.ones(2), np.ones(3)])
    with pytest.raises(np.exceptions.AxisError):
        enp.sum(np.ones((2, 2)), axis=2)


def test_creation_functions():
    assert_close(enp.zeros((2, 3)), np.zeros((2, 3)))
    assert_close(enp.ones(4, dtype=np.int32), np.ones(4, np.int32))
    assert_close(enp.full((2, 2), 7.5), np.full((2, 2), 7.5))
    assert_close(enp.arange(5), np.arange(5))
    assert_close(enp.arange(2, 11, 3), np.arange(2, 11, 3))
    assert_close(enp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25))
    assert_close(enp.linspace(0, 1, 7), np.linspace(0, 1, 7), rtol=1e-6)
    assert_close(enp.linspace(-2, 3, 4, endpoint=False), np.linspace(-2, 3, 4, endpoint=False))
    assert_close(enp.eye(3, 4, k=1), np.eye(3, 4, k=1))
    x = np.ones((2, 3), np.int32)
    assert enp.zeros_like(x).dtype == np.int32
    assert_close(enp.full_like(x, 4), np.full_like(x, 4))
    assert enp.zeros(3).dtype == np.float32
    assert enp.arange(3).dtype == np.int32


def test_contractions(rng):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(4, 5)).astype(np.float32)
    v = rng.normal(size=(4,)).astype(np.float32)
    batch = rng.normal(size=(2, 3, 4)).astype(np.float32)
    assert_close(enp.dot(a, b), a @ b, rtol=1e-5, atol=1e-5)
    assert_close(enp.dot(a, v), a @ v, rtol=1e-5, atol=1e-5)
    assert_close(enp.matmul(batch, b), batch @ b, rtol=1e-5, atol=1e-5)
    assert_close(enp.matmul(v, b), v @ b, rtol=1e-5, atol=1e-5)
    assert_close(enp.asarray(a) @ b, a @ b, rtol=1e-5, atol=1e-5)
    assert_close(enp.tensordot(batch, b, axes=1), np.tensordot(batch, b, axes=1), atol=1e-5)
    assert_close(enp.outer(v, v), np.outer(v, v), atol=1e-6)
    assert_close(enp.inner(v, v), np.inner(v, v), rtol=1e-5)
    assert_close(enp.einsum("bij,jk->bki", batch, b), np.einsum("bij,jk->bki", batch, b), atol=1e-5)
    assert_close(enp.einsum("ij,ij->", a, a), np.einsum("ij,ij->", a, a), rtol=1e-5)
    assert_close(enp.einsum("i,j", v, v), np.einsum("i,j", v, v), atol=1e-6)
    assert_close(enp.einsum("...ij,jk", batch, b), np.einsum("...ij,jk", batch, b), atol=1e-5)
    with pytest.raises(ValueError, match="not aligned"):
        enp.dot(a, a)


@pytest.mark.parametrize(
    "index",
    [
        1,
        -1,
        (1, 2),
        (slice(None), 0),
        slice(1, None),
        slice(None, None, -1),
        (Ellipsis, 1),
        (None, 1),
        (slice(0, 3, 2), slice(None, None, -2)),
        (1, None, slice(1, 3)),
        slice(5, 1, -2),
        (slice(None), None),
        slice(3, 3),
    ],
)
def test_basic_indexing_matches_numpy(index, rng):
    x = rng.normal(size=(4, 5)).astype(np.float32)
    assert_close(enp.asarray(x)[index], x[index])


def test_traced_integer_index_under_jit():
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    pick = ember.jit(lambda x, i: x[i, 1:])
    for i in (0, 2, -1, -4):
        assert_close(pick(x, i), x[i, 1:])


def test_zero_d_integer_array_indexes_like_an_integer(rng):
    # NumPy and JAX read a 0-d integer array as the integer it holds (a basic index), also as a
    # slice bound and in .at[].
    x = rng.normal(size=(4, 3)).astype(np.float32)
    a = enp.asarray(x)
    for index in [np.array(1), np.array(-1, np.int32), (np.array(2), 0), slice(np.array(1), None)]:
        assert_close(a[index], x[index])
        assert_close(ember.jit(lambda v, index=index: v[index])(a), x[index])
    assert_close(a[enp.asarray(3)], x[3])
    want = x.copy()
    want[1] += 5.0
    assert_close(a.at[np.array(1)].add(5.0), want)
    with pytest.raises(IndexError, match="advanced indexing"):
        a[np.array(1.0)]  # a float array is still no index


def test_out_of_bounds_static_index_raises_index_error():
    with pytest.raises(IndexError, match="out of bounds"):
        enp.asarray(np.ones(3))[3]
    with pytest.raises(IndexError, match="too many indices"):
        enp.asarray(np.ones(3))[0, 0]


def test_save_savez_complexwarning_and_fromfile_like_jax():
    import io

    buffer = io.BytesIO()
    enp.save(buffer, enp.arange(3.0))
    buffer.seek(0)
    assert enp.load(buffer).tolist() == [0.0, 1.0, 2.0]
    buffer = io.BytesIO()
    enp.savez(buffer, x=enp.ones(2))
    buffer.seek(0)
    assert np.load(buffer)["x"].tolist() == [1.0, 1.0]
    assert issubclass(enp.ComplexWarning, RuntimeWarning)
    with pytest.raises(NotImplementedError, match="not pure"):
        enp.fromfile("anything.bin")


@pytest.mark.parametrize(
    "fn,x,kwargs,expected",
    [  # JAX 0.10.2's answers
        (enp.max, np.zeros((0,), np.float32), {"initial": 0}, 0.0),
        (enp.min, np.zeros((0,), np.float32), {"initial": 5}, 5.0),
        (enp.max, np.zeros((0, 2), np.float32), {"axis": 0, "initial": 0}, [0.0, 0.0]),
        (enp.min, np.zeros((0,), np.int32), {"initial": 7}, 7),
        (enp.max, np.zeros((3,), np.float32), {"where": np.zeros(3, bool), "initial": -1}, -1.0),
        (enp.argmin, np.zeros((0, 3), np.float32), {"axis": 1}, np.zeros((0,), np.int32)),
    ],
)
def test_empty_extrema_with_initial(fn, x, kwargs, expected):
    out = fn(enp.asarray(x), **kwargs)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.asarray(expected, x.dtype if fn is not enp.argmin else np.int32).dtype


@pytest.mark.parametrize(
    "fn,shape,message",
    [
        (enp.argmax, (0,), "attempt to get argmax of an empty sequence"),
        (enp.argmin, (0, 3), "attempt to get argmin of an empty sequence"),
        (enp.max, (0,), "zero-size array to reduction operation max which has no identity"),
    ],
)
def test_empty_extrema_without_identity_raise(fn, shape, message):
    with pytest.raises(ValueError, match=message):
        fn(enp.zeros(shape), axis=0)


# --------------------------------------------------------------------------------------------
# Complex operands: both parts count, and operations without a complex meaning refuse them.

_C = np.array([1 + 0j, np.inf + 0j, complex(np.nan, 1), complex(1, -np.inf)], np.complex64)


def test_isinf_isfinite_of_complex_look_at_both_parts():
    np.testing.assert_array_equal(np.asarray(enp.isinf(_C)), [False, True, False, True])
    np.testing.assert_array_equal(np.asarray(enp.isfinite(_C)), [True, False, False, False])
    np.testing.assert_array_equal(np.asarray(enp.isnan(_C)), [False, False, True, False])


def test_round_of_complex_rounds_each_part():
    c = np.array([1.66 + 2.44j, -0.5 + 1.5j], np.complex64)
    np.testing.assert_allclose(np.asarray(enp.round(c)), np.round(c))
    np.testing.assert_allclose(np.asarray(enp.round(c, 1)), np.round(c, 1), rtol=1e-6)
    with pytest.raises(ValueError, match="signbit.*complex64"):
        enp.signbit(c)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "cbrt", "is_finite"])
def test_lax_real_only_functions_refuse_complex_before_the_compiler(name):
    with pytest.raises(
        EmberTypeError,
        match="needs (real floating-point|ordered \\(not complex\\)) operands, got c64",
    ):
        getattr(ember.lax, name)(_C)


# Ordering complex numbers: NumPy's (and JAX's) lexicographic order in ember.numpy, refused
# by lax, and never left to XLA (whose CPU max/min/compare do not follow it, and whose
# remainder crashes on complex operands).
_CX = np.array([1 + 0j, 2 + 1j, 2 + 1j, 3 - 1j, 1 + 2j], np.complex64)
_CY = np.array([1 + 0j, 2 + 0j, 2 + 2j, 3 + 0j, 1 + 3j], np.complex64)


@pytest.mark.parametrize(
    "name", ["maximum", "minimum", "less", "less_equal", "greater", "greater_equal"]
)
def test_complex_comparisons_are_lexicographic_as_in_numpy(name):
    got = getattr(enp, name)(_CX, _CY)
    np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(_CX, _CY))
    got = ember.jit(getattr(enp, name))(_CX, np.complex64(2 + 0.5j))
    np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(_CX, np.complex64(2 + 0.5j)))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_max_and_min_reductions_are_lexicographic(axis):
    c = np.array([[1 + 0j, 2 + 1j], [2 + 3j, 2 - 1j], [-1 + 9j, 0j]], np.complex64)
    np.testing.assert_array_equal(np.asarray(enp.max(c, axis=axis)), np.max(c, axis=axis))
    np.testing.assert_array_equal(np.asarray(enp.min(c, axis=axis)), np.min(c, axis=axis))


@pytest.mark.parametrize(
    "use",
    [
        lambda: ember.lax.lt(_CX, _CY),
        lambda: ember.lax.rem(_CX, _CY),
        lambda: enp.fmod(_CX, _CY),
        lambda: enp.remainder(_CX, _CY),
        lambda: enp.argmax(_CX),
        lambda: enp.copysign(_CX, 1.0),
        lambda: enp.heaviside(_CX, 0.5),
    ],
)
def test_operations_without_a_complex_meaning_refuse_it(use):
    with pytest.raises(EmberTypeError, match="complex|c64"):
        use()
