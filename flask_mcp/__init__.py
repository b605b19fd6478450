"""Flask-MCP: Model Context Protocol servers for Flask and WSGI."""

from __future__ import annotations

from . import content
from . import signals
from .auth import AuthError
from .auth import AuthInfo
from .auth_context import current_auth
from .auth_context import require_scopes
from .call import current_context
from .content import ToolResult
from .context import Context
from .errors import CapabilityNotDeclared
from .errors import ClientRequestError
from .errors import ClientRequestTimeout
from .errors import ConfigWarning
from .errors import MCPError
from .errors import RequestCancelled
from .errors import ResourceNotFound
from .errors import ToolError
from .errors import URLElicitationRequired
from .extension import MCP
from .resource_security import ResourceSecurity

__all__ = [
    "MCP",
    "AuthError",
    "AuthInfo",
    "CapabilityNotDeclared",
    "ClientRequestError",
    "ClientRequestTimeout",
    "ConfigWarning",
    "Context",
    "MCPError",
    "RequestCancelled",
    "ResourceNotFound",
    "ResourceSecurity",
    "ToolError",
    "ToolResult",
    "URLElicitationRequired",
    "content",
    "current_auth",
    "current_context",
    "require_scopes",
    "signals",
]
