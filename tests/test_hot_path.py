"""The shortcuts of the tools/call hot path build what the general code builds."""

from __future__ import annotations

import socket
import threading
import typing as t

import gevent
import pytest
from flask import Response
from wire import Wire
from wire import make_app

from flask_mcp import MCP
from flask_mcp import content
from flask_mcp.kernel import intake
from flask_mcp.protocol import header_mirror
from flask_mcp.runtime import concurrency
from flask_mcp.runtime.runs import InFlight
from flask_mcp.runtime.runs import InlineOutbox
from flask_mcp.runtime.runs import PendingReads
from flask_mcp.runtime.runs import RequestRun
from flask_mcp.testing import MCPTestClient
from flask_mcp.transport import responses


def test_json_response_is_built_directly_with_this_werkzeug() -> None:
    # False would mean the installed Werkzeug builds its responses differently: the
    # constructor is used then, correct but slower. Look at responses._direct.
    assert responses._BUILT_DIRECTLY


@pytest.mark.parametrize("status", [200, 400, 403, 429, 499, 503])
def test_direct_json_response_equals_the_constructors(status: int) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "result": {"text": "é"}}
    direct = responses.json_response(body, status)
    built = Response(
        b'{"jsonrpc":"2.0","id":7,"result":{"text":"\xc3\xa9"}}',
        status=status,
        content_type="application/json",
    )
    assert type(direct) is Response
    assert direct.status == built.status
    assert direct.status_code == status
    assert list(direct.headers.items()) == list(built.headers.items())
    assert direct.get_data() == built.get_data()
    direct.headers["X-Added"] = "1"  # each response has headers of its own
    assert "X-Added" not in responses.json_response(body, status).headers


def test_json_response_with_headers_uses_the_constructor() -> None:
    response = responses.json_response({"a": 1}, 429, {"Retry-After": "2"})
    assert response.status == "429 TOO MANY REQUESTS"
    assert response.headers["Retry-After"] == "2"
    assert response.headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("tools/call", True),
        ("add", True),
        (" add", False),
        ("add ", False),
        ("a\tb", False),
        ("é", False),
        ("=?base64?YWRk?=", False),
    ],
)
def test_mirrors_body_remembers_only_plain_values(value: str, plain: bool) -> None:
    environ = {
        "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28",
        "HTTP_MCP_METHOD": "tools/call",
        "HTTP_MCP_NAME": value,
    }
    for _ in range(2):  # the second time from the memo, when it was remembered
        assert header_mirror.mirrors_body(environ, "tools/call", "2026-07-28", value) is plain
    assert (value in header_mirror._PLAIN) is plain


def test_mirrors_body_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(header_mirror, "_PLAIN", set())
    monkeypatch.setattr(header_mirror, "_PLAIN_LIMIT", 3)
    for n in range(10):
        environ = {
            "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28",
            "HTTP_MCP_METHOD": "tools/call",
            "HTTP_MCP_NAME": f"tool{n}",
        }
        assert header_mirror.mirrors_body(environ, "tools/call", "2026-07-28", f"tool{n}")
    assert len(header_mirror._PLAIN) == 3


def test_inflight_lock_is_shared_by_threads() -> None:
    table = InFlight()
    runs = [RequestRun(None, n, "tools/call", InlineOutbox(), 0.0) for n in range(400)]

    def churn(part: list[RequestRun]) -> None:
        for run in part:
            table.add(run)
            table.overdue(1.0)
            table.remove(run)

    threads = [threading.Thread(target=churn, args=(runs[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(table) == 0


def test_a_read_ended_by_the_supervisor_is_taken_from_its_reader() -> None:
    """The body-read watch takes no lock: whichever of the reader and the supervisor
    removes an entry first has it; the supervisor shuts that connection's read side."""
    stalled, peer = socket.socketpair()
    fresh, fresh_peer = socket.socketpair()
    reads = PendingReads()
    old, new = (stalled, 100.0), (fresh, 159.5)
    reads.reading.update({old, new})
    try:
        assert reads.end_stalled(now=160.0, timeout=60) == 1
        assert reads.reading == {new}
        assert stalled.recv(10) == b""  # the read ended, as a stalled body's does
        assert reads.ended(old) and not reads.ended(new)
        assert reads.finish(old) is True  # how the reader learns it was cut: a 408
        assert reads.finish(new) is False  # read in time
        assert reads.reading == set()
        assert reads.end_stalled(now=1000.0, timeout=60) == 0
    finally:
        for sock in (stalled, peer, fresh, fresh_peer):
            sock.close()


def test_let_others_run_yields_once_a_greenlet_comes_back_in_one_loop_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(concurrency, "_gevent_sleep", gevent.sleep)  # as under patching
    monkeypatch.setattr(concurrency, "_last_turn", (0, -1))
    turns: list[str] = []

    def handler() -> None:
        task = concurrency.CurrentGreenlet()
        other = gevent.spawn(turns.append, "other")
        concurrency.let_others_run(task)  # the first call in this iteration: no yield
        turns.append("first")
        concurrency.let_others_run(task)  # the same greenlet again: the other runs first
        turns.append("second")
        other.join()
        gevent.sleep(0.001)  # waiting for a timer polls the loop, as waiting for a socket does
        late = gevent.spawn(turns.append, "late")
        concurrency.let_others_run(task)  # a new iteration: the others had their turn
        turns.append("third")
        late.join()

    gevent.spawn(handler).join()
    assert turns == ["first", "other", "second", "third", "late"]


def test_let_others_run_always_yields_without_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "_gevent_sleep", gevent.sleep)
    turns: list[str] = []

    def handler() -> None:
        other = gevent.spawn(turns.append, "other")
        concurrency.let_others_run()
        turns.append("handler")
        other.join()

    gevent.spawn(handler).join()
    assert turns == ["other", "handler"]


def test_let_others_run_does_nothing_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "_gevent_sleep", None)
    monkeypatch.setattr(concurrency, "gevent_active", lambda: False)
    slept: list[t.Any] = []
    monkeypatch.setattr(concurrency, "_import_gevent_sleep", lambda: slept.append)
    concurrency.let_others_run(concurrency.CurrentThread())
    assert slept == []


@pytest.mark.parametrize(
    ("length", "encoding"),
    [
        ("289", None),
        ("0", None),
        ("0007", None),
        ("", None),
        (None, None),
        ("-5", None),
        ("+5", None),
        (" 12 ", None),
        ("1_0", None),
        ("１２", None),  # fullwidth digits: str.isdigit() says yes, HTTP says no
        ("²", None),
        ("abc", None),
        ("12", "chunked"),
        ("12", "gzip"),
        ("12", "gzip, chunked"),
        (None, "chunked"),
    ],
)
def test_content_length_reads_what_werkzeug_reads(length: str | None, encoding: str | None) -> None:
    from werkzeug.wsgi import get_content_length

    from flask_mcp.transport import views

    environ: dict[str, t.Any] = {}
    if length is not None:
        environ["CONTENT_LENGTH"] = length
    if encoding is not None:
        environ["HTTP_TRANSFER_ENCODING"] = encoding
    assert views._content_length(environ) == get_content_length(environ)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        {"result": 8888888},
        {"result": -(10**30)},
        {"result": 0},
        {"result": True},  # a bool is not an int here: the encoder writes it
        {"result": 1.5},
        {"result": "text"},
        {"résultat": 1},  # not ASCII: the encoder escapes nothing, but decides
        {"a b": 1},  # not an identifier
        {"_x1": 2},
        {"a": 1, "b": 2},
        {},
        [1, 2],
    ],
)
def test_json_text_writes_what_the_encoder_writes(data: t.Any) -> None:
    assert content.json_text(data) == content._text_encoder.encode(data)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tool names of the calls :func:`intake.context_for` built a factory for."""
    names: list[str] = []
    factory = intake.context_for

    def counting(call: t.Any, *args: t.Any) -> t.Any:
        names.append(call.params["name"])
        return factory(call, *args)

    monkeypatch.setattr(intake, "context_for", counting)
    return names


def test_inline_first_round_builds_no_context_factory(mcp_server: MCP, built: list[str]) -> None:
    """``add`` runs inline; ``chatty`` may emit, so it is spawned with a Context."""
    wire = Wire(make_app(mcp_server))
    status, message, _ = wire.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert status == 200 and message["result"]["structuredContent"] == {"result": 5}
    assert message["result"]["content"] == [{"type": "text", "text": '{"result":5}'}]
    assert built == []
    status, message, _ = wire.call("tools/call", {"name": "chatty", "arguments": {}})
    assert status == 200 and message["result"]["content"][0]["text"] == "done"
    assert built == ["chatty"]


def test_handshake_inline_call_builds_no_context_factory(mcp_server: MCP, built: list[str]) -> None:
    """In the handshake era too, a handler that runs inline costs no context factory."""
    with MCPTestClient(make_app(mcp_server)) as client:
        result = client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"result": 5}
        assert built == []
        assert client.call_tool("chatty")["content"][0]["text"] == "done"
        assert built == ["chatty"]
