"""The engine cache: keyed files, a key mismatch (another GPU / TensorRT version / power
mode) is told apart from a truncated or corrupt file, and the power mode is read from
nvpmodel's status file."""
import dataclasses

import pytest

from edge_runtime.gpu.engine_cache import EngineCache, EngineKey, KeyMismatch, power_mode
from edge_runtime.gpu.errors import EngineInvalidError

KEY = EngineKey("vad", "ab" * 32, "Orin (nvgpu)", "10.3.0", "pmode-0", "fp16", "input=...")


def test_a_stored_engine_loads_back_under_its_key(tmp_path):
    cache = EngineCache(tmp_path)
    path = cache.store(KEY, b"PLAN" * 100)
    assert path == cache.engine_path(KEY) and path.name.startswith("vad-abababababab-")
    assert cache.load(KEY) == b"PLAN" * 100
    assert cache.load(dataclasses.replace(KEY, model_sha256="cd" * 32)) is None


@pytest.mark.parametrize("field, value", [("gpu", "NVIDIA H200"), ("tensorrt", "10.7.0"),
                                          ("power_mode", "pmode-2")])
def test_a_file_built_for_another_setup_is_a_key_mismatch_naming_the_difference(
        tmp_path, field, value):
    cache = EngineCache(tmp_path)
    other = dataclasses.replace(KEY, **{field: value})
    cache.engine_path(KEY).parent.mkdir(parents=True, exist_ok=True)
    cache.store(other, b"PLAN")
    cache.engine_path(other).rename(cache.engine_path(KEY))      # copied from another board
    with pytest.raises(KeyMismatch, match=field) as info:
        cache.load(KEY)
    assert value in str(info.value)


@pytest.mark.parametrize("cut", [3, 20, -5])
def test_a_truncated_file_is_invalid_and_moved_aside(tmp_path, cut):
    cache = EngineCache(tmp_path)
    path = cache.store(KEY, b"PLAN" * 100)
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(EngineInvalidError) as info:
        cache.load(KEY)
    assert "truncated" in info.value.message or "EDGETRT1" in info.value.message
    assert not path.exists() and path.with_suffix(".engine.bad").exists()
    assert cache.load(KEY) is None                  # the next start rebuilds


def test_a_corrupt_plan_fails_its_checksum(tmp_path):
    cache = EngineCache(tmp_path)
    path = cache.store(KEY, b"PLAN" * 100)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(EngineInvalidError, match="sha256"):
        cache.load(KEY)


def test_the_timing_cache_lives_next_to_the_engines_per_gpu_and_version(tmp_path):
    cache = EngineCache(tmp_path)
    assert cache.read_timing_cache(KEY) == b""
    cache.write_timing_cache(KEY, b"TIMING")
    assert cache.read_timing_cache(KEY) == b"TIMING"
    assert cache.timing_cache_path(KEY).parent == tmp_path
    assert cache.timing_cache_path(dataclasses.replace(KEY, tensorrt="10.7")) != \
        cache.timing_cache_path(KEY)


def test_power_mode_reads_nvpmodel_status_or_says_na(tmp_path):
    status = tmp_path / "status"
    status.write_text("pmode:0002 fmode:fanNull\n")
    assert power_mode(status) == "pmode-2"
    status.write_text("garbage")
    assert power_mode(status) == "na"
    assert power_mode(tmp_path / "absent") == "na"
