"""Where the authorization server keeps its records: in memory, in Redis or in SQL.

Every record is a small JSON object under a string key, with a lifetime. The
three operations that must be atomic across workers are :meth:`Storage.put`
with ``only_new`` (one signing key per period, however many workers race for it)
and :meth:`Storage.take` (an authorization code or a refresh token is used once:
two workers redeeming the same one cannot both get it). Sets (:meth:`Storage.add`)
index the token families of a consent, so that revoking the consent revokes them.

- :class:`MemoryStorage`: one process (tests, a single-worker development server).
- :class:`RedisStorage`: the Redis of ``MCP_BACKEND`` or its own URL; every worker
  and machine sees the same records, and a revocation at once.
- :class:`SQLStorage`: one table (``mcp_oauth_records``) in any database
  SQLAlchemy reaches (``sqlite:///oauth.db``, ``postgresql://...``), or the engine of
  a Flask-SQLAlchemy ``db``.
"""

from __future__ import annotations

import json
import threading
import time
import typing as t

Record = dict[str, t.Any]


class Storage(t.Protocol):
    """What the authorization server needs of a store (see the module docstring)."""

    def put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        """Store ``value`` for ``ttl`` seconds; with ``only_new``, only if ``key`` is free.

        :returns: whether the value was stored.
        """

    def get(self, key: str) -> Record | None:
        """Return the record under ``key``, or ``None`` (missing or expired)."""

    def take(self, key: str) -> Record | None:
        """Remove and return the record under ``key``, atomically: one caller gets it."""

    def delete(self, key: str) -> None:
        """Remove the record under ``key`` (nothing happens if there is none)."""

    def add(self, key: str, member: str, ttl: float) -> None:
        """Add ``member`` to the set under ``key``, kept at least ``ttl`` seconds."""

    def members(self, key: str) -> set[str]:
        """Return the members of the set under ``key``."""


class MemoryStorage:
    """Records in this process only: for tests and a single-process server."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[float, Record]] = {}
        self._sets: dict[str, tuple[float, set[str]]] = {}
        self._lock = threading.Lock()

    def put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        """See :meth:`Storage.put`."""
        with self._lock:
            if only_new and self._live(key) is not None:
                return False
            self._records[key] = (time.time() + ttl, json.loads(json.dumps(value)))
            return True

    def _live(self, key: str) -> Record | None:
        entry = self._records.get(key)
        if entry is None:
            return None
        if entry[0] <= time.time():
            del self._records[key]
            return None
        return entry[1]

    def get(self, key: str) -> Record | None:
        """See :meth:`Storage.get`."""
        with self._lock:
            found = self._live(key)
            return None if found is None else dict(found)

    def take(self, key: str) -> Record | None:
        """See :meth:`Storage.take`."""
        with self._lock:
            found = self._live(key)
            self._records.pop(key, None)
            return found

    def delete(self, key: str) -> None:
        """See :meth:`Storage.delete`."""
        with self._lock:
            self._records.pop(key, None)
            self._sets.pop(key, None)

    def add(self, key: str, member: str, ttl: float) -> None:
        """See :meth:`Storage.add`."""
        with self._lock:
            until, members = self._sets.get(key, (0.0, set()))
            members.add(member)
            self._sets[key] = (max(until, time.time() + ttl), members)

    def members(self, key: str) -> set[str]:
        """See :meth:`Storage.members`."""
        with self._lock:
            entry = self._sets.get(key)
            if entry is None or entry[0] <= time.time():
                return set()
            return set(entry[1])


class RedisStorage:
    """Records in Redis, under ``prefix``: shared by every worker and machine.

    :param client: a ``redis.Redis`` client (``decode_responses`` either way).
    :param prefix: put before every key, e.g. the ``MCP_BACKEND`` prefix and ``oauth:``.
    """

    def __init__(self, client: t.Any, prefix: str = "mcp:oauth:") -> None:
        self.client = client
        #: Put before every key. Each command touches one key, so a Redis Cluster needs no
        #: hash tag here (unlike the MCP backend's multi-key scripts in ``backends/redis/keys``).
        self.key_prefix = prefix

    @classmethod
    def from_url(cls, url: str, prefix: str = "mcp:oauth:") -> RedisStorage:
        """Connect to the Redis at ``url`` (``redis://host:port/db``)."""
        import redis

        return cls(redis.Redis.from_url(url), prefix)

    def _key(self, key: str) -> str:
        return self.key_prefix + key

    @staticmethod
    def _ms(ttl: float) -> int:
        return max(1, int(ttl * 1000))

    def put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        """See :meth:`Storage.put`."""
        done = self.client.set(
            self._key(key), json.dumps(value), px=self._ms(ttl), nx=only_new or None
        )
        return bool(done)

    @staticmethod
    def _load(raw: t.Any) -> Record | None:
        if raw is None:
            return None
        loaded = json.loads(raw)
        return loaded if isinstance(loaded, dict) else None

    def get(self, key: str) -> Record | None:
        """See :meth:`Storage.get`."""
        return self._load(self.client.get(self._key(key)))

    def take(self, key: str) -> Record | None:
        """See :meth:`Storage.take` (``GETDEL``)."""
        return self._load(self.client.getdel(self._key(key)))

    def delete(self, key: str) -> None:
        """See :meth:`Storage.delete`."""
        self.client.delete(self._key(key))

    def add(self, key: str, member: str, ttl: float) -> None:
        """See :meth:`Storage.add`: the set lives as long as its longest-lived member."""
        pipe = self.client.pipeline()
        pipe.sadd(self._key(key), member)
        pipe.pexpire(self._key(key), self._ms(ttl), gt=True)
        pipe.pexpire(self._key(key), self._ms(ttl), nx=True)
        pipe.execute()

    def members(self, key: str) -> set[str]:
        """See :meth:`Storage.members`."""
        raw = self.client.smembers(self._key(key))
        return {m.decode() if isinstance(m, bytes) else str(m) for m in raw}


class SQLStorage:
    """Records in one SQL table, through SQLAlchemy: ``mcp_oauth_records``.

    :param bind: an SQLAlchemy URL, an ``Engine``, or a Flask-SQLAlchemy ``db``
        (its engine is taken on first use, in the app context).
    :param table_name: the table's name; it is created when missing.

    Sets are rows whose key is the set's key, a ``\\x1f`` and the member.
    """

    def __init__(self, bind: t.Any, table_name: str = "mcp_oauth_records") -> None:
        try:
            import sqlalchemy as sa
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "SQL storage for the authorization server needs SQLAlchemy: "
                "pip install 'Flask-MCP[oauth-server]'."
            ) from exc
        self._sa = sa
        self._bind = bind
        self._engine: t.Any = None
        self._lock = threading.Lock()
        metadata = sa.MetaData()
        self.table = sa.Table(
            table_name,
            metadata,
            sa.Column("key", sa.String(512), primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
            sa.Column("expires_at", sa.Float, nullable=False, index=True),
        )
        self._metadata = metadata

    @property
    def engine(self) -> t.Any:
        """The engine, created (and the table with it) on first use."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    bind = self._bind
                    if isinstance(bind, str):
                        engine = self._sa.create_engine(bind)
                    else:
                        engine = getattr(bind, "engine", bind)
                    self._metadata.create_all(engine)
                    self._engine = engine
        return self._engine

    def put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        """See :meth:`Storage.put`."""
        sa, table, now = self._sa, self.table, time.time()
        row = {"key": key, "value": json.dumps(value), "expires_at": now + ttl}
        with self.engine.begin() as conn:
            conn.execute(table.delete().where(table.c.key == key, table.c.expires_at <= now))
            if only_new:
                try:
                    conn.execute(table.insert().values(**row))
                except sa.exc.IntegrityError:
                    return False
                return True
            updated = conn.execute(table.update().where(table.c.key == key).values(**row)).rowcount
            if not updated:
                conn.execute(table.insert().values(**row))
        return True

    def get(self, key: str) -> Record | None:
        """See :meth:`Storage.get`."""
        table = self.table
        with self.engine.connect() as conn:
            raw = conn.execute(
                self._sa.select(table.c.value).where(
                    table.c.key == key, table.c.expires_at > time.time()
                )
            ).scalar()
        return None if raw is None else t.cast(Record, json.loads(raw))

    def take(self, key: str) -> Record | None:
        """See :meth:`Storage.take`: one ``DELETE ... RETURNING`` statement."""
        table = self.table
        with self.engine.begin() as conn:
            raw = conn.execute(
                table.delete()
                .where(table.c.key == key)
                .returning(table.c.value, table.c.expires_at)
            ).first()
        if raw is None or raw[1] <= time.time():
            return None
        return t.cast(Record, json.loads(raw[0]))

    def delete(self, key: str) -> None:
        """See :meth:`Storage.delete` (a set's members go too)."""
        table = self.table
        with self.engine.begin() as conn:
            conn.execute(
                table.delete().where(
                    (table.c.key == key) | table.c.key.startswith(key + "\x1f", autoescape=True)
                )
            )

    def add(self, key: str, member: str, ttl: float) -> None:
        """See :meth:`Storage.add`."""
        self.put(f"{key}\x1f{member}", {}, ttl)

    def members(self, key: str) -> set[str]:
        """See :meth:`Storage.members`."""
        table, start = self.table, key + "\x1f"
        with self.engine.connect() as conn:
            rows = conn.execute(
                self._sa.select(table.c.key).where(
                    table.c.key.startswith(start, autoescape=True),
                    table.c.expires_at > time.time(),
                )
            ).scalars()
            return {row[len(start) :] for row in rows}


def storage_from_url(url: str, prefix: str = "mcp:oauth:") -> Storage:
    """Return the storage ``MCP_OAUTH_STORAGE`` names.

    :raises ValueError: the URL's scheme is unknown.
    """
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        return MemoryStorage()
    if scheme in ("redis", "rediss", "unix"):
        return RedisStorage.from_url(url, prefix)
    if "://" in url:
        return SQLStorage(url)
    raise ValueError(
        f"MCP_OAUTH_STORAGE={url!r} is not a storage URL: use 'memory://', "
        "'redis://host:port/db' or an SQLAlchemy URL such as 'sqlite:///oauth.db'."
    )


__all__ = [
    "MemoryStorage",
    "Record",
    "RedisStorage",
    "SQLStorage",
    "Storage",
    "storage_from_url",
]
