"""The jetson/ deployment files: unit files, install script, container entrypoint."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JETSON = Path(__file__).resolve().parents[2] / "jetson"
UNITS = ["edge-runtime.service", "edge-cloud.service"]


def _unit(name: str) -> dict[str, dict[str, list[str]]]:
    """Parse a unit file into section -> key -> values (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in (JETSON / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        assert current is not None, f"{name}: {line!r} outside a section"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.mark.parametrize("name", UNITS)
def test_unit_has_readiness_watchdog_restart_and_hardening(name: str) -> None:
    svc = _unit(name)["Service"]
    one = {k: v[-1] for k, v in svc.items()}
    assert one["Type"] == "notify" and one["NotifyAccess"] == "main"
    assert int(one["WatchdogSec"]) > 0
    assert one["Restart"] == "on-failure"
    assert one["User"] == "edge-runtime" and one["User"] != "root"
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes",
                       "ProtectHome": "yes", "CapabilityBoundingSet": ""}.items():
        assert one[key] == value, key
    assert one["CacheDirectory"] == "edge-runtime"       # the one writable place
    assert any(v.startswith("-/etc/edge-runtime/") for v in svc["EnvironmentFile"])
    assert _unit(name)["Install"]["WantedBy"] == ["multi-user.target"]


def test_daemon_unit_runs_serve_with_the_installed_config_and_keeps_gpu_devices() -> None:
    svc = _unit("edge-runtime.service")["Service"]
    assert svc["ExecStart"] == [
        "/opt/edge-runtime/venv/bin/edge-runtime serve --config /etc/edge-runtime/config.toml"]
    assert "PrivateDevices" not in svc                       # would hide /dev/nvhost-*, /dev/nvmap
    assert not any("--host" in v for v in svc["ExecStart"])  # the config's loopback default wins


def test_daemon_unit_requires_no_group_that_may_be_missing() -> None:
    # a missing group named here fails the start with 216/GROUP; memberships come from
    # install.sh, which adds only the groups that exist
    assert "SupplementaryGroups" not in _unit("edge-runtime.service")["Service"]


def test_daemon_unit_closes_devices_but_the_sound_card_and_bounds_its_memory() -> None:
    from edge_runtime.device import get_profile
    svc = {k: v[-1] for k, v in _unit("edge-runtime.service")["Service"].items()}
    assert svc["DevicePolicy"] == "closed" and svc["DeviceAllow"] == "char-alsa rw"

    def mb(value: str) -> float:
        return float(value[:-1]) * {"M": 1, "G": 1024}[value[-1]]

    models = get_profile("orin-nano-8gb").model_memory_mb
    # the models' budget fits under MemoryHigh, and MemoryMax leaves the 7.6 GB board's OS room
    assert models < mb(svc["MemoryHigh"]) < mb(svc["MemoryMax"]) < 7620 - 600
    assert int(svc["OOMScoreAdjust"]) > 0                  # the restartable service goes first


@pytest.mark.parametrize("name", UNITS)
def test_state_directory_modes_match_what_the_installer_creates(name: str) -> None:
    svc = {k: v[-1] for k, v in _unit(name)["Service"].items()}
    script = (JETSON / "install.sh").read_text()
    assert 'install -d -m 0750 -o root -g "$SERVICE_USER" "$CONF_DIR"' in script
    assert 'install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$CACHE_DIR"' in script
    # a different mode makes systemd log a mismatch at every start
    assert svc["ConfigurationDirectoryMode"] == "0750" and svc["CacheDirectoryMode"] == "0750"


def test_example_config_binds_loopback_and_enables_no_cloud_link_that_is_not_there() -> None:
    from edge_runtime.config import load_config
    text = (JETSON / "config.orin-nano-8gb.toml").read_text()
    assert 'host = "127.0.0.1"' in text
    cfg = load_config(JETSON / "config.orin-nano-8gb.toml", env={})
    assert not cfg.cloud.enabled          # an enabled link with no gateway: degraded for good


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_verify_is_clean(name: str, tmp_path: Path) -> None:
    # verify insists that ExecStart exists; point it at a stand-in executable.
    fake = tmp_path / "bin"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    text = (JETSON / name).read_text()
    text = text.replace("/opt/edge-runtime/venv/bin/edge-runtime", str(fake))
    text = text.replace("/opt/edge-runtime/venv/bin/edge-cloud", str(fake))
    unit = tmp_path / name
    unit.write_text(text)
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", proc.stderr          # unknown keys are only warnings


def _dry_run(*args: str, env: dict | None = None) -> str:
    proc = subprocess.run(["bash", str(JETSON / "install.sh"), "--dry-run", *args],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_install_dry_run_prints_every_step_in_order() -> None:
    out = _dry_run("--gpu", "no")
    steps = ["== service user", "== directories", "== source copy", "== virtual environment",
             "jetson/pyenv.sh --venv /opt/edge-runtime/venv --project /opt/edge-runtime/src",
             "--gpu no", "== configuration", "== systemd units",
             "edge-runtime.service /etc/systemd/system/edge-runtime.service",
             "edge-runtime.service.d/50-devices.conf", "models pull",
             "models build", "systemctl daemon-reload", "systemctl enable"]
    positions = [out.find(s) for s in steps]
    assert -1 not in positions, [s for s, p in zip(steps, positions) if p == -1]
    assert positions == sorted(positions)
    assert "edge-cloud.service" not in out
    config = out[out.index("/etc/edge-runtime/config.toml (mode"):out.index("edge-runtime.env")]
    assert "[cloud]" in config and "enabled = false" in config   # no link to a missing gateway


def test_install_dry_run_options() -> None:
    out = _dry_run("--with-cloud", "--skip-models", "--no-start", "--profile", "orin-nano-8gb")
    assert "edge-cloud.service /etc/systemd/system/edge-cloud.service" in out
    assert "models pull" not in out
    assert "enable --now" not in out and "systemctl enable edge-runtime edge-cloud" in out
    assert 'profile = "orin-nano-8gb"' in out                 # the Jetson example config


def _stub(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_install_adds_only_groups_that_exist_and_allows_only_present_gpu_nodes(tmp_path) -> None:
    import os
    bin_dir, dev = tmp_path / "bin", tmp_path / "dev"
    bin_dir.mkdir()
    (dev / "nvgpu" / "igpu0").mkdir(parents=True)
    # this machine has video and audio groups but no render group, and two Tegra GPU nodes
    _stub(bin_dir, "getent", 'case "$1 $2" in "group video"|"group audio") exit 0;; esac; exit 2\n')
    for node in ("nvmap", "nvhost-ctrl-gpu", "nvgpu/igpu0/ctrl"):
        (dev / node).symlink_to("/dev/null")            # a character device stand-in
    (dev / "nvhost-notadevice").write_text("")           # a plain file is not allowed
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", EDGE_RUNTIME_DEV_DIR=str(dev))
    out = _dry_run("--gpu", "yes", env=env)
    assert "usermod -aG video" in out and "usermod -aG audio" in out
    assert "usermod -aG render" not in out and "no render group on this machine" in out
    dropin = out[out.index("50-devices.conf:"):out.index("== models")]
    allowed = [line.split("=", 1)[1] for line in dropin.split() if line.startswith("DeviceAllow=")]
    assert allowed == [str(dev / "nvmap"), str(dev / "nvhost-ctrl-gpu"),
                       str(dev / "nvgpu" / "igpu0" / "ctrl")]
    assert "--gpu yes" in out


def test_install_rejects_unknown_options() -> None:
    proc = subprocess.run(["bash", str(JETSON / "install.sh"), "--frobnicate"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown option --frobnicate" in proc.stderr


@pytest.mark.parametrize("script", ["install.sh", "pyenv.sh", "docker-entrypoint.sh"])
def test_shell_scripts_parse(script: str) -> None:
    shell = "sh" if script == "docker-entrypoint.sh" else "bash"
    assert subprocess.run([shell, "-n", str(JETSON / script)], timeout=60).returncode == 0
    if shutil.which("shellcheck"):
        proc = subprocess.run(["shellcheck", str(JETSON / script)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout
