"""The ``info`` answer to ``describe``: what this server offers, as the protocol names it."""
from __future__ import annotations

from wyoming.info import (AsrModel, AsrProgram, Attribution, HandleModel, HandleProgram,
                          Info, TtsProgram, TtsVoice, WakeModel, WakeProgram)

from ..voice.wake import wake_models

NAME = "edge-runtime"
_US = Attribution(name="edge-runtime", url="https://github.com/edge-runtime/edge-runtime")
_WHISPER = Attribution(name="OpenAI (Whisper), SYSTRAN (faster-whisper)",
                       url="https://github.com/SYSTRAN/faster-whisper")
_PIPER = Attribution(name="Open Home Foundation (Piper)",
                     url="https://github.com/OHF-Voice/piper1-gpl")
_MWW = Attribution(name="Kevin Ahrendt (microWakeWord)",
                   url="https://github.com/kahrendt/microWakeWord")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("edge-runtime")
    except PackageNotFoundError:
        return "0"


def build_info(stack, *, streaming_asr: bool, handle: bool = True) -> Info:
    """ASR and TTS when the voice stack is loaded, wake words when the package is there,
    conversation handling always (it needs no voice model)."""
    v = _version()
    info = Info()
    if stack is not None:
        asr_name = getattr(stack.asr, "name", "asr")
        info.asr.append(AsrProgram(
            name=NAME, attribution=_US, installed=True, version=v,
            description=f"edge-runtime speech to text ({asr_name})",
            models=[AsrModel(name=asr_name, attribution=_WHISPER if asr_name == "whisper"
                             else _US, installed=True, description=f"{asr_name} (English)",
                             version=None, languages=["en"])],
            supports_transcript_streaming=streaming_asr))
        if stack.tts is not None:
            info.tts.append(TtsProgram(
                name=NAME, attribution=_US, installed=True, version=v,
                description="edge-runtime text to speech (Piper, sentence by sentence)",
                voices=[TtsVoice(name=stack.tts.voice, attribution=_PIPER, installed=True,
                                 description=stack.tts.voice, version=None,
                                 languages=["en_US"])],
                supports_synthesize_streaming=True))
    models = wake_models()
    if models:
        info.wake.append(WakeProgram(
            name=NAME, attribution=_US, installed=True, version=v,
            description="edge-runtime wake word (microWakeWord)",
            models=[WakeModel(name=m.name, attribution=_MWW, installed=True,
                              description=m.phrase, version=m.version or None,
                              languages=list(m.languages), phrase=m.phrase)
                    for m in models]))
    if handle:
        info.handle.append(HandleProgram(
            name=NAME, attribution=_US, installed=True, version=v,
            description="edge-runtime assistant: skills, answer cache, local LLM, cloud",
            models=[HandleModel(name=NAME, attribution=_US, installed=True,
                                description="skills, cache and latency-budget routing",
                                version=v, languages=["en"])],
            supports_handled_streaming=False))
    return info
