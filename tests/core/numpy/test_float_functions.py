"""Floating-point functions, windows, sequences, polynomials, products, bit packing and
numerical calculus of ember.numpy against NumPy (and SciPy), with special values, and
under jit, vmap and grad."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import ember
import ember.numpy as enp
from ember.test_util import check_grads
from tests.core.util import assert_close, assert_matches_numpy

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 5)).astype(np.float32)
Y = rng.normal(size=(3, 5)).astype(np.float32)
Z = (rng.normal(size=(4,)) + 1j * rng.normal(size=(4,))).astype(np.complex64)
INTS = np.array([12, -8, 0, 0, 7, 45, -36], np.int32)
INTS2 = np.array([18, 12, 5, 0, 0, -60, 24], np.int32)
SPECIAL = np.array(
    [0.0, -0.0, 1.5, -2.75, 1e-40, -3e-42, 3e38, np.inf, -np.inf, np.nan], np.float32
)
SPECIAL64 = np.array([0.0, -0.0, 1.5, -1e-310, 5e-324, 1e308, np.inf, -np.inf, np.nan])
NANS = np.array([np.nan, 1.0, np.nan, -0.0, 5.0, 3.0, -np.inf], np.float32)
NANS2 = np.array([1.0, np.nan, np.nan, 2.0, -0.0, -np.inf, 2.0], np.float32)
BITS = rng.integers(0, 2, size=(3, 11))
BYTES = rng.integers(0, 256, size=(2, 3)).astype(np.uint8)
COORDS = np.cumsum(rng.uniform(0.5, 1.5, 5))
PHASES = np.cumsum(rng.normal(size=(3, 10)) * 3, axis=1)

ELEMENTWISE = {
    "angle": lambda m: m.angle(Z),
    "angle_deg": lambda m: m.angle(np.array([1, -1, 0]), deg=True),
    "divmod_int": lambda m: m.divmod(INTS, np.array([5, -3, 2, 7, -1, 4, 5], np.int32)),
    # Zero quotients' signs differ from NumPy's (see test_float_floor_divide_matches_jax).
    # (+ 0.0 makes every zero +0: JAX's zero quotients keep the sign of (x - x % y) / y where
    # NumPy's are +0; test_float_floor_divide_matches_jax pins those.)
    "divmod_float": lambda m: tuple(np.asarray(part) + 0.0 for part in m.divmod(X, Y)),
    "fabs": lambda m: m.fabs(np.array([-3, 0, 2])),
    "float_power": lambda m: m.float_power(np.abs(X), Y),
    "float_power_int": lambda m: m.float_power(np.array([2, 3]), 3),
    "fmax": lambda m: m.fmax(NANS, NANS2),
    "fmin": lambda m: m.fmin(NANS, NANS2),
    "fmax_int": lambda m: m.fmax(INTS, INTS2),
    "frexp": lambda m: m.frexp(SPECIAL),
    "frexp_int": lambda m: m.frexp(np.array([3, 0, -16])),
    "modf": lambda m: m.modf(np.concatenate([SPECIAL, [-3.0, 4.0]]).astype(np.float32)),
    "spacing": lambda m: m.spacing(SPECIAL),
    "nan_to_num": lambda m: m.nan_to_num(SPECIAL),
    "nan_to_num_values": lambda m: m.nan_to_num(SPECIAL, nan=-1.0, posinf=9.0, neginf=-9.0),
    "nan_to_num_complex": lambda m: m.nan_to_num(
        np.array([complex(np.nan, np.inf), 1 - 1j], np.complex64)
    ),
    "nan_to_num_int": lambda m: m.nan_to_num(INTS),
    "gcd": lambda m: m.gcd(INTS, INTS2),
    "gcd_broadcast": lambda m: m.gcd(INTS, np.int32(6)),
    "lcm": lambda m: m.lcm(INTS, INTS2),
    "isposinf": lambda m: m.isposinf(SPECIAL),
    "isneginf": lambda m: m.isneginf(SPECIAL),
    "isneginf_int": lambda m: m.isneginf(INTS),
    "iscomplex": lambda m: m.iscomplex(np.array([1 + 0j, 1j, 2])),
    "isreal": lambda m: m.isreal(np.array([1 + 0j, 1j, 2])),
    "isreal_float": lambda m: m.isreal(X),
    "bitwise_count": lambda m: m.bitwise_count(np.array([-1, 3, 0, 2**31 - 1], np.int32)),
    "bitwise_count_u8": lambda m: m.bitwise_count(BYTES),
    "bitwise_count_bool": lambda m: m.bitwise_count(np.array([True, False])),
}


def _compare(got, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare(g, e, rtol, atol)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    if (
        np.asarray(expected).dtype.kind == "f" and got.dtype.kind == "f"
    ):  # -0.0 and 0.0 are distinct results here
        zeros = np.asarray(expected) == 0
        np.testing.assert_array_equal(
            np.signbit(got[zeros]), np.signbit(np.asarray(expected)[zeros])
        )


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_matches_numpy(name):
    with np.errstate(all="ignore"):
        expected = ELEMENTWISE[name](np)
    _compare(ELEMENTWISE[name](enp), expected)


def test_frexp_and_spacing_of_float64_subnormals():
    with ember.config.option("enable_x64", True):
        mantissa, exponent = enp.frexp(SPECIAL64)
        expected_mantissa, expected_exponent = np.frexp(SPECIAL64)
        np.testing.assert_array_equal(np.asarray(mantissa), expected_mantissa)
        np.testing.assert_array_equal(np.asarray(exponent), expected_exponent)
        np.testing.assert_array_equal(np.asarray(enp.spacing(SPECIAL64)), np.spacing(SPECIAL64))


def test_ldexp_special_values_and_rounding():
    x = np.array([1e-30, 3e38, 1.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 0.75, 1e-40], np.float32)
    e = np.array([-100, 1, -120, 4, 900, 2, -3, 1, 129, 30], np.int32)
    with np.errstate(all="ignore"):
        _compare(enp.ldexp(x, e), np.ldexp(x, e))
    _compare(enp.ldexp(np.array([1, 3]), np.array([2, -1])), np.ldexp([1.0, 3.0], [2, -1]))
    with pytest.raises(TypeError, match="integer exponent"):
        enp.ldexp(1.0, 2.0)


@pytest.mark.parametrize("dtype,lowest", [(np.float16, -30), (np.float32, -160)])
def test_ldexp_rounds_once_into_subnormals(dtype, lowest):
    generator = np.random.default_rng(3)
    x = np.concatenate([generator.normal(size=200), [1.5, 2.5, 0.75, -3.5]]).astype(dtype)
    e = generator.integers(lowest, -lowest // 4, size=x.size).astype(np.int32)
    # Halfway between subnormals (and zero): ties go to the even neighbour.
    e[-4:] = np.log2(np.finfo(dtype).smallest_subnormal)
    with np.errstate(all="ignore"):
        expected = np.ldexp(x, e)
    got = np.asarray(enp.ldexp(x, e))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_ldexp_inverts_frexp():
    values = rng.normal(size=50).astype(np.float32) * np.float32(1e20)
    mantissa, exponent = enp.frexp(values)
    np.testing.assert_array_equal(np.asarray(enp.ldexp(mantissa, exponent)), values)


def test_i0_against_scipy_and_its_derivative():
    x = np.array([0.0, 0.5, -1.0, 5.0, 19.9, 20.1, -30.0, 80.0], np.float32)
    assert_close(enp.i0(x), scipy.special.i0(x.astype(np.float64)), rtol=2e-6)
    derivative = ember.vmap(ember.grad(enp.i0))(x)
    assert_close(derivative, scipy.special.i1(x.astype(np.float64)), rtol=2e-6)
    assert_close(
        ember.grad(ember.grad(enp.i0))(1.5),
        0.5 * (scipy.special.iv(0, 1.5) + scipy.special.iv(2, 1.5)),
        rtol=1e-5,
    )
    with ember.config.option("enable_x64", True):
        wide = np.array([0.3, 7.0, 25.0, 300.0])
        assert_close(enp.i0(wide), scipy.special.i0(wide), rtol=1e-13, atol=0)
        check_grads(ember.jit(enp.i0), (wide[1:3],), order=1)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: enp.fmax(x, y),
        lambda x, y: enp.float_power(enp.abs(x) + 1, y),
        lambda x, y: enp.ldexp(x, 3) * y,
        lambda x, y: enp.angle(x + 1j * y),
        lambda x, y: enp.nan_to_num(x / y),
    ],
    ids=["fmax", "float_power", "ldexp", "angle", "nan_to_num"],
)
def test_elementwise_gradients(fn):
    x, y = X[0].astype(np.float64), Y[0].astype(np.float64) + 3
    with ember.config.option("enable_x64", True):
        check_grads(ember.jit(fn), (x, y), order=1)


def test_elementwise_under_jit_and_vmap():
    jitted = ember.jit(lambda a, b: (enp.frexp(a), enp.gcd(b, b + 6), enp.spacing(a)))
    (mantissa, exponent), divisors, spacing = jitted(SPECIAL, INTS)
    _compare((mantissa, exponent), np.frexp(SPECIAL))
    _compare(divisors, np.gcd(INTS, INTS + 6))
    _compare(spacing, np.spacing(SPECIAL))
    pairs = ember.vmap(enp.lcm)(INTS, INTS2)
    _compare(pairs, np.lcm(INTS, INTS2))
    rows = ember.vmap(lambda r: enp.modf(r)[0])(X)
    _compare(rows, np.modf(X)[0])


def test_elementwise_errors():
    with pytest.raises(TypeError, match="complex"):
        enp.fabs(Z)
    with pytest.raises(ValueError, match="integer"):
        enp.gcd(1.0, 2.0)
    with pytest.raises(ValueError, match="complex"):
        enp.isposinf(Z)
    with pytest.raises(TypeError, match="bitwise_count"):
        enp.bitwise_count(X)
    assert enp.iscomplexobj(Z) and enp.iscomplexobj([1j]) and not enp.iscomplexobj(X)
    assert enp.isrealobj(X) and not enp.isrealobj(enp.asarray(Z))


def test_scalar_types_and_constants():
    assert enp.issubdtype(enp.float32, enp.floating)
    assert enp.issubdtype(enp.int8, enp.signedinteger)
    assert enp.issubdtype(enp.uint16, enp.unsignedinteger)
    assert enp.issubdtype(enp.complex64, enp.complexfloating)
    assert enp.issubdtype(enp.float16, enp.inexact) and enp.issubdtype(enp.int32, enp.number)
    assert enp.issubdtype(enp.bool_, enp.generic) and not enp.issubdtype(enp.bool_, enp.number)
    assert (enp.single, enp.double, enp.csingle, enp.cdouble) == (
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
    assert (enp.int_, enp.uint, enp.complex_) == (np.int64, np.uint64, np.complex128)
    assert enp.object_ is np.object_ and enp.character is np.character
    assert enp.flexible is np.flexible
    assert enp.euler_gamma == pytest.approx(np.euler_gamma)


# --------------------------------------------------------------------------------------------
# Windows and sequences


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
def test_windows(name, M):
    _compare(getattr(enp, name)(M), getattr(np, name)(M), atol=1e-6)


@pytest.mark.parametrize("M", [0, 1, 4, 9])
def test_kaiser(M):
    _compare(enp.kaiser(M, 2.5), np.kaiser(M, 2.5), atol=1e-6)


def test_kaiser_follows_a_traced_beta():
    window = ember.jit(lambda beta: enp.kaiser(6, beta))(3.0)
    _compare(window, np.kaiser(6, 3.0), atol=1e-6)
    with ember.config.option("enable_x64", True):
        check_grads(ember.jit(lambda beta: enp.kaiser(5, beta)), (np.float64(2.0),), order=1)


SEQUENCES = {
    "logspace": lambda m: m.logspace(0, 3, 4),
    "logspace_base": lambda m: m.logspace(1, 2, 5, endpoint=False, base=2.0),
    "logspace_array": lambda m: m.logspace(np.array([0.0, 1]), 2, 3, axis=1),
    "geomspace": lambda m: m.geomspace(1, 1000, 4),
    "geomspace_open": lambda m: m.geomspace(2, 32, 4, endpoint=False),
    "geomspace_negative": lambda m: m.geomspace(-1, -1000, 4),
    "geomspace_array": lambda m: m.geomspace(np.array([1.0, 2]), np.array([100.0, 3]), 5, axis=-1),
    "geomspace_complex": lambda m: m.geomspace(1j, 1000j, 4),
    "geomspace_int": lambda m: m.geomspace(1, 1000, 4, dtype=int),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_sequences(name):
    _compare(SEQUENCES[name](enp), SEQUENCES[name](np), rtol=3e-6)


def test_sequences_under_jit_and_grad():
    _compare(ember.jit(lambda s: enp.geomspace(s, 100.0, 3))(1.0), [1.0, 10.0, 100.0])
    with ember.config.option("enable_x64", True):
        check_grads(ember.jit(lambda s: enp.logspace(s, 2.0, 4)), (np.float64(0.5),), order=1)
    with pytest.raises(ValueError, match="zero"):
        enp.geomspace(0, 10)


# --------------------------------------------------------------------------------------------
# Polynomials

POLYNOMIALS = {
    "poly": lambda m: m.poly(np.array([1, 2, -3])),
    "poly_complex": lambda m: m.poly(np.array([1j, -1j])),
    "poly_empty": lambda m: m.poly(np.zeros(0)),
    "polyadd": lambda m: m.polyadd(np.array([1, 2]), np.array([1.0, 1, 1])),
    "polysub": lambda m: m.polysub(np.array([1.0, 1, 1]), np.array([3, 2])),
    "polymul": lambda m: m.polymul(np.array([2.0, 1, 2]), np.array([1, -1])),
    "polydiv_short": lambda m: m.polydiv(np.array([1.0, 2]), np.array([1.0, 1, 3])),
    "polyder": lambda m: m.polyder(np.array([3, 2, 1, 5])),
    "polyder_2": lambda m: m.polyder(np.array([3.0, 2, 1, 5]), 2),
    "polyder_0": lambda m: m.polyder(np.array([3.0, 2, 1]), 0),
    "polyint": lambda m: m.polyint(np.array([3, 2, 1])),
    "polyint_k": lambda m: m.polyint(np.array([3.0, 2, 1]), 2, k=[1, 2]),
    "polyint_scalar_k": lambda m: m.polyint(np.array([3.0, 2, 1]), 3, k=0.5),
}


@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomials(name):
    _compare(POLYNOMIALS[name](enp), POLYNOMIALS[name](np), rtol=1e-5, atol=1e-5)


def test_polydiv_keeps_the_dividend_length():
    u, v = np.array([1.0, 3, 3, 2]), np.array([1.0, 1])
    quotient, remainder = enp.polydiv(u, v)
    expected_q, expected_r = np.polydiv(u, v)
    _compare(quotient, expected_q)
    assert np.asarray(remainder).shape == u.shape
    _compare(np.asarray(remainder)[-1:], expected_r)
    _compare(enp.polydiv(u, v, trim_leading_zeros=True)[1], expected_r)
    _compare(
        enp.polymul(np.array([0.0, 1, 2]), np.array([1, 1]), trim_leading_zeros=True),
        np.polymul([0.0, 1, 2], [1, 1]),
    )
    with pytest.raises(ember.errors.ConcretizationTypeError, match="trim_leading_zeros"):
        ember.jit(lambda a: enp.polymul(a, a, trim_leading_zeros=True))(u)


def test_poly_of_a_matrix():
    matrix = np.array([[1.0, 2], [3, 4]])
    _compare(enp.poly(matrix), np.poly(matrix), rtol=1e-4, atol=1e-4)


FIT_X = np.arange(8.0)
FIT_Y = FIT_X**2 - 3 * FIT_X + np.sin(FIT_X)


@pytest.mark.parametrize(
    "kwargs,columns",
    [
        ({}, False),
        ({}, True),
        ({"w": np.linspace(1, 2, 8)}, False),
        ({"cov": True}, False),
        ({"cov": True}, True),
        ({"cov": "unscaled"}, False),
        ({"full": True}, False),
    ],
    ids=["plain", "columns", "weights", "cov", "cov_columns", "cov_unscaled", "full"],
)
def test_polyfit(kwargs, columns):
    y = np.stack([FIT_Y, 2 - FIT_Y], 1) if columns else FIT_Y
    got, expected = enp.polyfit(FIT_X, y, 2, **kwargs), np.polyfit(FIT_X, y, 2, **kwargs)
    if kwargs.get("full"):
        _compare(got[:2], expected[:2], rtol=1e-3, atol=1e-3)
        assert int(got[2]) == expected[2]
        _compare(got[3], expected[3], rtol=1e-4, atol=1e-4)
    else:
        _compare(got, expected, rtol=1e-3, atol=1e-3)


def test_polynomials_under_transformations():
    jitted = ember.jit(lambda x, y: enp.polyfit(x, y, 2))(FIT_X, FIT_Y)
    _compare(jitted, np.polyfit(FIT_X, FIT_Y, 2), rtol=1e-3, atol=1e-3)
    roots = np.array([1.0, -2.0, 0.5])
    with ember.config.option("enable_x64", True):
        check_grads(ember.jit(enp.poly), (roots,), order=1)
        check_grads(ember.jit(lambda p: enp.polyint(enp.polyder(p), k=1.0)), (roots,), order=1)
        check_grads(
            ember.jit(lambda a, b: enp.polydiv(a, b)[0]),
            (np.array([1.0, 3, 3, 2]), roots[:2]),
            order=1,
        )
    batched = ember.vmap(enp.poly)(np.array([[1.0, 2], [3, 4]]))
    _compare(batched, np.stack([np.poly([1.0, 2]), np.poly([3.0, 4])]))


# --------------------------------------------------------------------------------------------
# Products


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("lengths", [(5, 3), (3, 5), (2, 4), (4, 4)])
def test_correlate(mode, lengths):
    a = rng.normal(size=lengths[0])
    v = rng.normal(size=lengths[1]) + 1j * rng.normal(size=lengths[1])
    _compare(enp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-5, atol=1e-5)


def test_matvec_vecmat_and_batching():
    a = rng.normal(size=(2, 3, 4)).astype(np.float32)
    v = rng.normal(size=(4,)).astype(np.float32)
    _compare(enp.matvec(a, v), np.matvec(a, v), rtol=1e-5, atol=1e-5)
    c = Z[:3]
    _compare(enp.vecmat(c, a[0]), np.vecmat(c, a[0]), rtol=1e-5, atol=1e-5)
    _compare(ember.vmap(enp.matvec)(a, a[:, 0]), np.matvec(a, a[:, 0]), rtol=1e-5, atol=1e-5)
    with ember.config.option("enable_x64", True):
        check_grads(
            ember.jit(enp.vecmat), (v[:3].astype(np.float64), a[0].astype(np.float64)), order=1
        )
    with pytest.raises(ValueError, match="matvec"):
        enp.matvec(v, v)


def test_einsum_path():
    operands = [np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))]
    path, report = enp.einsum_path("ij,jk,kl->il", *operands)
    expected = np.einsum_path("ij,jk,kl->il", *operands, optimize="greedy")
    assert path == list(expected[0][1:])
    assert isinstance(report, str) and "Optimized FLOP count" in report
    result = enp.einsum("ij,jk,kl->il", *operands, optimize=path)
    _compare(result, np.einsum("ij,jk,kl->il", *operands))


# --------------------------------------------------------------------------------------------
# Bit packing


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits(axis, bitorder):
    _compare(
        enp.packbits(BITS, axis=axis, bitorder=bitorder),
        np.packbits(BITS, axis=axis, bitorder=bitorder),
    )


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("count", [None, 3, -3, 30])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_unpackbits(axis, count, bitorder):
    got = enp.unpackbits(BYTES, axis=axis, count=count, bitorder=bitorder)
    _compare(got, np.unpackbits(BYTES, axis=axis, count=count, bitorder=bitorder))


def test_packing_round_trip_under_jit_and_errors():
    packed = ember.jit(lambda b: enp.packbits(b, axis=1))(BITS)
    unpacked = ember.vmap(lambda row: enp.unpackbits(row, count=11))(packed)
    _compare(unpacked, BITS.astype(np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        enp.unpackbits(np.array([5]))
    with pytest.raises(TypeError, match="packbits"):
        enp.packbits(X)


# --------------------------------------------------------------------------------------------
# Calculus

CALCULUS = {
    "gradient": lambda m: m.gradient(X),
    "gradient_spacing": lambda m: m.gradient(X, 2.0),
    "gradient_axis": lambda m: m.gradient(X, axis=1),
    "gradient_coords": lambda m: m.gradient(X, 0.5, COORDS),
    "gradient_int": lambda m: m.gradient(np.array([1, 4, 9, 16])),
    "gradient_edge2": lambda m: m.gradient(X, edge_order=2),
    "gradient_edge2_coords": lambda m: m.gradient(X, 0.5, COORDS, edge_order=2),
    "gradient_edge2_axis": lambda m: m.gradient(X, COORDS, axis=-1, edge_order=2),
    "gradient_edge2_scalar": lambda m: m.gradient(np.array([1.0, 4, 9, 16, 30]), 2.0, edge_order=2),
    "trapezoid": lambda m: m.trapezoid(X),
    "trapezoid_dx": lambda m: m.trapezoid(X, dx=0.3, axis=0),
    "trapezoid_x": lambda m: m.trapezoid(X, COORDS),
    "trapezoid_x_full": lambda m: m.trapezoid(X, np.cumsum(np.abs(X), 0), axis=0),
    "unwrap": lambda m: m.unwrap(PHASES),
    "unwrap_axis": lambda m: m.unwrap(PHASES.T, axis=0, discont=4.0),
    "unwrap_period": lambda m: m.unwrap(np.array([0.0, 7, 14, 3]), period=5),
    "unwrap_half": lambda m: m.unwrap(np.array([0.0, np.pi, 0, -np.pi, 0])),
    "ediff1d": lambda m: m.ediff1d(X),
    "ediff1d_ends": lambda m: m.ediff1d(np.array([1, 4, 9]), to_begin=np.array([5]), to_end=[7, 8]),
}


@pytest.mark.parametrize("name", sorted(CALCULUS))
def test_calculus(name):
    _compare(CALCULUS[name](enp), CALCULUS[name](np), rtol=1e-5, atol=1e-5)


def test_calculus_under_transformations():
    with ember.config.option("enable_x64", True):
        x = X.astype(np.float64)
        check_grads(ember.jit(lambda f: enp.gradient(f, 0.5, COORDS)[1]), (x,), order=1)
        check_grads(ember.jit(lambda f: enp.trapezoid(f, COORDS)), (x,), order=1)
        check_grads(ember.jit(enp.unwrap), (PHASES[0],), order=1)
    _compare(ember.jit(enp.unwrap)(PHASES), np.unwrap(PHASES))
    rows = ember.vmap(lambda r: enp.trapezoid(r, COORDS))(X)
    _compare(rows, np.trapezoid(X, COORDS), rtol=1e-5, atol=1e-5)
    check_grads_edge2 = ember.jit(lambda f: enp.gradient(f, COORDS, axis=1, edge_order=2))
    with ember.config.option("enable_x64", True):
        check_grads(check_grads_edge2, (X.astype(np.float64),), order=1)
    rows = ember.vmap(lambda r: enp.gradient(r, COORDS, edge_order=2))(X)
    _compare(rows, np.gradient(X, COORDS, axis=1, edge_order=2), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="edge_order must be 1 or 2"):
        enp.gradient(X, edge_order=3)
    with pytest.raises(ValueError, match="at least 3"):
        enp.gradient(np.ones((2, 3)), axis=0, edge_order=2)
    with pytest.raises(ValueError, match="at least 2"):
        enp.gradient(np.ones((1, 3)))


# einsum with a label repeated within one operand takes that operand's diagonal first, as
# NumPy does (a trace, a diagonal, or a diagonal contracted with other operands).
_REPEATED = [
    ("iij->j", [(3, 3, 4)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]),
    ("...ii->...i", [(2, 5, 3, 3)]),
    ("ii", [(4, 4)]),
    ("iij", [(3, 3, 2)]),
    ("iii->i", [(3, 3, 3)]),
    ("iijj->ij", [(2, 2, 3, 3)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ii,ij->j", [(3, 3), (3, 5)]),
    ("iji,j->", [(3, 2, 3), (2,)]),
]


@pytest.mark.parametrize("subscripts, shapes", _REPEATED)
def test_einsum_repeated_subscripts_match_numpy(subscripts, shapes):
    rng = np.random.default_rng(0)
    operands = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = np.einsum(subscripts, *operands)
    assert_close(enp.einsum(subscripts, *operands), expected, rtol=1e-5, atol=1e-5)
    jitted = ember.jit(lambda *ops: enp.einsum(subscripts, *ops))
    assert_close(jitted(*operands), expected, rtol=1e-5, atol=1e-5)
    check_grads(lambda *ops: enp.einsum(subscripts, *ops), operands, order=1, modes=("fwd", "rev"))


def test_einsum_repeated_subscripts_under_vmap_and_grad():
    batch = np.arange(18.0, dtype=np.float32).reshape(2, 3, 3)
    got = ember.vmap(lambda a: enp.einsum("ii->i", a))(batch)
    assert_close(got, np.einsum("bii->bi", batch))
    got = ember.vmap(lambda a: enp.einsum("ii", a), in_axes=1)(batch.transpose(1, 0, 2))
    assert_close(got, np.einsum("bii->b", batch))
    assert_close(ember.grad(lambda a: enp.einsum("ii->", a))(batch[0]), np.eye(3))
    # the diagonal is selected, so inf and nan off it do not leak into the result
    m = np.array([[1.0, np.inf], [np.nan, 2.0]], np.float32)
    assert_close(enp.einsum("ii->i", m), [1.0, 2.0])
    assert float(enp.einsum("ii", m)) == 3.0


@pytest.mark.parametrize(
    "subscripts, shape, words",
    [
        ("i->ii", (3,), "output subscript 'i' appears more than once"),
        ("ij->k", (2, 3), "output subscript 'k' does not appear"),
        ("ii->i", (2, 3), "size of label 'i' differs"),
    ],
)
def test_einsum_bad_subscripts_are_value_errors(subscripts, shape, words):
    with pytest.raises(ValueError, match=words):
        enp.einsum(subscripts, np.ones(shape, np.float32))


_rng45 = np.random.default_rng(0)
_X45 = _rng45.normal(size=(4, 5)).astype(np.float32)
_Y45 = _rng45.normal(size=(4, 5)).astype(np.float32)
_SIGNED_ZEROS = np.array([-0.0, 0.0, -1.0, 2.0], np.float32)
# Compared without equal_nan: none of their answers may be NaN.
EVERYDAY_CASES = {
    "copysign": lambda m: m.copysign(_X45, _Y45),
    "signbit": lambda m: m.signbit(_SIGNED_ZEROS),
    "hypot": lambda m: m.hypot(_X45, _Y45),
    "heaviside": lambda m: m.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5),
    "sinc": lambda m: m.sinc(np.array([0.0, 0.5, 1.5], np.float32)),
    "deg2rad": lambda m: m.deg2rad(_X45),
    "rad2deg": lambda m: m.rad2deg(_X45),
    "logaddexp2": lambda m: m.logaddexp2(_X45, _Y45),
}


@pytest.mark.parametrize("name", sorted(EVERYDAY_CASES))
def test_everyday_float_functions_match_numpy(name):
    assert_matches_numpy(EVERYDAY_CASES[name], equal_nan=False)
