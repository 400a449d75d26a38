"""Hedging: a slow cloud is raced by the local model; exactly one answer reaches the sink."""
from __future__ import annotations

import asyncio

import pytest

from edge_runtime.cloud_link.hedge import hedged_answer
from edge_runtime.errors import CloudUnavailableError, ModelLoadError
from edge_runtime.types import CancelToken

pytestmark = pytest.mark.timeout(10)


class Sink:
    def __init__(self) -> None:
        self.events: list[str] = []

    def piece(self, text: str) -> None:
        self.events.append(text)

    def reset(self) -> None:
        self.events.append("<reset>")


class Source:
    """A scripted stream: waits for ``gate`` (if any), yields ``pieces``, then raises ``fail``."""

    def __init__(self, pieces, *, gate: asyncio.Event | None = None, fail=None,
                 fail_after: int | None = None) -> None:
        self.pieces, self.gate, self.fail, self.fail_after = list(pieces), gate, fail, fail_after
        self.started = self.closed = False
        self.token: CancelToken | None = None

    async def run(self, token: CancelToken | None = None):
        self.started, self.token = True, token
        try:
            if self.gate is not None:
                await self.gate.wait()
            for i, p in enumerate(self.pieces):
                if self.fail is not None and self.fail_after == i:
                    raise self.fail
                yield p
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed = True

    def cloud(self):
        return self.run()

    def local(self, token: CancelToken):
        return self.run(token)


async def test_fast_cloud_wins_and_local_never_starts():
    cloud, local, sink = Source(["hi", " there"]), Source(["local"]), Sink()
    out = await hedged_answer(cloud.cloud, local.local, hedge_after_s=1.0, sink=sink)
    assert (out.winner, out.answer, out.hedged) == ("cloud", "hi there", False)
    assert sink.events == ["hi", " there"] and not local.started
    assert out.first_piece_m is not None


async def test_slow_cloud_is_hedged_local_wins_and_cloud_is_cancelled():
    cloud = Source(["late"], gate=asyncio.Event())          # never opens
    local, sink = Source(["from", " cpu"]), Sink()
    out = await hedged_answer(cloud.cloud, local.local, hedge_after_s=0.02, sink=sink)
    assert (out.winner, out.answer, out.hedged) == ("local", "from cpu", True)
    assert sink.events == ["from", " cpu"]
    assert cloud.closed                                      # generator closed: Cancel sent
    assert "no cloud piece within 20 ms" in out.reason


async def test_cloud_first_piece_after_the_hedge_still_wins_and_local_is_stopped():
    cloud_gate, local_gate = asyncio.Event(), asyncio.Event()
    cloud = Source(["cloud", " answer"], gate=cloud_gate)
    local = Source(["local"], gate=local_gate)
    sink = Sink()
    task = asyncio.create_task(hedged_answer(cloud.cloud, local.local, hedge_after_s=0.01,
                                             sink=sink))
    while not local.started:
        await asyncio.sleep(0.005)
    cloud_gate.set()
    out = await task
    assert (out.winner, out.answer, out.hedged) == ("cloud", "cloud answer", True)
    assert sink.events == ["cloud", " answer"]
    assert local.closed and local.token.cancelled


async def test_cloud_failing_before_any_piece_goes_local_at_once():
    cloud = Source([], fail=CloudUnavailableError("cloud link down: refused"))
    local, sink = Source(["ok"]), Sink()
    out = await hedged_answer(cloud.cloud, local.local, hedge_after_s=5.0, sink=sink)
    assert (out.winner, out.hedged, out.answer) == ("local", False, "ok")
    assert "refused" in out.cloud_error and sink.events == ["ok"]


async def test_cloud_failing_mid_stream_resets_the_sink_and_answers_locally():
    cloud = Source(["half", " an"], fail=CloudUnavailableError("stream stalled"), fail_after=2)
    local, sink = Source(["whole"]), Sink()
    out = await hedged_answer(cloud.cloud, local.local, hedge_after_s=5.0, sink=sink)
    assert out.winner == "local" and out.answer == "whole"
    assert sink.events == ["half", " an", "<reset>", "whole"]
    assert "mid-stream" in out.cloud_error


async def test_without_a_local_model_cloud_failure_is_raised():
    cloud = Source([], fail=CloudUnavailableError("cloud link down"))
    with pytest.raises(CloudUnavailableError, match="down"):
        await hedged_answer(cloud.cloud, None, hedge_after_s=0.01, sink=Sink())


async def test_local_failing_during_the_race_leaves_the_cloud_to_answer():
    cloud_gate = asyncio.Event()
    cloud = Source(["cloud"], gate=cloud_gate)
    local = Source([], fail=ModelLoadError("engine broke"))
    sink = Sink()
    task = asyncio.create_task(hedged_answer(cloud.cloud, local.local, hedge_after_s=0.01,
                                             sink=sink))
    while not local.closed:
        await asyncio.sleep(0.005)
    cloud_gate.set()
    out = await task
    assert out.winner == "cloud" and sink.events == ["cloud"]


async def test_both_failing_raises_the_local_error():
    cloud = Source([], fail=CloudUnavailableError("down"))
    local = Source([], fail=ModelLoadError("no model"))
    with pytest.raises(ModelLoadError):
        await hedged_answer(cloud.cloud, local.local, hedge_after_s=1.0, sink=Sink())


async def test_barge_in_token_reaches_the_local_generation():
    cloud = Source(["late"], gate=asyncio.Event())
    local = Source(["a", "b"], gate=asyncio.Event())
    barge = CancelToken()
    task = asyncio.create_task(hedged_answer(cloud.cloud, local.local, hedge_after_s=0.01,
                                             sink=Sink(), cancel=barge))
    while not local.started:
        await asyncio.sleep(0.005)
    assert not local.token.cancelled
    barge.cancel()
    assert local.token.cancelled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cloud.closed and local.closed


async def test_cloud_failing_after_the_hedge_started_waits_for_local():
    cloud_gate, local_gate = asyncio.Event(), asyncio.Event()
    cloud = Source([], gate=cloud_gate, fail=CloudUnavailableError("link down"))
    local = Source(["cpu"], gate=local_gate)
    task = asyncio.create_task(hedged_answer(cloud.cloud, local.local, hedge_after_s=0.01,
                                             sink=Sink()))
    while not local.started:
        await asyncio.sleep(0.005)
    cloud_gate.set()
    await asyncio.sleep(0.02)
    local_gate.set()
    out = await task
    assert (out.winner, out.answer, out.hedged) == ("local", "cpu", True)
    assert "link down" in out.cloud_error
