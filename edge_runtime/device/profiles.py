"""Device profiles: what a target machine can give the runtime.

A profile names the onnxruntime provider order to try, how much memory the
models may take, the default LLM thread count, the recommended micro-batching
size (``llm.max_batch = 0`` takes it) and, where known, a latency prior for the
scheduler. ``config.device.profile`` selects one by name.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .errors import UnknownProfileError


@dataclass(frozen=True)
class LatencyModel:
    """A linear time-to-first-token model: ``overhead + prompt_tokens / prefill rate``.

    Rates are tokens per second at nominal clocks; ``overhead_ms`` is the fixed
    cost of one request (session run set-up, first decode step) in milliseconds.
    ``*_gpu`` figures apply while the GPU is available, ``*_cpu`` ones after it is
    lost (CPU execution provider on the same board).
    """

    prefill_tok_s_gpu: float
    decode_tok_s_gpu: float
    prefill_tok_s_cpu: float
    decode_tok_s_cpu: float
    overhead_ms: float = 15.0

    def __post_init__(self) -> None:
        rates = (self.prefill_tok_s_gpu, self.decode_tok_s_gpu,
                 self.prefill_tok_s_cpu, self.decode_tok_s_cpu)
        if min(rates) <= 0 or self.overhead_ms < 0:
            raise ConfigError("latency model rates must be positive and overhead_ms >= 0",
                              hint="fix the device profile definition")

    def ttft_s(self, prompt_tokens: int, *, gpu: bool = True, slowdown: float = 1.0) -> float:
        """Predicted time to first token in seconds for a prompt of ``prompt_tokens``.

        ``slowdown`` (>= 1) stretches the GPU compute part (thermal throttling);
        it does not apply to the CPU path, whose clocks this model does not track.
        """
        if prompt_tokens < 0:
            raise ValueError("prompt_tokens must be >= 0")
        rate = self.prefill_tok_s_gpu if gpu else self.prefill_tok_s_cpu
        decode = self.decode_tok_s_gpu if gpu else self.decode_tok_s_cpu
        compute = prompt_tokens / rate + 1.0 / decode
        if gpu:
            compute *= max(1.0, slowdown)
        return self.overhead_ms / 1000.0 + compute

    def decode_tok_s(self, *, gpu: bool = True, slowdown: float = 1.0) -> float:
        """Predicted decode speed in tokens per second."""
        if gpu:
            return self.decode_tok_s_gpu / max(1.0, slowdown)
        return self.decode_tok_s_cpu


@dataclass(frozen=True)
class DeviceProfile:
    """What one kind of machine offers the runtime.

    ``providers`` is the onnxruntime order to try (names as in ``llm.providers``);
    ``model_memory_mb`` the budget for all loaded models together (MB): LLM weights + KV
    cache at the configured context + ASR + TTS, checked before the LLM is loaded
    (:func:`edge_runtime.models.budget.check_llm_budget`; ``device.memory_budget_mb``
    overrides it);
    ``llm_threads`` the intra-op thread count of the LLM session when ``llm.threads`` is 0
    (the default; :meth:`llm_thread_count`);
    ``gpu_nominal_mhz`` the GPU clock the latency figures assume (None: no GPU);
    ``latency`` a prior for the scheduler before it calibrates (None: calibrate);
    ``simulated`` marks a profile whose telemetry comes from a recorded trace,
    ``trace`` names that trace (a file in ``edge_runtime/device/traces``);
    ``max_batch`` the recommended number of LLM sessions decoding together (1 = no
    micro-batching), what ``llm.max_batch = 0`` resolves to (:meth:`llm_max_batch`);
    ``model_providers`` the path order of the small fixed-shape models (Silero VAD, the
    NLU encoder): ``tensorrt-native`` (a TensorRT engine of their own, ``edge_runtime.gpu``),
    ``tensorrt`` / ``cuda`` (onnxruntime providers), ``cpu``; ``gpu.*_providers`` override.
    """

    name: str
    providers: tuple[str, ...]
    model_memory_mb: int
    llm_threads: int
    notes: str
    gpu_nominal_mhz: float | None = None
    latency: LatencyModel | None = None
    simulated: bool = False
    trace: str | None = None
    max_batch: int = 1
    model_providers: tuple[str, ...] = ("cpu",)

    def __post_init__(self) -> None:
        if not 1 <= self.max_batch <= 16:
            raise ConfigError(f"profile {self.name}: max_batch must be within 1..16",
                              hint="fix the device profile definition")

    @property
    def has_gpu(self) -> bool:
        return self.gpu_nominal_mhz is not None

    @property
    def expects_gpu(self) -> bool:
        """True when this profile's provider order puts a GPU provider first on a real
        board (a simulated profile runs on the CPU by design)."""
        return not self.simulated and bool(self.providers) and \
            self.providers[0] in ("tensorrt", "cuda")

    def llm_thread_count(self, configured: int) -> int:
        """The LLM session's intra-op threads: ``configured`` (``llm.threads``) unless it is
        0, which means this profile's ``llm_threads``."""
        return int(configured) if configured > 0 else self.llm_threads

    def llm_max_batch(self, configured: int) -> int:
        """The micro-batching size to use: ``configured`` (``llm.max_batch``) unless it is
        0, which means this profile's recommendation."""
        return int(configured) if configured > 0 else self.max_batch


# Orin Nano figures are priors, not measurements made by this project (there is no Jetson
# here). Decode: the published figure for the default model on the board is SmolLM2-135M at
# 165.2 tok/s with llama.cpp CUDA (all layers on the GPU) in the 25 W mode of an Orin Nano
# Super 8 GB, JetPack 6 / L4T r36.4 (smolhub.com, "Tiny LLM Benchmark: Jetson Orin Nano Super
# 8GB", 2026); the same sweep puts 25 W at 1.43x the tok/s of 15 W, so 165.2 / 1.43 = 115
# tok/s at the 15 W clocks this profile assumes (gpu_nominal_mhz). It is an upper bound for
# this engine: its fp32 graph runs attention (GroupQueryAttention) on the CPU. (The 41 tok/s
# once here is NVIDIA's MLC INT4 figure for SmolLM2-1.7B, a model 13x larger.) Prefill and
# the CPU rates are estimates; the scheduler calibrates its own on the device at start.
_ORIN_NANO_LATENCY = LatencyModel(prefill_tok_s_gpu=900.0, decode_tok_s_gpu=115.0,
                                  prefill_tok_s_cpu=220.0, decode_tok_s_cpu=22.0,
                                  overhead_ms=20.0)

# Recommended llm.max_batch. x86-cpu: measured here (2-core AVX-512 box, SmolLM2-135M INT4,
# onnxruntime 1.32, `edge-runtime bench llm` batching sweep and raw decode steps): a step
# costs 12.2 ms at 1 row, 23.6 ms at 8, 36.5 ms at 16 (82 -> 340 -> 439 tok/s); 8 gives
# most of the gain at half the KV memory of 16 (8 x 1024 tokens x 45 KiB = 368 MB at most)
# and keeps each session above 40 tok/s. Orin Nano: a prior, not a measurement (no Jetson
# here): the GPU matmuls are weight-bandwidth-bound at 1 row, so rows are nearly free there,
# but attention and the KV cache run on the CPU (fp32 GroupQueryAttention has no CUDA
# kernel) and 7.6 GB is shared with ASR/TTS, so 4 until `edge-runtime bench llm` is run on
# the board. The simulated Orin mirrors the board it stands for.
_X86_MAX_BATCH = 8

# Orin Nano 8 GB: 7.6 GB of unified memory; about 1.6 GB stays with L4T (headless), the CUDA
# context and the Python runtime, so the models may take 6000 MB together (a 1 B Q4_K_M
# LLM with 2048 tokens of KV, whisper tiny and a Piper voice: about 1.1 GB by file size).
# A prior to be checked with tegrastats on the board, not a measurement made here.
_ORIN_NANO_MODEL_MB = 6000
_ORIN_NANO_MAX_BATCH = 4

_BUILTIN: dict[str, DeviceProfile] = {p.name: p for p in (
    DeviceProfile(
        name="orin-nano-8gb",
        providers=("tensorrt", "cuda", "cpu"),
        model_memory_mb=_ORIN_NANO_MODEL_MB,
        llm_threads=4,
        gpu_nominal_mhz=624.0,
        latency=_ORIN_NANO_LATENCY,
        max_batch=_ORIN_NANO_MAX_BATCH,
        model_providers=("tensorrt-native", "tensorrt", "cuda", "cpu"),
        notes=("Jetson Orin Nano 8 GB, JetPack 6.1/6.2 (L4T r36.4, CUDA 12.6, TensorRT 10.3, "
               "Python 3.10). 7.6 GB unified memory shared by CPU and GPU, so the model "
               "budget leaves room for the OS, ASR and TTS. 6 Cortex-A78AE cores: 4 LLM "
               "threads leave 2 for audio. No DLA. GPU nominal 624 MHz (15 W mode); the "
               "Super/MAXN_SUPER mode runs faster, which only lowers the slowdown to 1."),
    ),
    DeviceProfile(
        name="x86-cpu",
        providers=("cpu",),
        model_memory_mb=4096,
        llm_threads=2,
        max_batch=_X86_MAX_BATCH,
        notes=("Any Linux x86-64 box without a GPU (development, CI). The scheduler "
               "calibrates its latency estimate at start."),
    ),
    DeviceProfile(
        name="sim-orin-nano",
        providers=("cpu",),
        model_memory_mb=_ORIN_NANO_MODEL_MB,
        llm_threads=2,
        gpu_nominal_mhz=624.0,
        latency=_ORIN_NANO_LATENCY,
        simulated=True,
        trace="sim-orin-nano.tegrastats.txt",
        max_batch=_ORIN_NANO_MAX_BATCH,
        notes=("A simulated Orin Nano 8 GB on an x86 box: inference runs on the CPU "
               "provider, while SimulatedDevice replays a synthetic tegrastats trace "
               "(warm-up, thermal throttling, GPU loss) so scheduling decisions under "
               "throttling and GPU loss can be tested without a Jetson."),
    ),
)}


def profile_names() -> tuple[str, ...]:
    """Names of the built-in profiles, sorted."""
    return tuple(sorted(_BUILTIN))


def get_profile(name: str) -> DeviceProfile:
    """Return the built-in profile ``name``, or raise UnknownProfileError naming
    ``device.profile``."""
    try:
        return _BUILTIN[name]
    except (KeyError, TypeError):
        raise UnknownProfileError(
            f"config key device.profile has unknown value {name!r}",
            hint=f"use one of: {', '.join(profile_names())}") from None
