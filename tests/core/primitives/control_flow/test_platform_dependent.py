"""``lax.platform_dependent``: the branch for the platform a program runs on, chosen when it
is lowered (only that branch is compiled), under every transformation."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import LoweringError
from ember.extend import call_named_kernel
from tests.core.util import assert_close

# What each platform's branch multiplies by: the test runs on whichever platform is default.
_FACTORS = {"cpu": 2.0, "reference": 3.0}


def _by_platform(x):
    return lax.platform_dependent(
        x,
        cpu=lambda x: x * 2.0,
        reference=lambda x: x * 3.0,
        default=lambda x: x * 5.0,
    )


def _factor() -> float:
    return _FACTORS.get(ember.default_backend(), 5.0)


def test_the_branch_of_the_platform_runs_eagerly_and_under_jit():
    x = np.arange(3.0, dtype=np.float32)
    assert_close(_by_platform(x), x * _factor())
    assert_close(ember.jit(_by_platform)(x), x * _factor())


def test_transformations_go_through_the_chosen_branch():
    x = np.arange(3.0, dtype=np.float32)
    grad = ember.jit(ember.grad(lambda x: enp.sum(_by_platform(x) ** 2)))(x)
    assert_close(grad, 2 * _factor() ** 2 * x)
    assert_close(ember.vmap(_by_platform)(x), x * _factor())
    _, ys = lax.scan(lambda c, x: (c, _by_platform(x)), 0.0, x)
    assert_close(ys, x * _factor())


def test_only_the_chosen_branch_is_compiled():
    # A kernel only a platform absent here implements (as a GPU plugin's fused kernels): its
    # branch is traced (it is in the jaxpr) but never lowered, so the program compiles.
    def fused(x):
        result = ember.ShapeDtypeStruct(x.shape, x.dtype)
        return call_named_kernel("nowhere.fused_add_one", x, result_shape_dtypes=result)

    with pytest.raises(LoweringError, match="no implementation on platform"):
        ember.jit(fused)(np.float32(1.0))

    def f(x):
        return lax.platform_dependent(x, nowhere=fused, default=lambda x: x + 1.0)

    assert "nowhere.fused_add_one" in str(ember.make_jaxpr(f)(np.float32(1.0)))
    assert float(ember.jit(f)(np.float32(1.0))) == 2.0
    assert float(f(np.float32(1.0))) == 2.0


def test_one_function_for_several_platforms_is_one_branch():
    double = lambda x: x * 2.0
    jaxpr = ember.make_jaxpr(
        lambda x: lax.platform_dependent(x, cpu=double, reference=double, tpu=lambda x: -x)
    )(np.float32(1.0))
    (cond,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "cond"]
    assert cond.params["platforms"] == (("cpu", "reference"), ("tpu",))
    assert len(cond.params["branches"]) == 2


def test_a_platform_without_a_branch_or_default_is_a_lowering_error():
    f = ember.jit(lambda x: lax.platform_dependent(x, tpu=lambda x: x))
    with pytest.raises(LoweringError, match="no branch for platform .* branches are for tpu"):
        f(np.float32(1.0))


def test_bad_branches_are_refused():
    with pytest.raises(TypeError, match="'cpu' branch must be a callable"):
        lax.platform_dependent(1.0, cpu=3)
    with pytest.raises(TypeError, match="'default' branch must be a callable"):
        lax.platform_dependent(1.0, cpu=lambda x: x, default=3)
    with pytest.raises(ValueError, match="'cuda' or 'rocm'"):
        lax.platform_dependent(1.0, gpu=lambda x: x)
    with pytest.raises(TypeError, match="at least one branch"):
        lax.platform_dependent(1.0)


@pytest.mark.parametrize("policy", [None, ember.checkpoint_policies.dots_saveable])
def test_checkpointed_gradients_keep_the_platform_choice(policy):
    # Partial evaluation splits the cond in two (with or without a policy): both halves must
    # still choose by platform.
    w = np.linspace(-1.0, 1.0, 9, dtype=np.float32).reshape(3, 3)
    x = np.arange(3.0, dtype=np.float32)

    def layer(x):
        return enp.sum(enp.tanh(_by_platform(w @ x)))

    checked = ember.checkpoint(layer, policy=policy)
    expected = ember.grad(lambda x: enp.sum(enp.tanh(_factor() * (w @ x))))(x)
    assert_close(ember.jit(ember.grad(checked))(x), expected, rtol=1e-5)
