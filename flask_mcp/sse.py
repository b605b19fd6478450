"""Server-Sent Events framing and the stream iterator behind every SSE response."""

from __future__ import annotations

import select
import socket
import time
import typing as t

from . import jsonrpc
from .backends.base import DISCONNECT
from .backends.base import END
from .backends.base import MESSAGE

if t.TYPE_CHECKING:
    from .session import Outbox

HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}
HEARTBEAT = b": ping\n\n"
#: Seconds between checks that the client is still connected, on an idle stream.
LIVENESS_INTERVAL = 1.0
#: The least ``retry`` hint (milliseconds) on a GET answered without a stream, so a
#: client that polls for a free stream cannot keep a worker busy.
BUSY_RETRY_MS = 2000


def event_id(stream_id: str, seq: int) -> str:
    """Return the SSE event id of event ``seq`` of stream ``stream_id``."""
    return f"{stream_id}-{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """Split an event id into stream id and sequence number; ``None`` if malformed."""
    stream_id, sep, seq = value.strip().rpartition("-")
    if not sep or not stream_id or not seq.isdigit() or len(value) > 200:
        return None
    return stream_id, int(seq)


def frame(message: dict[str, t.Any], ident: str | None = None) -> bytes:
    """Encode one message as an SSE event."""
    head = f"id: {ident}\nevent: message\ndata: " if ident is not None else "event: message\ndata: "
    return head.encode() + jsonrpc.dumps_bytes(message) + b"\n\n"


def priming(ident: str, retry_ms: int) -> bytes:
    """Return the priming event: an id, a retry hint and empty data."""
    return f"id: {ident}\nretry: {retry_ms}\ndata: \n\n".encode()


def retry(retry_ms: int) -> bytes:
    """Return a bare ``retry`` field, sent before the server closes a connection."""
    return f"retry: {retry_ms}\n\n".encode()


def client_gone(sock: t.Any) -> bool:
    """Tell whether the peer closed the connection (a readable socket with no data)."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return bool(sock.recv(1, socket.MSG_PEEK) == b"")
    except (OSError, ValueError):
        return True


class StreamReader:
    """Turns an outbox into SSE bytes until the stream ends or the connection must close.

    :param outbox: the stream to read.
    :param after: the last sequence number the client already has.
    :param with_ids: attach event ids (resumable streams only).
    :param heartbeat: seconds of silence before a keep-alive comment.
    :param max_seconds: close the connection after this long (the stream goes on).
    :param retry_ms: the ``retry`` hint sent before a server-side close.
    :param on_delivered: called with each delivered sequence number.
    :param sock: the client's socket (:func:`flask_mcp._concurrency.client_socket`):
        while the stream is idle it is checked every :data:`LIVENESS_INTERVAL` seconds, so a
        client that left without a word frees its stream at once instead of at the next
        failed write.
    """

    def __init__(
        self,
        outbox: Outbox,
        *,
        after: int,
        with_ids: bool,
        heartbeat: float,
        max_seconds: float | None,
        retry_ms: int,
        stop_at_end: bool = True,
        on_delivered: t.Callable[[int], None] | None = None,
        sock: t.Any = None,
    ) -> None:
        self.outbox = outbox
        self.after = after
        self.with_ids = with_ids
        self.heartbeat = heartbeat
        self.max_seconds = max_seconds
        self.retry_ms = retry_ms
        self.stop_at_end = stop_at_end
        self.on_delivered = on_delivered
        self.sock = sock
        self.token = outbox.attach()
        #: Why the iteration ended: "end", "disconnect", "superseded", "missing", "timeout",
        #: "client-gone".
        self.reason = "client-gone"

    def iterate(self, pending: t.Sequence[t.Any] = ()) -> t.Iterator[bytes]:
        """Yield SSE chunks; ``pending`` are events read before the response started."""
        opened = last_write = time.monotonic()
        events: t.Sequence[t.Any] = pending
        while True:
            for event in events:
                self.after = max(self.after, event.seq)
                if event.kind == MESSAGE and event.message is not None:
                    ident = event_id(self.outbox.stream_id, event.seq) if self.with_ids else None
                    yield frame(event.message, ident)
                    if self.on_delivered is not None:
                        self.on_delivered(event.seq)
                elif event.kind == END and self.stop_at_end:
                    self.reason = "end"
                    return
                elif event.kind == DISCONNECT:
                    self.reason = "disconnect"
                    if self.with_ids:
                        # Give the close an id, so a resume starts after it
                        # instead of reading this DISCONNECT again.
                        yield priming(event_id(self.outbox.stream_id, event.seq), self.retry_ms)
                    else:
                        yield retry(self.retry_ms)
                    return
            now = time.monotonic()
            if events:
                last_write = now
            elif now - last_write >= self.heartbeat:
                yield HEARTBEAT
                last_write = now
            elif client_gone(self.sock):  # idle: one select() per LIVENESS_INTERVAL
                self.reason = "client-gone"
                return
            wait = self.heartbeat - (now - last_write)
            if self.max_seconds is not None:
                left = self.max_seconds - (now - opened)
                if left <= 0:
                    self.reason = "timeout"
                    yield retry(self.retry_ms)
                    return
                wait = min(wait, left)
            if self.sock is not None:
                wait = min(wait, LIVENESS_INTERVAL)
            found = self.outbox.read(self.after, self.token, wait)
            if found.superseded or found.missing:
                self.reason = "superseded" if found.superseded else "missing"
                return
            events = found.events

    def close(self) -> None:
        """Give up the stream so another connection may read it."""
        self.outbox.detach(self.token)
