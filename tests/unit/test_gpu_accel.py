"""The per-model path choice end to end over fake GPU modules (the real wrappers, builder,
engine cache, runner and agreement check on top): the encoder and Silero VAD on a native
engine answer as on the CPU, and every bad input of issue 13 ends in one clear line with
the CPU path serving and nothing raised."""
import json
import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from edge_runtime.gpu.accel import Accelerator, AccelSettings  # noqa: E402
from edge_runtime.gpu.engine_cache import EngineCache, EngineKey, _split  # noqa: E402
from edge_runtime.metrics import Metrics  # noqa: E402
from edge_runtime.nlu.encoder import EncoderIntentModel  # noqa: E402
from tests.gpu_fakes import FakeDevice, TrtKnobs, fake_backends  # noqa: E402
from tests.nlu_encoder_fixtures import write_tiny_model  # noqa: E402

NATIVE = ("tensorrt-native", "tensorrt", "cuda", "cpu")
TEXTS = ("what time is it", "will it rain", "write a poem", "the weather maybe")


@pytest.fixture
def model_dir(tmp_path):
    return write_tiny_model(tmp_path / "model")


def accel(tmp_path, backends, metrics=None, **settings):
    return Accelerator(AccelSettings(tmp_path / "engines", default_order=NATIVE, **settings),
                       metrics=metrics, backends=backends)


def warnings(caplog):
    return [r for r in caplog.records if r.levelno >= logging.WARNING
            and r.name.startswith("edge_runtime.gpu")]


def test_the_encoder_on_a_native_engine_answers_as_on_the_cpu(tmp_path, model_dir, caplog):
    knobs = TrtKnobs()
    acc = accel(tmp_path, fake_backends(knobs=knobs))
    gpu, cpu = EncoderIntentModel(model_dir, accel=acc), EncoderIntentModel(model_dir)
    for text in TEXTS:
        np.testing.assert_allclose(gpu.logits(text), cpu.logits(text), atol=1e-6)
        assert gpu.classify(text) == cpu.classify(text)
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "tensorrt-native" and st["agreement"]["ok"]
    assert "fp16" in knobs.flags and "int8" not in knobs.flags
    assert not warnings(caplog)
    engine = EngineCache(tmp_path / "engines")
    assert st["engine"].startswith(str(engine.dir)) and knobs.builds == 1
    assert any(p.name.startswith("timing-") for p in engine.dir.iterdir())
    EncoderIntentModel(model_dir, accel=acc)            # the next start loads the engine
    assert knobs.builds == 1 and acc.health()["models"]["nlu"]["path"] == "tensorrt-native"


def test_silero_vad_on_a_native_engine_keeps_its_state_like_the_cpu(tmp_path):
    from edge_runtime.vad.silero import SileroVad, default_model_path
    path = default_model_path()
    if path is None:
        pytest.skip("silero VAD model not pulled")
    acc = accel(tmp_path, fake_backends(cuda="cuda-python"))
    gpu, cpu = SileroVad(path, accel=acc), SileroVad(path)
    rng = np.random.default_rng(3)
    for i in range(20):
        frame = (0.4 * np.sin(np.arange(512) * (0.05 + 0.01 * i)) * (i % 4 != 0)
                 + 0.01 * rng.standard_normal(512)).astype(np.float32)
        assert gpu.prob(frame) == pytest.approx(cpu.prob(frame), abs=1e-6)
    assert acc.health()["models"]["vad"]["path"] == "tensorrt-native"
    from edge_runtime.vad import load_vad
    forked = load_vad("silero", model_path=str(path), accel=acc).fork()   # the stack's seam
    assert 0.0 <= forked.prob(np.zeros(512, np.float32)) <= 1.0


def test_a_disagreeing_engine_is_not_used_and_the_reason_is_shown(tmp_path, model_dir, caplog):
    knobs = TrtKnobs()
    knobs.noise = 0.5                                    # > nlu tolerance 0.05
    metrics = Metrics()
    acc = accel(tmp_path, fake_backends(knobs=knobs), metrics, max_abs_error={"nlu": 0.05})
    model = EncoderIntentModel(model_dir, accel=acc)
    assert model.classify("what time is it")[0] == "get_time"
    health = acc.health()
    st = health["models"]["nlu"]
    assert health["status"] == "fallback" and st["path"] == "cpu"
    assert st["fallbacks"][0]["reason"] == "agreement"
    assert "max abs error 0.5" in st["fallbacks"][0]["message"]
    lines = warnings(caplog)
    assert len(lines) == 1 and "nlu runs on cpu (wanted tensorrt-native)" in lines[0].message
    text = metrics.render().decode()
    assert 'edge_gpu_fallbacks_total{model="nlu",path="tensorrt-native",reason="agreement"} 1.0' \
        in text
    assert 'edge_gpu_model_path_info{model="nlu",path="cpu"} 1.0' in text


def test_intents_must_agree_on_the_validation_file(tmp_path, model_dir):
    val = tmp_path / "val.jsonl"
    val.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    acc = accel(tmp_path, fake_backends(), validation_file=str(val))
    EncoderIntentModel(model_dir, accel=acc)
    agr = acc.health()["models"]["nlu"]["agreement"]
    assert agr["label_agreement"] == 1.0 and agr["checked"] == 4 + len(TEXTS)


# -- bad input ---------------------------------------------------------------------------
def test_an_engine_from_another_gpu_or_tensorrt_is_rebuilt(tmp_path, model_dir, caplog):
    caplog.set_level(logging.INFO)
    acc_a = accel(tmp_path, fake_backends(FakeDevice("GPU A")))
    EncoderIntentModel(model_dir, accel=acc_a)
    knobs = TrtKnobs()
    acc_b = accel(tmp_path, fake_backends(FakeDevice("GPU B"), knobs, version="10.7.0"))
    EncoderIntentModel(model_dir, accel=acc_b)
    engine_a = Path(acc_a.health()["models"]["nlu"]["engine"])
    engine_b = Path(acc_b.health()["models"]["nlu"]["engine"])
    assert engine_a != engine_b and knobs.builds == 1
    engine_b.write_bytes(engine_a.read_bytes())          # board A's file where B looks
    caplog.clear()
    EncoderIntentModel(model_dir, accel=acc_b)
    assert knobs.builds == 2
    assert any("built for another setup" in r.message and "GPU A" in r.message
               and "10.3.0" in r.message for r in caplog.records)
    assert acc_b.health()["models"]["nlu"]["path"] == "tensorrt-native"
    assert not warnings(caplog)


def test_a_truncated_engine_is_one_line_and_the_cpu_serves(tmp_path, model_dir, caplog):
    EncoderIntentModel(model_dir, accel=accel(tmp_path, fake_backends()))
    engine = next((tmp_path / "engines").glob("nlu-*.engine"))
    engine.write_bytes(engine.read_bytes()[:-7])
    caplog.clear()
    acc = accel(tmp_path, fake_backends())
    model = EncoderIntentModel(model_dir, accel=acc)
    assert model.classify("will it rain")[0] == "weather"
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "cpu" and st["fallbacks"][0]["reason"] == "engine_invalid"
    (line,) = warnings(caplog)
    assert "truncated" in line.message and "\n" not in line.message
    assert engine.with_suffix(".engine.bad").exists()    # the next start rebuilds


def test_an_engine_tensorrt_will_not_deserialize_keeps_the_cpu(tmp_path, model_dir, caplog):
    acc = accel(tmp_path, fake_backends())
    EncoderIntentModel(model_dir, accel=acc)
    path = Path(acc.health()["models"]["nlu"]["engine"])
    header, _ = _split(path.read_bytes())
    key = EngineKey(**{f: header[f] for f in EngineKey.__dataclass_fields__})
    EngineCache(path.parent).store(key, b"NOT A PLAN")   # a valid header, a bad plan
    caplog.clear()
    acc2 = accel(tmp_path, fake_backends())
    EncoderIntentModel(model_dir, accel=acc2)
    st = acc2.health()["models"]["nlu"]
    assert st["path"] == "cpu" and "not deserializable" in st["fallbacks"][0]["message"]
    assert len(warnings(caplog)) == 1 and path.with_suffix(".engine.bad").exists()


def test_out_of_memory_while_building_is_one_line(tmp_path, model_dir, caplog):
    knobs = TrtKnobs()
    knobs.oom = True
    acc = accel(tmp_path, fake_backends(knobs=knobs))
    model = EncoderIntentModel(model_dir, accel=acc)
    assert model.classify("what time is it")[0] == "get_time"
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "cpu"
    reasons = [f["reason"] for f in st["fallbacks"]]
    assert reasons == ["out_of_memory", "unavailable", "unavailable"]   # then no GPU EPs
    (line,) = warnings(caplog)
    assert "GPU out of memory while building model.onnx" in line.message


def test_a_model_tensorrt_cannot_parse_says_why(tmp_path, model_dir):
    knobs = TrtKnobs()
    knobs.parse_errors = ["In node 3 (parseGraph): No importer registered for op: MatMulInteger"]
    acc = accel(tmp_path, fake_backends(knobs=knobs))
    EncoderIntentModel(model_dir, accel=acc)
    msg = acc.health()["models"]["nlu"]["fallbacks"][0]["message"]
    assert "MatMulInteger" in msg and "dynamic INT8" in msg


def test_a_profile_asking_for_tensorrt_where_there_is_none(tmp_path, model_dir, caplog):
    """The real loaders on this machine: no tensorrt, no pycuda, a CPU-only onnxruntime."""
    from edge_runtime.config import load_config
    cfg = load_config(env={}).with_overrides(device={"profile": "orin-nano-8gb"},
                                             paths={"home": str(tmp_path)})
    acc = Accelerator.from_config(cfg)
    assert acc.order("nlu") == NATIVE
    model = EncoderIntentModel(model_dir, accel=acc)
    assert model.classify("what time is it")[0] == "get_time"
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "cpu" and [f["path"] for f in st["fallbacks"]] == list(NATIVE[:3])
    (line,) = warnings(caplog)
    assert "pip install tensorrt" in line.message and "onnxruntime-gpu" in line.message


def test_pycuda_missing_is_one_line_naming_the_install(tmp_path, model_dir, caplog):
    acc = accel(tmp_path, fake_backends(cuda=""))
    EncoderIntentModel(model_dir, accel=acc)
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "cpu" and st["fallbacks"][0]["reason"] == "unavailable"
    (line,) = warnings(caplog)
    assert "pip install pycuda" in line.message and "cuda-python" in line.message


def test_a_failure_at_run_time_moves_on_once_and_the_answer_still_comes(tmp_path, model_dir,
                                                                        caplog):
    knobs = TrtKnobs()
    metrics = Metrics()
    acc = accel(tmp_path, fake_backends(knobs=knobs), metrics)
    model = EncoderIntentModel(model_dir, accel=acc)
    want = EncoderIntentModel(model_dir).classify("what time is it")
    knobs.fail_runs = True                               # the GPU went away
    assert model.classify("what time is it") == want
    assert model.classify("what time is it") == want
    st = acc.health()["models"]["nlu"]
    assert st["path"] == "cpu" and st["fallbacks"][0]["at"] == "run"
    assert len(warnings(caplog)) == 1 and "moved at run time to cpu" in warnings(caplog)[0].message
    assert 'reason="run_failed"} 1.0' in metrics.render().decode()


def test_an_input_outside_the_profile_is_answered_on_the_cpu_without_leaving_the_engine(
        tmp_path, model_dir):
    acc = accel(tmp_path, fake_backends())
    model = EncoderIntentModel(model_dir, accel=acc)
    sess = model._session          # the FallbackSession the model calls, as onnxruntime's
    ids = np.ones((1, model.max_tokens + 4), np.int64)
    out = sess.run(None, {"input_ids": ids, "attention_mask": ids})
    assert out[0].shape == (1, 3)
    assert acc.health()["models"]["nlu"]["path"] == "tensorrt-native"


def test_a_cpu_only_profile_returns_the_plain_onnxruntime_session(tmp_path, model_dir):
    acc = Accelerator(AccelSettings(tmp_path), backends=fake_backends())
    model = EncoderIntentModel(model_dir, accel=acc)
    assert type(model._session).__name__ == "InferenceSession"
    assert acc.health() == {"status": "ok", "fallbacks_total": 0, "models": {"nlu": {
        "path": "cpu", "wanted": "cpu", "order": ["cpu"], "build_s": None, "engine": None,
        "agreement": None, "fallbacks": []}}}


def test_an_unreadable_validation_file_keeps_the_cpu_with_one_line(tmp_path, model_dir, caplog):
    val = tmp_path / "val.jsonl"
    val.write_text("{not json\n")
    acc = accel(tmp_path, fake_backends(), validation_file=str(val))
    model = EncoderIntentModel(model_dir, accel=acc)
    assert model.classify("what time is it")[0] == "get_time"
    assert acc.health()["models"]["nlu"]["path"] == "cpu"
    (line,) = warnings(caplog)
    assert "JSONDecodeError" in line.message


def test_a_path_slower_than_the_cpu_is_passed_over_when_max_slowdown_is_set(tmp_path,
                                                                           model_dir):
    from edge_runtime.clock import FakeClock
    clock = FakeClock()
    knobs = TrtKnobs()
    knobs.clock, knobs.run_s = clock, 0.002            # 2 ms an engine call, 0 on the CPU

    def opened(**settings):
        acc = Accelerator(AccelSettings(tmp_path / "engines", default_order=NATIVE,
                                        **settings),
                          backends=fake_backends(knobs=knobs), clock=clock)
        EncoderIntentModel(model_dir, accel=acc)
        return acc.health()["models"]["nlu"]

    st = opened(max_slowdown=1.0)
    assert st["path"] == "cpu"
    slow = st["fallbacks"][0]
    assert slow["path"] == "tensorrt-native" and slow["reason"] == "slower_than_cpu"
    assert "2.00 ms a call, the CPU 0.00 ms" in slow["message"]
    assert opened(max_slowdown=0.0)["path"] == "tensorrt-native"       # the gate off
    knobs.run_s = 0.0                                                  # as fast: kept
    st = opened(max_slowdown=1.0)
    assert st["path"] == "tensorrt-native" and st["agreement"]["call_ms"] == 0.0


def test_the_config_turns_the_speed_gate_on_by_default():
    from edge_runtime.config import load_config
    from edge_runtime.errors import ConfigError
    cfg = load_config(env={})
    assert cfg.gpu.max_slowdown == 1.0
    assert Accelerator.from_config(cfg).settings.max_slowdown == 1.0
    with pytest.raises(ConfigError):
        cfg.with_overrides(gpu={"max_slowdown": -1})
