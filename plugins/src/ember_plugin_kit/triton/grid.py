"""A Pallas grid on CUDA's three launch axes.

A grid of up to three axes maps axis 0 to x, 1 to y and 2 to z. A longer grid keeps its last
two axes on y and z and folds the leading ones into x (as JAX does), each program recovering
its indices along them by division. CUDA allows 2**31 - 1 programs along x and 65535 along y
and z.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Emitter, Value

_AXES = ("x", "y", "z")
_MAX_X, _MAX_YZ = 2**31 - 1, 65535


def _split(grid: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the axes folded into x, the axes on y and z)."""
    if len(grid) <= 3:
        return grid[:1], grid[1:]
    return grid[:-2], grid[-2:]


def launch_grid(grid: Sequence[int], name: str) -> tuple[int, int, int]:
    """The CUDA grid (x, y, z) of a Pallas grid."""
    grid = tuple(int(g) for g in grid)
    folded, rest = _split(grid)
    launch = (math.prod(folded), *rest)
    launch = launch + (1,) * (3 - len(launch))
    if launch[0] > _MAX_X or any(g > _MAX_YZ for g in launch[1:]):
        raise NotImplementedError(
            f"Pallas kernel {name!r} has grid {grid}, launched as {launch}: CUDA allows at most "
            f"{_MAX_YZ} programs along the last two grid axes (of a grid of three or more); "
            "put the largest axis first"
        )
    return launch[0], launch[1], launch[2]


def program_ids(e: Emitter, grid: Sequence[int]) -> list[Value]:
    """This program's index along each grid axis (i32 scalars), emitted once at the top of
    the function so that every region can use them."""
    grid = tuple(int(g) for g in grid)
    folded, rest = _split(grid)
    ids = [
        e.op(f"tt.get_program_id {_AXES[1 + i]} : i32", (), INDEX_DTYPE) for i in range(len(rest))
    ]
    if not folded:
        return ids
    x = e.op("tt.get_program_id x : i32", (), INDEX_DTYPE)
    if len(folded) == 1:
        return [x, *ids]
    leading = []
    for axis in range(len(folded)):  # row-major: the last folded axis varies fastest
        inner = math.prod(folded[axis + 1 :])
        index = x
        if inner != 1:
            divisor = e.constant(inner, INDEX_DTYPE)
            index = e.op(f"arith.divsi {index.name}, {divisor.name} : i32", (), INDEX_DTYPE)
        if axis > 0:
            size = e.constant(folded[axis], INDEX_DTYPE)
            index = e.op(f"arith.remsi {index.name}, {size.name} : i32", (), INDEX_DTYPE)
        leading.append(index)
    return [*leading, *ids]
