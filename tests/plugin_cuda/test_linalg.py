"""The cuSOLVER/cuBLAS lowering rules (ember_plugin_cuda.linalg): each emits a StableHLO module
that parses and verifies with jaxlib's MLIR bindings, with JAX's custom-call targets, layouts,
attributes and aliases; and which linear algebra primitives ``register`` overrides.

ember's linear algebra has no primitives of these names (it is written with generic ops), so
the rules are exercised here through stand-in primitives of the same signature as JAX's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

from ember_plugin_cuda import libraries, linalg
from jaxlib import _jax, xla_client

import ember
from ember._src import rules
from ember._src.lowering.module import lower_module
from ember.errors import LoweringError
from ember.extend import LoweringRegistry
from ember_plugin_kit import pjrt
from ember_plugin_kit.pjrt import _jaxlib
from ember_plugin_kit.triton import bytecode
from tests.plugin_cuda.linalg_stand_ins import STAND_INS, real_dtype
from tests.plugin_kit.test_triton_xla_compile import H100

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True)
def x64():
    """float64 and complex128 operands, as they are."""
    with ember.config.option("enable_x64", True):
        yield


def lowered(name, args, **params):
    closed = ember.make_jaxpr(lambda *xs: STAND_INS[name].bind(*xs, **params))(*args)
    text = lower_module(closed, platform="cuda", name=name)
    module = _jaxlib.parse_module(text)
    assert module.operation.verify()
    return module


def custom_calls(module):
    main = module.body.operations[0]
    ops = main.regions[0].blocks[0].operations
    return [op for op in ops if op.name == "stablehlo.custom_call"]


def ops_named(module, name):
    main = module.body.operations[0]
    return [op for op in main.regions[0].blocks[0].operations if op.name == name]


def target(op):
    return op.attributes["call_target_name"].value


def config(op):
    return op.attributes["backend_config"]


def layouts(op, which):
    return [list(np.asarray(a)) for a in op.attributes[f"{which}_layouts"]]


def zeros(shape, dtype):
    return ember.numpy.zeros(shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5)])
def test_cholesky_calls_potrf_column_major_in_place(dtype, shape):
    module = lowered("cholesky", [zeros(shape, dtype)])
    (call,) = custom_calls(module)
    assert target(call) == "cusolver_potrf_ffi"
    assert int(call.attributes["api_version"].value) == 4
    assert config(call)["lower"].value is True
    rank = len(shape)
    column_major = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
    assert layouts(call, "operand") == [column_major]
    # The factor in the operand's buffer, and info (one per matrix) row-major.
    assert layouts(call, "result") == [column_major, list(range(rank - 3, -1, -1))]
    assert "operand_index = 0" in str(call.attributes["output_operand_aliases"])
    batch = str(rank - 2)
    assert call.attributes["mhlo.frontend_attributes"]["num_batch_dims"].value == batch
    # A failed factorisation (info != 0) becomes NaN, as in JAX.
    # ... and the factor's upper triangle is zeroed: two selects.
    assert len(ops_named(module, "stablehlo.select")) == 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 4, 6), (2, 6, 4)])
def test_lu_calls_getrf_then_builds_the_permutation(dtype, shape):
    module = lowered("lu", [zeros(shape, dtype)])
    getrf, to_perm = custom_calls(module)
    assert target(getrf) == "cusolver_getrf_ffi"
    assert target(to_perm) == "cu_lu_pivots_to_permutation"
    # cuSOLVER's one-based pivots made zero-based.
    assert len(ops_named(module, "stablehlo.subtract")) == 1
    main = module.body.operations[0]
    results = [str(t) for t in main.type.results]
    *batch, m, n = shape
    dims = "x".join(str(d) for d in (*batch, min(m, n)))
    assert f"tensor<{dims}xi32>" in results[1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_calls_geqrf_and_orgqr(dtype, shape, full_matrices):
    module = lowered("qr", [zeros(shape, dtype)], full_matrices=full_matrices)
    geqrf, orgqr = custom_calls(module)
    assert (target(geqrf), target(orgqr)) == ("cusolver_geqrf_ffi", "cusolver_orgqr_ffi")
    *batch, m, n = shape
    k = min(m, n)
    main = module.body.operations[0]
    q_type, r_type = (str(t) for t in main.type.results)
    q_cols, r_rows = (m, m) if full_matrices else (k, k)
    assert q_type.startswith("tensor<" + "x".join(str(d) for d in (*batch, m, q_cols)))
    assert r_type.startswith("tensor<" + "x".join(str(d) for d in (*batch, r_rows, n)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_calls_syevd_with_the_triangle(dtype, lower):
    module = lowered("eigh", [zeros((3, 4, 4), dtype)], lower=lower)
    (call,) = custom_calls(module)
    assert target(call) == "cusolver_syevd_ffi"
    assert config(call)["lower"].value is lower
    assert config(call)["algorithm"].value == 0
    main = module.body.operations[0]
    w_type = str(main.type.results[1])
    assert w_type == f"tensor<3x4x{'f32' if real_dtype(dtype) == np.float32 else 'f64'}>"


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
    module = lowered("svd", [zeros(shape, dtype)], full_matrices=full_matrices, compute_uv=True)
    (call,) = custom_calls(module)
    assert target(call) == expected_target
    assert config(call)["compute_uv"].value is True
    if expected_target == "cusolver_gesvd_ffi":
        *_, m, n = shape
        assert config(call)["transposed"].value is (m < n)


def test_gesvd_without_uv_gets_scalar_placeholders_for_the_vectors():
    module = lowered("svd", [zeros((1100, 8), np.float32)], full_matrices=True, compute_uv=False)
    (call,) = custom_calls(module)
    assert target(call) == "cusolver_gesvd_ffi"
    types = [str(r.type) for r in call.results]
    assert types == [
        "tensor<1100x8xf32>",
        "tensor<8xf32>",
        "tensor<f32>",
        "tensor<f32>",
        "tensor<i32>",
    ]


def test_svd_without_uv_returns_only_singular_values():
    module = lowered("svd", [zeros((5, 3), np.float32)], full_matrices=False, compute_uv=False)
    (call,) = custom_calls(module)
    assert config(call)["compute_uv"].value is False
    main = module.body.operations[0]
    assert [str(t) for t in main.type.results] == ["tensor<3xf32>"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("conjugate_a", [False, True])
def test_triangular_solve_is_stablehlo_triangular_solve(dtype, transpose_a, conjugate_a):
    params = dict(
        left_side=True,
        lower=True,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=False,
    )
    module = lowered(
        "triangular_solve", [zeros((2, 4, 4), dtype), zeros((2, 4, 3), dtype)], **params
    )
    (op,) = ops_named(module, "stablehlo.triangular_solve")
    expected = "NO_TRANSPOSE"
    if transpose_a:
        expected = "ADJOINT" if conjugate_a else "TRANSPOSE"
    assert expected in str(op.attributes["transpose_a"])


@pytest.mark.parametrize(
    ("name", "shape", "params", "message"),
    [
        ("qr", (4, 4), {"full_matrices": True, "pivoting": True}, "pivoting"),
        ("eigh", (4, 4), {"lower": True, "subset_by_index": (0, 2)}, "subset_by_index"),
        (
            "svd",
            (4, 4),
            {"full_matrices": True, "compute_uv": True, "subset_by_index": (1, 3)},
            "subset_by_index",
        ),
    ],
)
def test_options_the_routines_lack_are_a_lowering_error(name, shape, params, message):
    # The rule's NotImplementedError, as ember reports a failed lowering: naming the platform.
    with pytest.raises(LoweringError, match=f"platform 'cuda' failed .*{message}"):
        lowered(name, [zeros(shape, np.float32)], **params)


def test_integer_operands_are_a_type_error():
    with pytest.raises(TypeError, match="cuSOLVER takes float32"):
        lowered("cholesky", [zeros((3, 3), np.int32)])


def test_register_overrides_only_primitives_ember_defines():
    registry = LoweringRegistry("cuda-linalg-test")
    skipped = linalg.register(registry, "cuda")
    known = rules.all_primitives()
    assert skipped == [name for name in linalg.RULES if name not in known]
    assert registry.registered == [(n, "cuda") for n in linalg.RULES if n in known]


# --------------------------------------------------------------------------------------------
# XLA's GPU compiler builds the programs for a described H100 (no GPU needed): it finds each
# custom call's handler among those the plugin registered, and checks the operands' types.

needs_cuda_wheels = pytest.mark.skipif(
    not bytecode.cuda_compiler_available(),
    reason="the CUDA PJRT plugin's wheels (jax-cuda12-plugin, jax-cuda12-pjrt) are not installed",
)


@pytest.fixture(scope="module")
def h100():
    """Compile-only H100 devices of the CUDA plugin, with the cuSOLVER handlers registered."""
    library = bytecode.cuda_plugin_library()
    handlers = pjrt.register_plugin_extension(
        "cuda", library, libraries.FFI_EXTENSION, "CUDA", libraries.LINALG_HANDLER_MODULES
    )
    c_api = _jaxlib.plugin_c_api("cuda", library)
    if c_api is None or "cusolver_potrf_ffi" not in handlers:
        pytest.skip("another jaxlib user holds the CUDA plugin's C API in this process")
    topology = xla_client.make_c_api_device_topology(
        c_api, "", target_config=H100, topology="1x1x1"
    )
    return topology._make_compile_only_devices()


def compiled_hlo(devices, module):
    executable = devices[0].client.compile(
        module,
        executable_devices=_jax.DeviceList(tuple(devices)),
        compile_options=_jaxlib.compile_options(devices),
    )
    (hlo,) = executable.hlo_modules()
    return hlo.to_string()


COMPILED = [
    ("cholesky", [(2, 8, 8)], {}, ["cusolver_potrf_ffi"]),
    ("lu", [(3, 6, 4)], {}, ["cusolver_getrf_ffi", "cu_lu_pivots_to_permutation"]),
    ("qr", [(6, 4)], {"full_matrices": True}, ["cusolver_geqrf_ffi", "cusolver_orgqr_ffi"]),
    ("qr", [(2, 4, 6)], {"full_matrices": False}, ["cusolver_geqrf_ffi", "cusolver_orgqr_ffi"]),
    ("eigh", [(2, 8, 8)], {"lower": True}, ["cusolver_syevd_ffi"]),
    ("svd", [(6, 4)], {"full_matrices": False, "compute_uv": True}, ["cusolver_gesvdj_ffi"]),
    ("svd", [(8, 1100)], {"full_matrices": False, "compute_uv": True}, ["cusolver_gesvd_ffi"]),
    ("svd", [(1100, 8)], {"full_matrices": True, "compute_uv": False}, ["cusolver_gesvd_ffi"]),
]


@needs_cuda_wheels
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize(("name", "shapes", "params", "targets"), COMPILED)
def test_xla_compiles_the_solver_calls_for_an_h100(h100, name, shapes, params, targets, dtype):
    module = lowered(name, [zeros(s, dtype) for s in shapes], **params)
    hlo = compiled_hlo(h100, module)
    for target in targets:
        assert f'custom_call_target="{target}"' in hlo


@needs_cuda_wheels
def test_xla_compiles_the_triangular_solve_into_cublas_trsm(h100):
    params = dict(
        left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False
    )
    module = lowered(
        "triangular_solve", [zeros((2, 8, 8), np.float32), zeros((2, 8, 3), np.float32)], **params
    )
    assert "triangularSolve" in compiled_hlo(h100, module)


@needs_cuda_wheels
def test_xla_rejects_a_custom_call_without_a_registered_handler(h100):
    # What makes the compile tests above meaningful: XLA looks each target up.
    module = lowered("cholesky", [zeros((4, 4), np.float32)])
    text = str(module).replace("cusolver_potrf_ffi", "cusolver_no_such_routine_ffi")
    with pytest.raises(Exception, match="cusolver_no_such_routine_ffi"):
        compiled_hlo(h100, _jaxlib.parse_module(text))
