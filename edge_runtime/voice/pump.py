"""Drive a session from a blocking audio source (microphone, paced file) on a thread."""
from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


async def feed_source(session, source, *, max_queue: int = 64, finish: bool = True) -> int:
    """Read ``source`` on a worker thread and feed ``session`` until the source ends.

    The queue between them holds ``max_queue`` chunks; when the loop falls behind, the
    oldest audio is dropped (a live microphone cannot wait). Returns chunks dropped; a
    source that fails (a device unplugged) raises its error here, after the audio it gave.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue(maxsize=max_queue)
    dropped = 0
    end = object()

    def put(chunk) -> None:
        nonlocal dropped
        if queue.full():
            queue.get_nowait()
            dropped += 1
        queue.put_nowait(chunk)

    def pump() -> None:
        try:
            for chunk in source:
                loop.call_soon_threadsafe(put, chunk)
        finally:
            loop.call_soon_threadsafe(put, end)

    reader = loop.run_in_executor(None, pump)
    try:
        while (chunk := await queue.get()) is not end:
            await session.feed(chunk)
        if finish:
            await session.finish()
    finally:
        source.close()
        (failure,) = await asyncio.gather(reader, return_exceptions=True)
    if dropped:
        log.warning("dropped %d audio chunks: the voice loop fell behind", dropped)
    if isinstance(failure, Exception):
        raise failure
    return dropped
