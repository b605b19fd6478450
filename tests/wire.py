"""How the tests talk to an MCP app in-process: JSON-RPC messages, headers, ``_meta``, SSE.

One place for the raw wire of both eras, so that no test module imports another:

- the handshake era (2025-11-25) over Flask's test client: :func:`post`, :func:`initialize`,
  :func:`rpc`, :func:`open_get`, :func:`sse_messages`, :func:`read_events`;
- the 2026-07-28 era: :func:`meta`, :func:`headers_2026`, :func:`send_2026`, :class:`Wire`,
  :func:`parse` and the app factory :func:`make_app`;
- any WSGI app through :mod:`wsgiref.validate` (PEP 3333): :func:`wsgi_call`, :class:`Reply`;
- an app served in a subprocess (``harness.start_server``), over plain ``http.client``:
  :func:`http_post`, :func:`http_session`, :func:`debug_stats`, and GET streams on raw
  sockets: :func:`try_get_stream`, :func:`open_get_stream`;
- the official ``mcp`` client with answering callbacks: :func:`client`, :func:`text_of`;
  a session that waits for ``list_changed``: :func:`listen_for_list_changed`;
- a stdio server on two pipes: :class:`Pipes`, :data:`STDIO_INIT`.

Where a test only needs a well-behaved client, :class:`flask_mcp.testing.MCPTestClient` does
the job; these helpers are for tests that look at (or break) the wire itself.  Servers in
subprocesses, Redis and the conformance runner are in ``harness.py``.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import socket
import threading
import time
import typing as t
import warnings
from dataclasses import dataclass
from wsgiref.handlers import SimpleHandler
from wsgiref.util import is_hop_by_hop
from wsgiref.validate import WSGIWarning
from wsgiref.validate import validator

import anyio
import httpx2
import mcp_types as types
from flask import Flask
from flask.testing import FlaskClient
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.transport.stdio import StdioServer

ACCEPT = "application/json, text/event-stream"
HOST = "127.0.0.1"
HEADERS = {"Accept": ACCEPT, "Content-Type": "application/json"}
V2026 = "2026-07-28"
#: The client capabilities a 2026-07-28 request declares unless told otherwise.
CAPS = {"sampling": {}, "elicitation": {}, "roots": {}}


def sse_data(text: str) -> list[dict[str, t.Any]]:
    """The JSON objects of every ``data:`` line of an SSE body."""
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


# -- the handshake era over Flask's test client ---------------------------------------------


class ThreadedTestClient(FlaskClient):
    """A Flask test client whose requests declare a threaded server (``wsgi.multithread``).

    Werkzeug's default says single-threaded, where the server must not hold SSE streams;
    :class:`flask_mcp.testing.MCPTestClient` declares threads the same way.
    """

    def open(self, *args: t.Any, **kwargs: t.Any) -> t.Any:
        kwargs.setdefault("multithread", True)
        return super().open(*args, **kwargs)


def post(client: t.Any, body: t.Any, session: str | None = None, **headers: str) -> t.Any:
    merged = dict(HEADERS)
    if session:
        merged["Mcp-Session-Id"] = session
    merged.update(headers)
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post("/mcp", data=data, headers=merged)


def initialize(client: t.Any, version: str = "2025-11-25", initialized: bool = True) -> str:
    response = post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
    )
    assert response.status_code == 200
    session = response.headers["Mcp-Session-Id"]
    if initialized:
        note = post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert note.status_code == 202
    return t.cast(str, session)


def rpc(client: t.Any, session: str, method: str, params: t.Any = None, id: t.Any = 1) -> t.Any:
    body: dict[str, t.Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return post(client, body, session)


def sse_messages(response: t.Any) -> list[dict[str, t.Any]]:
    return sse_data(response.get_data(as_text=True))


def open_get(client: t.Any, session: str, last_event_id: str | None = None) -> t.Any:
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    return client.get("/mcp", headers=headers, buffered=False)


def sse_events(lines: t.Iterator[str]) -> t.Iterator[dict[str, str]]:
    """Parse SSE lines (``httpx``'s ``iter_lines``) into events: ``{"id": ..., "data": ...}``."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            event[name] = value.strip()


def read_events(
    chunks: t.Iterator[bytes], count: int, timeout: float = 5.0
) -> list[dict[str, t.Any]]:
    """Read ``count`` SSE data events (skipping priming events and comments)."""
    found: list[dict[str, t.Any]] = []
    deadline = time.monotonic() + timeout
    buffer = b""
    while len(found) < count:
        assert time.monotonic() < deadline, f"only {found} arrived"
        buffer += next(chunks)
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            fields = dict(
                line.split(": ", 1)
                for line in event.decode().splitlines()
                if ": " in line and not line.startswith(":")
            )
            if fields.get("data", "").startswith("{"):
                found.append({"id": fields.get("id"), **json.loads(fields["data"])})
    return found


# -- the 2026-07-28 era -------------------------------------------------------------------


def meta(caps: dict[str, t.Any] | None = None, **extra: t.Any) -> dict[str, t.Any]:
    """The ``_meta`` of a 2026-07-28 request."""
    return {
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": CAPS if caps is None else caps,
        **extra,
    }


def headers_2026(method: str, params: dict[str, t.Any]) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 request: version, method and (where one goes) name."""
    headers = {
        "Accept": ACCEPT,
        "MCP-Protocol-Version": V2026,
        "Mcp-Method": method,
    }
    name = params.get("uri") if method == "resources/read" else params.get("name")
    if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
        headers["Mcp-Name"] = name
    return headers


def send_2026(
    client: t.Any, method: str, params: dict[str, t.Any], *, caps: dict[str, t.Any] | None = None
) -> t.Any:
    """POST one 2026-07-28 request (id 1) through a Flask test client; return the response."""
    body = {**params, "_meta": meta(caps)}
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": body}
    return client.post(
        "/mcp",
        data=json.dumps(message),
        content_type="application/json",
        headers=headers_2026(method, params),
    )


class Wire:
    """Sends raw 2026-07-28 POSTs through Flask's test client with correct headers."""

    def __init__(self, app: Flask) -> None:
        self.client = app.test_client()
        self.ids = iter(range(1, 1_000_000))

    def headers(self, method: str, params: dict[str, t.Any]) -> dict[str, str]:
        return headers_2026(method, params)

    def post(
        self,
        method: str,
        params: dict[str, t.Any] | None = None,
        *,
        caps: dict[str, t.Any] | None = None,
        headers: dict[str, str | None] | None = None,
        raw_params: bool = False,
        request_id: t.Any = None,
        buffered: bool = True,
        **extra_meta: t.Any,
    ) -> t.Any:
        """POST one request; ``headers`` values of ``None`` remove a header."""
        body_params = dict(params or {})
        if not raw_params:
            body_params["_meta"] = meta(caps, **extra_meta)
        sent = self.headers(method, body_params)
        for key, value in (headers or {}).items():
            sent = {k: v for k, v in sent.items() if k.lower() != key.lower()}
            if value is not None:
                sent[key] = value
        message = {"jsonrpc": "2.0", "id": request_id or next(self.ids), "method": method}
        message["params"] = body_params
        return self.client.post(
            "/mcp", data=json.dumps(message), content_type="application/json", headers=sent,
            buffered=buffered, multithread=True,  # a threaded server: responses may stream
        )  # fmt: skip

    def call(self, method: str, params: dict[str, t.Any] | None = None, **kwargs: t.Any) -> t.Any:
        """POST and return ``(status, final message, notifications)``."""
        response = self.post(method, params, **kwargs)
        messages = parse(response)
        return response.status_code, messages[-1], messages[:-1]


def parse(response: t.Any) -> list[dict[str, t.Any]]:
    """Every JSON-RPC message of a JSON or SSE response body."""
    body = response.get_data(as_text=True)
    if response.mimetype == "application/json":
        return [json.loads(body)]
    assert response.mimetype == "text/event-stream"
    messages = []
    for line in body.splitlines():
        assert not line.startswith("id:"), "2026-07-28 streams are not resumable: no event ids"
        if line.startswith("data: "):
            messages.append(json.loads(line[6:]))
    return messages


def make_app(mcp: MCP, **config: t.Any) -> Flask:
    """A Flask app serving ``mcp`` (``TESTING``, a ``SECRET_KEY``; ``config`` on top)."""
    app = Flask("stateless_test")
    app.config.update({"TESTING": True, "SECRET_KEY": "test-secret", **config})
    mcp.init_app(app)
    return app


# -- any WSGI app under wsgiref's validator ----------------------------------------------


class StrictHandler(SimpleHandler):
    """wsgiref's server side, with the app's errors raised instead of turned into a 500."""

    def handle_error(self) -> None:
        raise  # noqa: PLE0704 - called by BaseHandler.run inside its ``except``


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> t.Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, t.Any]]:
        return sse_data(self.body.decode())


def wsgi_call(
    app: t.Any,
    method: str,
    body: t.Any = None,
    *,
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
) -> Reply:
    """Run one request through ``validator(app)`` on wsgiref's handler and parse its reply."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "localhost",
    }
    if data is not None:
        environ["CONTENT_LENGTH"] = str(len(data))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    out = io.BytesIO()
    errors = io.StringIO()
    handler = StrictHandler(
        io.BytesIO(data or b""), out, errors, environ, multithread=True, multiprocess=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", WSGIWarning)
        handler.run(validator(app))
    assert errors.getvalue() == ""
    head, _, payload = out.getvalue().partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    found = dict(line.split(": ", 1) for line in lines)
    assert not [name for name in found if is_hop_by_hop(name)]
    return Reply(int(status_line.split()[1]), found, payload)


def initialize_request(version: str = "2025-11-25") -> dict[str, t.Any]:
    client = {"name": "v", "version": "1"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


# -- an app served in a subprocess, over plain HTTP ----------------------------------------


def http_post(
    port: int, body: t.Any, session: str | None = None, **extra: str
) -> tuple[int, dict[str, str], bytes]:
    """POST one message (or a batch) to the server's ``/mcp`` on a connection of its own;
    return the status, the headers and the whole body.  ``extra`` headers go on top."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    headers = dict(HEADERS)
    if session:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    headers.update(extra)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def call(http: t.Any, url: str, headers: dict[str, str], name: str, **arguments: t.Any) -> t.Any:
    """POST a ``tools/call`` of ``name`` with ``arguments`` on an ``httpx.Client``."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return http.post(url, headers=headers, json=message)


def start_session(
    http: t.Any, url: str, capabilities: dict[str, t.Any] | None = None
) -> dict[str, str]:
    """Start a 2025-11-25 session with raw HTTP on an ``httpx.Client``; return the headers
    for its next requests (the session id and the protocol version included)."""
    body = initialize_request()
    body["params"]["capabilities"] = capabilities or {}
    response = http.post(url, headers=HEADERS, json=body)
    assert response.status_code == 200, response.text
    headers = {
        **HEADERS,
        "Mcp-Session-Id": response.headers["mcp-session-id"],
        "MCP-Protocol-Version": body["params"]["protocolVersion"],
    }
    http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def http_session(port: int, version: str = "2025-11-25") -> str:
    """Initialize a session (2025-11-25 unless told) over plain HTTP and return its id."""
    status, headers, data = http_post(port, initialize_request(version))
    assert status == 200, data
    session = headers["Mcp-Session-Id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http_post(port, initialized, session)[0] == 202
    return session


def try_get_stream(
    port: int, session: str, source: str | None = None, version: str = "2025-11-25"
) -> socket.socket | None:
    """Open the session's GET stream on a raw socket; return once its priming event came.

    :param source: the address to connect from (``127.0.0.2``: another client of the
        server's per-client bounds); ``None``: any.
    :return: the socket, or ``None`` when the server told the client to come back later (a
        whole response with a ``retry`` hint: its head gives its ``Content-Length``).
    """
    sock = socket.create_connection(
        (HOST, port), timeout=10, source_address=None if source is None else (source, 0)
    )
    sock.sendall(
        (
            f"GET /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {version}\r\n\r\n"
        ).encode()
    )
    data = b""
    while b"\r\n\r\n" not in data or b"\n\n" not in data.partition(b"\r\n\r\n")[2]:
        chunk = sock.recv(4096)  # the socket's timeout bounds the wait
        assert chunk, f"the server closed the GET stream: {data!r}"
        data += chunk
    head = data.partition(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"text/event-stream" in head
    if b"\r\ncontent-length:" in head.lower():  # come back later
        sock.close()
        return None
    assert b"id: " in data  # a stream the server holds
    return sock


def open_get_stream(port: int, session: str, source: str | None = None) -> socket.socket:
    """Open the session's GET stream (:func:`try_get_stream`), which the server must hold."""
    sock = try_get_stream(port, session, source)
    assert sock is not None, "the GET was told to come back later"
    return sock


def debug_stats(port: int) -> dict[str, int]:
    """The live-state counters of a test app's ``GET /debug/stats`` (``tests/_apps``)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("GET", "/debug/stats")
        return t.cast(dict[str, int], json.loads(conn.getresponse().read()))
    finally:
        conn.close()


# -- the official client ------------------------------------------------------------------


async def _sampling(
    context: t.Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    text = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=text.upper()), model="m"
    )


async def _elicitation(context: t.Any, params: t.Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _roots(context: t.Any) -> types.ListRootsResult:
    return types.ListRootsResult(
        roots=[types.Root(uri="file:///tmp/a"), types.Root(uri="file:///tmp/b")]
    )


async def listen_for_list_changed(
    url: str, on_get: t.Callable[[httpx2.Response], t.Awaitable[None]] | None = None
) -> list[httpx2.Response]:
    """Open a session with the official client, add a tool, wait for ``list_changed``.

    Returns the responses to the client's GET requests.
    """
    gets: list[httpx2.Response] = []
    heard = anyio.Event()

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "GET":
            gets.append(response)
            if on_get is not None:
                await on_get(response)

    async def on_message(message: t.Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(timeout=timeout, event_hooks={"response": [record]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        assert not (await session.call_tool("add_tool", {"name": "late"})).is_error
        try:
            with anyio.fail_after(20):
                await heard.wait()
        except TimeoutError:
            statuses = [r.status_code for r in gets]
            raise AssertionError(f"no list_changed; the GET requests got {statuses}") from None
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert "late" in names
    return gets


def client(url: str, **kwargs: t.Any) -> Client:
    """The official client in the handshake era; it samples (upper case), elicits (``Ada``)
    and lists two roots."""
    return Client(
        url,
        mode="legacy",
        sampling_callback=_sampling,
        elicitation_callback=_elicitation,
        list_roots_callback=_roots,
        **kwargs,
    )


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def add_two_phase(mcp: MCP, release: threading.Event) -> None:
    """Add the tool ``two_phase`` to ``mcp``: it logs "phase 1", closes its SSE stream (the
    client resumes with ``Last-Event-ID``), waits for ``release`` (5 s at most), logs
    "phase 2" and returns "complete"."""

    @mcp.tool()
    def two_phase(ctx: Context) -> str:
        """Emit, drop the connection, emit more, finish."""
        ctx.log("info", "phase 1")
        ctx.close_sse_stream()
        release.wait(5)
        ctx.log("info", "phase 2")
        return "complete"


#: The ``initialize`` request a stdio test client sends (2025-11-25, with sampling).
STDIO_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "pipe", "version": "1"},
    },
}


class Pipes:
    """A :class:`~flask_mcp.transport.stdio.StdioServer` on two pipes, and the client's ends."""

    def __init__(self, app: Flask, mcp: MCP, path: str | None = None) -> None:
        read_in, self._write_in = os.pipe()
        self._read_out, write_out = os.pipe()
        self.to_server = os.fdopen(self._write_in, "wb")
        self.from_server = os.fdopen(self._read_out, "rb")
        self.server = StdioServer(
            mcp.dispatcher,
            mcp.state(app),
            os.fdopen(read_in, "rb"),
            os.fdopen(write_out, "wb"),
            path=path,
        )
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()

    def send(self, message: t.Any) -> None:
        self.to_server.write(json.dumps(message).encode() + b"\n")
        self.to_server.flush()

    def receive(self, timeout: float | None = None) -> t.Any:
        """Read the server's next message; with ``timeout``, fail when none comes in time."""
        if timeout is None:
            line = self.from_server.readline()
        else:
            lines: list[bytes] = []
            reader = threading.Thread(
                target=lambda: lines.append(self.from_server.readline()), daemon=True
            )
            reader.start()
            reader.join(timeout)
            assert lines, f"the server wrote nothing in {timeout} seconds"
            line = lines[0]
        assert line, "the server closed stdout"
        return json.loads(line)

    def handshake(self) -> t.Any:
        """Send ``initialize`` and ``notifications/initialized``; return the initialize result."""
        self.send(STDIO_INIT)
        result = self.receive()["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self) -> None:
        self.to_server.close()
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.server.stdout.close()
        self.from_server.close()
