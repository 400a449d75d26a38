"""The open-loop HTTP client: sends each request at its scheduled time, whatever the
state of earlier ones, and records what came back (``stats.Outcome``).

Bounded: at most ``max_in_flight`` requests open at once (a request that must wait for a
slot still has its latency counted from its intended time), and each request has
``timeout_s`` from its intended time to get an answer or an error, else it is lost.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import Callable, Sequence

import aiohttp

from .arrivals import Arrival
from .stats import Outcome


def row_for(rows_by_user: dict[int, list[dict]], a: Arrival,
            k_offset: int = 0) -> tuple[dict, str]:
    """The row a user sends as its k-th request (from row ``k_offset`` of its list on: levels
    of a sweep start users at different rows, so a warm cache is not fed a replay of the
    level before), and a tag that keeps sessions apart when the workload wraps (more users
    than it has, or more requests than a user's rows)."""
    users = sorted(rows_by_user)
    rows = rows_by_user[users[a.user % len(users)]]
    k = a.k + k_offset
    u_wrap, k_wrap = a.user // len(users), k // len(rows)
    tag = "" if not (u_wrap or k_wrap) else (f"~{k_wrap}" if not u_wrap else f"~{u_wrap}.{k_wrap}")
    return rows[k % len(rows)], tag


def request_body(row: dict, session_prefix: str, wrap: str = "",
                 budget_ms: float | None = None) -> dict:
    body: dict = {"text": row["text"]}
    if row.get("session"):
        body["session"] = f"{session_prefix}{row['session']}{wrap}"
    if budget_ms is not None:
        body["budget_ms"] = budget_ms
    return body


def classify(status: int, data: bytes, headers) -> tuple[str, dict | None, str | None, str | None]:
    """(status, answer object, error code, message) of one HTTP response."""
    try:
        obj = json.loads(data.decode("utf-8")) if data else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        obj = None
    if status == 200 and isinstance(obj, dict) and "route" in obj:
        return "ok", obj, None, None
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        code, msg = err.get("code"), err.get("message")
        if status == 503 and code == "overloaded":
            return "refused", None, code, msg
        return "error", None, code, msg
    return "error", None, f"http_{status}", (data[:120].decode("utf-8", "replace")
                                             if data else None)


async def run_schedule(url: str, arrivals: Sequence[Arrival], rows_by_user: dict[int, list[dict]],
                       *, timeout_s: float = 30.0, max_in_flight: int = 1000,
                       audio: dict[str, bytes] | None = None, session_prefix: str = "",
                       budget_ms: float | None = None, token: str = "",
                       clock: Callable[[], float] = time.monotonic,
                       lead_s: float = 0.2, k_offset: int = 0) -> tuple[list[Outcome], float]:
    """Send ``arrivals`` open-loop; return the outcomes (in schedule order) and the wall
    time from the level start to the last response (or give-up)."""
    audio = audio or {}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    sem = asyncio.Semaphore(max_in_flight)
    conn = aiohttp.TCPConnector(limit=max_in_flight, limit_per_host=max_in_flight)
    start = clock() + lead_s
    outcomes: list[Outcome] = []
    last_done = [start]

    async def one(session: aiohttp.ClientSession, o: Outcome, wrap: str) -> None:
        deadline = start + o.intended + timeout_s
        row = o.row
        try:
            async with sem:
                o.sent = clock() - start
                remaining = deadline - clock()
                if remaining <= 0:
                    raise asyncio.TimeoutError
                tmo = aiohttp.ClientTimeout(total=remaining)
                if row.get("audio"):
                    req = session.post(url + "/v1/audio?speak=0", data=audio[row["text"]],
                                       headers={**headers, "Content-Type": "audio/wav"},
                                       timeout=tmo)
                else:
                    body = request_body(row, session_prefix, wrap, budget_ms)
                    o.session = body.get("session")
                    req = session.post(url + "/v1/ask", json=body, headers=headers, timeout=tmo)
                async with req as resp:
                    data = await resp.read()
                    o.done = clock() - start
                    o.http = resp.status
                    o.retry_after = resp.headers.get("Retry-After")
                    o.status, o.body, o.code, o.message = classify(resp.status, data,
                                                                   resp.headers)
        except asyncio.TimeoutError:
            o.status, o.code = "lost", "timeout"
        except asyncio.CancelledError:
            o.status, o.code = "lost", "timeout"
            raise
        except aiohttp.ClientConnectorError as exc:
            o.done = clock() - start
            o.status, o.code, o.message = "unreachable", "connect", str(exc)[:120]
        except (aiohttp.ClientError, ConnectionError) as exc:
            o.status, o.code, o.message = "lost", type(exc).__name__, str(exc)[:120]
        finally:
            last_done[0] = max(last_done[0], clock())

    async with aiohttp.ClientSession(connector=conn) as session:
        tasks = []
        for a in arrivals:
            row, wrap = row_for(rows_by_user, a, k_offset)
            o = Outcome(row=row, intended=a.t)
            outcomes.append(o)
            if row.get("audio") and row["text"] not in audio:
                o.status, o.code = "skipped", "no_audio"
                continue
            delay = start + a.t - clock()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session, o, wrap)))
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s + 5.0)
        for t in tasks:          # past every deadline: count them lost, stop them
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return outcomes, last_done[0] - start
