"""Small rules of the protocol's wire, on a real gunicorn: what a POST of a client's
response is answered with, in both eras and in a 2025-03-26 batch."""

from __future__ import annotations

import json
import typing as t

import pytest
from wire import V2026
from wire import http_post
from wire import http_session

pytestmark = pytest.mark.e2e
APP = "tests._apps.backchannel:app"

#: Responses no server can take: each is refused with 400 and an error without id.
MALFORMED_RESPONSES = [
    {"jsonrpc": "2.0", "id": 5, "error": "x"},
    {"jsonrpc": "2.0", "id": 5, "error": {"code": "x", "message": "m"}},
    {"jsonrpc": "2.0", "id": 5, "error": {"code": -1}},
    {"jsonrpc": "2.0", "id": 5, "result": {}, "error": {"code": -1, "message": "m"}},
    {"jsonrpc": "2.0", "id": 5, "result": "done"},
    {"jsonrpc": "2.0", "result": {}},
]


def refused(status: int, body: bytes) -> bool:
    """Tell whether a POST was refused with 400 and a JSON-RPC error that has no id."""
    answer = json.loads(body) if body else {}
    return status == 400 and answer.get("id", "missing") is None and "error" in answer


def test_a_malformed_client_response_is_refused_in_both_eras(serve: t.Any) -> None:
    port = serve(APP, "gevent").port
    session = http_session(port)
    old_session = http_session(port, "2025-03-26")
    old = {"MCP-Protocol-Version": "2025-03-26"}
    for response in MALFORMED_RESPONSES:
        assert refused(*http_post(port, response, session)[::2]), response
        assert refused(*http_post(port, response, old_session, **old)[::2]), response
        note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        assert refused(*http_post(port, [note, response], old_session, **old)[::2]), response
        stateless = http_post(port, response, **{"MCP-Protocol-Version": V2026})
        assert refused(*stateless[::2]), response
    # A well-formed answer to a request this server never sent (or gave up on) is traffic.
    late = {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "m"}}
    assert http_post(port, late, session)[0] == 202
    assert http_post(port, [late, {"jsonrpc": "2.0", "id": 6, "result": {}}], old_session)[0] == 202
