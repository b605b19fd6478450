"""Helpers of :mod:`flask_mcp.testing`: SSE reading with timeouts, and a live server."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
import typing as t
from collections.abc import Iterator

from werkzeug.exceptions import MethodNotAllowed
from werkzeug.exceptions import NotFound
from werkzeug.routing import RequestRedirect

from .errors import INTERNAL_ERROR
from .errors import MCPError

if t.TYPE_CHECKING:
    from flask import Flask
    from werkzeug.test import TestResponse

#: What :meth:`EventStream.get` returns once the stream ended.
END = object()


class EventStream:
    """Reads an SSE response on a helper thread, so that every wait has a timeout.

    Only the helper thread touches the response's iterator: a stream whose
    reader gave up is closed there, at its next chunk (at most one heartbeat).
    """

    def __init__(self, response: TestResponse) -> None:
        self._response = response
        self._messages: queue.Queue[t.Any] = queue.Queue()
        self._stop = threading.Event()
        #: The id of the last event that had one: where a resumption starts.
        self.last_id: str | None = None
        self._thread = threading.Thread(target=self._pump, daemon=True, name="mcp-test-sse")
        self._thread.start()

    def _pump(self) -> None:
        buffer = b""
        try:
            for chunk in t.cast(t.Iterable[bytes], self._response.response):
                buffer += chunk.replace(b"\r\n", b"\n")
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    lines = event.split(b"\n")
                    data = [line[5:].removeprefix(b" ") for line in lines if line[:5] == b"data:"]
                    for line in lines:
                        if line[:3] == b"id:":
                            self.last_id = line[3:].strip().decode()
                    if data and any(data):
                        self._messages.put(json.loads(b"\n".join(data)))
                if self._stop.is_set():
                    break
        except BaseException as exc:  # handed to the reader, who raises it
            self._messages.put(exc)
        finally:
            self._response.close()
            self._messages.put(END)

    def get(self, timeout: float) -> t.Any:
        """Return the next message, ``END`` when the stream ended, ``None`` on timeout."""
        try:
            item = self._messages.get(timeout=max(timeout, 0))
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the server to end the stream."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Stop reading: the response is closed at its next chunk."""
        self._stop.set()


class Subscription:
    """The notifications of a ``subscriptions/listen`` stream (or a session's GET stream).

    Made by :meth:`MCPTestClient.listen`; use it as a context manager.
    """

    def __init__(self, stream: EventStream, methods: set[str], uris: set[str]) -> None:
        self._stream = stream
        self._methods = methods
        self._uris = uris
        #: The filter the server honours (``notifications/subscriptions/acknowledged``;
        #: on a handshake-era GET stream, what was asked for).
        self.acknowledged: dict[str, t.Any] = {}

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, timeout: float = 5.0) -> dict[str, t.Any] | None:
        """Return the next notification asked for, or ``None`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            message = self._stream.get(deadline - time.monotonic())
            if message is None:
                return None
            if message is END:
                raise AssertionError("The server ended the notification stream.")
            method = message.get("method")
            if method in self._methods or (
                method == "notifications/resources/updated"
                and message.get("params", {}).get("uri") in self._uris
            ):
                return t.cast(dict[str, t.Any], message)

    def close(self) -> None:
        """Stop listening (the server notices at the stream's next heartbeat)."""
        self._stream.close()


def find_endpoint(app: Flask, path: str | None) -> str:
    """Return the MCP endpoint's path on ``app``.

    :raises RuntimeError: there is none at ``path``.
    """
    mcp = app.extensions.get("mcp")
    if mcp is None:
        raise RuntimeError(
            f"The app {app.name!r} has no MCP endpoint: did you call init_app? Call "
            "mcp.init_app(app) (or pass the app to MCP(...)) before making the test client."
        )
    served = t.cast(str, mcp.state(app).settings.path)
    path = path or served
    adapter = app.url_map.bind(app.config.get("SERVER_NAME") or "localhost")
    try:
        adapter.match(path.partition("?")[0], method="POST")  # a query string may follow
    except (NotFound, MethodNotAllowed, RequestRedirect):
        raise RuntimeError(
            f"The app {app.name!r} has no MCP endpoint at {path!r}: did you call init_app? "
            f"Its MCP server is served at {served!r} (MCP_PATH); pass that path, or none."
        ) from None
    return path


class LiveServer:
    """An app served over HTTP by :func:`live_server`.

    :param host: the address it listens on.
    :param port: the port it listens on.
    :param path: the MCP endpoint's path.
    """

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host = host
        self.port = port
        self.path = path

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint's URL, to give an HTTP client."""
        return self.base_url + self.path


@contextlib.contextmanager
def live_server(
    app: t.Any, *, host: str = "127.0.0.1", port: int = 0, timeout: float = 10.0
) -> Iterator[LiveServer]:
    """Serve ``app`` on a real socket from a background thread until the block exits.

    For HTTP clients such as the official ``mcp`` client, which cannot talk to
    the Werkzeug test client. It is Werkzeug's threaded server (one thread per
    connection), so SSE streams and server-to-client round trips work.

    .. code-block:: python

        with live_server(app) as server:
            async with mcp.Client(server.url, mode="2026-07-28") as client: ...

    :param app: a Flask app with an MCP endpoint, or any WSGI app (its
        endpoint is then taken to be ``/mcp``).
    :param host: the address to listen on.
    :param port: the port, by default a free one.
    :param timeout: most seconds to wait for the server to stop.
    :raises RuntimeError: the server did not stop within ``timeout``.
    """
    from werkzeug.serving import make_server

    mcp = getattr(app, "extensions", {}).get("mcp")
    path = t.cast(str, mcp.state(app).settings.path) if mcp is not None else "/mcp"
    server = make_server(host, port, app, threaded=True)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
        name="mcp-live-server",
    )  # fmt: skip
    thread.start()
    try:
        yield LiveServer(host, server.port, path)
    finally:
        stopper = threading.Thread(target=server.shutdown, daemon=True)
        stopper.start()
        stopper.join(timeout)
        server.server_close()
        thread.join(timeout)
    if thread.is_alive():
        raise RuntimeError(f"The live server did not stop within {timeout:g} seconds.")


def result_of(answer: dict[str, t.Any], status: int) -> dict[str, t.Any]:
    """Return the result of an answer.

    :raises flask_mcp.MCPError: it is an error (``http_status`` is the HTTP status).
    """
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        raise MCPError(
            error.get("code", INTERNAL_ERROR),
            error.get("message", ""),
            error.get("data"),
            http_status=status,
        )
    return t.cast(dict[str, t.Any], answer["result"])
