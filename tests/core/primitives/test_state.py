"""get, swap and addupdate on Refs (``primitives/state.py``): tracing, types, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.interpreters.discharge import discharge_state
from ember._src.interpreters.eval import eval_closed_jaxpr
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.primitives.state import (
    addupdate_p,
    ref_addupdate,
    ref_get,
    ref_swap,
    run_scoped,
    run_scoped_p,
    swap_p,
)
from ember._src.state_types import AbstractRef, IndexerSpec, Slice, read_effect, write_effect


def ref(*shape, dtype=np.float32):
    return AbstractRef(ShapedArray(shape, dtype))


I32 = ShapedArray((), np.int32)


def trace(fn, *avals):
    def flat(*args):
        out = fn(*args)
        return [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]

    return trace_to_jaxpr(flat, avals, name=fn.__name__)


def test_indexing_a_ref_tracer_reads_and_assigning_writes():
    def kernel(x_ref, o_ref, i):
        assert (x_ref.shape, x_ref.dtype, x_ref.ndim) == ((4, 8), np.float32, 2)
        o_ref[i, :] = x_ref[0] + 1.0

    closed = trace(kernel, ref(4, 8), ref(4, 8), I32)
    assert [e.primitive.name for e in closed.eqns] == ["get", "add", "swap"]
    get_eqn, _, swap_eqn = closed.eqns
    assert get_eqn.params["indexer"] == IndexerSpec((4, 8), (("index", 0), ("slice", 0, 8, 1)))
    assert swap_eqn.params["indexer"].entries == (("index", None), ("slice", 0, 8, 1))
    assert [v.aval.str_short() for v in swap_eqn.invars] == ["Ref{f32[4,8]}", "f32[8]", "i32[]"]


def test_a_jaxpr_over_refs_prints_its_ref_types_and_indexers_as_jax_does():
    def kernel(x_ref, o_ref, i, v):
        o_ref[:, 1] = x_ref[:, 0]
        old = ref_swap(o_ref, (Slice(i, 2), 0), v)
        ref_addupdate(o_ref, (i, slice(0, 3, 2)), old)

    text = str(trace(kernel, ref(4, 8), ref(4, 3), I32, ShapedArray((2,), np.float32)))
    assert text == (
        "{ lambda ; a:Ref{f32[4,8]} b:Ref{f32[4,3]} c:i32[] d:f32[2]. let\n"
        "    e:f32[4] <- a[:, 0]\n"
        "    b[:, 1] <- e\n"  # the old value is unused: a plain store
        "    f:f32[2], b[ds(c, 2), 0] <- b[ds(c, 2), 0], d\n"
        "    b[c, 0:3:2] += f\n"
        "  in () }"
    )


def test_augmented_assignment_reads_then_writes():
    def kernel(o_ref, v):
        o_ref[1:] += v

    closed = trace(kernel, ref(3), ShapedArray((2,), np.float32))
    assert [e.primitive.name for e in closed.eqns] == ["get", "add", "swap"]
    assert closed.eqns[0].params["indexer"] == closed.eqns[2].params["indexer"]


def test_swap_returns_the_old_value_and_addupdate_nothing():
    def kernel(o_ref, v):
        old = ref_swap(o_ref, (slice(0, 2),), v)
        assert ref_addupdate(o_ref, ..., enp.zeros(4, np.float32)) is None
        return old

    closed = trace(kernel, ref(4), ShapedArray((2,), np.float32))
    assert closed.out_avals[0].str_short() == "f32[2]"
    assert closed.eqns[-1].primitive is addupdate_p and not closed.eqns[-1].outvars


def test_a_python_scalar_is_stored_as_the_refs_dtype_and_broadcast():
    def kernel(o_ref):
        o_ref[...] = 0
        o_ref[1] = enp.float32(2.0)

    closed = trace(kernel, ref(2, 3))
    swaps = [e for e in closed.eqns if e.primitive is swap_p]
    assert [e.invars[1].aval.str_short() for e in swaps] == ["f32[2,3]", "f32[3]"]


def test_storing_a_value_of_the_wrong_shape_names_both_shapes():
    def kernel(o_ref):
        o_ref[0] = enp.ones((4,), np.float32)

    with pytest.raises(errors.ShapeMismatchError, match=r"shape \(4,\).*indexed to shape \(3,\)"):
        trace(kernel, ref(2, 3))


def test_storing_a_value_of_another_dtype_names_both_dtypes():
    def kernel(o_ref):
        o_ref[...] = enp.ones((3,), np.int32)

    with pytest.raises(errors.EmberTypeError, match="dtype int32 can't be stored.*float32"):
        trace(kernel, ref(3))


def test_indexing_past_a_refs_rank_is_an_index_error():
    with pytest.raises(IndexError, match="rank 1"):
        trace(lambda x_ref: x_ref[0, 0], ref(3))


def test_a_float_index_is_refused():
    with pytest.raises(IndexError, match="must be integers"):
        trace(lambda x_ref, f: x_ref[f], ref(3), ShapedArray((), np.float32))


def test_array_operations_refuse_a_ref():
    with pytest.raises(
        errors.EmberTypeError, match=r"add was applied to a Ref \(Ref\{f32\[3\]\}\)"
    ):
        trace(lambda x_ref: x_ref + 1.0, ref(3))


def test_get_refuses_an_array():
    with pytest.raises(errors.EmberTypeError, match="needs a Ref"):
        trace(lambda x: ref_get(x, ...), ShapedArray((3,), np.float32))


def test_reads_and_writes_carry_unordered_ref_effects():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    closed = trace(kernel, ref(3), ref(3))
    assert closed.jaxpr.effects == {read_effect, write_effect}
    assert closed.jaxpr.ordered_effects == []


def test_an_unused_read_is_dead_code_and_a_write_is_not():
    def kernel(x_ref, o_ref):
        x_ref[0]  # read, never used
        o_ref[...] = enp.ones(3, np.float32)
        ref_addupdate(o_ref, 1, np.float32(2.0))

    closed = trace(kernel, ref(3), ref(3))
    kept = [e.primitive.name for e in dce_jaxpr(closed.jaxpr).eqns]
    assert "get" not in kept and "swap" in kept and "addupdate" in kept


def test_evaluating_a_jaxpr_with_ref_operations_asks_for_discharge_first():
    closed = trace(lambda x_ref: x_ref[...], ref(3))
    with pytest.raises(errors.EmberTypeError, match=r"\(get\).*Refs must be discharged first"):
        evaluate_jaxpr(closed, [np.zeros(3, np.float32)])


# --------------------------------------------------------------------------------------------
# run_scoped


def test_run_scoped_gives_its_body_fresh_refs_first():
    def kernel(x_ref):
        def body(scratch_ref, acc_ref):
            scratch_ref[...] = x_ref[...]
            acc_ref[...] = 1
            return scratch_ref[1]

        return run_scoped(body, ShapedArray((3,), np.float32), AbstractRef(I32))

    closed = trace(kernel, ref(3))
    (eqn,) = closed.eqns
    assert eqn.primitive is run_scoped_p
    assert [a.str_short() for a in eqn.params["jaxpr"].in_avals] == [
        "Ref{f32[3]}",
        "Ref{i32[]}",
        "Ref{f32[3]}",
    ]
    assert closed.out_avals[0].str_short() == "f32[]"


def test_run_scoped_takes_types_with_a_shape_and_a_dtype_and_returns_pytrees():
    class Struct:
        shape, dtype = (2,), np.int32

    def kernel():
        def body(s_ref):
            s_ref[...] = enp.arange(2, dtype=np.int32)
            return {"first": s_ref[0], "all": s_ref[...]}

        out = run_scoped(body, Struct())
        return out["first"], out["all"]

    closed = trace(kernel)
    assert [a.str_short() for a in closed.out_avals] == ["i32[]", "i32[2]"]
    with pytest.raises(errors.EmberTypeError, match="must have a shape and a dtype"):
        trace(lambda: run_scoped(lambda r: None, (2,)))


def test_run_scoped_discharges_its_scratch_as_zeros_and_writes_through_to_outer_refs():
    def kernel(x_ref, o_ref):
        def body(s_ref):
            s_ref[1:] += x_ref[:2]
            o_ref[...] = s_ref[...] * 10.0
            return s_ref[0] + 1.0

        return run_scoped(body, ShapedArray((3,), np.float32))

    closed = discharge_state(trace(kernel, ref(3), ref(3)))
    first, _, o = eval_closed_jaxpr(closed, np.array([1, 2, 3], np.float32), np.ones(3, np.float32))
    assert float(first) == 1.0
    np.testing.assert_array_equal(np.asarray(o), [0, 10, 20])


def test_returning_a_scratch_ref_is_an_error():
    with pytest.raises(errors.EmberTypeError, match="returned a Ref"):
        trace(lambda: run_scoped(lambda r: r, ShapedArray((2,), np.float32)))


def test_lowering_a_jaxpr_with_ref_operations_asks_for_discharge_first():
    def f(x):
        def body(s_ref):
            s_ref[...] = x
            return s_ref[...]

        return run_scoped(body, ShapedArray((2,), np.float32))

    with pytest.raises(errors.EmberTypeError, match=r"\(run_scoped\).*discharged first"):
        ember.jit(f)(np.ones(2, np.float32))
