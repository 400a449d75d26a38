"""Understander: intents on held-out sentences, abstain, bad input, slots per intent."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edge_runtime.config import NluConfig
from edge_runtime.errors import BadInputError
from edge_runtime.nlu import OOS, IntentFileError, IntentSet, IntentSpec, Understander, normalize_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nlu_fixtures import ABSTAIN, HELD_OUT  # noqa: E402

HELD_OUT_FLOOR = 0.90          # measured 0.99 on 135 sentences


@pytest.fixture(scope="module")
def nlu() -> Understander:
    return Understander.from_config(NluConfig())


def test_acceptance_sentences(nlu: Understander) -> None:
    intent = nlu.parse("what time is it")
    assert intent.name == "get_time" and intent.confidence >= 0.45
    assert nlu.intents.spec(intent.name).skill == "time"
    assert nlu.parse("why is the sky blue").name == OOS


def test_held_out_sentences_are_not_training_examples(nlu: Understander) -> None:
    train = {normalize_text(e) for spec in nlu.intents.intents.values() for e in spec.examples}
    assert not [s for sents in HELD_OUT.values() for s in sents if normalize_text(s) in train]


def test_held_out_accuracy_floor(nlu: Understander) -> None:
    pairs = [(s, name) for name, sents in HELD_OUT.items() for s in sents]
    misses = [(s, name, nlu.parse(s).name) for s, name in pairs if nlu.parse(s).name != name]
    assert 1 - len(misses) / len(pairs) >= HELD_OUT_FLOOR, misses


def test_every_skill_intent_is_reachable(nlu: Understander) -> None:
    for name, sents in HELD_OUT.items():
        assert sum(nlu.parse(s).name == name for s in sents) >= len(sents) // 2, name


@pytest.mark.parametrize("text", ABSTAIN)
def test_abstains_on_noise_digits_and_other_languages(nlu: Understander, text: str) -> None:
    intent = nlu.parse(text)
    assert intent.name == OOS and intent.slots == {}
    assert 0.0 <= intent.confidence <= 1.0


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_bad_input(nlu: Understander, text: str) -> None:
    with pytest.raises(BadInputError, match="empty"):
        nlu.parse(text)


def test_too_long_text_names_the_limit() -> None:
    nlu = Understander.from_config(NluConfig(max_text_chars=50))
    nlu.parse("x" * 50)
    with pytest.raises(BadInputError) as err:
        nlu.parse("what time is it " * 10)
    assert "50" in err.value.message and "nlu.max_text_chars" in err.value.message


def test_non_string_is_bad_input(nlu: Understander) -> None:
    with pytest.raises(BadInputError):
        nlu.parse(b"what time is it")  # type: ignore[arg-type]


@pytest.mark.parametrize("text, name, slots", [
    ("set a timer for five and a half minutes", "timer_set",
     {"duration": {"minutes": 5, "seconds": 30}, "duration_s": 330.0}),
    ("set a pasta timer for 8 minutes", "timer_set",
     {"duration": {"minutes": 8}, "duration_s": 480.0, "timer_name": "pasta"}),
    ("cancel all timers", "timer_cancel", {"all": True}),
    ("set a timer until 7:30 pm", "timer_set", {"time": {"hour": 19, "minute": 30, "ambiguous": False}}),
    ("what is twelve times seven", "arithmetic", {"expression": "12 * 7"}),
    ("convert 5 km to miles", "unit_convert", {"conversion": {
        "value": 5.0, "from_unit": "kilometer", "to_unit": "mile", "quantity": "length"}}),
    ("turn on the kitchn lights", "device_on", {"area": "kitchen", "device": "lights"}),
    ("what day is tomorrow", "get_date", {"date": {"relative_days": 1}}),
    ("what time is it", "get_time", {}),
])
def test_slots_are_those_the_intent_declares(nlu: Understander, text: str, name: str, slots: dict) -> None:
    intent = nlu.parse(text)
    assert (intent.name, intent.slots) == (name, slots)
    json.dumps(intent.to_dict())                      # slots are JSON-serializable


@pytest.mark.parametrize("text", ["what is the meaning of life", "how many calories are in an apple",
                                  "what is the square root of a banana"])
def test_skill_intents_without_their_key_slot_abstain(nlu: Understander, text: str) -> None:
    assert nlu.parse(text).name == OOS


def test_threshold_controls_abstain() -> None:
    strict = Understander.from_config(NluConfig(oos_threshold=1.0))
    assert strict.parse("what time is it").name == OOS
    lax = Understander.from_config(NluConfig(oos_threshold=0.0))
    assert lax.parse("what time is it").name == "get_time"


def test_classify_protocol(nlu: Understander) -> None:
    name, confidence = nlu.classify(normalize_text("set a timer for 5 minutes"))
    assert name == "timer_set" and confidence > 0.45


def test_custom_intents_and_lists() -> None:
    intents = IntentSet({
        "water_plants": IntentSpec("water_plants", skill="garden", slots=("zone",), examples=(
            "water the plants", "water the garden", "start watering the lawn", "turn on the sprinklers",
            "water the tomatoes in the greenhouse", "give the plants some water")),
        OOS: IntentSpec(OOS, examples=("why is the sky blue", "who wrote hamlet", "tell me a joke",
                                       "what is the capital of france", "how do airplanes fly")),
    })
    nlu = Understander(intents, {"zone": ("greenhouse", "front lawn")})
    intent = nlu.parse("please water the plants in the grenhouse")
    assert intent.name == "water_plants" and intent.slots == {"zone": "greenhouse"}


def test_unknown_slot_in_intent_file_is_a_config_error() -> None:
    intents = IntentSet({"x": IntentSpec("x", skill="s", slots=("colour",), examples=("a", "b", "c")),
                         OOS: IntentSpec(OOS, examples=("d", "e", "f"))})
    with pytest.raises(IntentFileError, match="unknown slot 'colour'"):
        Understander(intents, {})


def test_trained_model_is_cached_on_disk(tmp_path: Path) -> None:
    first = Understander.from_config(NluConfig(), cache_dir=tmp_path)
    files = list(tmp_path.glob("intents-*.npz"))
    assert len(files) == 1
    Understander.clear_model_cache()
    second = Understander.from_config(NluConfig(), cache_dir=tmp_path)
    for text in ("what time is it", "set a timer for 5 minutes", "why is the sky blue"):
        assert first.parse(text) == second.parse(text)


def test_corrupt_cached_model_is_retrained(tmp_path: Path) -> None:
    Understander.from_config(NluConfig(), cache_dir=tmp_path)
    (path,) = tmp_path.glob("intents-*.npz")
    path.write_bytes(b"not a model")
    Understander.clear_model_cache()
    nlu = Understander.from_config(NluConfig(), cache_dir=tmp_path)
    assert nlu.parse("what time is it").name == "get_time"
    assert path.read_bytes() != b"not a model"             # rewritten with a good model


# -- a model directory trained on Home Assistant templates (fake classifier at the edge) ----
class _FakeEncoder:
    """Stands in for ``EncoderIntentModel``: fixed answers for known sentences."""

    ANSWERS = {"turn on the kitchen lights": ("HassTurnOn", 0.99),
               "set the bedroom lights to forty percent": ("HassLightSet", 0.98),
               "set a timer for 5 minutes and 30 seconds": ("HassStartTimer", 0.99),
               "cancel all my timers": ("HassCancelAllTimers", 0.97)}

    def __init__(self, model_dir, threads: int = 1, accel=None) -> None:
        self.labels = tuple(sorted({n for n, _ in self.ANSWERS.values()})) + (OOS,)
        self.words = frozenset(w for s in self.ANSWERS for w in s.split())

    def classify(self, text: str) -> tuple[str, float]:
        return self.ANSWERS.get(text, (OOS, 0.9))


@pytest.fixture(scope="module")
def hass_model_dir(tmp_path_factory) -> Path:
    pytest.importorskip("hassil")
    pytest.importorskip("home_assistant_intents")
    from collections import defaultdict

    from edge_runtime.nlu.train.hass import HassData, SlotFiller
    from edge_runtime.nlu.train.hass_model import write_model_files

    hass = HassData()
    rows = hass.sample(2, seed=1)
    examples: dict = defaultdict(list)
    for row in rows:
        examples[row.intent].append(row.text)
    out = tmp_path_factory.mktemp("hass-model")
    write_model_files(out, SlotFiller(hass, rows), examples)
    return out


@pytest.fixture
def hass_nlu(hass_model_dir: Path, monkeypatch) -> Understander:
    from edge_runtime.nlu import understander
    from edge_runtime.nlu.loader import load_intents

    monkeypatch.setattr(understander, "EncoderIntentModel", _FakeEncoder)
    return Understander(load_intents(hass_model_dir / "intents.yaml"), model_dir=hass_model_dir,
                        hass_templates=False)


@pytest.mark.parametrize("text,name,skill,slots", [
    ("Turn on the kitchen lights.", "HassTurnOn", "device", {"area": "kitchen", "device": "lights"}),
    ("set the bedroom lights to forty percent", "HassLightSet", "device",
     {"area": "bedroom", "brightness": 40, "device": "lights"}),
    ("Set a timer for 5 minutes and 30 seconds.", "timer_set", "timer",
     {"minutes": 5, "seconds": 30, "duration_s": 330.0}),
    ("cancel all my timers", "timer_cancel", "timer", {"all": True}),
])
def test_hass_intents_get_home_assistant_slots_and_skills(hass_nlu: Understander, text: str,
                                                          name: str, skill: str, slots: dict) -> None:
    intent = hass_nlu.parse(text)
    assert intent.name == name
    assert hass_nlu.intents.spec(intent.name).skill == skill
    assert {k: v for k, v in intent.slots.items() if k in slots} == slots


def test_hass_model_still_abstains_and_rejects_bad_input(hass_nlu: Understander) -> None:
    assert hass_nlu.parse("why is the sky blue").name == OOS
    assert hass_nlu.parse("1234 5678").name == OOS
    with pytest.raises(BadInputError):
        hass_nlu.parse("   ")
