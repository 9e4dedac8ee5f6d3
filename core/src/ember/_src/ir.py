"""Jaxprs: ember's intermediate representation, and its pretty-printer.

A ``Jaxpr`` is a list of equations in A-normal form: each ``Eqn`` applies one primitive to
variables or literals and binds fresh variables. ``ClosedJaxpr`` pairs a jaxpr with the values
of its constant variables.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ember._src.core import NO_EFFECTS, Effect, Primitive, ShapedArray, check_size


class Var:
    """A variable of a jaxpr; it prints as a short name assigned when the jaxpr is printed."""

    __slots__ = ("aval", "suffix")

    def __init__(self, aval: ShapedArray, suffix: str = ""):
        self.aval = aval
        self.suffix = suffix

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class DropVar(Var):
    """An output nobody reads (printed as ``_``)."""

    __slots__ = ()


class Literal:
    """A scalar constant written into the jaxpr itself."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val!r})"

    def pretty(self) -> str:
        val = self.val.item() if isinstance(self.val, (np.ndarray, np.generic)) else self.val
        return f"{val}:{self.aval.str_short()}"


Atom = Var | Literal


class Eqn:
    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(
        self,
        primitive: Primitive,
        invars: Sequence[Atom],
        outvars: Sequence[Var],
        params: dict[str, Any],
        source_info: traceback.FrameSummary | None = None,
    ):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    def replace(self, **changes: Any) -> Eqn:
        fields = {
            "primitive": self.primitive,
            "invars": self.invars,
            "outvars": self.outvars,
            "params": self.params,
            "source_info": self.source_info,
        }
        fields.update(changes)
        return Eqn(**fields)

    def __repr__(self) -> str:
        return f"Eqn({self.primitive.name})"


def eqn_effects(eqn: Eqn) -> frozenset[Effect]:
    """The side effects of an equation: its primitive's, plus those of any jaxpr it calls
    (jit, control flow, custom derivatives, shard_map carry theirs as parameters)."""
    primitive = eqn.primitive
    if primitive.effects is not None:
        return primitive.effects(**eqn.params)
    found = NO_EFFECTS
    for inner in jaxprs_in(eqn.params.values()):
        found = found | inner.effects
    return found


def jaxprs_in(values: Iterable[Any]) -> Iterator[Jaxpr]:
    """The jaxprs among an equation's parameter ``values``: each ``Jaxpr``, and the jaxpr of
    each ``ClosedJaxpr``, alone or in (nested) tuples and lists (a cond's branches)."""
    for value in values:
        if isinstance(value, ClosedJaxpr):
            yield value.jaxpr
        elif isinstance(value, Jaxpr):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from jaxprs_in(value)


class Jaxpr:
    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "_effects")

    def __init__(
        self,
        constvars: Sequence[Var],
        invars: Sequence[Var],
        outvars: Sequence[Atom],
        eqns: Sequence[Eqn],
        debug_info: str | None = None,
    ):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info
        self._effects: frozenset[Effect] | None = None

    @property
    def effects(self) -> frozenset[Effect]:
        """The side effects of running this jaxpr (empty for a pure one)."""
        found = self._effects
        if found is None:
            found = NO_EFFECTS
            for eqn in self.eqns:
                found = found | eqn_effects(eqn)
            self._effects = found
        return found

    @property
    def ordered_effects(self) -> list[Effect]:
        """The ordered effects, in a fixed order (by name): the order of their tokens."""
        return sorted((e for e in self.effects if e.ordered), key=lambda e: e.name)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pretty_print(self)

    def __repr__(self) -> str:
        return pretty_print(self)

    def pretty(self) -> str:
        return pretty_print(self)


class ClosedJaxpr:
    """A jaxpr with no free constant variables: ``consts`` supplies their values."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(consts) == len(jaxpr.constvars), (len(consts), len(jaxpr.constvars))
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)

    def __str__(self) -> str:
        return pretty_print(self.jaxpr)

    __repr__ = __str__

    def pretty(self) -> str:
        return pretty_print(self.jaxpr)


def closed_over_nothing(jaxpr: Jaxpr) -> ClosedJaxpr:
    return ClosedJaxpr(jaxpr, [])


# --------------------------------------------------------------------------------------------
# Pretty printing


class _Names:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def __call__(self, var: Atom) -> str:
        if isinstance(var, Literal):
            return var.pretty()
        if isinstance(var, DropVar):
            return "_"
        name = self.names.get(id(var))
        if name is None:
            name = _name_for(len(self.names)) + var.suffix
            self.names[id(var)] = name
        return name


def _name_for(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    i += 1
    while i > 0:
        i, rem = divmod(i - 1, 26)
        name = letters[rem] + name
    return name


def _binder(names: _Names, var: Var) -> str:
    if isinstance(var, DropVar):
        return f"_:{var.aval.str_short()}"
    return f"{names(var)}:{var.aval.str_short()}"


class EqnPrintContext:
    """What an equation printer (``register_eqn_printer``) may use: ``name(atom)`` (``a``, or
    a literal ``1.0:f32[]``), ``binder(var)`` (``a:f32[8]``) and ``is_used(var)`` (whether
    the jaxpr reads the variable)."""

    __slots__ = ("_names", "_used")

    def __init__(self, names: _Names, used: set[int]):
        self._names = names
        self._used = used

    def name(self, atom: Atom) -> str:
        return self._names(atom)

    def binder(self, var: Var) -> str:
        return _binder(self._names, var)

    def is_used(self, var: Var) -> bool:
        return id(var) in self._used


EqnPrinter = Callable[[Eqn, EqnPrintContext], str]
# Primitives printed otherwise than ``outs = name[params] ins``: a Ref read prints as
# ``b:f32[8] <- a[i, :]``, as JAX prints it.
_eqn_printers: dict[Primitive, EqnPrinter] = {}


def register_eqn_printer(primitive: Primitive, printer: EqnPrinter) -> None:
    """Print ``primitive``'s equations as ``printer(eqn, context)`` (without indentation)."""
    _eqn_printers[primitive] = printer


def pretty_print(jaxpr: Jaxpr, indent: int = 0, names: _Names | None = None) -> str:
    """The jaxpr as text. The first line is not indented (a nested jaxpr follows ``name=``);
    every later line carries its full indentation, so nesting composes."""
    names = names or _Names()
    pad = " " * indent
    consts = " ".join(_binder(names, v) for v in jaxpr.constvars)
    ins = " ".join(_binder(names, v) for v in jaxpr.invars)
    lines = [f"{{ lambda {consts}; {ins}. let"]
    context = None
    for eqn in jaxpr.eqns:
        printer = _eqn_printers.get(eqn.primitive)
        if printer is None:
            lines.append(_pretty_eqn(eqn, names, indent + 4))
            continue
        if context is None:
            context = EqnPrintContext(names, _used_vars(jaxpr))
        lines.append(" " * (indent + 4) + printer(eqn, context))
    outs = ", ".join(names(v) for v in jaxpr.outvars)
    result = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    if not jaxpr.eqns:  # JAX prints a jaxpr with no equations on one line
        return f"{lines[0]}  {result}"
    lines.append(f"{pad}  {result}")
    return "\n".join(lines)


def _used_vars(jaxpr: Jaxpr) -> set[int]:
    used = {id(v) for v in jaxpr.outvars}
    for eqn in jaxpr.eqns:
        used.update(id(v) for v in eqn.invars)
    return used


def _pretty_eqn(eqn: Eqn, names: _Names, indent: int) -> str:
    pad = " " * indent
    outs = " ".join(_binder(names, v) for v in eqn.outvars)
    ins = " ".join(names(v) for v in eqn.invars)
    params = _pretty_params(eqn.params, names, indent)
    binds = f"{outs} = " if outs else ""  # (an equation run only for its effects binds none)
    return f"{pad}{binds}{eqn.primitive.name}{params} {ins}"


def _pretty_params(params: dict[str, Any], names: _Names, indent: int) -> str:
    if not params:
        return ""
    parts = []
    for key, value in sorted(params.items()):
        parts.append(f"{key}={_pretty_value(value, names, indent)}")
    if sum(len(p) for p in parts) > 60:
        pad = " " * (indent + 2)
        return "[\n" + "\n".join(pad + p for p in parts) + "\n" + " " * indent + "]"
    return "[" + " ".join(parts) + "]"


def _pretty_value(value: Any, names: _Names, indent: int) -> str:
    # A jaxpr parameter's equations sit 4 deeper than the parameter's name, as in JAX.
    if isinstance(value, ClosedJaxpr):
        return pretty_print(value.jaxpr, indent + 2, names)
    if isinstance(value, Jaxpr):
        return pretty_print(value, indent + 2, names)
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        pad = " " * (indent + 4)
        inner = [pad + pretty_print(v.jaxpr, indent + 4, names) for v in value]
        return "(\n" + "\n".join(inner) + "\n" + " " * (indent + 2) + ")"
    if isinstance(value, str):  # a name, printed bare as JAX does (name=layer)
        return value
    if isinstance(value, np.dtype):  # parameters name dtypes in full, as JAX prints them
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def check_result_sizes(eqn: Eqn) -> None:
    """A result too big for a 64-bit byte count makes XLA abort the process: refuse it here,
    as a ValueError naming the user's line (a shape built by lax, or under jit).
    Both the lowering and the reference interpreter call it before running an equation."""
    for var in eqn.outvars:
        aval = var.aval
        if type(aval) is not ShapedArray:  # tokens and the like have no byte size
            continue
        try:
            check_size(aval.shape, aval.dtype, f"{eqn.primitive.name}'s result of shape")
        except ValueError as err:
            where = f" (from {eqn.source_info})" if eqn.source_info else ""
            raise ValueError(f"{err}{where}") from None
