"""Protocol versions and every rule that differs between them.

This is the only module that knows which protocol revision introduced what.
Handlers and the dispatcher ask it questions (``supports_batching(version)``)
instead of comparing version strings themselves.
"""

from __future__ import annotations

import typing as t

#: Handshake-era versions, newest first.
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: Stateless-era versions, newest first.
STATELESS_VERSIONS: tuple[str, ...] = ("2026-07-28",)
#: Every version this library speaks, newest first.
SUPPORTED_VERSIONS: tuple[str, ...] = STATELESS_VERSIONS + HANDSHAKE_VERSIONS
#: Newest handshake-era version, answered when a client asks for an unknown one.
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[0]
#: Version assumed for a session request without ``MCP-Protocol-Version``.
DEFAULT_HEADER_VERSION = "2025-03-26"

HANDSHAKE = "handshake"
STATELESS = "stateless"

META_PREFIX = "io.modelcontextprotocol/"
META_PROTOCOL_VERSION = META_PREFIX + "protocolVersion"
META_CLIENT_INFO = META_PREFIX + "clientInfo"
META_CLIENT_CAPABILITIES = META_PREFIX + "clientCapabilities"
META_LOG_LEVEL = META_PREFIX + "logLevel"
META_SERVER_INFO = META_PREFIX + "serverInfo"
META_SUBSCRIPTION_ID = META_PREFIX + "subscriptionId"


def negotiate(requested: t.Any) -> str:
    """Return the version to answer an ``initialize`` request with.

    A supported handshake-era version is echoed; anything else gets the latest.
    """
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE_VERSION


def is_supported_header(version: str) -> bool:
    """Tell whether an ``MCP-Protocol-Version`` header value is acceptable on a session."""
    return version in HANDSHAKE_VERSIONS


def era_of_request(
    *,
    has_session: bool,
    header_version: str | None,
    message: t.Any,
) -> str:
    """Choose the era of one POST.

    A request without a session is stateless when it names a version in the
    ``MCP-Protocol-Version`` header or carries ``params._meta``, unless it has
    no ``_meta`` and its header names a handshake-era version.
    """
    if has_session:
        return HANDSHAKE
    meta = None
    if isinstance(message, dict):
        params = message.get("params")
        if isinstance(params, dict):
            meta = params.get("_meta")
    has_stateless_meta = isinstance(meta, dict) and any(
        isinstance(key, str) and key.startswith(META_PREFIX) for key in meta
    )
    if header_version is None and not has_stateless_meta:
        return HANDSHAKE
    if not has_stateless_meta and header_version in HANDSHAKE_VERSIONS:
        return HANDSHAKE
    return STATELESS


def supports_batching(version: str) -> bool:
    """JSON-RPC batches were allowed only in 2025-03-26."""
    return version == "2025-03-26"


def sends_priming_event(version: str) -> bool:
    """SSE priming events and ``retry`` hints started with 2025-11-25."""
    return version >= "2025-11-25"


def supports_elicitation(version: str) -> bool:
    """Elicitation exists from 2025-06-18 on."""
    return version >= "2025-06-18"


def supports_structured_output(version: str) -> bool:
    """``outputSchema`` and ``structuredContent`` exist from 2025-06-18 on."""
    return version >= "2025-06-18"


def supports_sampling_tools(version: str) -> bool:
    """Tool use in sampling (``tools``/``toolChoice``) exists from 2025-11-25 on."""
    return version >= "2025-11-25"


def shape_tool(version: str, tool: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop fields of a tool description that ``version`` does not know."""
    if supports_structured_output(version):
        return tool
    return {k: v for k, v in tool.items() if k not in ("outputSchema", "title", "icons")}


def shape_tool_result(version: str, result: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop fields of a ``CallToolResult`` that ``version`` does not know."""
    if supports_structured_output(version) or "structuredContent" not in result:
        return result
    return {k: v for k, v in result.items() if k != "structuredContent"}


def server_info_fields(version: str, info: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return ``serverInfo`` with only the fields ``version`` defines."""
    if version >= "2025-11-25":
        return info
    allowed = ("name", "version", "title") if version >= "2025-06-18" else ("name", "version")
    return {k: v for k, v in info.items() if k in allowed}
