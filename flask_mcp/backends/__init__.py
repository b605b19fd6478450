"""Shared-state backends, chosen by ``MCP_BACKEND``."""

from __future__ import annotations

import typing as t

from .base import Backend
from .base import SessionRecord
from .memory import MemoryBackend

__all__ = ["Backend", "MemoryBackend", "SessionRecord", "from_setting"]


def from_setting(value: t.Any, *, buffer_size: int) -> Backend:
    """Return the backend named by ``MCP_BACKEND`` (a URL or a backend object).

    :raises ValueError: the URL's scheme is unknown.
    """
    if isinstance(value, Backend):
        return value
    url = str(value or "memory://")
    if url.startswith("memory:"):
        return MemoryBackend(buffer_size=buffer_size)
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from .redis import RedisBackend  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ValueError(
                f"MCP_BACKEND={url!r} needs the Redis backend: pip install 'Flask-MCP[redis]' ({exc})."
            ) from None
        return t.cast(Backend, RedisBackend.from_url(url, buffer_size=buffer_size))
    raise ValueError(
        f"Unknown MCP_BACKEND {url!r}: use 'memory://' or 'redis://host:port/db'."
    )
