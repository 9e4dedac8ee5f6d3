"""Every primitive, under every transformation that applies to it.

For each primitive a small program using it runs on random inputs of a random shape, and:
- ``vmap`` of it equals a Python loop over the batch;
- the default backend equals the NumPy ``reference`` backend;
- where it is differentiable, ``check_grads`` checks jvp against finite differences and vjp
  against jvp, to second order.
A primitive that is added without an entry here fails ``test_every_primitive_is_covered``.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import ember
import ember.ffi  # a lazy submodule: its primitive is defined when it is imported
import ember.numpy as enp
from ember import lax
from ember._src import rules
from ember._src.interpreters.ad_util import add_any_p
from ember._src.random.gamma import random_gamma_p
from ember.ad_checkpoint import checkpoint_name
from ember.test_util import check_grads
from tests.core.util import assert_close

# Tested in their own suites (control flow, calls, custom rules, collectives, checkpoint), or
# taking no operands.
ELSEWHERE = {
    "cond", "scan", "while", "jit", "remat", "custom_jvp_call", "custom_vjp_call", "custom_lin",
    "custom_vmap_call",  # transforms/test_custom_batching.py
    "psum", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "iota", "zeros",
    "pvary", "all_gather_invariant",  # primitives/test_collectives.py, tests/sharding
    "rng_bit_generator",  # implementation-defined bits: tests/core/primitives/test_precision.py
    "ppermute", "all_to_all", "shard_map", "sharding_constraint",  # tests/sharding
    "pure_callback", "io_callback", "debug_callback",  # tests/core/test_callback.py
    "check", "check_error",  # tests/core/checkify
    "call_exported",  # tests/core/export
    "ffi_call",  # C++ handlers through XLA's FFI: tests/core/ffi
    "platform_index",  # primitives/control_flow/test_platform_dependent.py
    "program_id", "num_programs", "masked_load", "masked_swap", "atomic_rmw", "atomic_cas",
    "multiple_of", "max_contiguous", "pallas_call",  # Pallas kernels: tests/core/pallas
    "get", "swap", "addupdate", "run_scoped",  # Refs: primitives/test_state.py, test_discharge.py
    "named_kernel",  # plugin kernels by name: primitives/test_named_kernels.py
    "eigh", "svd", "eig", "schur", "hessenberg",  # lax/test_linalg_spectral_primitives.py
    "tridiagonal",  # lax/test_linalg_spectral_primitives.py
    "cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "geqrf", "geqp3",
    "householder_product", "qr", "tridiagonal_solve",  # lax/test_linalg_factor_primitives.py
}  # fmt: skip


def f32(low, high):
    return lambda rng, shape: rng.uniform(low, high, shape).astype(np.float32)


def ints(rng, shape):
    return rng.integers(-5, 6, shape).astype(np.int32)


def bools(rng, shape):
    return rng.random(shape) < 0.5


def shifts(rng, shape):
    return rng.integers(0, 40, shape).astype(np.int32)


def c64(rng, shape):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)


ANY = f32(-2.0, 2.0)
POSITIVE = f32(0.5, 2.5)
UNIT = f32(-0.8, 0.8)


def _rest(x):
    """Zeros for every axis after the first (start indices, padding)."""
    return (0,) * (x.ndim - 1)


def _add_any(x, y):
    return add_any_p.bind(x, y)


def _broadcast(x):
    return lax.broadcast_in_dim(x, (2, *x.shape), tuple(range(1, x.ndim + 1)))


def _pad(x):
    return lax.pad(x, np.float32(0), [(1, 2, 1)] + [(0, 0, 0)] * (x.ndim - 1))


def _dynamic_slice(x):
    return lax.dynamic_slice(x, (1, *_rest(x)), (2, *x.shape[1:]))


def _rows(x):
    return np.array([x.shape[0] - 1, 0])


def _gather(x):
    return enp.asarray(x)[_rows(x)]


def _scatter(method):
    return lambda x, u: getattr(enp.asarray(x).at[_rows(x)], method)(u[:2])


def _pool(computation, init, strided=False, padding="VALID"):
    """A window of 2 along the leading axis (strided or not)."""

    def pool(x):
        window = (2,) + (1,) * (x.ndim - 1)
        strides = window if strided else (1,) * x.ndim
        return lax.reduce_window(x, init, computation, window, strides, padding)

    return pool


def _conv(x, w):
    """A 1-D convolution over the trailing axis, with batch and features of one."""
    x1 = lax.reshape(x, (1, 1, x.size))
    w1 = lax.reshape(w, (1, 1, w.size))[:, :, :2]
    return lax.conv_general_dilated(x1, w1, (1,), ((1, 0),), rhs_dilation=(2,))


def _random_gamma(a):
    # A gamma sample differentiates by implicit reparameterisation, not as the function of a
    # that the sampler computes: its gradient is checked in random/test_prng.py.
    return random_gamma_p.bind(np.array([0, 42], np.uint32), a, log_space=False)


def _dynamic_update_slice(x, u):
    return lax.dynamic_update_slice(x, u[:1], (2, *_rest(x)))


# name: (program, input makers, differentiable)
CASES = {
    "abs": (lax.abs, [f32(0.3, 2.0)], True),
    "acos": (lax.acos, [UNIT], True),
    "acosh": (lax.acosh, [f32(1.2, 3.0)], True),
    "asin": (lax.asin, [UNIT], True),
    "asinh": (lax.asinh, [ANY], True),
    "atan": (lax.atan, [ANY], True),
    "atanh": (lax.atanh, [UNIT], True),
    "cbrt": (lax.cbrt, [POSITIVE], True),
    "cos": (lax.cos, [ANY], True),
    "cosh": (lax.cosh, [ANY], True),
    "exp": (lax.exp, [ANY], True),
    "expm1": (lax.expm1, [ANY], True),
    "log": (lax.log, [POSITIVE], True),
    "log1p": (lax.log1p, [POSITIVE], True),
    "logistic": (lax.logistic, [ANY], True),
    "rsqrt": (lax.rsqrt, [POSITIVE], True),
    "sin": (lax.sin, [ANY], True),
    "sinh": (lax.sinh, [ANY], True),
    "sqrt": (lax.sqrt, [POSITIVE], True),
    "tan": (lax.tan, [UNIT], True),
    "tanh": (lax.tanh, [ANY], True),
    "neg": (lax.neg, [ANY], True),
    "sign": (lax.sign, [ANY], False),
    "floor": (lax.floor, [ANY], False),
    "ceil": (lax.ceil, [ANY], False),
    "round": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), [ANY], False),
    "is_finite": (lax.is_finite, [ANY], False),
    "add": (lax.add, [ANY, ANY], True),
    "add_any": (_add_any, [ANY, ANY], True),
    "sub": (lax.sub, [ANY, ANY], True),
    "mul": (lax.mul, [ANY, ANY], True),
    "div": (lax.div, [ANY, POSITIVE], True),
    "pow": (lax.pow, [POSITIVE, ANY], True),
    "max": (lax.max, [ANY, ANY], True),
    "min": (lax.min, [ANY, ANY], True),
    "atan2": (lax.atan2, [ANY, POSITIVE], True),
    "rem": (lax.rem, [ANY, f32(3.0, 4.0)], False),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), [ANY], True),
    "square": (lax.square, [ANY], True),
    "eq": (lax.eq, [ints, ints], False),
    "ne": (lax.ne, [ints, ints], False),
    "lt": (lax.lt, [ANY, ANY], False),
    "le": (lax.le, [ANY, ANY], False),
    "gt": (lax.gt, [ANY, ANY], False),
    "ge": (lax.ge, [ANY, ANY], False),
    "and": (lax.bitwise_and, [ints, ints], False),
    "or": (lax.bitwise_or, [bools, bools], False),
    "xor": (lax.bitwise_xor, [ints, ints], False),
    "not": (lax.bitwise_not, [ints], False),
    "shift_left": (lax.shift_left, [ints, shifts], False),
    "shift_right_logical": (lax.shift_right_logical, [ints, shifts], False),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, [ints, shifts], False),
    "population_count": (lax.population_count, [ints], False),
    "bitcast_convert_type": (lambda x: lax.bitcast_convert_type(x, np.int32), [ANY], False),
    "erf": (lax.erf, [ANY], True),
    "erfc": (lax.erfc, [ANY], True),
    "erf_inv": (lax.erf_inv, [UNIT], True),
    "lgamma": (lax.lgamma, [f32(0.2, 4.0)], True),
    "digamma": (lax.digamma, [f32(0.2, 4.0)], True),
    "polygamma": (lambda x: lax.polygamma(np.float32(1), x), [POSITIVE], True),
    # second derivatives in a are not defined (as in JAX): tests/core/primitives/test_special.py
    "igamma": (lambda x: lax.igamma(np.float32(1.5), x), [POSITIVE], True),
    "igammac": (lambda x: lax.igammac(np.float32(0.7), x), [POSITIVE], True),
    "igamma_grad_a": (lambda x: lax.igamma_grad_a(np.float32(1.5), x), [POSITIVE], True),
    "random_gamma_grad": (lax.random_gamma_grad, [POSITIVE, POSITIVE], False),
    "random_gamma": (_random_gamma, [POSITIVE], False),
    "nextafter": (lax.nextafter, [ANY, ANY], False),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10), [ANY], False),  # a staircase
    "clamp": (lambda lo, x: lax.clamp(lo, x, lo + 1.5), [ANY, ANY], True),
    "optimization_barrier": (lambda x, y: lax.optimization_barrier((x, y))[1], [ANY, ANY], True),
    "select_n": (lambda p, x, y: lax.select_n(p, x, y), [bools, ANY, ANY], True),
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.float16), [ANY], False),
    "stop_gradient": (lax.stop_gradient, [ANY], False),
    "name": (lambda x: checkpoint_name(x, "x") * x, [ANY], True),
    "real": (lax.real, [c64], True),
    "imag": (lax.imag, [c64], True),
    "conj": (lax.conj, [c64], True),
    "complex": (lax.complex, [ANY, ANY], True),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (0,)), [ANY], True),
    "reduce_max": (lambda x: lax.reduce_max(x, (0,)), [ANY], True),
    "reduce_min": (lambda x: lax.reduce_min(x, (0,)), [ANY], True),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (0,)), [POSITIVE], True),
    "reduce_and": (lambda x: lax.reduce_and(x, (0,)), [bools], False),
    "reduce_or": (lambda x: lax.reduce_or(x, (0,)), [bools], False),
    "argmax": (lambda x: lax.argmax(x, 0, np.int32), [ANY], False),
    "argmin": (lambda x: lax.argmin(x, 0, np.int32), [ANY], False),
    "broadcast_in_dim": (_broadcast, [ANY], True),
    "reshape": (lambda x: lax.reshape(x, (x.size,)), [ANY], True),
    "transpose": (lambda x: lax.transpose(x, tuple(reversed(range(x.ndim)))), [ANY], True),
    "squeeze": (lambda x: lax.squeeze(lax.expand_dims(x, (0,)), (0,)), [ANY], True),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 0), [ANY, ANY], True),
    "slice": (lambda x: lax.slice(x, (1, *_rest(x)), x.shape), [ANY], True),
    "pad": (_pad, [ANY], True),
    "rev": (lambda x: lax.rev(x, (0,)), [ANY], True),
    "dot_general": (lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))), [ANY, ANY], True),
    "dynamic_slice": (_dynamic_slice, [ANY], True),
    "dynamic_update_slice": (_dynamic_update_slice, [ANY, ANY], True),
    "gather": (_gather, [ANY], True),
    "conv_general_dilated": (_conv, [ANY, ANY], True),
    "reduce_window_sum": (_pool(lax.add, 0.0, strided=True), [ANY], True),
    "reduce_window_max": (_pool(lax.max, -np.inf, padding="SAME"), [ANY], True),
    "reduce_window_min": (_pool(lax.min, np.inf), [ANY], True),
    "fft": (lambda x: lax.fft(x, "FFT", x.shape[-1:]), [c64], True),
    "sort": (lambda x, y: lax.sort((x, y), 0, num_keys=1)[1], [ANY, ANY], True),
    "scatter": (_scatter("set"), [ANY, ANY], True),
    "scatter_add": (_scatter("add"), [ANY, ANY], True),
    "scatter_mul": (_scatter("multiply"), [ANY, POSITIVE], False),
    "scatter_min": (_scatter("min"), [ANY, ANY], False),
    "scatter_max": (_scatter("max"), [ANY, ANY], False),
    "cumsum": (lambda x: lax.cumsum(x, 0, reverse=True), [ANY], True),
    "cumprod": (lambda x: lax.cumprod(x, x.ndim - 1), [POSITIVE], True),
    "cummax": (lambda x: lax.cummax(x, 0), [ANY], True),
    "cummin": (lambda x: lax.cummin(x, 0, reverse=True), [ANY], True),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 0), [ANY], True),
}  # fmt: skip

SHAPES = [(4,), (4, 3), (5, 2, 3)]


def _seed(name: str) -> int:
    """A per-primitive seed that is the same in every process (str hashes are not)."""
    return zlib.crc32(name.encode()) + int(os.environ.get("EMBER_TEST_SEED_OFFSET", "0"))


def test_every_primitive_is_covered():
    names = set(rules.all_primitives())
    assert names - ELSEWHERE - set(CASES) == set()


def _inputs(name, rng):
    program, makers, differentiable = CASES[name]
    shape = SHAPES[rng.integers(len(SHAPES))]
    return program, [make(rng, shape) for make in makers], differentiable


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_a_loop(name):
    rng = np.random.default_rng(_seed(name))
    program, args, _ = _inputs(name, rng)
    batch = [np.stack([a, *[_perturb(rng, a) for _ in range(2)]]) for a in args]
    got = ember.vmap(program)(*batch)
    for k in range(3):
        assert_close(got[k], program(*[b[k] for b in batch]), rtol=1e-5, atol=1e-5)
    # batching only some operands, along another axis
    if len(args) > 1:
        moved = np.moveaxis(batch[0], 0, -1)
        got = ember.vmap(program, in_axes=(-1,) + (None,) * (len(args) - 1))(moved, *args[1:])
        for k in range(3):
            assert_close(got[k], program(batch[0][k], *args[1:]), rtol=1e-5, atol=1e-5)


def _perturb(rng, a):
    if a.dtype == bool or a.dtype.kind in "iu":
        return rng.permutation(a.reshape(-1)).reshape(a.shape)
    return (a * rng.uniform(0.9, 1.1, a.shape)).astype(a.dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_backend_matches_reference(name):
    rng = np.random.default_rng(_seed(name) + 1)
    program, args, _ = _inputs(name, rng)
    reference = ember.devices("reference")[0]
    default = ember.devices()[0]
    here = ember.jit(program, device=default)(*args)
    there = ember.jit(program, device=reference)(*args)
    assert_close(here, there, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case[2]))
def test_derivatives(name):
    rng = np.random.default_rng(_seed(name) + 2)
    program, args, _ = _inputs(name, rng)
    diff = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]

    def on_float_args(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return program(*full)

    check_grads(on_float_args, [args[i] for i in diff], order=2, atol=3e-2, rtol=3e-2)
