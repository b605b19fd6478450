"""What a session keeps for clients that left its streams is bounded in bytes.

A 2025-11-25 client that drops a POST stream may come back with ``Last-Event-ID``,
so the stream's messages are kept. Past ``MCP_SSE_RESUME_BYTES`` of them in one
session, the streams left first are dropped at the session's next message, never the
one left last: a client cannot pile up answers it never reads until its session ends.
Driven end to end: gunicorn (gevent and threads, memory and Redis), raw HTTP clients
that leave each stream at its first progress notification, then resume.
"""

from __future__ import annotations

import time
import typing as t

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


def app_of() -> Flask:
    mcp = MCP(name="resume", version="1")

    @mcp.tool(structured_output=False)
    def report(size: int, ctx: Context) -> str:
        """Report progress, work a moment (its client leaves meanwhile), answer ``size`` chars."""
        ctx.progress(1, 2)
        time.sleep(2.0)
        return "z" * size

    app = Flask(__name__)
    # A keep-alive comment every 0.1 s: the server notices a client gone long before the
    # answer (a stream whose answer went out whole before that would be read to its end).
    app.config.update(MCP_SSE_RESUME_BYTES=BOUND, MCP_SSE_HEARTBEAT=0.1)
    app.config.from_prefixed_env()  # FLASK_MCP_BACKEND
    mcp.init_app(app)
    return app


app = app_of()


def call(size: int, request_id: int) -> dict[str, t.Any]:
    params = {"name": "report", "arguments": {"size": size}, "_meta": {"progressToken": 1}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def leave_at_progress(http: httpx.Client, url: str, headers: dict[str, str], n: int) -> str:
    """Start call ``n``, close its stream once the progress came; return that event's id."""
    with http.stream("POST", url, headers=headers, json=call(ANSWER, n)) as response:
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
        left = []
        for n in range(1, 4):
            left.append(leave_at_progress(http, url, headers, n))
            time.sleep(2.5)  # the answer arrives on the stream its client left
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


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_streams_left_are_bounded_in_memory(serve: t.Any, worker: str) -> None:
    server = serve("tests.test_resume_bytes:app", worker)
    check_resume_bound(server.url)


@pytest.mark.e2e
def test_streams_left_are_bounded_in_redis(serve: t.Any, redis_backend_url: str) -> None:
    server = serve("tests.test_resume_bytes:app", "gevent", env=redis_env(redis_backend_url))
    check_resume_bound(server.url)
