"""The authorization server's storage: one contract, five stores, two atomic operations.

Each store (memory, Redis, a Redis Cluster, SQLite, PostgreSQL) keeps every kind of record the
server writes and honours the lifetimes; a code is redeemed once however many
threads race for it, and a signing key is stored once per period. The SQL store
is checked as an app sees it: real tables, on the app's Flask-SQLAlchemy metadata,
whose consents it can list and revoke. PostgreSQL is ``MCP_TEST_POSTGRES_URL``
(default the local server, database ``test``); the tests skip without it.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import typing as t

import pytest
from redis.cluster import RedisCluster

from flask_mcp.contrib.oauth_server.keys import SigningKeys
from flask_mcp.contrib.oauth_server.sql import SQLStorage
from flask_mcp.contrib.oauth_server.sql import oauth_tables
from flask_mcp.contrib.oauth_server.storage import MemoryStorage
from flask_mcp.contrib.oauth_server.storage import RedisStorage

POSTGRES_URL = os.environ.get(
    "MCP_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
KINDS = [
    "memory",
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("cluster", marks=[pytest.mark.redis, pytest.mark.cluster]),
    "sqlite",
    "postgresql",
]


@pytest.fixture
def postgres_url() -> str:
    sa = pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    engine = sa.create_engine(POSTGRES_URL)
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        pytest.skip(f"no PostgreSQL at {POSTGRES_URL}: {exc}")
    finally:
        engine.dispose()
    return POSTGRES_URL


def _sql(url: str) -> t.Iterator[SQLStorage]:
    """An SQL store on tables of its own (a random prefix), dropped afterwards."""
    storage = SQLStorage(url, table_prefix=f"t{secrets.token_hex(4)}_")
    try:
        yield storage
    finally:
        storage.tables.clients.metadata.drop_all(storage.engine)
        storage.engine.dispose()


@pytest.fixture(params=KINDS)
def storage(request: pytest.FixtureRequest, tmp_path: t.Any) -> t.Iterator[t.Any]:
    if request.param == "memory":
        yield MemoryStorage()
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")
        yield RedisStorage.from_url(url, prefix=f"oauth-test-{secrets.token_hex(4)}:")
    elif request.param == "cluster":  # the MCP backend's URL and client factory
        url = request.getfixturevalue("redis_cluster_url")
        storage = RedisStorage.from_url(f"{url}?prefix=oauth-{secrets.token_hex(4)}:")
        assert isinstance(storage.client, RedisCluster)
        assert storage.key_prefix.endswith(":oauth:")
        yield storage
        storage.client.close()
    elif request.param == "sqlite":
        yield from _sql(f"sqlite:///{tmp_path}/oauth.db")
    else:
        yield from _sql(request.getfixturevalue("postgres_url"))


def code(**extra: t.Any) -> dict[str, t.Any]:
    return {
        "client_id": "c1",
        "user_id": "ada",
        "family": "fam-1",
        "scope": "notes:read",
        "redirect_uri": "http://127.0.0.1:9/cb",
        "redirect_uri_sent": True,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        "resource": "http://127.0.0.1/mcp",
        "exp": time.time() + 60,
        **extra,
    }


def test_clients(storage: t.Any) -> None:
    assert storage.load_client("c1") is None and storage.count_clients() == 0
    client = {
        "client_id": "c1",
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "client_id_issued_at": int(time.time()),
        "logo_uri": "https://claude.ai/logo.png",
    }
    storage.save_client(client, 60)
    storage.save_client({**client, "client_id": "c2"}, 60)
    storage.save_client({**client, "client_id": "gone"}, 0.05)
    assert storage.load_client("c1") == client  # every metadata field comes back
    time.sleep(0.1)
    assert storage.load_client("gone") is None and storage.count_clients() == 2


def test_a_bounded_save_is_exact_under_a_race(storage: t.Any) -> None:
    """``save_client(..., most)`` from many threads at once keeps exactly ``most``; a
    client refused leaves no record, and a full store still takes none."""
    storage.save_client({"client_id": "old", "redirect_uris": []}, 0.05)  # expires: no place
    time.sleep(0.1)
    barrier = threading.Barrier(10)
    saved: list[bool] = []

    def register(number: int) -> None:
        barrier.wait()
        saved.append(storage.save_client({"client_id": f"r{number}", "redirect_uris": []}, 60, 3))

    threads = [threading.Thread(target=register, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(saved) == [False] * 7 + [True] * 3 and storage.count_clients() == 3
    assert sum(storage.load_client(f"r{n}") is not None for n in range(10)) == 3
    assert storage.save_client({"client_id": "late", "redirect_uris": []}, 60, 3) is False
    assert storage.save_client({"client_id": "free", "redirect_uris": []}, 60) is True


@pytest.mark.parametrize("kind", ["code", "refresh"])
def test_grants_are_redeemed_once_and_reuse_names_the_family(storage: t.Any, kind: str) -> None:
    record = (
        code()
        if kind == "code"
        else {k: code()[k] for k in ("client_id", "user_id", "family", "scope", "resource", "exp")}
    )
    storage.save_grant(kind, "d1", record, 60)
    assert storage.load_grant(kind, "d1") == pytest.approx(record)
    redeemed = storage.redeem_grant(kind, "d1", 120)
    assert redeemed.record == pytest.approx(record) and redeemed.reused_family is None
    again = storage.redeem_grant(kind, "d1", 120)
    assert again.record is None and again.reused_family == "fam-1"
    assert storage.load_grant(kind, "d1") is None  # used: no longer valid
    unknown = storage.redeem_grant(kind, "nope", 120)
    assert unknown.record is None and unknown.reused_family is None
    storage.save_grant(kind, "short", {**record, "exp": time.time() + 0.05}, 0.05)
    time.sleep(0.1)
    assert storage.redeem_grant(kind, "short", 120) == unknown


def test_families_revocations_and_consents(storage: t.Any) -> None:
    storage.add_family("ada", "c1", "f1", 60)
    storage.add_family("ada", "c1", "f2", 60)
    storage.add_family("bob", "c1", "f3", 60)
    assert not storage.family_revoked("f1")
    storage.revoke_family("f2", 60)
    storage.revoke_family("never-seen", 60)
    assert storage.family_revoked("f2") and storage.family_revoked("never-seen")
    at = time.time()
    storage.save_consent("ada", "c1", {"scopes": ["a", "b"], "client_name": "C1", "at": at}, 60)
    storage.save_consent("ada", "c2", {"scopes": ["a"], "client_name": "C2", "at": at}, 60)
    storage.save_consent("ada", "c2", {"scopes": ["a", "c"], "client_name": "C2", "at": at}, 60)
    assert storage.load_consent("ada", "c2") == {
        "scopes": ["a", "c"],
        "client_name": "C2",
        "at": pytest.approx(at, abs=1e-3),
    }
    assert list(storage.consents("ada")) == ["c1", "c2"] and storage.consents("bob") == {}
    families = storage.revoke_consent("ada", "c1")
    assert "f1" in families and "f3" not in families  # f2, revoked already, may be listed
    assert storage.load_consent("ada", "c1") is None and list(storage.consents("ada")) == ["c2"]


def test_codes_never_redeemed_leave_the_family_index(storage: t.Any) -> None:
    """A family indexed for a code that expired unredeemed leaves the user's and client's
    index, though a live family keeps that index alive: an account looping authorize
    alone (no token request, no rate limit) cannot grow it."""
    storage.add_family("ada", "c1", "live", 60)
    for number in range(5):
        storage.add_family("ada", "c1", f"code-{number}", 0.05)
    time.sleep(0.1)
    storage.add_family("ada", "c1", "late", 60)
    assert storage.revoke_consent("ada", "c1") == {"live", "late"}


def test_grants_per_user_and_client_are_bounded_oldest_first(storage: t.Any) -> None:
    """``bound_families`` keeps ``most`` redeemed families per user and client and hands
    back the oldest (first to expire); revoked ones and codes not redeemed hold no place,
    a revocation deletes the family's unused refresh token, and racing redemptions keep
    exactly ``most``."""
    now = time.time()

    def redeemed(family: str, at: float, most: int = 2, user: str = "ada") -> list[str]:
        storage.add_family(user, "c1", family, 60)
        refresh = {**code(family=family), "exp": now + 60}
        refresh = {k: refresh[k] for k in ("client_id", "user_id", "family", "scope", "exp")}
        storage.save_grant("refresh", f"r-{family}", {**refresh, "resource": "r"}, 60)
        oldest: list[str] = storage.bound_families(user, "c1", family, now + at, most)
        for gone in oldest:
            storage.revoke_family(gone, 60)
        return oldest

    assert redeemed("f1", 100) == [] and redeemed("f2", 200) == []
    assert redeemed("f3", 300) == ["f1"]
    assert storage.family_revoked("f1") and storage.load_grant("refresh", "r-f1") is None
    assert storage.load_grant("refresh", "r-f2") is not None
    assert redeemed("b1", 100, user="bob") == []  # another user's grants are their own
    storage.revoke_family("f2", 60)  # signed out: its place is free
    assert storage.load_grant("refresh", "r-f2") is None
    assert redeemed("f4", 400) == []
    storage.add_family("ada", "c1", "waiting", 60)  # a code not redeemed yet
    storage.save_grant("code", "w", code(family="waiting"), 60)
    assert redeemed("f5", 500) == ["f3"] and not storage.family_revoked("waiting")
    assert "f3" not in storage.revoke_consent("ada", "c1")  # it left the index
    barrier = threading.Barrier(8)

    def race(number: int) -> None:
        barrier.wait()
        redeemed(f"r{number}", 1000 + number, most=3, user="cy")

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(not storage.family_revoked(f"r{n}") for n in range(8)) == 3
    assert len(redeemed("last", 2000, most=3, user="cy")) == 1
    # A family redeemed with a shorter life than the others (the refresh token lifetime
    # was lowered) is the newest grant all the same: the oldest of the others goes, not
    # the one whose tokens are being handed out.
    live = [f"r{n}" for n in range(8) if not storage.family_revoked(f"r{n}")]
    assert redeemed("short", 50, most=3, user="cy") == live[:1]
    assert not storage.family_revoked("short")


def test_cached_client_documents_are_counted(storage: t.Any) -> None:
    """The cache is bounded by its count (``MCP_OAUTH_MAX_CLIENTS``): expired ones leave it."""
    assert storage.count_client_documents() == 0
    for number in range(3):
        url = f"https://app{number}.example/client.json"
        storage.cache_client_document(url, {"client_id": url}, 60)
    url = "https://app0.example/client.json"
    storage.cache_client_document(url, {"client_id": url, "client_name": "again"}, 60)
    storage.cache_client_document("https://gone.example/c.json", {}, 0.05)
    time.sleep(0.1)
    assert storage.count_client_documents() == 3


def test_signing_keys_and_client_documents(storage: t.Any) -> None:
    assert storage.add_signing_key(7, {"kid": "7-a", "d": "secret"}, 60)
    assert not storage.add_signing_key(7, {"kid": "7-b", "d": "other"}, 60)
    assert storage.signing_key(7) == {"kid": "7-a", "d": "secret"}
    assert storage.signing_key(8) is None
    url = "https://client.example.com/oauth/metadata.json"
    assert storage.cached_client_document(url) is None
    storage.cache_client_document(url, {"client_id": url, "client_name": "Doc"}, 60)
    storage.cache_client_document(url, {"client_id": url, "client_name": "Doc 2"}, 60)
    assert storage.cached_client_document(url) == {"client_id": url, "client_name": "Doc 2"}


def test_signing_keys_are_sealed_with_the_secret_key(storage: t.Any) -> None:
    """The store holds no private key in clear: only ``SECRET_KEY`` (or a fallback) unseals it."""
    import jwt

    first = SigningKeys(storage, 3600.0, lambda: ["old-secret"])
    token = first.sign({"sub": "ada"})
    kid = jwt.get_unverified_header(token)["kid"]
    period = int(kid.split("-")[0])
    record = storage.signing_key(period)
    assert record is not None and "d" not in record and record["kid"] == kid
    assert "old-secret" not in str(record)
    # another worker, same secret: the same key; after SECRET_KEY rotated, the fallback unseals
    assert SigningKeys(storage, 3600.0, lambda: ["old-secret"]).current()[1] == kid
    rotated = SigningKeys(storage, 3600.0, lambda: ["new-secret", "old-secret"])
    assert jwt.decode(rotated.sign({"sub": "bob"}), first.verifier(kid, "ES256"), ["ES256"])
    with pytest.raises(RuntimeError, match="SECRET_KEY_FALLBACKS"):
        SigningKeys(storage, 3600.0, lambda: ["new-secret"]).current()
    with pytest.raises(RuntimeError, match=r"set app.config\['SECRET_KEY'\]"):
        SigningKeys(storage, 3600.0, list).current()
    # publishing keys made already unseals nothing: the JWKS needs no secret
    published = first.jwks()["keys"]
    assert SigningKeys(storage, 3600.0, list).jwks()["keys"] == published
    assert kid in [key["kid"] for key in published] and not any("d" in k for k in published)
    # the sealed part is bound to its kid: moved to another period's record, it unseals nothing
    storage.add_signing_key(period + 5, {**record, "kid": f"{period + 5}-x"}, 60)
    moved = SigningKeys(storage, 3600.0, lambda: ["old-secret"])
    with pytest.raises(RuntimeError, match="another secret"):
        moved._unseal(moved._load(period + 5))


def test_checking_the_signing_key_reads_only(storage: t.Any) -> None:
    """``flask mcp check`` asks whether this period's key unseals here; it makes no key."""
    keys = SigningKeys(storage, 3600.0, lambda: ["secret"])
    assert keys.check().startswith("no signing key is stored for this period yet")
    assert storage.signing_key(keys._period()) is None
    kid = keys.current()[1]
    assert keys.check() == f"the signing key {kid} unseals with this app's SECRET_KEY"
    with pytest.raises(RuntimeError, match="sealed with another secret"):
        SigningKeys(storage, 3600.0, lambda: ["another"]).check()


def test_one_winner_among_threads(storage: t.Any) -> None:
    """Ten threads redeem one code and store the key of one period: one wins each race."""
    storage.save_grant("code", "race", code(), 60)
    barrier = threading.Barrier(10)
    redeemed: list[t.Any] = []
    stored: dict[int, bool] = {}

    def worker(number: int) -> None:
        barrier.wait()
        redeemed.append(storage.redeem_grant("code", "race", 120))
        stored[number] = storage.add_signing_key(42, {"kid": f"42-{number}"}, 60)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r.record is not None for r in redeemed) == 1
    winners = [number for number, won in stored.items() if won]
    assert len(stored) == 10 and len(winners) == 1
    assert storage.signing_key(42) == {"kid": f"42-{winners[0]}"}


def test_sql_tables_on_the_apps_flask_sqlalchemy_metadata(tmp_path: t.Any) -> None:
    """``SQLStorage(db)`` declares real tables on ``db.metadata``: ``db.create_all()``
    makes them, and the app queries its users' consents with its own session."""
    flask_sqlalchemy = pytest.importorskip("flask_sqlalchemy")
    import sqlalchemy as sa
    from flask import Flask

    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{tmp_path}/app.db"
    db = flask_sqlalchemy.SQLAlchemy(app)
    storage = SQLStorage(db, create_tables=False)
    assert storage.tables.consents.metadata is db.metadata
    assert oauth_tables(db.metadata) == storage.tables  # declared once
    names = {table.name for table in storage.tables.all()}
    assert names <= set(db.metadata.tables)
    with app.app_context():
        db.create_all()
        inspector = sa.inspect(db.engine)
        columns = {c["name"] for c in inspector.get_columns("mcp_oauth_consents")}
        assert {"user_id", "client_id", "scope", "granted_at", "expires_at"} <= columns
        storage.save_consent("ada", "c1", {"scopes": ["notes:read"], "client_name": "C1"}, 60)
        consents = storage.tables.consents
        rows = db.session.execute(
            sa.select(consents.c.client_id, consents.c.scope).where(consents.c.user_id == "ada")
        ).all()
        assert [tuple(row) for row in rows] == [("c1", "notes:read")]


@pytest.mark.parametrize(
    "backend",
    [
        "redis://127.0.0.1:1/0",
        "rediss://127.0.0.1:1/0",
        "unix:///tmp/redis.sock",
        "redis+cluster://127.0.0.1:1/",
        "rediss+cluster://127.0.0.1:1/",
        "redis+sentinel://127.0.0.1:1/mymaster/0",
    ],
)
def test_every_redis_backend_url_keeps_the_records_in_that_redis(backend: str) -> None:
    """Not only ``redis://``: a Redis Cluster or Sentinel ``MCP_BACKEND`` is used through the
    backend's client, found on first use (memory here would lose records between workers)."""
    from flask import Flask

    from flask_mcp.contrib.oauth_server import OAuthServer
    from flask_mcp.contrib.oauth_server.extension import BackendRedisStorage

    app = Flask(__name__)
    app.config.update(MCP_BACKEND=backend, MCP_AUTH_RESOURCE="http://127.0.0.1/mcp")
    OAuthServer().init_app(app)
    storage = OAuthServer().app_server(app).storage
    assert isinstance(storage, BackendRedisStorage)
    with pytest.raises(RuntimeError, match="mcp.init_app"):
        storage.load_client("c1")  # no MCP server on this app: says what to do


def test_memory_backend_keeps_the_records_in_memory() -> None:
    from flask import Flask

    from flask_mcp.contrib.oauth_server import OAuthServer

    app = Flask(__name__)
    app.config.update(MCP_AUTH_RESOURCE="http://127.0.0.1/mcp")
    OAuthServer().init_app(app)
    assert isinstance(OAuthServer().app_server(app).storage, MemoryStorage)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_workers_creating_the_tables_at_once(
    database: str, tmp_path: t.Any, request: pytest.FixtureRequest
) -> None:
    """Gunicorn's workers meet the missing tables together on their first request."""
    if database == "sqlite":
        url = f"sqlite:///{tmp_path}/race.db"
    else:
        url = request.getfixturevalue("postgres_url")
    prefix = f"r{secrets.token_hex(4)}_"
    workers = [SQLStorage(url, table_prefix=prefix) for _ in range(4)]
    barrier = threading.Barrier(len(workers))
    failures: list[BaseException] = []

    def first_request(storage: SQLStorage) -> None:
        barrier.wait()
        try:
            storage.save_client({"client_id": f"c{id(storage)}", "redirect_uris": []}, 60)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=first_request, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == [] and workers[0].count_clients() == 4
    finally:
        workers[0].tables.clients.metadata.drop_all(workers[0].engine)
        for storage in workers:
            storage.engine.dispose()


def test_memory_storage_lets_go_of_expired_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records that expire unread (a code never redeemed, a client metadata document
    anyone had cached, a registration not used again) are deleted from memory, not only
    hidden: a long-running single-process server would hold every one it ever made."""
    from flask_mcp.contrib.oauth_server import storage as storage_module

    monkeypatch.setattr(storage_module, "PURGE_EVERY", 0.0)
    storage = MemoryStorage()
    for number in range(50):
        storage.save_grant("code", f"d{number}", code(), 0.01)
        storage.cache_client_document(f"https://app{number}.example/c.json", {}, 0.01)
        storage.save_consent("ada", f"c{number}", {"scopes": []}, 0.01)
    time.sleep(0.05)
    storage.save_client({"client_id": "kept"}, 60)
    assert set(storage._records) == {"client:kept"}
    assert storage._sets == {}
    assert storage.count_client_documents() == 0 and storage.load_client("kept") is not None
