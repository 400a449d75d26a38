"""`edge-cloud serve` sizing flags: workers and queue follow the backend's capacity."""
from __future__ import annotations

import pytest

import edge_runtime.llm
from cloud_fallback.cli import QUEUE_PER_WORKER, build_parser, gateway_sizes, make_backend
from edge_runtime.errors import EdgeError


def serve_args(*argv: str):
    return build_parser().parse_args(["serve", *argv])


@pytest.mark.parametrize("argv, sizes", [
    (("--backend", "echo"), (8, 8 * QUEUE_PER_WORKER)),
    (("--backend", "echo", "--workers", "2"), (2, 2 * QUEUE_PER_WORKER)),
    (("--backend", "echo", "--queue-size", "5"), (8, 5)),
    (("--backend", "openai", "--openai-model", "m"), (8, 32)),
    (("--backend", "openai", "--openai-model", "m", "--openai-parallel", "3"), (3, 12)),
])
def test_workers_default_to_the_backends_capacity(argv, sizes):
    args = serve_args(*argv)
    assert gateway_sizes(args, make_backend(args)) == sizes


def test_embedded_backend_batches_max_batch_requests(monkeypatch, tmp_path):
    seen: list[dict] = []

    class Engine:
        model_name, device = "fake", "cpu"

    monkeypatch.setattr(edge_runtime.llm, "load_engine",
                        lambda d, **kw: seen.append(kw) or Engine())
    args = serve_args("--backend", "embedded", "--model-dir", str(tmp_path))
    assert args.max_batch == 8 and args.workers == 0 and args.queue_size == 0
    assert gateway_sizes(args, make_backend(args)) == (8, 32)
    assert seen[-1]["max_batch"] == 8
    args = serve_args("--backend", "embedded", "--model-dir", str(tmp_path), "--max-batch", "1")
    assert gateway_sizes(args, make_backend(args)) == (1, QUEUE_PER_WORKER)
    assert "max_batch" not in seen[-1]                  # the plain single-session engine


def test_a_backend_without_capacity_gets_one_worker():
    assert gateway_sizes(serve_args(), object()) == (1, QUEUE_PER_WORKER)


def test_negative_sizes_are_refused():
    with pytest.raises(EdgeError, match="must be >= 0"):
        gateway_sizes(serve_args("--workers", "-1"), object())
