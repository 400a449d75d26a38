"""Worker processes for ``llm_bench``: one engine per process (clean peak RSS), driven by
one JSON command per stdin line, one JSON answer per stdout line.

    python benchmarks/llm_bench_workers.py ours|llama_cpp SPEC_JSON

Commands: {"cmd": "run", "cold": bool} -> ttft_ms, decode_tps, new_tokens;
{"cmd": "rss"} -> peak_rss_mb (VmHWM); {"cmd": "fidelity"} -> top1_agreement (vs the
reference argmax file in the spec); {"cmd": "batch", "n": N, "batched": bool, "seconds": S} -> tps
(ours only); {"cmd": "dialogue", "turns": [...]} -> TTFT per turn with and without
KV reuse (ours only); {"cmd": "quit"}.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import numpy as np


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    import resource
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Ours:
    def __init__(self, spec: dict) -> None:
        from edge_runtime.llm import load_engine
        from edge_runtime.types import GenerationParams, Message

        self.spec = spec
        ops = spec.get("step_ops")
        self.eng = load_engine(Path(spec["model_dir"]), providers=("cpu",),
                               threads=spec["threads"], spin_us=spec.get("spin_us", 0),
                               step_ops=Path(ops) if ops else None)
        self.Message = Message
        self.params = GenerationParams(temperature=0.0, repetition_penalty=1.0,
                                       stop_at_sentence=0, max_new_tokens=spec["decode_tokens"])
        self.msgs = [Message(r, c) for r, c in spec["messages"]]
        self._batcher = None
        self.warm = 0
        self.dialogue_params = GenerationParams(temperature=0.0, max_new_tokens=48,
                                                stop_at_sentence=2)

    def run(self, cold: bool) -> dict:
        self.eng.reuse_prefix = not cold
        msgs = self.msgs
        if cold:
            self.eng._runner.reset()
        else:
            self.warm += 1
            warm = self.spec["warm_messages"]
            system, question = warm[self.warm % len(warm)]
            msgs = [self.Message("system", system), self.Message("user", question)]
        list(self.eng.generate(msgs, self.params))
        st = self.eng.last_stats
        return {"ttft_ms": st["ttft_s"] * 1e3, "decode_tps": st["decode_tok_s"],
                "new_tokens": st["new_tokens"], "prompt_tokens": st["prompt_tokens"]}

    def fidelity(self) -> dict:
        from edge_runtime.models.gguf2onnx.reference import onnx_logits

        ref = np.load(self.spec["reference_argmax"])
        got = onnx_logits(Path(self.spec["model_dir"]), self.spec["fidelity_ids"]).argmax(-1)
        return {"top1_agreement": float(np.mean(ref == got))}

    def batch(self, n: int, batched: bool, seconds: float) -> dict:
        """Sustained aggregate tok/s of ``n`` sessions kept in flight for ``seconds``: each
        thread asks its questions back to back (answers end at different lengths, so a
        one-shot burst would measure the longest answer's tail, not the batch); at the end
        every answer in flight is cancelled, so the figure has no drain tail of fewer than
        ``n`` sessions (``drain_s``: the time from the end to the last thread's return)."""
        from edge_runtime.types import CancelToken

        if batched and self._batcher is None:
            from edge_runtime.llm.batching import BatchingEngine
            self._batcher = BatchingEngine(self.eng, max_batch=16, context_tokens=1024)
        eng = self._batcher if batched else self.eng
        self.eng.reuse_prefix = True
        qs = self.spec["questions"]
        system = self.msgs[0]
        tokens = [0] * n
        stop = CancelToken()

        def worker(i: int) -> None:
            k = i
            while not stop.cancelled:
                msgs = [system, self.Message("user", qs[k % len(qs)])]
                list(eng.generate(msgs, self.params, stop))
                tokens[i] += eng.last_stats["new_tokens"]
                k += n

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.cancel()
        t_end = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        out = {"tps": sum(tokens) / wall, "tokens": sum(tokens), "wall_s": wall,
               "drain_s": wall - (t_end - t0)}
        if batched:
            out["steps_by_size"] = dict(sorted(self._batcher.controller.sizes.items()))
            self._batcher.controller.sizes.clear()
        return out

    def dialogue(self, turns: list[str]) -> dict:
        """TTFT per turn of one multi-turn conversation (ConversationStore), with the KV of
        the previous turns reused and without (each prompt prefilled from scratch)."""
        from edge_runtime.llm.conversation import ConversationStore

        out = {}
        for reuse in (True, False):
            self.eng.reuse_prefix = reuse
            self.eng._runner.reset()
            store = ConversationStore(self.eng.prompt_tokens, max_prompt_tokens=1024)
            ttft, prompt = [], []
            for text in turns:
                msgs = store.messages("bench", self.msgs[0].content, text)
                answer = "".join(self.eng.generate(msgs, self.dialogue_params))
                store.add_answer("bench", answer)
                ttft.append(self.eng.last_stats["ttft_s"] * 1e3)
                prompt.append(self.eng.last_stats["prompt_tokens"])
            out["reuse" if reuse else "no_reuse"] = {"ttft_ms": ttft, "prompt_tokens": prompt}
        return out


class LlamaCpp:
    def __init__(self, spec: dict) -> None:
        from llama_cpp import Llama

        from edge_runtime.llm.llama_cpp_engine import without_amx
        without_amx()        # (llama.cpp#20824: its AMX path crashes on some CPUs)

        self.spec = spec
        # flash_attn: llama.cpp's best setting here (llama-cpp-python defaults it off): decode
        # 112 -> 120 tok/s on SmolLM2-135M, 48.8 -> 50.6 on Gemma 3 270M, first token 5-10 %
        # sooner (2 threads, spinning, interleaved in one process, medians of 8)
        self.llm = Llama(spec["gguf"], n_threads=spec["threads"],
                         n_threads_batch=spec["threads"], n_ctx=spec["n_ctx"], verbose=False,
                         flash_attn=True)
        self.ids = spec["prompt_ids"]
        self.stop = set(spec["stop_ids"])
        self.warm = 0

    def run(self, cold: bool) -> dict:
        ids = self.ids
        if cold:
            self.llm.reset()
        else:
            self.warm += 1
            ids = self.spec["warm_prompt_ids"][self.warm % len(self.spec["warm_prompt_ids"])]
        n, t_first = 0, None
        t0 = time.perf_counter()
        for tok in self.llm.generate(ids, top_k=1, temp=0.0, repeat_penalty=1.0):
            n += 1
            if t_first is None:
                t_first = time.perf_counter()
            if tok in self.stop or n >= self.spec["decode_tokens"]:
                break
        t_end = time.perf_counter()
        return {"ttft_ms": (t_first - t0) * 1e3,
                "decode_tps": (n - 1) / (t_end - t_first) if n > 1 else None,
                "new_tokens": n, "prompt_tokens": len(ids)}

    def fidelity(self) -> dict:
        from llama_cpp import Llama

        ids = self.spec["fidelity_ids"]
        del self.llm
        llm = Llama(self.spec["gguf"], n_threads=self.spec["threads"], logits_all=True,
                    n_ctx=max(512, len(ids) + 8), verbose=False)
        llm.eval(ids)
        got = np.asarray(llm.scores[:len(ids)]).argmax(-1)
        ref = np.load(self.spec["reference_argmax"])
        return {"top1_agreement": float(np.mean(ref == got))}


def main() -> int:
    kind, spec = sys.argv[1], json.loads(sys.argv[2])
    w = Ours(spec) if kind == "ours" else LlamaCpp(spec)
    w.run(cold=True)   # warm-up: first-call allocations and page-ins
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        c = json.loads(line)
        if c["cmd"] == "quit":
            break
        if c["cmd"] == "run":
            out = w.run(c["cold"])
        elif c["cmd"] == "rss":
            out = {"peak_rss_mb": peak_rss_mb()}
        elif c["cmd"] == "fidelity":
            out = w.fidelity()
        elif c["cmd"] == "dialogue":
            out = w.dialogue(c["turns"])
        else:
            out = w.batch(c["n"], c["batched"], c["seconds"])
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
