"""Python scalars as operands of the elementwise primitives (ember.lax's strict dtypes)."""

import numpy as np
import pytest

from ember import lax
from tests.core.util import assert_close


@pytest.mark.parametrize("op", [lax.add, lax.sub, lax.mul, lax.max, lax.div])
def test_python_scalars_of_different_kinds_are_refused_as_in_jax(op):
    with pytest.raises(TypeError, match="same dtype"):
        op(1, 1.0)


@pytest.mark.parametrize(
    "array, scalar",
    [(np.int32(1), 1.5), (np.int8(1), 2.0), (np.float32(1), 1j), (np.bool_(True), 1)],
)
def test_a_python_scalar_of_a_wider_kind_than_the_array_is_refused(array, scalar):
    # JAX refuses these too; converting would silently drop the scalar's fraction or phase
    with pytest.raises(TypeError, match="cannot take the dtype"):
        lax.add(np.asarray(array), scalar)
    with pytest.raises(TypeError, match="cannot take the dtype"):
        lax.mul(scalar, np.asarray(array))


def test_a_python_scalar_of_the_arrays_kind_takes_its_dtype():
    out = lax.add(np.float32(1), 1.0)
    assert out.dtype == np.float32 and not out.weak_type
    assert_close(out, 2.0)
    out = lax.add(np.int32(2), 3)
    assert out.dtype == np.int32
    assert_close(out, 5)


def test_python_scalars_of_one_kind_give_a_weakly_typed_result():
    out = lax.mul(2, 3)
    assert out.dtype == np.int32 and out.weak_type
    assert_close(out, 6)
