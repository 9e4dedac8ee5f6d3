"""The error sets and the ``Error`` value: reading, raising, batching, as a pytree."""

import numpy as np
import pytest

import ember
from ember.errors import CheckifyError
from ember.experimental import checkify


def test_error_sets_are_unions_of_error_kinds():
    assert checkify.user_checks == {checkify.FailedCheckError}
    assert checkify.float_checks == checkify.nan_checks | checkify.div_checks
    assert checkify.automatic_checks == checkify.float_checks | checkify.index_checks
    assert checkify.all_checks == checkify.automatic_checks | checkify.user_checks
    assert checkify.DivisionByZeroError in checkify.all_checks
    assert checkify.OOBError in checkify.index_checks


@pytest.mark.parametrize("bad", [None, "all", {1}, [checkify.NaNError], checkify.NaNError])
def test_errors_must_be_a_set_of_error_kinds(bad):
    with pytest.raises(TypeError, match="errors= must be a set of error kinds"):
        checkify.checkify(lambda x: x, errors=bad)


def failing(x):
    checkify.check(x < 3, "too big: {}", x)
    return x * 2


def test_no_error_reads_none_and_throws_nothing():
    err, out = checkify.checkify(failing)(np.int32(1))
    assert err.get() is None and err.get_exception() is None
    err.throw()
    assert int(out) == 2
    assert str(err) == "Error(None)"


def test_a_failed_check_reads_raises_and_gives_its_exception():
    err, out = checkify.checkify(failing)(np.int32(7))
    assert int(out) == 14
    message = err.get()
    assert message.startswith("too big: 7 (`check` failed at ") and "test_error.py" in message
    exc = err.get_exception()
    assert isinstance(exc, checkify.FailedCheckError)
    with pytest.raises(CheckifyError) as info:
        err.throw()
    assert str(info.value) == message
    assert isinstance(info.value.__cause__, checkify.FailedCheckError)


def test_a_batched_error_reports_every_failing_index():
    err, out = ember.vmap(checkify.checkify(failing))(np.array([5, 1, 4], np.int32))
    np.testing.assert_array_equal(out, [10, 2, 8])
    lines = err.get().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("at mapped index 0: too big: 5 (`check` failed")
    assert lines[1].startswith("at mapped index 2: too big: 4 (`check` failed")
    assert isinstance(err.get_exception(), checkify.BatchedError)
    with pytest.raises(CheckifyError, match="at mapped index 2"):
        err.throw()


def test_the_error_is_a_pytree_of_arrays():
    err, _ = checkify.checkify(failing)(np.int32(9))
    leaves, tree = ember.tree_util.tree_flatten(err)
    assert all(hasattr(leaf, "dtype") for leaf in leaves)
    again = ember.tree_util.tree_unflatten(tree, leaves)
    assert again.get() == err.get()
