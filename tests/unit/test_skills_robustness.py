"""Every sentence through understanding and its skill: a spoken answer or a BadInputError,
never any other exception; random text never crashes the parser."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import NluConfig, SkillsConfig
from edge_runtime.errors import BadInputError
from edge_runtime.nlu import OOS, Understander
from edge_runtime.skills import SkillRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nlu_fixtures import ABSTAIN, HELD_OUT  # noqa: E402


@pytest.fixture(scope="module")
def nlu() -> Understander:
    return Understander.from_config(NluConfig())


def test_every_sentence_gets_an_answer_or_a_clarification(nlu: Understander) -> None:
    skills = SkillRegistry.from_config(SkillsConfig(timezone="UTC", max_timers=2), FakeClock())
    sentences = [s for sents in HELD_OUT.values() for s in sents]
    sentences += [e for spec in nlu.intents.intents.values() for e in spec.examples]
    answered = 0
    for text in sentences:
        intent = nlu.parse(text)
        skill_name = nlu.intents.spec(intent.name).skill
        if intent.name == OOS or skill_name is None:
            continue
        try:
            answer = skills.get(skill_name).handle(intent, text)
        except BadInputError as exc:
            assert exc.message.endswith((".", "?")), (text, exc.message)
            continue
        assert answer and not answer[0].islower() and answer.endswith((".", "!", "?")), (text, answer)
        answered += 1
    assert answered > len(sentences) // 2


def test_random_text_never_crashes(nlu: Understander) -> None:
    rnd = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz 0123456789 .,:;!?%+-*/^()'\"°×÷€😀é中"
    words = [w for sents in HELD_OUT.values() for s in sents for w in s.split()]
    for _ in range(400):
        if rnd.random() < 0.5:
            text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 60)))
        else:
            text = " ".join(rnd.choice(words + list(ABSTAIN)) for _ in range(rnd.randint(1, 12)))
        if not text.strip():
            continue
        intent = nlu.parse(text)
        assert 0.0 <= intent.confidence <= 1.0
        assert intent.name in nlu.intents.intents
