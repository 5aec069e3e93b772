"""Kubernetes quantities: parsing, rounding, and the canonical strings apimachinery prints."""

from fractions import Fraction

import pytest

from flotilla.member.quantity import Format, Quantity, format_quantity, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("8", "8"),
        ("8000m", "8"),
        ("1500m", "1500m"),
        ("0.5", "500m"),
        ("32Gi", "32Gi"),
        ("1.5Gi", "1536Mi"),
        ("1024", "1024"),  # a plain number stays decimal
        ("1000", "1k"),
        ("1100", "1100"),
        ("12000", "12k"),
        ("1000000", "1M"),
        ("1e3", "1e3"),
        ("129e6", "129e6"),
        ("100Mi", "100Mi"),
        ("0", "0"),
        ("-2", "-2"),
        ("0.1m", "100u"),
    ],
)
def test_canonical_strings_match_apimachinery(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


def test_values_round_up() -> None:
    assert value("1500m") == 2
    assert milli_value("0.0001") == 1
    assert milli_value("2") == 2000
    assert value("1Ki") == 1024
    assert parse_quantity("1n").amount == Fraction(1, 10**9)
    assert parse_quantity("0.1n").amount == Fraction(1, 10**9)  # finer than nano rounds up


def test_addition_keeps_the_first_format() -> None:
    assert str(parse_quantity("32Gi") + parse_quantity("32Gi") + parse_quantity("32Gi")) == "96Gi"
    assert str(parse_quantity("0") + parse_quantity("1Gi")) == "1Gi"
    assert str(parse_quantity("1G") + parse_quantity("1Gi")) == "2073741824"


def test_binary_amounts_that_are_small_or_fractional_print_as_decimal() -> None:
    assert format_quantity(512, Format.BINARY_SI) == "512"
    assert format_quantity(Fraction(3, 2) * 1024, Format.BINARY_SI) == "1536"
    assert format_quantity(Fraction(1, 2), Format.BINARY_SI) == "500m"


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "1Qi", "--1"])
def test_invalid_quantities_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        Quantity.parse(bad)


def test_numbers_parse_like_strings() -> None:
    assert str(parse_quantity(2)) == "2"
    assert str(parse_quantity(0.25)) == "250m"
