"""The MCP Apps extension (``io.modelcontextprotocol/ui``): tools that render a view.

Written against the extension seam (``Extension``, ``mcp.add_extension``); see
:doc:`/apps`. The extension declares views as resources on the ``MCP`` it is added to,
publishes ``_meta.ui`` for tools declared with ``ui=`` and ``visibility=``, checks at
``init_app`` that every tool's view exists, and makes the template helpers of
:mod:`~flask_mcp.extensions.apps.assets` template globals.
"""

from __future__ import annotations

import typing as t

from ...kernel.extension import Extension
from .assets import TEMPLATE_HELPERS
from .views import APP_MIME_TYPE
from .views import EXTENSION_ID
from .views import VISIBILITIES
from .views import View
from .views import check_ui_uri
from .views import ui_meta

if t.TYPE_CHECKING:
    from flask import Flask

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
    tells it whether a client will show the view too.
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

    One object per ``MCP``, added with ``mcp.add_extension(Apps())`` (``mcp.ui(...)``
    adds it when first used). Views are declared with :meth:`ui` or :meth:`ui_template`;
    tools name theirs with ``@mcp.tool(ui="ui://...")`` and may be reserved to the view
    with ``visibility=["app"]``.
    """

    id = EXTENSION_ID
    tool_options = ("ui", "visibility")

    def __init__(self) -> None:
        #: The declared views by URI.
        self.views: dict[str, View] = {}
        # tool name -> the view its ui= names, recorded by check_tool, checked at init_app
        self._bindings: dict[str, str] = {}
        self._mcp: t.Any = None
        # True once an app was initialised: declarations made later are checked at once
        self._final = False

    # -- the seam -------------------------------------------------------------------

    def capability(self) -> dict[str, t.Any]:
        """Advertise the extension with the media type its views are served as."""
        return {"mimeTypes": [APP_MIME_TYPE]}

    def setup(self, mcp: t.Any) -> None:
        """Declare the views declared so far as resources of ``mcp``."""
        self._mcp = mcp
        for view in self.views.values():
            mcp.add_resource(view.read, view.uri, **view.resource_options())

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Add the template helpers to ``app`` and check that every tool's view exists.

        :raises ValueError: a tool names a view that is not declared, or a resource that
            is not served as ``text/html;profile=mcp-app``.
        """
        for name, helper in TEMPLATE_HELPERS.items():
            app.jinja_env.globals.setdefault(name, helper)
        tools = _tool_names(mcp)
        for tool_name, uri in self._bindings.items():
            if tool_name in tools:
                self._check_binding(mcp, tool_name, uri)
        self._final = True

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None:
        """Check ``ui=`` and ``visibility=`` of a tool being registered.

        :raises TypeError, ValueError: the message says how to fix the option.
        """
        uri = options.get("ui")
        visibility = options.get("visibility")
        name = tool.name
        if uri is None and visibility is None:
            self._bindings.pop(name, None)
            return
        meta = getattr(tool, "meta", None) or {}
        if "ui" in meta or LEGACY_RESOURCE_URI_KEY in meta:
            raise ValueError(
                f"Tool {name!r} sets _meta.ui through meta= and ui=/visibility= too; use only "
                "ui= and visibility= (Flask-MCP writes _meta.ui from them)."
            )
        if visibility is not None:
            check_visibility(visibility, name)
        if uri is None:
            self._bindings.pop(name, None)
            return
        check_ui_uri(uri, f"ui= of tool {name!r}")
        self._bindings[name] = uri
        if self._final and self._mcp is not None:
            self._check_binding(self._mcp, name, uri)

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
        :param csp: origins the view needs, by kind (see
            :func:`~flask_mcp.extensions.apps.ui_meta`).
        :param permissions: browser features it asks for (``{"clipboardWrite": {}}``).
        :param domain: a dedicated sandbox origin, in the host's format.
        :param prefers_border: ask the host for a border and background, or none.
        :param listed: ``False`` leaves it out of ``resources/list``; hosts find it
            through the tools that name it.
        :param scopes: OAuth scopes needed to read it.
        :raises TypeError, ValueError: a bad URI or ``_meta.ui`` value; the message says
            the fix.
        """
        meta = ui_meta(
            csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border
        )
        check_ui_uri(uri)

        def decorator(fn: F) -> F:
            self.add_view(
                View(
                    uri=uri,
                    source=fn,
                    name=name or fn.__name__,
                    ui=meta,
                    title=title,
                    description=description if description is not None else _summary(fn),
                    icons=icons,
                    scopes=tuple(scopes),
                    listed=listed,
                )
            )
            return fn

        return decorator

    def ui_template(
        self,
        uri: str,
        template: str,
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
    ) -> View:
        """Declare a view rendered from a Jinja template; the arguments are :meth:`ui`'s.

        :param template: the template's name, rendered with :func:`flask.render_template`
            on each read (``name`` defaults to it).
        """
        if not isinstance(template, str) or not template:
            raise TypeError(
                f"ui_template({uri!r}, ...) needs a template name such as 'board.html', got "
                f"{template!r}; to render in code, decorate a function with ui(...) instead."
            )
        meta = ui_meta(
            csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border
        )
        check_ui_uri(uri)
        return self.add_view(
            View(
                uri=uri,
                source=template,
                name=name or template,
                ui=meta,
                title=title,
                description=description,
                icons=icons,
                scopes=tuple(scopes),
                listed=listed,
            )
        )

    def add_view(self, view: View) -> View:
        """Declare a view at any time; it becomes a resource of the ``MCP`` at once.

        :raises ValueError: the URI is already a view.
        """
        check_ui_uri(view.uri)
        if view.uri in self.views:
            raise ValueError(
                f"The view {view.uri!r} is already declared; give this one another ui:// URI."
            )
        if self._mcp is not None:
            self._mcp.add_resource(view.read, view.uri, **view.resource_options())
        self.views[view.uri] = view
        return view

    def _check_binding(self, mcp: t.Any, tool_name: str, uri: str) -> None:
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


def _summary(fn: t.Callable[..., t.Any]) -> str | None:
    doc = (fn.__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].strip() or None


# The two places that read the MCP's registry: the kernel refactor may move it.
def _tool_names(mcp: t.Any) -> set[str]:
    registry = mcp.registry
    return set(registry.tools) | set(registry.disabled.get("tools", {}))


def _resource(mcp: t.Any, uri: str) -> t.Any:
    registry = mcp.registry
    found = registry.resources.get(uri)
    return found if found is not None else registry.disabled.get("resources", {}).get(uri)
