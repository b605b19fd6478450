"""The Redis backend: shared state for many workers on many machines.

``MCP_BACKEND = "redis://..."`` (or ``rediss://``, ``unix://``, ``redis+cluster://``,
``rediss+cluster://``) selects it; see :class:`RedisBackend`. The package holds the
backend's parts, one module each (see :mod:`flask_mcp.backends.redis.backend`).
"""

from __future__ import annotations

from .backend import MAX_CONNECTIONS
from .backend import RedisBackend

__all__ = ["MAX_CONNECTIONS", "RedisBackend"]
