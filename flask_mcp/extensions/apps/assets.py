"""Jinja helpers that make a Flask template a self-contained MCP Apps view.

A host renders a view from its HTML alone, in a sandboxed iframe on the host's origin, so
``<script src="/static/app.js">`` resolves against the host and loads nothing. These
helpers put the app's static files into the page (``<script>``, ``<style>``, ``data:``
URIs), and :func:`mcp_app_asset_url` writes absolute URLs for assets that stay on a
public origin, whose origins :func:`~flask_mcp.extensions.apps.views.render_view` adds to
the view's ``csp.resourceDomains`` (the host's CSP blocks undeclared origins).

:func:`add_template_helpers` makes them template globals; the Apps extension does it in
``init_app``.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import mimetypes
import re
import typing as t
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask
from flask import url_for
from jinja2 import pass_environment
from markupsafe import Markup
from werkzeug.security import safe_join

from ...protocol.apps import CSP_SOURCE

#: The origins recorded by :func:`mcp_app_asset_url` while a view renders.
_origins: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "flask_mcp_apps_origins", default=None
)
_SCRIPT_END = re.compile(r"<(/script|!--)", re.I)
_STYLE_END = re.compile(r"</style", re.I)
#: The view-side protocol helper shipped with Flask-MCP (``static/mcp-app.js``).
HELPER_SCRIPT = "mcp-app.js"


@contextlib.contextmanager
def collect_origins() -> Iterator[list[str]]:
    """Record the origins :func:`mcp_app_asset_url` emits inside the block, in order."""
    found: list[str] = []
    token = _origins.set(found)
    try:
        yield found
    finally:
        _origins.reset(token)


def helper_source() -> str:
    """Return the source of ``mcp-app.js``, the view-side protocol helper."""
    return (resources.files(__package__) / "static" / HELPER_SCRIPT).read_text("utf-8")


def _app(env: t.Any) -> Flask:
    app = getattr(env, "app", None)
    if not isinstance(app, Flask):
        raise RuntimeError(
            "The MCP Apps template helpers run in a Flask app's templates: register them "
            "with add_template_helpers(app) (the Apps extension does in init_app)."
        )
    return app


def _static_file(app: Flask, filename: str, blueprint: str | None) -> Path:
    if blueprint is None:
        folder, owner = app.static_folder, "the app"
    else:
        found = app.blueprints.get(blueprint)
        if found is None:
            raise LookupError(
                f"No blueprint {blueprint!r} is registered on the app (registered: "
                f"{', '.join(sorted(app.blueprints)) or 'none'}); pass the name it was "
                "registered under."
            )
        folder, owner = found.static_folder, f"blueprint {blueprint!r}"
    if folder is None:
        raise LookupError(
            f"{owner} has no static folder; give it one (static_folder=...) to inline "
            f"{filename!r} from it."
        )
    path = safe_join(folder, filename)
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(
            f"{filename!r} is not a file in the static folder of {owner} ({folder}); pass a "
            "path relative to that folder, as you would to url_for('static', filename=...)."
        )
    return Path(path)


@pass_environment
def mcp_app_script(
    env: t.Any, filename: str | None = None, *, blueprint: str | None = None
) -> Markup:
    """Return a ``<script>`` element holding a static JavaScript file.

    Without ``filename``: Flask-MCP's ``mcp-app.js``, which defines ``McpApp`` (see
    :doc:`/apps`). ``</script`` and ``<!--`` in the file are escaped so that they cannot
    end the element early.

    :param filename: a path in the app's static folder (or ``blueprint``'s).
    :param blueprint: the name of a blueprint whose static folder holds the file.
    """
    if filename is None:
        source = helper_source()
    else:
        source = _static_file(_app(env), filename, blueprint).read_text("utf-8")
    return Markup("<script>\n{}\n</script>").format(Markup(_SCRIPT_END.sub(r"<\\\1", source)))


@pass_environment
def mcp_app_style(env: t.Any, filename: str, *, blueprint: str | None = None) -> Markup:
    """Return a ``<style>`` element holding a static CSS file.

    :param filename: a path in the app's static folder (or ``blueprint``'s).
    :param blueprint: the name of a blueprint whose static folder holds the file.
    """
    source = _static_file(_app(env), filename, blueprint).read_text("utf-8")
    return Markup("<style>\n{}\n</style>").format(Markup(_STYLE_END.sub(r"<\\/style", source)))


@pass_environment
def mcp_app_data_uri(
    env: t.Any, filename: str, *, blueprint: str | None = None, mime_type: str | None = None
) -> str:
    """Return a static file (an image, a font) as a ``data:`` URI.

    The host's default CSP allows ``data:`` images and media; fonts from ``data:`` need
    nothing either, since they come from the document itself.

    :param filename: a path in the app's static folder (or ``blueprint``'s).
    :param mime_type: the media type, when the file name's extension does not tell.
    :raises ValueError: the media type cannot be told from the name.
    """
    path = _static_file(_app(env), filename, blueprint)
    kind = mime_type or mimetypes.guess_type(path.name)[0]
    if kind is None:
        raise ValueError(
            f"Cannot tell the media type of {filename!r} from its name; pass it: "
            f"mcp_app_data_uri({filename!r}, mime_type='image/webp')."
        )
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def mcp_app_asset_url(target: str, **values: t.Any) -> str:
    """Return an absolute URL for an asset loaded from a public origin, and declare it.

    ``target`` is a URL (``"https://cdn.example.com/chart.js"``) or an endpoint for
    :func:`flask.url_for` (``"static"`` with ``filename=...``), built with
    ``_external=True``: the server's public origin must be the one the request came in on
    (or ``SERVER_NAME`` / ``PREFERRED_URL_SCHEME``; behind a proxy use Werkzeug's
    ``ProxyFix``). While a view renders, the URL's origin is added to its
    ``csp.resourceDomains``, so the host lets the view load it.

    :raises ValueError: the URL is not absolute http(s), or its origin cannot be put in a
        Content-Security-Policy (an IPv6 literal, a host that is not ASCII).
    """
    url = target if "://" in target else url_for(target, _external=True, **values)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"mcp_app_asset_url needs an absolute http(s) URL or an endpoint, got {url!r}."
        )
    # the origin without user info: a CSP source has none
    host = parts.netloc.rpartition("@")[2]
    origin = f"{parts.scheme}://{host}"
    if not CSP_SOURCE.fullmatch(origin):
        raise ValueError(
            f"The origin of {url!r} cannot be declared in the view's "
            "Content-Security-Policy, so a host would block the asset: serve it under a "
            "host name in ASCII letters, digits, '.' and '-' (punycode for other names; "
            "not an IPv6 literal), or inline it with mcp_app_script, mcp_app_style or "
            "mcp_app_data_uri."
        )
    found = _origins.get()
    if found is not None and origin not in found:
        found.append(origin)
    return url


#: The template globals :func:`add_template_helpers` registers, by name.
TEMPLATE_HELPERS: dict[str, t.Callable[..., t.Any]] = {
    "mcp_app_script": mcp_app_script,
    "mcp_app_style": mcp_app_style,
    "mcp_app_data_uri": mcp_app_data_uri,
    "mcp_app_asset_url": mcp_app_asset_url,
}


def add_template_helpers(app: Flask) -> None:
    """Make the helpers template globals of ``app`` (names in :data:`TEMPLATE_HELPERS`)."""
    for name, helper in TEMPLATE_HELPERS.items():
        app.add_template_global(helper, name)
