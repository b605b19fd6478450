"""The JWT authorizer, by its old import path: see :mod:`flask_mcp.auth.jwt_authorizer`.

Kept for ``from flask_mcp.jwt_auth import JWTAuthorizer``. Needs PyJWT with its
crypto extra: ``pip install Flask-MCP[jwt]``.
"""

from __future__ import annotations

from .auth.jwt_authorizer import KEY_TYPES
from .auth.jwt_authorizer import JWKSCache
from .auth.jwt_authorizer import JWTAuthorizer
from .auth.jwt_authorizer import check_algorithms

__all__ = ["JWKSCache", "JWTAuthorizer", "KEY_TYPES", "check_algorithms"]
