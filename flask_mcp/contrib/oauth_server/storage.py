"""Where the authorization server keeps its records: in memory, in Redis or in SQL.

:class:`Storage` names each kind of record the server keeps and what it does
with it: registered clients, authorization codes and refresh tokens (stored
under their SHA-256), token families and their revocations, consents, signing
keys, and the cache of Client ID Metadata Documents. Every record has a lifetime.

Four operations must be atomic across workers and machines:

- :meth:`Storage.save_client` with a bound stores a client only while fewer than
  ``MCP_OAUTH_MAX_CLIENTS`` are kept (however many registrations race);
- :meth:`Storage.add_signing_key` stores a key only if the period has none yet
  (one signing key per period, however many workers race for it);
- :meth:`Storage.redeem_grant` uses a code or a refresh token once: of two
  workers redeeming the same one, one gets it and the other learns it was used
  (and of which family, which the server then revokes);
- :meth:`Storage.bound_families` keeps at most ``MCP_OAUTH_MAX_GRANTS`` families
  per user and client, handing back the oldest past it (which the server revokes).

The stores:

- :class:`MemoryStorage`: one process (tests, a single-worker development server).
- :class:`RedisStorage`: the Redis of ``MCP_BACKEND`` (a Redis Cluster or
  Sentinel too) or its own URL; every worker and machine sees the same records,
  and a revocation at once.
- :class:`~.sql.SQLStorage`: one table per kind of record, through SQLAlchemy, in
  any database it reaches or in the ``db`` of a Flask-SQLAlchemy app (see :mod:`.sql`).

Memory and Redis share :class:`KeyValueStorage`, which lays the records out as
JSON values under string keys.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import typing as t

from ...errors import BackendUnavailable

#: A stored record: a small JSON object.
Record = dict[str, t.Any]
#: The two kinds of grant the token endpoint redeems.
GrantKind = t.Literal["code", "refresh"]
GRANT_KINDS: tuple[GrantKind, ...] = ("code", "refresh")


@dataclasses.dataclass(frozen=True)
class Redemption:
    """What :meth:`Storage.redeem_grant` found.

    At most one of the fields is set: ``record`` for the one caller that redeemed
    the grant, ``reused_family`` when it had been redeemed before (the family to
    revoke), neither when there is no such grant (unknown or expired).
    """

    record: Record | None = None
    reused_family: str | None = None


class Storage(t.Protocol):
    """What the authorization server needs of a store (see the module docstring).

    Lifetimes (``ttl``) are in seconds from now; a record past its lifetime is gone.
    """

    # -- clients (Dynamic Client Registration) ------------------------------------

    def save_client(self, client: Record, ttl: float, most: int = 0) -> bool:
        """Store a registered client's metadata (with its ``client_id``), unless ``most``
        clients (0: no bound) are kept already: atomic, however many workers register.

        :returns: whether it was stored.
        """

    def load_client(self, client_id: str) -> Record | None:
        """Return a registered client's metadata, or ``None``."""

    def count_clients(self) -> int:
        """Return how many registered clients are kept (for ``MCP_OAUTH_MAX_CLIENTS``)."""

    # -- authorization codes and refresh tokens -------------------------------------

    def save_grant(self, kind: GrantKind, digest: str, grant: Record, ttl: float) -> None:
        """Store a code or a refresh token under the SHA-256 of its value (``digest``)."""

    def load_grant(self, kind: GrantKind, digest: str) -> Record | None:
        """Return a code or refresh token not redeemed yet, or ``None``."""

    def redeem_grant(self, kind: GrantKind, digest: str, keep_used: float) -> Redemption:
        """Use a code or refresh token once, atomically (see :class:`Redemption`).

        That it was used is remembered ``keep_used`` seconds, or until the grant
        would have expired if that is later, so that a second use is recognized.
        """

    # -- token families -------------------------------------------------------------

    def add_family(self, user_id: str, client_id: str, family: str, ttl: float) -> None:
        """Index ``family`` under the user and the client, for at least ``ttl`` seconds."""

    def bound_families(
        self, user_id: str, client_id: str, family: str, until: float, most: int
    ) -> list[str]:
        """Count ``family``, whose code was just redeemed, among the grants of the user to
        the client until ``until`` (a timestamp), and take out the oldest past ``most``:
        atomic, however many redemptions race.

        A grant is a family whose code was redeemed, not revoked, not expired; the oldest
        is the one that expires first, ``family`` never taken out (it is the newest,
        though it expires first when the refresh token lifetime was lowered since). The
        families taken out are forgotten from the user's and client's indexes; the caller
        revokes them (:meth:`revoke_family`).

        :returns: the families taken out, oldest first.
        """

    def revoke_family(self, family: str, ttl: float) -> None:
        """Remember for ``ttl`` seconds that every token of ``family`` is revoked, and
        delete its refresh token not used yet (no longer any use)."""

    def family_revoked(self, family: str) -> bool:
        """Tell whether ``family`` was revoked."""

    # -- consents -------------------------------------------------------------------

    def save_consent(self, user_id: str, client_id: str, consent: Record, ttl: float) -> None:
        """Store (replace) the consent of a user to a client.

        ``consent`` has ``scopes`` (a list), ``client_name`` and ``at`` (a timestamp).
        """

    def load_consent(self, user_id: str, client_id: str) -> Record | None:
        """Return the consent of a user to a client, or ``None``."""

    def consents(self, user_id: str) -> dict[str, Record]:
        """Return the consents of a user, by client id."""

    def revoke_consent(self, user_id: str, client_id: str) -> set[str]:
        """Forget the consent and return the families the client holds for the user.

        The caller revokes them (:meth:`revoke_family`).
        """

    # -- signing keys ---------------------------------------------------------------

    def add_signing_key(self, period: int, jwk: Record, ttl: float) -> bool:
        """Store the private JWK of ``period`` unless it has one: atomic.

        :returns: whether this one was stored.
        """

    def signing_key(self, period: int) -> Record | None:
        """Return the private JWK of ``period``, or ``None``."""

    # -- Client ID Metadata Documents ---------------------------------------------------

    def cache_client_document(self, client_id: str, document: Record, ttl: float) -> None:
        """Keep a fetched, checked client metadata document for ``ttl`` seconds."""

    def cached_client_document(self, client_id: str) -> Record | None:
        """Return a cached client metadata document, or ``None``."""

    def count_client_documents(self) -> int:
        """Return how many client metadata documents are cached (for ``MCP_OAUTH_MAX_CLIENTS``)."""


class KeyValueStorage:
    """A :class:`Storage` on JSON values under string keys, with sets and indexes.

    The key layout: ``client:<id>`` (and the index ``clients``), ``code:<digest>``
    and ``refresh:<digest>`` (``code-used:``, ``refresh-used:`` once redeemed),
    ``family-index:<user>:<client>`` (the families by when they expire; the set
    ``families:<user>:<client>`` of earlier versions is still read),
    ``grants:<user>:<client>`` (the families whose code was redeemed, by when they
    expire), ``latest-refresh:<family>`` (the digest of its refresh token not used
    yet), ``revoked:<family>``,
    ``consent:<user>:<client>`` (and the set ``consents:<user>``), ``key:<period>``,
    ``cimd:<client_id>`` (and the index ``cimds``). Each operation touches one key at a
    time, so on a Redis Cluster the keys may live in any slot.

    Subclasses provide the primitive operations.
    """

    # -- primitives --------------------------------------------------------------------

    def _put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        raise NotImplementedError

    def _get(self, key: str) -> Record | None:
        raise NotImplementedError

    def _take(self, key: str) -> Record | None:
        raise NotImplementedError

    def _delete(self, key: str) -> None:
        raise NotImplementedError

    def _add(self, key: str, member: str, ttl: float) -> None:
        raise NotImplementedError

    def _members(self, key: str) -> set[str]:
        raise NotImplementedError

    def _index(self, key: str, member: str, until: float, most: int = 0) -> bool:
        """Add ``member`` to an index of live members until ``until``, unless it holds
        ``most`` others (0: no bound): atomic. Return whether it was added."""
        raise NotImplementedError

    def _count(self, key: str) -> int:
        raise NotImplementedError

    def _remove(self, key: str, members: list[str]) -> None:
        raise NotImplementedError

    def _indexed(self, key: str) -> set[str]:
        raise NotImplementedError

    def _track(self, key: str, member: str, until: float) -> None:
        """Keep ``member`` in an index of live members until ``until`` (or later, if it
        was kept longer); the index lets go of expired members, and is gone once they
        all are."""
        raise NotImplementedError

    def _unindex(self, key: str, members: list[str]) -> None:
        raise NotImplementedError

    def _bounded(self, key: str, member: str, until: float, most: int) -> list[str]:
        """Add ``member`` to an index of live members until ``until`` and take out the
        first to expire past ``most``, ``member`` never: atomic. Return those taken out,
        first first."""
        raise NotImplementedError

    # -- Storage ---------------------------------------------------------------------------

    def save_client(self, client: Record, ttl: float, most: int = 0) -> bool:
        """See :meth:`Storage.save_client`: the client is stored, then the index
        ``clients`` takes it or, when full, refuses it and the record is deleted (its id
        was given to no one). Stored the other way round, a failure between the two would
        hold a place in the index for the client's lifetime."""
        client_id = str(client["client_id"])
        self._put(f"client:{client_id}", client, ttl)
        if self._index("clients", client_id, time.time() + ttl, most):
            return True
        self._delete(f"client:{client_id}")
        return False

    def load_client(self, client_id: str) -> Record | None:
        """See :meth:`Storage.load_client`."""
        return self._get(f"client:{client_id}")

    def count_clients(self) -> int:
        """See :meth:`Storage.count_clients`."""
        return self._count("clients")

    def save_grant(self, kind: GrantKind, digest: str, grant: Record, ttl: float) -> None:
        """See :meth:`Storage.save_grant`: a refresh token is also named as its family's
        latest (``latest-refresh:``), which a revocation deletes."""
        self._put(f"{kind}:{digest}", grant, ttl)
        if kind == "refresh":
            self._put(f"latest-refresh:{grant['family']}", {"digest": digest}, ttl)

    def load_grant(self, kind: GrantKind, digest: str) -> Record | None:
        """See :meth:`Storage.load_grant`."""
        return self._get(f"{kind}:{digest}")

    def redeem_grant(self, kind: GrantKind, digest: str, keep_used: float) -> Redemption:
        """See :meth:`Storage.redeem_grant`: a ``<kind>-used:`` record names the grant's
        family, then the grant is taken (one caller gets it).

        The used record comes first: once the grant is gone, whoever finds it gone
        finds its family, even a redemption racing the one that took it.
        """
        found = self._get(f"{kind}:{digest}")
        if found is not None:
            keep = max(keep_used, float(found.get("exp", 0)) - time.time(), 1.0)
            self._put(f"{kind}-used:{digest}", {"family": found["family"]}, keep)
        record = self._take(f"{kind}:{digest}")
        if record is None:
            used = self._get(f"{kind}-used:{digest}")
            return Redemption(reused_family=None if used is None else str(used["family"]))
        return Redemption(record=record)

    def add_family(self, user_id: str, client_id: str, family: str, ttl: float) -> None:
        """See :meth:`Storage.add_family`: ``family-index:<user>:<client>`` holds it until
        it expires, and lets go of it then (the set ``families:`` of earlier versions
        kept every family while one lived: a code never redeemed stayed)."""
        self._track(f"family-index:{user_id}:{client_id}", family, time.time() + ttl)

    def bound_families(
        self, user_id: str, client_id: str, family: str, until: float, most: int
    ) -> list[str]:
        """See :meth:`Storage.bound_families`: the index ``grants:<user>:<client>`` takes
        the family and gives back the oldest past ``most`` in one step; they leave
        ``families:<user>:<client>`` too. The families of the index revoked meanwhile
        leave it first."""
        key = f"grants:{user_id}:{client_id}"
        revoked = [m for m in sorted(self._indexed(key)) if self.family_revoked(m)]
        if revoked:  # a revoked family holds no place (revoked stays revoked: no race)
            self._unindex(key, revoked)
        oldest = self._bounded(key, family, until, most)
        if oldest:
            self._unindex(f"family-index:{user_id}:{client_id}", oldest)
            self._remove(f"families:{user_id}:{client_id}", oldest)
        return oldest

    def revoke_family(self, family: str, ttl: float) -> None:
        """See :meth:`Storage.revoke_family`."""
        self._put(f"revoked:{family}", {"at": time.time()}, ttl)
        latest = self._take(f"latest-refresh:{family}")
        if latest is not None:
            self._delete(f"refresh:{latest['digest']}")

    def family_revoked(self, family: str) -> bool:
        """See :meth:`Storage.family_revoked`."""
        return self._get(f"revoked:{family}") is not None

    def save_consent(self, user_id: str, client_id: str, consent: Record, ttl: float) -> None:
        """See :meth:`Storage.save_consent`."""
        self._put(f"consent:{user_id}:{client_id}", consent, ttl)
        self._add(f"consents:{user_id}", client_id, ttl)

    def load_consent(self, user_id: str, client_id: str) -> Record | None:
        """See :meth:`Storage.load_consent`."""
        return self._get(f"consent:{user_id}:{client_id}")

    def consents(self, user_id: str) -> dict[str, Record]:
        """See :meth:`Storage.consents`."""
        found = {}
        for client_id in sorted(self._members(f"consents:{user_id}")):
            record = self.load_consent(user_id, client_id)
            if record is not None:
                found[client_id] = record
        return found

    def revoke_consent(self, user_id: str, client_id: str) -> set[str]:
        """See :meth:`Storage.revoke_consent`."""
        self._delete(f"consent:{user_id}:{client_id}")
        families = self._members(f"families:{user_id}:{client_id}")
        families |= self._indexed(f"family-index:{user_id}:{client_id}")
        self._delete(f"families:{user_id}:{client_id}")
        self._delete(f"family-index:{user_id}:{client_id}")
        self._delete(f"grants:{user_id}:{client_id}")
        return families

    def add_signing_key(self, period: int, jwk: Record, ttl: float) -> bool:
        """See :meth:`Storage.add_signing_key`."""
        return self._put(f"key:{period}", jwk, ttl, only_new=True)

    def signing_key(self, period: int) -> Record | None:
        """See :meth:`Storage.signing_key`."""
        return self._get(f"key:{period}")

    def cache_client_document(self, client_id: str, document: Record, ttl: float) -> None:
        """See :meth:`Storage.cache_client_document`."""
        self._put(f"cimd:{client_id}", document, ttl)
        self._index("cimds", client_id, time.time() + ttl)

    def cached_client_document(self, client_id: str) -> Record | None:
        """See :meth:`Storage.cached_client_document`."""
        return self._get(f"cimd:{client_id}")

    def count_client_documents(self) -> int:
        """See :meth:`Storage.count_client_documents`."""
        return self._count("cimds")


#: Seconds between two deletions of the expired records of a :class:`MemoryStorage`.
PURGE_EVERY = 60.0


class MemoryStorage(KeyValueStorage):
    """Records in this process only: for tests and a single-process server.

    A record past its lifetime is gone at once; its memory is given back on the next
    write, at most every :data:`PURGE_EVERY` seconds, when every expired record is
    deleted (most expire unread: codes never redeemed, documents cached for anyone).
    """

    def __init__(self) -> None:
        self._records: dict[str, tuple[float, Record]] = {}
        self._sets: dict[str, tuple[float, set[str]]] = {}
        self._indexes: dict[str, dict[str, float]] = {}
        self._lock = threading.Lock()
        self._purge_at = 0.0

    def _purge(self) -> None:
        """Delete the expired records and sets, once per :data:`PURGE_EVERY` seconds;
        under the lock."""
        now = time.monotonic()
        if now < self._purge_at:
            return
        self._purge_at = now + PURGE_EVERY
        wall = time.time()
        for key in [key for key, (until, _) in self._records.items() if until <= wall]:
            del self._records[key]
        for key in [key for key, (until, _) in self._sets.items() if until <= wall]:
            del self._sets[key]
        for key in [
            key for key, index in self._indexes.items() if max(index.values(), default=0) <= wall
        ]:
            del self._indexes[key]

    def _put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        with self._lock:
            self._purge()
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

    def _get(self, key: str) -> Record | None:
        with self._lock:
            found = self._live(key)
            return None if found is None else dict(found)

    def _take(self, key: str) -> Record | None:
        with self._lock:
            found = self._live(key)
            self._records.pop(key, None)
            return found

    def _delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)
            self._sets.pop(key, None)
            self._indexes.pop(key, None)

    def _remove(self, key: str, members: list[str]) -> None:
        with self._lock:
            entry = self._sets.get(key)
            if entry is not None:
                entry[1].difference_update(members)

    def _add(self, key: str, member: str, ttl: float) -> None:
        with self._lock:
            self._purge()
            until, members = self._sets.get(key, (0.0, set()))
            members.add(member)
            self._sets[key] = (max(until, time.time() + ttl), members)

    def _members(self, key: str) -> set[str]:
        with self._lock:
            entry = self._sets.get(key)
            if entry is None or entry[0] <= time.time():
                return set()
            return set(entry[1])

    def _index(self, key: str, member: str, until: float, most: int = 0) -> bool:
        with self._lock:
            index = self._indexes.setdefault(key, {})
            now = time.time()
            for gone in [m for m, end in index.items() if end <= now]:
                del index[gone]
            if most and member not in index and len(index) >= most:
                return False
            index[member] = until
            return True

    def _count(self, key: str) -> int:
        now = time.time()
        with self._lock:
            return sum(1 for end in self._indexes.get(key, {}).values() if end > now)

    def _indexed(self, key: str) -> set[str]:
        now = time.time()
        with self._lock:
            return {m for m, end in self._indexes.get(key, {}).items() if end > now}

    def _track(self, key: str, member: str, until: float) -> None:
        with self._lock:
            self._purge()
            index = self._indexes.setdefault(key, {})
            now = time.time()
            for gone in [m for m, end in index.items() if end <= now]:
                del index[gone]
            index[member] = max(until, index.get(member, 0.0))

    def _unindex(self, key: str, members: list[str]) -> None:
        with self._lock:
            index = self._indexes.get(key, {})
            for member in members:
                index.pop(member, None)

    def _bounded(self, key: str, member: str, until: float, most: int) -> list[str]:
        with self._lock:
            index = self._indexes.setdefault(key, {})
            now = time.time()
            for gone in [m for m, end in index.items() if end <= now]:
                del index[gone]
            index[member] = until
            others = sorted((m for m in index if m != member), key=lambda m: (index[m], m))
            over = others[: max(0, len(index) - most)]
            for gone in over:
                del index[gone]
            return over


#: Adds ``ARGV[2]`` to the index ``KEYS[1]`` (score ``ARGV[3]``, when it expires) unless,
#: once the members expired at ``ARGV[1]`` are trimmed, it holds ``ARGV[4]`` others: one
#: key, so a Redis Cluster runs it on the key's node. Returns 1 when added, else 0.
BOUNDED_INDEX = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[2])
    and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
"""


#: Adds ``ARGV[2]`` to the index ``KEYS[1]`` (score ``ARGV[3]``, when it expires) once the
#: members expired at ``ARGV[1]`` are trimmed, then takes out the lowest scores past
#: ``ARGV[4]`` members, never ``ARGV[2]`` itself (the grant being handed out, though a
#: lowered lifetime makes it expire first); the key lives until its last member expires.
#: One key, so a Redis Cluster runs it on the key's node. Returns the members taken out,
#: lowest first.
BOUNDED_FAMILIES = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
local gone = {}
if over > 0 then
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, over)) do
    if member ~= ARGV[2] and #gone < over then
      gone[#gone + 1] = member
    end
  end
  redis.call('ZREM', KEYS[1], unpack(gone))
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2]) * 1000) + 1000)
return gone
"""


class RedisStorage(KeyValueStorage):
    """Records in Redis, under ``prefix``: shared by every worker and machine.

    :param client: a ``redis.Redis`` or ``redis.cluster.RedisCluster`` client
        (``decode_responses`` either way).
    :param prefix: put before every key, e.g. the ``MCP_BACKEND`` prefix and ``oauth:``.

    Each command touches one key, so a Redis Cluster needs no hash tag here (unlike
    the MCP backend's multi-key scripts in ``backends/redis/keys``).
    """

    def __init__(self, client: t.Any, prefix: str = "mcp:oauth:") -> None:
        self._client = client
        self._prefix = prefix

    @property
    def client(self) -> t.Any:
        """The Redis client."""
        return self._client

    @property
    def key_prefix(self) -> str:
        """Put before every key."""
        return self._prefix

    @classmethod
    def from_url(cls, url: str, prefix: str | None = None) -> RedisStorage:
        """Connect to the Redis at ``url``, with the clients of the MCP Redis backend.

        Every ``MCP_BACKEND`` Redis URL works: ``redis://host:port/db``, ``rediss://``,
        ``unix://``, ``redis+cluster://host:port/`` (a Redis Cluster) and
        ``redis+sentinel://...``. Without ``prefix``, the keys start with the URL's
        ``?prefix=`` (default ``mcp:``) and ``oauth:``.
        """
        from ...backends.redis.connections import fail_fast
        from ...backends.redis.urls import clients_from_url

        client, blocking, ours = clients_from_url(
            url, retry=fail_fast(), max_connections=MAX_CONNECTIONS, block=5.0
        )
        if blocking is not None and blocking is not client:
            blocking.close()  # no blocking reads here
        return cls(client, prefix if prefix is not None else f"{ours.get('prefix', 'mcp:')}oauth:")

    def _key(self, key: str) -> str:
        return self.key_prefix + key

    @staticmethod
    def _ms(ttl: float) -> int:
        return max(1, int(ttl * 1000))

    @staticmethod
    def _load(raw: t.Any) -> Record | None:
        if raw is None:
            return None
        loaded = json.loads(raw)
        return loaded if isinstance(loaded, dict) else None

    def _put(self, key: str, value: Record, ttl: float, *, only_new: bool = False) -> bool:
        done = self.client.set(
            self._key(key), json.dumps(value), px=self._ms(ttl), nx=only_new or None
        )
        return bool(done)

    def _get(self, key: str) -> Record | None:
        return self._load(self.client.get(self._key(key)))

    def _take(self, key: str) -> Record | None:
        return self._load(self.client.getdel(self._key(key)))  # one command: one caller wins

    def _delete(self, key: str) -> None:
        self.client.delete(self._key(key))

    def _add(self, key: str, member: str, ttl: float) -> None:
        """Add to a set that lives as long as its longest-lived member."""
        pipe = self.client.pipeline(transaction=False)
        pipe.sadd(self._key(key), member)
        pipe.pexpire(self._key(key), self._ms(ttl), gt=True)
        pipe.pexpire(self._key(key), self._ms(ttl), nx=True)
        pipe.execute()

    def _members(self, key: str) -> set[str]:
        raw = self.client.smembers(self._key(key))
        return {m.decode() if isinstance(m, bytes) else str(m) for m in raw}

    def _index(self, key: str, member: str, until: float, most: int = 0) -> bool:
        """A sorted set of members by the time they expire, trimmed as it grows; with
        ``most``, one script trims, counts and adds (:data:`BOUNDED_INDEX`)."""
        if most:
            added = self.client.eval(
                BOUNDED_INDEX, 1, self._key(key), time.time(), member, until, most
            )
            return bool(added)
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(self._key(key), {member: until})
        pipe.zremrangebyscore(self._key(key), "-inf", time.time())
        pipe.execute()
        return True

    def _count(self, key: str) -> int:
        return int(self.client.zcount(self._key(key), time.time(), "+inf"))

    def _remove(self, key: str, members: list[str]) -> None:
        self.client.srem(self._key(key), *members)

    def _indexed(self, key: str) -> set[str]:
        raw = self.client.zrangebyscore(self._key(key), time.time(), "+inf")
        return {m.decode() if isinstance(m, bytes) else str(m) for m in raw}

    def _unindex(self, key: str, members: list[str]) -> None:
        self.client.zrem(self._key(key), *members)

    def _track(self, key: str, member: str, until: float) -> None:
        """A sorted set by when members expire, trimmed as it grows, living as long as
        its longest-lived member."""
        at = self._ms(until)
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(self._key(key), {member: until}, gt=True)
        pipe.zremrangebyscore(self._key(key), "-inf", time.time())
        pipe.pexpireat(self._key(key), at, gt=True)
        pipe.pexpireat(self._key(key), at, nx=True)
        pipe.execute()

    def _bounded(self, key: str, member: str, until: float, most: int) -> list[str]:
        """One script trims, adds and takes out (:data:`BOUNDED_FAMILIES`)."""
        gone = self.client.eval(
            BOUNDED_FAMILIES, 1, self._key(key), time.time(), member, until, most
        )
        return [m.decode() if isinstance(m, bytes) else str(m) for m in gone or ()]


#: Connections per process of a :class:`RedisStorage` made from a URL.
MAX_CONNECTIONS = 50


def unreachable_errors(storage: object = None) -> tuple[type[Exception], ...]:
    """The exceptions that say a storage does not answer now (not that a request is wrong).

    :class:`~flask_mcp.errors.BackendUnavailable`, with redis-py installed the
    errors of a Redis that cannot be reached, times out or is failing over (those
    :class:`RedisStorage` raises), and those ``storage`` names in its optional
    ``unreachable`` attribute (:class:`~.sql.SQLStorage`: SQLAlchemy's errors of a
    database that does not answer). The endpoints answer them with 503
    ``temporarily_unavailable`` and ``Retry-After``.
    """
    found: list[type[Exception]] = [BackendUnavailable]
    try:
        from ...backends.redis.codec import UNAVAILABLE
    except ImportError:  # no redis-py: no Redis storage either
        pass
    else:
        found.extend(UNAVAILABLE)
    found.extend(getattr(storage, "unreachable", ()))
    return tuple(dict.fromkeys(found))


__all__ = [
    "BOUNDED_FAMILIES",
    "BOUNDED_INDEX",
    "GRANT_KINDS",
    "MAX_CONNECTIONS",
    "PURGE_EVERY",
    "GrantKind",
    "KeyValueStorage",
    "MemoryStorage",
    "Record",
    "RedisStorage",
    "Redemption",
    "Storage",
    "unreachable_errors",
]
