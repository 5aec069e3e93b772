"""Kubernetes resource quantities ("500m", "32Gi", "1e3"): parsing and canonical printing.

Karmada reports resource summaries as Kubernetes `Quantity` strings, and a summary that prints
"1536Mi" where Kubernetes prints "1.5Gi" (it never does) or "8000m" where it prints "8" would
differ from Karmada byte for byte. So this follows apimachinery's rules: values are exact
(fractions), rounded up to nano precision on parse; a quantity keeps the format it was written
in (binary "Ki".."Ei", decimal SI "n".."E", or exponent "e3"); printing is canonical for that
format.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from fractions import Fraction

__all__ = [
    "Format",
    "Quantity",
    "format_quantity",
    "milli_value",
    "parse_quantity",
    "value",
]


class Format(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {0: "", **{power: suffix for suffix, power in _BINARY.items()}}
_PATTERN = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_NANO = Fraction(1, 10**9)


class Quantity:
    """An exact amount with the format it prints in (apimachinery's `resource.Quantity`)."""

    __slots__ = ("amount", "format")

    def __init__(self, amount: Fraction | int, fmt: Format = Format.DECIMAL_SI) -> None:
        self.amount = Fraction(amount)
        self.format = fmt

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        if isinstance(text, bool):
            raise ValueError(f"quantity {text!r}: not a number")
        if isinstance(text, int | float):
            text = repr(text) if isinstance(text, float) else str(text)
        match = _PATTERN.match(text.strip())
        if match is None:
            raise ValueError(f"quantity {text!r}: does not match the Kubernetes quantity syntax")
        sign, number, suffix = match.groups()
        suffix = suffix or ""
        amount = Fraction(number)
        if suffix in _BINARY:
            amount *= 1024 ** _BINARY[suffix]
            fmt = Format.BINARY_SI
        elif suffix in _DECIMAL:
            amount *= Fraction(10) ** _DECIMAL[suffix]
            fmt = Format.DECIMAL_SI
        else:
            amount *= Fraction(10) ** int(suffix[1:])
            fmt = Format.DECIMAL_EXPONENT
        if sign == "-":
            amount = -amount
        # apimachinery keeps at most nano precision and rounds away from zero.
        nanos = amount / _NANO
        rounded = math.ceil(nanos) if nanos >= 0 else math.floor(nanos)
        return cls(rounded * _NANO, fmt)

    def __add__(self, other: Quantity) -> Quantity:
        # Quantity.Add keeps the receiver's format unless the receiver is zero.
        fmt = other.format if self.amount == 0 else self.format
        return Quantity(self.amount + other.amount, fmt)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.amount == other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_quantity(self.amount, self.format)

    def value(self) -> int:
        """Whole units, rounded up (apimachinery `Value()`)."""
        return math.ceil(self.amount)

    def milli_value(self) -> int:
        """Thousandths, rounded up (apimachinery `MilliValue()`)."""
        return math.ceil(self.amount * 1000)


def parse_quantity(text: str | int | float) -> Quantity:
    return Quantity.parse(text)


def value(text: str | int | float) -> int:
    return Quantity.parse(text).value()


def milli_value(text: str | int | float) -> int:
    return Quantity.parse(text).milli_value()


def format_quantity(amount: Fraction | int, fmt: Format = Format.DECIMAL_SI) -> str:
    """The canonical string for `amount` in format `fmt` (apimachinery `CanonicalizeBytes`)."""
    amount = Fraction(amount)
    if amount == 0:
        return "0"
    if fmt is Format.BINARY_SI:
        # Small or fractional binary amounts print in decimal so no precision is lost.
        if -1024 < amount < 1024 or amount.denominator != 1:
            fmt = Format.DECIMAL_SI
        else:
            return _binary(int(amount))
    sign = "-" if amount < 0 else ""
    mantissa, exponent = _decimal_parts(abs(amount))
    if fmt is Format.DECIMAL_SI and exponent in _DECIMAL_SUFFIX:
        return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")


def _binary(amount: int) -> str:
    sign = "-" if amount < 0 else ""
    number, power = abs(amount), 0
    while number % 1024 == 0 and power < max(_BINARY_SUFFIX):
        number //= 1024
        power += 1
    return f"{sign}{number}{_BINARY_SUFFIX[power]}"


def _decimal_parts(amount: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with exponent a multiple of 3 and the mantissa as small as that allows."""
    exponent = -9
    mantissa = int(amount / _NANO)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift
