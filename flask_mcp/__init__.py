"""Flask-MCP: Model Context Protocol servers for Flask and WSGI."""

from __future__ import annotations

from . import content
from . import signals
from .auth import AuthError
from .auth import AuthInfo
from .content import ToolResult
from .errors import CapabilityNotDeclared
from .errors import ClientRequestError
from .errors import ClientRequestTimeout
from .errors import ConfigWarning
from .errors import MCPError
from .errors import RateLimited
from .errors import RegistrationWarning
from .errors import RequestCancelled
from .errors import ResourceNotFound
from .errors import ToolError
from .errors import URLElicitationRequired
from .extension import MCP
from .kernel.extension import Extension
from .kernel.intake import current_context
from .server.blueprints import MCPBlueprint
from .server.context import Context
from .server.middleware import CallInfo
from .server.resource_security import ResourceSecurity
from .server.shared_registry import ProcessLocalWarning
from .transport.auth import current_auth
from .transport.auth import require_scopes

__all__ = [
    "MCP",
    "AuthError",
    "AuthInfo",
    "CallInfo",
    "CapabilityNotDeclared",
    "ClientRequestError",
    "ClientRequestTimeout",
    "ConfigWarning",
    "Context",
    "Extension",
    "MCPBlueprint",
    "MCPError",
    "RateLimited",
    "ProcessLocalWarning",
    "RegistrationWarning",
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
