"""The rest of jax.nn.initializers against samples pinned from JAX 0.10.2 (same key, same
values, from jax.random.PRNGKey(42) etc.): truncated_normal, delta_orthogonal and the
initializer protocol."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.random as er
from ember.nn import initializers
from tests.core.util import assert_close


def _same_samples(got, want):
    """Bit for bit on XLA; NumPy's transcendental functions (the reference backend) may
    differ from XLA's in the last place."""
    want = np.asarray(want, np.asarray(got).dtype)
    if ember.default_backend() == "reference":
        assert_close(got, want, rtol=2e-6 if want.dtype == np.float32 else 1e-3, atol=2e-7)
    else:
        np.testing.assert_array_equal(np.asarray(got), want)


def test_truncated_normal_matches_jax():
    key = er.PRNGKey(42)
    got = initializers.truncated_normal(0.5)(key, (2, 3))
    want = [
        [-0.013508249074220657, 0.22219040989875793, 0.14093853533267975],
        [0.07325402647256851, -0.059181150048971176, 0.10345374047756195],
    ]
    _same_samples(got, want)
    bounded = initializers.truncated_normal(2.0, lower=-1.0, upper=0.5)(key, (5,))
    want = [-0.4086833894252777, 0.10460466891527176, -0.06513789296150208, -0.2131217122077942,
            -0.5131058692932129]  # fmt: skip
    _same_samples(bounded, want)
    half = initializers.truncated_normal()(key, (4,), np.float16)
    assert half.dtype == np.float16
    want = [-0.0130767822265625, -0.0082550048828125, 0.016845703125, 0.00659942626953125]
    _same_samples(half, want)
    many = np.asarray(initializers.truncated_normal(1.0, lower=-1.5, upper=0.5)(key, (4000,)))
    assert many.min() >= -1.5 and many.max() <= 0.5


def test_delta_orthogonal_matches_jax():
    kernel = initializers.delta_orthogonal(scale=2.0)(er.PRNGKey(42), (3, 3, 2, 3))
    centre = [[-0.17585468292236328, 1.837182641029358, -0.7706075310707092],
              [1.744526743888855, 0.5156041383743286, 0.8311314582824707]]  # fmt: skip
    got = np.array(kernel)
    assert_close(got[1, 1], centre, rtol=2e-6, atol=2e-7)
    got[1, 1] = 0
    assert not got.any()
    one_d = np.asarray(initializers.delta_orthogonal()(er.PRNGKey(1), (4, 3, 3)))
    want = [[-0.07174074649810791, 0.11106675118207932, -0.9912201166152954],
            [-0.0720190480351448, 0.9906100630760193, 0.11621087044477463],
            [0.9948198199272156, 0.07972381263971329, -0.06306827068328857]]  # fmt: skip
    assert_close(one_d[1], want, rtol=2e-6, atol=2e-7)
    assert_close(one_d[1] @ one_d[1].T, np.eye(3), atol=1e-6)
    three_d = np.asarray(
        initializers.delta_orthogonal(column_axis=-2)(er.PRNGKey(3), (3, 3, 3, 2, 4))
    )
    want = [
        [-0.711297869682312, 0.1881241649389267, -0.2890264689922333, -0.6124772429466248],
        [0.4531198740005493, 0.848662793636322, 0.01464332640171051, -0.272469699382782],
    ]
    assert_close(three_d[1, 1, 1], want, rtol=2e-6, atol=2e-7)


def test_delta_orthogonal_rejects_bad_shapes():
    init = initializers.delta_orthogonal()
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        init(er.PRNGKey(0), (3, 3))
    with pytest.raises(ValueError, match="fan_in"):
        init(er.PRNGKey(0), (3, 4, 2))


def test_initializer_protocol():
    init: initializers.Initializer = initializers.truncated_normal()
    assert callable(init)
    assert isinstance(initializers.Initializer, type)
