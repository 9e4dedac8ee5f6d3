"""ember.numpy's ufunc objects and frompyfunc, checked against NumPy's ufunc methods (and JAX's
answers where JAX differs from NumPy), eagerly and under jit/vmap/grad."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

rng = np.random.default_rng(3)
INTS = rng.integers(1, 50, size=(3, 4, 5)).astype(np.int32)
FLOATS = rng.normal(size=(3, 4, 5)).astype(np.float32)
BOOLS = rng.random((3, 4, 5)) > 0.4
MASK = rng.random((3, 4, 5)) > 0.3

# (name, operand): every ufunc object JAX 0.10.2 makes, with an operand of a dtype it takes.
BINARY = [
    ("add", INTS),
    ("subtract", INTS),
    ("multiply", (INTS % 7 == 0).astype(np.int32) + 1),  # small products: no overflow
    ("maximum", FLOATS),
    ("minimum", FLOATS),
    ("logaddexp", FLOATS),
    ("logaddexp2", FLOATS),
    ("bitwise_and", INTS),
    ("bitwise_or", INTS),
    ("bitwise_xor", INTS),
    ("logical_and", BOOLS),
    ("logical_or", BOOLS),
    ("logical_xor", BOOLS),
]
ASSOCIATIVE = [(n, a) for n, a in BINARY if n != "subtract"]


def _close(actual, expected):
    """Equal values, and the same kind of dtype (NumPy's 64-bit results are ember's 32-bit)."""
    assert np.asarray(actual).dtype.kind == np.asarray(expected).dtype.kind
    assert actual.shape == np.shape(expected)
    assert_close(actual, expected, rtol=2e-5, atol=1e-5)


def test_ufunc_instances_and_attributes():
    names = [n for n, _ in BINARY] + ["negative"]
    for name in names:
        u = getattr(enp, name)
        assert isinstance(u, enp.ufunc)
        assert u.__name__ == name
        assert repr(u) == f"<enp.ufunc '{name}'>"
        assert (u.nin, u.nout, u.nargs) == ((1, 1, 1) if name == "negative" else (2, 1, 2))
    identities = {
        "add": 0, "multiply": 1, "bitwise_and": -1, "bitwise_or": 0, "bitwise_xor": 0,
        "logical_and": True, "logical_or": False, "logical_xor": False,
        "logaddexp": -np.inf, "logaddexp2": -np.inf,
        "subtract": None, "maximum": None, "minimum": None, "negative": None,
    }  # fmt: skip
    for name, identity in identities.items():
        assert getattr(enp, name).identity == identity

    def plus(a, b):
        return a + b

    assert enp.frompyfunc(plus, 2, 1) == enp.frompyfunc(plus, 2, 1)
    assert hash(enp.frompyfunc(plus, 2, 1)) == hash(enp.frompyfunc(plus, 2, 1))
    assert enp.frompyfunc(plus, 2, 1) != enp.frompyfunc(plus, 2, 1, identity=0)
    assert enp.add != enp.subtract
    # Functions JAX does not make ufuncs of stay plain functions.
    assert not isinstance(enp.divide, enp.ufunc)


# --------------------------------------------------------------------------------------------
# reduce


@pytest.mark.parametrize("name, a", BINARY)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_reduce_matches_numpy(name, a, axis):
    expected = getattr(np, name).reduce(a, axis=axis)
    _close(getattr(enp, name).reduce(a, axis=axis), expected)
    kept = getattr(np, name).reduce(a, axis=axis, keepdims=True)
    _close(getattr(enp, name).reduce(a, axis=axis, keepdims=True), kept)


@pytest.mark.parametrize("name, a", ASSOCIATIVE)
@pytest.mark.parametrize("axis", [None, (0, 2)])
def test_reduce_several_axes(name, a, axis):
    expected = getattr(np, name).reduce(a, axis=axis, keepdims=True)
    _close(getattr(enp, name).reduce(a, axis=axis, keepdims=True), expected)


@pytest.mark.parametrize(
    "name, a, initial",
    [("add", INTS, 7), ("multiply", (INTS % 7 == 0).astype(np.int32) + 1, 2),
     ("maximum", FLOATS, 0.5), ("minimum", FLOATS, -0.5), ("bitwise_or", INTS, 64),
     ("bitwise_xor", INTS, 3),
     ("logical_and", BOOLS, True), ("logical_or", BOOLS, False), ("logaddexp", FLOATS, 1.0),
     ("subtract", INTS, 100)],
)  # fmt: skip
def test_reduce_where_and_initial(name, a, initial):
    u, nu = getattr(enp, name), getattr(np, name)
    _close(u.reduce(a, axis=1, initial=initial), nu.reduce(a, axis=1, initial=initial))
    expected = nu.reduce(a, axis=1, initial=initial, where=MASK)
    _close(u.reduce(a, axis=1, initial=initial, where=MASK), expected)
    jitted = ember.jit(lambda x, m: u.reduce(x, axis=1, initial=initial, where=m))
    _close(jitted(a, MASK), expected)


@pytest.mark.parametrize("name", ["add", "bitwise_or", "logical_and", "logaddexp"])
def test_reduce_where_uses_the_identity(name):
    a = dict(BINARY)[name]
    expected = getattr(np, name).reduce(a, axis=2, where=MASK, keepdims=True)
    _close(getattr(enp, name).reduce(a, axis=2, where=MASK, keepdims=True), expected)


def test_reduce_dtype_and_empty():
    a = np.arange(1, 7, dtype=np.int8)
    # JAX's answers: add.reduce promotes small integers as sum does; the others keep int8.
    assert np.asarray(enp.add.reduce(a)).dtype == np.int32
    assert np.asarray(enp.bitwise_or.reduce(a)).dtype == np.int8
    assert np.asarray(enp.maximum.reduce(a)).dtype == np.int8
    assert_close(enp.add.reduce(a, dtype=np.float32), np.float32(21))
    assert np.asarray(enp.bitwise_or.reduce(a, dtype=np.int16)).dtype == np.int16
    empty = np.zeros((0, 3), np.float32)
    assert_close(enp.logaddexp.reduce(empty), np.full(3, -np.inf, np.float32))
    assert_close(enp.add.reduce(empty), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="no identity"):
        enp.maximum.reduce(empty)
    with pytest.raises(ValueError, match="no identity"):
        enp.subtract.reduce(empty)


def test_reduce_errors():
    with pytest.raises(NotImplementedError, match="out argument of add.reduce"):
        enp.add.reduce(INTS, out=np.zeros((4, 5), np.int32))
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        enp.maximum.reduce(FLOATS, where=MASK)
    with pytest.raises(ValueError, match="dtype=bool"):
        enp.add.reduce(INTS, where=MASK.astype(np.int32))
    with pytest.raises(ValueError, match="only supported for binary ufuncs"):
        enp.negative.reduce(FLOATS)
    with pytest.raises(ValueError, match="not reorderable"):
        enp.subtract.reduce(INTS, axis=(0, 1))


def test_reduce_non_reorderable_over_all_axes():
    # JAX's answer: axis=None folds the flattened array in order, 0 - 1 - 2 - 3 - 4 - 5.
    assert_close(enp.subtract.reduce(np.arange(6).reshape(2, 3), axis=None), -15)


# --------------------------------------------------------------------------------------------
# accumulate


@pytest.mark.parametrize("name, a", BINARY)
@pytest.mark.parametrize("axis", [0, 2])
def test_accumulate_matches_numpy(name, a, axis):
    _close(getattr(enp, name).accumulate(a, axis=axis), getattr(np, name).accumulate(a, axis))


def test_accumulate_dtype_axis_and_errors():
    a = np.arange(1, 7, dtype=np.int8)
    # JAX's answers: accumulate keeps int8 (wrapping on overflow, as NumPy does).
    assert_close(enp.multiply.accumulate(a), np.array([1, 2, 6, 24, 120, -48], np.int8))
    assert_close(enp.bitwise_or.accumulate(a), np.array([1, 3, 3, 7, 7, 7], np.int8))
    assert_close(enp.subtract.accumulate(a, dtype=np.float32), np.subtract.accumulate(a, 0, "f4"))
    # JAX's add.accumulate takes axis=None, as cumsum does: the flattened array.
    assert_close(enp.add.accumulate(INTS[0], axis=None), np.cumsum(INTS[0]))
    assert enp.add.accumulate(np.zeros((0, 2), np.float32)).shape == (0, 2)
    with pytest.raises(NotImplementedError, match="out argument of add.accumulate"):
        enp.add.accumulate(INTS, out=np.zeros_like(INTS))
    with pytest.raises(ValueError, match="multiple axes"):
        enp.add.accumulate(INTS, axis=(0, 1))
    with pytest.raises(ValueError, match="only supported for binary ufuncs"):
        enp.negative.accumulate(FLOATS)
    with pytest.raises(ValueError, match="out of bounds for array of dimension 0"):
        enp.bitwise_or.accumulate(np.int32(5))


# --------------------------------------------------------------------------------------------
# at


def _numpy_at(name, a, indices, *b):
    a = a.copy()
    getattr(np, name).at(a, indices, *b)
    return a


AT_CASES = [
    (np.array([0, 2, 0, 0]), None),
    (np.array([[1], [3], [1]]), np.array([1.5, -2.0, 3.0, 0.5, 1.0])),  # broadcast values
    ((np.array([0, 0, 2]), np.array([1, 1, 3])), np.array([1.0, 2.0, 3.0])),
    ((slice(None), np.array([1, 1, 3])), 2.0),
    ((np.array([0, 0]), slice(1, 3)), np.array([[1.0, 2.0], [3.0, 4.0]])),
    ((Ellipsis, np.array([4, 4])), np.array([0.25, 0.75])),
    (2, 4.0),
    (slice(1, 3), 0.5),
]


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "logaddexp", "bitwise_or"])  # fmt: skip
@pytest.mark.parametrize("case", range(len(AT_CASES)))
def test_at_matches_numpy(name, case):
    indices, values = AT_CASES[case]
    a = FLOATS[0]
    if name == "bitwise_or":
        a = INTS[0]
        values = 6 if values is None else np.asarray(values).astype(np.int32) + 8
    elif values is None:
        values = 1.25
    expected = _numpy_at(name, a, indices, values)
    _close(getattr(enp, name).at(a, indices, values, inplace=False), expected)


def test_at_unary_bool_and_errors():
    a = np.arange(5.0, dtype=np.float32)
    _close(enp.negative.at(a, np.array([0, 1, 1, 3]), inplace=False), np.array([0, 1, 2, -3, 4.0]))
    # JAX's answer: adding to booleans is a logical or, repeated indices included.
    b = np.array([True, False, False])
    assert_close(enp.add.at(b, np.array([1, 1]), True, inplace=False), [True, True, False])
    with pytest.raises(NotImplementedError, match="inplace=False"):
        enp.add.at(a, 0, 1.0)
    with pytest.raises(ValueError, match="value operand"):
        enp.add.at(a, 0, inplace=False)
    with pytest.raises(ValueError, match="value operand"):
        enp.negative.at(a, 0, 1.0, inplace=False)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_extremum_at_nan_and_promotion(name):
    a = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
    values = np.array([np.nan, 5.0, -1.0, 2.0], np.float32)
    with np.errstate(invalid="ignore"):
        expected = _numpy_at(name, a, [0, 0, 2, 1], values)
    assert_close(getattr(enp, name).at(a, np.array([0, 0, 2, 1]), values, inplace=False), expected)
    # JAX's answer: integers updated with floats are promoted, not truncated.
    promoted = getattr(enp, name).at(np.arange(4), np.array([0, 0]), np.array([5.5, -2.5]),
                                     inplace=False)  # fmt: skip
    assert promoted.dtype == np.float32
    assert_close(promoted, [5.5 if name == "maximum" else -2.5, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("name", ["add", "logaddexp"])
def test_at_with_batched_indices(name):
    rows = np.array([[0, 0, 1], [2, 3, 3]])
    batched = ember.vmap(lambda i: getattr(enp, name).at(FLOATS[0, 0], i, 0.5, inplace=False))
    expected = [_numpy_at(name, FLOATS[0, 0], r, 0.5) for r in rows]
    assert_close(batched(rows), np.stack(expected))


def test_at_under_transforms():
    idx = np.array([0, 0, 2])
    grad = ember.grad(lambda x: enp.multiply.at(x, idx, 2.0, inplace=False).sum())
    assert_close(grad(np.arange(1.0, 4.0, dtype=np.float32)), [4.0, 1.0, 2.0])
    batched = ember.vmap(lambda x: enp.maximum.at(x, idx, 1.5, inplace=False))(FLOATS[0])
    assert_close(batched, np.stack([_numpy_at("maximum", r, idx, 1.5) for r in FLOATS[0]]))
    jitted = ember.jit(lambda x, i: enp.logaddexp.at(x, i, 0.5, inplace=False))
    assert_close(jitted(FLOATS[0, 0], idx), _numpy_at("logaddexp", FLOATS[0, 0], idx, 0.5))


# --------------------------------------------------------------------------------------------
# reduceat


@pytest.mark.parametrize("name, a", BINARY)
@pytest.mark.parametrize("axis", [0, 2])
def test_reduceat_matches_numpy(name, a, axis):
    # Increasing, repeated and decreasing indices: a decreasing pair yields a[indices[i]].
    indices = np.array([0, 2, 2, 1]) if axis == 0 else np.array([0, 3, 1, 4])
    expected = getattr(np, name).reduceat(a, indices, axis=axis)
    _close(getattr(enp, name).reduceat(a, indices, axis=axis), expected)


def test_reduceat_under_transforms_and_errors():
    x = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    batched = ember.vmap(lambda r: enp.add.reduceat(r, np.array([0, 2])))(x)
    assert_close(batched, [[1.0, 5.0], [9.0, 13.0]])
    grad = ember.grad(lambda r: enp.multiply.reduceat(r, np.array([0, 2])).sum())
    assert_close(grad(np.array([1.0, 2.0, 3.0, 4.0], np.float32)), [2.0, 1.0, 4.0, 3.0])
    with pytest.raises(NotImplementedError, match="out argument of add.reduceat"):
        enp.add.reduceat(x, np.array([0]), out=np.zeros(1))
    with pytest.raises(ValueError, match="one-dimensional"):
        enp.add.reduceat(x, np.array([[0]]))
    with pytest.raises(ValueError, match="single integer axis"):
        enp.add.reduceat(x, np.array([0]), axis=None)
    for bad in ([0, 4], [-1, 2]):
        with pytest.raises(IndexError, match=f"index {bad[0] or bad[1]} out-of-bounds"):
            enp.bitwise_or.reduceat(np.arange(4), np.array(bad))


# --------------------------------------------------------------------------------------------
# outer


@pytest.mark.parametrize("name, a", BINARY)
def test_outer_matches_numpy(name, a):
    A, B = a[0, :2], a[1, 0]
    result = getattr(enp, name).outer(A, B)
    assert result.shape == (2, 5, 5)
    _close(result, getattr(np, name).outer(A, B))


def test_outer_errors_and_scalars():
    assert_close(enp.multiply.outer(3, np.arange(3)), [0, 3, 6])
    with pytest.raises(ValueError, match="only supported for binary ufuncs"):
        enp.negative.outer(FLOATS, FLOATS)


# --------------------------------------------------------------------------------------------
# Plain calls, jit/vmap/grad of the methods


def test_calls_and_their_errors():
    _close(enp.add(INTS, 1), INTS + 1)
    with pytest.raises(NotImplementedError, match="'out' argument"):
        enp.add(INTS, 1, out=INTS)
    with pytest.raises(TypeError, match="takes 2 positional"):
        enp.add(INTS)


def test_methods_under_jit_vmap_grad():
    def f(x):
        return enp.logaddexp.reduce(x, axis=1).sum() + enp.maximum.accumulate(x, axis=0).sum()

    x = FLOATS[0]
    expected = np.logaddexp.reduce(x, axis=1).sum() + np.maximum.accumulate(x, axis=0).sum()
    assert_close(ember.jit(f)(x), expected, rtol=1e-5)
    g = ember.grad(f)(x)
    soft = np.exp(x - np.logaddexp.reduce(x, axis=1, keepdims=True))
    running = np.maximum.accumulate(x, axis=0)
    argmax_counts = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            argmax_counts[np.argmax(x[: i + 1, j]), j] += 1
    assert_close(g, soft + argmax_counts, rtol=1e-5)
    assert running.shape == x.shape
    batched = ember.vmap(lambda r: enp.bitwise_xor.reduce(r, axis=0))(INTS)
    assert_close(batched, np.bitwise_xor.reduce(INTS, axis=1))


# --------------------------------------------------------------------------------------------
# frompyfunc and user-made ufuncs


def test_frompyfunc():
    def affine(a, b):
        return a * b + 1

    u = enp.frompyfunc(affine, 2, 1)
    reference = np.frompyfunc(affine, 2, 1)
    a = INTS[0] % 5
    assert (u.nin, u.nout, u.nargs, u.identity, u.__name__) == (2, 1, 2, None, "affine")
    _close(u(a, 2), a * 2 + 1)
    _close(u.reduce(a, axis=1), reference.reduce(a, axis=1).astype(np.int32))
    _close(u.accumulate(a, axis=0), reference.accumulate(a, axis=0).astype(np.int32))
    _close(u.outer(a[0], a[1]), reference.outer(a[0], a[1]).astype(np.int32))
    _close(
        u.reduceat(a, np.array([0, 2]), axis=1),
        reference.reduceat(a, [0, 2], axis=1).astype(np.int32),
    )
    _close(u.at(a, np.array([0, 0]), 3, inplace=False), _numpy_at_object(reference, a, [0, 0], 3))
    # axis=None folds the flattened array in order (JAX's answer); a tuple is refused.
    _close(u.reduce(a, axis=None), np.asarray(reference.reduce(a.ravel())).astype(np.int32))
    with pytest.raises(ValueError, match="not reorderable"):
        u.reduce(a, axis=(0, 1))
    with pytest.raises(ValueError, match="specify 'initial'"):
        u.reduce(a, where=a > 1)


def _numpy_at_object(reference, a, indices, b):
    out = a.astype(object)
    reference.at(out, indices, b)
    return out.astype(a.dtype)


def test_frompyfunc_identity_and_outputs():
    add = enp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    assert add.identity == 0
    _close(add.reduce(np.zeros((0, 3), np.int32)), np.zeros(3, np.int32))
    _close(
        add.reduce(INTS, axis=1, where=MASK[:, :, 0:1]),
        np.add.reduce(INTS, axis=1, where=MASK[:, :, 0:1]),
    )
    divmod_ = enp.frompyfunc(lambda a, b: (a // b, a % b), 2, 2)
    q, r = divmod_(np.arange(7), 3)
    assert_close(q, np.arange(7) // 3)
    assert_close(r, np.arange(7) % 3)
    with pytest.raises(ValueError, match="single value"):
        divmod_.reduce(np.arange(7))
    # A ufunc with a hand-written call and reduce, as JAX's constructor takes them.
    custom = enp.ufunc(lambda a, b: a + b, 2, 1, name="plus", identity=0,
                       reduce=lambda a, **kw: enp.sum(a, axis=kw["axis"]))  # fmt: skip
    assert custom.__name__ == "plus"
    _close(custom.reduce(INTS, axis=2), INTS.sum(axis=2))


@pytest.mark.parametrize("name", ["bitwise_or", "add", "subtract", "maximum"])
def test_reduce_batched_where_and_initial(name):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    mask, initial = x % 3 != 1, np.array([1, 2, 4], np.int32)
    reduce = ember.jit(ember.vmap(lambda a, w, i: getattr(enp, name).reduce(a, where=w, initial=i)))
    expected = [
        getattr(np, name).reduce(a, where=w, initial=i) for a, w, i in zip(x, mask, initial)
    ]
    assert_close(reduce(x, mask, initial), np.array(expected))


def test_grad_of_an_in_order_reduce():
    grad = ember.grad(lambda a: enp.subtract.reduce(a, initial=1.0))
    assert_close(grad(np.arange(3.0, dtype=np.float32)), [-1.0, -1.0, -1.0])
