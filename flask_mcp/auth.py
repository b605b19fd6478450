"""OAuth 2.1 resource server: bearer tokens, RFC 9728 metadata, scopes.

Off until configured (see ``MCP_AUTH_*`` in :mod:`flask_mcp.config`).
"""

from __future__ import annotations

import dataclasses
import typing as t

if t.TYPE_CHECKING:
    from flask import Flask
    from flask import Request

    from .extension import MCP


@dataclasses.dataclass(frozen=True)
class AuthInfo:
    """What an authorizer established about the caller. Never holds the token itself."""

    #: A stable identifier of the caller (for example ``issuer|subject``); sessions bind to it.
    principal: str
    scopes: frozenset[str] = frozenset()
    claims: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    client_id: str | None = None


class Authenticator(t.Protocol):
    """Checks the bearer token of each request."""

    def authenticate(self, request: Request) -> AuthInfo:
        """Return who is calling, or raise an :class:`~flask_mcp.errors.MCPHTTPError` (401/403)."""


def build_authenticator(mcp: MCP, app: Flask) -> Authenticator | None:
    """Return the app's authenticator, or ``None`` when authorization is off."""
    return None
