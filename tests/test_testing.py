"""The protocol-level test client in both eras, and the live server for HTTP clients."""

from __future__ import annotations

import json
import threading
import time
import typing as t

import flask
import pytest
from flask import Flask
from flask import Response
from flask import request

import flask_mcp
import flask_mcp.testing
from flask_mcp import MCP
from flask_mcp import ClientRequestError
from flask_mcp import Context
from flask_mcp.testing import MCPError
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
HI = [{"role": "user", "content": {"type": "text", "text": "hi"}}]
ASKED: list[tuple[str, dict[str, t.Any]]] = []


def sampling(params: dict[str, t.Any]) -> dict[str, t.Any]:
    ASKED.append(("sampling", params))
    text = params["messages"][0]["content"]["text"].upper()
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


def elicitation(params: dict[str, t.Any]) -> dict[str, t.Any]:
    ASKED.append(("elicitation", params))
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture
def server() -> MCP:
    mcp = MCP(name="testing", version="3.1.0")
    ASKED.clear()

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def interview(ctx: Context) -> str:
        """Sample, elicit and list roots: three round trips (three MRTR rounds)."""
        said = ctx.create_message(HI, 10)
        answer = ctx.elicit("Name?", NAME)
        roots = ctx.list_roots()
        return f"{said['content']['text']}|{answer['content']['name']}|{roots[0]['uri']}"

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress and log."""
        ctx.progress(1, 2)
        ctx.log("info", "working")
        return "done"

    @mcp.tool(headers={"region": "Region"})
    def regional(region: str, count: int = 1) -> str:
        """Take a region mirrored into Mcp-Param-Region (2026-07-28)."""
        return f"{region}x{count}"

    @mcp.resource("test://items/{item_id}", mime_type="application/json")
    def item(item_id: str) -> dict[str, str]:
        """An item."""
        return {"id": item_id}

    @mcp.resource("test://secret")
    def secret(ctx: Context) -> str:
        """A resource that asks first."""
        return f"for {ctx.elicit('Who?', NAME)['content']['name']}"

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    @mcp.completion("prompt", "greet")
    def names(argument: str, value: str, context: t.Any) -> list[str]:
        return [n for n in ("Ada", "Alan", "Bo") if n.startswith(value)]

    return mcp


def make_app(mcp: MCP, **config: t.Any) -> Flask:
    """An app at default settings: nothing makes streaming easier for the test client."""
    app = Flask("testing_app")
    app.config.update(TESTING=True, SECRET_KEY="test-secret", **config)
    assert "MCP_MAX_STREAMS" not in app.config
    mcp.init_app(app)
    return app


@pytest.fixture
def app(server: MCP) -> Flask:
    return make_app(server)


def make_client(app: Flask, version: str, **kwargs: t.Any) -> MCPTestClient:
    return MCPTestClient(
        app,
        protocol_version=version,
        sampling=sampling,
        elicitation=elicitation,
        roots=[{"uri": "file:///work"}],
        **kwargs,
    )


# -- server-to-client requests ---------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_back_channel_at_default_settings(app: Flask, server: MCP, version: str) -> None:
    with make_client(app, version) as client:
        result = client.call_tool("interview")
        assert result["content"][0]["text"] == "HI|Ada|file:///work"
        assert not result.get("isError")
        assert [kind for kind, _ in ASKED] == ["sampling", "elicitation"]
        assert ASKED[1][1]["message"] == "Name?"
        assert client.read_resource("test://secret")[0]["text"] == "for Ada"
        assert server.stats(app)["open_streams"] == 0  # every stream ended and gave back its slot
        assert server.stats(app)["running_requests"] == 0


def test_stateless_rounds_replay_the_handler(app: Flask) -> None:
    runs: list[str] = []
    server = app.extensions["mcp"]

    @server.tool()
    def counted(ctx: Context) -> str:
        """Ask twice; count the replays."""
        runs.append("run")
        first = ctx.elicit("One?", NAME, key="one")["content"]["name"]
        second = ctx.create_message(HI, 5)["content"]["text"]
        return f"{first}-{second}"

    client = make_client(app, "2026-07-28")
    assert client.call_tool("counted")["content"][0]["text"] == "Ada-HI"
    assert len(runs) == 3  # asked, asked again, answered


def test_stateless_rounds_are_bounded(app: Flask) -> None:
    server = app.extensions["mcp"]

    @server.tool()
    def insatiable(ctx: Context) -> str:
        """Ask a new question every round."""
        ctx.request_state["n"] = ctx.request_state.get("n", 0) + 1
        ctx.elicit("Again?", NAME, key=f"q{ctx.request_state['n']}")
        return "never"

    client = make_client(app, "2026-07-28", max_rounds=3)
    with pytest.raises(RuntimeError, match="InputRequiredResult 3 times.*max_rounds"):
        client.call_tool("insatiable")
    assert len(ASKED) == 3


def test_input_required_on_a_method_that_cannot_carry_it_fails(app: Flask) -> None:
    """MRTR: only tools/call, prompts/get and resources/read may answer InputRequiredResult;
    a real client rejects it on tools/list, so the test client must not retry it away."""
    answered: list[str] = []

    @app.after_request
    def asks_on_tools_list(response: t.Any) -> t.Any:
        if b'"tools/list"' in request.get_data() and not answered:
            answered.append("input_required")
            message = json.loads(response.get_data())
            message["result"] = {"resultType": "input_required", "requestState": "s"}
            response.set_data(json.dumps(message))
        return response

    client = make_client(app, "2026-07-28")
    with pytest.raises(AssertionError, match="answered tools/list with an InputRequiredResult"):
        client.list_tools()
    assert answered == ["input_required"]


def test_a_task_the_request_did_not_allow_fails(app: Flask) -> None:
    """The tasks extension: a server MUST NOT answer CreateTaskResult to a request that did
    not declare the extension; a real client rejects it, so the test client must too."""

    @app.after_request
    def creates_a_task(response: t.Any) -> t.Any:
        if b'"tools/call"' in request.get_data():
            message = json.loads(response.get_data())
            task = {"taskId": "t1", "status": "working", "createdAt": "", "lastUpdatedAt": ""}
            message["result"] = {"resultType": "task", **task, "ttlMs": None}
            response.set_data(json.dumps(message))
        return response

    client = make_client(app, "2026-07-28")
    with pytest.raises(AssertionError, match="tools/call with a CreateTaskResult.*did not decl"):
        client.call_tool("add", {"a": 1, "b": 2})
    assert client.call_tool_as_task("add", {"a": 1, "b": 2})["taskId"] == "t1"  # declared


def test_a_request_on_a_2026_stream_fails(app: Flask) -> None:
    """2026-07-28 Streamable HTTP: the server MUST NOT send independent JSON-RPC requests on
    a response stream (MRTR replaces them); the test client must not answer one."""
    replies: list[bytes] = []

    @app.after_request
    def asks_on_the_stream(response: t.Any) -> t.Any:
        body = request.get_data()
        if b'"tools/call"' in body:
            answer = json.loads(response.get_data())
            ask = {"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create", "params": {}}
            events = [f"data: {json.dumps(m)}\n\n".encode() for m in (ask, answer)]
            return Response(events, mimetype="text/event-stream")
        if b'"result"' in body or b'"error"' in body:
            replies.append(body)
        return response

    client = make_client(app, "2026-07-28")
    with pytest.raises(AssertionError, match="elicitation/create request on the stream"):
        client.call_tool("add", {"a": 1, "b": 2})
    assert replies == []  # nothing was posted back to the server


def test_stateless_input_without_a_handler(app: Flask) -> None:
    client = MCPTestClient(app, protocol_version="2026-07-28", capabilities={"sampling": {}})
    with pytest.raises(MCPError, match="no handler") as info:
        client.call_tool("interview")
    assert info.value.code == -32601


def test_a_failing_handler_fails_the_test_and_frees_the_server(app: Flask, server: MCP) -> None:
    def broken(params: dict[str, t.Any]) -> dict[str, t.Any]:
        raise ValueError("handler bug")

    with MCPTestClient(app, sampling=broken) as client:
        with pytest.raises(ValueError, match="handler bug"):
            client.call_tool("interview")
        assert client.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}


def test_a_handler_may_refuse_with_an_error(app: Flask, server: MCP) -> None:
    seen: list[str] = []

    @server.tool()
    def polite(ctx: Context) -> str:
        """Sample; report the client's refusal."""
        try:
            ctx.create_message(HI, 5)
        except ClientRequestError as exc:
            seen.append(str(exc))
        return "ok"

    def refuse(params: dict[str, t.Any]) -> dict[str, t.Any]:
        raise flask_mcp.MCPError(-1, "user rejected sampling")

    with MCPTestClient(app, sampling=refuse) as client:
        assert client.call_tool("polite")["content"][0]["text"] == "ok"
    assert seen and "user rejected sampling" in seen[0]


def test_every_wait_has_a_timeout(app: Flask, server: MCP) -> None:
    release = threading.Event()

    @server.tool()
    def stuck(ctx: Context) -> str:
        """Report progress, then wait for the test."""
        ctx.progress(0)
        release.wait(10)
        return "late"

    try:
        client = MCPTestClient(app, timeout=0.3)
        with client, pytest.raises(TimeoutError, match="timeout="):
            client.call_tool("stuck", progressToken="p")
    finally:
        release.set()


@pytest.mark.parametrize("version", ERAS)
def test_a_json_answer_has_a_timeout_too(app: Flask, server: MCP, version: str) -> None:
    """A handler that cannot emit answers in JSON, run in the request: the client still
    gives up after ``timeout`` (it used to wait for the handler however long it took)."""
    release = threading.Event()

    @server.tool()
    def stuck() -> str:
        """Wait for the test (10 s at most), then answer in one JSON response."""
        release.wait(10)
        return "late"

    try:
        client = MCPTestClient(app, protocol_version=version, timeout=0.3)
        with client, pytest.raises(TimeoutError, match="timeout="):
            client.call_tool("stuck")
    finally:
        release.set()


@pytest.mark.parametrize("emits", [True, False])
def test_a_request_that_timed_out_is_cancelled(app: Flask, server: MCP, emits: bool) -> None:
    """Handshake era: the client that gives up sends ``notifications/cancelled``, as the
    spec asks of a sender whose request timed out, so the handler stops."""
    stopped = threading.Event()

    @server.tool()
    def endless(ctx: Context) -> str:
        """Work until cancelled (10 s at most), reporting progress first if ``emits``."""
        if emits:
            ctx.progress(0)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if ctx.cancelled:
                stopped.set()
                return "stopped"
            time.sleep(0.01)
        return "ran out"

    with MCPTestClient(app, timeout=0.3) as client:
        with pytest.raises(TimeoutError, match="timeout="):
            client.call_tool("endless")
        assert stopped.wait(10)


def test_a_stream_closed_by_the_server_is_resumed(app: Flask, server: MCP) -> None:
    @server.tool()
    def two_phase(ctx: Context) -> str:
        """Log, drop the connection, ask, finish: the rest arrives on a resumed stream."""
        ctx.log("info", "phase 1")
        ctx.close_sse_stream()
        name = ctx.elicit("Name?", NAME)["content"]["name"]
        ctx.log("info", "phase 2")
        return f"complete for {name}"

    with make_client(app, "2025-11-25") as client:
        assert client.call_tool("two_phase")["content"][0]["text"] == "complete for Ada"
        assert [n["params"]["data"] for n in client.notifications] == ["phase 1", "phase 2"]
    assert server.stats(app)["running_requests"] == 0


@pytest.mark.parametrize("version", ERAS)
def test_an_empty_next_cursor_is_followed(server: MCP, version: str) -> None:
    """2026-07-28 pagination: "" is a valid cursor, not the end of the results."""

    @server.middleware
    def pages(call: t.Any, call_next: t.Any) -> t.Any:
        if call.method != "prompts/list":
            return call_next(call)
        if "cursor" not in call.params:
            return {"prompts": [{"name": "first"}], "nextCursor": ""}
        assert call.params["cursor"] == ""
        return {"prompts": [{"name": "second"}]}

    with make_client(make_app(server), version) as client:
        assert [p["name"] for p in client.list_prompts()] == ["first", "second"]


# -- one test code, two eras --------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_same_calls_in_both_eras(app: Flask, version: str) -> None:
    with make_client(app, version, log_level="info") as client:
        assert client.server_info["name"] == "testing"
        assert client.server_info["version"] == "3.1.0"
        assert [t["name"] for t in client.list_tools()] == [
            "add", "interview", "chatty", "regional"
        ]  # fmt: skip
        assert client.call_tool("add", {"a": 2, "b": 40})["structuredContent"] == {"result": 42}
        assert client.read_resource("test://items/7")[0]["text"] == '{"id":"7"}'
        assert [t["uriTemplate"] for t in client.list_resource_templates()] == [
            "test://items/{item_id}"
        ]
        assert [r["uri"] for r in client.list_resources()] == ["test://secret"]
        assert [p["name"] for p in client.list_prompts()] == ["greet"]
        prompt = client.get_prompt("greet", {"name": "Bo"})
        assert prompt["messages"][0]["content"]["text"] == "Hello Bo"
        completion = client.complete({"type": "ref/prompt", "name": "greet"}, "name", "A")
        assert completion["values"] == ["Ada", "Alan"]
        assert client.call_tool("chatty", progressToken="tok")["content"][0]["text"] == "done"
        progress, log = client.notifications
        assert progress["method"] == "notifications/progress"
        assert progress["params"]["progressToken"] == "tok"
        assert (log["method"], log["params"]["data"]) == ("notifications/message", "working")
        with pytest.raises(flask_mcp.MCPError) as info:
            client.call_tool("nope")
        assert info.value.code == -32602


def test_stateless_requests_carry_meta_and_headers(app: Flask) -> None:
    sent: list[tuple[dict[str, t.Any], dict[str, str]]] = []
    client = make_client(app, "2026-07-28", headers={"X-Trace": "1"})
    post = client.client.post

    def spy(path: str, **kwargs: t.Any) -> t.Any:
        import json

        sent.append((json.loads(kwargs["data"]), dict(kwargs["headers"])))
        return post(path, **kwargs)

    client.client.post = spy  # type: ignore[method-assign]
    assert (
        client.call_tool("regional", {"region": "Zürich", "count": 2})["content"][0]["text"]
        == "Zürichx2"
    )
    listing, (call, headers) = sent  # the first call learns the x-mcp-header annotations
    assert listing[0]["method"] == "tools/list"
    meta = call["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "flask-mcp-test-client"
    assert set(meta["io.modelcontextprotocol/clientCapabilities"]) == {
        "sampling", "elicitation", "roots"
    }  # fmt: skip
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert (headers["Mcp-Method"], headers["Mcp-Name"]) == ("tools/call", "regional")
    assert headers["Mcp-Param-Region"] == "=?base64?WsO8cmljaA==?="
    assert headers["X-Trace"] == "1"
    assert "Mcp-Session-Id" not in headers


@pytest.mark.parametrize("version", ERAS)
def test_a_cookie_header_reaches_the_server(version: str) -> None:
    """``headers={"Cookie": ...}`` signs the client in as a browser session would: the
    Werkzeug test client's cookie jar must not replace it with its own (empty) cookies."""
    mcp = MCP(name="cookies", version="1")

    @mcp.tool()
    def signed_in_as() -> str:
        """The user of the request's Flask session."""
        return str(flask.session.get("user"))

    app = make_app(mcp)
    with app.test_request_context():
        interface = app.session_interface
        serializer = interface.get_signing_serializer(app)  # type: ignore[attr-defined]
        assert serializer is not None
        cookie = f"session={serializer.dumps({'user': 'ada'})}"
    with MCPTestClient(app, protocol_version=version, headers={"Cookie": cookie}) as client:
        assert client.call_tool("signed_in_as")["content"][0]["text"] == "ada"


def test_stateless_errors_carry_code_data_and_status(app: Flask) -> None:
    client = MCPTestClient(app, protocol_version="2026-07-28")  # declares no capability
    with pytest.raises(flask_mcp.MCPError) as info:
        client.call_tool("interview")
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert info.value.http_status == 400


def test_errors_are_flask_mcp_errors() -> None:
    assert flask_mcp.testing.MCPError is flask_mcp.MCPError


def test_roots_change(app: Flask, server: MCP) -> None:
    changed: list[str] = []
    server.on_roots_changed(changed.append)
    with make_client(app, "2025-11-25") as client:
        client.set_roots([{"uri": "file:///elsewhere"}])
        assert changed == [client.session_id]
        assert client.call_tool("interview")["content"][0]["text"].endswith("file:///elsewhere")


# -- listening for changes ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_listen(app: Flask, server: MCP, version: str) -> None:
    client = make_client(app, version)
    with client, client.listen(tools=True, resource_uris=["test://secret"]) as changes:
        assert changes.acknowledged == {
            "toolsListChanged": True, "resourceSubscriptions": ["test://secret"]
        }  # fmt: skip
        server.notify_list_changed("prompts", app=app)  # not asked for
        server.notify_resource_updated("test://secret", app=app)
        server.add_tool(lambda: "new", name="new_tool")
        updated = changes.get()
        assert updated is not None and updated["params"]["uri"] == "test://secret"
        changed = changes.get()
        assert changed is not None and changed["method"] == "notifications/tools/list_changed"
        assert changes.get(timeout=0.2) is None


# -- finding the endpoint ------------------------------------------------------------------------


def test_an_app_without_init_app_is_named(server: MCP) -> None:
    with pytest.raises(RuntimeError, match="has no MCP endpoint: did you call init_app"):
        MCPTestClient(Flask("bare"))


def test_a_path_without_an_endpoint_is_named(server: MCP) -> None:
    app = make_app(server, MCP_PATH="/api/mcp")
    with pytest.raises(RuntimeError, match=r"no MCP endpoint at '/mcp'.*'/api/mcp'"):
        MCPTestClient(app, path="/mcp")
    with MCPTestClient(app) as client:  # the app's MCP_PATH by default
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}


def test_an_endpoint_with_url_variables_needs_a_path(server: MCP) -> None:
    """The rule's own text matched it, so the calls went to a tenant named "<tenant>"."""
    app = make_app(server, MCP_PATH="/t/<tenant>/mcp")
    with pytest.raises(RuntimeError, match=r"URL variables.*path='/t/TENANT/mcp'"):
        MCPTestClient(app)
    with MCPTestClient(app, path="/t/acme/mcp") as client:
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}


# -- the official client, in process --------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_official_client_against_live_server(app: Flask, mode: str) -> None:
    import anyio
    import mcp_types as types
    from mcp import Client

    from flask_mcp.testing import live_server

    async def on_elicit(context: t.Any, params: t.Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def main(url: str) -> str:
        with anyio.fail_after(20):
            async with Client(url, mode=mode, elicitation_callback=on_elicit) as client:
                result = await client.call_tool("secret_reader", {})
        block = result.content[0]
        assert isinstance(block, types.TextContent) and not result.is_error
        return block.text

    server = app.extensions["mcp"]

    @server.tool()
    def secret_reader(ctx: Context) -> str:
        """Elicit a name."""
        return f"hello {ctx.elicit('Who?', NAME)['content']['name']}"

    with live_server(app) as live:
        assert live.url.startswith("http://127.0.0.1:") and live.url.endswith("/mcp")
        assert anyio.run(main, live.url) == "hello Grace"
    assert server.stats(app)["running_requests"] == 0
