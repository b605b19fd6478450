"""What one client can hold on a real server: streams it stops reading, waits it leaves.

The rule: no client can hold what the others need (stream slots, threads) for ever;
every wait has a timeout, and every stream notices a client that is gone.
"""

from __future__ import annotations

import json
import socket
import time
import typing as t

import anyio
import httpx
import pytest
from harness import SERVERS
from harness import free_port
from wire import debug_stats
from wire import headers_2026
from wire import http_post
from wire import http_session
from wire import listen_for_list_changed
from wire import meta
from wire import try_get_stream

pytestmark = pytest.mark.e2e
APP = "tests._apps.held:app"
OAUTH_APP = "tests._apps.oauth_notes:app"
HOST = "127.0.0.1"
VERSION = "2025-11-25"


def post(
    port: int,
    session: str,
    message: dict[str, t.Any],
    rcvbuf: int = 0,
    source: str | None = None,
) -> socket.socket:
    """POST ``message`` in ``session`` on a raw socket and return it, unread.

    :param rcvbuf: a small receive buffer, for a client that reads nothing.
    :param source: the address to connect from (``None``: any).
    """
    body = json.dumps(message)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    if source is not None:
        sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect((HOST, port))
    sock.sendall(
        (
            f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {VERSION}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    )
    return sock


def wait_for(port: int, key: str, value: int, why: str, seconds: float = 15) -> None:
    """Wait until the worker's ``/debug/stats`` shows ``key`` at ``value``."""
    deadline = time.monotonic() + seconds
    while (stats := debug_stats(port))[key] != value:
        assert time.monotonic() < deadline, f"{why}: {stats}"
        time.sleep(0.1)


@pytest.mark.parametrize("worker", [*SERVERS, "uwsgi-router"])
def test_a_client_that_stops_reading_frees_its_stream(serve: t.Any, worker: str) -> None:
    """A client that keeps its connection open but reads nothing loses it once a write
    waited ``MCP_WRITE_TIMEOUT``.

    The server's write to it blocked for ever once the socket's buffers were full:
    ``MCP_SSE_MAX_STREAM_SECONDS`` and the liveness checks never ran again, and the
    stream's slot (on a threaded server, its thread) was held until the client closed.
    waitress and uWSGI write from their own buffers, so the supervisor did not watch
    them: waitress's write waits once it buffered ``outbuf_high_watermark`` (16 MB), and
    uWSGI in gevent mode (alone or behind its HTTP router) has no write timeout of its own.
    """
    env = {"FLASK_MCP_WRITE_TIMEOUT": "1", "FLASK_MCP_SSE_MAX_STREAM_SECONDS": "1"}
    server = serve(APP, worker, threads=3, env=env)
    session = http_session(server.port)
    params = {
        "name": "flood",
        "arguments": {"count": 400, "size": 65536},  # 26 MB: more than the buffers hold
        "_meta": {"progressToken": 1},
    }
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    sock = post(server.port, session, message, rcvbuf=4096)
    try:
        assert sock.recv(12).startswith(b"HTTP/1.1 200")
        wait_for(server.port, "open_streams", 0, "the stream nobody reads still holds its slot")
    finally:
        sock.close()


@pytest.mark.parametrize("worker", SERVERS)
def test_a_client_that_reads_no_large_response_frees_its_worker(serve: t.Any, worker: str) -> None:
    """A JSON response larger than the socket's buffers, to a client that reads nothing,
    is closed once its write waited ``MCP_WRITE_TIMEOUT``.

    The server's write of it blocked for ever (on gthread, a thread; on gevent and uWSGI
    in gevent mode, a greenlet and the response in memory) until the client left.
    """
    server = serve(APP, worker, threads=3, env={"FLASK_MCP_WRITE_TIMEOUT": "1"})
    session = http_session(server.port)
    closed = debug_stats(server.port)["posts_closed"]  # initialize, initialized
    params = {"name": "big", "arguments": {"size": 24 * 1024 * 1024}}  # more than any buffer
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    sock = post(server.port, session, message, rcvbuf=4096)
    try:
        wait_for(server.port, "posts_closed", closed + 1, "the unread response is still written")
    finally:
        sock.close()


def read_head(sock: socket.socket) -> bytes:
    """Read until the response's head and its first event came; return what was read."""
    data = b""
    while b"\r\n\r\n" not in data or b"\n\n" not in data.partition(b"\r\n\r\n")[2]:
        chunk = sock.recv(4096)  # the socket's timeout bounds the wait
        assert chunk, f"the server closed the connection: {data!r}"
        data += chunk
    return data


def assert_stalled_bodies_end(port: int, path: str, content_type: str, body: bytes) -> None:
    """POST ``body`` to ``path`` twice with a ``Content-Length`` larger than it and twice
    chunked without its last chunk (more than the server's 3 threads), and assert each is
    answered 408 naming ``MCP_READ_TIMEOUT``."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: {content_type}\r\n"
        "Accept: application/json, text/event-stream\r\n"
    )
    stalled = [
        f"{head}Content-Length: {len(body) + 100}\r\n\r\n".encode() + body,
        f"{head}Transfer-Encoding: chunked\r\n\r\n".encode() + b"%x\r\n" % len(body) + body,
    ]
    socks = []
    try:
        for raw in stalled * 2:  # more than the threads
            sock = socket.create_connection((HOST, port), timeout=30)
            socks.append(sock)
            sock.sendall(raw)
        for sock in socks:
            answer = b""
            while chunk := sock.recv(4096):  # the socket's timeout bounds the wait
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert b"MCP_READ_TIMEOUT" in answer, answer
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_a_body_that_never_arrives_frees_its_worker(serve: t.Any, worker: str) -> None:
    """A POST whose body stalls (a ``Content-Length`` larger than what was sent, a chunked
    body that never ends) is answered 408 once it waited ``MCP_READ_TIMEOUT``, at the MCP
    endpoint and at the built-in authorization server's (its token endpoint).

    The body was read with no timeout: on gthread, as many such POSTs as threads locked
    every other client out for as long as their connections stayed open; on gevent each
    held a greenlet and a descriptor.
    """
    server = serve(APP, worker, threads=3, env={"FLASK_MCP_READ_TIMEOUT": "1"})
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert_stalled_bodies_end(server.port, "/mcp", "application/json", body)
    session = http_session(server.port)  # the worker serves the next client
    assert session

    port = free_port()
    base = f"http://{HOST}:{port}"
    env = {"FLASK_MCP_READ_TIMEOUT": "1", "OAUTH_APP_BASE": base}
    serve(OAUTH_APP, worker, threads=3, env=env, port=port)
    form = b"grant_type=authorization_code&code=x&client_id=y"
    assert_stalled_bodies_end(port, "/oauth/token", "application/x-www-form-urlencoded", form)
    with httpx.Client(base_url=base, timeout=30) as http:  # the next client is served
        registered = http.post("/oauth/register", json={"redirect_uris": [f"{base}/cb"]})
    assert registered.status_code == 201, registered.text


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_tasks_result_left_by_its_client_waits_once_per_task(serve: t.Any, worker: str) -> None:
    """Each ``tasks/result`` whose client left waited on for the task (up to its ttl).

    A client that asked again and again for the result of one task, each time leaving,
    left one handler per request polling the task store ten times a second until the
    task ended: nothing bounded how many. A later ``tasks/result`` of the same task in
    the same session now ends the wait of the one before it.

    Then one client runs its share of the worker's tasks (``MCP_TASK_SHARE_PER_CLIENT``,
    2 of 4): its next task is refused, naming the key, while another client (another
    address) still starts one. The slots were everybody's: one client's slow tasks
    kept every other client from starting any until they ended (up to an hour).
    """
    # The stream opens after a heartbeat of silence.
    env = {"FLASK_MCP_SSE_HEARTBEAT": "0.2", "FLASK_MCP_TASK_MAX_RUNNING": "4"}
    server = serve(APP, worker, threads=4, env=env)
    session = http_session(server.port)
    created = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": 60}, "task": {"ttl": 120000}},
    }
    status, _, data = http_post(server.port, created, session)
    assert status == 200, data
    task_id = json.loads(data)["result"]["task"]["taskId"]
    wait_for(server.port, "running_requests", 1, "the task does not run")

    for request_id in range(2, 7):
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tasks/result",
            "params": {"taskId": task_id},
        }
        sock = post(server.port, session, message)
        head = read_head(sock)  # the stream is open: the handler waits for the task
        assert head.startswith(b"HTTP/1.1 200"), head
        sock.close()  # the client is gone: no DELETE, no cancel

    # The task, and the one tasks/result its client may still come back for.
    wait_for(server.port, "running_requests", 2, "tasks/result waits pile up")

    def create_2026(source: str) -> dict[str, t.Any]:
        """Create a 2026-07-28 task of ``slow`` from the address ``source``."""
        params = {"name": "slow", "arguments": {"seconds": 60}}
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        message["params"] = {**params, "_meta": meta(caps)}
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(transport=transport, timeout=30) as http:
            answer = http.post(server.url, json=message, headers=headers_2026("tools/call", params))
        assert answer.status_code == 200, answer.text
        return t.cast(dict[str, t.Any], answer.json())

    assert create_2026(HOST)["result"]["status"] == "working"  # its second: its share
    status, _, data = http_post(server.port, {**created, "id": 7}, session)
    refused = json.loads(data)
    assert refused["error"]["code"] == -32603, refused
    assert "MCP_TASK_SHARE_PER_CLIENT" in refused["error"]["message"], refused
    assert create_2026("127.0.0.2")["result"]["status"] == "working"  # another client's
    wait_for(server.port, "running_requests", 4, "the other client's task does not run")


def test_a_call_answered_whole_frees_its_thread_when_its_client_leaves(serve: t.Any) -> None:
    """On gthread with every stream slot held, a 2025-11-25 call that may stream is
    answered with one JSON response; its client leaving frees the thread that waits for it.

    The view's thread waited for the call's end (up to ``MCP_REQUEST_TIMEOUT``, or the
    task's ttl for ``tasks/result``) whether its client was still there or not: a client
    that sent such calls and left took every thread of the worker, and nobody else was
    answered. The call itself runs on (a dropped connection is no cancellation).
    """
    env = {"FLASK_MCP_MAX_STREAMS": "1", "FLASK_MCP_SSE_HEARTBEAT": "0.2"}
    server = serve(APP, "gthread", threads=4, env=env)  # one thread left for /debug/stats
    session = http_session(server.port)

    def nap(request_id: int) -> socket.socket:
        params = {"name": "nap", "arguments": {"seconds": 60}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        return post(server.port, session, message)

    holder = nap(1)
    try:
        read_head(holder)  # it holds the only stream slot, and a thread
        left = [nap(2), nap(3)]  # answered whole: each waits in a thread of its own
        wait_for(server.port, "running_requests", 3, "the calls did not start")
        for sock in left:
            sock.close()  # the client is gone

        # Their threads are given back: their responses end (499, logged when they do).
        deadline = time.monotonic() + 10
        while server.log().count('"POST /mcp HTTP/1.1" 499') < 2:
            assert time.monotonic() < deadline, "the calls of the client that left hold threads"
            time.sleep(0.1)
        assert debug_stats(server.port)["running_requests"] == 3  # they run on
    finally:
        holder.close()


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_a_batch_whose_client_left_runs_no_more_of_its_calls(serve: t.Any, worker: str) -> None:
    """A 2025-03-26 batch stops at the call in flight once its client is gone.

    Its calls ran one after the other to the last whether the client was still there or
    not: a batch of thousands of calls (each bounded by ``MCP_REQUEST_TIMEOUT``, the
    batch by nothing) held its thread (or greenlet) for their sum, and on gthread as many
    such POSTs as threads, sent once and left, locked every other client out.
    """
    server = serve(APP, worker, threads=3)
    version = "2025-03-26"
    session = http_session(server.port, version)
    call = {"name": "nap", "arguments": {"seconds": 1}}
    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call} for i in range(60)]
    body = json.dumps(batch)
    sock = socket.create_connection((HOST, server.port), timeout=10)
    sock.sendall(
        (
            f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {version}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    )
    wait_for(server.port, "running_requests", 1, "the batch did not start")
    sock.close()  # the client is gone
    deadline = time.monotonic() + 30
    while '"POST /mcp HTTP/1.1" 499' not in server.log():
        assert time.monotonic() < deadline, "the batch of the client that left runs on"
        time.sleep(0.1)
    assert debug_stats(server.port)["running_requests"] == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # handshake-era calls in mcp 2.3
def test_a_client_holding_its_share_of_streams_leaves_others_their_get_stream(
    serve: t.Any,
) -> None:
    """One client may hold only its share of a threaded worker's stream slots
    (``MCP_STREAM_SHARE_PER_CLIENT``): the official client of another still gets its GET
    stream and hears ``notifications/tools/list_changed``.

    A client that opened session after session, each with its GET stream, took every
    GET stream slot of the worker, and its streamed calls the rest: every other client's
    GET was told to come back later for as long as it held them.
    """
    # --threads 8: 7 stream slots, 3 of them for GET streams; one client may hold 4 and 2.
    env = {"FLASK_MCP_SSE_HEARTBEAT": "0.2"}  # a streamed call's stream opens at once
    server = serve(APP, "gthread", threads=8, env=env)
    hostile = "127.0.0.2"  # another client than the official one's 127.0.0.1
    held: list[socket.socket] = []
    told_later = 0
    try:
        for _ in range(3):  # as many GET streams as the worker holds
            sock = try_get_stream(server.port, http_session(server.port), source=hostile)
            if sock is None:
                told_later += 1
            else:
                held.append(sock)
        session = http_session(server.port)
        for request_id in (1, 2):  # and streamed calls for the other slots it may hold
            params = {"name": "nap", "arguments": {"seconds": 60}}
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            held.append(post(server.port, session, message, source=hostile))
            read_head(held[-1])
        stats = debug_stats(server.port)

        gets = anyio.run(listen_for_list_changed, server.url)

        assert [r.status_code for r in gets][:1] == [200]
        assert (told_later, stats["open_streams"]) == (1, 4)  # 2 GET streams, 2 calls
    finally:
        for sock in held:
            sock.close()
