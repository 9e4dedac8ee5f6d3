"""debug_nans / debug_infs: eager outputs checked, jitted calls re-run op by op to name the
primitive and the user's line (execution/float_checks.py, with jit's checked call)."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp


def _line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (a comment after the operation)."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(marker))


def _logs(x):
    y = x + 1.0
    z = enp.log(y)  # the log line
    return z * 2.0


def _divides(x):
    y = x * 3.0
    return 1.0 / y  # the division line


def _array(*values):
    return enp.asarray(np.array(values, np.float32))


def test_nan_under_jit_names_the_primitive_and_the_users_line():
    f = ember.jit(_logs)
    with ember.debug_nans():
        with pytest.raises(FloatingPointError) as info:
            f(_array(-2.0, 1.0))
    message = str(info.value)
    assert message.startswith("invalid value (nan) encountered in log")
    assert f"{__file__}:{_line_of('# the log line')} in _logs" in message


def test_inf_under_jit_names_the_primitive_and_the_users_line():
    f = ember.jit(_divides)
    with ember.debug_infs():
        with pytest.raises(FloatingPointError) as info:
            f(_array(0.0, 1.0))
    message = str(info.value)
    assert message.startswith("invalid value (inf) encountered in div")
    assert f"{__file__}:{_line_of('# the division line')} in _divides" in message


def test_nan_in_a_nested_jit_is_found_op_by_op():
    inner = ember.jit(_logs)
    outer = ember.jit(lambda x: inner(x) + 1.0)
    with ember.debug_nans(), pytest.raises(FloatingPointError, match="encountered in log"):
        outer(_array(-3.0))


def test_eager_operation_is_checked():
    with ember.debug_nans():
        with pytest.raises(FloatingPointError) as info:
            enp.sqrt(_array(-1.0))  # the eager line
    assert "encountered in sqrt" in str(info.value)
    assert f"{__file__}:{_line_of('# the eager line')}" in str(info.value)


def test_nothing_is_checked_when_off():
    out = ember.jit(_logs)(_array(-2.0, 1.0))
    assert np.isnan(np.asarray(out)[0])
    assert np.isinf(np.asarray(ember.jit(_divides)(_array(0.0)))[0])


def test_nans_and_infs_are_checked_separately():
    with ember.debug_infs():  # a NaN passes when only infinities are checked
        assert np.isnan(np.asarray(ember.jit(_logs)(_array(-2.0)))[0])
    with ember.debug_nans():
        assert np.isinf(np.asarray(ember.jit(_divides)(_array(0.0)))[0])


def test_finite_values_and_integers_pass_and_the_option_is_restored():
    with ember.debug_nans(), ember.debug_infs():
        out = ember.jit(_logs)(_array(1.0, 2.0))
        counts = enp.arange(4) // 1
    np.testing.assert_allclose(np.asarray(out), 2 * np.log([2.0, 3.0]), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(counts), np.arange(4))
    assert ember.config.debug_nans is False and ember.config.debug_infs is False


def test_config_update_and_jax_alias():
    ember.config.update("jax_debug_nans", True)
    try:
        assert ember.config.debug_nans is True
        with pytest.raises(FloatingPointError):
            ember.jit(_logs)(_array(-2.0))
    finally:
        ember.config.update("debug_nans", False)
    assert np.isnan(np.asarray(ember.jit(_logs)(_array(-2.0)))[0])


def test_nan_only_under_jit_is_reported_for_the_jitted_function():
    # A NaN constant as an output: no primitive produces it when run op by op.
    f = ember.jit(lambda x: (x, np.float32(np.nan)))
    with ember.debug_nans(), pytest.raises(FloatingPointError) as info:
        f(_array(1.0))
    assert "encountered in jit(<lambda>)" in str(info.value)
    assert "op by op" in str(info.value)


def test_environment_variable_turns_it_on():
    code = (
        "import numpy as np, ember, ember.numpy as enp\n"
        "try:\n"
        "    ember.jit(enp.log)(enp.asarray(np.float32(-1)))\n"
        "except FloatingPointError as e:\n"
        "    print('raised:', e)\n"
    )
    env = dict(os.environ, EMBER_DEBUG_NANS="1", EMBER_PLATFORMS="reference")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert "raised: invalid value (nan) encountered in log" in done.stdout, done.stderr
