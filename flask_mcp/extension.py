"""The :class:`MCP` Flask extension: declarations, ``init_app``, notifications.

The face of the package: it reads the app's configuration once, makes the
app's :class:`~flask_mcp.runtime.state.AppState` and registers the transport's
blueprint. Nothing below it looks the server or the app up; each request
carries the state it needs.
"""

from __future__ import annotations

import importlib
import logging
import os
import typing as t
import weakref

from flask import Flask
from flask import current_app
from flask import has_app_context
from flask import has_request_context

from . import backends
from . import protocol
from .auth import build_authenticator
from .auth.authenticator import unenforced_scopes
from .backends.base import SHARED_LOG
from .config import Settings
from .config import load_settings
from .config import warn_unknown_keys
from .explorer import explorer_mode
from .explorer import register_explorer
from .extensions.apps import Apps
from .extensions.apps import View
from .extensions.apps import ViewOptions
from .extensions.server_card import ServerCard
from .extensions.skills import Problem
from .extensions.skills import Skills
from .extensions.skills.model import Producer
from .extensions.tasks import Tasks
from .kernel.extension import Extension
from .kernel.extension import ExtensionSet
from .protocol import jsonrpc
from .runtime.notify import deliver_general
from .runtime.notify import deliver_general_many
from .runtime.notify import publish
from .runtime.state import AppState
from .server.blueprints import DynamicSkillOptions
from .server.blueprints import MCPBlueprint
from .server.blueprints import SkillOptions
from .server.dispatcher import Dispatcher
from .server.dispatcher import ServerInfo
from .server.middleware import Middleware
from .server.registry import KINDS
from .server.registry import Registry
from .server.shared_registry import RegistrySync
from .server.shared_registry import SharedDeclarations
from .server.shared_registry import catch_up
from .server.shared_registry import replaying
from .server.shared_registry import unshared
from .transport.auth import register_metadata_routes
from .transport.health import check_health_paths
from .transport.health import register_health_routes
from .transport.tasks import InProcessExecutor
from .transport.views import make_blueprint

if t.TYPE_CHECKING:
    from typing_extensions import Unpack

    from .auth import Authorizer

logger = logging.getLogger("flask_mcp")
F = t.TypeVar("F", bound=t.Callable[..., t.Any])
A = t.TypeVar("A", bound="Authorizer")
W = t.TypeVar("W", bound=Middleware)
E = t.TypeVar("E", bound=Extension)
P = t.TypeVar("P", bound=Producer)


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
    if isinstance(backend, str) and backend.startswith(backends.REDIS_SCHEMES):
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
        task_executor: t.Any = None,
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
        self.roots_changed_hooks: list[t.Callable[[str], None]] = []
        #: The added extensions (:meth:`add_extension`); Tasks and Apps are always there.
        self.extensions = ExtensionSet(self.dispatcher, self.registry)
        self.add_extension(Tasks())
        #: MCP Apps (:meth:`ui`, :meth:`ui_template`, the ``ui=`` and ``visibility=``
        #: options of :meth:`tool`); see :doc:`/apps`.
        self.apps = self.add_extension(Apps())
        self._syncs: weakref.WeakKeyDictionary[Flask, RegistrySync] = weakref.WeakKeyDictionary()
        self._authorizer = authorizer
        #: Runs the handlers of tasks: ``None`` for greenlets or threads of the serving
        #: worker, or a ``flask_mcp.contrib.celery.CeleryExecutor`` (see :doc:`tasks`).
        self.task_executor = task_executor
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

        When it raises, nothing is left on ``app``: fix the configuration or the
        declarations and call it again.

        :raises RuntimeError: an MCP server is already registered on ``app``.
        :raises ValueError: a key is invalid, or authorization is half configured, or
            an extension refuses a declaration (a tool's view that is not declared).
        :raises ImportError: the configuration needs an optional dependency that
            is not installed; the message names the extra to install.
        :warns ~flask_mcp.ConfigWarning: an ``MCP_*`` key is unknown (misspelled?).
        """
        if "mcp" in app.extensions:
            raise RuntimeError(
                "An MCP extension is already registered on this app. Call init_app only once "
                "per app; to serve a second server, register it on another app."
            )
        # Everything that may be refused is checked before anything is registered on the
        # app, so that a failed init_app leaves the app as it was: fixed, it may be retried.
        warn_unknown_keys(app.config)
        settings = load_settings(app.config)
        check_dependencies(settings, has_authorizer=self._authorizer is not None)
        authenticator = build_authenticator(
            self._authorizer,
            settings,
            resource_name=self.server_info.get("title") or self.name,
            sender=app,
        )
        check_health_paths(app, settings)
        explorer = explorer_mode(app, settings)
        state = AppState(settings, app=app, authenticator=authenticator, server_name=self.name)
        #: Runs task handlers (in this worker, or on Celery: ``flask_mcp.contrib.celery``).
        state.task_executor = self.task_executor or InProcessExecutor()
        if settings.server_card and ServerCard.id not in self.extensions.by_id:
            self.add_extension(ServerCard())  # MCP_SERVER_CARD: see docs/server-card.md
        app.extensions["mcp"] = self
        self._states[app] = state
        try:
            # every extension checks the app (a tool's view) before one adds routes to it
            extensions = list(self.extensions)
            for added in extensions:
                added.check_app(app, self)
            for added in extensions:
                added.init_app(app, self)
        except BaseException:
            del app.extensions["mcp"]
            del self._states[app]
            raise
        bind = getattr(state.task_executor, "bind", None)
        if bind is not None:
            bind(self.name, app, state, self.dispatcher)
        endpoint = make_blueprint(self.dispatcher, state, self.roots_changed_hooks)
        app.register_blueprint(endpoint)
        if SHARED_LOG in state.backend.capabilities:
            sync = self._syncs[app] = RegistrySync(self, state, self.name)
            app.before_request_funcs.setdefault(endpoint.name, []).append(lambda: catch_up(sync))
        elif state.backend.multiprocess:
            logger.warning(
                "The backend %s is shared by several processes but offers no shared log "
                "(SHARED_LOG): tools, resources and prompts changed while serving stay in the "
                "worker that changed them.",
                type(state.backend).__name__,
            )
        register_health_routes(app, state)
        register_explorer(app, settings, explorer)  # the explorer page, when MCP_EXPLORER is on
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

    # -- extensions ----------------------------------------------------------------

    def add_extension(self, extension: E) -> E:
        """Add a protocol extension to this server and return it (see :doc:`/extensions`).

        Its tool options are accepted by :meth:`tool`, its ``setup(mcp)`` runs, its
        ``check_app(app, mcp)`` for every app registered already, then its
        ``init_app(app, mcp)`` for each (and both for every app registered later);
        then its methods are routed in both eras and over stdio, its capability is
        advertised under ``capabilities.extensions``, and it is listed in
        :attr:`extensions`. When ``setup``, a ``check_app`` or an ``init_app`` raises, the
        extension is not added and what its ``setup`` declared on this server is taken
        back: fix the cause and add it again. What ``setup`` changes stays in this worker, as the
        extension does, even with a shared registry (:doc:`/blueprints`): add it in every
        worker.

        :raises TypeError: ``extension`` is not a :class:`~flask_mcp.Extension`.
        :raises ValueError: another extension has its identifier, one of its methods
            or one of its tool options.
        """

        def prepare() -> None:
            extension.setup(self)
            apps = list(self._states)
            for app in apps:  # every app is checked before one is changed
                extension.check_app(app, self)
            for app in apps:
                extension.init_app(app, self)

        # Another thread's change waits until the extension is added or taken back: the
        # undo, made of what the server was at the checkpoint, takes back this one's only.
        # The extension is this worker's: so is what its setup changes (an undo puts back
        # records, which other workers could not replay), whatever the shared registry.
        with self.registry.changing:
            token = unshared.set(True)
            try:
                undo = self._checkpoint()
                try:
                    self.extensions.add(extension, prepare)
                except BaseException:
                    undo()  # what setup declared before an init_app refused an app
                    raise
            finally:
                unshared.reset(token)
        return extension

    def _checkpoint(self) -> t.Callable[[], None]:
        """Return what takes the server's declarations back to what they are now.

        Records (tools, resources, templates, prompts, enabled or not) declared since
        under a new key are removed, as :meth:`remove_tool` removes them; the records
        there now are put back as they were (one removed, replaced, enabled or disabled
        since: an extension's setup may wrap a user's tool); completions, middleware,
        roots hooks, the registry's checks and the refusal of tool arguments too.
        """
        registry, dispatcher = self.registry, self.dispatcher
        records = registry.records()
        keys = {kind: {*enabled, *disabled} for kind, (enabled, disabled) in records.items()}
        removed = set(registry.removed)
        completions = dict(registry.completions)
        hooks: list[tuple[list[t.Any], list[t.Any]]] = [
            (hook, list(hook))
            for hook in (
                registry.removal_checks,
                registry.enable_checks,
                dispatcher.middleware.items,
                self.roots_changed_hooks,
            )
        ]
        refuse_arguments = dispatcher.core.refuse_arguments
        remove = {
            "tools": self.remove_tool,
            "resources": self.remove_resource,
            "resourceTemplates": self.remove_resource,
            "prompts": self.remove_prompt,
        }

        def undo() -> None:
            for hook, items in hooks:  # first: a check added since would refuse a removal
                hook[:] = items
            dispatcher.core.refuse_arguments = refuse_arguments
            with registry.batch():
                for kind in KINDS:
                    for key in registry.keys(kind) - keys[kind]:
                        remove[kind](key)
                registry.restore(records)  # what setup removed, replaced or moved
            registry.removed.intersection_update(removed)  # a capability never declared
            registry.completions.clear()
            registry.completions.update(completions)

        return undo

    def extension(self, extension_id: str) -> Extension:
        """Return the extension added with the identifier ``extension_id``.

        :raises KeyError: none was added; the message says how to add it.
        """
        return self.extensions.get(extension_id)

    # -- MCP Apps ------------------------------------------------------------------

    def ui(self, uri: str, **options: Unpack[ViewOptions]) -> t.Callable[[F], F]:
        """Declare an MCP Apps view rendered by the decorated function (see :doc:`/apps`).

        .. code-block:: python

            @mcp.ui("ui://weather/card", csp={"connectDomains": ["https://api.example.com"]},
                    prefers_border=True)
            def weather_card():
                return render_template("weather_card.html")

            @mcp.tool(ui="ui://weather/card")
            def weather(city: str) -> ToolResult: ...

        The function returns an HTML5 document and runs in the request's context (``g``,
        ``current_user``); ``resources/read`` serves it as ``text/html;profile=mcp-app``
        with ``_meta.ui`` (``csp``, ``permissions``, ``domain``, ``prefersBorder``), which
        ``resources/list`` shows too. ``listed=False`` leaves it out of ``resources/list``.
        The keywords are those of :meth:`flask_mcp.extensions.apps.Apps.ui`, which
        documents each (:class:`~flask_mcp.extensions.apps.ViewOptions`).

        :raises TypeError, ValueError: not a ``ui://`` URI, a bad ``_meta.ui`` value or a
            URI already taken; the message says the fix.
        """
        return self.apps.ui(uri, **options)

    def ui_template(self, uri: str, template: str, **options: Unpack[ViewOptions]) -> View:
        """Declare an MCP Apps view rendered from a Jinja template; return its record.

        ``mcp.ui_template("ui://notes/board", "notes_board.html", name="Notes board")``
        renders the template with :func:`flask.render_template` on each read, in the
        request's context. The keywords are :meth:`ui`'s.
        """
        return self.apps.ui_template(uri, template, **options)

    # -- capabilities --------------------------------------------------------------

    def capabilities(self, era: str = protocol.HANDSHAKE) -> dict[str, t.Any]:
        """Return the server capabilities derived from what is registered."""
        return self.registry.capabilities(era)

    def offers(self, method: str) -> bool:
        """Tell whether a method belongs to a capability this server declares."""
        return self.registry.offers(method)

    def on_roots_changed(self, fn: F) -> F:
        """Register a hook called with the session id when a client's roots change."""
        with self.registry.changing:
            self.roots_changed_hooks.append(fn)
        return fn

    def middleware(self, fn: W) -> W:
        """Register ``fn(call, call_next)`` to run around every MCP request; return ``fn``.

        Use it as a decorator, ``@mcp.middleware``, or call it. ``call`` is a
        :class:`~flask_mcp.server.middleware.CallInfo` (method, params, tool,
        resource or prompt name, session, principal, era); ``call_next(call)``
        runs the rest of the chain and returns the result. The first registered
        runs outermost. See :doc:`/middleware` for what a middleware may do and
        how exceptions travel.

        .. code-block:: python

            @mcp.middleware
            def timed(call, call_next):
                started = time.perf_counter()
                try:
                    return call_next(call)
                finally:
                    log.info("%s %s %.1f ms", call.method, call.name,
                             (time.perf_counter() - started) * 1000)

        It applies to requests of both eras, over HTTP and any other transport
        that runs requests through the dispatcher.
        """
        with self.registry.changing:
            self.dispatcher.middleware.add(fn)
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

    # -- skills (the Skills extension, io.modelcontextprotocol/skills) -------------------

    def skills(self) -> Skills:
        """Return the server's :class:`~flask_mcp.extensions.skills.Skills` extension.

        It is added on first use (by this, :meth:`skills_folder`, :meth:`add_skill`,
        :meth:`dynamic_skill`, or registering a blueprint that carries skills); one added
        with :meth:`add_extension` before is returned.
        """
        if Skills.id not in self.extensions.by_id:
            return self.add_extension(Skills())
        return t.cast(Skills, self.extensions.get(Skills.id))

    def blueprint_extension(self, blueprint: MCPBlueprint, extension_id: str) -> None:
        """Make sure the extension a blueprint carries declarations for is added.

        Skills is added on first use, as :meth:`skills_folder` adds it.

        :raises LookupError: another extension that is not added; the message says how
            to add it.
        """
        if extension_id == Skills.id:
            self.skills()
        super().blueprint_extension(blueprint, extension_id)

    def skills_folder(
        self, path: str | os.PathLike[str], **options: Unpack[SkillOptions]
    ) -> list[Problem]:
        """Serve every skill below ``path``: each ``<dir>/SKILL.md`` is a skill (:doc:`/skills`).

        A relative ``path`` is relative to the folder of the module calling this, as a
        Flask ``template_folder`` is. Every skill is loaded and checked now.

        :param prefix: ``/``-separated segments put before every skill path
            (``None``, the default: none).
        :param listed: ``False`` serves the skills to clients that know their URIs,
            without listing them in ``skills/list`` and ``resources/list``.
        :param ttl_ms: ``ttlMs`` of their reads and ``skills/get`` at 2026-07-28
            (default :confval:`MCP_READ_CACHE_TTL_MS`).
        :param cache_scope: their ``cacheScope`` (default :confval:`MCP_READ_CACHE_SCOPE`).
        :return: notes about the skills (served anyway), such as unknown frontmatter fields.
        :raises ~flask_mcp.extensions.skills.SkillError: a skill cannot be served; the
            message names each file and the fix.
        :raises TypeError: an unknown keyword, or ``prefix`` not a ``str`` or ``None``,
            or ``listed`` not a ``bool``.
        """
        return self.skills().add_folder(path, stacklevel=2, **options)

    def add_skill(
        self, path: str | os.PathLike[str], **options: Unpack[SkillOptions]
    ) -> list[Problem]:
        """Serve the one skill whose directory is ``path`` (it holds ``SKILL.md``).

        Its skill path is ``prefix`` and the directory's name; a ``SKILL.md`` deeper
        in it is one of its files. Parameters as for :meth:`skills_folder`.
        """
        return self.skills().add_skill(path, stacklevel=2, **options)

    def dynamic_skill(
        self, skill_path: str, **options: Unpack[DynamicSkillOptions]
    ) -> t.Callable[[P], P]:
        """Decorate a function returning a skill's files, made on each use (a dynamic skill).

        The function returns ``{"SKILL.md": ..., "data/x.csv": ...}`` (``str`` or
        ``bytes``); the skill's entry publishes ``"resources": "dynamic"``. The last
        segment of ``skill_path`` is the skill's name.

        :param description: the ``description`` of its ``SKILL.md`` frontmatter, for its
            ``SKILL.md`` resource in ``resources/list`` (which does not call the
            function); a ``SKILL.md`` saying another is not served.
        :param listed: as for :meth:`skills_folder`; so are ``ttl_ms`` and ``cache_scope``.
        :raises TypeError: an unknown keyword, or ``description`` not a ``str``; checked
            here, as :meth:`~flask_mcp.MCPBlueprint.dynamic_skill` checks them.
        :raises ValueError: ``description`` empty or longer than 1024 characters, or a
            wrong ``ttl_ms`` or ``cache_scope``.
        """
        return self.skills().dynamic(skill_path, **options)

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
            deliver_general_many(state, state.backend.session_ids(), message)

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
        """Tell the sessions and listen streams subscribed to ``uri`` that it changed.

        A resource's content is the app's (its configuration, its database), so the
        notification goes to the clients of one app: ``app``, else the current app
        (in a handler, a view, or under ``app.app_context()``) when this server is
        registered on it. Outside any app context it goes to every app.

        .. versionchanged:: 0.2.0
            In an app context it reaches that app's clients only, not every app's.
        """
        message = jsonrpc.notification("notifications/resources/updated", {"uri": uri})
        if app is None and has_app_context():
            current = current_app._get_current_object()  # type: ignore[attr-defined]
            app = current if current in self._states else None
        for state in self._apps(app):
            publish(state, "notifications/resources/updated", {"uri": uri})
            records = state.backend.get_sessions(state.backend.session_ids())
            subscribed = [sid for sid, record in records.items() if uri in record.subscriptions]
            deliver_general_many(state, subscribed, message)

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
        stats.update(state.backend.stats())
        return stats

    def _on_registry_change(self, kind: str) -> None:
        """Tell the clients that the list ``kind`` (tools, resources, prompts) changed."""
        if replaying.get():
            return  # the worker that made the change told every session
        # Only apps that serve tell their clients: those that already served an MCP
        # request in this process, and the app of the request making the change (a view
        # of a worker that has served no MCP request yet: the sessions live in the
        # backend, held by the other workers). A declaration at import time (every
        # worker boots through it) changes nothing a client has seen.
        serving = [app for app, state in list(self._states.items()) if state.supervisor is not None]
        if has_request_context():
            requested = current_app._get_current_object()  # type: ignore[attr-defined]
            if requested in self._states and requested not in serving:
                serving.append(requested)
        for app in serving:
            try:
                self.notify_list_changed(kind, app=app)
            except Exception:
                logger.exception("Could not send notifications/%s/list_changed", kind)


__all__ = [
    "MCP",
    "check_dependencies",
]
