"""The stdio transport in process: a :class:`StdioServer` on a pair of pipes, both eras.

The end-to-end tests (``test_e2e_stdio.py``) start ``flask mcp stdio`` under the official
client; these drive the same server object line by line, fast.
"""

from __future__ import annotations

import json
import os
import time
import typing as t

import pytest
from flask import Flask
from wire import STDIO_INIT as INIT
from wire import Pipes
from wire import meta

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.errors import BackendUnavailable


@pytest.fixture
def pipes() -> t.Iterator[Pipes]:
    mcp = MCP(name="pipes", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool()
    def sample(prompt: str, ctx: Context) -> str:
        ctx.progress(1, 2)
        answer = ctx.create_message(
            [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=5
        )
        return f"model: {answer['content']['text']}"

    @mcp.tool()
    def stubborn(ctx: Context) -> str:
        """Ignores cancellation (a thread cannot be interrupted) and keeps reporting."""
        for step in range(4):
            ctx.progress(step, 4)
            time.sleep(0.1)
        return "finished anyway"

    @mcp.tool()
    def half() -> str:
        """Meets a session store outage after it began its work."""
        raise BackendUnavailable("Redis at here is unreachable")

    @mcp.tool()
    def hold(ctx: Context) -> str:
        """Runs until cancelled (or 10 seconds)."""
        deadline = time.monotonic() + 10
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        return "cancelled" if ctx.cancelled else "never cancelled"

    app = Flask("pipes")
    app.config["SECRET_KEY"] = "pipes"
    mcp.init_app(app)
    pipes = Pipes(app, mcp)
    yield pipes
    pipes.close()


def call(request_id: int, name: str, arguments: dict[str, t.Any], **extra: t.Any) -> t.Any:
    params = {"name": name, "arguments": arguments, **extra}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_handshake_round_trip_over_pipes(pipes: Pipes) -> None:
    assert pipes.handshake()["serverInfo"]["name"] == "pipes"
    pipes.send(call(1, "sample", {"prompt": "hi"}, _meta={"progressToken": "p"}))
    progress = pipes.receive()
    assert progress["method"] == "notifications/progress"
    request = pipes.receive()
    assert request["method"] == "sampling/createMessage"
    pipes.send(call(2, "add", {"a": 1, "b": 2}))  # answered while sample waits
    assert pipes.receive() == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "content": [{"type": "text", "text": '{"result":3}'}],
            "structuredContent": {"result": 3},
        },
    }
    text = {"type": "text", "text": "HI"}
    result = {"role": "assistant", "content": text, "model": "m"}
    pipes.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
    answer = pipes.receive()
    assert answer["id"] == 1 and answer["result"]["content"][0]["text"] == "model: HI"


def test_2026_round_trip_over_pipes(pipes: Pipes) -> None:
    caps = {"sampling": {}}
    pipes.send(call(1, "sample", {"prompt": "hi"}, _meta=meta(caps)))
    first = pipes.receive()
    assert first["result"]["resultType"] == "input_required"
    ((key, asked),) = first["result"]["inputRequests"].items()
    assert asked["method"] == "sampling/createMessage"
    text = {"type": "text", "text": "HI"}
    retry = call(
        2,
        "sample",
        {"prompt": "hi"},
        _meta=meta(caps),
        inputResponses={key: {"role": "assistant", "content": text, "model": "m"}},
        requestState=first["result"].get("requestState"),
    )
    pipes.send(retry)
    assert pipes.receive()["result"]["content"][0]["text"] == "model: HI"


def test_a_request_id_in_use_is_refused(pipes: Pipes) -> None:
    pipes.handshake()
    pipes.send(call(5, "sample", {"prompt": "x"}))
    assert pipes.receive()["method"] == "sampling/createMessage"
    pipes.send(call(5, "add", {"a": 1, "b": 1}))
    refused = pipes.receive()
    assert refused["id"] == 5 and "already in use" in refused["error"]["message"]
    pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    pipes.send(call(6, "add", {"a": 1, "b": 1}))
    assert pipes.receive()["id"] == 6  # nothing more came for the cancelled request


def test_a_malformed_response_is_answered_with_an_error_of_no_request(pipes: Pipes) -> None:
    """The error carries no id: id 5 is the server's request, not one of the client's."""
    pipes.send(INIT)
    pipes.receive()
    pipes.send({"jsonrpc": "2.0", "id": 5, "error": "x"})
    pipes.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
    refused = pipes.receive()
    assert refused["id"] is None and refused["error"]["code"] == -32600
    assert '"error" of a response must be an object' in refused["error"]["message"]
    assert pipes.receive() == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_progress_that_does_not_increase_is_skipped_over_stdio() -> None:
    mcp = MCP(name="steps", version="1")

    @mcp.tool()
    def steps(ctx: Context) -> str:
        for value in (5, 5, 6):
            ctx.progress(value)
        return "done"

    app = Flask("steps")
    app.config["SECRET_KEY"] = "steps"
    mcp.init_app(app)
    pipes = Pipes(app, mcp)
    try:
        pipes.handshake()
        pipes.send(call(1, "steps", {}, _meta={"progressToken": "p"}))
        sent = [pipes.receive(), pipes.receive(), pipes.receive()]
    finally:
        pipes.close()
    assert [m.get("params", {}).get("progress") for m in sent] == [5, 6, None]
    assert sent[2]["id"] == 1


def test_nothing_more_is_sent_for_a_cancelled_request(pipes: Pipes) -> None:
    pipes.handshake()
    pipes.send(call(1, "stubborn", {}, _meta={"progressToken": "s"}))
    assert pipes.receive()["params"]["progress"] == 0
    pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    time.sleep(0.6)  # the handler runs to its end meanwhile; what it sends is dropped
    pipes.send(call(2, "add", {"a": 1, "b": 1}))
    assert pipes.receive()["id"] == 2


def test_a_session_request_with_other_meta_stays_in_the_session(pipes: Pipes) -> None:
    pipes.handshake()
    task = {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}
    pipes.send(call(1, "add", {"a": 1, "b": 1}, _meta=task))
    answer = pipes.receive()
    assert answer["result"]["structuredContent"] == {"result": 2}
    assert "resultType" not in answer["result"]  # shaped for the handshake era


def test_batches_only_on_a_2025_03_26_session(pipes: Pipes) -> None:
    pipes.send([call(1, "add", {"a": 1, "b": 1})])
    refused = pipes.receive()
    assert refused["id"] is None and "2025-03-26" in refused["error"]["message"]
    old = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
    pipes.send(old)
    assert pipes.receive()["result"]["protocolVersion"] == "2025-03-26"
    pipes.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    pipes.send([call(1, "add", {"a": 1, "b": 1}), call(2, "add", {"a": 2, "b": 2})])
    answers = pipes.receive()
    texts = [answer["result"]["content"][0]["text"] for answer in answers]
    assert texts == ['{"result":2}', '{"result":4}']
    # A handler taking a Context runs with one: its progress is dropped (the batch is
    # answered at once), and it cannot ask the client, which the error says.
    pipes.send([call(3, "stubborn", {}), call(4, "sample", {"prompt": "hi"})])
    finished, refused = pipes.receive()
    assert finished["result"]["content"][0]["text"] == "finished anyway"
    assert refused["result"]["isError"] is True
    assert "JSON-RPC batch" in refused["result"]["content"][0]["text"]


def test_a_cancel_reaches_a_request_of_a_batch(pipes: Pipes) -> None:
    """As over HTTP, where the cancel comes in a POST of its own, the session cancels it."""
    old = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
    pipes.send(old)
    assert pipes.receive()["result"]["protocolVersion"] == "2025-03-26"
    pipes.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    pipes.send([call(1, "hold", {}), call(2, "add", {"a": 1, "b": 1})])
    time.sleep(0.2)
    pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    started = time.monotonic()
    answers = pipes.receive()
    assert [answer["id"] for answer in answers] == [2]  # the cancelled request is not answered
    assert time.monotonic() - started < 5


def test_a_batch_is_answered_when_the_backend_is_unreachable(
    pipes: Pipes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request refused before it started gets the error of HTTP's 503, which invites a
    retry, and one whose handler met the outage that of HTTP too, which does not. Over
    stdio the refusal said "retry later" in words of its own, without ``retryable``, and
    carried the backend's address and OS error (HTTP logs them)."""
    from flask_mcp.errors import store_unavailable
    from flask_mcp.runtime.settle import STORE_UNAVAILABLE_WHILE_RUNNING

    old = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
    pipes.send(old)
    assert pipes.receive()["result"]["protocolVersion"] == "2025-03-26"
    pipes.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    pipes.send(call(3, "half", {}))
    answer = pipes.receive(timeout=5)
    assert answer["error"]["message"] == STORE_UNAVAILABLE_WHILE_RUNNING
    assert answer["error"]["data"] == {"retryable": False}

    def down(*args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        raise BackendUnavailable("connection refused")

    monkeypatch.setattr(pipes.server.state.backend, "get_session", down)
    pipes.send([call(1, "add", {"a": 1, "b": 1})])
    answer = pipes.receive(timeout=5)
    assert answer == {"jsonrpc": "2.0", "id": None, "error": store_unavailable().to_error()}
    pipes.send(call(2, "add", {"a": 1, "b": 1}))
    answer = pipes.receive(timeout=5)
    assert answer == {"jsonrpc": "2.0", "id": 2, "error": store_unavailable().to_error()}
    monkeypatch.undo()


def test_initialize_over_stdio_runs_through_the_middleware() -> None:
    mcp = MCP(name="pipes", version="1")
    seen: list[str] = []

    @mcp.middleware
    def record(call: t.Any, call_next: t.Any) -> t.Any:
        seen.append(call.method)
        return call_next(call)

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = Flask(__name__)
    mcp.init_app(app)
    pipes = Pipes(app, mcp)
    try:
        assert pipes.handshake()["serverInfo"]["name"] == "pipes"
        call = {"name": "add", "arguments": {"a": 1, "b": 2}}
        pipes.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        assert pipes.receive()["result"]["structuredContent"] == {"result": 3}
        assert seen == ["initialize", "tools/call"]
    finally:
        pipes.close()


def test_listen_over_stdio_honours_the_callers_task_ids() -> None:
    """``notifications.taskIds`` is honoured over stdio as over HTTP: acknowledged, streamed."""
    mcp = MCP(name="pipes", version="1")

    @mcp.tool(task="optional")
    def work(ctx: Context) -> str:
        time.sleep(0.3)
        return "worked"

    app = Flask("pipes")
    app.config["SECRET_KEY"] = "pipes"
    mcp.init_app(app)
    pipes = Pipes(app, mcp)
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    try:
        pipes.send(call(1, "work", {}, _meta=meta(caps)))
        task_id = pipes.receive()["result"]["taskId"]
        wanted = {"taskIds": [task_id, "someone-elses-task"]}
        listen = {"notifications": wanted, "_meta": meta(caps)}
        pipes.send({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": listen})
        ack = pipes.receive()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        update = pipes.receive()
        assert update["method"] == "notifications/tasks"
        assert update["params"]["taskId"] == task_id
        assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 2
        cancel = {"requestId": 2}
        pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    finally:
        pipes.close()


def test_closing_stdin_ends_the_listens_without_a_message(pipes: Pipes) -> None:
    """Closing stdin ends the session, and the listens open then end with it: nothing
    more is written for them (``basic/patterns/subscriptions.mdx``: a subscription ends
    with its transport; the ``notifications/cancelled`` of ``cancellation.mdx`` is for a
    server tearing one down, ``tests/test_e2e_stdio.py``). One the client cancelled gets
    nothing more either.
    """
    for listen_id in ("kept", "dropped"):
        params = {"notifications": {"toolsListChanged": True}, "_meta": meta()}
        listen = {"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen"}
        pipes.send({**listen, "params": params})
        assert pipes.receive()["method"] == "notifications/subscriptions/acknowledged"
    cancel = {"requestId": "dropped"}
    pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    pipes.to_server.close()  # how a client shuts its server down
    pipes.thread.join(10)
    pipes.server.stdout.close()
    assert [json.loads(line) for line in pipes.from_server] == []


def test_initialize_over_stdio_runs_in_a_request_context() -> None:
    """A middleware that uses ``g`` and ``current_app`` answers ``initialize`` over stdio too.

    The other requests ran in a request context, ``initialize`` did not: such a
    middleware failed it with -32603, and the client could never start a session.
    """
    from flask import current_app
    from flask import g
    from flask import request

    mcp = MCP(name="pipes", version="1")
    seen: list[tuple[str, str, str]] = []

    @mcp.middleware
    def record(call: t.Any, call_next: t.Any) -> t.Any:
        g.method = call.method
        seen.append((call.method, current_app.name, request.path))
        return call_next(call)

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = Flask("pipes")
    mcp.init_app(app)
    pipes = Pipes(app, mcp)
    try:
        assert pipes.handshake()["serverInfo"]["name"] == "pipes"
        pipes.send(call(1, "add", {"a": 1, "b": 2}))
        assert pipes.receive()["result"]["structuredContent"] == {"result": 3}
        assert seen == [("initialize", "pipes", "/mcp"), ("tools/call", "pipes", "/mcp")]
    finally:
        pipes.close()


def tenant_app() -> tuple[Flask, MCP]:
    """An app whose endpoint is per tenant (``/t/<tenant>/mcp``); its tool tells which."""
    from flask import request

    mcp = MCP(name="tenants", version="1")

    @mcp.tool()
    def where(ctx: Context) -> dict[str, t.Any]:
        return {"path_args": ctx.path_args, "view_args": request.view_args, "path": request.path}

    app = Flask("tenants")
    app.config.update(SECRET_KEY="tenants", MCP_PATH="/t/<tenant>/mcp")
    mcp.init_app(app)
    return app, mcp


ACME = {"path_args": {"tenant": "acme"}, "view_args": {"tenant": "acme"}, "path": "/t/acme/mcp"}


def test_a_tenants_endpoint_over_stdio_in_both_eras() -> None:
    """The path chosen gives every call its ``path_args`` and ``request.view_args``, as the
    URL does over HTTP; the handshake-era session belongs to it, as over HTTP.

    The request context was built from the rule's text: ``view_args`` were
    ``{'tenant': '<tenant>'}`` and ``ctx.path_args`` ``{}``.
    """
    app, mcp = tenant_app()
    pipes = Pipes(app, mcp, path="/t/acme/mcp")
    try:
        pipes.send(call(1, "where", {}, _meta=meta()))
        assert pipes.receive()["result"]["structuredContent"] == ACME
        assert pipes.handshake()["serverInfo"]["name"] == "tenants"
        pipes.send(call(2, "where", {}))
        assert pipes.receive()["result"]["structuredContent"] == ACME
        session_id = pipes.server.session_id
        assert session_id is not None
        record = mcp.state(app).backend.get_session(session_id)
        assert record is not None and record.path_args == {"tenant": "acme"}
    finally:
        pipes.close()


def test_a_tenants_endpoint_needs_its_path_over_stdio() -> None:
    from flask_mcp.transport.path_args import EndpointError
    from flask_mcp.transport.stdio import StdioServer

    app, mcp = tenant_app()
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stdin, os.fdopen(write, "wb") as stdout:
        with pytest.raises(EndpointError, match=r"URL variables \(tenant\)") as missing:
            StdioServer(mcp.dispatcher, mcp.state(app), stdin, stdout)
        assert missing.value.example == "/t/TENANT/mcp"
        for wrong in ("/t/acme/other", "/mcp", "t/acme/mcp"):
            with pytest.raises(EndpointError, match="is not a path of the MCP endpoint"):
                StdioServer(mcp.dispatcher, mcp.state(app), stdin, stdout, path=wrong)


def test_a_cancel_that_crosses_the_answer_leaves_nothing_behind(pipes: Pipes) -> None:
    """A cancel read just as its request ends (the reader found it running) keeps no id."""
    pipes.handshake()
    pipes.send(call(1, "stubborn", {}, _meta={"progressToken": "s"}))
    assert pipes.receive()["params"]["progress"] == 0
    running = pipes.server.active[1]  # what the reader looks up for a cancel of id 1
    while pipes.receive().get("id") != 1:  # the request ends and is answered
        pass
    pipes.server._cancel(running)  # the reader's cancel, a moment too late
    assert pipes.server.cancel_requested == set()
