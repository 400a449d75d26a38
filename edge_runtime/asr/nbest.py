"""Pick the recognizer's hypothesis the understanding can act on (N-best rescoring).

Whisper tiny mishears a command's first word more than any other ("cancelled the timer",
"cause the den speaker"), and its beam often holds the right wording one place down.
``choose`` keeps the best hypothesis when the understanding would act on it, or when no
other one would; otherwise it takes the most likely other hypothesis that the
understanding acts on (``acts_on(text, at_least)``: for the home model, an accepted
intent, calibrated per intent, with a confidence of at least ``at_least``), provided the
recognizer found it nearly as likely: its mean token log-probability at most ``margin``
below the best's (``asr.nbest_margin``). A hypothesis the recognizer ranked lower must be
understood more surely than the best would need to be: ``at_least`` is ``sure``
(``asr.nbest_min_confidence``; on the dev splits, alternatives understood below 0.9 were
wrong actions more often than right ones). An unclear command the understanding would ask
back is still asked back if nothing in the beam is clear. Pure function; ``acts_on`` runs in
the ASR worker thread (a home parse: ~1 ms).
"""
from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable

from .base import Transcript

log = logging.getLogger(__name__)


def _logp(confidence: float | None) -> float:
    return math.log(confidence) if confidence and confidence > 0.0 else -math.inf


def choose(transcript: Transcript, acts_on: Callable[[str, float], bool],
           margin: float, sure: float) -> Transcript:
    """``transcript``, or the same with an alternative as its text (the best moved into
    the alternatives), as the module says."""
    if not transcript.alternatives or not transcript.text or acts_on(transcript.text, 0.0):
        return transcript
    floor = _logp(transcript.confidence) - margin
    seen = {transcript.text.casefold()}
    for i, (text, confidence) in enumerate(transcript.alternatives):
        if _logp(confidence) < floor:
            break                          # most likely first: the rest are less likely
        if not text or text.casefold() in seen:
            continue
        seen.add(text.casefold())
        if acts_on(text, sure):
            log.debug("hypothesis %d of the beam chosen over the best", i + 2)
            rest = transcript.alternatives[:i] + transcript.alternatives[i + 1:]
            return dataclasses.replace(
                transcript, text=text, confidence=confidence,
                alternatives=((transcript.text, transcript.confidence or 0.0), *rest))
    return transcript
