"""A tiny generated encoder model directory (ONNX + tokenizer + meta) for fast NLU tests.

The graph has the same interface as a trained model (``input_ids``, ``attention_mask`` ->
``logits``): each word-level token adds a fixed score vector, so "time" words push
``get_time``, weather words push ``weather``, and everything else pushes ``oos``.
With ``memory_sentences``, the graph also outputs ``embedding`` (the bag of words: one
dimension per vocabulary entry), and the directory gets a ``memory.npz`` of those
sentences and an ``oos_score`` in meta.json (``memory_score``).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

LABELS = ("get_time", "oos", "weather")
WORDS = {"what": (0.5, 0.0, 0.5), "time": (4.0, 0.0, 0.0), "clock": (3.0, 0.0, 0.0),
         "is": (0.2, 0.0, 0.2), "it": (0.2, 0.0, 0.2), "weather": (0.0, 0.0, 4.0),
         "rain": (0.0, 0.0, 3.0), "the": (0.1, 0.1, 0.1), "maybe": (1.0, 0.0, 1.0),
         "poem": (0.0, 4.0, 0.0), "write": (0.0, 2.0, 0.0)}


def write_tiny_model(out: Path, threshold: float = 0.6, intents_yaml: str | None = None,
                     memory_sentences: tuple[str, ...] = (), memory_score: dict | None = None
                     ) -> Path:
    """Write a model directory under ``out`` and return it."""
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    out.mkdir(parents=True, exist_ok=True)
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(WORDS)}}
    table = np.zeros((len(vocab), len(LABELS)), np.float32)
    table[0] = (0.0, 0.5, 0.0)                                  # unknown words lean oos
    for w, scores in WORDS.items():
        table[vocab[w]] = scores
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["per_token"]),           # [1,T,C]
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),                # [1,T,1]
        helper.make_node("Mul", ["per_token", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["logits"], keepdims=0),  # [1,C]
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, len(LABELS)])]
    extra = []
    if memory_sentences:
        nodes += [helper.make_node("Gather", ["bag", "input_ids"], ["per_token_bag"]),
                  helper.make_node("Mul", ["per_token_bag", "mask3"], ["masked_bag"]),
                  helper.make_node("ReduceSum", ["masked_bag", "axis1"], ["embedding"], keepdims=0)]
        outputs.append(helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, len(vocab)]))
        bag = np.eye(len(vocab), dtype=np.float32)
        extra.append(helper.make_tensor("bag", TensorProto.FLOAT, bag.shape, bag.flatten().tolist()))
    graph = helper.make_graph(
        nodes, "tiny_intents",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "T"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "T"])],
        outputs,
        [*extra, helper.make_tensor("table", TensorProto.FLOAT, table.shape, table.flatten().tolist()),
         helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
         helper.make_tensor("axis1", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(out / "model.onnx"))
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(out / "tokenizer.json"))
    meta = {"format": 1, "labels": list(LABELS), "oos_label": "oos", "oos_threshold": threshold,
            "max_tokens": 16, "precision": "fp32", "fit": {"train_s": 0.0}}
    if memory_sentences:
        from edge_runtime.nlu.oos import MEMORY_FILE, NeighbourMemory
        bags = np.zeros((len(memory_sentences), len(vocab)), np.float32)
        for i, sentence in enumerate(memory_sentences):
            for w in sentence.split():
                bags[i, vocab.get(w, 0)] += 1.0
        memory = NeighbourMemory(np.zeros(len(vocab), np.float32), np.eye(len(vocab), dtype=np.float32),
                                 bags / np.linalg.norm(bags, axis=1, keepdims=True))
        memory.save(out / MEMORY_FILE)
        meta["oos_score"] = memory_score or {"margin_mean": 0.0, "margin_std": 1.0,
                                             "nearest_mean": 0.0, "nearest_std": 1.0,
                                             "threshold": -1.0}
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (out / "words.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    if intents_yaml is not None:
        (out / "intents.yaml").write_text(intents_yaml, encoding="utf-8")
    return out


TINY_INTENTS_YAML = """\
version: 1
intents:
  get_time:
    skill: time
    examples: [what time is it, whats the time, tell me the time]
  weather:
    skill: weather
    slots: [numbers]
    examples: [will it rain, whats the weather, weather in two days]
  oos:
    examples: [write a poem, tell me a story, why is the sky blue]
"""
