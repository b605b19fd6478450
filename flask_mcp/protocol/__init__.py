"""Sans-IO wire rules: protocol versions and eras, JSON-RPC messages, HTTP headers.

This package reads no request and writes no response; the transport asks it.
:mod:`flask_mcp.protocol` itself is the era rules (:mod:`.versions`) and the
local-host rule (:mod:`.hosts`); :mod:`.jsonrpc` decodes and builds messages,
:mod:`.headers` checks the 2026-07-28 ``Mcp-*`` headers.
"""

from __future__ import annotations

from .hosts import client_network
from .hosts import is_local_host
from .hosts import netloc
from .versions import CACHE_SCOPES
from .versions import CACHEABLE_METHODS
from .versions import DEFAULT_HEADER_VERSION
from .versions import HANDSHAKE
from .versions import HANDSHAKE_VERSIONS
from .versions import INPUT_REQUIRED_METHODS
from .versions import LATEST_HANDSHAKE_VERSION
from .versions import LOG_LEVELS
from .versions import META_CLIENT_CAPABILITIES
from .versions import META_CLIENT_INFO
from .versions import META_LOG_LEVEL
from .versions import META_PREFIX
from .versions import META_PROTOCOL_VERSION
from .versions import META_SERVER_INFO
from .versions import META_SUBSCRIPTION_ID
from .versions import REMOVED_IN_STATELESS
from .versions import STATELESS
from .versions import STATELESS_ONLY
from .versions import STATELESS_VERSIONS
from .versions import SUPPORTED_VERSIONS
from .versions import allows_input_required
from .versions import era_of_request
from .versions import has_method
from .versions import has_sessions
from .versions import is_stateless_version
from .versions import is_supported_header
from .versions import missing_capability_is_error
from .versions import negotiate
from .versions import sends_priming_event
from .versions import server_info_fields
from .versions import shape_capabilities
from .versions import shape_result
from .versions import shape_tool
from .versions import shape_tool_result
from .versions import shapes_tools
from .versions import supports_batching
from .versions import supports_elicitation
from .versions import supports_sampling_tools
from .versions import supports_structured_output
from .versions import supports_tasks
from .versions import timeout_answer
from .versions import uses_elicitation_ids

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
    "client_network",
    "era_of_request",
    "has_method",
    "has_sessions",
    "is_local_host",
    "is_stateless_version",
    "is_supported_header",
    "missing_capability_is_error",
    "netloc",
    "negotiate",
    "sends_priming_event",
    "server_info_fields",
    "shape_result",
    "shape_capabilities",
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
