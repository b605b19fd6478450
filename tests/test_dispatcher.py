"""The dispatcher alone: no Flask app, no HTTP, no request context.

A :class:`~flask_mcp.server.dispatcher.Dispatcher` is built from a registry and the
server info; each call carries an :class:`~flask_mcp.runtime.state.AppState` made
from settings without an app. The runner's ``run_to_completion`` runs a call to its end the
same way, without HTTP.
"""

from __future__ import annotations

import base64
import typing as t

import flask
import pytest

from flask_mcp import Context
from flask_mcp import ToolError
from flask_mcp import current_context
from flask_mcp import protocol
from flask_mcp import signals
from flask_mcp.backends.base import SessionRecord
from flask_mcp.config import load_settings
from flask_mcp.errors import MCPError
from flask_mcp.runtime.runs import RequestRun
from flask_mcp.runtime.state import AppState
from flask_mcp.server.call import Call
from flask_mcp.server.context import BackChannel
from flask_mcp.server.declarations import Declarations
from flask_mcp.server.dispatcher import Dispatcher
from flask_mcp.server.info import ServerInfo
from flask_mcp.server.registry import Registry
from flask_mcp.transport import runner

HANDSHAKE = protocol.HANDSHAKE
STATELESS = protocol.STATELESS


class Server(Declarations):
    """The declarations of :class:`~flask_mcp.MCP`, without the Flask extension."""

    def __init__(self) -> None:
        self.registry = Registry()


@pytest.fixture
def server() -> Server:
    server = Server()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        assert not flask.has_app_context()  # nothing of Flask is needed to run it
        return a + b

    @server.tool()
    def fail(kind: str) -> str:
        """Fail the way asked."""
        if kind == "tool":
            raise ToolError("the model should read this")
        raise RuntimeError("secret detail")

    @server.tool()
    def whoami() -> dict[str, t.Any]:
        """Report the call's facts from current_context()."""
        ctx = current_context()
        return {"request_id": ctx.request_id, "session": ctx.session_id}

    @server.tool()
    async def later(text: str) -> str:
        """An async def handler: run through asgiref without an app."""
        return text.upper()

    @server.resource("notes://readme", mime_type="text/plain")
    def readme() -> str:
        return "read me"

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone.

        :param name: who to greet.
        """
        return f"Hello, {name}!"

    @server.completion("prompt", "greet", "name")
    def names(argument: str, value: str, context: dict[str, t.Any]) -> list[str]:
        return [n for n in ("Ada", "Alan", "Grace") if n.startswith(value)]

    return server


def make_state(**config: t.Any) -> AppState:
    return AppState(load_settings(dict(config)), server_name="unit")


@pytest.fixture
def state() -> AppState:
    return make_state(MCP_PAGE_SIZE=3)


@pytest.fixture
def dispatcher(server: Server) -> Dispatcher:
    info = ServerInfo("unit", "1.0", {"name": "unit", "version": "1.0"}, "Use it well.")
    return Dispatcher(server.registry, info)


def call(
    state: AppState,
    method: str,
    params: dict[str, t.Any] | None = None,
    era: str = HANDSHAKE,
    **kwargs: t.Any,
) -> Call:
    version = "2026-07-28" if era == STATELESS else "2025-11-25"
    return Call(method, params or {}, 7, version, era, state=state, **kwargs)


def error_of(dispatcher: Dispatcher, a_call: Call) -> MCPError:
    with pytest.raises(MCPError) as info:
        dispatcher.dispatch(a_call)
    return info.value


def test_no_flask_app_is_involved(dispatcher: Dispatcher, state: AppState) -> None:
    assert state.app is None
    assert not flask.has_app_context()
    result = dispatcher.dispatch(
        call(state, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    )
    assert result["structuredContent"] == {"result": 3}
    assert not result.get("isError")


def test_tools_list_is_paginated(dispatcher: Dispatcher, state: AppState) -> None:
    first = dispatcher.dispatch(call(state, "tools/list"))
    assert [tool["name"] for tool in first["tools"]] == ["add", "fail", "whoami"]
    assert first["tools"][0]["inputSchema"]["required"] == ["a", "b"]
    second = dispatcher.dispatch(call(state, "tools/list", {"cursor": first["nextCursor"]}))
    assert [tool["name"] for tool in second["tools"]] == ["later"]
    assert "nextCursor" not in second
    bad = error_of(dispatcher, call(state, "tools/list", {"cursor": "not-a-cursor"}))
    assert bad.code == -32602
    for changed in (first["nextCursor"] + "==", base64.b64encode(b"tools:+3").decode()):
        bad = error_of(dispatcher, call(state, "tools/list", {"cursor": changed}))
        assert bad.code == -32602, changed  # another spelling of the offset: not ours


def test_a_cursor_of_another_list_is_invalid() -> None:
    """Invalid cursors get -32602 (``server/utilities/pagination``), one of another list too."""
    server = Server()
    for n in range(4):
        server.tool(name=f"t{n}")(lambda: "x")
        server.prompt(name=f"p{n}")(lambda: "x")
    dispatcher = Dispatcher(server.registry, ServerInfo("unit", "1.0", {}, None))
    state = make_state(MCP_PAGE_SIZE=2)
    tools = dispatcher.dispatch(call(state, "tools/list"))
    prompts = dispatcher.dispatch(call(state, "prompts/list"))
    mixed = error_of(dispatcher, call(state, "prompts/list", {"cursor": tools["nextCursor"]}))
    assert mixed.code == -32602 and "same list" in mixed.message
    second = dispatcher.dispatch(call(state, "prompts/list", {"cursor": prompts["nextCursor"]}))
    assert [prompt["name"] for prompt in second["prompts"]] == ["p2", "p3"]


def test_old_versions_get_tools_without_output_schemas(
    dispatcher: Dispatcher, state: AppState
) -> None:
    old = Call("tools/list", {}, 1, "2025-03-26", HANDSHAKE, state=state)
    assert all("outputSchema" not in tool for tool in dispatcher.dispatch(old)["tools"])


def test_tools_call_validation_errors_are_tool_results(
    dispatcher: Dispatcher, state: AppState
) -> None:
    result = dispatcher.dispatch(
        call(state, "tools/call", {"name": "add", "arguments": {"a": "x", "b": 2}})
    )
    assert result["isError"] is True
    assert "Invalid arguments" in result["content"][0]["text"]
    missing = dispatcher.dispatch(call(state, "tools/call", {"name": "add", "arguments": {}}))
    assert "missing required argument 'a'" in missing["content"][0]["text"]


def test_tools_call_refuses_bad_params(dispatcher: Dispatcher, state: AppState) -> None:
    assert error_of(dispatcher, call(state, "tools/call", {"name": "nope"})).code == -32602
    assert error_of(dispatcher, call(state, "tools/call", {})).code == -32602
    not_object = call(state, "tools/call", {"name": "add", "arguments": [1, 2]})
    assert error_of(dispatcher, not_object).code == -32602


def test_tool_errors_and_redaction(dispatcher: Dispatcher, state: AppState) -> None:
    tool_error = dispatcher.dispatch(
        call(state, "tools/call", {"name": "fail", "arguments": {"kind": "tool"}})
    )
    assert tool_error["content"][0]["text"] == "the model should read this"
    crash = dispatcher.dispatch(
        call(state, "tools/call", {"name": "fail", "arguments": {"kind": "crash"}})
    )
    assert crash["isError"] is True and "secret detail" not in crash["content"][0]["text"]
    exposed = make_state(MCP_EXPOSE_INTERNAL_ERRORS=True)
    shown = dispatcher.dispatch(
        call(exposed, "tools/call", {"name": "fail", "arguments": {"kind": "crash"}})
    )
    assert "RuntimeError: secret detail" in shown["content"][0]["text"]


def test_current_context_and_async_handlers_without_an_app(
    dispatcher: Dispatcher, state: AppState
) -> None:
    facts = dispatcher.dispatch(call(state, "tools/call", {"name": "whoami"}))
    assert facts["structuredContent"] == {"request_id": 7, "session": None}
    upper = dispatcher.dispatch(
        call(state, "tools/call", {"name": "later", "arguments": {"text": "hi"}})
    )
    assert upper["content"][0]["text"] == "HI"


def test_signals_are_sent_with_the_state_app_as_sender(
    dispatcher: Dispatcher, state: AppState
) -> None:
    seen: list[tuple[t.Any, dict[str, t.Any]]] = []

    def receiver(sender: t.Any, **kwargs: t.Any) -> None:
        seen.append((sender, kwargs))

    signals.tool_called.connect(receiver)
    try:
        dispatcher.dispatch(
            call(state, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        )
    finally:
        signals.tool_called.disconnect(receiver)
    assert seen and seen[0][0] is None and seen[0][1]["tool"] == "add"


def test_resources(dispatcher: Dispatcher, state: AppState) -> None:
    listed = dispatcher.dispatch(call(state, "resources/list"))
    assert [r["uri"] for r in listed["resources"]] == ["notes://readme"]
    templates = dispatcher.dispatch(call(state, "resources/templates/list"))
    assert templates["resourceTemplates"][0]["uriTemplate"] == "notes://{name}"
    static = dispatcher.dispatch(call(state, "resources/read", {"uri": "notes://readme"}))
    assert static["contents"] == [
        {"uri": "notes://readme", "mimeType": "text/plain", "text": "read me"}
    ]
    templated = dispatcher.dispatch(call(state, "resources/read", {"uri": "notes://todo"}))
    assert templated["contents"][0]["text"] == "note todo"


def test_resource_not_found_per_era(dispatcher: Dispatcher, state: AppState) -> None:
    params = {"uri": "other://x"}
    handshake = error_of(dispatcher, call(state, "resources/read", params))
    assert (handshake.code, handshake.data) == (-32002, {"uri": "other://x"})
    stateless = error_of(dispatcher, call(state, "resources/read", params, STATELESS))
    assert (stateless.code, stateless.data) == (-32602, {"uri": "other://x"})


def test_prompts_and_completion(dispatcher: Dispatcher, state: AppState) -> None:
    listed = dispatcher.dispatch(call(state, "prompts/list"))
    assert listed["prompts"][0]["arguments"] == [
        {"name": "name", "description": "who to greet.", "required": True}
    ]
    rendered = dispatcher.dispatch(
        call(state, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    )
    assert rendered["messages"][0]["content"]["text"] == "Hello, Ada!"
    missing = error_of(dispatcher, call(state, "prompts/get", {"name": "greet"}))
    assert missing.code == -32602 and "name" in missing.message
    ref = {"type": "ref/prompt", "name": "greet"}
    done = dispatcher.dispatch(
        call(state, "completion/complete", {"ref": ref, "argument": {"name": "name", "value": "A"}})
    )
    assert done["completion"] == {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}


def test_a_completion_cut_to_100_values_has_more(dispatcher: Dispatcher, state: AppState) -> None:
    """Values past the 100 allowed are dropped: more exist, whatever the handler said."""
    values = [f"v{i}" for i in range(150)]
    dispatcher.registry.completions[("prompt", "greet", "name")] = (
        lambda name, value, context: {"values": values, "total": 150, "hasMore": False},
        None,
    )
    ref = {"type": "ref/prompt", "name": "greet"}
    done = dispatcher.dispatch(
        call(state, "completion/complete", {"ref": ref, "argument": {"name": "name", "value": "v"}})
    )
    assert done["completion"] == {"values": values[:100], "total": 150, "hasMore": True}


def test_methods_of_one_era_are_not_found_in_the_other(
    dispatcher: Dispatcher, state: AppState
) -> None:
    assert error_of(dispatcher, call(state, "ping", era=STATELESS)).code == -32601
    assert error_of(dispatcher, call(state, "server/discover")).code == -32601
    assert error_of(dispatcher, call(state, "nothing/here")).code == -32601


def test_stateless_results_are_shaped(dispatcher: Dispatcher, state: AppState) -> None:
    discovered = dispatcher.dispatch(call(state, "server/discover", era=STATELESS))
    assert discovered["supportedVersions"] == list(protocol.STATELESS_VERSIONS)
    assert discovered["instructions"] == "Use it well."
    assert set(discovered["capabilities"]) == {
        "logging",
        "tools",
        "resources",
        "prompts",
        "completions",
    }
    assert discovered["resultType"] == "complete"
    assert discovered["_meta"][protocol.META_SERVER_INFO] == {"name": "unit", "version": "1.0"}
    assert (discovered["ttlMs"], discovered["cacheScope"]) == (0, "private")
    handshake = dispatcher.dispatch(call(state, "tools/list"))
    assert "resultType" not in handshake and "_meta" not in handshake


def test_a_session_must_be_initialized(dispatcher: Dispatcher, state: AppState) -> None:
    record = SessionRecord(
        id="s1", protocol_version="2025-11-25", client_info={}, client_capabilities={}
    )
    assert state.backend.create_session(record, 10)
    refused = error_of(dispatcher, call(state, "tools/list", session=record))
    assert refused.code == -32600 and "notifications/initialized" in refused.message
    assert dispatcher.dispatch(call(state, "ping", session=record)) == {}
    record.initialized = True
    assert (
        dispatcher.dispatch(call(state, "logging/setLevel", {"level": "error"}, session=record))
        == {}
    )
    assert state.backend.get_session("s1").log_level == "error"  # type: ignore[union-attr]
    bad = error_of(dispatcher, call(state, "logging/setLevel", {"level": "loud"}, session=record))
    assert bad.code == -32602


# -- the runner without HTTP --------------------------------------------------------


class NoBackChannel:
    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        raise AssertionError("not asked")


def test_run_call_streams_messages_and_returns_the_response(
    server: Server, dispatcher: Dispatcher, state: AppState
) -> None:
    @server.tool()
    def count(to: int, ctx: Context) -> str:
        for step in range(to):
            ctx.progress(step + 1, to)
        return "counted"

    params = {"name": "count", "arguments": {"to": 2}, "_meta": {"progressToken": "p"}}
    a_call = call(state, "tools/call", params)
    channel: BackChannel = NoBackChannel()

    def context(run: RequestRun) -> Context:
        return Context(
            app=None, run=run, back_channel=channel, protocol_version=a_call.version,
            client_capabilities={}, client_info={}, meta=params["_meta"], log_level=None,
        )  # fmt: skip

    seen: list[dict[str, t.Any]] = []
    response = runner.run_to_completion(dispatcher, a_call, context=context, on_message=seen.append)
    assert response is not None and response["id"] == 7
    assert response["result"]["content"][0]["text"] == "counted"
    assert [m["params"]["progress"] for m in seen] == [1, 2]
    assert len(state.inflight) == 0


def test_run_call_of_a_method_without_user_code(dispatcher: Dispatcher, state: AppState) -> None:
    response = runner.run_to_completion(dispatcher, call(state, "ping"))
    assert response == {"jsonrpc": "2.0", "id": 7, "result": {}}
    failed = runner.run_to_completion(dispatcher, call(state, "tools/call", {"name": "missing"}))
    assert failed is not None and failed["error"]["code"] == -32602


def test_timeouts_answer_per_era() -> None:
    handshake = protocol.timeout_answer(HANDSHAKE, "prompts/get", 1, 2.0)
    assert handshake["error"]["code"] == -32001
    stateless = protocol.timeout_answer(STATELESS, "prompts/get", 1, 2.0)
    assert stateless["error"]["code"] == -32603
    tool = protocol.timeout_answer(STATELESS, "tools/call", 1, 2.0)["result"]
    assert tool["isError"] is True and tool["resultType"] == "complete"
    assert "resultType" not in protocol.timeout_answer(HANDSHAKE, "tools/call", 1, 2.0)["result"]
