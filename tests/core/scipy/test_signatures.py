"""ember.scipy, ember.image and ember.lax.linalg take JAX 0.10's parameters: names, order,
kinds and defaults, pinned as JAX's ``inspect.signature`` prints them (without annotations)."""

from __future__ import annotations

import enum
import importlib
import inspect

import pytest

import ember

JAX_SIGNATURES = [
    ("scipy.linalg.block_diag", "(*arrs)"),
    ("scipy.linalg.cho_factor", "(a, lower=False, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.cho_solve", "(c_and_lower, b, overwrite_b=False, check_finite=True)"),
    ("scipy.linalg.cholesky", "(a, lower=False, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.circulant", "(c)"),
    ("scipy.linalg.det", "(a, overwrite_a=False, check_finite=True)"),
    (
        "scipy.linalg.eigh",
        "(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, "
        "turbo=True, eigvals=None, type=1, check_finite=True)",
    ),
    (
        "scipy.linalg.eigh_tridiagonal",
        "(d, e, *, eigvals_only=False, select='a', select_range=None, tol=None, key=None)",
    ),
    ("scipy.linalg.expm", "(A, *, upper_triangular=False, max_squarings=16)"),
    ("scipy.linalg.expm_frechet", "(A, E, *, method=None, compute_expm=True)"),
    ("scipy.linalg.funm", "(A, func, disp=True)"),
    ("scipy.linalg.hankel", "(c, r=None)"),
    ("scipy.linalg.hessenberg", "(a, *, calc_q=False, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.inv", "(a, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.lu", "(a, permute_l=False, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.lu_factor", "(a, overwrite_a=False, check_finite=True)"),
    ("scipy.linalg.lu_solve", "(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True)"),
    ("scipy.linalg.polar", "(a, side='right', *, method='qdwh', eps=None, max_iterations=None)"),
    (
        "scipy.linalg.qr",
        "(a, overwrite_a=False, lwork=None, mode='full', pivoting=False, check_finite=True)",
    ),
    (
        "scipy.linalg.solve",
        "(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, "
        "check_finite=True, assume_a='gen')",
    ),
    (
        "scipy.linalg.solve_triangular",
        "(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None, "
        "check_finite=True)",
    ),
    (
        "scipy.linalg.qr_multiply",
        "(a, c, mode='right', pivoting=False, conjugate=False, overwrite_a=False, "
        "overwrite_c=False)",
    ),
    ("scipy.linalg.rsf2csf", "(T, Z, check_finite=True)"),
    ("scipy.linalg.schur", "(a, output='real')"),
    ("scipy.linalg.solve_sylvester", "(A, B, C, *, method='schur', tol=1e-08)"),
    ("scipy.linalg.sqrtm", "(A, blocksize=1)"),
    (
        "scipy.linalg.svd",
        "(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, "
        "lapack_driver='gesdd')",
    ),
    ("scipy.linalg.toeplitz", "(c, r=None)"),
    ("scipy.signal.convolve", "(in1, in2, mode='full', method='auto', precision=None)"),
    (
        "scipy.signal.convolve2d",
        "(in1, in2, mode='full', boundary='fill', fillvalue=0, precision=None)",
    ),
    ("scipy.signal.correlate", "(in1, in2, mode='full', method='auto', precision=None)"),
    (
        "scipy.signal.correlate2d",
        "(in1, in2, mode='full', boundary='fill', fillvalue=0, precision=None)",
    ),
    (
        "scipy.signal.csd",
        "(x, y, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None, "
        "detrend='constant', return_onesided=True, scaling='density', axis=-1, average='mean')",
    ),
    (
        "scipy.signal.welch",
        "(x, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None, "
        "detrend='constant', return_onesided=True, scaling='density', axis=-1, average='mean')",
    ),
    (
        "scipy.signal.stft",
        "(x, fs=1.0, window='hann', nperseg=256, noverlap=None, nfft=None, detrend=False, "
        "return_onesided=True, boundary='zeros', padded=True, axis=-1)",
    ),
    (
        "scipy.signal.istft",
        "(Zxx, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None, "
        "input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2)",
    ),
    ("scipy.signal.detrend", "(data, axis=-1, type='linear', bp=0, overwrite_data=None)"),
    ("scipy.signal.fftconvolve", "(in1, in2, mode='full', axes=None)"),
    ("scipy.optimize.minimize", "(fun, x0, args=(), *, method, tol=None, options=None)"),
    ("scipy.ndimage.map_coordinates", "(input, coordinates, order, mode='constant', cval=0.0)"),
    ("scipy.integrate.trapezoid", "(y, x=None, dx=1.0, axis=-1)"),
    (
        "scipy.interpolate.RegularGridInterpolator",
        "(points, values, method='linear', bounds_error=False, fill_value=nan)",
    ),
    ("image.resize", "(image, shape, method, antialias=True, precision=Precision.HIGHEST)"),
    (
        "image.scale_and_translate",
        "(image, shape, spatial_dims, scale, translation, method, antialias=True, "
        "precision=Precision.HIGHEST)",
    ),
    ("lax.linalg.cholesky", "(x, *, symmetrize_input=True)"),
    (
        "lax.linalg.eigh",
        "(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, "
        "subset_by_index=None, implementation=None)",
    ),
    ("lax.linalg.lu", "(x)"),
    ("lax.linalg.qr", "(x, *, pivoting=False, full_matrices=True, use_magma=None)"),
    (
        "lax.linalg.svd",
        "(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None)",
    ),
    (
        "lax.linalg.triangular_solve",
        "(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, "
        "unit_diagonal=False)",
    ),
    ("lax.linalg.tridiagonal_solve", "(dl, d, du, b, *, perturb_singular=False)"),
    ("lax.linalg.cholesky_update", "(r_matrix, w_vector)"),
    ("lax.linalg.hessenberg", "(a)"),
    ("lax.linalg.householder_product", "(a, taus)"),
    ("lax.linalg.lu_pivots_to_permutation", "(pivots, permutation_size)"),
    ("lax.linalg.ormqr", "(a, taus, c, *, left=True, transpose=False)"),
    (
        "lax.linalg.qdwh",
        "(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None)",
    ),
    (
        "lax.linalg.symmetric_product",
        "(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False)",
    ),
    ("lax.linalg.tridiagonal", "(a, *, lower=True)"),
]


class _Shown:
    """A default shown as JAX shows its enum defaults: ``Precision.HIGHEST``."""

    def __init__(self, value: enum.Enum):
        self.text = f"{type(value).__name__}.{value.name}"

    def __repr__(self) -> str:
        return self.text


def _plain(fn) -> str:
    params = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if isinstance(default, enum.Enum):
            default = _Shown(default)
        params.append(p.replace(annotation=inspect.Parameter.empty, default=default))
    return str(inspect.Signature(params))


@pytest.mark.parametrize("qualified, expected", JAX_SIGNATURES, ids=lambda v: str(v)[:40])
def test_signature_matches_jax(qualified, expected):
    module, name = qualified.rsplit(".", 1)
    assert _plain(getattr(importlib.import_module(f"ember.{module}"), name)) == expected


def test_optimize_results_fields():
    fields = ember.scipy.optimize.OptimizeResults._fields
    assert fields == ("x", "success", "status", "fun", "jac", "hess_inv", "nfev", "njev", "nit")


def test_submodules_are_attributes_of_ember():
    assert ember.image.resize is importlib.import_module("ember.image").resize
    assert ember.scipy.linalg.expm is importlib.import_module("ember.scipy.linalg").expm
    assert ember.lax.linalg.lu is importlib.import_module("ember.lax.linalg").lu
