"""Training/eval data files: JSONL and YAML rows, errors naming the line, held-out split."""
from __future__ import annotations

from pathlib import Path

import pytest

from edge_runtime.nlu.train.datasets import DataFileError, Example, read_examples, split_holdout


def test_jsonl_rows_and_slots(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "turn on the lamp", "intent": "on", "slots": {"name": "lamp"}}\n\n'
                 '{"text": "what is love", "intent": "oos"}\n')
    rows = read_examples(p)
    assert rows == [Example("turn on the lamp", "on", (("name", "lamp"),)), Example("what is love", "oos")]


@pytest.mark.parametrize("line", ['not json', '{"text": "x"}', '{"text": 3, "intent": "a"}', '[1, 2]'])
def test_bad_rows_name_the_line(tmp_path: Path, line: str) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "ok", "intent": "a"}\n' + line + "\n")
    with pytest.raises(DataFileError, match="line 2"):
        read_examples(p)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="does not exist"):
        read_examples(tmp_path / "none.jsonl")
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(DataFileError, match="no rows"):
        read_examples(tmp_path / "e.jsonl")


def test_yaml_examples_become_rows(tmp_path: Path) -> None:
    p = tmp_path / "i.yaml"
    p.write_text("version: 1\nintents:\n  hi:\n    examples: [hello, hi there, hey]\n"
                 "  oos:\n    examples: [why, what is life, tell me a joke]\n")
    rows = read_examples(p)
    assert {r.intent for r in rows} == {"hi", "oos"} and len(rows) == 6


def test_holdout_split_is_per_intent_and_disjoint() -> None:
    rows = [Example(f"{i} {k}", i) for i in ("a", "b") for k in range(10)] + [Example("x", "c")]
    train, held = split_holdout(rows, 0.2, seed=1)
    assert sorted(r.intent for r in held) == ["a", "a", "b", "b"]
    assert set(train).isdisjoint(held) and len(train) + len(held) == len(rows)
