"""``edge-runtime nlu eval --hass DIR``: the home model vs hassil on Home Assistant test files.

Test files are Home Assistant's sentence-test YAML (``language``, ``tests: [{sentences:
[...], intent: {name, slots}}]``; a test without ``intent`` expects nothing to happen), in a
folder tree; ``_fixtures.yaml`` files name the home (``areas``, ``floors``, ``entities`` with
``name``, ``id`` = ``<domain>.<object>``, ``area``), and a test file's own ``areas``/
``entities`` extend them for that file. Other files starting with ``_`` are skipped.

Scores, for ours (``HomeModel``: an answer counts only when its confidence clears the
intent's calibrated threshold; below it the request is asked back) and for hassil's
``recognize_best`` over the pinned templates with the same lists, in the same run:

- ``intent_accuracy``: the intent acted on is the expected one (abstaining is wrong,
  except for a test that expects no intent);
- ``exact_slots``: that, and the slots equal the expected ones (values compared as
  normalized text; a list of expected values accepts any of them);
- ``wrong_action_rate``: share of sentences where something was done (an intent accepted)
  that is not what the test expects (wrong intent or wrong slots).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ....errors import ConfigError
from ...text import normalize_text
from ...home.lists import HomeLists
from ...home.model import OTHER, HomeModel


class HassTestError(ConfigError):
    """A Home Assistant test folder or file is unusable."""


@dataclass
class Home:
    areas: dict[str, str] = field(default_factory=dict)      # id -> name
    floors: dict[str, str] = field(default_factory=dict)
    entities: list[tuple[str, str]] = field(default_factory=list)   # (name, domain)

    def extended(self, data: dict) -> Home:
        out = Home(dict(self.areas), dict(self.floors), list(self.entities))
        for a in data.get("areas") or []:
            out.areas[str(a.get("id", a["name"]))] = str(a["name"])
        for f in data.get("floors") or []:
            out.floors[str(f.get("id", f["name"]))] = str(f["name"])
        for e in data.get("entities") or []:
            domain = str(e.get("id", "")).partition(".")[0]
            out.entities.append((str(e["name"]), domain))
        return out

    def lists(self) -> HomeLists:
        return HomeLists.from_entities(self.areas.values(), self.floors.values(), self.entities)


@dataclass(frozen=True)
class Case:
    sentence: str
    intent: str                         # OTHER when the test expects no intent
    slots: dict[str, Any]
    file: str


def _read(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise HassTestError(f"test file {path} is unreadable: {exc}",
                            hint="fix the YAML or remove the file") from None
    if not isinstance(data, dict):
        raise HassTestError(f"test file {path} is not a YAML mapping",
                            hint="expected keys: language, tests (or areas/entities)")
    return data


def load_cases(root: str | Path) -> list[tuple[Case, Home]]:
    """Every test sentence under ``root`` with the home it is tested in."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise HassTestError(f"{base} is not a folder", hint="give the folder of the test files")
    homes: dict[Path, Home] = {}

    def home_of(folder: Path) -> Home:
        if folder not in homes:
            parent = home_of(folder.parent) if folder != base else Home()
            fixtures = folder / "_fixtures.yaml"
            homes[folder] = parent.extended(_read(fixtures)) if fixtures.is_file() else parent
        return homes[folder]

    out = []
    for path in sorted(base.rglob("*.y*ml")):
        if path.name.startswith("_") or path.suffix not in (".yaml", ".yml"):
            continue
        data = _read(path)
        tests = data.get("tests")
        if not isinstance(tests, list):
            raise HassTestError(f"test file {path} has no `tests` list",
                                hint="each test: {sentences: [...], intent: {name, slots}}")
        home = home_of(path.parent).extended(data)
        for n, test in enumerate(tests):
            sentences = test.get("sentences") if isinstance(test, dict) else None
            if not isinstance(sentences, list) or not sentences:
                raise HassTestError(f"test {n + 1} of {path} has no `sentences` list",
                                    hint="give the sentences as a YAML list")
            intent = test.get("intent") or {}
            name = str(intent.get("name") or OTHER)
            slots = dict(intent.get("slots") or {})
            for s in sentences:
                out.append((Case(str(s), name, slots, str(path.relative_to(base))), home))
    if not out:
        raise HassTestError(f"no test sentences under {base}",
                            hint="test files are YAML with a `tests` list")
    return out


def _canon(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return normalize_text(str(v))


def slots_match(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    if set(expected) != set(got):
        return False
    for k, want in expected.items():
        options = want if isinstance(want, list) else [want]
        if _canon(got[k]) not in {_canon(o) for o in options}:
            return False
    return True


class Hassil:
    """hassil's template matcher over the pinned templates, per home."""

    def __init__(self) -> None:
        from hassil import Intents
        from home_assistant_intents import get_intents

        data = get_intents("en")
        if data is None:
            raise HassTestError("home-assistant-intents has no English templates",
                                hint="install the pinned home-assistant-intents")
        self.intents = Intents.from_dict(data)
        self._lists: dict[int, dict] = {}

    def _slot_lists(self, home: Home) -> dict:
        from hassil.intents import TextSlotList
        key = id(home)
        if key not in self._lists:
            names = [(n, n, {"domain": d}) for n, d in home.entities]
            self._lists[key] = {
                "area": TextSlotList.from_strings(list(home.areas.values()) or ["none"],
                                                  name="area"),
                "floor": TextSlotList.from_strings(list(home.floors.values()) or ["none"],
                                                   name="floor"),
                "name": TextSlotList.from_tuples(names or [("none", "none", {})], name="name")}
        return self._lists[key]

    def parse(self, text: str, home: Home) -> tuple[str, dict[str, Any]]:
        from hassil import recognize_best
        result = recognize_best(text, self.intents, slot_lists=self._slot_lists(home))
        if result is None:
            return OTHER, {}
        return result.intent.name, {e.name: e.value for e in result.entities_list}


def score(results: list[tuple[Case, str, dict, bool]]) -> dict:
    n = max(len(results), 1)
    intent_ok = exact = wrong = 0
    for case, intent, slots, acted in results:
        served = intent if acted else OTHER
        ok = served == case.intent
        intent_ok += ok
        exact += ok and (served == OTHER or slots_match(case.slots, slots))
        wrong += acted and served != OTHER and not (ok and slots_match(case.slots, slots))
    return {"intent_accuracy": intent_ok / n, "exact_slots": exact / n,
            "wrong_action_rate": wrong / n, "sentences": len(results)}


def evaluate(root: str | Path, model: HomeModel, with_hassil: bool = True,
             misses: int = 0) -> dict:
    cases = load_cases(root)
    ours, theirs, times, cpu = [], [], [], []
    views: dict[int, HomeModel] = {}
    hassil = Hassil() if with_hassil else None
    for case, home in cases:
        view = views.setdefault(id(home), model.with_lists(home.lists()))
        t0, c0 = time.perf_counter(), time.thread_time()
        p = view.parse(case.sentence)
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        ours.append((case, p.intent, p.slots, p.accepted and p.intent != OTHER))
        if hassil is not None:
            name, slots = hassil.parse(case.sentence, home)
            theirs.append((case, name, slots, name != OTHER))
    report = score(ours)
    for key, values in (("parse_ms", times), ("parse_cpu_ms", cpu)):   # wall, and CPU (one core)
        values.sort()
        report[f"{key}_p50"] = round(values[len(values) // 2] * 1000, 3)
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        report[f"{key}_p99"] = round(p99 * 1000, 3)
    report["top_intent_accuracy"] = sum(i == c.intent for c, i, _, _ in ours) / max(len(ours), 1)
    if hassil is not None:
        report["hassil"] = score(theirs)
    if misses:
        report["misses"] = [{"sentence": c.sentence, "expected": [c.intent, c.slots],
                             "got": [i, {k: v for k, v in s.items()}, a], "file": c.file}
                            for c, i, s, a in ours
                            if not ((i if a else OTHER) == c.intent and
                                    (c.intent == OTHER or slots_match(c.slots, s)))][:misses]
    return report


def format_report(report: dict) -> str:
    lines = [f"{report['sentences']} sentences"]
    rows = [("ours", report)] + ([("hassil", report["hassil"])] if "hassil" in report else [])
    for who, r in rows:
        lines.append(f"{who:<7} intent {r['intent_accuracy']:.4f}  exact slots "
                     f"{r['exact_slots']:.4f}  wrong action {r['wrong_action_rate']:.4f}")
    lines.append(f"ours: parse p50 {report['parse_ms_p50']} ms, p99 {report['parse_ms_p99']} ms "
                 f"(CPU: p50 {report['parse_cpu_ms_p50']} ms, p99 {report['parse_cpu_ms_p99']} ms)")
    for m in report.get("misses", []):
        lines.append(f"  miss: {m['sentence']!r} expected {m['expected']} got {m['got']}")
    return "\n".join(lines)


def main_hass(args) -> int:
    """``nlu eval --hass DIR [--home MODEL] [--json] [--misses N]``."""
    import json

    from ....config import NluConfig
    from .build import build_default

    cfg = NluConfig(home_dir=args.home or "")
    report = evaluate(args.hass, HomeModel(build_default(cfg)), misses=args.misses)
    print(json.dumps(report) if args.json else format_report(report))
    return 0
