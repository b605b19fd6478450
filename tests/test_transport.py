"""Streamable HTTP transport over the Flask test client."""

from __future__ import annotations

import json
import logging
import socket
import typing as t

import pytest
from flask import Response
from wire import HEADERS
from wire import V2026
from wire import Wire
from wire import initialize
from wire import initialize_request
from wire import make_app
from wire import post
from wire import rpc
from wire import sse_messages

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.backends import MemoryBackend
from flask_mcp.errors import BackendFull
from flask_mcp.errors import BackendUnavailable
from flask_mcp.testing import MCPTestClient
from flask_mcp.transport import views
from flask_mcp.transport.responses import WATCHED_BODY_SIZE


def test_initialize_negotiates_and_issues_session(client: t.Any) -> None:
    response = post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        },
    )
    body = response.get_json()
    assert body["result"]["protocolVersion"] == "2025-11-25"
    assert body["result"]["serverInfo"] == {"name": "test-server", "version": "1.0.0"}
    assert body["result"]["instructions"] == "Test instructions."
    assert set(body["result"]["capabilities"]) == {"logging", "tools", "resources", "prompts"}
    session = response.headers["Mcp-Session-Id"]
    assert all(0x21 <= ord(ch) <= 0x7E for ch in session) and len(session) >= 32


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_echoes_supported_versions(client: t.Any, version: str) -> None:
    session = initialize(client, version)
    assert rpc(client, session, "ping").get_json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"protocolVersion": 5, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        {
            "protocolVersion": "2025-11-25",
            "capabilities": [],
            "clientInfo": {"name": "c", "version": "1"},
        },
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}},
    ],
)
def test_initialize_rejects_bad_params(client: t.Any, params: dict[str, t.Any]) -> None:
    response = post(client, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert response.get_json()["error"]["code"] == -32602
    assert "Mcp-Session-Id" not in response.headers


def test_requests_before_initialized_are_rejected_except_ping(client: t.Any) -> None:
    session = initialize(client, initialized=False)
    assert rpc(client, session, "tools/list").get_json()["error"]["code"] == -32600
    assert rpc(client, session, "ping").get_json()["result"] == {}


def test_tools_list_and_call(client: t.Any) -> None:
    session = initialize(client)
    tools = rpc(client, session, "tools/list").get_json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["add", "chatty"]
    result = rpc(
        client, session, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
    ).get_json()
    assert result["result"]["structuredContent"] == {"result": 5}


def test_tool_argument_mismatch_is_an_error_result_naming_the_field(client: t.Any) -> None:
    session = initialize(client)
    result = rpc(
        client, session, "tools/call", {"name": "add", "arguments": {"a": "x", "b": 1}}
    ).get_json()
    assert result["result"]["isError"] is True
    assert "'a'" in result["result"]["content"][0]["text"]


def test_progress_and_log_stream_as_sse(client: t.Any) -> None:
    session = initialize(client)
    response = rpc(client, session, "tools/call", {"name": "chatty", "_meta": {"progressToken": 7}})
    assert response.mimetype == "text/event-stream"
    assert response.headers["X-Accel-Buffering"] == "no"
    text = response.get_data(as_text=True)
    assert text.startswith("id: ") and "retry: " in text.split("\n\n")[0]
    messages = sse_messages(response)
    assert messages[0]["params"] == {"progressToken": 7, "progress": 1, "total": 2}
    assert messages[1]["method"] == "notifications/message"
    assert messages[-1]["result"]["content"][0]["text"] == "done"


def test_no_progress_without_token(client: t.Any) -> None:
    session = initialize(client)
    messages = sse_messages(rpc(client, session, "tools/call", {"name": "chatty"}))
    assert [m.get("method") for m in messages[:-1]] == ["notifications/message"]


@pytest.mark.parametrize("token", [{"a": 1}, 1.5, True, [7]])
def test_a_progress_token_of_another_type_is_invalid_params(app: t.Any, token: t.Any) -> None:
    """Neither a string nor an integer: refused in both eras, not echoed in progress."""
    client = app.test_client()
    session = initialize(client)
    params = {"name": "chatty", "_meta": {"progressToken": token}}
    response = rpc(client, session, "tools/call", params)
    assert response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == -32602
    assert "progressToken must be a string or an integer" in response.get_json()["error"]["message"]
    status, answer, sent = Wire(app).call("tools/call", {"name": "chatty"}, progressToken=token)
    assert (status, answer["error"]["code"], sent) == (400, -32602, [])
    status, answer, sent = Wire(app).call("tools/call", {"name": "chatty"}, progressToken=None)
    assert status == 200 and "error" not in answer  # null: no token, as if left out


def steps_app() -> t.Any:
    """An app whose tool reports 5 twice and 6 twice, as a call or as a task."""
    mcp = MCP(name="steps", version="1")

    @mcp.tool(task="optional")
    def steps(ctx: Context) -> str:
        for value, note in ((5, "a"), (5, "b"), (6, "c"), (6, "d")):
            ctx.progress(value, 10, note)
        return "done"

    return make_app(mcp)


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
def test_progress_that_does_not_increase_is_skipped_in_calls_and_tasks(version: str) -> None:
    with MCPTestClient(steps_app(), protocol_version=version) as client:
        result = client.call_tool("steps", progressToken="t")
        assert result["content"][0]["text"] == "done"  # the call goes on
        progress = [n["params"] for n in client.notifications if "progress" in n["method"]]
        assert [(p["progress"], p["message"]) for p in progress] == [(5, "a"), (6, "c")]
        task = client.wait_for_task(client.call_tool_as_task("steps", progressToken="t"))
        assert (task["status"], task["statusMessage"]) == ("completed", "c")


def test_truncated_json_is_a_parse_error(client: t.Any) -> None:
    response = post(client, b'{"jsonrpc": "2.0", "id": 1, "meth')
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == -32700
    assert response.get_json()["id"] is None


def test_batch_refused_on_2025_11_25_session(client: t.Any) -> None:
    session = initialize(client)
    response = post(client, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], session)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == -32600


def test_batch_accepted_on_2025_03_26_session(client: t.Any) -> None:
    session = initialize(client, "2025-03-26")
    response = post(
        client,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ],
        session,
    )
    body = response.get_json()
    assert [item["id"] for item in body] == [1, 2]


def test_mistyped_params(client: t.Any) -> None:
    session = initialize(client)
    assert rpc(client, session, "tools/call", {"name": 5}).get_json()["error"]["code"] == -32602
    assert (
        rpc(client, session, "tools/call", {"name": "add", "arguments": []}).get_json()["error"][
            "code"
        ]
        == -32602
    )
    response = post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, session
    )
    assert response.status_code == 400 and response.get_json()["error"]["code"] == -32600


def test_unknown_method(client: t.Any) -> None:
    session = initialize(client)
    assert rpc(client, session, "no/such").get_json()["error"]["code"] == -32601


def test_unknown_and_missing_session(client: t.Any) -> None:
    assert rpc(client, "not-a-session", "ping").status_code == 404
    assert post(client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 400


def test_delete_ends_session(client: t.Any) -> None:
    session = initialize(client)
    response = client.delete("/mcp", headers={"Mcp-Session-Id": session})
    assert response.status_code == 204
    assert rpc(client, session, "ping").status_code == 404


def test_body_too_large(client: t.Any) -> None:
    session = initialize(client)
    response = post(client, b"x" * (10 * 1024 * 1024), session)
    assert response.status_code == 413
    assert rpc(client, session, "ping").status_code == 200


def test_evil_origin_and_host(client: t.Any) -> None:
    response = post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, Origin="http://evil.example"
    )
    assert response.status_code == 403
    response = client.post(
        "/mcp",
        data="{}",
        headers={**HEADERS, "Host": "evil.example"},
        environ_base={"REMOTE_ADDR": "127.0.0.1"},
    )
    assert response.status_code == 421
    ok = post(
        client,
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        Origin="http://localhost:3000",
    )
    assert ok.status_code == 200


def test_media_types(client: t.Any) -> None:
    assert post(client, "{}", **{"Content-Type": "text/plain"}).status_code == 415
    assert post(client, "{}", Accept="text/html").status_code == 406


def test_protocol_version_header(client: t.Any) -> None:
    session = initialize(client)
    assert (
        post(
            client,
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            session,
            **{"MCP-Protocol-Version": "2025-03-26"},
        ).status_code
        == 200
    )
    assert (
        post(
            client,
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            session,
            **{"MCP-Protocol-Version": "1999-01-01"},
        ).status_code
        == 400
    )


def test_get_stream_requires_session_and_accept(client: t.Any) -> None:
    assert client.get("/mcp", headers={"Accept": "text/event-stream"}).status_code == 400
    session = initialize(client)
    assert (
        client.get(
            "/mcp", headers={"Accept": "application/json", "Mcp-Session-Id": session}
        ).status_code
        == 406
    )


def test_resources_and_prompts(client: t.Any) -> None:
    session = initialize(client)
    listed = rpc(client, session, "resources/list").get_json()["result"]["resources"]
    assert listed == [
        {
            "uri": "test://static",
            "name": "static",
            "description": "A static resource.",
            "mimeType": "text/plain",
        }
    ]
    templates = rpc(client, session, "resources/templates/list").get_json()["result"][
        "resourceTemplates"
    ]
    assert templates[0]["uriTemplate"] == "test://items/{item_id}"
    read = rpc(client, session, "resources/read", {"uri": "test://items/42"}).get_json()["result"]
    assert json.loads(read["contents"][0]["text"]) == {"id": "42"}
    missing = rpc(client, session, "resources/read", {"uri": "test://nope"}).get_json()["error"]
    assert missing["code"] == -32002
    prompt = rpc(
        client, session, "prompts/get", {"name": "greet", "arguments": {"name": "Ann"}}
    ).get_json()
    assert prompt["result"]["messages"][0]["content"]["text"] == "Hello Ann"
    missing_arg = rpc(client, session, "prompts/get", {"name": "greet"}).get_json()["error"]
    assert missing_arg["code"] == -32602


def test_logging_set_level_validates(client: t.Any) -> None:
    session = initialize(client)
    assert (
        rpc(client, session, "logging/setLevel", {"level": "loud"}).get_json()["error"]["code"]
        == -32602
    )
    assert rpc(client, session, "logging/setLevel", {"level": "error"}).get_json()["result"] == {}
    messages = sse_messages(rpc(client, session, "tools/call", {"name": "chatty"}))
    assert all(m.get("method") != "notifications/message" for m in messages)


def test_pagination(client: t.Any, app: t.Any) -> None:
    mcp = app.extensions["mcp"]
    for index in range(5):
        mcp.add_tool(lambda: "x", name=f"extra_{index}", description="extra")
    object.__setattr__(mcp.state(app).settings, "page_size", 3)
    session = initialize(client)
    names: list[str] = []
    cursor = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        result = rpc(client, session, "tools/list", params).get_json()["result"]
        names += [tool["name"] for tool in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert names == ["add", "chatty"] + [f"extra_{i}" for i in range(5)]
    assert (
        rpc(client, session, "tools/list", {"cursor": "garbage!"}).get_json()["error"]["code"]
        == -32602
    )


def test_init_app_twice_is_refused(app: t.Any, mcp_server: t.Any) -> None:
    with pytest.raises(RuntimeError, match="already registered"):
        mcp_server.init_app(app)
    assert app.extensions["mcp"] is mcp_server


def test_telemetry_signals(client: t.Any, app: t.Any) -> None:
    from flask_mcp import signals

    seen: list[tuple[str, dict[str, t.Any]]] = []
    names = (
        "tool_called",
        "resource_read",
        "prompt_rendered",
        "session_created",
        "request_finished",
    )
    receivers = {n: (lambda sender, _n=n, **kw: seen.append((_n, kw))) for n in names}
    for name, receiver in receivers.items():
        getattr(signals, name).connect(receiver, app)
    try:
        session = initialize(client)
        rpc(client, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        rpc(client, session, "resources/read", {"uri": "test://static"})
        rpc(client, session, "prompts/get", {"name": "greet", "arguments": {"name": "A"}})
    finally:
        for name, receiver in receivers.items():
            getattr(signals, name).disconnect(receiver, app)
    kinds = [name for name, _ in seen]
    assert {"tool_called", "resource_read", "prompt_rendered", "session_created"} <= set(kinds)
    tool = next(kw for name, kw in seen if name == "tool_called")
    assert tool["tool"] == "add" and tool["is_error"] is False and tool["duration"] >= 0


def test_a_session_is_not_reaped_while_an_inline_handler_runs() -> None:
    """A handler without a Context runs in the view and is not counted as busy by the
    in-memory backend: the supervisor keeps its session from state.inflight."""
    import time

    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp.runtime.supervisor import tick

    mcp = MCP(name="reap", version="1")
    reaped_during_call: list[bool] = []

    @mcp.tool()
    def idle_for_a_while(session: str) -> str:
        """Look idle to the reaper, then let it run."""
        state = mcp.state()
        state.backend.update_session(session, last_seen=time.time() - 100)
        tick(state, time.monotonic(), reap=True)
        reaped_during_call.append(state.backend.get_session(session) is None)
        return "done"

    app = Flask(__name__)
    app.config["MCP_SESSION_IDLE_TIMEOUT"] = 50
    mcp.init_app(app)
    client = app.test_client()
    session = initialize(client)
    arguments = {"session": session}
    response = rpc(
        client, session, "tools/call", {"name": "idle_for_a_while", "arguments": arguments}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    assert reaped_during_call == [False]
    with app.app_context():
        state = mcp.state()
        state.backend.update_session(session, last_seen=time.time() - 100)
        tick(state, time.monotonic(), reap=True)  # now idle and nothing running: it ends
    assert rpc(client, session, "ping").status_code == 404


@pytest.mark.parametrize("flask_limit", [None, 200])
def test_body_limits_answer_413_as_json_rpc(flask_limit: int | None) -> None:
    """Bodies are read straight from wsgi.input unless Flask's MAX_CONTENT_LENGTH is set;
    either way a request within the limits works and one over them gets a JSON-RPC 413."""
    from flask import Flask

    from flask_mcp import MCP

    mcp = MCP(name="limits", version="1")

    @mcp.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    app = Flask(__name__)
    app.config.update(MCP_MAX_BODY_SIZE=400, MAX_CONTENT_LENGTH=flask_limit)
    mcp.init_app(app)
    client = app.test_client()
    session = initialize(client)
    ok = rpc(client, session, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert ok.status_code == 200
    assert ok.get_json()["result"]["content"][0]["text"] == "hi"
    big = rpc(client, session, "tools/call", {"name": "echo", "arguments": {"text": "x" * 300}})
    assert big.status_code == 413
    assert big.mimetype == "application/json"
    assert big.get_json()["error"]["message"].startswith("The body is")


def test_max_content_length_set_after_init_app_applies(app: t.Any, client: t.Any) -> None:
    session = initialize(client)
    app.config["MAX_CONTENT_LENGTH"] = 100
    big = rpc(
        client, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2 * 10**60}}
    )
    assert big.status_code == 413
    assert big.get_json()["error"]["message"].endswith("MAX_CONTENT_LENGTH.")


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_sessions_a_flood_left_idle_free_the_server_within_30_minutes(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Many addresses, each under MCP_MAX_SESSIONS_PER_CLIENT, fill MCP_MAX_SESSIONS: a new
    client gets 503 until their sessions have been idle for the default idle timeout, 30
    minutes (it was 1 hour: issue 33), then it gets in. Idleness is set, not waited for."""
    import time
    import uuid

    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp.runtime.supervisor import tick

    mcp = MCP(name="flood", version="1")
    app = Flask(__name__)
    app.config["MCP_MAX_SESSIONS"] = 3
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        app.config["MCP_BACKEND"] = f"{url}?prefix=flood-{uuid.uuid4().hex[:8]}:"
    mcp.init_app(app)

    def client_at(address: str) -> t.Any:
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = address
        return client

    flood = [initialize(client_at(f"10.0.0.{n}")) for n in range(3)]
    newcomer = client_at("192.0.2.1")
    body = {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    }  # fmt: skip
    refused = post(newcomer, body)
    assert refused.status_code == 503 and "Retry-After" in refused.headers
    with app.app_context():
        state = mcp.state()
        assert state.settings.session_idle_timeout == 1800
        for session in flood:  # idle for just under the timeout: still kept
            state.backend.update_session(session, last_seen=time.time() - 1790)
        tick(state, time.monotonic(), reap=True)
        assert post(newcomer, body).status_code == 503
        for session in flood:  # idle for just over it: ended
            state.backend.update_session(session, last_seen=time.time() - 1810)
        tick(state, time.monotonic(), reap=True)
    admitted = post(newcomer, body)
    assert admitted.status_code == 200, admitted.get_data(as_text=True)
    assert all(rpc(client_at("10.0.0.0"), s, "ping").status_code == 404 for s in flood)


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_session_ended_for_room_before_its_handshake_signals_once(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A session whose handshake never finished, ended to make room under
    MCP_MAX_SESSIONS, sent no ``session_closed``, while sessions deleted, idle or past
    their lifetime do: a receiver counting live sessions (metrics, OpenTelemetry) kept it
    for ever. It signals once, with the reason ``"handshake"``."""
    import time
    import uuid

    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp import signals

    config: dict[str, t.Any] = {"MCP_MAX_SESSIONS": 1, "MCP_HANDSHAKE_TIMEOUT": 30}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=room-{uuid.uuid4().hex[:10]}:"
    mcp = MCP(name="room", version="1")
    app = Flask(__name__)
    app.config.update(TESTING=True, **config)
    mcp.init_app(app)
    client = app.test_client()
    closed: list[tuple[str, str]] = []

    def receiver(sender: t.Any, *, session_id: str, reason: str, **_: t.Any) -> None:
        closed.append((session_id, reason))

    state = mcp.state(app)
    with signals.session_closed.connected_to(receiver, app):
        first = initialize(client, initialized=False)
        second = post(client, initialize_request())
        assert second.status_code == 503  # the first is still within its handshake timeout
        state.backend.update_session(first, created=time.time() - 60)
        if backend == "redis":  # Redis orders pending handshakes by creation time
            state.backend.client.zadd(state.backend.keys.hs, {first: 1})
        third = post(client, initialize_request())
        assert third.status_code == 200, third.get_data(as_text=True)
        assert state.backend.get_session(first) is None
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        session = third.headers["Mcp-Session-Id"]
        assert post(client, initialized, session).status_code == 202
        assert client.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 204
    assert closed == [(first, "handshake"), (session, "deleted")]


@pytest.mark.parametrize("hook_reads_body", [False, True])
def test_a_large_json_body_is_watched_while_the_server_writes_it(hook_reads_body: bool) -> None:
    """The supervisor watches the write of a large JSON body only while the server writes
    it: it ends with the body, also when an ``after_request`` hook read the body first."""
    mcp = MCP(name="big", version="1.0.0")

    @mcp.tool()
    def big(size: int) -> str:
        """Return ``size`` bytes."""
        return "x" * size

    app = make_app(mcp)
    if hook_reads_body:

        @app.after_request
        def read_body(response: Response) -> Response:
            response.get_data()
            return response

    client = app.test_client()
    session = initialize(client)
    writes = mcp.state(app).writes
    params = {"name": "big", "arguments": {"size": 2 * WATCHED_BODY_SIZE}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    server_side, client_side = socket.socketpair()  # the connection the server shows
    with server_side, client_side:
        response = client.post(
            "/mcp",
            data=json.dumps(message),
            headers={**HEADERS, "Mcp-Session-Id": session},
            environ_overrides={"werkzeug.socket": server_side},
            buffered=False,
        )
        body = next(iter(response.response))
        assert len(writes) == (0 if hook_reads_body else 1)
        response.close()
        assert len(writes) == 0
    assert len(body) > 2 * WATCHED_BODY_SIZE
    assert int(response.headers["Content-Length"]) == len(body)


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_request_finished_once_with_the_timeout_error(
    serve: t.Any, worker: str, tmp_path: t.Any
) -> None:
    """A request ``MCP_REQUEST_TIMEOUT`` ended sends ``request_finished`` once, with the
    timeout error the client got. On gevent (the handler interrupted) it was never sent; on
    gthread it came when the handler returned, with ``error=None``."""
    import time

    import httpx
    from wire import start_session

    signals_file = tmp_path / "signals.jsonl"
    env = {"OBSERVE_SIGNALS": str(signals_file), "FLASK_MCP_REQUEST_TIMEOUT": "0.2"}
    server = serve("tests._apps.observe:app", worker, env=env)
    prompt = {"name": "dawdling", "arguments": {"seconds": "2"}}
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, server.url)
        message = {"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": prompt}
        answer = http.post(server.url, headers=headers, json=message)
    assert '"code":-32001' in answer.text.replace(" ", "")
    deadline = time.monotonic() + 10  # a thread's handler runs on to its end
    seen: list[dict[str, t.Any]] = []
    while time.monotonic() < deadline:
        lines = signals_file.read_text().splitlines()
        seen = [json.loads(line) for line in lines]
        seen = [s for s in seen if s.get("request_id") == 7]
        if any(s["signal"] == "request_finished" for s in seen):
            time.sleep(0.3)  # a second one would come now
            seen = [json.loads(line) for line in signals_file.read_text().splitlines()]
            seen = [s for s in seen if s.get("request_id") == 7]
            break
        time.sleep(0.1)
    assert sorted(s["signal"] for s in seen) == [
        "request_cancelled",
        "request_finished",
        "request_started",
    ]
    (finished,) = [s for s in seen if s["signal"] == "request_finished"]
    assert finished["error"]["code"] == -32001
    assert finished["method"] == "prompts/get"


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_a_listen_the_stopping_worker_ends_is_told_as_shutdown(
    serve: t.Any, worker: str, tmp_path: t.Any
) -> None:
    """A worker told to stop (``SIGTERM``: a reload, ``--max-requests``) ends its open
    streams after ``--graceful-timeout``: a listen's ends with the listen's result (the
    spec's graceful closure) and is told as ``"shutdown"`` to ``listen_finished`` and
    ``stream_closed``. A gevent worker kills their greenlets: that was told as
    ``"client-gone"``, though the client was there, and the connection dropped without
    the result. A gthread worker's stream went on until its time bound or the master
    killed the worker, which then hung at exit, waiting for the stream's thread."""
    import os
    import signal

    import httpx
    from wire import headers_2026
    from wire import meta

    signals_file = tmp_path / "signals.jsonl"
    server = serve("tests._apps.observe:app", worker, env={"OBSERVE_SIGNALS": str(signals_file)})
    pid = httpx.get(f"{server.base_url}/pid", headers={"Connection": "close"}).json()["pid"]
    params = {"notifications": {"toolsListChanged": True}}
    body = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen"}
    body["params"] = {**params, "_meta": meta()}
    headers = {**headers_2026("subscriptions/listen", params), "Connection": "close"}
    # A read waits less than the heartbeat (15 s): a stream that goes on fails the test.
    with httpx.stream("POST", server.url, json=body, headers=headers, timeout=10) as response:
        data = (json.loads(line[6:]) for line in response.iter_lines() if line[:6] == "data: ")
        assert next(data)["method"] == "notifications/subscriptions/acknowledged"
        os.kill(pid, signal.SIGTERM)
        rest = list(data)  # until the stream ends: the worker's graceful timeout is 2 s
    assert [(m["id"], m["result"]["resultType"]) for m in rest] == [("L", "complete")], rest
    seen = [json.loads(line) for line in signals_file.read_text().splitlines()]
    ended = {s["signal"]: s["reason"] for s in seen if "reason" in s}
    assert ended == {"listen_finished": "shutdown", "stream_closed": "shutdown"}, seen


def test_a_backend_refusing_every_request_is_logged_once_per_while(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full (or unreachable) Redis refuses every request with 503: each logged a warning
    of the same reason, a line per request under load. The first refusal of a cause is
    logged, then one line per ``REFUSALS_LOGGED_EVERY`` seconds with how many came since;
    each refusal still at ``DEBUG``, and a new cause at once."""
    app = make_app(MCP(name="refusals", version="1"))
    client = app.test_client()
    refusal: list[Exception] = [BackendFull("Redis at here is full. Raise its maxmemory.")]

    def refuse(self: t.Any, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        raise refusal[0]

    monkeypatch.setattr(MemoryBackend, "create_session", refuse)

    def warnings() -> list[str]:
        found = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        caplog.clear()
        return [m for m in found if "with 503" in m]

    with caplog.at_level(logging.DEBUG, logger="flask_mcp"):
        for _ in range(5):
            answer = post(client, initialize_request())
            assert answer.status_code == 503 and answer.headers["Retry-After"] == "2"
        debug = [r for r in caplog.records if r.levelno == logging.DEBUG and "503" in r.message]
        assert len(debug) == 4
        (first,) = warnings()
        assert "Raise its maxmemory" in first and "more since" not in first
        monkeypatch.setattr(views, "REFUSALS_LOGGED_EVERY", 0.0)  # the while is over
        post(client, initialize_request())
        (later,) = warnings()
        assert "with 503 (4 more since the last line)" in later, later
        monkeypatch.setattr(views, "REFUSALS_LOGGED_EVERY", 10.0)
        refusal[0] = BackendUnavailable("Redis at here is unreachable")
        post(client, initialize_request())
        post(client, initialize_request())
        (other,) = warnings()
        assert "is unreachable" in other and "more since" not in other


def test_an_outage_met_by_a_handler_is_not_answered_as_a_refusal() -> None:
    """A handler without a ``Context`` (run inline) whose own use of the session store
    meets an outage may have done part of its work: it is answered as a spawned handler's
    is, not with the 503 that invites a retry (sent again, it would run twice). A request
    refused before its handler started keeps the 503, and ``request_finished`` carries the
    error the client got in both (it said "while this request ran" for the 503)."""
    from flask_mcp import signals
    from flask_mcp.errors import STORE_UNAVAILABLE_BEFORE_START
    from flask_mcp.runtime.settle import STORE_UNAVAILABLE_WHILE_RUNNING

    mcp = MCP(name="outage", version="1")
    done: list[str] = []

    @mcp.middleware
    def refuse(call: t.Any, call_next: t.Any) -> t.Any:
        if call.method == "prompts/list":
            raise BackendUnavailable("Redis at here is unreachable")
        return call_next(call)

    @mcp.tool()
    def half() -> str:
        done.append("first half")
        raise BackendUnavailable("Redis at here is unreachable")

    app = make_app(mcp)
    client = app.test_client()
    finished: list[t.Any] = []

    def receiver(sender: t.Any, **kwargs: t.Any) -> None:
        finished.append(kwargs["error"])

    signals.request_finished.connect(receiver, app)
    try:
        session = initialize(client)
        answer = rpc(client, session, "tools/call", {"name": "half", "arguments": {}}, id=2)
        refused = rpc(client, session, "prompts/list", id=3)
    finally:
        signals.request_finished.disconnect(receiver, app)
    assert done == ["first half"] and answer.status_code == 200
    error = answer.get_json()["error"]
    assert error["message"] == STORE_UNAVAILABLE_WHILE_RUNNING
    assert error["data"] == {"retryable": False}
    assert refused.status_code == 503
    assert refused.get_json()["error"]["message"] == STORE_UNAVAILABLE_BEFORE_START
    assert finished[-2:] == [error, refused.get_json()["error"]]
