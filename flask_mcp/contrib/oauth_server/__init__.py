"""An OAuth 2.1 authorization server for the MCP endpoint, with the app's own users.

Built on Authlib (``authlib.integrations.flask_oauth2``); install it with
``pip install 'Flask-MCP[oauth-server]'``. See :class:`OAuthServer` and the docs
page "Connect Claude, ChatGPT, VS Code and Cursor to your Flask app".

- :mod:`.server`: one app's server, its settings, tokens and consents.
- :mod:`.grants`: authorization code with PKCE (S256), refresh rotation, revocation.
- :mod:`.clients`, :mod:`.client_documents`: Dynamic Client Registration and
  Client ID Metadata Documents.
- :mod:`.keys`: rotating signing keys and the JWKS.
- :mod:`.storage`: what is stored, in memory or Redis; :mod:`.sql`: in SQL tables
  (SQLAlchemy, Flask-SQLAlchemy).
- :mod:`.views`: the endpoints and the consent page.
- :mod:`.throttle`: rate limits per client address on registration and tokens.
- :mod:`.resource`: the MCP server's authorizer for these tokens.
"""

from __future__ import annotations

try:
    import authlib  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "flask_mcp.contrib.oauth_server needs Authlib: pip install 'Flask-MCP[oauth-server]'."
    ) from exc

from .extension import OAuthServer
from .server import AppServer
from .sql import SQLStorage
from .sql import oauth_tables
from .storage import MemoryStorage
from .storage import RedisStorage
from .storage import Storage

__all__ = [
    "AppServer",
    "MemoryStorage",
    "OAuthServer",
    "RedisStorage",
    "SQLStorage",
    "Storage",
    "oauth_tables",
]
