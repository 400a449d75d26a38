"""Render the model's own chat template (Jinja, from model_config.json) and fit it to the
context window: keep the system prompt, drop the oldest turns, then truncate.

A request's prompt is templated and tokenized once: the engine's ``prepare(messages)``
(:meth:`ChatPrompt.prepare`) returns a :class:`Prompt` (the messages, the templated text, its
token ids and the count the scheduler predicts with), which the conversation store measures,
the scheduler reads, the local engine decodes from (``generate(prompt, ...)`` fits it to the
context without tokenizing again when it fits) and the cloud gets the messages of.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from ..errors import ModelLoadError
from ..types import Message

log = logging.getLogger(__name__)

FALLBACK_TEMPLATE = (  # ChatML, used when the GGUF carried no template
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@dataclass(frozen=True)
class Prompt(Sequence[Message]):
    """One request's prompt, templated and tokenized once (by ``chat``, the engine's).

    ``ids``: the whole templated prompt's token ids (before any fitting to the context);
    ``tokens``: what the scheduler predicts with (``len(ids)`` capped at what the engine can
    prefill: the engine's ``prompt_tokens``). A prompt built without a local model
    (:meth:`untemplated`) has no ids and 0 tokens: only its messages travel (to the cloud).

    A prompt is also the sequence of its messages (``len``, iteration, indexing), so it goes
    wherever messages go (``generate``, the cloud client); an engine that prepared it
    decodes from its ids.
    """

    messages: tuple[Message, ...] = field(repr=False)
    text: str = field(default="", repr=False)
    ids: tuple[int, ...] = field(default=(), repr=False)
    tokens: int = 0
    chat: ChatPrompt | None = field(default=None, repr=False, compare=False)

    @classmethod
    def untemplated(cls, messages: Sequence[Message], tokens: int = 0) -> Prompt:
        return cls(tuple(messages), tokens=tokens)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    @overload
    def __getitem__(self, i: int) -> Message: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, i: int | slice) -> Message | tuple[Message, ...]:
        return self.messages[i]


def as_prompt(chat: ChatPrompt, prompt: Sequence[Message], cap: int) -> Prompt:
    """``prompt`` when ``chat`` built it, else ``chat.prepare`` of its messages (plain
    messages from a direct caller, or a prompt another engine's template built)."""
    if isinstance(prompt, Prompt):
        return prompt if prompt.chat is chat else chat.prepare(prompt.messages, cap)
    return chat.prepare(prompt, cap)


class ChatPrompt:
    """Chat template + tokenizer -> prompt token ids that fit ``max_tokens``.

    ``encode`` is a callable str -> list[int] that parses special tokens in the text.
    """

    def __init__(self, template: str, encode: Callable[[str], list[int]],
                 bos_ids: Sequence[int] = ()) -> None:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise
        try:
            self._template = env.from_string(template or FALLBACK_TEMPLATE)
        except TemplateError as exc:
            raise ModelLoadError(f"chat template in model_config.json does not parse: {exc}",
                                 hint="rebuild with `edge-runtime models build`") from exc
        self._encode = encode
        self._bos = list(bos_ids)

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        return self._template.render(messages=msgs, add_generation_prompt=add_generation_prompt)

    def tokens(self, messages: Sequence[Message]) -> list[int]:
        return self._bos + self._encode(self.render(messages))

    def prepare(self, messages: Sequence[Message], cap: int) -> Prompt:
        """Template and tokenize ``messages`` once; ``cap``: the most tokens the engine
        prefills (``Prompt.tokens`` is at most that)."""
        text = self.render(messages)
        ids = tuple(self._bos + self._encode(text))
        return Prompt(tuple(messages), text, ids, min(len(ids), cap), self)

    def fit_prompt(self, prompt: Prompt, max_tokens: int) -> tuple[list[int], int]:
        """:meth:`fit` for a prompt this template prepared: its ids as they are when they
        fit (no tokenizing again), else fitted from its messages."""
        if prompt.chat is not self:
            return self.fit(prompt.messages, max_tokens)
        return self.fit(prompt.messages, max_tokens, ids=list(prompt.ids))

    def fit(self, messages: Sequence[Message], max_tokens: int,
            ids: list[int] | None = None) -> tuple[list[int], int]:
        """Prompt ids of at most ``max_tokens``; returns (ids, number of messages dropped).
        ``ids``: ``tokens(messages)`` when the caller has them already.

        Order of sacrifice: oldest non-system turns (the last message always stays), then
        the start of the last message's content, then a hard cut keeping the prompt's end.
        """
        max_tokens = max(1, max_tokens)
        msgs = list(messages)
        ids = self.tokens(msgs) if ids is None else ids
        dropped = 0
        system = [m for m in msgs[:1] if m.role == "system"]
        turns = msgs[len(system):]
        while len(ids) > max_tokens and len(turns) > 1:
            turns = turns[1:]
            dropped += 1
            ids = self.tokens(system + turns)
        if len(ids) > max_tokens and turns:
            ids = self._truncate_last(system, turns, max_tokens)
        if len(ids) > max_tokens:
            ids = ids[-max_tokens:]
        if dropped or len(ids) == max_tokens:
            log.info("prompt trimmed to %d tokens (%d oldest messages dropped)", len(ids), dropped)
        return ids, dropped

    def _truncate_last(self, system: list[Message], turns: list[Message],
                       max_tokens: int) -> list[int]:
        last = turns[-1]
        frame = len(self.tokens(system + turns[:-1] + [Message(last.role, "")]))
        room = max_tokens - frame
        if room <= 0:
            return self.tokens(system + turns)
        content_ids = self._encode(last.content)
        # cut from the front (the question is usually at the end); re-encode to stay valid
        text = last.content
        for _ in range(4):
            cut = max(0, len(content_ids) - room)
            text = _decode_tail(last.content, cut, len(content_ids))
            ids = self.tokens(system + turns[:-1] + [Message(last.role, text)])
            if len(ids) <= max_tokens:
                return ids
            room -= len(ids) - max_tokens
        return self.tokens(system + turns[:-1] + [Message(last.role, text)])


def _decode_tail(text: str, cut: int, total: int) -> str:
    """Approximate: drop the first ``cut / total`` share of the characters."""
    if total <= 0 or cut <= 0:
        return text
    start = min(len(text), int(len(text) * cut / total) + 1)
    return text[start:]


def _raise(message: str) -> None:
    from jinja2 import TemplateError

    raise TemplateError(message)
