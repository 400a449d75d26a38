"""Chat template rendering and fitting the prompt into the context window."""
from __future__ import annotations

from edge_runtime.llm.prompt import ChatPrompt
from edge_runtime.types import Message

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def _words(text: str) -> list[int]:
    """A fake tokenizer: one token per whitespace-separated word (ids = lengths)."""
    return [len(w) for w in text.split()]


def _prompt() -> ChatPrompt:
    return ChatPrompt(CHATML, _words)


SYSTEM = Message("system", "be brief")


def test_renders_template_with_generation_prompt():
    text = _prompt().render([SYSTEM, Message("user", "hi")])
    assert text == ("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                    "<|im_start|>assistant\n")


def test_fits_unchanged_when_short():
    msgs = [SYSTEM, Message("user", "hello there")]
    ids, dropped = _prompt().fit(msgs, 100)
    assert dropped == 0 and ids == _prompt().tokens(msgs)


def test_drops_oldest_turns_but_keeps_system_and_last():
    turns = [Message("user" if i % 2 == 0 else "assistant", f"turn{i} " + "w " * 10)
             for i in range(6)]
    msgs = [SYSTEM] + turns
    p = _prompt()
    limit = len(p.tokens([SYSTEM] + turns[-2:]))
    ids, dropped = p.fit(msgs, limit)
    assert dropped == 4
    assert ids == p.tokens([SYSTEM] + turns[-2:])


def test_truncates_front_of_last_message_when_turn_dropping_is_not_enough():
    long_q = " ".join(f"w{i}" for i in range(200)) + " question?"
    p = _prompt()
    ids, _ = p.fit([SYSTEM, Message("user", long_q)], 60)
    assert 0 < len(ids) <= 60
    text = p.render([SYSTEM, Message("user", long_q)])
    assert ids[-3:] == _words(text)[-3:]           # the end of the question survives
    assert ids[:2] == _words(text)[:2]             # the system prompt survives


def test_never_fails_even_when_system_prompt_alone_is_too_long():
    huge = Message("system", "x " * 500)
    ids, _ = _prompt().fit([huge, Message("user", "hi")], 10)
    assert len(ids) == 10
