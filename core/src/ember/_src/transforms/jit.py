"""``jit``: trace once per argument signature, compile with XLA, call the executable.

A jitted function keeps three tables:

- the *trace cache*: (static arguments, argument structure, abstract values) -> jaxpr;
- the *executable cache*: the same plus the arguments' layout (their one sharding, or the
  tuple of them) -> a compiled program (``execution.compiled``), consts already placed;
- the *fast path*: a positional call of Arrays, keyed by its static values, abstract values
  and the Arrays' layout -> an entry of the executable cache taking them as they are, so that
  such a call is one loop over the arguments, one dictionary lookup and one execute.

Anything else (pytrees, kwargs, host values, arrays to move) takes the general path: flatten
(through a straight-line extractor of the last argument structure, when it fits), decide where
the program runs (one device, or a mesh named by in_shardings, by the arguments' layouts or by
a shard_map inside), place the arguments there, then look up or compile the program. Under a
transformation the jaxpr is bound as a ``jit`` equation so the transformation applies to it.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import core, dtypes, errors
from ember._src.config import config
from ember._src.execution import float_checks, placement
from ember._src.execution.compiled import (
    Program,
    compile_prepared,
    mesh_in_jaxpr,
    prepare,
    remember,
)
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.lowering.mlir import strip_locations
from ember._src.primitives.call import jit_call
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Device
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding
from ember._src.transforms.arguments import HashableStatic, leaf_aval, static_names_to_nums
from ember._src.transforms.staging import ShapeDtypeStruct
from ember._src.transforms.trace_context import trace_context
from ember._src.tree.fastpath import builder, leaf_extractor
from ember._src.tree.util import PyTreeDef, flatten_fun, tree_flatten, tree_unflatten


class _Traced:
    """A traced function: its const-free jaxpr, the hoisted consts and the output structure."""

    __slots__ = ("jaxpr", "consts", "out_tree", "donated", "mesh")

    def __init__(self, jaxpr: ClosedJaxpr, consts: list[Any], out_tree: PyTreeDef, donated):
        self.jaxpr = jaxpr
        self.consts = consts
        self.out_tree = out_tree
        self.donated = donated
        # The mesh a shard_map or sharding constraint inside names: such a program is SPMD.
        self.mesh = mesh_in_jaxpr(jaxpr.jaxpr)


class _Executable:
    """An entry of the executable cache: a program with its consts already placed."""

    __slots__ = ("program", "const_buffers", "layout", "build")

    def __init__(self, program: Program, const_buffers: list[Any], layout: Any, out_tree):
        self.program = program
        self.const_buffers = const_buffers
        self.layout = layout  # the arguments' layout it was compiled for (see placement)
        self.build = builder(out_tree)  # tree_unflatten, specialised to out_tree

    def run(self, buffers: list[Any]) -> Any:
        if self.const_buffers:
            buffers = self.const_buffers + buffers
        return self.build(self.program.call_buffers(buffers))


_disable_jit = config.reader("disable_jit")

# Compiled programs kept per jitted function (oldest dropped first): each holds memory mappings
# until freed, and a process may hold only so many (see execution.compiled.remember).
EXECUTABLES_PER_FUNCTION = 512


def arrays_layout(values: Sequence[Any], sharding: Any) -> tuple | None:
    """(layout, avals, buffers) of ``values`` when all are Arrays, else None. The layout is
    what ``placement.layout_of`` names: the one sharding they share (``sharding``, when given,
    counting as the first), else the tuple of their shardings; either way a cache key that
    matches exactly the programs taking these buffers as they are."""
    mixed = False
    buffers = []
    avals = []
    for x in values:
        if type(x) is not Array:
            return None
        if x._sharding is not sharding:
            if sharding is None:
                sharding = x._sharding
            else:
                mixed = True
        avals.append(x.aval)
        buffers.append(x._buffer)
    layout = tuple(x._sharding for x in values) if mixed else sharding
    return layout, tuple(avals), buffers


# Every jitted function alive, so that ``clear_caches`` can empty their caches.
_jit_functions: weakref.WeakSet[JitFunction] = weakref.WeakSet()

_Caches = tuple[dict[tuple, "_Traced"], dict[tuple, "_Executable"], dict[tuple, "_Executable"]]

# The trace, executable and fast-path caches of each function, per set of jit options: as in
# JAX, ``jit(f)`` called again on the same function (in a loop, say) finds the programs the
# first one traced and compiled, rather than tracing again. Weak keys: they go with ``f``.
_caches_by_function: weakref.WeakKeyDictionary[Any, dict[tuple, _Caches]] = (
    weakref.WeakKeyDictionary()
)


def _caches_for(fun: Callable[..., Any], options: tuple) -> _Caches:
    try:
        return _caches_by_function.setdefault(fun, {}).setdefault(options, ({}, {}, {}))
    except TypeError:  # a callable that cannot be weakly referenced or hashed, or options
        return {}, {}, {}  # that cannot be hashed: caches of this jit object's own


class JitFunction:
    """The callable returned by ``ember.jit``."""

    def __init__(
        self,
        fun: Callable[..., Any],
        *,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        device: Device | None = None,
        inline: bool = False,
        in_shardings: Any = None,
        out_shardings: Any = None,
    ):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__name__", type(fun).__name__)
        self._static_argnums = _as_tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
        self._static_argnames = tuple(names or ())
        for position in static_names_to_nums(fun, self._static_argnames).values():
            if position not in self._static_argnums:
                self._static_argnums += (position,)
        self._donate_argnums = _as_tuple(donate_argnums)
        self._device = placement.resolve_device(device, "jit's device")
        # The layout every argument must have when jit(device=...) names one device.
        self._sharding = (
            SingleDeviceSharding(self._device) if isinstance(self._device, Device) else None
        )
        self._inline = inline
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        self._always_spmd = in_shardings is not None or out_shardings is not None
        self._has_statics = bool(self._static_argnums or self._static_argnames)
        # Calls passing static values by position (no keywords) can take the fast path, keyed
        # by those raw values, so ember.numpy's compiled composites skip splitting/flattening.
        self._static_positions = frozenset(self._static_argnums)
        self._positional_statics_ok = self._has_statics and all(
            n >= 0 for n in self._static_argnums
        )
        options = (
            self._static_argnums,
            self._static_argnames,
            self._donate_argnums,
            self._device,
            inline,
            in_shardings,
            out_shardings,
        )
        self._trace_cache, self._exec_cache, self._fast = _caches_for(fun, options)
        # Flattening shortcut: straight-line leaf extraction for the last argument structure.
        self._last_in_tree: PyTreeDef | None = None
        self._last_extractor: Callable[[Any], list[Any] | None] | None = None
        _jit_functions.add(self)

    def __repr__(self) -> str:
        return f"<jitted function {self._name}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # Support decorating methods: bind like a function would.
        if instance is None:
            return self
        return functools.partial(self, instance)

    # -- calling --------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _disable_jit():
            return self._fun(*args, **kwargs)
        at_top = core.eval_trace_is_current()
        if float_checks.armed and at_top and float_checks.active():
            return self._call_checked(args, kwargs)
        if self._inline and not at_top:  # under a trace, just trace the body in place
            return self._fun(*args, **kwargs)
        fast_key = None
        if at_top and not kwargs:
            if not self._has_statics:
                # The fast path: every argument an Array (``arrays_layout``, inlined here).
                sharding = self._sharding
                mixed = False
                buffers = []
                avals = []
                for x in args:
                    if type(x) is not Array:
                        break
                    if x._sharding is not sharding:
                        if sharding is None:
                            sharding = x._sharding
                        else:
                            mixed = True
                    avals.append(x.aval)
                    buffers.append(x._buffer)
                else:
                    layout = tuple(x._sharding for x in args) if mixed else sharding
                    fast_key = (tuple(avals), layout, trace_context())
                    entry = self._fast.get(fast_key)
                    if entry is not None:
                        return entry.run(buffers)
            elif self._positional_statics_ok:
                fast_key, buffers = self._static_fast_key(args)
                if fast_key is not None:
                    entry = self._fast.get(fast_key)
                    if entry is not None:
                        return entry.run(buffers)
        if at_top:
            leaves = None
            if not kwargs and not self._has_statics and self._last_extractor is not None:
                leaves = self._last_extractor((args, kwargs))
                in_tree, statics = self._last_in_tree, ()
            if leaves is None:
                dynamic, statics = self._split(args, kwargs)
                leaves, in_tree = tree_flatten(dynamic)
                if not statics and in_tree is not self._last_in_tree:
                    self._last_in_tree = in_tree
                    self._last_extractor = leaf_extractor(in_tree)
            entry, buffers = self._executable_for(leaves, in_tree, statics)
            if fast_key is not None and entry.layout == fast_key[-2]:
                # Arrays already laid out as the program takes them: next time, straight in.
                remember(self._fast, fast_key, entry, EXECUTABLES_PER_FUNCTION)
            return entry.run(buffers)
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        outs = jit_call([*traced.consts, *leaves], traced.jaxpr, self._name, traced.donated)
        return tree_unflatten(traced.out_tree, outs)

    def _call_checked(self, args: tuple, kwargs: dict) -> Any:
        """A call under debug_nans/debug_infs: run the program, check its outputs and, when
        one holds a value checked for, run the function again op by op so that the eager check
        raises at the first primitive producing it (as JAX does)."""
        with float_checks.unchecked():
            out = self(*args, **kwargs)
        found = float_checks.first_invalid(tree_flatten(out)[0])
        if found is None:
            return out
        with disable_jit():
            self._fun(*args, **kwargs)
        raise FloatingPointError(
            f"invalid value ({found}) encountered in jit({self._name}){errors.where()}; run "
            f"op by op (as under disable_jit) the function produced none: the compiled "
            f"program's optimisations, or a NaN/inf constant among its outputs, made it"
        )

    def _static_fast_key(self, args: tuple) -> tuple[tuple | None, list[Any]]:
        """The fast-path key of a call of Arrays sharing one sharding and hashable static
        values by position, with the Arrays' buffers; (None, []) for any other call."""
        sharding = self._sharding
        statics = []
        avals = []
        buffers = []
        for i, x in enumerate(args):
            if i in self._static_positions:
                statics.append((type(x), x))
            elif type(x) is not Array or (sharding is not None and x._sharding is not sharding):
                return None, []
            else:
                sharding = x._sharding
                avals.append(x.aval)
                buffers.append(x._buffer)
        key = (len(args), tuple(statics), tuple(avals), sharding, trace_context())
        try:
            hash(key)
        except TypeError:  # an unhashable static value: the general path explains
            return None, []
        return key, buffers

    def _executable_for(
        self, leaves: list[Any], in_tree: PyTreeDef, statics: tuple
    ) -> tuple[_Executable, list[Any]]:
        """The compiled program for these arguments, and their buffers, placed as it takes
        them."""
        # Arrays only: their key is known without placing them.
        arrays = arrays_layout(leaves, self._sharding)
        if arrays is not None:
            layout, avals, buffers = arrays
            entry = self._exec_cache.get((statics, in_tree, avals, layout, trace_context()))
            if entry is not None:
                return entry, buffers
        elif not self._always_spmd:
            found = self._cached_with_host_scalars(leaves, in_tree, statics)
            if found is not None:
                return found
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        where, wanted = self._where(traced, leaves, in_tree)
        if isinstance(where, Mesh):
            # The layouts as asked: on a one-device mesh, a placed array keeps its device's
            # sharding, while the program is annotated with the mesh's.
            placed, layouts = placement.place_arguments(leaves, wanted, where, f"jit({self._name})")
        else:
            placed = placement.place_on_device(leaves, where)
            layouts = [None if p is None else p._sharding for p in placed]
        layout = placement.layout_of(placed, where)
        key = (statics, in_tree, avals, layout, trace_context())
        entry = self._exec_cache.get(key)
        if entry is None:
            in_shardings = [None if p is None else s for p, s in zip(placed, layouts)]
            prepared = self._prepare(traced, where, in_shardings)
            entry = self._compile(traced, where, prepared, layout)
            remember(self._exec_cache, key, entry, EXECUTABLES_PER_FUNCTION)
        return entry, [None if p is None else p._buffer for p in placed]

    def _cached_with_host_scalars(
        self, leaves: list[Any], in_tree: PyTreeDef, statics: tuple
    ) -> tuple[_Executable, list[Any]] | None:
        """The cached program for Arrays on one device with host scalars (``x * 0.5``,
        ``maximum(x, 0.0)``), and the buffers, the scalars coming from the placement cache;
        None when the call is not of that kind or nothing is cached for it yet. A program that
        must run over a mesh is never cached under a one-device layout, so a hit is always the
        right program."""
        target = self._sharding
        for x in leaves:
            if type(x) is Array:
                if target is None:
                    target = x._sharding
                elif x._sharding is not target:
                    return None
        if target is None:
            target = placement.default_sharding()
        elif type(target) is not SingleDeviceSharding:
            return None
        device = target.device
        avals = []
        buffers = []
        for x in leaves:
            if type(x) is not Array:
                if not placement.is_host_scalar(x) or getattr(x, "dtype", None) == dtypes.float0:
                    return None
                x = placement.scalar_on_device(x, device)
            avals.append(x.aval)
            buffers.append(x._buffer)
        entry = self._exec_cache.get((statics, in_tree, tuple(avals), target, trace_context()))
        return None if entry is None else (entry, buffers)

    def _where(self, traced: _Traced, leaves: list[Any], in_tree: PyTreeDef):
        """Where the program runs (a Device or a Mesh), and the sharding asked for each
        argument (None: as it is)."""
        # ShapeDtypeStructs laid out on a mesh (lowering ahead of time): their shardings.
        described = [x.sharding if type(x) is ShapeDtypeStruct else None for x in leaves]
        if not self._always_spmd and all(s is None for s in described):
            device = self._device or placement.common_device(leaves, self._name)
            if device is not None and traced.mesh is None:
                return device, None
        name = self._name
        wanted = [None] * len(leaves)
        if self._in_shardings is not None:
            prefix = self._in_shardings
            if isinstance(prefix, list):
                prefix = tuple(prefix)
            n_args = in_tree.subtrees[0].num_leaves
            index_tree = tree_unflatten(in_tree, range(len(leaves)))
            wanted[:n_args] = placement.broadcast_prefix(
                prefix, index_tree[0], n_args, f"jit({name}) in_shardings"
            )
        for i, sharding in enumerate(described):
            if sharding is None:
                continue
            if wanted[i] is None:
                wanted[i] = sharding
            elif wanted[i] != sharding:
                raise ValueError(
                    f"jit({name}): {self._label(i)} is a ShapeDtypeStruct with sharding "
                    f"{sharding!r}, but in_shardings asks for {wanted[i]!r}{errors.where()}"
                )
        mesh = placement.mesh_of(wanted, leaves, f"jit({name})") or traced.mesh
        if mesh is None:
            out_sh = self._out_leaf_shardings(traced)
            mesh = placement.mesh_of(out_sh, (), f"jit({name})")
        if mesh is None:
            raise ValueError(f"jit({name}): shardings were given but name no mesh")
        return mesh, wanted

    def _prepare(self, traced: _Traced, where: Device | Mesh, in_shardings: list[Any]):
        """The computation of ``traced`` for ``where``, its consts leading the arguments."""
        if isinstance(where, Mesh):
            replicated = NamedSharding(where, PartitionSpec())
            in_shardings = [replicated] * len(traced.consts) + in_shardings
            out_shardings = self._out_leaf_shardings(traced)
        else:
            in_shardings = out_shardings = None
        return prepare(
            traced.jaxpr, f"jit_{self._name}", where, in_shardings, out_shardings, traced.donated
        )

    def _compile(self, traced: _Traced, where: Device | Mesh, prepared, layout) -> _Executable:
        program = compile_prepared(prepared)
        if isinstance(where, Mesh):
            replicated = NamedSharding(where, PartitionSpec())
            consts = [placement.put(c, replicated) for c in traced.consts]
        else:
            consts = placement.place_on_device(traced.consts, where)
        # float0 consts (tangents of integers) carry no data: the program does not take them.
        const_buffers = [None if c is None else c._buffer for c in consts]
        return _Executable(program, const_buffers, layout, traced.out_tree)

    def _out_leaf_shardings(self, traced: _Traced) -> list[Any]:
        count = traced.out_tree.num_leaves
        if self._out_shardings is None:
            return [None] * count
        prefix = self._out_shardings
        if isinstance(prefix, list):
            prefix = tuple(prefix)
        indices = tree_unflatten(traced.out_tree, range(count))
        return placement.broadcast_prefix(
            prefix, indices, count, f"jit({self._name}) out_shardings"
        )

    # -- tracing --------------------------------------------------------------------------------

    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
        if not self._has_statics:
            return (args, kwargs), ()
        # Static positions beyond the call's positional arguments are simply absent.
        nums = {n % len(args) for n in self._static_argnums if -len(args) <= n < len(args)}
        static_pos = tuple(
            (i, HashableStatic(args[i], f"#{i} (positional)", self._name)) for i in sorted(nums)
        )
        static_kw = tuple(
            (k, HashableStatic(kwargs[k], repr(k), self._name))
            for k in sorted(kwargs)
            if k in self._static_argnames
        )
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return (dyn_args, dyn_kwargs), (static_pos, static_kw)

    def _merge(self, dyn_args: tuple, dyn_kwargs: dict, statics: tuple) -> tuple[list, dict]:
        if not statics:
            return list(dyn_args), dyn_kwargs
        static_pos, static_kw = statics
        args = list(dyn_args)
        for i, wrapped in static_pos:
            args.insert(i, wrapped.value)
        kwargs = dict(dyn_kwargs)
        kwargs.update((k, wrapped.value) for k, wrapped in static_kw)
        return args, kwargs

    def _trace(self, statics: tuple, in_tree: PyTreeDef, avals: tuple) -> _Traced:
        key = (statics, in_tree, avals, trace_context())
        traced = self._trace_cache.get(key)
        if traced is not None:
            return traced

        def call(dyn_args: tuple, dyn_kwargs: dict) -> Any:
            args, kwargs = self._merge(dyn_args, dyn_kwargs, statics)
            return self._fun(*args, **kwargs)

        flat_fun = flatten_fun(call, in_tree)
        closed = trace_to_jaxpr(flat_fun, avals, name=self._name)
        jaxpr = dce_jaxpr(closed.jaxpr)
        hoisted = Jaxpr(
            [], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, self._name
        )
        donated = (False,) * len(closed.consts) + self._donated_leaves(in_tree, statics)
        traced = _Traced(ClosedJaxpr(hoisted, []), list(closed.consts), flat_fun.out_tree, donated)
        self._trace_cache[key] = traced
        return traced

    def _donated_leaves(self, in_tree: PyTreeDef, statics: tuple) -> tuple[bool, ...]:
        args_def, kwargs_def = in_tree.subtrees
        if not self._donate_argnums:
            return (False,) * in_tree.num_leaves
        static_positions = {i for i, _ in statics[0]} if statics else set()
        dynamic_positions = [
            i
            for i in range(len(args_def.subtrees) + len(static_positions))
            if i not in static_positions
        ]
        n_args = len(dynamic_positions) + len(static_positions)
        donate = {n % n_args for n in self._donate_argnums if -n_args <= n < n_args}
        flags: list[bool] = []
        for position, child in zip(dynamic_positions, args_def.subtrees):
            flags.extend([position in donate] * child.num_leaves)
        flags.extend([False] * kwargs_def.num_leaves)
        return tuple(flags)

    def _label(self, leaf_index: int) -> str:
        return f"argument leaf #{leaf_index} of {self._name}"

    # -- ahead-of-time ----------------------------------------------------------------------------

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace and lower for these arguments without running: ``.as_text()`` is StableHLO."""
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        where, wanted = self._where(traced, leaves, in_tree)
        in_shardings = None
        if isinstance(where, Mesh):
            in_shardings = placement.argument_layouts(leaves, wanted, where, f"jit({self._name})")
        return Lowered(self, traced, self._prepare(traced, where, in_shardings))

    def placement(
        self, *args: Any, **kwargs: Any
    ) -> tuple[Device | Mesh, list | None, list | None]:
        """Where a call with these arguments (values or ShapeDtypeStructs) runs, and, over a
        mesh, the sharding of each dynamic argument leaf and the one asked for each result
        leaf (None: the partitioner chooses): what ``ember.export`` records."""
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        where, wanted = self._where(traced, leaves, in_tree)
        if not isinstance(where, Mesh):
            return where, None, None
        layouts = placement.argument_layouts(leaves, wanted, where, f"jit({self._name})")
        return where, layouts, self._out_leaf_shardings(traced)

    def trace(self, *args: Any, **kwargs: Any) -> ClosedJaxpr:
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        return self._trace(statics, in_tree, avals).jaxpr

    def trace_closed(self, *args: Any, **kwargs: Any) -> tuple[ClosedJaxpr, PyTreeDef, PyTreeDef]:
        """(jaxpr with its consts closed over, input structure, output structure) for these
        arguments (values or ShapeDtypeStructs): what ``ember.export`` lowers. The input
        structure is that of ``(dynamic positional args, dynamic kwargs)``."""
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        hoisted = traced.jaxpr.jaxpr
        n_consts = len(traced.consts)
        jaxpr = Jaxpr(
            hoisted.invars[:n_consts],
            hoisted.invars[n_consts:],
            hoisted.outvars,
            hoisted.eqns,
            self._name,
        )
        return ClosedJaxpr(jaxpr, list(traced.consts)), in_tree, traced.out_tree

    def clear_cache(self) -> None:
        self._trace_cache.clear()
        self._exec_cache.clear()
        self._fast.clear()
        self._last_in_tree = self._last_extractor = None


def clear_jit_caches() -> None:
    """Empty the caches of every jitted function alive (``ember.clear_caches``)."""
    for fn in list(_jit_functions):
        fn.clear_cache()
    # and those of functions whose jit objects are gone (a later jit(f) would find them)
    for per_options in list(_caches_by_function.values()):
        for caches in per_options.values():
            for cache in caches:
                cache.clear()


class Lowered:
    """A jitted function lowered for one argument signature."""

    def __init__(self, fn: JitFunction, traced: _Traced, prepared: Any):
        self._fn = fn
        self._traced = traced
        self._prepared = prepared  # the computation, for one device or over a mesh

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return self._traced.jaxpr

    def as_text(self, platform: str | None = None, *, debug_info: bool = False) -> str:
        """The StableHLO module, as MLIR text, for ``platform`` (default: the device's).

        ``debug_info=True`` keeps each operation's location: its ``named_scope`` names and
        primitive, and the line that traced it (``loc("outer/add"("f.py":12:0))``), as JAX's.
        """
        computation = self._prepared.computation
        text = computation.as_text(platform or computation.devices[0].platform)
        return text if debug_info else strip_locations(text)

    def compile(self) -> Compiled:
        """Compiled for inspection; calls go through the jitted function and its caches."""
        program = compile_prepared(self._prepared)
        return Compiled(self._fn, program.executable, self._prepared.computation.devices)


class Compiled:
    """A compiled executable for one argument signature."""

    def __init__(self, fn: JitFunction, executable: Any, devices: Sequence[Device] = ()):
        self._fn = fn
        self._executable = executable
        self._devices = tuple(devices)  # what it was compiled for

    def as_text(self) -> str:
        return self._executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self._executable.cost_analysis()

    def memory_analysis(self) -> Any:
        return self._executable.memory_analysis()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._executable.compile_only:
            kinds = sorted({d.device_kind for d in self._devices})
            raise errors.ExecutionError(
                f"jit({self._fn._name}) was compiled for compile-only devices "
                f"({len(self._devices)} x {', '.join(kinds)}, from "
                f"ember.experimental.topologies) and cannot run on this machine; inspect it "
                f"(.as_text(), .cost_analysis(), .memory_analysis()) or compile it again where "
                f"the hardware is"
            )
        return self._fn(*args, **kwargs)


def disable_jit(disable: bool = True) -> contextlib.AbstractContextManager[None]:
    """``with ember.disable_jit():`` runs jitted functions (and the bodies of ``scan``,
    ``while_loop``, ``fori_loop``, ``cond`` and ``switch``) eagerly, op by op, as JAX does."""
    return config.option("disable_jit", bool(disable))


def _as_tuple(value: int | Sequence[int] | None) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(value)


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    device: Device | None = None,
    inline: bool = False,
    in_shardings: Any = None,
    out_shardings: Any = None,
) -> Any:
    """Compile ``fun`` with XLA; usable as ``@jit`` or ``@jit(static_argnums=...)``.

    ``in_shardings``/``out_shardings`` (a Sharding, or a pytree prefix of the positional
    arguments / of the result, with None for "as it is" / "the partitioner decides") compile
    one SPMD program over their mesh; arrays laid out over a mesh take that path by themselves.

    ``inline=True`` compiles only when called eagerly; called while tracing, ``fun`` is traced
    in place (no nested call in the jaxpr). ember.numpy uses it for composite functions.
    """
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            device=device,
            inline=inline,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
        )
    return JitFunction(
        fun,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        device=device,
        inline=inline,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
    )
