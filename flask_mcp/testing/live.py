"""Serve an app on a real socket for HTTP clients such as the official ``mcp`` client."""

from __future__ import annotations

import contextlib
import threading
import typing as t
from collections.abc import Iterator


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


__all__ = ["LiveServer", "live_server"]
