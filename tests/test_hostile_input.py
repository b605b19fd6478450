"""Hostile and malformed input: a precise 4xx or JSON-RPC error, never a 500."""

from __future__ import annotations

import json
import random
import typing as t

import pytest
from wire import HEADERS
from wire import initialize
from wire import post

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
