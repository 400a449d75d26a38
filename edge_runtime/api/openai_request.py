"""Parse an OpenAI chat-completions request into what the pipeline takes.

The last user message is the request; earlier user/assistant turns are the conversation the
local model sees (the pipeline's conversation memory windows them to its prompt budget).
System and developer messages are not used: the device's own system prompt
(``llm.system_prompt``) shapes every answer, so spoken answers stay short.

Parameters fall in three groups, as OpenAI-compatible servers usually treat them:

- honoured: ``model``, ``messages``, ``stream``;
- accepted and ignored (listed back in ``edge_runtime.ignored`` of the response): sampling
  and length settings (the device's ``llm.*`` settings apply: answers are cached and shared,
  so one request cannot retune them), bookkeeping fields, and keys this server does not know;
- refused with a 400 that names them, because ignoring them would give a wrong answer:
  ``n`` > 1, ``tools``/``functions``, ``logprobs``, a ``response_format`` other than text,
  audio output, and content parts other than text (images, audio, files).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import BadInputError

ROLES_SKIPPED = ("system", "developer")
IGNORED_KNOWN = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "seed", "stop", "user", "stream_options", "metadata", "store",
    "parallel_tool_calls", "service_tier", "logit_bias", "reasoning_effort", "verbosity",
    "prompt_cache_key", "safety_identifier", "web_search_options", "prediction"})


class ChatRequestError(BadInputError):
    """A request this endpoint cannot serve; ``param`` names the offending field."""

    def __init__(self, message: str, *, param: str | None = None,
                 code: str = "invalid_value", status: int = 400, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.param = param
        self.api_code = code
        self.http_status = status


@dataclass(frozen=True)
class ChatRequest:
    model: str
    text: str                                   # the last user message(s)
    history: tuple[tuple[str, str], ...]        # earlier (user, assistant) turns, oldest first
    stream: bool
    ignored: tuple[str, ...]                    # parameters accepted without effect


def parse_chat_request(body: Any, models: tuple[str, ...]) -> ChatRequest:
    if not isinstance(body, dict):
        raise ChatRequestError("the request body must be a JSON object",
                               hint='send {"model": ..., "messages": [...]}')
    model = _model(body, models)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ChatRequestError("'stream' must be true or false", param="stream",
                               code="invalid_type")
    _refuse_unsupported(body)
    text, history, skipped_system = _conversation(body.get("messages"),
                                                  "messages" in body)
    ignored = sorted(k for k in body if k not in _HONOURED and k not in _CHECKED)
    if skipped_system:
        ignored.append("system messages (llm.system_prompt applies)")
    return ChatRequest(model, text, history, bool(stream), tuple(ignored))


_HONOURED = frozenset({"model", "messages", "stream"})
# checked by _refuse_unsupported: harmless values are accepted silently
_CHECKED = frozenset({"n", "tools", "tool_choice", "functions", "function_call", "logprobs",
                      "top_logprobs", "response_format", "audio", "modalities"})


def _model(body: dict, models: tuple[str, ...]) -> str:
    if "model" not in body:
        raise ChatRequestError("missing required parameter: 'model'", param="model",
                               code="missing_required_parameter",
                               hint=f"use {models[0]!r} (GET /v1/models lists it)")
    model = body["model"]
    if not isinstance(model, str):
        raise ChatRequestError("'model' must be a string", param="model", code="invalid_type")
    if model not in models:
        raise ChatRequestError(f"the model {model!r} does not exist here; this device serves "
                               f"{', '.join(repr(m) for m in models)}", param="model",
                               code="model_not_found", status=404,
                               hint="GET /v1/models lists the models")
    return model


def _refuse(param: str, why: str, hint: str) -> ChatRequestError:
    return ChatRequestError(f"'{param}' is not supported: {why}", param=param,
                            code="unsupported_parameter", hint=hint)


def _refuse_unsupported(body: dict) -> None:
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise _refuse("n", f"n={n!r} asks for several choices and this device gives one",
                      "send n=1 or leave it out")
    for key in ("tools", "functions"):
        if body.get(key):
            raise _refuse(key, "this endpoint has no tool calling",
                          f"leave '{key}' out (the device's own skills answer tool-like "
                          "requests such as timers and device control)")
    choice = body.get("tool_choice")
    if choice not in (None, "none", "auto"):
        raise _refuse("tool_choice", "this endpoint has no tool calling",
                      "leave it out or send 'none'")
    if body.get("function_call") not in (None, "none", "auto"):
        raise _refuse("function_call", "this endpoint has no function calling",
                      "leave it out")
    if body.get("logprobs") or body.get("top_logprobs") is not None:
        param = "logprobs" if body.get("logprobs") else "top_logprobs"
        raise _refuse(param, "token log-probabilities are not reported",
                      "leave it out or send logprobs=false")
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        kind = fmt.get("type") if isinstance(fmt, dict) else fmt
        raise _refuse("response_format", f"{kind!r} output is not available (plain text "
                      "only)", "leave it out or send {\"type\": \"text\"}")
    modalities = body.get("modalities")
    if body.get("audio") is not None or (isinstance(modalities, list) and
                                         any(m != "text" for m in modalities)):
        raise _refuse("audio" if body.get("audio") is not None else "modalities",
                      "this endpoint answers in text",
                      "leave it out; POST /v1/audio speaks answers")


def _conversation(messages: Any, present: bool
                  ) -> tuple[str, tuple[tuple[str, str], ...], bool]:
    if not present:
        raise ChatRequestError("missing required parameter: 'messages'", param="messages",
                               code="missing_required_parameter",
                               hint='send "messages": [{"role": "user", "content": "..."}]')
    if not isinstance(messages, list) or not messages:
        raise ChatRequestError("'messages' must be a non-empty list of messages",
                               param="messages", code="invalid_type",
                               hint='send "messages": [{"role": "user", "content": "..."}]')
    turns: list[tuple[str, str]] = []
    user: list[str] = []            # user text since the last assistant message
    skipped = False
    last_role = ""
    for i, msg in enumerate(messages):
        role, content = _message(msg, i)
        last_role = role
        if role in ROLES_SKIPPED:
            skipped = True
        elif role == "user":
            user.append(content)
        elif user:                  # assistant after a user message: a complete turn
            turns.append(("\n".join(user), content))
            user = []
        elif turns:                 # two assistant messages in a row: one answer
            turns[-1] = (turns[-1][0], turns[-1][1] + "\n" + content)
        # an assistant message before any user message (a greeting) has no turn to join
    if last_role != "user":
        raise ChatRequestError(f"the last message must be from the user, not {last_role!r}",
                               param=f"messages[{len(messages) - 1}].role",
                               hint="end 'messages' with the user's request")
    return "\n".join(user), tuple(turns), skipped


def _message(msg: Any, i: int) -> tuple[str, str]:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise ChatRequestError(f"{where} must be an object with 'role' and 'content'",
                               param=where, code="invalid_type")
    role = msg.get("role")
    if role in ("tool", "function"):
        raise ChatRequestError(f"{where} has role {role!r}: this endpoint has no tool calling",
                               param=f"{where}.role", code="unsupported_parameter",
                               hint="send user and assistant messages only")
    if role not in ("system", "developer", "user", "assistant"):
        raise ChatRequestError(f"{where}.role must be 'system', 'developer', 'user' or "
                               f"'assistant', not {role!r}", param=f"{where}.role")
    if msg.get("tool_calls") or msg.get("function_call"):
        raise ChatRequestError(f"{where} carries tool calls: this endpoint has no tool "
                               "calling", param=f"{where}.tool_calls",
                               code="unsupported_parameter")
    content = msg.get("content")
    if content is None and role == "assistant":
        return role, ""
    return role, _content(content, f"{where}.content")


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ChatRequestError(f"{where} must be a string or a list of text parts, not "
                               f"{_kind(content)}", param=where, code="invalid_type",
                               hint='send "content": "..." or [{"type": "text", "text": "..."}]')
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("image_url", "input_image", "image"):
            raise ChatRequestError(f"{where}[{j}] is an image part: this device answers text "
                                   "only", param=f"{where}[{j}]", code="unsupported_content",
                                   hint="send the request as text parts")
        elif isinstance(kind, str) and kind != "text":
            raise ChatRequestError(f"{where}[{j}] is a {kind!r} part: this device takes text "
                                   "parts only", param=f"{where}[{j}]",
                                   code="unsupported_content",
                                   hint='send {"type": "text", "text": "..."} parts')
        else:
            raise ChatRequestError(f"{where}[{j}] must be a text part "
                                   '{"type": "text", "text": "..."}', param=f"{where}[{j}]",
                                   code="invalid_type")
    return "\n".join(texts)


def _kind(value: Any) -> str:
    return {dict: "an object", int: "a number", float: "a number", bool: "a boolean",
            type(None): "null"}.get(type(value), type(value).__name__)
