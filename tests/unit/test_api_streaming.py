"""AnswerStream: the pipeline's answer sink as an async iterator (fake stages)."""
import asyncio

import pytest

from edge_runtime.api.streaming import RESET, AnswerStream, Piece
from edge_runtime.errors import BadInputError, CloudUnavailableError
from tests.pipeline_fakes import FakeCloud, make_pipeline


async def _events(pipeline, text, **kw):
    async with AnswerStream(pipeline, text, **kw) as stream:
        events = [e async for e in stream]
    return events, stream.result


async def test_local_answer_comes_as_its_pieces_then_the_result():
    events, result = await _events(make_pipeline(), "why is the sky blue")
    assert "".join(e.text for e in events) == "Light scatters."
    assert result.route == "local" and result.answer == "Light scatters."


async def test_a_skill_answer_is_one_piece():
    events, result = await _events(make_pipeline(), "what time is it")
    assert events == [Piece("It is noon.")] and result.route == "skill"


class HeldCloud(FakeCloud):
    """Sends "From ", then fails once ``go`` is set."""

    def __init__(self):
        super().__init__()
        self.go = asyncio.Event()

    async def stream(self, messages, params, deadline_s):
        yield "From "
        await self.go.wait()
        raise CloudUnavailableError("cloud killed mid-stream")


async def test_a_cloud_failure_after_a_sent_piece_is_a_reset_then_the_local_answer():
    cloud = HeldCloud()
    p = make_pipeline(budget_ms=1, cloud=cloud)
    async with AnswerStream(p, "why is the sky blue") as stream:
        events = []
        async for e in stream:
            events.append(e)
            cloud.go.set()
    assert events[:2] == [Piece("From "), RESET]
    assert "".join(e.text for e in events[2:]) == "Light scatters."
    assert stream.result.route == "local" and stream.result.answer == "Light scatters."


async def test_pieces_a_slow_consumer_missed_are_joined_and_a_void_unsent_piece_is_dropped():
    p = make_pipeline(budget_ms=1, cloud=FakeCloud(fail_after=1))
    async with AnswerStream(p, "why is the sky blue") as stream:
        # the whole answer arrives before the first read (waited for, not slept on: a fixed
        # 0.2 s was too short once on a busy CI box)
        await asyncio.wait({stream._task}, timeout=30)
        assert stream._task.done()
        events = [e async for e in stream]
    assert events == [Piece("Light scatters.")]   # "From " was voided before it was sent


async def test_an_error_is_raised_by_the_iteration():
    with pytest.raises(BadInputError):
        await _events(make_pipeline(), "   ")


async def test_result_before_the_end_is_a_clear_error():
    async with AnswerStream(make_pipeline(), "what time is it") as stream:
        with pytest.raises(RuntimeError, match="not finished"):
            _ = stream.result
        [e async for e in stream]


async def test_leaving_early_closes_a_cloud_answer_still_streaming():
    class EndlessCloud(FakeCloud):
        closed = False

        async def stream(self, messages, params, deadline_s):
            try:
                yield "From "
                await asyncio.Event().wait()        # never sends the rest
            finally:
                EndlessCloud.closed = True

    p = make_pipeline(budget_ms=1, cloud=EndlessCloud())
    async with AnswerStream(p, "why is the sky blue") as stream:
        async for event in stream:
            assert event == Piece("From ")
            break                                   # the client went away
    assert EndlessCloud.closed and p.in_flight == 0
