"""Refs' abstract values, indexers and effects (``state_types.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from ember._src import errors
from ember._src.core import Effect, ShapedArray
from ember._src.state_types import (
    AbstractRef,
    AccumEffect,
    IndexerSpec,
    NDIndexer,
    ReadEffect,
    Slice,
    WriteEffect,
    accum_effect,
    has_lasting_effects,
    is_ref,
    read_effect,
    write_effect,
)

F32_8_128 = ShapedArray((8, 128), np.float32)


def test_an_abstract_ref_answers_like_its_array_and_prints_as_a_ref():
    ref = AbstractRef(F32_8_128)
    assert (ref.shape, ref.dtype, ref.ndim, ref.inner_aval) == ((8, 128), np.float32, 2, F32_8_128)
    assert ref.str_short() == "Ref{f32[8,128]}"
    assert str(ref) == "Ref{float32[8,128]}"
    assert ref == AbstractRef(ShapedArray((8, 128), np.float32))
    assert ref != F32_8_128 and hash(ref) == hash(AbstractRef(F32_8_128))
    assert is_ref(ref) and not is_ref(F32_8_128)


def test_a_ref_of_a_weakly_typed_array_is_strongly_typed():
    assert AbstractRef(ShapedArray((), np.float32, weak_type=True)).inner_aval.weak_type is False


def test_an_abstract_ref_wraps_only_a_shaped_array():
    with pytest.raises(TypeError, match="ShapedArray"):
        AbstractRef((8, 128))


def test_ref_effects_are_unordered_effects_and_only_a_read_may_be_dropped():
    for effect, cls in ((read_effect, ReadEffect), (write_effect, WriteEffect)):
        assert isinstance(effect, cls) and isinstance(effect, Effect) and not effect.ordered
    assert isinstance(accum_effect, AccumEffect) and not accum_effect.ordered
    assert not has_lasting_effects(frozenset({read_effect}))
    assert has_lasting_effects(frozenset({read_effect, write_effect}))
    assert has_lasting_effects(frozenset({accum_effect}))


# (index, shape): the result shape must be NumPy's.
NUMPY_CASES = [
    ((...,), (4, 5, 6)),
    ((1,), (4, 5, 6)),
    ((slice(None), 2), (4, 5, 6)),
    ((slice(1, 3), slice(None), -1), (4, 5, 6)),
    ((slice(0, 6, 2), ...), (6, 5)),
    ((Ellipsis, 3), (4, 5, 6)),
    ((np.array([0, 2, 1]), slice(None)), (4, 5)),
    ((slice(None), np.array([[0, 1], [2, 3]])), (4, 5)),
    ((1, slice(None), np.array([0, 2])), (4, 5, 6)),  # not adjacent: integer dims in front
    ((np.array([0, 1]), np.array([2, 3]), slice(1, 3)), (4, 5, 6)),
    ((slice(None), np.array([1]), np.array([[0], [2]])), (4, 5, 6)),
]


@pytest.mark.parametrize("index, shape", NUMPY_CASES)
def test_the_result_shape_of_an_index_is_numpys(index, shape):
    nd = NDIndexer.from_index(index, shape)
    assert nd.result_shape() == np.zeros(shape)[index].shape


@pytest.mark.parametrize("index, shape", NUMPY_CASES)
def test_an_indexer_round_trips_through_its_static_description(index, shape):
    nd = NDIndexer.from_index(index, shape)
    spec, dynamic = nd.flatten()
    again = NDIndexer.unflatten(spec, dynamic)
    assert again.result_shape() == nd.result_shape()
    assert again.flatten()[0] == spec
    hash(spec)  # a jaxpr parameter must be hashable


def test_the_static_description_is_the_documented_format():
    start = np.int32(3)  # an integer scalar that is not a Python int: a dynamic start
    nd = NDIndexer.from_index((2, Slice(start, 4), slice(0, 8, 2), np.array([1, 0])), (4, 9, 8, 2))
    spec, dynamic = nd.flatten()
    assert spec == IndexerSpec(
        shape=(4, 9, 8, 2),
        entries=(("index", 2), ("slice", 3, 4, 1), ("slice", 0, 4, 2), ("array",)),
    )
    assert len(dynamic) == 1 and np.array_equal(dynamic[0], [1, 0])
    assert repr(spec) == "[2, 3:7, 0:7:2, idx]"


def test_a_traced_start_is_a_dynamic_value_of_the_indexer():
    class Scalar:  # stands for a traced integer scalar: it has a shape and no int value
        shape = ()
        dtype = np.dtype(np.int32)

    i = Scalar()
    nd = NDIndexer(
        [i, Slice(i, 8), Slice(0, 16)],
        (4, 32, 16),
    )
    spec, dynamic = nd.flatten()
    assert spec.entries == (("index", None), ("slice", None, 8, 1), ("slice", 0, 16, 1))
    assert dynamic == [i, i]
    assert repr(spec) == "[i, ds(i, 8), :]"
    assert NDIndexer.unflatten(spec, dynamic).result_shape() == (8, 16)


def test_negative_static_indices_count_from_the_end():
    nd = NDIndexer.from_index((-1, slice(-3, None)), (4, 5))
    assert nd.flatten()[0].entries == (("index", 3), ("slice", 2, 3, 1))


def test_a_python_slice_becomes_a_static_slice():
    slc = Slice.from_slice(slice(1, None, 3), 10)
    assert (slc.start, slc.size, slc.stride) == (1, 3, 3)
    assert Slice.from_slice(slice(5, 2), 10).size == 0


def test_too_many_indices_is_an_index_error_naming_the_rank():
    with pytest.raises(IndexError, match=r"rank 2 \(shape \(4, 5\)\): got 3"):
        NDIndexer.from_index((0, 0, 0), (4, 5))


@pytest.mark.parametrize(
    "index, match",
    [
        ((4,), "index 4 is out of bounds for dimension 0"),
        ((0, Slice(3, 4)), r"out of bounds for dimension 1"),
        ((None,), "None"),
        ((True,), "boolean"),
        ((1.5,), "must be integers"),
        (("a",), "can't be indexed with str"),
        ((..., ...), "single ellipsis"),
    ],
)
def test_bad_indices_are_index_errors(index, match):
    with pytest.raises(IndexError, match=match):
        NDIndexer.from_index(index, (4, 5))


def test_integer_arrays_that_do_not_broadcast_are_an_index_error():
    nd = NDIndexer.from_index((np.array([0, 1]), np.array([0, 1, 2])), (4, 5))
    with pytest.raises(IndexError, match="do not broadcast"):
        nd.result_shape()


def test_a_slice_needs_a_static_size_and_a_positive_stride():
    with pytest.raises(errors.EmberTypeError, match="static ints"):
        Slice(0, np.array([2, 3]))
    with pytest.raises(ValueError, match="stride >= 1"):
        Slice(0, 4, 0)
    with pytest.raises(ValueError, match="negative step"):
        Slice.from_slice(slice(None, None, -1), 5)
