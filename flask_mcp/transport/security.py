"""Checks every request passes before any MCP work: Origin, Host, media types, size."""

from __future__ import annotations

import functools
import typing as t
from urllib.parse import urlsplit

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from ..errors import MCPHTTPError
from ..protocol import is_local_host
from ..protocol.hosts import check_host as check_host
from ..protocol.hosts import check_request_host as check_request_host


def check_origin(origin: str | None, allowed: tuple[str, ...] | None) -> None:
    """Refuse a browser ``Origin`` that is not allowed.

    With no allow-list, requests without an Origin and from localhost origins
    are accepted.

    :raises MCPHTTPError: 403 Forbidden.
    """
    if origin is None:
        return
    if allowed is not None:
        if "*" in allowed or origin in allowed or origin.rstrip("/") in allowed:
            return
    else:
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and is_local_host((parts.hostname or "").lower()):
            return
    raise MCPHTTPError(
        403,
        f"Origin {origin!r} is not allowed. Add it to MCP_ALLOWED_ORIGINS to accept browser "
        "requests from it.",
    )


def check_content_type(mimetype: str) -> None:
    """Require a JSON body.

    :raises MCPHTTPError: 415 Unsupported Media Type.
    """
    if mimetype != "application/json":
        raise MCPHTTPError(
            415,
            f"Unsupported Content-Type {mimetype or '(none)'!r}: POST a JSON-RPC message with "
            "Content-Type: application/json.",
        )


def _accepts(accept: t.Any, mimetype: str) -> bool:
    return any(
        value in (mimetype, "*/*", mimetype.split("/")[0] + "/*") and quality > 0
        for value, quality in accept
    )


@functools.lru_cache(maxsize=256)
def _accepts_json_and_sse(header: str) -> bool:
    accept = parse_accept_header(header, MIMEAccept)
    return _accepts(accept, "application/json") and _accepts(accept, "text/event-stream")


def check_accept_post(header: str | None) -> None:
    """Require an ``Accept`` header that allows both JSON and SSE (wildcards count).

    The verdict is cached per header value: clients send the same one every time.

    :raises MCPHTTPError: 406 Not Acceptable.
    """
    if not _accepts_json_and_sse(header or ""):
        raise MCPHTTPError(
            406,
            "Not Acceptable: the client must accept both application/json and "
            "text/event-stream (send Accept: application/json, text/event-stream).",
        )


def check_accept_sse(accept: t.Any) -> None:
    """Require ``Accept: text/event-stream`` on a GET.

    :raises MCPHTTPError: 406 Not Acceptable.
    """
    if not _accepts(accept, "text/event-stream"):
        raise MCPHTTPError(406, "Not Acceptable: open the stream with Accept: text/event-stream.")


def check_body_size(length: int | None, limit: int) -> None:
    """Refuse a body larger than ``MCP_MAX_BODY_SIZE``.

    :raises MCPHTTPError: 413 Content Too Large.
    """
    if length is not None and length > limit:
        raise MCPHTTPError(
            413,
            f"The body is {length} bytes; the limit is {limit} (MCP_MAX_BODY_SIZE).",
        )


__all__ = [
    "check_accept_post",
    "check_accept_sse",
    "check_body_size",
    "check_content_type",
    "check_host",
    "check_origin",
    "check_request_host",
]
