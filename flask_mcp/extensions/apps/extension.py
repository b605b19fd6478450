"""The MCP Apps extension (``io.modelcontextprotocol/ui``): tools that render a view.

An :class:`~flask_mcp.Extension` added to every ``MCP`` (see :doc:`/apps`). It declares
views as resources on that ``MCP``, publishes ``_meta.ui`` for tools declared with
``ui=`` and ``visibility=``, checks at ``init_app`` that every tool's view exists, and
makes the template helpers of :mod:`~flask_mcp.extensions.apps.assets` template globals.
"""

from __future__ import annotations

import typing as t

from ...kernel.extension import Extension
from ...protocol.apps import APP_MIME_TYPE
from ...protocol.apps import EXTENSION_ID
from ...server.blueprints import MCPBlueprint
from ...server.blueprints import prefix_uri
from ...server.shared_registry import unshared
from .assets import TEMPLATE_HELPERS
from .views import VISIBILITIES
from .views import View
from .views import ViewOptions
from .views import check_ui_uri
from .views import ui_meta

if t.TYPE_CHECKING:
    from flask import Flask
    from typing_extensions import Unpack

F = t.TypeVar("F", bound=t.Callable[..., t.Any])

#: The deprecated flat key of ``_meta`` that older hosts read instead of ``ui.resourceUri``
#: (the stable spec still lists it; the official TypeScript server helper still sets it).
LEGACY_RESOURCE_URI_KEY = "ui/resourceUri"


class ClientFacts(t.Protocol):
    """What :func:`client_supports_ui` needs of a ``Context``."""

    def client_extension(self, extension_id: str) -> dict[str, t.Any] | None: ...


def client_supports_ui(ctx: ClientFacts) -> bool:
    """Tell whether the client of this request renders MCP Apps views.

    True when it declared ``capabilities.extensions["io.modelcontextprotocol/ui"]`` with
    ``text/html;profile=mcp-app`` among its ``mimeTypes`` (in either era). A tool bound to
    a view returns meaningful text ``content`` either way (the spec requires it); this
    tells it whether a client will show the view too. ``ctx.client_supports_ui()`` is the
    same check.
    """
    settings = ctx.client_extension(EXTENSION_ID)
    if not isinstance(settings, dict):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, (list, tuple)) and APP_MIME_TYPE in mime_types


def check_visibility(visibility: t.Any, tool_name: str) -> list[str]:
    """Return ``visibility`` as a list, checked.

    :raises TypeError: not a list of strings.
    :raises ValueError: empty, unknown or repeated entries.
    """
    if isinstance(visibility, str) or not isinstance(visibility, (list, tuple)):
        raise TypeError(
            f"visibility of tool {tool_name!r} must be a list such as ['app'] or "
            f"['model', 'app'], got {visibility!r}."
        )
    unknown = [v for v in visibility if v not in VISIBILITIES]
    if unknown:
        raise ValueError(
            f"visibility of tool {tool_name!r} has {', '.join(map(repr, unknown))}; the "
            "entries are 'model' (the model may call it) and 'app' (the view may call it)."
        )
    if not visibility:
        raise ValueError(
            f"visibility=[] would let no one call tool {tool_name!r}; leave it out (model and "
            "view), or write ['app'] for a tool only its view calls."
        )
    if len(set(visibility)) != len(visibility):
        raise ValueError(f"visibility of tool {tool_name!r} repeats an entry: {visibility!r}.")
    return list(visibility)


class Apps(Extension):
    """MCP Apps: tools whose results render as interactive HTML views in the host.

    Every ``MCP`` has one, like Tasks (``mcp.extension("io.modelcontextprotocol/ui")``),
    so ``ui=`` and ``visibility=`` are tool options of any server and a tool may be
    declared before its view. Views are declared with ``mcp.ui(...)`` and
    ``mcp.ui_template(...)`` (which call :meth:`ui` and :meth:`ui_template`), or on an
    :class:`~flask_mcp.MCPBlueprint`; tools name theirs with ``@mcp.tool(ui="ui://...")``
    and may be reserved to the view with ``visibility=["app"]``. The capability is
    advertised once a view is declared.
    """

    id = EXTENSION_ID
    tool_options = ("ui", "visibility")

    def __init__(self) -> None:
        #: The declared views by URI.
        self.views: dict[str, View] = {}
        self._mcp: t.Any = None
        # True once an app was initialised: declarations made later are checked at once
        self._final = False

    # -- the seam -------------------------------------------------------------------

    def capability(self, era: str = "handshake") -> dict[str, t.Any] | None:
        """Advertise the extension, with no settings, once the server has a view.

        The spec defines settings for the client (``mimeTypes``, what it renders) and
        none for the server; the extensions overview shows a server advertising
        ``"io.modelcontextprotocol/ui": {}``, as the official SDKs do. A view is one
        declared with :meth:`ui` or :meth:`ui_template`, or a plain resource served as
        ``text/html;profile=mcp-app`` (:func:`~flask_mcp.extensions.apps.render_view`),
        which ``ui=`` may name too. A server without a view does not advertise it: it has
        nothing for a host to render.
        """
        if self._mcp is not None:  # what it serves: a view removed as a resource is gone
            return {} if _serves_a_view(self._mcp) else None
        return {} if self.views else None

    def setup(self, mcp: t.Any) -> None:
        """Declare the views declared so far as resources of ``mcp``; refuse to remove a
        view a tool shows (:meth:`check_removal`), or to leave an enabled tool's view
        disabled (:meth:`check_enabling`)."""
        self._mcp = mcp
        mcp.registry.removal_checks.append(self.check_removal)
        mcp.registry.enable_checks.append(self.check_enabling)
        for view in self.views.values():
            mcp.add_resource(view.read, view.uri, **view.resource_options())

    def check_app(self, app: Flask, mcp: t.Any) -> None:
        """Check that every tool's view exists.

        :raises ValueError: a tool names a view that is not declared, or a resource that
            is not served as ``text/html;profile=mcp-app``.
        """
        enabled = mcp.registry.tools
        for tool_name, uri in _bindings(mcp).items():
            self._check_binding(mcp, tool_name, uri, enabled=tool_name in enabled)

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Add the template helpers to ``app``; a tool's view is checked from now on."""
        for name, helper in TEMPLATE_HELPERS.items():
            app.jinja_env.globals.setdefault(name, helper)
        self._final = True

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None:
        """Check ``ui=`` and ``visibility=`` of a tool being registered.

        :raises TypeError, ValueError: the message says how to fix the option.
        """
        uri = options.get("ui")
        visibility = options.get("visibility")
        name = tool.name
        meta = getattr(tool, "meta", None) or {}
        if "ui" in meta or LEGACY_RESOURCE_URI_KEY in meta:
            if uri is None and visibility is None:
                raise ValueError(
                    f"Tool {name!r} sets _meta.ui through meta=, where it is not checked; "
                    "use ui= and visibility= instead (@mcp.tool(ui='ui://...', "
                    "visibility=['app'])): Flask-MCP writes _meta.ui from them, checks the "
                    "view exists and keeps it while the tool names it."
                )
            raise ValueError(
                f"Tool {name!r} sets _meta.ui through meta= and ui=/visibility= too; use only "
                "ui= and visibility= (Flask-MCP writes _meta.ui from them)."
            )
        if uri is None and visibility is None:
            return
        if visibility is not None:
            check_visibility(visibility, name)
        if uri is None:
            return
        check_ui_uri(uri, f"ui= of tool {name!r}")
        if self._final and self._mcp is not None:
            self._check_binding(self._mcp, name, uri, enabled=True)  # added enabled

    def tool_meta(self, tool: t.Any, options: dict[str, t.Any]) -> dict[str, t.Any] | None:
        """Return ``_meta.ui`` (``resourceUri``, ``visibility``) of a tool, if it has one.

        ``_meta["ui/resourceUri"]`` repeats the URI for hosts that read only the
        deprecated flat key.
        """
        ui: dict[str, t.Any] = {}
        uri = options.get("ui")
        if uri is not None:
            ui["resourceUri"] = uri
        if options.get("visibility") is not None:
            ui["visibility"] = list(options["visibility"])
        if not ui:
            return None
        meta: dict[str, t.Any] = {"ui": ui}
        if uri is not None:
            meta[LEGACY_RESOURCE_URI_KEY] = uri
        return meta

    # -- declaring views ------------------------------------------------------------

    def ui(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: t.Mapping[str, t.Sequence[str]] | None = None,
        permissions: t.Mapping[str, t.Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        listed: bool = True,
        icons: list[dict[str, t.Any]] | None = None,
        scopes: t.Sequence[str] = (),
    ) -> t.Callable[[F], F]:
        """Declare a view rendered by the decorated function, which returns the HTML.

        The function runs in the request's context like any resource handler (``g``,
        ``current_user`` and :func:`flask.render_template` work); what it returns must be
        an HTML5 document.

        :param uri: the view's ``ui://`` URI, which tools name in ``ui=``.
        :param name: its name in ``resources/list`` (default: the function's name).
        :param title: a display name.
        :param description: what it shows (default: the docstring's first paragraph).
        :param csp: origins the view needs, by kind (see
            :func:`~flask_mcp.extensions.apps.ui_meta`).
        :param permissions: browser features it asks for (``{"clipboardWrite": {}}``).
        :param domain: a dedicated sandbox origin, in the host's format.
        :param prefers_border: ask the host for a border and background, or none.
        :param listed: ``False`` leaves it out of ``resources/list``; hosts find it
            through the tools that name it.
        :param icons: icons of the resource.
        :param scopes: OAuth scopes needed to read it.
        :raises TypeError, ValueError: a bad URI or ``_meta.ui`` value, or a URI taken;
            the message says the fix.
        """
        options: ViewOptions = {
            "name": name,
            "title": title,
            "description": description,
            "csp": csp,
            "permissions": permissions,
            "domain": domain,
            "prefers_border": prefers_border,
            "listed": listed,
            "icons": icons,
            "scopes": scopes,
        }
        self._check_options(uri, options)

        def decorator(fn: F) -> F:
            self.add_view(self._function_view(uri, fn, **options))
            return fn

        return decorator

    def ui_template(self, uri: str, template: str, **options: Unpack[ViewOptions]) -> View:
        """Declare a view rendered from a Jinja template; the keywords are :meth:`ui`'s.

        :param template: the template's name, rendered with :func:`flask.render_template`
            on each read, in the request's context (``name`` defaults to it).
        """
        return self.add_view(self._template_view(uri, template, **options))

    def _check_options(self, uri: str, options: ViewOptions) -> None:
        check_ui_uri(uri)
        ui_meta(
            csp=options.get("csp"),
            permissions=options.get("permissions"),
            domain=options.get("domain"),
            prefers_border=options.get("prefers_border"),
        )

    def _function_view(self, uri: str, fn: t.Callable[[], str], **options: t.Any) -> View:
        if not callable(fn):
            raise TypeError(
                f"ui({uri!r}) decorates the function that returns the view's HTML, got {fn!r}; "
                "for a template, call ui_template(uri, 'view.html') instead."
            )
        description = options.pop("description", None)
        name = options.pop("name", None)
        return self._view(
            uri,
            fn,
            name=name or getattr(fn, "__name__", "view"),
            description=description if description is not None else _summary(fn),
            **options,
        )

    def _template_view(self, uri: str, template: str, **options: t.Any) -> View:
        if not isinstance(template, str) or not template:
            raise TypeError(
                f"ui_template({uri!r}, ...) needs a template name such as 'board.html', got "
                f"{template!r}; to render in code, decorate a function with ui(...) instead."
            )
        name = options.pop("name", None)
        return self._view(uri, template, name=name or template, **options)

    def _view(
        self,
        uri: str,
        source: str | t.Callable[[], str],
        *,
        name: str,
        title: str | None = None,
        description: str | None = None,
        csp: t.Mapping[str, t.Sequence[str]] | None = None,
        permissions: t.Mapping[str, t.Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        listed: bool = True,
        icons: list[dict[str, t.Any]] | None = None,
        scopes: t.Sequence[str] = (),
    ) -> View:
        check_ui_uri(uri)
        meta = ui_meta(
            csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border
        )
        return View(
            uri=uri,
            source=source,
            name=name,
            ui=meta,
            title=title,
            description=description,
            icons=icons,
            scopes=tuple(scopes),
            listed=listed,
        )

    def add_view(self, view: View) -> View:
        """Declare a view at any time; it becomes a resource of the ``MCP`` at once.

        :raises ValueError: the URI is already a view or another resource.
        """
        self._check_free(view.uri)
        if self._mcp is not None:
            self._mcp.add_resource(view.read, view.uri, **view.resource_options())
        self.views[view.uri] = view
        return view

    def remove_view(self, uri: str) -> bool:
        """Remove a view and its resource; return whether there was one.

        :raises ValueError: a tool shows the view (:meth:`check_removal`).
        """
        if uri not in self.views:
            return False
        if self._mcp is not None:
            token = unshared.set(True)
            try:
                self._mcp.remove_resource(uri)
            finally:
                unshared.reset(token)
        del self.views[uri]
        return True

    def check_removal(self, kind: str, key: str) -> None:
        """Refuse to remove the resource ``key`` while a tool's ``ui=`` names it.

        The spec says a tool's ``_meta.ui.resourceUri`` names a resource that exists on
        the server; a disabled tool counts, as it may be enabled again.

        :raises ValueError: tools name it; the message says to remove them first.
        """
        if kind != "resources" or self._mcp is None:
            return
        showing = sorted(name for name, uri in _bindings(self._mcp).items() if uri == key)
        if showing:
            names = ", ".join(map(repr, showing))
            raise ValueError(
                f"{key!r} is the view of the tools {names} (ui=): removed, it would leave "
                "their _meta.ui.resourceUri naming a resource that does not exist. Remove "
                "those tools first (mcp.remove_tool; add one back without ui= to keep it)."
            )

    def check_enabling(self, enabled: bool, moving: list[tuple[str, str]]) -> None:
        """Refuse an ``enable`` or ``disable`` that leaves an enabled tool's view disabled.

        A disabled view reads as not found while the tool stays listed with
        ``_meta.ui.resourceUri`` naming it, which the spec forbids ("Resource MUST exist
        on the server"). ``moving`` holds the (kind, key) pairs the call would move: a
        view and its tools disabled, or enabled, in the same call are fine.

        :raises ValueError: the message names the tools and views to change together.
        """
        if self._mcp is None:
            return
        registry = self._mcp.registry
        bindings = _bindings(self._mcp)
        tools = {key for kind, key in moving if kind == "tools"}
        views = {key for kind, key in moving if kind == "resources"}
        if enabled:  # a tool coming back whose view stays disabled
            hidden = registry.disabled.get("resources", {})
            stranded = {
                name: uri
                for name, uri in bindings.items()
                if name in tools and uri in hidden and uri not in views
            }
        else:  # a view going away from a tool that stays enabled
            stranded = {
                name: uri
                for name, uri in bindings.items()
                if uri in views and name in registry.tools and name not in tools
            }
        if not stranded:
            return
        pairs = ", ".join(f"{name!r} ({uri!r})" for name, uri in sorted(stranded.items()))
        both = sorted({*stranded, *stranded.values()})
        together = ", ".join(map(repr, both))
        action = "enable" if enabled else "disable"
        raise ValueError(
            f"The tools {pairs} would stay listed with _meta.ui.resourceUri naming a view "
            f"that is disabled, which reads as not found. {action.capitalize()} a tool and "
            f"its view together: mcp.{action}({together}), or give them a common tag."
        )

    def register_blueprint(
        self, mcp: t.Any, blueprint: MCPBlueprint, prefix: str, uri_prefix: str
    ) -> t.Callable[[], None] | None:
        """Declare the blueprint's views (:meth:`MCPBlueprint.ui <flask_mcp.MCPBlueprint.ui>`).

        Before its tools, whose ``ui=`` may name them; undone if the registration fails.
        """
        added = self.add_blueprint_views(blueprint.views.values(), uri_prefix, prefix)
        if not added:
            return None

        def undo() -> None:
            for uri in added:
                self.remove_view(uri)

        return undo

    def add_blueprint_views(self, views: t.Iterable[t.Any], segment: str, prefix: str) -> list[str]:
        """Declare the views of an :class:`~flask_mcp.MCPBlueprint` being registered.

        Each view's URI gets ``segment`` (as the blueprint's resources do) and its name
        ``prefix``. Everything is checked before anything is added. Return the URIs
        added, for :meth:`remove_view` if the rest of the registration fails.

        :raises TypeError, ValueError: a bad option, or a URI already taken; the
            message says the fix.
        """
        planned: list[View] = []
        for declared in views:
            uri = prefix_uri(declared.uri, segment)
            options = dict(declared.options)
            source = declared.source
            if isinstance(source, str):
                view = self._template_view(uri, source, **options)
            else:
                view = self._function_view(uri, source, **options)
            view.name = prefix + view.name
            self._check_free(uri)
            planned.append(view)
        if len({view.uri for view in planned}) != len(planned):
            raise ValueError("A blueprint declares one view URI twice; give each its own.")
        token = unshared.set(True)  # the blueprint's own operation carries them
        try:
            for view in planned:
                self.add_view(view)
        finally:
            unshared.reset(token)
        return [view.uri for view in planned]

    def _check_free(self, uri: str) -> None:
        check_ui_uri(uri)
        if uri in self.views and self._mcp is not None and _resource(self._mcp, uri) is None:
            del self.views[uri]  # removed with mcp.remove_resource: the URI is free again
        if uri in self.views:
            raise ValueError(
                f"The view {uri!r} is already declared; give this one another ui:// URI."
            )
        if self._mcp is not None and _resource(self._mcp, uri) is not None:
            raise ValueError(
                f"{uri!r} is already a resource of this server; give the view another "
                "ui:// URI, or remove the resource."
            )

    def _check_binding(self, mcp: t.Any, tool_name: str, uri: str, *, enabled: bool) -> None:
        resource = _resource(mcp, uri)
        if resource is None:
            raise ValueError(
                f"Tool {tool_name!r} names the view {uri!r} (ui=), which is not declared: declare "
                f"it with @mcp.ui({uri!r}) or mcp.ui_template({uri!r}, 'template.html'), or fix "
                "the URI."
            )
        mime_type = getattr(resource, "mime_type", None)
        if mime_type != APP_MIME_TYPE:
            raise ValueError(
                f"Tool {tool_name!r} names {uri!r} (ui=), a resource served as {mime_type!r}; "
                f"hosts render only {APP_MIME_TYPE!r}. Declare it with @mcp.ui({uri!r}) instead."
            )
        if enabled and uri not in mcp.registry.resources:
            raise ValueError(
                f"Tool {tool_name!r} names the view {uri!r} (ui=), which is disabled: the tool "
                "would be listed with _meta.ui.resourceUri naming a view that reads as not "
                f"found. mcp.enable({uri!r}) first, or declare the tool with a tag and "
                "disable it with its view."
            )


def _summary(fn: t.Callable[..., t.Any]) -> str | None:
    doc = (fn.__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].strip() or None


# The places that read the MCP's registry: the kernel refactor may move it.
def _bindings(mcp: t.Any) -> dict[str, str]:
    """Return the view each tool's ``ui=`` names, by tool name, disabled tools included.

    Read from the registered tools, so a declaration the registry refused (a taken
    name) changes nothing.
    """
    registry = mcp.registry
    bound: dict[str, str] = {}
    for table in (registry.tools, registry.disabled.get("tools", {})):
        for name, tool in list(table.items()):  # a copy: it may change
            uri = (getattr(tool, "options", None) or {}).get("ui")
            if uri is not None:
                bound[name] = uri
    return bound


def _serves_a_view(mcp: t.Any) -> bool:
    return any(
        getattr(resource, "mime_type", None) == APP_MIME_TYPE
        for resource in list(mcp.registry.resources.values())  # a copy: it may change
    )


def _resource(mcp: t.Any, uri: str) -> t.Any:
    registry = mcp.registry
    found = registry.resources.get(uri)
    return found if found is not None else registry.disabled.get("resources", {}).get(uri)
