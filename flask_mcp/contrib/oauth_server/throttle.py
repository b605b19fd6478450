"""Bounds on the endpoints anyone may call: requests per client address, and clients kept.

``/oauth/register`` and ``/oauth/token`` answer callers that have no token yet, so
nothing but their address tells them apart. :class:`EndpointLimits` counts the
requests of each address with the rate limiter of :mod:`flask_mcp.contrib.ratelimit`
(the ``limits`` library) and its storage: ``MCP_RATELIMIT_STORAGE_URI``, else the
Redis of ``MCP_BACKEND``, else this process's memory. Behind a reverse proxy, wrap the
app in Werkzeug's ``ProxyFix`` so that the address is the client's, not the proxy's.
"""

from __future__ import annotations

import math
import threading
import time
import typing as t

if t.TYPE_CHECKING:
    from flask import Flask

#: The start of the counters' keys (then the ``MCP_BACKEND`` prefix, if any).
KEY_PREFIX = "flask-mcp-oauth"


class Refusal(t.NamedTuple):
    """A request over a limit: when to come back, and the limit."""

    retry_after: int
    limit: str


class EndpointLimits:
    """Per-address rate limits on some endpoints of one app.

    :param app: the app (its configuration names the counters' storage).
    :param rates: per endpoint name, the configuration key of its limit and the limit:
        a ``limits`` rate (``"10/minute;100/hour"``), or ``None`` for none.
    :raises ValueError: a rate cannot be read; the message names its key.
    """

    def __init__(self, app: Flask, rates: t.Mapping[str, tuple[str, str | None]]) -> None:
        self.app = app
        self.rules: dict[str, list[t.Any]] = {}
        for endpoint, (key, rate) in rates.items():
            if rate:
                self.rules[endpoint] = _parse(key, rate)
        self._limiter: t.Any = None
        self._lock = threading.Lock()

    def limiter(self) -> t.Any:
        """The ``limits`` rate limiter, made on first use (the app is configured by then)."""
        if self._limiter is None:
            with self._lock:
                if self._limiter is None:
                    from limits import storage
                    from limits import strategies

                    from ..ratelimit import RateLimiter

                    where = RateLimiter(key_prefix=KEY_PREFIX)
                    counters = storage.storage_from_string(
                        where.storage_uri_for(self.app),
                        key_prefix=where.key_prefix_for(self.app),
                        **where.storage_options_for(self.app),
                    )
                    self._limiter = strategies.FixedWindowRateLimiter(counters)
        return self._limiter

    def check(self, endpoint: str, address: str) -> Refusal | None:
        """Count a request of ``address`` to ``endpoint``; return a :class:`Refusal` past a
        limit, else ``None``."""
        items = self.rules.get(endpoint)
        if not items:
            return None
        limiter = self.limiter()
        for item in items:
            if not limiter.hit(item, endpoint, address):
                stats = limiter.get_window_stats(item, endpoint, address)
                retry_after = max(1, math.ceil(stats.reset_time - time.time()))
                text = f"{item.amount} per {item.multiples} {item.GRANULARITY.name}"
                return Refusal(retry_after, text)
        return None


def _parse(key: str, rate: str) -> list[t.Any]:
    try:
        from limits import parse_many
    except ImportError:  # pragma: no cover - the extra is not installed
        raise ImportError(
            f"{key} needs the limits package: pip install 'Flask-MCP[oauth-server]' "
            f"(or set {key} = None to serve the endpoint without a limit)."
        ) from None
    try:
        return list(parse_many(rate))
    except ValueError:
        raise ValueError(
            f"Invalid {key}={rate!r}: write a rate per client address as '10/minute', "
            "'60 per minute' or '10/minute;100/hour', or None for no limit."
        ) from None


__all__ = ["KEY_PREFIX", "EndpointLimits", "Refusal"]
