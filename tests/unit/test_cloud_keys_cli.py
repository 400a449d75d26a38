"""`edge-runtime keys generate`, `edge-cloud keys generate|add` and the allow-list file."""
from __future__ import annotations

import json
import shlex

import pytest
import zmq

from cloud_fallback.cli import main as edge_cloud
from cloud_fallback.security import _AllowList, add_allowed_key, read_allow_list
from edge_runtime.cloud_link.keys import load_keypair, load_public_key
from edge_runtime.cloud_link.keys_cli import keys_generate_main
from edge_runtime.errors import ConfigError


def test_keys_generate_main_writes_a_pair_and_prints_the_next_steps(tmp_path, capsys):
    assert keys_generate_main(["--dir", str(tmp_path), "--name", "kitchen"]) == 0
    out = capsys.readouterr().out
    public, secret = load_keypair(tmp_path / "kitchen.key_secret")
    assert public.decode() in out
    assert f'cloud.client_secret_key_file = "{tmp_path / "kitchen.key_secret"}"' in out
    add_line = next(line for line in out.splitlines() if "edge-cloud keys add" in line)
    assert shlex.split(add_line.split(":", 1)[1])[3] == public.decode()   # quoted for the shell


def test_keys_generate_main_json_and_refusal_to_overwrite(tmp_path, capsys):
    assert keys_generate_main(["--dir", str(tmp_path), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert load_public_key(obj["public_key_file"]).decode() == obj["public_key"]
    assert keys_generate_main(["--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_keys_generate_main_defaults_to_the_xdg_config_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert keys_generate_main([]) == 0
    assert (tmp_path / "edge-runtime" / "keys" / "device.key_secret").exists()


def test_edge_cloud_keys_add_appends_once_and_rejects_garbage(tmp_path, capsys):
    assert edge_cloud(["keys", str(tmp_path), "--name", "dev"]) == 0          # v1 form
    allow = tmp_path / "allow"
    assert edge_cloud(["keys", "add", str(tmp_path / "dev.key"), "--allow-list", str(allow),
                       "--comment", "living room"]) == 0
    assert edge_cloud(["keys", "add", str(tmp_path / "dev.key"), "--allow-list", str(allow)]) == 0
    assert "already allowed" in capsys.readouterr().out
    key = load_public_key(str(tmp_path / "dev.key"))
    assert read_allow_list(allow) == {key}
    assert allow.read_text().count("\n") == 1 and "living room" in allow.read_text()
    assert edge_cloud(["keys", "add", "not-a-key", "--allow-list", str(allow)]) == 2


def test_keys_add_after_a_hand_edit_without_final_newline(tmp_path):
    first, _ = zmq.curve_keypair()
    second, _ = zmq.curve_keypair()
    f = tmp_path / "allow"
    f.write_text(f"{first.decode()}  typed by hand")          # no newline at the end
    add_allowed_key(f, second.decode())
    assert read_allow_list(f) == {first, second}


def test_allow_list_ignores_comments_and_names_a_bad_line(tmp_path):
    pub, _ = zmq.curve_keypair()
    f = tmp_path / "allow"
    f.write_text(f"# devices\n\n{pub.decode()}  kitchen\n")
    assert read_allow_list(f) == {pub}
    f.write_text(f"{pub.decode()}\nshort-key\n")
    with pytest.raises(ConfigError, match=r"allow:2: 'short-key'"):
        read_allow_list(f)


def test_allow_list_file_is_reread_when_a_key_is_added(tmp_path):
    f = tmp_path / "allow"
    first, _ = zmq.curve_keypair()
    second, _ = zmq.curve_keypair()
    add_allowed_key(f, first.decode())
    provider = _AllowList(frozenset(), f)
    assert provider.callback("*", first) and not provider.callback("*", second)
    add_allowed_key(f, second.decode(), "new device")
    assert provider.callback("*", second)
    f.write_text("garbage line that is not a key\n")          # a broken edit keeps old keys
    assert provider.callback("*", second)
