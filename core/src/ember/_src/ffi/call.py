"""``ffi_call``: calling a handler registered with XLA's FFI from an ember program.

A call is one ``ffi_call`` equation; lowered, it is ``stablehlo.custom_call @target`` with
``api_version = 4`` (XLA's typed FFI) and the keyword attributes as a dictionary of typed
values in ``backend_config``, operand and result layouts (row-major unless the user asks
otherwise) and the declared input/output aliases. The handler is opaque to ember: a call is
not differentiable, and ``vmap`` needs ``vmap_method`` to say what the handler does with a
batch (as JAX's ``ffi_call``); the reference backend, which compiles nothing, cannot run one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import NO_EFFECTS, Effect, ShapedArray, get_aval
from ember._src.ffi.attributes import backend_config
from ember._src.ffi.registry import hand_over, registered_targets
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives.control_flow.scan import scan
from ember._src.primitives.shape import broadcast_in_dim, move_axis

# The effect of a call declared ``has_side_effect=True``: never dropped as dead code.
FFI = Effect("FFI", ordered=False)

VMAP_METHODS = (
    "sequential",
    "sequential_unrolled",
    "expand_dims",
    "broadcast_all",
    "legacy_vectorized",
)


def ffi_call(
    target_name: str,
    result_shape_dtypes: Any,
    *,
    has_side_effect: bool = False,
    vmap_method: str | None = None,
    input_layouts: Sequence[Sequence[int] | None] | None = None,
    output_layouts: Sequence[int] | Sequence[Sequence[int] | None] | None = None,
    input_output_aliases: dict[int, int] | None = None,
    custom_call_api_version: int = 4,
    legacy_backend_config: str | None = None,
) -> Callable[..., Any]:
    """A function ``(*args, **attributes)`` calling the FFI target ``target_name`` on the
    arrays ``args``, passing ``attributes`` as the handler's attributes (see
    ``ffi.attributes``); it returns one array, or a list/tuple as ``result_shape_dtypes`` is
    one. Layouts are major-to-minor dimension orders (None: row-major);
    ``input_output_aliases`` maps an input's index to the output that reuses its buffer."""
    if not isinstance(target_name, str) or not target_name:
        raise TypeError(f"ffi_call: the target's name must be a string, got {target_name!r}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"ffi_call({target_name!r}): vmap_method must be one of "
            f"{', '.join(repr(m) for m in VMAP_METHODS)} or None, got {vmap_method!r}"
        )
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError(
            f"ffi_call({target_name!r}): legacy_backend_config needs "
            f"custom_call_api_version < 4, got {custom_call_api_version}"
        )
    several = isinstance(result_shape_dtypes, (list, tuple))
    leaves = list(result_shape_dtypes) if several else [result_shape_dtypes]
    result_avals = tuple(_result_aval(target_name, i, r) for i, r in enumerate(leaves))
    if not several:
        output_layouts = (output_layouts,)

    def call(*args: Any, **attributes: Any) -> Any:
        in_avals = [get_aval(a) for a in args]
        in_layouts = _layouts(target_name, "input", in_avals, input_layouts)
        out_layouts = _layouts(target_name, "output", result_avals, output_layouts)
        aliases = _aliases(
            target_name, input_output_aliases, in_avals, result_avals, in_layouts, out_layouts
        )
        config = backend_config(target_name, attributes) if custom_call_api_version >= 4 else None
        if attributes and custom_call_api_version < 4:
            raise ValueError(
                f"ffi_call({target_name!r}): keyword attributes need custom_call_api_version "
                f"4; a legacy target takes legacy_backend_config"
            )
        outs = ffi_call_p.bind(
            *args,
            target_name=target_name,
            result_avals=result_avals,
            has_side_effect=bool(has_side_effect),
            vmap_method=vmap_method,
            input_layouts=in_layouts,
            output_layouts=out_layouts,
            input_output_aliases=aliases,
            api_version=int(custom_call_api_version),
            backend_config=config if config is not None else (legacy_backend_config or ""),
        )
        if not several:
            return outs[0]
        return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)

    return call


def _result_aval(target: str, index: int, leaf: Any) -> ShapedArray:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"ffi_call({target!r}): result {index} of result_shape_dtypes must have shape and "
            f"dtype (e.g. ember.ShapeDtypeStruct), got {type(leaf).__name__}"
        )
    return ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize(np.dtype(dtype)))


def _layouts(target, which, avals, layouts) -> tuple[tuple[int, ...], ...]:
    """Each array's layout as XLA states it (minor-to-major), row-major where None."""
    if layouts is None:
        layouts = [None] * len(avals)
    if len(layouts) != len(avals):
        raise ValueError(
            f"ffi_call({target!r}): {len(layouts)} {which} layouts for {len(avals)} {which}s"
        )
    out = []
    for i, (aval, layout) in enumerate(zip(avals, layouts)):
        if layout is None:
            out.append(tuple(range(aval.ndim - 1, -1, -1)))
            continue
        order = tuple(int(d) for d in layout)
        if sorted(order) != list(range(aval.ndim)):
            raise ValueError(
                f"ffi_call({target!r}): {which} {i} of shape {aval.shape} has layout "
                f"{list(order)}, which is no order of its {aval.ndim} dimensions"
            )
        out.append(order[::-1])  # the user writes major-to-minor, as JAX's ffi_call takes
    return tuple(out)


def _aliases(target, aliases, in_avals, out_avals, in_layouts, out_layouts):
    checked = []
    for i, o in sorted((aliases or {}).items()):
        i, o = int(i), int(o)
        if not 0 <= i < len(in_avals) or not 0 <= o < len(out_avals):
            raise ValueError(
                f"ffi_call({target!r}): input_output_aliases maps input {i} to output {o}; "
                f"there are {len(in_avals)} inputs and {len(out_avals)} outputs"
            )
        a, b = in_avals[i], out_avals[o]
        if (a.shape, a.dtype) != (b.shape, b.dtype) or in_layouts[i] != out_layouts[o]:
            raise ValueError(
                f"ffi_call({target!r}): input_output_aliases maps input {i} "
                f"({a.str_short()}) to output {o} ({b.str_short()}): an aliased pair needs "
                f"the same shape, dtype and layout"
            )
        checked.append((i, o))
    return tuple(checked)


# --------------------------------------------------------------------------------------------
# The primitive's rules


def _abstract_eval(*avals, result_avals, **params):
    return list(result_avals)


def _effects(*, has_side_effect, **params):
    return frozenset((FFI,)) if has_side_effect else NO_EFFECTS


def _not_differentiable(primals, tangents, *, target_name, **params):
    raise ValueError(
        f"the FFI call to {target_name!r} cannot be differentiated: ember cannot see inside "
        f"the handler. Wrap the call in ember.custom_jvp or ember.custom_vjp to give its "
        f"derivative"
    )


def _batch(vals, dims, *, vmap_method, result_avals, target_name, **params):
    front = [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(vals, dims)]
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    params = dict(params, target_name=target_name, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(front, dims, size, result_avals, params)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            f"vmap of the FFI call to {target_name!r} needs vmap_method (one of "
            f"{', '.join(repr(m) for m in VMAP_METHODS)}) to say how the handler treats a "
            f"batch; it was called with vmap_method={vmap_method!r}"
        )
    # The batch is the new leading (most major) dimension: last in minor-to-major order.
    params["output_layouts"] = tuple(
        tuple(d + 1 for d in layout) + (0,) for layout in params["output_layouts"]
    )
    args, layouts = [], []
    for v, d, layout in zip(front, dims, params["input_layouts"]):
        # legacy_vectorized passes an unbatched operand as it is, its layout too
        gains_batch_axis = d is not not_mapped or vmap_method != "legacy_vectorized"
        if d is not_mapped and gains_batch_axis:
            # expand_dims: a unit batch dimension; broadcast_all: the whole batch
            width = size if vmap_method == "broadcast_all" else 1
            shape = (width, *get_aval(v).shape)
            v = broadcast_in_dim(v, shape, tuple(range(1, len(shape))))
        if gains_batch_axis:
            layout = tuple(n + 1 for n in layout) + (0,)
        args.append(v)
        layouts.append(layout)
    params["input_layouts"] = tuple(layouts)
    batched = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    outs = ffi_call_p.bind(*args, result_avals=batched, **params)
    return list(outs), [0] * len(outs)


def _sequential(front, dims, size, result_avals, params):
    """One call per element of the batch, in a scan (unrolled for sequential_unrolled)."""
    mapped = [d is not not_mapped for d in dims]
    batched = [v for v, m in zip(front, mapped) if m]
    fixed = [v for v, m in zip(front, mapped) if not m]

    def one(carry, xs):
        it_x, it_f = iter(xs), iter(fixed)
        args = [next(it_x) if m else next(it_f) for m in mapped]
        return carry, list(ffi_call_p.bind(*args, result_avals=result_avals, **params))

    unroll = size if params["vmap_method"] == "sequential_unrolled" else 1
    _, outs = scan(one, (), batched, unroll=max(unroll, 1))
    return list(outs), [0] * len(outs)


def _layout_attr(layouts: Sequence[tuple[int, ...]]) -> str:
    items = []
    for layout in layouts:
        body = ", ".join(str(d) for d in layout)
        items.append(
            f"dense<[{body}]> : tensor<{len(layout)}xindex>"
            if layout
            else "dense<> : tensor<0xindex>"
        )
    return "[" + ", ".join(items) + "]"


def _lowering(
    ctx,
    *operands,
    target_name,
    result_avals,
    has_side_effect,
    input_layouts,
    output_layouts,
    input_output_aliases,
    api_version,
    backend_config,
    **params,
):
    hand_over(ctx.platform)  # a backend started after the registration gets the target now
    several = len(result_avals) > 1
    aliases = ", ".join(
        f"#stablehlo.output_operand_alias<output_tuple_indices = [{o if several else ''}], "
        f"operand_index = {i}, operand_tuple_indices = []>"
        for i, o in input_output_aliases
    )
    attrs = {
        "call_target_name": _quoted(target_name),
        "api_version": f"{api_version} : i32",
        "has_side_effect": "true" if has_side_effect else "false",
        "backend_config": backend_config if api_version >= 4 else _quoted(backend_config),
        "operand_layouts": _layout_attr(input_layouts),
        "result_layouts": _layout_attr(output_layouts),
        "output_operand_aliases": f"[{aliases}]",
    }
    return ctx.op("stablehlo.custom_call", list(operands), list(result_avals), attrs)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\5C").replace('"', "\\22") + '"'


def _reference(*args, target_name, **params):
    registered = registered_targets("cpu")
    raise errors.BackendError(
        f"the FFI call to {target_name!r} cannot run on the reference backend: it runs the "
        f"program in NumPy and has no XLA to call a C++ handler; run it on a platform the "
        f"target is registered for (registered on cpu: {', '.join(registered) or 'none'})"
        f"{errors.where()}"
    )


ffi_call_p = rules.define_primitive(
    "ffi_call",
    abstract_eval=_abstract_eval,
    jvp=_not_differentiable,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    effects=_effects,
    sharding=rules.NOT_SHARDABLE,
    multiple_results=True,
)
