"""The :class:`~flask_mcp.MCP` methods that turn the app's Flask views into tools.

The work is in :mod:`flask_mcp.contrib.views`, imported on first use.
"""

from __future__ import annotations

import typing as t

from flask import current_app
from flask import has_app_context

from ..server.registry import Tool
from ..server.shared_registry import unshared

if t.TYPE_CHECKING:
    from flask import Flask

    from ..runtime.state import AppState


class ViewTools:
    """``tool_from_view`` and ``tools_from_app``."""

    _states: t.MutableMapping[Flask, AppState]
    registry: t.Any

    if t.TYPE_CHECKING:

        def add_tool(self, fn: t.Any, **kwargs: t.Any) -> t.Any: ...

        def _share(self, op: dict[str, t.Any] | None, what: str) -> None: ...

        def _changing(self) -> t.ContextManager[None]: ...

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
        from . import views

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
        from . import views

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
        with self.registry.batch():  # one list_changed, not one per view
            return [self._add_view_tool(f, tags, (), None, shareable) for f in found]

    def _view_app(self, app: Flask | None) -> Flask:
        if app is not None:
            return app
        if has_app_context():
            return t.cast("Flask", current_app._get_current_object())  # type: ignore[attr-defined]
        apps = list(self._states)
        if len(apps) == 1:
            return apps[0]
        raise RuntimeError(
            "tool_from_view needs the app serving the view: pass app=, call it inside an app "
            "context, or call init_app first."
        )

    def _view_specs(self, app: Flask, spec: t.Any) -> list[dict[str, t.Any]]:
        from . import views

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
        with self._changing():  # after the other workers' changes; told once in the log
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


__all__ = ["ViewTools"]
