"""What a session keeps for clients that left its streams is bounded in bytes.

A 2025-11-25 client that drops a POST stream may come back with ``Last-Event-ID``,
so the stream's messages are kept. Past ``MCP_SSE_RESUME_BYTES`` of them in one
session, the streams left first are dropped, then the oldest messages of the one left
last (it counts too): when a client leaves a stream, and at the session's next message
(an answer that comes after its client left). A client cannot pile up answers it never
reads until its session ends. Driven end to end: gunicorn (gevent and threads, memory
and Redis), raw HTTP clients
that leave each stream at its first progress notification (before the answer, or
while the server is stuck writing an answer they do not read), then resume.
"""

from __future__ import annotations

import json
import socket
import time
import typing as t
import urllib.parse

import httpx
import pytest
from flask import Flask
from harness import redis_env
from wire import sse_events
from wire import start_session

from flask_mcp import MCP
from flask_mcp import Context

#: Characters of each answer, and the bound: two answers are over it, one is not.
ANSWER = 100_000
BOUND = 150_000


def app_of(**config: t.Any) -> Flask:
    mcp = MCP(name="resume", version="1")

    @mcp.tool(structured_output=False)
    def report(size: int, ctx: Context, pause: float = 2.0) -> str:
        """Report progress, work ``pause`` seconds, answer ``size`` characters."""
        ctx.progress(1, 2)
        time.sleep(pause)
        return "z" * size

    app = Flask(__name__)
    # A keep-alive comment every 0.1 s: the server notices a client gone long before the
    # answer (a stream whose answer went out whole before that would be read to its end).
    app.config.update({"MCP_SSE_RESUME_BYTES": BOUND, "MCP_SSE_HEARTBEAT": 0.1, **config})
    app.config.from_prefixed_env()  # FLASK_MCP_BACKEND
    mcp.init_app(app)
    return app


app = app_of()
#: Four messages kept per session: a stream left while its work runs loses them early.
small_buffer_app = app_of(MCP_SSE_BUFFER_EVENTS=4)
#: Characters of each answer the client does not read: more than the socket buffers of a
#: loopback connection whose client reads nothing hold (a few MB), so the server is stuck
#: writing it.
UNREAD = 8_000_000
#: A bound one :data:`UNREAD` answer is under, two are over.
unread_app = app_of(MCP_SSE_RESUME_BYTES=12_000_000)
#: A bound of one client's sessions together that two answers are under, three over.
per_client_app = app_of(MCP_SSE_RESUME_BYTES_PER_CLIENT=250_000)


def call(size: int, request_id: int, pause: float = 2.0) -> dict[str, t.Any]:
    arguments = {"size": size, "pause": pause}
    params = {"name": "report", "arguments": arguments, "_meta": {"progressToken": 1}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def leave_at_progress(
    http: httpx.Client,
    url: str,
    headers: dict[str, str],
    n: int,
    size: int = ANSWER,
    pause: float = 2.0,
) -> str:
    """Start call ``n``, close its stream once the progress came; return that event's id."""
    with http.stream("POST", url, headers=headers, json=call(size, n, pause)) as response:
        assert response.status_code == 200
        for event in sse_events(response.iter_lines()):
            if event.get("data"):
                assert "notifications/progress" in event["data"], event
                return event["id"]
    raise AssertionError("the call sent no progress")


def resume(http: httpx.Client, url: str, headers: dict[str, str], event_id: str) -> tuple[int, str]:
    """Resume a stream after ``event_id``: 200 and its answer, or the refusal's status and text."""
    get_headers = {**headers, "Accept": "text/event-stream", "Last-Event-ID": event_id}
    with http.stream("GET", url, headers=get_headers) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, response.text
        for event in sse_events(response.iter_lines()):
            if '"result"' in event.get("data", ""):
                return 200, event["data"]
    raise AssertionError("the resumed stream ended without its answer")


def check_resume_bound(url: str) -> None:
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, url)
        # Each answer arrives on the stream its client left, in the order they were left
        # (their work ends 0.5 s apart), the last 2.5 s from now.
        left = [leave_at_progress(http, url, headers, n, pause=1.0 + n / 2) for n in range(1, 4)]
        time.sleep(3.0)
        # The session's next message (a call read to its end) drops the streams left first.
        with http.stream("POST", url, headers=headers, json=call(10, 9)) as response:
            assert '"z' in response.read().decode()
        for event_id in left[:2]:
            status, text = resume(http, url, headers, event_id)
            assert status == 400 and "names no stream" in text, (status, text[:200])
        status, answer = resume(http, url, headers, left[2])  # the one left last: kept whole
        assert status == 200, answer
        assert '"id":3' in answer.replace(" ", "")
        assert "z" * ANSWER in answer


def open_unread(url: str, headers: dict[str, str], n: int) -> tuple[socket.socket, str]:
    """Start call ``n`` of an :data:`UNREAD` answer on a connection with a small receive
    buffer and read up to its progress notification; return the connection, left open
    and unread, and the notification's event id."""
    where = urllib.parse.urlsplit(url)
    body = json.dumps(call(UNREAD, n, pause=0)).encode()
    lines = [f"POST {where.path} HTTP/1.1", f"Host: {where.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += [f"Content-Length: {len(body)}", "", ""]
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the window is set
    sock.settimeout(10)
    sock.connect((t.cast(str, where.hostname), t.cast(int, where.port)))
    sock.sendall("\r\n".join(lines).encode() + body)
    received = b""
    while b"\n\n" not in received.partition(b"notifications/progress")[2]:
        chunk = sock.recv(1024)
        assert chunk, received[-200:]
        received += chunk
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
    events = received.decode().replace("\r\n", "\n").split("\n\n")
    progress = next(e for e in events if "notifications/progress" in e)
    return sock, next(x[3:].strip() for x in progress.split("\n") if x.startswith("id:"))


def check_bound_when_left(url: str) -> None:
    """Three calls answered while their client reads nothing, then left one by one: the
    third leave drops the first stream, as the two left before it are over the bound. No
    message of the session follows (the bound at the next message is not what acts)."""
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, url)
        opened = [open_unread(url, headers, n) for n in range(1, 4)]
        time.sleep(1.0)  # the answers are on their streams, the server stuck writing them
        for sock, _ in opened:
            sock.close()  # unread data: the server's write fails at once
            time.sleep(0.3)  # the server notices: its client left the stream
        # Redis: this process wrote the streams, so the leaves ride on the next round trip
        # the listener makes with what waits, within a second.
        time.sleep(1.5)
        status, text = resume(http, url, headers, opened[0][1])
        assert status == 400 and "names no stream" in text, (status, text[:200])
        for n, (_, event_id) in enumerate(opened[1:], 2):
            status, answer = resume(http, url, headers, event_id)
            assert status == 200, answer[:200]
            assert f'"id":{n}' in answer.replace(" ", "")
            assert "z" * UNREAD in answer


def check_sequence_goes_on(url: str) -> None:
    """A stream left while its work runs, whose messages the session's other streams evict
    (``MCP_SSE_BUFFER_EVENTS`` of 4), keeps its sequence numbers: resumed from its progress
    notification, it gives the answer that came later (numbered on, not from 1 again)."""
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, url)
        slow = leave_at_progress(http, url, headers, 1, size=10, pause=3.0)
        for n in (2, 3):  # two more left streams, answered after: 4 messages after slow's
            leave_at_progress(http, url, headers, n, size=10, pause=0.5)
        time.sleep(3.5)  # slow's answer comes on the stream whose messages went
        status, answer = resume(http, url, headers, slow)
        assert status == 200, answer
        assert '"id":1' in answer.replace(" ", "") and "z" * 10 in answer


def check_cancelled_stream_is_forgotten(url: str) -> None:
    """A stream left while its work runs, whose messages the session's other streams evict,
    then cancelled, ends with nothing a resume would get: it is forgotten at its end (not
    kept, empty and out of every bound's reach, until the session ends)."""
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, url)
        slow = leave_at_progress(http, url, headers, 1, size=10, pause=3.0)
        for n in (2, 3):  # two more left streams, answered after: 4 messages after slow's
            leave_at_progress(http, url, headers, n, size=10, pause=0.5)
        time.sleep(1.0)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        cancel["params"] = {"requestId": 1, "reason": "no longer needed"}
        assert http.post(url, headers=headers, json=cancel).status_code == 202
        time.sleep(2.5)  # a thread cannot be interrupted: its handler ends with its pause
        status, text = resume(http, url, headers, slow)
        assert status == 400 and "names no stream" in text, (status, text[:200])


def check_client_bound(url: str) -> None:
    """Three sessions of one client (one address), each leaving a call's stream before its
    answer: with the third answer the three are over the client's bound, so the stream it
    left first, in the first session, is dropped (a resume gets 400), the others kept."""
    with httpx.Client(timeout=30) as http:
        sessions = [start_session(http, url) for _ in range(3)]
        left = [leave_at_progress(http, url, headers, n) for n, headers in enumerate(sessions, 1)]
        time.sleep(2.5)  # the answers arrive on the streams their client left
        status, text = resume(http, url, sessions[0], left[0])
        assert status == 400 and "names no stream" in text, (status, text[:200])
        for n in (2, 3):
            status, answer = resume(http, url, sessions[n - 1], left[n - 1])
            assert status == 200, answer[:200]
            assert f'"id":{n}' in answer.replace(" ", "")
            assert "z" * ANSWER in answer


@pytest.mark.e2e
def test_streams_one_client_left_are_bounded_across_its_sessions(serve: t.Any) -> None:
    check_client_bound(serve("tests.test_resume_bytes:per_client_app", "gevent").url)


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_streams_left_are_bounded_in_memory(serve: t.Any, worker: str) -> None:
    server = serve("tests.test_resume_bytes:app", worker)
    check_resume_bound(server.url)
    check_bound_when_left(serve("tests.test_resume_bytes:unread_app", worker).url)
    small = serve("tests.test_resume_bytes:small_buffer_app", worker).url
    check_sequence_goes_on(small)
    check_cancelled_stream_is_forgotten(small)


@pytest.mark.e2e
def test_streams_left_are_bounded_in_redis(serve: t.Any, redis_backend_url: str) -> None:
    env = redis_env(redis_backend_url)
    server = serve("tests.test_resume_bytes:app", "gevent", env=env)
    check_resume_bound(server.url)
    check_bound_when_left(serve("tests.test_resume_bytes:unread_app", "gevent", env=env).url)
    small = serve("tests.test_resume_bytes:small_buffer_app", "gevent", env=env)
    check_sequence_goes_on(small.url)
    check_cancelled_stream_is_forgotten(small.url)
