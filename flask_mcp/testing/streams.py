"""Event streams as the test client reads them: every wait has a timeout.

:class:`EventStream` reads an SSE response on a helper thread; :class:`Subscription`
filters the notifications of a ``subscriptions/listen`` stream or a session's GET stream.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import typing as t

if t.TYPE_CHECKING:
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


__all__ = ["END", "EventStream", "Subscription"]
