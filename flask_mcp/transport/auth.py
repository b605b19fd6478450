"""Authorization at the HTTP edge: the request's bearer token, ``current_auth()``, metadata.

The only auth code that reads Flask's request: it checks the token of a request
to the MCP endpoint (or, through :func:`current_auth`, of any view of the app)
and serves the RFC 9728 metadata document. The checks themselves are the
:class:`~flask_mcp.auth.Authenticator`'s, which takes plain values.
"""

from __future__ import annotations

import json
import typing as t

from flask import Blueprint
from flask import Response
from flask import current_app
from flask import g
from flask import has_app_context
from flask import has_request_context
from flask import request

from ..auth.metadata import metadata_paths
from ..errors import MCPHTTPError
from ..protocol.hosts import check_request_host
from ..server.call import running_handler

if t.TYPE_CHECKING:
    from flask import Flask

    from ..auth import Authenticator
    from ..auth import AuthInfo
    from ..runtime.state import AppState

#: Where the caller of the current request is kept in ``g``.
_G_KEY = "_mcp_auth"


def authenticate(state: AppState) -> AuthInfo | None:
    """Return the caller of the current request, or ``None`` when authorization is off.

    The answer is kept in ``g`` for :func:`current_auth` in the app's own hooks.

    :raises ~flask_mcp.auth.AuthChallenge: 401 or 403 when the token is refused.
    """
    authenticator = state.authenticator
    if authenticator is None:
        return None
    info = authenticator.authenticate(request)
    setattr(g, _G_KEY, info)
    return info


def current_authenticator() -> Authenticator | None:
    """Return the authenticator of the current app, or ``None`` when authorization is off."""
    if not has_app_context():
        return None
    mcp = current_app.extensions.get("mcp")
    if mcp is None:
        return None
    try:
        return t.cast("Authenticator | None", mcp.state().authenticator)
    except RuntimeError:
        return None


def current_auth() -> AuthInfo | None:
    """Return who is calling, in MCP handlers and in any view of the app.

    In a handler it is the caller of its call. In a view outside the MCP
    endpoint the request's bearer token is checked on first use; a missing or
    invalid token gives ``None``.
    """
    call = running_handler.get(None)
    if call is not None:
        return call.auth
    if not has_app_context():
        return None
    if _G_KEY in g:
        return t.cast("AuthInfo | None", g.get(_G_KEY))
    info = None
    authenticator = current_authenticator()
    if has_request_context() and authenticator is not None:
        try:
            info = authenticator.verify(request)
        except MCPHTTPError:
            info = None
    setattr(g, _G_KEY, info)
    return info


def require_scopes(*scopes: str) -> None:
    """Refuse the current call unless the caller holds ``scopes``: a step-up decided at run time.

    Call it in a tool, resource or prompt handler, for example when the
    arguments ask for more than the declared ``scopes=``. Before anything is
    streamed the client gets HTTP 403 with an ``insufficient_scope``
    challenge; afterwards, a JSON-RPC error. Does nothing when authorization
    is off.

    :raises ~flask_mcp.auth.AuthRefused: the caller lacks a scope.
    """
    call = running_handler.get(None)
    if call is not None:
        authenticator = call.state.authenticator
        if authenticator is not None:
            needed = tuple(dict.fromkeys([*call.scopes, *scopes]))  # one challenge for the call
            authenticator.require(
                call.auth, needed, call.method, call.request_id, path_args=call.path_args
            )
        return
    authenticator = current_authenticator()
    if authenticator is not None:
        path_args = request.view_args if has_request_context() else None
        authenticator.require(
            current_auth(), tuple(dict.fromkeys(scopes)), "this call", path_args=path_args
        )


def register_metadata_routes(app: Flask, authenticator: Authenticator, mcp_path: str) -> None:
    """Serve the metadata document on ``app`` at its well-known paths.

    Public, readable cross-origin, never cached; under a ``Host`` the MCP endpoint
    refuses (``MCP_ALLOWED_HOSTS``), 421 as on every route beside it.
    """
    blueprint = Blueprint("mcp_auth", __name__)
    allowed_hosts = authenticator.settings.allowed_hosts

    def metadata_view(**path_args: t.Any) -> Response:  # URL variables of MCP_PATH
        check_request_host(request.environ, allowed_hosts)
        headers = {"Cache-Control": "no-store", "Access-Control-Allow-Origin": "*"}
        if request.method == "OPTIONS":
            headers["Access-Control-Allow-Methods"] = "GET, OPTIONS"
            headers["Access-Control-Allow-Headers"] = "*"
            preflight = Response(status=204, headers=headers)
            del preflight.headers["Content-Type"]  # no content, so no type (RFC 9110)
            return preflight
        document = authenticator.metadata(path_args)
        return Response(json.dumps(document), mimetype="application/json", headers=headers)

    for index, path in enumerate(metadata_paths(authenticator.resource, mcp_path)):
        blueprint.add_url_rule(
            path,
            f"metadata_{index}",
            metadata_view,
            methods=["GET", "OPTIONS"],
            provide_automatic_options=False,
        )
    app.register_blueprint(blueprint)


__all__ = [
    "authenticate",
    "current_auth",
    "current_authenticator",
    "register_metadata_routes",
    "require_scopes",
]
