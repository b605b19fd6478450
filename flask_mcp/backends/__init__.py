"""Shared-state backends, chosen by ``MCP_BACKEND``."""

from __future__ import annotations

import typing as t

from .base import RESUME_BYTES
from .base import Backend
from .base import SessionRecord
from .base import describe_url
from .memory import MemoryBackend

__all__ = ["REDIS_SCHEMES", "Backend", "MemoryBackend", "SessionRecord", "from_setting"]

#: The ``MCP_BACKEND`` URL schemes of the Redis backend.
REDIS_SCHEMES = (
    "redis://",
    "rediss://",
    "redis+cluster://",
    "rediss+cluster://",
    "redis+sentinel://",
    "rediss+sentinel://",
    "unix://",
)


def from_setting(
    value: t.Any,
    *,
    buffer_size: int,
    resume_bytes: int = RESUME_BYTES,
    idle_timeout: float | None = None,
    max_lifetime: float | None = None,
    unreachable_ok: bool = False,
) -> Backend:
    """Return the backend named by ``MCP_BACKEND`` (a URL or a backend object).

    :param buffer_size: ``MCP_SSE_BUFFER_EVENTS``.
    :param resume_bytes: ``MCP_SSE_RESUME_BYTES``.
    :param idle_timeout: ``MCP_SESSION_IDLE_TIMEOUT``, which the Redis keys' expiry follows.
    :param max_lifetime: ``MCP_SESSION_MAX_LIFETIME``, likewise.
    :param unreachable_ok: a Redis that cannot be reached now is logged, not raised
        (:meth:`RedisBackend.check <flask_mcp.backends.redis.RedisBackend.check>`).
    :raises ValueError: the URL's scheme is unknown.
    :raises BackendUnavailable: the Redis named by the URL cannot be reached (unless
        ``unreachable_ok``), refused the connection or is too old.
    """
    if isinstance(value, Backend):
        return value
    url = str(value or "memory://")
    if url.startswith("memory:"):
        return MemoryBackend(buffer_size=buffer_size, resume_bytes=resume_bytes)
    if url.startswith(REDIS_SCHEMES):
        try:
            from .redis import RedisBackend  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ValueError(
                f"MCP_BACKEND={describe_url(url)!r} needs the Redis backend: "
                f"pip install 'Flask-MCP[redis]' ({exc})."
            ) from None
        return t.cast(
            Backend,
            RedisBackend.from_url(
                url,
                buffer_size=buffer_size,
                resume_bytes=resume_bytes,
                idle_timeout=idle_timeout,
                max_lifetime=max_lifetime,
                unreachable_ok=unreachable_ok,
            ),
        )
    raise ValueError(
        f"Unknown MCP_BACKEND {describe_url(url)!r}: use 'memory://', 'redis://host:port/db', "
        "'redis+cluster://host:port/' or 'redis+sentinel://host:26379,.../MASTER_NAME/db'."
    )
