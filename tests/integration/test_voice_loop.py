"""The voice loop end to end with real models: a recording played as a microphone in real
time (file-backed, and once through a PulseAudio null sink), barge-in, the echo guard."""
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from edge_runtime.audio.format import read_wav_file
from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.audio.sources import FileSource
from edge_runtime.voice.pump import feed_source
from edge_runtime.voice.session import VoiceSession
from tests.pipeline_fakes import make_pipeline
from tests.unit.test_voice_session import SlowPipeline
from tests.voice_fixtures import command_wav, real_stack, silence

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    d = tmp_path_factory.mktemp("voice-loop")
    return {t: read_wav_file(command_wav(t, d)) for t in ("what time is it",
                                                          "stop the music")}


async def test_mic_path_paced_in_real_time(wavs):
    stack = real_stack()
    events = []
    speaker = VirtualSpeaker(stack.tts.sample_rate)
    session = VoiceSession(stack, make_pipeline(), speaker, emit=events.append)
    await feed_source(session, FileSource(wavs["what time is it"], realtime=True,
                                          tail_silence_s=0.8))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "speech_start"
    assert "time" in next(e for e in events if e["type"] == "transcript")["text"].lower()
    rec = session.records[0]
    assert rec["route"] == "skill" and rec["first_audio_ms"] > 0
    session.close()


async def test_barge_in_with_real_models_stops_playback_and_takes_the_new_turn(wavs):
    stack = real_stack()
    events = []
    speaker = VirtualSpeaker(stack.tts.sample_rate)
    pipe = SlowPipeline(answer="Here is a long answer that keeps going. " * 4)
    session = VoiceSession(stack, pipe, speaker, emit=events.append)
    # the user interrupts after ~2 s of the answer (the echo guard has learned the room)
    mic = np.concatenate([wavs["what time is it"], silence(2.5), wavs["stop the music"]])
    await feed_source(session, FileSource(mic, realtime=True, tail_silence_s=0.8))
    assert [e["type"] for e in events].count("barge_in") == 1
    assert pipe.cancel_tokens[0].cancelled
    assert len(pipe.asked) == 2 and "music" in pipe.asked[1].lower()
    assert speaker.stopped_at is not None
    session.close()


@pytest.fixture
def pulse(tmp_path):
    """A private PulseAudio with a 16 kHz null sink `vspk` (its monitor is the default mic)."""
    if not (shutil.which("pulseaudio") and shutil.which("paplay")):
        pytest.skip("pulseaudio not installed (apt install pulseaudio pulseaudio-utils)")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = dict(os.environ, HOME=str(tmp_path), XDG_RUNTIME_DIR=str(run))
    proc = subprocess.Popen(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1",
                             "-L", "module-native-protocol-unix", "-L",
                             "module-null-sink sink_name=vspk rate=16000 channels=1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        if subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.skip("pulseaudio did not start")
    old = {k: os.environ.get(k) for k in ("HOME", "XDG_RUNTIME_DIR")}
    os.environ.update(HOME=env["HOME"], XDG_RUNTIME_DIR=env["XDG_RUNTIME_DIR"])
    try:
        yield env
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(5)


async def test_through_a_pulseaudio_null_sink(pulse, tmp_path, wavs):
    import asyncio

    import sounddevice as sd
    sd._terminate()
    sd._initialize()                      # PortAudio must see the private PulseAudio
    from edge_runtime.audio.format import write_wav
    from edge_runtime.audio.playback import DevicePlayer
    from edge_runtime.audio.sources import MicSource
    stack = real_stack()
    wav = tmp_path / "cmd.wav"
    write_wav(wav, np.concatenate([wavs["what time is it"], silence(1.0)]), 16000)
    events = []
    mic = MicSource()                     # default input: vspk.monitor
    player = DevicePlayer(None, stack.tts.sample_rate)   # plays into vspk: the mic hears it
    session = VoiceSession(stack, make_pipeline(), player, emit=events.append)
    feeding = asyncio.create_task(feed_source(session, mic, finish=False))
    await asyncio.sleep(1.0)              # PulseAudio loses about the first second
    play = await asyncio.create_subprocess_exec("paplay", "--device=vspk", str(wav),
                                                env=pulse)
    await play.wait()
    for _ in range(60):                   # up to 6 s for the answer to be spoken
        if any(e["type"] == "result" for e in events) and not player.playing:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    mic.close()
    await feeding
    player.close()
    session.close()
    kinds = [e["type"] for e in events]
    assert "result" in kinds, kinds
    assert "time" in next(e for e in events if e["type"] == "transcript")["text"].lower()
    assert player.first_audio_at is not None
    assert "barge_in" not in kinds        # it heard itself through the sink, and ignored it
