"""Named kernels: fused kernels a plugin registers by name for its platform, called from
ember programs with ``call_named_kernel(name, *args, result_shape_dtypes=..., **static)``.

Compiled, a call is XLA's *buffer callback* (``xla_buffer_python_{cpu,gpu}_callback``): a
custom call naming a host function of the module, which XLA calls with its execution context
and the program's own input and output buffers, no copies. The kernel writes the outputs in
place; on a GPU it launches its work on the execution stream the context gives, so it runs in
order with the rest of the program (see ``execution.host_callbacks.BufferFunction``).

Where no kernel of that name is registered for the platform, the fallback registered with it
(a function written with ember ops) is traced and lowered inline instead; with neither, the
call is a ``LoweringError`` naming the platform and the platforms that have the kernel. On
the reference backend a kernel registered for ``"reference"`` is called with NumPy arrays.

A kernel is opaque to ember: calls are pure (dropped when unused) and neither
differentiable nor batchable (wrap them in ``custom_vjp`` / loop over the batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, get_aval
from ember._src.execution.host_callbacks import BufferFunction, KernelContext
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.plugin.registries import (
    named_kernel,
    named_kernel_fallback,
    named_kernel_platforms,
)
from ember._src.tree.util import tree_flatten, tree_unflatten

# The custom-call target of XLA's buffer callback on each platform that has one.
_TARGETS = {
    "cpu": "xla_buffer_python_cpu_callback",
    "cuda": "xla_buffer_python_gpu_callback",
    "rocm": "xla_buffer_python_gpu_callback",
}


def call_named_kernel(name: str, *args: Any, result_shape_dtypes: Any, **static_params: Any) -> Any:
    """Call the kernel registered as ``name`` for the current platform on ``args``.

    ``result_shape_dtypes``: a pytree of objects with ``shape`` and ``dtype`` (e.g.
    ``ember.ShapeDtypeStruct``), the kernel's outputs; the results come back in that
    structure. ``static_params`` (hashable Python values) are passed to the kernel as
    keyword arguments. See ``LoweringRegistry.register_named_kernel`` for how a plugin
    registers one."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"call_named_kernel: the kernel's name must be a string, got {name!r}")
    leaves, tree = tree_flatten(result_shape_dtypes)
    if not leaves:
        raise ValueError(f"call_named_kernel({name!r}): result_shape_dtypes declares no outputs")
    result_avals = tuple(_result_aval(name, i, leaf) for i, leaf in enumerate(leaves))
    try:
        statics = tuple(sorted(static_params.items()))
        hash(statics)
    except TypeError as err:
        raise TypeError(
            f"call_named_kernel({name!r}): static parameters must be hashable ({err})"
        ) from None
    outs = named_kernel_p.bind(*args, name=name, result_avals=result_avals, static_params=statics)
    return tree_unflatten(tree, list(outs))


def _result_aval(name: str, index: int, leaf: Any) -> ShapedArray:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"call_named_kernel({name!r}): result {index} of result_shape_dtypes must have "
            f"shape and dtype (e.g. ember.ShapeDtypeStruct), got {type(leaf).__name__}"
        )
    try:
        return ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize(np.dtype(dtype)))
    except TypeError as err:
        raise TypeError(
            f"call_named_kernel({name!r}): result {index} has an invalid shape or dtype "
            f"({shape!r}, {dtype!r}): {err}"
        ) from None


def _description(name: str, platform: str) -> str:
    return f"the named kernel {name!r} on platform {platform!r}"


def _missing(name: str, platform: str) -> errors.LoweringError:
    having = named_kernel_platforms(name)
    registered = (
        f"it is registered for {', '.join(repr(p) for p in having)}"
        if having
        else "no plugin registers it for any platform"
    )
    return errors.LoweringError(
        f"the named kernel {name!r} has no implementation on platform {platform!r} and no "
        f"fallback: {registered}"
    )


def _fallback_jaxpr(
    name: str, avals_in: Sequence[ShapedArray], result_avals, static_params
) -> ClosedJaxpr | None:
    """The registered fallback traced for these operands, checked against the declared
    results; None when there is no fallback."""
    fallback = named_kernel_fallback(name)
    if fallback is None:
        return None
    params = dict(static_params)

    def flat(*args):
        outs, _ = tree_flatten(fallback(*args, **params))
        return list(outs)

    closed = trace_to_jaxpr(flat, list(avals_in), name=f"fallback of {name}")
    got = [v.aval for v in closed.jaxpr.outvars]
    got_short = [(tuple(a.shape), a.dtype) for a in got]
    want_short = [(tuple(a.shape), a.dtype) for a in result_avals]
    if got_short != want_short:
        raise errors.ShapeMismatchError(
            f"the fallback of named kernel {name!r} computes "
            f"[{', '.join(a.str_short() for a in got)}] where result_shape_dtypes declares "
            f"[{', '.join(a.str_short() for a in result_avals)}]"
        )
    return closed


# --------------------------------------------------------------------------------------------
# The primitive's rules


def _abstract_eval(*avals, name, result_avals, static_params):
    return list(result_avals)


def _lowering(ctx, *operands, name, result_avals, static_params):
    kernel = named_kernel(name, ctx.platform)
    if kernel is None:
        closed = _fallback_jaxpr(name, ctx.avals_in, result_avals, static_params)
        if closed is None:
            raise _missing(name, ctx.platform)
        consts = [ctx.constant(c, get_aval(c)) for c in closed.consts]
        return lower_jaxpr_inline(ctx, closed.jaxpr, consts, operands)
    target = _TARGETS.get(ctx.platform)
    if target is None:
        raise errors.LoweringError(
            f"the named kernel {name!r} is registered for platform {ctx.platform!r}, which "
            f"has no buffer callback to run it (available on {', '.join(sorted(_TARGETS))})"
        )
    if ctx.module.mesh is not None and not ctx.module.in_manual:
        raise errors.LoweringError(
            f"the named kernel {name!r} runs on one device's buffers: inside a program over "
            f"several devices, call it within shard_map"
        )
    description = _description(name, ctx.platform)
    host = BufferFunction(kernel, ctx.platform, len(operands), dict(static_params), description)
    index = ctx.module.add_host_callback(host)
    attrs = {
        "call_target_name": f'"{target}"',
        "api_version": "4 : i32",
        "has_side_effect": "false",
        "backend_config": f"{{index = {index} : ui64}}",
    }
    return ctx.op("stablehlo.custom_call", list(operands), list(result_avals), attrs)


def _reference(*args, name, result_avals, static_params):
    kernel = named_kernel(name, "reference")
    if kernel is None:
        closed = _fallback_jaxpr(name, [get_aval(a) for a in args], result_avals, static_params)
        if closed is None:
            raise _missing(name, "reference")
        return evaluate_jaxpr(closed, args)
    inputs = [np.asarray(a) for a in args]
    outputs = [np.zeros(a.shape, a.dtype) for a in result_avals]
    host = BufferFunction(
        kernel, "reference", len(inputs), dict(static_params), _description(name, "reference")
    )
    host(None, *inputs, *outputs)
    return outputs


def _jvp(primals, tangents, *, name, **params):
    raise ValueError(
        f"the named kernel {name!r} cannot be differentiated: ember cannot see inside it. "
        f"Wrap the call in ember.custom_vjp (or custom_jvp) to give its derivative"
    )


def _batch(vals, dims, *, name, **params):
    raise NotImplementedError(
        f"the named kernel {name!r} cannot be vmapped: a kernel is written for fixed shapes. "
        f"Give it the batch as a leading dimension, or loop with ember.lax.map"
    )


named_kernel_p = rules.define_primitive(
    "named_kernel",
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    sharding=rules.NOT_SHARDABLE,
    multiple_results=True,
)

__all__ = ["KernelContext", "call_named_kernel", "named_kernel_p"]
