"""``jit``: trace once per argument signature, compile with XLA, call the executable.

A jitted function keeps two caches. The *trace cache* maps (static arguments, argument
structure, abstract values) to a jaxpr; the *executable cache* adds the device and maps to a
compiled executable, ready to be called with device buffers. At the top level (no enclosing
transformation) a call is a tree flatten, one dictionary lookup and one execute; under a
transformation the jaxpr is bound as a ``jit`` equation so the transformation applies to it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import core, dtypes
from ember._src.config import config
from ember._src.execution import spmd
from ember._src.execution.dispatch import (
    CompiledComputation,
    common_device,
    compile_jaxpr,
    is_host_scalar,
    mesh_in_jaxpr,
    remember,
    resolve_device,
    scalar_on_device,
    to_device,
    without_float0,
)
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.lowering.module import lower_module
from ember._src.primitives.call import jit_call
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Device
from ember._src.transforms.arguments import HashableStatic, leaf_aval, static_names_to_nums
from ember._src.tree.fastpath import builder, leaf_extractor
from ember._src.tree.util import PyTreeDef, tree_flatten, tree_unflatten


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


class _SpmdExecutable:
    """A compiled entry of the SPMD cache, with its consts already laid out on the mesh."""

    __slots__ = ("compiled", "const_arrays", "build")

    def __init__(self, compiled: spmd.SpmdComputation, const_arrays: list[Array], out_tree):
        self.compiled = compiled
        self.const_arrays = const_arrays
        self.build = builder(out_tree)


class _Executable:
    """A compiled entry of the executable cache, with its consts already on the device."""

    __slots__ = ("compiled", "const_buffers", "out_tree", "build")

    def __init__(self, compiled: CompiledComputation, const_buffers: list[Any], out_tree):
        self.compiled = compiled
        self.const_buffers = const_buffers
        self.out_tree = out_tree
        self.build = builder(out_tree)  # tree_unflatten, specialised to out_tree


_NOT_CACHED = object()
_disable_jit = config.reader("disable_jit")
_enable_x64 = config.reader("enable_x64")


# Compiled programs kept per jitted function (oldest dropped first): each holds memory mappings
# until freed, and a process may hold only so many (see dispatch.EAGER_CACHE_SIZE).
EXECUTABLES_PER_FUNCTION = 512


@functools.lru_cache(maxsize=64)
def _flat_args_tree(n: int) -> PyTreeDef:
    """The tree of ``(args, kwargs)`` for ``n`` positional array arguments and no kwargs."""
    return tree_flatten((tuple(range(n)), {}))[1]


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
        self._device = resolve_device(device, "jit's device")
        self._inline = inline
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        self._always_spmd = in_shardings is not None or out_shardings is not None
        self._spmd_cache: dict[tuple, _SpmdExecutable] = {}
        self._spmd_fast: dict[tuple, _SpmdExecutable] = {}  # keyed by the arrays' layouts
        self._has_statics = bool(self._static_argnums or self._static_argnames)
        # Calls passing static values by position (no keywords): executables by those raw
        # values, so ember.numpy's compiled composites skip splitting and flattening.
        self._static_positions = frozenset(self._static_argnums)
        self._positional_statics_ok = self._has_statics and all(
            n >= 0 for n in self._static_argnums
        )
        self._static_fast: dict[tuple, _Executable] = {}
        self._trace_cache: dict[tuple, _Traced] = {}
        self._exec_cache: dict[tuple, _Executable] = {}
        self._flat_cache: dict[tuple, _Executable] = {}  # _call_flat_arrays' view of it
        self._last_in_tree: PyTreeDef | None = None
        self._last_extractor: Callable[[Any], list[Any] | None] | None = None

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
        if self._inline and not at_top:  # under a trace, just trace the body in place
            return self._fun(*args, **kwargs)
        if at_top and not kwargs and self._positional_statics_ok:
            fast_key = self._static_key(args)
            if fast_key is not None:
                entry = self._static_fast.get(fast_key)
                if entry is not None:
                    buffers = [
                        x._buffer for i, x in enumerate(args) if i not in self._static_positions
                    ]
                    return entry.build(entry.compiled.call_buffers(entry.const_buffers + buffers))
                dynamic, statics = self._split(args, kwargs)
                leaves, in_tree = tree_flatten(dynamic)
                out = self._call_top_level(leaves, in_tree, statics)
                # The executable the general path cached for exactly these arguments (none
                # when the call went over a mesh): found by its own key, not by "the last one",
                # which another thread may have replaced meanwhile.
                _, _, avals, device, x64 = fast_key
                entry = self._exec_cache.get((statics, in_tree, avals, device, x64))
                if entry is not None:
                    self._static_fast[fast_key] = entry
                return out
        if at_top and not kwargs and not self._has_statics:
            outs = self._call_flat_arrays(args)
            if outs is not _NOT_CACHED:
                return outs
            # Arguments shaped like last time's: take their leaves without flattening.
            extract = self._last_extractor
            if extract is not None:
                leaves = extract((args, kwargs))
                if leaves is not None:
                    return self._call_top_level(leaves, self._last_in_tree, ())
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        if at_top:
            if not statics and in_tree is not self._last_in_tree:
                self._last_in_tree = in_tree
                self._last_extractor = leaf_extractor(in_tree)
            return self._call_top_level(leaves, in_tree, statics)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        outs = jit_call([*traced.consts, *leaves], traced.jaxpr, self._name, traced.donated)
        return tree_unflatten(traced.out_tree, outs)

    def _static_key(self, args: tuple) -> tuple | None:
        """The fast-path key of a call of Arrays on one device and hashable static values by
        position; None when the call is not of that kind."""
        device = self._device
        statics = []
        avals = []
        for i, x in enumerate(args):
            if i in self._static_positions:
                statics.append((type(x), x))
            elif type(x) is not Array or (device is not None and x._device is not device):
                return None
            else:
                device = x._device
                avals.append(x.aval)
        key = (len(args), tuple(statics), tuple(avals), device, _enable_x64())
        try:
            hash(key)
        except TypeError:  # an unhashable static value: the general path explains
            return None
        return key

    def _call_top_level(self, leaves: list[Any], in_tree: PyTreeDef, statics: tuple) -> Any:
        device = self._device or common_device(leaves, self._name)
        if device is None or self._always_spmd:
            return self._call_spmd(leaves, in_tree, statics)
        buffers = []
        avals = []
        for i, x in enumerate(leaves):
            if type(x) is not Array or x._device is not device:
                aval = leaf_aval(x, self._label(i))
                if aval.dtype == dtypes.float0:  # no data: the program does not take it
                    buffers.append(None)
                    avals.append(aval)
                    continue
                x = scalar_on_device(x, device) if is_host_scalar(x) else to_device(x, device)
            buffers.append(x._buffer)
            avals.append(x.aval)
        avals = tuple(avals)
        x64 = _enable_x64()
        key = (statics, in_tree, avals, device, x64)
        entry = self._exec_cache.get(key)
        if entry is None:
            if self._trace(statics, in_tree, avals).mesh is not None:
                return self._call_spmd(leaves, in_tree, statics)
            entry = self._compile(statics, in_tree, avals, device)
            remember(self._exec_cache, key, entry, EXECUTABLES_PER_FUNCTION)
            if not statics and in_tree == _flat_args_tree(len(leaves)):
                flat_key = (avals, device, x64)
                remember(self._flat_cache, flat_key, entry, EXECUTABLES_PER_FUNCTION)
        return entry.build(entry.compiled.call_buffers(entry.const_buffers + buffers))

    def _call_spmd(self, leaves: list[Any], in_tree: PyTreeDef, statics: tuple) -> Any:
        """A call over a device mesh: arguments laid out, one SPMD program compiled per
        layout of the arguments."""
        # Arrays already laid out as last time: straight to the compiled program.
        try:
            fast_key = (statics, in_tree, tuple((x.aval, x._device) for x in leaves))
            entry = self._spmd_fast.get(fast_key)
        except (AttributeError, TypeError):  # host values among the arguments
            fast_key = entry = None
        if entry is not None:
            return entry.build(entry.compiled.call(entry.const_arrays + leaves))
        traced, mesh, wanted = self._spmd_plan(leaves, in_tree, statics)
        placed, layouts = spmd.place_arguments(leaves, wanted, mesh, f"jit({self._name})")
        avals = tuple(x.aval for x in placed)
        key = (statics, in_tree, avals, spmd.layouts_key(avals, layouts), _enable_x64())
        entry = self._spmd_cache.get(key)
        if entry is None:
            replicated = spmd.NamedSharding(mesh, spmd.PartitionSpec())
            consts = [spmd.put(c, replicated) for c in traced.consts]
            compiled = spmd.compile_spmd(
                traced.jaxpr,
                mesh,
                f"jit_{self._name}",
                [replicated] * len(consts) + layouts,
                self._out_leaf_shardings(traced),
                traced.donated,
            )
            entry = _SpmdExecutable(compiled, consts, traced.out_tree)
            remember(self._spmd_cache, key, entry, EXECUTABLES_PER_FUNCTION)
        if fast_key is not None and all(p is x for p, x in zip(placed, leaves)):
            remember(self._spmd_fast, fast_key, entry, EXECUTABLES_PER_FUNCTION)
        return entry.build(entry.compiled.call(entry.const_arrays + placed))

    def _spmd_plan(self, leaves: list[Any], in_tree: PyTreeDef, statics: tuple):
        """(traced program, mesh, the sharding asked for each argument or None)."""
        name = self._name
        index_tree = tree_unflatten(in_tree, range(len(leaves)))
        wanted = [None] * len(leaves)
        if self._in_shardings is not None:
            args_indices = index_tree[0]
            prefix = self._in_shardings
            if isinstance(prefix, list):
                prefix = tuple(prefix)
            wanted[: in_tree.subtrees[0].num_leaves] = spmd.broadcast_prefix(
                prefix, args_indices, in_tree.subtrees[0].num_leaves, f"jit({name}) in_shardings"
            )
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        traced = self._trace(statics, in_tree, avals)
        mesh = spmd.mesh_of(wanted, leaves, f"jit({name})") or traced.mesh
        if mesh is None:
            out_sh = self._out_leaf_shardings(traced)
            mesh = spmd.mesh_of(out_sh, (), f"jit({name})")
        if mesh is None:
            raise ValueError(f"jit({name}): shardings were given but name no mesh")
        return traced, mesh, wanted

    def _out_leaf_shardings(self, traced: _Traced) -> list[Any]:
        count = traced.out_tree.num_leaves
        if self._out_shardings is None:
            return [None] * count
        prefix = self._out_shardings
        if isinstance(prefix, list):
            prefix = tuple(prefix)
        indices = tree_unflatten(traced.out_tree, range(count))
        return spmd.broadcast_prefix(prefix, indices, count, f"jit({self._name}) out_shardings")

    def _call_flat_arrays(self, args: tuple) -> Any:
        """The common call, every argument an Array on one device: no pytree flattening."""
        device = self._device
        avals = []
        buffers = []
        for x in args:
            if type(x) is not Array or (device is not None and x._device is not device):
                return _NOT_CACHED
            device = x._device
            avals.append(x.aval)
            buffers.append(x._buffer)
        entry = self._flat_cache.get((tuple(avals), device, _enable_x64()))
        if entry is None:
            return _NOT_CACHED
        if entry.const_buffers:
            buffers = entry.const_buffers + buffers
        return entry.build(entry.compiled.call_buffers(buffers))

    def _compile(self, statics: tuple, in_tree: PyTreeDef, avals: tuple, device: Device):
        traced = self._trace(statics, in_tree, avals)
        compiled = compile_jaxpr(traced.jaxpr, device, f"jit_{self._name}", traced.donated)
        # float0 consts (tangents of integers) carry no data: the program does not take them.
        const_buffers = [
            None if core.get_aval(c).dtype == dtypes.float0 else to_device(c, device)._buffer
            for c in traced.consts
        ]
        return _Executable(compiled, const_buffers, traced.out_tree)

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
        key = (statics, in_tree, avals, _enable_x64())
        traced = self._trace_cache.get(key)
        if traced is not None:
            return traced
        out_trees: list[PyTreeDef] = []

        def flat_fun(*leaves: Any) -> list[Any]:
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, leaves)
            args, kwargs = self._merge(dyn_args, dyn_kwargs, statics)
            out = self._fun(*args, **kwargs)
            out_leaves, out_tree = tree_flatten(out)
            out_trees.append(out_tree)
            return out_leaves

        closed = trace_to_jaxpr(flat_fun, avals, name=self._name)
        jaxpr = dce_jaxpr(closed.jaxpr)
        hoisted = Jaxpr(
            [], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, self._name
        )
        donated = (False,) * len(closed.consts) + self._donated_leaves(in_tree, statics)
        traced = _Traced(ClosedJaxpr(hoisted, []), list(closed.consts), out_trees[0], donated)
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
        device = self._device or common_device([x for x in leaves if type(x) is Array], self._name)
        spmd_text = None
        if device is None or self._always_spmd or self._trace(statics, in_tree, avals).mesh:
            traced, mesh, wanted = self._spmd_plan(leaves, in_tree, statics)
            layouts = spmd.argument_layouts(leaves, wanted, mesh, f"jit({self._name})")
            replicated = spmd.NamedSharding(mesh, spmd.PartitionSpec())
            spmd_text = spmd.spmd_computation(
                traced.jaxpr,
                mesh,
                f"jit_{self._name}",
                [replicated] * len(traced.consts) + layouts,
                self._out_leaf_shardings(traced),
                traced.donated,
            )
            device = mesh.device_list[0]
        return Lowered(self, statics, in_tree, avals, device, spmd_text)

    def trace(self, *args: Any, **kwargs: Any) -> ClosedJaxpr:
        dynamic, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = tuple(leaf_aval(x, self._label(i)) for i, x in enumerate(leaves))
        return self._trace(statics, in_tree, avals).jaxpr

    def clear_cache(self) -> None:
        self._trace_cache.clear()
        self._exec_cache.clear()
        self._flat_cache.clear()
        self._spmd_cache.clear()
        self._spmd_fast.clear()


class Lowered:
    """A jitted function lowered for one argument signature."""

    def __init__(self, fn: JitFunction, statics, in_tree, avals, device: Device, spmd_program=None):
        self._fn = fn
        self._spmd = spmd_program  # the Computation of an SPMD program over a mesh
        self._statics = statics
        self._in_tree = in_tree
        self._avals = avals
        self._device = device
        self._traced = fn._trace(statics, in_tree, avals)

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return self._traced.jaxpr

    def as_text(self, platform: str | None = None) -> str:
        """The StableHLO module, as MLIR text, for ``platform`` (default: the device's)."""
        if self._spmd is not None:
            return self._spmd.as_text(platform or self._device.platform)
        jaxpr, donated = self._traced.jaxpr, self._traced.donated
        stripped = without_float0(jaxpr, self._fn._name, donated)
        if stripped is not None:  # float0 inputs and outputs are not part of the program
            jaxpr, donated = stripped[0], stripped[1]
        return lower_module(
            jaxpr,
            platform=platform or self._device.platform,
            name=f"jit_{self._fn._name}",
            donated_invars=donated,
        )

    def compile(self) -> Compiled:
        if self._spmd is not None:  # compiled for inspection; calls go through the jit cache
            return Compiled(self._fn, self._device.backend.compile(self._spmd))
        key = (self._statics, self._in_tree, self._avals, self._device)
        entry = self._fn._exec_cache.get(key)
        if entry is None:
            entry = self._fn._compile(self._statics, self._in_tree, self._avals, self._device)
            remember(self._fn._exec_cache, key, entry, EXECUTABLES_PER_FUNCTION)
        return Compiled(self._fn, entry.compiled.executable)


class Compiled:
    """A compiled executable for one argument signature."""

    def __init__(self, fn: JitFunction, executable: Any):
        self._fn = fn
        self._executable = executable

    def as_text(self) -> str:
        return self._executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self._executable.cost_analysis()

    def memory_analysis(self) -> Any:
        return self._executable.memory_analysis()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


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
