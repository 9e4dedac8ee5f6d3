"""Host callbacks: primitives that call a Python function with their operands' values.

Three, as in JAX, differing in what the program may assume about the function:

- ``pure_callback``: a pure function of its operands. No effect: unused results are dropped
  as dead code, like any other primitive's. Not differentiable (wrap it in ``custom_jvp``).
- ``io_callback``: a function with side effects, with results. Never dropped; ``ordered=True``
  keeps its calls in program order (a token threads through them).
- ``debug_callback``: a function with side effects and no results (``debug.print``,
  ``debug.callback``). Transformations see through it: differentiation calls it on the
  primal values, ``vmap`` once per element.

The parameter ``callback`` is a ``HostCallable``: the user's function flattened to take and
return flat lists of arrays. Compiled, the callback is a custom call naming a host function of
the module (see ``execution.host_callbacks``); eagerly and on the reference backend, it is
called directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import NO_EFFECTS, Effect, ShapedArray, get_aval
from ember._src.execution import placement
from ember._src.execution.host_callbacks import HostFunction
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import TOKEN
from ember._src.primitives.control_flow.loops import sequential_map
from ember._src.primitives.shape import broadcast_in_dim, move_axis

DEBUG = Effect("Debug", ordered=False)
ORDERED_DEBUG = Effect("OrderedDebug", ordered=True)
IO = Effect("IO", ordered=False)
ORDERED_IO = Effect("OrderedIO", ordered=True)

# The custom-call target of XLA's Python callbacks on each platform (others: none).
_TARGETS = {
    "cpu": "xla_ffi_python_cpu_callback",
    "cuda": "xla_ffi_python_gpu_callback",
    "rocm": "xla_ffi_python_gpu_callback",
}


class HostCallable:
    """A user's callback as the primitives call it: ``fun(*flat_arrays) -> flat results``.

    ``name`` says which callback it is in errors and printed jaxprs; ``where`` is the user's
    line that made it. Compared by identity: each call of ``pure_callback`` & co. makes one.

    ``printed`` is set for ``debug.print`` only, for compilers that print on the device
    (Triton's ``tt.print``) instead of calling back: the text in pieces, each a literal str
    (static arguments already formatted into it) or ``(operand, spec)``: the ``operand``-th
    array operand printed with the format ``spec`` ("" for a plain ``{}``; operand None: a
    field the device cannot print, such as a keyword or pytree argument).
    """

    __slots__ = ("fun", "__name__", "where", "printed")

    def __init__(
        self,
        fun: Callable[..., Sequence[Any]],
        name: str,
        where: str,
        printed: tuple[Any, ...] | None = None,
    ):
        self.fun = fun
        self.__name__ = name
        self.where = where
        self.printed = printed

    def __call__(self, *args: Any) -> Sequence[Any]:
        return self.fun(*args)

    def __repr__(self) -> str:
        return self.__name__


def _host_function(primitive_name: str, callback: HostCallable, result_avals, tokens: int):
    description = f"the {primitive_name} {callback.__name__}{callback.where}"
    return HostFunction(callback, result_avals, tokens, description)


# --------------------------------------------------------------------------------------------
# Rules shared by the three


def _abstract_eval(*avals, callback, result_avals, **params):
    return list(result_avals)


def _reference(name: str):
    def rule(*args, callback, result_avals, **params):
        return list(_host_function(name, callback, result_avals, 0)(*args))

    return rule


def _eager(name: str):
    def rule(*args, callback, result_avals, **params):
        values = [np.asarray(x) for x in args]
        results = _host_function(name, callback, result_avals, 0)(*values)
        device = placement.common_device(args, name) if args else None
        return [placement.device_put_numpy(r, device) for r in results]

    return rule


def _lowering(name: str, effect: Callable[..., Effect | None]):
    def rule(ctx, *operands, callback, result_avals, **params):
        target = _TARGETS.get(ctx.platform)
        if target is None:
            raise errors.LoweringError(
                f"{name} ({callback.__name__}{callback.where}) cannot run on platform "
                f"{ctx.platform!r}: calling back into Python is available on "
                f"{', '.join(sorted(_TARGETS))}"
            )
        kind = effect(**params)
        ordered = kind is not None and kind.ordered
        host = _host_function(name, callback, result_avals, 1 if ordered else 0)
        index = ctx.module.add_host_callback(host)
        attrs = {
            "call_target_name": f'"{target}"',
            "api_version": "4 : i32",
            "has_side_effect": "true" if kind is not None else "false",
            "backend_config": f"{{index = {index} : ui64}}",
        }
        out_avals = list(result_avals)
        placed = None
        if ctx.module.mesh is not None and not ctx.module.in_manual:
            # In a program over several devices the call happens once, on the first device
            # (outside shard_map, whose body every device runs for its own part).
            ctx.module.declarations["maximal"] = "sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]>"
            per_result = ", ".join(["<@maximal_mesh_0, []>"] * max(1, len(out_avals)))
            placed = {"sdy.sharding": f"#sdy.sharding_per_value<[{per_result}]>"}
        tokens = [ctx.module.tokens[kind]] if ordered else []  # taken first, returned first
        outs = ctx.op(
            "stablehlo.custom_call",
            [*tokens, *operands],
            [TOKEN] * len(tokens) + out_avals,
            attrs,
            discardable=placed,
        )
        if ordered:
            ctx.module.tokens[kind] = outs[0]
        return outs[len(tokens) :]

    return rule


def _define(name: str, *, jvp, batch, effect: Callable[..., Effect | None]):
    """One callback primitive: the rules the three share, plus its own jvp and batching;
    ``effect(**params)`` is its effect (None: pure)."""

    def effects(**params):
        kind = effect(**params)
        return NO_EFFECTS if kind is None else frozenset((kind,))

    return rules.define_primitive(
        name,
        abstract_eval=_abstract_eval,
        jvp=jvp,
        batch=batch,
        lowering=_lowering(name, effect),
        reference=_reference(name),
        eager=_eager(name),
        sharding=rules.NOT_SHARDABLE,
        effects=effects,
        multiple_results=True,
    )


def _choose(unordered: Effect, ordered: Effect) -> Callable[..., Effect]:
    def effect(**params) -> Effect:
        return ordered if params["ordered"] else unordered

    return effect


def _batched_to_front(vals, dims) -> list[Any]:
    return [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(vals, dims)]


def _batch_size(vals, dims) -> int:
    return next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)


def _sequentially(primitive, vals, dims, params):
    """A batched callback as a loop calling the unbatched one once per element."""
    front = _batched_to_front(vals, dims)
    mapped = [d is not not_mapped for d in dims]
    batched = [v for v, m in zip(front, mapped) if m]
    fixed = [v for v, m in zip(front, mapped) if not m]

    def one(xs):
        it_x, it_f = iter(xs), iter(fixed)
        args = [next(it_x) if m else next(it_f) for m in mapped]
        return primitive.bind(*args, **params)

    outs = sequential_map(one, batched)
    return list(outs), [0] * len(outs)


# --------------------------------------------------------------------------------------------
# pure_callback


def _pure_effect(**params) -> None:
    return None  # pure: its calls may be dropped or repeated


def _pure_jvp(primals, tangents, *, callback, **params):
    raise ValueError(
        f"pure_callback ({callback.__name__}{callback.where}) cannot be differentiated: "
        f"ember cannot see inside a Python function. Wrap it in ember.custom_jvp (or "
        f"custom_vjp) to give its derivative"
    )


_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def _pure_batch(vals, dims, *, callback, result_avals, vmap_method):
    params = {"callback": callback, "result_avals": result_avals, "vmap_method": vmap_method}
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequentially(pure_callback_p, vals, dims, params)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            f"vmap of pure_callback ({callback.__name__}{callback.where}) needs vmap_method: "
            f"one of {', '.join(repr(m) for m in _VMAP_METHODS)}; got {vmap_method!r}"
        )
    size = _batch_size(vals, dims)
    args = []
    for v, d in zip(_batched_to_front(vals, dims), dims):
        if d is not_mapped:
            aval = get_aval(v)
            width = size if vmap_method == "broadcast_all" else 1
            shape = (width, *aval.shape)
            v = broadcast_in_dim(v, shape, tuple(range(1, len(shape))))
        args.append(v)
    batched_avals = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in result_avals)
    outs = pure_callback_p.bind(
        *args, callback=callback, result_avals=batched_avals, vmap_method=vmap_method
    )
    return list(outs), [0] * len(outs)


pure_callback_p = _define("pure_callback", jvp=_pure_jvp, batch=_pure_batch, effect=_pure_effect)


# --------------------------------------------------------------------------------------------
# io_callback


def _io_jvp(primals, tangents, *, callback, **params):
    raise ValueError(
        f"io_callback ({callback.__name__}{callback.where}) cannot be differentiated: its "
        f"effects would happen once more for every derivative taken"
    )


def _io_batch(vals, dims, *, callback, result_avals, ordered):
    if ordered:
        raise ValueError(
            f"io_callback ({callback.__name__}{callback.where}) with ordered=True cannot be "
            f"vmapped: the order of its calls across the batch is not defined"
        )
    params = {"callback": callback, "result_avals": result_avals, "ordered": ordered}
    return _sequentially(io_callback_p, vals, dims, params)


io_callback_p = _define("io_callback", jvp=_io_jvp, batch=_io_batch, effect=_choose(IO, ORDERED_IO))


# --------------------------------------------------------------------------------------------
# debug_callback


def _debug_jvp(primals, tangents, **params):
    debug_callback_p.bind(*primals, **params)  # what it shows are the primal values
    return [], []


def _debug_batch(vals, dims, **params):
    _sequentially(debug_callback_p, vals, dims, params)
    return [], []


debug_callback_p = _define(
    "debug_callback", jvp=_debug_jvp, batch=_debug_batch, effect=_choose(DEBUG, ORDERED_DEBUG)
)
