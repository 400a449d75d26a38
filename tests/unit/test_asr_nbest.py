"""asr.nbest.choose: the beam's hypothesis the understanding acts on, within a margin."""
from __future__ import annotations

import math

from edge_runtime.asr.base import Transcript
from edge_runtime.asr.nbest import choose


def heard(best: str, p: float, *others: tuple[str, float]) -> Transcript:
    return Transcript(best, "whisper", 1.0, 0.1, p, tuple(others))


COMMANDS = {"cancel the timer please": 0.95, "pause the den speaker": 0.95,
            "pause the den": 0.6}


def acts_on(text: str, at_least: float) -> bool:
    """Understood (with this confidence) when in COMMANDS."""
    return COMMANDS.get(text.lower().rstrip("."), 0.0) >= max(at_least, 0.5)


def test_the_best_hypothesis_stands_when_it_is_acted_on() -> None:
    t = heard("cancel the timer please", 0.8, ("Cancel the timer, please.", 0.79))
    assert choose(t, acts_on, 0.5, 0.9) is t


def test_a_likely_hypothesis_the_understanding_acts_on_replaces_a_misheard_best() -> None:
    t = heard("cancelled the timer please", 0.80, ("council the timer please", 0.78),
              ("Cancel the timer please.", 0.75))
    out = choose(t, acts_on, 0.5, 0.9)
    assert out.text == "Cancel the timer please." and out.confidence == 0.75
    # nothing is lost: the best one is now among the alternatives, the others kept
    assert [a for a, _ in out.alternatives] == ["cancelled the timer please",
                                                "council the timer please"]


def test_an_unlikely_hypothesis_is_not_taken_however_actionable() -> None:
    far = 0.8 * math.exp(-0.6)                    # 0.6 nats a token below the best
    t = heard("cause the den speaker", 0.8, ("pause the den speaker", far))
    assert choose(t, acts_on, 0.5, 0.9) is t
    assert choose(t, acts_on, 0.7, 0.9).text == "pause the den speaker"


def test_nothing_actionable_in_the_beam_keeps_the_best() -> None:
    t = heard("tell me a joke", 0.9, ("tell me a joke.", 0.88), ("tell me the joke", 0.8))
    assert choose(t, acts_on, 0.5, 0.9) is t
    assert choose(heard("", 0.0), acts_on, 0.5, 0.9).text == ""


def test_the_understanding_is_asked_once_per_distinct_hypothesis() -> None:
    asked: list[str] = []

    def counting(text: str, at_least: float) -> bool:
        asked.append((text, at_least))
        return False

    choose(heard("a b", 0.9, ("A B", 0.9), ("a c", 0.9)), counting, 1.0, 0.9)
    assert asked == [("a b", 0.0), ("a c", 0.9)]


def test_a_lower_hypothesis_must_be_understood_more_surely_than_the_best() -> None:
    t = heard("cause the den", 0.8, ("pause the den", 0.8))
    assert acts_on("pause the den", 0.0)                 # clear enough as the best ...
    assert choose(t, acts_on, 0.5, 0.9) is t             # ... not as a runner-up
    assert choose(t, acts_on, 0.5, 0.5).text == "pause the den"


def test_unsure_words_are_normalized_as_the_understanding_reads_them() -> None:
    from edge_runtime.voice.stack import unsure_words
    heard = [("And,", 0.26), ("Noke", 0.07), ("to", 0.9), ("40%.", 0.1)]
    assert unsure_words(heard, 0.15) == {"noke", "40", "percent"}
    assert unsure_words(heard, 0.0) == frozenset()
