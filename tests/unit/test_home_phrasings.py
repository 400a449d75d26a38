"""The hand-written home phrasings (``build.EXTRA_FILES``): every label one the templates
train, every sentence written as the classifier sees it (normalized words, placeholders
the masking makes), none written twice."""
from __future__ import annotations

from collections import Counter

import pytest
import yaml

pytest.importorskip("hassil")
pytest.importorskip("home_assistant_intents")

from edge_runtime.nlu.home.lists import DEFAULT_NAMES, HomeLists  # noqa: E402
from edge_runtime.nlu.home.model import OTHER  # noqa: E402
from edge_runtime.nlu.text import normalize_text  # noqa: E402
from edge_runtime.nlu.train.home.build import EXTRA_FILES  # noqa: E402
from edge_runtime.nlu.train.home.sample import Sampler, label_of  # noqa: E402

DOMAINS = frozenset(DEFAULT_NAMES.values())


@pytest.fixture(scope="module")
def phrasings() -> list[tuple[str, str, str]]:
    """(file, label, sentence) of every hand-written phrasing."""
    rows = []
    for path in EXTRA_FILES:
        for label, texts in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            rows += [(path.name, label, t) for t in texts]
    return rows


def test_everyday_file_is_trained() -> None:
    assert "everyday.yaml" in {p.name for p in EXTRA_FILES}


def test_every_label_is_one_the_templates_train(phrasings) -> None:
    labels = {label_of(intent, fixed)
              for _, intent, _, _, fixed, _ in Sampler(HomeLists()).templates()} | {OTHER}
    assert {label for _, label, _ in phrasings} <= labels


def test_sentences_are_normalized_words_and_known_placeholders(phrasings) -> None:
    bad = []
    for name, label, text in phrasings:
        if not isinstance(text, str):
            bad.append((name, label, text))
            continue
        words = text.split()
        plain = " ".join(w for w in words if not w.startswith("@"))
        if normalize_text(plain) != plain:
            bad.append((name, label, text))
        for i, w in enumerate(words):
            if w == "@name":
                ok = i + 1 < len(words) and words[i + 1][1:] in DOMAINS
            elif w.startswith("@"):
                ok = w in ("@area", "@floor") or (w[1:] in DOMAINS and i > 0
                                                   and words[i - 1] == "@name")
            else:
                continue
            if not ok:
                bad.append((name, label, text))
    assert not bad


def test_no_sentence_is_written_twice(phrasings) -> None:
    counts = Counter(text for _, _, text in phrasings)
    assert not [t for t, n in counts.items() if n > 1]


def test_everyday_phrasings_cover_every_trained_label(phrasings) -> None:
    everyday = Counter(label for name, label, _ in phrasings if name == "everyday.yaml")
    labels = {label_of(intent, fixed)
              for _, intent, _, _, fixed, _ in Sampler(HomeLists()).templates()} | {OTHER}
    assert set(everyday) == labels
    assert min(everyday.values()) >= 5
