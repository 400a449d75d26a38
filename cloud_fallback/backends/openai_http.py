"""OpenAI-compatible HTTP backend: streamed ``/chat/completions`` (vLLM, llama.cpp server, …).

Plain ``http.client`` in the worker thread (no event loop needed): each ``generate`` opens
its own connection and nothing is shared or locked, so the gateway's workers send their
requests concurrently (the server batches them). Only standard request
fields are sent (``model``, ``messages``, ``stream``, ``max_tokens``, ``temperature``,
``top_p``, ``seed``), so strict servers accept them.
"""
from __future__ import annotations

import http.client
import json
import logging
import os
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from edge_runtime.types import CancelToken, GenerationParams, Message

from .base import BackendError

log = logging.getLogger(__name__)
_MAX_LINE = 1 << 20


class OpenAIBackend:
    """Stream chat completions from ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``).

    ``timeout_s``: longest wait for the connection or for any byte of the response (a hung
    server fails the request after this many seconds); ``api_key``: sent as a Bearer token;
    ``parallel``: requests the server should get at once (``capacity``: the gateway runs
    that many workers by default).
    """

    def __init__(self, base_url: str, model: str, *, api_key: str = "",
                 timeout_s: float = 10.0, parallel: int = 8) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendError(f"--openai-url {base_url!r} is not an http(s) URL",
                               hint="e.g. http://127.0.0.1:8000/v1", retryable=False)
        if not model:
            raise BackendError("the openai backend needs a model name",
                               hint="pass --openai-model NAME", retryable=False)
        if parallel < 1:
            raise BackendError(f"--openai-parallel must be >= 1, got {parallel}",
                               hint="pass --openai-parallel N (the server's parallel slots)",
                               retryable=False)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._path = (parts.path or "") + "/chat/completions"
        self._url = base_url
        self.model_name = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self.capacity = parallel

    @classmethod
    def from_env(cls, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY",
                 timeout_s: float = 10.0, parallel: int = 8) -> OpenAIBackend:
        return cls(base_url, model, api_key=os.environ.get(api_key_env, ""), timeout_s=timeout_s,
                   parallel=parallel)

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self._timeout_s)

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        body = json.dumps({
            "model": self.model_name, "stream": True,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": params.max_new_tokens, "temperature": params.temperature,
            "top_p": params.top_p, "seed": params.seed}).encode()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        conn = self._connect()
        try:
            try:
                conn.request("POST", self._path, body=body, headers=headers)
                resp = conn.getresponse()
            except TimeoutError:
                raise BackendError(
                    f"{self._url} did not answer within {self._timeout_s:g} s") from None
            except OSError as exc:
                raise BackendError(f"cannot reach {self._url}: {exc}",
                                   hint="is the OpenAI-compatible server running?") from None
            if resp.status != 200:
                detail = resp.read(500).decode("utf-8", "replace").strip()
                raise BackendError(f"{self._url} answered HTTP {resp.status} {resp.reason}: "
                                   f"{detail}", retryable=resp.status >= 500)
            yield from self._events(resp, cancel)
        finally:
            conn.close()

    def _events(self, resp: http.client.HTTPResponse, cancel: CancelToken) -> Iterator[str]:
        while not cancel.cancelled:
            try:
                line = resp.readline(_MAX_LINE)
            except TimeoutError:
                raise BackendError(f"{self._url} sent nothing for {self._timeout_s:g} s "
                                   "mid-stream") from None
            except (OSError, http.client.HTTPException) as exc:
                raise BackendError(f"{self._url} broke the stream: {exc}") from None
            if not line:
                raise BackendError(f"{self._url} closed the stream before [DONE]")
            line = line.strip()
            if not line.startswith(b"data:"):
                continue                       # blank separators, comments, event: lines
            data = line[5:].strip()
            if data == b"[DONE]":   # a complete stream ends with a finish_reason first
                raise BackendError(f"{self._url} ended the stream without a finish_reason: the "
                                   "answer was cut short", hint="llama.cpp's python server "
                                   "does this to a request when another arrives: start it "
                                   "with --interrupt_requests false")
            try:
                event = json.loads(data)
                if "error" in event:
                    raise BackendError(f"{self._url} reported an error: {event['error']}")
                choice = event["choices"][0] if event.get("choices") else {}
                piece = (choice.get("delta") or {}).get("content")
            except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
                raise BackendError(f"{self._url} sent an unreadable event: {exc}") from None
            if piece:
                yield piece
            if choice.get("finish_reason"):
                return

    def close(self) -> None:
        return None
