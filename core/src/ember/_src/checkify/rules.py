"""The checks checkify adds to single primitives: NaNs, division by zero, indices out of
bounds, and the user's own ``check``.

As in JAX: ``nan_checks`` test the *outputs* of the primitives that can make a NaN (a NaN fed
into ``add`` is reported there too: the first failure is the first primitive that saw one);
``div_checks`` test ``div``'s divisor for zeros (of any dtype) and, for integers, ``rem``'s;
``index_checks`` test the start indices of ``gather``, ``dynamic_slice``,
``dynamic_update_slice`` and the scatters, which XLA would otherwise clamp or drop silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, rules
from ember._src.checkify.check import check_p
from ember._src.checkify.check_error import check_error_p
from ember._src.checkify.error import (
    DivisionByZeroError,
    ErrorCategory,
    ErrorSite,
    FailedCheckError,
    JaxException,
    NaNError,
    OOBError,
)
from ember._src.checkify.interpreter import register_check_rule, where
from ember._src.checkify.state import ErrorState, slot_key
from ember._src.core import Primitive, ShapedArray, get_aval
from ember._src.ir import Eqn
from ember._src.numpy.creation import asarray
from ember._src.numpy.elementwise import equal, isnan, logical_not, logical_or
from ember._src.numpy.manipulation import ravel, stack
from ember._src.numpy.reductions import any as any_, argmin
from ember._src.primitives.shape import convert_element_type
from ember._src.tree.util import tree_flatten, tree_unflatten

_NO_PAYLOAD = tree_flatten([])[1]
_OOB_PAYLOAD = tree_flatten([0])[1]
_OOB_SLOT = slot_key([ShapedArray((3,), np.int32)])


def _site(exception: JaxException) -> ErrorSite:
    """The site of an error with no payload: its exception is known when it is traced."""
    return ErrorSite(lambda _: exception, _NO_PAYLOAD, ())


# --------------------------------------------------------------------------------------------
# NaNs

# The primitives that can make a NaN from numbers that are not (JAX's list, by ember's names).
_NAN_PRIMITIVES = (
    "acos acosh add asin asinh atan atan2 atanh cbrt conv_general_dilated cos cosh digamma div "
    "dot_general erf erf_inv erfc exp expm1 fft igamma igamma_grad_a igammac integer_pow lgamma "
    "log log1p logistic mul pad polygamma pow psum reduce_prod reduce_sum reduce_window_sum rem "
    "rsqrt sin sinh sqrt square sub tan tanh"
).split()


def check_nans(state: ErrorState, enabled: frozenset[ErrorCategory], eqn: Eqn, outs: Any) -> None:
    if NaNError not in enabled:
        return
    values = outs if eqn.primitive.multiple_results else [outs]
    avals = [v.aval for v in eqn.outvars]
    flags = [any_(isnan(v)) for v, a in zip(values, avals) if dtypes.is_inexact(a.dtype)]
    if not flags:
        return
    failed = flags[0]
    for flag in flags[1:]:
        failed = logical_or(failed, flag)
    state.record(failed, _site(NaNError(where(eqn), eqn.primitive.name)))


def _nan_rule(state, enabled, eqn, *invals):
    outs = eqn.primitive.bind(*invals, **eqn.params)
    check_nans(state, enabled, eqn, outs)
    return outs


# --------------------------------------------------------------------------------------------
# Division by zero


def _div_rule(state, enabled, eqn, x, y):
    if DivisionByZeroError in enabled:
        state.record(any_(equal(y, 0)), _site(DivisionByZeroError(where(eqn))))
    return _nan_rule(state, enabled, eqn, x, y)


def _rem_rule(state, enabled, eqn, x, y):
    # An integer remainder by zero has no defined value (a float one is a NaN, checked below).
    if DivisionByZeroError in enabled and dtypes.is_integer(eqn.invars[1].aval.dtype):
        state.record(any_(equal(y, 0)), _site(DivisionByZeroError(where(eqn))))
    return _nan_rule(state, enabled, eqn, x, y)


# --------------------------------------------------------------------------------------------
# Indices out of bounds


def _record_oob(
    state: ErrorState,
    eqn: Eqn,
    indices: Any,
    index_dims: Sequence[int],
    upper: Sequence[int],
    operand_shape: tuple[int, ...],
) -> None:
    """Record an error if some start index (``indices``' last axis runs over the operand's
    dimensions ``index_dims``) is negative or above its ``upper`` bound. The payload is the
    first bad index, its axis and that axis's size."""
    if not index_dims or get_aval(indices).size == 0:
        return
    bounds = np.asarray(upper, np.int64).astype(get_aval(indices).dtype)
    bad = logical_or(indices < 0, indices > bounds)
    first = argmin(logical_not(ravel(bad)))
    axis = asarray(np.asarray(index_dims, np.int32))[first % len(index_dims)]
    sizes = asarray(np.asarray(operand_shape, np.int32))
    index = convert_element_type(ravel(indices)[first], np.int32)
    payload = stack([index, axis, sizes[axis]])
    name, shape, at = eqn.primitive.name, operand_shape, where(eqn)

    def build(leaves: list[np.ndarray]) -> OOBError:
        return OOBError(at, name, shape, leaves[0])

    state.record(any_(bad), ErrorSite(build, _OOB_PAYLOAD, _OOB_SLOT), [payload])


def _gather_rule(state, enabled, eqn, operand, indices):
    out = eqn.primitive.bind(operand, indices, **eqn.params)
    if OOBError in enabled:
        shape = eqn.invars[0].aval.shape
        dn, sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
        dims = dn.start_index_map
        _record_oob(state, eqn, indices, dims, [shape[d] - sizes[d] for d in dims], shape)
    return out


def _dynamic_slice_rule(state, enabled, eqn, operand, *starts):
    out = eqn.primitive.bind(operand, *starts, **eqn.params)
    if OOBError in enabled:
        shape = eqn.invars[0].aval.shape
        upper = [d - s for d, s in zip(shape, eqn.params["slice_sizes"])]
        _record_oob(state, eqn, _start_vector(starts), range(len(shape)), upper, shape)
    return out


def _dynamic_update_slice_rule(state, enabled, eqn, operand, update, *starts):
    out = eqn.primitive.bind(operand, update, *starts, **eqn.params)
    if OOBError in enabled:
        shape = eqn.invars[0].aval.shape
        upper = [d - u for d, u in zip(shape, eqn.invars[1].aval.shape)]
        _record_oob(state, eqn, _start_vector(starts), range(len(shape)), upper, shape)
    return out


def _start_vector(starts: Sequence[Any]) -> Any:
    return stack([convert_element_type(s, np.int32) for s in starts]) if starts else None


def _scatter_rule(state, enabled, eqn, operand, indices, updates):
    out = eqn.primitive.bind(operand, indices, updates, **eqn.params)
    if OOBError in enabled:
        shape = eqn.invars[0].aval.shape
        dn = eqn.params["dimension_numbers"]
        window = iter(dn.update_window_dims)
        update_shape = eqn.invars[2].aval.shape
        sizes = [
            1
            if d in dn.inserted_window_dims or d in dn.operand_batching_dims
            else update_shape[next(window)]
            for d in range(len(shape))
        ]
        dims = dn.scatter_dims_to_operand_dims
        _record_oob(state, eqn, indices, dims, [shape[d] - sizes[d] for d in dims], shape)
    check_nans(state, enabled, eqn, out)
    return out


# --------------------------------------------------------------------------------------------
# The user's checks


def _check_rule(state, enabled, eqn, pred, *payload):
    if FailedCheckError in enabled:
        state.record(logical_not(pred), eqn.params["site"], list(payload))
    return []


def _check_error_rule(state, enabled, eqn, *leaves):
    state.merge(tree_unflatten(eqn.params["error_tree"], leaves))
    return []


def _register() -> None:
    known = rules.all_primitives()

    def register(name: str, rule) -> None:
        primitive: Primitive | None = known.get(name)
        if primitive is not None:
            register_check_rule(primitive, rule)

    for name in _NAN_PRIMITIVES:
        register(name, _nan_rule)
    register("div", _div_rule)
    register("rem", _rem_rule)
    register("gather", _gather_rule)
    register("dynamic_slice", _dynamic_slice_rule)
    register("dynamic_update_slice", _dynamic_update_slice_rule)
    for name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
        register(name, _scatter_rule)
    register_check_rule(check_p, _check_rule)
    register_check_rule(check_error_p, _check_error_rule)


_register()
