"""The :class:`MCP` Flask extension: declarations, ``init_app`` and per-app state."""

from __future__ import annotations

import importlib
import logging
import typing as t
import weakref

from flask import Flask
from flask import current_app

from . import backends
from . import jsonrpc
from . import protocol
from . import signals
from .config import Settings
from .config import load_settings
from .config import warn_unknown_keys
from .declarations import Declarations
from .dispatcher import Call
from .dispatcher import Dispatcher
from .registry import Registry
from .session import InFlight
from .session import StreamSlots

if t.TYPE_CHECKING:
    from .auth import Authorizer

logger = logging.getLogger("flask_mcp")
F = t.TypeVar("F", bound=t.Callable[..., t.Any])
A = t.TypeVar("A", bound="Authorizer")


def _require(module: str, extra: str, needed_by: str) -> t.Any:
    """Import ``module`` or raise an ``ImportError`` that says what to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"{needed_by} needs the {module!r} package, which is not installed: "
            f"pip install 'Flask-MCP[{extra}]'."
        ) from None


def check_dependencies(settings: Settings, *, has_authorizer: bool) -> None:
    """Check at ``init_app`` that the optional packages the settings need are installed.

    ``MCP_STATE_ENCRYPT`` needs ``cryptography`` (extra ``crypto``), a Redis
    ``MCP_BACKEND`` needs ``redis`` (extra ``redis``) and JWT authorization
    (``MCP_AUTH_JWT_JWKS_URL`` without an authorizer of the app's own) needs
    PyJWT with its crypto support (extra ``jwt``). orjson needs no check: it
    is used when installed.

    :raises ImportError: the message names the extra to install.
    """
    if settings.state_encrypt:
        _require("cryptography", "crypto", "MCP_STATE_ENCRYPT = True (AES-GCM requestState)")
        _require("cryptography.hazmat.primitives.ciphers.aead", "crypto", "MCP_STATE_ENCRYPT")
    backend = settings.backend
    if isinstance(backend, str) and backend.startswith(("redis://", "rediss://", "unix://")):
        scheme = backend.partition(":")[0]  # the rest may hold a password
        _require("redis", "redis", f"MCP_BACKEND = '{scheme}://...'")
    if settings.auth_jwt_jwks_url is not None and not has_authorizer:
        jwt = _require("jwt", "jwt", "MCP_AUTH_JWT_JWKS_URL (JWT access tokens)")
        if not getattr(importlib.import_module("jwt.algorithms"), "has_crypto", True):
            raise ImportError(
                "MCP_AUTH_JWT_JWKS_URL (JWT access tokens) needs PyJWT's RSA and EC algorithms, "
                f"which need the 'cryptography' package (PyJWT {jwt.__version__} is installed "
                "without it): pip install 'Flask-MCP[jwt]'."
            )


class AppState:
    """Runtime state of one app: settings, backend, running requests."""

    def __init__(self, mcp: MCP, app: Flask, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.backend = backends.from_setting(
            settings.backend,
            buffer_size=settings.sse_buffer_size,
            idle_timeout=settings.session_idle_timeout,
            max_lifetime=settings.session_max_lifetime,
        )
        self.inflight = InFlight()
        self.slots = StreamSlots(settings.max_streams)
        self.supervisor: t.Any = None
        #: Set by the first request, which tells the server's kind (see ``Transport``).
        self.first_request_seen = False
        self.backend.attach_app(self.cancel_local)
        from .auth import build_authenticator

        self.authenticator = build_authenticator(mcp, app, settings)

    def cancel_local(self, session_id: str, request_id: t.Any) -> None:
        """Cancel a request running in this process, if it runs here."""
        run = self.inflight.get(session_id, request_id)
        if run is not None and run.method != "initialize":
            run.cancel()
            signals.send(
                signals.request_cancelled,
                self.app,
                request_id=request_id,
                session_id=session_id,
                reason="cancelled",
            )


class MCP(Declarations):
    """A Model Context Protocol server for Flask apps.

    Declare tools, resources and prompts with the decorators, then call
    :meth:`init_app` (or pass the app here) to serve them at ``MCP_PATH``.

    :param app: the app to serve on right away.
    :param name: the server's name (``serverInfo.name``).
    :param version: the server's version (``serverInfo.version``).
    :param title: a display name.
    :param description: a description of the server.
    :param instructions: how to use the server, sent to clients on initialize.
    :param icons: icons for the server.
    :param website_url: the server's website.
    :param authorizer: checks bearer tokens when ``MCP_AUTH_RESOURCE`` is set;
        see :meth:`authorizer`.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        name: str,
        version: str,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        website_url: str | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        info: dict[str, t.Any] = {"name": name, "version": version}
        for key, value in (
            ("title", title),
            ("description", description),
            ("icons", icons),
            ("websiteUrl", website_url),
        ):
            if value is not None:
                info[key] = value
        self.server_info = info
        self.registry = Registry()
        self.registry.listeners.append(self._on_registry_change)
        self.dispatcher = Dispatcher(self)
        self._states: weakref.WeakKeyDictionary[Flask, AppState] = weakref.WeakKeyDictionary()
        self.roots_changed_hooks: list[t.Callable[[str], None]] = []
        self._authorizer = authorizer
        if app is not None:
            self.init_app(app)

    # -- Flask integration -------------------------------------------------------

    def init_app(self, app: Flask) -> None:
        """Serve this server on ``app``.

        Reads every ``MCP_*`` key once (see :mod:`flask_mcp.config`) and mounts
        the endpoint at ``MCP_PATH``. With ``MCP_AUTH_RESOURCE`` set it also
        serves the RFC 9728 metadata at ``/.well-known/oauth-protected-resource``.

        :raises RuntimeError: an MCP server is already registered on ``app``.
        :raises ValueError: a key is invalid, or authorization is half configured.
        :raises ImportError: the configuration needs an optional dependency that
            is not installed; the message names the extra to install.
        :warns ~flask_mcp.ConfigWarning: an ``MCP_*`` key is unknown (misspelled?).
        """
        if "mcp" in app.extensions:
            raise RuntimeError(
                "An MCP extension is already registered on this app. Call init_app only once "
                "per app; to serve a second server, register it on another app."
            )
        warn_unknown_keys(app.config)
        settings = load_settings(app.config)
        check_dependencies(settings, has_authorizer=self._authorizer is not None)
        state = AppState(self, app, settings)
        app.extensions["mcp"] = self
        self._states[app] = state
        from .transport import make_blueprint

        app.register_blueprint(make_blueprint(self, settings.path, state))
        if state.authenticator is not None:
            state.authenticator.register_routes(app, settings.path)
        else:
            from .auth import warn_unenforced_scopes

            warn_unenforced_scopes(self.registry)

    def state(self, app: Flask | None = None) -> AppState:
        """Return the runtime state for ``app`` (default: the current app).

        :raises RuntimeError: ``init_app`` was not called for the app.
        """
        target = app if app is not None else current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            return self._states[target]
        except KeyError:
            raise RuntimeError(
                "This MCP server is not registered on the current app. Did you forget to call "
                "init_app?"
            ) from None

    @property
    def current_app(self) -> Flask:
        """The app handling the current request."""
        return t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]

    @property
    def settings(self) -> Settings:
        """The settings of the current app."""
        return self.state().settings

    @property
    def backend(self) -> backends.Backend:
        """The backend of the current app."""
        return self.state().backend

    # -- capabilities --------------------------------------------------------------

    def capabilities(self, era: str = protocol.HANDSHAKE) -> dict[str, t.Any]:
        """Return the server capabilities derived from what is registered."""
        registry = self.registry
        caps: dict[str, t.Any] = {"logging": {}}
        if registry.completions:
            caps["completions"] = {}
        if registry.prompts:
            caps["prompts"] = {"listChanged": True}
        if registry.resources or registry.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if registry.tools:
            caps["tools"] = {"listChanged": True}
        return caps

    _FAMILY = {
        "tools": "tools",
        "resources": "resources",
        "prompts": "prompts",
        "completion": "completions",
    }

    def offers(self, method: str) -> bool:
        """Tell whether a method belongs to a capability this server declares."""
        family = self._FAMILY.get(method.split("/", 1)[0])
        if family is None:
            return True
        registry = self.registry
        return bool(
            {
                "tools": registry.tools,
                "resources": registry.resources or registry.templates,
                "prompts": registry.prompts,
                "completions": registry.completions,
            }[family]
        )

    def authenticate(self, state: AppState) -> t.Any:
        """Return the :class:`~flask_mcp.auth.AuthInfo` of the current request, or ``None``.

        :raises MCPHTTPError: 401 or 403 when authorization is configured and fails.
        """
        if state.authenticator is None:
            return None
        from flask import request

        return state.authenticator.authenticate(request)

    def authorize(self, scopes: tuple[str, ...], call: Call) -> None:
        """Check that the caller holds ``scopes`` (no-op until authorization is configured).

        :raises ~flask_mcp.auth.AuthRefused: 403 ``insufficient_scope``; the
            transport answers with its challenge before anything is streamed.
        """
        authenticator = self.state().authenticator
        if authenticator is not None:
            authenticator.authorize(scopes, call)

    def filter_listing(self, kind: str, result: dict[str, t.Any], call: Call) -> dict[str, t.Any]:
        """Hide list entries the caller may not use (``MCP_AUTH_HIDE_UNAUTHORIZED``)."""
        authenticator = self.state().authenticator
        if authenticator is None:
            return result
        return authenticator.filter_listing(self.registry, kind, result, call)

    def on_roots_changed(self, fn: F) -> F:
        """Register a hook called with the session id when a client's roots change."""
        self.roots_changed_hooks.append(fn)
        return fn

    def authorizer(self, fn: A) -> A:
        """Register the function that checks bearer tokens, called as ``fn(token, request)``.

        It returns the token's claims (a dict), an :class:`~flask_mcp.auth.AuthInfo`,
        or an error kind (``"invalid_token"``, ``"insufficient_scope"``...), or
        raises :class:`~flask_mcp.auth.AuthError`. A
        :class:`~flask_mcp.jwt_auth.JWTAuthorizer` may be registered the same way.

        :raises RuntimeError: the server was already registered on an app.
        """
        if self._states:
            raise RuntimeError(
                "Register the authorizer before init_app: apps registered earlier were set up "
                "without it."
            )
        self._authorizer = fn
        return fn

    # -- notifications -------------------------------------------------------------

    def _apps(self, app: Flask | None) -> list[AppState]:
        if app is not None:
            return [self.state(app)]
        return list(self._states.values())

    def broadcast(
        self, method: str, params: dict[str, t.Any] | None = None, *, app: Flask | None = None
    ) -> None:
        """Send a notification to every session's GET stream (kept until its next GET)."""
        message = jsonrpc.notification(method, params)
        for state in self._apps(app):
            from .transport import deliver_general

            for session_id in state.backend.session_ids():
                deliver_general(state, session_id, message)

    def notify_list_changed(self, kind: str, *, app: Flask | None = None) -> None:
        """Tell clients that the list of ``kind`` (tools, resources, prompts) changed.

        Sessions get it on their GET stream; 2026-07-28 clients get it on the
        ``subscriptions/listen`` streams that asked for it, in every worker.
        Registering or removing something calls this already.
        """
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"kind must be 'tools', 'resources' or 'prompts', not {kind!r}.")
        from .listen import publish

        self.broadcast(f"notifications/{kind}/list_changed", app=app)
        for state in self._apps(app):
            publish(self, state, f"notifications/{kind}/list_changed")

    def notify_resource_updated(self, uri: str, *, app: Flask | None = None) -> None:
        """Tell the sessions and listen streams subscribed to ``uri`` that it changed."""
        message = jsonrpc.notification("notifications/resources/updated", {"uri": uri})
        from .listen import publish
        from .transport import deliver_general

        for state in self._apps(app):
            publish(self, state, "notifications/resources/updated", {"uri": uri})
            for session_id in state.backend.session_ids():
                record = state.backend.get_session(session_id)
                if record is not None and uri in record.subscriptions:
                    deliver_general(state, session_id, message)

    def notify_elicitation_complete(
        self, session_id: str, elicitation_id: str, *, app: Flask | None = None
    ) -> None:
        """Tell a session that the URL-mode elicitation ``elicitation_id`` finished.

        Call it from the view that completes the out-of-band flow; the client
        may then retry the request that needed it.
        """
        message = jsonrpc.notification(
            "notifications/elicitation/complete", {"elicitationId": elicitation_id}
        )
        from .transport import deliver_general

        for state in self._apps(app):
            if state.backend.get_session(session_id) is not None:
                deliver_general(state, session_id, message)

    def stats(self, app: Flask | None = None) -> dict[str, t.Any]:
        """Return counters of live state in this process, for monitoring and leak checks."""
        state = self.state(app)
        stats: dict[str, t.Any] = {
            "sessions": len(state.backend.session_ids()),
            "running_requests": len(state.inflight),
            "open_streams": state.slots.open,
        }
        backend_stats = getattr(state.backend, "stats", None)
        if callable(backend_stats):
            stats.update(backend_stats())
        return stats

    def _on_registry_change(self, kind: str) -> None:
        # Only apps that already served a request in this process tell their
        # clients: a declaration at import time (every worker boots through it)
        # changes nothing a client has seen.
        serving = [app for app, state in list(self._states.items()) if state.supervisor is not None]
        family = "resources" if kind == "resourceTemplates" else kind
        for app in serving:
            try:
                self.notify_list_changed(family, app=app)
            except Exception:
                logger.exception("Could not send notifications/%s/list_changed", family)
