"""Biasing speech recognition toward the commands the assistant understands.

A command vocabulary is the words of the home intents (``COMMAND_WORDS``: verbs, units,
media and timer words) plus the home's own area and entity names (the simulated home, or
the lists read from Home Assistant). ``CommandVocabulary.prompt()`` renders it as the
"previous text" Whisper conditions on (``asr.whisper.WhisperAsr.set_prompt``: names first,
since they are what a recognizer gets wrong, then the command words, clipped to
``max_words``); ``grammar()`` gives Vosk's grammar mode the same vocabulary as phrases
(every command phrase, name and area, plus ``[unk]``), so any sentence of those words is
heard and nothing else.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..nlu.numbers import NUMBER_WORDS

# what people say to the home intents, apart from names (a short, fixed list: Whisper
# conditions on at most 223 prompt tokens and the names need most of them)
COMMAND_WORDS = (
    "Turn on the light. Turn off the lights. Switch off. Set the brightness to 50%. "
    "Dim the lamp. Make it brighter, red, blue, warm white. Open, close, lock, unlock. "
    "Set the temperature to 21 degrees. Set a timer for 10 minutes. Add 5 minutes to the "
    "timer. Pause, resume, cancel the timer. How much time is left? Pause the music, next "
    "track, previous song, volume up, louder, quieter. Add milk to the shopping list. "
    "Is the door locked? What's the weather? Never mind.")


def _spoken(name: str) -> str:
    return " ".join(re.sub(r"[\[\]()<>{}|_]", " ", name).split())


@dataclass(frozen=True)
class CommandVocabulary:
    names: tuple[str, ...] = ()          # entity names as the home calls them
    areas: tuple[str, ...] = ()          # area (and floor) names
    extra: str = ""                      # the user's own words (``asr.bias_words``)
    max_words: int = 120                 # the prompt's length in words (names first)

    @classmethod
    def of(cls, names: Iterable[str], areas: Iterable[str], extra: str = "",
           max_words: int = 120) -> CommandVocabulary:
        """Distinct spoken names, in the order given."""
        def distinct(values: Iterable[str]) -> tuple[str, ...]:
            return tuple(dict.fromkeys(s for s in map(_spoken, values) if s))
        return cls(distinct(names), distinct(areas), " ".join(extra.split()), max_words)

    def prompt(self) -> str:
        """The Whisper prompt: the user's words, the names and areas as a list, then the
        command sentences, at most ``max_words`` words and always whole sentences (a prompt
        cut mid-sentence, "... Set a timer for 10 minutes", is continued by the decoder:
        "10 minutes. Dim the office lights")."""
        parts = [self.extra] if self.extra else []
        listed = [*self.areas, *self.names]
        if listed:
            parts.append(", ".join(n.title() for n in listed) + ".")
        words = " ".join(parts).split()[:self.max_words]
        if words and words[-1][-1:] not in ".?!":
            words[-1] += "."
        for sentence in re.findall(r"[^.?!]+[.?!]", COMMAND_WORDS):
            more = sentence.split()
            if len(words) + len(more) > self.max_words:
                break
            words += more
        return " ".join(words)

    def grammar(self, phrases: Iterable[str] = ()) -> list[str]:
        """Vosk grammar phrases: ``phrases`` (e.g. the intent examples), the command words
        one by one, every name and area, and ``[unk]`` last."""
        out: dict[str, None] = {}
        words = re.sub(r"[^a-z' ]+", " ", COMMAND_WORDS.lower().replace("%", " percent")).split()
        for p in (*phrases, *words, *sorted(NUMBER_WORDS), *self.names, *self.areas,
                  *self.extra.split()):
            clean = " ".join(re.sub(r"[^a-z' ]+", " ", p.lower()).split())
            if clean and clean != "[unk]":
                out[clean] = None
        return [*out, "[unk]"]
