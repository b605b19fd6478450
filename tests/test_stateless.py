"""The stateless 2026-07-28 wire: validation order, discovery, results, headers, streams, listen."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import typing as t

import pytest
from wire import Wire
from wire import make_app
from wire import meta
from wire import parse

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.testing import MCPTestClient

V = "2026-07-28"


@pytest.fixture
def server() -> MCP:
    mcp = MCP(name="stateless", version="2.0.0", instructions="Use the tools.")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def hello() -> str:
        """Say hello."""
        return "hello"

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Log at two levels and report progress."""
        ctx.progress(1, 2)
        ctx.log("info", "working")
        ctx.log("error", "oops")
        return "done"

    @mcp.tool(headers={"region": "Region"})
    def regional(region: str, count: int = 1) -> str:
        """Take a region mirrored into Mcp-Param-Region."""
        return f"{region}x{count}"

    @mcp.tool()
    def sample(ctx: Context) -> str:
        """Sample once."""
        result = ctx.create_message(
            [{"role": "user", "content": {"type": "text", "text": "hi"}}], 5
        )
        return str(result["content"]["text"])

    @mcp.resource("test://a", mime_type="text/plain")
    def resource_a() -> str:
        """Resource A."""
        return "A"

    @mcp.resource("test://b", mime_type="text/plain", ttl_ms=5000, cache_scope="public")
    def resource_b() -> str:
        """Resource B, cacheable for everyone."""
        return "B"

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    return mcp


@pytest.fixture
def wire(server: MCP) -> Wire:
    return Wire(make_app(server))


# -- discovery and results ---------------------------------------------------------


def test_discover(wire: Wire) -> None:
    status, message, _ = wire.call("server/discover", request_id="d-1")
    assert status == 200 and message["id"] == "d-1"
    result = message["result"]
    assert result["supportedVersions"] == [V]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "stateless",
        "version": "2.0.0",
    }
    assert "serverInfo" not in result
    assert result["instructions"] == "Use the tools."
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True} and "logging" in caps and "prompts" in caps
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


def test_client_info_is_optional(wire: Wire) -> None:
    body = meta()
    del body["io.modelcontextprotocol/clientInfo"]
    status, message, _ = wire.call("server/discover", {"_meta": body}, raw_params=True)
    assert status == 200 and "result" in message


def test_lists_are_cacheable_and_ordered(wire: Wire) -> None:
    for method, key in (
        ("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ):  # fmt: skip
        _, message, _ = wire.call(method)
        result = message["result"]
        assert key in result and result["resultType"] == "complete"
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
    names = [tool["name"] for tool in wire.call("tools/list")[1]["result"]["tools"]]
    assert names == ["add", "hello", "chatty", "regional", "sample"]


def test_cache_settings_and_per_resource_override(server: MCP) -> None:
    wire = Wire(make_app(server, MCP_CACHE_TTL_MS=300_000, MCP_CACHE_SCOPE="public"))
    result = wire.call("tools/list")[1]["result"]
    assert (result["ttlMs"], result["cacheScope"]) == (300_000, "public")
    a = wire.call("resources/read", {"uri": "test://a"})[1]["result"]
    b = wire.call("resources/read", {"uri": "test://b"})[1]["result"]
    assert (a["ttlMs"], a["cacheScope"]) == (0, "private")
    assert (b["ttlMs"], b["cacheScope"]) == (5000, "public")
    assert a["contents"][0]["text"] == "A"


def test_cache_options_are_checked() -> None:
    mcp = MCP(name="x", version="1")
    with pytest.raises(ValueError, match="cache_scope"):
        mcp.add_resource(lambda: "", "test://x", cache_scope="shared")
    with pytest.raises(ValueError, match="ttl_ms"):
        mcp.add_resource(lambda: "", "test://x", ttl_ms=-1)


def test_tool_call_without_arguments(wire: Wire) -> None:
    _, message, _ = wire.call("tools/call", {"name": "hello"})
    result = message["result"]
    assert result["content"] == [{"type": "text", "text": "hello"}]
    assert result["resultType"] == "complete" and "ttlMs" not in result


def test_resource_not_found_is_invalid_params(wire: Wire) -> None:
    uri = "test://nonexistent"
    _, message, _ = wire.call("resources/read", {"uri": uri})
    assert message["error"]["code"] == -32602 and message["error"]["data"] == {"uri": uri}


def test_completion_and_prompts(wire: Wire) -> None:
    _, message, _ = wire.call("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert message["result"]["messages"][0]["content"]["text"] == "Hello Ada"
    assert message["result"]["resultType"] == "complete"


# -- validation order ---------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": V}},
        {"_meta": {**meta(), "io.modelcontextprotocol/clientInfo": "me"}},
    ],
)
def test_invalid_meta(wire: Wire, params: dict[str, t.Any]) -> None:
    status, message, _ = wire.call("server/discover", params, raw_params=True, request_id=101)
    assert status == 400 and message["id"] == 101 and message["error"]["code"] == -32602


def test_version_header_must_match_meta(wire: Wire) -> None:
    body = {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "v999.0.0"}}
    status, message, _ = wire.call("server/discover", body, raw_params=True, request_id=302)
    assert status == 400 and message["error"]["code"] == -32020 and message["id"] == 302
    status, message, _ = wire.call("tools/list", headers={"MCP-Protocol-Version": None})
    assert status == 400 and message["error"]["code"] == -32020


def test_unsupported_version(wire: Wire) -> None:
    body = {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "v999.0.0"}}
    status, message, _ = wire.call(
        "server/discover", body, raw_params=True, headers={"MCP-Protocol-Version": "v999.0.0"}
    )
    assert status == 400
    assert message["error"]["code"] == -32022
    assert message["error"]["data"] == {"supported": [V], "requested": "v999.0.0"}


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Mcp-Method": None}, 400, -32020),
        ({"Mcp-Method": "prompts/list"}, 400, -32020),
        ({"Mcp-Method": "TOOLS/LIST"}, 400, -32020),
        ({"Mcp-Method": None, "mcp-method": "tools/list"}, 200, None),
        ({"Mcp-Method": None, "MCP-METHOD": "tools/list"}, 200, None),
    ],
)
def test_method_header(
    wire: Wire, headers: dict[str, t.Any], status: int, code: int | None
) -> None:
    got, message, _ = wire.call("tools/list", headers=headers)
    assert got == status
    assert (message.get("error") or {}).get("code") == code


def test_name_header(wire: Wire) -> None:
    params = {"name": "hello", "arguments": {}}
    assert wire.call("tools/call", params, headers={"Mcp-Name": "bye"})[0] == 400
    assert wire.call("tools/call", params, headers={"Mcp-Name": None})[0] == 400
    assert wire.call("tools/call", params, headers={"Mcp-Name": "  hello  "})[0] == 200
    assert wire.call("tools/call", params, headers={"Mcp-Name": "=?base64?aGVsbG8=?="})[0] == 200
    status, message, _ = wire.call("resources/read", {"uri": "test://a"}, headers={"Mcp-Name": "x"})
    assert status == 400 and message["error"]["code"] == -32020


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"]
)
def test_removed_and_unknown_methods(wire: Wire, method: str) -> None:
    status, message, _ = wire.call(method, {"uri": "test://a"}, request_id=500)
    assert status == 404 and message["id"] == 500 and message["error"]["code"] == -32601


def test_headers_are_checked_before_the_method(wire: Wire) -> None:
    status, message, _ = wire.call("unknown/method", headers={"Mcp-Method": "other"})
    assert status == 400 and message["error"]["code"] == -32020


def test_method_of_an_undeclared_capability() -> None:
    mcp = MCP(name="tools-only", version="1")
    mcp.tool(name="x")(lambda: "x")
    wire = Wire(make_app(mcp))
    assert wire.call("prompts/list")[0] == 404
    assert "prompts" not in wire.call("server/discover")[1]["result"]["capabilities"]


def test_invalid_log_level(wire: Wire) -> None:
    key = "io.modelcontextprotocol/logLevel"
    status, message, _ = wire.call("tools/list", **{key: "loud"})  # type: ignore[arg-type]
    assert status == 400 and message["error"]["code"] == -32602


def test_notifications_responses_and_batches(wire: Wire) -> None:
    headers = {"MCP-Protocol-Version": V, "Accept": "application/json, text/event-stream"}

    def send(body: t.Any) -> t.Any:
        return wire.client.post(
            "/mcp", data=json.dumps(body), content_type="application/json", headers=headers
        )

    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    response = send(note)
    assert response.status_code == 202 and response.get_data() == b""
    response = send({"jsonrpc": "2.0", "id": 7, "result": {}})
    assert response.status_code == 400 and response.get_json()["error"]["code"] == -32600
    response = send(
        [{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": meta()}}]
    )
    assert response.status_code == 400 and response.get_json()["error"]["code"] == -32600
    assert "Mcp-Session-Id" not in response.headers


# -- x-mcp-header ---------------------------------------------------------------------


def test_custom_header_is_published_and_checked(wire: Wire) -> None:
    tools = {tool["name"]: tool for tool in wire.call("tools/list")[1]["result"]["tools"]}
    assert tools["regional"]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    params = {"name": "regional", "arguments": {"region": "eu"}}
    status, message, _ = wire.call("tools/call", params, headers={"Mcp-Param-Region": "eu"})
    assert status == 200 and message["result"]["content"][0]["text"] == "eux1"
    status, message, _ = wire.call("tools/call", params)
    assert status == 400 and message["error"]["code"] == -32020
    status, message, _ = wire.call("tools/call", params, headers={"Mcp-Param-Region": "us"})
    assert status == 400 and message["error"]["code"] == -32020
    encoded = {"Mcp-Param-Region": "=?base64?ZXU=?="}
    assert wire.call("tools/call", params, headers=encoded)[0] == 200


def test_invalid_header_annotations_are_refused() -> None:
    mcp = MCP(name="x", version="1")
    bad = {"type": "object", "properties": {"tags": {"type": "array", "x-mcp-header": "Tags"}}}
    with pytest.raises(ValueError, match="cannot be registered"):
        mcp.tool(input_schema=bad)(lambda arguments: "")
    with pytest.raises(ValueError, match="not a property"):
        mcp.tool(headers={"nope": "Nope"})(lambda region: region)
    with pytest.raises(ValueError, match="duplicates"):

        @mcp.tool(headers={"a": "Same", "b": "same"})
        def twice(a: str, b: str) -> str:
            return a + b

    assert not mcp.registry.tools


# -- streams, logging, capabilities ------------------------------------------------------


def test_no_log_messages_without_log_level(wire: Wire) -> None:
    response = wire.post("tools/call", {"name": "chatty"})
    assert response.mimetype == "application/json"
    assert response.get_json()["result"]["content"][0]["text"] == "done"


def test_log_level_and_progress_stream(wire: Wire) -> None:
    extra = {"io.modelcontextprotocol/logLevel": "error", "progressToken": "tok"}
    response = wire.post("tools/call", {"name": "chatty"}, **extra)
    assert response.mimetype == "text/event-stream"
    assert response.headers["X-Accel-Buffering"] == "no"
    *notes, final = parse(response)
    assert [n["method"] for n in notes] == ["notifications/progress", "notifications/message"]
    assert notes[0]["params"]["progressToken"] == "tok"
    assert notes[1]["params"]["level"] == "error"
    assert final["result"]["resultType"] == "complete"


def test_missing_client_capability(wire: Wire) -> None:
    status, message, _ = wire.call("tools/call", {"name": "sample"}, caps={}, request_id=401)
    assert status == 400 and message["id"] == 401
    assert message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_request_timeout(server: MCP) -> None:
    @server.tool()
    def slow(ctx: Context) -> str:
        """Sleep past the timeout."""
        for _ in range(40):
            time.sleep(0.05)
            ctx.check_cancelled()
        return "late"

    wire = Wire(make_app(server, MCP_REQUEST_TIMEOUT=0.3))
    _, message, _ = wire.call("tools/call", {"name": "slow"})
    assert (
        message["result"]["isError"] is True
        and "timed out" in message["result"]["content"][0]["text"]
    )


def test_closing_the_stream_cancels_the_request(server: MCP) -> None:
    seen = threading.Event()

    @server.tool()
    def forever(ctx: Context) -> str:
        """Report progress until cancelled."""
        ctx.progress(0)
        while not ctx.cancelled:
            time.sleep(0.02)
        seen.set()
        return "cancelled"

    wire = Wire(make_app(server))
    response = wire.post("tools/call", {"name": "forever"}, buffered=False, progressToken=1)
    chunks = iter(response.response)
    assert b"notifications/progress" in next(chunks)
    response.close()
    assert seen.wait(5)


def test_handshake_era_is_unchanged(server: MCP) -> None:
    with MCPTestClient(make_app(server)) as client:
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}
        assert "resultType" not in client.call_tool("hello")
        with pytest.raises(Exception, match="Method not found: server/discover"):
            client.request("server/discover", {})
        result = client.call_tool("sample")
        assert result["isError"] is True  # no sampling capability: a tool error, as before


# -- subscriptions/listen ----------------------------------------------------------------


def _frames(chunks: t.Iterator[bytes], count: int) -> list[dict[str, t.Any]]:
    found: list[dict[str, t.Any]] = []
    for chunk in chunks:
        for line in chunk.decode().splitlines():
            if line.startswith("data: "):
                found.append(json.loads(line[6:]))
        if len(found) >= count:
            return found
    raise AssertionError("the stream ended early")


def test_listen(server: MCP) -> None:
    app = make_app(server)
    wire = Wire(app)
    wanted = {
        "toolsListChanged": True, "promptsListChanged": False,
        "resourceSubscriptions": ["test://a"], "taskIds": ["t1"],
    }  # fmt: skip
    response = wire.post(
        "subscriptions/listen", {"notifications": wanted}, buffered=False, request_id=42
    )
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    chunks = iter(response.response)
    (ack,) = _frames(chunks, 1)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 42
    assert ack["params"]["notifications"] == {
        "toolsListChanged": True, "resourceSubscriptions": ["test://a"]
    }  # fmt: skip
    server.notify_list_changed("prompts", app=app)  # not asked for
    server.notify_resource_updated("test://b", app=app)  # not subscribed
    server.notify_resource_updated("test://a", app=app)
    server.add_tool(lambda: "new", name="new_tool")
    updated, changed = _frames(chunks, 2)
    assert updated["method"] == "notifications/resources/updated"
    assert updated["params"] == {
        "uri": "test://a", "_meta": {"io.modelcontextprotocol/subscriptionId": 42}
    }  # fmt: skip
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 42
    response.close()
    assert not app.extensions["mcp"].state(app).backend._channels.subscribers  # unsubscribed


def test_a_listen_sends_the_request_and_listen_signals(server: MCP) -> None:
    """A listen sends ``request_started`` and ``request_finished`` as every request, and
    ``listen_started``/``listen_finished`` with a stream id of its own (``stream_opened``
    and ``stream_closed`` name it too) and its ``_meta``, however it ends.

    A listen sent none of them, and its stream id was ``listen-{request id}``: two
    listens with id 1 could not be told apart.
    """
    from flask_mcp import signals

    app = make_app(server, MCP_SSE_MAX_STREAM_SECONDS=0.2)
    seen: list[tuple[str, dict[str, t.Any]]] = []
    names = (
        "request_started", "request_finished", "listen_started", "listen_finished",
        "stream_opened", "stream_closed",
    )  # fmt: skip
    wire = Wire(app)
    with contextlib.ExitStack() as connected:
        for name in names:

            def receiver(sender: t.Any, name: str = name, **kwargs: t.Any) -> None:
                seen.append((name, kwargs))

            connected.enter_context(getattr(signals, name).connected_to(receiver, app))
        held = wire.post(
            "subscriptions/listen", {"notifications": {}}, request_id=1, buffered=False
        )
        chunks = iter(held.response)
        next(chunks)
        ended = wire.post("subscriptions/listen", {"notifications": {}}, request_id=1)
        assert parse(ended)[-1]["result"]["resultType"] == "complete"
        held.close()
        refused = wire.post("subscriptions/listen", {"notifications": []}, request_id=2)
        assert refused.status_code == 400
    requests = [
        (
            name,
            kwargs["request_id"],
            kwargs["method"],
            (kwargs.get("error") or {}).get("code"),
        )
        for name, kwargs in seen
        if name.startswith("request_")
    ]
    assert requests == [
        ("request_started", 1, "subscriptions/listen", None),
        ("request_started", 1, "subscriptions/listen", None),
        ("request_finished", 1, "subscriptions/listen", None),
        ("request_finished", 1, "subscriptions/listen", None),
        ("request_started", 2, "subscriptions/listen", None),
        ("request_finished", 2, "subscriptions/listen", -32602),
    ]
    started = [kwargs for name, kwargs in seen if name == "listen_started"]
    finished = {kwargs["stream_id"]: kwargs for name, kwargs in seen if name == "listen_finished"}
    assert len(started) == len(finished) == 3  # each of its own stream id
    outcomes = [
        (
            opened["request_id"],
            opened["protocol_version"],
            opened["meta"]["io.modelcontextprotocol/clientInfo"]["name"],
            finished[opened["stream_id"]]["reason"],
        )
        for opened in started
    ]
    assert outcomes == [
        (1, "2026-07-28", "test", "client-gone"),
        (1, "2026-07-28", "test", "timeout"),
        (2, "2026-07-28", "test", "refused"),
    ]
    streams = [(name, kwargs["stream_id"]) for name, kwargs in seen if name.startswith("stream_")]
    assert streams == [
        ("stream_opened", started[0]["stream_id"]),
        ("stream_opened", started[1]["stream_id"]),
        ("stream_closed", started[1]["stream_id"]),
        ("stream_closed", started[0]["stream_id"]),
    ]


def test_listen_ends_gracefully_and_checks_its_filter(server: MCP) -> None:
    wire = Wire(make_app(server, MCP_SSE_MAX_STREAM_SECONDS=0.2))
    response = wire.post("subscriptions/listen", {"notifications": {}}, request_id="s")
    ack, end = parse(response)
    assert ack["params"]["notifications"] == {}
    tag = {  # the subscription id, and the serverInfo every result carries
        "io.modelcontextprotocol/subscriptionId": "s",
        "io.modelcontextprotocol/serverInfo": {"name": "stateless", "version": "2.0.0"},
    }
    assert end == {"jsonrpc": "2.0", "id": "s", "result": {"resultType": "complete", "_meta": tag}}
    status, message, _ = wire.call(
        "subscriptions/listen", {"notifications": {"toolsListChanged": 1}}
    )
    assert status == 400 and message["error"]["code"] == -32602
