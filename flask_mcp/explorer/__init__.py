"""The explorer: a page served by the app to try its tools, resources, prompts and views.

:meth:`flask_mcp.MCP.init_app` calls :func:`register_explorer`, which mounts the page at
``MCP_EXPLORER_PATH`` unless ``MCP_EXPLORER`` is false; unset, it answers only while
``app.debug`` is true, and 404 otherwise. The
page is plain HTML, CSS and JavaScript shipped in this package (``templates/``,
``static/``): no build step, no CDN. In the browser it is an MCP client of the app's own
endpoint, over HTTP, in the protocol era the user picks; it also hosts MCP App views in a
sandboxed iframe (:mod:`flask_mcp.explorer.csp` builds their policy).

Outside debug mode the page must be guarded: ``MCP_EXPLORER_ACCESS`` is a function of the
request that says who may open it. The page holds no secret of its own (it is the app's
endpoint that decides what a caller may do), but it hands whoever opens it a form for every
tool, so the app must say who that is.
"""

from __future__ import annotations

import json
import typing as t
from html import escape

from flask import Blueprint
from flask import Flask
from flask import Response
from flask import abort
from flask import current_app
from flask import render_template
from flask import request
from flask import url_for
from werkzeug.routing import BuildError

from .. import url_rules
from ..transport.security import check_request_host
from .csp import page_policy
from .csp import view_policy

if t.TYPE_CHECKING:
    from ..config import Settings

#: The blueprint's name: ``url_for("mcp_explorer.page")`` links to the page.
BLUEPRINT_NAME = "mcp_explorer"
#: Headers every answer of the explorer carries.
_COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}


def explorer_mode(app: Flask, settings: Settings) -> str | None:
    """Tell how ``app`` serves the explorer, and check that it may.

    ``None``: not at all (``MCP_EXPLORER = False``); ``"debug"``: while ``app.debug`` is
    true, checked on each request, so ``app.run(debug=True)`` after ``init_app`` turns it
    on (``MCP_EXPLORER`` unset); ``"on"``: always (``MCP_EXPLORER = True``), except that
    without ``MCP_EXPLORER_ACCESS`` it answers 404 on each request made outside debug.

    :raises ValueError: ``MCP_EXPLORER`` is on outside debug mode without
        ``MCP_EXPLORER_ACCESS``, or ``MCP_EXPLORER_PATH`` overlaps ``MCP_PATH``; the
        message says how to fix it.
    """
    if settings.explorer is False:
        return None
    path, endpoint = settings.explorer_path, settings.path
    if _overlaps(path, endpoint):
        raise ValueError(
            f"MCP_EXPLORER_PATH={path!r} overlaps MCP_PATH={endpoint!r}: the explorer would "
            "shadow the endpoint or its sub-routes. Choose a path outside it, such as "
            "'/_mcp/explorer' (the default)."
        )
    if settings.explorer is None:
        return "debug"
    if not app.debug and settings.explorer_access is None:
        raise ValueError(
            "MCP_EXPLORER is on outside debug mode, where anyone reaching the app could open "
            "a form for every tool. Set MCP_EXPLORER_ACCESS to a function of the request that "
            "returns True for those who may use it (for example "
            "lambda request: current_user.is_authenticated and current_user.is_admin), or "
            "leave MCP_EXPLORER unset to serve the explorer under app.debug only."
        )
    return "on"


def _overlaps(path: str, endpoint: str) -> bool:
    if path == "/":  # the explorer's page, assets and proxy at the root of the site
        return True
    if endpoint == "/":  # the endpoint is only "/" (its card "/server-card")
        return False
    return path == endpoint or path.startswith(endpoint + "/") or endpoint.startswith(path + "/")


def register_explorer(app: Flask, settings: Settings, mode: str | None) -> None:
    """Mount the explorer on ``app`` in the ``mode`` :func:`explorer_mode` returned (``None``:
    not at all).
    """
    if mode is not None:
        app.register_blueprint(make_blueprint(settings, debug_only=mode == "debug"))


def make_blueprint(settings: Settings, *, debug_only: bool = False) -> Blueprint:
    """Return the blueprint serving the page, its assets and the MCP Apps sandbox proxy.

    :param debug_only: answer 404 while the app is not in debug mode.
    """
    blueprint = Blueprint(
        BLUEPRINT_NAME,
        __name__,
        url_prefix=settings.explorer_path,
        template_folder="templates",
        static_folder="static",
        static_url_path="/static",
    )
    access = settings.explorer_access

    @blueprint.before_request
    def guard() -> None:
        # without an access check the page is for debug mode only, whatever debug was at
        # init_app (explorer_mode checked it then): app.run(debug=False) may turn it off
        if (debug_only or access is None) and not current_app.debug:
            abort(404)
        check_request_host(request.environ, settings.allowed_hosts)
        # The sandbox proxy holds nothing of the app and may be asked for from another
        # origin (MCP_EXPLORER_SANDBOX_ORIGIN) that carries no cookies of the page's.
        if request.endpoint == f"{BLUEPRINT_NAME}.sandbox":
            return
        if access is not None and not access(request):
            abort(
                403,
                "The explorer is refused to this request by MCP_EXPLORER_ACCESS. Sign in as "
                "someone the app's access check accepts.",
            )

    @blueprint.after_request
    def headers(response: Response) -> Response:
        for name, value in _COMMON_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    variables = url_rules.variables(settings.path)

    @blueprint.get("/", strict_slashes=False)
    def page() -> Response:
        # under a prefix (SCRIPT_NAME, DispatcherMiddleware) the endpoint is below it too
        endpoint = request.script_root + settings.path
        if variables:  # one endpoint per tenant: the query string names the one to explore
            values: dict[str, t.Any] = {name: request.args.get(name, "") for name in variables}
            try:
                endpoint = url_for("mcp.endpoint", **values) if all(values.values()) else ""
            except (BuildError, ValueError):
                endpoint = ""
            if not endpoint:
                return _choose_endpoint(settings.path, variables, values)
        config = {
            "endpoint": endpoint,
            "sandbox": _sandbox_url(settings),
            "sandboxSameOrigin": settings.explorer_sandbox_origin is not None,
        }
        if variables:  # what `flask mcp --path` names: the endpoint below any prefix
            config["cliPath"] = endpoint[len(request.script_root) :]
        body = render_template("mcp_explorer/page.html", config=json.dumps(config))
        response = Response(body, mimetype="text/html")
        response.headers["Content-Security-Policy"] = page_policy(settings.explorer_sandbox_origin)
        # the sandbox proxy learns the page's origin from the referrer, also on another origin
        response.headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
        return response

    @blueprint.get("/sandbox")
    def sandbox() -> Response:
        try:
            csp = json.loads(request.args["csp"]) if "csp" in request.args else None
            policy = view_policy(
                csp,
                frame_ancestors=None if settings.explorer_sandbox_origin else "'self'",
            )
        except ValueError as exc:
            return Response(f"Bad view CSP: {exc}", status=400, mimetype="text/plain")
        response = Response(render_template("mcp_explorer/sandbox.html"), mimetype="text/html")
        response.headers["Content-Security-Policy"] = policy
        return response

    return blueprint


def _choose_endpoint(path: str, variables: list[str], values: dict[str, t.Any]) -> Response:
    """Return the form that asks for the values of ``MCP_PATH``'s URL variables (400)."""
    fields = "".join(
        f'<label>{escape(name)} <input name="{escape(name)}" value="{escape(values[name])}" '
        "required></label> "
        for name in variables
    )
    body = (
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>MCP explorer</title>'
        f"<p>The MCP endpoint has URL variables (<code>MCP_PATH = {escape(path)}</code>): "
        "name the endpoint to explore, for example "
        f"<code>?{escape(variables[0])}=acme</code>.</p>"
        f'<form method="get">{fields}<button type="submit">Explore</button></form></html>'
    )
    response = Response(body, status=400, mimetype="text/html")
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    return response


def _sandbox_url(settings: Settings) -> str:
    path = url_for(f"{BLUEPRINT_NAME}.sandbox")
    origin = settings.explorer_sandbox_origin
    return f"{origin}{path}" if origin else path


__all__ = ["BLUEPRINT_NAME", "explorer_mode", "make_blueprint", "register_explorer"]
