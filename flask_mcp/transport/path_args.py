"""The values of URL variables in ``MCP_PATH`` (``/t/<tenant>/mcp``), as the request matched them.

Flask puts them in ``request.view_args``; the transport copies them onto each
:class:`~flask_mcp.server.call.Call` (``call.path_args``, read by handlers as
``ctx.path_args``), onto the session a handshake-era ``initialize`` creates (a session
belongs to its path: its id under another path is an unknown session) and into a
task's record. Without variables in ``MCP_PATH`` they are ``{}``.

A message that came without HTTP (stdio, the command line) matched no URL: its
endpoint is chosen by path (``flask mcp --path /t/acme/mcp``), matched here against
the app's URL map (:func:`match_endpoint`) as a request's URL is.
"""

from __future__ import annotations

import dataclasses
import typing as t

from flask import request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter
from werkzeug.routing import Map
from werkzeug.routing import Rule

from .. import url_rules
from ..convert import to_json

if t.TYPE_CHECKING:
    from flask import Flask
    from flask import Request

#: A value each converter accepts, for an example path; others get the variable's name.
_EXAMPLES = {"int": "1", "float": "1.5", "uuid": "00000000-0000-0000-0000-000000000000"}


def current_path_args(req: Request | None = None) -> dict[str, t.Any]:
    """Return the URL variables the current request matched (``{}`` outside a request).

    :param req: the request, when the caller holds it: an attribute of Flask's
        ``request`` proxy costs a context lookup (0.6 us), the object's own attribute
        nothing.
    """
    if req is None:
        try:
            req = t.cast("Request", request._get_current_object())  # type: ignore[attr-defined]
        except RuntimeError:  # outside a request: one lookup instead of has_request_context's
            return {}
    view_args = req.view_args
    return dict(view_args) if view_args else {}


def stored_path_args(found: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
    """Return them as a session record keeps them: JSON values (a ``uuid`` variable's
    value as its string), so that a record read back from Redis compares equal.

    :param found: what :func:`current_path_args` returned, when the caller has it.
    """
    if found is None:
        found = current_path_args()
    return t.cast("dict[str, t.Any]", to_json(found)) if found else found


class EndpointError(ValueError):
    """A path that names no MCP endpoint, or none given where ``MCP_PATH`` has variables.

    :param example: a path the endpoint's rule matches, to show in the message.
    """

    def __init__(self, message: str, example: str) -> None:
        super().__init__(message)
        self.example = example


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """The MCP endpoint a message that came without HTTP is addressed to.

    :param path: the request path of its request context (``request.path``).
    :param path_args: the values of ``MCP_PATH``'s URL variables the path matched:
        ``call.path_args`` and ``request.view_args``, as over HTTP.
    """

    path: str
    path_args: dict[str, t.Any]


def example_path(rule: str) -> str:
    """Return a path ``rule`` matches: each URL variable is its name in capitals, or a
    value its converter accepts (``/t/<tenant>/mcp`` gives ``/t/TENANT/mcp``)."""
    return url_rules.substitute(
        rule, lambda converter, name: _EXAMPLES.get(converter or "", name.upper())
    )


def rule_values(
    rule: str, path: str, converters: t.Mapping[str, type[BaseConverter]] | None = None
) -> dict[str, t.Any] | None:
    """Return the values of ``rule``'s URL variables when it matches ``path``, else ``None``.

    ``rule`` is matched alone, as the app's URL map matches the endpoint's rule
    (``/t/<tenant>/mcp`` matches ``/t/acme/mcp``: ``{"tenant": "acme"}``), before it is
    registered.

    :param converters: the app's URL converters (``app.url_map.converters``), for a
        converter of the app's own in ``rule``.
    """
    urls = Map([Rule(rule, endpoint="mcp", strict_slashes=False)], converters=converters)
    try:
        return dict(urls.bind("localhost").match(path, method="POST")[1])
    except HTTPException:  # not found, or a redirect to another path
        return None


def match_endpoint(app: Flask, rule: str, path: str | None = None) -> Endpoint:
    """Return the endpoint at ``path``, matched against the app's URL map as a request is.

    :param rule: ``MCP_PATH``, the rule the endpoint is served at.
    :param path: the endpoint's path; ``None`` when ``rule`` has no URL variables:
        then it is ``rule`` itself.
    :raises EndpointError: ``path`` is ``None`` while ``rule`` has URL variables, or
        the app does not route a POST to ``path`` to the MCP endpoint.
    """
    example = example_path(rule)
    if path is None:
        names = url_rules.variables(rule)
        if names:
            raise EndpointError(
                f"MCP_PATH {rule!r} has URL variables ({', '.join(names)}): name the endpoint "
                f"by its path, such as {example!r}.",
                example,
            )
        return Endpoint(rule, {})
    wrong = f"{path!r} is not a path of the MCP endpoint: give one MCP_PATH {rule!r} matches"
    if not path.startswith("/") or "?" in path or "#" in path:
        raise EndpointError(f"{wrong}, such as {example!r}.", example)
    context = app.test_request_context(path, method="POST")
    try:
        adapter = app.create_url_adapter(context.request)
        assert adapter is not None  # a request always gets one
        matched, values = adapter.match(return_rule=True)
    except HTTPException:  # not found, another method only, a redirect
        raise EndpointError(f"{wrong}, such as {example!r}.", example) from None
    if matched.rule != rule:
        raise EndpointError(
            f"{wrong}, such as {example!r}; it is the app's rule {matched.rule!r}.", example
        )
    return Endpoint(path, dict(values))


__all__ = [
    "Endpoint",
    "EndpointError",
    "current_path_args",
    "example_path",
    "match_endpoint",
    "rule_values",
    "stored_path_args",
]
