"""OAuth 2.1 resource server: bearer tokens, RFC 9728 metadata, scopes.

Off until configured: set ``MCP_AUTH_RESOURCE`` (the server's canonical URI)
and ``MCP_AUTH_AUTHORIZATION_SERVERS``, and give the server an *authorizer*,
either with ``@mcp.authorizer`` or, for JWT access tokens, with
``MCP_AUTH_JWT_JWKS_URL`` (see :mod:`flask_mcp.auth.jwt_authorizer`).

An authorizer is called as ``authorizer(token, request)`` for every request to
the MCP endpoint. It returns the token's claims (a dict), an :class:`AuthInfo`,
an error kind such as ``"invalid_token"``, or ``None``; or it raises
:class:`AuthError`. The token never reaches a log, a signal or an error message.

This package takes plain values (settings, an authorizer, the request to
check): it never looks up the app or the server. :func:`flask_mcp.current_auth`
and :func:`flask_mcp.require_scopes`, which read the current request, live with
the transport (:mod:`flask_mcp.transport.auth`).
"""

from __future__ import annotations

from .authenticator import AuthChallenge
from .authenticator import Authenticator
from .authenticator import AuthRefused
from .authenticator import build_authenticator
from .info import INSUFFICIENT_SCOPE
from .info import INVALID_REQUEST
from .info import INVALID_TOKEN
from .info import STATUS
from .info import TEMPORARILY_UNAVAILABLE
from .info import AuthError
from .info import AuthInfo
from .info import Authorizer
from .info import auth_info_from_claims
from .info import scopes_of

__all__ = [
    "INSUFFICIENT_SCOPE",
    "INVALID_REQUEST",
    "INVALID_TOKEN",
    "STATUS",
    "TEMPORARILY_UNAVAILABLE",
    "AuthChallenge",
    "AuthError",
    "AuthInfo",
    "AuthRefused",
    "Authenticator",
    "Authorizer",
    "auth_info_from_claims",
    "build_authenticator",
    "scopes_of",
]
