"""Protocol versions and every rule that differs between them (the era rules).

This is the only module that knows which protocol revision introduced what.
Handlers, the dispatcher and the transport ask it questions
(``supports_batching(version)``, ``has_sessions(era)``) instead of comparing
version strings themselves.
"""

from __future__ import annotations

import typing as t

from .. import content
from ..errors import INTERNAL_ERROR
from ..errors import REQUEST_TIMEOUT

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

#: Methods of the handshake era that the stateless era removed (404 + -32601 there).
REMOVED_IN_STATELESS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
#: Methods that exist only in the stateless era.
STATELESS_ONLY = frozenset({"server/discover", "subscriptions/listen"})
#: Methods that may answer with an ``InputRequiredResult`` (MRTR).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Methods whose complete results carry ``ttlMs`` and ``cacheScope``.
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
#: The values of ``cacheScope`` (and of ``MCP_CACHE_SCOPE`` and ``cache_scope=``).
CACHE_SCOPES = ("public", "private")
#: The log levels of ``logging/setLevel`` and ``notifications/message`` (RFC 5424), lowest first.
LOG_LEVELS = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


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
    no ``_meta`` and its header names a handshake-era version. A session id
    decides only when the header names no 2026-07-28 version: a request that
    does is stateless, its ``Mcp-Session-Id`` ignored (``streamable-http.mdx``).
    """
    if has_session and header_version not in STATELESS_VERSIONS:
        return HANDSHAKE
    meta = None
    if isinstance(message, dict):
        params = message.get("params")
        if isinstance(params, dict):
            meta = params.get("_meta")
    has_stateless_meta = isinstance(meta, dict) and (
        META_PROTOCOL_VERSION in meta  # the key every 2026-07-28 request carries: no scan
        or any(isinstance(key, str) and key.startswith(META_PREFIX) for key in meta)
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
    return version >= _STRUCTURED_SINCE


#: The version that brought ``outputSchema`` and ``structuredContent``.
_STRUCTURED_SINCE = "2025-06-18"


def supports_sampling_tools(version: str) -> bool:
    """Tool use in sampling (``tools``/``toolChoice``) exists from 2025-11-25 on."""
    return version >= "2025-11-25"


def supports_tasks(version: str) -> bool:
    """Tasks (the ``tasks`` capability, ``params.task``, ``execution``) exist from 2025-11-25 on.

    The 2026-07-28 tasks extension is negotiated per request instead.
    """
    return version >= _TASKS_SINCE


#: The version that brought tasks (experimental), with ``Tool.execution.taskSupport``.
_TASKS_SINCE = "2025-11-25"


def shapes_tools(version: str) -> bool:
    """Tell whether :func:`shape_tool` changes anything under ``version``.

    Only 2025-11-25 knows every field of a tool description: the versions before it
    know fewer, and 2026-07-28 dropped ``execution`` (see :func:`shape_tool`).
    """
    return version != _TASKS_SINCE


def shape_tool(version: str, tool: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop fields of a tool description that ``version`` does not know.

    ``execution.taskSupport`` exists in 2025-11-25 only: the 2026-07-28 ``Tool`` has
    no ``execution``, as the tasks extension (SEP-2663) lets the server alone decide,
    per request, whether a call becomes a task.
    """
    if version == _TASKS_SINCE:
        return tool
    if version > _TASKS_SINCE:
        if "execution" not in tool:
            return tool
        return {k: v for k, v in tool.items() if k != "execution"}
    if supports_structured_output(version):
        return {k: v for k, v in tool.items() if k != "execution"}
    return {
        k: v for k, v in tool.items() if k not in ("outputSchema", "title", "icons", "execution")
    }


def shape_capabilities(version: str, capabilities: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop server capabilities that ``version`` does not know (``tasks`` before 2025-11-25).

    A session of an earlier version has no tasks: its ``params.task`` is ignored and a
    tool whose tasks are ``"required"`` runs as a plain call.
    """
    if supports_tasks(version) or "tasks" not in capabilities:
        return capabilities
    return {k: v for k, v in capabilities.items() if k != "tasks"}


def shape_tool_result(version: str, result: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop fields of a ``CallToolResult`` that ``version`` does not know."""
    if version >= _STRUCTURED_SINCE or "structuredContent" not in result:
        return result  # supports_structured_output(version), without a call per tools/call
    return {k: v for k, v in result.items() if k != "structuredContent"}


def server_info_fields(version: str, info: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return ``serverInfo`` with only the fields ``version`` defines."""
    if version >= "2025-11-25":
        return info
    allowed = ("name", "version", "title") if version >= "2025-06-18" else ("name", "version")
    return {k: v for k, v in info.items() if k in allowed}


def is_stateless_version(version: str) -> bool:
    """Tell whether ``version`` belongs to the stateless era (2026-07-28 and later)."""
    return version in STATELESS_VERSIONS


def has_method(era: str, method: str) -> bool:
    """Tell whether ``method`` exists in ``era``."""
    if era == STATELESS:
        return method not in REMOVED_IN_STATELESS
    return method not in STATELESS_ONLY


def allows_input_required(era: str, method: str) -> bool:
    """Tell whether a request may be answered with an ``InputRequiredResult``."""
    return era == STATELESS and method in INPUT_REQUIRED_METHODS


def missing_capability_is_error(version: str) -> bool:
    """From 2026-07-28, a request needing an undeclared client capability fails with -32021."""
    return is_stateless_version(version)


def uses_elicitation_ids(version: str) -> bool:
    """URL-mode elicitations carry an ``elicitationId`` in the handshake era only."""
    return not is_stateless_version(version)


def shape_result(
    era: str,
    method: str,
    result: dict[str, t.Any],
    *,
    server_info: dict[str, t.Any],
    ttl_ms: int,
    cache_scope: str,
) -> dict[str, t.Any]:
    """Add the fields a result carries in ``era``.

    Stateless results carry ``resultType`` and ``serverInfo`` in ``_meta``;
    complete results of cacheable methods also carry ``ttlMs`` and ``cacheScope``.
    Handshake-era results are returned unchanged.
    """
    if era != STATELESS:
        return result
    if "resultType" not in result and "_meta" not in result and method not in CACHEABLE_METHODS:
        # The common case (a tool's result): what the lines below build, in the same order.
        return {**result, "resultType": "complete", "_meta": {META_SERVER_INFO: server_info}}
    shaped = dict(result)
    shaped.setdefault("resultType", "complete")
    meta = shaped.get("_meta")
    shaped["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_SERVER_INFO: server_info}
    if shaped["resultType"] == "complete" and method in CACHEABLE_METHODS:
        shaped.setdefault("ttlMs", ttl_ms)
        shaped.setdefault("cacheScope", cache_scope)
    return shaped


def has_sessions(era: str) -> bool:
    """Tell whether requests of ``era`` belong to a session.

    The handshake era's requests do, and with the session come resumable
    streams (event ids, ``Last-Event-ID`` replay) and server-to-client
    requests on a request's stream. A 2026-07-28 request stands alone: its
    stream cannot be resumed, so it ends with the connection.
    """
    return era == HANDSHAKE


def timeout_answer(era: str, method: str, request_id: t.Any, seconds: float) -> dict[str, t.Any]:
    """Return the response to a request that overran ``MCP_REQUEST_TIMEOUT`` in ``era``.

    A ``tools/call`` gets an ``isError`` result the model can read. Other
    methods get a JSON-RPC error: ``-32001`` in the handshake era, ``-32603``
    at 2026-07-28, which has no request-timeout code.
    """
    text = f"Request timed out after {seconds:g} seconds (MCP_REQUEST_TIMEOUT)."
    if method == "tools/call":
        result = content.error_result(text)
        if era == STATELESS:
            result["resultType"] = "complete"
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    code = INTERNAL_ERROR if era == STATELESS else REQUEST_TIMEOUT
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


__all__ = [
    "CACHEABLE_METHODS",
    "CACHE_SCOPES",
    "DEFAULT_HEADER_VERSION",
    "HANDSHAKE",
    "HANDSHAKE_VERSIONS",
    "INPUT_REQUIRED_METHODS",
    "LATEST_HANDSHAKE_VERSION",
    "LOG_LEVELS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PREFIX",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "REMOVED_IN_STATELESS",
    "STATELESS",
    "STATELESS_ONLY",
    "STATELESS_VERSIONS",
    "SUPPORTED_VERSIONS",
    "allows_input_required",
    "era_of_request",
    "has_method",
    "has_sessions",
    "is_stateless_version",
    "is_supported_header",
    "missing_capability_is_error",
    "negotiate",
    "sends_priming_event",
    "server_info_fields",
    "shape_capabilities",
    "shape_result",
    "shape_tool",
    "shapes_tools",
    "shape_tool_result",
    "supports_batching",
    "supports_elicitation",
    "supports_sampling_tools",
    "supports_structured_output",
    "supports_tasks",
    "timeout_answer",
    "uses_elicitation_ids",
]
