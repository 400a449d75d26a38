"""The serialized CachedAnswer: versioned, round-trips, rejects everything else cleanly."""
from __future__ import annotations

import json

import pytest

from edge_runtime.cache.base import CachedAnswer, CacheValueError, decode_answer, encode_answer


def test_round_trip_keeps_every_field_and_the_expiry() -> None:
    a = CachedAnswer(answer="Ça va — 20 °C ☀", route="cloud", created_at=12.5, model="gemma")
    assert decode_answer(encode_answer(a, 99.25)) == (a, 99.25)


def test_encoded_form_is_versioned_json() -> None:
    doc = json.loads(encode_answer(CachedAnswer("x", "local", 1.0), 2.0))
    assert doc["v"] == 1 and doc["expires_at"] == 2.0


@pytest.mark.parametrize("raw", [
    b"", b"\xff\xfe", b"null", b"[]", b"42", b"{}", b"{\"v\": 1}",
    b"{\"v\": 2, \"answer\": \"x\", \"route\": \"local\", \"created_at\": 1, \"expires_at\": 2}",
    b"{\"v\": 1, \"answer\": 5, \"route\": \"local\", \"created_at\": 1, \"expires_at\": 2}",
    b"{\"v\": 1, \"answer\": \"x\", \"route\": \"local\", \"created_at\": true, \"expires_at\": 2}",
    b"{\"v\": 1, \"answer\": \"x\", \"route\": \"local\", \"created_at\": 1, \"expires_at\": NaN}",
    b"{\"v\": 1, \"answer\": \"x\", \"route\": \"local\", \"created_at\": 1, \"expires_at\": 2",
])
def test_anything_else_is_a_cache_value_error(raw: bytes) -> None:
    with pytest.raises(CacheValueError):
        decode_answer(raw)
