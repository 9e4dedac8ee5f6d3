"""Inspecting functions without running them: make_jaxpr, eval_shape, ShapeDtypeStruct."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core
from ember._src.core import ShapedArray, get_aval
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.transforms.arguments import leaf_aval, normalize_argnums
from ember._src.tree.util import flatten_fun, tree_flatten, tree_unflatten


def make_jaxpr(
    fun: Callable[..., Any],
    static_argnums: int | Sequence[int] = (),
    return_shape: bool = False,
) -> Callable[..., Any]:
    """A function returning the jaxpr of ``fun`` traced at the given arguments."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args: Any, **kwargs: Any) -> ClosedJaxpr | tuple[ClosedJaxpr, Any]:
        nums = set(normalize_argnums(static, len(args), "static_argnums")) if static else set()
        dynamic = [a for i, a in enumerate(args) if i not in nums]
        leaves, tree = tree_flatten((dynamic, kwargs))
        avals = [leaf_aval(x, f"argument leaf #{i}") for i, x in enumerate(leaves)]

        def call(dyn: list, kw: dict) -> Any:
            it = iter(dyn)
            call_args = [args[i] if i in nums else next(it) for i in range(len(args))]
            return fun(*call_args, **kw)

        flat_fun = flatten_fun(call, tree, keep_output=return_shape)
        closed = trace_to_jaxpr(flat_fun, avals, name=_name(fun))
        if not return_shape:
            return closed
        out_leaves = tree_flatten(flat_fun.output)[0]
        return closed, tree_unflatten(flat_fun.out_tree, [_shape_struct(x) for x in out_leaves])

    return make


class ShapeDtypeStruct:
    """A shape and a dtype, standing for an array that does not exist (yet); ``sharding``
    (a ``NamedSharding``), how it would be laid out: ``jit(f).lower`` places the argument so
    (where ``in_shardings`` does not say), as JAX's."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(
        self, shape: Sequence[int], dtype: Any, weak_type: bool = False, *, sharding: Any = None
    ):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The shape, dtype and weak type of ``x`` (an array, a traced value, a Python scalar
        or another ShapeDtypeStruct, whose sharding is kept), as JAX's."""
        aval = get_aval(x)
        sharding = x.sharding if isinstance(x, ShapeDtypeStruct) else None
        return cls(aval.shape, aval.dtype, aval.weak_type, sharding=sharding)

    def __repr__(self) -> str:
        laid_out = f", sharding={self.sharding!r}" if self.sharding is not None else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{laid_out})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ShapeDtypeStruct)
            and (self.shape, self.dtype)
            == (
                other.shape,
                other.dtype,
            )
            and self.sharding == other.sharding
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


core.register_aval_getter(ShapeDtypeStruct, lambda s: ShapedArray(s.shape, s.dtype, s.weak_type))


def _shape_struct(x: Any) -> ShapeDtypeStruct:
    aval = get_aval(x)
    return ShapeDtypeStruct(aval.shape, aval.dtype, aval.weak_type)


def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``fun``'s outputs, computed by tracing (nothing runs)."""
    _, shapes = make_jaxpr(functools.partial(fun, **kwargs), return_shape=True)(*args)
    return shapes


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)
