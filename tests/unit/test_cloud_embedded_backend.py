"""The embedded backend around a fake engine (load_engine is the I/O edge: model files)."""
from __future__ import annotations

import threading
import time

import pytest

import edge_runtime.llm
from cloud_fallback.backends.embedded import EmbeddedBackend
from cloud_fallback.gateway import Gateway
from edge_runtime.errors import ConfigError, ModelLoadError
from edge_runtime.protocol import Chunk, Done, Request
from edge_runtime.types import CancelToken, GenerationParams, Message
from tests.cloud_fixtures import Peer

pytestmark = pytest.mark.timeout(30)


class FakeEngine:
    model_name = "smol-fake"
    device = "cpu"

    def __init__(self, model_dir, **kwargs):
        self.model_dir, self.kwargs = model_dir, kwargs
        self.last_stats: dict = {}

    def prompt_tokens(self, messages):
        return 11

    def generate(self, messages, params, cancel=None):
        for word in ["Blue", " sky", "."]:
            yield word
        self.last_stats = {"prompt_tokens": 11, "new_tokens": 4, "stop_reason": "end_of_turn"}


@pytest.fixture
def fake_load(monkeypatch):
    loaded = []

    def load_engine(model_dir, **kwargs):
        loaded.append(FakeEngine(model_dir, **kwargs))
        return loaded[-1]

    monkeypatch.setattr(edge_runtime.llm, "load_engine", load_engine)
    return loaded


def test_loads_the_engine_with_the_given_settings(fake_load, tmp_path):
    backend = EmbeddedBackend(tmp_path, threads=3, providers=("cpu",))
    (engine,) = fake_load
    assert engine.model_dir == tmp_path
    assert engine.kwargs == {"providers": ("cpu",), "threads": 3}
    assert backend.model_name == "smol-fake"
    assert EmbeddedBackend(tmp_path, model_name="named").model_name == "named"


def test_missing_model_dir_names_the_fix(fake_load, tmp_path):
    with pytest.raises(ModelLoadError) as err:
        EmbeddedBackend(tmp_path / "absent")
    assert "models build" in err.value.hint
    assert not fake_load


def test_gateway_reports_the_engines_own_usage(fake_load, tmp_path):
    with Gateway(EmbeddedBackend(tmp_path), "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        peer.send(Request("r", time.time() + 5, (Message("user", "sky?"),), GenerationParams()))
        assert peer.answer("r") == [Chunk("r", 0, "Blue"), Chunk("r", 1, " sky"),
                                    Chunk("r", 2, "."), Done("r", 11, 4, "stop")]
        peer.close()


class MeetingEngine(FakeEngine):
    """Each generate waits until ``meet`` callers are inside generate at the same time."""

    def __init__(self, model_dir, **kwargs):
        super().__init__(model_dir, **kwargs)
        self.barrier = threading.Barrier(kwargs.get("max_batch", 1), timeout=2.0)

    def generate(self, messages, params, cancel=None):
        self.barrier.wait()                  # BrokenBarrierError when calls are serialized
        yield from super().generate(messages, params, cancel)


def test_max_batch_loads_a_batching_engine_and_runs_generations_concurrently(monkeypatch,
                                                                             tmp_path):
    engines = []
    monkeypatch.setattr(edge_runtime.llm, "load_engine",
                        lambda d, **kw: engines.append(MeetingEngine(d, **kw)) or engines[-1])
    backend = EmbeddedBackend(tmp_path, threads=2, providers=("cpu",), max_batch=3)
    assert engines[0].kwargs == {"providers": ("cpu",), "threads": 2, "max_batch": 3}
    assert backend.capacity == 3
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(list(backend.generate(
        [Message("user", "sky?")], GenerationParams(), CancelToken())))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results == [["Blue", " sky", "."]] * 3          # all three met inside generate


def test_unbatched_backend_keeps_one_generation_at_a_time(fake_load, tmp_path):
    backend = EmbeddedBackend(tmp_path)
    assert backend.capacity == 1
    first = backend.generate([Message("user", "a")], GenerationParams(), CancelToken())
    assert next(first) == "Blue"                          # holds the session's lock
    second = backend.generate([Message("user", "b")], GenerationParams(), CancelToken())
    got: list[str] = []
    t = threading.Thread(target=lambda: got.extend(second))
    t.start()
    t.join(0.2)
    assert t.is_alive() and not got                       # waits for the first to finish
    list(first)
    t.join(5)
    assert got == ["Blue", " sky", "."]


@pytest.mark.parametrize("max_batch", [0, 17])
def test_max_batch_out_of_range_is_a_config_error(fake_load, tmp_path, max_batch):
    with pytest.raises(ConfigError, match="max-batch"):
        EmbeddedBackend(tmp_path, max_batch=max_batch)
    assert not fake_load
