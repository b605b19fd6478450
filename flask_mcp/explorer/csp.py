"""The Content-Security-Policy headers of the explorer's page and of its MCP Apps sandbox.

Pure functions over plain data, no Flask. The page's own policy lets it load nothing but
its own scripts and styles and talk to nothing but its own origin. The sandbox proxy that
renders an MCP App view gets the policy the Apps specification (SEP-1865, 2026-01-26,
"Content Security Policy Enforcement") tells a host to build from the view's
``_meta.ui.csp``; the view's ``srcdoc`` iframe inherits it from the proxy.
"""

from __future__ import annotations

import typing as t

from ..protocol.apps import CSP_SOURCE

#: The ``_meta.ui.csp`` fields of the Apps specification.
CSP_FIELDS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
#: Most origins one field may list; a longer list is refused, not truncated.
MAX_SOURCES = 50


def page_policy(sandbox_origin: str | None) -> str:
    """Return the policy of the explorer page: its own scripts, styles and endpoint only.

    :param sandbox_origin: the origin of the sandbox proxy when it is not the page's.
    """
    frames = "'self'" + (f" {sandbox_origin}" if sandbox_origin else "")
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "media-src 'self' data:",
            "connect-src 'self'",
            f"frame-src {frames}",
            "form-action 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        )
    )


def view_sources(csp: t.Any) -> dict[str, list[str]]:
    """Check a view's ``_meta.ui.csp`` and return its four lists of origins.

    :raises ValueError: a field is not a list of origins, or an origin is malformed; the
        message names it.
    """
    if csp is None:
        csp = {}
    if not isinstance(csp, dict):
        raise ValueError("_meta.ui.csp must be an object")
    sources: dict[str, list[str]] = {}
    for field in CSP_FIELDS:
        listed = csp.get(field) or []
        if not isinstance(listed, list) or len(listed) > MAX_SOURCES:
            raise ValueError(
                f"_meta.ui.csp.{field} must be a list of at most {MAX_SOURCES} origins"
            )
        for source in listed:
            if not isinstance(source, str) or not CSP_SOURCE.fullmatch(source):
                raise ValueError(
                    f"_meta.ui.csp.{field} holds {source!r}, which is not an origin such as "
                    "'https://api.example.com' or 'https://*.example.com'"
                )
        sources[field] = list(listed)
    return sources


def view_policy(csp: t.Any, *, frame_ancestors: str | None = "'self'") -> str:
    """Return the policy a host builds for a view from its ``_meta.ui.csp``.

    Without a ``csp`` this is the specification's restrictive default widened by
    nothing: no connections, no frames, and only inline and same-origin scripts, styles,
    images and media.

    :param csp: the view's ``_meta.ui.csp`` (``None`` when it declares none).
    :param frame_ancestors: who may embed the sandbox proxy (``None``: not restricted).
    :raises ValueError: see :func:`view_sources`.
    """
    sources = view_sources(csp)
    resources = " ".join(sources["resourceDomains"])
    connect = " ".join(sources["connectDomains"])

    def widened(base: str, extra: str) -> str:
        return f"{base} {extra}" if extra else base

    directives = [
        "default-src 'none'",
        widened("script-src 'self' 'unsafe-inline'", resources),
        widened("style-src 'self' 'unsafe-inline'", resources),
        widened("connect-src 'self'", connect) if connect else "connect-src 'none'",
        widened("img-src 'self' data:", resources),
        widened("font-src 'self'", resources),
        widened("media-src 'self' data:", resources),
        "frame-src " + (" ".join(sources["frameDomains"]) or "'none'"),
        "object-src 'none'",
        "base-uri " + (" ".join(sources["baseUriDomains"]) or "'self'"),
    ]
    if frame_ancestors:
        directives.append(f"frame-ancestors {frame_ancestors}")
    return "; ".join(directives)


__all__ = ["CSP_FIELDS", "page_policy", "view_policy", "view_sources"]
