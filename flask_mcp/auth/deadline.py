"""One deadline for a whole outgoing HTTP fetch: its connection is cut when time is up.

A client library's timeout bounds each wait for a byte: a host (or its proxy)
that sends its TLS handshake, status line, headers or body a byte at a time
holds the fetch, and the request that made it, for as long as it goes on. A
:class:`Deadline` shuts the fetch's connection down at its time, which fails the
waiting read at once. The JWKS fetch of :mod:`~flask_mcp.auth.jwt_authorizer`
(urllib, :meth:`Deadline.urlopen`) and the Client ID Metadata Document fetch of
the authorization server (httpx, :meth:`Deadline.trace`) use it.

Name resolution comes before there is a connection to cut: :meth:`Deadline.resolve`
runs it in a thread of its own and stops waiting for it at the deadline; one that
outlives it ends in that thread, and :meth:`Deadline.when_resolved` tells when.
"""

from __future__ import annotations

import _socket
import contextlib
import functools
import http.client
import socket
import threading
import time
import typing as t
import urllib.request

if t.TYPE_CHECKING:
    from types import TracebackType


class Deadline:
    """Shuts down a fetch's connection at ``at`` (a :func:`time.monotonic` time).

    Used as a context manager around the fetch, it waits for the deadline in a
    timer thread (a greenlet under gevent). Each connection the fetch makes is
    handed to :meth:`watch`, which keeps a duplicate of its descriptor (TLS takes
    the socket object over, and a descriptor number the client closed could be
    another connection's by the deadline); shutting that down fails the fetch's
    waiting read or handshake.
    """

    def __init__(self, at: float) -> None:
        self.at = at
        #: Whether the deadline came before the fetch ended (its connection was cut).
        self.cut = False
        self._sock: _socket.socket | None = None
        self._over = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        #: Resolutions of :meth:`resolve` whose threads still run.
        self._resolving = 0
        #: What :meth:`when_resolved` was given, to call once none runs.
        self._after_resolving: list[t.Callable[[], None]] = []

    def watch(self, sock: socket.socket) -> None:
        """Cut ``sock`` at the deadline (at once if it is over); a redirect's replaces it."""
        with self._lock:
            if self._over:
                return
            if self._sock is not None:  # an earlier connection of the fetch, closed by now
                self._sock.close()
            self._sock = _socket.socket(fileno=_socket.dup(sock.fileno()))
            if self.cut:  # the deadline came while connecting
                self._shut()

    def trace(self, event: str, info: dict[str, t.Any]) -> None:
        """An httpx ``trace`` extension: :meth:`watch` the connection once it is made."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        raw = stream.get_extra_info("socket") if stream is not None else None
        if raw is not None:
            self.watch(raw)

    def resolve(self, host: str, port: int) -> list[tuple[t.Any, ...]]:
        """Return :func:`socket.getaddrinfo` of ``host`` for a TCP connection to ``port``.

        The resolution runs in a daemon thread (a greenlet under gevent, whose resolver
        then answers): the system resolver takes as long as its own timeouts say, and a
        DNS server that does not answer would hold the fetch for all of it. One that
        outlives the deadline ends in its thread, unwaited for.

        :raises TimeoutError: the deadline came first.
        :raises OSError: the name does not resolve.
        """
        outcome: list[t.Any] = []
        done = threading.Event()

        def run() -> None:
            try:
                outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
            except (OSError, UnicodeError) as exc:  # UnicodeError: a label IDNA refuses
                outcome.append(exc)
            finally:
                done.set()
                self._resolved()

        with self._lock:
            self._resolving += 1
        threading.Thread(target=run, name=f"flask-mcp resolve {host}", daemon=True).start()
        if not done.wait(max(0.0, self.at - time.monotonic())):
            self.cut = True
            raise TimeoutError(f"the name {host!r} did not resolve before the deadline")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return t.cast("list[tuple[t.Any, ...]]", outcome[0])

    def when_resolved(self, callback: t.Callable[[], None]) -> None:
        """Call ``callback`` once no name resolution of this deadline runs: now, or when
        the last one that outlived the deadline ends, in its thread.

        What a fetch holds for as long as its threads run (a slot among a bounded
        number of fetches) is given back this way.
        """
        with self._lock:
            if self._resolving:
                self._after_resolving.append(callback)
                return
        callback()

    def _resolved(self) -> None:
        with self._lock:
            self._resolving -= 1
            if self._resolving:
                return
            callbacks, self._after_resolving = self._after_resolving, []
        for callback in callbacks:
            callback()

    def create_connection(
        self,
        address: tuple[str, int],
        timeout: float | None = None,
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        """Return a socket connected as by :func:`socket.create_connection`, watched.

        The name is resolved by :meth:`resolve`; each of its addresses is tried in turn.
        """
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in self.resolve(host, port):
            sock = socket.socket(family, kind, proto)
            try:
                if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                    sock.settimeout(timeout)
                if source_address is not None:
                    sock.bind(source_address)
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            self.watch(sock)
            return sock
        raise error if error is not None else OSError(f"{host!r} resolves to no address")

    def urlopen(self, request: urllib.request.Request, timeout: float) -> http.client.HTTPResponse:
        """Open ``request`` as :func:`urllib.request.urlopen` does, its connections watched.

        ``timeout`` bounds each wait for a byte, as urllib's does; use it inside the
        ``with`` block of the deadline, which bounds the rest.
        """
        opener = urllib.request.build_opener(_HTTPHandler(self), _HTTPSHandler(self))
        response = opener.open(request, timeout=timeout)
        return t.cast(http.client.HTTPResponse, response)

    def _fire(self) -> None:
        with self._lock:
            if not self._over:
                self.cut = True
                self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):  # the peer closed it meanwhile
                self._sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Deadline:
        self._timer = threading.Timer(max(0.0, self.at - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._over = True
            if self._sock is not None:
                self._sock.close()  # the duplicate only: the client closes the connection


class _HTTPConnection(http.client.HTTPConnection):
    """An ``http://`` connection whose socket its deadline watches."""

    def __init__(self, *args: t.Any, deadline: Deadline, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.create_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    """An ``https://`` connection whose socket (before TLS) its deadline watches."""

    def __init__(self, *args: t.Any, deadline: Deadline, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.create_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(
        self, http_class: t.Any, req: urllib.request.Request, **http_conn_args: t.Any
    ) -> http.client.HTTPResponse:
        connection = functools.partial(_HTTPConnection, deadline=self.deadline)
        return super().do_open(connection, req, **http_conn_args)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(
        self, http_class: t.Any, req: urllib.request.Request, **http_conn_args: t.Any
    ) -> http.client.HTTPResponse:
        connection = functools.partial(_HTTPSConnection, deadline=self.deadline)
        return super().do_open(connection, req, **http_conn_args)


__all__ = ["Deadline"]
