"""`edge-runtime ask --url URL`: the daemon's answer printed piece by piece as it arrives.

Asks ``POST /v1/ask`` with ``"stream": true`` and reads the NDJSON lines (see
``ask_stream``). A daemon that does not stream answers with the plain answer object; it is
printed whole, so the CLI works against either.
"""
from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import IO, Any

from ..errors import EdgeError


def _request(url: str, body: dict, token: str) -> urllib.request.Request:
    req = urllib.request.Request(url.rstrip("/") + "/v1/ask", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    return req


def _error(err: dict) -> EdgeError:
    return EdgeError(err.get("message", "the daemon reported an error"), hint=err.get("hint"),
                     code=err.get("code"), stage=err.get("stage", "api"))


def stream_events(url: str, text: str, token: str, budget_ms: float | None = None,
                  timeout_s: float = 60.0) -> Iterator[dict[str, Any]]:
    """The stream's events as dicts (``piece``, ``reset``, then ``answer``); an in-stream
    or HTTP error is raised as :class:`EdgeError`."""
    body: dict[str, Any] = {"text": text, "stream": True}
    if budget_ms is not None:
        body["budget_ms"] = budget_ms
    try:
        with urllib.request.urlopen(_request(url, body, token), timeout=timeout_s) as r:
            if "ndjson" not in r.headers.get("Content-Type", ""):
                yield {"type": "answer", **json.loads(r.read())}   # a daemon that does not stream
                return
            for line in r:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "error":
                    raise _error(event.get("error") or {})
                yield event
    except urllib.error.HTTPError as exc:
        try:
            err = json.loads(exc.read())["error"]
        except Exception:
            raise EdgeError(f"daemon answered HTTP {exc.code}", stage="api") from None
        raise _error(err) from None
    except urllib.error.URLError as exc:
        raise EdgeError(f"cannot reach the daemon at {url}: {exc.reason}", stage="api",
                        hint="start it with `edge-runtime serve`") from None


def print_stream(url: str, text: str, token: str, budget_ms: float | None, *,
                 as_json: bool, out: IO[str] | None = None,
                 err: IO[str] | None = None) -> dict[str, Any]:
    """Print pieces as they arrive (``as_json``: every event as one JSON line); returns the
    answer object."""
    out = out or sys.stdout
    err = err or sys.stderr
    answer: dict[str, Any] = {}
    printed = False
    for event in stream_events(url, text, token, budget_ms):
        kind = event.get("type")
        if as_json:
            print(json.dumps(event, ensure_ascii=False), file=out, flush=True)
        elif kind == "piece":
            piece = event["text"] if printed else event["text"].lstrip()
            print(piece, end="", file=out, flush=True)
            printed = printed or bool(piece)
        elif kind == "reset":
            print(file=out, flush=True)
            print("  [that answer broke off; answering again]", file=err, flush=True)
            printed = False
        if kind == "answer":
            answer = {k: v for k, v in event.items() if k != "type"}
    if not as_json:
        if not printed and answer.get("answer"):
            print(answer["answer"], end="", file=out)
        print(file=out, flush=True)
        t = answer.get("timings_ms") or {}
        print(f"  [{answer.get('route')}/{answer.get('device')}] {answer.get('reason')} — "
              f"first token {t.get('first_token')} ms, total {t.get('total')} ms", file=err)
    return answer
