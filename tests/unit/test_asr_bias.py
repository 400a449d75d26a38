"""The command vocabulary the recognizer is biased toward (``asr.bias``)."""
from edge_runtime.asr.bias import COMMAND_WORDS, CommandVocabulary


def test_prompt_lists_areas_and_names_first_then_the_command_words() -> None:
    v = CommandVocabulary.of(["kitchen lamp", "Hall_Sconce", "kitchen lamp"], ["kitchen"],
                             extra="Zigbee")
    prompt = v.prompt()
    assert prompt.startswith("Zigbee Kitchen, Kitchen Lamp, Hall Sconce. Turn on the light.")
    assert v.names == ("kitchen lamp", "Hall Sconce")        # distinct, template syntax gone
    assert CommandVocabulary().prompt() == " ".join(COMMAND_WORDS.split()[:120])


def test_prompt_is_clipped_to_max_words() -> None:
    v = CommandVocabulary.of([f"lamp {i}" for i in range(200)], [], max_words=30)
    assert len(v.prompt().split()) == 30 and v.prompt().startswith("Lamp 0, Lamp 1")


def test_grammar_holds_commands_numbers_names_and_unk_last() -> None:
    g = CommandVocabulary.of(["Patio Heater"], ["Den"]).grammar(["what time is it"])
    assert g[0] == "what time is it" and g[-1] == "[unk]"
    assert {"turn", "timer", "percent", "twenty", "patio heater", "den"} <= set(g)
    assert len(g) == len(set(g))


class _PromptedAsr:
    """A recognizer that records its prompt (the engine's ``set_prompt`` surface)."""

    name = "recording"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def set_prompt(self, text: str) -> None:
        self.prompts.append(text)


def test_the_voice_service_biases_toward_the_simulated_home() -> None:
    from types import SimpleNamespace

    from edge_runtime.clock import FakeClock
    from edge_runtime.config import Config, SkillsConfig
    from edge_runtime.skills.registry import SkillRegistry
    from edge_runtime.voice.service import VoiceService

    registry = SkillRegistry.from_config(SkillsConfig(timezone="UTC"), FakeClock())
    registry.add_home()
    runtime = SimpleNamespace(cfg=Config().with_overrides(asr={"bias": True}),
                              stages=SimpleNamespace(skills=registry,
                                                     understander=SimpleNamespace(
                                                         acts_on=lambda text, at_least: False)))
    service = VoiceService(runtime, stack=SimpleNamespace(asr=_PromptedAsr()))
    service._bias(service.vocabulary())
    (prompt,) = service.stack.asr.prompts
    assert prompt.startswith("Kitchen, Living Room") and "Kitchen Lights" in prompt
    assert Config().asr.bias                                      # on by default
    off = VoiceService(SimpleNamespace(cfg=Config().with_overrides(asr={"bias": False}),
                                       stages=runtime.stages),
                       stack=SimpleNamespace(asr=_PromptedAsr()))
    off._bias(off.vocabulary())
    assert off.stack.asr.prompts == []


def test_the_prompt_ends_on_a_whole_sentence() -> None:
    from edge_runtime.asr.bias import CommandVocabulary
    many = CommandVocabulary.of([f"Lamp {i}" for i in range(45)], ["Study"], max_words=120)
    prompt = many.prompt()
    assert len(prompt.split()) <= 120 and prompt.endswith((".", "?", "!"))
    assert prompt.startswith("Study, Lamp 0, Lamp 1") and "Turn on the light." in prompt
    assert "Set a timer for 10" not in prompt or "10 minutes." in prompt


def test_a_looping_transcript_is_cut_back_to_one_copy() -> None:
    from edge_runtime.asr.whisper import drop_repeats
    assert drop_repeats("Cut 2 minutes from the timer Cut 2 minutes from the timer Cut 2 "
                        "minutes from") == "Cut 2 minutes from the timer"
    assert drop_repeats("turn on the light. Turn on the light.") == "turn on the light."
    for said in ("set a timer for five minutes", "very very good", "the the the cat"):
        assert drop_repeats(said) == said
