"""Eager execution: each primitive runs as its own small cached program.

``apply_primitive`` is what the bottom ``EvalTrace`` calls. Its programs are kept in one
cache keyed by the primitive, its parameters, the operands' abstract values and their layout
(the one sharding they share, else the tuple of their shardings). The common call, Arrays
sharing one sharding (one device: an interned sharding, compared by identity), looks the key
up and runs; anything else (host values, operands on different devices or layouts) is placed
first, by the rules of ``placement``, and then looked up the same way.

A primitive may give a *layout rule* (``def_layouts``): how its operands must be laid out and
how its results come out, from its parameters. ``shard_map`` (operands and results laid out
by its specs) and the sharding constraint (its result laid out as it says) use one, so that
run eagerly they compile and run through this same path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import rules
from ember._src.core import Primitive, ShapedArray, get_aval
from ember._src.execution import float_checks, placement
from ember._src.execution.compiled import Program, compile_program, mesh_in_jaxpr, remember
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Var
from ember._src.runtime.array import Array
from ember._src.runtime.sharding import NamedSharding, PartitionSpec

_cache: dict[tuple, Program] = {}
# Programs kept (see compiled.remember): the oldest one is dropped past this many.
EAGER_CACHE_SIZE = 1024


def single_equation(primitive: Primitive, avals: list[ShapedArray], params: dict) -> ClosedJaxpr:
    invars = [Var(a) for a in avals]
    out = rules.abstract_eval(primitive, avals, params)
    outs = list(out) if primitive.multiple_results else [out]
    outvars = [Var(a) for a in outs]
    eqn = Eqn(primitive, invars, outvars, params)
    return ClosedJaxpr(Jaxpr([], invars, outvars, [eqn], primitive.name), [])


def apply_primitive(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    sharding = None
    buffers = []
    avals = []
    for x in args:  # the common case: Arrays already together on one layout
        if type(x) is not Array or (sharding is not None and x._sharding is not sharding):
            return _apply_placing(primitive, args, params)
        sharding = x._sharding
        buffers.append(x._buffer)
        avals.append(x.aval)
    if sharding is None:  # no operands: the default device
        sharding = placement.default_sharding()
    try:
        program = _cache.get((primitive, tuple(params.items()), tuple(avals), sharding))
    except TypeError:
        raise TypeError(
            f"internal error: unhashable parameters of {primitive.name}: {params}"
        ) from None
    if program is None:
        return _apply_placing(primitive, args, params)
    outs = program.call_buffers(buffers)
    if float_checks.armed and float_checks.active():
        float_checks.check_primitive_outputs(primitive.name, outs)
    return outs if primitive.multiple_results else outs[0]


def _apply_placing(primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Place the operands where the primitive runs, then find or compile its program."""
    on_host = rules.eager_rule(primitive)
    if on_host is not None:
        return on_host(*args, **params)
    name = primitive.name
    rule = rules.eager_layouts_rule(primitive)
    wanted, out_shardings = rule(**params) if rule is not None else (None, None)
    if wanted is not None:
        mesh = placement.mesh_of(wanted, args, name)
    else:
        wanted = [None] * len(args)
        target = placement.common_sharding(args, name)
        if target is None:  # an operand spans several devices
            mesh = placement.mesh_of((), args, name)
        else:  # one device: the common case, looked up before anything is traced
            placed = placement.place_on_device(args, target)
            avals = _avals(args, placed)
            key = (primitive, tuple(params.items()), avals, target)
            program = _lookup(key, name, params)
            if program is None:
                closed = single_equation(primitive, list(avals), params)
                mesh = mesh_in_jaxpr(closed.jaxpr)  # e.g. a jit call of a shard_map
                if mesh is None:
                    donated = params.get("donated_invars")
                    program = compile_program(closed, name, target.device, donated_invars=donated)
                    remember(_cache, key, program, EAGER_CACHE_SIZE)
            if program is not None:
                return _run(primitive, program, placed)
    placed, _ = placement.place_arguments(args, wanted, mesh, name)
    avals = _avals(args, placed)
    key = (primitive, tuple(params.items()), avals, placement.layout_of(placed, mesh))
    program = _lookup(key, name, params)
    if program is None:
        closed = single_equation(primitive, list(avals), params)
        # As asked where the rule asks, else as placed (see _placed_sharding).
        in_shardings = [
            w if w is not None else _placed_sharding(p, a, mesh)
            for w, p, a in zip(wanted, placed, avals)
        ]
        donated = params.get("donated_invars")
        program = compile_program(closed, name, mesh, in_shardings, out_shardings, donated)
        remember(_cache, key, program, EAGER_CACHE_SIZE)
    return _run(primitive, program, placed)


def _placed_sharding(placed: Any, aval: ShapedArray, mesh: Any) -> Any:
    """How an operand placed for a program over ``mesh`` is annotated. On a one-device mesh a
    placed array keeps its device's sharding; the program names the mesh's (as the operand's
    type says, else replicated), since a program over a mesh is annotated over it alone."""
    if placed is None:
        return None
    sharding = placed._sharding
    if isinstance(sharding, NamedSharding):
        return sharding
    typed = aval.typed_sharding
    return NamedSharding(mesh, typed.spec if typed is not None else PartitionSpec())


def _avals(args: Sequence[Any], placed: Sequence[Any]) -> tuple[ShapedArray, ...]:
    return tuple(get_aval(x) if p is None else p.aval for x, p in zip(args, placed))


def _lookup(key: tuple, name: str, params: dict) -> Program | None:
    try:
        return _cache.get(key)
    except TypeError:
        raise TypeError(f"internal error: unhashable parameters of {name}: {params}") from None


def _run(primitive: Primitive, program: Program, placed: Sequence[Any]) -> Any:
    outs = program.call_buffers([None if p is None else p._buffer for p in placed])
    if float_checks.armed and float_checks.active():
        float_checks.check_primitive_outputs(primitive.name, outs)
    return outs if primitive.multiple_results else outs[0]


def clear_caches() -> None:
    _cache.clear()
    placement.clear_caches()
