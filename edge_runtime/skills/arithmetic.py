"""Arithmetic skill: evaluates the ``expression`` slot with the safe parser of
``edge_runtime.nlu.expression`` (an AST of numbers, + - * / ^, sqrt, percent; never ``eval``)."""
from __future__ import annotations

from ..nlu.expression import ExpressionError, MathError, evaluate, parse, speak
from ..types import Intent
from .base import SkillInputError
from .speech import is_approximate, round_for_speech, sentence

_MATH_ANSWERS = {
    "division_by_zero": "{expr} has no answer: dividing by zero is undefined, because no number "
                        "times zero gives anything but zero.",
    "negative_sqrt": "{expr} is not a real number: no real number squared is negative.",
    "too_large": "The answer to {expr} is too large for me to say.",
    "undefined": "{expr} is undefined.",
}


class ArithmeticSkill:
    name = "arithmetic"

    def handle(self, intent: Intent, text: str) -> str:
        expression = intent.slots.get("expression")
        if not expression:
            raise SkillInputError(
                "I couldn't find a calculation. Try, for example: what is 12 times 7.")
        try:
            tree = parse(str(expression))
        except ExpressionError:
            raise SkillInputError("I couldn't follow that calculation. Try one step at a time, "
                                  "for example: what is 12 times 7.") from None
        said = speak(tree)
        try:
            value = evaluate(tree)
        except MathError as exc:
            return sentence(_MATH_ANSWERS[exc.kind].format(expr=said))
        about = "about " if is_approximate(value) else ""
        return sentence(f"{said} is {about}{round_for_speech(value)}.")
