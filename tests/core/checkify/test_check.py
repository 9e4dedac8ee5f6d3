"""``check`` and ``debug_check`` outside ``checkify``: eager, under grad and vmap, staged."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import CheckifyError
from ember.experimental import checkify


def positive_sin(x):
    checkify.check(x > 0, "x must be positive, got {x}", x=x)
    return enp.sin(x)


def test_eager_check_raises_at_once_with_the_formatted_value():
    with pytest.raises(CheckifyError, match=r"x must be positive, got -2.0 \(`check` failed at"):
        positive_sin(np.float32(-2.0))
    assert float(positive_sin(np.float32(1.0))) == pytest.approx(np.sin(1.0))


def test_the_error_is_jaxs_runtime_error_and_a_value_error():
    assert checkify.JaxRuntimeError is CheckifyError
    with pytest.raises(ValueError, match="test_check.py"):
        positive_sin(np.float32(-1.0))


def test_eager_grad_checks_the_primal_value():
    assert float(ember.grad(positive_sin)(np.float32(0.5))) == pytest.approx(np.cos(0.5))
    with pytest.raises(CheckifyError, match="got -0.5"):
        ember.grad(positive_sin)(np.float32(-0.5))


def test_eager_vmap_fails_if_any_lane_fails_and_shows_the_first():
    np.testing.assert_allclose(ember.vmap(positive_sin)(enp.array([1.0, 2.0])), np.sin([1, 2]))
    with pytest.raises(CheckifyError, match="got -2.0"):
        ember.vmap(positive_sin)(enp.array([1.0, -2.0, -3.0]))


def test_staging_a_check_without_checkify_says_to_functionalize_it():
    with pytest.raises(ValueError, match="not functionalized.*checkify.checkify"):
        ember.jit(positive_sin)(np.float32(1.0))
    with pytest.raises(ValueError, match="not functionalized"):
        lax.scan(lambda c, x: (c + positive_sin(x), None), 0.0, enp.ones(3))


def test_debug_check_is_dropped_outside_checkify():
    def f(x):
        checkify.debug_check(x > 0, "never raised: {}", x)
        return x + 1

    assert float(f(np.float32(-1.0))) == 0.0
    assert float(ember.jit(f)(np.float32(-1.0))) == 0.0
    err, out = checkify.checkify(f)(np.float32(-1.0))
    assert err.get().startswith("never raised: -1.0 (`check` failed")
    assert float(out) == 0.0


def test_the_predicate_must_be_a_scalar_bool():
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.check(enp.array([True, False]), "two predicates")
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.check(np.float32(1.0), "a float")
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.check(1, "an int")
    with pytest.raises(TypeError, match="message string"):
        checkify.check(True, 42)
    checkify.check(True, "a Python bool is fine")
    checkify.check(np.bool_(True), "and a NumPy one")


def test_python_scalars_and_strings_in_the_message_stay_as_they_are():
    with pytest.raises(CheckifyError, match=r"3 items in 'bag', 1.50 each, total 4.5"):
        checkify.check(
            enp.array(False),
            "{} items in {name!r}, {price:.2f} each, total {}",
            3,
            4.5,
            name="bag",
            price=np.float32(1.5),
        )
