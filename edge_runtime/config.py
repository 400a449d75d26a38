"""One typed configuration object.

Precedence: built-in defaults (the embedded set-up) < TOML file < environment
(``EDGE_RUNTIME_<SECTION>__<KEY>``) < CLI overrides (``--set section.key=value``).
Unknown keys and bad values fail at load with a message that names the key.
"""
from __future__ import annotations

import ipaddress
import os
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (JetPack 6)
    import tomli as tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping

# the loading machinery lives in config_load; its public names are re-exported here
from .config_load import ENV_PREFIX, apply_values, env_values
from .config_load import check as _check
from .config_load import config_to_dict, config_to_toml, parse_overrides  # noqa: F401
from .errors import ConfigError
from .types import GenerationParams as _Gen


def _default_home() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "edge-runtime")


@dataclass(frozen=True)
class PathsConfig:
    home: str = ""        # models and caches live here; "" = $XDG_CACHE_HOME/edge-runtime
    manifest: str = ""    # model manifest; "" = the one shipped in models/manifest.toml

    def resolved_home(self) -> Path:
        return Path(self.home or _default_home()).expanduser()

    @property
    def models_dir(self) -> Path:
        return self.resolved_home() / "models"

    @property
    def answers_dir(self) -> Path:
        return self.resolved_home() / "answers"


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    token: str = ""                    # required when host is not loopback
    max_body_bytes: int = 1_000_000
    max_concurrent_requests: int = 64  # LLM-bound requests (local + cloud) in flight; skills
                                       # and cache hits are not counted
    header_timeout_s: float = 10.0     # request line + headers must arrive within this
    body_timeout_s: float = 30.0       # a request body must arrive within this
    idle_timeout_s: float = 60.0       # a connection with no request in progress is closed
    max_connections: int = 256         # open connections; more are refused with 503

    def is_loopback(self) -> bool:
        if self.host in ("localhost",):
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


@dataclass(frozen=True)
class NluConfig:
    intents_file: str = ""             # "" = the built-in everyday intent set
    model_dir: str = ""                # a model from `nlu train` (onnxruntime); "" = built-in
    threads: int = 1                   # classifier threads (one query at a time)
    hass_templates: bool = True        # Home Assistant models: also match hassil's templates
                                       # (needs the `hass` extra at the pinned versions)
    oos_threshold: float = 0.45        # below this confidence the request is out of scope
    max_text_chars: int = 2000         # longer requests are rejected with a clear error
    lists: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "area": ("kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway"),
        "device": ("lights", "lamp", "fan", "heater", "tv", "speaker", "thermostat"),
    })
    home: bool = True                  # the Home Assistant intent set (nlu/home), no torch
    home_dir: str = ""                 # its built model; "" = <paths.home>/nlu/home-v2
    home_repair: bool = True           # put back misheard entity and area names (sound-alike)


@dataclass(frozen=True)
class SkillsConfig:
    enabled: bool = True               # false: no skill answers (every request goes on to the LLM)
    timezone: str = ""                 # IANA name; "" = the system's local zone
    max_timers: int = 32


@dataclass(frozen=True)
class CacheConfig:
    enabled: bool = True               # false: no answer cache (nothing looked up or stored)
    memory_items: int = 1024
    disk_enabled: bool = True
    disk_dir: str = ""                 # "" = <paths.home>/answers
    disk_size_mb: int = 256
    redis_url: str = ""                # e.g. redis://127.0.0.1:6379/0; "" = no fleet tier
    redis_timeout_s: float = 0.05
    default_ttl_s: float = 7 * 24 * 3600
    ttl_s: Mapping[str, float] = field(default_factory=dict)   # per-intent TTL override


@dataclass(frozen=True)
class LlmConfig:
    model: str = "smollm2-135m-instruct"
    model_dir: str = ""                # "" = <paths.home>/models/<model>/onnx
    providers: tuple[str, ...] = ("tensorrt", "cuda", "cpu")
    threads: int = 0                   # 0 = the device profile's llm_threads (2 on x86, 4 on
                                       # the Orin Nano)
    stuck_after_s: float = 300.0       # a generation running longer is a stuck LLM thread:
                                       # the systemd watchdog ping stops (restart); 0 = off
    spin_us: int = -1                  # >0: intra-op threads busy-wait up to this many us for
                                       # the next op (faster on an idle box); 0 = sleep (the
                                       # safe choice when ASR/TTS share the cores); -1 = auto:
                                       # 200 when the LLM has 2+ threads and a core for each,
                                       # else 0 (onnx_session.resolve_spin)
    huge_pages: bool = True            # back the CPU session's weights with 2 MB pages after
                                       # loading (Linux THP; ~1.05x decode; heap.collapse_new)
    step_ops: bool = True              # `models build` compiles edge-runtime's decode-step
                                       # kernels here (needs cc) and a CPU session's decode
                                       # steps run them (llm/step_ops); false: onnxruntime's
                                       # kernels only
    max_new_tokens: int = _Gen.max_new_tokens   # sampling defaults: types.GenerationParams
    temperature: float = _Gen.temperature
    top_p: float = _Gen.top_p
    top_k: int = _Gen.top_k
    repetition_penalty: float = _Gen.repetition_penalty
    seed: int = _Gen.seed
    stop_at_sentence: int = _Gen.stop_at_sentence   # sentences before stopping (0 = off)
    context_tokens: int = 2048
    backend: str = "onnx"              # onnx (built by `models build`) | llama_cpp (the GGUF)
    accuracy_level: int = 4            # build: 4 = int8 activations (fast), 1 = fp32 (faithful)
    max_batch: int = 0                 # 0 = the device profile's; 1 = off; 2..16: slots whose
                                       # requests decode in batched steps
    batch_context_tokens: int = 1024   # per batched session: prompt + answer
    reuse_prefix: bool = True          # keep the system prompt's KV between requests
    conversation_max_prompt_tokens: int = 1024   # multi-turn memory budget per session
    conversation_max_turns: int = 16
    conversation_ttl_s: float = 1800.0
    conversation_max_sessions: int = 256
    conversation_summary_turns: int = 3          # dropped questions listed as a summary
    system_prompt: str = ("You are a helpful voice assistant. Answer in one to three short, "
                          "plain sentences that sound natural when spoken aloud.")


@dataclass(frozen=True)
class SchedulerConfig:
    budget_ms: float = 150.0
    intent_budgets_ms: Mapping[str, float] = field(default_factory=dict)
    calibrate_at_start: bool = True
    ewma_alpha: float = 0.2            # weight of each new observation in the prefill-rate estimate
    routing: str = "budget"            # budget: local / cloud / refuse by predicted ttft;
                                       # local: always the local model, queued, never refused
    max_queue_ms: float = 0.0          # longest queueing delay a place (local or cloud) accepts
                                       # when neither meets the budget; 0 = the budget itself
    retry_after_s: float = 1.0         # shortest Retry-After of a refusal
    min_decode_tok_s: float = 30.0     # within budget locally only while each session still
                                       # decodes this fast at the batch it joins (0 = off);
                                       # past it, the cloud takes the request if it can


@dataclass(frozen=True)
class CloudConfig:
    enabled: bool = True
    endpoint: str = "tcp://127.0.0.1:5555"
    deadline_ms: float = 8000.0        # whole answer
    first_token_timeout_ms: float = 2000.0
    connect_timeout_ms: float = 500.0
    server_public_key: str = ""        # Z85 CURVE key of the gateway; required off loopback
    client_secret_key_file: str = ""   # file written by `edge-runtime keys generate`
    allow_insecure: bool = False       # allow a non-loopback endpoint without CURVE (not advised)
    health_interval_s: float = 2.0
    model: str = ""                    # model the gateway should use; "" = its default
    stall_timeout_ms: float = 0.0      # max gap between chunks; 0 = first_token_timeout_ms
    endpoints: tuple[str, ...] = ()    # several gateways (failover); () = (endpoint,)
    max_attempts: int = 3              # gateways tried per request before the first piece
    breaker_failures: int = 3          # consecutive failures that open a gateway's breaker
    breaker_reset_s: float = 2.0       # first half-open probe after this; doubles to 30 s
    hedge: bool = True                 # no first cloud token within the budget: race local


@dataclass(frozen=True)
class AudioConfig:
    input_device: str = ""             # sounddevice name or index; "" = system default
    output_device: str = ""
    max_seconds: float = 60.0          # longest accepted audio upload / WAV file


@dataclass(frozen=True)
class VadConfig:
    backend: str = "silero"            # silero | webrtc
    model_path: str = ""               # "" = the model store (silero-vad)
    threshold: float = 0.5             # speech when probability >= threshold
    neg_threshold: float = 0.35        # silence when probability < neg_threshold
    start_ms: float = 64.0             # speech needed to start an utterance
    end_silence_ms: float = 256.0      # silence that ends it (Home Assistant uses 700)
    pause_ms: float = 96.0             # silence after which the final transcript starts
    preroll_ms: float = 256.0          # audio kept from before the onset
    min_speech_ms: float = 150.0       # shorter utterances are dropped
    max_utterance_s: float = 15.0      # longer ones are cut


@dataclass(frozen=True)
class AsrConfig:
    backend: str = "whisper"           # whisper | pocketsphinx | vosk
    model_dir: str = ""                # "" = the model store (whisper-tiny-en); vosk: required
    grammar: bool = False              # vosk: hear only the intent examples' phrases and
                                       # the home's command words, names and areas
    bias: bool = True                  # whisper: prompt with the home's names and areas and
                                       # the command words (asr/bias.py; README)
    bias_words: str = ""               # more words to bias toward (names, jargon)
    threads: int = 2
    beam_size: int = 5                 # whisper: 1 is ~20 % faster, and hears commands worse
    nbest: int = 5                     # whisper: hypotheses kept (<= beam_size); the one the
                                       # understanding acts on is taken (asr/nbest.py)
    nbest_margin: float = 0.5          # ... if its mean token log-probability is at most this
                                       # far below the best's
    nbest_min_confidence: float = 0.9  # ... and it is understood at least this surely
    unsure_below: float = 0.15         # whisper: a list item or search heard less surely than
                                       # this (its least word probability) is asked back
                                       # (0 = never); README "Spoken commands"
    window_s: float = 10.0             # Whisper encoder window for short commands
    partials: bool = True
    partial_every_s: float = 0.5


@dataclass(frozen=True)
class TtsConfig:
    backend: str = "piper"
    model_path: str = ""               # "" = the model store (piper-joe-medium)
    threads: int = 1
    cache_mb: int = 32                 # rendered audio of answers, so a cache hit plays at once
    first_chunk_chars: int = 16        # the first spoken chunk may end at a comma after this
    first_chunk_max_chars: int = 40    # ... and is cut at a space before this many


@dataclass(frozen=True)
class VoiceConfig:
    enabled: bool = True               # /v1/audio and /v1/stream in the daemon
    barge_in: bool = True
    echo_margin: float = 2.0           # user speech must be this much louder than the echo
    wake_word: str = "none"            # okay_nabu | hey_jarvis | hey_mycroft | alexa | none:
                                       # `chat` (and the Wyoming default) wait for it
    wake_refractory_s: float = 2.0     # after a detection, the same word is ignored this long
    wake_timeout_s: float = 8.0        # no speech this long after the wake word: wait again
    follow_up_s: float = 0.0           # after an answer, listen this long without the wake
                                       # word for a follow-up turn (0 = off)
    microphone: bool = False           # `serve` runs the always-on loop on audio.input_device
                                       # (wake word, VAD, ASR, pipeline, TTS, barge-in)


@dataclass(frozen=True)
class WyomingConfig:
    uri: str = ""                      # e.g. tcp://127.0.0.1:10700 (Home Assistant's Wyoming
                                       # integration); "" = off. No auth: bind loopback or a
                                       # trusted LAN address only

    def parsed(self) -> tuple[str, str, int]:
        """(scheme, host or path, port) of ``uri``; ValueError names what is wrong."""
        from urllib.parse import urlparse
        u = urlparse(self.uri)
        if u.scheme == "tcp":
            if not u.hostname or u.port is None:
                raise ValueError("needs a host and a port, e.g. tcp://127.0.0.1:10700")
            return "tcp", u.hostname, u.port
        if u.scheme == "unix":
            if not u.path:
                raise ValueError("needs a socket path, e.g. unix:///run/edge-runtime.sock")
            return "unix", u.path, 0
        raise ValueError("must be tcp://HOST:PORT or unix://PATH (or \"\" for off)")


@dataclass(frozen=True)
class DeviceConfig:
    profile: str = "x86-cpu"
    memory_budget_mb: int = 0          # models' memory (LLM + KV + ASR + TTS); 0 = the
                                       # profile's model_memory_mb
    start_timeout_s: float = 1800.0    # under systemd, how long a start (model loading, a
                                       # first TensorRT engine build) may extend the unit's
                                       # TimeoutStartSec with EXTEND_TIMEOUT_USEC; 0 = never


GPU_PATHS = ("tensorrt-native", "tensorrt", "cuda", "cpu")


@dataclass(frozen=True)
class GpuConfig:
    """Where the small fixed-shape models run (Silero VAD, the NLU encoder): README "GPU"."""

    vad_providers: tuple[str, ...] = ()    # path order, e.g. ["tensorrt-native", "cpu"];
    nlu_providers: tuple[str, ...] = ()    # () = the device profile's model_providers
    engine_dir: str = ""                   # TensorRT engines + timing cache; "" =
                                           # <paths.home>/engines
    fp16: bool = True                      # FP16 kernels where the GPU has fast FP16
                                           # (INT8 stays off: no calibration path)
    workspace_mb: int = 256                # TensorRT builder workspace
    device_index: int = 0                  # CUDA device
    vad_max_abs_error: float = 0.02        # agreement with the CPU on fixed inputs
    nlu_max_abs_error: float = 0.05        # (encoder logits)
    nlu_validation_file: str = ""          # JSONL with "text" per line: intents must agree
    min_intent_agreement: float = 0.99     # ... on at least this share of its lines
    validation_max_lines: int = 500        # lines of it used (start-up time)
    max_slowdown: float = 1.0              # a GPU path whose median call on the agreement
                                           # inputs exceeds the CPU's x this: next path
                                           # (0 = keep it whatever its speed)


@dataclass(frozen=True)
class HomeConfig:
    backend: str = "simulated"         # the home the ``home`` skill controls: simulated |
                                       # home_assistant (its REST API at ``url``)
    url: str = "http://127.0.0.1:8123"
    token: str = field(default="", repr=False)   # a long-lived access token; never logged
    timeout_s: float = 5.0             # per request; a timed-out action is never re-sent
    refresh_s: float = 600.0           # read the areas and entities again this often (0 = no)
    retry_s: float = 5.0               # after a failed read: the first wait, doubling


@dataclass(frozen=True)
class LoggingConfig:
    level: str = "INFO"


@dataclass(frozen=True)
class Config:
    paths: PathsConfig = field(default_factory=PathsConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    nlu: NluConfig = field(default_factory=NluConfig)
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    cloud: CloudConfig = field(default_factory=CloudConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)
    vad: VadConfig = field(default_factory=VadConfig)
    asr: AsrConfig = field(default_factory=AsrConfig)
    tts: TtsConfig = field(default_factory=TtsConfig)
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    home: HomeConfig = field(default_factory=HomeConfig)

    def with_overrides(self, **sections: Mapping[str, Any]) -> Config:
        """Return a validated copy with ``section={key: value}`` overrides applied."""
        return load_config(overrides=sections, base=self, env={})

    def validate(self) -> None:
        _check(self.server.port > 0 and self.server.port < 65536, "server.port", "must be 1..65535")
        _check(self.server.is_loopback() or bool(self.server.token), "server.token",
               f"is required when server.host={self.server.host!r} is not loopback")
        _check(0.0 <= self.nlu.oos_threshold <= 1.0, "nlu.oos_threshold", "must be within 0..1")
        _check(self.nlu.max_text_chars > 0, "nlu.max_text_chars", "must be positive")
        _check(self.cache.memory_items >= 0, "cache.memory_items", "must be >= 0")
        _check(self.llm.max_new_tokens > 0, "llm.max_new_tokens", "must be positive")
        _check(self.llm.temperature >= 0, "llm.temperature", "must be >= 0")
        _check(0 < self.llm.top_p <= 1, "llm.top_p", "must be within (0, 1]")
        _check(self.llm.repetition_penalty >= 1.0, "llm.repetition_penalty", "must be >= 1.0")
        _check(self.llm.threads >= 0, "llm.threads", "must be >= 0 (0 = the device profile's)")
        _check(self.llm.stuck_after_s >= 0, "llm.stuck_after_s", "must be >= 0 (0 = off)")
        _check(-1 <= self.llm.spin_us <= 100_000, "llm.spin_us",
               "must be 0..100000 (microseconds), or -1 (auto)")
        _check(self.llm.backend in ("onnx", "llama_cpp"), "llm.backend",
               "must be onnx or llama_cpp")
        _check(self.llm.accuracy_level in (1, 4), "llm.accuracy_level", "must be 1 or 4")
        _check(0 <= self.llm.max_batch <= 16, "llm.max_batch",
               "must be within 0..16 (0 = the device profile's)")
        bad = [p for p in self.llm.providers if p not in ("tensorrt", "cuda", "cpu")]
        _check(not bad, "llm.providers", f"unknown provider(s) {bad}; use tensorrt, cuda, cpu")
        _check(self.scheduler.budget_ms > 0, "scheduler.budget_ms", "must be positive")
        _check(0 < self.scheduler.ewma_alpha <= 1, "scheduler.ewma_alpha", "must be within (0, 1]")
        _check(self.scheduler.routing in ("budget", "local"), "scheduler.routing",
               "must be budget or local")
        _check(self.scheduler.max_queue_ms >= 0, "scheduler.max_queue_ms", "must be >= 0")
        _check(self.scheduler.min_decode_tok_s >= 0, "scheduler.min_decode_tok_s",
               "must be >= 0")
        _check(self.scheduler.retry_after_s > 0, "scheduler.retry_after_s", "must be positive")
        _check(self.server.max_concurrent_requests >= 1, "server.max_concurrent_requests",
               "must be >= 1")
        _check(self.cloud.deadline_ms > 0, "cloud.deadline_ms", "must be positive")
        _check(self.cloud.max_attempts >= 1, "cloud.max_attempts", "must be >= 1")
        _check(self.cloud.breaker_failures >= 1, "cloud.breaker_failures", "must be >= 1")
        _check(self.cloud.breaker_reset_s > 0, "cloud.breaker_reset_s", "must be positive")
        self._validate_voice()
        _check(self.asr.backend in ("whisper", "pocketsphinx", "vosk"), "asr.backend",
               "must be whisper, pocketsphinx or vosk")
        _check(self.tts.backend == "piper", "tts.backend", "must be piper")
        _check(self.audio.max_seconds > 0, "audio.max_seconds", "must be positive")
        _check(self.logging.level.upper() in ("DEBUG", "INFO", "WARNING", "ERROR"), "logging.level",
               "must be DEBUG, INFO, WARNING or ERROR")
        wake_words = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa", "none")
        _check(self.voice.wake_word in wake_words, "voice.wake_word",
               f"must be one of {', '.join(wake_words)}")
        _check(self.voice.wake_refractory_s >= 0, "voice.wake_refractory_s", "must be >= 0")
        _check(self.voice.wake_timeout_s > 0, "voice.wake_timeout_s", "must be positive")
        _check(self.voice.follow_up_s >= 0, "voice.follow_up_s", "must be >= 0")
        _check(isinstance(self.voice.microphone, bool), "voice.microphone",
               "must be true or false")
        _check(not self.voice.microphone or self.voice.enabled, "voice.microphone",
               "needs voice.enabled = true (the loop runs on the daemon's voice models)")
        if self.wyoming.uri:
            try:
                scheme, _, port = self.wyoming.parsed()
            except ValueError as exc:
                _check(False, "wyoming.uri", f"{self.wyoming.uri!r} {exc}")
            else:
                _check(scheme != "tcp" or 0 < port < 65536, "wyoming.uri",
                       "port must be 1..65535")
        for key in ("header_timeout_s", "body_timeout_s", "idle_timeout_s"):
            _check(0 < getattr(self.server, key) <= 3600, f"server.{key}",
                   "must be a number of seconds within (0, 3600]")
        _check(self.server.max_connections >= 1, "server.max_connections", "must be >= 1")
        self._validate_home()
        self._validate_gpu()

    def _validate_gpu(self) -> None:
        g = self.gpu
        for key in ("vad_providers", "nlu_providers"):
            bad = [p for p in getattr(g, key) if p not in GPU_PATHS]
            _check(not bad, f"gpu.{key}", f"unknown path(s) {bad}; use "
                   f"{', '.join(GPU_PATHS)}")
        _check(16 <= g.workspace_mb <= 65536, "gpu.workspace_mb", "must be within 16..65536")
        _check(g.device_index >= 0, "gpu.device_index", "must be >= 0")
        for key in ("vad_max_abs_error", "nlu_max_abs_error"):
            _check(getattr(g, key) > 0, f"gpu.{key}", "must be positive")
        _check(0 < g.min_intent_agreement <= 1, "gpu.min_intent_agreement",
               "must be within (0, 1]")
        _check(g.validation_max_lines >= 1, "gpu.validation_max_lines", "must be >= 1")
        _check(g.max_slowdown >= 0, "gpu.max_slowdown", "must be >= 0 (0 = off)")
        _check(not g.nlu_validation_file or Path(g.nlu_validation_file).expanduser().is_file(),
               "gpu.nlu_validation_file", f"{g.nlu_validation_file!r} is not a file")

    def _validate_home(self) -> None:
        h = self.home
        _check(h.backend in ("simulated", "home_assistant"), "home.backend",
               "must be simulated or home_assistant")
        _check(h.url.startswith(("http://", "https://")) and len(h.url.split("://", 1)[1]) > 0,
               "home.url", f"{h.url!r} must be an http:// or https:// URL, "
               "e.g. http://homeassistant.local:8123")
        _check(h.backend != "home_assistant" or bool(h.token.strip()), "home.token",
               "is required when home.backend = \"home_assistant\" (a long-lived access "
               "token: Home Assistant > your profile > Security)")
        _check(0 < h.timeout_s <= 60, "home.timeout_s", "must be within (0, 60] seconds")
        _check(h.refresh_s >= 0, "home.refresh_s", "must be >= 0 seconds (0 = never)")
        _check(0 < h.retry_s <= 3600, "home.retry_s", "must be within (0, 3600] seconds")

    def _validate_voice(self) -> None:
        """[vad] [asr] [tts] [voice]: checked here, so a bad value fails at load and not on
        every voice request."""
        v = self.vad
        _check(v.backend in ("silero", "webrtc"), "vad.backend", "must be silero or webrtc")
        _check(0.0 < v.threshold < 1.0, "vad.threshold", "must be within (0, 1), e.g. 0.5")
        _check(0.0 < v.neg_threshold <= v.threshold, "vad.neg_threshold",
               f"must be within (0, vad.threshold = {v.threshold}], e.g. 0.35")
        for key in ("start_ms", "pause_ms", "preroll_ms", "min_speech_ms"):
            _check(getattr(v, key) >= 0, f"vad.{key}", "must be >= 0")
        _check(v.end_silence_ms > 0, "vad.end_silence_ms", "must be positive")
        _check(v.end_silence_ms >= v.pause_ms, "vad.end_silence_ms",
               f"must be >= vad.pause_ms ({v.pause_ms})")
        _check(v.max_utterance_s > 0, "vad.max_utterance_s", "must be positive")
        _check(self.asr.threads > 0, "asr.threads", "must be positive")
        _check(self.asr.beam_size >= 1, "asr.beam_size", "must be >= 1")
        _check(1 <= self.asr.nbest <= self.asr.beam_size, "asr.nbest",
               "must be between 1 and asr.beam_size")
        _check(self.asr.nbest_margin >= 0, "asr.nbest_margin", "must be >= 0")
        _check(0 <= self.asr.unsure_below <= 1, "asr.unsure_below", "must be in 0..1")
        _check(0 <= self.asr.nbest_min_confidence <= 1, "asr.nbest_min_confidence",
               "must be between 0 and 1")
        _check(self.asr.window_s > 0, "asr.window_s", "must be positive")
        _check(self.asr.partial_every_s > 0, "asr.partial_every_s", "must be positive")
        _check(self.tts.threads > 0, "tts.threads", "must be positive")
        _check(self.tts.cache_mb >= 0, "tts.cache_mb", "must be >= 0")
        _check(self.tts.first_chunk_chars > 0, "tts.first_chunk_chars", "must be positive")
        _check(self.tts.first_chunk_max_chars >= self.tts.first_chunk_chars,
               "tts.first_chunk_max_chars", "must be >= tts.first_chunk_chars")
        _check(self.voice.echo_margin > 0, "voice.echo_margin", "must be positive")
        _check(self.device.start_timeout_s >= 0, "device.start_timeout_s", "must be >= 0")
        _check(self.device.memory_budget_mb >= 0, "device.memory_budget_mb",
               "must be >= 0 (0 = the device profile's)")


def load_config(path: str | os.PathLike | None = None, *, env: Mapping[str, str] | None = None,
                overrides: Mapping[str, Mapping[str, Any]] | None = None,
                base: Config | None = None) -> Config:
    """Load the effective configuration (defaults < file < env < overrides) and validate it."""
    cfg = base or Config()
    env = os.environ if env is None else env
    path = path or env.get(ENV_PREFIX + "CONFIG") or None
    if path:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {p} does not exist",
                              hint="pass an existing --config") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
        cfg = apply_values(cfg, data, str(p))
    cfg = apply_values(cfg, env_values(env), "environment")
    if overrides:
        cfg = apply_values(cfg, overrides, "command-line overrides")
    cfg.validate()
    return cfg
