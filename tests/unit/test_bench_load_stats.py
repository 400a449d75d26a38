"""The load benchmark's statistics, accounting, cache check, JSON shape and report."""
from __future__ import annotations

import json

import pytest

from benchmarks.load import report
from benchmarks.load.stats import (REQUIRED_KEYS, Outcome, Provenance, cache_check, percentile,
                                   ratio_rows, summarize)
from benchmarks.load_bench import daemon_agreement


def test_percentile_linear_between_ranks() -> None:
    xs = list(range(1, 101))
    assert percentile(xs, 50) == pytest.approx(50.5)
    assert percentile(xs, 99) == pytest.approx(99.01)
    assert percentile(xs, 0) == 1 and percentile(xs, 100) == 100
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None
    assert percentile([3, 1, 2], 50) == 2
    with pytest.raises(ValueError):
        percentile(xs, 101)


def _row(kind="cacheable", group="q1", cacheable=True, intent="oos", audio=False) -> dict:
    return {"id": 0, "user": 0, "seq": 0, "kind": kind, "text": f"t {group}", "intent": intent,
            "group": group, "cacheable": cacheable, "session": None, "turn": 0, "audio": audio}


def _ok(intended, done, route="local", total=None, first=None, answer="a", row=None,
        intent="oos", sent=None) -> Outcome:
    total = (done - (sent if sent is not None else intended)) * 1000 if total is None else total
    return Outcome(row=row or _row(), intended=intended, sent=intended if sent is None else sent,
                   done=done, status="ok", http=200,
                   body={"route": route, "answer": answer, "intent": {"name": intent},
                         "timings_ms": {"total": total,
                                        "first_token": total if first is None else first}})


def test_accounting_latency_from_intended_time_and_lost_at_the_timeout() -> None:
    outs = [
        _ok(0.0, 0.1, route="skill"),                         # 100 ms, ttft 100
        _ok(1.0, 1.5, total=500, first=50),                   # 500 ms, ttft 50
        _ok(2.0, 4.0, sent=3.9, total=100, first=20),         # waited 1.9 s before sending
        Outcome(row=_row(), intended=3.0, sent=3.0, done=3.01, status="refused", http=503,
                code="overloaded", retry_after="1", message="busy: x"),
        Outcome(row=_row(), intended=4.0, sent=4.0, done=4.02, status="error", http=400,
                code="bad_input"),
        Outcome(row=_row(), intended=5.0, sent=5.0, status="lost", code="timeout"),
        Outcome(row=_row(audio=True), intended=6.0, status="skipped", code="no_audio"),
    ]
    lv = summarize(outs, users=10, duration_s=10.0, budget_ms=150.0, timeout_s=30.0)
    assert (lv["sent"], lv["answered"], lv["refused"], lv["errors"], lv["lost"],
            lv["skipped"]) == (6, 3, 1, 1, 1, 1)
    # latencies: 100, 500, 2000 ms and the lost one at 30 s
    assert lv["max_ms"] == 30000.0 and lv["p50_ms"] == pytest.approx(1250.0)
    assert lv["avg_ms"] == pytest.approx((100 + 500 + 2000 + 30000) / 4, abs=0.1)
    # ttft: 100, 50, 2000 - 80 = 1920 ms: two of six sent requests met 150 ms
    assert lv["goodput"] == pytest.approx(2 / 6, abs=1e-4)
    assert lv["ttft_p50_ms"] == pytest.approx((100 + 1920) / 2)
    assert lv["refused_p50_ms"] == pytest.approx(10.0) and lv["refused_without_retry_after"] == 0
    assert lv["refused_reasons"] == {"busy: x": 1}
    assert lv["failure_codes"] == {"bad_input": 1, "timeout": 1}
    assert lv["route_mix"] == {"local": pytest.approx(2 / 3, abs=1e-4),
                               "skill": pytest.approx(1 / 3, abs=1e-4)}
    assert lv["rps"] == pytest.approx(0.3) and lv["offered_rps"] == pytest.approx(0.6)
    assert lv["send_lag_p99_ms"] > 1800
    t = lv["timing"]
    assert t["n"] == 3 and t["server_longer"] == 0 and t["gap_p50_ms"] == pytest.approx(0.0)


def test_cache_check_finds_wrong_hits() -> None:
    prov = Provenance()
    miss = _ok(0, 0.5, route="local", answer="mars is far", row=_row(group="q1"))
    prov.add([miss])
    hits = [
        _ok(1, 1.001, route="cache", answer="mars is far", row=_row(group="q1")),     # right
        _ok(2, 2.001, route="cache", answer="mars is far", row=_row(group="q2")),     # wrong group
        _ok(3, 3.001, route="cache", answer="x", row=_row(group="q3", cacheable=False)),
        _ok(4, 4.001, route="cache", answer="mars is far", row=_row(group="q1"),
            intent="help"),                                                          # wrong intent
        _ok(5, 5.001, route="cache", answer="never seen", row=_row(group="q4")),      # unverified
    ]
    cc = cache_check(hits + [miss], prov)
    assert (cc["hits"], cc["wrong"], cc["unverified"]) == (5, 3, 1)
    assert any("q2" in e["why"] for e in cc["examples"])
    lv = summarize(hits + [miss], users=1, duration_s=10, budget_ms=150, timeout_s=30,
                   provenance=prov)
    assert lv["cache_hit_rate"] == pytest.approx(4 / 5, abs=1e-4)   # over cacheable rows
    assert lv["cache_share"] == pytest.approx(5 / 6, abs=1e-4)      # over all answered
    assert lv["cache_check"]["wrong"] == 3


def _result() -> dict:
    outs = [_ok(0.0, 0.05, route="skill"), _ok(1.0, 1.2, total=200, first=40)]
    lv = summarize(outs, users=1, duration_s=5, budget_ms=150, timeout_s=30,
                   provenance=Provenance())
    lv["cpu"] = {"daemon": 10.0, "cloud": 1.0, "generator": 0.5}
    base = dict(lv, p99_ms=lv["p99_ms"] * 2, goodput=0.5)
    return {"levels": [lv], "baseline": [base], "ratios": ratio_rows([lv], [base]),
            "meta": {"command": "edge-runtime bench load", "notes": ["a note"]}}


def test_json_shape() -> None:
    result = json.loads(json.dumps(_result()))
    assert set(result) >= {"levels", "baseline"}
    for row in result["levels"] + result["baseline"]:
        assert set(REQUIRED_KEYS) <= set(row)
        assert isinstance(row["users"], int) and isinstance(row["refused"], int)
        assert 0 <= row["goodput"] <= 1 and 0 <= row["cache_hit_rate"] <= 1
    assert result["ratios"][0]["p99_ms"] == pytest.approx(0.5)
    assert result["ratios"][0]["goodput"] == pytest.approx(2.0)


def test_report_renders(tmp_path) -> None:
    result = _result()
    text = report.terminal_table(result)
    assert "baseline" in text and "ratio" in text and "0.50×" in text and "2.00×" in text
    md = report.markdown(result)
    assert md.count("\n| 1 |") >= 2 and "a note" in md
    note = report.plot(result, tmp_path / "load.png")
    if note is None:
        assert (tmp_path / "load.png").read_bytes()[:4] == b"\x89PNG"


def test_daemon_agreement_compares_counts_and_means() -> None:
    outs = [_ok(0.0, 0.1, total=100.0), _ok(1.0, 1.3, total=300.0)]
    lv = summarize(outs, users=1, duration_s=5, budget_ms=150, timeout_s=30)
    m0 = {'edge_requests_total{outcome="ok"}': 5.0, 'edge_stage_seconds_count{stage="total"}': 5.0,
          'edge_stage_seconds_sum{stage="total"}': 1.0}
    m1 = {'edge_requests_total{outcome="ok"}': 7.0, 'edge_stage_seconds_count{stage="total"}': 7.0,
          'edge_stage_seconds_sum{stage="total"}': 1.4,
          'edge_route_total{device="cpu",route="local"}': 2.0}
    d = daemon_agreement(m0, m1, outs, lv)
    assert d["ok"] == 2 and d["mean_total_ms"] == pytest.approx(200.0) and d["agree"]
    assert d["routes"] == {"local": 2}
    m1['edge_requests_total{outcome="ok"}'] = 9.0          # the daemon saw more than answered
    assert not daemon_agreement(m0, m1, outs, lv)["agree"]
