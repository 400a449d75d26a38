"""`edge-runtime bench load`: open-loop load against the daemon's HTTP API, side by side
with an LLM-only baseline measured in the same run.

    edge-runtime bench load [--levels 1,10,50,100,200] [--duration 20] [--seed 1]
                            [--bursty] [--no-baseline] [--out DIR] [--json]
    edge-runtime bench load --url http://127.0.0.1:8080 [--baseline-url URL]
    edge-runtime bench load --soak 600 --rate 2          # RSS / fds over time
    edge-runtime bench load --faults [--rate 2]          # kill the cloud, redis, fill the
                                                         # disk, kill -9 the daemon

What one sweep does:

1. starts ``edge-cloud serve --backend embedded`` pinned to ``--cloud-cpu`` (1);
2. for each level (users; each user a Poisson process with a mean of one request per
   10 s, so 200 users are 20 requests/s) and each configuration — edge-runtime as
   configured, then the baseline (``skills.enabled=false cache.enabled=false
   scheduler.routing=local llm.max_batch=1``: every request straight to the local LLM,
   queued) — starts a fresh daemon pinned to ``--daemon-cpu`` (0) whose answer cache on
   disk carries over from the configuration's earlier levels (``--cold-cache``: empty for
   each level; level ``i`` starts each user at row ``3i`` of its list, so a level is not a
   replay of the one before), warms it up with requests that are never cached, then sends the level's schedule for ``--duration`` seconds from this
   process (pinned to ``--client-cpu``, 1), with rows from the committed workload
   (``benchmarks/load/workload.jsonl``: see ``benchmarks/load/workload.py``);
3. measures per request (client: from the intended send time; daemon: ``timings_ms``),
   per level (requests/s, avg/p50/p99/max, TTFT, goodput, cache hits and whether any
   was a wrong answer, route mix, refused, errors, lost, CPU per process from
   /proc/PID/stat) and checks that the daemon's own counts and timings (``/metrics``,
   ``timings_ms``) agree with the client's;
4. writes ``load.json``, ``load.md`` and ``load.png`` to ``--out`` and prints the table.

Same seed, same schedule and rows for both configurations; levels of one configuration
share users (level 50's users 0-9 send what level 10's did).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

try:
    from benchmarks.load import arrivals, procs, report, workload
    from benchmarks.load.client import run_schedule
    from benchmarks.load.stats import Provenance, ratio_rows, summarize
except ImportError:        # pragma: no cover - run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.load import arrivals, procs, report, workload
    from benchmarks.load.client import run_schedule
    from benchmarks.load.stats import Provenance, ratio_rows, summarize

LEVEL_ROW_STRIDE = 3        # level i starts every user at row 3i of its list
BASELINE_SETS = ["skills.enabled=false", "cache.enabled=false", "scheduler.routing=local",
                 "llm.max_batch=1"]
# never cached (personal), so the answer cache starts every level cold
WARMUP_TEXTS = ["hello there", "tell me a short story about my cat",
                "what should i do with my weekend"]


class RunTimeout(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edge-runtime bench load", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="1,10,50,100,200", help="users per level (comma list)")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load per level")
    p.add_argument("--seed", type=int, default=1, help="seed of the arrival schedule")
    p.add_argument("--rate-per-user", type=float, default=arrivals.RATE_PER_USER,
                   help="requests/s per user (default 0.1: one per 10 s)")
    p.add_argument("--bursty", action="store_true",
                   help="arrivals in bursts (same mean rate) instead of Poisson")
    p.add_argument("--burst-size", type=float, default=5.0, help="mean requests per burst")
    p.add_argument("--burst-spread-s", type=float, default=1.0, help="a burst lasts this long")
    p.add_argument("--no-baseline", action="store_true", help="skip the LLM-only baseline")
    p.add_argument("--cold-cache", action="store_true",
                   help="an empty answer cache for every level (default: one per "
                        "configuration, warm from the levels before, as on a running device)")
    p.add_argument("--url", default="", help="use this running daemon (no processes started)")
    p.add_argument("--baseline-url", default="", help="with --url: a running baseline daemon")
    p.add_argument("--token", default="", help="bearer token for --url/--baseline-url")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default: a new one under /tmp)")
    p.add_argument("--json", action="store_true", help="also print the JSON to stdout")
    p.add_argument("--workload", type=Path, default=workload.WORKLOAD_FILE)
    p.add_argument("--no-audio", action="store_true", help="skip the workload's audio rows")
    p.add_argument("--audio-dir", type=Path, default=None,
                   help="where synthesized WAVs are cached (default ~/.cache/edge-runtime/"
                        "bench-load-audio)")
    p.add_argument("--timeout-s", type=float, default=30.0,
                   help="a request without an answer this long after its intended send is lost")
    p.add_argument("--max-in-flight", type=int, default=1000, help="client-side bound")
    p.add_argument("--budget-ms", type=float, default=None,
                   help="send this budget with every request (default: the daemon's, 150 ms)")
    p.add_argument("--daemon-cpu", type=int, default=0)
    p.add_argument("--cloud-cpu", type=int, default=1)
    p.add_argument("--client-cpu", type=int, default=1)
    p.add_argument("--no-pin", action="store_true", help="do not pin processes to cores")
    p.add_argument("--llm-threads", type=int, default=1,
                   help="llm.threads of the daemon and threads of edge-cloud (1: one core each)")
    p.add_argument("--daemon-set", action="append", default=[], metavar="KEY=VALUE",
                   help="extra --set for every daemon this run starts (repeatable)")
    p.add_argument("--warmup", type=int, default=len(WARMUP_TEXTS),
                   help="uncached warm-up requests before each level")
    p.add_argument("--max-run-s", type=float, default=None,
                   help="stop the whole run after this long (default: from the plan)")
    p.add_argument("--soak", type=float, default=None, metavar="SECONDS",
                   help="soak mode: load at --rate for this long, sampling RSS and fds")
    p.add_argument("--faults", action="store_true", help="fault-injection mode (see soak.py)")
    p.add_argument("--rate", type=float, default=2.0, help="soak/faults: requests/s overall")
    p.add_argument("--sample-s", type=float, default=5.0, help="soak: sampling period")
    p.add_argument("--fault-s", type=float, default=10.0, help="faults: seconds per phase")
    return p


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Bench:
    """Processes, workload and settings shared by the levels of one run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows = workload.load(args.workload)
        self.rows_by_user = workload.by_user(self.rows)
        self.out = args.out or Path(tempfile.mkdtemp(prefix="edge-runtime-bench-load-"))
        self.out.mkdir(parents=True, exist_ok=True)
        self.logs = self.out / "logs"
        self.work = Path(tempfile.mkdtemp(prefix="edge-load-"))
        self.nonce = uuid.uuid4().hex[:6]
        self.notes: list[str] = []
        self.cloud: procs.Proc | None = None
        self.cloud_port = 0
        self.daemons: list[procs.Proc] = []
        self.audio: dict[str, bytes] = {}
        self.pin = not args.no_pin
        if self.pin:
            have = os.sched_getaffinity(0)
            want = {args.daemon_cpu, args.cloud_cpu, args.client_cpu}
            if not want <= have:
                self.notes.append(f"not pinned: CPUs {sorted(want - have)} are not available "
                                  f"(have {sorted(have)})")
                self.pin = False

    def cpu(self, which: str) -> int | None:
        return getattr(self.args, f"{which}_cpu") if self.pin else None

    # -- processes -----------------------------------------------------------------------
    def start_cloud(self) -> None:
        self.cloud_port = procs.free_port()
        self.cloud = procs.cloud_proc(self.cloud_port, self.logs / "cloud.log", self.cpu("cloud"),
                                      threads=self.args.llm_threads).start()
        self.cloud.wait_ready(120)

    def daemon_sets(self, config: str, tag: str, extra: list[str] | None = None) -> list[str]:
        # warm (default): one answer cache per configuration, carried from level to level as
        # a running device's would be; --cold-cache: an empty one for every level
        cache_dir = self.work / (f"cache-{tag}" if self.args.cold_cache else
                                 f"cache-{tag.split('-')[0]}")
        sets = [f"cloud.endpoint=tcp://127.0.0.1:{self.cloud_port}", f"cache.disk_dir={cache_dir}",
                f"llm.threads={self.args.llm_threads}"]
        sets += BASELINE_SETS if config == "baseline" else []
        return sets + list(self.args.daemon_set) + list(extra or [])

    def start_daemon(self, config: str, tag: str, extra: list[str] | None = None,
                     sets: list[str] | None = None, port: int | None = None
                     ) -> tuple[procs.Proc, str]:
        port = port or procs.free_port()
        d = procs.daemon_proc(port, self.logs / f"daemon-{tag}.log", self.cpu("daemon"),
                              sets if sets is not None else self.daemon_sets(config, tag, extra))
        self.daemons.append(d)
        url = f"http://127.0.0.1:{port}"
        d.start().wait_ready(180, http=url)
        return d, url

    def close(self) -> None:
        for d in self.daemons:
            with contextlib.suppress(Exception):
                d.stop()
        if self.cloud is not None:
            with contextlib.suppress(Exception):
                self.cloud.stop()
        import shutil
        shutil.rmtree(self.work, ignore_errors=True)

    # -- audio ---------------------------------------------------------------------------
    def prepare_audio(self) -> None:
        texts = [r["text"] for r in self.rows if r.get("audio")]
        if not texts:
            return
        if self.args.no_audio:
            self.notes.append(f"audio rows skipped (--no-audio): {len(texts)} of {len(self.rows)}")
            return
        from benchmarks.load.audio import prepare
        self.audio, note = prepare(texts, self.args.audio_dir)
        if note:
            self.notes.append(note)

    def voice_ok(self, url: str) -> bool:
        health = procs.get_json(url + "/healthz") or {}
        return health.get("voice") == "ok"

    # -- one level -----------------------------------------------------------------------
    def warm_up(self, url: str, audio_ok: bool) -> None:
        for text in WARMUP_TEXTS[:self.args.warmup]:
            procs.post_json(url + "/v1/ask", {"text": text}, 60)
        if audio_ok and self.audio:
            skill_audio = [r["text"] for r in self.rows if r.get("audio") and not r["cacheable"]]
            if skill_audio:
                import urllib.request
                req = urllib.request.Request(url + "/v1/audio?speak=0",
                                             data=self.audio[skill_audio[0]],
                                             headers={"Content-Type": "audio/wav"})
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(req, timeout=60).read()

    def wait_idle(self, url: str, limit_s: float) -> None:
        """Until the daemon has nothing in flight (lost requests may still be running)."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            h = procs.get_json(url + "/healthz", 2.0)
            if h is None or not h.get("in_flight"):
                return
            time.sleep(0.25)

    def run_level(self, config: str, users: int, url: str | None,
                  provenance: Provenance, index: int = 0) -> dict:
        a = self.args
        tag = f"{config}-{users}"
        daemon = None
        if url is None:
            daemon, url = self.start_daemon(config, tag)
        audio_ok = self.voice_ok(url)
        self.warm_up(url, audio_ok)
        sched = arrivals.schedule(users, a.duration, a.seed, is_bursty=a.bursty,
                                  rate_per_user=a.rate_per_user, burst_size=a.burst_size,
                                  burst_spread_s=a.burst_spread_s)
        pids = {"daemon": daemon.pid if daemon else None,
                "cloud": self.cloud.pid if self.cloud else None, "generator": os.getpid()}
        cpu0 = {k: procs.cpu_seconds(p) if p else None for k, p in pids.items()}
        m0 = procs.parse_metrics(procs.get_text(url + "/metrics"))
        busy0, t0 = procs.machine_cpu(), time.monotonic()
        outcomes, wall = asyncio.run(run_schedule(
            url, sched, self.rows_by_user, timeout_s=a.timeout_s, max_in_flight=a.max_in_flight,
            audio=self.audio if audio_ok else {}, budget_ms=a.budget_ms, token=a.token,
            session_prefix=f"{self.nonce}-{tag}-", k_offset=LEVEL_ROW_STRIDE * index))
        elapsed = time.monotonic() - t0
        busy1 = procs.machine_cpu()
        cpu1 = {k: procs.cpu_seconds(p) if p else None for k, p in pids.items()}
        self.wait_idle(url, a.timeout_s)
        m1 = procs.parse_metrics(procs.get_text(url + "/metrics"))
        provenance.add(outcomes)
        write_requests(self.out / f"requests-{tag}.jsonl", outcomes)
        lv = summarize(outcomes, users=users, duration_s=a.duration,
                       budget_ms=a.budget_ms or 150.0, timeout_s=a.timeout_s, wall_s=wall,
                       provenance=provenance)
        lv["cpu"] = {k: round(100.0 * (cpu1[k] - cpu0[k]) / elapsed, 1)
                     if cpu0[k] is not None and cpu1[k] is not None else None for k in pids}
        busy = procs.busy_share(busy0, busy1)
        lv["machine_busy"] = {k: v for k, v in busy.items() if k in ("cpu", "cpu0", "cpu1")}
        ours = sum(v or 0.0 for v in lv["cpu"].values())
        lv["other_cpu"] = round(max(0.0, busy.get("cpu", 0.0) * 100 * (len(busy) - 1) - ours), 1)
        lv["loadavg_1m"] = round(os.getloadavg()[0], 2)
        lv["daemon"] = daemon_agreement(m0, m1, outcomes, lv)
        if not audio_ok and any(o.row.get("audio") for o in outcomes):
            lv["audio_note"] = "voice unavailable in the daemon: audio rows skipped"
        if daemon is not None:
            if not daemon.alive():
                lv["daemon_exit"] = daemon.proc.returncode
                self.notes.append(f"{config} daemon exited ({daemon.proc.returncode}) during the "
                                  f"{users}-user level; its log {daemon.log} ends: "
                                  f"{daemon.tail(2)!r}")
            daemon.stop()
            self.daemons.remove(daemon)
        return lv


def write_requests(path: Path, outcomes: list) -> None:
    """Every request of a level, one JSON line each, for a closer look at its tail."""
    import json
    with open(path, "w", encoding="utf-8") as f:
        for o in outcomes:
            b = o.body or {}
            f.write(json.dumps({
                "kind": o.row.get("kind"), "text": o.row.get("text"),
                "intended_s": round(o.intended, 4), "status": o.status,
                "latency_ms": o.latency_ms, "route": b.get("route"),
                "reason": b.get("reason") or o.message, "timings_ms": b.get("timings_ms"),
            }) + "\n")


def daemon_agreement(m0: dict, m1: dict, outcomes: list, lv: dict) -> dict:
    """The daemon's own counts and times over the level (``/metrics`` deltas) next to the
    client's: ok requests, mean ``total`` (histogram vs the answers' ``timings_ms``), routes."""
    d = procs.metric_delta(m0, m1, "edge_")
    ok = d.get('edge_requests_total{outcome="ok"}')
    err = d.get('edge_requests_total{outcome="error"}')
    count = d.get('edge_stage_seconds_count{stage="total"}')
    total = d.get('edge_stage_seconds_sum{stage="total"}')
    routes: dict[str, float] = {}
    for k, v in d.items():
        if k.startswith("edge_route_total{") and 'route="' in k:
            r = k.split('route="', 1)[1].split('"', 1)[0]
            routes[r] = routes.get(r, 0.0) + v
    answered = [o for o in outcomes if o.status == "ok"]
    body_ms = [o.timings["total"] for o in answered if o.timings.get("total") is not None]
    out = {"ok": ok, "error": err, "routes": {k: int(v) for k, v in sorted(routes.items()) if v},
           "mean_total_ms": round(1000 * total / count, 2) if count else None,
           "answers_mean_total_ms": round(sum(body_ms) / len(body_ms), 2) if body_ms else None}
    lost = lv["lost"]
    counts_ok = ok is not None and len(answered) <= ok <= len(answered) + lost
    means_ok = (out["mean_total_ms"] is None or out["answers_mean_total_ms"] is None
                or ok != len(answered)
                or abs(out["mean_total_ms"] - out["answers_mean_total_ms"]) <= 1.0)
    out["agree"] = bool(counts_ok and means_ok and lv["timing"]["server_longer"] == 0)
    return out


def progress(config: str, lv: dict) -> str:
    t = lv["timing"]
    return (f"[load] {config:8s} {lv['users']:>3} users: {lv['sent']} sent, {lv['rps']} rps, "
            f"p50 {lv['p50_ms']} ms, p99 {lv['p99_ms']} ms, ttft p99 {lv['ttft_p99_ms']} ms, "
            f"goodput {lv['goodput']}, cache {lv['cache_hit_rate']}, refused {lv['refused']}, "
            f"errors {lv['errors']}, lost {lv['lost']}; cpu {lv['cpu']}; "
            f"client-daemon gap p50 {t['gap_p50_ms']} ms; agree {lv['daemon']['agree']}")


def sweep(bench: Bench) -> dict:
    a = bench.args
    levels = [int(x) for x in a.levels.split(",") if x.strip()]
    configs: list[tuple[str, str | None]] = []
    if a.url:
        configs.append(("edge", a.url.rstrip("/")))
        if a.baseline_url and not a.no_baseline:
            configs.append(("baseline", a.baseline_url.rstrip("/")))
        elif not a.no_baseline:
            bench.notes.append("no baseline: --url without --baseline-url")
    else:
        configs.append(("edge", None))
        if not a.no_baseline:
            configs.append(("baseline", None))
    for url in (u for _, u in configs if u):
        if not url.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]")):
            raise SystemExit(f"bench load: {url} is not a loopback address")
    bench.prepare_audio()
    if bench.pin:
        os.sched_setaffinity(0, {a.client_cpu})
    log(f"[load] {len(levels)} levels x {len(configs)} configurations x {a.duration:g} s "
        f"({'bursty' if a.bursty else 'Poisson'}, {a.rate_per_user:g} req/s per user); "
        f"output in {bench.out}")
    if any(u is None for _, u in configs):
        bench.start_cloud()
    result: dict = {"levels": [], "baseline": []}
    prov = {name: Provenance() for name, _ in configs}
    for index, users in enumerate(levels):   # configurations interleaved, level by level
        for name, url in configs:
            lv = bench.run_level(name, users, url, prov[name], index)
            result["levels" if name == "edge" else "baseline"].append(lv)
            log(progress(name, lv))
    result["ratios"] = ratio_rows(result["levels"], result["baseline"])
    small = [lv["users"] for lv in result["levels"] if lv["sent"] < 100]
    if small:
        bench.notes.append(f"levels {small} sent fewer than 100 requests in {a.duration:g} s: "
                           "their p99 is close to their max; a longer --duration gives more")
    return result


def meta(bench: Bench, argv: list[str]) -> dict:
    a = bench.args
    return {"command": "edge-runtime bench load " + " ".join(shlex.quote(x) for x in argv),
            "duration_s": a.duration, "seed": a.seed, "bursty": a.bursty,
            "rate_per_user": a.rate_per_user, "timeout_s": a.timeout_s,
            "budget_ms": a.budget_ms or 150.0,
            "pinning": {"daemon": bench.cpu("daemon"), "cloud": bench.cpu("cloud"),
                        "generator": bench.cpu("client")} if bench.pin else None,
            "daemon_sets": bench.daemon_sets("edge", "LEVEL") if not a.url else None,
            "baseline_sets": BASELINE_SETS, "cpus": os.cpu_count(),
            "workload_file": str(a.workload.resolve().relative_to(procs.REPO))
            if a.workload.resolve().is_relative_to(procs.REPO) else str(a.workload),
            "workload": workload.summary(bench.rows), "notes": bench.notes,
            "logs": str(bench.logs)}


def write_outputs(bench: Bench, result: dict) -> None:
    out = bench.out
    report.write_json(result, out / "load.json")
    sweep_run = "levels" in result
    (out / "load.md").write_text(report.markdown(result) if sweep_run
                                 else report.soak_markdown(result), encoding="utf-8")
    note = None
    if sweep_run and (result.get("levels") or result.get("baseline")):
        note = report.plot(result, out / "load.png")
    elif "soak" in result and result["soak"]["samples"]:
        note = report.soak_plot(result, out / "load.png")
    if note:
        log(f"[load] {note}")
        result["meta"]["notes"].append(note)
        report.write_json(result, out / "load.json")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if (args.soak or args.faults) and args.url:
        log("[load] --soak/--faults start their own processes: drop --url")
        return 2
    bench = Bench(args)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    runs = len(levels) * (1 if args.no_baseline else 2)
    if args.soak or args.faults:
        plan = (args.soak or 0) + (8 * args.fault_s if args.faults else 0) + 300
    else:
        plan = runs * (args.duration + args.timeout_s + 60) + 180
    max_s = args.max_run_s or plan

    def on_alarm(signum, frame):
        raise RunTimeout(f"the run took longer than {max_s:.0f} s (--max-run-s)")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(max_s)))
    try:
        if args.soak or args.faults:
            from benchmarks.load import soak
            result = soak.run(bench)
        else:
            result = sweep(bench)
        result["meta"] = meta(bench, argv)
        write_outputs(bench, result)
    except RunTimeout as exc:
        log(f"[load] stopped: {exc}")
        return 1
    except RuntimeError as exc:
        log(f"[load] failed: {exc}")
        return 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        bench.close()
    if "levels" in result:
        log(report.terminal_table(result))
        for note in result["meta"]["notes"]:
            log(f"note: {note}")
    else:
        log(report.soak_text(result))
    log(f"[load] wrote {bench.out}/load.json, load.md" +
        (", load.png" if (bench.out / "load.png").exists() else ""))
    if args.json:
        import json
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
