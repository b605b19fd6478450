"""Tools made from the app's own Flask views, for any number of apps: :class:`ViewTools`.

.. code-block:: python

    mcp = MCP(name="pets", version="1.0.0")
    views = ViewTools(mcp)
    views.add_routes(include=["pets"], exclude=["/pets/admin"])
    views.add_view("health", name="health_check")

    def create_app():
        app = Flask(__name__)
        app.register_blueprint(pets)
        mcp.init_app(app)
        views.init_app(app)
        return app

The declarations are applied to each app in :meth:`ViewTools.init_app`: the
tools are added to the server once, and each app binds them to its own routes,
so a call runs the view of the app that received the MCP request (its
``current_app``), with that app's configuration and database. The work
(schemas, the request, the answer's mapping) is in :mod:`flask_mcp.contrib.views`.
"""

from __future__ import annotations

import dataclasses
import typing as t
import weakref

from flask import current_app

from ..server.registry import TOOL_NAME
from ..server.shared_registry import unshared
from . import views as views_mod

if t.TYPE_CHECKING:
    from flask import Flask

    from ..extension import MCP
    from ..server.registry import Tool

#: The key of the :class:`ViewTools` in ``app.extensions``.
EXTENSION_KEY = "mcp_views"


@dataclasses.dataclass(frozen=True)
class ViewDeclaration:
    """One route turned into a tool (:meth:`ViewTools.add_view`)."""

    view: str | t.Callable[..., t.Any]
    method: str | None = None
    name: str | None = None
    description: str | None = None
    spec: t.Any = None
    tags: frozenset[str] = frozenset()
    scopes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class RoutesDeclaration:
    """A selection of routes turned into tools (:meth:`ViewTools.add_routes`)."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    methods: tuple[str, ...] | None = None
    spec: t.Any = None
    tags: frozenset[str] = frozenset()
    name: t.Callable[[str, str], str | None] | None = None
    scopes: tuple[str, ...] = ()
    #: The tools the routes gave on the first app they were applied to: every later
    #: app must give the same (recorded by :class:`ViewTools`, not an option).
    selected: frozenset[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )


Declaration = t.Union[ViewDeclaration, RoutesDeclaration]  # noqa: UP007 - a runtime alias on 3.10


class _Made(t.NamedTuple):
    """A tool this object added to the server, and what it was made from."""

    endpoint: str
    method: str
    input_schema: dict[str, t.Any]


@dataclasses.dataclass
class _Plan:
    """What applying declarations to apps changes, found and checked before any change.

    A declaration refused on one app then adds nothing on any: no tool is listed,
    even for a moment, that an app does not bind.
    """

    #: Per app: the tool name -> the route and method to bind there.
    bound: dict[Flask, dict[str, views_mod.ViewTool]] = dataclasses.field(default_factory=dict)
    #: The tools to add to the server, and what they are made from.
    made: dict[str, _Made] = dataclasses.field(default_factory=dict)
    #: The tools each ``add_routes`` declaration selects (on the first app it applies to).
    selected: dict[int, tuple[RoutesDeclaration, frozenset[str]]] = dataclasses.field(
        default_factory=dict
    )
    #: What to bind, in order: the app, the tool, its tags and scopes.
    steps: list[tuple[Flask, views_mod.ViewToolSpec, frozenset[str], tuple[str, ...]]] = (
        dataclasses.field(default_factory=list)
    )


class ViewToolCall:
    """The handler of a view tool: runs the bound view of the app serving the call."""

    def __init__(self, owner: ViewTools, name: str) -> None:
        self.owner = owner
        self.name = name
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, arguments: dict[str, t.Any]) -> t.Any:
        app = t.cast("Flask", current_app._get_current_object())  # type: ignore[attr-defined]
        return self.owner.bound_view(app, self.name)(app, arguments)


class ViewTools:
    """Turns Flask views into tools of an MCP server, on every app it is registered on.

    Declare routes with :meth:`add_view` and :meth:`add_routes`, then call
    :meth:`init_app` for each app (after its routes and flask-smorest
    blueprints are registered). Declarations made after ``init_app`` apply to
    the apps registered so far and to later ones; made while serving with a
    Redis backend, they reach the other workers too.

    :param mcp: the server the tools are added to.
    :param app: an app to register on now (or call :meth:`init_app`).
    :param forward_headers: more headers of the MCP request to pass on to the views,
        besides ``Authorization``, ``Cookie``, ``User-Agent`` and ``X-Forwarded-For``:
        those a view's auth reads, such as ``("X-API-Key",)``.
    :raises ValueError: a header of ``forward_headers`` describes the MCP request, not
        the caller (``Host``, ``Content-Type``, a hop-by-hop or an ``Mcp-*`` header).
    """

    def __init__(
        self,
        mcp: MCP,
        app: Flask | None = None,
        *,
        forward_headers: t.Iterable[str] = (),
    ) -> None:
        self.mcp = mcp
        #: The headers of the MCP request each view tool passes on to its view.
        self.forward_headers = views_mod.forwarded_headers(forward_headers)
        #: What was declared, applied to each app in :meth:`init_app`.
        self.declarations: list[Declaration] = []
        #: Per app: the tool name -> the route and method it runs there.
        self._bound: weakref.WeakKeyDictionary[Flask, dict[str, views_mod.ViewTool]] = (
            weakref.WeakKeyDictionary()
        )
        self._made: dict[str, _Made] = {}
        #: The tools made here and removed from the server since (``mcp.remove_tool``):
        #: the declarations made before do not make them again, on any app.
        self._removed: set[str] = set()
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> list[Tool]:
        """Make the declared tools from the routes of ``app`` and bind them to it.

        The first app adds the tools to the server; each further app (another
        ``create_app()``) binds the same tools to its own routes. A tool removed from
        the server (``mcp.remove_tool``) is removed for every app: a later app does not
        make it again (a later :meth:`add_view` or :meth:`add_routes` that gives it does).

        :returns: the tools made or bound for ``app``.
        :raises RuntimeError: a ViewTools is already registered on ``app``.
        :raises LookupError: a declared view is not served by ``app``.
        :raises ValueError: a tool name is taken by another tool or is not a valid
            tool name, or the app's view gives a tool another app's view does not (a
            different schema), or the app's routes selected by :meth:`add_routes` give
            other tools than those of the apps before it. Nothing is registered on
            ``app``, nor added to the server, then.
        """
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                "A ViewTools is already registered on this app. Call init_app once per app; "
                "declare more routes with add_view() or add_routes() on the same object."
            )
        self._forget_removed()
        app.extensions[EXTENSION_KEY] = self
        self._bound[app] = {}
        plan = _Plan()
        try:
            for declaration in self.declarations:
                self._plan(declaration, app, plan)
            return self._commit(plan)
        except BaseException:  # refused: the app may register again once fixed
            del app.extensions[EXTENSION_KEY]
            del self._bound[app]
            raise

    # -- declarations ----------------------------------------------------------------

    def add_view(
        self,
        view: str | t.Callable[..., t.Any],
        *,
        method: str | None = None,
        name: str | None = None,
        description: str | None = None,
        spec: t.Any = None,
        tags: t.Iterable[str] = (),
        scopes: t.Sequence[str] = (),
    ) -> list[Tool]:
        """Turn one route into a tool (see :doc:`/views`).

        :param view: an endpoint name (``"pets.Pets"``) or the view function
            (or ``MethodView`` class).
        :param method: the HTTP method, when the route has several.
        :param name: the tool's name (default: the endpoint in snake case, plus
            the method when the route has several).
        :param description: default: the OpenAPI summary and description, else the
            view's docstring.
        :param spec: an ``apispec.APISpec`` or OpenAPI dict describing the view;
            flask-smorest's are found on their own.
        :param tags: tags of the tool.
        :param scopes: OAuth scopes the caller needs.
        :returns: the tool, bound on the apps registered so far, in a list (empty
            before the first :meth:`init_app`).
        :raises LookupError: an app registered so far has no route for ``view``,
            or ``method`` is needed to choose one.
        :raises ValueError: as :meth:`init_app`, on any app registered so far;
            nothing is added to the server or bound on any app then.
        """
        declaration = ViewDeclaration(
            view, method, name, description, spec, frozenset(tags), tuple(scopes)
        )
        return self._declare(declaration, shareable=isinstance(view, str) and spec is None)

    def add_routes(
        self,
        *,
        include: t.Iterable[str] | None = None,
        exclude: t.Iterable[str] = (),
        methods: t.Iterable[str] | None = None,
        spec: t.Any = None,
        tags: t.Iterable[str] = (),
        name: t.Callable[[str, str], str | None] | None = None,
        scopes: t.Sequence[str] = (),
    ) -> list[Tool]:
        """Turn the app's routes into tools, one per route and method (see :doc:`/views`).

        Review what this exposes: every route selected becomes callable by any
        MCP client that reaches the endpoint, with the caller's credentials.

        :param include: what to take (default: every route): endpoint globs
            (``"pets.*"``), blueprint names (``"pets"``) or URL prefixes
            (``"/api/v1"``).
        :param exclude: what to leave out, in the same forms. Flask-MCP's own
            routes (the MCP endpoint, the probes, ``/metrics``, the OAuth
            metadata), the static route and flask-smorest's documentation are
            always left out.
        :param methods: the HTTP methods to take; default: all but HEAD and OPTIONS.
        :param spec: see :meth:`add_view`.
        :param tags: tags of every tool.
        :param name: called as ``name(endpoint, method)``; returns the tool's
            name, or ``None`` for the default.
        :param scopes: OAuth scopes the caller needs, for every tool.
        :returns: the tools made for the apps registered so far, each once.
        :raises ValueError: as :meth:`init_app`, on any app registered so far (a
            tool name is taken, or an app's routes give other tools than the
            others'); nothing is added to the server or bound on any app then.
        """
        declaration = RoutesDeclaration(
            tuple(include) if include is not None else None,
            tuple(exclude),
            tuple(methods) if methods is not None else None,
            spec,
            frozenset(tags),
            name,
            tuple(scopes),
        )
        return self._declare(declaration, shareable=False)

    def _declare(self, declaration: Declaration, *, shareable: bool) -> list[Tool]:
        self._forget_removed()
        apps = list(self._bound)
        if not apps:
            self.declarations.append(declaration)
            return []
        plan = _Plan()
        for app in apps:  # every app is checked before any is changed
            self._plan(declaration, app, plan, fresh_declaration=True)
        what = f"The view tools of {declaration!r}"
        with self.mcp.integration_change(EXTENSION_KEY, what) as shared:
            tools: list[Tool] = []
            for made in self._commit(plan):
                if made not in tools:  # each app binds the tools the first one made
                    tools.append(made)
            self.declarations.append(declaration)
            if shareable and isinstance(declaration, ViewDeclaration):
                shared.update(
                    view=declaration.view,
                    method=declaration.method,
                    name=declaration.name,
                    description=declaration.description,
                    tags=sorted(declaration.tags),
                    scopes=list(declaration.scopes),
                )
        return tools

    def apply_operation(self, data: dict[str, t.Any], app: Flask) -> None:
        """Apply a view declaration another worker made while serving (the shared registry)."""
        declaration = ViewDeclaration(
            data["view"],
            data.get("method"),
            data.get("name"),
            data.get("description"),
            None,
            frozenset(data.get("tags") or ()),
            tuple(data.get("scopes") or ()),
        )
        self._forget_removed()
        fresh_declaration = declaration not in self.declarations
        if fresh_declaration:
            self.declarations.append(declaration)
        plan = _Plan()
        for registered in list(self._bound):
            self._plan(declaration, registered, plan, fresh_declaration=fresh_declaration)
        self._commit(plan)

    # -- making and binding ----------------------------------------------------------

    def _forget_removed(self) -> None:
        """Note the tools made here that were removed from the server since.

        Their names are no longer made or bound by the declarations made before; the
        server may have given a name to another tool.
        """
        for name in list(self._made):
            if self._tool(name) is None:
                del self._made[name]
                self._removed.add(name)
                for bound in self._bound.values():
                    bound.pop(name, None)

    def _tool(self, name: str) -> Tool | None:
        """Return the tool ``name`` of the server (enabled or disabled) if it was made here."""
        registry = self.mcp.registry
        tool = registry.tools.get(name) or registry.disabled["tools"].get(name)
        handler = getattr(tool, "fn", None)
        if isinstance(handler, ViewToolCall) and handler.owner is self:
            return tool
        return None

    def _plan(
        self,
        declaration: Declaration,
        app: Flask,
        plan: _Plan,
        *,
        fresh_declaration: bool = False,
    ) -> None:
        """Add to ``plan`` what ``declaration`` makes and binds on ``app``, checked.

        :param fresh_declaration: ``declaration`` is being made now: it makes the tools
            removed from the server again; else they are left out.
        :raises ValueError: see :meth:`init_app`.
        """
        documents = self._documents(app, declaration.spec)
        if isinstance(declaration, ViewDeclaration):
            rule, method = views_mod.find_rule(app, declaration.view, declaration.method)
            found = [
                views_mod.describe_view(
                    app,
                    rule,
                    method,
                    documents,
                    declaration.name,
                    declaration.description,
                    self.forward_headers,
                )
            ]
        else:
            naming = declaration.name
            found = [
                views_mod.describe_view(
                    app,
                    rule,
                    method,
                    documents,
                    naming(rule.endpoint or "", method) if naming is not None else None,
                    headers=self.forward_headers,
                )
                for rule, method in views_mod.select_routes(
                    app, declaration.include, declaration.exclude, declaration.methods
                )
            ]
        bound = {**self._bound[app], **plan.bound.get(app, {})}
        selected = frozenset(f.name for f in found)
        if not fresh_declaration:
            found = [f for f in found if f.name not in self._removed]
        fresh = [f for f in found if bound.get(f.name) is None or not _same(bound[f.name], f)]
        if isinstance(declaration, RoutesDeclaration):
            planned = plan.selected.get(id(declaration))
            before = declaration.selected if planned is None else planned[1]
            self._check_selection(before, selected, app)
            plan.selected.setdefault(id(declaration), (declaration, selected))
        self._check_names(fresh, app, bound, {**self._made, **plan.made})
        for spec in fresh:
            plan.bound.setdefault(app, {})[spec.name] = spec.handler
            if spec.name not in self._made:
                plan.made.setdefault(
                    spec.name,
                    _Made(spec.handler.endpoint, spec.handler.method, spec.input_schema),
                )
            plan.steps.append((app, spec, declaration.tags, declaration.scopes))

    def _commit(self, plan: _Plan) -> list[Tool]:
        """Add and bind the tools of a checked ``plan``; return them, in its order."""
        with self.mcp.registry.batch():  # one list_changed, not one per view
            tools = [self._bind(app, spec, tags, scopes) for app, spec, tags, scopes in plan.steps]
        for declaration, selected in plan.selected.values():
            if declaration.selected is None:  # frozen for its options only
                object.__setattr__(declaration, "selected", selected)
        self._removed.difference_update(self._made)  # made again by a new declaration
        return tools

    def _check_selection(
        self, before: frozenset[str] | None, selected: frozenset[str], app: Flask
    ) -> None:
        """Refuse an app whose routes give another set of tools than the apps before it."""
        if before is None or before == selected:
            return
        extra = ", ".join(map(repr, sorted(selected - before))) or "none"
        missing = ", ".join(map(repr, sorted(before - selected))) or "none"
        raise ValueError(
            f"The routes of the app {app.name!r} selected by add_routes() give other tools "
            f"than those of the apps registered before it (extra: {extra}; missing: "
            f"{missing}). One server offers one set of tools: register the same routes on "
            "every app of the factory, leave the ones some apps lack out with exclude=, or "
            "give each kind of app its own MCP and ViewTools."
        )

    def _check_names(
        self,
        found: list[views_mod.ViewToolSpec],
        app: Flask,
        bound: dict[str, views_mod.ViewTool],
        made_so_far: dict[str, _Made],
    ) -> None:
        names = [f.name for f in found]
        for name in names:
            if not TOOL_NAME.fullmatch(name):
                raise ValueError(
                    f"Invalid tool name {name!r} for a view of the app {app.name!r}: use "
                    "1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.' (pass name= to "
                    "add_view(), or a name= function to add_routes() that returns one)."
                )
        taken = sorted({n for n in names if names.count(n) > 1})
        for spec in found:
            if spec.name in bound:
                taken.append(spec.name)  # this app bound the name to another route
                continue
            made = made_so_far.get(spec.name)
            if made is None:
                if self.mcp.registry.known(spec.name):
                    taken.append(spec.name)
            elif made.input_schema != spec.input_schema or (made.endpoint, made.method) != (
                spec.handler.endpoint,
                spec.handler.method,
            ):
                raise ValueError(
                    f"The tool {spec.name!r} was made from {made.method} {made.endpoint} of "
                    f"another app, and {app.name!r} gives a different one "
                    f"({spec.handler.method} {spec.handler.endpoint}, or another input schema). "
                    "One server offers one set of tools: register ViewTools on apps made by the "
                    "same factory, or give each kind of app its own MCP and ViewTools."
                )
        if taken:
            raise ValueError(
                f"Cannot make tools from the app's views: {', '.join(map(repr, taken))} "
                "already taken; pass name= (a function of endpoint and method) or exclude=."
            )

    def _bind(
        self,
        app: Flask,
        spec: views_mod.ViewToolSpec,
        tags: t.Iterable[str],
        scopes: t.Sequence[str],
    ) -> Tool:
        made = self._made.get(spec.name)
        # a disabled tool is still made: bind it, as an enabled one
        tool = self._tool(spec.name)
        if made is None or tool is None:
            token = unshared.set(True)  # shared as one declaration (integration_change)
            try:
                tool = self.mcp.add_tool(
                    ViewToolCall(self, spec.name),
                    name=spec.name,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    annotations=spec.annotations,
                    structured_output=False,
                    tags=tags,
                    scopes=scopes,
                )
            finally:
                unshared.reset(token)
            self._made[spec.name] = _Made(
                spec.handler.endpoint, spec.handler.method, spec.input_schema
            )
        self._bound[app][spec.name] = spec.handler
        return t.cast("Tool", tool)

    def _documents(self, app: Flask, spec: t.Any) -> list[dict[str, t.Any]]:
        documents = [views_mod.spec_dict(spec)] if spec is not None else []
        return documents + views_mod.find_specs(app)

    # -- calls -----------------------------------------------------------------------

    def bound_view(self, app: Flask, name: str) -> views_mod.ViewTool:
        """Return the route and method the tool ``name`` runs on ``app``.

        :raises RuntimeError: ``init_app`` was not called for ``app``, or the
            app has no route for the tool (the message says which).
        """
        bound = self._bound.get(app)
        if bound is None:
            raise RuntimeError(
                f"The tool {name!r} runs a view, but this ViewTools is not registered on the app "
                f"{app.name!r} serving the call. Did you forget to call views.init_app(app) in "
                "the app factory?"
            )
        found = bound.get(name)
        if found is None:
            raise RuntimeError(
                f"The tool {name!r} was made from a view of another app; the app {app.name!r} "
                "has no route for it. Register the same routes on every app of one server."
            )
        return found

    def tools(self, app: Flask | None = None) -> dict[str, views_mod.ViewTool]:
        """Return the view tools bound on ``app`` (default: the current app), by tool name."""
        target = app if app is not None else current_app._get_current_object()  # type: ignore[attr-defined]
        self._forget_removed()
        return dict(self._bound.get(target, {}))


def _same(bound: views_mod.ViewTool, spec: views_mod.ViewToolSpec) -> bool:
    return bound.endpoint == spec.handler.endpoint and bound.method == spec.handler.method


__all__ = [
    "EXTENSION_KEY",
    "RoutesDeclaration",
    "ViewDeclaration",
    "ViewToolCall",
    "ViewTools",
]
