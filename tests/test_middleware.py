"""Middleware around every MCP request: order, short-circuits, rewrites, exceptions, both eras.

In process through :class:`~flask_mcp.testing.MCPTestClient` in both eras (a tool
without a ``Context`` runs in the view, one with a ``Context`` is spawned), without
HTTP through ``runner.run_to_completion`` (the entry of stdio and tasks), and end to end with
the official client on gunicorn (gevent and gthread).
"""

from __future__ import annotations

import contextvars
import typing as t

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import CallInfo
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import protocol
from flask_mcp.config import load_settings
from flask_mcp.errors import INVALID_PARAMS
from flask_mcp.runtime.runs import RequestRun
from flask_mcp.runtime.state import AppState
from flask_mcp.server.call import Call
from flask_mcp.testing import MCPTestClient
from flask_mcp.transport import runner

ERAS = ["2025-11-25", "2026-07-28"]
MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def make_server() -> MCP:
    mcp = MCP(name="mw", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> str:
        """Add."""
        return str(a + b)

    @mcp.tool()
    def slow_add(a: int, b: int, ctx: Context) -> str:
        """Add, from a handler with a Context (spawned)."""
        ctx.log("info", "adding")
        return str(a + b)

    @mcp.tool()
    def mark() -> str:
        """The context variable a middleware set."""
        return MARK.get()

    @mcp.tool()
    def boom() -> str:
        """Fail."""
        raise RuntimeError("secret")

    @mcp.resource("data://one")
    def one() -> str:
        return "one"

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet."""
        return f"Hello {name}"

    return mcp


def make_app(mcp: MCP) -> Flask:
    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s")
    mcp.init_app(app)
    return app


def text(result: dict[str, t.Any]) -> str:
    return t.cast(str, result["content"][0]["text"])


@pytest.mark.parametrize("version", ERAS)
def test_order_and_call_info(version: str) -> None:
    mcp = make_server()
    seen: list[str] = []
    infos: list[CallInfo] = []

    @mcp.middleware
    def outer(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        seen.append(f"outer>{call.method}")
        infos.append(call)
        try:
            return call_next(call)
        finally:
            seen.append(f"outer<{call.method}")

    def inner(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        seen.append(f"inner>{call.method}")
        result = call_next(call)
        seen.append(f"inner<{call.method}")
        return t.cast(dict[str, t.Any], result)

    assert mcp.middleware(inner) is inner
    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        seen.clear()
        infos.clear()
        assert text(client.call_tool("add", {"a": 1, "b": 2})) == "3"
        seen[:] = [s for s in seen if "tools/list" not in s]  # 2026-07-28 lists the tools first
        infos[:] = [i for i in infos if i.method == "tools/call"]
        assert seen == [
            "outer>tools/call",
            "inner>tools/call",
            "inner<tools/call",
            "outer<tools/call",
        ]
        call = infos[0]
        assert (call.method, call.kind, call.name, call.arguments) == (
            "tools/call",
            "tool",
            "add",
            {"a": 1, "b": 2},
        )
        assert call.protocol_version == version
        stateless = version == "2026-07-28"
        assert call.era == (protocol.STATELESS if stateless else protocol.HANDSHAKE)
        assert (call.session_id is None) == stateless
        assert call.principal is None and call.auth is None
        assert "add" in repr(call)
        seen.clear()
        client.read_resource("data://one")
        client.get_prompt("greet", {"name": "x"})
        client.list_tools()
        assert [s for s in seen if s.startswith("outer>")] == [
            "outer>resources/read",
            "outer>prompts/get",
            "outer>tools/list",
        ]
        assert infos[-3].name == "data://one" and infos[-3].kind == "resource"
        assert infos[-2].name == "greet" and infos[-1].name is None


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("tool", ["add", "slow_add"])
def test_rewrite_params_and_result(version: str, tool: str) -> None:
    mcp = make_server()

    @mcp.middleware
    def double_a(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        if call.kind == "tool":
            call.params = {
                **call.params,
                "arguments": {**call.arguments, "a": call.arguments["a"] * 2},
            }
        result = call_next(call)
        if call.kind == "tool":
            result = {
                **result,
                "content": [*result["content"], {"type": "text", "text": "audited"}],
            }
        return t.cast(dict[str, t.Any], result)

    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        result = client.call_tool(tool, {"a": 5, "b": 1})
        assert [block["text"] for block in result["content"]] == ["11", "audited"]
        if version == "2026-07-28":
            assert result["resultType"] == "complete"


@pytest.mark.parametrize("version", ERAS)
def test_short_circuit_result_and_errors(version: str) -> None:
    mcp = make_server()
    ran: list[str] = []

    @mcp.middleware
    def gate(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        ran.append(call.name or call.method)
        args = call.arguments
        if args.get("a") == 100:  # a cache hit: the tool does not run
            return {"content": [{"type": "text", "text": "cached"}]}
        if args.get("a") == 200:
            raise ToolError("refused for the model")
        if args.get("a") == 300:
            raise MCPError(INVALID_PARAMS, "refused by policy", {"why": "a=300"})
        if args.get("a") == 400:
            raise KeyError("a bug in the middleware")
        return t.cast(dict[str, t.Any], call_next(call))

    @mcp.middleware
    def count(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        ran.append("inner")
        return t.cast(dict[str, t.Any], call_next(call))

    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        client.list_tools()
        ran.clear()
        result = client.call_tool("slow_add", {"a": 100, "b": 1})
        assert text(result) == "cached" and ran == ["slow_add"]
        if version == "2026-07-28":
            assert result["resultType"] == "complete"
            assert protocol.META_SERVER_INFO in result["_meta"]
        result = client.call_tool("add", {"a": 200, "b": 1})
        assert result["isError"] is True and text(result) == "refused for the model"
        with pytest.raises(MCPError) as info:
            client.call_tool("add", {"a": 300, "b": 1})
        assert (info.value.code, info.value.message) == (INVALID_PARAMS, "refused by policy")
        assert info.value.data == {"why": "a=300"}
        with pytest.raises(MCPError) as info:
            client.call_tool("add", {"a": 400, "b": 1})
        assert info.value.code == -32603 and "a bug" not in info.value.message
        assert client.read_resource("data://one")[0]["text"] == "one"
        assert text(client.call_tool("add", {"a": 1, "b": 1})) == "2"


@pytest.mark.parametrize("version", ERAS)
def test_toolerror_outside_tools_and_exceptions_seen(version: str) -> None:
    mcp = make_server()
    caught: list[t.Any] = []

    @mcp.middleware
    def outer(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        try:
            return t.cast(dict[str, t.Any], call_next(call))
        except MCPError as exc:
            caught.append(exc.code)
            if call.name == "nope":  # an unknown tool, answered for the model instead
                return {"content": [{"type": "text", "text": "no such tool"}], "isError": True}
            raise

    @mcp.middleware
    def refuse_prompt(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        if call.kind == "prompt":
            raise ToolError("prompts are closed")
        result = t.cast(dict[str, t.Any], call_next(call))
        if call.name == "boom":
            caught.append(("boom", result.get("isError")))
        return result

    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        result = client.call_tool("nope", {})
        assert result["isError"] is True and text(result) == "no such tool"
        assert caught == [INVALID_PARAMS]
        with pytest.raises(MCPError) as info:
            client.get_prompt("greet", {"name": "x"})
        assert (info.value.code, info.value.message) == (-32603, "prompts are closed")
        result = client.call_tool("boom", {})  # the tool failed: a result, not an exception
        assert result["isError"] is True and "secret" not in text(result)
        assert caught[-1] == ("boom", True)


@pytest.mark.parametrize("version", ERAS)
def test_context_variable_reaches_spawned_and_inline_handlers(version: str) -> None:
    mcp = make_server()

    @mcp.middleware
    def set_mark(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        token = MARK.set(f"set-for-{call.request_id}")
        try:
            return t.cast(dict[str, t.Any], call_next(call))
        finally:
            MARK.reset(token)

    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        assert text(client.call_tool("mark", {})).startswith("set-for-")


def test_retry_and_bad_middleware() -> None:
    mcp = make_server()
    attempts: list[int] = []

    @mcp.middleware
    def retry(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        result = t.cast(dict[str, t.Any], call_next(call))
        if call.name == "add" and len(attempts) < 2:
            attempts.append(1)
            return t.cast(dict[str, t.Any], call_next(call))
        return result

    @mcp.middleware
    def returns_none(call: CallInfo, call_next: t.Any) -> t.Any:
        if call.name == "mark":
            call_next(call)
            return None  # forgot the return
        return call_next(call)

    with pytest.raises(TypeError, match="without parentheses"):
        mcp.middleware(t.cast(t.Any, "not callable"))
    with MCPTestClient(make_app(mcp)) as client:
        assert text(client.call_tool("add", {"a": 1, "b": 1})) == "2"
        assert len(attempts) == 1
        with pytest.raises(MCPError) as info:  # a bug: redacted -32603, logged
            client.call_tool("mark", {})
        assert info.value.code == -32603


@pytest.mark.parametrize("era", [protocol.HANDSHAKE, protocol.STATELESS])
def test_run_call_without_http(era: str) -> None:
    """The entry point of stdio and tasks runs the same chain."""
    mcp = make_server()
    seen: list[str] = []

    @mcp.middleware
    def record(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        seen.append(f"{call.method} {call.name}")
        call.params["arguments"]["b"] = 10
        return t.cast(dict[str, t.Any], call_next(call))

    state = AppState(load_settings({}))

    def inline_context(run: RequestRun) -> Context:
        return Context(
            app=None, run=run, back_channel=t.cast(t.Any, None), protocol_version=version,
            client_capabilities={}, client_info={}, meta={}, log_level=None,
        )  # fmt: skip

    version = "2025-11-25" if era == protocol.HANDSHAKE else "2026-07-28"
    for name in ("add", "slow_add"):
        params = {"name": name, "arguments": {"a": 1, "b": 2}}
        call = Call("tools/call", params, 7, version, era, state=state)
        response = runner.run_to_completion(mcp.dispatcher, call, context=inline_context)
        assert response is not None
        assert response["result"]["content"][0]["text"] == "11"
    assert seen == ["tools/call add", "tools/call slow_add"]


def test_no_middleware_is_the_plain_route() -> None:
    mcp = make_server()
    assert not mcp.dispatcher.middleware and len(mcp.dispatcher.middleware) == 0


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_official_client_on_gunicorn_both_eras(serve: t.Any, worker: str) -> None:
    """A middleware that doubles ``a`` and appends to results, seen by the official client."""
    import anyio
    from mcp import Client

    server = serve("tests._apps.observe:app", worker, env={"OBSERVE_AUDIT": "1"})

    async def main() -> list[list[str]]:
        texts = []
        for mode in ("legacy", "2026-07-28"):
            async with Client(server.url, mode=mode) as client:
                for tool, arguments in (("add", {"a": 2, "b": 1}), ("echo", {"text": "hi"})):
                    result = await client.call_tool(tool, arguments)
                    texts.append([block.text for block in result.content])  # type: ignore[union-attr]
        return texts

    texts = anyio.run(main)
    assert texts == [
        ["21", "audited add handshake"],
        ["hi", "audited echo handshake"],
        ["21", "audited add stateless"],
        ["hi", "audited echo stateless"],
    ]


def test_initialize_runs_through_the_chain() -> None:
    """The handshake's initialize: seen, refused (no session made), or refused afterwards
    (the session is deleted again)."""
    from wire import initialize_request

    mcp = make_server()
    seen: list[tuple[str, t.Any]] = []
    mode = {"refuse": "", "count": 0}

    @mcp.middleware
    def gate(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        seen.append((call.method, call.session_id))
        if call.method == "initialize" and mode["refuse"] == "before":
            raise MCPError(-32600, "no new sessions", http_status=429, headers={"Retry-After": "9"})
        result = t.cast(dict[str, t.Any], call_next(call))
        seen.append(("after", call.session_id))
        if call.method == "initialize" and mode["refuse"] == "after":
            raise MCPError(-32600, "changed my mind")
        return result

    app = make_app(mcp)
    state = mcp.state(app)
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream"}
    ok = client.post("/mcp", json=initialize_request(), headers=headers)
    assert ok.status_code == 200 and ok.headers["Mcp-Session-Id"]
    assert seen == [("initialize", None), ("after", ok.headers["Mcp-Session-Id"])]
    mode["refuse"] = "before"
    refused = client.post("/mcp", json=initialize_request(), headers=headers)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "9"
    assert "Mcp-Session-Id" not in refused.headers
    assert refused.json is not None and refused.json["error"]["message"] == "no new sessions"
    mode["refuse"] = "after"
    later = client.post("/mcp", json=initialize_request(), headers=headers)
    assert later.status_code == 200 and later.json is not None
    assert later.json["error"]["message"] == "changed my mind"
    assert "Mcp-Session-Id" not in later.headers
    assert state.backend.session_ids() == [ok.headers["Mcp-Session-Id"]]
