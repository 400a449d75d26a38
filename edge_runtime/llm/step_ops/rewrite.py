"""The graph pass: a built model's one-row branches, rewritten to use the step ops.

A model built with ``fold_steps`` holds its decoder blocks in ``If`` nodes on ``one_row``
(:meth:`edge_runtime.models.gguf2onnx.graph._Layers.by_rows`): the then-branch runs the decode
step, the else-branch prefill chunks and batched steps. A folded projection reads its input
with the input's block means appended (``AveragePool`` + ``Concat``); in each then-branch:

* ``GroupQueryAttention`` (packed QKV, rotary, position ids; no window, softcap, bias or sink)
  becomes ``DecodeAttention``, which appends the block means itself when a folded output
  projection reads it;
* ``SkipSimplifiedLayerNormalization`` followed by the block means becomes ``SkipNormMeans``;
* ``Split`` → ``Sigmoid`` → ``Mul`` → ``Mul`` (the SiLU-gated FFN activation) followed by the
  block means becomes ``GatedMeans``.

Anything else stays as it is, so an op the pass does not recognise keeps onnxruntime's
kernel. The plain ``model.onnx`` is kept: the variant is a second graph over the same weight
file, opened only when the library loads (:meth:`edge_runtime.llm.onnx_engine.OnnxLlmEngine`).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import onnx
from onnx import helper, numpy_helper

DOMAIN = "edge_runtime"
VARIANT_FILE = "model.step_ops.onnx"


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Branch:
    """A then-branch's nodes with who reads each value."""

    def __init__(self, g: onnx.GraphProto) -> None:
        self.readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for n in g.node:
            for i in n.input:
                if i:
                    self.readers[i].append(n)
        self.outputs = {o.name for o in g.output}

    def only_read_by(self, value: str, *nodes: onnx.NodeProto) -> bool:
        return value not in self.outputs and \
            sorted(map(id, self.readers[value])) == sorted(map(id, nodes))

    def means_of(self, y: str) -> tuple[onnx.NodeProto, onnx.NodeProto, int] | None:
        """(AveragePool, Concat, block) when ``y`` is read only to append its block means
        (``Concat([y, AveragePool(y)], axis=-1)``), else None."""
        pools = [n for n in self.readers[y] if n.op_type == "AveragePool"]
        cats = [n for n in self.readers[y] if n.op_type == "Concat"]
        if len(pools) != 1 or len(cats) != 1:
            return None
        pool, cat = pools[0], cats[0]
        pa = _attrs(pool)
        block = list(pa.get("kernel_shape", []))
        if (list(cat.input) != [y, pool.output[0]] or _attrs(cat).get("axis") != -1
                or len(block) != 1 or list(pa.get("strides", [])) != block
                or any(pa.get("pads", [])) or block[0] % 8
                or not self.only_read_by(y, pool, cat)
                or not self.only_read_by(pool.output[0], cat)):
            return None
        return pool, cat, int(block[0])


def _attention(node: onnx.NodeProto, head_dim: int, br: _Branch
               ) -> tuple[onnx.NodeProto, list[onnx.NodeProto]] | None:
    """(the DecodeAttention that does what ``node`` does for one new token, the nodes it
    replaces besides ``node``), or None."""
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
    outs, gone, block = list(node.output), [], 0
    means = br.means_of(outs[0])
    if means is not None:
        pool, cat, block = means
        outs[0], gone = cat.output[0], [pool, cat]
    new = helper.make_node(
        "DecodeAttention", [ins[0], ins[3], ins[4], ins[5], ins[7], ins[8], ins[9]], outs,
        name=node.name + ".step", domain=DOMAIN, num_heads=a["num_heads"],
        kv_num_heads=a["kv_num_heads"], rotary_interleaved=a.get("rotary_interleaved", 0),
        scale=float(scale), means_block=block)
    return new, gone


def _norm_means(node: onnx.NodeProto, br: _Branch
                ) -> tuple[onnx.NodeProto, list[onnx.NodeProto]] | None:
    """(SkipNormMeans, the nodes it replaces besides ``node``) for a
    SkipSimplifiedLayerNormalization whose output only feeds its block means, or None."""
    if (node.op_type != "SkipSimplifiedLayerNormalization" or len(node.input) != 3
            or any(node.output[1:3])):
        return None
    means = br.means_of(node.output[0])
    if means is None:
        return None
    pool, cat, block = means
    total = node.output[3] if len(node.output) > 3 and node.output[3] else node.name + ".sum"
    new = helper.make_node("SkipNormMeans", list(node.input), [cat.output[0], total],
                           name=node.name + ".step", domain=DOMAIN, block=block,
                           epsilon=float(_attrs(node).get("epsilon", 1e-12)))
    return new, [pool, cat]


def _gated_means(split: onnx.NodeProto, br: _Branch, outer: dict[str, onnx.TensorProto]
                 ) -> tuple[onnx.NodeProto, list[onnx.NodeProto]] | None:
    """(GatedMeans, the nodes it replaces besides ``split``) for the SiLU-gated activation
    that starts at ``split`` and ends in block means, or None."""
    if (split.op_type != "Split" or len(split.output) != 2 or len(split.input) != 2
            or _attrs(split).get("axis", 0) != -1):
        return None
    sizes = outer.get(split.input[1])
    if sizes is None or len(set(numpy_helper.to_array(sizes).tolist())) != 1:
        return None
    gate, up = split.output
    sigs = [n for n in br.readers[gate] if n.op_type == "Sigmoid"]
    muls = [n for n in br.readers[gate] if n.op_type == "Mul"]
    if len(sigs) != 1 or len(muls) != 1 or list(muls[0].input) != [gate, sigs[0].output[0]]:
        return None
    sig, mul1 = sigs[0], muls[0]
    mul2 = br.readers[mul1.output[0]][0] if br.readers[mul1.output[0]] else None
    if not (mul2 is not None and mul2.op_type == "Mul"
            and list(mul2.input) == [mul1.output[0], up]
            and br.only_read_by(gate, sig, mul1) and br.only_read_by(up, mul2)
            and br.only_read_by(sig.output[0], mul1) and br.only_read_by(mul1.output[0], mul2)):
        return None
    means = br.means_of(mul2.output[0])
    if means is None:
        return None
    pool, cat, block = means
    new = helper.make_node("GatedMeans", [split.input[0]], [cat.output[0]],
                           name=split.name + ".step", domain=DOMAIN, block=block)
    return new, [sig, mul1, mul2, pool, cat]


def _rewrite_branch(g: onnx.GraphProto, head_dim: int, outer: dict[str, onnx.TensorProto],
                    counts: Counter) -> None:
    """Each match's op takes the place of its first node (its inputs are made by then, and
    every reader of what it makes comes later); the match's other nodes go."""
    br = _Branch(g)
    replace: dict[int, onnx.NodeProto] = {}
    drop: set[int] = set()
    for n in g.node:
        if id(n) in drop:
            continue
        found = (_attention(n, head_dim, br) or _norm_means(n, br)
                 or _gated_means(n, br, outer))
        if found is not None:
            new, gone = found
            replace[id(n)] = new
            drop.update(id(x) for x in gone)
            counts[new.op_type] += 1
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
