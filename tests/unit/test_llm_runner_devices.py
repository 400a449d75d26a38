"""The KV runner on a GPU provider: onnxruntime copies a bound input to the device of the
node that reads it when it is bound, not at each run, so buffers bound once and written
later would feed every decode step the first step's token and position. The session here
is a real CPU one wrapped to copy ``input_ids`` / ``position_ids`` at bind time, as a
CUDA session does (it was a real failure on an H200: `models check --provider cuda`
top-1 0.6 %, the engine's greedy text off after three tokens)."""
import ctypes

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("onnx")


class CopyAtBind:
    """An IOBinding whose token and position inputs are copied when bound."""

    def __init__(self, io):
        self.io, self.kept = io, []

    def bind_input(self, name, device, index, dtype, shape, ptr):
        if name in ("input_ids", "position_ids"):
            n = int(np.prod(shape))
            copy = np.ctypeslib.as_array((ctypes.c_int64 * n).from_address(ptr)).copy()
            self.kept.append(copy)
            ptr = copy.ctypes.data
        self.io.bind_input(name, device, index, dtype, shape, ptr)

    def __getattr__(self, name):
        return getattr(self.io, name)


class DeviceLikeSession:
    def __init__(self, sess):
        self.sess = sess

    def io_binding(self):
        return CopyAtBind(self.sess.io_binding())

    def run_with_iobinding(self, io, *args):
        return self.sess.run_with_iobinding(io.io, *args)

    def __getattr__(self, name):
        return getattr(self.sess, name)


def _logits(model_dir, device, wrap, ids):
    import json

    from edge_runtime.llm.providers import OpenedSession
    from edge_runtime.llm.runner import KvRunner
    from edge_runtime.onnx_session import build_session
    cfg = json.loads((model_dir / "model_config.json").read_text())
    sess = build_session(model_dir / cfg["model_file"], threads=1)
    runner = KvRunner(OpenedSession(wrap(sess), device, ["CPUExecutionProvider"], []), cfg, 64)
    out = [runner.feed(ids[:5]).copy()]                       # a prefill, then decode steps
    out += [runner.feed([t]).copy() for t in ids[5:]]
    return np.stack(out)


def test_decode_steps_on_a_gpu_provider_see_each_new_token_and_position(tiny_llm):
    ids = [5, 17, 42, 99, 7, 13, 200, 3, 88, 150, 21, 64]
    reference = _logits(tiny_llm, "cpu", lambda s: s, ids)
    on_gpu = _logits(tiny_llm, "cuda", DeviceLikeSession, ids)
    np.testing.assert_allclose(on_gpu, reference, rtol=0, atol=1e-5)


def test_the_copy_at_bind_session_does_tell_stale_inputs_apart(tiny_llm):
    """The test above can fail: run as the CPU (inputs bound once) over the copying
    session, the decode steps see stale inputs and their logits differ."""
    ids = [5, 17, 42, 99, 7, 13, 200, 3, 88, 150, 21, 64]
    reference = _logits(tiny_llm, "cpu", lambda s: s, ids)
    stale = _logits(tiny_llm, "cpu", DeviceLikeSession, ids)
    assert np.abs(stale[2:] - reference[2:]).max() > 1e-2


def _batched(model_dir, device, wrap, prompts, steps):
    import json

    from edge_runtime.llm.batch_runner import BatchKvRunner
    from edge_runtime.llm.providers import OpenedSession
    from edge_runtime.onnx_session import build_session
    cfg = json.loads((model_dir / "model_config.json").read_text())
    sess = build_session(model_dir / cfg["model_file"], threads=1)
    runner = BatchKvRunner(OpenedSession(wrap(sess), device, ["CPUExecutionProvider"], []),
                           cfg, 64, len(prompts))
    out = [runner.prefill(slot, ids, reuse=False) for slot, ids in enumerate(prompts)]
    for tokens in steps:
        got = runner.step(dict(enumerate(tokens)))
        out += [got[slot].copy() for slot in range(len(prompts))]
    return np.stack(out)


def test_batched_decode_on_a_gpu_provider_sees_each_rows_token_and_position(tiny_llm):
    prompts = [[5, 17, 42, 99], [7, 13, 200, 3, 88, 150]]
    steps = [(21, 64), (9, 33), (120, 4), (77, 250)]
    reference = _batched(tiny_llm, "cpu", lambda s: s, prompts, steps)
    on_gpu = _batched(tiny_llm, "cuda", DeviceLikeSession, prompts, steps)
    np.testing.assert_allclose(on_gpu, reference, rtol=0, atol=1e-5)
