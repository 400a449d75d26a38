"""`bench llm`: llama.cpp in both thread policies, each ratio against the better; --model;
--fidelity-text."""
from __future__ import annotations

import pytest

from benchmarks import llm_bench


def _run(ttft, cached, tps, rss):
    return {"ttft_ms": ttft, "ttft_ms_prefix_cached": cached, "decode_tps": tps,
            "peak_rss_mb": rss, "new_tokens": 64, "prompt_tokens": 50}


def test_each_ratio_takes_llama_cpp_at_its_better_policy():
    out = {"ours": _run(90.0, 20.0, 93.0, 260.0),
           "llama_cpp_passive": _run(190.0, 40.0, 70.0, 200.0),
           "llama_cpp_spin": _run(230.0, 50.0, 93.0 / 0.94, 201.0)}
    llm_bench.llama_anchor(out)
    assert out["anchor"] == {"decode_tps": "spin", "ttft_ms": "passive",
                             "ttft_ms_prefix_cached": "passive", "peak_rss_mb": "passive"}
    assert out["ratios"]["decode_tps"] == 0.94              # against spinning, the faster
    assert out["ratios"]["ttft"] == round(90 / 190, 3)      # against passive, the faster
    assert out["ratios"]["peak_rss"] == 1.3
    assert out["llama_cpp"]["policy"] == "spin"
    assert out["ratios_by_policy"]["passive"]["decode_tps"] == round(93 / 70, 3)


def test_one_policy_is_its_own_anchor():
    out = {"ours": _run(90.0, 20.0, 93.0, 260.0),
           "llama_cpp_passive": _run(190.0, 40.0, 70.0, 200.0)}
    llm_bench.llama_anchor(out)
    assert set(out["anchor"].values()) == {"passive"}
    assert out["ratios"]["decode_tps"] == round(93 / 70, 3)
    assert "ratios_by_policy" not in out


def test_no_llama_cpp_leaves_no_ratios():
    out = {"ours": _run(90.0, 20.0, 93.0, 260.0)}
    assert "ratios" not in llm_bench.llama_anchor(out)


def test_worker_env_sets_or_clears_the_wait_policy():
    base = {"OMP_WAIT_POLICY": "ACTIVE", "PYTHONPATH": "/x"}
    passive = llm_bench.worker_env("llama_cpp", False, base)
    spin = llm_bench.worker_env("llama_cpp", True, base)
    ours = llm_bench.worker_env("ours", False, {})
    assert passive["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in spin                   # llama.cpp's own default
    assert "OMP_WAIT_POLICY" not in ours
    assert passive["PYTHONPATH"].endswith("/x")
    assert passive["PYTHONPATH"].split(":")[0] == str(llm_bench.HERE.parent)


def test_unknown_model_is_reported_with_the_fix(capsys):
    assert llm_bench.main(["--model", "no-such-model", "--runs", "1"]) == 2
    err = capsys.readouterr().err
    assert "no-such-model" in err and "models pull no-such-model" in err


def test_llama_spin_is_kept_as_the_spin_policy(monkeypatch, tmp_path):
    seen: list = []
    monkeypatch.setattr(llm_bench, "bench", lambda a: seen.append(a) or {})
    gguf, onnx = tmp_path / "m.gguf", tmp_path / "onnx"
    onnx.mkdir()
    gguf.write_bytes(b"x")
    (onnx / "model.onnx").write_bytes(b"x")
    monkeypatch.setattr(llm_bench, "_table", lambda out: "")
    llm_bench.main(["--gguf", str(gguf), "--model-dir", str(onnx), "--llama-spin"])
    llm_bench.main(["--gguf", str(gguf), "--model-dir", str(onnx)])
    assert [a.llama_policy for a in seen] == ["spin", "both"]
    assert seen[1].model == "smollm2-135m-instruct"


def test_a_missing_fidelity_text_is_reported_before_any_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(llm_bench, "bench", lambda a: pytest.fail("ran"))
    gguf, onnx = tmp_path / "m.gguf", tmp_path / "onnx"
    onnx.mkdir()
    gguf.write_bytes(b"x")
    (onnx / "model.onnx").write_bytes(b"x")
    assert llm_bench.main(["--gguf", str(gguf), "--model-dir", str(onnx),
                           "--fidelity-text", str(tmp_path / "none.txt")]) == 2
    assert "none.txt: no such file" in capsys.readouterr().err


class _FakeWorker:
    """A worker process stand-in: each set of processes (a new "ours") decodes at its own
    speed (ours, llama.cpp spinning): 100 / 100, 150 / 100, 120 / 120 tok/s."""
    started: list[_FakeWorker] = []

    def __init__(self, kind, spec, spin=False):
        self.kind, self.spin, self.closed = kind, spin, False
        self.set = sum(w.kind == "ours" for w in self.started) - (kind != "ours")
        self.started.append(self)

    def ask(self, cmd, **_):
        assert not self.closed
        if cmd == "run":
            tps = ([100.0, 150.0, 120.0] if self.kind == "ours" else
                   [100.0, 100.0, 120.0] if self.spin else [50.0] * 3)[self.set]
            return {"ttft_ms": 40.0, "decode_tps": tps, "new_tokens": 64, "prompt_tokens": 48}
        if cmd == "rss":
            return {"peak_rss_mb": 200.0 + self.set}
        assert cmd == "dialogue"
        return {k: {"prompt_tokens": [48], "ttft_ms": [30.0]} for k in ("reuse", "no_reuse")}

    def close(self):
        self.closed = True


def test_processes_pool_the_runs_of_fresh_worker_sets(monkeypatch):
    """--processes 3: three sets of fresh workers one after the other (each closed before the
    next starts), every run pooled, the decode ratio the median of the sets' own ratios (the
    pooled medians' ratio kept beside it), the largest peak RSS."""
    import argparse

    _FakeWorker.started = []
    monkeypatch.setattr(llm_bench, "Worker", _FakeWorker)
    monkeypatch.setattr(llm_bench, "_spec", lambda args: {})
    args = argparse.Namespace(processes=3, runs=2, no_llama_cpp=False, llama_policy="both",
                              batching=[], no_fidelity=True, model="m", threads=2, spin_us=0,
                              step_ops=None, model_dir="d")
    out = llm_bench.bench(args)
    assert len(_FakeWorker.started) == 9 and all(w.closed for w in _FakeWorker.started)
    assert out["decode_ratio_by_process"] == [1.0, 1.5, 1.0]
    assert out["ratios"]["decode_tps"] == 1.0
    assert out["ours"]["decode_tps"] == 120.0     # the median of all 12 (cold and warm)
    assert out["ratios"]["decode_tps_pooled"] == 1.2       # 120 / 100, across the sets
    assert out["ours"]["peak_rss_mb"] == 202.0
    assert out["processes"] == 3


def test_processes_and_runs_must_be_positive(capsys):
    assert llm_bench.main(["--processes", "0"]) == 2
    assert "--processes" in capsys.readouterr().err
