"""SSE streams over the Flask test client: GET stream, resumption, signals, back-channel rules."""

from __future__ import annotations

import json
import threading
import time
import typing as t

import pytest
from flask import Flask
from wire import HEADERS
from wire import ThreadedTestClient
from wire import initialize
from wire import open_get
from wire import post
from wire import read_events
from wire import rpc
from wire import sse_messages

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import URLElicitationRequired
from flask_mcp import signals


def test_broadcast_reaches_get_stream_and_waits_for_it(
    client: t.Any, app: t.Any, mcp_server: MCP
) -> None:
    session = initialize(client)
    mcp_server.broadcast("notifications/message", {"level": "info", "data": "before GET"})
    response = open_get(client, session)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    chunks = iter(response.response)
    first = read_events(chunks, 1)
    assert first[0]["params"]["data"] == "before GET"
    mcp_server.broadcast("notifications/message", {"level": "info", "data": "live"})
    assert read_events(chunks, 1)[0]["params"]["data"] == "live"
    response.close()


def test_list_changed_reaches_get_stream(client: t.Any, app: t.Any, mcp_server: MCP) -> None:
    session = initialize(client)
    response = open_get(client, session)
    chunks = iter(response.response)
    mcp_server.add_tool(lambda: "new", name="new_tool", description="added at runtime")
    assert read_events(chunks, 1)[0]["method"] == "notifications/tools/list_changed"
    response.close()


def test_resource_updated_only_for_subscribers(client: t.Any, app: t.Any, mcp_server: MCP) -> None:
    watcher = initialize(client)
    other = initialize(client)
    assert (
        rpc(client, watcher, "resources/subscribe", {"uri": "test://static"}).get_json()["result"]
        == {}
    )
    with app.app_context():
        mcp_server.notify_resource_updated("test://static")
    backend = mcp_server.state(app).backend
    assert backend.get_cursor(watcher, "g") == 0
    watched = read_events(iter(open_get(client, watcher).response), 1)
    assert watched[0]["params"] == {"uri": "test://static"}
    assert backend.first_seq(other, "g") in (None, 1)


def test_last_event_id_errors(client: t.Any) -> None:
    session = initialize(client)
    assert open_get(client, session, "garbage").status_code == 400
    assert open_get(client, session, "nosuchstream-3").status_code == 400
    assert open_get(client, session, "g-0.not-a-tag").status_code == 400
    other = initialize(client)
    response = rpc(client, other, "tools/call", {"name": "chatty"})
    foreign_id = response.get_data(as_text=True).split("\n", 1)[0][4:]
    assert open_get(client, session, foreign_id).status_code == 400


def test_resume_replays_missed_events(app: t.Any, two_phase: threading.Event) -> None:
    client = app.test_client()
    session = initialize(client)
    response = rpc(client, session, "tools/call", {"name": "two_phase"})
    text = response.get_data(as_text=True)
    ids = [line[4:] for line in text.splitlines() if line.startswith("id: ")]
    assert "phase 1" in text and "complete" not in text
    two_phase.set()
    resumed = open_get(client, session, ids[-1])
    events = read_events(iter(resumed.response), 2)
    assert events[0]["params"]["data"] == "phase 2"
    assert events[1]["result"]["content"][0]["text"] == "complete"


def test_too_old_event_id_is_gone(app: t.Any, mcp_server: MCP) -> None:
    @mcp_server.tool()
    def noisy(ctx: Context) -> str:
        """Emit more events than the buffer keeps."""
        for index in range(20):
            ctx.log("info", f"event {index}")
        return "done"

    object.__setattr__(mcp_server.state(app).settings, "sse_buffer_events", 5)
    mcp_server.state(app).backend.buffer_size = 5  # type: ignore[attr-defined]
    client = app.test_client()
    session = initialize(client)
    text = rpc(client, session, "tools/call", {"name": "noisy"}).get_data(as_text=True)
    first_id = [line[4:] for line in text.splitlines() if line.startswith("id: ")][1]
    # the stream completed and was dropped; an id that was never this session's is refused
    assert open_get(client, session, first_id).status_code in (400, 410)


def test_url_elicitation_required_error(client: t.Any, mcp_server: MCP) -> None:
    @mcp_server.tool()
    def needs_login() -> str:
        """Needs an out-of-band login."""
        raise URLElicitationRequired(
            [
                {
                    "mode": "url",
                    "elicitationId": "e1",
                    "url": "https://example.com/login",
                    "message": "Log in",
                }
            ]
        )

    session = initialize(client)
    error = rpc(client, session, "tools/call", {"name": "needs_login"}).get_json()["error"]
    assert error["code"] == -32042
    assert error["data"]["elicitations"][0]["elicitationId"] == "e1"


def test_back_channel_needs_declared_capability(client: t.Any, mcp_server: MCP) -> None:
    @mcp_server.tool()
    def wants_sampling(ctx: Context) -> str:
        """Try to sample without the capability."""
        ctx.create_message([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
        return "unreachable"

    session = initialize(client)
    response = rpc(client, session, "tools/call", {"name": "wants_sampling"})
    messages = (
        sse_messages(response)
        if response.mimetype == "text/event-stream"
        else [response.get_json()]
    )
    assert [m for m in messages if "method" in m] == []  # nothing went on the wire
    result = messages[-1]["result"]
    assert result["isError"] and "sampling" in result["content"][0]["text"]


def test_failing_signal_receiver_does_not_break_a_stream(client: t.Any, app: t.Any) -> None:
    seen: list[str] = []

    def broken(sender: t.Any, **kwargs: t.Any) -> None:
        raise RuntimeError("receiver failure")

    def recorder(sender: t.Any, **kwargs: t.Any) -> None:
        seen.append(kwargs.get("method", "?"))

    with (
        signals.notification_sent.connected_to(broken, app),
        signals.notification_sent.connected_to(recorder, app),
    ):
        session = initialize(client)
        messages = sse_messages(
            rpc(client, session, "tools/call", {"name": "chatty", "_meta": {"progressToken": 1}})
        )
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    assert seen == ["notifications/progress", "notifications/message"]


def test_signals_for_streams_and_cancellation(client: t.Any, app: t.Any, mcp_server: MCP) -> None:
    started = threading.Event()

    @mcp_server.tool()
    def wait_forever(ctx: Context) -> str:
        """Wait until cancelled."""
        ctx.log("info", "started")
        started.set()
        while not ctx.cancelled:
            time.sleep(0.01)
        return "cancelled"

    events: list[tuple[str, dict[str, t.Any]]] = []
    names = ("stream_opened", "stream_closed", "request_cancelled")
    receivers = {name: (lambda sender, _n=name, **kw: events.append((_n, kw))) for name in names}
    for name, receiver in receivers.items():
        getattr(signals, name).connect(receiver, app)
    try:
        session = initialize(client)
        body = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "wait_forever"},
        }
        response = client.post(
            "/mcp",
            data=json.dumps(body),
            headers={**HEADERS, "Mcp-Session-Id": session},
            buffered=False,
        )
        chunks = iter(response.response)
        assert read_events(chunks, 1)[0]["params"]["data"] == "started"
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 99},
        }
        assert post(client, cancel, session).status_code == 202
        rest = b"".join(chunks)
        assert b'"id":99' not in rest  # no response after a cancel
        response.close()
    finally:
        for name, receiver in receivers.items():
            getattr(signals, name).disconnect(receiver, app)
    kinds = [name for name, _ in events]
    assert "stream_opened" in kinds and "request_cancelled" in kinds and "stream_closed" in kinds


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_priming_only_from_2025_11_25(client: t.Any, version: str) -> None:
    session = initialize(client, version)
    text = rpc(client, session, "tools/call", {"name": "chatty"}).get_data(as_text=True)
    first_event = text.split("\n\n", 1)[0]
    assert ("retry:" in first_event) == (version == "2025-11-25")
    assert all(line.startswith("id: ") for line in text.split("\n\n")[0:1])


def test_a_handler_that_cannot_start_leaves_no_stream(
    client: t.Any, app: t.Any, mcp_server: MCP, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose handler cannot be started (no thread left) fails, and leaves neither its
    stream nor its stream slot behind: nobody would ever write that stream. Nor does it
    stay among the running requests, where it kept its session busy, so never reaped."""
    from flask_mcp.runtime import concurrency

    def cannot_start(fn: t.Callable[[], None]) -> t.Any:
        raise RuntimeError("can't start new thread")

    session = initialize(client)
    before = mcp_server.stats(app)
    monkeypatch.setattr(concurrency, "spawn", cannot_start)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        rpc(client, session, "tools/call", {"name": "chatty", "arguments": {}})
    monkeypatch.undo()
    after = mcp_server.stats(app)
    assert (after["streams"], after["open_streams"]) == (before["streams"], before["open_streams"])
    assert after["running_requests"] == before["running_requests"]
    record = mcp_server.state(app).backend.get_session(session)
    assert record is not None and record.busy == 0
    messages = sse_messages(rpc(client, session, "tools/call", {"name": "chatty", "arguments": {}}))
    assert messages[-1]["result"]["content"][0]["text"] == "done"


def test_a_get_stream_ended_by_the_sessions_delete_says_the_session_ended(
    mcp_server: MCP, backend_config: dict[str, t.Any]
) -> None:
    """The client's DELETE ends its GET stream: ``stream_closed`` said ``superseded``, as if
    another GET had taken the stream over, and a monitor could not tell the two apart."""
    app = Flask("streams")
    app.config.update(TESTING=True, SECRET_KEY="s", **backend_config)
    app.test_client_class = ThreadedTestClient
    mcp_server.init_app(app)
    client = app.test_client()
    closed: list[dict[str, t.Any]] = []

    def on_closed(sender: t.Any, **kwargs: t.Any) -> None:
        closed.append(kwargs)

    signals.stream_closed.connect(on_closed, app)
    try:
        taken_over = initialize(client)
        first = open_get(client, taken_over)
        second = open_get(client, taken_over)  # takes the GET stream over
        assert b"".join(first.response) is not None
        first.close()
        deleted = initialize(client)
        response = open_get(client, deleted)
        chunks = iter(response.response)
        next(chunks)  # the priming event: the stream is open
        reading = threading.Thread(target=lambda: b"".join(chunks))
        reading.start()  # reading, or about to read, when the DELETE comes
        assert client.delete("/mcp", headers={"Mcp-Session-Id": deleted}).status_code == 204
        reading.join(10)
        assert not reading.is_alive()
        response.close()
        second.close()
    finally:
        signals.stream_closed.disconnect(on_closed, app)
    reasons = {(c["session_id"], c["reason"]) for c in closed}
    assert (taken_over, "superseded") in reasons
    assert (deleted, "session-ended") in reasons, closed
