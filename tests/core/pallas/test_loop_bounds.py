"""trip_count_axes: the grid axes whose program_id reaches the predicate of a loop."""

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax
from ember._src.interpreters.discharge import discharge_state
from ember._src.pallas.loop_bounds import trip_count_axes

F32 = np.dtype(np.float32)


def _axes_of(body, grid=(2, 3)):
    """trip_count_axes of a kernel ``body(x_ref, o_ref)`` over ``grid`` with (8,) blocks."""
    call = pl.pallas_call(
        body,
        out_shape=ember.ShapeDtypeStruct((8,), F32),
        grid=grid,
        in_specs=[pl.BlockSpec((8,), lambda *_: (0,))],
        out_specs=pl.BlockSpec((8,), lambda *_: (0,)),
    )
    closed = ember.make_jaxpr(call)(np.zeros(8, F32))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "pallas_call"]
    return trip_count_axes(discharge_state(eqn.params["call"].kernel).jaxpr)


def _sum_rows(lower, upper):
    """A kernel summing ``x_ref[r]`` for r in lower()..upper() (bounds traced in the kernel)."""

    def kernel(x_ref, o_ref):
        def step(r, acc):
            return acc + x_ref[r]

        total = lax.fori_loop(lower(), upper(), step, enp.float32(0))
        o_ref[...] = enp.full((8,), total)

    return kernel


@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [
        (lambda: 0, lambda: 8, set()),  # static bounds: a scan, the same for every program
        (lambda: 0, lambda: pl.program_id(1) + 1, {1}),
        (lambda: pl.program_id(0), lambda: 8, {0}),
        (lambda: pl.program_id(0), lambda: pl.program_id(1) * 2, {0, 1}),
        (lambda: 0, lambda: 8 // pl.num_programs(1), set()),  # num_programs is a constant
    ],
)
def test_the_axes_of_a_fori_loops_bounds(lower, upper, expected):
    assert _axes_of(_sum_rows(lower, upper)) == expected


def test_a_bound_read_from_a_block_depends_on_no_axis():
    def kernel(x_ref, o_ref):
        stop = x_ref[0].astype(enp.int32)
        o_ref[...] = enp.full((8,), lax.fori_loop(0, stop, lambda r, a: a + 1.0, 0.0))

    assert _axes_of(kernel) == set()


def test_what_each_step_adds_to_the_carry_counts():
    # The predicate reads only the carry, which each step moves by program_id(0) + 1.
    def kernel(x_ref, o_ref):
        step = pl.program_id(0) + 1
        count = lax.while_loop(lambda c: c < 6, lambda c: c + step, 0)
        o_ref[...] = enp.full((8,), count.astype(enp.float32))

    assert _axes_of(kernel) == {0}


def test_a_loop_inside_another_loop():
    def kernel(x_ref, o_ref):
        j = pl.program_id(1)

        def outer(r, acc):
            return acc + lax.fori_loop(0, j, lambda s, a: a + x_ref[s], enp.float32(0))

        o_ref[...] = enp.full((8,), lax.fori_loop(0, 2, outer, enp.float32(0)))

    assert _axes_of(kernel) == {1}
