"""Wyoming: Home Assistant's protocol for local voice services, served by the daemon.

One TCP (or Unix socket) server beside the HTTP API, in the same process and on the
same models: speech to text (``transcribe`` + audio -> ``transcript``, with streamed
``transcript-chunk`` pieces), text to speech (``synthesize``, and the streaming
``synthesize-start/-chunk/-stop``, -> audio sentence by sentence), wake word (``detect``
+ audio -> ``detection`` / ``not-detected``) and conversation handling (``transcript``
-> ``handled`` / ``not-handled`` through the same pipeline as ``/v1/ask``).
Needs the ``wyoming`` package (the ``wyoming`` extra, part of ``voice``).
"""
from __future__ import annotations

from .server import WyomingServer, start_wyoming

__all__ = ["WyomingServer", "start_wyoming"]
