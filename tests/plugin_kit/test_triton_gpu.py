"""The Triton-compiled Pallas kernels running natively on a CUDA GPU, against NumPy.

Needs the ``cuda`` platform (ember-plugin-cuda, which registers ``ember_plugin_kit.triton``
as its kernel compiler, and an NVIDIA GPU); skipped otherwise. One line:
``EMBER_PLATFORMS=cuda,cpu pytest tests/plugin_kit/test_triton_gpu.py -q``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.plugin_kit import triton_kernels


def _cuda_devices():
    try:
        return ember.devices("cuda")
    except Exception:  # no cuda platform: the plugin is not installed or found no GPU
        return []


pytestmark = pytest.mark.skipif(
    not _cuda_devices(), reason="no cuda platform (needs ember-plugin-cuda and an NVIDIA GPU)"
)

CASES = triton_kernels.cases()

# f32 dots run on tensor cores in TF32 (10-bit mantissas), as in JAX's Triton lowering.
TOLERANCE = {"matmul": 2e-2, "flash_attention": 1e-2, "masked_sum": 1e-3}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_runs_natively_and_matches_numpy(name):
    fn, args, expected = CASES[name]
    compiled = ember.jit(fn, device=_cuda_devices()[0])
    lowered = compiled.lower(*args).as_text()
    assert "__gpu$xla.gpu.triton" in lowered  # compiled by Triton, not interpreted
    result = np.asarray(compiled(*args))
    tol = TOLERANCE.get(name, 1e-5)
    np.testing.assert_allclose(result, expected, rtol=tol, atol=tol)
