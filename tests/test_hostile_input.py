"""Hostile and malformed input: a precise 4xx or JSON-RPC error, never a 500."""

from __future__ import annotations

import concurrent.futures
import json
import random
import time
import typing as t

import pytest
from wire import HEADERS
from wire import debug_stats
from wire import http_post
from wire import initialize
from wire import initialize_request
from wire import post

BACKCHANNEL = "tests._apps.backchannel:app"
INITIALIZE_PARAMS = initialize_request("2025-03-26")["params"]

TOOLS_CALL = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
BODIES: list[bytes] = [
    b"",
    b"null",
    b"42",
    b'"string"',
    b"[]",
    b"{}",
    b"\xff\xfe\x00garbage",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": true, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": null, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": 7}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"}',
    b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
    b'{"jsonrpc": "2.0", "id": 1}',
    b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"x": 1}}}',
    TOOLS_CALL + b'{"name": "add", "arguments": {"a": 1e400, "b": 1}}}',
    TOOLS_CALL + b'{"name": "add", "arguments": {"a": NaN, "b": 1}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "'
    + b"a" * 100_000
    + b'"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": {"ref": 5}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "prompts/get", '
    b'"params": {"name": "greet", "arguments": {"name": 5}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": ["x"]}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 12}}',
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
@pytest.mark.parametrize("with_session", [False, True])
def test_no_500(client: t.Any, body: bytes, with_session: bool) -> None:
    session = initialize(client) if with_session else None
    response = post(client, body, session)
    assert response.status_code < 500, response.get_data(as_text=True)[:500]
    if response.status_code != 202 and response.mimetype == "application/json":
        payload = response.get_json()
        items = payload if isinstance(payload, list) else [payload]
        assert all("error" in item or "result" in item for item in items)
    if session:  # the session still works
        ping = post(client, {"jsonrpc": "2.0", "id": 9, "method": "ping"}, session)
        assert ping.get_json()["result"] == {}


@pytest.mark.parametrize(
    "headers",
    [
        {"Mcp-Session-Id": "x" * 10_000},
        {"Mcp-Session-Id": "\u00e9t\u00e9"},
        {"MCP-Protocol-Version": "\x00"},
        {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?!!!"},
        {"Last-Event-ID": "a" * 5000},
        {"Accept": "*/*;q=garbage"},
        {"Origin": "null"},
        {"Content-Type": "application/json; charset=latin-1"},
    ],
)
def test_hostile_headers(client: t.Any, headers: dict[str, str]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for method in ("post", "get", "delete"):
        response = getattr(client, method)("/mcp", data=body, headers={**HEADERS, **headers})
        assert response.status_code < 500, (method, response.get_data(as_text=True)[:300])


def test_random_json_fuzz(client: t.Any) -> None:
    rng = random.Random(1234)
    session = initialize(client)
    values: list[t.Any] = [None, True, 0, -1, 2**70, 1.5, "", "x", [], {}, [1], {"a": 1}]
    methods = [
        "ping", "tools/list", "tools/call", "resources/read", "resources/templates/list",
        "resources/subscribe", "prompts/get", "completion/complete", "logging/setLevel",
        "notifications/initialized", "notifications/cancelled", "initialize", "x",
    ]  # fmt: skip
    keys = ["name", "arguments", "uri", "cursor", "level", "ref", "argument", "_meta", "requestId"]
    for index in range(400):
        params = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 4))}
        message: dict[str, t.Any] = {
            "jsonrpc": "2.0",
            "method": rng.choice(methods),
            "params": params,
        }
        if rng.random() < 0.8:
            message["id"] = index
        response = post(client, message, session)
        assert response.status_code < 500, (message, response.get_data(as_text=True)[:300])
    assert post(client, {"jsonrpc": "2.0", "id": 0, "method": "ping"}, session).status_code == 200


def test_random_stateless_fuzz(client: t.Any) -> None:
    rng = random.Random(4321)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    values: list[t.Any] = [
        None,
        True,
        0,
        2**70,
        "",
        "x",
        [],
        {},
        {"a": [1]},
        "add",
        "test://static",
    ]
    methods = [
        "server/discover", "tools/list", "tools/call", "resources/read", "prompts/get",
        "completion/complete", "subscriptions/listen", "initialize", "ping", "x/y",
    ]  # fmt: skip
    keys = ["name", "arguments", "uri", "cursor", "inputResponses", "requestState", "notifications"]
    for index in range(300):
        params: dict[str, t.Any] = {
            rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 4))
        }
        if rng.random() < 0.9:
            params["_meta"] = dict(meta) if rng.random() < 0.8 else rng.choice(values)
        method = rng.choice(methods)
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if rng.random() < 0.5 and isinstance(params.get("name"), str):
            headers["Mcp-Name"] = params["name"]
        message = {"jsonrpc": "2.0", "id": index, "method": method, "params": params}
        if method == "subscriptions/listen":
            continue  # an open stream by design; covered by test_stateless
        response = post(client, message, **headers)
        assert response.status_code < 500, (message, response.get_data(as_text=True)[:300])


def _wait_running(port: int, count: int) -> None:
    """Wait until ``count`` requests run in the server (its ``/debug/stats``)."""
    deadline = time.monotonic() + 30
    while debug_stats(port)["running_requests"] < count:
        assert time.monotonic() < deadline, "the request never started"
        time.sleep(0.05)


def _session(port: int, version: str) -> str:
    """Initialize a session of ``version`` over plain HTTP; return its id."""
    status, headers, data = http_post(port, initialize_request(version))
    assert status == 200, data
    session = headers["Mcp-Session-Id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http_post(port, initialized, session)[0] == 202
    return session


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_reused_request_id_cannot_escape_the_request_timeout(serve: t.Any, worker: str) -> None:
    """A request reusing the id of a running one of its session is refused (-32600), alone
    or in a batch: it used to take the first one's place among the running requests, and
    the first then ran past ``MCP_REQUEST_TIMEOUT``, out of reach of cancellation and of
    DELETE."""
    server = serve(BACKCHANNEL, worker, env={"FLASK_MCP_REQUEST_TIMEOUT": "2"})
    session = _session(server.port, "2025-03-26")

    def call(name: str, arguments: dict[str, t.Any], id: int = 7) -> dict[str, t.Any]:
        params = {"name": name, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}

    def send(body: t.Any) -> tuple[int, t.Any]:
        status, _, data = http_post(server.port, body, session)
        return status, json.loads(data)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        # 8 s: well past the timeout (2 s, seen at the supervisor's next tick); a thread
        # cannot be interrupted, so on gthread the answer comes when the sleep is over.
        first = pool.submit(send, call("sleeper", {"seconds": 8}))
        _wait_running(server.port, 1)
        status, second = send(call("add", {"a": 1, "b": 2}))
        assert status == 400, second
        assert second["id"] == 7
        assert second["error"]["code"] == -32600
        assert "already in use" in second["error"]["message"]
        status, batch = send([call("add", {"a": 1, "b": 2}), call("add", {"a": 2, "b": 2}, 8)])
        assert status == 200, batch
        assert batch[0]["id"] == 7
        assert batch[0]["error"]["code"] == -32600
        assert batch[1]["result"]["content"][0]["text"] == '{"result":4}'
        _, answer = first.result(timeout=60)
    assert answer["result"]["isError"], answer
    assert "timed out" in answer["result"]["content"][0]["text"]
    assert send(call("add", {"a": 1, "b": 2}))[1]["result"]["content"][0]["text"] == '{"result":3}'


def test_initialize_in_a_batch_is_an_invalid_request(client: t.Any) -> None:
    """``initialize`` must not be part of a 2025-03-26 batch: -32600 saying to send it alone,
    not -32601 "Method not found", which sent the client looking for a missing method."""
    session = initialize(client, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    answers = post(client, batch, session).get_json()
    assert answers[0]["error"]["code"] == -32600
    assert "send it alone" in answers[0]["error"]["message"]
    assert answers[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_a_batch_with_one_id_twice_answers_the_second_as_invalid(client: t.Any) -> None:
    """Two requests of one 2025-03-26 batch under one id both ran, and the client got two
    answers it could not tell apart; the second is an Invalid Request naming the id."""
    session = initialize(client, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "5", "method": "ping"},  # another id: a string is not 5
    ]
    answers = post(client, batch, session).get_json()
    assert answers[0] == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert answers[1]["id"] == 5 and answers[1]["error"]["code"] == -32600
    assert "twice" in answers[1]["error"]["message"]
    assert answers[2] == {"jsonrpc": "2.0", "id": "5", "result": {}}
