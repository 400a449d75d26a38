"""A request's prompt is templated and tokenized once, on the tiny random Llama.

The fake at the edge is the tokenizer: the model's own ``tokenizer.json`` wrapped to count
its calls, installed as the engine's chat prompt (its template and BOS are the model's).
"""
from __future__ import annotations

import pytest

pytest.importorskip("gguf")
pytest.importorskip("onnx")

from edge_runtime.config import load_config  # noqa: E402
from edge_runtime.llm import load_engine  # noqa: E402
from edge_runtime.llm.prompt import ChatPrompt, Prompt  # noqa: E402
from edge_runtime.types import GenerationParams, Message  # noqa: E402
from tests.pipeline_fakes import FakeCloud, make_pipeline  # noqa: E402

GREEDY = GenerationParams(temperature=0.0, repetition_penalty=1.0, max_new_tokens=6,
                          stop_at_sentence=0)
MSGS = [Message("system", "be brief"), Message("user", "the cat sat on the mat")]


@pytest.fixture(scope="module")
def model_dir(tiny_llm):
    return tiny_llm


class CountingTokenizer:
    """The model's tokenizer; ``calls`` counts the encodes (one per tokenized prompt)."""

    def __init__(self, model_dir) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.calls = 0

    def __call__(self, text: str) -> list[int]:
        self.calls += 1
        return self._tok.encode(text, add_special_tokens=False).ids


def _counted(chat_owner, model_dir) -> CountingTokenizer:
    """Give ``chat_owner`` (the engine that owns ``.prompt``) a counting tokenizer."""
    counter = CountingTokenizer(model_dir)
    cfg = chat_owner.cfg
    bos = [int(cfg["bos_token_id"])] if cfg.get("add_bos_token") else []
    chat_owner.prompt = ChatPrompt(cfg.get("chat_template", ""), counter, bos)
    return counter


@pytest.fixture(params=[1, 2], ids=["plain", "batching"])
def engine(request, model_dir):
    return load_engine(model_dir, providers=("cpu",), threads=1, context_tokens=512,
                       max_batch=request.param, batch_context_tokens=512)


def _owner(engine):
    return getattr(engine, "engine", engine)      # a BatchingEngine wraps the plain one


def test_prepare_then_generate_tokenizes_once(engine, model_dir):
    counter = _counted(_owner(engine), model_dir)
    prompt = engine.prepare(MSGS)
    text = "".join(engine.generate(prompt, GREEDY))
    assert counter.calls == 1
    assert prompt.tokens == len(prompt.ids) == engine.last_stats["prompt_tokens"]
    assert list(prompt) == MSGS and prompt.text.endswith("assistant\n")
    counter.calls = 0
    assert "".join(engine.generate(MSGS, GREEDY)) == text   # plain messages: prepared here
    assert counter.calls == 1


def test_a_prompt_from_another_template_is_prepared_again(engine, model_dir):
    other = Prompt.untemplated(MSGS, tokens=3)              # e.g. built without the model
    want = "".join(engine.generate(MSGS, GREEDY))
    counter = _counted(_owner(engine), model_dir)
    assert "".join(engine.generate(other, GREEDY)) == want
    assert counter.calls == 1 and engine.last_stats["prompt_tokens"] != 3


def _tiny_pipeline(model_dir, **kw):
    engine = load_engine(model_dir, providers=("cpu",), threads=1, context_tokens=512)
    counter = _counted(engine, model_dir)
    # the tiny model's context is 128 tokens: a prompt that fits needs no trimming (which
    # tokenizes again, as it must)
    cfg = load_config(env={}).with_overrides(llm={"max_new_tokens": 6,
                                                  "system_prompt": "be brief"})
    return make_pipeline(engine=engine, cfg=cfg, **kw), counter


async def test_one_request_tokenizes_its_prompt_once(model_dir):
    p, counter = _tiny_pipeline(model_dir)
    r = await p.ask("why is the sky blue")
    assert r.route == "local" and counter.calls == 1      # was 2: scheduler count + generate
    assert p.s.llm.last_stats["dropped_messages"] == 0
    counter.calls = 0
    assert (await p.ask("why is the sky blue")).route == "cache" and counter.calls == 0


async def test_a_conversation_turn_tokenizes_its_prompt_once(model_dir):
    p, counter = _tiny_pipeline(model_dir)
    for text in ("why is the sky blue", "and at dusk", "and at night"):
        counter.calls = 0
        r = await p.ask(text, session="s1")
        assert r.route == "local" and counter.calls == 1  # was 3: memory + scheduler + generate
        assert p.s.llm.last_stats["dropped_messages"] == 0
    assert len(p.conversations.turns("s1")) == 3


async def test_the_cloud_gets_the_prompt_messages(model_dir):
    seen = []

    class Recording(FakeCloud):
        async def stream(self, messages, params, deadline_s):
            seen.append(tuple(messages))
            async for piece in super().stream(messages, params, deadline_s):
                yield piece

    p, counter = _tiny_pipeline(model_dir, budget_ms=1, cloud=Recording())
    r = await p.ask("why is the sky blue")
    assert r.route == "cloud" and counter.calls == 1
    assert seen == [(Message("system", p.cfg.llm.system_prompt),
                     Message("user", "why is the sky blue"))]
