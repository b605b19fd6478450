"""Small rules of the protocol's wire, on a real gunicorn: what a POST of a client's
response is answered with, in both eras and in a 2025-03-26 batch; the ids of SSE events."""

from __future__ import annotations

import http.client
import json
import typing as t

import pytest
from wire import ACCEPT
from wire import HOST
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


def event_ids(port: int, session: str, body: t.Any = None, last: str | None = None) -> list[str]:
    """The event ids of one SSE stream of ``session``, read until its first progress
    notification (a POST of ``body``) or its priming event (a GET); then the client leaves."""
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    if last is not None:
        headers["Last-Event-ID"] = last
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    if body is None:
        conn.request("GET", "/mcp", headers=headers)
    else:
        conn.request(
            "POST", "/mcp", json.dumps(body), {**headers, "Content-Type": "application/json"}
        )
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type", "").startswith("text/event-stream")
    ids = []
    while True:
        line = response.readline().decode()
        assert line, f"the stream ended before its {'progress' if body else 'priming event'}"
        if line.startswith("id: "):
            ids.append(line[4:].strip())
        if "notifications/progress" in line or (body is None and line == "\n"):
            break
    conn.close()
    return ids


def test_every_event_id_of_a_session_is_sent_once(serve: t.Any) -> None:
    """Each priming event has an id of its own: a GET stream opened twice, a POST stream
    resumed from its last event, got the id of an event the client already had."""
    port = serve(APP, "gevent").port
    session = http_session(port)
    sent = event_ids(port, session) + event_ids(port, session)
    params = {"name": "slow_chatty", "arguments": {"seconds": 0.3}, "_meta": {"progressToken": 1}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    posted = event_ids(port, session, call)
    sent += posted + event_ids(port, session, last=posted[-1])
    assert len(sent) == 5 and len(set(sent)) == len(sent), sent
