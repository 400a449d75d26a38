"""The graph pass: a built model's one-row branches, rewritten to use the step ops.

A model built with ``fold_steps`` holds its decoder blocks in ``If`` nodes on ``one_row``
(:meth:`edge_runtime.models.gguf2onnx.graph._Layers.by_rows`): the then-branch runs the decode
step, the else-branch prefill chunks and batched steps. In each then-branch:

* ``GroupQueryAttention`` (packed QKV, rotary, position ids; no window, softcap, bias or sink)
  becomes ``DecodeAttention``;
* ``Split`` → ``Sigmoid`` → ``Mul`` → ``Mul`` → ``AveragePool`` → ``Concat`` (SiLU-gated FFN
  activation and the block means its folded down projection reads) becomes ``GatedMeans``.

Anything else stays as it is, so an op the pass does not recognise keeps onnxruntime's
kernel. The plain ``model.onnx`` is kept: the variant is a second graph over the same weight
file, opened only when the library loads (:meth:`edge_runtime.llm.onnx_engine.OnnxLlmEngine`).
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import onnx
from onnx import helper, numpy_helper

DOMAIN = "edge_runtime"
VARIANT_FILE = "model.step_ops.onnx"


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _attention(node: onnx.NodeProto, head_dim: int) -> onnx.NodeProto | None:
    """The DecodeAttention that does what ``node`` does for one new token, or None."""
    if node.op_type != "GroupQueryAttention" or node.domain != "com.microsoft":
        return None
    a = _attrs(node)
    ins = list(node.input) + [""] * (12 - len(node.input))
    if (a.get("do_rotary", 0) != 1 or a.get("local_window_size", -1) != -1
            or a.get("softcap", 0.0) != 0.0 or a.get("smooth_softmax", 0) != 0
            or a.get("qk_output", 0) != 0 or len(node.output) != 3
            or ins[1] or ins[2] or not all(ins[i] for i in (0, 3, 4, 5, 7, 8, 9))
            or ins[10] or ins[11]):
        return None
    scale = a.get("scale", 0.0) or 1.0 / math.sqrt(head_dim)
    return helper.make_node(
        "DecodeAttention", [ins[0], ins[3], ins[4], ins[5], ins[7], ins[8], ins[9]],
        list(node.output), name=node.name + ".step", domain=DOMAIN,
        num_heads=a["num_heads"], kv_num_heads=a["kv_num_heads"],
        rotary_interleaved=a.get("rotary_interleaved", 0), scale=float(scale))


def _gated_means(concat: onnx.NodeProto, made: dict[str, onnx.NodeProto], uses: Counter,
                 outer: dict[str, onnx.TensorProto]
                 ) -> tuple[onnx.NodeProto, list[onnx.NodeProto]] | None:
    """(GatedMeans, the nodes it replaces) for the chain ending at ``concat``, or None."""
    if concat.op_type != "Concat" or _attrs(concat).get("axis") != -1 or len(concat.input) != 2:
        return None
    y, pooled = concat.input
    pool, mul2 = made.get(pooled), made.get(y)
    if not (pool and pool.op_type == "AveragePool" and pool.input[0] == y
            and mul2 and mul2.op_type == "Mul"):
        return None
    pa = _attrs(pool)
    block = list(pa.get("kernel_shape", []))
    if (len(block) != 1 or list(pa.get("strides", [])) != block or any(pa.get("pads", []))
            or block[0] % 8):
        return None
    mul1 = made.get(mul2.input[0])
    if not (mul1 and mul1.op_type == "Mul"):
        return None
    split, sig = made.get(mul1.input[0]), made.get(mul1.input[1])
    if not (split and split.op_type == "Split" and sig and sig.op_type == "Sigmoid"
            and sig.input[0] == split.output[0] == mul1.input[0]
            and len(split.output) == 2 and mul2.input[1] == split.output[1]
            and _attrs(split).get("axis", 0) == -1 and len(split.input) == 2):
        return None
    sizes = outer.get(split.input[1])
    if sizes is None or len(set(numpy_helper.to_array(sizes).tolist())) != 1:
        return None
    chain = [split, sig, mul1, mul2, pool]
    # every value inside the chain is read only inside it: (gate: sigmoid and mul1; y: the
    # pool and the concat; the rest once)
    expect = {split.output[0]: 2, split.output[1]: 1, sig.output[0]: 1, mul1.output[0]: 1,
              y: 2, pooled: 1}
    if any(uses[v] != n for v, n in expect.items()):
        return None
    node = helper.make_node("GatedMeans", [split.input[0]], [concat.output[0]],
                            name=concat.name + ".step", domain=DOMAIN, block=int(block[0]))
    return node, chain + [concat]


def _rewrite_branch(g: onnx.GraphProto, head_dim: int, outer: dict[str, onnx.TensorProto],
                    counts: Counter) -> None:
    uses: Counter = Counter(i for n in g.node for i in n.input)
    uses.update(o.name for o in g.output)
    made = {o: n for n in g.node for o in n.output}
    replace: dict[int, onnx.NodeProto] = {}
    drop: set[int] = set()
    for n in g.node:
        new = _attention(n, head_dim)
        if new is not None:
            replace[id(n)] = new
            counts["DecodeAttention"] += 1
            continue
        found = _gated_means(n, made, uses, outer)
        if found is not None:
            node, gone = found
            replace[id(n)] = node
            drop.update(id(x) for x in gone[:-1])
            counts["GatedMeans"] += 1
    nodes = [replace.get(id(n), n) for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)


def rewrite(model: onnx.ModelProto, head_dim: int) -> Counter:
    """Rewrite ``model``'s one-row branches in place; returns the ops made, by type."""
    counts: Counter = Counter()
    outer = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type != "If" or list(node.input) != ["one_row"]:
            continue
        for a in node.attribute:
            if a.name == "then_branch":
                _rewrite_branch(a.g, head_dim, outer, counts)
    if counts and not any(o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return counts


def write_variant(model_dir: Path, cfg: dict) -> Counter:
    """Write ``VARIANT_FILE`` beside ``cfg["model_file"]`` (the same weight file); returns
    the ops made (empty: nothing to rewrite, no file written)."""
    model = onnx.load(str(Path(model_dir) / cfg["model_file"]), load_external_data=False)
    counts = rewrite(model, int(cfg["head_dim"]))
    if counts:
        tmp = Path(model_dir) / (VARIANT_FILE + ".tmp")
        onnx.save(model, str(tmp))
        tmp.replace(Path(model_dir) / VARIANT_FILE)
    return counts
