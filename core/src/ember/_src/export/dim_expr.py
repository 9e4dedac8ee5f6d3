"""Symbolic dimensions and the expressions over them (``b``, ``2*b + 1``, ``b*t``).

A dimension expression is a sum of monomials (products of symbols) with integer coefficients,
plus an integer constant. ``SymbolicDim`` is the expression of one symbol alone; expressions
equal to an integer are integers, and ``make`` keeps each expression in that normal form, so
equal dimensions compare equal. Expressions are found by ``fit`` from the sizes a dimension has
in traces where the symbols stood for known primes; ``parse`` reads them from text (the form
``str`` gives them, and the one users write in ``symbolic_shape``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

Monomial = tuple[str, ...]  # sorted symbol names; () is the constant term

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_TERM = re.compile(r"\s*([+-]?)\s*([^+-]+)")


class DimExpr:
    """``sum(coefficient * product of symbols) + constant``, in a normal form."""

    __slots__ = ("terms", "constant")

    def __init__(self, terms: tuple[tuple[Monomial, int], ...], constant: int):
        self.terms = terms  # sorted, no zero coefficient, at least one term
        self.constant = constant

    def symbols(self) -> list[str]:
        return sorted({s for monomial, _ in self.terms for s in monomial})

    def evaluate(self, values: Mapping[str, int]) -> int:
        total = self.constant
        for monomial, coefficient in self.terms:
            product = coefficient
            for symbol in monomial:
                product *= values[symbol]
            total += product
        return total

    def affine(self) -> tuple[str, int, int] | None:
        """``(s, k, c)`` when this is ``k*s + c`` for one symbol ``s``; None otherwise."""
        if len(self.terms) != 1 or len(self.terms[0][0]) != 1:
            return None
        (symbol,), k = self.terms[0]
        return symbol, k, self.constant

    # Arithmetic, as JAX's symbolic dimensions have it: ``(b, 2 * b + 1)`` builds a shape.
    def _terms(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: int | DimExpr) -> int | DimExpr:
        mine, theirs, constant = self._terms(), _terms_of(other), self.constant + _const(other)
        for monomial, k in theirs.items():
            mine[monomial] = mine.get(monomial, 0) + k
        return make(mine, constant)

    __radd__ = __add__

    def __neg__(self) -> int | DimExpr:
        return make({m: -k for m, k in self.terms}, -self.constant)

    def __sub__(self, other: int | DimExpr) -> int | DimExpr:
        return self + (-other)

    def __rsub__(self, other: int | DimExpr) -> int | DimExpr:
        return (-self) + other

    def __mul__(self, other: int | DimExpr) -> int | DimExpr:
        if not isinstance(other, (int, DimExpr)) or isinstance(other, bool):
            return NotImplemented
        left = {**self._terms(), (): self.constant}
        right = {**_terms_of(other), (): _const(other)}
        product: dict[Monomial, int] = {}
        for m1, k1 in left.items():
            for m2, k2 in right.items():
                monomial = tuple(sorted(m1 + m2))
                product[monomial] = product.get(monomial, 0) + k1 * k2
        return make(product, product.pop((), 0))

    __rmul__ = __mul__

    def __str__(self) -> str:
        text = ""
        for monomial, coefficient in self.terms:
            factors = "*".join(monomial)
            magnitude = abs(coefficient)
            term = factors if magnitude == 1 else f"{magnitude}*{factors}"
            if not text:
                text = f"-{term}" if coefficient < 0 else term
            else:
                text += f" {'-' if coefficient < 0 else '+'} {term}"
        if self.constant:
            text += f" {'-' if self.constant < 0 else '+'} {abs(self.constant)}"
        return text

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DimExpr)
            and other.terms == self.terms
            and other.constant == self.constant
        )

    def __hash__(self) -> int:
        return hash(("DimExpr", self.terms, self.constant))


class SymbolicDim(DimExpr):
    """A dimension known by name only until the exported program is called."""

    __slots__ = ()

    def __init__(self, name: str):
        super().__init__((((name,), 1),), 0)

    @property
    def name(self) -> str:
        return self.terms[0][0][0]


def make(terms: Mapping[Monomial, int], constant: int) -> int | DimExpr:
    """The normal form of ``sum(terms) + constant``: an int, a SymbolicDim or a DimExpr."""
    kept = tuple(sorted((tuple(sorted(m)), k) for m, k in terms.items() if k and m))
    if not kept:
        return constant
    if constant == 0 and len(kept) == 1 and kept[0][1] == 1 and len(kept[0][0]) == 1:
        return SymbolicDim(kept[0][0][0])
    return DimExpr(kept, constant)


def _terms_of(dim: int | DimExpr) -> dict[Monomial, int]:
    if isinstance(dim, DimExpr):
        return dict(dim.terms)
    if isinstance(dim, int) and not isinstance(dim, bool):
        return {}
    raise TypeError(f"a dimension expression combines with integers and dimensions, not {dim!r}")


def _const(dim: int | DimExpr) -> int:
    return dim.constant if isinstance(dim, DimExpr) else dim


def evaluate(dim: int | DimExpr, values: Mapping[str, int]) -> int:
    return dim.evaluate(values) if isinstance(dim, DimExpr) else dim


def parse(text: str) -> int | DimExpr:
    """``"2*b + 1"`` -> that expression; ValueError for anything that is not one."""
    source = text.strip()
    if not source or source[-1] in "+-*":
        raise ValueError(f"{text!r} is not a dimension")
    terms: dict[Monomial, int] = {}
    constant = 0
    position = 0
    while position < len(source):
        match = _TERM.match(source, position)
        if match is None or (position and not match.group(1)):
            raise ValueError(f"{text!r} is not a dimension")
        sign = -1 if match.group(1) == "-" else 1
        coefficient, symbols = sign, []
        for factor in (f.strip() for f in match.group(2).split("*")):
            if factor.isdigit():
                coefficient *= int(factor)
            elif _NAME.match(factor):
                symbols.append(factor)
            else:
                raise ValueError(f"{text!r} is not a dimension: {factor!r}")
        if symbols:
            monomial = tuple(sorted(symbols))
            terms[monomial] = terms.get(monomial, 0) + coefficient
        else:
            constant += coefficient
        position = match.end()
    return make(terms, constant)


def fit(values: Sequence[int], sizes: Sequence[Mapping[str, int]]) -> DimExpr | None:
    """The expression ``k*m + c`` (``m`` a symbol or a product of two, ``k >= 1``) that is
    ``values[i]`` when the symbols are ``sizes[i]``, for every trace ``i``; None if none is.
    Two traces determine ``k`` and ``c``; the others confirm them, so that a coincidence
    cannot pass for an expression."""
    names = sorted(sizes[0])
    monomials = [(n,) for n in names] + list(itertools.combinations_with_replacement(names, 2))
    for monomial in monomials:
        at = [_product(monomial, s) for s in sizes]
        step = at[0] - at[1]
        if step == 0 or (values[0] - values[1]) % step:
            continue
        k = (values[0] - values[1]) // step
        c = values[0] - k * at[0]
        if k >= 1 and all(k * m + c == v for m, v in zip(at, values)):
            found = make({monomial: k}, c)
            assert isinstance(found, DimExpr)
            return found
    return None


def _product(monomial: Monomial, sizes: Mapping[str, int]) -> int:
    result = 1
    for symbol in monomial:
        result *= sizes[symbol]
    return result
