"""Messages between workers through Redis: server-to-client requests and their answers,
cancellations, pub/sub and the shared operation logs.

A server-to-client request has a marker and a list for the answer, both with the
session's hash tag: the worker that sent the request waits on the list (``BLMOVE`` from
the list to itself, which leaves the answer there); the worker that receives the client's
answer pushes it there. Nothing takes the answer away when it is read: a read sent again
because its reply was lost (a Redis failover) reads it again; it is kept a minute once read.
"""

from __future__ import annotations

import time
import typing as t

from ..base import new_write_id
from .codec import dumps
from .codec import loads
from .codec import text
from .commands import RedisCommands

#: Seconds a :class:`SharedLog` is kept after its last change.
LOG_TTL = 7 * 24 * 3600


class Messaging:
    """Server-to-client requests, cancellations and pub/sub on :class:`~.commands.RedisCommands`.

    :param commands: the backend's commands.
    :param block_slice: the longest single blocking call, in seconds.
    """

    def __init__(self, commands: RedisCommands, block_slice: float) -> None:
        self.commands = commands
        self.block_slice = block_slice

    def next_request_id(self, session_id: str) -> int:
        """The next id of a server-to-client request of the session."""
        return int(self.commands.run("next_id", self.commands.keys.session(session_id)))

    def _answer_keys(self, session_id: str, rid: str) -> list[str]:
        keys = self.commands.keys
        return [*keys.session(session_id), *keys.answer(session_id, rid)]

    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        """Note that a request went out, before the client can answer it."""
        self.commands.run("expect", self._answer_keys(session_id, dumps(request_id)))

    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        """Wait up to ``timeout`` seconds for the client's answer (``None``: none came)."""
        commands = self.commands
        keys = self._answer_keys(session_id, dumps(request_id))
        deadline = time.monotonic() + timeout
        while True:
            reply = commands.run("poll", keys)
            status = text(reply[0])
            if status == "none":
                return None
            if status == "ok":
                return t.cast("dict[str, t.Any]", loads(reply[1]))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with commands.errors():  # wakes when the answer comes; the poll takes it
                commands.blocking.blmove(
                    keys[6], keys[6], max(0.01, min(remaining, self.block_slice))
                )

    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        """Hand the client's answer to the waiting worker; tell whether one expected it."""
        keys = self._answer_keys(session_id, dumps(request_id))
        return bool(self.commands.run("deliver", keys, dumps(message)))

    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        """Stop expecting an answer."""
        commands = self.commands
        with commands.errors():
            commands.client.delete(*commands.keys.answer(session_id, dumps(request_id)))

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        """Tell every worker to cancel a request (the one running it does)."""
        with self.commands.errors():
            self.commands.client.publish(
                f"{self.commands.keys.prefix}cancel", dumps([session_id, request_id])
            )

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        """Send ``message`` to the subscribers of ``channel`` in every process."""
        with self.commands.errors():
            self.commands.client.publish(
                f"{self.commands.keys.prefix}pub:{channel}", dumps(message)
            )


class SharedLog:
    """An append-only log of JSON text every worker reads (a Redis list).

    Each append carries an id, kept with the ids of the log's last appends in the key
    ``key + ":ids"``: an append sent again (redis-py resending a command whose reply the
    connection lost) is stored once.

    :param commands: the backend's commands.
    :param key: the list's key.
    :param ttl: seconds the log is kept after its last append.
    """

    def __init__(self, commands: RedisCommands, key: str, ttl: int = LOG_TTL) -> None:
        self.commands = commands
        self.key = key
        self.ttl = ttl

    def append(self, item: str) -> int:
        """Append ``item``; return its position, counted from 1."""
        keys = [self.key, self.key + ":ids"]
        return int(self.commands.run("log", keys, item, new_write_id(), self.ttl))

    def read(self, start: int) -> list[str]:
        """Return the items from position ``start`` (counted from 0) to the end."""
        with self.commands.errors():
            return [text(item) for item in self.commands.client.lrange(self.key, start, -1)]


__all__ = ["LOG_TTL", "Messaging", "SharedLog"]
