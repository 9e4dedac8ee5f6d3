"""Conformance checks of Pallas kernels (``ember.experimental.pallas``) on the backend under test.

A platform whose plugin registers a kernel compiler runs these kernels natively (the CUDA
plugin: Triton); every other platform runs them in interpret mode. Either way the answers
must be NumPy's. The kernels use only what a native compiler is expected to support: grids,
blocks and index maps, Ref reads and writes with static and ``pl.ds`` windows, masked loads
and stores over a ragged edge, ``fori_loop`` and ``pl.when`` inside a kernel, reductions,
``pl.dot`` and ``vmap`` of a kernel. Each kernel also runs with ``interpret=True`` on the
same device, which every platform supports.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.experimental import pallas as pl

RNG = np.random.default_rng(0)


def _put(x, device):
    return ember.device_put(np.asarray(x), device)


def _run(device, f, *args):
    """``jit(f)`` on ``device``, as NumPy arrays."""
    outs = ember.jit(f, device=device)(*[_put(a, device) for a in args])
    return ember.tree_util.tree_map(np.asarray, outs)


@pytest.fixture(params=[False, True], ids=["platform", "interpret"])
def interpret(request):
    return request.param


# -- elementwise over a grid ------------------------------------------------------------------


def _add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + 2.0 * y_ref[...]


def test_elementwise_over_a_grid(platform_device, interpret):
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    y = RNG.standard_normal((64, 128)).astype(np.float32)
    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))

    def f(x, y):
        return pl.pallas_call(
            _add_kernel,
            out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(4,),
            in_specs=[spec, spec],
            out_specs=spec,
            interpret=interpret,
        )(x, y)

    np.testing.assert_allclose(_run(platform_device, f, x, y), x + 2.0 * y, rtol=1e-6)


# -- a tiled matmul with a loop over k inside the kernel ---------------------------------------


def _matmul(x, y, *, block, interpret):
    (m, k), (_, n) = x.shape, y.shape
    bm, bn, bk = block

    def kernel(x_ref, y_ref, o_ref):
        def step(i, acc):
            window = pl.ds(pl.multiple_of(i * bk, bk), bk)
            return acc + pl.dot(x_ref[:, window], y_ref[window, :])

        acc = lax.fori_loop(0, k // bk, step, enp.zeros((bm, bn), enp.float32))
        o_ref[...] = acc.astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct((m, n), enp.float32),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        interpret=interpret,
    )(x, y)


def test_tiled_matmul(platform_device, interpret):
    x = RNG.standard_normal((64, 96)).astype(np.float32)
    y = RNG.standard_normal((96, 32)).astype(np.float32)

    def f(x, y):
        return _matmul(x, y, block=(32, 16, 32), interpret=interpret)

    # GPUs may multiply in TF32: a tolerance for that, far below any indexing mistake
    np.testing.assert_allclose(_run(platform_device, f, x, y), x @ y, rtol=2e-2, atol=2e-2)


# -- a row softmax with masked loads over a ragged row ------------------------------------------


def _softmax(x, *, interpret):
    rows, cols = x.shape
    width = 1 << (cols - 1).bit_length()  # one power-of-two block over a row of any length

    def kernel(x_ref, o_ref):
        mask = lax.iota(enp.int32, width) < cols
        row = pl.load(x_ref, pl.ds(0, width), mask=mask, other=-enp.inf)
        e = enp.exp(row - enp.max(row))
        pl.store(o_ref, pl.ds(0, width), e / enp.sum(e), mask=mask)

    return pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows,),
        in_specs=[pl.BlockSpec((None, cols), lambda i: (i, 0))],  # None: one row, squeezed
        out_specs=pl.BlockSpec((None, cols), lambda i: (i, 0)),
        interpret=interpret,
    )(x)


def test_masked_row_softmax(platform_device, interpret):
    x = RNG.standard_normal((8, 50)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    got = _run(platform_device, lambda x: _softmax(x, interpret=interpret), x)
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# -- pl.when, program_id and num_programs: every other row block negated and scaled --------


def test_when_and_program_id(platform_device, interpret):
    x = RNG.standard_normal((4, 32)).astype(np.float32)

    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = x_ref[...]

        @pl.when(i % 2 == 1)
        def _():
            o_ref[...] = -x_ref[...] * pl.num_programs(0)

    def f(x):
        spec = pl.BlockSpec((1, 32), lambda i: (i, 0))
        return pl.pallas_call(
            kernel,
            out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(4,),
            in_specs=[spec],
            out_specs=spec,
            interpret=interpret,
        )(x)

    expected = x.copy()
    expected[1::2] *= -4.0
    np.testing.assert_allclose(_run(platform_device, f, x), expected, rtol=1e-6)


# -- vmap of a kernel adds a grid axis ---------------------------------------------------------


def test_vmap_of_a_kernel(platform_device, interpret):
    x = RNG.standard_normal((3, 4, 50)).astype(np.float32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    got = _run(platform_device, ember.vmap(lambda x: _softmax(x, interpret=interpret)), x)
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_kernels_match_the_reference_backend(platform_device, numpy_device):
    """The same kernel gives the same answer here and on ember's NumPy reference backend."""
    x = RNG.standard_normal((32, 64)).astype(np.float32)
    y = RNG.standard_normal((64, 32)).astype(np.float32)

    def f(x, y):
        return _matmul(x, y, block=(16, 16, 32), interpret=False)

    np.testing.assert_allclose(
        _run(platform_device, f, x, y), _run(numpy_device, f, x, y), rtol=2e-2, atol=2e-2
    )
