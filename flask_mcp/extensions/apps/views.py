"""MCP Apps views: ``ui://`` resources served as ``text/html;profile=mcp-app``.

A view is an HTML5 document that a host renders in a sandboxed iframe when a tool bound
to it (``_meta.ui.resourceUri``) is called. This module checks what a view declares
(its URI, CSP domains, permissions) and turns the rendered HTML into the
``resources/read`` content item with ``_meta.ui``; the spec is SEP-1865
(``io.modelcontextprotocol/ui``, stable 2026-01-26).
"""

from __future__ import annotations

import dataclasses
import re
import typing as t
from collections.abc import Mapping

from flask import render_template

from ...protocol.apps import APP_MIME_TYPE
from ...protocol.apps import CSP_SOURCE
from . import assets

#: Who may call a tool (``_meta.ui.visibility``): the model, the view, or both (the default).
VISIBILITIES = ("model", "app")
#: ``_meta.ui.csp`` keys: the CSP directive each maps to is in the spec's host section.
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
#: ``_meta.ui.permissions`` keys (Permission Policy features of the view's iframe).
PERMISSION_KEYS = ("camera", "microphone", "geolocation", "clipboardWrite")

_DOCTYPE = re.compile(r"\A(?:\ufeff)?\s*(?:<!--.*?-->\s*)*<!doctype\s+html\s*>", re.I | re.S)
_HTML_TAG = re.compile(r"<html[\s>]", re.I)


class ViewOptions(t.TypedDict, total=False):
    """The keywords that declare a view, as :meth:`~flask_mcp.extensions.apps.Apps.ui` takes them.

    :meth:`flask_mcp.MCP.ui`, :meth:`flask_mcp.MCP.ui_template` and
    :meth:`~flask_mcp.extensions.apps.Apps.ui_template` accept them as
    ``**options: Unpack[ViewOptions]``, so a type checker checks each keyword.
    """

    name: str | None
    title: str | None
    description: str | None
    csp: Mapping[str, t.Sequence[str]] | None
    permissions: Mapping[str, t.Any] | None
    domain: str | None
    prefers_border: bool | None
    listed: bool
    icons: list[dict[str, t.Any]] | None
    scopes: t.Sequence[str]


def check_ui_uri(uri: t.Any, what: str = "A view") -> str:
    """Return ``uri`` if it is a ``ui://`` URI without template variables.

    :raises ValueError: the message says how to write it.
    """
    if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) <= len("ui://"):
        raise ValueError(
            f"{what} needs a ui:// URI such as 'ui://weather/card' (MCP Apps hosts only "
            f"render ui:// resources), got {uri!r}."
        )
    if "{" in uri or "}" in uri:
        raise ValueError(
            f"{what} URI {uri!r} has template variables; a view is one fixed document that "
            "tools name in _meta.ui.resourceUri. Pass the data through the tool's result "
            "instead, and give the view a fixed URI."
        )
    return uri


def _origins(key: str, values: t.Any) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(
            f"csp[{key!r}] must be a list of origins such as ['https://api.example.com'], "
            f"got {values!r}."
        )
    for value in values:
        if not isinstance(value, str) or not CSP_SOURCE.fullmatch(value):
            raise ValueError(
                f"csp[{key!r}] holds {value!r}, which is not an origin a host can put in a "
                "Content-Security-Policy: write scheme://host[:port] over http(s) or ws(s), "
                "e.g. 'https://cdn.example.com' or 'https://*.example.com', the host in ASCII "
                "letters, digits, '.' and '-' (punycode for other names; no empty label "
                "such as '..', no spaces, quotes, ';', ',', user info or IPv6 literal)."
            )
    return list(dict.fromkeys(values))


def check_csp(csp: t.Any) -> dict[str, list[str]]:
    """Return ``csp`` (``_meta.ui.csp``) checked, its lists without duplicates.

    :raises TypeError: not a dict of lists.
    :raises ValueError: an unknown key, or an entry that is not an origin.
    """
    if not isinstance(csp, Mapping):
        raise TypeError(
            f"csp must be a dict such as {{'connectDomains': ['https://api.example.com']}}, "
            f"got {csp!r}."
        )
    unknown = [key for key in csp if key not in CSP_KEYS]
    if unknown:
        raise ValueError(
            f"csp has unknown key(s) {', '.join(map(repr, unknown))}; MCP Apps defines "
            f"{', '.join(CSP_KEYS)} (camelCase, as on the wire)."
        )
    return {key: _origins(key, values) for key, values in csp.items()}


def check_permissions(permissions: t.Any) -> dict[str, dict[str, t.Any]]:
    """Return ``permissions`` (``_meta.ui.permissions``) checked; ``True`` becomes ``{}``.

    :raises TypeError: not a dict, or a value that is not ``{}`` or ``True``.
    :raises ValueError: an unknown permission.
    """
    if not isinstance(permissions, Mapping):
        raise TypeError(
            f"permissions must be a dict such as {{'clipboardWrite': {{}}}}, got {permissions!r}."
        )
    checked: dict[str, dict[str, t.Any]] = {}
    for key, value in permissions.items():
        if key not in PERMISSION_KEYS:
            raise ValueError(
                f"permissions has the unknown key {key!r}; MCP Apps defines "
                f"{', '.join(PERMISSION_KEYS)}."
            )
        if value is True:
            value = {}
        if not isinstance(value, dict):
            raise TypeError(
                f"permissions[{key!r}] must be {{}} (or True) to request it, got {value!r}; "
                "leave the key out to not request it."
            )
        checked[key] = value
    return checked


def ui_meta(
    *,
    csp: t.Mapping[str, t.Sequence[str]] | None = None,
    permissions: t.Mapping[str, t.Any] | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
) -> dict[str, t.Any]:
    """Return a view's ``_meta.ui`` object, checked; arguments left ``None`` are left out.

    :param csp: origins by kind: ``connectDomains`` (fetch, XHR, WebSocket),
        ``resourceDomains`` (scripts, styles, images, fonts, media), ``frameDomains``
        (nested iframes), ``baseUriDomains`` (``<base href>``).
    :param permissions: browser features the view asks for: ``camera``, ``microphone``,
        ``geolocation``, ``clipboardWrite`` (each ``{}``); hosts may refuse them.
    :param domain: a dedicated sandbox origin, in the host's own format.
    :param prefers_border: ask the host for a border and background (``True``) or none.
    :raises TypeError, ValueError: the message says how to fix the value.
    """
    meta: dict[str, t.Any] = {}
    if csp is not None:
        meta["csp"] = check_csp(csp)
    if permissions is not None:
        meta["permissions"] = check_permissions(permissions)
    if domain is not None:
        if not isinstance(domain, str) or not domain or any(c.isspace() for c in domain):
            raise ValueError(
                f"domain must be the host-specific sandbox domain as a string, e.g. "
                f"'a904794854a047f6.claudemcpcontent.com', got {domain!r}."
            )
        meta["domain"] = domain
    if prefers_border is not None:
        if not isinstance(prefers_border, bool):
            raise TypeError(f"prefers_border must be True or False, got {prefers_border!r}.")
        meta["prefersBorder"] = prefers_border
    return meta


def check_html(uri: str, html: t.Any) -> str:
    """Return ``html`` if it is an HTML5 document (a doctype, then an ``<html>`` element).

    :raises TypeError: not a string.
    :raises ValueError: the message says what to add.
    """
    if not isinstance(html, str):
        raise TypeError(
            f"The view {uri!r} must render to an HTML string (e.g. return "
            f"render_template('view.html')), got {type(html).__name__}."
        )
    if not _DOCTYPE.match(html) or not _HTML_TAG.search(html):
        start = html.lstrip()[:40]
        raise ValueError(
            f"The view {uri!r} must be an HTML5 document: start it with <!DOCTYPE html> and "
            f"put the page in <html>...</html> (hosts load it as a whole page in an iframe). "
            f"It starts with {start!r}."
        )
    return html


def with_resource_domains(meta: dict[str, t.Any], origins: t.Sequence[str]) -> dict[str, t.Any]:
    """Return ``meta`` with ``origins`` added to ``csp.resourceDomains`` (a new dict)."""
    if not origins:
        return meta
    csp = dict(meta.get("csp") or {})
    csp["resourceDomains"] = list(dict.fromkeys([*csp.get("resourceDomains", ()), *origins]))
    return {**meta, "csp": csp}


def render_view(
    uri: str,
    source: str | t.Callable[[], str],
    ui: dict[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Render a view and return its ``resources/read`` content item.

    Use it in a resource handler; :meth:`Apps.ui` and :meth:`Apps.ui_template` do. The
    item has the view's media type and ``_meta.ui``: ``ui`` (from :func:`ui_meta`) with
    the origins of :func:`~flask_mcp.extensions.apps.mcp_app_asset_url` calls made
    while rendering added to ``csp.resourceDomains``.

    :param uri: the view's ``ui://`` URI.
    :param source: a template name, rendered with :func:`flask.render_template`, or a
        function returning the HTML.
    :param ui: the view's ``_meta.ui`` (from :func:`ui_meta`).
    :raises TypeError, ValueError: the HTML is not an HTML5 document.
    """
    with assets.collect_origins() as origins:
        html = render_template(source) if isinstance(source, str) else source()
    check_html(uri, html)
    item: dict[str, t.Any] = {"uri": uri, "mimeType": APP_MIME_TYPE, "text": html}
    meta = with_resource_domains(dict(ui or {}), origins)
    if meta:
        item["_meta"] = {"ui": meta}
    return item


@dataclasses.dataclass
class View:
    """A declared view: what :meth:`Apps.ui` and :meth:`Apps.ui_template` record.

    :param uri: the ``ui://`` URI tools name in ``ui=``.
    :param source: a template name or a function returning the HTML.
    :param name: the resource's name in ``resources/list``.
    :param ui: the checked ``_meta.ui`` (see :func:`ui_meta`).
    :param listed: ``False`` leaves the view out of ``resources/list`` (it stays readable).
    """

    uri: str
    source: str | t.Callable[[], str]
    name: str
    ui: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    title: str | None = None
    description: str | None = None
    icons: list[dict[str, t.Any]] | None = None
    scopes: tuple[str, ...] = ()
    listed: bool = True

    # The resource handler registered for ``uri``. No docstring on purpose: the resource's
    # description would default to it when the view has none.
    def read(self) -> dict[str, t.Any]:
        return render_view(self.uri, self.source, self.ui)

    def resource_options(self) -> dict[str, t.Any]:
        """Return the keyword arguments of ``mcp.add_resource(view.read, view.uri, ...)``."""
        options: dict[str, t.Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "mime_type": APP_MIME_TYPE,
            "icons": self.icons,
            "meta": {"ui": self.ui} if self.ui else None,
            "scopes": self.scopes,
        }
        if not self.listed:
            options["listed"] = False
        return options
