import pytest

from edge_runtime.config import (Config, config_to_toml, load_config, parse_overrides)
from edge_runtime.errors import ConfigError


def test_defaults_are_the_embedded_setup():
    cfg = load_config(env={})
    assert cfg.server.host == "127.0.0.1"
    assert cfg.scheduler.budget_ms == 150.0
    assert cfg.llm.providers == ("tensorrt", "cuda", "cpu")


def test_precedence_file_then_env_then_overrides(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[scheduler]\nbudget_ms = 200\n[server]\nport = 9000\n[llm]\nthreads = 1\n')
    cfg = load_config(f, env={"EDGE_RUNTIME_SCHEDULER__BUDGET_MS": "300",
                              "EDGE_RUNTIME_LLM__THREADS": "3"},
                      overrides=parse_overrides(["scheduler.budget_ms=1"]))
    assert cfg.scheduler.budget_ms == 1.0      # --set wins
    assert cfg.llm.threads == 3                # env beats the file
    assert cfg.server.port == 9000             # the file beats defaults


def test_env_names_config_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[server]\nport = 9100\n')
    assert load_config(env={"EDGE_RUNTIME_CONFIG": str(f)}).server.port == 9100


@pytest.mark.parametrize("env,key", [
    ({"EDGE_RUNTIME_SCHEDULER__BUDGT_MS": "1"}, "scheduler.budgt_ms"),
    ({"EDGE_RUNTIME_NOPE__X": "1"}, "[nope]"),
    ({"EDGE_RUNTIME_SCHEDULER__BUDGET_MS": "fast"}, "scheduler.budget_ms"),
    ({"EDGE_RUNTIME_SERVER__PORT": "70000"}, "server.port"),
    ({"EDGE_RUNTIME_LLM__PROVIDERS": "cuda,rocm"}, "llm.providers"),
    ({"EDGE_RUNTIME_CACHE__DISK_ENABLED": "maybe"}, "cache.disk_enabled"),
    ({"EDGE_RUNTIME_SERVER__HOST": "0.0.0.0"}, "server.token"),
])
def test_bad_keys_and_values_name_the_key(env, key):
    with pytest.raises(ConfigError) as exc:
        load_config(env=env)
    assert key in exc.value.one_line()


def test_bad_toml_names_the_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("[server\nport = 1")
    with pytest.raises(ConfigError, match="bad.toml"):
        load_config(f, env={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml", env={})


def test_non_loopback_needs_token():
    cfg = load_config(env={"EDGE_RUNTIME_SERVER__HOST": "0.0.0.0",
                           "EDGE_RUNTIME_SERVER__TOKEN": "s3cret"})
    assert not cfg.server.is_loopback()


def test_mappings_and_lists_from_env():
    cfg = load_config(env={"EDGE_RUNTIME_CACHE__TTL_S": '{"weather": 60}',
                           "EDGE_RUNTIME_LLM__PROVIDERS": '["cpu"]'})
    assert cfg.cache.ttl_s == {"weather": 60.0}
    assert cfg.llm.providers == ("cpu",)


def test_show_round_trips_through_toml(tmp_path):
    cfg = load_config(env={}, overrides=parse_overrides(["scheduler.budget_ms=42"]))
    f = tmp_path / "shown.toml"
    f.write_text(config_to_toml(cfg))
    assert load_config(f, env={}) == cfg


def test_config_is_frozen():
    with pytest.raises(Exception):
        Config().server.port = 1  # type: ignore[misc]


def test_override_syntax_errors():
    with pytest.raises(ConfigError):
        parse_overrides(["budget_ms=1"])
