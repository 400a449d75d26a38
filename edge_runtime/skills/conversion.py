"""Unit conversion skill: length, mass, temperature, volume, speed and time, from the
``conversion`` slot ({"value", "from_unit", "to_unit", "quantity"}); says the rounded result."""
from __future__ import annotations

from ..nlu.units import UNITS, UnitMismatchError, convert
from ..types import Intent
from .base import SkillInputError
from .speech import is_approximate, round_for_speech, sentence


class UnitConvertSkill:
    name = "unit_convert"

    def handle(self, intent: Intent, text: str) -> str:
        conv = intent.slots.get("conversion")
        if not conv or conv.get("from_unit") not in UNITS:
            raise SkillInputError(
                "Tell me what to convert, for example: convert 5 kilometers to miles.")
        src = UNITS[conv["from_unit"]]
        if not conv.get("to_unit"):
            raise SkillInputError(f"What should I convert {src.plural} to? For example: "
                                  f"convert 5 {src.plural} to {_example_target(src.name)}.")
        dst = UNITS[conv["to_unit"]]
        if conv.get("value") is None:
            raise SkillInputError(f"How many {src.plural}? For example: convert 5 {src.plural} "
                                  f"to {dst.plural}.")
        value = float(conv["value"])
        if src.name == dst.name:
            said = f"{round_for_speech(value)} {src.spoken(value)}"
            return sentence(f"{said} is {said}.")
        try:
            result = convert(value, src.name, dst.name)
        except UnitMismatchError:
            raise SkillInputError(f"I can't convert {src.quantity} to {dst.quantity}: {src.plural} "
                                  f"and {dst.plural} measure different things.") from None
        said = round_for_speech(result)
        return sentence(f"{round_for_speech(value)} {src.spoken(value)} is "
                        f"{'about ' if is_approximate(result) else ''}{said} {dst.spoken(result)}.")


def _example_target(unit: str) -> str:
    quantity = UNITS[unit].quantity
    for name, candidate in UNITS.items():
        if candidate.quantity == quantity and name not in (unit, "degree"):
            return candidate.plural
    return "another unit"
