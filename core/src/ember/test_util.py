"""Testing helpers for code built on ember (numerical gradient checks)."""

from ember._src.test_util import (
    check_grads as check_grads,
    check_jvp as check_jvp,
    check_vjp as check_vjp,
)
