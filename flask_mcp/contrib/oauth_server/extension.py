"""The extension object: :class:`OAuthServer`, one for any number of apps."""

from __future__ import annotations

import threading
import typing as t
from urllib.parse import urlsplit

from ...backends import REDIS_SCHEMES
from .registration import EXTENSION_KEY
from .registration import Registration
from .registration import registration
from .resource import IssuedTokenAuthorizer
from .server import AppServer
from .server import load_oauth_settings
from .storage import MemoryStorage
from .storage import RedisStorage
from .storage import Storage
from .views import make_blueprint

if t.TYPE_CHECKING:
    from flask import Flask

    from ...extension import MCP


def flask_login_user_id() -> str | None:
    """Return the id of Flask-Login's ``current_user`` if signed in, else ``None``."""
    try:
        from flask_login import current_user
    except ImportError:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "The authorization server needs the signed-in user: install Flask-Login "
            "(pip install 'Flask-MCP[oauth-server]') or pass OAuthServer(user_loader=...)."
        ) from None
    if current_user is None or not current_user.is_authenticated:
        return None
    return str(current_user.get_id())


class OAuthServer:
    """An OAuth 2.1 authorization server for an MCP server, inside the same Flask app.

    .. code-block:: python

        mcp = MCP("notes")
        oauth = OAuthServer(mcp)          # registers the authorizer of mcp

        def create_app():
            app = Flask(__name__)
            app.config["MCP_AUTH_RESOURCE"] = "https://notes.example.com/mcp"
            login_manager.init_app(app)   # the app's own login (Flask-Login)
            oauth.init_app(app)           # before mcp.init_app
            mcp.init_app(app)

    :param mcp: the MCP server whose tokens this server issues; its authorizer
        is set here, so create this object before ``mcp.init_app``.
    :param user_loader: returns the id of the user signed in to the app for the
        current request, or ``None`` (default: Flask-Login's ``current_user``).
    :param load_user: returns the app's user object for a token's subject, made
        ``current_user`` in tools (default: Flask-Login's ``user_loader``).
    :param storage: a :class:`~.storage.Storage` for every app (default:
        ``MCP_OAUTH_STORAGE``, else the Redis of ``MCP_BACKEND``, else memory).
    :param scope_descriptions: what each scope allows, shown on the consent page.
    """

    def __init__(
        self,
        mcp: MCP | None = None,
        *,
        user_loader: t.Callable[[], str | None] | None = None,
        load_user: t.Callable[[str], t.Any] | None = None,
        storage: Storage | None = None,
        scope_descriptions: t.Mapping[str, str] | None = None,
    ) -> None:
        self.mcp = mcp
        self.user_loader = user_loader or flask_login_user_id
        self.storage = storage
        self.scope_descriptions = dict(scope_descriptions or {})
        self.authorizer = IssuedTokenAuthorizer(load_user)
        if mcp is not None:
            mcp.authorizer(self.authorizer)

    def current_user_id(self) -> str | None:
        """Return the id of the user signed in for the current request, or ``None``."""
        user_id = self.user_loader()
        return None if user_id in (None, "") else str(user_id)

    def init_app(self, app: Flask) -> None:
        """Serve the authorization server on ``app``; call it before ``mcp.init_app(app)``.

        Sets ``MCP_AUTH_AUTHORIZATION_SERVERS`` to this server's issuer unless the
        app set it.

        :raises RuntimeError: it is registered on ``app`` already, or too late.
        :raises ValueError: ``MCP_AUTH_RESOURCE`` is missing or a key is invalid.
        """
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError("An OAuthServer is already registered on this app.")
        if self.mcp is not None and "mcp" in app.extensions:
            raise RuntimeError(
                "Call oauth_server.init_app(app) before mcp.init_app(app): the MCP server reads "
                "MCP_AUTH_AUTHORIZATION_SERVERS, which the authorization server sets."
            )
        settings = load_oauth_settings(app.config)
        resource = app.config.get("MCP_AUTH_RESOURCE")
        if not resource:
            raise ValueError(
                "The authorization server needs MCP_AUTH_RESOURCE: the URL clients use for the "
                "MCP endpoint, for example 'https://notes.example.com/mcp' (tokens are issued "
                "for it)."
            )
        parts = urlsplit(str(resource))
        issuer = settings.issuer or f"{parts.scheme}://{parts.netloc}"
        app.config.setdefault("MCP_AUTH_AUTHORIZATION_SERVERS", [issuer])
        if self.mcp is not None:
            self._default_scopes(app)
        storage = self._storage(app, settings.storage)
        app_server = AppServer(
            app,
            settings,
            resource=str(resource),
            issuer=issuer,
            storage=storage,
            scopes=lambda: self.scopes(app),
        )
        app.extensions[EXTENSION_KEY] = Registration(self, app_server)
        app.register_blueprint(make_blueprint(settings.prefix, urlsplit(issuer).path, storage))

    def _default_scopes(self, app: Flask) -> None:
        """Advertise the tools' scopes in the protected resource metadata, unless set."""
        if app.config.get("MCP_AUTH_SCOPES_SUPPORTED") is None:
            declared = self._declared_scopes()
            if declared:
                app.config["MCP_AUTH_SCOPES_SUPPORTED"] = declared

    def _declared_scopes(self) -> list[str]:
        if self.mcp is None:
            return []
        registry = self.mcp.registry
        tables = (registry.tools, registry.resources, registry.templates, registry.prompts)
        found = [scope for table in tables for record in table.values() for scope in record.scopes]
        return list(dict.fromkeys(found))

    def scopes(self, app: Flask) -> list[str]:
        """Return the scopes ``app`` supports: the tools' ``scopes=`` and ``MCP_AUTH_*`` ones."""
        listed = [
            *(app.config.get("MCP_AUTH_SCOPES_SUPPORTED") or ()),
            *(app.config.get("MCP_AUTH_REQUIRED_SCOPES") or ()),
            *self._declared_scopes(),
            *self.scope_descriptions,
        ]
        return list(dict.fromkeys(str(scope) for scope in listed))

    def _storage(self, app: Flask, url: str | None) -> Storage:
        if self.storage is not None:
            return self.storage
        if url is not None:
            return storage_from_url(url)
        if uses_redis(app.config.get("MCP_BACKEND", "memory://")):
            return BackendRedisStorage(app)
        return MemoryStorage()

    def app_server(self, app: Flask | None = None) -> AppServer:
        """Return the :class:`~.server.AppServer` of ``app`` (default: the current app).

        :raises RuntimeError: this server is not registered on ``app``.
        """
        return registration(app).app_server

    def consents(self, user_id: str, app: Flask | None = None) -> dict[str, dict[str, t.Any]]:
        """Return the clients ``user_id`` consented to: by client id, scopes and name."""
        return self.app_server(app).consents(str(user_id))

    def revoke_consent(self, user_id: str, client_id: str, app: Flask | None = None) -> None:
        """Withdraw a consent: the client's tokens for the user stop working in every worker."""
        self.app_server(app).revoke_consent(str(user_id), client_id)


class BackendRedisStorage(RedisStorage):
    """The Redis of the app's MCP backend, found on first use (after ``mcp.init_app``).

    The backend's own client: a plain Redis, a Redis Cluster or the master behind
    Redis Sentinel, as ``MCP_BACKEND`` says; keys start with the backend's prefix
    and ``oauth:``.
    """

    def __init__(self, app: Flask) -> None:
        super().__init__(None, "")
        self.app = app
        self._lock = threading.Lock()

    def _connect(self) -> None:
        with self._lock:
            if self._client is None:
                registered = self.app.extensions.get("mcp")
                if registered is None:
                    raise RuntimeError(
                        "The authorization server keeps its records in the Redis of "
                        "MCP_BACKEND: call mcp.init_app(app) too, or set MCP_OAUTH_STORAGE."
                    )
                backend = registered.state(self.app).backend
                self._prefix = f"{getattr(backend, 'prefix', 'mcp:')}oauth:"
                self._client = backend.client

    @property
    def client(self) -> t.Any:
        """The backend's client (see the class docstring)."""
        if self._client is None:
            self._connect()
        return self._client

    @property
    def key_prefix(self) -> str:
        """The backend's key prefix and ``oauth:``."""
        if self._client is None:
            self._connect()
        return self._prefix


def storage_from_url(url: str) -> Storage:
    """Return the storage ``MCP_OAUTH_STORAGE`` names.

    ``memory://``, any ``MCP_BACKEND`` Redis URL (``redis://``, ``rediss://``,
    ``unix://``, ``redis+cluster://``, ``redis+sentinel://``...: see
    :meth:`.RedisStorage.from_url`), or an SQLAlchemy URL (:class:`.sql.SQLStorage`).

    :raises ValueError: the URL's scheme is unknown.
    """
    if url.lower().startswith("memory:"):
        return MemoryStorage()
    if url.lower().startswith(REDIS_SCHEMES):
        return RedisStorage.from_url(url)
    if "://" in url:
        from .sql import SQLStorage

        return SQLStorage(url)
    raise ValueError(
        f"MCP_OAUTH_STORAGE={url!r} is not a storage URL: use 'memory://', "
        "'redis://host:port/db' (or any MCP_BACKEND Redis URL) or an SQLAlchemy URL such as "
        "'sqlite:///oauth.db'."
    )


def uses_redis(backend: t.Any) -> bool:
    """Tell whether the ``MCP_BACKEND`` value ``backend`` is a Redis (any of its URLs, or a
    Redis backend object)."""
    if isinstance(backend, str):
        return backend.lower().startswith(REDIS_SCHEMES)
    return backend is not None and hasattr(backend, "client") and hasattr(backend, "prefix")


__all__ = [
    "BackendRedisStorage",
    "OAuthServer",
    "flask_login_user_id",
    "storage_from_url",
    "uses_redis",
]
