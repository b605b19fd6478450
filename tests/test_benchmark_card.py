"""Every server of the realistic card and of the large-result benchmark answers every tool right.

``python -m benchmarks realistic`` and ``large`` compare Flask-MCP with FastMCP
4.1.6, the official SDK and a bare Flask view (the floor: ``apps/card_floor.py``
for the card, ``apps/large_floor_app.py`` for the large results) on the same
tools; a ratio means something only if each server does the same work and
answers correctly. These tests start each server (as the benchmarks do:
gunicorn, uvicorn), the card's local API and its seeded Redis, call each tool in
both protocol eras and check each result as the card's own load script does.
Nothing is timed.
"""

from __future__ import annotations

import json
import shutil
import sys
import typing as t
from pathlib import Path

import pytest
from harness import skip_or_fail

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import card  # noqa: E402
from benchmarks import client  # noqa: E402
from benchmarks import large  # noqa: E402
from benchmarks import realistic  # noqa: E402
from benchmarks.apps import card_data  # noqa: E402
from benchmarks.servers import Server  # noqa: E402
from benchmarks.servers import ServerSpec  # noqa: E402
from benchmarks.servers import start_all  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

#: The servers of the card, by label; the ASGI ones in each mode the benchmarks use.
CARD_SERVERS = (
    "flask_mcp/gevent",
    "floor/gevent",
    "fastmcp/json",
    "fastmcp/stateless-json",
    "sdk/json",
    "sdk/stateless-json",
)
ERAS = ("handshake", "2026")


@pytest.fixture(scope="module")
def world(redis_url: str) -> t.Iterator[card.World]:
    with card.world(None, redis_url) as found:
        yield found


@pytest.fixture(scope="module")
def servers(world: card.World) -> t.Iterator[dict[str, Server]]:
    specs: list[ServerSpec] = [
        card.flask_mcp_spec("flask_mcp/gevent", world),
        card.floor_spec("floor/gevent", world),
    ]
    for label in CARD_SERVERS[2:] + ("fastmcp/stateless-sse",):
        framework, mode = label.split("/")
        specs.append(card.asgi_spec(framework, mode, world))
    specs.append(
        ServerSpec(
            name="large_floor/gevent",
            kind="floor",
            runner="gunicorn",
            app=card.LARGE_FLOOR_APP,
            stateful=False,
        )
    )
    started = start_all(specs, None, timeout=card.START_TIMEOUT)
    try:
        yield {server.spec.name: server for server in started}
    finally:
        for server in started:
            server.stop()


def _session(server: Server, era: str) -> str | None:
    if era == "handshake" and server.spec.stateful:
        return client.initialize(server.url)
    return None


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("label", CARD_SERVERS)
def test_each_card_server_answers_each_tool_right(
    servers: dict[str, Server], world: card.World, label: str, era: str
) -> None:
    server = servers[label]
    session = _session(server, era)
    for edition, calls in card.EDITIONS.items():
        for i, call in enumerate(calls):
            problem = card.call_once(
                server.url,
                card.with_api(call, world.api_url),
                era=era,
                session_id=session,
                request_id=i + 1,
            )
            assert problem is None, f"{label} {era} {edition} {call.tool}: {problem}"


@pytest.mark.parametrize("era", ERAS)
def test_the_floor_takes_the_cards_preparation(
    servers: dict[str, Server], world: card.World, era: str
) -> None:
    """``realistic.prepare`` readies the floor as any server: stateless, every tool right."""
    server = servers["floor/gevent"]
    target = realistic.prepare(server, era, world, sessions=2)
    assert target.skipped is None, target.skipped
    assert target.sessions == [] and target.framework == "floor"
    # a client that runs the handshake anyway gets through, and is given no session
    assert client.initialize(server.url) is None


@pytest.mark.parametrize("era", ERAS)
def test_the_floor_answers_in_flask_mcps_shape(
    servers: dict[str, Server], world: card.World, era: str
) -> None:
    """Same result keys as Flask-MCP's for every tool; ``structuredContent`` is the text's JSON."""
    shapes = {}
    for label in ("flask_mcp/gevent", "floor/gevent"):
        server = servers[label]
        session = _session(server, era)
        for n, call in enumerate(card.FIRST_EDITION + card.SECOND_EDITION, start=1):
            call = card.with_api(call, world.api_url)
            reply = client.call_tool(
                server.url,
                call.tool,
                call.arguments_for(n),
                session_id=session,
                era=era,
                request_id=n,
            )
            answer = reply.response_to(n)
            assert answer is not None and "result" in answer, reply.body[:300]
            result = answer["result"]
            shapes[(label, call.tool)] = sorted(result)
            if "structuredContent" in result:
                assert result["structuredContent"] == card.text_of(result), (label, call.tool)
    for call in card.FIRST_EDITION + card.SECOND_EDITION:
        assert shapes[("floor/gevent", call.tool)] == shapes[("flask_mcp/gevent", call.tool)]
    assert "structuredContent" in shapes[("floor/gevent", "calculate_fibonacci")]


def test_the_floor_refuses_a_2026_call_whose_headers_differ(servers: dict[str, Server]) -> None:
    """As ``apps/floor_app.py``: the headers must repeat the body (400, -32020)."""
    params = client.stateless_params({"name": "calculate_fibonacci", "arguments": {"n": 10}})
    message = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params}
    headers = {
        "MCP-Protocol-Version": client.STATELESS_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "checkout",
    }
    reply = client.post(servers["floor/gevent"].url, message, headers)
    answer = reply.response_to(4)
    assert reply.status == 400 and answer is not None, reply.body[:300]
    assert answer["error"]["code"] == -32020, answer
    headers["Mcp-Name"] = "calculate_fibonacci"
    reply = client.post(servers["floor/gevent"].url, message, headers)
    assert client.check_call(reply, 4, ()) is None


def test_the_card_tools_do_their_io(servers: dict[str, Server], world: card.World) -> None:
    """A checkout goes through Redis: its order lands in the user's history on every server."""
    import redis

    db = redis.Redis.from_url(world.redis_url, decode_responses=True)
    previous, card_data.PREFIX = card_data.PREFIX, world.prefix
    try:
        key = card_data.history_key("user-00007")
        for n, label in enumerate(CARD_SERVERS, start=1):
            server = servers[label]
            before = db.llen(key)
            call = card.Call(
                "checkout",
                {"user_id": "user-00007", "items": card_data.CHECKOUT_ITEMS},
                (),
                lambda r: None,
            )
            reply = client.call_tool(
                server.url,
                call.tool,
                call.arguments,
                session_id=_session(server, "handshake"),
                request_id=n,
            )
            answer = reply.response_to(n)
            assert answer is not None and "result" in answer, reply.body[:300]
            found = card.text_of(answer["result"])
            assert db.llen(key) == before + 1, label
            assert found["rate_limit_count"] >= n, label
            assert found["server_type"] == label.split("/")[0].replace("_", "-"), found
    finally:
        card_data.PREFIX = previous
        db.close()


def test_a_wrong_argument_is_an_error_everywhere(servers: dict[str, Server]) -> None:
    """The card's range check holds on every server: fibonacci(41) is a tool error."""
    for label in CARD_SERVERS:
        server = servers[label]
        reply = client.call_tool(
            server.url, "calculate_fibonacci", {"n": 41}, session_id=_session(server, "handshake")
        )
        answer = reply.response_to(1)
        assert answer is not None, reply.body[:300]
        failed = "error" in answer or answer["result"].get("isError") is True
        assert failed, f"{label}: {answer}"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("label", ("flask_mcp/gevent", "large_floor/gevent", "fastmcp/json"))
@pytest.mark.parametrize("shape", ("structured", "text"))
def test_large_results_are_whole(
    servers: dict[str, Server], label: str, era: str, shape: str
) -> None:
    server = servers[label]
    session = _session(server, era)
    for size in ("1kb", "100kb"):
        call = large.call_for(shape, size)
        reply = client.call_tool(
            server.url, call.tool, call.arguments, session_id=session, era=era, request_id=3
        )
        assert client.check_call(reply, 3, ()) is None, reply.body[:300]
        answer = reply.response_to(3)
        assert answer is not None
        assert call.check(answer["result"]) is None
        assert len(reply.body) >= card_data.SIZES[size]


@pytest.mark.slow
def test_large_results_of_4_mb_are_the_same_json_everywhere(servers: dict[str, Server]) -> None:
    """Flask-MCP, the floor and FastMCP answer the same 4 MB payload."""
    payloads = []
    for label in ("flask_mcp/gevent", "large_floor/gevent", "fastmcp/json"):
        server = servers[label]
        reply = client.call_tool(
            server.url,
            "large_structured",
            {"size": "4mb"},
            session_id=_session(server, "handshake"),
        )
        answer = reply.response_to(1)
        assert answer is not None and len(reply.body) > 2 * card_data.SIZES["4mb"], label
        payloads.append(answer["result"]["structuredContent"])
        assert json.loads(answer["result"]["content"][0]["text"]) == payloads[-1], label
    assert payloads[0] == payloads[1] == payloads[2]


@pytest.mark.parametrize("label", ("flask_mcp/gevent", "fastmcp/stateless-sse"))
def test_the_progress_tool_streams_one_notification_then_the_result(
    servers: dict[str, Server], label: str
) -> None:
    server = servers[label]
    call = large.call_for("sse", "1kb")
    reply = client.call_tool(
        server.url,
        call.tool,
        call.arguments,
        session_id=_session(server, "handshake"),
        request_id=5,
        progress=True,
    )
    assert reply.headers["content-type"].startswith("text/event-stream"), reply.headers
    kinds = [m.get("method") for m in reply.messages]
    assert kinds.count("notifications/progress") == 1, kinds
    answer = reply.response_to(5)
    assert answer is not None and call.check(answer["result"]) is None


@pytest.mark.slow
def test_the_card_script_counts_a_wrong_answer(
    servers: dict[str, Server], world: card.World
) -> None:
    """``lua/card.lua`` judges each response by its tool: a right one passes, a wrong one counts."""
    if shutil.which("wrk") is None:
        skip_or_fail("needs wrk, which drives the card's script: apt-get install wrk")
    server = servers["flask_mcp/gevent"]
    mix = [card.with_api(call, world.api_url) for call in card.SECOND_EDITION]
    session = _session(server, "handshake")
    sessions = [session] if session else []
    good = card.drive_mix(
        server.url, mix, connections=2, seconds=1, sessions=sessions, era="handshake", core=None
    )
    assert good.requests > 0 and good.errors == 0, good.first_bad
    wrong = [
        mix[0],
        card.Call(mix[1].tool, mix[1].arguments, (card.field("item_count", "999"),), mix[1].check),
        mix[2],
    ]
    bad = card.drive_mix(
        server.url, wrong, connections=2, seconds=1, sessions=sessions, era="handshake", core=None
    )
    assert bad.bad_body > 0 and bad.bad_body < bad.requests, bad


@pytest.mark.parametrize(
    ("status", "body", "problem"),
    [
        (500, b"<!doctype html><title>500 Internal Server Error</title>", "HTTP 500: <!doctype"),
        (200, b"<!doctype html>not JSON", "not JSON: <!doctype html>not JSON"),
        (200, b"", "no response to id 7"),
    ],
)
def test_a_reply_that_is_not_a_result_is_a_problem_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, status: int, body: bytes, problem: str
) -> None:
    """A server answering a card call with an error page makes ``prepare`` skip it with
    the reason, instead of ending the whole benchmark with a JSONDecodeError."""
    reply = client.Reply(status, {"content-type": "application/json"}, body)
    monkeypatch.setattr(client, "call_tool", lambda *args, **kwargs: reply)
    found = card.call_once(
        "http://127.0.0.1:1/mcp", card.FIRST_EDITION[0], era="2026", session_id=None, request_id=7
    )
    assert found is not None and found.startswith(problem), found
