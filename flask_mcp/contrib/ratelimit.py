"""Rate limits on MCP requests, per principal, session and tool, as a middleware.

Counting is done by the `limits <https://limits.readthedocs.io>`_ library, the
engine under Flask-Limiter, with the same storage URLs: ``memory://`` counts in
one process, ``redis://host:port/db`` shares the counters between every worker
and machine. Install it with ``pip install 'Flask-MCP[ratelimit]'``.

.. code-block:: python

    from flask_mcp.contrib.ratelimit import RateLimiter

    limiter = RateLimiter(mcp)
    limiter.limit("600/minute", per="principal")            # every request of a caller
    limiter.limit("20/second", per="session")               # a client, across its sessions
    limiter.limit("5/minute", per="tool", tools=["search"])  # search, for everyone together
    limiter.limit("30/minute", per=("principal", "tool"))   # each caller on each tool

    def create_app():
        app = Flask(__name__)
        mcp.init_app(app)
        limiter.init_app(app)      # reads the storage once (else on the app's first request)

A refused request is answered with HTTP 429, ``Retry-After`` and the JSON-RPC
error ``-32000`` (:class:`~flask_mcp.RateLimited`), in both protocol eras.

The storage is ``MCP_RATELIMIT_STORAGE_URI``, or when it is unset the Redis of
``MCP_BACKEND``, or ``memory://``; a ``storage_uri=`` given here wins over both.
Each app counts on its own: ``memory://`` storage per app, and the key prefix
of ``MCP_BACKEND`` (``?prefix=``) added to the counters' keys, so two apps on
one Redis share counters only when they share that prefix.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import typing as t
import weakref
from urllib.parse import parse_qsl
from urllib.parse import urlsplit

try:
    from limits import RateLimitItem
    from limits import parse_many
    from limits import storage as limits_storage
    from limits import strategies
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"flask_mcp.contrib.ratelimit needs limits ({exc.name} is missing): "
        "pip install 'Flask-MCP[ratelimit]'."
    ) from exc

from ..errors import MCPError
from ..errors import RateLimited
from ..protocol import client_network
from .labels import SPEC_METHODS
from .labels import UNKNOWN

if t.TYPE_CHECKING:
    from ..extension import MCP
    from ..server.middleware import CallInfo
    from ..server.middleware import CallNext

#: What a limit can count by; a rule's ``per`` is one of these or a tuple of them.
SCOPES = ("principal", "session", "tool", "method", "global")
STRATEGIES: dict[str, type[strategies.RateLimiter]] = {
    "fixed-window": strategies.FixedWindowRateLimiter,
    "moving-window": strategies.MovingWindowRateLimiter,
    "sliding-window-counter": strategies.SlidingWindowCounterRateLimiter,
}
#: Methods that name a tool, resource or prompt (``per="tool"`` counts them by name).
NAMED = ("tools/call", "resources/read", "prompts/get")
#: The key of the :class:`RateLimiter` in ``app.extensions``.
EXTENSION_KEY = "mcp_ratelimit"
#: ``MCP_BACKEND`` schemes and the ``limits`` storage scheme of the same Redis.
REDIS_STORAGE = {
    "redis": "redis",
    "rediss": "rediss",
    "redis+cluster": "redis+cluster",
    "redis+sentinel": "redis+sentinel",
    "rediss+sentinel": "redis+sentinel",
    "unix": "redis+unix",
}
#: The socket timeouts of a Redis storage's client: those of the backend's own clients.
#: redis-py before 8 waits for ever by default, so a Redis that stopped answering (frozen,
#: or its replies lost) held every limited request for good instead of failing it.
REDIS_TIMEOUTS: dict[str, float] = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}


@dataclasses.dataclass(frozen=True)
class Rule:
    """One limit: a rate, what it counts by, and the requests it applies to."""

    item: RateLimitItem
    per: tuple[str, ...]
    methods: frozenset[str] | None
    names: frozenset[str] | None

    @property
    def text(self) -> str:
        """The rate, as ``"5 per 1 minute"``."""
        amount = self.item.amount
        multiples = self.item.multiples
        return f"{amount} per {multiples} {self.item.GRANULARITY.name}"

    def key(self, call: CallInfo, mcp: MCP | None = None) -> tuple[str, ...] | None:
        """The identifiers of ``call``'s counter, or ``None`` when the rule does not apply.

        With ``mcp``, the server the call is for, what a client chooses makes no
        counter of its own: a method, tool or prompt the server does not declare
        counts as ``unknown``, and a URI a resource template matches counts as
        that template.
        """
        if self.methods is not None and call.method not in self.methods:
            return None
        name = call.name
        if self.names is not None and name not in self.names:
            return None
        method = call.method
        if mcp is not None:
            method = _declared_method(mcp, method)
            name = None if name is None else _declared_target(mcp, call, name)
        parts = []
        for scope in self.per:
            if scope == "principal":
                parts.append(call.principal or f"anonymous:{_remote_addr()}")
            elif scope == "session":
                parts.append(caller(call))
            elif scope == "tool":
                if name is None:
                    return None
                parts.append(f"{method}:{name}")
            elif scope == "method":
                parts.append(method)
            else:
                parts.append("*")
        return ("/".join(self.per), *parts)


def _declared_method(mcp: MCP, method: str) -> str:
    """Return ``method`` if the server knows it, else :data:`~.labels.UNKNOWN`."""
    table = getattr(mcp.dispatcher, "methods", None) or ()
    return method if method in SPEC_METHODS or method in table else UNKNOWN


def _declared_target(mcp: MCP, call: CallInfo, name: str) -> str:
    """Return what the server declares under the name ``call`` sends: the tool or prompt,
    the resource, or the template that matches the URI; :data:`~.labels.UNKNOWN` else."""
    registry = mcp.registry
    kind = call.kind
    if kind == "resource":
        if name in registry.resources:
            return name
        if len(name) <= call.call.state.settings.max_uri_length:
            try:
                found = registry.find_template(name)
            except MCPError:  # refused by the template: the method says why
                found = None
            if found is not None:
                return str(found[0].uri_template)
        return UNKNOWN
    table, disabled = (registry.tools, "tools") if kind == "tool" else (registry.prompts, "prompts")
    if name in table or name in registry.disabled.get(disabled, {}):
        return name
    return UNKNOWN


def caller(call: CallInfo) -> str:
    """The client a ``per="session"`` counter belongs to, the same for each of its sessions.

    A session is bound to the caller that made it, so the counter is that
    caller's: its principal (with authorization), else the client's address.
    A new session continues the count; a 2026-07-28 request, which has no
    session, counts for its caller the same way.
    """
    principal = call.principal
    if principal:
        return f"principal:{principal}"
    return f"address:{_remote_addr()}"


def _remote_addr() -> str:
    """The client's address of the current HTTP request (``-`` outside one).

    An IPv6 address stands for its /64, as for ``MCP_MAX_SESSIONS_PER_CLIENT``: a
    client given a network may take any address of it in turn.
    """
    try:
        from flask import has_request_context
        from flask import request
    except ImportError:  # pragma: no cover - Flask is a dependency
        return "-"
    if has_request_context():
        return client_network(request.remote_addr)
    return "-"


class RateLimiter:
    """Rate limits on the requests of an :class:`~flask_mcp.MCP` server.

    Registers itself as a middleware of ``mcp``; add limits with :meth:`limit`.
    One object for any number of apps: :meth:`init_app` makes the app's storage
    (else its first request does), and each app counts on its own.

    :param mcp: the server whose requests are limited.
    :param storage_uri: a ``limits`` storage URL; default ``MCP_RATELIMIT_STORAGE_URI``,
        else the Redis of ``MCP_BACKEND``, else ``memory://``.
    :param strategy: ``"fixed-window"`` (default, one counter per window),
        ``"moving-window"`` (exact, costlier) or ``"sliding-window-counter"``.
    :param key_prefix: prefix of the counters' keys in the storage.
    """

    def __init__(
        self,
        mcp: MCP | None = None,
        *,
        storage_uri: str | None = None,
        strategy: str = "fixed-window",
        key_prefix: str = "flask-mcp",
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(
                f"Unknown rate limit strategy {strategy!r}; use one of {', '.join(STRATEGIES)}."
            )
        self.storage_uri = storage_uri
        self.strategy = strategy
        self.key_prefix = key_prefix
        self.rules: list[Rule] = []
        self._limiters: weakref.WeakKeyDictionary[t.Any, strategies.RateLimiter] = (
            weakref.WeakKeyDictionary()
        )
        self._no_app: strategies.RateLimiter | None = None
        self._lock = threading.Lock()
        #: The servers whose requests are limited (:meth:`init_server`).
        self.servers: list[MCP] = []
        if mcp is not None:
            self.init_server(mcp)

    def init_server(self, mcp: MCP) -> None:
        """Register the limiter as a middleware of ``mcp``."""
        self.servers.append(mcp)
        mcp.middleware(self)

    def limit(
        self,
        rate: str,
        *,
        per: str | t.Sequence[str] = "principal",
        tools: t.Iterable[str] | None = None,
        methods: t.Iterable[str] | None = None,
    ) -> Rule:
        """Add a limit and return it.

        :param rate: a ``limits`` rate: ``"10/second"``, ``"600 per minute"``,
            ``"5/minute;100/day"`` (several at once).
        :param per: what each counter belongs to: ``"principal"`` (the caller
            of ``AuthInfo``; without authorization, the client's address),
            ``"session"`` (the client a session belongs to: its principal,
            else its address; a new session continues the count, and
            2026-07-28 requests count for their caller), ``"tool"`` (the
            tool, prompt or resource named, for every caller together; a URI
            counts as the template that serves it, and names and methods the
            server does not declare count together as ``unknown``),
            ``"method"``, ``"global"``, or a tuple of them
            (``("principal", "tool")``: each caller on each tool).
        :param tools: only these tool (prompt, resource) names.
        :param methods: only these methods; default: ``tools/call``,
            ``resources/read`` and ``prompts/get`` when ``per`` has ``"tool"``
            or ``tools`` is given, else every method.
        :raises ValueError: the rate or the scope is not understood.
        """
        scopes = (per,) if isinstance(per, str) else tuple(per)
        unknown = [scope for scope in scopes if scope not in SCOPES]
        if unknown or not scopes:
            raise ValueError(
                f"Unknown rate limit scope {unknown or per!r}; per= takes one of "
                f"{', '.join(SCOPES)} or a tuple of them."
            )
        names = frozenset(tools) if tools is not None else None
        if methods is not None:
            method_set: frozenset[str] | None = frozenset(methods)
        elif "tool" in scopes or names is not None:
            method_set = frozenset(NAMED)
        else:
            method_set = None
        try:
            items = parse_many(rate)
        except ValueError:
            raise ValueError(
                f"Cannot read the rate {rate!r}: write it as '10/second', '600 per minute' "
                "or '5/minute;100/day'."
            ) from None
        added = [Rule(item, scopes, method_set, names) for item in items]
        self.rules.extend(added)
        return added[0]

    # -- storage ------------------------------------------------------------------

    def init_app(self, app: t.Any) -> None:
        """Make the counters' storage of ``app`` from its configuration (read once).

        Optional: an app's first limited request does it otherwise.

        :raises RuntimeError: the limiter is already registered on ``app``.
        """
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                "RateLimiter is already registered on this app. Call init_app once per app."
            )
        self.limiter_for(app)

    def storage_uri_for(self, app: t.Any) -> str:
        """Return the storage URL for ``app``: argument, config, ``MCP_BACKEND``'s Redis, memory."""
        if self.storage_uri is not None:
            return self.storage_uri
        config = getattr(app, "config", {})
        uri = config.get("MCP_RATELIMIT_STORAGE_URI")
        if uri:
            return str(uri)
        backend = config.get("MCP_BACKEND")
        if isinstance(backend, str):
            parts = urlsplit(backend)
            scheme = REDIS_STORAGE.get(parts.scheme.lower())
            if scheme == "redis+sentinel":  # the master's name only: its db is an option
                service = next((p for p in parts.path.split("/") if p), "")
                return f"{scheme}://{parts.netloc}/{service}"
            if scheme is not None:  # the query holds the backend's and redis-py's options
                db = dict(parse_qsl(parts.query)).get("db") if scheme == "redis+unix" else None
                return f"{scheme}://{parts.netloc}{parts.path}" + (f"?db={db}" if db else "")
        return "memory://"

    def storage_options_for(self, app: t.Any) -> dict[str, t.Any]:
        """Return the storage options a ``limits`` URL cannot carry.

        A Redis storage gets the socket timeouts of the backend's clients
        (:data:`REDIS_TIMEOUTS`; its Sentinels too), so that a Redis that stops
        answering fails a count within seconds (a timeout in a ``redis://`` URL's
        query wins). For the Redis behind the Sentinels of ``MCP_BACKEND``: its
        database and whether it speaks TLS.
        """
        scheme = urlsplit(self.storage_uri_for(app)).scheme.lower()
        options: dict[str, t.Any] = {}
        if scheme in REDIS_STORAGE.values():
            options.update(REDIS_TIMEOUTS)
        if scheme == "redis+sentinel":
            options["sentinel_kwargs"] = dict(REDIS_TIMEOUTS)
        if self.storage_uri is not None or getattr(app, "config", {}).get(
            "MCP_RATELIMIT_STORAGE_URI"
        ):
            return options
        backend = getattr(app, "config", {}).get("MCP_BACKEND")
        if not isinstance(backend, str):
            return options
        parts = urlsplit(backend)
        if REDIS_STORAGE.get(parts.scheme.lower()) != "redis+sentinel":
            return options
        names = [p for p in parts.path.split("/") if p]
        options["db"] = int(names[1]) if len(names) > 1 else 0
        if parts.scheme.lower().startswith("rediss"):
            options["ssl"] = True
        return options

    def key_prefix_for(self, app: t.Any) -> str:
        """Return the counters' key prefix for ``app``: :attr:`key_prefix`, then the key
        prefix of ``MCP_BACKEND`` (``?prefix=``) when it has one."""
        backend = getattr(app, "config", {}).get("MCP_BACKEND")
        if isinstance(backend, str):
            found = dict(parse_qsl(urlsplit(backend).query)).get("prefix")
            if found:
                return f"{self.key_prefix}:{found}"
        return self.key_prefix

    def limiter_for(self, app: t.Any) -> strategies.RateLimiter:
        """Return the ``limits`` rate limiter of ``app``, made on first use."""
        limiter = self._no_app if app is None else self._limiters.get(app)
        if limiter is not None:
            return limiter
        with self._lock:
            limiter = self._no_app if app is None else self._limiters.get(app)
            if limiter is None:
                uri = self.storage_uri_for(app)
                prefix = self.key_prefix_for(app)
                options = self.storage_options_for(app)
                storage = limits_storage.storage_from_string(uri, key_prefix=prefix, **options)
                limiter = STRATEGIES[self.strategy](storage)
                if app is None:
                    self._no_app = limiter
                else:
                    self._limiters[app] = limiter
                    app.extensions[EXTENSION_KEY] = self
        return limiter

    # -- the middleware -----------------------------------------------------------

    def server_of(self, call: CallInfo) -> MCP | None:
        """Return the server ``call`` is for, among :attr:`servers`."""
        state = call.call.state
        for mcp in self.servers:
            try:
                if mcp.state(call.app) is state:
                    return mcp
            except RuntimeError:  # not on this app
                continue
        return None

    def __call__(self, call: CallInfo, call_next: CallNext) -> dict[str, t.Any]:
        """Count ``call`` against every rule that applies; refuse it past a limit.

        :raises RateLimited: a limit is exceeded (HTTP 429, ``Retry-After``).
        """
        if self.rules:
            self.check(call)
        return call_next(call)

    def check(self, call: CallInfo) -> None:
        """Count ``call`` against every rule that applies.

        :raises RateLimited: a limit is exceeded.
        """
        limiter = self.limiter_for(call.app)
        mcp = self.server_of(call)
        for rule in self.rules:
            key = rule.key(call, mcp)
            if key is None:
                continue
            if not limiter.hit(rule.item, *key):
                stats = limiter.get_window_stats(rule.item, *key)
                retry_after = max(1, math.ceil(stats.reset_time - time.time()))
                raise RateLimited(retry_after, rule.text, "+".join(rule.per))


__all__ = [
    "EXTENSION_KEY",
    "REDIS_STORAGE",
    "REDIS_TIMEOUTS",
    "SCOPES",
    "STRATEGIES",
    "RateLimiter",
    "Rule",
    "caller",
]
