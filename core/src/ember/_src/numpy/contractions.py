"""Contractions: dot, matmul, tensordot, inner, outer, vdot, vecdot and einsum."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.execution import placement
from ember._src.numpy.manipulation import ravel
from ember._src.numpy.operands import (
    as_operand,
    broadcast_shapes_for,
    canonicalize_axis,
    cast,
    check_dtype_arg,
    check_no_out,
    prepare,
    promote_dtypes,
)
from ember._src.primitives.arithmetic import conj, mul
from ember._src.primitives.linalg import dot_general
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    broadcast_to_shape,
    reduce_sum,
    reshape,
    transpose,
)
from ember._src.primitives.sharding_constraint import laid_out
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.transforms.jit import jit


def _operands(name: str, a: Any, b: Any) -> tuple[Any, Any]:
    a, b = promote_dtypes(as_operand(a), as_operand(b))
    return a, b


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:  # fmt: skip
    """NumPy's dot: matrix product for 2-D, sum over a's last and b's second-to-last axis.
    ``out_sharding``: how the result is split (needed when contracted dimensions are)."""
    a, b = _operands("dot", a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        return laid_out(mul(*prepare("dot", a, b)), out_sharding)
    b_axis = 0 if b_ndim == 1 else b_ndim - 2
    _check_contracted("dot", a, b, a_ndim - 1, b_axis)
    numbers = (((a_ndim - 1,), (b_axis,)), ((), ()))
    return dot_general(a, b, numbers, precision, preferred_element_type, out_sharding=out_sharding)


def _check_contracted(name: str, a: Any, b: Any, a_axis: int, b_axis: int) -> None:
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if a_shape[a_axis] != b_shape[b_axis]:
        raise errors.ShapeMismatchError(
            f"{name}: shapes {a_shape} and {b_shape} not aligned: {a_shape[a_axis]} (dim "
            f"{a_axis}) != {b_shape[b_axis]} (dim {b_axis}){errors.where()}"
        )


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:  # fmt: skip
    """The @ operator: batched matrix product with broadcast leading axes. ``out_sharding``:
    how the result is split (needed when contracted dimensions are)."""
    if precision is None and preferred_element_type is None and out_sharding is None:
        return _matmul_compiled(a, b)  # one compiled call when used eagerly
    return _matmul(a, b, precision, preferred_element_type, out_sharding)


def _matmul(a: Any, b: Any, precision: Any = None, preferred_element_type: Any = None,
            out_sharding: Any = None) -> Any:  # fmt: skip
    a, b = _operands("matmul", a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if not a_shape or not b_shape:
        raise ValueError(f"matmul: operands must not be scalars; use * instead{errors.where()}")
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector or b_vector:
        # A vector operand contracts directly: no unit axes for XLA to carry around (they make
        # batched matrix-vector products, e.g. under vmap, much slower on CPU).
        a_axis = len(a_shape) - 1
        b_axis = 0 if b_vector else len(b_shape) - 2
        _check_contracted("matmul", a, b, a_axis, b_axis)
        dims = (((a_axis,), (b_axis,)), ((), ()))
        return dot_general(a, b, dims, precision, preferred_element_type, out_sharding=out_sharding)
    _check_contracted("matmul", a, b, len(a_shape) - 1, len(b_shape) - 2)
    batch = broadcast_shapes_for("matmul", a_shape[:-2], b_shape[:-2])
    a = broadcast_to_shape(a, batch + a_shape[-2:])
    b = broadcast_to_shape(b, batch + b_shape[-2:])
    nb = len(batch)
    batch_dims = tuple(range(nb))
    numbers = (((nb + 1,), (nb,)), (batch_dims, batch_dims))
    return dot_general(a, b, numbers, precision, preferred_element_type, out_sharding=out_sharding)


_matmul_compiled = jit(_matmul, inline=True)


def tensordot(
    a: Any, b: Any, axes: Any = 2, *, precision: Any = None, preferred_element_type: Any = None
) -> Any:
    a, b = _operands("tensordot", a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if isinstance(axes, int):
        if axes > min(a_ndim, b_ndim) or axes < 0:
            raise ValueError(f"tensordot: axes={axes} exceeds the operands' ranks{errors.where()}")
        a_axes = tuple(range(a_ndim - axes, a_ndim))
        b_axes = tuple(range(axes))
    else:
        a_axes_raw, b_axes_raw = axes
        a_axes_raw = (a_axes_raw,) if isinstance(a_axes_raw, int) else tuple(a_axes_raw)
        b_axes_raw = (b_axes_raw,) if isinstance(b_axes_raw, int) else tuple(b_axes_raw)
        if len(a_axes_raw) != len(b_axes_raw):
            raise ValueError(
                f"tensordot: axes lists must have equal length, got {axes}{errors.where()}"
            )
        a_axes = tuple(canonicalize_axis(x, a_ndim) for x in a_axes_raw)
        b_axes = tuple(canonicalize_axis(x, b_ndim) for x in b_axes_raw)
    for i, j in zip(a_axes, b_axes):
        _check_contracted("tensordot", a, b, i, j)
    return dot_general(a, b, ((a_axes, b_axes), ((), ())), precision, preferred_element_type)


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    a, b = _operands("inner", a, b)
    if not get_aval(a).ndim or not get_aval(b).ndim:
        product = mul(*prepare("inner", a, b))
        if preferred_element_type is None:
            return product
        return cast(product, check_dtype_arg(preferred_element_type))
    return tensordot(
        a,
        b,
        ((-1,), (-1,)),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def outer(a: Any, b: Any, out: None = None) -> Any:
    check_no_out(out, "jnp.outer")
    a, b = _operands("outer", ravel(a), ravel(b))
    return dot_general(
        reshape(a, get_aval(a).shape + (1,)),
        reshape(b, (1,) + get_aval(b).shape),
        (((1,), (0,)), ((), ())),
    )


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """The dot product of the flattened arrays, the first conjugated (as NumPy's)."""
    a = ravel(a)
    if get_aval(a).dtype.kind == "c":
        a = conj(a)
    return dot(a, ravel(b), precision=precision, preferred_element_type=preferred_element_type)


def vecdot(
    x1: Any,
    x2: Any,
    /,
    *,
    axis: int = -1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """Dot products along ``axis`` (``precision`` is a hint ember's backends do not need;
    ``preferred_element_type`` sets the accumulation and result dtype)."""
    _check_vecdot_axes(np.shape(x1), np.shape(x2), axis)
    x1, x2 = prepare("vecdot", x1, x2)
    if preferred_element_type is not None:
        result_dtype = check_dtype_arg(preferred_element_type)
        x1, x2 = cast(x1, result_dtype), cast(x2, result_dtype)
    if get_aval(x1).dtype.kind == "c":  # the array API's vecdot conjugates x1
        x1 = conj(x1)
    ndim = get_aval(x1).ndim
    ax = canonicalize_axis(axis, ndim)
    return reduce_sum(mul(x1, x2), (ax,))


def _check_vecdot_axes(shape1: tuple, shape2: tuple, axis: int) -> None:
    """The contracted axis is not broadcast: a length-1 axis against a longer one is a mistake
    (as in JAX), not a sum over repeated values."""
    ndim = max(len(shape1), len(shape2))
    ax = canonicalize_axis(axis, ndim) - ndim  # counted from the right, as broadcasting aligns
    size1 = shape1[ax] if -ax <= len(shape1) else 1
    size2 = shape2[ax] if -ax <= len(shape2) else 1
    if size1 != size2:
        raise ValueError(
            f"vecdot: axes must match; got shapes {shape1} and {shape2} with axis={axis}"
            f"{errors.where()}"
        )


# --------------------------------------------------------------------------------------------
# einsum


def einsum(
    subscripts: str,
    /,
    *operands: Any,
    out: None = None,
    optimize: Any = True,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Einstein summation, contracted pairwise from left to right. ``out_sharding``: how the
    result is split (needed when contracted dimensions are)."""
    check_no_out(out, "jnp.einsum")
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the string form of subscripts is supported")
    operands = promote_dtypes(*(as_operand(o) for o in operands))
    inputs, output = _parse_einsum(subscripts, [get_aval(o).ndim for o in operands])
    if len(inputs) != len(operands):
        raise ValueError(
            f"einsum: {len(inputs)} subscripts for {len(operands)} operands{errors.where()}"
        )
    sizes: dict[str, int] = {}
    for labels, op in zip(inputs, operands):
        shape = get_aval(op).shape
        if len(labels) != len(shape):
            raise ValueError(
                f"einsum: subscripts {labels!r} don't match an operand of rank {len(shape)}"
                f"{errors.where()}"
            )
        for label, size in zip(labels, shape):
            if sizes.setdefault(label, size) != size and size != 1:
                raise errors.ShapeMismatchError(
                    f"einsum: size of label {label!r} differs: {sizes[label]} vs {size}"
                    f"{errors.where()}"
                )
    _check_output(output, inputs)
    terms = [_take_diagonals(labels, op) for labels, op in zip(inputs, operands)]
    while len(terms) > 1:
        (la, a), (lb, b) = terms[0], terms[1]
        rest = [labels for labels, _ in terms[2:]]
        keep = set(output).union(*rest) if rest else set(output)
        # The last contraction is told the result's split, by label (contractions over split
        # dimensions are ambiguous without it).
        wanted = _label_entries(output, out_sharding) if not rest else None
        pair = _contract_pair(la, a, lb, b, keep, precision, preferred_element_type, wanted)
        terms = [pair] + terms[2:]
    labels, result = terms[0]
    summed = tuple(i for i, label in enumerate(labels) if label not in output)
    if summed:
        result = reduce_sum(result, summed)
        labels = "".join(label for label in labels if label in output)
    result = transpose(result, tuple(labels.index(label) for label in output))
    return laid_out(result, out_sharding)


def _label_entries(output: str, out_sharding: Any) -> dict[str, Any] | None:
    """Each output label's spec entry in ``out_sharding`` (resolved under the mesh in
    scope), with the mesh: None when no sharding was asked for."""
    if out_sharding is None:
        return None
    sharding = placement.resolve(out_sharding, "einsum out_sharding")
    spec = list(sharding.spec) + [None] * (len(output) - len(sharding.spec))
    return {"": sharding.mesh, **dict(zip(output, spec))}


def _parse_einsum(subscripts: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, output = subscripts.split("->")
    else:
        lhs, output = subscripts, None
    inputs = lhs.split(",")
    if "..." in subscripts:
        unused = [c for c in string.ascii_letters if c not in subscripts]
        width = max(
            (nd - len(s.replace("...", "")) for s, nd in zip(inputs, ndims) if "..." in s),
            default=0,
        )
        ellipsis = "".join(unused[:width])
        expanded = []
        for s, nd in zip(inputs, ndims):
            if "..." in s:
                own = nd - len(s.replace("...", ""))
                s = s.replace("...", ellipsis[width - own :])
            expanded.append(s)
        inputs = expanded
        if output is not None:
            output = output.replace("...", ellipsis)
    if output is None:
        counts: dict[str, int] = {}
        for s in inputs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    return inputs, output


def _check_output(output: str, inputs: Sequence[str]) -> None:
    for label in output:
        if output.count(label) > 1:
            raise ValueError(
                f"einsum: output subscript {label!r} appears more than once{errors.where()}"
            )
        if not any(label in labels for labels in inputs):
            raise ValueError(
                f"einsum: output subscript {label!r} does not appear in the inputs{errors.where()}"
            )


def _take_diagonals(labels: str, x: Any) -> tuple[str, Any]:
    """An operand whose subscripts repeat a label (``"iij"``, ``"ii"``) reduced to its
    diagonal along the repeated axes (one axis per label), as NumPy does before contracting."""
    for label in dict.fromkeys(labels):
        axes = [i for i, c in enumerate(labels) if c == label]
        if len(axes) == 1:
            continue
        shape = get_aval(x).shape
        if len({shape[i] for i in axes}) != 1:
            raise ValueError(
                f"einsum: the axes of operand subscripts {labels!r} repeating {label!r} have "
                f"different sizes {tuple(shape[i] for i in axes)}{errors.where()}"
            )
        # Keep the elements whose repeated indices agree, then sum the copies away: a select,
        # not a multiplication by a mask, so that inf and nan off the diagonal stay out.
        n = shape[axes[0]]
        grid = np.indices((n,) * len(axes))
        on_diagonal = np.all(grid == grid[0], axis=0)
        keep = broadcast_in_dim(on_diagonal, shape, tuple(axes))
        zeros = broadcast_to_shape(np.zeros((), get_aval(x).dtype), shape)
        x = reduce_sum(select_n(keep, zeros, x), tuple(axes[1:]))
        labels = "".join(c for i, c in enumerate(labels) if i not in axes[1:])
    return labels, x


def _contract_pair(
    la: str, a: Any, lb: str, b: Any, keep: set[str], precision, preferred, wanted=None
) -> tuple[str, Any]:
    # Sum away labels that appear only in one operand and are not needed later.
    a, la = _sum_unique(a, la, lb, keep)
    b, lb = _sum_unique(b, lb, la, keep)
    batch = [c for c in la if c in lb and c in keep]
    contract = [c for c in la if c in lb and c not in keep]
    numbers = (
        (tuple(la.index(c) for c in contract), tuple(lb.index(c) for c in contract)),
        (tuple(la.index(c) for c in batch), tuple(lb.index(c) for c in batch)),
    )
    a, b = _broadcast_shared(a, la, b, lb, batch + contract)
    free_a = [c for c in la if c not in batch and c not in contract]
    free_b = [c for c in lb if c not in batch and c not in contract]
    labels = batch + free_a + free_b
    out_sharding = None
    if wanted is not None:
        out_sharding = NamedSharding(wanted[""], PartitionSpec(*(wanted.get(c) for c in labels)))
    result = dot_general(a, b, numbers, precision, preferred, out_sharding=out_sharding)
    return "".join(labels), result


def _sum_unique(x: Any, labels: str, other: str, keep: set[str]) -> tuple[Any, str]:
    drop = tuple(i for i, c in enumerate(labels) if c not in other and c not in keep)
    if not drop:
        return x, labels
    return reduce_sum(x, drop), "".join(c for i, c in enumerate(labels) if i not in drop)


def _broadcast_shared(a: Any, la: str, b: Any, lb: str, shared: list[str]) -> tuple[Any, Any]:
    a_shape, b_shape = list(get_aval(a).shape), list(get_aval(b).shape)
    for c in shared:
        i, j = la.index(c), lb.index(c)
        size = max(a_shape[i], b_shape[j])
        a_shape[i] = b_shape[j] = size
    return broadcast_to_shape(a, tuple(a_shape)), broadcast_to_shape(b, tuple(b_shape))
