"""Requests in another language are answered, never acted on (``nlu.language``)."""
from edge_runtime.config import NluConfig
from edge_runtime.nlu import Understander
from edge_runtime.nlu.home.serve import CLARIFY, ENGLISH_ONLY, attach_home
from edge_runtime.nlu.language import other_language
from edge_runtime.nlu.loader import load_intents


def test_other_languages_are_recognised_and_english_is_not() -> None:
    assert other_language("allume la lumière de la cuisine") == "French"
    assert other_language("schalte das Licht in der Küche aus") == "German"
    assert other_language("apaga las luces por favor") == "Spanish"
    assert other_language("accendi la luce in cucina") == "Italian"
    assert other_language("zet de lamp in de keuken aan") == "Dutch"
    assert other_language("включи свет на кухне") == "another language"
    for english in ("turn on the kitchen light", "play some music by la roux",
                    "add pain au chocolat to the shopping list", "is the den lamp on",
                    "set a timer for ten minutes", ""):
        assert other_language(english) == "", english


def test_without_a_home_model_another_language_still_gets_the_answer(tmp_path) -> None:
    nlu = Understander(load_intents())
    assert not attach_home(nlu, NluConfig(home_dir=str(tmp_path / "none")))
    got = nlu.parse("allume la lumière de la cuisine")
    assert (got.name, got.slots["question"]) == (CLARIFY, ENGLISH_ONLY)
    assert nlu.parse("what time is it").name == "get_time"
