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
    assert "video" in svc["SupplementaryGroups"][0].split()
    assert not any("--host" in v for v in svc["ExecStart"])  # the config's loopback default wins


def test_example_config_binds_loopback() -> None:
    text = (JETSON / "config.orin-nano-8gb.toml").read_text()
    assert 'host = "127.0.0.1"' in text


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


def _dry_run(*args: str) -> str:
    proc = subprocess.run(["bash", str(JETSON / "install.sh"), "--dry-run", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_install_dry_run_prints_every_step_in_order() -> None:
    out = _dry_run()
    steps = ["== service user", "== directories", "== virtual environment", "== source copy",
             "pip install --upgrade --editable", "== configuration", "== systemd units",
             "edge-runtime.service /etc/systemd/system/edge-runtime.service", "models pull",
             "models build", "systemctl daemon-reload", "systemctl enable"]
    positions = [out.find(s) for s in steps]
    assert -1 not in positions, [s for s, p in zip(steps, positions) if p == -1]
    assert positions == sorted(positions)
    assert "edge-cloud.service" not in out


def test_install_dry_run_options() -> None:
    out = _dry_run("--with-cloud", "--skip-models", "--no-start", "--profile", "orin-nano-8gb")
    assert "edge-cloud.service /etc/systemd/system/edge-cloud.service" in out
    assert "models pull" not in out
    assert "enable --now" not in out and "systemctl enable edge-runtime edge-cloud" in out
    assert 'profile = "orin-nano-8gb"' in out                 # the Jetson example config


def test_install_rejects_unknown_options() -> None:
    proc = subprocess.run(["bash", str(JETSON / "install.sh"), "--frobnicate"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown option --frobnicate" in proc.stderr


@pytest.mark.parametrize("script", ["install.sh", "docker-entrypoint.sh"])
def test_shell_scripts_parse(script: str) -> None:
    shell = "bash" if script == "install.sh" else "sh"
    assert subprocess.run([shell, "-n", str(JETSON / script)], timeout=60).returncode == 0
    if shutil.which("shellcheck"):
        proc = subprocess.run(["shellcheck", str(JETSON / script)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout
