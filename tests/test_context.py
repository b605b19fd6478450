"""The handler's Context alone: messages go to the run's outbox, without HTTP or Flask."""

from __future__ import annotations

import logging
import time
import typing as t

import pytest
from wire import ThreadedTestClient
from wire import make_app
from wire import post
from wire import rpc
from wire import sse_messages

from flask_mcp import MCP
from flask_mcp import CapabilityNotDeclared
from flask_mcp import Context
from flask_mcp import RequestCancelled
from flask_mcp.errors import BackendUnavailable
from flask_mcp.errors import MissingClientCapability
from flask_mcp.runtime.runs import InProcessOutbox
from flask_mcp.runtime.runs import RequestRun


class Refuse:
    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        raise AssertionError("no request expected")


def make(
    version: str = "2025-11-25",
    capabilities: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
    log_level: str | None = "info",
) -> tuple[Context, InProcessOutbox, RequestRun]:
    outbox = InProcessOutbox("s")
    run = RequestRun(None, 3, "tools/call", outbox, time.monotonic() + 60)
    ctx = Context(
        app=None,
        run=run,
        back_channel=Refuse(),
        protocol_version=version,
        client_capabilities=capabilities or {},
        client_info={"name": "unit", "version": "1"},
        meta=meta or {},
        log_level=log_level,
    )
    return ctx, outbox, run


def messages(outbox: InProcessOutbox) -> list[dict[str, t.Any]]:
    return [event.message for event in outbox.read(0, 1, 0.0).events if event.message]


def test_progress_needs_a_token_and_goes_to_the_outbox() -> None:
    ctx, outbox, _ = make()
    ctx.progress(1, 2)
    assert messages(outbox) == []
    ctx, outbox, _ = make(meta={"progressToken": "tok"})
    ctx.progress(1, 2, "half")
    assert messages(outbox) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"},
        }
    ]


def test_progress_that_does_not_increase_is_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    ctx, outbox, _ = make(meta={"progressToken": "tok"})
    for value in (5, 5, 4, 6, 6):
        ctx.progress(value)
    assert [m["params"]["progress"] for m in messages(outbox)] == [5, 6]
    (warning,) = caplog.records  # once per call, not once per skipped value
    assert warning.levelname == "WARNING"
    assert "ctx.progress(5) was not reported" in warning.getMessage()
    assert "Pass a larger value each time" in warning.getMessage()


def test_log_messages_below_the_client_level_are_dropped() -> None:
    ctx, outbox, _ = make(log_level="warning")
    ctx.info("quiet")
    ctx.error("loud")
    assert [m["params"]["data"] for m in messages(outbox)] == ["loud"]
    with pytest.raises(ValueError, match="Unknown log level"):
        ctx.log("chatty", "x")


def test_capabilities_are_checked_per_era() -> None:
    ctx, _, _ = make()
    with pytest.raises(CapabilityNotDeclared):
        ctx.list_roots()
    stateless, _, _ = make(version="2026-07-28")
    with pytest.raises(MissingClientCapability) as info:
        stateless.create_message([], 10)
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"sampling": {}}}


def test_cancellation_and_facts() -> None:
    ctx, _, run = make()
    assert (ctx.request_id, ctx.session_id, ctx.cancelled) == (3, None, False)
    ctx.check_cancelled()
    run.cancel()
    assert ctx.cancelled
    with pytest.raises(RequestCancelled):
        ctx.check_cancelled()


def test_closing_a_stream_that_cannot_be_resumed_does_nothing() -> None:
    ctx, outbox, _ = make()
    ctx.close_sse_stream()
    assert messages(outbox) == []


class DownOutbox(InProcessOutbox):
    """A resumable stream whose session store is down: every write fails."""

    resumable = True

    def emit(self, message: dict[str, t.Any]) -> None:
        raise BackendUnavailable("Redis at 127.0.0.1:6379/0 is unreachable")

    def disconnect(self) -> None:
        raise BackendUnavailable("Redis at 127.0.0.1:6379/0 is unreachable")


def test_notifications_the_store_cannot_take_are_dropped_and_the_handler_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Progress, log messages and other notifications need no answer: during an outage
    they are dropped with one warning per request. They used to raise
    ``BackendUnavailable``, which ended the call with an error after its handler had run
    in part."""
    caplog.set_level(logging.DEBUG, "flask_mcp")
    ctx, _, run = make(meta={"progressToken": "tok"}, log_level="debug")
    run.outbox = DownOutbox("s")
    run.can_round_trip = True
    ctx.progress(1, 3, "one")
    ctx.info("halfway")
    ctx.log("error", {"detail": "x"})
    ctx.send_notification("notifications/resources/updated", {"uri": "file:///a"})
    ctx.progress(2, 3)
    ctx.close_sse_stream()
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, caplog.records  # once per request, not per notification
    text = warnings[0].getMessage()
    assert "Dropped notifications/progress (request id 3)" in text, text
    assert "session store is unavailable" in text and "handler goes on" in text, text
    assert sum(r.levelname == "DEBUG" for r in caplog.records if r.name == "flask_mcp") == 5


def test_a_client_request_that_times_out_is_cancelled_on_the_client() -> None:
    """A request to the client unanswered within ``MCP_CLIENT_REQUEST_TIMEOUT``: the server
    stops waiting and, as the lifecycle's timeouts say it SHOULD, tells the client with
    ``notifications/cancelled`` (a roots or elicitation request left pending there)."""
    mcp = MCP(name="asks", version="1")

    @mcp.tool()
    def roots(ctx: Context) -> str:
        return str(ctx.list_roots())

    app = make_app(mcp, MCP_CLIENT_REQUEST_TIMEOUT=0.5)
    client = ThreadedTestClient(app, app.response_class)
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = post(client, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    session = opened.headers["Mcp-Session-Id"]
    post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    sent = sse_messages(rpc(client, session, "tools/call", {"name": "roots", "arguments": {}}))
    asked = next(m for m in sent if m.get("method") == "roots/list")
    cancels = [m["params"] for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancels and cancels[0]["requestId"] == asked["id"], sent
    assert "MCP_CLIENT_REQUEST_TIMEOUT" in sent[-1]["result"]["content"][0]["text"], sent[-1]
