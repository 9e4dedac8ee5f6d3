"""The function transformations users call: grad, jvp, vjp, vmap, make_jaxpr, ...

Each one flattens its pytree arguments, runs the flat transformation from
``ember._src.interpreters`` and rebuilds pytrees for the result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.execution import dispatch, spmd
from ember._src.interpreters import ad, batching
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.plugin import manager
from ember._src.primitives.shape import broadcast_in_dim, move_axis
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Device
from ember._src.sharding import mesh as mesh_module
from ember._src.sharding.shardings import Sharding, SingleDeviceSharding
from ember._src.transforms.arguments import (
    check_float_inputs,
    check_output_dtype,
    flatten_axes,
    leaf_aval,
    normalize_argnums,
)
from ember._src.tree.util import (
    _flatten_up_to,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)

# --------------------------------------------------------------------------------------------
# Differentiation


def _split_diff_args(args: tuple, argnums: tuple[int, ...]) -> tuple[list[Any], Any]:
    return [args[i] for i in argnums], None


def _ones_like(aval: ShapedArray, like: Any = None) -> Any:
    ones = broadcast_in_dim(np.ones((), aval.dtype), aval.shape, ())
    # An output committed to one device gets its seed cotangent there too: eager grad of
    # arrays on a non-default device would otherwise mix devices in the backward pass.
    if type(like) is Array and isinstance(like._device, Device):
        return dispatch.to_device(ones, like._device)
    return ones


def _materialize(value: Any, aval: ShapedArray, like: Any = None) -> Any:
    """A user-facing value for a (possibly symbolic-zero) tangent or cotangent; a zero is put
    on the device of ``like`` (the primal it belongs to) when that is a committed Array."""
    if type(value) is Zero:
        if value.aval.dtype == dtypes.float0:
            return np.zeros(value.aval.shape, dtypes.float0)
        if type(like) is Array and isinstance(like._device, Device):
            return dispatch.to_device(zeros(value.aval), like._device)
        return zeros(value.aval)
    return value


def value_and_grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """A function returning ``(fun(*args), gradient of fun w.r.t. args[argnums])``."""

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args), "argnums")
        diff_args = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(diff_args)
        avals = [leaf_aval(x, f"differentiated argument leaf #{i}") for i, x in enumerate(leaves)]
        check_float_inputs(avals, "grad", allow_int)
        aux_store: list[Any] = []

        def flat_fun(*diff_leaves: Any) -> list[Any]:
            new_args = list(args)
            for i, value in zip(nums, tree_unflatten(in_tree, diff_leaves)):
                new_args[i] = value
            out = fun(*new_args, **kwargs)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise errors.EmberTypeError(
                        f"with has_aux=True, {_name(fun)} must return a pair (output, aux), got "
                        f"{type(out).__name__}{errors.where()}"
                    )
                out, aux = out
                aux_store.append(aux)
            _check_scalar_output(out, fun, holomorphic)
            return [out]

        (out,), linear = ad.linearize_flat(flat_fun, leaves)
        out_aval = get_aval(out)
        cts = linear.transpose([_ones_like(tangent_aval(out_aval), out)])
        grads = [_materialize(ct, tangent_aval(a), x) for ct, a, x in zip(cts, avals, leaves)]
        grads_tree = tree_unflatten(in_tree, grads)
        grad_result = grads_tree[0] if isinstance(argnums, int) else grads_tree
        if has_aux:
            aux = _strip_jvp(aux_store[0], linear)
            return (out, aux), grad_result
        return out, grad_result

    return value_and_grad_fun


def _strip_jvp(tree: Any, linear: Any) -> Any:
    """Auxiliary outputs leave linearisation as plain (primal) values."""
    return tree_map(lambda x: x.primal if isinstance(x, ad.JVPTracer) else x, tree)


def _check_scalar_output(out: Any, fun: Callable[..., Any], holomorphic: bool) -> None:
    try:
        aval = get_aval(out)
    except errors.EmberTypeError:
        raise errors.EmberTypeError(
            f"grad requires {_name(fun)} to return a scalar array, got {type(out).__name__}"
            f"{errors.where()}"
        ) from None
    if aval.shape != ():
        raise errors.EmberTypeError(
            f"grad is only defined for scalar-output functions; {_name(fun)} returned shape "
            f"{aval.shape}. Use vjp or jacrev for non-scalar outputs{errors.where()}"
        )
    check_output_dtype(aval, "grad", holomorphic)


def grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """The gradient of a scalar-valued ``fun`` with respect to ``args[argnums]``."""
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, g = value_and_grad_fun(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return grad_fun


def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """Forward mode: ``(fun(*primals), the directional derivative along tangents)``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp expects primals and tangents as tuples or lists of arguments")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    primal_leaves, tree = tree_flatten(tuple(primals))
    tangent_leaves, tangent_tree = tree_flatten(tuple(tangents))
    if tree != tangent_tree:
        raise TypeError(
            f"jvp: primal structure {tree} differs from tangent structure {tangent_tree}"
        )
    for i, (p, t) in enumerate(zip(primal_leaves, tangent_leaves)):
        expected = tangent_aval(leaf_aval(p, f"primal leaf #{i}"))
        got = get_aval(t)
        if expected.shape != got.shape or (
            expected.dtype != got.dtype and got.dtype != dtypes.float0
        ):
            raise errors.EmberTypeError(
                f"jvp: tangent leaf #{i} has type {got.str_short()} but the primal needs "
                f"{expected.str_short()}{errors.where()}"
            )
    out_trees = []

    def flat_fun(*leaves: Any) -> list[Any]:
        out = fun(*tree_unflatten(tree, leaves))
        out_leaves, out_tree = tree_flatten(out)
        out_trees.append(out_tree)
        return out_leaves

    tangents_in = [
        Zero(tangent_aval(get_aval(p))) if get_aval(t).dtype == dtypes.float0 else t
        for p, t in zip(primal_leaves, tangent_leaves)
    ]
    outs, out_tangents = ad.jvp_flat(flat_fun, primal_leaves, tangents_in)
    out_tangents = [
        _materialize(t, tangent_aval(get_aval(p)), p) for t, p in zip(out_tangents, outs)
    ]
    return tree_unflatten(out_trees[0], outs), tree_unflatten(out_trees[0], out_tangents)


def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP cheaply."""
    leaves, tree = tree_flatten(primals)
    out_trees = []

    def flat_fun(*xs: Any) -> list[Any]:
        out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(tree, xs)))
        out_trees.append(out_tree)
        return out_leaves

    outs, linear = ad.linearize_flat(flat_fun, leaves)

    def f_jvp(*tangents: Any) -> Any:
        tangent_leaves, tangent_tree = tree_flatten(tangents)
        if tangent_tree != tree:
            raise TypeError(f"linearized function expects tangents shaped like {tree}")
        result = linear(*tangent_leaves)
        materialized = [_materialize(t, a) for t, a in zip(result, linear.out_avals)]
        return tree_unflatten(out_trees[0], materialized)

    return tree_unflatten(out_trees[0], outs), f_jvp


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(fun(*primals), vjp_fun)`` where ``vjp_fun(cotangent)`` pulls it back to the inputs."""
    leaves, tree = tree_flatten(primals)
    out_trees = []
    aux_store: list[Any] = []

    def flat_fun(*xs: Any) -> list[Any]:
        out = fun(*tree_unflatten(tree, xs))
        if has_aux:
            out, aux = out
            aux_store.append(aux)
        out_leaves, out_tree = tree_flatten(out)
        out_trees.append(out_tree)
        return out_leaves

    outs, linear = ad.linearize_flat(flat_fun, leaves)
    out_tree = out_trees[0]
    in_avals = [tangent_aval(get_aval(x)) for x in leaves]

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise TypeError(
                f"vjp function expects a cotangent with the output's structure {out_tree}, got "
                f"{ct_tree}"
            )
        for i, (ct, out) in enumerate(zip(ct_leaves, outs)):
            if get_aval(ct).shape != get_aval(out).shape:
                raise errors.EmberTypeError(
                    f"vjp: cotangent leaf #{i} has shape {get_aval(ct).shape}, the output has "
                    f"{get_aval(out).shape}{errors.where()}"
                )
        cts = linear.transpose(ct_leaves)
        cts = [_materialize(ct, a, x) for ct, a, x in zip(cts, in_avals, leaves)]
        return tree_unflatten(tree, cts)

    result = tree_unflatten(out_tree, outs)
    if has_aux:
        return result, vjp_fun, _strip_jvp(aux_store[0], linear)
    return result, vjp_fun


# --------------------------------------------------------------------------------------------
# Vectorisation


def vmap(
    fun: Callable[..., Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
) -> Callable[..., Any]:
    """Vectorise ``fun`` over the axes ``in_axes`` of its arguments."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun)
    def batched_fun(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = tree_flatten((args, kwargs))
        dims = flatten_axes("vmap in_axes", tree, (in_axes, 0), (args, kwargs))
        size = _axis_size(leaves, dims, axis_size, fun)
        out_trees = []

        def flat_fun(*xs: Any) -> list[Any]:
            call_args, call_kwargs = tree_unflatten(tree, xs)
            out = fun(*call_args, **call_kwargs)
            out_leaves, out_tree = tree_flatten(out)
            out_trees.append((out, out_tree))
            return out_leaves

        outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name)
        out_value, out_tree = out_trees[0]
        wanted = flatten_axes("vmap out_axes", out_tree, out_axes, out_value)
        results = [_place_axis(x, d, w, size, fun) for x, d, w in zip(outs, out_dims, wanted)]
        return tree_unflatten(out_tree, results)

    return batched_fun


def _axis_size(leaves: list[Any], dims: list[Any], axis_size: int | None, fun) -> int:
    sizes = {}
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        shape = leaf_aval(x, f"vmapped argument leaf #{i}").shape
        if not -len(shape) <= d < len(shape):
            raise ValueError(
                f"vmap in_axes={d} is out of range for argument leaf #{i} of shape {shape}"
                f"{errors.where()}"
            )
        sizes[i] = shape[d]
    if axis_size is not None:
        if any(s != axis_size for s in sizes.values()):
            raise ValueError(f"vmap axis_size={axis_size} differs from argument sizes {sizes}")
        return axis_size
    if not sizes:
        raise ValueError(
            f"vmap of {_name(fun)} needs at least one mapped argument (in_axes not all None) or "
            f"an explicit axis_size{errors.where()}"
        )
    distinct = set(sizes.values())
    if len(distinct) > 1:
        detail = ", ".join(f"leaf #{i}: {s}" for i, s in sizes.items())
        raise ValueError(
            f"vmap got inconsistent sizes for the mapped axis ({detail}){errors.where()}"
        )
    return distinct.pop()


def _place_axis(x: Any, current: int | None, wanted: int | None, size: int, fun) -> Any:
    if wanted is None:
        if current is not None:
            raise ValueError(
                f"vmap out_axes=None for an output of {_name(fun)} that varies over the mapped "
                f"axis{errors.where()}"
            )
        return x
    aval = get_aval(x)
    if current is None:
        out_ndim = aval.ndim + 1
        wanted %= out_ndim
        dims = tuple(i for i in range(out_ndim) if i != wanted)
        return broadcast_in_dim(x, aval.shape[:wanted] + (size,) + aval.shape[wanted:], dims)
    return move_axis(x, current, wanted % aval.ndim)


# --------------------------------------------------------------------------------------------
# Inspection


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
        shapes = []

        def flat_fun(*xs: Any) -> list[Any]:
            dyn, kw = tree_unflatten(tree, xs)
            it = iter(dyn)
            call_args = [args[i] if i in nums else next(it) for i in range(len(args))]
            out = fun(*call_args, **kw)
            out_leaves, out_tree = tree_flatten(out)
            shapes.append(tree_unflatten(out_tree, [_shape_struct(x) for x in out_leaves]))
            return out_leaves

        closed = trace_to_jaxpr(flat_fun, avals, name=_name(fun))
        return (closed, shapes[0]) if return_shape else closed

    return make


class ShapeDtypeStruct:
    """A shape and a dtype, standing for an array that does not exist (yet)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (
            other.shape,
            other.dtype,
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


# --------------------------------------------------------------------------------------------
# Devices and transfers


def devices(backend: str | None = None) -> list[Device]:
    """All devices of ``backend`` (a platform name; default: the default backend)."""
    return manager.backend(backend).devices()


def local_devices(backend: str | None = None) -> list[Device]:
    return manager.backend(backend).local_devices()


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend))


def default_backend() -> str:
    """The platform name of the default backend, e.g. ``"cpu"``."""
    return manager.default_backend().platform


def process_index() -> int:
    return manager.default_backend().process_index()


def make_mesh(
    axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices: Sequence[Device] | None
    = None,
) -> Any:  # fmt: skip
    """A ``Mesh`` of ``axis_shapes`` named ``axis_names`` over ``devices`` (default: every
    device of the default backend)."""
    return mesh_module.make_mesh(
        axis_shapes, axis_names, devices=devices if devices is not None else list(devices_fn())
    )


def devices_fn() -> list[Device]:
    return manager.default_backend().devices()


def device_put(x: Any, device: Any = None) -> Any:
    """Copy ``x`` (a pytree of arrays) to ``device`` (default: the default device): a Device,
    a Sharding (which lays each array out over its devices), or a pytree prefix of them."""
    if isinstance(device, (Device, Sharding)) or device is None:
        return tree_map(lambda leaf: _put_leaf(leaf, device), x)
    leaves, treedef = tree_flatten(device, is_leaf=lambda s: s is None or isinstance(s, Sharding))
    # A leaf that is not a placement (a string like "gpu:0", an int) would otherwise be
    # treated as a one-leaf prefix tree and recursed into forever.
    for leaf in leaves:
        if not (leaf is None or isinstance(leaf, (Device, Sharding))):
            raise ValueError(
                f"device_put accepts None, an ember Device (e.g. ember.devices()[0]), a Sharding, "
                f"or a pytree prefix of these; got {leaf!r} of type {type(leaf).__name__}"
                f"{errors.where()}"
            )
    subtrees = _flatten_up_to(treedef, x, 1)
    placed = [device_put(sub, target) for sub, target in zip(subtrees, leaves)]
    return tree_unflatten(treedef, placed)


def _resolve_device(device: Any) -> Device:
    if device is None:
        return dispatch.default_device()
    return dispatch.resolve_device(device, "device_put's device")


def _put_leaf(leaf: Any, device: Any) -> Array:
    if isinstance(leaf, core.Tracer):
        return leaf
    leaf_aval(leaf, "device_put argument")
    if isinstance(device, Sharding):
        return spmd.put(leaf, device)
    return dispatch.to_device(leaf, _resolve_device(device))


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Any], Any]
) -> Array:
    """An array of global ``shape`` laid out by ``sharding``, each device's piece being
    ``data_callback(index)`` (``index``: a tuple of slices into the global array)."""
    shape = tuple(int(d) for d in shape)
    indices = sharding.addressable_devices_indices_map(shape)
    pieces = []
    for device in sharding.device_list:
        piece = np.asarray(data_callback(indices[device]))
        want = tuple(len(range(*s.indices(n))) for s, n in zip(indices[device], shape))
        if piece.shape != want:
            raise ValueError(
                f"make_array_from_callback: the callback returned shape {piece.shape} for "
                f"index {indices[device]} of {device!r}; that piece has shape {want}"
                f"{errors.where()}"
            )
        pieces.append(piece)
    dtype = dtypes.canonicalize(np.result_type(*pieces))
    aval = ShapedArray(shape, dtype)
    pieces = [p.astype(dtype, copy=False) for p in pieces]
    if isinstance(sharding, SingleDeviceSharding) or sharding.num_devices == 1:
        return dispatch.device_put_numpy(pieces[0], sharding.device_list[0])
    buffer = sharding.backend.buffer_from_shards(pieces, aval, sharding)
    return Array(aval, buffer, sharding)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Array]
) -> Array:
    """An array of global ``shape`` laid out by ``sharding`` from one Array per device (in
    any order; each must already be that device's piece)."""
    shape = tuple(int(d) for d in shape)
    by_device = {}
    for a in arrays:
        if not isinstance(a, Array) or isinstance(a._device, Sharding):
            raise TypeError(
                f"make_array_from_single_device_arrays needs single-device ember Arrays, got "
                f"{type(a).__name__}{errors.where()}"
            )
        by_device[a._device] = a
    missing = [d for d in sharding.device_list if d not in by_device]
    if missing or len(by_device) != len(arrays):
        raise ValueError(
            f"make_array_from_single_device_arrays: need exactly one array on each of "
            f"{sharding.device_list}; missing {missing}{errors.where()}"
        )
    piece_shape = sharding.shard_shape(shape)
    ordered = [by_device[d] for d in sharding.device_list]
    dtype = ordered[0].dtype
    for d, a in zip(sharding.device_list, ordered):
        if a.shape != piece_shape or a.dtype != dtype:
            raise ValueError(
                f"make_array_from_single_device_arrays: the array on {d!r} is "
                f"{a.aval.str_short()}; pieces of {shape} laid out as {sharding} are "
                f"{dtype}{list(piece_shape)}{errors.where()}"
            )
    aval = ShapedArray(shape, dtype)
    if sharding.num_devices == 1:
        return ordered[0]
    buffer = sharding.backend.assemble_buffers([a._buffer for a in ordered], aval, sharding)
    return Array(aval, buffer, sharding)


def device_get(x: Any) -> Any:
    """Copy a pytree of arrays to the host, as NumPy arrays."""
    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; return ``x``."""
    for leaf in tree_flatten(x)[0]:
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x


def tree_avals(x: Any) -> Any:
    return tree_map(get_aval, x)


__all__ = ["tree_structure"]
