"""The fast path of the 2026-07-28 header checks: headers that repeat the body as is."""

from __future__ import annotations

import re
import typing as t

from .headers import SENTINEL_PREFIX
from .headers import SENTINEL_SUFFIX

#: Visible ASCII with no space at either end: a header value equal to such a body value
#: decodes to it.
_BARE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
#: Values known to be plain (bare and not Base64-wrapped): a set lookup instead of a
#: regular expression per header, as the same few versions, methods and names recur.
_PLAIN: set[str] = set()
#: How many values :data:`_PLAIN` remembers: names come from clients, so it is bounded.
_PLAIN_LIMIT = 1024


def _plain(value: str) -> bool:
    """Tell whether ``value`` is bare visible ASCII and no Base64 sentinel; remember it."""
    if _BARE.fullmatch(value) is None or (
        value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)
    ):
        return False
    if len(_PLAIN) < _PLAIN_LIMIT:
        _PLAIN.add(value)
    return True


def mirrors_body(
    environ: t.Mapping[str, t.Any], method: str, version: str, name: str | None
) -> bool:
    """Tell whether a WSGI environ's MCP headers repeat the body exactly: the common case.

    ``True`` only when ``MCP-Protocol-Version`` equals ``version``,
    ``Mcp-Method`` equals ``method`` and, when ``name`` is given, ``Mcp-Name``
    equals it, each value being plain visible ASCII with no surrounding space
    and no Base64 sentinel: then :func:`~.headers.validate_protocol_version_header` and
    :func:`~.headers.validate_routing_headers` (for a tool without ``Mcp-Param-*``
    headers) would pass, and need not run. ``False`` says nothing: run them,
    they name what is wrong.
    """
    plain = _PLAIN
    if (
        environ.get("HTTP_MCP_PROTOCOL_VERSION") != version
        or environ.get("HTTP_MCP_METHOD") != method
        or (version not in plain and not _plain(version))
        or (method not in plain and not _plain(method))
    ):
        return False
    if name is None:
        return True
    return environ.get("HTTP_MCP_NAME") == name and (name in plain or _plain(name))


__all__ = ["mirrors_body"]
