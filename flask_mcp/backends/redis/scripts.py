"""The Lua scripts of the Redis backend, read from the ``lua/`` folder of this package.

Every script runs atomically in Redis and receives every key it touches in
``KEYS`` (the layout: :mod:`flask_mcp.backends.redis.keys`), all in one
cluster slot: a *session script* (``lua/session/<name>.lua``) gets the keys of
one session, a *shared script* (``lua/shared/<name>.lua``) the ``{g}`` keys
every worker shares; none mixes the two. Every script starts with
``lua/library.lua`` and the same seven arguments (see :data:`HEAD`); its own
follow as ``A[1]``, ``A[2]``... A session script also starts with
``lua/session.lua``.

A session script gets ``KEYS = s, m, o, x:g, z:g`` of its session, then, if it
works on a stream, that stream's ``x`` and ``z`` (or a server-to-client
request's ``e`` and ``a``).

A script that changes a stream for its reader (an event appended while a reader
is attached, an attach, a detach, a drop) publishes the stream's event log key
``x`` on the channel ``P wake``, for the stream readers of every process
(:mod:`~flask_mcp.backends.redis.reader`). A script that changes a session's
record or ends the session publishes the record's key ``s`` on ``P session``,
for the processes that serve it from memory (:mod:`~flask_mcp.backends.redis.hot`).
"""

from __future__ import annotations

from importlib import resources

#: The arguments every script receives first, in this order.
HEAD = ("idle", "lifetime", "grace", "worker", "buffer", "dead_after", "resume_bytes")

_FOLDER = resources.files(__package__) / "lua"


def _read(path: str) -> str:
    return (_FOLDER / path).read_text(encoding="utf-8")


def _folder(name: str) -> dict[str, str]:
    found = {
        entry.name[: -len(".lua")]: entry.read_text(encoding="utf-8")
        for entry in (_FOLDER / name).iterdir()
        if entry.name.endswith(".lua")
    }
    return dict(sorted(found.items()))


#: What every script starts with: its arguments and helpers.
LIBRARY = _read("library.lua")
#: What every session script starts with, after :data:`LIBRARY`: its keys and helpers.
SESSION = _read("session.lua")
#: Scripts on the keys of one session (``KEYS``: see the module docstring).
SCRIPTS: dict[str, str] = _folder("session")
#: Scripts on the ``{g}`` keys every worker shares.
SHARED: dict[str, str] = _folder("shared")


def bodies() -> dict[str, str]:
    """Return every script's full text by name, ready to register with redis-py."""
    found = {name: LIBRARY + SESSION + body for name, body in SCRIPTS.items()}
    found.update({name: LIBRARY + body for name, body in SHARED.items()})
    return found


__all__ = ["HEAD", "LIBRARY", "SCRIPTS", "SESSION", "SHARED", "bodies"]
