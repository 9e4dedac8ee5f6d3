"""Eager execution: each primitive runs as its own small cached executable.

``apply_primitive`` is what the bottom ``EvalTrace`` calls. It places the operands on one
device, looks up (or builds, lowers and compiles) a one-equation computation keyed by the
primitive, its parameters, the operands' abstract values and the device, and runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors, rules
from ember._src.config import config
from ember._src.core import Primitive, ShapedArray, get_aval
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Var
from ember._src.lowering.module import lower_module
from ember._src.plugin import manager
from ember._src.runtime.array import Array, set_host_to_device
from ember._src.runtime.backend import Computation, Device, Executable
from ember._src.sharding.mesh import Mesh
from ember._src.sharding.shardings import NamedSharding, Sharding

# --------------------------------------------------------------------------------------------
# Devices and transfers


def default_device() -> Device:
    return manager.default_backend().local_devices()[0]


def resolve_device(device: Any, what: str) -> Any:
    """``device`` (None, a Device, or a sharding) as a Device, a Sharding or None; any other
    value (a name such as "gpu:0", an int) is a ValueError naming it and what is accepted."""
    if device is None or isinstance(device, Device):
        return device
    inner = getattr(device, "device", None)
    if isinstance(inner, Device):
        return inner
    if isinstance(device, Sharding):  # a layout over several devices: placed as such
        return device
    raise ValueError(
        f"{what} must be None, an ember Device (e.g. ember.devices()[0]) or a "
        f"Sharding; got {device!r} of type {type(device).__name__}{errors.where()}"
    )


def device_put_numpy(value: Any, device: Device | None = None, *, weak_type: bool = False) -> Array:
    """Copy host data (NumPy or a Python scalar) to ``device`` as an ember.Array."""
    aval = get_aval(value)
    if weak_type and not aval.weak_type:
        aval = aval.update(weak_type=True)
    if aval.dtype == dtypes.float0:
        # float0 (the tangent type of integers) carries no data and no device has a buffer
        # type for it: it stays a NumPy array, as in JAX.
        return np.zeros(aval.shape, dtypes.float0)
    device = device or default_device()
    host = np.asarray(value, dtype=aval.dtype)
    buffer = device.backend.buffer_from_numpy(host, aval, device)
    return Array(aval, buffer, device)


def to_device(value: Any, device: Device) -> Array:
    """``value`` as an Array on ``device`` (moving or copying it if needed)."""
    if isinstance(value, Array):
        if value._device == device:
            return value
        value._check_alive()
        src = value._device.backend
        if device.backend is src and not isinstance(value._device, Sharding):
            return Array(value.aval, src.copy_to_device(value._buffer, value.aval, device), device)
        return device_put_numpy(value._value, device, weak_type=value.aval.weak_type)
    if isinstance(value, core.Tracer):
        raise TypeError("internal error: a tracer reached device placement")
    return device_put_numpy(value, device)


def common_device(args: Sequence[Any], what: str) -> Device | None:
    """The device every committed Array in ``args`` lives on (error if they disagree), or None
    if one of them spans several devices (the caller then takes the SPMD path)."""
    device = None
    for x in args:
        if type(x) is Array:
            if isinstance(x._device, Sharding):
                return None
            if device is None:
                device = x._device
            elif x._device != device:
                raise ValueError(
                    f"{what} got arrays committed to different devices: {device!r} and "
                    f"{x._device!r}; move them with ember.device_put first{errors.where()}"
                )
    return device if device is not None else default_device()


# --------------------------------------------------------------------------------------------
# Compiled computations


class CompiledComputation:
    """A backend executable plus what is needed to call it with Arrays."""

    __slots__ = ("executable", "out_avals", "device", "computation")

    def __init__(self, computation: Computation, executable: Executable):
        self.computation = computation
        self.executable = executable
        self.out_avals = computation.out_avals
        self.device = computation.devices[0]

    def call_buffers(self, buffers: list[Any]) -> list[Array]:
        device = self.device
        outs = self.executable.execute(buffers)
        return [Array(aval, buf, device) for aval, buf in zip(self.out_avals, outs)]


def lower_computation(computation: Computation, platform: str) -> str:
    return lower_module(
        computation.jaxpr,
        platform=platform,
        name=computation.name,
        donated_invars=computation.donated_invars,
        num_partitions=1,
    )


class _Float0Compiled:
    """A computation some of whose inputs or outputs are float0 (the tangent type of integer
    values): such values carry no data, so the compiled program takes and returns only the
    others; float0 inputs are skipped and float0 outputs rebuilt on the host as NumPy zeros
    (what JAX returns for them)."""

    __slots__ = ("inner", "keep_in", "float0_outs", "out_avals", "device", "computation")

    def __init__(self, inner: CompiledComputation, keep_in: list[int], outvars: list[Any]):
        self.inner = inner
        self.computation = inner.computation
        self.device = inner.device
        self.keep_in = keep_in
        self.out_avals = [v.aval for v in outvars]
        self.float0_outs = [_is_float0(v.aval) for v in outvars]

    @property
    def executable(self) -> Executable:
        return self.inner.executable

    def call_buffers(self, buffers: list[Any]) -> list[Any]:
        outs = iter(self.inner.call_buffers([buffers[i] for i in self.keep_in]))
        return [
            np.zeros(aval.shape, aval.dtype) if host else next(outs)
            for aval, host in zip(self.out_avals, self.float0_outs)
        ]


def _is_float0(aval: Any) -> bool:
    return getattr(aval, "dtype", None) == dtypes.float0


def without_float0(closed: ClosedJaxpr, name: str, donated) -> tuple | None:
    """(jaxpr, donated flags, kept input positions) of ``closed`` without its float0 inputs
    and outputs, or None if it has none."""
    jaxpr = closed.jaxpr
    in_f0 = [_is_float0(v.aval) for v in jaxpr.invars]
    out_f0 = [_is_float0(v.aval) for v in jaxpr.outvars]
    if not any(in_f0) and not any(out_f0):
        return None
    body = dce_jaxpr(jaxpr, [not f for f in out_f0])
    dropped = {id(v) for v, f in zip(jaxpr.invars, in_f0) if f}
    for eqn in body.eqns:
        if any(id(v) in dropped for v in eqn.invars):
            raise errors.EmberTypeError(
                f"{name}: {eqn.primitive.name} got a float0 operand; float0 values (tangents "
                f"of integers) carry no data and can only be passed through{errors.where()}"
            )
    keep_in = [i for i, f in enumerate(in_f0) if not f]
    stripped = Jaxpr(
        body.constvars,
        [jaxpr.invars[i] for i in keep_in],
        body.outvars,
        body.eqns,
        jaxpr.debug_info,
    )
    kept_donated = None if donated is None else [donated[i] for i in keep_in]
    return ClosedJaxpr(stripped, closed.consts), kept_donated, keep_in


def compile_jaxpr(
    closed: ClosedJaxpr,
    device: Device,
    name: str,
    donated_invars: Sequence[bool] | None = None,
) -> CompiledComputation:
    stripped = without_float0(closed, name, donated_invars)
    if stripped is not None:
        inner = compile_jaxpr(stripped[0], device, name, stripped[1])
        return _Float0Compiled(inner, stripped[2], closed.jaxpr.outvars)
    computation = Computation(
        name,
        closed,
        devices=[device],
        donated_invars=donated_invars,
        lower=lower_computation,
    )
    if config.log_compiles:
        print(f"ember: compiling {name} for {device!r}")
    executable = device.backend.compile(computation)
    return CompiledComputation(computation, executable)


# --------------------------------------------------------------------------------------------
# Eager primitives

_eager_cache: dict[tuple, CompiledComputation] = {}
# Every XLA CPU executable holds several memory mappings until it is freed, and a process may
# hold only so many (65530 on Linux by default): a long-lived process that keeps every program
# it compiled eventually crashes inside the compiler. Past this many entries the oldest one is
# dropped (on the compile path, so cache hits pay nothing).
EAGER_CACHE_SIZE = 1024


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    """``cache[key] = value``, first dropping the oldest entry when ``cache`` holds ``limit``."""
    if len(cache) >= limit:
        del cache[next(iter(cache))]
    cache[key] = value


def single_equation(primitive: Primitive, avals: list[ShapedArray], params: dict) -> ClosedJaxpr:
    invars = [Var(a) for a in avals]
    out = rules.abstract_eval_rule(primitive)(*avals, **params)
    outs = list(out) if primitive.multiple_results else [out]
    outvars = [Var(a) for a in outs]
    eqn = Eqn(primitive, invars, outvars, params)
    return ClosedJaxpr(Jaxpr([], invars, outvars, [eqn], primitive.name), [])


def apply_primitive(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    device = None
    buffers = []
    avals = []
    for x in args:  # the common case: Arrays already together on one device
        if type(x) is not Array or (device is not None and x._device is not device):
            device, buffers, avals = _place(args, primitive.name)
            if device is None:  # an operand spans several devices
                return _multi_device_apply(primitive, args, params)
            break
        device = x._device
        buffers.append(x._buffer)
        avals.append(x.aval)
    if device is None:
        device = default_device()
    elif isinstance(device, Sharding):  # operands on one multi-device layout
        return _multi_device_apply(primitive, args, params)
    try:
        key = (primitive, tuple(params.items()), tuple(avals), device)
        compiled = _eager_cache.get(key)
    except TypeError:
        raise TypeError(
            f"internal error: unhashable parameters of {primitive.name}: {params}"
        ) from None
    if compiled is None:
        closed = single_equation(primitive, avals, params)
        if mesh_in_jaxpr(closed.jaxpr) is not None:  # e.g. a jit call of a shard_map
            return _multi_device_apply(primitive, args, params)
        donated = params.get("donated_invars")
        compiled = compile_jaxpr(closed, device, primitive.name, donated)
        remember(_eager_cache, key, compiled, EAGER_CACHE_SIZE)
    outs = compiled.call_buffers(buffers)
    return outs if primitive.multiple_results else outs[0]


def _place(args: Sequence[Any], what: str) -> tuple[Device, list[Any], list[ShapedArray]]:
    """Put every operand on the operands' common device: (device, buffers, avals)."""
    device = common_device(args, what)
    if device is None:
        return None, [], []
    buffers = []
    avals = []
    for x in args:
        if type(x) is not Array or x._device is not device:
            aval = get_aval(x)
            if aval.dtype == dtypes.float0:  # no data: the computation does not take it
                buffers.append(None)
                avals.append(aval)
                continue
            x = scalar_on_device(x, device) if is_host_scalar(x) else to_device(x, device)
        buffers.append(x._buffer)
        avals.append(x.aval)
    return device, buffers, avals


# Host scalars that eager operations meet again and again (`x > 0`, `x * 0.5`) are put on
# the device once. Device buffers are immutable and these never reach a donating call, so
# sharing them is safe; the table is bounded.
_scalar_cache: dict[tuple, Array] = {}
_SCALAR_CACHE_SIZE = 512


def is_host_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0
    )


def scalar_on_device(x: Any, device: Device) -> Array:
    aval = get_aval(x)
    value = np.asarray(x, aval.dtype)
    key = (device, aval.dtype, aval.weak_type, value.tobytes())
    cached = _scalar_cache.get(key)
    if cached is None or cached.is_deleted():
        cached = device_put_numpy(value, device, weak_type=aval.weak_type)
        if len(_scalar_cache) >= _SCALAR_CACHE_SIZE:
            _scalar_cache.clear()
        _scalar_cache[key] = cached
    return cached


def mesh_in_jaxpr(jaxpr: Jaxpr) -> Mesh | None:
    """The mesh a shard_map or sharding constraint anywhere in ``jaxpr`` names (as a ``Mesh``
    or a ``NamedSharding`` parameter): such a program must run over that mesh."""
    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            if isinstance(value, Mesh):
                return value
            if isinstance(value, NamedSharding):
                return value.mesh
            for item in value if isinstance(value, (tuple, list)) else (value,):
                inner = item.jaxpr if isinstance(item, ClosedJaxpr) else item
                if isinstance(inner, Jaxpr):
                    found = mesh_in_jaxpr(inner)
                    if found is not None:
                        return found
    return None


def _no_multi_device(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    raise errors.BackendError("ember's SPMD runtime is not initialised; import ember first")


_multi_device_apply = _no_multi_device


def set_multi_device_dispatcher(apply) -> None:
    """Install how eager primitives run on multi-device arrays (set by the SPMD runtime)."""
    global _multi_device_apply
    _multi_device_apply = apply


def clear_caches() -> None:
    _eager_cache.clear()
    _scalar_cache.clear()


core.set_eager_dispatcher(apply_primitive)
set_host_to_device(device_put_numpy)
