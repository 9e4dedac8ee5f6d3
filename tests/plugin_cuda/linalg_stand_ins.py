"""Stand-ins for linear algebra primitives of JAX's signatures, lowered on ``cuda`` by the CUDA
plugin's cuSOLVER rules (ember_plugin_cuda.linalg): ember's own linear algebra has no
primitives of these names, so the tests reach the rules through these."""

from __future__ import annotations

import numpy as np
from ember_plugin_cuda import linalg

from ember._src import rules
from ember.extend import ShapedArray


def real_dtype(dtype):
    return np.empty((), dtype).real.dtype


def _shapes_cholesky(x):
    return x


def _shapes_lu(x):
    *batch, m, n = x.shape
    i32 = np.dtype(np.int32)
    return [x, ShapedArray((*batch, min(m, n)), i32), ShapedArray((*batch, m), i32)]


def _shapes_qr(x, *, full_matrices, **params):
    *batch, m, n = x.shape
    k = min(m, n)
    cols, rows = (m, m) if full_matrices else (k, k)
    return [ShapedArray((*batch, m, cols), x.dtype), ShapedArray((*batch, rows, n), x.dtype)]


def _shapes_eigh(x, *, lower, **params):
    *batch, n, _ = x.shape
    return [x, ShapedArray((*batch, n), real_dtype(x.dtype))]


def _shapes_svd(x, *, full_matrices, compute_uv, **params):
    *batch, m, n = x.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray((*batch, m, m if full_matrices else k), x.dtype)
    vt = ShapedArray((*batch, n if full_matrices else k, n), x.dtype)
    return [s, u, vt]


def _shapes_triangular_solve(a, b, **params):
    return b


# Stand-ins for the primitives, lowered on cuda by the plugin's rules.
STAND_INS = {
    name: rules.define_primitive(
        f"cuda_linalg_test_{name}",
        abstract_eval=shapes,
        lowering={"cuda": linalg.RULES[name]},
        multiple_results=name not in ("cholesky", "triangular_solve"),
    )
    for name, shapes in [
        ("cholesky", _shapes_cholesky),
        ("lu", _shapes_lu),
        ("qr", _shapes_qr),
        ("eigh", _shapes_eigh),
        ("svd", _shapes_svd),
        ("triangular_solve", _shapes_triangular_solve),
    ]
}
