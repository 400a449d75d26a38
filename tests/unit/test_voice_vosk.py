"""The Vosk backend's streaming logic and grammar, with a stand-in for the Kaldi recognizer."""
import json
import sys
import types

import numpy as np
import pytest

from edge_runtime.asr.vosk import VoskAsr, grammar_from_intents
from edge_runtime.errors import ModelMissingError
from edge_runtime.nlu.base import IntentSet, IntentSpec


class FakeRecognizer:
    """Closes a segment every 8000 samples; says "word<N>" per segment."""

    def __init__(self, model, rate, grammar=None):
        self.grammar = json.loads(grammar) if grammar else None
        self.n = 0
        self.segments = 0

    def AcceptWaveform(self, data):
        self.n += len(data) // 2
        if self.n >= 8000:
            self.n -= 8000
            self.segments += 1
            return True
        return False

    def Result(self):
        return json.dumps({"text": f"word{self.segments}"})

    def PartialResult(self):
        return json.dumps({"partial": "part" if self.n else ""})

    def FinalResult(self):
        return json.dumps({"text": "last" if self.n else ""})


@pytest.fixture
def vosk_model(tmp_path, monkeypatch):
    fake = types.SimpleNamespace(SetLogLevel=lambda level: None, Model=lambda path: path,
                                 KaldiRecognizer=FakeRecognizer)
    monkeypatch.setitem(sys.modules, "vosk", fake)
    (tmp_path / "am").mkdir()
    (tmp_path / "am" / "final.mdl").write_bytes(b"x")
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "Gr.fst").write_bytes(b"x")
    return tmp_path


def test_segments_closed_by_vosk_are_kept_in_partials_and_the_final(vosk_model):
    s = VoskAsr(vosk_model).stream()
    s.accept(np.zeros(6000, np.float32))
    assert s.partial() == "part"
    s.accept(np.zeros(6000, np.float32))          # crosses a segment boundary
    assert s.partial() == "word1 part"
    t = s.finish()
    assert t.text == "word1 last" and t.backend == "vosk"
    assert t.audio_s == pytest.approx(12000 / 16000)


def test_grammar_comes_from_intent_examples(vosk_model):
    intents = IntentSet({"get_time": IntentSpec("get_time", ("What time is it?", "time please")),
                         "lights": IntentSpec("lights", ("turn on the lights", "time please"))})
    g = grammar_from_intents(intents)
    assert g == ["what time is it", "time please", "turn on the lights", "[unk]"]
    asr = VoskAsr(vosk_model, grammar=g)
    assert asr.recognizer().grammar == g


def test_a_missing_model_names_the_setting(tmp_path):
    with pytest.raises(ModelMissingError) as info:
        VoskAsr(tmp_path)
    assert "asr.model_dir" in info.value.hint
