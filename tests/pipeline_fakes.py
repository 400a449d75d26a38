"""Fakes at the edges of the pipeline's unit tests (the real stages have their own tests)."""
from __future__ import annotations

from edge_runtime.cache.base import CachedAnswer
from edge_runtime.clock import Clock
from edge_runtime.config import Config, load_config
from edge_runtime.errors import CloudUnavailableError, ModelMissingError
from edge_runtime.llm.prompt import Prompt
from edge_runtime.metrics import Metrics
from edge_runtime.nlu.base import IntentSet, IntentSpec
from edge_runtime.pipeline import Pipeline, Stages
from edge_runtime.scheduler import Scheduler, TtftPredictor
from edge_runtime.types import Intent


class FakeUnderstander:
    intents = IntentSet({"get_time": IntentSpec("get_time", skill="time"),
                         "oos": IntentSpec("oos", cacheable=True)})

    def parse(self, query):
        return Intent("get_time", 0.9, text=query.normalized) if "time" in query.normalized \
            else Intent("oos", 0.2, text=query.normalized)

    def acts_on(self, text, at_least=0.0):
        return "time" in text


class FakeSkill:
    name = "time"

    def handle(self, intent, text):
        return "It is noon."


class FakeSkills:
    timers = None

    def get(self, name):
        return FakeSkill() if name == "time" else None


class DictCache:
    def __init__(self):
        self.d = {}

    def get(self, key):
        return self.d.get(key)

    def put(self, key, answer: CachedAnswer, ttl_s):
        self.d[key] = answer

    def tier_states(self):
        return {"memory": "ok"}

    def error_counts(self):
        return {"memory": 0}

    def probe_due(self):
        pass

    def close(self):
        pass


class FakeEngine:
    device = "cpu"
    providers = ["CPUExecutionProvider"]
    capacity = 1                      # one request at a time, like the plain ONNX engine

    def step_time_s(self, batch):
        return 0.01

    def __init__(self, pieces=("Light ", "scatters.")):
        self.pieces = pieces
        self.calls = 0
        self.cancelled = False

    def prompt_tokens(self, messages):
        return 20

    def close(self):
        pass

    def prepare(self, messages):
        return Prompt.untemplated(messages, self.prompt_tokens(messages))

    def generate(self, messages, params, cancel=None):
        self.calls += 1
        for p in self.pieces:
            if cancel is not None and cancel.cancelled:
                self.cancelled = True
                return
            yield p


class FakeCloud:
    def __init__(self, pieces=("From ", "cloud."), fail_after: int | None = None,
                 available=True):
        self.pieces, self.fail_after, self.available = pieces, fail_after, available
        self.state = "up" if available else "down"
        self.calls = 0
        self.predicted_s = 0.0          # what the gateways' heartbeats would predict

    def predict_ttft_s(self, pending=0):
        return self.predicted_s, f"cloud ttft ~{self.predicted_s * 1e3:.0f} ms (fake)"

    async def stream(self, messages, params, deadline_s):
        self.calls += 1
        for i, p in enumerate(self.pieces):
            if self.fail_after is not None and i >= self.fail_after:
                raise CloudUnavailableError("cloud killed mid-stream")
            yield p
        if self.fail_after is not None and self.fail_after >= len(self.pieces):
            raise CloudUnavailableError("cloud killed before done")

    async def start(self):
        pass

    async def close(self):
        pass


def make_pipeline(*, budget_ms=150.0, engine="default", cloud=None,
                  cfg: Config | None = None, clock: Clock | None = None) -> Pipeline:
    cfg = cfg or load_config(env={})
    cfg = cfg.with_overrides(scheduler={"budget_ms": budget_ms})
    engine = FakeEngine() if engine == "default" else engine
    stages = Stages(
        understander=FakeUnderstander(), skills=FakeSkills(), cache=DictCache(),
        make_key=lambda intent, spec, text: f"k:{text.lower()}" if spec.cacheable else None,
        ttl_for=lambda spec: 60.0,
        scheduler=Scheduler(cfg.scheduler, TtftPredictor(overhead_s=0.01, per_token_s=0.001)),
        llm=engine, llm_error=None if engine else ModelMissingError(
            "LLM model is not built", hint="run `edge-runtime models build`"),
        cloud=cloud)
    return Pipeline(cfg, stages, Metrics(), *(() if clock is None else (clock,)))
