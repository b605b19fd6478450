"""What a view's answer becomes as a tool result: :func:`map_response`.

A 2xx answer is the tool's result; any other answer is an ``isError`` result
whose text is one line that tells a model what happened and what to do
(:func:`explain_status`, the wording :func:`flask_mcp.errors.view_status_text`
shares with a handler that answered as a view does): a redirect to the app's
login page is "this tool needs a login", a 403 is "not allowed, do not retry", a
5xx is "an error of the app" with its body kept for the log. HTML becomes its
visible text.
"""

from __future__ import annotations

import json
import logging
import typing as t
from html.parser import HTMLParser
from urllib.parse import urlsplit

from .. import content
from ..content import ToolResult
from ..errors import ERROR_DETAIL_LIMIT
from ..errors import LOGIN_NAMES
from ..errors import looks_like_login
from ..errors import shorten
from ..errors import view_status_text

if t.TYPE_CHECKING:
    from flask import Flask

logger = logging.getLogger("flask_mcp")


class _TextOfHTML(HTMLParser):
    """Collects the text a reader sees in an HTML page (no scripts, styles or tags)."""

    HIDDEN = frozenset({"script", "style", "head", "template", "noscript"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._hidden = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.HIDDEN:
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.HIDDEN and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._hidden:
            self.parts.append(data)


def html_text(markup: str) -> str:
    """Return the visible text of an HTML page, whitespace collapsed (the title if no body text)."""
    parser = _TextOfHTML()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # HTMLParser is lenient; keep whatever it read
        pass
    text = " ".join(" ".join(parser.parts).split())
    return text or " ".join(" ".join(parser.title).split())


def _is_html(mime: str, data: bytes) -> bool:
    if mime in ("text/html", "application/xhtml+xml"):
        return True
    head = data[:256].lstrip().lower()
    return not mime and (head.startswith(b"<!doctype html") or head.startswith(b"<html"))


def _body_detail(mime: str, data: bytes) -> str:
    """Return the body of an error answer as one short line (HTML as its text)."""
    text = data.decode("utf-8", "replace")
    if _is_html(mime, data):
        text = html_text(text)
    return shorten(text)


def login_views(app: Flask | None) -> set[str]:
    """Return the endpoints of the app's login pages (Flask-Login's ``login_view`` and friends)."""
    manager = getattr(app, "login_manager", None)
    if manager is None:
        return set()
    found = {getattr(manager, "login_view", None)}
    found.update((getattr(manager, "blueprint_login_views", None) or {}).values())
    return {endpoint for endpoint in found if isinstance(endpoint, str)}


def _redirect_endpoint(app: Flask | None, location: str, script_root: str = "") -> str | None:
    if app is None:
        return None
    parts = urlsplit(location)
    path = parts.path or "/"
    if script_root:  # the app is mounted under a prefix: its rules are below it
        if path != script_root and not path.startswith(script_root + "/"):
            return None
        path = path[len(script_root) :] or "/"
    try:
        endpoint, _ = app.url_map.bind(parts.netloc or "localhost").match(path)
    except Exception:  # another site, a 404, a method mismatch: no endpoint of this app
        return None
    return str(endpoint)


def explain_status(
    code: int,
    status: str,
    headers: t.Any,
    detail: str,
    app: Flask | None = None,
    *,
    script_root: str = "",
) -> str:
    """Return one line that tells a model what a non-2xx answer of a view means and what to do.

    :param code: the HTTP status code.
    :param status: the status line (``"302 FOUND"``).
    :param headers: the response headers (``Location``, ``Retry-After``).
    :param detail: the body, already cut short (may be empty).
    :param app: the app whose view answered, to recognise its login page.
    :param script_root: the prefix the app is mounted under (``SCRIPT_NAME``), which
        its redirects start with.
    """
    endpoint = None
    if 300 <= code < 400:
        endpoint = _redirect_endpoint(app, str(headers.get("Location") or ""), script_root)
    return view_status_text(
        code, status, headers, detail, endpoint=endpoint, login_endpoints=login_views(app)
    )


def map_response(
    status: str,
    headers: t.Any,
    data: bytes,
    path: str,
    app: Flask | None = None,
    *,
    script_root: str = "",
) -> ToolResult:
    """Turn a view's response into a tool result.

    A 2xx JSON answer gives ``structuredContent`` (a non-object is wrapped as
    ``{"result": ...}``) and the same JSON as text; ``text/*`` gives text (an
    HTML page its visible text); other media types give image, audio or
    embedded-resource blocks.

    Any other answer is an ``isError`` result whose text is one line saying
    what happened and what to do (:func:`explain_status`): a redirect (3xx;
    to the app's login page: "this tool needs a login"), 401, 403, another
    4xx with the body cut short (HTML as its text; a JSON object also as
    ``structuredContent``), and a 5xx without its body, which is logged.

    :param status: the status line (``"200 OK"``).
    :param headers: the response headers.
    :param data: the body.
    :param path: the path the view was called at (for the log and resource URIs).
    :param app: the app whose view answered (recognises its login page).
    :param script_root: the prefix the app is mounted under (``SCRIPT_NAME``).
    """
    code = int(status.split(None, 1)[0])
    mime = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if code >= 300 or code < 200:
        if code >= 500:
            logger.error("The view at %s answered %s: %r", path, status, data[:2000])
            detail = ""
        else:
            detail = _body_detail(mime, data) if data else ""
        text = explain_status(code, status, headers, detail, app, script_root=script_root)
        structured = None
        if 400 <= code < 500 and (mime == "application/json" or mime.endswith("+json")):
            try:
                value = json.loads(data)
            except ValueError:
                value = None
            if isinstance(value, dict):
                structured = value
        return ToolResult(text, structured=structured, is_error=True)
    uri = f"http://localhost{path}"
    if not data:
        return ToolResult(status)
    if mime == "application/json" or mime.endswith("+json"):
        try:
            value = json.loads(data)
        except ValueError:
            return ToolResult(data.decode("utf-8", "replace"))
        structured = value if isinstance(value, dict) else {"result": value}
        return ToolResult(data.decode("utf-8", "replace").strip(), structured=structured)
    if _is_html(mime, data):
        return ToolResult(html_text(data.decode("utf-8", "replace")))
    if mime.startswith("text/") or not mime:
        return ToolResult(data.decode("utf-8", "replace"))
    return ToolResult([content.binary(data, mime, uri)])


__all__ = [
    "ERROR_DETAIL_LIMIT",
    "LOGIN_NAMES",
    "explain_status",
    "html_text",
    "login_views",
    "looks_like_login",
    "map_response",
    "shorten",
]
