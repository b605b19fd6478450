"""The fast path of the 2026-07-28 header checks: headers that repeat the body as is."""

from __future__ import annotations

import re
import typing as t

from .headers import SENTINEL_PREFIX
from .headers import SENTINEL_SUFFIX

#: Visible ASCII with no space at either end: a header value equal to such a body value
#: decodes to it.
_BARE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


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
    if (
        environ.get("HTTP_MCP_PROTOCOL_VERSION") != version
        or environ.get("HTTP_MCP_METHOD") != method
        or not _BARE.fullmatch(version)
        or not _BARE.fullmatch(method)
    ):
        return False
    if name is None:
        return True
    return (
        environ.get("HTTP_MCP_NAME") == name
        and _BARE.fullmatch(name) is not None
        and not (name.startswith(SENTINEL_PREFIX) and name.endswith(SENTINEL_SUFFIX))
    )


__all__ = ["mirrors_body"]
