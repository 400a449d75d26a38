"""The load benchmark's outputs: terminal table, Markdown, JSON and the PNG plot."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .stats import ratio_rows

ROUTES = ("skill", "cache", "local", "cloud")

LEGEND = """\
- latency (avg, p50, p99, max) runs from each request's **intended** send time (open-loop
  Poisson schedule) to its response; lost requests count as the timeout; refused requests
  are apart (`refused`: count and median ms).
- ttft: the client latency minus the daemon's time after its first token; goodput: share
  of all requests sent whose ttft met the budget.
- audio rows (`POST /v1/audio`, answer not spoken) include speech recognition in their
  latency and ttft.
- route %: skill / cache / local / cloud shares of the answered requests; cache: hit rate
  over answered requests.
- cpu %: daemon / edge-cloud / this generator, of one core, over the level.
- ratio rows: edge-runtime ÷ baseline (below 1 is better for times, above 1 for rps and
  goodput)."""


def _f(x: Any, nd: int = 0) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _ms(x: Any) -> str:
    if x is None:
        return "–"
    return f"{x / 1000:.1f}s" if x >= 10_000 else f"{x:.0f}"


def _routes(lv: dict) -> str:
    mix = lv.get("route_mix") or {}
    return "/".join(f"{100 * mix.get(r, 0):.0f}" for r in ROUTES)


def _cpu(lv: dict) -> str:
    c = lv.get("cpu") or {}
    return "/".join(_f(c.get(k)) for k in ("daemon", "cloud", "generator"))


HEADER = ["users", "run", "sent", "rps", "avg", "p50", "p99", "max", "ttft50", "ttft99",
          "good%", "cache%", "route% s/c/l/cl", "refused (ms)", "err", "lost", "cpu% d/c/g"]


def _row(name: str, lv: dict) -> list[str]:
    refused = f"{lv['refused']}" + (f" ({_ms(lv.get('refused_p50_ms'))})" if lv["refused"] else "")
    return [str(lv["users"]), name, str(lv["sent"]), _f(lv["rps"], 1), _ms(lv["avg_ms"]),
            _ms(lv["p50_ms"]), _ms(lv["p99_ms"]), _ms(lv.get("max_ms")),
            _ms(lv.get("ttft_p50_ms")), _ms(lv["ttft_p99_ms"]),
            _f(None if lv["goodput"] is None else 100 * lv["goodput"], 1),
            _f(None if lv["cache_hit_rate"] is None else 100 * lv["cache_hit_rate"], 1),
            _routes(lv), refused, str(lv["errors"]), str(lv["lost"]), _cpu(lv)]


def ratio_text(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.0f}×" if v >= 10 else f"{v:.2f}×" if v >= 0.1 else f"{v:.3f}×"


def _ratio_row(r: dict) -> list[str]:
    def x(k: str) -> str:
        return ratio_text(r.get(k))
    return [str(r["users"]), "ratio", "", x("rps"), x("avg_ms"), x("p50_ms"), x("p99_ms"),
            x("max_ms"), x("ttft_p50_ms"), x("ttft_p99_ms"), x("goodput"), "", "", "", "", "",
            ""]


def table_rows(result: dict) -> list[list[str]]:
    base = {b["users"]: b for b in result.get("baseline", [])}
    ratios = {r["users"]: r for r in ratio_rows(result["levels"], result.get("baseline", []))}
    out = []
    for lv in result["levels"]:
        out.append(_row("edge", lv))
        if lv["users"] in base:
            out.append(_row("baseline", base[lv["users"]]))
            out.append(_ratio_row(ratios[lv["users"]]))
    for b in result.get("baseline", []):       # baseline levels without an edge row
        if b["users"] not in {lv["users"] for lv in result["levels"]}:
            out.append(_row("baseline", b))
    return out


def terminal_table(result: dict) -> str:
    rows = [HEADER] + table_rows(result)
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(c.rjust(w) if i not in (1, 12) else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def markdown(result: dict) -> str:
    meta = result.get("meta", {})
    out = ["# edge-runtime bench load", ""]
    if meta.get("command"):
        out += [f"`{meta['command']}`", ""]
    for note in meta.get("notes", []):
        out.append(f"- {note}")
    if meta.get("notes"):
        out.append("")
    out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(r) + " |" for r in table_rows(result)]
    out += ["", LEGEND, ""]
    out += ["## Checks", "",
            "| users | run | cache hits | wrong from cache | unverified | intent ok | "
            "client p50 / daemon p50 (ms) | gap p50 / p99 (ms) | daemon counted ok / client "
            "answered | agree | machine busy cpu0 / cpu1 | other processes (% of a core) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, levels in (("edge", result["levels"]), ("baseline", result.get("baseline", []))):
        for lv in levels:
            cc, t, d = lv.get("cache_check") or {}, lv.get("timing") or {}, lv.get("daemon") or {}
            busy = lv.get("machine_busy") or {}
            out.append(
                f"| {lv['users']} | {name} | {cc.get('hits', '–')} | {cc.get('wrong', '–')} | "
                f"{cc.get('unverified', '–')} | {_f(lv.get('intent_accuracy'), 3)} | "
                f"{_ms(t.get('client_p50_ms'))} / {_ms(t.get('server_p50_ms'))} | "
                f"{_f(t.get('gap_p50_ms'), 1)} / {_f(t.get('gap_p99_ms'), 1)} | "
                f"{_f(d.get('ok'))} / {lv['answered']} | {_f(d.get('agree'))} | "
                f"{_f(busy.get('cpu0'), 2)} / {_f(busy.get('cpu1'), 2)} | "
                f"{_f(lv.get('other_cpu'))} |")
    wrong = [e for lv in result["levels"] + result.get("baseline", [])
             for e in (lv.get("cache_check") or {}).get("examples", [])]
    if wrong:
        out += ["", "Wrong answers from the cache (examples):", ""]
        out += [f"- `{e['text']}`: {e['why']}" for e in wrong[:10]]
    if meta.get("workload"):
        w = meta["workload"]
        out += ["", "## Workload", "",
                f"`{meta.get('workload_file')}` ({w['rows']} rows, {w['users']} users, digest "
                f"{w['digest']}; generated by `python -m benchmarks.load.workload`): "
                + ", ".join(f"{k} {100 * v:.1f} %" for k, v in w["kinds"].items())
                + f"; {w['distinct_texts']} distinct texts."]
    return "\n".join(out) + "\n"


def write_json(result: dict, path: Path) -> None:
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def plot(result: dict, path: Path) -> str | None:
    """The latency-vs-load PNG; returns a note instead when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[dev]'): no PNG written"
    fig, (ax, ag) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, levels, color in (("edge-runtime", result["levels"], "tab:blue"),
                                ("baseline (LLM only)", result.get("baseline", []), "tab:red")):
        if not levels:
            continue
        users = [lv["users"] for lv in levels]
        for key, style, label in (("p50_ms", "-o", "p50"), ("p99_ms", "--s", "p99"),
                                  ("ttft_p99_ms", ":^", "ttft p99")):
            ys = [lv[key] if lv[key] is not None else float("nan") for lv in levels]
            ax.plot(users, ys, style, color=color, label=f"{name} {label}", alpha=0.9)
        ag.plot(users, [100 * (lv["goodput"] or 0) for lv in levels], "-o", color=color,
                label=name)
    budget = (result["levels"] or result.get("baseline") or [{}])[0].get("budget_ms")
    if budget:
        ax.axhline(budget, color="gray", lw=0.8)
        ax.text(0.01, budget * 1.08, f"{budget:.0f} ms budget", color="gray", fontsize=8,
                transform=ax.get_yaxis_transform())
    users = sorted({lv["users"] for lv in result["levels"] + result.get("baseline", [])})
    for a in (ax, ag):
        a.set_xscale("log")
        a.set_xticks(users)
        a.set_xticklabels([str(u) for u in users])
        a.minorticks_off()
        a.set_xlabel("users (one request / 10 s each)")
        a.grid(True, alpha=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("latency from intended send (ms)")
    ax.legend(fontsize=7)
    ag.set_ylabel("goodput: first token within budget (%)")
    ag.set_ylim(0, 105)
    ag.legend(fontsize=8)
    fig.suptitle("edge-runtime bench load: latency vs load", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# -- soak and faults -----------------------------------------------------------------------
FAULT_HEADER = ["phase", "sent", "answered", "refused", "errors", "unreachable", "lost",
                "p50", "p99", "routes", "detail"]


def _fault_rows(faults: dict) -> list[list[str]]:
    rows = []
    for p in faults["phases"]:
        detail = {k: v for k, v in p.items() if k not in FAULT_HEADER and k not in
                  ("codes", "p50_ms", "p99_ms")}
        if p.get("codes"):
            detail["codes"] = p["codes"]
        rows.append([p["phase"], str(p["sent"]), str(p["answered"]), str(p["refused"]),
                     str(p["errors"]), str(p["unreachable"]), str(p["lost"]), _ms(p["p50_ms"]),
                     _ms(p["p99_ms"]), " ".join(f"{k}:{v}" for k, v in sorted(p["routes"].items())),
                     json.dumps(detail, ensure_ascii=False)])
    return rows


def _trend_line(name: str, t: dict, unit: str) -> str:
    if not t.get("samples"):
        return f"{name}: no samples"
    return (f"{name}: first {t['first']} {unit}, last {t['last']} {unit}, max {t['max']} {unit}, "
            f"slope {t['slope_per_min']} {unit}/min (second half "
            f"{t['slope_per_min_second_half']}): {'flat' if t['flat'] else 'NOT flat'}")


def soak_text(result: dict) -> str:
    if "faults" in result:
        f = result["faults"]
        rows = [FAULT_HEADER] + _fault_rows(f)
        widths = [max(len(r[i]) for r in rows) for i in range(len(FAULT_HEADER) - 1)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1]
                 for r in rows]
        lines.append(f"lost 0 outside the daemon kill: {f['lost_zero_outside_the_daemon_kill']}; "
                     f"daemon kill lost <= in flight: {f['daemon_kill_lost_within_in_flight']}; "
                     f"disk cache survived kill -9: {f['disk_cache_survived']}")
        lines += [f"note: {n}" for n in f["notes"]]
        return "\n".join(lines)
    s = result["soak"]
    lv = s["load"]
    return "\n".join([
        f"soak {s['seconds']:g} s at {s['rate']:g} req/s: sent {lv['sent']}, answered "
        f"{lv['answered']}, refused {lv['refused']}, errors {lv['errors']}, lost {lv['lost']}, "
        f"p50 {lv['p50_ms']} ms, p99 {lv['p99_ms']} ms, daemon cpu {lv['cpu']['daemon']} %",
        _trend_line("daemon RSS", s["rss_mb"], "MB"), _trend_line("daemon fds", s["fds"], ""),
        _trend_line("edge-cloud RSS", s["cloud_rss_mb"], "MB")])


def soak_markdown(result: dict) -> str:
    meta = result.get("meta", {})
    out = ["# edge-runtime bench load (" + ("faults" if "faults" in result else "soak") + ")", ""]
    if meta.get("command"):
        out += [f"`{meta['command']}`", ""]
    out += [f"- {n}" for n in meta.get("notes", [])]
    if "faults" in result:
        out += ["", "| " + " | ".join(FAULT_HEADER) + " |", "|" + "---|" * len(FAULT_HEADER)]
        out += ["| " + " | ".join(r[:-1] + [f"`{r[-1]}`"]) + " |"
                for r in _fault_rows(result["faults"])]
        out += [""] + [f"- {line}" for line in soak_text(result).splitlines()[-1 - len(
            result["faults"]["notes"]):]]
    else:
        out += [""] + [f"- {line}" for line in soak_text(result).splitlines()]
    return "\n".join(out) + "\n"


def soak_plot(result: dict, path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[dev]'): no PNG written"
    samples = result["soak"]["samples"]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ts = [s["t"] for s in samples]
    ax.plot(ts, [s["rss_mb"] for s in samples], "-", label="daemon RSS (MB)")
    ax.plot(ts, [s["cloud_rss_mb"] for s in samples], "-", label="edge-cloud RSS (MB)")
    ax2 = ax.twinx()
    ax2.plot(ts, [s["fds"] for s in samples], ":", color="gray", label="daemon open fds")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB")
    ax2.set_ylabel("fds")
    ax.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
