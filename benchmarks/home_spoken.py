"""Spoken home commands: WER and understanding, with and without biasing the recognizer.

    python -m benchmarks home_spoken [--hass DIR] [--voices piper,espeak] [--limit N]
                                     [--audio DIR] [--home MODEL] [--json]

Every sentence of a Home Assistant-format test folder (default ``tests/data/hass_eval``;
``--limit N``: the first N, in file order) is rendered by Piper (en_US joe medium,
``deterministic=True``: the same samples every run) and by espeak-ng (en-us, 160 wpm),
then heard by faster-whisper tiny.en (int8, 2 threads, ``asr.whisper``; beam ``asr.beam_size``
and ``asr.nbest`` hypotheses unless ``--beam``/``--nbest``, the transcript chosen among them
as the daemon does, ``asr.nbest.choose``; ``best_only`` scores the beam's best alone) twice: as
is, and biased (``asr.bias.CommandVocabulary``: the command words plus the test home's area
and entity names as Whisper's prompt). Each transcript is understood by the home model
(``HomeModel``, the daemon's home lists = the test file's; with the repair of misheard
names against those lists, and without it: ``no_repair``; a list item or search heard less
surely than ``asr.unsure_below`` is asked back as the daemon does, and ``trusting`` scores
without that check) and by hassil on the pinned
templates, scored as ``nlu eval --hass`` does: intent accuracy, exact slots, wrong-action
rate; plus WER against the sentence. Audio is
kept in ``--audio`` (default ``~/.cache/edge-runtime/bench-home-spoken``) so a rerun only
decodes. Accuracy and WER are counts: they do not depend on the box's load.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "hass_eval"
AUDIO_DIR = Path("~/.cache/edge-runtime/bench-home-spoken").expanduser()


def render(text: str, voice: str, tts, folder: Path) -> np.ndarray:
    from benchmarks.voice_data import espeak_samples, piper_samples
    from edge_runtime.audio.format import load_audio, write_wav

    key = hashlib.sha256(f"{voice}\n{text}".encode()).hexdigest()[:16]
    path = folder / f"{voice}-{key}.wav"
    if not path.is_file():
        x = piper_samples(tts, text) if voice == "piper" else espeak_samples(text)
        if x is None:
            raise SystemExit("espeak-ng is not installed: apt-get install espeak-ng, "
                             "or --voices piper")
        lead = np.zeros(int(0.3 * 16_000), np.float32)
        folder.mkdir(parents=True, exist_ok=True)
        write_wav(path, np.concatenate([lead, x, lead]), 16_000)
    return load_audio(path, max_seconds=60.0)


def vocabulary(home):
    from edge_runtime.asr.bias import CommandVocabulary
    return CommandVocabulary.of([n for n, _ in home.entities],
                                [*home.areas.values(), *home.floors.values()])


def run(args) -> dict:
    from edge_runtime.asr.wer import word_errors
    from edge_runtime.asr.whisper import WhisperAsr
    from edge_runtime.asr.nbest import choose
    from edge_runtime.config import AsrConfig, NluConfig
    from edge_runtime.nlu.home.model import OTHER, HomeModel, doubted
    from edge_runtime.voice.stack import unsure_words
    from edge_runtime.nlu.train.home.build import build_default
    from edge_runtime.nlu.train.home.hass_eval import Case, Hassil, load_cases, score
    from edge_runtime.tts.piper import PiperTts

    cases = load_cases(args.hass)[:args.limit or None]
    voices = [v for v in args.voices.split(",") if v]
    model = HomeModel(build_default(NluConfig(home_dir=args.home or "")))
    hassil = Hassil()
    tts = PiperTts(None, deterministic=True) if "piper" in voices else None
    asr_cfg = AsrConfig()
    beam = args.beam or asr_cfg.beam_size
    nbest = min(args.nbest or asr_cfg.nbest, beam)
    asr = WhisperAsr(None, threads=args.threads, beam_size=beam, nbest=nbest)
    views: dict[int, HomeModel] = {}
    report: dict = {"sentences": len(cases), "voices": voices, "source": str(args.hass),
                    "beam_size": beam, "nbest": nbest, "nbest_margin": asr_cfg.nbest_margin,
                    "nbest_min_confidence": asr_cfg.nbest_min_confidence,
                    "unsure_below": asr_cfg.unsure_below}
    for bias in {"plain": (False,), "biased": (True,), "both": (False, True)}[args.bias]:
        ours: list[tuple[Case, str, dict, bool]] = []
        best_only: list[tuple[Case, str, dict, bool]] = []     # asr.nbest = 1
        unrepaired: list[tuple[Case, str, dict, bool]] = []     # nlu.home_repair = false
        trusting: list[tuple[Case, str, dict, bool]] = []       # asr.unsure_below = 0
        theirs: list[tuple[Case, str, dict, bool]] = []
        errors = words = 0
        decode_s = 0.0
        misses = []
        by_voice: dict[str, dict] = {}
        for voice in voices:
            start = len(ours)
            for case, home in cases:
                audio = render(case.sentence, voice, tts, Path(args.audio))
                asr.set_prompt(vocabulary(home).prompt() if bias else "")
                t0 = time.perf_counter()
                t = asr.transcribe(audio)
                decode_s += time.perf_counter() - t0
                view = views.setdefault(id(home), model.with_lists(home.lists()))
                b = view.parse(t.text)
                best_only.append((case, b.intent, b.slots, b.accepted and b.intent != OTHER))
                heard = choose(t, lambda text, sure, v=view: _acts(v, text, sure),
                               asr_cfg.nbest_margin, asr_cfg.nbest_min_confidence).text
                e, n = word_errors(case.sentence, heard)
                errors, words = errors + e, words + n
                p = view.parse(heard)
                acted = p.accepted and p.intent != OTHER
                trusting.append((case, p.intent, p.slots, acted))
                if acted and asr_cfg.unsure_below > 0 and doubted(p, unsure_words(
                        asr.word_probabilities(heard), asr_cfg.unsure_below)):
                    acted = False                # asked back: "not sure I heard ... right"
                ours.append((case, p.intent, p.slots, acted))
                view.repair = False
                q = view.parse(heard)
                view.repair = True
                unrepaired.append((case, q.intent, q.slots, q.accepted and q.intent != OTHER))
                name, slots = hassil.parse(heard, home)
                theirs.append((case, name, slots, name != OTHER))
                wrong = not _right(case, p.intent if acted else OTHER, p.slots)
                if len(misses) < args.misses and wrong and (acted or not args.wrong_only):
                    misses.append({"voice": voice, "said": case.sentence, "heard": heard,
                                   "got": [p.intent, p.slots, acted]})
            by_voice[voice] = {k: v for k, v in score(ours[start:]).items() if k != "sentences"}
        key = "biased" if bias else "plain"
        report[key] = {**score(ours), "wer": errors / max(words, 1),
                       "decode_s_mean": round(decode_s / max(len(ours), 1), 3),
                       "hassil": score(theirs), "by_voice": by_voice,
                       "no_repair": score(unrepaired), "best_only": score(best_only),
                       "trusting": score(trusting)}
        if misses:
            report[key]["misses"] = misses
    return report


def _acts(view, text: str, at_least: float) -> bool:
    """What the daemon's ``HomeUnderstanding.acts_on`` says, for the test file's home."""
    from edge_runtime.nlu.home.model import OTHER
    from edge_runtime.nlu.language import other_language
    p = view.parse(text)
    return (p.accepted and p.intent != OTHER and p.confidence >= at_least
            and not other_language(text))


def _right(case, served: str, slots: dict) -> bool:
    from edge_runtime.nlu.home.model import OTHER
    from edge_runtime.nlu.train.home.hass_eval import slots_match
    return served == case.intent and (served == OTHER or slots_match(case.slots, slots))


def format_report(r: dict) -> str:
    lines = [f"{r['sentences']} sentences x {len(r['voices'])} voices ({', '.join(r['voices'])})"
             f" from {r['source']}; Whisper beam {r['beam_size']}, N-best {r['nbest']} "
             f"(margin {r['nbest_margin']}, understood >= {r['nbest_min_confidence']})"]
    for key in ("plain", "biased"):
        if key not in r:
            continue
        x = r[key]
        lines.append(f"{key:<7} WER {x['wer']:.3f}  ours: intent {x['intent_accuracy']:.4f} "
                     f"exact slots {x['exact_slots']:.4f} wrong action "
                     f"{x['wrong_action_rate']:.4f}  hassil: intent "
                     f"{x['hassil']['intent_accuracy']:.4f} exact slots "
                     f"{x['hassil']['exact_slots']:.4f} wrong action "
                     f"{x['hassil']['wrong_action_rate']:.4f}")
        n = x["best_only"]
        lines.append(f"        best hypothesis only (asr.nbest = 1): intent "
                     f"{n['intent_accuracy']:.4f} exact slots {n['exact_slots']:.4f} wrong "
                     f"action {n['wrong_action_rate']:.4f}")
        for label, k in (("without name repair", "no_repair"),
                         (f"without asking back unsure items (asr.unsure_below "
                          f"{r['unsure_below']})", "trusting")):
            n = x[k]
            lines.append(f"        {label}: intent {n['intent_accuracy']:.4f} exact slots "
                         f"{n['exact_slots']:.4f} wrong action {n['wrong_action_rate']:.4f}")
        for voice, v in x["by_voice"].items():
            lines.append(f"        {voice}: intent {v['intent_accuracy']:.4f} exact slots "
                         f"{v['exact_slots']:.4f} wrong action {v['wrong_action_rate']:.4f}")
        for m in x.get("misses", []):
            lines.append(f"    {m['voice']}: {m['said']!r} heard {m['heard']!r} -> {m['got']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks home_spoken",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--hass", default=str(DEFAULT_DIR), help="Home Assistant-format test folder")
    ap.add_argument("--voices", default="piper,espeak")
    ap.add_argument("--limit", type=int, default=0, help="first N sentences (0 = all)")
    ap.add_argument("--audio", default=str(AUDIO_DIR), help="rendered audio kept here")
    ap.add_argument("--home", default="", help="home model directory (default: nlu.home_dir)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beam", type=int, default=0, help="Whisper beam size (0: asr.beam_size)")
    ap.add_argument("--nbest", type=int, default=0, help="hypotheses kept (0: asr.nbest)")
    ap.add_argument("--misses", type=int, default=0, help="list up to N misses per setting")
    ap.add_argument("--bias", choices=("plain", "biased", "both"), default="both",
                    help="decode without the prompt, with it, or both (default)")
    ap.add_argument("--wrong-only", action="store_true", help="list only wrong actions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = run(args)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
