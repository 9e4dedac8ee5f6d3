"""The cuSOLVER lowering rules (ember_plugin_cuda.linalg) on the real linear algebra
primitives: lowered for platform ``cuda`` without compiling (no GPU needed), each module parses
and verifies with jaxlib's MLIR bindings and calls JAX's handlers with their layouts,
attributes and aliases; and ``register`` overrides exactly its primitives. Running the programs
needs an NVIDIA GPU: those tests skip without one."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

from ember_plugin_cuda import linalg

import ember
from ember._src import rules
from ember._src.lax import (
    linalg_factor_primitives as factor,
    linalg_qr_primitives as qr_prims,
    linalg_spectral_primitives as spectral,
)
from ember._src.lax.linalg_algorithms import EighImplementation
from ember._src.lowering.module import lower_module
from ember.extend import LoweringRegistry
from ember_plugin_kit.pjrt import _jaxlib

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True, scope="module")
def cuda_rules():
    """The rules registered for cuda (the plugin is not loaded where there is no GPU), and
    removed again after this module."""
    registry = LoweringRegistry("cuda-linalg-test")
    registered = linalg.register(registry, "cuda")
    yield registered
    for name in registered:
        rules.remove_lowering(rules.all_primitives()[name], "cuda")


@pytest.fixture(autouse=True)
def x64():
    with ember.config.option("enable_x64", True):
        yield


def lowered(fn, *args):
    closed = ember.make_jaxpr(fn)(*args)
    text = lower_module(closed, platform="cuda", name="linalg")
    module = _jaxlib.parse_module(text)
    assert module.operation.verify()
    return module


def ops_named(module, name):
    main = module.body.operations[0]
    return [op for op in main.regions[0].blocks[0].operations if op.name == name]


def custom_calls(module):
    return ops_named(module, "stablehlo.custom_call")


def target(op):
    return op.attributes["call_target_name"].value


def config(op):
    return op.attributes["backend_config"]


def layouts(op, which):
    return [list(np.asarray(a)) for a in op.attributes[f"{which}_layouts"]]


def zeros(shape, dtype):
    return np.zeros(shape, dtype)


def result_types(module):
    return [str(t) for t in module.body.operations[0].type.results]


def test_register_overrides_its_primitives_on_cuda(cuda_rules):
    assert cuda_rules == list(linalg.RULES)
    for name in linalg.RULES:
        primitive = rules.all_primitives()[name]
        rule = rules.lowering_rule(primitive, "cuda")
        assert rule is not rules.generic_lowering_rule(primitive)
        assert rule.__name__ == f"gpu_solver_{name}_lowering"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5)])
def test_cholesky_calls_potrf_column_major_in_place(dtype, shape):
    module = lowered(lambda x: factor.cholesky_p.bind(x), zeros(shape, dtype))
    (call,) = custom_calls(module)
    assert target(call) == "cusolver_potrf_ffi"
    assert int(call.attributes["api_version"].value) == 4
    assert config(call)["lower"].value is True
    rank = len(shape)
    column_major = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
    assert layouts(call, "operand") == [column_major]
    # the factor in the operand's buffer, and info (one per matrix) row-major
    assert layouts(call, "result") == [column_major, list(range(rank - 3, -1, -1))]
    assert "operand_index = 0" in str(call.attributes["output_operand_aliases"])
    num_batch_dims = call.attributes["mhlo.frontend_attributes"]["num_batch_dims"].value
    assert num_batch_dims == str(rank - 2)
    # the strict upper part zeroed, then NaN for a failed factorisation (info != 0)
    assert len(ops_named(module, "stablehlo.select")) == 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 4, 6), (2, 6, 4)])
def test_lu_calls_getrf_then_builds_the_permutation(dtype, shape):
    module = lowered(lambda x: factor.lu_p.bind(x), zeros(shape, dtype))
    getrf, to_perm = custom_calls(module)
    assert target(getrf) == "cusolver_getrf_ffi"
    assert target(to_perm) == "cu_lu_pivots_to_permutation"
    # cuSOLVER's one-based pivots made zero-based
    assert len(ops_named(module, "stablehlo.add")) == 1
    *batch, m, n = shape
    dims = "x".join(str(d) for d in (*batch, min(m, n)))
    assert result_types(module)[1] == f"tensor<{dims}xi32>"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_calls_geqrf_and_orgqr_through_its_generic_lowering(dtype, shape, full_matrices):
    def qr(x):
        return qr_prims.qr_p.bind(x, pivoting=False, full_matrices=full_matrices, use_magma=None)

    module = lowered(qr, zeros(shape, dtype))
    text = str(module)
    assert "cusolver_geqrf_ffi" in text and "cusolver_orgqr_ffi" in text
    *batch, m, n = shape
    k = min(m, n)
    q_cols, r_rows = (m, m) if full_matrices else (k, k)
    q_type, r_type = result_types(module)
    assert q_type.startswith("tensor<" + "x".join(str(d) for d in (*batch, m, q_cols)))
    assert r_type.startswith("tensor<" + "x".join(str(d) for d in (*batch, r_rows, n)))


def eigh(lower=True, algorithm=None):
    def fn(x):
        return spectral.eigh_p.bind(
            x, lower=lower, sort_eigenvalues=True, subset_by_index=None, algorithm=algorithm
        )

    return fn


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_calls_syevd_with_the_triangle(dtype, lower):
    module = lowered(eigh(lower), zeros((3, 4, 4), dtype))
    (call,) = custom_calls(module)
    assert target(call) == "cusolver_syevd_ffi"
    assert config(call)["lower"].value is lower
    assert config(call)["algorithm"].value == 0
    real = "f32" if np.dtype(dtype) in (np.float32, np.complex64) else "f64"
    assert result_types(module)[1] == f"tensor<3x4x{real}>"


def test_eigh_jacobi_asks_cusolver_for_its_jacobi_solver():
    module = lowered(eigh(algorithm=EighImplementation.JACOBI), zeros((4, 4), np.float32))
    (call,) = custom_calls(module)
    assert config(call)["algorithm"].value == 2


def svd(full_matrices, compute_uv=True):
    def fn(x):
        return spectral.svd_p.bind(
            x,
            full_matrices=full_matrices,
            compute_uv=compute_uv,
            subset_by_index=None,
            algorithm=None,
        )

    return fn


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "expected_target"),
    [
        ((6, 4), "cusolver_gesvdj_ffi"),
        ((2, 40, 50), "cusolver_gesvdj_ffi"),
        ((1100, 8), "cusolver_gesvd_ffi"),
        ((8, 1100), "cusolver_gesvd_ffi"),
    ],
)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_calls_gesvdj_or_gesvd(dtype, shape, expected_target, full_matrices):
    module = lowered(svd(full_matrices), zeros(shape, dtype))
    (call,) = custom_calls(module)
    assert target(call) == expected_target
    assert config(call)["compute_uv"].value is True
    *_, m, n = shape
    k = min(m, n)
    u_cols, vt_rows = (m, n) if full_matrices else (k, k)
    _, u_type, vt_type = result_types(module)
    assert u_type.startswith(f"tensor<{'x'.join(str(d) for d in (*shape[:-2], m, u_cols))}x")
    assert vt_type.startswith(f"tensor<{'x'.join(str(d) for d in (*shape[:-2], vt_rows, n))}x")
    if expected_target == "cusolver_gesvd_ffi":
        assert config(call)["transposed"].value is (m < n)


def test_svd_without_uv_returns_only_singular_values():
    module = lowered(svd(False, compute_uv=False), zeros((5, 3), np.float32))
    (call,) = custom_calls(module)
    assert config(call)["compute_uv"].value is False
    assert result_types(module) == ["tensor<3xf32>"]


def test_half_precision_and_empty_operands_use_the_generic_lowering():
    # the generic lowering computes float16 in float32: through cuSOLVER's float32 routine
    module = lowered(lambda x: factor.cholesky_p.bind(x), zeros((3, 3), np.float16))
    assert [target(c) for c in custom_calls(module)] == ["cusolver_potrf_ffi"]
    assert (
        custom_calls(lowered(lambda x: factor.cholesky_p.bind(x), zeros((0, 0), np.float32))) == []
    )


def test_triangular_solve_keeps_stablehlos_op():
    params = dict(
        left_side=True, lower=True, transpose_a=True, conjugate_a=True, unit_diagonal=False
    )
    module = lowered(
        lambda a, b: factor.triangular_solve_p.bind(a, b, **params),
        zeros((2, 4, 4), np.complex64),
        zeros((2, 4, 3), np.complex64),
    )
    (op,) = ops_named(module, "stablehlo.triangular_solve")
    assert "ADJOINT" in str(op.attributes["transpose_a"])


def _have_gpu() -> bool:
    try:
        return bool(ember.devices("cuda"))
    except Exception:
        return False


@pytest.mark.skipif(not _have_gpu(), reason="needs an NVIDIA GPU and the CUDA plugin loaded")
def test_cholesky_on_the_gpu_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6, 6))
    a = x @ np.swapaxes(x, -1, -2) + 6 * np.eye(6)
    a[1] = -a[1]  # not positive definite: NaN for that matrix only
    device = ember.devices("cuda")[0]
    out = np.asarray(ember.jit(lambda v: factor.cholesky_p.bind(v))(ember.device_put(a, device)))
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[[0, 2]], np.linalg.cholesky(a[[0, 2]]), rtol=1e-10)


@pytest.mark.skipif(not _have_gpu(), reason="needs an NVIDIA GPU and the CUDA plugin loaded")
def test_svd_and_eigh_on_the_gpu_reconstruct():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 7, 5))
    device = ember.devices("cuda")[0]
    s, u, vt = (np.asarray(o) for o in ember.jit(svd(False))(ember.device_put(a, device)))
    np.testing.assert_allclose((u * s[:, None, :]) @ vt, a, atol=1e-10)
    h = a @ np.swapaxes(a, -1, -2)
    v, w = (np.asarray(o) for o in ember.jit(eigh())(ember.device_put(h, device)))
    np.testing.assert_allclose(h @ v, v * w[:, None, :], atol=1e-9)
