"""Random straight-line ember programs, built from a seed, for the differential tests.

A program is a list of statements ``v7 = op(v2, v5; params)`` over float32 arrays, plus two
non-float inputs every program takes: an int32 scalar ``k`` (dynamic indices, masks, clamped
slices) and a bool scalar ``flag`` (``cond`` predicates, ``where`` masks). The generator tracks
every value's shape, so each statement is valid, and a bound on its magnitude, so values stay in
a range where float32 finite differences mean something: an operand whose bound grew too large
is rescaled first (a smooth ``x * c``), ``exp`` only sees small inputs, ``log``/``sqrt``/``div``/
``pow`` only see arguments bounded away from their singularities.

A *smooth* program uses only ops that are differentiable everywhere near its inputs (no
``abs``, ``maximum``, ``sort``, data-dependent ``where``...), so its derivatives can be checked
against finite differences; other programs are used for value checks only.

``Program.__call__(*floats, k, flag)`` runs the program with ember; ``str(program)`` is a readable
listing for failure messages. The operations programs are made of are in ``program_ops.py``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from tests.core.program_ops import LIMIT, MAX_DIM, OPS


@dataclasses.dataclass(frozen=True)
class Var:
    name: str
    shape: tuple[int, ...]
    bound: float  # an upper bound on |value|

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclasses.dataclass
class Stmt:
    outs: list[Var]
    op: str
    ins: list[Var]
    params: dict[str, Any]


@dataclasses.dataclass
class Program:
    """A straight-line program; ``inputs`` are the float arguments (``k``, ``flag`` follow)."""

    seed: int
    smooth: bool
    inputs: list[Var]
    stmts: list[Stmt]
    outputs: list[Var]

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        *floats, k, flag = args
        env = {v.name: x for v, x in zip(self.inputs, floats)}
        env["k"], env["flag"] = k, flag
        for stmt in self.stmts:
            results = OPS[stmt.op].apply(
                *[env[v.name] for v in stmt.ins], k=k, flag=flag, **stmt.params
            )
            if len(stmt.outs) == 1:
                results = (results,)
            for var, value in zip(stmt.outs, results):
                env[var.name] = value
        return tuple(env[v.name] for v in self.outputs)

    def listing(self, name: str = "program") -> list[str]:
        args = ", ".join(f"{v.name}: f32{list(v.shape)}" for v in self.inputs)
        lines = [f"def {name}({args}, k: i32[], flag: bool[]):"]
        for stmt in self.stmts:
            outs = ", ".join(f"{v.name}: f32{list(v.shape)}" for v in stmt.outs)
            shown = [v.name for v in stmt.ins]
            bodies = []
            for n, p in stmt.params.items():
                if isinstance(p, Program):
                    bodies.append(p.listing(n))
                elif isinstance(p, tuple) and p and isinstance(p[0], Program):
                    bodies.extend(b.listing(f"{n}_{i}") for i, b in enumerate(p))
                else:
                    shown.append(f"{n}={p.tolist() if isinstance(p, np.ndarray) else p!r}")
            lines.append(f"    {outs} = {stmt.op}({', '.join(shown)})")
            lines.extend("        " + line for body in bodies for line in body)
        lines.append(f"    return {', '.join(v.name for v in self.outputs)}")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.listing())

    def example_args(self, rng: np.random.Generator) -> list[Any]:
        """Float inputs in (-1.5, 1.5), ``k`` in {0, 1, 2} and a random ``flag``."""
        floats = [rng.uniform(-1.5, 1.5, v.shape).astype(np.float32) for v in self.inputs]
        return [*floats, np.int32(rng.integers(0, 3)), np.bool_(rng.integers(0, 2))]


class Generator:
    """Grows one program (or a control-flow body) statement by statement."""

    def __init__(self, rng: np.random.Generator, smooth: bool, depth: int = 0, prefix: str = "v"):
        self.rng = rng
        self.smooth = smooth
        self.depth = depth
        self.prefix = prefix
        self.vars: list[Var] = []
        self.stmts: list[Stmt] = []
        self._count = 0

    # -- helpers the op proposals use ------------------------------------------------------

    def fresh(self, shape: tuple[int, ...], bound: float) -> Var:
        var = Var(f"{self.prefix}{self._count}", tuple(int(d) for d in shape), float(bound))
        self._count += 1
        return var

    def emit(self, op_name: str, ins: list[Var], params: dict, outs: list[tuple]) -> list[Var]:
        out_vars = [self.fresh(shape, bound) for shape, bound in outs]
        self.stmts.append(Stmt(out_vars, op_name, ins, params))
        self.vars.extend(out_vars)
        return out_vars

    def pick(self, min_rank: int = 0, limit: float = LIMIT) -> Var | None:
        """A random value of rank >= ``min_rank``, rescaled if its bound exceeds ``limit``.

        Recent values are favoured so programs are chains more than fans."""
        candidates = [v for v in self.vars if len(v.shape) >= min_rank]
        if not candidates:
            return None
        weights = np.arange(1, len(candidates) + 1, dtype=float) ** 2
        var = candidates[self.rng.choice(len(candidates), p=weights / weights.sum())]
        return self.tame(var, limit)

    def tame(self, var: Var, limit: float = LIMIT) -> Var:
        if var.bound <= limit:
            return var
        scale = float(np.float32(limit / var.bound))
        return self.emit("scale", [var], {"c": scale}, [(var.shape, limit)])[0]

    def adapt(self, var: Var, shape: tuple[int, ...]) -> Var:
        """``var`` turned into a value of ``shape``: itself, a reshape, a broadcast, its
        elements repeated or cut to the new size, or a broadcast of its mean (all smooth)."""
        shape = tuple(shape)
        if var.shape == shape:
            return var
        if var.size == math.prod(shape) and self.rng.random() < 0.7:
            return self.emit("reshape", [var], {"shape": shape}, [(shape, var.bound)])[0]
        if _broadcastable(var.shape, shape):
            return self.emit("broadcast_to", [var], {"shape": shape}, [(shape, var.bound)])[0]
        if self.rng.random() < 0.7:
            return self.emit("fit", [var], {"shape": shape}, [(shape, var.bound)])[0]
        mean = self.emit("mean", [var], {"axis": None, "keepdims": False}, [((), var.bound)])[0]
        return self.emit("broadcast_to", [mean], {"shape": shape}, [(shape, var.bound)])[0]

    def random_shape(self, max_rank: int = 3) -> tuple[int, ...]:
        rank = int(self.rng.integers(0, max_rank + 1))
        return tuple(int(d) for d in self.rng.integers(1, MAX_DIM + 1, rank))

    def axis(self, var: Var) -> int:
        return int(self.rng.integers(0, len(var.shape)))

    # -- growing ---------------------------------------------------------------------------

    def step(self) -> None:
        names = [
            n
            for n, o in OPS.items()
            if o.weight > 0
            and (o.smooth or not self.smooth)
            and (self.depth == 0 or not n.startswith(("cond", "switch", "fori", "scan", "while")))
        ]
        weights = np.array([OPS[n].weight for n in names])
        for _ in range(20):
            name = names[self.rng.choice(len(names), p=weights / weights.sum())]
            proposal = OPS[name].propose(self)
            if proposal is not None:
                ins, params, outs = proposal
                self.emit(name, ins, params, outs)
                return

    def sub_program(
        self,
        in_shapes: list[tuple[int, ...]],
        in_bound: float,
        out_shapes: list[tuple[int, ...]],
        out_bound: float,
        tag: str,
    ) -> Program:
        """A control-flow body: a short program from ``in_shapes`` to values of ``out_shapes`` each
        bounded by ``out_bound`` (so a loop carry cannot grow from one iteration to the next)."""
        body = Generator(self.rng, self.smooth, self.depth + 1, prefix=f"{tag}_")
        inputs = [body.fresh(shape, in_bound) for shape in in_shapes]
        body.vars.extend(inputs)
        for _ in range(int(self.rng.integers(1, 4))):
            body.step()
        outs = []
        for shape in out_shapes:
            source = (
                body.vars[-1] if not outs else body.vars[int(self.rng.integers(0, len(body.vars)))]
            )
            outs.append(body.adapt(body.tame(source, out_bound), shape))
        return Program(-1, self.smooth, inputs, body.stmts, outs)

    def finish(self, n_outputs: int) -> list[Var]:
        outs = [self.vars[-1]]
        others = [v for v in self.vars[:-1] if v not in outs]
        if n_outputs > 1 and others:
            outs.append(others[int(self.rng.integers(0, len(others)))])
        return outs


def _broadcastable(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1]))


def generate(seed: int, smooth: bool | None = None, length: int | None = None) -> Program:
    """The program for ``seed``: 1-3 float inputs of random shapes and 4-9 statements."""
    rng = np.random.default_rng(seed)
    smooth = bool(rng.random() < 0.6) if smooth is None else smooth
    gen = Generator(rng, smooth)
    inputs = [gen.fresh(gen.random_shape(), 1.5) for _ in range(int(rng.integers(1, 4)))]
    gen.vars.extend(inputs)
    for _ in range(length or int(rng.integers(4, 10))):
        gen.step()
    return Program(seed, smooth, inputs, gen.stmts, gen.finish(int(rng.integers(1, 3))))
