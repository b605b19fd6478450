"""Flask-MCP served under ``/api`` of apps that are not Flask: a plain WSGI app and Django.

``plain`` and ``django`` are WSGI apps that gunicorn can serve (``tests._apps.mounted:django``);
the MCP endpoint is ``/api/mcp`` in both.
"""

from __future__ import annotations

import typing as t

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest
from django.http import HttpResponse
from django.urls import path
from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from flask_mcp import MCP
from flask_mcp import Context
from tests._apps import add_tool_adder

if t.TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse
    from _typeshed.wsgi import WSGIApplication
    from _typeshed.wsgi import WSGIEnvironment

mcp = MCP(name="mounted", version="1.0.0")


@mcp.tool()
def count(to: int, ctx: Context) -> int:
    """Count to ``to``, reporting progress at each step."""
    for step in range(1, to + 1):
        ctx.progress(step, to)
    return to


add_tool_adder(mcp)


flask_app = Flask(__name__)
flask_app.config.from_prefixed_env()
mcp.init_app(flask_app)


def unprefixed(app: WSGIApplication) -> WSGIApplication:
    """Hand ``app`` a request with its full path, for URLs fixed at the host's root.

    RFC 9728 puts the OAuth metadata of ``https://host/api/mcp`` at
    ``https://host/.well-known/oauth-protected-resource/api/mcp``: outside ``/api``.
    """

    def wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> t.Iterable[bytes]:
        full = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        return app({**environ, "SCRIPT_NAME": "", "PATH_INFO": full}, start_response)

    return wsgi


def mount(main: WSGIApplication, mcp_app: WSGIApplication) -> DispatcherMiddleware:
    """Serve ``mcp_app`` at ``/api`` (and its auth metadata at the root) of ``main``."""
    return DispatcherMiddleware(
        main,
        {"/api": mcp_app, "/.well-known/oauth-protected-resource": unprefixed(mcp_app)},
    )


# -- a plain WSGI app ----------------------------------------------------------------------


def plain_main(environ: WSGIEnvironment, start_response: StartResponse) -> t.Iterable[bytes]:
    """The app that owns the site: it knows nothing of Flask."""
    body = f"plain WSGI at {environ.get('PATH_INFO', '')}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


plain = mount(plain_main, flask_app)


# -- a Django project ------------------------------------------------------------------------


def hello(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"Django at {request.path}", content_type="text/plain")


urlpatterns = [path("hello/", hello)]

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="only-for-tests",
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["*"],
        INSTALLED_APPS=[],
        MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    )
django = mount(get_wsgi_application(), flask_app)
