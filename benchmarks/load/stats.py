"""Per-level statistics of the load benchmark (pure functions on client outcomes).

Definitions (also in the report's legend):

- latency: from the request's *intended* send time (its place in the open-loop schedule)
  to the response, so a client or server that stalls cannot hide it. ``avg/p50/p99/max``
  are over answered requests plus lost ones, a lost request counting as the timeout (it
  took at least that long); refused requests are reported apart, with their own times.
- time to first token (TTFT): the client's latency minus the part of the daemon's own
  time that came after the first token (``timings_ms.total - timings_ms.first_token``);
  for a skill or cache hit that is the whole answer.
- goodput: the share of *all* requests sent whose TTFT met the budget (refused, failed
  and lost ones count against it).
- refused: HTTP 503 ``overloaded`` (a clear, retryable refusal); errors: any other error
  response; lost: no answer and no error response within the timeout (or the connection
  dropped); unreachable (fault runs): the connection was refused before any request.
- cache hit rate: answered requests served from the cache / answered requests whose
  answer may be cached (the daemon's ``agent_cache_hit_rate``: hits / cache lookups; skills
  and follow-ups never look); ``cache_share``: cache hits / all answered requests.
- wrong answers from the cache: a hit on a row whose ``cacheable`` is false, whose
  understood intent is not the row's, or whose answer was first produced (by the LLM, in
  this run) for another question ``group``; hits whose answer this run never produced
  are "unverified".
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

STATUSES = ("ok", "refused", "error", "lost", "unreachable", "skipped")


@dataclass
class Outcome:
    row: dict
    intended: float                 # seconds after the level start: the schedule's send time
    sent: float | None = None       # when the request actually went out
    done: float | None = None       # when the response (or the error) came back
    status: str = "lost"            # one of STATUSES
    http: int | None = None
    code: str | None = None         # error code, or why it was lost ("timeout", "reset")
    retry_after: str | None = None
    body: dict | None = None        # the answer object (status ok)
    message: str | None = None
    session: str | None = None

    @property
    def latency_ms(self) -> float | None:
        if self.done is None:
            return None
        return (self.done - self.intended) * 1000.0

    @property
    def route(self) -> str | None:
        return (self.body or {}).get("route")

    @property
    def intent(self) -> str | None:
        return ((self.body or {}).get("intent") or {}).get("name")

    @property
    def answer(self) -> str | None:
        return (self.body or {}).get("answer")

    @property
    def timings(self) -> dict:
        return (self.body or {}).get("timings_ms") or {}

    def ttft_ms(self) -> float | None:
        """Client-side time to first token (see the module docstring); ok requests only."""
        lat = self.latency_ms
        if self.status != "ok" or lat is None:
            return None
        t = self.timings
        total, first = t.get("total"), t.get("first_token")
        if total is None or first is None:
            return lat
        return max(0.0, lat - max(0.0, total - first))

    def server_ms(self) -> float | None:
        """The daemon's own time for the request (ASR included for audio)."""
        t = self.timings
        if t.get("total") is None:
            return None
        return t["total"] + ((t.get("asr") or 0.0) if self.row.get("audio") else 0.0)


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear between closest ranks; None when empty."""
    xs = sorted(values)
    if not xs:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _r(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(x, nd)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


@dataclass
class Provenance:
    """Which question groups each LLM-made answer text was first produced for (one run,
    one daemon configuration), to tell a right cache hit from a wrong one."""

    groups: dict[str, set[str]] = field(default_factory=dict)

    def add(self, outcomes: Iterable[Outcome]) -> None:
        for o in outcomes:
            if o.status == "ok" and o.route in ("local", "cloud") and o.answer \
                    and o.row.get("cacheable"):
                self.groups.setdefault(o.answer, set()).add(o.row["group"])


def cache_check(outcomes: list[Outcome], provenance: Provenance, examples: int = 5) -> dict:
    hits = [o for o in outcomes if o.status == "ok" and o.route == "cache"]
    wrong, unverified, shown = 0, 0, []
    for o in hits:
        why = None
        if not o.row.get("cacheable"):
            why = "row is not cacheable (personal, time-dependent or a follow-up)"
        elif o.intent != o.row["intent"]:
            why = f"understood as {o.intent}, expected {o.row['intent']}"
        else:
            groups = provenance.groups.get(o.answer or "")
            if groups is None:
                unverified += 1
            elif o.row["group"] not in groups:
                why = f"answer was produced for {sorted(groups)}, row asks {o.row['group']}"
        if why:
            wrong += 1
            if len(shown) < examples:
                shown.append({"text": o.row["text"], "why": why})
    return {"hits": len(hits), "wrong": wrong, "unverified": unverified, "examples": shown}


def summarize(outcomes: list[Outcome], *, users: int, duration_s: float, budget_ms: float,
              timeout_s: float, wall_s: float | None = None,
              provenance: Provenance | None = None) -> dict[str, Any]:
    """One level's row (the JSON keys of the issue, plus detail)."""
    sent = [o for o in outcomes if o.status != "skipped"]
    ok = [o for o in sent if o.status == "ok"]
    refused = [o for o in sent if o.status == "refused"]
    errors = [o for o in sent if o.status == "error"]
    lost = [o for o in sent if o.status == "lost"]
    unreachable = [o for o in sent if o.status == "unreachable"]
    timeout_ms = timeout_s * 1000.0
    lat = [o.latency_ms for o in ok] + [timeout_ms] * len(lost)
    ttft = [o.ttft_ms() for o in ok] + [timeout_ms] * len(lost)
    good = sum(1 for o in ok if o.ttft_ms() <= budget_ms)
    routes: dict[str, int] = {}
    for o in ok:
        routes[o.route or "?"] = routes.get(o.route or "?", 0) + 1
    hits = routes.get("cache", 0)
    cacheable_ok = [o for o in ok if o.row.get("cacheable")]
    codes: dict[str, int] = {}
    for o in errors + lost + unreachable:
        codes[o.code or "?"] = codes.get(o.code or "?", 0) + 1
    wall = max(wall_s or 0.0, duration_s)
    reasons: dict[str, int] = {}
    for o in refused:
        m = re.sub(r"\d+", "#", o.message or "?")[:200]      # same reason, other numbers
        reasons[m] = reasons.get(m, 0) + 1
    refused_ms = [o.latency_ms for o in refused]
    out: dict[str, Any] = {
        "users": users, "sent": len(sent), "answered": len(ok),
        "offered_rps": _r(len(sent) / duration_s, 2) if duration_s else None,
        "rps": _r(len(ok) / wall, 2) if wall else None,
        "avg_ms": _r(_mean(lat)), "p50_ms": _r(percentile(lat, 50)),
        "p99_ms": _r(percentile(lat, 99)), "max_ms": _r(max(lat) if lat else None),
        "ttft_p50_ms": _r(percentile(ttft, 50)), "ttft_p99_ms": _r(percentile(ttft, 99)),
        "goodput": _r(good / len(sent), 4) if sent else None,
        "budget_ms": budget_ms,
        "cache_hit_rate": _r(sum(o.route == "cache" for o in cacheable_ok)
                             / len(cacheable_ok), 4) if cacheable_ok else None,
        "cache_share": _r(hits / len(ok), 4) if ok else None,
        "route_mix": {k: _r(v / len(ok), 4) for k, v in sorted(routes.items())},
        "refused": len(refused), "refused_p50_ms": _r(percentile(refused_ms, 50)),
        "refused_max_ms": _r(max(refused_ms) if refused_ms else None),
        "refused_without_retry_after": sum(1 for o in refused if not o.retry_after),
        "refused_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:3]),
        "refused_example": refused[0].message if refused else None,
        "errors": len(errors), "lost": len(lost) + len(unreachable),
        "unreachable": len(unreachable), "failure_codes": codes,
        "skipped": len(outcomes) - len(sent),
        "intent_accuracy": _r(sum(o.intent == o.row["intent"] for o in ok) / len(ok), 4)
        if ok else None,
        "send_lag_p99_ms": _r(percentile([(o.sent - o.intended) * 1000.0 for o in sent
                                          if o.sent is not None], 99)),
        "timing": timing_agreement(ok),
        "by_kind": by_kind(sent, budget_ms, timeout_ms),
    }
    if provenance is not None:
        out["cache_check"] = cache_check(ok, provenance)
    return out


def timing_agreement(ok: list[Outcome]) -> dict[str, Any]:
    """Client time from the actual send vs the daemon's own ``timings_ms`` (text: total;
    audio: asr + total): the gap is HTTP, JSON and (audio) decoding the upload."""
    gaps, client, server = [], [], []
    for o in ok:
        s = o.server_ms()
        if s is None or o.sent is None or o.done is None:
            continue
        c = (o.done - o.sent) * 1000.0
        client.append(c)
        server.append(s)
        gaps.append(c - s)
    return {"n": len(gaps), "client_p50_ms": _r(percentile(client, 50)),
            "server_p50_ms": _r(percentile(server, 50)),
            "client_p99_ms": _r(percentile(client, 99)),
            "server_p99_ms": _r(percentile(server, 99)),
            "gap_p50_ms": _r(percentile(gaps, 50), 2), "gap_p99_ms": _r(percentile(gaps, 99), 2),
            "server_longer": sum(1 for g in gaps if g < -1.0)}


def by_kind(sent: list[Outcome], budget_ms: float, timeout_ms: float) -> dict[str, dict]:
    out: dict[str, dict] = {}
    kinds = sorted({o.row["kind"] for o in sent})
    for k in kinds:
        os_ = [o for o in sent if o.row["kind"] == k]
        ok = [o for o in os_ if o.status == "ok"]
        lat = [o.latency_ms for o in ok] + [timeout_ms] * sum(o.status == "lost" for o in os_)
        out[k] = {"sent": len(os_), "answered": len(ok), "p50_ms": _r(percentile(lat, 50)),
                  "p99_ms": _r(percentile(lat, 99)),
                  "ttft_p50_ms": _r(percentile([o.ttft_ms() for o in ok], 50)),
                  "goodput": _r(sum(o.ttft_ms() <= budget_ms for o in ok) / len(os_), 4),
                  "cache_hits": sum(o.route == "cache" for o in ok),
                  "intent_ok": sum(o.intent == o.row["intent"] for o in ok)}
    return out


REQUIRED_KEYS = ("users", "rps", "avg_ms", "p50_ms", "p99_ms", "ttft_p99_ms", "goodput",
                 "cache_hit_rate", "refused", "errors", "lost")


def ratio_rows(levels: list[dict], baseline: list[dict]) -> list[dict]:
    """ours / baseline per level and key (None where either is missing or zero)."""
    base = {b["users"]: b for b in baseline}
    out = []
    for lv in levels:
        b = base.get(lv["users"])
        if b is None:
            continue
        row: dict[str, Any] = {"users": lv["users"]}
        for k in ("rps", "avg_ms", "p50_ms", "p99_ms", "max_ms", "ttft_p50_ms", "ttft_p99_ms",
                  "goodput"):
            x, y = lv.get(k), b.get(k)
            row[k] = round(x / y, 3) if x is not None and y not in (None, 0) else None
        out.append(row)
    return out
