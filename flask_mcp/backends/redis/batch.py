"""Commands sent together, and the busy counts this process has not written yet.

A :class:`Batch` pipelines scripts and plain commands: one round trip on one
Redis, one per node on a cluster (redis-py groups a cluster pipeline by node),
and there one more for its keyless commands (a ``PUBLISH``), which go last.
The :class:`Ledger` lets a request's busy count ride on the session lookup
that precedes it, and its end on a later command, so that a JSON ``tools/call``
costs one round trip; see :meth:`~flask_mcp.backends.redis.RedisBackend.get_session`.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
import typing as t

import redis
import redis.cluster

#: Seconds a busy count taken ahead by a session lookup waits for its request to claim it.
CREDIT_LIFETIME = 1.0
#: Sessions one script serves at most where a script takes several (``append_all``,
#: ``cursor_all``: on one Redis; a cluster's sessions live in different slots).
GROUP = 100


def runs(count: int, joins: t.Callable[[int, int], bool]) -> t.Iterator[tuple[int, int]]:
    """Split ``range(count)`` into runs of items that follow each other, :data:`GROUP` at
    most: item ``other`` joins the run that starts at ``first`` while ``joins(first,
    other)``. Yields each run's ``(start, end)``."""
    start = 0
    while start < count:
        end = start + 1
        while end < count and end - start < GROUP and joins(start, end):
            end += 1
        yield start, end
        start = end


def spread(replies: list[t.Any], where: list[tuple[int, int | None]]) -> list[t.Any]:
    """Return one reply per call, from the ``replies`` of a batch in which some scripts
    served several calls: ``where`` gives each call's reply index and its place in that
    reply (``None``: the reply is the call's). A failed script's error goes to each call."""
    out = []
    for index, place in where:
        reply = replies[index]
        out.append(reply if place is None or isinstance(reply, Exception) else reply[place])
    return out


class Runner(t.Protocol):
    """What a :class:`Batch` uses of :class:`~.commands.RedisCommands`."""

    client: t.Any

    def head(self) -> tuple[t.Any, ...]: ...

    def run(self, name: str, keys: list[str], *args: t.Any) -> t.Any: ...

    def sha(self, name: str) -> str: ...


class Batch:
    """Scripts and commands sent to Redis in one pipeline (no transaction).

    The keyless commands (:data:`KEYLESS`: a ``PUBLISH`` announcing what the
    commands before it wrote) take effect after everything else: a cluster
    runs a pipeline node by node in no set order, so there they go in a second
    round trip once the rest has answered; a script Redis had forgotten, run
    again after the pipeline, is followed by the keyless commands again.
    """

    def __init__(self, commands: Runner) -> None:
        self.commands = commands
        self.items: list[tuple[str | None, list[str], tuple[t.Any, ...]]] = []

    def script(self, name: str, keys: list[str], *args: t.Any) -> int:
        """Queue the script ``name``; return the index of its reply."""
        self.items.append((name, keys, args))
        return len(self.items) - 1

    def scripts(
        self, calls: t.Sequence[tuple[str, list[str], tuple[t.Any, ...]]], *, grouped: str
    ) -> list[tuple[int, int | None]]:
        """Queue ``(name, keys, args)`` calls; return where each reply will be (see
        :func:`spread`). On one Redis, the calls of the script ``grouped`` that follow each
        other go :data:`GROUP` to the script ``grouped + "_all"``, which gets their keys and
        their arguments one call after the other."""
        where: list[tuple[int, int | None]] = []
        one_redis = not isinstance(self.commands.client, redis.cluster.RedisCluster)

        def joins(first: int, other: int) -> bool:
            return one_redis and calls[first][0] == grouped and calls[other][0] == grouped

        for start, end in runs(len(calls), joins):
            if end - start == 1:
                name, keys, args = calls[start]
                where.append((self.script(name, keys, *args), None))
            else:
                group = calls[start:end]
                keys = [k for call in group for k in call[1]]
                index = self.script(f"{grouped}_all", keys, *[a for call in group for a in call[2]])
                where += [(index, n) for n in range(end - start)]
        return where

    def command(self, *args: t.Any) -> int:
        """Queue a plain command; return the index of its reply."""
        self.items.append((None, [], args))
        return len(self.items) - 1

    def run(self) -> list[t.Any]:
        """Send everything; return the replies in order.

        A script Redis forgot (a restart empties its script cache) is run again
        on its own, which loads it.

        :raises redis.ResponseError: a command failed.
        """
        items, self.items = self.items, []
        if not items:
            return []
        last = [i for i, item in enumerate(items) if _keyless(item)]
        if last and isinstance(self.commands.client, redis.cluster.RedisCluster):
            first = [i for i in range(len(items)) if not _keyless(items[i])]
            replies: list[t.Any] = [None] * len(items)
            for i, reply in zip(first, self._send([items[i] for i in first]), strict=True):
                replies[i] = reply
            later = self._send([items[i] for i in last])
        else:
            replies, later = self._send(items), []
            if any(isinstance(r, _Rerun) for r in replies):  # announce it again, after
                later = self._send([items[i] for i in last])
        for i, reply in enumerate(replies):
            if isinstance(reply, _Rerun):
                replies[i] = reply.reply
        for i, reply in zip(last if later else (), later, strict=True):
            replies[i] = reply
        return replies

    def _send(self, items: list[tuple[str | None, list[str], tuple[t.Any, ...]]]) -> list[t.Any]:
        """Send ``items`` in one pipeline; a forgotten script's reply comes as a :class:`_Rerun`."""
        if not items:
            return []
        head = self.commands.head()
        pipe = self.commands.client.pipeline(transaction=False)
        for name, keys, args in items:
            if name is None:
                pipe.execute_command(*args)
            else:
                pipe.execute_command(
                    "EVALSHA", self.commands.sha(name), len(keys), *keys, *head, *args
                )
        replies = list(pipe.execute(raise_on_error=False))
        for i, reply in enumerate(replies):
            if isinstance(reply, redis.exceptions.NoScriptError):
                name, keys, args = items[i]
                replies[i] = _Rerun(self.commands.run(t.cast(str, name), keys, *args))
            elif isinstance(reply, Exception):
                raise reply
        return replies


#: Commands without keys that a :class:`Batch` runs after the rest.
KEYLESS = frozenset({"PUBLISH"})


def _keyless(item: tuple[str | None, list[str], tuple[t.Any, ...]]) -> bool:
    return item[0] is None and str(item[2][0]).upper() in KEYLESS


class _Rerun:
    """The reply of a script run again after its pipeline (Redis had forgotten it)."""

    __slots__ = ("reply",)

    def __init__(self, reply: t.Any) -> None:
        self.reply = reply


class Ledger:
    """Changes to this process's busy counts that Redis has not seen yet.

    A session lookup that also counts a request (a *credit*) is claimed by the
    request's ``touch_session(+1)``; the ``-1`` of a request that claimed one
    is *owed* and written later, with the session's next lookup or within a
    second by the listener. Redis's count is never below the true one: an
    unclaimed credit or an unwritten ``-1`` only keeps a session busy a
    little longer.

    Every change sent carries an id (:meth:`change_id`) that Redis remembers for a
    while: a change sent again with its id (redis-py resending a command whose reply
    the connection lost) is made once. A change whose reply never came is *in doubt*:
    it is sent again with its id (:meth:`doubt`), first in the next write of the
    counts, made if Redis never saw it and skipped if it did.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.credits: dict[str, collections.deque[float]] = {}
        self.claimed: dict[str, int] = {}
        self.owed: dict[str, int] = {}
        #: Changes sent whose reply never came, in order: ``(session id, change id, delta)``.
        self.doubts: list[tuple[str, str, int]] = []
        self._ids = itertools.count(1)
        #: Sessions served without a lookup (:mod:`~.hot`): their traffic is owed.
        self.seen: set[str] = set()

    def served(self, sid: str) -> None:
        """A request of ``sid`` was served without a lookup: owe its traffic and its count,
        and hold the count as a credit for the request to claim, as a lookup would."""
        with self.lock:
            self.owed[sid] = self.owed.get(sid, 0) + 1
            self.credits.setdefault(sid, collections.deque()).append(time.monotonic())
            self.seen.add(sid)

    def reserve(self, sid: str) -> None:
        """A lookup counted a request of ``sid`` ahead of it."""
        with self.lock:
            self.credits.setdefault(sid, collections.deque()).append(time.monotonic())

    def claim(self, sid: str) -> bool:
        """Take a credit of ``sid`` for a request starting; tell whether there was one."""
        with self.lock:
            credits = self.credits.get(sid)
            if not credits:
                return False
            credits.popleft()
            if not credits:
                del self.credits[sid]
            self.claimed[sid] = self.claimed.get(sid, 0) + 1
            return True

    def release(self, sid: str) -> bool:
        """A request of ``sid`` ended: owe its ``-1`` if it claimed a credit; tell whether."""
        with self.lock:
            claimed = self.claimed.get(sid, 0)
            if not claimed:
                return False
            if claimed == 1:
                del self.claimed[sid]
            else:
                self.claimed[sid] = claimed - 1
            self.owed[sid] = self.owed.get(sid, 0) - 1
            return True

    def owe(self, sid: str, delta: int) -> None:
        """Write ``delta`` to the count of ``sid`` later (Redis is unreachable, say)."""
        if delta:
            with self.lock:
                self.owed[sid] = self.owed.get(sid, 0) + delta

    def change_id(self) -> str:
        """A new id of a change of this process's busy counts (unique in the process)."""
        return f"{next(self._ids):x}"

    def doubt(self, changes: t.Iterable[tuple[str, str, int]]) -> None:
        """Send ``(session id, change id, delta)`` changes again with their ids, in order:
        they were sent, and Redis may have made them or not."""
        with self.lock:
            self.doubts.extend(changes)

    def take_doubts(self) -> list[tuple[str, str, int]]:
        """Remove and return the changes in doubt (to send them again now)."""
        with self.lock:
            doubts, self.doubts = self.doubts, []
        return doubts

    def take(self, sid: str) -> int:
        """Remove and return what is owed for ``sid`` (to write it now)."""
        with self.lock:
            self.seen.discard(sid)
            return self.owed.pop(sid, 0)

    def give_back(self, due: dict[str, int]) -> None:
        """Owe again what :meth:`due` returned (writing it failed)."""
        with self.lock:
            for sid, delta in due.items():
                self.owed[sid] = self.owed.get(sid, 0) + delta
                self.seen.add(sid)

    def due(self, everything: bool = False) -> dict[str, int]:
        """Remove and return what to write now: the owed, the credits nobody claimed, and
        the traffic of the sessions served without a lookup (a change of 0).

        :param everything: also give back the credits still young enough to be claimed.
        """
        cut = time.monotonic() - (0 if everything else CREDIT_LIFETIME)
        with self.lock:
            for sid in list(self.credits):
                credits = self.credits[sid]
                while credits and credits[0] <= cut:
                    credits.popleft()
                    self.owed[sid] = self.owed.get(sid, 0) - 1
                if not credits:
                    del self.credits[sid]
            owed, self.owed = self.owed, {}
            seen, self.seen = self.seen, set()
        due = {sid: delta for sid, delta in owed.items() if delta or sid in seen}
        for sid in seen:
            due.setdefault(sid, 0)  # the traffic alone: its last_seen
        return due

    def surplus(self, sid: str) -> int:
        """By how much Redis's count of ``sid`` exceeds this process's running requests."""
        with self.lock:
            return len(self.credits.get(sid, ())) - self.owed.get(sid, 0)

    @property
    def pending(self) -> bool:
        """Whether anything waits to be written."""
        return bool(self.owed or self.credits or self.seen or self.doubts)


__all__ = ["CREDIT_LIFETIME", "GROUP", "KEYLESS", "Batch", "Ledger", "Runner", "runs", "spread"]
