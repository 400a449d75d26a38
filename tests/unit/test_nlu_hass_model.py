"""Home Assistant model directories: saved slot tables, the intent file they carry, the
hybrid with hassil's templates, and the bridge to built-in skill intents."""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from edge_runtime.nlu.hass_model import (BRIDGE, HASS_FILE, HassModelError, HassSlots, bridge,
                                         combine, installed_pins)
from edge_runtime.nlu.train.hass import SlotFiller
from edge_runtime.nlu.train.hass_model import write_model_files
from edge_runtime.nlu.loader import load_intents, parse_intents


# -- pure parts ---------------------------------------------------------------------------
@pytest.mark.parametrize("ours,conf,templates,want", [
    (("HassTurnOn", (("area", "kitchen"),)), 0.99, ("oos", ()), ("HassTurnOn", (("area", "kitchen"),))),
    # same intent: the template's slots, unless ours found more
    (("HassLightSet", (("brightness", "8300"),)), 0.99, ("HassLightSet", (("temperature", "8300"),)),
     ("HassLightSet", (("temperature", "8300"),))),
    (("HassCancelTimer", (("start_seconds", "4"),)), 0.99, ("HassCancelTimer", ()),
     ("HassCancelTimer", (("start_seconds", "4"),))),
    # different intents: the model only when it is sure
    (("HassSetVolume", ()), 0.90, ("HassLightSet", (("brightness", "65"),)),
     ("HassLightSet", (("brightness", "65"),))),
    (("HassIncreaseTimer", (("hours", "59"),)), 0.999, ("HassStartTimer", ()),
     ("HassIncreaseTimer", (("hours", "59"),))),
    (("oos", ()), 0.6, ("HassTurnOn", (("name", "air purifier"),)), ("HassTurnOn", (("name", "air purifier"),))),
])
def test_combine_reconciles_model_and_templates(ours, conf, templates, want) -> None:
    assert combine(ours, conf, templates) == want


@pytest.mark.parametrize("name,slots,want_name,want", [
    ("HassStartTimer", {"minutes": 5, "seconds": 30}, "timer_set", {"duration_s": 330.0}),
    ("HassStartTimer", {"hours": 1}, "timer_set", {"duration_s": 3600.0}),
    ("HassCancelTimer", {"start_minutes": 10}, "timer_cancel", {"duration_s": 600.0}),
    ("HassCancelTimer", {}, "timer_cancel", {}),
    ("HassCancelAllTimers", {"area": "kitchen"}, "timer_cancel", {"all": True}),
    ("HassTimerStatus", {"start_seconds": 45}, "timer_status", {"duration_s": 45.0}),
    ("HassGetCurrentTime", {}, "get_time", {}),
    ("HassTurnOn", {"area": "kitchen"}, "HassTurnOn", {}),
])
def test_bridge_renames_and_adds_what_skills_read(name, slots, want_name, want) -> None:
    got_name, got = bridge(name, slots)
    assert got_name == want_name
    assert got == {**slots, **want}


def test_intent_files_accept_hass_names_only_in_their_form() -> None:
    ok = parse_intents("intents:\n  HassTurnOn: {skill: device, examples: [a b, c d, e f]}")
    assert ok["HassTurnOn"].skill == "device"
    with pytest.raises(Exception, match="Hass_Turn"):
        parse_intents("intents:\n  Hass_Turn: {examples: [a b, c d, e f]}")


# -- with the templates -------------------------------------------------------------------
hassil = pytest.importorskip("hassil")
pytest.importorskip("home_assistant_intents")
from edge_runtime.nlu.train.hass import HassData  # noqa: E402


@pytest.fixture(scope="module")
def hass() -> HassData:
    return HassData()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, hass: HassData) -> Path:
    rows = hass.sample(3, seed=1)
    examples: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        examples[row.intent].append(row.text)
    out = tmp_path_factory.mktemp("hass-model")
    write_model_files(out, SlotFiller(hass, rows), examples)
    return out


def test_saved_tables_fill_like_the_original(hass: HassData) -> None:
    filler = SlotFiller(hass, hass.sample(2, seed=1))
    again = SlotFiller.from_dict(json.loads(json.dumps(filler.to_dict())))
    for intent, text in [("HassLightSet", "set the kitchen lights to forty percent"),
                         ("HassTurnOff", "turn off the living rum lights"),
                         ("HassStartTimer", "timer for 2 and a half hours"),
                         ("HassTurnOn", "test clamp on")]:
        assert again.fill(intent, text) == filler.fill(intent, text) != ()
    assert again.intents == filler.intents


def test_model_files_route_hass_intents(model_dir: Path) -> None:
    intents = load_intents(model_dir / "intents.yaml")
    assert intents.spec("HassTurnOn").skill == "device"
    assert intents.spec("HassLightSet").skill == "device"
    assert intents.spec("HassMediaPause").skill is None            # the LLM
    assert not intents.spec("HassMediaPause").cacheable
    for hass_name, target in BRIDGE.items():                          # answered as built-ins
        assert hass_name not in intents.intents and intents.spec(target).skill is not None
    meta = json.loads((model_dir / HASS_FILE).read_text())
    assert meta["templates"] == installed_pins() and meta["templates"]["hassil"]


def test_hass_slots_typed_with_and_without_templates(model_dir: Path) -> None:
    alone = HassSlots(model_dir, templates_first=False)
    assert alone.templates is None
    assert alone.parse("HassLightSet", 0.99, "set the bedroom lights to forty percent") == \
        ("HassLightSet", {"area": "bedroom", "brightness": 40})
    both = HassSlots(model_dir)
    assert both.templates is not None
    # the model is unsure and a template matches: the template's intent wins
    assert both.parse("HassSetVolume", 0.5, "set kitchen brightness to 40%") == \
        ("HassLightSet", {"area": "kitchen", "brightness": 40})


def test_other_template_versions_turn_the_hybrid_off(model_dir: Path, tmp_path: Path) -> None:
    meta = json.loads((model_dir / HASS_FILE).read_text())
    meta["templates"] = {**meta["templates"], "home-assistant-intents": "1999.1.1"}
    (tmp_path / HASS_FILE).write_text(json.dumps(meta))
    assert HassSlots(tmp_path).templates is None


@pytest.mark.parametrize("content", ["{not json", json.dumps({"format": 99}), json.dumps({"format": 1})])
def test_unusable_slot_file_is_a_config_error(tmp_path: Path, content: str) -> None:
    (tmp_path / HASS_FILE).write_text(content)
    with pytest.raises(HassModelError) as err:
        HassSlots(tmp_path)
    assert str(tmp_path) in err.value.message and "export" in (err.value.hint or "")


def test_cli_prepares_rows_and_exports_them_into_a_model(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("hassil")
    from edge_runtime.nlu.train.cli import main as nlu_cli
    from edge_runtime.nlu.train.datasets import read_jsonl
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nlu_encoder_fixtures import write_tiny_model

    work = tmp_path / "hass"
    assert nlu_cli(["hass-prepare", "--out", str(work), "--per-template", "1",
                    "--test-per-template", "1"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["intents"] >= 20 and counts["oos"] > 0 and counts["test"] > 0
    assert counts["templates"]["hassil"] == "3.12.1"
    train = read_jsonl(work / "train.jsonl")
    turn_on = [r for r in train if r.intent == "HassTurnOn" and r.slots]
    assert turn_on and all(isinstance(v, str) for r in turn_on for _, v in r.slots)
    model = write_tiny_model(tmp_path / "model")
    assert nlu_cli(["hass-export", "--data", str(work / "train.jsonl"), "--model", str(model)]) == 0
    hass = json.loads((model / "hass.json").read_text())
    assert hass["templates"]["home-assistant-intents"] == "2026.10.27" and hass["slots"]
    assert "HassTurnOn" in (model / "intents.yaml").read_text()
    assert nlu_cli(["hass-export", "--data", str(work / "train.jsonl"),
                    "--model", str(tmp_path / "none")]) == 2
    assert "nlu train" in capsys.readouterr().err
