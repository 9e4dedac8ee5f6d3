"""Conformance checks of whole programs: PRNG bits, control flow (values and gradients),
sorting, gather/scatter and dynamic slicing, on the backend under test.

Each runs under ``jit`` on the platform's device (and, where it matters, eagerly there), and
compares with NumPy, with values pinned from ember's reference backend (identical to JAX's),
or with the reference backend itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax, random
from ember_plugin_kit.conformance.checks import central_difference, on_device

# Threefry bits of key 42, as ember's reference backend (and JAX) computes them.
KEY_42 = [0, 42]
SPLIT_42 = [[1832780943, 270669613], [64467757, 2916123636]]
FOLD_IN_42_7 = [2547012911, 1371500959]
BITS_42 = [2098992034, 2919706841, 2646866425, 2409546199]
UNIFORM_42 = [0.48870956897735596, 0.6797971725463867, 0.6162714958190918, 0.5610160827636719]
NORMAL_42 = [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591, 0.15354591608047485]
RANDINT_42 = [44, 14, 71, 69]  # randint(key, (4,), 0, 100)
PERMUTATION_42 = [4, 2, 5, 3, 0, 1]  # permutation(key, 6)


def _put(x, device):
    return ember.device_put(np.asarray(x), device)


# -- PRNG -------------------------------------------------------------------------------------


def _random_program(key):
    return {
        "split": random.split(key),
        "fold_in": random.fold_in(key, 7),
        "bits": random.bits(key, (4,)),
        "uniform": random.uniform(key, (4,)),
        "normal": random.normal(key, (4,)),
        "randint": random.randint(key, (4,), 0, 100),
        "permutation": random.permutation(key, 6),
    }


def _check_random(got):
    np.testing.assert_array_equal(np.asarray(got["split"]), np.array(SPLIT_42, np.uint32))
    np.testing.assert_array_equal(np.asarray(got["fold_in"]), np.array(FOLD_IN_42_7, np.uint32))
    np.testing.assert_array_equal(np.asarray(got["bits"]), np.array(BITS_42, np.uint32))
    np.testing.assert_array_equal(np.asarray(got["uniform"]), np.array(UNIFORM_42, np.float32))
    # normal goes through erfinv, whose last bit may differ between implementations
    np.testing.assert_allclose(np.asarray(got["normal"]), NORMAL_42, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(got["randint"]), RANDINT_42)
    np.testing.assert_array_equal(np.asarray(got["permutation"]), PERMUTATION_42)


def test_random_key():
    np.testing.assert_array_equal(np.asarray(random.key(42)), np.array(KEY_42, np.uint32))


def test_random_bits_under_jit(platform_device):
    _check_random(on_device(platform_device, _random_program, random.key(42)))


def test_random_bits_eagerly(platform_device):
    key = ember.device_put(random.key(42), platform_device)
    got = _random_program(key)
    assert got["bits"].devices() == {platform_device}
    _check_random(got)


def test_random_moments(platform_device):
    # Many samples: the bits above pin the generator, this the samplers' arithmetic at scale.
    draw = ember.jit(
        lambda k: (random.uniform(k, (20000,)), random.normal(k, (20000,))),
        device=platform_device,
    )
    uniform, normal = (np.asarray(a, np.float64) for a in draw(random.key(0)))
    assert 0.0 <= uniform.min() and uniform.max() < 1.0
    assert abs(uniform.mean() - 0.5) < 0.01 and abs(uniform.var() - 1 / 12) < 0.005
    assert abs(normal.mean()) < 0.03 and abs(normal.std() - 1.0) < 0.03


# -- control flow -----------------------------------------------------------------------------


def _branches(x, i):
    a = lax.cond(x.sum() > 0, lambda v: enp.sin(v) * 2.0, lambda v: enp.cos(v) - 1.0, x)
    b = lax.switch(i, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)
    return a + b


def _branches_numpy(x, i):
    a = np.sin(x) * 2.0 if x.sum() > 0 else np.cos(x) - 1.0
    b = [x + 1.0, x * x, -x][min(max(i, 0), 2)]  # switch clamps its index
    return a + b


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("index", [0, 1, 2, 7, -3])
def test_cond_and_switch(platform_device, sign, index):
    x = sign * np.array([0.5, 1.5, -0.25], np.float32)
    got = on_device(platform_device, _branches, x, np.int32(index))
    np.testing.assert_allclose(np.asarray(got), _branches_numpy(x, index), rtol=1e-6, atol=1e-6)
    grad = on_device(platform_device, ember.grad(lambda v, i: _branches(v, i).sum()), x, index)
    want = central_difference(lambda v: _branches_numpy(v, index), x)
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-4, atol=1e-4)


def test_while_loop(platform_device):
    def steps_to_exceed(x, limit):
        body = lambda c: (c[0] * 3 + 1, c[1] + 1)
        return lax.while_loop(lambda c: c[0] < limit, body, (x, np.int32(0)))

    value, steps = on_device(platform_device, steps_to_exceed, np.int32(2), np.int32(1000))
    assert (int(value), int(steps)) == (1822, 6)  # 2, 7, 22, 67, 202, 607, 1822


def test_fori_loop_values_and_grad(platform_device):
    def horner(x):  # c <- c * x + i for i in 0..4: a polynomial in x
        return lax.fori_loop(0, 5, lambda i, c: c * x + i.astype(x.dtype), enp.ones_like(x))

    def horner_numpy(x):
        c = np.ones_like(x)
        for i in range(5):
            c = c * x + i
        return c

    x = np.array([0.5, -1.25, 2.0], np.float32)
    np.testing.assert_allclose(np.asarray(on_device(platform_device, horner, x)), horner_numpy(x))
    grad = on_device(platform_device, ember.grad(lambda v: horner(v).sum()), x)
    want = central_difference(horner_numpy, x)
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-4)
    # traced bounds make a while loop: values only
    dynamic = on_device(
        platform_device,
        lambda n, v: lax.fori_loop(0, n, lambda i, c: c * v + i.astype(v.dtype), enp.ones_like(v)),
        np.int32(5),
        x,
    )
    np.testing.assert_allclose(np.asarray(dynamic), horner_numpy(x), rtol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_values_and_grad(platform_device, reverse):
    def run(carry, xs):
        def step(c, x):
            return c * 0.9 + enp.sin(x), c * x

        return lax.scan(step, carry, xs, reverse=reverse)

    def run_numpy(carry, xs):
        ys = np.zeros_like(xs)
        order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
        for t in order:
            carry, ys[t] = carry * 0.9 + np.sin(xs[t]), carry * xs[t]
        return carry, ys

    carry = np.array([1.0, -2.0], np.float32)
    xs = np.linspace(-1.0, 1.0, 10, dtype=np.float32).reshape(5, 2)
    final, ys = on_device(platform_device, run, carry, xs)
    want_final, want_ys = run_numpy(carry, xs)
    np.testing.assert_allclose(np.asarray(final), want_final, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-5, atol=1e-6)

    def loss(c, x):
        final, ys = run(c, x)
        return final.sum() + (ys**2).sum()

    def loss_numpy(c, x):
        final, ys = run_numpy(c, x)
        return final.sum() + (ys**2).sum()

    d_carry, d_xs = on_device(platform_device, ember.grad(loss, argnums=(0, 1)), carry, xs)
    np.testing.assert_allclose(
        np.asarray(d_carry), central_difference(lambda c: loss_numpy(c, xs), carry), rtol=1e-3
    )
    np.testing.assert_allclose(
        np.asarray(d_xs),
        central_difference(lambda x: loss_numpy(carry, x), xs),
        rtol=1e-3,
        atol=1e-4,
    )


# -- sorting ----------------------------------------------------------------------------------

UNSORTED = np.array([3.0, 1.0, np.nan, 2.0, 1.0, -0.5, -np.inf, 2.0], np.float32)


def test_sort_and_argsort(platform_device):
    x = UNSORTED
    got = on_device(
        platform_device,
        lambda v: (
            enp.sort(v),
            enp.argsort(v, stable=True),
            enp.argsort(v, stable=True, descending=True),
        ),
        x,
    )
    np.testing.assert_array_equal(np.asarray(got[0]), np.sort(x))  # nan last, as NumPy
    np.testing.assert_array_equal(np.asarray(got[1]), np.argsort(x, kind="stable"))
    # descending keeps equal elements in their original order; nan first (JAX's answer)
    np.testing.assert_array_equal(np.asarray(got[2]), [2, 0, 3, 7, 1, 4, 5, 6])


def test_sort_along_axes_and_integers(platform_device):
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, size=(4, 7)).astype(np.int32)
    got = on_device(platform_device, lambda v: (enp.sort(v, axis=0), enp.sort(v, axis=1)), x)
    np.testing.assert_array_equal(np.asarray(got[0]), np.sort(x, axis=0))
    np.testing.assert_array_equal(np.asarray(got[1]), np.sort(x, axis=1))


def test_lax_sort_several_operands(platform_device):
    keys = np.array([2, 1, 2, 0], np.int32)
    values = np.arange(4, dtype=np.float32)
    got = on_device(platform_device, lambda k, v: lax.sort((k, v), num_keys=1), keys, values)
    np.testing.assert_array_equal(np.asarray(got[0]), [0, 1, 2, 2])
    np.testing.assert_array_equal(np.asarray(got[1]), [3.0, 1.0, 0.0, 2.0])


def test_sort_grad(platform_device):
    x = np.array([0.3, -1.0, 2.5, 0.7], np.float32)
    weights = np.arange(1, 5, dtype=np.float32)
    grad = on_device(platform_device, ember.grad(lambda v: (enp.sort(v) * weights).sum()), x)
    want = np.empty_like(x)
    want[np.argsort(x)] = weights  # each element gets the weight of the place it sorts to
    np.testing.assert_array_equal(np.asarray(grad), want)


# -- gather, scatter, dynamic slices ----------------------------------------------------------


def test_gather_by_indexing(platform_device):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    rows = np.array([3, 0, -1, 3], np.int32)
    cols = np.array([[5, 0], [2, 2]], np.int32)
    got = on_device(
        platform_device,
        lambda v, r, c: (
            v[r],
            v[:, c],
            v[r, r + 1],
            enp.take_along_axis(v, enp.tile(c % 4, (1, 3)), axis=0),
            enp.take(v, c),
        ),
        x,
        rows,
        cols,
    )
    np.testing.assert_array_equal(np.asarray(got[0]), x[rows])
    np.testing.assert_array_equal(np.asarray(got[1]), x[:, cols])
    np.testing.assert_array_equal(np.asarray(got[2]), x[rows, rows + 1])
    along = np.take_along_axis(x, np.tile(cols % 4, (1, 3)), axis=0)
    np.testing.assert_array_equal(np.asarray(got[3]), along)
    np.testing.assert_array_equal(np.asarray(got[4]), np.take(x, cols))


def test_scatter_through_at(platform_device):
    x = np.arange(6, dtype=np.float32)
    idx = np.array([0, 4, 0, 2], np.int32)  # 0 twice: the updates combine
    upd = np.array([10.0, 20.0, 30.0, -5.0], np.float32)
    got = on_device(
        platform_device,
        lambda v, i, u: (
            v.at[np.array([1, 3])].set(u[:2]),
            v.at[i].add(u),
            v.at[i].multiply(2.0),
            v.at[i].min(u - 15.0),
            v.at[i].max(u),
            v.at[np.array([1, 9])].add(100.0),  # an out-of-bounds update is dropped
            v.at[i].get(),
        ),
        x,
        idx,
        upd,
    )
    add, mul, low, high = x.copy(), x.copy(), x.copy(), x.copy()
    np.add.at(add, idx, upd)
    np.multiply.at(mul, idx, 2.0)
    np.minimum.at(low, idx, upd - 15.0)
    np.maximum.at(high, idx, upd)
    np.testing.assert_array_equal(np.asarray(got[0]), [0, 10, 2, 20, 4, 5])
    np.testing.assert_array_equal(np.asarray(got[1]), add)
    np.testing.assert_array_equal(np.asarray(got[2]), mul)
    np.testing.assert_array_equal(np.asarray(got[3]), low)
    np.testing.assert_array_equal(np.asarray(got[4]), high)
    np.testing.assert_array_equal(np.asarray(got[5]), [0, 101, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(got[6]), x[idx])


def test_gather_and_scatter_grads(platform_device):
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    idx = np.array([1, 3, 1, 4], np.int32)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    grad_gather = on_device(platform_device, ember.grad(lambda v: (v[idx] * w).sum()), x)
    want = np.zeros(5, np.float32)
    np.add.at(want, idx, w)  # gather's transpose adds up repeated indices
    np.testing.assert_array_equal(np.asarray(grad_gather), want)
    grad_scatter = on_device(
        platform_device, ember.grad(lambda u: (enp.asarray(x).at[idx].add(u) ** 2).sum()), w
    )
    after = x.copy()
    np.add.at(after, idx, w)
    np.testing.assert_allclose(np.asarray(grad_scatter), 2 * after[idx], rtol=1e-6)


@pytest.mark.parametrize("start", [0, 3, 8, -2])
def test_dynamic_slice_and_update(platform_device, start):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    patch = -np.ones((4, 2), np.float32)
    got = on_device(
        platform_device,
        lambda v, s, p: (
            lax.dynamic_slice(v, (s, 0), (4, 2)),
            lax.dynamic_update_slice(v, p, (s, 0)),
            lax.dynamic_slice_in_dim(v, s, 3, axis=0),
        ),
        x,
        np.int32(start),
        patch,
    )
    # a negative start counts from the end; then starts are clamped so the slice fits
    from_end = start + 10 if start < 0 else start
    clamped = min(max(from_end, 0), 10 - 4)
    np.testing.assert_array_equal(np.asarray(got[0]), x[clamped : clamped + 4])
    updated = x.copy()
    updated[clamped : clamped + 4] = patch
    np.testing.assert_array_equal(np.asarray(got[1]), updated)
    three = min(max(from_end, 0), 10 - 3)
    np.testing.assert_array_equal(np.asarray(got[2]), x[three : three + 3])


def test_dynamic_slice_grad(platform_device):
    x = np.arange(8, dtype=np.float32)
    grad = on_device(
        platform_device,
        ember.grad(lambda v, s: (lax.dynamic_slice(v, (s,), (3,)) ** 2).sum()),
        x,
        np.int32(2),
    )
    np.testing.assert_array_equal(np.asarray(grad), [0, 0, 4, 6, 8, 0, 0, 0])


def test_programs_match_the_reference_backend(platform_device, numpy_device):
    # One program mixing everything above, checked against the reference backend.
    def program(key, x):
        noise = random.normal(key, x.shape)
        order = enp.argsort(x + noise)
        picked = x[order[:3]]
        carry, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, picked)
        bumped = x.at[order[-1]].add(carry)
        return lax.cond(carry > 0, lambda: bumped * 2, lambda: bumped - 1) + ys.sum()

    x = np.linspace(-2.0, 3.0, 9, dtype=np.float32)
    got = on_device(platform_device, program, random.key(3), x)
    ref = ember.jit(program, device=numpy_device)(random.key(3), x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-6)
