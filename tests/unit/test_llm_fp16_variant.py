"""The fp16 build variant (for the CUDA / TensorRT providers): fp16 activations, KV cache
and float constants around the same weight blocks, fp32 logits; it runs on the CPU
provider here, so its outputs are checked against the fp32 build, and the store picks it
when a GPU provider leads."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")

from tests.gguf_fixtures import build_variants, write_arch_gguf  # noqa: E402

IDS = list(range(5, 37))


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("fp16"), {
        prec: {"accuracy_level": 1, "lm_head_accuracy_level": 1, "precision": prec}
        for prec in ("fp32", "fp16")})


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_fp16_graph_types(builds, arch):
    from onnx import TensorProto

    d = builds[arch, "fp16"]
    cfg = json.loads((d / "model_config.json").read_text())
    assert cfg["precision"] == "fp16" and cfg["kv_cache_dtype"] == "float16"
    proto = onnx.load(str(d / "model.onnx"), load_external_data=False)
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(proto.graph.input) + list(proto.graph.output)}
    assert types["logits"] == TensorProto.FLOAT
    assert types["past_key_values.0.key"] == types["present.0.value"] == TensorProto.FLOAT16
    floats = {t.data_type for t in proto.graph.initializer
              if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)}
    assert floats == {TensorProto.FLOAT16}
    gqa = [n for n in proto.graph.node if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == cfg["num_layers"]


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_fp16_logits_follow_the_fp32_build(builds, arch):
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    a = onnx_logits(builds[arch, "fp32"], IDS)
    b = onnx_logits(builds[arch, "fp16"], IDS)
    assert b.dtype == np.float32
    assert np.abs(a - b).max() < 0.02 * np.abs(a).max()
    assert np.mean(a.argmax(-1) == b.argmax(-1)) >= 0.9


@pytest.mark.parametrize("batching", [{}, {"max_batch": 2, "batch_context_tokens": 64}],
                         ids=["single", "batched"])
def test_engine_decodes_the_fp16_variant_alike(builds, batching):
    from edge_runtime.llm import load_engine
    from edge_runtime.types import GenerationParams, Message

    greedy = GenerationParams(temperature=0.0, max_new_tokens=10, stop_at_sentence=0)
    msgs = [Message("user", "the cat")]
    texts = []
    for prec in ("fp32", "fp16"):
        eng = load_engine(builds["llama", prec], providers=("cpu",), threads=1,
                          context_tokens=64, **batching)
        if not batching:
            assert eng._runner.kv_device == "cpu"
        texts.append("".join(eng.generate(msgs, greedy)))
        eng.close()
    assert texts[0] == texts[1]


def test_unknown_precision_is_refused_before_building(tmp_path):
    from edge_runtime.errors import ModelLoadError
    from edge_runtime.models.gguf2onnx.build import build_llm

    g = write_arch_gguf(tmp_path / "m.gguf", "llama", "Q8_0")
    with pytest.raises(ModelLoadError, match="precision"):
        build_llm(g, tmp_path / "out", precision="int3")
    assert not (tmp_path / "out").exists()


def test_store_picks_the_variant_for_the_leading_provider(tmp_path, monkeypatch):
    from edge_runtime.config import load_config
    from edge_runtime.llm import providers
    from edge_runtime.models.store import ModelStore

    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)},
                                             llm={"providers": ["cuda", "cpu"]})
    store = ModelStore(cfg)
    name = cfg.llm.model
    for prec in ("fp32", "fp16"):
        d = store.built_dir(name, prec)
        d.mkdir(parents=True)
        (d / "model.onnx").write_bytes(b"")
    assert store.built_dir(name, "fp16").name == "onnx-fp16"
    monkeypatch.setattr(providers, "available", lambda names: [n for n in names if n != "cuda"])
    assert store.llm_dir() == store.built_dir(name)                    # no GPU: fp32
    monkeypatch.setattr(providers, "available", lambda names: list(names))
    assert store.llm_dir() == store.built_dir(name, "fp16")            # CUDA leads: fp16
    (store.built_dir(name, "fp16") / "model.onnx").unlink()
    assert store.llm_dir() == store.built_dir(name)                    # variant not built
    assert providers.model_precision(["tensorrt", "cpu"]) == "fp16"
    assert providers.model_precision(["cpu"]) == "fp32"


def test_cli_takes_the_precision():
    from edge_runtime.cli import build_parser

    args = build_parser().parse_args(["models", "build", "gemma3-270m", "--precision", "fp16"])
    assert args.precision == "fp16"
    assert build_parser().parse_args(["models", "check", "x"]).precision == "fp32"


def test_kv_cache_goes_to_the_gpu_only_for_the_fp16_variant():
    from edge_runtime.llm.runner import kv_device

    fp16, fp32 = {"kv_cache_dtype": "float16"}, {"kv_cache_dtype": "float32"}
    assert kv_device(fp16, "cuda") == kv_device(fp16, "tensorrt") == "cuda"
    assert kv_device(fp16, "cpu") == kv_device(fp32, "cuda") == kv_device({}, "cuda") == "cpu"


def test_gpu_check_runs_the_fp16_variant_on_the_gpu_rows(builds, tmp_path):
    import shutil

    from edge_runtime.clock import SYSTEM_CLOCK
    from edge_runtime.config import load_config
    from edge_runtime.gpu.check_llm import llm_rows
    from edge_runtime.models.store import ModelStore

    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)},
                                             llm={"threads": 1})
    store = ModelStore(cfg)
    rows, _ = llm_rows(cfg, deadline=SYSTEM_CLOCK.monotonic() + 60, clock=SYSTEM_CLOCK)
    assert len(rows) == 1 and "models build" in rows[0].agreement    # nothing built
    shutil.copytree(builds["llama", "fp32"], store.built_dir(cfg.llm.model))
    _, lines = llm_rows(cfg, deadline=SYSTEM_CLOCK.monotonic() + 60, clock=SYSTEM_CLOCK)
    assert any("no fp16 variant built" in line and "--precision fp16" in line
               for line in lines)
    shutil.copytree(builds["llama", "fp16"], store.built_dir(cfg.llm.model, "fp16"))
    rows, lines = llm_rows(cfg, deadline=SYSTEM_CLOCK.monotonic() + 60, clock=SYSTEM_CLOCK)
    assert [r.path for r in rows] == ["cpu", "cuda", "tensorrt"]
    assert any("ran the fp16 variant" in line for line in lines)


def test_a_provider_onnxruntime_drops_at_load_is_a_provider_error_naming_its_libraries(
        tmp_path, monkeypatch):
    from edge_runtime.errors import ProviderError
    from edge_runtime.llm import providers

    class DroppedSession:
        def get_providers(self):
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    monkeypatch.setattr(providers, "available", lambda names: list(names))
    monkeypatch.setattr(providers, "build_session", lambda *a, **k: DroppedSession())
    with pytest.raises(ProviderError) as err:
        providers.open_session(tmp_path / "model.onnx", ["tensorrt"], 1)
    assert "could not start its tensorrt provider" in err.value.message
    assert "libnvinfer" in err.value.hint and "models build" not in err.value.hint
    assert "onnxruntime-gpu[cuda,cudnn]" in providers.dropped_hint("cuda")


def test_the_hint_for_a_provider_this_onnxruntime_lacks_is_the_gpu_wheel(monkeypatch):
    import onnxruntime as ort

    from edge_runtime.llm import providers
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert providers.provider_hint("cuda") == providers.ORT_GPU_HINT
    monkeypatch.setattr(ort, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert providers.provider_hint("cuda") == providers.dropped_hint("cuda")
