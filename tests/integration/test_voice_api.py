"""The daemon's voice routes with the real voice models and fake pipeline stages."""
import base64
import io
import json
import struct
import wave

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer

from edge_runtime.audio.format import read_wav_file, resample
from edge_runtime.config import load_config
from edge_runtime.daemon import make_app
from edge_runtime.runtime import Runtime
from edge_runtime.voice.api import VOICE_KEY, add_voice_routes
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import command_wav, real_stack

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(tmp_path):
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)})
    p = make_pipeline(cfg=cfg)
    rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
    app = make_app(rt)
    add_voice_routes(app, rt)
    app[VOICE_KEY].stack = real_stack()          # loaded once per test process
    c = TestClient(TestServer(app))
    await c.start_server()
    yield c
    await c.close()


@pytest.fixture(scope="module")
def wav_path(tmp_path_factory):
    return command_wav("what time is it", tmp_path_factory.mktemp("voice-api"))


def _wav(samples: np.ndarray, rate=16000, channels=1, width=2) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        if width == 1:
            w.writeframes(np.clip(samples * 127 + 128, 0, 255).astype(np.uint8).tobytes())
        else:
            w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return buf.getvalue()


async def test_audio_in_answer_and_speech_out(client, wav_path):
    r = await client.post("/v1/audio", data=wav_path.read_bytes())
    assert r.status == 200, await r.text()
    body = await r.json()
    assert body["transcript"].lower().startswith("what time is it")
    assert body["route"] == "skill" and body["answer"] == "It is noon."
    assert body["timings_ms"]["asr"] > 0
    wav = base64.b64decode(body["audio"]["wav_base64"])
    with wave.open(io.BytesIO(wav)) as w:
        assert w.getframerate() == body["audio"]["sample_rate"]
        assert w.getnframes() > 0.3 * w.getframerate()


async def test_audio_reply_as_wav(client, wav_path):
    r = await client.post("/v1/audio?format=wav", data=wav_path.read_bytes())
    assert r.status == 200
    assert r.content_type == "audio/wav"
    assert json.loads(r.headers["X-Edge-Result"])["route"] == "skill"
    assert (await r.read())[:4] == b"RIFF"


async def test_converted_formats_are_understood(client, wav_path):
    x = read_wav_file(wav_path)
    stereo_44k = resample(x, 16000, 44100)
    raw = np.stack([stereo_44k, stereo_44k], axis=1).reshape(-1)
    for data in (_wav(raw, rate=44100, channels=2), _wav(x, width=1)):
        r = await client.post("/v1/audio?speak=0", data=data)
        assert r.status == 200, await r.text()
        assert "time" in (await r.json())["transcript"].lower()


def _bad_inputs(wav_path):
    good = wav_path.read_bytes()
    noise = np.clip(np.random.default_rng(1).normal(0, 1.0, 32000), -1, 1)
    ten_minutes = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + 19_200_000, b"WAVE",
                              b"fmt ", 16, 1, 1, 16000, 32000, 2, 16, b"data", 19_200_000)
    return [
        (good[:30], "bad_audio"),                              # truncated header
        (b"this is text, not audio" * 20, "bad_audio"),
        (ten_minutes + bytes(19_200_000), "audio_too_long"),     # ten minutes of audio
        (ten_minutes + bytes(200_000), "no_speech"),   # claims 10 min, has 6 s of silence
        (_wav(np.zeros(32000, np.float32)), "no_speech"),        # silence only
        (_wav(noise.astype(np.float32)), "no_speech"),           # clipped noise
        (good[:44] + good[44:300], "audio_too_short"),
    ]


async def test_bad_audio_gets_a_clear_error_and_the_daemon_keeps_serving(client, wav_path):
    for data, code in _bad_inputs(wav_path):
        r = await client.post("/v1/audio", data=data)
        body = await r.json()
        assert r.status == 400, (code, body)
        assert body["error"]["code"] == code
        assert body["error"]["hint"]
    r = await client.get("/healthz")
    assert r.status == 200
    r = await client.post("/v1/audio?speak=0", data=wav_path.read_bytes())
    assert r.status == 200


async def test_websocket_stream_pcm_in_events_and_audio_out(client, wav_path):
    x = read_wav_file(wav_path)
    pcm = (np.concatenate([x, np.zeros(16000, np.float32)]) * 32767).astype("<i2").tobytes()
    events, audio_bytes = [], 0
    async with client.ws_connect("/v1/stream") as ws:
        await ws.send_json({"type": "start", "sample_rate": 16000, "channels": 1})
        for i in range(0, len(pcm), 3200):
            await ws.send_bytes(pcm[i:i + 3200])
        await ws.send_json({"type": "end"})
        async for msg in ws:
            if msg.type.name == "TEXT":
                events.append(json.loads(msg.data))
                if events[-1]["type"] == "end":
                    break
            elif msg.type.name == "BINARY":
                audio_bytes += len(msg.data)
    kinds = [e["type"] for e in events]
    assert "speech_start" in kinds and "transcript" in kinds and "result" in kinds
    assert "audio_start" in kinds
    result = next(e for e in events if e["type"] == "result")
    assert result["route"] == "skill"
    assert audio_bytes > 0.3 * 2 * next(e for e in events
                                        if e["type"] == "audio_start")["sample_rate"]


async def test_websocket_rejects_a_bad_format_and_keeps_the_connection(client):
    async with client.ws_connect("/v1/stream") as ws:
        await ws.send_json({"type": "start", "sample_rate": 3})
        err = await ws.receive_json()
        assert err["type"] == "error" and "sample rate" in err["error"]["message"]
        await ws.send_str("not json")
        err = await ws.receive_json()
        assert err["type"] == "error"
        await ws.send_json({"type": "end"})
        assert (await ws.receive_json())["type"] == "end"
