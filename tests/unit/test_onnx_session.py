"""The one onnxruntime session builder: threads, no spinning, providers, typed errors."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from edge_runtime.errors import ModelLoadError  # noqa: E402
from edge_runtime.onnx_session import build_session, session_options  # noqa: E402


def _identity_model(path):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_options_pin_threads_and_turn_spinning_off():
    so = session_options(3)
    assert so.intra_op_num_threads == 3
    assert so.inter_op_num_threads == 1
    assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert session_options(0).intra_op_num_threads == 1      # never "all cores"


def test_a_session_runs_on_the_requested_providers(tmp_path):
    sess = build_session(_identity_model(tmp_path / "m.onnx"), threads=1)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x)
    opts = sess.get_session_options()
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_a_corrupt_file_raises_a_model_load_error_naming_file_and_stage(tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ModelLoadError, match="broken.onnx") as info:
        build_session(bad, stage="vad", what="silero VAD model", hint="pull it again")
    assert info.value.stage == "vad" and info.value.hint == "pull it again"
    assert "silero VAD model" in info.value.message


def test_a_missing_file_is_a_model_load_error_too(tmp_path):
    with pytest.raises(ModelLoadError, match="nothing.onnx"):
        build_session(tmp_path / "nothing.onnx", stage="tts")
