"""SQL storage: one table per kind of record, through SQLAlchemy.

:func:`oauth_tables` declares the tables on a ``MetaData``: the app's own
(``db.metadata`` of Flask-SQLAlchemy, so that ``db.create_all()`` and Alembic's
autogenerate see them) or a private one. :class:`SQLStorage` reads and writes
them, in any database SQLAlchemy reaches (``sqlite:///oauth.db``,
``postgresql://...``) or through the engine of a Flask-SQLAlchemy ``db``.

The tables (``mcp_oauth_`` and):

========================  ==========================================================
``clients``               clients registered by Dynamic Client Registration
``consents``              what each user granted each client (one row per pair)
``codes``                 authorization codes, by the SHA-256 of the code
``refresh_tokens``        refresh tokens, by the SHA-256 of the token
``token_families``        the tokens of one authorization, per user and client;
                          ``revoked_at`` once revoked
``signing_keys``          the private signing key of each rotation period
``client_documents``      the cache of fetched Client ID Metadata Documents
========================  ==========================================================

Times are naive UTC ``DATETIME`` columns. Rows past ``expires_at`` count as gone;
each process deletes them now and then (:data:`PURGE_EVERY`).

Atomicity: a code or refresh token is redeemed by a conditional
``UPDATE ... SET used_at = now WHERE ... AND used_at IS NULL``, whose row count
tells the one winner (the database's row lock orders two workers: the second
sees ``used_at`` set). A signing key is inserted only if its period has none
(the primary key refuses a second). Both work on SQLite and PostgreSQL, and on
any database with transactions.
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
import time
import typing as t

try:
    import sqlalchemy as sa
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "SQL storage for the authorization server needs SQLAlchemy: "
        "pip install 'Flask-MCP[oauth-server]'."
    ) from exc

from sqlalchemy.schema import SchemaItem

from .storage import GrantKind
from .storage import Record
from .storage import Redemption

#: Seconds between two deletions of expired rows, per table and process.
PURGE_EVERY = 300.0
#: The default prefix of the table names.
TABLE_PREFIX = "mcp_oauth_"
_ID = 255  # client ids, user ids: what fits an index everywhere


def utcnow() -> datetime.datetime:
    """Now, as the naive UTC datetime the tables hold."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def to_datetime(timestamp: float) -> datetime.datetime:
    """A POSIX timestamp as a naive UTC datetime."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.replace(tzinfo=None)


def to_timestamp(moment: datetime.datetime) -> float:
    """A naive UTC datetime of the tables as a POSIX timestamp."""
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def _later(seconds: float) -> datetime.datetime:
    return to_datetime(time.time() + seconds)


@dataclasses.dataclass(frozen=True)
class OAuthTables:
    """The tables of the authorization server (see the module docstring)."""

    clients: sa.Table
    consents: sa.Table
    codes: sa.Table
    refresh_tokens: sa.Table
    token_families: sa.Table
    signing_keys: sa.Table
    client_documents: sa.Table

    def all(self) -> list[sa.Table]:
        """Every table, in creation order."""
        return [getattr(self, field.name) for field in dataclasses.fields(self)]

    def grants(self, kind: GrantKind) -> sa.Table:
        """The table of codes or of refresh tokens."""
        return self.codes if kind == "code" else self.refresh_tokens


def oauth_tables(metadata: sa.MetaData, prefix: str = TABLE_PREFIX) -> OAuthTables:
    """Declare the authorization server's tables on ``metadata`` and return them.

    Calling it again with the same ``metadata`` returns the tables declared first.

    .. code-block:: python

        db = SQLAlchemy(app)              # Flask-SQLAlchemy
        tables = oauth_tables(db.metadata)
        oauth = OAuthServer(mcp, storage=SQLStorage(db))
        # db.create_all() or `flask db migrate` (Alembic) now include them

    :param metadata: the ``MetaData`` to declare them on.
    :param prefix: the start of every table name.
    """

    def table(name: str, *columns: SchemaItem) -> sa.Table:
        found = metadata.tables.get(f"{prefix}{name}")
        return found if found is not None else sa.Table(f"{prefix}{name}", metadata, *columns)

    def expires() -> sa.Column[datetime.datetime]:
        return sa.Column("expires_at", sa.DateTime(), nullable=False, index=True)

    return OAuthTables(
        clients=table(
            "clients",
            sa.Column("client_id", sa.String(_ID), primary_key=True),
            sa.Column("client_name", sa.String(_ID), nullable=False),
            sa.Column("redirect_uris", sa.JSON(), nullable=False),
            sa.Column("grant_types", sa.JSON(), nullable=False),
            sa.Column("response_types", sa.JSON(), nullable=False),
            sa.Column("scope", sa.Text(), nullable=False, default=""),
            sa.Column("token_endpoint_auth_method", sa.String(64), nullable=False),
            sa.Column("client_secret_sha256", sa.String(64), nullable=True),
            sa.Column("registered_at", sa.DateTime(), nullable=False),
            sa.Column("client_metadata", sa.JSON(), nullable=False),
            expires(),
        ),
        consents=table(
            "consents",
            sa.Column("user_id", sa.String(_ID), primary_key=True),
            sa.Column("client_id", sa.String(_ID), primary_key=True),
            sa.Column("client_name", sa.String(_ID), nullable=False),
            sa.Column("scope", sa.Text(), nullable=False),
            sa.Column("granted_at", sa.DateTime(), nullable=False),
            expires(),
        ),
        codes=table(
            "codes",
            sa.Column("code_sha256", sa.String(64), primary_key=True),
            sa.Column("client_id", sa.String(_ID), nullable=False),
            sa.Column("user_id", sa.String(_ID), nullable=False),
            sa.Column("family", sa.String(64), nullable=False),
            sa.Column("scope", sa.Text(), nullable=False),
            sa.Column("redirect_uri", sa.Text(), nullable=False),
            sa.Column("redirect_uri_sent", sa.Boolean(), nullable=False),
            sa.Column("code_challenge", sa.String(128), nullable=False),
            sa.Column("code_challenge_method", sa.String(16), nullable=False),
            sa.Column("resource", sa.Text(), nullable=False),
            sa.Column("used_at", sa.DateTime(), nullable=True),
            expires(),
        ),
        refresh_tokens=table(
            "refresh_tokens",
            sa.Column("token_sha256", sa.String(64), primary_key=True),
            sa.Column("client_id", sa.String(_ID), nullable=False),
            sa.Column("user_id", sa.String(_ID), nullable=False),
            sa.Column("family", sa.String(64), nullable=False, index=True),
            sa.Column("scope", sa.Text(), nullable=False),
            sa.Column("resource", sa.Text(), nullable=False),
            sa.Column("used_at", sa.DateTime(), nullable=True),
            expires(),
        ),
        token_families=table(
            "token_families",
            sa.Column("family", sa.String(64), primary_key=True),
            sa.Column("user_id", sa.String(_ID), nullable=True),
            sa.Column("client_id", sa.String(_ID), nullable=True),
            sa.Column("issued_at", sa.DateTime(), nullable=False),
            sa.Column("revoked_at", sa.DateTime(), nullable=True),
            expires(),
            sa.Index(f"{prefix}token_families_user_client", "user_id", "client_id"),
        ),
        signing_keys=table(
            "signing_keys",
            sa.Column("period", sa.BigInteger(), primary_key=True, autoincrement=False),
            sa.Column("kid", sa.String(128), nullable=False),
            sa.Column("private_jwk", sa.JSON(), nullable=False),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            expires(),
        ),
        client_documents=table(
            "client_documents",
            sa.Column("url_sha256", sa.String(64), primary_key=True),
            sa.Column("client_id", sa.Text(), nullable=False),
            sa.Column("document", sa.JSON(), nullable=False),
            sa.Column("fetched_at", sa.DateTime(), nullable=False),
            expires(),
        ),
    )


def _code_row(grant: Record) -> dict[str, t.Any]:
    return {
        "client_id": grant["client_id"],
        "user_id": grant["user_id"],
        "family": grant["family"],
        "scope": grant.get("scope") or "",
        "redirect_uri": grant.get("redirect_uri") or "",
        "redirect_uri_sent": bool(grant.get("redirect_uri_sent")),
        "code_challenge": grant.get("code_challenge") or "",
        "code_challenge_method": grant.get("code_challenge_method") or "",
        "resource": grant.get("resource") or "",
    }


def _refresh_row(grant: Record) -> dict[str, t.Any]:
    return {
        "client_id": grant["client_id"],
        "user_id": grant["user_id"],
        "family": grant["family"],
        "scope": grant.get("scope") or "",
        "resource": grant.get("resource") or "",
    }


class SQLStorage:
    """A :class:`~.storage.Storage` in SQL tables (see the module docstring).

    :param bind: an SQLAlchemy URL (``sqlite:///oauth.db``, ``postgresql://...``), an
        ``Engine``, or a Flask-SQLAlchemy ``db`` (its engine is the current app's,
        taken when used, in the app context).
    :param metadata: the ``MetaData`` to declare the tables on (default: ``db.metadata``
        of a Flask-SQLAlchemy ``db``, else a private one).
    :param table_prefix: the start of every table name.
    :param create_tables: create the missing tables on first use in each database
        (``False`` when migrations, such as Alembic's, create them).
    """

    #: SQLAlchemy's errors of a database that does not answer now (its server is gone or
    #: restarting, the connection broke, a lock or the pool's wait timed out): the
    #: endpoints answer them with 503 ``temporarily_unavailable`` and ``Retry-After``, as
    #: a Redis outage (see :func:`~.storage.unreachable_errors`).
    unreachable: t.ClassVar[tuple[type[Exception], ...]] = (
        sa.exc.OperationalError,
        sa.exc.TimeoutError,
    )

    def __init__(
        self,
        bind: t.Any,
        *,
        metadata: sa.MetaData | None = None,
        table_prefix: str = TABLE_PREFIX,
        create_tables: bool = True,
    ) -> None:
        self._bind = bind
        if metadata is None:
            found = getattr(bind, "metadata", None)
            metadata = found if isinstance(found, sa.MetaData) else sa.MetaData()
        #: The tables (:func:`oauth_tables`).
        self.tables = oauth_tables(metadata, table_prefix)
        self.create_tables = create_tables
        self._engine: sa.Engine | None = None
        self._ready: set[int] = set()
        self._purged: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def engine(self) -> sa.Engine:
        """The engine, created (and the tables with it) on first use."""
        bind = self._bind
        engine: sa.Engine
        if isinstance(bind, str):
            engine = self._engine or self._create_engine(bind)
        else:
            engine = getattr(bind, "engine", bind)
        if self.create_tables and id(engine) not in self._ready:
            with self._lock:
                if id(engine) not in self._ready:
                    self.create_all(engine)
                    self._ready.add(id(engine))
        return engine

    def _create_engine(self, url: str) -> sa.Engine:
        with self._lock:
            if self._engine is None:
                self._engine = sa.create_engine(url)
            return self._engine

    def create_all(self, engine: sa.Engine | None = None) -> None:
        """Create the tables missing in the database of ``engine`` (default: :attr:`engine`)."""
        target = engine if engine is not None else self.engine
        tables = self.tables.all()
        for attempt in range(3):
            try:
                tables[0].metadata.create_all(target, tables=tables, checkfirst=True)
                return
            except sa.exc.DatabaseError:
                # Another worker created a table between the check and the CREATE (or held
                # the database): the next round's check sees what it made.
                if attempt == 2:
                    raise
                time.sleep(0.1 * (attempt + 1))

    def _purge(self, conn: sa.Connection, table: sa.Table) -> None:
        """Delete the expired rows of ``table``, once per :data:`PURGE_EVERY` seconds."""
        now = time.monotonic()
        if now < self._purged.get(table.name, 0.0):
            return
        self._purged[table.name] = now + PURGE_EVERY
        conn.execute(table.delete().where(table.c.expires_at <= utcnow()))

    def _upsert(
        self,
        conn: sa.Connection,
        table: sa.Table,
        keys: dict[str, t.Any],
        values: dict[str, t.Any],
        *,
        longest: bool = False,
    ) -> None:
        """Insert the row of ``keys``, or update it with ``values``.

        With ``longest``, an existing row keeps its ``expires_at`` if it is later.
        """
        update = dict(values)
        if longest:
            new = values["expires_at"]
            update["expires_at"] = sa.case(
                (table.c.expires_at < new, new), else_=table.c.expires_at
            )
        dialect = conn.dialect.name
        if dialect == "sqlite":
            from sqlalchemy.dialects import sqlite

            conn.execute(
                sqlite.insert(table)
                .values(**keys, **values)
                .on_conflict_do_update(index_elements=list(keys), set_=update)
            )
            return
        if dialect == "postgresql":
            from sqlalchemy.dialects import postgresql

            conn.execute(
                postgresql.insert(table)
                .values(**keys, **values)
                .on_conflict_do_update(index_elements=list(keys), set_=update)
            )
            return
        where = [table.c[name] == value for name, value in keys.items()]
        if conn.execute(table.update().where(*where).values(**update)).rowcount:
            return
        try:
            conn.execute(table.insert().values(**keys, **values))
        except sa.exc.IntegrityError:  # another worker inserted it meanwhile
            conn.execute(table.update().where(*where).values(**update))

    def _live(self, table: sa.Table) -> sa.ColumnElement[bool]:
        return table.c.expires_at > utcnow()

    # -- clients ------------------------------------------------------------------

    def save_client(self, client: Record, ttl: float, most: int = 0) -> bool:
        """See :meth:`~.storage.Storage.save_client`.

        With ``most``, one transaction inserts the client, counts the live ones and rolls
        back past ``most``. It is exact on SQLite (one writer at a time) and on PostgreSQL
        (the transaction locks the table against other writers first; reads go on); on
        other databases, registrations racing each other may each see the others
        uncommitted and overshoot ``most`` by as many as race at once.
        """
        table = self.tables.clients
        client_id = str(client["client_id"])
        issued = client.get("client_id_issued_at")
        values = {
            "client_name": str(client.get("client_name") or client_id)[:_ID],
            "redirect_uris": list(client.get("redirect_uris") or ()),
            "grant_types": list(client.get("grant_types") or ()),
            "response_types": list(client.get("response_types") or ()),
            "scope": str(client.get("scope") or ""),
            "token_endpoint_auth_method": str(client.get("token_endpoint_auth_method") or "none"),
            "client_secret_sha256": client.get("client_secret_sha256"),
            "registered_at": to_datetime(float(issued)) if issued else utcnow(),
            "client_metadata": client,
            "expires_at": _later(ttl),
        }
        with self.engine.connect() as conn, conn.begin() as transaction:
            if most and conn.dialect.name == "postgresql":
                name = conn.dialect.identifier_preparer.format_table(table)
                conn.execute(sa.text(f"LOCK TABLE {name} IN SHARE ROW EXCLUSIVE MODE"))
            self._purge(conn, table)
            self._upsert(conn, table, {"client_id": client_id}, values)
            if most and self._count_live(conn, table) > most:
                transaction.rollback()
                return False
        return True

    def load_client(self, client_id: str) -> Record | None:
        """See :meth:`~.storage.Storage.load_client`."""
        table = self.tables.clients
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(table.c.client_metadata).where(
                    table.c.client_id == client_id, self._live(table)
                )
            ).scalar()
        return None if found is None else dict(found)

    def count_clients(self) -> int:
        """See :meth:`~.storage.Storage.count_clients`."""
        with self.engine.connect() as conn:
            return self._count_live(conn, self.tables.clients)

    def _count_live(self, conn: sa.Connection, table: sa.Table) -> int:
        count = conn.execute(
            sa.select(sa.func.count()).select_from(table).where(self._live(table))
        ).scalar()
        return int(count or 0)

    # -- codes and refresh tokens -----------------------------------------------------

    def save_grant(self, kind: GrantKind, digest: str, grant: Record, ttl: float) -> None:
        """See :meth:`~.storage.Storage.save_grant`."""
        table = self.tables.grants(kind)
        row = _code_row(grant) if kind == "code" else _refresh_row(grant)
        row[table.primary_key.columns.values()[0].name] = digest
        row["expires_at"] = _later(ttl)
        with self.engine.begin() as conn:
            self._purge(conn, table)
            conn.execute(table.insert().values(**row))

    def _grant(self, kind: GrantKind, row: t.Any) -> Record:
        record = dict(row._mapping)
        record["exp"] = to_timestamp(record.pop("expires_at"))
        for name in ("code_sha256", "token_sha256", "used_at"):
            record.pop(name, None)
        return record

    def load_grant(self, kind: GrantKind, digest: str) -> Record | None:
        """See :meth:`~.storage.Storage.load_grant`."""
        table = self.tables.grants(kind)
        key = table.primary_key.columns.values()[0]
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(table).where(key == digest, table.c.used_at.is_(None), self._live(table))
            ).first()
        return None if row is None else self._grant(kind, row)

    def redeem_grant(self, kind: GrantKind, digest: str, keep_used: float) -> Redemption:
        """See :meth:`~.storage.Storage.redeem_grant`.

        The grant is read, then marked used by a conditional ``UPDATE`` whose row
        count says whether this caller redeemed it (another worker may have marked
        it in between: then this one learns it was used).
        """
        table = self.tables.grants(kind)
        key = table.primary_key.columns.values()[0]
        now, keep = utcnow(), _later(keep_used)
        with self.engine.begin() as conn:
            row = conn.execute(
                sa.select(table).where(
                    key == digest, table.c.used_at.is_(None), table.c.expires_at > now
                )
            ).first()
            if row is not None:
                won = conn.execute(
                    table.update()
                    .where(key == digest, table.c.used_at.is_(None))
                    .values(
                        used_at=now,
                        expires_at=sa.case(
                            (table.c.expires_at < keep, keep), else_=table.c.expires_at
                        ),
                    )
                ).rowcount
                if won == 1:
                    return Redemption(record=self._grant(kind, row))
            family = conn.execute(
                sa.select(table.c.family).where(
                    key == digest, table.c.used_at.is_not(None), table.c.expires_at > now
                )
            ).scalar()
        return Redemption(reused_family=None if family is None else str(family))

    # -- token families -----------------------------------------------------------------

    def add_family(self, user_id: str, client_id: str, family: str, ttl: float) -> None:
        """See :meth:`~.storage.Storage.add_family`."""
        table = self.tables.token_families
        values = {
            "user_id": user_id,
            "client_id": client_id,
            "issued_at": utcnow(),
            "expires_at": _later(ttl),
        }
        with self.engine.begin() as conn:
            self._purge(conn, table)
            self._upsert(conn, table, {"family": family}, values, longest=True)

    def bound_families(
        self, user_id: str, client_id: str, family: str, until: float, most: int
    ) -> list[str]:
        """See :meth:`~.storage.Storage.bound_families`.

        One transaction stores the family's row, reads the user's live families for the
        client whose code was redeemed (no code of theirs waits unused), oldest expiry
        first, and marks those past ``most`` revoked (``family`` never), deleting their
        refresh tokens not used yet. It is exact on SQLite (the row written first makes
        this transaction the one writer) and on PostgreSQL (the transaction locks the
        table against other writers first; reads go on); on other databases, redemptions
        racing each other may each miss the others uncommitted and keep as many more as
        race at once.
        """
        table, codes = self.tables.token_families, self.tables.codes
        refresh = self.tables.refresh_tokens
        now = utcnow()
        values = {
            "user_id": user_id,
            "client_id": client_id,
            "issued_at": now,
            "expires_at": to_datetime(until),
        }
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                name = conn.dialect.identifier_preparer.format_table(table)
                conn.execute(sa.text(f"LOCK TABLE {name} IN SHARE ROW EXCLUSIVE MODE"))
            self._upsert(conn, table, {"family": family}, values, longest=True)
            waiting = sa.select(codes.c.family).where(
                codes.c.used_at.is_(None), codes.c.expires_at > now
            )
            live = conn.execute(
                sa.select(table.c.family)
                .where(
                    table.c.user_id == user_id,
                    table.c.client_id == client_id,
                    table.c.revoked_at.is_(None),
                    table.c.expires_at > now,
                    table.c.family.not_in(waiting),
                )
                .order_by(table.c.expires_at, table.c.family)
            ).scalars()
            found = [str(name) for name in live]  # ``family`` too, unless revoked meanwhile
            over = max(0, len(found) - most)
            oldest = [name for name in found if name != family][:over]  # the newest stays
            if oldest:
                conn.execute(
                    table.update().where(table.c.family.in_(oldest)).values(revoked_at=now)
                )
                conn.execute(
                    refresh.delete().where(
                        refresh.c.family.in_(oldest), refresh.c.used_at.is_(None)
                    )
                )
        return oldest

    def revoke_family(self, family: str, ttl: float) -> None:
        """See :meth:`~.storage.Storage.revoke_family`.

        The families table is written before the refresh tokens, in the order of
        :meth:`bound_families`, so that the two cannot wait for each other.
        """
        table = self.tables.token_families
        refresh = self.tables.refresh_tokens
        now = utcnow()
        values = {"issued_at": now, "revoked_at": now, "expires_at": _later(ttl)}
        with self.engine.begin() as conn:
            updated = conn.execute(
                table.update()
                .where(table.c.family == family)
                .values(
                    revoked_at=sa.func.coalesce(table.c.revoked_at, now),
                    expires_at=sa.case(
                        (table.c.expires_at < values["expires_at"], values["expires_at"]),
                        else_=table.c.expires_at,
                    ),
                )
            ).rowcount
            if not updated:  # a family this storage never saw (an expired row, say)
                self._upsert(conn, table, {"family": family}, values, longest=True)
            conn.execute(
                refresh.delete().where(refresh.c.family == family, refresh.c.used_at.is_(None))
            )

    def family_revoked(self, family: str) -> bool:
        """See :meth:`~.storage.Storage.family_revoked`."""
        table = self.tables.token_families
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(table.c.family).where(
                    table.c.family == family,
                    table.c.revoked_at.is_not(None),
                    self._live(table),
                )
            ).first()
        return found is not None

    # -- consents ------------------------------------------------------------------------

    def save_consent(self, user_id: str, client_id: str, consent: Record, ttl: float) -> None:
        """See :meth:`~.storage.Storage.save_consent`."""
        table = self.tables.consents
        values = {
            "client_name": str(consent.get("client_name") or client_id)[:_ID],
            "scope": " ".join(consent.get("scopes") or ()),
            "granted_at": to_datetime(float(consent.get("at") or time.time())),
            "expires_at": _later(ttl),
        }
        with self.engine.begin() as conn:
            self._purge(conn, table)
            self._upsert(conn, table, {"user_id": user_id, "client_id": client_id}, values)

    @staticmethod
    def _consent(row: t.Any) -> Record:
        return {
            "scopes": sorted(row.scope.split()),
            "client_name": row.client_name,
            "at": to_timestamp(row.granted_at),
        }

    def load_consent(self, user_id: str, client_id: str) -> Record | None:
        """See :meth:`~.storage.Storage.load_consent`."""
        table = self.tables.consents
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(table).where(
                    table.c.user_id == user_id, table.c.client_id == client_id, self._live(table)
                )
            ).first()
        return None if row is None else self._consent(row)

    def consents(self, user_id: str) -> dict[str, Record]:
        """See :meth:`~.storage.Storage.consents`."""
        table = self.tables.consents
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(table)
                .where(table.c.user_id == user_id, self._live(table))
                .order_by(table.c.client_id)
            ).all()
        return {row.client_id: self._consent(row) for row in rows}

    def revoke_consent(self, user_id: str, client_id: str) -> set[str]:
        """See :meth:`~.storage.Storage.revoke_consent`."""
        consents, families = self.tables.consents, self.tables.token_families
        with self.engine.begin() as conn:
            conn.execute(
                consents.delete().where(
                    consents.c.user_id == user_id, consents.c.client_id == client_id
                )
            )
            found = conn.execute(
                sa.select(families.c.family).where(
                    families.c.user_id == user_id,
                    families.c.client_id == client_id,
                    families.c.revoked_at.is_(None),
                    self._live(families),
                )
            ).scalars()
            return set(found)

    # -- signing keys --------------------------------------------------------------------

    def add_signing_key(self, period: int, jwk: Record, ttl: float) -> bool:
        """See :meth:`~.storage.Storage.add_signing_key`: the primary key refuses a second."""
        table = self.tables.signing_keys
        row = {
            "period": period,
            "kid": str(jwk.get("kid", "")),
            "private_jwk": jwk,
            "created_at": utcnow(),
            "expires_at": _later(ttl),
        }
        try:
            with self.engine.begin() as conn:
                self._purge(conn, table)
                conn.execute(table.insert().values(**row))
        except sa.exc.IntegrityError:
            return False
        return True

    def signing_key(self, period: int) -> Record | None:
        """See :meth:`~.storage.Storage.signing_key`."""
        table = self.tables.signing_keys
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(table.c.private_jwk).where(table.c.period == period, self._live(table))
            ).scalar()
        return None if found is None else dict(found)

    # -- Client ID Metadata Documents ------------------------------------------------------

    def cache_client_document(self, client_id: str, document: Record, ttl: float) -> None:
        """See :meth:`~.storage.Storage.cache_client_document`."""
        import hashlib

        table = self.tables.client_documents
        values = {
            "client_id": client_id,
            "document": document,
            "fetched_at": utcnow(),
            "expires_at": _later(ttl),
        }
        key = {"url_sha256": hashlib.sha256(client_id.encode()).hexdigest()}
        with self.engine.begin() as conn:
            self._purge(conn, table)
            self._upsert(conn, table, key, values)

    def cached_client_document(self, client_id: str) -> Record | None:
        """See :meth:`~.storage.Storage.cached_client_document`."""
        import hashlib

        table = self.tables.client_documents
        digest = hashlib.sha256(client_id.encode()).hexdigest()
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(table.c.document).where(table.c.url_sha256 == digest, self._live(table))
            ).scalar()
        return None if found is None else dict(found)

    def count_client_documents(self) -> int:
        """See :meth:`~.storage.Storage.count_client_documents`."""
        table = self.tables.client_documents
        with self.engine.connect() as conn:
            count = conn.execute(
                sa.select(sa.func.count()).select_from(table).where(self._live(table))
            ).scalar()
        return int(count or 0)


__all__ = [
    "PURGE_EVERY",
    "TABLE_PREFIX",
    "OAuthTables",
    "SQLStorage",
    "oauth_tables",
    "to_datetime",
    "to_timestamp",
    "utcnow",
]
