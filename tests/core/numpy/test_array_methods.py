"""Methods and operators of ember arrays that NumPy (and JAX) arrays have, against NumPy's,
eagerly and under jit, with their derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

X = np.array([[3.0, -1.0, 2.0, -0.0], [0.5, 4.0, -2.0, 1.5]], np.float32)

METHODS = {
    "sort": lambda a: a.sort(),
    "sort_axis0": lambda a: a.sort(axis=0),
    "argsort": lambda a: a.argsort(axis=1, stable=True),
    "cumsum": lambda a: a.cumsum(axis=1),
    "cumsum_flat": lambda a: a.cumsum(),
    "cumprod": lambda a: a.cumprod(axis=0),
    "take": lambda a: a.take(np.array([3, 0]), axis=1),
    "repeat": lambda a: a.repeat(2, axis=0),
    "ptp": lambda a: a.ptp(axis=1),
    "conj": lambda a: a.conj(),
    "conjugate": lambda a: a.conjugate(),
    "real": lambda a: a.real,
    "imag": lambda a: a.imag,
    "view_int32": lambda a: a.view(np.int32),
    "view_uint8": lambda a: a.view(np.uint8),
    "view_uint16_back": lambda a: a.view(np.uint16).view(np.float32),
    "view_int64": lambda a: a.view(np.uint8).view(np.int16),
    "searchsorted": lambda a: a[0].sort().searchsorted(np.float32(1.0)),
}
# NumPy's sort sorts in place and returns None, and NumPy 2 has no ptp method: their
# functions give the answers.
NUMPY_FUNCTIONS = {
    "sort": lambda a: np.sort(a),
    "sort_axis0": lambda a: np.sort(a, axis=0),
    "ptp": lambda a: np.ptp(a, axis=1),
    "searchsorted": lambda a: np.sort(a[0]).searchsorted(np.float32(1.0)),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods_match_numpy(name):
    method = METHODS[name]
    want = np.asarray(NUMPY_FUNCTIONS.get(name, method)(X.copy()))
    got = method(enp.asarray(X))
    np.testing.assert_array_equal(np.asarray(got), want)
    # indices come in the default integer (int32 without x64), as in JAX
    expected_dtype = np.int32 if want.dtype == np.int64 else want.dtype
    assert np.asarray(got).dtype == expected_dtype
    np.testing.assert_array_equal(np.asarray(ember.jit(method)(X)), want)


def test_imag_of_real_values_is_positive_zero():
    got = np.asarray(enp.asarray(X).imag)
    assert not np.signbit(got).any()  # x * 0 would give -0.0 for negative x


def test_complex_parts_and_their_derivatives():
    z = (X + 1j * X[::-1]).astype(np.complex64)
    assert_close(enp.asarray(z).real, z.real)
    assert_close(enp.asarray(z).imag, z.imag)
    assert_close(enp.asarray(z).conj(), z.conj())
    grad = ember.grad(lambda a: (a.cumsum(axis=1) * a.real).sum())(X)
    cumulative = np.cumsum(X, axis=1)
    rows = np.cumsum(X[:, ::-1], axis=1)[:, ::-1]  # d/dx_j sum_k x_k c_k = c_j + sum_{k>=j} x_k
    assert_close(grad, cumulative + rows, rtol=1e-5)


def test_operators():
    a = enp.asarray(X)
    quotient, remainder = divmod(a, 1.5)
    want_q, want_r = divmod(X, np.float32(1.5))
    assert_close(quotient, want_q)
    assert_close(remainder, want_r, atol=1e-6)
    rq, rr = divmod(7.0, enp.asarray([2.0, -3.0]))
    assert_close(rq, [3.0, -3.0])
    assert_close(rr, [1.0, -2.0])
    rounded = round(a)
    assert rounded.dtype == np.int32
    assert_close(rounded, np.round(X).astype(np.int32))
    assert_close(round(a, 1), np.round(X, 1))
    assert 4.0 in a and 5.0 not in a
    with pytest.raises(ember.errors.ConcretizationTypeError):
        ember.jit(lambda v: 4.0 in v)(X)


def test_host_helpers():
    a = enp.asarray(X)
    assert a.tobytes() == X.tobytes()
    assert_close(a.addressable_data(0), X)
    rows, cols = a.nonzero()
    want_rows, want_cols = X.nonzero()
    assert_close(rows, want_rows)
    assert_close(cols, want_cols)


def test_view_errors():
    with pytest.raises(ValueError, match="does not divide"):
        enp.asarray(np.ones(3, np.uint8)).view(np.float32)
    with pytest.raises(ValueError, match="0-d"):
        enp.asarray(np.float32(1.0)).view(np.uint8)
    with pytest.raises(NotImplementedError, match="type"):
        enp.asarray(X).view(type=np.ndarray)
