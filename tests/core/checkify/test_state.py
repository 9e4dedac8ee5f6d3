"""The error state: the first failure wins, payloads share slots by type, padding."""

import numpy as np

from ember._src.checkify.error import ErrorSite, FailedCheckError
from ember._src.checkify.state import ErrorState, slot_key
from ember._src.core import ShapedArray
from ember._src.tree.util import tree_flatten


def site(message: str, n_payload: int = 1) -> ErrorSite:
    key = slot_key([ShapedArray((), np.float32)] * n_payload)
    tree = tree_flatten([0] * n_payload)[1]
    return ErrorSite(lambda values: FailedCheckError(None, message, *values), tree, key)


def test_the_first_failure_keeps_its_code_and_payload():
    state = ErrorState.empty()
    a, b, c = site("a {}"), site("b {}"), site("c {}")
    state.record(np.bool_(False), a, [np.float32(1.0)])
    state.record(np.bool_(True), b, [np.float32(2.0)])
    state.record(np.bool_(True), c, [np.float32(3.0)])
    assert int(state.code) == b.code
    assert len(state.slots) == 1  # the three sites share one slot: their payloads are f32[]
    assert state.to_error().get() == "b 2.0 (`check` failed)"


def test_no_failure_reads_none():
    state = ErrorState.empty()
    state.record(np.bool_(False), site("never {}"), [np.float32(1.0)])
    state.record(False, site("nor {}"), [np.float32(1.0)])
    assert int(state.code) == 0 and state.to_error().get() is None


def test_leaves_round_trip_and_padding_adds_zero_slots():
    state = ErrorState.empty()
    state.record(np.bool_(True), site("{} {}", 2), [np.float32(1.0), np.float32(2.0)])
    wide = slot_key([ShapedArray((3,), np.int32)])
    state.pad([wide])
    assert state.keys() == sorted(state.keys(), key=repr) and wide in state.keys()
    np.testing.assert_array_equal(state.slots[wide][0], np.zeros(3, np.int32))
    again = ErrorState.from_leaves(state.keys(), state.leaves(), state.sites)
    assert again.to_error().get() == "1.0 2.0 (`check` failed)"
    assert [a.str_short() for a in again.avals()] == ["i32[]", "f32[]", "f32[]", "i32[3]"]
