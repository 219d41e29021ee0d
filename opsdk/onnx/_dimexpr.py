"""Symbolic tensor dims: integer polynomials of named dims and their floor divisions.

A :class:`Dim` is a sum of ``coefficient * atom * atom ...`` terms with integer
coefficients, where an atom is a named dim (a positive integer) or ``floor(p / d)`` of such
a polynomial by a positive integer. That is what the size arithmetic of Conv, pooling,
Resize, Reshape, Slice and Concat produces, and it is kept in one canonical form so that two
spellings of one size compare equal:

* ``floor((d*A + B) / d)`` is ``A + floor(B / d)``: every coefficient under a division lies
  in ``[0, d)``, so a numerator is never negative for positive dims (and a truncating
  integer division, as in C, gives the same value as floor);
* ``floor((floor(p / a) + c) / b)`` is ``floor((p + c*a) / (a*b))``, so strided layers
  stacked give one division (three stride-2 convs: ``floor((h + 7)/8)``).

Example:
    >>> w = Dim.symbol("w")
    >>> conv = (w + 2 - 3).floordiv(2) + 1          # kernel 3, pad 1+1, stride 2
    >>> str(conv), conv.evaluate({"w": 160})
    ('floor((w + 1)/2)', 80)
    >>> str(conv.floordiv(2).floordiv(2)), (w * 2).floordiv(2) == w
    ('floor((w + 1)/8)', True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Dim", "Atom", "Floor"]


@dataclass(frozen=True, order=True)
class Floor:
    """``floor(num / den)``: an atom of a :class:`Dim` (``den`` > 1)."""

    num: Dim
    den: int

    def __str__(self) -> str:
        terms = self.num.terms
        simple = len(terms) == 1 and terms[0][1] == 1 and len(terms[0][0]) == 1
        return f"floor({self.num}/{self.den})" if simple else f"floor(({self.num})/{self.den})"


Atom = str | Floor  # a named dim, or a floor division
Monomial = tuple[Atom, ...]  # sorted atoms; () is the constant term


def _key(atom: Atom) -> tuple[int, str]:
    return (0, atom) if isinstance(atom, str) else (1, str(atom))


def _mono_key(m: Monomial) -> tuple[int, list[tuple[int, str]]]:
    return (len(m), [_key(a) for a in m])


@dataclass(frozen=True)
class Dim:
    """A symbolic dim in canonical form (see the module docstring); immutable, hashable."""

    terms: tuple[tuple[Monomial, int], ...] = ()

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def const(value: int) -> Dim:
        """A fixed size."""
        return _make({(): int(value)})

    @staticmethod
    def symbol(name: str) -> Dim:
        """A named dim (a positive integer)."""
        return _make({(name,): 1})

    @staticmethod
    def monomial(atoms: Iterable[Atom], coeff: int = 1) -> Dim:
        """``coeff`` times the product of ``atoms``."""
        return _make({tuple(sorted(atoms, key=_key)): coeff})

    # -------------------------------------------------------------------- arithmetic
    def __add__(self, other: Dim | int) -> Dim:
        acc = dict(self.terms)
        for m, c in _dim(other).terms:
            acc[m] = acc.get(m, 0) + c
        return _make(acc)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return _make({m: -c for m, c in self.terms})

    def __sub__(self, other: Dim | int) -> Dim:
        return self + (-_dim(other))

    def __rsub__(self, other: Dim | int) -> Dim:
        return _dim(other) - self

    def __mul__(self, other: Dim | int) -> Dim:
        acc: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _dim(other).terms:
                m = tuple(sorted(m1 + m2, key=_key))
                acc[m] = acc.get(m, 0) + c1 * c2
        return _make(acc)

    __rmul__ = __mul__

    def floordiv(self, den: int) -> Dim:
        """``floor(self / den)`` for a positive integer ``den``, in canonical form."""
        if den <= 0:
            raise ValueError(f"division of a dim by {den}: the divisor must be positive")
        if den == 1:
            return self
        whole: dict[Monomial, int] = {}
        rest: dict[Monomial, int] = {}
        for m, c in self.terms:
            q, r = divmod(c, den)
            if q:
                whole[m] = q
            if r:
                rest[m] = r
        part = _make(rest)
        if not rest:
            return _make(whole)
        if part.is_const():
            return _make(whole) + part.value() // den
        named = [(m, c) for m, c in part.terms if m]
        if len(named) == 1 and named[0][1] == 1 and len(named[0][0]) == 1:
            (atom,) = named[0][0]
            if isinstance(atom, Floor):  # floor((floor(p/a) + c)/b) = floor((p + c*a)/(a*b))
                shift = (part - _make({(atom,): 1})).value() * atom.den
                return _make(whole) + (atom.num + shift).floordiv(atom.den * den)
        return _make(whole) + _make({(Floor(part, den),): 1})

    def ceildiv(self, den: int) -> Dim:
        """``ceil(self / den)`` for a positive integer ``den``."""
        return (self + (den - 1)).floordiv(den)

    def scale(self, factor: Fraction) -> Dim:
        """``floor(self * factor)`` for a non-negative rational ``factor``."""
        return (self * factor.numerator).floordiv(factor.denominator)

    # --------------------------------------------------------------------- queries
    def is_const(self) -> bool:
        """True when the dim has no named part."""
        return all(m == () for m, _ in self.terms)

    def value(self) -> int:
        """The fixed size (only for :meth:`is_const` dims)."""
        if not self.is_const():
            raise ValueError(f"{self} is not a fixed size")
        return dict(self.terms).get((), 0)

    def symbols(self) -> set[str]:
        """The named dims it depends on."""
        out: set[str] = set()
        for m, _ in self.terms:
            for atom in m:
                out |= {atom} if isinstance(atom, str) else atom.num.symbols()
        return out

    def evaluate(self, values: Mapping[str, int]) -> int:
        """Its value for the named dims in ``values`` (floor division, exact integers)."""
        total = 0
        for m, c in self.terms:
            prod = c
            for atom in m:
                prod *= (values[atom] if isinstance(atom, str)
                         else atom.num.evaluate(values) // atom.den)
            total += prod
        return total

    def size(self) -> int:
        """How many atoms and terms it has (to prefer the simpler of two equal sizes)."""
        return sum(1 + sum(1 if isinstance(a, str) else 1 + a.num.size() for a in m)
                   for m, _ in self.terms)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for i, (m, c) in enumerate(self.terms):
            body = "*".join(str(a) for a in m)
            mag = abs(c)
            text = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
            sign = "-" if c < 0 else "+"
            parts.append((sign if c < 0 else "") + text if i == 0 else f" {sign} {text}")
        return "".join(parts)

    def __lt__(self, other: Dim) -> bool:  # for sorting atoms that hold dims
        return str(self) < str(other)


def _dim(x: Dim | int) -> Dim:
    return x if isinstance(x, Dim) else Dim.const(x)


def _make(acc: Mapping[Monomial, int]) -> Dim:
    """Canonical order: named terms (fewer atoms first), the constant last."""
    items = [(m, c) for m, c in acc.items() if c]
    items.sort(key=lambda mc: (mc[0] == (), _mono_key(mc[0])))
    return Dim(tuple(items))


def product(dims: Iterable[Dim]) -> Dim:
    """The product of ``dims`` (1 for none)."""
    out = Dim.const(1)
    for d in dims:
        out = out * d
    return out
