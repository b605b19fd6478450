"""Stream event logs in Redis: appends, evictions, ends, and the sweep of dead workers.

What changes a session's keys and the keys every worker shares (``{g}``) runs
as separate commands, never in one script, so that every script stays in one
Redis Cluster slot: the session's part first, then the shared indexes, each
group of independent commands pipelined (see :class:`~.batch.Batch`).

A request stream is *owned* by the worker that writes it: its entry in the
worker's owned-streams set (``P{g}:owned:<worker>``) lets another worker end it
with an error answer should the writer die (:meth:`StreamLogs.sweep`). The entry
leaves the set when the stream ends, is dropped or evicted: the scripts return
the ``owner, stream`` pairs they disowned and :meth:`StreamLogs.disown` notes them
for the next beat (:meth:`StreamLogs.write_disowned`).
"""

from __future__ import annotations

import collections.abc as cabc
import logging
import typing as t

from ...errors import BackendUnavailable
from ..base import GENERAL_STREAM
from .batch import Batch
from .batch import runs
from .batch import spread
from .codec import dumps
from .codec import text
from .commands import RedisCommands
from .reader import INLINE_MAX
from .reader import inline_wake

logger = logging.getLogger("flask_mcp")
#: Events per pipeline of :meth:`StreamLogs.append_many`.
CHUNK = 1000
#: Owned-stream entries of a dead worker read and ended per round trip of the sweep.
SWEEP_CHUNK = 500


class StreamLogs:
    """The event logs of the sessions' streams, on :class:`~.commands.RedisCommands`.

    :param commands: the backend's commands.
    """

    def __init__(self, commands: RedisCommands) -> None:
        self.commands = commands
        #: Streams that lost their owner, by owner: taken out of its set at the next beat.
        self.disowned: dict[str, set[str]] = {}

    def append_many(
        self,
        events: cabc.Iterable[tuple[str, str, str, dict[str, t.Any] | None]],
        write_ids: cabc.Sequence[str],
    ) -> list[int]:
        """Append ``(session_id, stream_id, kind, message)`` events, pipelined: one round
        trip per :data:`CHUNK` events (per node of a cluster), then the wake-ups. On one
        Redis, a broadcast's events go :data:`~.batch.GROUP` sessions to a script. Each
        event carries its id from ``write_ids``: a pipeline redis-py sends again after a
        broken connection appends none of them twice.

        The events of a chunk that share their message (a broadcast) are announced
        together in one wake-up message that carries the event (see
        :func:`~.reader.inline_wake`): their readers need not fetch it.
        """
        commands = self.commands
        items, seqs = list(events), []
        bodies: dict[int, str] = {}  # a broadcast's one message is encoded once
        for start in range(0, len(items), CHUNK):
            batch, chunk = commands.batch(), items[start : start + CHUNK]
            logs, sent, keyed = [], [], []
            for sid, st, kind, message in chunk:
                if message is None:
                    body = ""
                else:
                    body = bodies.get(id(message)) or bodies.setdefault(id(message), dumps(message))
                keys = commands.stream_keys(sid, st)
                keyed.append(keys)
                logs.append(keys[-2])
                sent.append((kind, body))
            ids = write_ids[start : start + CHUNK]
            where = self._queue_appends(batch, [item[1] for item in chunk], keyed, sent, ids)
            replies = spread(commands.send(batch), where)
            # After the appends (not in their pipeline): each announces its sequence number.
            groups: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
            for log, what, reply in zip(logs, sent, replies, strict=True):
                if int(reply[0]):
                    groups.setdefault(what, []).append((log, int(reply[0]), text(reply[2])))
            wake, channel = commands.batch(), f"{commands.keys.prefix}wake"
            for (kind, body), appended in groups.items():
                if len(body) <= INLINE_MAX:
                    wake.command("PUBLISH", channel, inline_wake(kind, body, appended))
                else:
                    wake.command("PUBLISH", channel, "\n".join(log for log, *_ in appended))
            commands.send(wake)
            seqs += [self.appended(item[0], r) for item, r in zip(chunk, replies, strict=True)]
        return seqs

    def _queue_appends(
        self,
        batch: Batch,
        streams: list[str],
        keyed: list[list[str]],
        sent: list[tuple[str, str]],
        ids: cabc.Sequence[str],
    ) -> list[tuple[int, int | None]]:
        """Queue the appends of :meth:`append_many` (each event's stream id, keys,
        ``(kind, body)`` and write id); return where each reply will be (see
        :func:`~.batch.spread`).

        On one Redis, the events of general streams that follow each other with the same
        message (a broadcast) go :data:`~.batch.GROUP` sessions to a script.
        """
        cluster = self.commands.cluster

        def joins(first: int, other: int) -> bool:
            return (
                not cluster
                and streams[first] == streams[other] == GENERAL_STREAM
                and sent[other] == sent[first]
            )

        where: list[tuple[int, int | None]] = []
        for start, end in runs(len(streams), joins):
            if end - start == 1:
                args = (streams[start], *sent[start], "1", ids[start])
                where.append((batch.script("append", keyed[start], *args), None))
            else:
                keys = [k for each in keyed[start:end] for k in each[:5]]  # no x:g, z:g again
                index = batch.script("append_all", keys, *sent[start], *ids[start:end])
                where += [(index, n) for n in range(end - start)]
        return where

    def appended(self, session_id: str, reply: t.Any) -> int:
        """Handle the reply of the ``append`` script (``{seq, victim, reader, owner,
        stream...}``); return the sequence number."""
        return self.settle(session_id, int(reply[0]), text(reply[1]), reply[3:])

    def settle_reply(self, session_id: str, reply: t.Any, leaving: str = "") -> None:
        """Settle the reply of the ``detach`` or ``drop`` script (``{0, victim, owner,
        stream...}``): a reader leaving stream ``leaving`` may put the streams left before
        it over their bound.

        It follows a write that succeeded, so Redis failing now fails nothing: the
        session's next message applies the bound again.
        """
        try:
            self.settle(session_id, 0, text(reply[1]), reply[2:], leaving)
        except BackendUnavailable as exc:
            logger.debug("Shedding the streams left in session %s failed: %s", session_id, exc)

    def settle(
        self,
        session_id: str,
        seq: int,
        victim: str,
        owners: t.Sequence[t.Any],
        leaving: str = "",
    ) -> int:
        """Settle an append, a detach or a drop: note the streams it disowned (``owner,
        stream`` pairs) and evict from ``victim`` (``""``: none), a stream holding the
        session's oldest message or left longest ago (before ``leaving``, the stream a
        detach left); return ``seq``."""
        self.disown(session_id, owners)
        while victim:  # the session's oldest message is on another stream: evict it there
            found = self.commands.run(
                "evict", self.commands.stream_keys(session_id, victim), victim, leaving
            )
            self.disown(session_id, found[2:])
            victim = text(found[1])
        return seq

    def forget(self, batch: Batch, sid: str, streams: t.Sequence[t.Any]) -> None:
        """Queue what follows the end of a session's keys: end its streams' logs, wake their
        readers, take it out of the shared indexes. ``streams``: stream id, owner pairs."""
        keys = self.commands.keys
        for i in range(0, len(streams) - 1, 2):
            st, owner = text(streams[i]), text(streams[i + 1])
            x, z = keys.stream(sid, st)
            batch.command("DEL", x)
            batch.command("XADD", z, "MAXLEN", "1", "*", "t", "1")
            batch.command("EXPIRE", z, 60)
            batch.command("PUBLISH", f"{keys.prefix}wake", x)  # the stream readers
            if owner:
                batch.command("SREM", keys.owned(owner), f"{sid} {st}")
        batch.command("ZREM", keys.seen, sid)
        batch.command("ZREM", keys.born, sid)

    def disown(self, sid: str, owners: t.Sequence[t.Any]) -> None:
        """Note streams that lost their owner (``owner, stream`` pairs); the beat writes them."""
        for i in range(0, len(owners) - 1, 2):
            member = f"{sid} {text(owners[i + 1])}"
            self.disowned.setdefault(text(owners[i]), set()).add(member)

    def write_disowned(self) -> None:
        """Take the disowned streams out of their owners' sets, and keep this worker's set
        alive (one pipeline, at each beat); kept for the next beat while Redis is away."""
        commands = self.commands
        batch = commands.batch()
        batch.command("EXPIRE", commands.owned(), 86400)
        disowned, self.disowned = self.disowned, {}
        for worker, members in disowned.items():
            batch.command("SREM", commands.keys.owned(worker), *members)
        try:
            commands.send(batch)
        except BackendUnavailable:
            for worker, members in disowned.items():
                self.disowned.setdefault(worker, set()).update(members)
            raise

    def sweep(self, dead: t.Sequence[t.Any]) -> int:
        """End the running request streams of dead workers, each with an error answer;
        return how many ended.

        A dead worker's owned-streams set is read :data:`SWEEP_CHUNK` entries at a time
        (``SSCAN``), each chunk ended in one pipeline, so that a large set neither makes
        one huge reply nor holds Redis for long.
        """
        commands = self.commands
        me = commands.worker
        workers = [text(w) for w in dead if text(w) != me]
        ended = 0
        for worker in workers:
            owned = commands.keys.owned(worker)
            cursor: t.Any = 0
            while True:
                with commands.errors():
                    cursor, members = commands.client.sscan(owned, cursor, count=SWEEP_CHUNK)
                for start in range(0, len(members), SWEEP_CHUNK):  # (COUNT is a hint)
                    ends = commands.batch()
                    for member in members[start : start + SWEEP_CHUNK]:
                        sid, _, st = text(member).partition(" ")
                        if st:
                            ends.script("orphan", commands.stream_keys(sid, st), worker, st)
                    if ends.items:
                        ended += sum(int(r) for r in commands.send(ends))
                if not int(cursor):
                    break
        if workers:
            batch = commands.batch()
            for worker in workers:
                batch.command("ZREM", commands.keys.workers, worker)
                batch.command("DEL", commands.keys.owned(worker))
            commands.send(batch)
        return ended


__all__ = ["CHUNK", "SWEEP_CHUNK", "StreamLogs"]
