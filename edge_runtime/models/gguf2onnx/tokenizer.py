"""Build a Hugging Face ``tokenizers`` tokenizer.json from the GGUF vocab and merges.

GGUF ``tokenizer.ggml.model == "gpt2"`` is byte-level BPE. The pre-tokenizer mirrors
llama.cpp's regexes for ``tokenizer.ggml.pre``: for "smollm" (and starcoder-like models)
digits are split one by one (``\\p{N}``) before the GPT-2 pattern, which is
``Digits(individual_digits=True)`` followed by ``ByteLevel(use_regex=True)``.
Control tokens (GGUF token type 3) become special added tokens, so ``<|im_start|>`` in a
rendered chat template encodes to its single id.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ...errors import ModelLoadError
from ...llm.text_stream import byte_level_to_bytes
from .gguf_weights import GgufModel

log = logging.getLogger(__name__)

CONTROL, USER_DEFINED = 3, 4
_DIGITS_FIRST = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}
VERIFY_STRINGS = (
    "Hello world! Why is the sky blue?",
    "<|im_start|>user\nWhat's 12345 + 6789?<|im_end|>\n<|im_start|>assistant\n",
    "  indented\tcode() {return x**2;}  \n\n",
    "Ünïcödé café — naïve 東京 😀",
)


def token_bytes(tokens: list[str], token_types: list[int]) -> list[bytes]:
    """The raw bytes each token id stands for (control tokens: their literal text)."""
    return [tok.encode("utf-8") if token_types and token_types[i] in (CONTROL, USER_DEFINED)
            else byte_level_to_bytes(tok) for i, tok in enumerate(tokens)]


def build_tokenizer(model: GgufModel):
    """A ``tokenizers.Tokenizer`` equivalent to the GGUF's byte-level BPE."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    if model.metadata.get("tokenizer_model", "gpt2") not in ("gpt2",):
        raise ModelLoadError("only byte-level BPE (gpt2) GGUF tokenizers are supported",
                             hint="use a GGUF whose tokenizer.ggml.model is gpt2")
    vocab = {tok: i for i, tok in enumerate(model.tokens)}
    merges = [tuple(m.split(" ", 1)) for m in model.merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if model.metadata.get("tokenizer_pre", "") in _DIGITS_FIRST:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, special=True, normalized=False)
                for i, t in enumerate(model.tokens)
                if model.token_types and model.token_types[i] in (CONTROL, USER_DEFINED)]
    tok.add_special_tokens(specials)
    return tok


def reference_bpe_ids(piece: str, ranks: dict[tuple[str, str], int],
                      vocab: dict[str, int]) -> list[int]:
    """Plain-Python BPE of one pre-tokenized piece, given in byte-level characters."""
    word = list(piece)
    while len(word) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), j) for j, (a, b) in enumerate(zip(word, word[1:]))]
        rank, j = min(pairs)
        if rank == 1 << 30:
            break
        word = word[:j] + [word[j] + word[j + 1]] + word[j + 2:]
    return [vocab[w] for w in word]


def verify_tokenizer(tok, model: GgufModel, strings: tuple[str, ...] = VERIFY_STRINGS) -> int:
    """Check tokenizer ids against a plain BPE over the GGUF merges and the GGUF's special
    token ids; check byte-exact round trips. Returns the number of strings checked."""
    vocab = {t: i for i, t in enumerate(model.tokens)}
    ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(model.merges)}
    specials = {t: i for i, t in enumerate(model.tokens)
                if model.token_types and model.token_types[i] in (CONTROL, USER_DEFINED)}
    tb = token_bytes(model.tokens, model.token_types)
    for s in strings:
        enc = tok.encode(s, add_special_tokens=False)
        expected: list[int] = []
        for piece, special in _split_specials(s, specials):
            if special:
                expected.append(specials[piece])
                continue
            for sub, _ in tok.pre_tokenizer.pre_tokenize_str(piece):
                expected += reference_bpe_ids(sub, ranks, vocab)
        if enc.ids != expected:
            raise ModelLoadError(f"tokenizer mismatch on {s!r}: {enc.ids[:12]} vs {expected[:12]}",
                                 hint="the GGUF tokenizer settings are not supported")
        if b"".join(tb[i] for i in enc.ids) != s.encode("utf-8"):
            raise ModelLoadError(f"tokenizer does not round-trip {s!r}",
                                 hint="the GGUF tokenizer settings are not supported")
    return len(strings)


def _split_specials(s: str, specials: dict[str, int]) -> list[tuple[str, bool]]:
    """Split ``s`` into (text, is_special) runs, longest special token first."""
    out: list[tuple[str, bool]] = []
    names = sorted(specials, key=len, reverse=True)
    i, start = 0, 0
    while i < len(s):
        hit = next((n for n in names if s.startswith(n, i)), None)
        if hit:
            if start < i:
                out.append((s[start:i], False))
            out.append((hit, True))
            i += len(hit)
            start = i
        else:
            i += 1
    if start < len(s):
        out.append((s[start:], False))
    return out


def write_tokenizer(model: GgufModel, out_dir: Path) -> Path:
    """Write tokenizer.json and verify the file as the runtime will load it.

    Merges are written as "a b" strings (readable by tokenizers >= 0.19 as well as newer
    releases; byte-level tokens never contain a space).
    """
    from tokenizers import Tokenizer

    path = Path(out_dir) / "tokenizer.json"
    data = json.loads(build_tokenizer(model).to_str())
    merges = data["model"].get("merges", [])
    data["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in merges]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    n = verify_tokenizer(Tokenizer.from_file(str(path)), model)
    log.info("tokenizer.json written (%d tokens, %d merges, verified on %d strings)",
             len(model.tokens), len(model.merges), n)
    return path
