"""The load benchmark's workload: generated from templates with a seed, not hand-picked.

Regenerate the committed file (a unit test checks that it is exactly this output):

    .venv/bin/python -m benchmarks.load.workload --out benchmarks/load/workload.jsonl

(defaults: ``--seed 20240611 --users 200 --per-user 12``: 2,400 rows). One JSON object a
line, in user order, then in the order that user sends them::

    {"id": 17, "user": 1, "seq": 5, "kind": "cacheable", "text": "hey how tall is mount
     everest", "intent": "oos", "group": "q004", "cacheable": true, "session": null,
     "turn": 0, "audio": false}

``kind`` (row shares in ``MIX``):

- ``skill``: a request one of the deterministic skills answers (time, date, timers,
  arithmetic, units, greetings, goodbyes, thanks, help, devices), drawn Zipf-like from a
  pool of instantiated templates, so popular commands repeat and the tail is new;
- ``cacheable``: an open question from a fixed pool, drawn Zipf-like; the same question
  comes in filler variants ("hey ...", "... please", "can you tell me ...") that must
  share its cache entry (same ``group``);
- ``paraphrase``: one of a few questions, each in several different wordings (same
  ``group``; whether they share a cache entry is up to the cache key);
- ``open``: a new open question (every one distinct: always a cache miss);
- ``oos``: requests no skill can carry out (bookings, messages, shopping, weather ...),
  some personal or time-dependent (``cacheable`` false: must never come from the cache);
- ``session`` / ``followup``: a multi-turn conversation: a question, then one or two
  follow-ups in the same ``session`` ("why is that") that only make sense with it;
- ``audio``: a spoken request (``audio`` true): the bench synthesizes ``text`` to a WAV
  and sends it to ``POST /v1/audio``; ``text`` is the expected transcript.

``intent`` is what the request means (the built-in intent names; ``oos`` for open
questions); ``cacheable`` says whether its answer may come from the answer cache at all;
``group`` names the question (rows with the same group ask the same thing). "A wrong
answer from the cache" is a cache hit on a row whose ``cacheable`` is false, whose
understood intent is not ``intent``, or whose answer was first produced for another
``group``. No row text is an example of ``edge_runtime/nlu/intents.yaml`` (the point is
to test understanding, not recall).
"""
from __future__ import annotations

import argparse
import bisect
import hashlib
import itertools
import json
import random
import re
import sys
from pathlib import Path
from typing import Callable, Iterable
from .phrases import (CACHEABLE_QUESTIONS, FILLER_VARIANTS, OPEN_TEMPLATES, PARAPHRASE_SETS,
                      _CUISINES, _EVENTS, _FOODS, _GENRES, _ITEMS, _NAMES, _THINGS)

DEFAULT_SEED = 20240611
DEFAULT_USERS = 200
DEFAULT_PER_USER = 12
WORKLOAD_FILE = Path(__file__).resolve().parent / "workload.jsonl"
INTENTS_FILE = Path(__file__).resolve().parents[2] / "edge_runtime" / "nlu" / "intents.yaml"

# share of rows per kind ("session" covers the first turns and their follow-ups)
MIX = {"skill": 0.40, "cacheable": 0.22, "paraphrase": 0.06, "open": 0.12, "oos": 0.08,
       "session": 0.09, "audio": 0.03}
ZIPF_S = 1.0
FOLLOWUPS_PER_SESSION = (1, 2)          # uniform: mean 1.5 follow-ups, 2.5 rows a session

# -- slot values -----------------------------------------------------------------------------
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> str:
    """0..999 in words, as speech recognition writes them ("one hundred and five")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    rest = n % 100
    return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + number_words(rest))


def spoken(rng: random.Random, n: int) -> str:
    """A number as digits or as words (half each), as ASR outputs either."""
    return str(n) if rng.random() < 0.5 else number_words(n)


AREAS = ["kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway"]
DEVICES = ["lights", "lamp", "fan", "heater", "tv", "speaker"]
TIMER_NAMES = ["pasta", "rice", "tea", "bread", "laundry", "pizza", "workout", "cookie"]
CITIES = ["tokyo", "london", "sydney", "paris", "berlin", "chicago", "toronto", "madrid",
          "cairo", "mumbai"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "tenth", "twelfth", "fifteenth",
            "twentieth", "twenty first", "twenty fifth", "thirtieth"]
CONVERSIONS = [("kilometers", "miles"), ("miles", "kilometers"), ("pounds", "kilograms"),
               ("kilograms", "pounds"), ("feet", "meters"), ("meters", "feet"),
               ("inches", "centimeters"), ("cups", "milliliters"), ("liters", "gallons"),
               ("ounces", "grams"), ("grams", "ounces"), ("yards", "meters")]


def _pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


# -- skill templates: (intent, template(rng) -> text) ---------------------------------------
def _timer_len(rng: random.Random) -> str:
    unit = _pick(rng, ["minutes", "minutes", "seconds", "hours"])
    n = {"minutes": rng.randint(2, 59), "seconds": rng.choice([15, 20, 30, 40, 45, 90]),
         "hours": rng.randint(2, 3)}[unit]
    return f"{spoken(rng, n)} {unit}"


SKILL_TEMPLATES: list[tuple[str, Callable[[random.Random], str]]] = [
    ("get_time", lambda r: _pick(r, ["hey whats the time", "could you check what time it is",
                                     "what time is it at the moment please",
                                     "do you happen to know the time",
                                     "what is the time now please", "whats the time right now",
                                     "tell me what time it is"])),
    ("get_time", lambda r: f"whats the time in {_pick(r, CITIES)} at the moment"),
    ("get_time", lambda r: f"what time is it over in {_pick(r, CITIES)}"),
    ("get_date", lambda r: _pick(r, ["what is the date today please", "which date is it today",
                                     "tell me what day it is", "what is the date going to be tomorrow",
                                     "what day of the week will it be tomorrow"])),
    ("get_date", lambda r: f"what day of the week is {_pick(r, MONTHS)} {_pick(r, ORDINALS)}"),
    ("get_date", lambda r: f"what will the date be in {spoken(r, r.randint(2, 30))} days"),
    ("get_date", lambda r: f"what is the date this coming {_pick(r, WEEKDAYS)}"),
    ("timer_set", lambda r: f"set a timer for {_timer_len(r)}"),
    ("timer_set", lambda r: f"please start a timer for {_timer_len(r)}"),
    ("timer_set", lambda r: f"set a {_pick(r, TIMER_NAMES)} timer for {_timer_len(r)}"),
    ("timer_set", lambda r: f"start a countdown of {_timer_len(r)}"),
    ("timer_set", lambda r: f"can you set a timer called {_pick(r, TIMER_NAMES)} for {_timer_len(r)}"),
    ("timer_cancel", lambda r: f"cancel the {_pick(r, TIMER_NAMES)} timer please"),
    ("timer_cancel", lambda r: _pick(r, ["stop all of the timers", "please delete every timer",
                                         "cancel the running timer", "turn the timer off please"])),
    ("timer_cancel", lambda r: f"get rid of the {_pick(r, TIMER_NAMES)} timer"),
    ("timer_status", lambda r: f"how long is left on the {_pick(r, TIMER_NAMES)} timer"),
    ("timer_status", lambda r: _pick(r, ["how many minutes are left on the timer",
                                         "which timers are running right now",
                                         "how much time does the timer have left",
                                         "is the timer still going"])),
    ("arithmetic", lambda r: f"what is {spoken(r, r.randint(2, 99))} times {spoken(r, r.randint(2, 20))}"),
    ("arithmetic", lambda r: f"whats {spoken(r, r.randint(10, 500))} plus {spoken(r, r.randint(2, 500))}"),
    ("arithmetic", lambda r: f"how much is {spoken(r, r.randint(50, 900))} minus {spoken(r, r.randint(2, 49))}"),
    ("arithmetic", lambda r: f"calculate {spoken(r, r.randint(2, 50) * 6)} divided by six"),
    ("arithmetic", lambda r: f"what is {_pick(r, [10, 15, 20, 25, 30, 40])} percent of {r.randint(20, 400)}"),
    ("arithmetic", lambda r: f"what is the square root of {_pick(r, [16, 25, 49, 64, 121, 169, 225])}"),
    ("unit_convert", lambda r: "convert {} {} to {}".format(spoken(r, r.randint(2, 200)), *_pick(r, CONVERSIONS))),
    ("unit_convert", lambda r: (lambda a, b, n: f"how many {b} is {n} {a}")(
        *_pick(r, CONVERSIONS), spoken(r, r.randint(2, 100)))),
    ("unit_convert", lambda r: f"what is {spoken(r, r.randint(30, 110))} degrees fahrenheit in celsius"),
    ("unit_convert", lambda r: f"convert {spoken(r, r.randint(0, 40))} degrees celsius to fahrenheit"),
    ("greeting", lambda r: _pick(r, ["hello there assistant", "hey good evening", "hi hi",
                                     "good morning to you", "hello hello", "hey there friend"])),
    ("goodbye", lambda r: _pick(r, ["goodbye for now", "bye then", "alright see you later",
                                    "talk to you soon", "ok good night", "i am off now bye"])),
    ("thanks", lambda r: _pick(r, ["thanks very much", "thank you that helps", "cheers for that",
                                   "thanks so much for that", "great thank you very much"])),
    ("help", lambda r: _pick(r, ["what sort of things can you do", "what are you able to help with",
                                 "what can you help with", "tell me the things you can do"])),
    ("device_on", lambda r: f"turn on the {_pick(r, DEVICES)} in the {_pick(r, AREAS)}"),
    ("device_on", lambda r: f"switch the {_pick(r, AREAS)} {_pick(r, DEVICES)} on please"),
    ("device_off", lambda r: f"turn off the {_pick(r, DEVICES)} in the {_pick(r, AREAS)}"),
    ("device_off", lambda r: f"switch the {_pick(r, AREAS)} {_pick(r, DEVICES)} off"),
    ("device_status", lambda r: f"is the {_pick(r, DEVICES)} in the {_pick(r, AREAS)} on"),
    ("device_status", lambda r: f"are the {_pick(r, AREAS)} lights still on"),
]
SKILL_POOL_SIZE = 240

# the phrase pools live in phrases.py
# (template, cacheable): personal ("me", "my", "i") or time-dependent requests are not
OOS_TEMPLATES: list[tuple[Callable[[random.Random], str], bool]] = [
    (lambda r: f"book a table for {spoken(r, r.randint(2, 8))} at an {_pick(r, _CUISINES)} restaurant", True),
    (lambda r: f"order a {_pick(r, _FOODS)} for delivery", True),
    (lambda r: f"send a message to {_pick(r, _NAMES)} saying running late", True),
    (lambda r: f"call {_pick(r, _NAMES)} on the mobile", True),
    (lambda r: f"play {_pick(r, _GENRES)}", True),
    (lambda r: f"add {_pick(r, _ITEMS)} to the shopping list", True),
    (lambda r: f"buy two tickets for the {_pick(r, _EVENTS)}", True),
    (lambda r: f"navigate to the nearest {_pick(r, ['petrol station', 'pharmacy', 'bakery', 'bank'])}", True),
    (lambda r: f"whats the weather going to be like in {_pick(r, CITIES)} tomorrow", False),
    (lambda r: f"remind me to {_pick(r, ['water the plants', 'call the bank', 'buy flowers'])} later", False),
    (lambda r: f"read my {_pick(r, ['emails', 'messages', 'notifications'])}", False),
    (lambda r: f"what is on my calendar for {_pick(r, WEEKDAYS)}", False),
    (lambda r: f"what are the latest headlines about {_pick(r, ['sport', 'science', 'politics'])}", False),
    (lambda r: f"how much is a {_pick(r, ['bitcoin', 'share of apple', 'barrel of oil'])} worth today", False),
]
OOS_POOL_SIZE = 120
DIFFERENCE_PAIRS = 60

FOLLOWUPS = ["why is that", "can you explain that more simply", "tell me a bit more about it",
             "how do people know that", "is that always true", "give me an example of that",
             "say that again in one sentence", "and what happened after that",
             "what else is interesting about it", "how long has that been known"]
AUDIO_SKILLS = 8          # the audio pool: this many skill phrases + as many questions


class Zipf:
    """Ranks 0..n-1 with P(rank r) proportional to 1 / (r + 1) ** s."""

    def __init__(self, n: int, s: float = ZIPF_S) -> None:
        self.n = n
        acc, self.cum = 0.0, []
        for r in range(n):
            acc += 1.0 / (r + 1) ** s
            self.cum.append(acc)

    def sample(self, rng: random.Random) -> int:
        return min(bisect.bisect_left(self.cum, rng.random() * self.cum[-1]), self.n - 1)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def intent_examples(path: Path = INTENTS_FILE) -> set[str]:
    """Every example sentence of the built-in intent file, normalized."""
    import yaml
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {_norm(str(e)) for spec in data["intents"].values() for e in spec.get("examples", [])}


def _distinct(make: Callable[[], str], n: int, banned: set[str], tries: int = 50) -> list[str]:
    """Up to ``n`` distinct outputs of ``make`` that are not in ``banned``."""
    out: list[str] = []
    seen = set(banned)
    for _ in range(n * tries):
        if len(out) == n:
            break
        t = make()
        if _norm(t) not in seen:
            seen.add(_norm(t))
            out.append(t)
    return out


class Catalogue:
    """The pools the rows are drawn from, built from the templates with the seed."""

    def __init__(self, rng: random.Random, banned: set[str]) -> None:
        # skill phrases: distinct instantiations, spread over the templates, then shuffled
        # so that Zipf popularity does not follow template order
        # (the same number of phrases per intent, taken from its templates in turn)
        skills: list[tuple[str, str]] = []
        seen = set(banned)
        by_intent: dict[str, list[Callable]] = {}
        for intent, make in SKILL_TEMPLATES:
            by_intent.setdefault(intent, []).append(make)
        per = -(-SKILL_POOL_SIZE // len(by_intent))
        for intent, makes in by_intent.items():
            turn = itertools.cycle(makes)
            for text in _distinct(lambda: next(turn)(rng), per, seen):
                seen.add(_norm(text))
                skills.append((intent, text))
        rng.shuffle(skills)
        self.skills = skills
        self.questions = [q for q in CACHEABLE_QUESTIONS if _norm(q) not in banned]
        self.paraphrases = [[p for p in ps if _norm(p) not in banned] for ps in PARAPHRASE_SETS]
        asked = {_norm(q) for q in self.questions} | {
            _norm(p) for ps in self.paraphrases for p in ps}
        opens = []
        for template, values in OPEN_TEMPLATES:
            if values is None:
                pairs = list(itertools.combinations(_THINGS, 2))
                values = [f"{a}|{b}" for a, b in rng.sample(pairs, DIFFERENCE_PAIRS)]
            opens += [template.format(*v.split("|")) for v in values]
        opens = [o for o in opens if _norm(o) not in banned and _norm(o) not in asked]
        rng.shuffle(opens)
        self.opens = opens
        oos: list[tuple[str, bool]] = []
        per = -(-OOS_POOL_SIZE // len(OOS_TEMPLATES))
        for make, cacheable in OOS_TEMPLATES:
            for text in _distinct(lambda: make(rng), per, seen | asked):
                seen.add(_norm(text))
                oos.append((text, cacheable))
        rng.shuffle(oos)
        self.oos = oos
        # audio: the most popular skill phrases and questions (so spoken requests meet
        # the cache entries of typed ones)
        self.audio = ([("skill", i) for i in range(AUDIO_SKILLS)]
                      + [("cacheable", i) for i in range(AUDIO_SKILLS)])
        self.zipf = {"skill": Zipf(len(self.skills)), "cacheable": Zipf(len(self.questions)),
                     "paraphrase": Zipf(len(self.paraphrases)), "oos": Zipf(len(self.oos)),
                     "audio": Zipf(len(self.audio))}


def _row(kind: str, text: str, intent: str, group: str, cacheable: bool,
         session: str | None = None, turn: int = 0, audio: bool = False) -> dict:
    return {"kind": kind, "text": text, "intent": intent, "group": group,
            "cacheable": cacheable, "session": session, "turn": turn, "audio": audio}


class _Drawer:
    def __init__(self, cat: Catalogue, rng: random.Random) -> None:
        self.cat, self.rng = cat, rng
        self.next_open = 0

    def skill(self, i: int | None = None) -> dict:
        i = self.cat.zipf["skill"].sample(self.rng) if i is None else i
        intent, text = self.cat.skills[i]
        return _row("skill", text, intent, f"skill{i:03d}", False)

    def cacheable(self, i: int | None = None, variant: bool = True) -> dict:
        i = self.cat.zipf["cacheable"].sample(self.rng) if i is None else i
        q = self.cat.questions[i]
        if variant:
            forms, weights = zip(*FILLER_VARIANTS)
            q = self.rng.choices(forms, weights)[0].format(q=q)
        return _row("cacheable", q, "oos", f"q{i:03d}", True)

    def paraphrase(self) -> dict:
        i = self.cat.zipf["paraphrase"].sample(self.rng)
        return _row("paraphrase", _pick(self.rng, self.cat.paraphrases[i]), "oos", f"p{i:02d}",
                    True)

    def open(self) -> dict:
        n = self.next_open
        self.next_open += 1
        if n >= len(self.cat.opens):
            raise ValueError(f"the open-question pool ({len(self.cat.opens)}) is exhausted; "
                             "lower --users/--per-user or add templates")
        return _row("open", self.cat.opens[n], "oos", f"open{n:04d}", True)

    def oos(self) -> dict:
        i = self.cat.zipf["oos"].sample(self.rng)
        text, cacheable = self.cat.oos[i]
        return _row("oos", text, "oos", f"oos{i:03d}", cacheable)

    def audio(self) -> dict:
        src, i = self.cat.audio[self.cat.zipf["audio"].sample(self.rng)]
        row = self.skill(i) if src == "skill" else self.cacheable(i, variant=False)
        return dict(row, kind="audio", audio=True)

    def session(self, name: str) -> list[dict]:
        first = self.cacheable() if self.rng.random() < 0.5 else self.open()
        rows = [dict(first, kind="session", session=name)]
        for turn in range(1, self.rng.randint(*FOLLOWUPS_PER_SESSION) + 1):
            rows.append(_row("followup", _pick(self.rng, FOLLOWUPS), "oos", "", False,
                             session=name, turn=turn))
        return rows


def generate(seed: int = DEFAULT_SEED, users: int = DEFAULT_USERS,
             per_user: int = DEFAULT_PER_USER, mix: dict[str, float] | None = None,
             banned: set[str] | None = None) -> list[dict]:
    """The workload rows (see the module docstring); the same arguments give the same rows."""
    mix = dict(MIX if mix is None else mix)
    rng = random.Random(seed)
    cat = Catalogue(rng, intent_examples() if banned is None else banned)
    draw = _Drawer(cat, rng)
    session_rows = 1 + sum(FOLLOWUPS_PER_SESSION) / 2
    kinds = list(mix)
    # a pick of "session" adds ~2.5 rows: weight picks so that *row* shares follow the mix
    weights = [mix[k] / (session_rows if k == "session" else 1.0) for k in kinds]
    rows: list[dict] = []
    for user in range(users):
        user_rows: list[dict] = []
        sessions = 0
        while len(user_rows) < per_user:
            kind = rng.choices(kinds, weights)[0]
            if kind == "session":
                user_rows += draw.session(f"u{user:03d}s{sessions}")
                sessions += 1
            else:
                user_rows.append(getattr(draw, kind)())
        for seq, row in enumerate(user_rows[:per_user]):
            rows.append({"id": len(rows), "user": user, "seq": seq, **row})
    for row in rows:
        if row["kind"] == "followup":
            row["group"] = f"followup{row['id']:04d}"
    return rows


def dumps(rows: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows)


def load(path: str | Path = WORKLOAD_FILE) -> list[dict]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    if not rows:
        raise ValueError(f"workload {path} is empty")
    for key in ("id", "user", "seq", "kind", "text", "intent", "group", "cacheable"):
        if key not in rows[0]:
            raise ValueError(f"workload {path}: rows lack {key!r}")
    return rows


def by_user(rows: list[dict]) -> dict[int, list[dict]]:
    """Each user's rows in the order that user sends them."""
    out: dict[int, list[dict]] = {}
    for r in sorted(rows, key=lambda r: (r["user"], r["seq"])):
        out.setdefault(r["user"], []).append(r)
    return out


def digest(rows: list[dict]) -> str:
    return hashlib.sha256(dumps(rows).encode()).hexdigest()[:16]


def summary(rows: list[dict]) -> dict:
    """Row shares per kind, repeats and the audio/cacheable counts (for the report)."""
    n = len(rows)
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    texts = [r["text"] for r in rows]
    return {"rows": n, "users": len({r["user"] for r in rows}),
            "kinds": {k: round(v / n, 4) for k, v in sorted(kinds.items())},
            "distinct_texts": len(set(texts)), "repeated_rows": n - len(set(texts)),
            "cacheable_rows": sum(r["cacheable"] for r in rows),
            "audio_rows": sum(r["audio"] for r in rows), "digest": digest(rows)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.load.workload",
                                description="generate the load benchmark's workload")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--users", type=int, default=DEFAULT_USERS)
    p.add_argument("--per-user", type=int, default=DEFAULT_PER_USER)
    p.add_argument("--out", type=Path, default=None, help="write here (default: stdout)")
    args = p.parse_args(argv)
    rows = generate(args.seed, args.users, args.per_user)
    if args.out is None:
        sys.stdout.write(dumps(rows))
    else:
        args.out.write_text(dumps(rows), encoding="utf-8")
        print(json.dumps(summary(rows)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
