"""Rate limits (``flask_mcp.contrib.ratelimit``): 429 and Retry-After in both eras, and one
global count across 4 gevent workers sharing Redis."""

from __future__ import annotations

import collections
import concurrent.futures
import json
import re
import typing as t
import uuid

import httpx
import pytest
import redis
from flask import Flask
from harness import GUNICORN_READY_ARGS
from harness import raised_within
from harness import silent_peer
from harness import start_server
from harness import wait_for_workers_ready
from limits import parse_many
from wire import V2026
from wire import Wire
from wire import initialize
from wire import post

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import RateLimited
from flask_mcp.contrib.ratelimit import REDIS_TIMEOUTS
from flask_mcp.contrib.ratelimit import RateLimiter
from flask_mcp.errors import RATE_LIMITED
from flask_mcp.testing import MCPTestClient


def make(**config: t.Any) -> tuple[MCP, RateLimiter, Flask]:
    mcp = MCP(name="limited", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    @mcp.tool()
    def talk(ctx: Context) -> str:
        ctx.log("info", "talking")
        return "said"

    @mcp.tool()
    def other() -> str:
        return "other"

    limiter = RateLimiter(mcp, key_prefix=f"t-{uuid.uuid4().hex[:8]}")
    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s", **config)
    mcp.init_app(app)
    return mcp, limiter, app


@pytest.mark.parametrize("tool", ["add", "talk"])  # inline and spawned handlers
def test_handshake_era_answers_429_with_retry_after(tool: str) -> None:
    _, limiter, app = make()
    limiter.limit("2/minute", per="tool", tools=[tool])
    client = app.test_client()
    session = initialize(client)
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": tool}}
    if tool == "add":
        body["params"]["arguments"] = {"a": 1, "b": 2}
    for _ in range(2):
        assert post(client, body, session).status_code == 200
    refused = post(client, body, session)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    message = json.loads(refused.get_data(as_text=True))
    assert message["id"] == 5
    assert message["error"]["code"] == RATE_LIMITED == -32000
    assert message["error"]["data"] == {
        "retryAfter": int(refused.headers["Retry-After"]),
        "limit": "2 per 1 minute",
        "scope": "tool",
    }
    assert "Retry in" in message["error"]["message"]
    other = {**body, "params": {"name": "other", "arguments": {}}}
    assert post(client, other, session).status_code == 200  # other tools are not counted


def test_2026_era_answers_429() -> None:
    _, limiter, app = make()
    limiter.limit("3/minute", per=("principal", "tool"))
    wire = Wire(app)
    params = {"name": "add", "arguments": {"a": 1, "b": 1}}
    for _ in range(3):
        status, message, _ = wire.call("tools/call", params)
        assert status == 200 and message["result"]["content"][0]["text"] == "2"
    response = wire.post("tools/call", params)
    assert response.status_code == 429 and response.headers["Retry-After"]
    assert response.json is not None and response.json["error"]["code"] == -32000
    assert response.json["error"]["data"]["scope"] == "principal+tool"
    status, message, _ = wire.call("tools/call", {"name": "other", "arguments": {}})
    assert status == 200


@pytest.fixture(params=["memory", "redis"])
def backend_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url = t.cast(str, request.getfixturevalue("redis_url"))
    return f"{url}?prefix=rl-{uuid.uuid4().hex[:8]}:"


def test_a_session_rule_counts_the_client_across_sessions_and_eras(backend_url: str) -> None:
    """A new session does not reset the count, and 2026-07-28 requests count too (issue 33)."""
    _, limiter, app = make(MCP_BACKEND=backend_url)
    limiter.limit("5/minute", per="session")
    with MCPTestClient(app) as client:
        client.call_tool("other")
        client.list_tools()  # every method counts for a session rule
    with MCPTestClient(app) as fresh:  # initialize is the 4th, this call the 5th
        assert fresh.call_tool("other")["content"][0]["text"] == "other"
        with pytest.raises(MCPError) as info:
            fresh.call_tool("other")
        assert info.value.code == -32000
        assert info.value.data is not None and info.value.data["scope"] == "session"
    # the same caller, refused in this era too (at server/discover, the first request)
    with pytest.raises(MCPError) as info, MCPTestClient(app, protocol_version=V2026) as stateless:
        stateless.call_tool("other")
    assert info.value.code == -32000
    wire = Wire(app)
    wire.client.environ_base["REMOTE_ADDR"] = "192.0.2.7"  # another client has its own count
    assert wire.post("tools/call", {"name": "other", "arguments": {}}).status_code == 200


def test_a_session_rule_counts_an_ipv6_client_as_its_network() -> None:
    """A client given a /64 (RFC 6177) that changes address per request is one client."""
    _, limiter, app = make()
    limiter.limit("2/minute", per="session")

    def call_from(address: str) -> int:
        wire = Wire(app)
        wire.client.environ_base["REMOTE_ADDR"] = address
        return int(wire.post("tools/call", {"name": "other", "arguments": {}}).status_code)

    statuses = [call_from(f"2001:db8:1:2::{host}") for host in ("a", "b", "c")]
    assert statuses == [200, 200, 429]
    assert call_from("2001:db8:1:3::a") == 200  # another network is another client


def test_a_session_rule_counts_each_principal(backend_url: str) -> None:
    from flask_mcp import AuthInfo

    mcp = MCP(
        name="authorized",
        version="1",
        authorizer=lambda token, request: AuthInfo(principal=token),
    )

    @mcp.tool()
    def other() -> str:
        return "other"

    limiter = RateLimiter(mcp, key_prefix=f"t-{uuid.uuid4().hex[:8]}")
    limiter.limit("3/minute", per="session")
    app = Flask(__name__)
    app.config.update(
        TESTING=True, SECRET_KEY="s", MCP_BACKEND=backend_url,
        MCP_AUTH_RESOURCE="http://localhost/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )  # fmt: skip
    mcp.init_app(app)
    limiter.init_app(app)
    for token in ("ada", "bob"):
        headers = {"Authorization": f"Bearer {token}"}
        answered = 0
        for _ in range(3):  # three sessions: one initialize and one call each
            with MCPTestClient(app, headers=headers) as client:
                try:
                    client.call_tool("other")
                    answered += 1
                except MCPError as exc:
                    assert exc.code == -32000
                    break
        # the third request (the second session's initialize) is the last one allowed
        assert answered == 1, (token, answered)


def test_two_apps_on_one_redis_count_apart_unless_they_share_the_prefix(
    redis_backend_url: str,
) -> None:
    """MCP_BACKEND's ?prefix= keeps two apps' counters apart on one Redis (issue 32)."""
    first, second = f"a-{uuid.uuid4().hex[:8]}:", f"b-{uuid.uuid4().hex[:8]}:"
    limiter = RateLimiter(key_prefix="shared-limits")
    limiter.limit("2/minute", per="global")

    def app_on(prefix: str) -> Flask:
        mcp = MCP(name="p", version="1")
        mcp.add_tool(lambda: "ok", name="ping_tool")
        limiter.init_server(mcp)
        app = Flask(__name__)
        app.config.update(SECRET_KEY="s", MCP_BACKEND=f"{redis_backend_url}?prefix={prefix}")
        mcp.init_app(app)
        limiter.init_app(app)
        return app

    def answered(app: Flask, times: int) -> int:
        wire = Wire(app)
        params = {"name": "ping_tool", "arguments": {}}
        return sum(wire.post("tools/call", params).status_code == 200 for _ in range(times))

    one, two, twin = app_on(first), app_on(second), app_on(first)
    assert answered(one, 2) == 2
    assert answered(two, 3) == 2  # its own counter: not used up by the first app
    assert answered(twin, 1) == 0  # the same prefix: the same counter, as configured


def test_what_a_client_names_makes_no_counter_of_its_own(redis_url: str) -> None:
    """Methods, tools and URIs a client makes up count as ``unknown`` and a URI as its
    template: 60 requests with new names of 10 KB left 60 Redis keys of that size for
    the whole window, past any rate; now one counter per declared target."""
    import redis

    mcp, limiter, app = make(MCP_RATELIMIT_STORAGE_URI=redis_url)

    @mcp.resource("test://items/{item_id}")
    def item(item_id: str) -> str:
        return item_id

    limiter.limit("1000/hour", per=("principal", "tool"))
    limiter.limit("1000/hour", per="method")
    client = app.test_client()
    session = initialize(client)
    store = redis.Redis.from_url(redis_url)
    prefix = limiter.key_prefix

    def counters() -> int:
        return sum(1 for _ in store.scan_iter(match=f"*{prefix}*", count=1000))

    try:
        long = "x" * 10_000
        for n in range(20):
            calls = [
                ("tools/call", {"name": f"{n}{long}", "arguments": {}}),
                ("prompts/get", {"name": f"{n}{long}"}),
                (f"made/up{n}{long}", {}),
                ("resources/read", {"uri": f"test://items/{n}{'y' * 5_000}"}),
            ]
            for method, params in calls:
                body = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
                assert post(client, body, session).status_code < 500
        held = counters()
        assert held <= 10, held  # before: 80 keys, 600 KB
        assert max(len(key) for key in store.scan_iter(match=f"*{prefix}*")) < 200
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "other"}}
        assert post(client, body, session).status_code == 200
        assert counters() == held + 1  # a declared tool still counts on its own
    finally:
        for key in store.scan_iter(match=f"*{prefix}*"):
            store.delete(key)


def test_bad_rules_and_storage_choice() -> None:
    _, limiter, app = make(MCP_BACKEND="memory://")
    with pytest.raises(ValueError, match="per= takes one of"):
        limiter.limit("1/minute", per="caller")
    with pytest.raises(ValueError, match="Cannot read the rate"):
        limiter.limit("often")
    with pytest.raises(ValueError, match="Unknown rate limit strategy"):
        RateLimiter(strategy="leaky")
    assert limiter.storage_uri_for(app) == "memory://"
    app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/3?prefix=x:"
    assert limiter.storage_uri_for(app) == "redis://127.0.0.1:6379/3"
    assert limiter.key_prefix_for(app) == f"{limiter.key_prefix}:x:"
    app.config["MCP_BACKEND"] = "unix:///run/redis.sock?db=2"
    assert limiter.storage_uri_for(app) == "redis+unix:///run/redis.sock?db=2"
    # a master behind Sentinels: limits takes the master's name, its db as an option
    app.config["MCP_BACKEND"] = "redis+sentinel://:pw@h1:26379,h2:26380/mymaster/2?prefix=x:"
    assert limiter.storage_uri_for(app) == "redis+sentinel://:pw@h1:26379,h2:26380/mymaster"
    sentinels = {**REDIS_TIMEOUTS, "sentinel_kwargs": REDIS_TIMEOUTS}
    assert limiter.storage_options_for(app) == {**sentinels, "db": 2}
    app.config["MCP_BACKEND"] = "rediss+sentinel://h1:26379/mymaster"
    assert limiter.storage_uri_for(app) == "redis+sentinel://h1:26379/mymaster"
    assert limiter.storage_options_for(app) == {**sentinels, "db": 0, "ssl": True}
    app.config["MCP_BACKEND"] = "redis+cluster://h1:7000/"
    assert limiter.storage_options_for(app) == REDIS_TIMEOUTS
    app.config["MCP_RATELIMIT_STORAGE_URI"] = "redis://h2:6379/1?socket_timeout=30"
    assert limiter.storage_options_for(app) == REDIS_TIMEOUTS  # the URL's timeout wins
    app.config["MCP_RATELIMIT_STORAGE_URI"] = "memory://"
    assert limiter.storage_options_for(app) == {}
    assert limiter.storage_uri_for(app) == "memory://"
    assert RateLimited(0, "1 per 1 second", "tool").retry_after == 1


def test_a_redis_storage_that_stops_answering_fails_the_count_within_seconds() -> None:
    """The counters' Redis client has the backend's socket timeouts.

    ``limits`` makes its client with redis-py's defaults, which wait for ever: a Redis
    that stopped answering held every limited request (and every OAuth registration or
    token request) for good, where the backend's own clients give up after 5 s.
    """
    limiter = RateLimiter()
    app = Flask(__name__)
    with silent_peer() as port:
        app.config["MCP_BACKEND"] = f"redis://127.0.0.1:{port}/0"
        counters = limiter.limiter_for(app)
        item = parse_many("5/minute")[0]
        error = raised_within(
            lambda: counters.hit(item, "caller"), 20, "a count on a Redis that never answers"
        )
    assert isinstance(error, redis.exceptions.TimeoutError), error
    # set here, not left to the redis-py version (before 8, no timeout at all)
    client = counters.storage.storage  # type: ignore[attr-defined]
    options = client.connection_pool.connection_kwargs
    assert (options["socket_timeout"], options["socket_connect_timeout"]) == (5.0, 2.0)
    assert limiter.storage_options_for(app) == REDIS_TIMEOUTS


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_official_client_sees_the_rate_limit_error(worker: str, mode: str) -> None:
    import anyio
    from mcp import Client

    env = {"OBSERVE_TOOL_LIMIT": "2/hour", "OBSERVE_PREFIX": f"c-{uuid.uuid4().hex[:8]}"}
    with start_server("tests._apps.observe:app", worker, env=env) as server:

        async def main() -> list[t.Any]:
            outcomes: list[t.Any] = []
            async with Client(server.url, mode=mode) as session:
                for _ in range(3):
                    try:
                        result = await session.call_tool("add", {"a": 1, "b": 2})
                        outcomes.append(result.content[0].text)  # type: ignore[union-attr]
                    except Exception as exc:  # the client raises the JSON-RPC error
                        outcomes.append(exc)
                # the session (or the stateless client) still works for other tools
                outcomes.append((await session.call_tool("echo", {"text": "ok"})).content[0].text)  # type: ignore[union-attr]
            return outcomes

        outcomes = anyio.run(main)
    assert outcomes[:2] == ["3", "3"]
    assert "Rate limit exceeded: 2 per 1 hour per tool" in str(outcomes[2])
    assert getattr(getattr(outcomes[2], "error", None), "code", -32000) == -32000
    assert outcomes[3] == "ok"


@pytest.mark.e2e
@pytest.mark.redis
def test_limit_holds_globally_across_four_gevent_workers(redis_backend_url: str) -> None:
    """200 calls on 40 connections at once to 4 workers sharing Redis (or a Redis Cluster,
    ``redis+cluster://`` for the ``limits`` library too): exactly 60 pass."""
    prefix = f"g-{uuid.uuid4().hex[:8]}"
    env = {
        "FLASK_MCP_BACKEND": f"{redis_backend_url}?prefix={prefix}:",
        "FLASK_MCP_RATELIMIT_STORAGE_URI": redis_backend_url,
        "OBSERVE_TOOL_LIMIT": "60/hour",
        "OBSERVE_PREFIX": prefix,
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": V2026,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "work",
        "Connection": "close",  # a new connection each time: any worker may accept it
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    access = ["--access-logformat", "%(p)s %(m)s %(s)s", *GUNICORN_READY_ARGS]
    with start_server(
        "tests._apps.observe:app", "gevent", workers=4, env=env, extra_args=access
    ) as server:
        wait_for_workers_ready(server, 4)  # no worker still booting leaves the calls to one

        def call(n: int) -> tuple[int, str | None, str | None]:
            body = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "work", "arguments": {}, "_meta": meta},
            }
            response = http.post(server.url, json=body, headers=headers)
            pid = None
            if response.status_code == 200:
                pid = response.json()["result"]["content"][0]["text"]
            return response.status_code, pid, response.headers.get("retry-after")

        # One client for every thread: httpx.post would build a client (and its TLS context)
        # per call, and threads starved of the GIL between connect and send outlast
        # gunicorn's keep-alive timeout (2 s), which also bounds the first request's read.
        with httpx.Client(timeout=30) as http, concurrent.futures.ThreadPoolExecutor(40) as pool:
            results = list(pool.map(call, range(200)))
        log = server.log()
    statuses = [status for status, _, _ in results]
    passed, refused = statuses.count(200), statuses.count(429)
    by_worker = collections.Counter(
        (line.split()[0], line.split()[2])
        for line in log.splitlines()
        if re.match(r"<\d+> POST (200|429)", line)
    )
    print(f"4 gevent workers: {passed} passed, {refused} refused (429); per worker: {by_worker}")
    assert (passed, refused) == (60, 140)
    assert all(retry for status, _, retry in results if status == 429)
    workers_passing = {pid for status, pid, _ in results if status == 200}
    assert len(workers_passing) >= 2, "the calls that passed should come from several workers"
