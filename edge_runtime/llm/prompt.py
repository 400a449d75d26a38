"""Render the model's own chat template (Jinja, from model_config.json) and fit it to the
context window: keep the system prompt, drop the oldest turns, then truncate."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..errors import ModelLoadError
from ..types import Message

log = logging.getLogger(__name__)

FALLBACK_TEMPLATE = (  # ChatML, used when the GGUF carried no template
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


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

    def fit(self, messages: Sequence[Message], max_tokens: int) -> tuple[list[int], int]:
        """Prompt ids of at most ``max_tokens``; returns (ids, number of messages dropped).

        Order of sacrifice: oldest non-system turns (the last message always stays), then
        the start of the last message's content, then a hard cut keeping the prompt's end.
        """
        max_tokens = max(1, max_tokens)
        msgs = list(messages)
        ids = self.tokens(msgs)
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
