"""Flask-MCP on WSGI servers besides gunicorn: waitress and uWSGI.

What Flask-MCP learns from a server: how many SSE streams it can hold (threads - 1 on a
threaded server) and how to tell that a client went away (the client's connection).  The
protocol itself is covered on every server by the conformance and official-client tests
(``harness.SERVERS``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import resource
import socket
import threading
import typing as t
from collections.abc import Iterator
from wsgiref.util import is_hop_by_hop

import pytest
from flask import Flask
from flask import request
from harness import SERVERS
from wire import ACCEPT

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.runtime import concurrency as _concurrency
from flask_mcp.transport import listen


def make_app() -> Flask:
    mcp = MCP(name="wsgi", version="1.0.0")

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress, then answer."""
        ctx.progress(1, 2)
        return "done"

    app = Flask(__name__)
    mcp.init_app(app)

    @app.get("/probe")
    def probe() -> dict[str, t.Any]:
        connection = _concurrency.client_socket(request.environ)
        return {
            "capacity": _concurrency.stream_capacity(request.environ),
            "connection": type(connection).__name__,
            "gone": listen.client_gone(connection),
        }

    return app


def post(
    client: t.Any, body: dict[str, t.Any], session: str | None = None, multithread: bool = False
) -> t.Any:
    headers = {"Accept": ACCEPT, **({"Mcp-Session-Id": session} if session else {})}
    return client.post("/mcp", json=body, headers=headers, multithread=multithread)


def test_sse_responses_carry_no_hop_by_hop_header() -> None:
    """PEP 3333: an application must not set hop-by-hop headers (waitress refuses them)."""
    client = make_app().test_client()
    init = post(
        client,
        {
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}},
        },
        multithread=True,  # a threaded server: responses may stream
    )  # fmt: skip
    session = init.headers["Mcp-Session-Id"]
    post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": 1}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    response = post(client, message, session, multithread=True)
    assert response.mimetype == "text/event-stream"
    assert b"notifications/progress" in response.data
    assert [name for name, _ in response.headers if is_hop_by_hop(name)] == []


# -- client_gone ------------------------------------------------------------------------------


def test_a_borrowed_file_descriptor_tells_when_its_client_left() -> None:
    """uWSGI shows the connection as a file descriptor (``uwsgi.connection_fd()``)."""
    server_side, client_side = socket.socketpair()
    with server_side, client_side:
        peer = _concurrency.PeerSocket(server_side.fileno())
        assert peer.fileno() == server_side.fileno()
        assert not listen.client_gone(peer)
        client_side.sendall(b"x")  # unread data is not a goodbye
        assert not listen.client_gone(peer)
        assert server_side.recv(1) == b"x"
        client_side.close()
        assert listen.client_gone(peer)
        assert server_side.fileno() != -1  # still open: the server owns it


def test_a_peek_that_finds_the_data_taken_is_not_a_goodbye() -> None:
    """waitress's own loop may read its non-blocking socket between select and peek."""

    class ReadFirst:
        def __init__(self, sock: socket.socket) -> None:
            self.sock = sock

        def fileno(self) -> int:
            return self.sock.fileno()

        def recv(self, size: int, flags: int = 0) -> bytes:
            raise BlockingIOError  # what the peek meets when the data is gone

    server_side, client_side = socket.socketpair()
    with server_side, client_side:
        client_side.sendall(b"GET / HTTP/1.1\r\n")
        taken: t.Any = ReadFirst(server_side)
        assert not listen.client_gone(_concurrency.PeerSocket(taken))
        client_side.close()
        server_side.recv(100)
        assert listen.client_gone(_concurrency.PeerSocket(server_side))


def test_a_gevent_socket_is_peeked_through_its_wrapped_socket() -> None:
    """gunicorn's gevent worker lends gevent sockets: one non-blocking peek, no select."""
    from gevent import socket as gsocket

    server_side, client_side = gsocket.socketpair()
    with server_side, client_side:
        assert not listen.client_gone(server_side)  # nothing to read: no wait, not gone
        client_side.sendall(b"x")
        assert not listen.client_gone(server_side)
        client_side.close()
        assert not listen.client_gone(server_side)  # the data comes before the goodbye
        assert server_side.recv(1) == b"x"
        assert listen.client_gone(server_side)
    assert listen.client_gone(server_side)  # closed by the server: gone too


def test_no_connection_is_never_gone() -> None:
    assert _concurrency.client_socket({"wsgi.multithread": True}) is None
    assert not listen.client_gone(None)


# -- waitress, in this process ----------------------------------------------------------------


@contextlib.contextmanager
def waitress_server(app: Flask, threads: int) -> Iterator[int]:
    """Serve ``app`` with waitress on a free port in a thread; yield the port."""
    pytest.importorskip("waitress")
    from waitress.server import create_server

    server = create_server(app, host="127.0.0.1", port=0, threads=threads)
    runner = threading.Thread(target=server.run, daemon=True)
    runner.start()
    try:
        yield int(server.effective_port)  # type: ignore[union-attr]
    finally:
        server.close()
        server.task_dispatcher.shutdown(timeout=5)
        runner.join(timeout=5)


def get_json(port: int, path: str) -> t.Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        assert response.status == 200, response.read()
        return json.loads(response.read())
    finally:
        conn.close()


def test_waitress_threads_bound_the_streams_and_its_socket_is_found() -> None:
    with waitress_server(make_app(), threads=3) as port:
        probe = get_json(port, "/probe")
    assert probe == {"capacity": 2, "connection": "PeerSocket", "gone": False}


def test_waitress_client_that_left_is_noticed() -> None:
    """The connection Flask-MCP finds under waitress tells when its client left."""
    seen: dict[str, bool] = {}
    ready = threading.Event()
    left = threading.Event()
    done = threading.Event()
    app = Flask(__name__)

    @app.get("/hold")
    def hold() -> str:
        try:
            connection = _concurrency.client_socket(request.environ)
            seen["before"] = listen.client_gone(connection)
            ready.set()
            left.wait(10)
            for _ in range(50):  # up to 5 s for the FIN to arrive
                if listen.client_gone(connection):
                    break
                done.wait(0.1)
            seen["after"] = listen.client_gone(connection)
        finally:
            ready.set()
            done.set()
        return "bye"

    with waitress_server(app, threads=2) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/hold")
        assert ready.wait(10)
        conn.close()
        left.set()
        assert done.wait(10)
    assert seen == {"before": False, "after": True}


# -- every server, in subprocesses ------------------------------------------------------------

PROBE = "tests._apps.probe:app"
#: stream_capacity with 3 threads: half the open-file limit (which a server inherits from
#: this process) on greenlets, threads - 1 on threads.
FILES = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
GREENLETS = None if FILES == resource.RLIM_INFINITY else FILES // 2
CAPACITY = {
    "gevent": GREENLETS,
    "gthread": 2,
    "waitress": 2,
    "uwsgi": GREENLETS,
    "uwsgi-threads": 2,
}


@pytest.mark.e2e
@pytest.mark.parametrize("worker", SERVERS)
def test_each_server_tells_its_capacity_and_connection(serve: t.Any, worker: str) -> None:
    server = serve(PROBE, worker, threads=3)
    probe = get_json(server.port, "/probe")
    assert probe["capacity"] == CAPACITY[worker]
    assert probe["connection"] in ("socket", "PeerSocket")
    assert probe["gone"] is False


@pytest.mark.e2e
def test_uwsgi_processes_with_the_memory_backend_warn(serve: t.Any) -> None:
    server = serve(PROBE, "uwsgi-threads", workers=2, threads=2)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/mcp", b"{}", {"Content-Type": "application/json", "Accept": ACCEPT})
    conn.getresponse().read()
    conn.close()
    assert "in-memory backend under a multi-process server" in server.log()
