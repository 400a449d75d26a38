"""The fuzz layer: property-based inputs (hypothesis) against the real API server, the real
ZeroMQ gateway and client, the audio parser and the answer cache.

Each property: a 4xx / a clear typed error or a correct answer, never a 500, never a hang
past the configured timeouts, and the next normal request succeeds. Budgeted to stay well
under a minute in all: ``FUZZ_EXAMPLES`` examples per property (``EDGE_FUZZ_EXAMPLES``
raises it for a longer local run), no per-example deadline (the box is shared).
"""
import pytest

from tests.fuzz.fuzz_support import ServerThread


def pytest_collection_modifyitems(items):
    for item in items:
        if "/fuzz/" in str(item.fspath):
            item.add_marker(pytest.mark.fuzz)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerThread(tmp_path_factory.mktemp("fuzz-home")) as s:
        yield s
