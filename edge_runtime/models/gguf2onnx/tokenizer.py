"""Build a Hugging Face ``tokenizers`` tokenizer.json from the GGUF vocab and merges.

GGUF ``tokenizer.ggml.model == "gpt2"`` is byte-level BPE. The pre-tokenizer mirrors
llama.cpp's regexes for ``tokenizer.ggml.pre``: for "smollm" (and starcoder-like models)
digits are split one by one (``\\p{N}``) before the GPT-2 pattern, which is
``Digits(individual_digits=True)`` followed by ``ByteLevel(use_regex=True)``.
Control tokens (GGUF token type 3) become special added tokens, so ``<|im_start|>`` in a
rendered chat template encodes to its single id.

``tokenizer.ggml.model == "llama"`` is SentencePiece BPE (Gemma, Llama 2): llama.cpp merges
the adjacent pair whose joined piece has the highest score. The equivalent ``tokenizers``
BPE gets one merge per (left, right) split of every piece, ranked by the piece's score (as
transformers' SentencePieceExtractor does), byte fallback to ``<0xXX>`` tokens, spaces as
``▁`` and no pre-tokenizer; :func:`spm_reference_ids` is llama.cpp's algorithm, used to
verify the result.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ...errors import ModelLoadError
from ...llm.text_stream import byte_level_to_bytes, spm_piece_to_bytes
from .gguf_weights import GgufModel

log = logging.getLogger(__name__)

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6
SPACE = "\u2581"
_DIGITS_FIRST = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}
VERIFY_STRINGS = (
    "Hello world! Why is the sky blue?",
    "<|im_start|>user\nWhat's 12345 + 6789?<|im_end|>\n<|im_start|>assistant\n",
    "  indented\tcode() {return x**2;}  \n\n",
    "Ünïcödé café — naïve 東京 😀",
)


def token_bytes(tokens: list[str], token_types: list[int], kind: str = "gpt2") -> list[bytes]:
    """The raw bytes each token id stands for (control tokens: their literal text)."""
    if kind == "llama":
        return [spm_piece_to_bytes(tok) for tok in tokens]
    return [tok.encode("utf-8") if token_types and token_types[i] in (CONTROL, USER_DEFINED)
            else byte_level_to_bytes(tok) for i, tok in enumerate(tokens)]


def _is_normal(model: GgufModel, i: int) -> bool:
    return not model.token_types or model.token_types[i] == NORMAL


def spm_merges(model: GgufModel) -> list[tuple[str, str]]:
    """BPE merges equivalent to score-ordered SentencePiece merging."""
    vocab = {t: i for i, t in enumerate(model.tokens) if _is_normal(model, i)}
    found = []
    for piece, i in vocab.items():
        score = model.scores[i]
        local = [(piece[:j], piece[j:]) for j in range(1, len(piece))
                 if piece[:j] in vocab and piece[j:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        found += [(-score, n, lr) for n, lr in enumerate(local)]
    found.sort(key=lambda x: (x[0], vocab[x[2][0] + x[2][1]], x[1]))
    return [lr for _, _, lr in found]


def spm_reference_ids(text: str, model: GgufModel, vocab: dict[str, int]) -> list[int]:
    """llama.cpp's SentencePiece BPE of one text fragment (no special tokens in it)."""
    if model.metadata.get("add_space_prefix"):
        text = " " + text
    sym = list(text.replace(" ", SPACE))
    while len(sym) > 1:
        best = None
        for j in range(len(sym) - 1):
            i = vocab.get(sym[j] + sym[j + 1])
            if i is not None and (best is None or model.scores[i] > best[0]):
                best = (model.scores[i], j)
        if best is None:
            break
        j = best[1]
        sym[j:j + 2] = [sym[j] + sym[j + 1]]
    ids: list[int] = []
    for piece in sym:
        if piece in vocab:
            ids.append(vocab[piece])
        else:
            ids += [model.tokens.index(f"<0x{b:02X}>") for b in piece.encode("utf-8")]
    return ids


def _build_spm(model: GgufModel):
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

    vocab: dict[str, int] = {}
    for i, t in enumerate(model.tokens):
        vocab.setdefault(t, i)
    unk = next((t for i, t in enumerate(model.tokens) if model.token_types
                and model.token_types[i] == 2), None)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=spm_merges(model), unk_token=unk,
                               fuse_unk=True, byte_fallback=True))
    norms: list = [normalizers.Replace(" ", SPACE)]
    dec: list = [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if model.metadata.get("add_space_prefix"):
        norms.insert(0, normalizers.Prepend(SPACE))
        dec.append(decoders.Strip(" ", 1, 0))
    tok.normalizer = normalizers.Sequence(norms)
    tok.decoder = decoders.Sequence(dec)
    types = model.token_types
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for i, t in enumerate(model.tokens) if types and types[i] == CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for i, t in enumerate(model.tokens) if types and types[i] == USER_DEFINED])
    return tok


def merge_pair(merge: str) -> tuple[str, str]:
    """One GGUF BPE merge (``"a b"``) as its pair of symbols."""
    left, sep, right = merge.partition(" ")
    if not sep:
        raise ModelLoadError(f"GGUF tokenizer merge {merge!r} is not two symbols separated by "
                             "a space", hint="the GGUF's tokenizer.ggml.merges is malformed")
    return left, right


def build_tokenizer(model: GgufModel):
    """A ``tokenizers.Tokenizer`` equivalent to the GGUF's byte-level BPE."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    kind = model.metadata.get("tokenizer_model", "gpt2")
    if kind == "llama":
        return _build_spm(model)
    if kind not in ("gpt2",):
        raise ModelLoadError("only byte-level BPE (gpt2) and SentencePiece (llama) GGUF "
                             "tokenizers are supported",
                             hint="use a GGUF whose tokenizer.ggml.model is gpt2 or llama")
    vocab = {tok: i for i, tok in enumerate(model.tokens)}
    merges = [merge_pair(m) for m in model.merges]
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
        pairs = [(ranks.get((a, b), 1 << 30), j)
                 for j, (a, b) in enumerate(zip(word, word[1:], strict=False))]
        rank, j = min(pairs)
        if rank == 1 << 30:
            break
        word = word[:j] + [word[j] + word[j + 1]] + word[j + 2:]
    return [vocab[w] for w in word]


def verify_tokenizer(tok, model: GgufModel, strings: tuple[str, ...] = VERIFY_STRINGS) -> int:
    """Check tokenizer ids against a plain BPE over the GGUF merges and the GGUF's special
    token ids; check byte-exact round trips. Returns the number of strings checked."""
    kind = model.metadata.get("tokenizer_model", "gpt2")
    spm = kind == "llama"
    vocab = {t: i for i, t in enumerate(model.tokens) if not spm or _is_normal(model, i)}
    ranks = {merge_pair(m): r for r, m in enumerate(model.merges)}
    specials = {t: i for i, t in enumerate(model.tokens)
                if model.token_types and model.token_types[i] in (CONTROL, USER_DEFINED)}
    tb = token_bytes(model.tokens, model.token_types, kind)
    for s in strings:
        enc = tok.encode(s, add_special_tokens=False)
        expected: list[int] = []
        want = b""
        for piece, special in _split_specials(s, specials):
            if special:
                expected.append(specials[piece])
                want += piece.encode("utf-8")
                continue
            if spm:
                expected += spm_reference_ids(piece, model, vocab)
                want += ((" " if model.metadata.get("add_space_prefix") else "")
                         + piece).encode("utf-8")
                continue
            want += piece.encode("utf-8")
            for sub, _ in tok.pre_tokenizer.pre_tokenize_str(piece):
                expected += reference_bpe_ids(sub, ranks, vocab)
        if enc.ids != expected:
            raise ModelLoadError(f"tokenizer mismatch on {s!r}: {enc.ids[:12]} vs {expected[:12]}",
                                 hint="the GGUF tokenizer settings are not supported")
        if b"".join(tb[i] for i in enc.ids) != want:
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
