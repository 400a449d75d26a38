"""`edge-runtime doctor --gpu`, `scripts/gpu-check.sh`, the doctor lines and /healthz's
``gpu`` object: one table on a (fake) GPU, one line and exit 77 without one."""
import json
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("onnx")

from edge_runtime.config import load_config  # noqa: E402
from edge_runtime.errors import EdgeError  # noqa: E402
from edge_runtime.gpu.check import NO_GPU, Row, render, run_gpu_check  # noqa: E402
from edge_runtime.gpu.check_llm import placement_from_events, profile_placement  # noqa: E402
from edge_runtime.gpu.probe import probe  # noqa: E402
from tests.gpu_fakes import fake_backends  # noqa: E402
from tests.nlu_encoder_fixtures import write_tiny_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gpu_the_check_is_one_line_and_exit_77(tmp_path):
    lines: list[str] = []
    rc = run_gpu_check(load_config(env={}), out=lines.append,
                       markers=(str(tmp_path / "no-nvidia0"),))
    assert rc == NO_GPU and len(lines) == 1 and "no NVIDIA GPU here" in lines[0]


def test_the_script_exits_quickly_with_one_line_on_a_machine_without_a_gpu():
    t = time.monotonic()
    out = subprocess.run(["bash", "scripts/gpu-check.sh"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                     "GPU_CHECK_MARKERS": "/nonexistent"})
    assert out.returncode == NO_GPU, out.stderr
    assert len(out.stdout.strip().splitlines()) == 1 and "no NVIDIA GPU" in out.stdout
    assert time.monotonic() - t < 10
    assert not (ROOT / ".gpu-check-venv").exists()


def test_on_a_gpu_the_check_prints_one_table_of_every_model_and_path(tmp_path, tiny_llm):
    marker = tmp_path / "nvidia0"
    marker.touch()
    cfg = load_config(env={}).with_overrides(
        nlu={"model_dir": str(write_tiny_model(tmp_path / "nlu"))},
        llm={"model_dir": str(tiny_llm)}, paths={"home": str(tmp_path / "home")},
        device={"profile": "orin-nano-8gb"})
    lines: list[str] = []
    rc = run_gpu_check(cfg, out=lines.append, backends=fake_backends(),
                       markers=(str(marker),))
    table = lines[0].splitlines()
    assert table[0].split()[:2] == ["model", "path"] and "agreement" in table[0]
    rows = {tuple(line.split()[:2]): line for line in table[1:]}
    assert "ok max|err|" in rows[("nlu", "tensorrt-native")]
    assert "FAIL" in rows[("nlu", "cuda")] and "CUDAExecutionProvider" in rows[("nlu", "cuda")]
    assert "reference" in rows[("nlu", "cpu")] and "reference" in rows[("llm", "cpu")]
    assert "FAIL cuda unavailable" in rows[("llm", "cuda")]
    if ("vad", "tensorrt-native") in rows and "missing" not in rows[("vad", "cpu")]:
        assert "ok max|err|" in rows[("vad", "tensorrt-native")]
    assert any("no fp16 variant" in line for line in lines)
    assert rc == 1                                   # the GPU providers failed here


def test_the_llm_rows_give_top1_against_the_gguf_reference(tmp_path, tiny_llm):
    from edge_runtime.clock import SYSTEM_CLOCK
    from edge_runtime.gpu.check_llm import llm_rows
    cfg = load_config(env={}).with_overrides(llm={"model_dir": str(tiny_llm)},
                                             paths={"home": str(tmp_path / "home")})
    rows, lines = llm_rows(cfg, deadline=SYSTEM_CLOCK.monotonic() + 60, clock=SYSTEM_CLOCK,
                           source=tiny_llm.parent / "tiny.gguf")
    cpu = next(r for r in rows if r.path == "cpu")
    top1 = float(cpu.agreement.split("top-1 ")[1].split(" %")[0])
    batched = float(cpu.agreement.split("batched ")[1].split(" %")[0])
    assert 90.0 <= top1 <= 100.0 and abs(batched - top1) <= 2.0
    assert "reference" in cpu.agreement
    assert any("teacher-forced agreement with the fp32 GGUF reference" in line
               for line in lines)


def test_a_gpu_path_far_below_the_cpus_top1_fails_and_rounding_does_not():
    from edge_runtime.gpu.check_llm import _agreement
    assert _agreement((0.975, 0.975), None, "abc", None) == \
        "top-1 97.5 % (batched 97.5 %), reference"
    assert _agreement((0.9625, 0.97), 0.975, "abc", "abc") == \
        "ok top-1 96.2 % (batched 97.0 %), same greedy text"
    assert _agreement((0.95, 0.95), 0.975, "abd", "abc") == \
        "ok top-1 95.0 % (batched 95.0 %), greedy text differs after 2 of 3 chars"
    bad = _agreement((0.40, 0.975), 0.975, "xyz", "abc")
    assert bad.startswith("FAIL top-1 40.0 %") and "the cpu: 97.5 %" in bad
    assert _agreement((0.975, 0.40), 0.975, "abc", "abc").startswith("FAIL")  # batched only
    assert _agreement(None, None, "abc", "abc") == "ok same greedy text"
    assert _agreement((0.97, None), 0.975, "abc", "abc") == \
        "ok top-1 97.0 % (batched not run), same greedy text"          # tensorrt
    assert _agreement((0.40, None), 0.975, "abc", "abc").startswith("FAIL")


def test_the_table_has_one_row_per_path_with_dashes_for_what_was_not_measured():
    text = render([Row("vad", "tensorrt-native", 12.3, 0.21, "ok"), Row("vad", "cpu")])
    head, native, cpu = text.splitlines()
    assert head.split() == ["model", "path", "build", "s", "p50", "ms", "agreement"]
    assert native.split()[:4] == ["vad", "tensorrt-native", "12.3", "0.21"]
    assert cpu.split() == ["vad", "cpu", "-", "-"]


def test_placement_counts_each_node_once_and_names_the_ops_left_on_the_cpu():
    events = [
        {"cat": "Node", "name": "a_kernel_time", "args": {"provider": "CUDAExecutionProvider",
                                                          "op_name": "MatMulNBits"}},
        {"cat": "Node", "name": "a_kernel_time", "args": {"provider": "CUDAExecutionProvider",
                                                          "op_name": "MatMulNBits"}},
        {"cat": "Node", "name": "b_kernel_time", "args": {"provider": "CPUExecutionProvider",
                                                          "op_name": "GroupQueryAttention"}},
        {"cat": "Session", "name": "model_run", "args": {}}]
    per, cpu_ops = placement_from_events(events)
    assert per == {"CUDAExecutionProvider": 1, "CPUExecutionProvider": 1}
    assert cpu_ops == {"GroupQueryAttention": 1}


def test_placement_of_the_llm_graph_comes_from_onnxruntime_profiling(tiny_llm):
    line = profile_placement(tiny_llm, "cpu")
    assert line.startswith("llm placement with cpu: ") and " on CPU" in line
    assert "GroupQueryAttention" in line


def test_doctor_probe_lines(tmp_path):
    cpu = load_config(env={})
    assert probe(cpu).startswith("not used: profile x86-cpu")
    orin = cpu.with_overrides(device={"profile": "orin-nano-8gb"})
    with pytest.raises(EdgeError) as info:            # the real loaders: nothing here
        probe(orin)
    line = info.value.one_line()
    assert "wants tensorrt-native > tensorrt > cuda > cpu" in line and "\n" not in line
    assert "serve on the cpu" in line
    ok = probe(orin, backends=fake_backends())
    assert "tensorrt 10.3.0" in ok and "pycuda on Fake Orin" in ok


async def test_healthz_shows_the_gpu_object_beside_the_rest(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from edge_runtime.daemon import make_app
    from edge_runtime.gpu.accel import Accelerator, AccelSettings
    from edge_runtime.nlu.encoder import EncoderIntentModel
    from edge_runtime.runtime import Runtime
    from tests.pipeline_fakes import make_pipeline
    p = make_pipeline(cfg=load_config(env={}))
    acc = Accelerator(AccelSettings(tmp_path / "e", default_order=("tensorrt-native", "cpu")),
                      metrics=p.metrics, backends=fake_backends(cuda=""))
    EncoderIntentModel(write_tiny_model(tmp_path / "nlu"), accel=acc)
    rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p, accel=acc)
    client = TestClient(TestServer(make_app(rt, voice=False)))
    await client.start_server()
    try:
        body = await (await client.get("/healthz")).json()
        metrics = await (await client.get("/metrics")).text()
    finally:
        await client.close()
    gpu = body["gpu"]
    assert gpu["status"] == "fallback" and gpu["models"]["nlu"]["path"] == "cpu"
    assert "pip install pycuda" in gpu["models"]["nlu"]["fallbacks"][0]["message"]
    assert 'edge_gpu_fallbacks_total{model="nlu",path="tensorrt-native",reason="unavailable"}' \
        in metrics
    json.dumps(body)                                   # plain JSON all through
