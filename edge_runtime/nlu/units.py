"""Units of measure: the alias table, conversion mentions in text, and the conversion itself.

Each unit maps to its quantity's base unit by ``base = value * factor + offset`` (metre,
kilogram, degree Celsius, litre, metre per second, second). US customary volumes are used
(gallon = 3.785 L); "ton" is the metric tonne; a year is 365 days.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .numbers import Token


@dataclass(frozen=True)
class Unit:
    name: str                  # canonical id, e.g. "kilometer"
    quantity: str              # length, mass, temperature, volume, speed, time
    factor: float
    offset: float = 0.0
    singular: str = ""
    plural: str = ""

    def spoken(self, value: float) -> str:
        return self.singular if abs(value) == 1 else self.plural


def _u(name: str, quantity: str, factor: float, aliases: str, offset: float = 0.0,
       singular: str = "", plural: str = "") -> tuple[Unit, tuple[str, ...]]:
    singular = singular or name.replace("_", " ")
    unit = Unit(name, quantity, factor, offset, singular, plural or singular + "s")
    return unit, tuple(a.strip() for a in aliases.split(",") if a.strip())


_TABLE = (
    _u("kilometer", "length", 1000.0,
       "km, kms, kilometer, kilometers, kilometre, kilometres, klicks"),
    _u("meter", "length", 1.0, "m, meter, meters, metre, metres"),
    _u("centimeter", "length", 0.01, "cm, centimeter, centimeters, centimetre, centimetres"),
    _u("millimeter", "length", 0.001, "mm, millimeter, millimeters, millimetre, millimetres"),
    _u("mile", "length", 1609.344, "mi, mile, miles"),
    _u("nautical_mile", "length", 1852.0, "nautical mile, nautical miles"),
    _u("yard", "length", 0.9144, "yd, yds, yard, yards"),
    _u("foot", "length", 0.3048, "ft, foot, feet", plural="feet"),
    _u("inch", "length", 0.0254, "inch, inches", plural="inches"),
    _u("kilogram", "mass", 1.0,
       "kg, kgs, kilo, kilos, kilogram, kilograms, kilogramme, kilogrammes"),
    _u("gram", "mass", 0.001, "g, gram, grams, gramme, grammes"),
    _u("milligram", "mass", 1e-6, "mg, milligram, milligrams"),
    _u("pound", "mass", 0.45359237, "lb, lbs, pound, pounds"),
    _u("ounce", "mass", 0.028349523125, "oz, ounce, ounces"),
    _u("stone", "mass", 6.35029318, "stone, stones", plural="stone"),
    _u("tonne", "mass", 1000.0, "ton, tons, tonne, tonnes, metric ton, metric tons",
       singular="metric ton"),
    _u("celsius", "temperature", 1.0, "celsius, centigrade, degrees celsius, degree celsius, "
       "degrees centigrade, c, degrees c, degree c", singular="degree Celsius",
       plural="degrees Celsius"),
    _u("fahrenheit", "temperature", 5 / 9, "fahrenheit, degrees fahrenheit, degree fahrenheit, f, "
       "degrees f, degree f, farenheit, degrees farenheit", offset=-32 * 5 / 9,
       singular="degree Fahrenheit", plural="degrees Fahrenheit"),
    _u("kelvin", "temperature", 1.0, "kelvin, kelvins, degrees kelvin", offset=-273.15,
       plural="kelvin"),
    # scale unknown; resolved by the other side
    _u("degree", "temperature", 1.0, "degree, degrees"),
    _u("liter", "volume", 1.0, "l, liter, liters, litre, litres"),
    _u("milliliter", "volume", 0.001, "ml, milliliter, milliliters, millilitre, millilitres"),
    _u("gallon", "volume", 3.785411784, "gal, gallon, gallons"),
    _u("quart", "volume", 0.946352946, "qt, quart, quarts"),
    _u("pint", "volume", 0.473176473, "pint, pints"),
    _u("cup", "volume", 0.2365882365, "cup, cups"),
    _u("fluid_ounce", "volume", 0.0295735295625, "fl oz, fluid ounce, fluid ounces"),
    _u("tablespoon", "volume", 0.01478676478125, "tbsp, tablespoon, tablespoons"),
    _u("teaspoon", "volume", 0.00492892159375, "tsp, teaspoon, teaspoons"),
    _u("cubic_meter", "volume", 1000.0, "cubic meter, cubic meters, cubic metre, cubic metres"),
    _u("kilometer_per_hour", "speed", 1 / 3.6,
       "kph, kmh, km per h, km per hour, kilometers per hour, "
       "kilometres per hour, kilometer per hour, kilometre per hour", singular="kilometer per hour",
       plural="kilometers per hour"),
    _u("mile_per_hour", "speed", 0.44704, "mph, miles per hour, mile per hour, mi per h",
       singular="mile per hour", plural="miles per hour"),
    _u("meter_per_second", "speed", 1.0, "m per s, meters per second, metres per second, "
       "meter per second, metre per second", singular="meter per second",
       plural="meters per second"),
    _u("knot", "speed", 1852 / 3600, "knot, knots"),
    _u("second", "time", 1.0, "s, sec, secs, second, seconds"),
    _u("minute", "time", 60.0, "min, mins, minute, minutes"),
    _u("hour", "time", 3600.0, "h, hr, hrs, hour, hours"),
    _u("day", "time", 86400.0, "day, days"),
    _u("week", "time", 604800.0, "week, weeks"),
    _u("year", "time", 31536000.0, "year, years"),
)
UNITS: dict[str, Unit] = {unit.name: unit for unit, _ in _TABLE}
ALIASES: dict[tuple[str, ...], str] = {tuple(a.split()): unit.name for unit, aliases in _TABLE
                                       for a in aliases}
UNIT_WORDS = frozenset(w for key in ALIASES for w in key)
_MAX_WORDS = max(len(k) for k in ALIASES)
# Aliases that are ordinary words or letters count only right after a number, "degrees",
# or a conversion word ("to", "in", "into", "as", "many").
_CONTEXTUAL = frozenset({("m",), ("g",), ("l",), ("c",), ("f",), ("s",), ("h",), ("mi",),
                         ("min",), ("second",), ("day",), ("stone",), ("cup",), ("pint",)})
_CONTEXT_WORDS = frozenset({"to", "in", "into", "as", "many", "much", "a", "an", "per", "and"})


class UnitMismatchError(ValueError):
    """The two units measure different quantities (e.g. kilograms to kilometers)."""


@dataclass(frozen=True)
class Mention:
    index: int                 # token index where the unit phrase starts
    unit: str
    value: float | None        # number said right before it ("a"/"an" count as 1)


def find_units(tokens: list[Token]) -> list[Mention]:
    """Every unit phrase in ``tokens`` (longest alias first), with the number before it."""
    texts = [t.text for t in tokens]
    out: list[Mention] = []
    i = 0
    while i < len(tokens):
        for size in range(min(_MAX_WORDS, len(tokens) - i), 0, -1):
            key = tuple(texts[i:i + size])
            name = ALIASES.get(key)
            if name is None:
                continue
            prev = tokens[i - 1] if i > 0 else None
            if key in _CONTEXTUAL and not (prev is not None and (
                    prev.is_number or prev.text in _CONTEXT_WORDS or prev.text == "degrees")):
                continue
            value = None
            if prev is not None and prev.is_number:
                value = prev.value
            elif prev is not None and prev.text in ("a", "an", "one"):
                value = 1.0
            out.append(Mention(i, name, value))
            i += size - 1
            break
        i += 1
    return _merge_degrees(out)


def _merge_degrees(mentions: list[Mention]) -> list[Mention]:
    """'20 degrees c' is found as degree + celsius; keep the scale with the number."""
    out: list[Mention] = []
    for m in mentions:
        if out and out[-1].unit == "degree" and m.index == out[-1].index + 1 \
                and UNITS[m.unit].quantity == "temperature":
            out[-1] = Mention(out[-1].index, m.unit, out[-1].value)
        else:
            out.append(m)
    return out


def _resolve_degree(unit: str, other: str | None) -> str:
    if unit != "degree":
        return unit
    return "fahrenheit" if other in ("celsius", "kelvin") else "celsius"


def extract_conversion(tokens: list[Token]) -> dict[str, Any] | None:
    """``{"value", "from_unit", "to_unit", "quantity"}`` from "5 km in miles",
    "how many feet in a mile", "convert 20 c to f"; ``None`` when no unit is mentioned."""
    mentions = find_units(tokens)
    if not mentions:
        return None
    texts = [t.text for t in tokens]
    src, dst = mentions[0], (mentions[1] if len(mentions) > 1 else None)
    if dst is not None:
        how_many = "many" in texts[:src.index] or "much" in texts[:src.index]
        if (src.value is None and dst.value is not None) or (how_many and dst.value is not None):
            src, dst = dst, src
    value = src.value
    if value is None and dst is not None and "many" in texts:
        value = 1.0
    to_name = _resolve_degree(dst.unit, src.unit) if dst else None
    from_name = _resolve_degree(src.unit, to_name)
    return {"value": value, "from_unit": from_name, "to_unit": to_name,
            "quantity": UNITS[from_name].quantity}


def extract_temperature(tokens: list[Token]) -> dict[str, Any] | None:
    """The first "<number> degrees [scale]" as ``{"value", "unit"}`` (unit None if unsaid)."""
    for m in find_units(tokens):
        if UNITS[m.unit].quantity == "temperature" and m.value is not None:
            return {"value": m.value, "unit": None if m.unit == "degree" else m.unit}
    return None


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert ``value`` between two units of the same quantity (names from ``UNITS``)."""
    src, dst = UNITS[from_unit], UNITS[to_unit]
    if src.quantity != dst.quantity:
        raise UnitMismatchError(f"cannot convert {src.quantity} ({src.plural}) "
                                f"to {dst.quantity} ({dst.plural})")
    base = value * src.factor + src.offset
    return (base - dst.offset) / dst.factor
