"""benchmarks.llm_contention decodes a built model beside competitor processes and reports
both sides."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def test_decodes_beside_competitors_and_reports_what_they_did(tmp_path, capsys):
    from benchmarks.llm_contention import main
    from tests.gguf_fixtures import build_variants

    model = build_variants(tmp_path, {"exact": {}}, archs=(("llama", "Q4_1"),))["llama", "exact"]
    assert main([str(model), "--competitors", "0,1", "--seconds", "0.8", "--runs", "1",
                 "--threads", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["specs"][str(model)]
    assert rows["0"]["tok_s"] > 0 and rows["1"]["tok_s"] > 0
    assert rows["0"]["competitor_work_s"] == 0 and rows["1"]["competitor_work_s"] > 0


def test_the_product_voice_as_the_competitor_reports_seconds_of_audio(tmp_path, capsys):
    pytest.importorskip("piper")
    from edge_runtime.tts.piper import default_voice_path
    voice = default_voice_path()
    if voice is None or not voice.is_file():
        pytest.skip("no Piper voice pulled (edge-runtime models pull piper-joe-medium)")
    from benchmarks.llm_contention import main
    from tests.gguf_fixtures import build_variants

    model = build_variants(tmp_path, {"exact": {}}, archs=(("llama", "Q4_1"),))["llama", "exact"]
    assert main([str(model), "--kind", "tts", "--competitors", "1", "--seconds", "1",
                 "--runs", "1", "--threads", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "tts"
    assert out["specs"][str(model)]["1"]["competitor_work_s"] > 0
