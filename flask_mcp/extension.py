"""The :class:`MCP` Flask extension: declarations, ``init_app``, notifications.

The face of the package: it reads the app's configuration once, makes the
app's :class:`~flask_mcp.runtime.state.AppState` and registers the transport's
blueprint. Nothing below it looks the server or the app up; each request
carries the state it needs.
"""

from __future__ import annotations

import importlib
import logging
import typing as t
import weakref

from flask import Flask
from flask import current_app

from . import backends
from . import protocol
from .auth import build_authenticator
from .auth.authenticator import unenforced_scopes
from .config import Settings
from .config import load_settings
from .config import warn_unknown_keys
from .protocol import jsonrpc
from .runtime.notify import deliver_general
from .runtime.notify import publish
from .runtime.state import AppState
from .server.blueprints import MCPBlueprint
from .server.blueprints import register_blueprint
from .server.declarations import tagset
from .server.dispatcher import Dispatcher
from .server.dispatcher import ServerInfo
from .server.registry import Registry
from .server.registry import Tool
from .server.shared_registry import RegistrySync
from .server.shared_registry import SharedDeclarations
from .server.shared_registry import replaying
from .server.shared_registry import unshared
from .transport.auth import register_metadata_routes
from .transport.views import make_blueprint

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


class MCP(SharedDeclarations):
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
        fields: dict[str, t.Any] = {"name": name, "version": version}
        for key, value in (
            ("title", title),
            ("description", description),
            ("icons", icons),
            ("websiteUrl", website_url),
        ):
            if value is not None:
                fields[key] = value
        #: Who the server is, shared with the dispatcher.
        self.info = ServerInfo(name, version, fields, instructions)
        self.registry = Registry()
        self.registry.listeners.append(self._on_registry_change)
        #: Runs requests; made from the registry and the server info alone.
        self.dispatcher = Dispatcher(self.registry, self.info)
        self._states: weakref.WeakKeyDictionary[Flask, AppState] = weakref.WeakKeyDictionary()
        self._syncs: weakref.WeakKeyDictionary[Flask, RegistrySync] = weakref.WeakKeyDictionary()
        self.roots_changed_hooks: list[t.Callable[[str], None]] = []
        self._authorizer = authorizer
        if app is not None:
            self.init_app(app)

    @property
    def name(self) -> str:
        """The server's name (``serverInfo.name``)."""
        return self.info.name

    @property
    def version(self) -> str:
        """The server's version (``serverInfo.version``)."""
        return self.info.version

    @property
    def instructions(self) -> str | None:
        """How to use the server, sent to clients on ``initialize`` and ``server/discover``."""
        return self.info.instructions

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self.info.instructions = value

    @property
    def server_info(self) -> dict[str, t.Any]:
        """The ``serverInfo`` object."""
        return self.info.fields

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
        authenticator = build_authenticator(
            self._authorizer,
            settings,
            resource_name=self.server_info.get("title") or self.name,
            sender=app,
        )
        state = AppState(settings, app=app, authenticator=authenticator, server_name=self.name)
        app.extensions["mcp"] = self
        self._states[app] = state
        app.register_blueprint(make_blueprint(self.dispatcher, state, self.roots_changed_hooks))
        if getattr(state.backend, "multiprocess", False) and hasattr(state.backend, "client"):
            sync = self._syncs[app] = RegistrySync(self, state, self.name)
            app.before_request_funcs.setdefault("mcp", []).append(lambda: _catch_up(sync))
        if authenticator is not None:
            register_metadata_routes(app, authenticator, settings.path)
        else:
            unenforced_scopes(self.registry.scoped())

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
        return self.registry.capabilities(era)

    def offers(self, method: str) -> bool:
        """Tell whether a method belongs to a capability this server declares."""
        return self.registry.offers(method)

    def on_roots_changed(self, fn: F) -> F:
        """Register a hook called with the session id when a client's roots change."""
        self.roots_changed_hooks.append(fn)
        return fn

    def authorizer(self, fn: A) -> A:
        """Register the function that checks bearer tokens, called as ``fn(token, request)``.

        It returns the token's claims (a dict), an :class:`~flask_mcp.auth.AuthInfo`,
        or an error kind (``"invalid_token"``, ``"insufficient_scope"``...), or
        raises :class:`~flask_mcp.auth.AuthError`. A
        :class:`~flask_mcp.auth.jwt_authorizer.JWTAuthorizer` may be registered the same way.

        :raises RuntimeError: the server was already registered on an app.
        """
        if self._states:
            raise RuntimeError(
                "Register the authorizer before init_app: apps registered earlier were set up "
                "without it."
            )
        self._authorizer = fn
        return fn

    # -- blueprints, enable and disable ----------------------------------------------

    def register_blueprint(
        self, blueprint: MCPBlueprint, *, prefix: str = "", uri_prefix: str | None = None
    ) -> None:
        """Add the tools, resources, prompts and completions of an :class:`MCPBlueprint`.

        Tool and prompt names (and resource names) get ``prefix``; resource URIs
        and templates get ``uri_prefix`` as their first path segment
        (``invoice://{id}`` -> ``invoice://billing/{id}``), by default the
        prefix without its trailing ``_``, ``-`` or ``.``; ``uri_prefix=""``
        keeps them. Works before and after ``init_app``; a blueprint may be
        registered several times under different prefixes.

        :raises ValueError: a prefixed name or URI is already registered (nothing
            is added then), or a prefixed tool name is invalid.
        """
        register_blueprint(self.registry, blueprint, prefix, uri_prefix)
        if self._sharing():
            ref = _blueprint_path(blueprint)
            op = ref and {"op": "blueprint", "ref": ref, "prefix": prefix, "uri": uri_prefix}
            self._share(op or None, f"Blueprint {blueprint.name!r}")

    def enable(self, *names: str, tags: t.Iterable[str] = ()) -> list[tuple[str, str]]:
        """Enable the tools, prompts, resources and templates named or tagged.

        A name is a tool or prompt name, a resource URI or a template text.
        Clients are told the lists changed. Return the (kind, key) pairs enabled.

        :raises LookupError: a name or tag matches nothing registered.
        """
        return self._set_enabled(True, names, tagset(tags))

    def disable(self, *names: str, tags: t.Iterable[str] = ()) -> list[tuple[str, str]]:
        """Disable the tools, prompts, resources and templates named or tagged.

        A disabled record leaves its list and cannot be called, read or
        completed (clients get the same error as for an unknown name) until it
        is enabled again; its name stays taken. Return the (kind, key) pairs
        disabled.

        :raises LookupError: a name or tag matches nothing registered.
        """
        return self._set_enabled(False, names, tagset(tags))

    def _set_enabled(
        self, enabled: bool, names: t.Iterable[str], tags: t.Iterable[str]
    ) -> list[tuple[str, str]]:
        unknown = [name for name in [*names, *tags] if not self.registry.known(name)]
        if unknown:
            raise LookupError(
                f"Nothing registered is named or tagged {', '.join(map(repr, unknown))}; pass "
                "a tool or prompt name, a resource URI, a template text, or tags=[...]."
            )
        moved: list[tuple[str, str]] = list(self.registry.set_enabled(enabled, names, tags))
        op = {"op": "enable" if enabled else "disable", "names": list(names), "tags": list(tags)}
        self._share(op, "The enabled set")
        return moved

    # -- runtime changes in every worker (server/shared_registry.py) --------------------

    def _sharing(self) -> list[RegistrySync]:
        if replaying.get() or unshared.get() or not self._syncs:
            return []
        from flask import has_request_context

        serving = has_request_context() or any(
            state.supervisor is not None for state in self._states.values()
        )
        return list(self._syncs.values()) if serving else []

    def apply_face_operation(self, op: dict[str, t.Any], state: AppState) -> None:
        """Apply another worker's ``enable``, ``disable``, ``blueprint`` or ``view`` operation."""
        from .server.shared_registry import resolve

        kind = op["op"]
        if kind in ("enable", "disable"):
            self.registry.set_enabled(kind == "enable", op["names"], op["tags"])
        elif kind == "blueprint":
            self.register_blueprint(resolve(op["ref"]), prefix=op["prefix"], uri_prefix=op["uri"])
        elif kind == "view":
            self.tool_from_view(op["endpoint"], app=state.app, **op["kwargs"])
        else:
            super().apply_face_operation(op, state)

    # -- tools from the app's views ----------------------------------------------------

    def tool_from_view(
        self,
        view: str | t.Callable[..., t.Any],
        *,
        app: Flask | None = None,
        method: str | None = None,
        name: str | None = None,
        description: str | None = None,
        spec: t.Any = None,
        tags: t.Iterable[str] = (),
        scopes: t.Sequence[str] = (),
    ) -> Tool:
        """Turn one route of a Flask view into a tool (see :doc:`/views`).

        :param view: an endpoint name (``"pets.Pets"``) or the view function.
        :param app: the app serving it; default: the current app, else the only
            app this server was registered on.
        :param method: the HTTP method, when the route has several.
        :param name: the tool's name (default: the endpoint in snake case, plus
            the method when the route has several).
        :param description: default: the OpenAPI summary, else the view's docstring.
        :param spec: an ``apispec.APISpec`` or OpenAPI dict describing the view;
            flask-smorest's are found on their own.
        :raises LookupError: no route serves ``view``, or ``method`` is needed.
        """
        from .contrib import views

        target = self._view_app(app)
        rule, chosen = views.find_rule(target, view, method)
        found = views.describe_view(
            target, rule, chosen, self._view_specs(target, spec), name, description
        )
        shareable = spec is None and not tags and not scopes
        return self._add_view_tool(found, tags, scopes, description, shareable)

    def tools_from_app(
        self,
        app: Flask,
        *,
        include: t.Iterable[str] | None = None,
        exclude: t.Iterable[str] = (),
        methods: t.Iterable[str] | None = None,
        spec: t.Any = None,
        tags: t.Iterable[str] = (),
        name: t.Callable[[str, str], str | None] | None = None,
    ) -> list[Tool]:
        """Turn the app's routes into tools, one per route and method (see :doc:`/views`).

        :param include: endpoint globs to take (``["pets.*"]``); default: all.
        :param exclude: endpoint globs to leave out, on top of the static files,
            the MCP endpoint and the OpenAPI documentation.
        :param methods: the HTTP methods to take; default: all but HEAD and OPTIONS.
        :param spec: see :meth:`tool_from_view`.
        :param name: called as ``name(endpoint, method)``; returns the tool's
            name, or ``None`` for the default.
        :raises ValueError: a tool name is taken (nothing is added then).
        """
        from .contrib import views

        documents = self._view_specs(app, spec)
        path = app.config.get("MCP_PATH") if "mcp" in app.extensions else None
        found = [
            views.describe_view(
                app,
                rule,
                method,
                documents,
                name(rule.endpoint or "", method) if name is not None else None,
            )
            for rule, method in views.select_routes(app, include, exclude, methods, path)
        ]
        taken = [f.name for f in found if f.name in self.registry.tools]
        names = [f.name for f in found]
        taken += sorted({n for n in names if names.count(n) > 1})
        if taken:
            raise ValueError(
                f"Cannot make tools from the app's views: {', '.join(map(repr, taken))} "
                "already taken; pass name= (a function of endpoint and method) or exclude=."
            )
        shareable = spec is None and not tags
        return [self._add_view_tool(f, tags, (), None, shareable) for f in found]

    def _view_app(self, app: Flask | None) -> Flask:
        if app is not None:
            return app
        from flask import has_app_context

        if has_app_context():
            return self.current_app
        apps = list(self._states)
        if len(apps) == 1:
            return apps[0]
        raise RuntimeError(
            "tool_from_view needs the app serving the view: pass app=, call it inside an app "
            "context, or call init_app first."
        )

    def _view_specs(self, app: Flask, spec: t.Any) -> list[dict[str, t.Any]]:
        from .contrib import views

        documents = [views.spec_dict(spec)] if spec is not None else []
        return documents + views.find_specs(app)

    def _add_view_tool(
        self,
        found: t.Any,
        tags: t.Iterable[str],
        scopes: t.Sequence[str],
        description: str | None,
        shareable: bool,
    ) -> Tool:
        token = unshared.set(True)  # shared below as one "view" operation
        try:
            tool: Tool = self.add_tool(
                found.handler,
                name=found.name,
                description=found.description,
                input_schema=found.input_schema,
                annotations=found.annotations,
                structured_output=False,
                tags=tags,
                scopes=scopes,
            )
        finally:
            unshared.reset(token)
        handler = found.handler
        kwargs = {"method": handler.method, "name": tool.name, "description": description}
        op = {"op": "view", "endpoint": handler.rule.endpoint, "kwargs": kwargs}
        self._share(op if shareable else None, f"Tool {tool.name!r}")
        return tool

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
        self.broadcast(f"notifications/{kind}/list_changed", app=app)
        for state in self._apps(app):
            publish(state, f"notifications/{kind}/list_changed")

    def notify_resource_updated(self, uri: str, *, app: Flask | None = None) -> None:
        """Tell the sessions and listen streams subscribed to ``uri`` that it changed."""
        message = jsonrpc.notification("notifications/resources/updated", {"uri": uri})
        for state in self._apps(app):
            publish(state, "notifications/resources/updated", {"uri": uri})
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
        if replaying.get():
            return  # the worker that made the change told every session
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


def _catch_up(sync: RegistrySync) -> None:
    try:
        sync.catch_up()
    except Exception:
        logger.exception("Could not replay the registry changes of the other workers")


def _blueprint_path(blueprint: MCPBlueprint) -> str | None:
    if not blueprint.import_name:
        return None
    module = importlib.import_module(blueprint.import_name)
    names = [name for name, value in vars(module).items() if value is blueprint]
    return f"{blueprint.import_name}:{names[0]}" if names else None


__all__ = [
    "MCP",
    "check_dependencies",
]
