"""Spoken-answer quality check: 20 everyday questions, each with expected keywords.

    python benchmarks/llm_quality.py [--model-dir DIR] [--gguf PATH [--chat-format gemma]]
                                     [--threads 2] [--json]

Scores this engine on a built model (--model-dir) and/or llama.cpp on a GGUF (--gguf; the
way to evaluate a model the ONNX builder cannot convert yet, e.g. Gemma 3 with Q4_K/Q5_0/
Q6_K blocks). Greedy, the runtime's spoken-answer settings (two sentences, 64 tokens).
A question passes when the answer contains any of its keywords as a whole word;
also reported: mean words per answer, answers that loop (a 4-word n-gram 3+ times).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

SYSTEM = ("You are a helpful voice assistant. Answer in one to three short, plain sentences "
          "that sound natural when spoken aloud.")
QUESTIONS: list[tuple[str, list[str]]] = [
    ("What is the capital of France?", ["paris"]),
    ("How many days are there in a week?", ["seven", "7"]),
    ("What colour is the sky on a clear day?", ["blue"]),
    ("What do bees make?", ["honey"]),
    ("What is the boiling point of water in Celsius?", ["100", "hundred"]),
    ("How many legs does a spider have?", ["eight", "8"]),
    ("What is the largest planet in our solar system?", ["jupiter"]),
    ("Which animal is known as the king of the jungle?", ["lion"]),
    ("What do plants need from the sun to make food?", ["light", "sunlight", "energy"]),
    ("What is frozen water called?", ["ice"]),
    ("How many hours are in a day?", ["24", "twenty-four", "twenty four"]),
    ("What is the opposite of hot?", ["cold"]),
    ("Who wrote Romeo and Juliet?", ["shakespeare"]),
    ("What gas do humans need to breathe?", ["oxygen"]),
    ("What is the chemical symbol for water?", ["h2o"]),
    ("How many continents are there?", ["seven", "7"]),
    ("What fruit is yellow and curved?", ["banana"]),
    ("What should I wear when it is raining?", ["umbrella", "raincoat", "coat", "jacket", "boots"]),
    ("What is two plus three?", ["five", "5"]),
    ("In which season do leaves fall from the trees?", ["autumn", "fall"]),
]


def _matches(answer: str, keys: list[str]) -> bool:
    """Any keyword as a whole word (numbers whole too: "7" does not match "7,981")."""
    words = set(re.findall(r"[a-z0-9']+(?:,\d+)*", answer.lower()))
    return any((k in answer.lower()) if " " in k else (k in words) for k in keys)


def _loops(text: str, n: int = 4) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return max(grams.values(), default=0) >= 3


def _ours(model_dir: Path, threads: int):
    from edge_runtime.llm import load_engine
    from edge_runtime.types import GenerationParams, Message

    eng = load_engine(model_dir, providers=("cpu",), threads=threads)
    p = GenerationParams(temperature=0.0, max_new_tokens=64, stop_at_sentence=2)
    return lambda q: "".join(eng.generate([Message("system", SYSTEM), Message("user", q)], p))


def _llama(gguf: Path, threads: int, chat_format: str | None):
    from llama_cpp import Llama

    from edge_runtime.llm.llama_cpp_engine import without_amx
    without_amx()        # (llama.cpp#20824: its AMX path crashes on some CPUs)

    llm = Llama(str(gguf), n_threads=threads, n_ctx=1024, verbose=False,
                chat_format=None if chat_format == "qa" else chat_format)
    system_role = chat_format != "gemma"   # Gemma has no system turn: fold it into the user's

    def ask(q: str) -> str:
        if chat_format == "qa":   # a base model: plain completion, one line
            out = llm.create_completion(f"Question: {q}\nAnswer:", temperature=0.0, top_k=1,
                                        max_tokens=64, repeat_penalty=1.0,
                                        stop=["\n", "Question:"])
            return out["choices"][0]["text"] or ""
        msgs = ([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
                if system_role else [{"role": "user", "content": f"{SYSTEM}\n\n{q}"}])
        out = llm.create_chat_completion(msgs, temperature=0.0, top_k=1, max_tokens=64,
                                         repeat_penalty=1.0)
        return out["choices"][0]["message"]["content"] or ""
    return ask


def score(ask) -> dict:
    passed, words, loops, answers, t0 = 0, 0, 0, [], time.perf_counter()
    for q, keys in QUESTIONS:
        a = ask(q)
        ok = _matches(a, keys)
        passed += ok
        words += len(a.split())
        loops += _loops(a)
        answers.append({"q": q, "a": a.strip(), "ok": ok})
    n = len(QUESTIONS)
    return {"pass_rate": round(passed / n, 3), "passed": passed, "questions": n,
            "mean_words": round(words / n, 1), "looping_answers": loops,
            "seconds": round(time.perf_counter() - t0, 1), "answers": answers}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--gguf", type=Path)
    ap.add_argument("--chat-format", default=None,
                    help="llama.cpp chat format (e.g. gemma), or qa: 'Question: ..\\nAnswer:' "
                         "completion for a base model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = {}
    if args.model_dir:
        out["ours"] = score(_ours(args.model_dir, args.threads))
    if args.gguf:
        out["llama_cpp"] = score(_llama(args.gguf, args.threads, args.chat_format))
    if not out:
        ap.error("pass --model-dir and/or --gguf")
    if args.json:
        print(json.dumps(out))
    else:
        for k, r in out.items():
            print(f"{k}: {r['passed']}/{r['questions']} passed, {r['mean_words']} words/answer, "
                  f"{r['looping_answers']} looping, {r['seconds']} s")
            for a in r["answers"]:
                print(f"  [{'x' if a['ok'] else ' '}] {a['q']} -> {a['a'][:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
