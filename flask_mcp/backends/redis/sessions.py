"""Sessions across workers in Redis: admission under the limits, and the reaper.

A session's record is stored first, then admitted into the shared indexes
(``{g}``) in a separate script, so that every script stays in one Redis Cluster
slot (see :mod:`~.streams`).
"""

from __future__ import annotations

from ..base import session_ended
from .codec import text
from .commands import RedisCommands
from .streams import StreamLogs

#: Admission verdicts of :meth:`SessionIndex.admit`.
FULL, ADMITTED, OVER_QUOTA = 0, 1, 2


class SessionIndex:
    """Admits sessions into the shared indexes and reaps the ones past their limits.

    :param commands: the backend's commands.
    :param logs: the stream logs, which end a session's streams with it.
    """

    def __init__(self, commands: RedisCommands, logs: StreamLogs) -> None:
        self.commands = commands
        self.logs = logs

    def admit(
        self, sid: str, limit: int, hs: float, owner: str | None, quota: int, fields: list[str]
    ) -> int:
        """Store a session, then admit it into the shared indexes: :data:`ADMITTED`,
        :data:`FULL` or :data:`OVER_QUOTA` (the owner holds ``quota`` sessions already)."""
        commands, keys = self.commands, self.commands.keys
        now, secs = commands.run("create", keys.session(sid), hs, *fields)
        own = keys.own(owner or "")
        quota = quota if owner else 0
        verdict = "ok"
        for _ in range(2):
            shared = [keys.seen, keys.born, keys.hs, own]
            reply = commands.run("admit", shared, sid, text(now), limit, hs, quota, int(secs))
            verdict, count = text(reply[0]), int(reply[1])
            freed = self._drop_uninitialized([text(s) for s in reply[2 : 2 + count]])
            if verdict == "ok":
                return ADMITTED
            candidates = [text(s) for s in reply[2 + count :]]
            freed += self._prune(candidates, own if verdict == "quota" else None)
            if not freed:
                break
        batch = commands.batch()  # refused: take the stored session back
        batch.command("DEL", *keys.session(sid))
        commands.send(batch)
        return OVER_QUOTA if verdict == "quota" else FULL

    def _drop_uninitialized(self, sids: list[str]) -> int:
        """End the sessions among ``sids`` that never finished their handshake."""
        if not sids:
            return 0
        commands = self.commands
        batch = commands.batch()
        for sid in sids:
            batch.script("drop_uninitialized", commands.keys.session(sid))
        cleanup, dropped = commands.batch(), 0
        for sid, reply in zip(sids, commands.send(batch), strict=True):
            if int(reply[0]):
                dropped += 1
                self.logs.forget(cleanup, sid, reply[1:])
                session_ended(sid, "handshake")
        commands.send(cleanup)
        return dropped

    def _prune(self, sids: list[str], own: str | None) -> int:
        """Take the sessions among ``sids`` that no longer exist out of the indexes."""
        commands = self.commands
        batch = commands.batch()
        for sid in sids:
            batch.command("EXISTS", commands.keys.record(sid))
        gone = [sid for sid, found in zip(sids, commands.send(batch), strict=True) if not found]
        for sid in gone:
            batch.script("delete", commands.keys.session(sid))
        cleanup = commands.batch()
        for sid, reply in zip(gone, commands.send(batch), strict=True):
            self.logs.forget(cleanup, sid, reply[1:])
            if own is not None:
                cleanup.command("ZREM", own, sid)
        commands.send(cleanup)
        return len(gone)

    def reap(self, batch_size: int) -> list[tuple[str, str]]:
        """End the sessions past their limits unless a live worker runs a request of them;
        return ``(session id, reason)`` pairs."""
        commands, keys = self.commands, self.commands.keys
        shared = [keys.workers, keys.born, keys.seen, keys.reaping]
        reply = commands.run("stale", shared, batch_size)
        count = int(reply[0])
        live = [text(w) for w in reply[1 : 1 + count]]
        rest = reply[1 + count :]
        candidates = [(text(rest[i]), text(rest[i + 1])) for i in range(0, len(rest) - 1, 2)]
        if not candidates:
            return []
        batch = commands.batch()
        for sid, reason in candidates:
            batch.script("judge", keys.session(sid), reason, *live)
        found: list[tuple[str, str]] = []
        cleanup = commands.batch()
        for (sid, _), verdict in zip(candidates, commands.send(batch), strict=True):
            kind = text(verdict[0])
            if kind in ("busy", "keep"):  # the index lags the record: catch up
                cleanup.command("ZADD", keys.seen, "XX", text(verdict[1]), sid)
            else:
                found.append((sid, kind))
                self.logs.forget(cleanup, sid, verdict[2:])
        cleanup.command("ZREM", keys.reaping, *[sid for sid, _ in candidates])
        commands.send(cleanup)
        return found


__all__ = ["ADMITTED", "FULL", "OVER_QUOTA", "SessionIndex"]
