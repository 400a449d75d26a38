"""The options every command takes, before or after the sub-command."""
from __future__ import annotations

import pytest

from edge_runtime.cli import build_parser


@pytest.mark.parametrize("argv", [
    ["--set", "scheduler.budget_ms=80", "config", "show"],
    ["config", "show", "--set", "scheduler.budget_ms=80"],
    ["--set", "scheduler.budget_ms=80", "nlu", "parse", "what time is it"],
    ["nlu", "parse", "--set", "scheduler.budget_ms=80", "what time is it"],
])
def test_overrides_survive_wherever_they_are_given(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert args.overrides == ["scheduler.budget_ms=80"]


def test_defaults_when_no_option_is_given() -> None:
    args = build_parser().parse_args(["config", "show"])
    assert args.overrides == [] and args.config is None and args.log_level is None
    assert build_parser().parse_args(["--config", "a.toml", "config", "show"]).config == "a.toml"
