"""Block specs, grids and block mappings: how pallas_call cuts operands into blocks."""

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
from ember._src.core import ShapedArray
from ember._src.pallas.core import block_mapping, normalize_grid

F32 = np.dtype(np.float32)


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _copy(shape, grid, in_spec, out_spec=None):
    return pl.pallas_call(
        copy_kernel,
        out_shape=ember.ShapeDtypeStruct(shape, F32),
        grid=grid,
        in_specs=[in_spec],
        out_specs=out_spec or in_spec,
    )


def test_block_mapping_traces_the_index_map():
    aval = ShapedArray((64, 32), F32)
    mapping = block_mapping(
        pl.BlockSpec((16, None), lambda i, j: (i, j * 2)), aval, (4, 8), "input 0", "k"
    )
    assert mapping.block_shape == (16, None)
    assert mapping.block_sizes == (16, 1)
    assert mapping.squeezed_dims == (1,)
    assert mapping.block_aval == ShapedArray((16,), F32)
    assert [a.dtype for a in mapping.index_map.jaxpr.out_avals] == [np.dtype(np.int32)] * 2
    assert len(mapping.index_map.jaxpr.invars) == 2


def test_no_block_spec_is_the_whole_array_at_block_zero():
    mapping = block_mapping(pl.no_block_spec, ShapedArray((5, 3), F32), (2,), "input 0", "k")
    assert mapping.block_shape == (5, 3)
    assert mapping.padded_shape == (5, 3)


def test_blocks_that_do_not_divide_pad_to_whole_blocks():
    spec = pl.BlockSpec((4, pl.squeezed), lambda i, j: (i, j))
    mapping = block_mapping(spec, ShapedArray((10, 3), F32), (3, 3), "input 0", "k")
    assert mapping.block_shape == (4, None)
    assert mapping.padded_shape == (12, 3)


def test_grids():
    assert normalize_grid(3, "k") == (3,)
    assert normalize_grid((2, np.int64(4)), "k") == (2, 4)
    assert normalize_grid(None, "k") == ()
    with pytest.raises(ValueError, match=r"pallas_call 'k': grid dimensions must be non-neg"):
        normalize_grid((2, -1), "k")
    with pytest.raises(TypeError, match="grid must be an int or a tuple of ints"):
        normalize_grid(2.5, "k")


def test_a_block_shape_of_the_wrong_rank_names_the_kernel_and_operand():
    spec = pl.BlockSpec((8, 8), lambda i: (i, 0))
    with pytest.raises(
        ValueError,
        match=r"'copy_kernel', input 0 \(f32\[32\]\): the block shape"
        r" \(8, 8\) has 2 dimensions, but the array has 1",
    ):
        _copy((32,), (4,), spec, pl.BlockSpec((8,), lambda i: (i,)))(np.zeros(32, F32))


def test_an_index_map_taking_the_wrong_number_of_grid_indices():
    spec = pl.BlockSpec((8,), lambda i, j: (i,))
    with pytest.raises(ValueError, match=r"input 0 .* must take 1 grid indices"):
        _copy((32,), (4,), spec)(np.zeros(32, F32))


def test_an_index_map_returning_the_wrong_number_of_indices():
    spec = pl.BlockSpec((8,), lambda i: (i, 0))
    with pytest.raises(ValueError, match=r"returned 2 block indices, but the block shape \(8,\)"):
        _copy((32,), (4,), spec)(np.zeros(32, F32))


def test_an_index_map_must_return_integers():
    spec = pl.BlockSpec((8,), lambda i: (i * 1.5,))
    with pytest.raises(TypeError, match="must return integer scalars"):
        _copy((32,), (4,), spec)(np.zeros(32, F32))


def test_bad_block_dimensions():
    spec = pl.BlockSpec((0,), lambda i: (i,))
    with pytest.raises(ValueError, match="block dimensions must be positive ints or None"):
        _copy((32,), (4,), spec)(np.zeros(32, F32))


def test_memory_spaces_and_memory_refs():
    scratch = pl.ANY((8, 128), np.float32)
    assert isinstance(scratch, pl.MemoryRef)
    assert scratch.get_aval() == ShapedArray((8, 128), F32)
    assert scratch.memory_space is pl.ANY
    assert repr(pl.squeezed) == "pl.squeezed"


def test_grid_spec_holds_the_grid_and_specs():
    spec = pl.BlockSpec((8,), lambda i: (i,))
    call = pl.pallas_call(
        copy_kernel,
        out_shape=ember.ShapeDtypeStruct((32,), F32),
        grid_spec=pl.GridSpec(grid=(4,), in_specs=[spec], out_specs=spec),
    )
    x = np.arange(32, dtype=F32)
    np.testing.assert_array_equal(np.asarray(call(x)), x)
    with pytest.raises(ValueError, match="either grid_spec or grid"):
        pl.pallas_call(copy_kernel, out_shape=x, grid_spec=pl.GridSpec(), grid=(2,))
