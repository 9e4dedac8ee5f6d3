"""``Exported``: an exported program, as ``export`` made it or ``deserialize`` read it back.

An ``Exported`` holds the StableHLO module as a portable artifact (VHLO bytecode) with what
calling it needs: the structures and types of its arguments and results, the platforms it
was lowered for and, for a program over several devices, its mesh and their layouts. It
serialises itself (``serialize``, the format in ``serialization``) and is called (``call``)
eagerly, inside ``jit``, and under ``grad`` when it carries its VJP; a program over N devices
runs over a mesh of N devices (the arguments' or the one in scope). How a jitted function
becomes one is ``exporting``'s job.

The core never parses MLIR: turning an artifact back into text is asked of a backend that can
(``artifacts``); with only the reference backend, calling raises ``ExportError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray
from ember._src.execution.compiled import remember
from ember._src.execution.placement import is_multi_device, mesh_of, put
from ember._src.export import serialization, shape_poly, shardings, trees
from ember._src.export.artifacts import artifact_backend
from ember._src.export.calling import call_exported
from ember._src.lax.operators import convert_element_type
from ember._src.plugin import manager
from ember._src.runtime.mesh import AbstractMesh, Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.transforms.custom_derivatives import custom_vjp
from ember._src.transforms.jit import JitFunction, jit
from ember._src.tree.keys import keystr
from ember._src.tree.util import (
    PyTreeDef,
    tree_flatten_with_path,
    tree_unflatten,
)

# The layout of ``main`` (platform index first when exported for several platforms, then the
# array arguments), as JAX's calling convention 9 lays it out for programs without effects or
# symbolic dimensions.
CALLING_CONVENTION_VERSION = 9

# Differentiable calls shared by equal deserialised programs (see Exported._with_vjp),
# oldest dropped first: each keeps its traces and compiled programs alive.
SHARED_CALLS = 64
_differentiable_calls: dict[tuple, custom_vjp] = {}


class Exported:
    """A program exported by ``export`` or read back by ``deserialize`` (JAX's fields)."""

    def __init__(
        self,
        *,
        fun_name: str,
        in_tree: PyTreeDef,
        in_avals: Sequence[ShapedArray],
        out_tree: PyTreeDef,
        out_avals: Sequence[ShapedArray],
        platforms: Sequence[str],
        mlir_module_serialized: bytes,
        stablehlo_version: str,
        stablehlo_producer_version: str,
        nr_devices: int = 1,
        mesh: AbstractMesh | None = None,
        in_specs: Sequence[PartitionSpec | None] | None = None,
        out_specs: Sequence[PartitionSpec | None] | None = None,
        ordered_effects: Sequence[str] = (),
        unordered_effects: Sequence[str] = (),
        disabled_safety_checks: Sequence[str] = (),
        calling_convention_version: int = CALLING_CONVENTION_VERSION,
        vjp_source: Callable[[], Exported] | None = None,
    ):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self.platforms = tuple(platforms)
        self.nr_devices = nr_devices
        # Over several devices: the mesh's axes (its devices are the caller's) and the layout
        # of each argument and result over them (None: the partitioner's choice).
        self.mesh = mesh
        self.in_specs = tuple(in_specs or (None,) * len(self.in_avals))
        self.out_specs = tuple(out_specs or (None,) * len(self.out_avals))
        self.ordered_effects = tuple(ordered_effects)
        self.unordered_effects = tuple(unordered_effects)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.calling_convention_version = calling_convention_version
        # JAX's: every argument is kept in main; its platform index is a global constant.
        self.module_kept_var_idx = tuple(range(len(self.in_avals)))
        self.uses_global_constants = len(self.platforms) > 1
        self.mlir_module_serialized = mlir_module_serialized
        self.stablehlo_version = stablehlo_version  # what the artifact targets
        self.stablehlo_producer_version = stablehlo_producer_version  # who wrote it
        self._vjp_source = vjp_source
        self._vjp: Exported | None = None
        self._text: str | None = None
        self._differentiable: custom_vjp | None = None
        self._mesh_calls: dict[Mesh, JitFunction] = {}

    # Equal by content, as JAX's dataclass is: a program deserialised again from the same
    # bytes is the same program, so the compiled executables cached for calls of it (keyed by
    # the primitive's parameters) serve it too.
    def _key(self) -> tuple:
        return (
            self.fun_name,
            self.in_tree,
            self.in_avals,
            self.out_tree,
            self.out_avals,
            self.platforms,
            self.nr_devices,
            self.mesh,
            self.in_specs,
            self.out_specs,
            self.mlir_module_serialized,
        )

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Exported) and self._key() == other._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return (
            f"Exported({self.fun_name}: ({ins}) -> ({outs}), "
            f"platforms={self.platforms}, nr_devices={self.nr_devices})"
        )

    # -- the layouts ----------------------------------------------------------------------------

    @property
    def in_shardings_hlo(self) -> tuple[str | None, ...]:
        """Each argument's HLO sharding (device ids are positions in the exported mesh), or
        None on one device."""
        return tuple(
            shardings.hlo_sharding(self.mesh, s, a.ndim)
            for s, a in zip(self.in_specs, self.in_avals)
        )

    @property
    def out_shardings_hlo(self) -> tuple[str | None, ...]:
        """Each result's HLO sharding, None where unspecified or on one device."""
        return tuple(
            shardings.hlo_sharding(self.mesh, s, a.ndim)
            for s, a in zip(self.out_specs, self.out_avals)
        )

    def in_shardings_jax(self, mesh: Mesh) -> tuple[NamedSharding | None, ...]:
        """Each argument's layout over ``mesh`` (the exported axes laid over its devices)."""
        over = self._mesh_over(mesh)
        return tuple(None if s is None else NamedSharding(over, s) for s in self.in_specs)

    def out_shardings_jax(self, mesh: Mesh) -> tuple[NamedSharding | None, ...]:
        """Each result's layout over ``mesh``; None where the partitioner chooses."""
        over = self._mesh_over(mesh)
        return tuple(None if s is None else NamedSharding(over, s) for s in self.out_specs)

    def _mesh_over(self, mesh: Mesh) -> Mesh:
        """The exported mesh laid over the devices of ``mesh``, which must be as many."""
        if self.mesh is None:
            raise errors.ExportError(
                f"the exported function {self.fun_name} runs on one device: it has no mesh"
            )
        if mesh.size != self.nr_devices:
            raise errors.ExportError(
                f"the exported function {self.fun_name} was exported for {self.nr_devices} "
                f"devices, but it is called on a mesh of {mesh.size} devices{errors.where()}"
            )
        if mesh.shape_tuple == self.mesh.shape_tuple and mesh.axis_types == self.mesh.axis_types:
            return mesh
        return shardings.mesh_on(self.mesh, mesh.device_list)

    # -- the module --------------------------------------------------------------------------

    def mlir_module(self) -> str:
        """The StableHLO module, as MLIR text (needs a backend that reads portable artifacts)."""
        if self._text is None:
            backend = artifact_backend()
            try:
                self._text = backend.from_portable_artifact(self.mlir_module_serialized)
            except ValueError as exc:
                raise errors.ExportError(
                    f"bad StableHLO artifact in the export of {self.fun_name}: {exc}"
                ) from None
        return self._text

    # -- the VJP -----------------------------------------------------------------------------

    def has_vjp(self) -> bool:
        return self._vjp is not None or self._vjp_source is not None

    def vjp(self) -> Exported:
        """The exported VJP: takes the flat primal inputs then the flat output cotangents,
        returns one cotangent per flat input."""
        if self._vjp is None:
            if self._vjp_source is None:
                raise ValueError(
                    f"the exported function {self.fun_name} was serialised without its VJP "
                    f"(serialize(vjp_order=1) keeps it)"
                )
            self._vjp = self._vjp_source()
        return self._vjp

    # -- serialisation -----------------------------------------------------------------------

    def serialize(self, vjp_order: int = 0) -> bytes:
        """The bytes of this program in ember's export format, with its VJPs up to order
        ``vjp_order`` (1: first derivatives under ``grad``)."""
        if not isinstance(vjp_order, int) or vjp_order < 0:
            raise ValueError(f"vjp_order must be a non-negative int, got {vjp_order!r}")
        vjp = self.vjp().serialize(vjp_order - 1) if vjp_order > 0 else None
        metadata = {
            "function_name": self.fun_name,
            "in_tree": trees.encode(self.in_tree),
            "out_tree": trees.encode(self.out_tree),
            "in_avals": [_encode_aval(a) for a in self.in_avals],
            "out_avals": [_encode_aval(a) for a in self.out_avals],
            "mesh": shardings.encode_mesh(self.mesh),
            "in_shardings": [shardings.encode_spec(s) for s in self.in_specs],
            "out_shardings": [shardings.encode_spec(s) for s in self.out_specs],
            "platforms": list(self.platforms),
            "nr_devices": self.nr_devices,
            "ordered_effects": list(self.ordered_effects),
            "unordered_effects": list(self.unordered_effects),
            "disabled_checks": list(self.disabled_safety_checks),
            "calling_convention_version": self.calling_convention_version,
            "stablehlo_version": self.stablehlo_version,
            "stablehlo_producer_version": self.stablehlo_producer_version,
        }
        return serialization.write(metadata, self.mlir_module_serialized, vjp)

    # -- calling -----------------------------------------------------------------------------

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run the exported program (eagerly, or as part of a traced function), after checking
        the platform, the device count and the arguments against what it was exported for."""
        leaves = self._checked_arguments(args, kwargs)
        at_top = core.eval_trace_is_current()
        if at_top:
            self._check_platform(manager.default_backend().platform)
        self.mlir_module()  # a bad artifact fails here, as itself, rather than in a lowering
        if self.has_vjp() and not at_top:  # (called eagerly, nothing differentiates it)
            outs = self._with_vjp()(*leaves)
        elif at_top and self.mesh is not None:
            outs = self._call_on_mesh(leaves)
        else:
            outs = call_exported(leaves, self)
        return tree_unflatten(self.out_tree, outs)

    def _call_on_mesh(self, leaves: list[Any]) -> list[Any]:
        """Run eagerly over the arguments' mesh, else the mesh in scope: a jitted call laid
        out as exported (one per mesh, its executable cached)."""
        mesh = mesh_of((), leaves, f"the exported function {self.fun_name}")
        if mesh is None:
            raise errors.ExportError(
                f"the exported function {self.fun_name} was exported for {self.nr_devices} "
                f"devices, but it is called on 1 device: pass arrays laid out over a mesh of "
                f"{self.nr_devices} devices, or call it inside ember.set_mesh(mesh)"
                f"{errors.where()}"
            )
        ins = self.in_shardings_jax(mesh)
        # Arrays over the same devices under other axis names (a mesh of another shape) are
        # laid out as exported first: one call runs over one mesh.
        leaves = [
            put(x, s, f"the exported function {self.fun_name}")
            if s is not None and is_multi_device(x) and not s.mesh.same_devices(x.sharding.mesh)
            else x
            for x, s in zip(leaves, ins)
        ]
        run = self._mesh_calls.get(mesh)
        if run is None:
            outs = self.out_shardings_jax(mesh)

            def call_flat(*flat: Any) -> tuple:
                return tuple(call_exported(flat, self))

            call_flat.__name__ = self.fun_name
            run = self._mesh_calls[mesh] = jit(call_flat, in_shardings=ins, out_shardings=outs)
        return list(run(*leaves))

    def _checked_arguments(self, args: tuple, kwargs: dict) -> list[Any]:
        keyed, tree = tree_flatten_with_path((args, kwargs))
        if tree != self.in_tree:
            raise errors.EmberTypeError(
                f"the exported function {self.fun_name} takes arguments of structure "
                f"{self.in_tree}, got {tree}{errors.where()}"
            )
        leaves = []
        polymorphic = self.is_polymorphic
        if polymorphic:  # checks every shape, naming the argument and the symbol
            names = [_argument_name(path) for path, _ in keyed]
            shapes = [core.get_aval(leaf).shape for _, leaf in keyed]
            shape_poly.bind_dims(self.in_avals, shapes, names, self.fun_name)
        for (path, leaf), aval in zip(keyed, self.in_avals):
            got = core.get_aval(leaf)
            name = _argument_name(path)
            if not polymorphic and got.shape != aval.shape:
                raise errors.ShapeMismatchError(
                    f"argument {name} of the exported function {self.fun_name} has shape "
                    f"{got.shape}, but it was exported for shape {aval.shape}{errors.where()}"
                )
            if got.dtype != aval.dtype:
                if not got.weak_type:
                    raise errors.EmberTypeError(
                        f"argument {name} of the exported function {self.fun_name} has dtype "
                        f"{dtypes.short_name(got.dtype)}, but it was exported for "
                        f"{dtypes.short_name(aval.dtype)}{errors.where()}"
                    )
                leaf = convert_element_type(leaf, aval.dtype)  # a Python scalar, say
            leaves.append(leaf)
        return leaves

    @property
    def is_polymorphic(self) -> bool:
        """Whether some argument has a symbolic dimension (``symbolic_shape``)."""
        return any(shape_poly.is_symbolic(a.shape) for a in self.in_avals)

    def out_avals_for(self, in_avals: Sequence[ShapedArray]) -> list[ShapedArray]:
        """The results' abstract values for arguments of these (concrete) ones."""
        if not self.is_polymorphic:
            return list(self.out_avals)
        names = argument_names(self.in_tree)
        values = shape_poly.bind_dims(
            self.in_avals, [a.shape for a in in_avals], names, self.fun_name
        )
        return [shape_poly.substitute(a, values) for a in self.out_avals]

    def _check_platform(self, platform: str) -> None:
        if platform not in self.platforms:
            hint = (
                "; the reference backend cannot run StableHLO: select a PJRT backend "
                "(EMBER_PLATFORMS=cpu)"
                if platform == "reference"
                else ""
            )
            raise errors.ExportError(
                f"the exported function {self.fun_name} was exported for platforms "
                f"{', '.join(self.platforms)}, but the default backend is {platform}{hint}"
                f"{errors.where()}"
            )

    def _with_vjp(self) -> custom_vjp:
        """The call as a function of flat arguments whose derivative is the exported VJP.

        Programs read from the same bytes share it (and so its traces, and the executables
        compiled for them): a process that deserialises a program again pays no new compile.
        """
        if self._differentiable is None:
            key = self._vjp_chain()
            shared = _differentiable_calls.get(key) if key is not None else None
            if shared is not None:
                self._differentiable = shared
                return shared

            def primal(*leaves: Any) -> list[Any]:
                return call_exported(leaves, self)

            def fwd(*leaves: Any) -> tuple[list[Any], tuple]:
                # With a second-order VJP, the forward pass goes through the custom_vjp again,
                # so that a second grad differentiates it by the same rule. Otherwise the bare
                # call: its executable is cached, where a custom_vjp call run eagerly is
                # compiled anew each time (and a second grad then says there is no VJP).
                if self.vjp().has_vjp():
                    return differentiable(*leaves), leaves
                return call_exported(leaves, self), leaves

            def bwd(residuals: tuple, cts: list[Any]) -> tuple:
                return tuple(self.vjp().call(*residuals, *cts))

            differentiable = custom_vjp(primal)
            differentiable.defvjp(fwd, bwd)
            self._differentiable = differentiable
            if key is not None:
                remember(_differentiable_calls, key, differentiable, SHARED_CALLS)
        return self._differentiable

    def _vjp_chain(self) -> tuple | None:
        """This program and its exported VJPs, all orders: equal chains differentiate alike.
        None while a VJP is still to be exported (from this process's trace)."""
        chain = []
        exported: Exported | None = self
        while exported is not None:
            if exported._vjp is None and exported._vjp_source is not None:
                return None
            chain.append(exported)
            exported = exported._vjp
        return tuple(chain)


def _argument_name(path: tuple) -> str:
    """``args[0]['w']`` for the leaf at key path ``(0, 0, 'w')`` of ``(args, kwargs)``."""
    if not path:
        return "args"
    head, rest = path[0], path[1:]
    return ("args" if getattr(head, "idx", 0) == 0 else "kwargs") + keystr(rest)


def argument_names(in_tree: PyTreeDef) -> list[str]:
    """``args[0]['w']``, ... for each leaf of an input structure ``(args, kwargs)``."""
    keyed, _ = tree_flatten_with_path(tree_unflatten(in_tree, range(in_tree.num_leaves)))
    return [_argument_name(path) for path, _ in keyed]


def _encode_aval(aval: ShapedArray) -> dict[str, Any]:
    return {"shape": [str(d) for d in aval.shape], "dtype": aval.dtype.name}


def _decode_aval(data: Any) -> ShapedArray:
    if not isinstance(data, dict) or not isinstance(data.get("shape"), list):
        raise errors.ExportError(f"bad metadata: {data!r} is not an abstract value")
    shape: list[Any] = []
    for dim in data["shape"]:
        if not isinstance(dim, str):
            raise errors.ExportError(f"bad metadata: dimension {dim!r} of {data!r}")
        try:
            (parsed,) = shape_poly.symbolic_shape(dim)
        except ValueError:
            raise errors.ExportError(
                f"bad metadata: dimension {dim!r} of {data!r}: this ember reads integers, "
                f"symbols and expressions of them"
            ) from None
        shape.append(parsed)
    name = data.get("dtype")
    try:
        if name == "bfloat16" and dtypes.bfloat16 is not None:
            dtype = np.dtype(dtypes.bfloat16)
        else:
            dtype = np.dtype(name)
        dtypes.check_supported(dtype)
    except (TypeError, ValueError) as exc:
        raise errors.ExportError(f"bad metadata: dtype of {data!r}: {exc}") from None
    return ShapedArray(tuple(shape), dtype)


# -- deserialising ---------------------------------------------------------------------------


def deserialize(blob: bytes | bytearray) -> Exported:
    """The Exported a file of ember's export format holds (``Exported.serialize``'s output);
    ``ExportError`` naming what is wrong if it is not one."""
    metadata, module, vjp_blob = serialization.read(blob)
    vjp = deserialize(vjp_blob) if vjp_blob is not None else None
    for field in ("platforms", "ordered_effects", "unordered_effects", "disabled_checks"):
        if not all(isinstance(x, str) for x in metadata[field]):
            raise errors.ExportError(f"bad metadata: {field} must be a list of names")
    mesh = shardings.decode_mesh(metadata.get("mesh"))
    nr_devices = metadata["nr_devices"]
    if nr_devices != (1 if mesh is None else mesh.size):
        raise errors.ExportError(
            f"bad metadata: nr_devices is {nr_devices}, but the mesh "
            f"{None if mesh is None else mesh.shape_tuple} has "
            f"{1 if mesh is None else mesh.size}"
        )
    in_avals = [_decode_aval(a) for a in metadata["in_avals"]]
    out_avals = [_decode_aval(a) for a in metadata["out_avals"]]
    in_tree = trees.decode(metadata["in_tree"])
    out_tree = trees.decode(metadata["out_tree"])
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise errors.ExportError(
            "bad metadata: the argument or result structure does not fit the abstract values"
        )
    in_specs = [shardings.decode_spec(s, mesh) for s in metadata["in_shardings"]]
    out_specs = [shardings.decode_spec(s, mesh) for s in metadata["out_shardings"]]
    if (len(in_specs), len(out_specs)) != (len(in_avals), len(out_avals)):
        raise errors.ExportError("bad metadata: the shardings do not fit the abstract values")
    if metadata["calling_convention_version"] != CALLING_CONVENTION_VERSION:
        raise errors.ExportError(
            f"unsupported calling convention version {metadata['calling_convention_version']}: "
            f"this ember calls version {CALLING_CONVENTION_VERSION}"
        )
    exported = Exported(
        fun_name=metadata["function_name"],
        in_tree=in_tree,
        in_avals=in_avals,
        out_tree=out_tree,
        out_avals=out_avals,
        platforms=metadata["platforms"],
        nr_devices=nr_devices,
        mesh=mesh,
        in_specs=in_specs,
        out_specs=out_specs,
        ordered_effects=metadata["ordered_effects"],
        unordered_effects=metadata["unordered_effects"],
        disabled_safety_checks=metadata["disabled_checks"],
        calling_convention_version=metadata["calling_convention_version"],
        mlir_module_serialized=module,
        stablehlo_version=metadata["stablehlo_version"],
        stablehlo_producer_version=metadata["stablehlo_producer_version"],
    )
    exported._vjp = vjp
    return exported
