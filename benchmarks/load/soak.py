"""Soak and fault modes of `edge-runtime bench load`.

``--soak SECONDS --rate R``: open-loop Poisson load at R requests/s (workload rows in
user order) against one daemon for SECONDS, sampling its RSS and open file descriptors
every ``--sample-s``: first / last / max and the least-squares slope (overall and over
the second half, after caches have filled), and whether that is flat.

``--faults``: the same load (``--rate``, default 2/s: sustainable on one core) through
phases of ``--fault-s`` seconds, each with one fault injected a second in and repaired
at its end:

- ``steady``: none (the reference);
- ``cloud_killed``: ``kill -9`` of edge-cloud a third in (requests in this phase carry
  ``budget_ms=1`` so the scheduler sends what the device cannot start at once to the
  cloud), restarted at the end;
- ``redis_stopped``: the redis-server this run started (the daemon's
  ``cache.redis_url``) stopped, started again at the end (skipped without redis-server);
- ``disk_full``: the answer cache directory is a small tmpfs, filled to ENOSPC, freed at
  the end (skipped when a tmpfs cannot be mounted: needs root);
- ``daemon_killed``: a few fresh questions asked (and answered from the cache), then
  ``kill -9`` of the daemon mid-load and a restart on the same port and cache directory;
  afterwards, with redis stopped so only the disk tier can answer, the same questions
  must come from the cache.

Per phase: answered / refused (503 overloaded) / errors (other clear error responses) /
unreachable (connection refused: the daemon was down, the client knew at once) / lost
(no answer and no error: a timeout, or the connection dropped mid-request). Lost must be
0 except for the requests in flight at the ``kill -9`` of the daemon itself.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

from . import arrivals, procs, workload
from .arrivals import Arrival
from .client import run_schedule
from .stats import Provenance, percentile, summarize


def slope_per_min(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (t seconds, value) in value per minute."""
    pts = [(t, v) for t, v in samples if v is not None]
    if len(pts) < 2:
        return None
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    if var == 0:
        return None
    return 60.0 * sum((t - mt) * (v - mv) for t, v in pts) / var


def trend(samples: list[tuple[float, float]], flat_abs: float, flat_rel: float) -> dict:
    vals = [v for _, v in samples if v is not None]
    if not vals:
        return {"samples": 0}
    half = [(t, v) for t, v in samples if t >= samples[-1][0] / 2]
    s_all, s_half = slope_per_min(samples), slope_per_min(half)
    span_min = (samples[-1][0] - samples[0][0]) / 60.0
    growth = (s_half if s_half is not None else s_all or 0.0) * span_min
    return {"samples": len(vals), "first": round(vals[0], 1), "last": round(vals[-1], 1),
            "max": round(max(vals), 1),
            "slope_per_min": None if s_all is None else round(s_all, 3),
            "slope_per_min_second_half": None if s_half is None else round(s_half, 3),
            "flat": abs(growth) <= max(flat_abs, flat_rel * vals[0])}


def _virtual_users(times: list[float], users: int = 200, offset: int = 0) -> list[Arrival]:
    """Requests at fixed-rate times, dealt to users in turn (their rows in order), from
    the ``offset``-th request on (so that consecutive phases go on through the rows)."""
    return [Arrival(t, (offset + i) % users, (offset + i) // users)
            for i, t in enumerate(times)]


def run(bench) -> dict:
    if bench.args.faults:
        return faults(bench)
    return soak(bench)


# -- soak --------------------------------------------------------------------------------
def soak(bench) -> dict:
    a = bench.args
    if bench.pin:
        os.sched_setaffinity(0, {a.client_cpu})
    bench.prepare_audio()
    bench.start_cloud()
    daemon, url = bench.start_daemon("edge", "soak")
    audio_ok = bench.voice_ok(url)
    bench.warm_up(url, audio_ok)
    sched = _virtual_users(arrivals.fixed_rate(a.rate, a.soak, a.seed))
    samples: list[dict] = []

    async def sampler(stop: asyncio.Event, t0: float) -> None:
        while not stop.is_set():
            samples.append({"t": round(time.monotonic() - t0, 1), "rss_mb": procs.rss_mb(daemon.pid),
                            "fds": procs.open_fds(daemon.pid),
                            "cloud_rss_mb": procs.rss_mb(bench.cloud.pid)})
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), a.sample_s)

    async def go():
        stop = asyncio.Event()
        task = asyncio.create_task(sampler(stop, time.monotonic()))
        try:
            return await run_schedule(url, sched, bench.rows_by_user, timeout_s=a.timeout_s,
                                      max_in_flight=a.max_in_flight,
                                      audio=bench.audio if audio_ok else {},
                                      session_prefix=f"{bench.nonce}-soak-")
        finally:
            stop.set()
            await task
    c0 = procs.cpu_seconds(daemon.pid)
    outcomes, wall = asyncio.run(go())
    cpu = procs.cpu_seconds(daemon.pid)
    lv = summarize(outcomes, users=int(round(a.rate / arrivals.RATE_PER_USER)),
                   duration_s=a.soak, budget_ms=a.budget_ms or 150.0, timeout_s=a.timeout_s,
                   wall_s=wall, provenance=Provenance())
    lv["cpu"] = {"daemon": round(100 * (cpu - c0) / max(wall, 1e-9), 1)
                 if cpu is not None and c0 is not None else None}
    daemon.stop()
    bench.daemons.remove(daemon)
    return {"soak": {"seconds": a.soak, "rate": a.rate, "load": lv, "samples": samples,
                     "rss_mb": trend([(s["t"], s["rss_mb"]) for s in samples], 5.0, 0.02),
                     "fds": trend([(s["t"], s["fds"]) for s in samples], 3.0, 0.0),
                     "cloud_rss_mb": trend([(s["t"], s["cloud_rss_mb"]) for s in samples],
                                           5.0, 0.02)}}


# -- faults ------------------------------------------------------------------------------
class TmpfsCache:
    """A small tmpfs on the cache directory (root only); ``fill`` writes it to ENOSPC."""

    def __init__(self, path: Path, size_mb: int = 8) -> None:
        self.path, self.size_mb, self.mounted, self.note = path, size_mb, False, None
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            self.note = "disk_full skipped: mounting a tmpfs needs root"
            return
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.note = f"disk_full skipped: cannot mount a tmpfs ({r.stderr.strip()[:120]})"
            return
        self.mounted = True

    @property
    def filler(self) -> Path:
        return self.path / "fill.bin"

    def fill(self) -> int:
        written = 0
        block = b"\0" * (1 << 16)
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                written += os.write(fd, block)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
            self.mounted = False


def _tally(outcomes) -> dict:
    out = {k: 0 for k in ("sent", "answered", "refused", "errors", "unreachable", "lost")}
    key = {"ok": "answered", "refused": "refused", "error": "errors",
           "unreachable": "unreachable", "lost": "lost"}
    codes: dict[str, int] = {}
    for o in outcomes:
        if o.status == "skipped":
            continue
        out["sent"] += 1
        out[key[o.status]] += 1
        if o.status != "ok":
            codes[o.code or "?"] = codes.get(o.code or "?", 0) + 1
    out["codes"] = codes
    lat = [o.latency_ms for o in outcomes if o.status == "ok"]
    out["p50_ms"] = None if not lat else round(percentile(lat, 50), 1)
    out["p99_ms"] = None if not lat else round(percentile(lat, 99), 1)
    routes: dict[str, int] = {}
    for o in outcomes:
        if o.status == "ok":
            routes[o.route] = routes.get(o.route, 0) + 1
    out["routes"] = routes
    return out


def _wait_health(url: str, pred, limit_s: float = 15.0) -> dict | None:
    end = time.monotonic() + limit_s
    h = None
    while time.monotonic() < end:
        h = procs.get_json(url + "/healthz", 2.0)
        if h is not None and pred(h):
            return h
        time.sleep(0.25)
    return h


def faults(bench) -> dict:
    a = bench.args
    if bench.pin:
        os.sched_setaffinity(0, {a.client_cpu})
    notes: list[str] = []
    bench.start_cloud()
    redis_port = procs.free_port()
    redis = procs.redis_proc(redis_port, bench.logs / "redis.log", bench.cpu("cloud"))
    if redis is None:
        notes.append("redis_stopped skipped: redis-server is not installed "
                     "(apt-get install redis-server)")
    else:
        redis.start().wait_ready(20)
    disk = TmpfsCache(bench.work / "cache-faults")     # the daemon's cache.disk_dir
    if disk.note:
        notes.append(disk.note)
    try:
        return _faults(bench, redis, redis_port, disk, notes)
    finally:
        if redis is not None:
            redis.stop(5)
        disk.close()


def _faults(bench, redis, redis_port: int, disk: "TmpfsCache", notes: list[str]) -> dict:
    a = bench.args
    port = procs.free_port()
    sets = bench.daemon_sets("edge", "faults")
    if redis is not None:
        sets.append(f"cache.redis_url=redis://127.0.0.1:{redis_port}/0")
    state = {}
    state["daemon"], url = bench.start_daemon("edge", "faults", sets=sets, port=port)
    bench.warm_up(url, False)
    phases: list[dict] = []
    seed, sent = [a.seed], [0]

    def load(budget_ms: float | None, action, name: str) -> dict:
        sched = _virtual_users(arrivals.fixed_rate(a.rate, a.fault_s, seed[0]),
                               offset=sent[0])
        seed[0] += 1
        sent[0] += len(sched)

        async def go():
            task = asyncio.create_task(run_schedule(
                url, sched, bench.rows_by_user, timeout_s=a.timeout_s, budget_ms=budget_ms,
                session_prefix=f"{bench.nonce}-{name}-"))
            info = await asyncio.to_thread(action) if action else {}
            outcomes, _ = await task
            return outcomes, info
        outcomes, info = asyncio.run(go())
        row = {"phase": name, **_tally(outcomes), **(info or {})}
        phases.append(row)
        procs_note = f"; {row.get('note')}" if row.get("note") else ""
        print(f"[load] fault {name}: sent {row['sent']}, answered {row['answered']}, refused "
              f"{row['refused']}, errors {row['errors']}, unreachable {row['unreachable']}, "
              f"lost {row['lost']}{procs_note}", flush=True, file=sys.stderr)
        return row

    def after(seconds: float) -> None:
        time.sleep(seconds)

    # 0. steady
    load(None, None, "steady")

    # 1. cloud killed mid-load, restarted at the end of the phase
    def kill_cloud() -> dict:
        t_kill = max(1.0, a.fault_s / 3)          # some requests are with the cloud by then
        after(t_kill)
        bench.cloud.kill9()
        after(max(0.0, a.fault_s - t_kill))
        bench.cloud = procs.cloud_proc(bench.cloud_port, bench.logs / "cloud.log",
                                       bench.cpu("cloud"), threads=a.llm_threads).start()
        bench.cloud.wait_ready(120)
        h = _wait_health(url, lambda h: h.get("cloud") == "up", 20)
        return {"recovered": bool(h and h.get("cloud") == "up")}
    load(1.0, kill_cloud, "cloud_killed")

    # 2. redis stopped, started again
    if redis is not None:
        def stop_redis() -> dict:
            after(1.0)
            redis.stop(5)
            after(max(0.0, a.fault_s - 1.0))
            redis.start().wait_ready(20)
            h = _wait_health(url, lambda h: (h.get("cache") or {}).get("redis") == "ok", 40)
            return {"recovered": bool(h and (h.get("cache") or {}).get("redis") == "ok"),
                    "cache_tiers_after": (h or {}).get("cache")}
        load(None, stop_redis, "redis_stopped")

    # 3. the cache disk full, then freed
    if disk.mounted:
        def fill_disk() -> dict:
            after(1.0)
            n = disk.fill()
            after(max(0.0, a.fault_s - 1.0))
            h = procs.get_json(url + "/healthz")
            disk.free()
            h2 = _wait_health(url, lambda h: (h.get("cache") or {}).get("disk") == "ok", 60)
            return {"filled_mb": round(n / 2**20, 1),
                    "disk_tier_while_full": ((h or {}).get("cache") or {}).get("disk"),
                    "recovered": bool(h2 and (h2.get("cache") or {}).get("disk") == "ok")}
        load(None, fill_disk, "disk_full")

    # 4. kill -9 of the daemon, restart; the disk cache must still answer
    probe = workload.CACHEABLE_QUESTIONS[-5:]
    before = []
    for q in probe:
        procs.post_json(url + "/v1/ask", {"text": q}, 60)
        st, b = procs.post_json(url + "/v1/ask", {"text": q}, 60)
        before.append((b or {}).get("route"))

    def kill_daemon() -> dict:
        after(a.fault_s / 2)
        in_flight = (procs.get_json(url + "/healthz", 1.0) or {}).get("in_flight")
        state["daemon"].kill9()
        bench.daemons.remove(state["daemon"])
        t = time.monotonic()
        state["daemon"], _ = bench.start_daemon("edge", "faults", sets=sets, port=port)
        return {"in_flight_at_kill": in_flight, "restart_s": round(time.monotonic() - t, 1)}
    row = load(None, kill_daemon, "daemon_killed")
    if redis is not None:
        redis.stop(5)          # only the disk tier can answer now
    after_routes = []
    for q in probe:
        st, b = procs.post_json(url + "/v1/ask", {"text": q}, 60)
        after_routes.append((b or {}).get("route"))
    if redis is not None:
        redis.start().wait_ready(20)
    row["disk_cache_after_restart"] = {
        "questions": len(probe), "cached_before": sum(r == "cache" for r in before),
        "from_cache_after": sum(r == "cache" for r in after_routes),
        "redis_stopped_during_check": redis is not None, "routes_after": after_routes}
    state["daemon"].stop()
    bench.daemons.remove(state["daemon"])
    ok = all(p["lost"] == 0 for p in phases if p["phase"] != "daemon_killed")
    killed = row["lost"] <= (row.get("in_flight_at_kill") or 0) + 1
    return {"faults": {"rate": a.rate, "phase_s": a.fault_s, "phases": phases, "notes": notes,
                       "lost_zero_outside_the_daemon_kill": ok,
                       "daemon_kill_lost_within_in_flight": killed,
                       "disk_cache_survived": row["disk_cache_after_restart"]["from_cache_after"]
                       == row["disk_cache_after_restart"]["cached_before"] > 0}}
