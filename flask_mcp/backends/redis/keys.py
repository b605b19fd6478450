"""The Redis backend's key names, laid out for Redis Cluster.

Every key of one session carries the session id as its hash tag, so that all
of them live in one cluster slot and one Lua script may touch them together;
the keys every worker shares carry the tag ``{g}`` (one slot of their own).
No script mixes the two: what must change both runs as two commands,
pipelined. Scripts receive every key they touch in ``KEYS``.

``P`` is the backend's prefix (``mcp:``), ``SID`` a session id, ``ST`` a stream id:

``P{SID}:s``       hash: the session record (JSON values) and ``b:WORKER`` busy counts
``P{SID}:m``       hash: ``id`` (request ids), ``tok`` (reader tokens), per stream ``n:ST``
                   last seq, ``r:ST`` reader token, ``c:ST`` cursor, ``w:ST`` the worker that
                   owns it, ``q:ST`` the JSON id of the request it answers, ``d:ST``
                   the ids of its last writes, ``i:WORKER`` the ids of the last changes
                   of a worker's busy count (a change sent again is made once)
``P{SID}:o``       list: the stream id of every retained message, oldest first
``P{SID}:x:ST``    stream: the events of a stream, entry id ``0-SEQ``, fields ``k``, ``m``
``P{SID}:z:ST``    stream: wake-up signals for readers (attach, detach, drop), id ``TOKEN-0``
``P{SID}:e:RID``   string: a server-to-client request awaits its answer (1) or got it (2)
``P{SID}:a:RID``   list: the client's answer
``P{TID}:task``    string: a task record (JSON), tagged by its task id
``P{g}:seen``      sorted set: session ids by (at most) their last traffic, for the reaper
``P{g}:born``      sorted set: session ids by creation time
``P{g}:hs``        sorted set: sessions until their handshake timeout is checked
``P{g}:own:OWNER`` sorted set: the sessions of one client, for its quota
``P{g}:workers``   sorted set: worker ids by last heartbeat
``P{g}:alive``     string: when a process last swept (the sweep skips the gaps between)
``P{g}:reaping``   sorted set: sessions a reaper is judging (claims expire after a minute)
``P{g}:ws:WORKER`` set: ``"SID ST"`` of the request streams a worker owns (may hold ended ones)
``P{g}:tasks:live`` / ``P{g}:tasks:OWNER``  sorted sets of task ids
``P{g}:taskbytes:OWNER``                   hash: the size of each of the owner's records
``P{g}:registry:NAME:GEN:ops``  list: the runtime registry changes of server ``NAME`` made
                   by the workers of master process ``GEN`` (see ``server.shared_registry``);
                   ``...:ops:ids`` string: the ids of its last appends (one is stored once)

Pub/sub channels are no keys (a cluster sends them to every node): ``Pcancel``,
``Pwake``, ``Ppub:CHANNEL``.
"""

from __future__ import annotations


class Keys:
    """Builds the key names of one prefix.

    :raises ValueError: the prefix holds ``{`` or ``}`` (they would change the hash tags).
    """

    def __init__(self, prefix: str) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError(
                f"The Redis key prefix {prefix!r} must not contain '{{' or '}}': Flask-MCP adds "
                "the hash tags itself. Choose a prefix like 'myapp:'."
            )
        self.prefix = prefix
        self.shared = f"{prefix}{{g}}:"
        self.seen = self.shared + "seen"
        self.born = self.shared + "born"
        self.hs = self.shared + "hs"
        self.workers = self.shared + "workers"
        self.alive = self.shared + "alive"
        self.reaping = self.shared + "reaping"

    def tagged(self, sid: str) -> str:
        """The start of every key of the session (or task) ``sid``: its hash tag."""
        return f"{self.prefix}{{{sid}}}:"

    def session(self, sid: str) -> list[str]:
        """The keys every session script gets first: ``s``, ``m``, ``o``, ``x:g``, ``z:g``."""
        tag = self.tagged(sid)
        return [tag + "s", tag + "m", tag + "o", tag + "x:g", tag + "z:g"]

    def stream(self, sid: str, st: str) -> list[str]:
        """A stream's event log and signal stream."""
        tag = self.tagged(sid)
        return [f"{tag}x:{st}", f"{tag}z:{st}"]

    def record(self, sid: str) -> str:
        """The session record's hash."""
        return self.tagged(sid) + "s"

    def meta(self, sid: str) -> str:
        """The session's stream metadata hash."""
        return self.tagged(sid) + "m"

    def answer(self, sid: str, rid: str) -> list[str]:
        """The marker and the answer list of a server-to-client request."""
        tag = self.tagged(sid)
        return [f"{tag}e:{rid}", f"{tag}a:{rid}"]

    def owned(self, worker: str) -> str:
        """The set of request streams ``worker`` owns."""
        return f"{self.shared}ws:{worker}"

    def own(self, owner: str) -> str:
        """The sorted set of one client's sessions."""
        return f"{self.shared}own:{owner}"

    def log(self, name: str) -> str:
        """The shared log ``name`` (see :meth:`~flask_mcp.backends.base.Backend.shared_log`)."""
        return f"{self.shared}{name}:ops"

    def registry(self, server_name: str, generation: int) -> str:
        """The log of runtime registry changes of one server and master process."""
        return self.log(f"registry:{server_name}:{generation}")

    def task(self, task_id: str) -> str:
        """A task record."""
        return self.tagged(task_id) + "task"

    def task_sizes(self, owner: str) -> str:
        """The hash of the sizes of an owner's task records, by task id (the byte bound)."""
        return f"{self.shared}taskbytes:{owner}"

    def tasks(self, owner: str) -> str:
        """The sorted set of an owner's task ids (``live``: the tasks not known ended)."""
        return f"{self.shared}tasks:{owner}"


__all__ = ["Keys"]
