"""Generated JSON bodies and headers against ``POST /v1/ask`` (and every other JSON route the
daemon registers, e.g. an OpenAI-compatible ``/v1/chat/completions``)."""
import json

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.fuzz_support import (assert_no_errors, fuzz_settings, http_exchange, request,
                                     status_of)

JSON_ROUTES = ("/v1/ask", "/v1/chat/completions")
NORMAL = request("POST", "/v1/ask", b'{"text": "what time is it"}',
                 [(b"Content-Type", b"application/json")])

odd_text = st.one_of(
    st.text(max_size=60),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=30),  # surrogates too
    st.sampled_from(["", " ", "\x00", "\ud800", "what \udfff time", "a" * 2001,
                     "why is the sky blue", "what time is it"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), odd_text,
                    st.sampled_from([10 ** 400, -(10 ** 30), 2 ** 63]))
json_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(odd_text, kids, max_size=4)), max_leaves=12)
ask_bodies = st.fixed_dictionaries(
    {"text": json_values},
    optional={"budget_ms": json_values, "session": json_values,
              "messages": json_values, "stream": json_values, "model": json_values})


def _encode(doc) -> bytes:
    text = json.dumps(doc, allow_nan=True)          # NaN / Infinity on purpose
    return text.encode("utf-8", "surrogatepass")    # lone surrogates as (invalid) bytes


bodies = st.one_of(
    ask_bodies.map(_encode),
    json_values.map(_encode),
    ask_bodies.map(lambda d: json.dumps(d, allow_nan=True).encode("ascii")),  # \\ud800 escapes
    st.binary(max_size=300),
    st.integers(1, 3000).map(lambda n: b'{"text": "x", "a": ' + b"[" * n + b"]" * n + b"}"))
header_names = st.sampled_from([b"Content-Type", b"Content-Encoding", b"Authorization",
                                b"Accept", b"X-Anything", b"Transfer-Encoding", b"Expect",
                                b"Connection"])
header_values = st.binary(max_size=40).map(
    lambda b: b.replace(b"\r", b"").replace(b"\n", b"").strip() or b"x")
headers = st.lists(st.tuples(header_names, header_values), max_size=4)


def _routes(server):
    known = {r.resource.canonical for r in server.app.router.routes()
             if r.method == "POST" and r.resource is not None}
    return [p for p in JSON_ROUTES if p in known]


@fuzz_settings()
@given(body=bodies, extra=headers, route=st.integers(0, 1))
def test_generated_json_bodies_and_headers_never_get_a_500(server, caplog, body, extra,
                                                           route):
    routes = _routes(server)
    path = routes[route % len(routes)]
    reply = http_exchange(server.port, request("POST", path, body, extra))
    status = status_of(reply)
    assert 200 <= status < 500, reply[:300]
    if status >= 400 and b"application/json" in reply.split(b"\r\n\r\n")[0]:
        err = json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
        assert err["code"] and err["message"]
    after = http_exchange(server.port, NORMAL)
    assert status_of(after) == 200, after[:300]
    assert json.loads(after.split(b"\r\n\r\n", 1)[1])["answer"] == "It is noon."
    assert_no_errors(caplog)


@fuzz_settings(60)
@given(raw=st.binary(min_size=1, max_size=200))
def test_garbage_on_the_socket_never_gets_a_500(server, caplog, raw):
    reply = http_exchange(server.port, raw)
    assert status_of(reply) != 500 and b" 500 " not in reply[:16], reply[:200]
    assert status_of(http_exchange(server.port, NORMAL)) == 200
    assert_no_errors(caplog)
