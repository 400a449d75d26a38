import pytest

from edge_runtime.errors import BadInputError, ModelMissingError
from edge_runtime.types import CancelToken
from tests.pipeline_fakes import FakeCloud, FakeEngine, make_pipeline


async def test_skill_answers_without_model_or_cache():
    p = make_pipeline()
    r = await p.ask("what time is it")
    assert (r.route, r.device, r.answer) == ("skill", "none", "It is noon.")
    assert "skill time" in r.reason
    assert r.timings.first_token is not None and r.timings.nlu is not None
    assert p.s.llm.calls == 0


async def test_open_question_local_then_cache_hit():
    p = make_pipeline()
    first = await p.ask("Why is the sky blue")
    assert (first.route, first.device, first.answer) == ("local", "cpu", "Light scatters.")
    assert "<= 150 ms budget" in first.reason
    second = await p.ask("why is the sky blue")
    assert second.route == "cache" and second.answer == "Light scatters."
    assert p.s.llm.calls == 1
    text = p.metrics.render().decode()
    assert "agent_cache_hit_rate 0.5" in text
    assert 'expert_activation_ratio{expert="cache"} 0.5' in text


async def test_tiny_budget_goes_to_cloud():
    p = make_pipeline(budget_ms=1, cloud=FakeCloud())
    r = await p.ask("why is the sky blue")
    assert (r.route, r.device, r.answer) == ("cloud", "cloud", "From cloud.")
    assert "> 1 ms budget" in r.reason


async def test_cloud_down_answers_locally_with_reason():
    p = make_pipeline(budget_ms=1, cloud=FakeCloud(available=False))
    r = await p.ask("why is the sky blue")
    assert r.route == "local" and "cloud unavailable" in r.reason
    assert p.s.cloud.calls == 0


@pytest.mark.parametrize("fail_after", [0, 1, 2])
async def test_cloud_failure_is_answered_once_locally(fail_after):
    p = make_pipeline(budget_ms=1, cloud=FakeCloud(fail_after=fail_after))
    r = await p.ask("why is the sky blue")
    assert r.route == "local" and "cloud failed" in r.reason
    assert r.answer == "Light scatters."          # no half cloud answer glued on
    assert p.s.llm.calls == 1


async def test_missing_model_is_a_clear_error_and_skills_still_work():
    p = make_pipeline(engine=None)
    with pytest.raises(ModelMissingError) as exc:
        await p.ask("why is the sky blue")
    assert "models build" in exc.value.one_line()
    assert (await p.ask("what time is it")).route == "skill"


async def test_missing_model_uses_cloud_when_up():
    p = make_pipeline(engine=None, cloud=FakeCloud())
    r = await p.ask("why is the sky blue")
    assert r.route == "cloud" and "local model unavailable" in r.reason


@pytest.mark.parametrize("text", ["", "   \n\t", "x" * 100_000, b"\xff\xfe\x00", 42, "a\x00b"])
async def test_bad_text_is_rejected_clearly(text):
    p = make_pipeline()
    with pytest.raises(BadInputError):
        await p.ask(text)
    assert (await p.ask("what time is it")).route == "skill"


class ListSink:
    def __init__(self):
        self.events = []

    def piece(self, text):
        self.events.append(text)

    def reset(self):
        self.events.append("<reset>")


class SlowEngine(FakeEngine):
    def generate(self, messages, params, cancel=None):
        import time
        for piece in super().generate(messages, params, cancel):
            time.sleep(0.01)
            yield piece


async def test_a_client_going_away_stops_decoding_and_caches_nothing():
    import asyncio
    engine = SlowEngine(pieces=("a ",) * 200)
    p = make_pipeline(engine=engine)
    cancel, sink = CancelToken(), ListSink()
    task = asyncio.create_task(p.ask("why is the sky blue", cancel=cancel, sink=sink))
    while not sink.events:
        await asyncio.sleep(0.005)
    task.cancel()                                  # what aiohttp does when the client leaves
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancel.cancelled and engine.cancelled   # stopped within a token, not after 200
    assert len(sink.events) < 200
    assert p.s.cache.d == {}                       # nothing cached half-done
    assert p.s.scheduler.local.committed() == 0    # its local slot is free again


async def test_sink_gets_pieces_and_a_reset_when_the_cloud_fails_midway():
    p = make_pipeline(budget_ms=1, cloud=FakeCloud(fail_after=1))
    sink = ListSink()
    r = await p.ask("why is the sky blue", sink=sink)
    assert sink.events == ["From ", "<reset>", "Light ", "scatters."]
    assert r.answer == "Light scatters."
    sink = ListSink()
    await p.ask("what time is it", sink=sink)
    assert sink.events == ["It is noon."]


async def test_a_skill_that_needs_more_asks_back():
    from edge_runtime.errors import BadInputError

    class Asking:
        def handle(self, intent, text):
            raise BadInputError("For how long?")

    p = make_pipeline()
    p.s.skills.get = lambda name: Asking()
    r = await p.ask("what time is it")
    assert r.route == "skill" and r.answer == "For how long?" and "needs more" in r.reason


class SlowCloud(FakeCloud):
    def __init__(self, delay_s):
        super().__init__()
        self.delay_s = delay_s

    async def stream(self, messages, params, deadline_s):
        import asyncio
        await asyncio.sleep(self.delay_s)
        async for piece in super().stream(messages, params, deadline_s):
            yield piece


async def test_a_late_cloud_is_hedged_by_the_local_model():
    p = make_pipeline(budget_ms=1, cloud=SlowCloud(delay_s=5.0))
    p.s.scheduler.cloud_ttft_s = 0.01                      # the cloud is usually quick
    r = await p.ask("why is the sky blue")
    assert r.route == "local" and r.answer == "Light scatters."
    assert "no cloud piece within" in r.reason
    assert 'reason="hedge_local_won"' in p.metrics.render().decode()


async def test_a_healthy_cloud_is_not_raced_before_it_is_late():
    p = make_pipeline(budget_ms=1, cloud=SlowCloud(delay_s=0.05))
    p.s.scheduler.cloud_ttft_s = 0.3                       # hedge only after 0.45 s
    r = await p.ask("why is the sky blue")
    assert r.route == "cloud" and p.s.llm.calls == 0


class EchoEngine(FakeEngine):
    """Answers with the number of messages it was given, to see the conversation."""

    def generate(self, messages, params, cancel=None):
        self.calls += 1
        self.last = list(messages)
        yield f"{len(messages)} messages."


async def test_sessions_carry_turns_and_follow_ups_are_not_cached():
    engine = EchoEngine()
    p = make_pipeline(engine=engine)
    first = await p.ask("why is the sky blue", session="s1")
    assert first.route == "local" and first.answer == "2 messages."
    follow = await p.ask("and at sunset", session="s1")
    assert follow.route == "local" and follow.answer == "4 messages."
    assert [m.role for m in engine.last] == ["system", "user", "assistant", "user"]
    assert engine.last[2].content == "2 messages."
    again = await p.ask("and at sunset", session="s1")     # context-dependent: no cache
    assert again.route == "local"
    other = await p.ask("why is the sky blue", session="s2")  # a new session may hit
    assert other.route == "cache"
