"""Tools made from Flask views: the work under :class:`~flask_mcp.contrib.view_tools.ViewTools`.

Each selected route and method becomes a tool. Its input schema comes from the
OpenAPI operation that flask-smorest (or an ``apispec.APISpec`` passed as
``spec=``) documents for it: path and query parameters as top-level arguments,
the JSON body as ``body``. A view without one gets its URL variables, typed by
their converters, an optional ``query`` object and, for POST/PUT/PATCH, an
optional ``body``. A call runs the view through the WSGI callable of the app
serving the MCP request, with a request built from the arguments and carrying
the MCP caller's identity (:data:`IDENTITY_HEADERS`: ``Authorization``, ``Cookie``,
``User-Agent``, ``X-Forwarded-For``, and those named by ``forward_headers``), so the
view's own decorators decide; an
answer other than 2xx becomes an ``isError`` result that says in one line what
happened (:mod:`~flask_mcp.contrib.view_answers`).
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import logging
import re
import typing as t
from urllib.parse import urlsplit

from flask import has_request_context
from flask import request
from werkzeug.http import is_hop_by_hop_header
from werkzeug.routing import Rule
from werkzeug.test import EnvironBuilder
from werkzeug.test import run_wsgi_app

from .. import url_rules
from ..content import ToolResult
from .view_answers import map_response

if t.TYPE_CHECKING:
    from flask import Flask

logger = logging.getLogger("flask_mcp")

#: Methods that never become tools.
SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})
#: Methods whose plain views get an optional JSON ``body`` argument.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Headers of the MCP request passed on to the view: who is calling. ``User-Agent`` and
#: ``X-Forwarded-For`` are part of the caller's identity too: Flask-Login's session protection
#: hashes them with the address, and a session cookie seen with other values is no longer
#: fresh (``"basic"``) or is logged out (``"strong"``).
IDENTITY_HEADERS = ("Authorization", "Cookie", "User-Agent", "X-Forwarded-For")
#: Headers never passed on, even when named in ``forward_headers``: they describe the MCP
#: request itself (its body, its host, its connection, its MCP session), not the caller.
UNFORWARDABLE_HEADERS = frozenset(
    {"accept", "content-length", "content-type", "host", "last-event-id"}
)
#: Endpoints never turned into tools (globs): the static files, flask-smorest's documentation
#: and Flask-MCP's own routes, whose endpoints all start with ``mcp`` or ``flask_mcp``
#: (the MCP endpoint ``mcp.*``, ``mcp_liveness``, ``mcp_readiness``, ``mcp_metrics``, the
#: OAuth metadata ``mcp_auth.*``).
DEFAULT_EXCLUDE = ("static", "*.static", "api-docs.*", "mcp", "mcp.*", "mcp_*", "flask_mcp*")
#: URL prefixes never turned into tools: the OAuth and other well-known metadata documents.
EXCLUDED_PATHS = ("/.well-known/",)


def forwarded_headers(extra: t.Iterable[str]) -> tuple[str, ...]:
    """Return the headers a view tool passes on: :data:`IDENTITY_HEADERS` and ``extra``.

    :param extra: more headers of the MCP request to pass on, such as ``"X-API-Key"``.
    :raises ValueError: a header of ``extra`` describes the MCP request, not the caller:
        a hop-by-hop header, ``Host``, ``Accept``, ``Content-Type``, ``Content-Length``,
        ``Last-Event-ID`` or an MCP header (``Mcp-Session-Id``, ``MCP-Protocol-Version``,
        ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``).
    """
    if isinstance(extra, str):
        extra = (extra,)
    refused = [
        name
        for name in extra
        if name.lower() in UNFORWARDABLE_HEADERS
        or name.lower().startswith("mcp-")
        or is_hop_by_hop_header(name)
    ]
    if refused:
        raise ValueError(
            f"Cannot pass the header(s) {', '.join(map(repr, refused))} on to a view: they "
            "describe the MCP request (its connection, body, host or MCP session), not the "
            "caller. Name only headers that carry who is calling, such as 'X-API-Key'."
        )
    known = {name.lower() for name in IDENTITY_HEADERS}
    added = [name for name in dict.fromkeys(extra) if name.lower() not in known]
    return (*IDENTITY_HEADERS, *added)


def annotations_for(method: str) -> dict[str, t.Any]:
    """Return the tool annotations of an HTTP method (``readOnlyHint``, ``destructiveHint``)."""
    if method in ("GET", "HEAD"):
        return {"readOnlyHint": True, "openWorldHint": False}
    hints: dict[str, t.Any] = {
        "readOnlyHint": False,
        "destructiveHint": method == "DELETE",
        "openWorldHint": False,
    }
    if method in ("PUT", "DELETE"):
        hints["idempotentHint"] = True
    return hints


def openapi_path(rule: Rule) -> str:
    """Return the OpenAPI path of a URL rule: ``/pets/<int:pet_id>`` -> ``/pets/{pet_id}``."""
    return url_rules.substitute(rule.rule, lambda _converter, name: f"{{{name}}}")


def default_name(endpoint: str, method: str, methods: t.Collection[str]) -> str:
    """Return a tool name: the endpoint in snake case, with the method when it has several."""
    base = re.sub(r"[^A-Za-z0-9_]+", "_", endpoint).strip("_").lower() or "view"
    return f"{base}_{method.lower()}" if len(methods) > 1 else base


def rule_methods(rule: Rule) -> list[str]:
    """Return the methods of a rule that may become tools, sorted."""
    return sorted(set(rule.methods or ()) - SKIPPED_METHODS)


# -- OpenAPI -----------------------------------------------------------------------------


def find_specs(app: Flask) -> list[dict[str, t.Any]]:
    """Return the OpenAPI documents of the flask-smorest ``Api`` objects of ``app``."""
    found = app.extensions.get("flask-smorest", {}).get("apis", {})
    return [entry["ext_obj"].spec.to_dict() for entry in found.values()]


def spec_dict(spec: t.Any) -> dict[str, t.Any]:
    """Return an OpenAPI document from an ``apispec.APISpec`` or a dict."""
    return t.cast("dict[str, t.Any]", spec if isinstance(spec, dict) else spec.to_dict())


class _Resolver:
    """Inlines ``$ref`` to ``#/components/...`` and turns OpenAPI 3.0 ``nullable`` into types."""

    def __init__(self, document: dict[str, t.Any]) -> None:
        self.document = document

    def __call__(self, node: t.Any, seen: frozenset[str] = frozenset(), *, reading: bool) -> t.Any:
        if isinstance(node, list):
            return [self(item, seen, reading=reading) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in seen:
                return {}  # a recursive schema: any value below this depth
            target: t.Any = self.document
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            return self(target, seen | {ref}, reading=reading)
        out = {key: self(value, seen, reading=reading) for key, value in node.items()}
        if out.pop("nullable", False) and isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        properties = out.get("properties")
        if not reading and isinstance(properties, dict):
            # dump_only fields are in the shared component but not in a request
            hidden = [k for k, v in properties.items() if isinstance(v, dict) and v.get("readOnly")]
            for key in hidden:
                del properties[key]
            if hidden and isinstance(out.get("required"), list):
                out["required"] = [k for k in out["required"] if k not in hidden]
        return out


def find_operation(
    documents: t.Sequence[dict[str, t.Any]], rule: Rule, method: str
) -> tuple[dict[str, t.Any], dict[str, t.Any]] | None:
    """Return the OpenAPI operation documenting ``method`` on ``rule`` and its document."""
    path = openapi_path(rule)
    for document in documents:
        servers = [s.get("url", "") for s in document.get("servers", [])] or [""]
        for prefix in servers:
            key = path[len(prefix) :] if prefix and path.startswith(prefix) else path
            operation = document.get("paths", {}).get(key, {}).get(method.lower())
            if operation is not None:
                return operation, document
    return None


def operation_schema(
    operation: dict[str, t.Any], document: dict[str, t.Any], path_item: dict[str, t.Any]
) -> tuple[dict[str, t.Any], dict[str, str]]:
    """Return the input schema of an OpenAPI operation and where each argument goes.

    :returns: the schema, and a map from argument name to ``path``, ``query``
        or ``body``.
    """
    resolve = _Resolver(document)
    properties: dict[str, t.Any] = {}
    required: list[str] = []
    places: dict[str, str] = {}
    parameters = [*path_item.get("parameters", []), *operation.get("parameters", [])]
    for raw in parameters:
        parameter = resolve(raw, reading=False)
        place, name = parameter.get("in"), parameter.get("name")
        if place not in ("path", "query") or not isinstance(name, str):
            continue
        argument = dict(parameter.get("schema") or {})
        if parameter.get("description") and "description" not in argument:
            argument["description"] = parameter["description"]
        properties[name], places[name] = argument, place
        if parameter.get("required") or place == "path":
            required.append(name)
    body = operation.get("requestBody")
    if isinstance(body, dict):
        body = resolve(body, reading=False)
        media = body.get("content", {})
        chosen = next((m for m in media if m == "application/json" or m.endswith("+json")), None)
        if chosen is not None:
            properties["body"] = media[chosen].get("schema") or {}
            places["body"] = "body"
            if body.get("required"):
                required.append("body")
    schema: dict[str, t.Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    return schema, places


# -- plain views -------------------------------------------------------------------------


def converter_schema(converter: t.Any) -> dict[str, t.Any]:
    """Return the JSON Schema of a URL variable from its Werkzeug converter."""
    kind = type(converter).__name__
    if kind == "IntegerConverter":
        schema: dict[str, t.Any] = {"type": "integer"}
        if not getattr(converter, "signed", False):
            schema["minimum"] = 0
        return schema
    if kind == "FloatConverter":
        return {"type": "number"}
    if kind == "UUIDConverter":
        return {"type": "string", "format": "uuid"}
    if kind == "AnyConverter":
        items = re.findall(r"[^|()?:]+", getattr(converter, "regex", ""))
        return {"type": "string", "enum": items} if items else {"type": "string"}
    if kind == "PathConverter":
        return {"type": "string", "minLength": 1}
    return {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}


def fills_in(rule: Rule, main: Rule) -> bool:
    """Tell whether ``rule`` serves the view of ``main`` with some of its URL variables given.

    Flask's idiom ``@app.get("/pets/", defaults={"page": 1})`` over
    ``@app.get("/pets/page/<int:page>")``: the first rule has no variable the second lacks,
    and its ``defaults`` give the ones it leaves out. Two plain aliases of one view fill in
    each other.
    """
    if rule is main or rule.endpoint != main.endpoint:
        return False
    own, full = set(rule._converters), set(main._converters)
    return own <= full and full - own <= set(rule.defaults or {})


def merge_defaulted_rules(pairs: t.Sequence[tuple[Rule, str]]) -> list[tuple[Rule, str]]:
    """Return ``pairs`` without the rules that only fill in URL variables of another one.

    Such a view is one tool, made from the rule with the variables (the first of
    plain aliases); the others' defaults make those variables optional
    (:func:`plain_schema`), and a call builds the URL of whichever rule suits its values.
    """
    kept: list[tuple[Rule, str]] = []
    for index, (rule, method) in enumerate(pairs):
        covered = any(
            other_method == method
            and fills_in(rule, other)
            and (not fills_in(other, rule) or other_index < index)
            for other_index, (other, other_method) in enumerate(pairs)
        )
        if not covered:
            kept.append((rule, method))
    return kept


def sibling_defaults(rule: Rule, method: str) -> dict[str, t.Any]:
    """Return the URL variables of ``rule`` that another rule of its view gives as defaults."""
    found: dict[str, t.Any] = {}
    if rule.map is None or rule.endpoint is None:
        return found
    for other in rule.map.iter_rules(rule.endpoint):
        if method in (other.methods or ()) and fills_in(other, rule):
            for name, value in (other.defaults or {}).items():
                if name in rule._converters:
                    found.setdefault(name, value)
    return found


def plain_schema(rule: Rule, method: str) -> tuple[dict[str, t.Any], dict[str, str]]:
    """Return the input schema of a view with no OpenAPI description.

    Its URL variables are required, unless another rule of the view gives them as
    defaults (:func:`sibling_defaults`); then they are optional, with that ``default``.
    """
    properties: dict[str, t.Any] = {}
    places: dict[str, str] = {}
    defaults = sibling_defaults(rule, method)
    for name, converter in rule._converters.items():
        properties[name], places[name] = converter_schema(converter), "path"
        if name in defaults:
            properties[name]["default"] = defaults[name]
    properties["query"] = {
        "type": "object",
        "description": "Query string parameters.",
        "additionalProperties": {"type": ["string", "number", "integer", "boolean"]},
    }
    places["query"] = "query*"
    if method in BODY_METHODS:
        properties["body"] = {"description": "The JSON request body."}
        places["body"] = "body"
    schema: dict[str, t.Any] = {"type": "object", "properties": properties}
    required = sorted(name for name in rule._converters if name not in defaults)
    if required:
        schema["required"] = required
    return schema, places


def view_handler(app: Flask, endpoint: str, method: str) -> t.Any:
    """Return the function that handles ``method`` (the method's, for a ``MethodView``)."""
    view = app.view_functions.get(endpoint)
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        return getattr(view_class, method.lower(), None) or view_class
    return view


def view_doc(app: Flask, endpoint: str, method: str) -> str | None:
    """Return the docstring of the view (the method's, for a ``MethodView``)."""
    handler = view_handler(app, endpoint, method)
    return inspect.getdoc(handler) if handler is not None else None


# -- the call ----------------------------------------------------------------------------


class ViewTool:
    """How one route and method of an app runs as a tool: builds the request, maps the answer.

    It holds no app: :meth:`run` gets the app serving the call, so one tool
    runs the view of whichever app (from the same factory) the MCP request
    reached.

    :param rule: the URL rule.
    :param method: the HTTP method.
    :param places: where each argument goes (``path``, ``query``, ``query*``, ``body``).
    :param headers: the headers of the MCP request passed on to the view
        (:func:`forwarded_headers`).
    """

    def __init__(
        self,
        rule: Rule,
        method: str,
        places: dict[str, str],
        headers: tuple[str, ...] = IDENTITY_HEADERS,
    ) -> None:
        self.rule = rule
        self.method = method
        self.places = places
        self.headers = headers

    @property
    def endpoint(self) -> str:
        """The endpoint of the route."""
        return self.rule.endpoint or ""

    def __call__(self, app: Flask, arguments: dict[str, t.Any]) -> ToolResult:
        """Run the view of ``app`` with the tool's arguments and return the tool result."""
        path_values: dict[str, t.Any] = {}
        query: dict[str, t.Any] = {}
        body: t.Any = None
        for name, value in arguments.items():
            place = self.places.get(name)
            if place == "path":
                path_values[name] = value
            elif place == "query":
                query[name] = value
            elif place == "query*" and isinstance(value, dict):
                query.update(value)
            elif place == "body":
                body = value
        return self.run(app, path_values, query, body)

    def _base(self) -> tuple[str, dict[str, str], dict[str, t.Any]]:
        if not has_request_context():  # stdio, a task: no caller headers to pass on
            return "http://localhost/", {}, {}
        headers = {k: request.headers[k] for k in self.headers if k in request.headers}
        extra = {k: request.environ[k] for k in ("REMOTE_ADDR",) if k in request.environ}
        # The root URL, with the prefix the app is mounted under (SCRIPT_NAME): the view's
        # url_for() and redirects point below it, as in a request of its own.
        return request.url_root, headers, extra

    def run(
        self, app: Flask, path_values: dict[str, t.Any], query: dict[str, t.Any], body: t.Any
    ) -> ToolResult:
        """Run the view of ``app`` with a request built from the values; return the tool result."""
        adapter = app.url_map.bind("localhost")
        path = adapter.build(self.endpoint, path_values, method=self.method, append_unknown=False)
        base_url, headers, extra = self._base()
        headers.setdefault("Accept", "application/json, */*;q=0.5")
        options: dict[str, t.Any] = {}
        if body is not None:
            options["json"] = body
        builder = EnvironBuilder(
            path=path,
            base_url=base_url,
            method=self.method,
            query_string={k: _query_value(v) for k, v in query.items()},
            headers=list(headers.items()),
            environ_overrides=extra,
            **options,
        )
        try:
            environ = builder.get_environ()
        finally:
            builder.close()
        # A fresh app context: the view gets its own g, as in a request of its own.
        with app.app_context():
            app_iter, status, response_headers = run_wsgi_app(app.wsgi_app, environ, buffered=True)
            try:
                data = b"".join(app_iter)
            finally:
                close = getattr(app_iter, "close", None)
                if close is not None:
                    close()
        script_root = urlsplit(base_url).path.rstrip("/")
        return map_response(status, response_headers, data, path, app, script_root=script_root)


def _query_value(value: t.Any) -> t.Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return [_query_value(v) for v in value]
    return value if isinstance(value, str) else json.dumps(value)


# -- selecting and describing -------------------------------------------------------------


class ViewToolSpec(t.NamedTuple):
    """Everything needed to register one view as a tool."""

    handler: ViewTool
    name: str
    description: str
    input_schema: dict[str, t.Any]
    annotations: dict[str, t.Any]


def route_matches(rule: Rule, pattern: str) -> bool:
    """Tell whether a route is named by ``pattern``.

    A pattern starting with ``/`` is a URL prefix (``"/admin"`` takes ``/admin``
    and ``/admin/...``, not ``/administrators``). Any other pattern is a glob
    matched against the endpoint (``"pets.list"``, ``"pets.*"``) and against
    each blueprint the endpoint belongs to (``"pets"`` takes every route of the
    ``pets`` blueprint, nested ones included).
    """
    if pattern.startswith("/"):
        prefix = pattern.rstrip("/")
        return rule.rule == pattern or rule.rule == prefix or rule.rule.startswith(prefix + "/")
    endpoint = rule.endpoint or ""
    if fnmatch.fnmatchcase(endpoint, pattern):
        return True
    parts = endpoint.split(".")[:-1]
    return any(fnmatch.fnmatchcase(".".join(parts[: i + 1]), pattern) for i in range(len(parts)))


def own_paths(app: Flask) -> list[str]:
    """Return the paths Flask-MCP serves on ``app``: ``MCP_PATH``, the probes, the metadata."""
    config = app.config
    found = [str(config.get("MCP_PATH") or "/mcp")]
    for key in ("MCP_HEALTH_LIVENESS_PATH", "MCP_HEALTH_READINESS_PATH"):
        if config.get(key):
            found.append(str(config[key]))
    return [*found, *EXCLUDED_PATHS]


def select_routes(
    app: Flask,
    include: t.Iterable[str] | None = None,
    exclude: t.Iterable[str] = (),
    methods: t.Iterable[str] | None = None,
) -> list[tuple[Rule, str]]:
    """Return the (rule, method) pairs of ``app`` that ``include`` and ``exclude`` select.

    Patterns are endpoint globs, blueprint names or URL prefixes
    (:func:`route_matches`). Flask-MCP's own routes (:data:`DEFAULT_EXCLUDE`,
    :func:`own_paths`) and the static route are never selected, even when
    ``include`` names them. A rule that only fills in URL variables of another
    rule of its view is left out (:func:`merge_defaulted_rules`).
    """
    wanted = {m.upper() for m in methods} if methods is not None else None
    taken = list(include) if include is not None else None
    left_out = [*DEFAULT_EXCLUDE, *own_paths(app), *exclude]
    selected: list[tuple[Rule, str]] = []
    for rule in app.url_map.iter_rules():
        if taken is not None and not any(route_matches(rule, p) for p in taken):
            continue
        if any(route_matches(rule, p) for p in left_out):
            continue
        for method in rule_methods(rule):
            if wanted is None or method in wanted:
                selected.append((rule, method))
    return merge_defaulted_rules(selected)


def find_rule(
    app: Flask, target: str | t.Callable[..., t.Any], method: str | None
) -> tuple[Rule, str]:
    """Return the rule and method of an endpoint name or a view function.

    :raises LookupError: nothing matches, or several rules or methods do and
        ``method`` does not choose.
    """
    if isinstance(target, str):
        endpoints = [target]
    else:
        endpoints = [
            name
            for name, view in app.view_functions.items()
            if view is target or getattr(view, "view_class", None) is target
        ]
    rules = [rule for rule in app.url_map.iter_rules() if rule.endpoint in endpoints]
    if not rules:
        raise LookupError(
            f"No route of the app serves {target!r}; pass an endpoint name such as "
            "'pets.Pets' (see app.url_map) or the view function itself."
        )
    pairs = merge_defaulted_rules(
        [
            (rule, m)
            for rule in rules
            for m in rule_methods(rule)
            if method is None or m == method.upper()
        ]
    )
    if len(pairs) != 1:
        choices = ", ".join(f"{m} {rule.rule}" for rule in rules for m in rule_methods(rule))
        raise LookupError(
            f"The view {target!r} is served as {choices}; pass method= (and a single endpoint) "
            "to choose one, or use ViewTools.add_routes() to turn them all into tools."
        )
    return pairs[0]


def describe_view(
    app: Flask,
    rule: Rule,
    method: str,
    documents: t.Sequence[dict[str, t.Any]],
    name: str | None = None,
    description: str | None = None,
    headers: tuple[str, ...] = IDENTITY_HEADERS,
) -> ViewToolSpec:
    """Return the tool made from ``method`` on ``rule``, passing ``headers`` on to the view."""
    endpoint = rule.endpoint or ""
    found = find_operation(documents, rule, method)
    if found is not None:
        operation, document = found
        path_item = document["paths"].get(openapi_path(rule), {})
        schema, places = operation_schema(operation, document, path_item)
        # apispec splits a docstring at its first blank line: join them back the same way
        summary = "\n\n".join(
            part for part in (operation.get("summary"), operation.get("description")) if part
        )
        text = summary or view_doc(app, endpoint, method)
    else:
        from .webargs_schemas import add_declared_arguments

        schema, places = plain_schema(rule, method)
        add_declared_arguments(view_handler(app, endpoint, method), schema, places)
        text = view_doc(app, endpoint, method)
    text = description or text or f"{method} {rule.rule}"
    return ViewToolSpec(
        ViewTool(rule, method, places, headers),
        name or default_name(endpoint, method, rule_methods(rule)),
        text,
        schema,
        annotations_for(method),
    )


__all__ = [
    "DEFAULT_EXCLUDE",
    "EXCLUDED_PATHS",
    "IDENTITY_HEADERS",
    "UNFORWARDABLE_HEADERS",
    "ViewTool",
    "ViewToolSpec",
    "annotations_for",
    "describe_view",
    "find_operation",
    "find_rule",
    "find_specs",
    "forwarded_headers",
    "fills_in",
    "map_response",
    "merge_defaulted_rules",
    "openapi_path",
    "own_paths",
    "operation_schema",
    "plain_schema",
    "route_matches",
    "select_routes",
    "sibling_defaults",
    "spec_dict",
]
