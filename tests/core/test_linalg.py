"""ember.numpy.linalg against numpy.linalg, with gradients through the factorisations."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp

from .util import assert_close

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 4)).astype(np.float32)
B = rng.normal(size=(4, 2)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
STACK = rng.normal(size=(3, 4, 4)).astype(np.float32)

CASES = {
    "solve": lambda m: m.linalg.solve(A, B),
    "solve_vector": lambda m: m.linalg.solve(A, B[:, 0]),
    "inv": lambda m: m.linalg.inv(A),
    "det": lambda m: m.linalg.det(A),
    "det_stack": lambda m: m.linalg.det(STACK),
    "slogdet_sign": lambda m: m.linalg.slogdet(STACK)[0],
    "slogdet_log": lambda m: m.linalg.slogdet(STACK)[1],
    "cholesky": lambda m: m.linalg.cholesky(SPD),
    "norm_fro": lambda m: m.linalg.norm(A),
    "norm_1": lambda m: m.linalg.norm(A, 1),
    "norm_inf": lambda m: m.linalg.norm(A, np.inf),
    "norm_axis": lambda m: m.linalg.norm(B, axis=0),
    "matrix_power": lambda m: m.linalg.matrix_power(A, 3),
    "matrix_power_negative": lambda m: m.linalg.matrix_power(A, -2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_close(CASES[name](enp), CASES[name](np), rtol=1e-3, atol=1e-4)


def test_array_api_helpers():
    assert_close(enp.linalg.trace(A), np.trace(A))
    assert_close(enp.linalg.diagonal(STACK, offset=1), np.diagonal(STACK, 1, -2, -1))
    assert_close(enp.linalg.cross(B[:3, 0], B[1:4, 1]), np.cross(B[:3, 0], B[1:4, 1]), rtol=1e-5)
    assert_close(enp.linalg.vector_norm(B, ord=3), np.linalg.norm(B.ravel(), 3), rtol=1e-5)
    assert_close(enp.linalg.cholesky(SPD, upper=True), np.linalg.cholesky(SPD).T, rtol=1e-4)


def test_gradients_and_jit():
    grad_det = ember.grad(enp.linalg.det)(A)
    assert_close(grad_det, np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-3, atol=1e-3)
    grad_solve = ember.grad(lambda m: enp.linalg.solve(m, B).sum())(A)
    expected = -np.linalg.inv(A).T @ np.ones((4, 2)) @ np.linalg.solve(A, B).T
    assert_close(grad_solve, expected, rtol=1e-3, atol=1e-3)
    assert_close(ember.jit(enp.linalg.inv)(A), np.linalg.inv(A), rtol=1e-3, atol=1e-4)


def test_shape_errors():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        enp.linalg.inv(B)
