"""A client that leaves without DELETE must not cost the next session its GET stream.

On gunicorn gthread every open stream holds a thread, so a worker holds few GET
streams (``--threads 3``: one). A client that vanished used to keep its slot
until a heartbeat write failed (up to 2 x 15 s) and the next session's GET got
a 503, after which the official client stops asking: that session never heard
``notifications/tools/list_changed``.
"""

from __future__ import annotations

import json
import socket
import time
import typing as t
import uuid

import anyio
import httpx2
import pytest
from harness import SERVERS
from harness import delete_keys
from wire import debug_stats
from wire import headers_2026
from wire import http_session as open_session
from wire import listen_for_list_changed
from wire import meta
from wire import open_get_stream

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # handshake-era calls in mcp 2.3
]
APP = "tests._apps.dynamic:app"
HOST = "127.0.0.1"
VERSION = "2025-11-25"
#: gthread --threads 3 holds 2 streams, of which 1 GET stream (half of them).
THREADS = 3


def open_streams(port: int) -> int:
    return debug_stats(port)["open_streams"]


def test_session_after_a_vanished_client_hears_list_changed(serve: t.Any) -> None:
    server = serve(APP, "gthread", threads=THREADS)
    sock = open_get_stream(server.port, open_session(server.port))
    sock.close()  # the client is gone: no DELETE, no more reads

    gets = anyio.run(listen_for_list_changed, server.url)

    assert gets, "the client never opened its GET stream"
    assert all(r.status_code == 200 for r in gets), [r.status_code for r in gets]
    assert all(r.headers["content-type"].startswith("text/event-stream") for r in gets)


def test_get_without_a_free_thread_tells_the_client_to_come_back(serve: t.Any) -> None:
    """While every GET slot is held, a GET is an event stream with a retry hint, not a 503."""
    server = serve(APP, "gthread", threads=THREADS)
    holder = open_get_stream(server.port, open_session(server.port))

    async def release_after_first_get(response: httpx2.Response) -> None:
        # The first GET came while ``holder`` held the only GET slot: it was told to
        # come back later. Now let the slot go, as a client that vanished does.
        if holder.fileno() != -1:
            holder.close()

    gets = anyio.run(listen_for_list_changed, server.url, release_after_first_get)

    statuses = [(r.status_code, r.headers.get("content-type", "")) for r in gets]
    assert all(status == 200 and kind.startswith("text/event-stream") for status, kind in statuses)
    assert len(gets) >= 2, "the client did not come back for its GET stream"


@pytest.mark.parametrize("worker", SERVERS)
def test_a_vanished_client_frees_its_stream(serve: t.Any, worker: str) -> None:
    server = serve(APP, worker, threads=THREADS)
    session = open_session(server.port)
    sock = open_get_stream(server.port, session)
    assert open_streams(server.port) == 1
    sock.close()

    deadline = time.monotonic() + 10  # a failed heartbeat write would tell after 30 s
    while open_streams(server.port) != 0:
        assert time.monotonic() < deadline, "the vanished client's stream still holds its slot"
        time.sleep(0.05)


@pytest.mark.redis
def test_a_vanished_client_frees_its_stream_on_redis_under_gevent(
    serve: t.Any, redis_url: str
) -> None:
    """On gevent the Redis stream reader's waits watch the client's socket: no polling."""
    prefix = f"vanish-{uuid.uuid4().hex[:8]}:"
    env = {"FLASK_MCP_BACKEND": f"{redis_url}?prefix={prefix}"}
    socks: list[socket.socket] = []
    try:
        server = serve(APP, "gevent", env=env)
        session = open_session(server.port)
        socks.append(open_get_stream(server.port, session))
        time.sleep(1.5)  # past the first short read: the stream now waits until its heartbeat
        assert open_streams(server.port) == 1
        socks[0].close()
        deadline = time.monotonic() + 10  # a failed heartbeat write would tell after 30 s
        while open_streams(server.port) != 0:
            assert time.monotonic() < deadline, "the vanished client's stream still holds its slot"
            time.sleep(0.05)
        socks.append(open_get_stream(server.port, session))
        assert open_streams(server.port) == 1
    finally:
        for sock in socks:
            sock.close()
        delete_keys(redis_url, f"{prefix}*")


def post_2026_call(port: int, request_id: int, name: str, **arguments: t.Any) -> socket.socket:
    """POST a 2026-07-28 ``tools/call`` (with a progress token) on a raw socket; return it."""
    params = {"name": name, "arguments": arguments, "_meta": {**meta(), "progressToken": 1}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    body = json.dumps(message)
    headers = {
        "Host": f"{HOST}:{port}",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        **headers_2026("tools/call", params),
    }
    head = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
    sock = socket.create_connection((HOST, port), timeout=10)
    sock.sendall(f"POST /mcp HTTP/1.1\r\n{head}\r\n{body}".encode())
    return sock


def test_a_stateless_call_answered_whole_is_cancelled_when_its_client_leaves(
    serve: t.Any,
) -> None:
    """With every stream slot held, a 2026-07-28 call that sends progress is answered with
    one JSON response; its client leaving cancels it, as it cancels a streamed call.

    It ran on, holding its handler (and on gthread the view's thread), until it ended or
    ``MCP_REQUEST_TIMEOUT`` passed.
    """
    server = serve("tests._apps.backchannel:app", "gevent", env={"FLASK_MCP_MAX_STREAMS": "1"})
    holder = post_2026_call(server.port, 1, "slow_chatty", seconds=60)
    received = b""
    while b"notifications/progress" not in received:  # it holds the only stream slot
        chunk = holder.recv(4096)
        assert chunk, received
        received += chunk
    assert debug_stats(server.port)["open_streams"] == 1
    left = post_2026_call(server.port, 2, "slow_chatty", seconds=60)
    deadline = time.monotonic() + 10
    while debug_stats(server.port)["running_requests"] != 2:
        assert time.monotonic() < deadline, "the second call never started"
        time.sleep(0.05)
    left.close()  # the client is gone while its call runs, answered whole

    deadline = time.monotonic() + 10  # its handler sleeps 60 s
    while debug_stats(server.port)["running_requests"] != 1:
        assert time.monotonic() < deadline, "the call of the client that left still runs"
        time.sleep(0.05)
    assert debug_stats(server.port)["open_streams"] == 1  # the streamed call runs on
    holder.close()
