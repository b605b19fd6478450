"""Hot sessions: the records a worker serves again without asking Redis.

A request of a handshake-era session costs one round trip: the ``load`` script
counts the request and returns the session's record. A gevent worker that
looked a session up a moment ago answers its next requests from memory
instead, with no round trip, for as long as it can tell that nothing changed:

- Every script that changes a session's record or ends the session publishes
  the record's key on the channel ``P session``, and this process's listener
  forgets the entry (:meth:`HotSessions.forget_key`). A change made here is
  forgotten at once, too.
- An entry serves only while the listener waits for its next message with
  nothing unread on its connection (:meth:`~.listener.Listener.quiet`).
  Redis publishes a change before it answers the command that made it, so a
  change announced before a request reached this worker has been read, or is
  seen waiting and the request takes the round trip. This needs the listener
  and the requests to take turns, as greenlets do: a threaded worker, and a
  cluster (whose pub/sub crosses nodes on its own schedule), never use entries.
  After the listener reconnects, every entry is dropped (what it missed).
- An entry serves for :data:`MAX_AGE` seconds (half the idle timeout, if
  shorter) after Redis last confirmed the session, and not past the session's
  lifetime; the listener's writes of the traffic confirm it.
- The traffic an entry serves, the session's ``last_seen`` and the request's
  busy count, is written by the listener within a second, with the counts the
  :class:`~.batch.Ledger` already defers.

So a session ended or changed by another worker stops being served here as
soon as the change reaches this worker's listener, as it would by the round
trip; a session whose keys Redis lost without a word (``FLUSHDB``) is noticed
by the listener's next write, within a second.
"""

from __future__ import annotations

import time
import typing as t

from ...wakeup import gevent_patched as cooperative
from ..base import SessionRecord

#: Seconds an entry serves after Redis last confirmed its session.
MAX_AGE = 30.0
#: Entries kept at most; the oldest goes first.
MAX_ENTRIES = 10_000


class HotSessions:
    """The session records this process serves without a round trip.

    :param quiet: tells whether the listener waits with nothing unread.
    :param idle_timeout: the sessions' idle timeout (``None``: none).
    :param max_lifetime: the sessions' longest lifetime (``None``: none).
    :param enabled: ``False`` on a cluster: never serve an entry.
    """

    __slots__ = ("changes", "enabled", "entries", "lifetime", "max_age", "quiet")

    def __init__(
        self,
        quiet: t.Callable[[], bool],
        *,
        idle_timeout: float | None,
        max_lifetime: float | None,
        enabled: bool = True,
    ) -> None:
        self.quiet = quiet
        self.enabled = enabled
        self.max_age = min(MAX_AGE, idle_timeout / 2) if idle_timeout else MAX_AGE
        self.lifetime = max_lifetime or 0.0
        #: Session id to its record and when Redis last confirmed it (monotonic).
        self.entries: dict[str, tuple[SessionRecord, float]] = {}
        #: Counts every change: a lookup that saw one while in flight keeps nothing.
        self.changes = 0

    def get(self, sid: str) -> SessionRecord | None:
        """Return the record of ``sid`` if it may serve now without asking Redis."""
        entry = self.entries.get(sid)
        if entry is None:
            return None
        record, confirmed = entry
        if time.monotonic() - confirmed > self.max_age:
            return None
        if self.lifetime and time.time() > record.created + self.lifetime:
            return None  # the reaper ends it: ask Redis
        if not self.quiet():
            return None
        return record

    def keep(self, sid: str, record: SessionRecord | None, changes: int, asked: float) -> None:
        """Keep the record a lookup returned, unless something changed while it was asked.

        :param changes: :attr:`changes` when the lookup was sent.
        :param asked: when it was sent (monotonic).
        """
        if (
            record is None
            or not record.initialized
            or changes != self.changes
            or not self.enabled
            or not cooperative()
        ):
            return
        entries = self.entries
        entries.pop(sid, None)  # re-inserted: the oldest entries come first
        if len(entries) >= MAX_ENTRIES:
            del entries[next(iter(entries))]
        entries[sid] = (record, asked)

    def confirm(self, sid: str, exists: bool, asked: float) -> None:
        """Redis said at ``asked`` whether ``sid`` exists (the listener wrote its traffic)."""
        if not exists:
            self.forget(sid)
            return
        entry = self.entries.get(sid)
        if entry is not None and entry[1] < asked:
            self.entries[sid] = (entry[0], asked)

    def forget(self, sid: str) -> None:
        """The record of ``sid`` changed, or the session ended."""
        self.changes += 1
        self.entries.pop(sid, None)

    def forget_key(self, key: t.Any) -> None:
        """Forget the session whose record key (``P{sid}:s``) a ``P session`` message names."""
        text = key.decode() if isinstance(key, bytes) else str(key)
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            self.forget(text[start + 1 : end])

    def clear(self) -> None:
        """Forget every record (the listener missed what Redis announced meanwhile)."""
        self.changes += 1
        self.entries.clear()


__all__ = ["MAX_AGE", "MAX_ENTRIES", "HotSessions", "cooperative"]
