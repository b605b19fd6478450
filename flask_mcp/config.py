"""Every ``MCP_*`` configuration key, its default and its validation.

Keys are read once, in :meth:`flask_mcp.MCP.init_app`. Set them in
``app.config`` or, through :meth:`flask.Config.from_prefixed_env`, as
``FLASK_MCP_*`` environment variables.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import sys
import typing as t
import warnings
from urllib.parse import urlsplit

from .backends.base import RESUME_BYTES
from .backends.base import RESUME_BYTES_PER_CLIENT
from .protocol import CACHE_SCOPES
from .protocol import LOG_LEVELS
from .protocol import netloc

# -- converters: each checks a value and returns it in its type, or raises ValueError
# saying what the value must be. KEYS below names the converter of every key.


def integer(value: t.Any) -> int:
    """Return a whole number, from an int, a whole float or a string of digits.

    A fraction is refused rather than cut (``2.7`` is not ``2``), and so are a
    boolean, infinity and NaN.
    """
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("must be a whole number")
    return int(value)


def number_of_seconds(value: t.Any) -> float:
    """Return a finite number, from a number or a string (``"1.5"``); infinity and NaN are refused.

    A boolean is refused too.
    """
    if isinstance(value, bool):
        raise ValueError("must be a number of seconds, not a boolean")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("must be a finite number of seconds")
    return number


def positive_int(value: t.Any) -> int:
    """Return an integer above 0."""
    number = integer(value)
    if number <= 0:
        raise ValueError("must be a positive integer")
    return number


def optional_positive_int(value: t.Any) -> int | None:
    """Return an integer above 0, or ``None`` (also ``0`` and ``""``) for no bound."""
    if not isinstance(value, bool) and value in (None, "", 0, "0"):
        return None
    return positive_int(value)


def optional_seconds(value: t.Any) -> float | None:
    """Return a positive number of seconds, or ``None`` (also ``0`` and ``""``) for never."""
    if value in (None, "", 0, "0"):
        return None
    number = number_of_seconds(value)
    if number <= 0:
        raise ValueError("must be a positive number of seconds, or None to disable")
    return number


def fraction(value: t.Any) -> float:
    """Return a number above 0 and at most 1, from a number or a string (``"0.5"``)."""
    if isinstance(value, bool):
        raise ValueError("must be a fraction above 0 and at most 1, not a boolean")
    number = float(value)
    if not 0 < number <= 1:
        raise ValueError("must be a fraction above 0 and at most 1 (1: no share)")
    return number


def seconds(value: t.Any) -> float:
    """Return a positive number of seconds."""
    number = number_of_seconds(value)
    if number <= 0:
        raise ValueError("must be a positive number of seconds")
    return number


def as_bool(value: t.Any) -> bool:
    """Return a boolean, from a bool or a string (``true``/``false``, ``1``/``0``, ``on``...)."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ValueError("must be a boolean (true/false)")
    return bool(value)


def optional_bool(value: t.Any) -> bool | None:
    """Return a boolean, or ``None``."""
    return None if value is None else as_bool(value)


def path(value: t.Any) -> str:
    """Return a URL path that starts with ``/`` and does not end with one."""
    text = str(value)
    if not text.startswith("/") or (len(text) > 1 and text.endswith("/")):
        raise ValueError("must start with '/' and not end with '/', for example '/mcp'")
    return text


def string_list(value: t.Any) -> tuple[str, ...] | None:
    """Return a tuple of strings, from a sequence or a comma-separated string; ``None`` stays."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    return tuple(str(item) for item in value)


def host_list(value: t.Any) -> tuple[str, ...] | None:
    """Return a tuple of ``Host`` values (``host`` or ``host:port``), lower-cased as the
    header is compared; a URL is refused with the host it names.
    """
    items = string_list(value)
    if items is None:
        return None
    hosts = []
    for item in items:
        host = item.strip().lower()
        if "/" in host or "@" in host or not host:
            name = urlsplit(host).netloc if "//" in host else ""
            hint = f" {name!r}" if name else ""
            raise ValueError(
                f"{item!r} is not a host: list the host name{hint} or host:port, "
                "without a scheme or a path, for example 'mcp.example.com'"
            )
        hosts.append(host)
    return tuple(dict.fromkeys(hosts))


def origin(value: str) -> str:
    """Return a browser origin as an ``Origin`` header writes it, or ``*`` or ``null``.

    ``https://App.example.com/`` becomes ``https://app.example.com``: the scheme and
    host lower-cased, without a trailing ``/`` or a default port (443, 80), which
    browsers never send. A path, query or fragment is refused: an origin has none.
    """
    text = value.strip()
    if text in ("*", "null"):
        return text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = urlsplit(""), None
    if (
        not parts.scheme
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise ValueError(
            f"{value!r} is not an origin: list scheme://host[:port] without a path, "
            "for example 'https://app.example.com' ('*' for any)"
        )
    scheme = parts.scheme.lower()
    if (scheme, port) in (("https", 443), ("http", 80)):
        port = None
    return f"{scheme}://{netloc(parts.hostname, port)}"


def origin_list(value: t.Any) -> tuple[str, ...] | None:
    """Return a tuple of origins (:func:`origin`), from a sequence or a comma-separated string."""
    items = string_list(value)
    return None if items is None else tuple(dict.fromkeys(origin(item) for item in items))


def log_level(value: t.Any) -> str:
    """Return one of the MCP log levels, lower-cased."""
    level = str(value).lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
    return level


def non_negative_int(value: t.Any) -> int:
    """Return an integer of 0 or more."""
    number = integer(value)
    if number < 0:
        raise ValueError("must be an integer >= 0")
    return number


def cache_scope(value: t.Any) -> str:
    """Return a ``cacheScope`` value (``private`` or ``public``)."""
    scope = str(value).lower()
    if scope not in CACHE_SCOPES:
        raise ValueError(f"must be {' or '.join(map(repr, CACHE_SCOPES))}")
    return scope


def as_str(value: t.Any) -> str:
    """Return the value as a string."""
    return str(value)


def optional_str(value: t.Any) -> str | None:
    """Return a string, or ``None`` (also for ``""``)."""
    return None if value in (None, "") else str(value)


def non_negative_seconds(value: t.Any) -> float:
    """Return a number of seconds of 0 or more."""
    number = number_of_seconds(value)
    if number < 0:
        raise ValueError("must be a number of seconds >= 0")
    return number


def scopes(value: t.Any) -> tuple[str, ...] | None:
    """Return a tuple of OAuth scopes without repeats, from a sequence or a string."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(dict.fromkeys(str(item) for item in value))


def json_object(value: t.Any) -> dict[str, t.Any]:
    """Return a dict, from a mapping or a JSON object in a string; empty for ``None`` and ``""``."""
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, t.Mapping):
        raise ValueError("must be a dict (a JSON object in an environment variable)")
    return dict(value)


def scope_map(value: t.Any) -> dict[str, tuple[str, ...]]:
    """Return a scope hierarchy: each scope mapped to the tuple of scopes it implies."""
    return {str(key): scopes(granted) or () for key, granted in json_object(value).items()}


def url(value: t.Any) -> str:
    """Return an absolute http(s) URL with a host and no fragment."""
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "must be an absolute http(s) URL with a host, for example 'https://mcp.example.com/mcp'"
        )
    if "#" in text:
        raise ValueError("must not contain a fragment ('#...'); remove it")
    return text


def optional_url(value: t.Any) -> str | None:
    """Return an absolute http(s) URL (see :func:`url`), or ``None``."""
    return None if value in (None, "") else url(value)


def url_list(value: t.Any) -> tuple[str, ...] | None:
    """Return a tuple of absolute http(s) URLs, or ``None``."""
    items = string_list(value)
    return None if items is None else tuple(url(item) for item in items)


#: The converters that give ``None`` a meaning of its own (never, no bound, off, unset).
_NONE_MEANS_SOMETHING: frozenset[t.Callable[[t.Any], t.Any]] = frozenset(
    (optional_positive_int, optional_seconds, optional_bool, optional_str, optional_url)
)
#: What a key takes, by the type of its default: named when ``None`` is refused.
_EXPECTED = ((bool, "True or False"), (int, "an integer"), (float, "a number"), (str, "a string"))


@dataclasses.dataclass(frozen=True)
class Key:
    """One configuration key: name, default, converter and documentation."""

    name: str
    default: t.Any
    convert: t.Callable[[t.Any], t.Any]
    doc: str

    @property
    def takes_none(self) -> bool:
        """Tell whether ``None`` is a value of this key: its default, or a documented
        meaning (never, no bound, off), which the ``optional_*`` converters give it.
        """
        return self.default is None or self.convert in _NONE_MEANS_SOMETHING

    def read(self, raw: t.Any) -> t.Any:
        """Return ``raw`` converted, or raise an error naming the key and what it takes.

        ``None`` is refused for a key that gives it no meaning (``MCP_ENABLE_GET_STREAM``,
        ``MCP_PAGE_SIZE``...): it would read as false, or as some other value than the
        default, where it is most often an unset variable of the app's own.

        :raises ValueError: ``raw`` is not a value of this key.
        """
        if raw is None and not self.takes_none:
            expected = next(
                (name for kind, name in _EXPECTED if isinstance(self.default, kind)), "a list"
            )
            raise ValueError(
                f"Invalid {self.name}=None: None is not a value of this key. Set it to "
                f"{expected}, or remove it from the config for its default, "
                f"{self.default!r}. {self.doc}"
            )
        try:
            return self.convert(raw)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Invalid {self.name}={raw!r}: {exc}. {self.doc}") from None


KEYS: tuple[Key, ...] = (
    Key(
        "MCP_PATH",
        "/mcp",
        path,
        "URL path of the MCP endpoint. It may hold URL variables, as a Flask rule does"
        " (``/t/<tenant>/mcp``): handlers read them as ``request.view_args`` and"
        " ``ctx.path_args``, and a session or task belongs to the path it was created under.",
    ),
    Key(
        "MCP_BACKEND",
        "memory://",
        lambda v: v if not isinstance(v, str) else v.strip(),
        "Shared-state backend: ``memory://`` (one process), ``redis://host:port/db`` "
        "(``rediss://``, ``unix://``; many workers and machines), ``redis+cluster://host:port/`` "
        "(a Redis Cluster) or a backend object.",
    ),
    Key("MCP_PAGE_SIZE", 100, positive_int, "Items per page of every list method."),
    Key(
        "MCP_MAX_BODY_SIZE",
        4 * 1024 * 1024,
        positive_int,
        "Largest accepted POST body in bytes (413 above it).",
    ),
    Key(
        "MCP_MAX_URI_LENGTH",
        8192,
        positive_int,
        "Longest resource URI accepted by ``resources/read``, ``resources/subscribe`` and "
        "``completion/complete`` (-32602 above it, before any template is matched).",
    ),
    Key(
        "MCP_MAX_SESSIONS",
        10_000,
        positive_int,
        "Most live sessions; ``initialize`` past it gets 503.",
    ),
    Key(
        "MCP_SESSION_IDLE_TIMEOUT",
        1800,
        optional_seconds,
        "Seconds without traffic after which a session ends (None: never). 30 minutes, as "
        "the official SDK: sessions a flood left idle free their MCP_MAX_SESSIONS room soon.",
    ),
    Key(
        "MCP_SESSION_MAX_LIFETIME",
        24 * 3600,
        optional_seconds,
        "Seconds after which a session ends whatever its traffic (None: never).",
    ),
    Key(
        "MCP_HANDSHAKE_TIMEOUT",
        30.0,
        optional_seconds,
        "Seconds a new session may wait for the client's ``notifications/initialized``; "
        "past it the session ends when room is needed, and stops counting toward "
        "``MCP_MAX_SESSIONS`` (None: it lives as any session).",
    ),
    Key(
        "MCP_MAX_SESSIONS_PER_CLIENT",
        1000,
        optional_positive_int,
        "Most live sessions of one client: its token's subject when authorization is on, "
        "else its address (``REMOTE_ADDR``, which ``ProxyFix`` sets from the proxy's "
        "``X-Forwarded-For``; an IPv6 address counts as its /64); ``initialize`` past it "
        "gets 429 (None: no quota). On by "
        "default, so that one client cannot take every session of ``MCP_MAX_SESSIONS``.",
    ),
    Key(
        "MCP_ALLOWED_HOSTS",
        None,
        host_list,
        "Accepted ``Host`` values (``host`` or ``host:port``, ``*`` for any). "
        "None: on a loopback connection only localhost names are accepted.",
    ),
    Key(
        "MCP_ALLOWED_ORIGINS",
        None,
        origin_list,
        "Accepted ``Origin`` values, ``scheme://host[:port]`` (``*`` for any). None: no "
        "Origin, or a localhost origin.",
    ),
    Key(
        "MCP_EXPOSE_INTERNAL_ERRORS",
        None,
        optional_bool,
        "Send the text of unexpected exceptions to clients (debugging only). None: when the "
        "app runs in debug mode (``flask run --debug``, ``app.run(debug=True)``).",
    ),
    Key("MCP_ENABLE_GET_STREAM", True, as_bool, "Serve the GET stream (405 when false)."),
    Key(
        "MCP_SSE_HEARTBEAT",
        15.0,
        seconds,
        "Seconds between keep-alive comments on idle SSE streams.",
    ),
    Key(
        "MCP_SSE_RETRY_MS",
        1000,
        positive_int,
        "``retry:`` value (milliseconds) sent on SSE streams to 2025-11-25 clients.",
    ),
    Key(
        "MCP_SSE_BUFFER_EVENTS",
        1000,
        positive_int,
        "Events kept per session for ``Last-Event-ID`` replay.",
    ),
    Key(
        "MCP_SSE_RESUME_BYTES",
        RESUME_BYTES,
        non_negative_int,
        "Bytes of messages kept per session on streams whose client left, for it to resume "
        "them with ``Last-Event-ID``; past it the streams left first are dropped, then the "
        "oldest messages of the one left last (0: no bound).",
    ),
    Key(
        "MCP_SSE_RESUME_BYTES_PER_CLIENT",
        RESUME_BYTES_PER_CLIENT,
        non_negative_int,
        "Bytes of messages kept on streams whose client left across all the sessions of "
        "one client, counted as MCP_SSE_RESUME_BYTES is (a client: as for "
        "MCP_MAX_SESSIONS_PER_CLIENT, not applied when that is None); past it the streams "
        "that client left first are dropped, in whichever of its sessions. The memory "
        "backend only: with Redis one client keeps up to MCP_MAX_SESSIONS_PER_CLIENT times "
        "MCP_SSE_RESUME_BYTES (0: no bound).",
    ),
    Key(
        "MCP_SSE_MAX_STREAM_SECONDS",
        None,
        optional_seconds,
        "Close an SSE connection after this many seconds; the client resumes (None: never).",
    ),
    Key(
        "MCP_WRITE_TIMEOUT",
        60.0,
        seconds,
        "Seconds a write to an SSE stream, or of a JSON response larger than 16 KiB, may "
        "wait for a client that reads nothing (its connection open, its buffers full); then "
        "the connection is closed and its stream (on a threaded server, its thread) freed. "
        "The client may resume the stream. Over stdio, a write to stdout the client does "
        "not read: then its session ends (nothing more written, running requests cancelled).",
    ),
    Key(
        "MCP_READ_TIMEOUT",
        60.0,
        seconds,
        "Seconds a POST body may take to arrive in full (a ``Content-Length`` larger than "
        "what the client sends, a chunked body that never ends); then the request is "
        "answered 408 and its connection closed, freeing its thread (or greenlet). On "
        "gunicorn; the MCP endpoint and the built-in authorization server's endpoints.",
    ),
    Key(
        "MCP_REQUEST_TIMEOUT",
        600.0,
        seconds,
        "Seconds a handler may run before its request ends with an error.",
    ),
    Key(
        "MCP_CLIENT_REQUEST_TIMEOUT",
        120.0,
        seconds,
        "Seconds to wait for the client's answer to a sampling/elicitation/roots request.",
    ),
    Key(
        "MCP_DEFAULT_LOG_LEVEL",
        "debug",
        log_level,
        "Level of ``ctx.log`` messages sent before the client calls ``logging/setLevel``.",
    ),
    Key(
        "MCP_STATE_KEY",
        None,
        optional_str,
        "Key sealing 2026-07-28 ``requestState`` (default: the app's ``SECRET_KEY``).",
    ),
    Key(
        "MCP_STATE_MAX_AGE",
        600.0,
        seconds,
        "Seconds a sealed 2026-07-28 ``requestState`` stays valid (the time a user has to answer).",
    ),
    Key(
        "MCP_STATE_ENCRYPT",
        False,
        as_bool,
        "Encrypt ``requestState`` with AES-GCM (needs ``cryptography``), not only sign it.",
    ),
    Key(
        "MCP_CACHE_TTL_MS",
        0,
        non_negative_int,
        "``ttlMs`` of 2026-07-28 list and ``server/discover`` results (0: immediately stale).",
    ),
    Key(
        "MCP_CACHE_SCOPE",
        "private",
        cache_scope,
        "``cacheScope`` of 2026-07-28 list and ``server/discover`` results; ``'public'`` "
        "only for lists the same for every caller (not with MCP_AUTH_HIDE_UNAUTHORIZED).",
    ),
    Key(
        "MCP_READ_CACHE_TTL_MS",
        0,
        non_negative_int,
        "Default ``ttlMs`` of ``resources/read`` results; a resource's ``ttl_ms=`` overrides it.",
    ),
    Key(
        "MCP_READ_CACHE_SCOPE",
        "private",
        cache_scope,
        "Default ``cacheScope`` of ``resources/read`` results; ``cache_scope=`` overrides it.",
    ),
    Key(
        "MCP_MAX_STREAMS",
        None,
        optional_positive_int,
        "Most SSE responses open at once in this process (GET streams: half of them). Past "
        "it nothing hangs: a call is answered with one JSON response (its notifications "
        "dropped), a GET is told to come back later (a stream that ends at once with a "
        "``retry`` hint) and ``subscriptions/listen`` gets 503 (None: half the process's "
        "open-file limit, ``ulimit -n``, on gevent; threads - 1 on gthread).",
    ),
    Key(
        "MCP_STREAM_SHARE_PER_CLIENT",
        0.5,
        fraction,
        "Share of a worker's stream slots (``MCP_MAX_STREAMS``) one client may "
        "hold, rounded up and never fewer than 3 (with ``--threads 8``: 4 of 7), and of its "
        "GET stream slots (half of them), rounded up; past it the client is answered as by "
        "a full worker (a GET: come back later; a call: one JSON response; "
        "``subscriptions/listen``: 503), and the others keep the rest. A "
        "client is its token's subject when authorization is on, else its address "
        "(``REMOTE_ADDR``, which ``ProxyFix`` sets; an IPv6 address counts as its /64). "
        "1: no share. On gevent the slots are half the open-file limit (MCP_MAX_STREAMS): "
        "one client cannot hold every connection the worker can open.",
    ),
    Key(
        "MCP_HEALTH_LIVENESS_PATH",
        None,
        lambda v: None if v in (None, "") else path(v),
        "Serve a liveness probe here (200 while the process answers; e.g. ``/livez``); "
        "None: off. Not on a path of the MCP endpoint; never behind MCP authorization.",
    ),
    Key(
        "MCP_HEALTH_READINESS_PATH",
        None,
        lambda v: None if v in (None, "") else path(v),
        "Serve a readiness probe here (200 when the backend answers a ping, else 503; e.g. "
        "``/readyz``); None: off.",
    ),
    Key(
        "MCP_SERVER_CARD",
        False,
        as_bool,
        "Serve a Server Card (SEP-2127, experimental) at ``MCP_PATH`` + ``/server-card`` and "
        "an AI Catalog at ``/.well-known/ai-catalog.json``, for discovery before connecting.",
    ),
    Key(
        "MCP_RATELIMIT_STORAGE_URI",
        None,
        optional_str,
        "Where ``flask_mcp.contrib.ratelimit`` counts (``memory://``, ``redis://host:port/db``: "
        "the storage URLs of the ``limits`` library); None: ``MCP_BACKEND`` when it is a "
        "Redis URL, else ``memory://``.",
    ),
    Key(
        "MCP_AUTH_RESOURCE",
        None,
        optional_url,
        "Turns authorization on: the canonical URI of this MCP server (RFC 8707), the URL "
        "clients connect to, for example ``https://mcp.example.com/mcp``.",
    ),
    Key(
        "MCP_AUTH_AUTHORIZATION_SERVERS",
        None,
        url_list,
        "Issuer URLs of the authorization servers that issue tokens for this server "
        "(``authorization_servers`` of the RFC 9728 metadata).",
    ),
    Key(
        "MCP_AUTH_SCOPES_SUPPORTED",
        None,
        scopes,
        "``scopes_supported`` of the metadata: the scopes basic use needs (None: omitted).",
    ),
    Key(
        "MCP_AUTH_REQUIRED_SCOPES",
        (),
        scopes,
        "Scopes every request needs (403 ``insufficient_scope`` without them).",
    ),
    Key(
        "MCP_AUTH_IMPLIED_SCOPES",
        None,
        scope_map,
        "Scope hierarchy: a broader scope maps to the scopes it implies, for example "
        '``{"files": ["files:read", "files:write"]}``.',
    ),
    Key(
        "MCP_AUTH_HIDE_UNAUTHORIZED",
        False,
        as_bool,
        "Leave out of tools/resources/prompts lists what the caller's scopes do not allow.",
    ),
    Key(
        "MCP_AUTH_METADATA",
        None,
        json_object,
        "Extra fields of the protected resource metadata (``resource_documentation``...).",
    ),
    Key(
        "MCP_AUTH_INSECURE_HTTP",
        False,
        as_bool,
        "Accept ``http://`` authorization server, resource and JWKS URLs on non-local hosts "
        "(a private test network only; OAuth 2.1 requires HTTPS).",
    ),
    Key(
        "MCP_AUTH_JWT_JWKS_URL",
        None,
        optional_url,
        "Check JWT access tokens with the keys at this JWKS URL (needs ``Flask-MCP[jwt]``).",
    ),
    Key(
        "MCP_AUTH_JWT_ISSUER",
        None,
        string_list,
        "Accepted ``iss`` values (None: ``MCP_AUTH_AUTHORIZATION_SERVERS``).",
    ),
    Key(
        "MCP_AUTH_JWT_AUDIENCE",
        None,
        string_list,
        "Accepted ``aud`` values (None: ``MCP_AUTH_RESOURCE``).",
    ),
    Key(
        "MCP_AUTH_JWT_ALGORITHMS",
        ("RS256", "ES256"),
        string_list,
        "Accepted JWT signature algorithms (asymmetric only: never ``none`` or ``HS*``).",
    ),
    Key(
        "MCP_AUTH_JWT_LEEWAY",
        30.0,
        non_negative_seconds,
        "Seconds of clock skew allowed when checking ``exp``, ``nbf`` and ``iat``.",
    ),
    Key(
        "MCP_AUTH_JWT_JWKS_CACHE_SECONDS",
        300.0,
        seconds,
        "Seconds the JWKS is cached; an unknown ``kid`` refetches it sooner (at most every 30 s).",
    ),
    Key(
        "MCP_TASK_TTL",
        3600.0,
        seconds,
        "Seconds a task (and its result) is kept after it was created: its ``ttlMs``.",
    ),
    Key(
        "MCP_TASK_POLL_INTERVAL_MS",
        500,
        positive_int,
        "The ``pollIntervalMs`` suggested to clients polling a task.",
    ),
    Key(
        "MCP_TASK_TIMEOUT",
        3600.0,
        seconds,
        "Seconds a task's handler may run before the task fails.",
    ),
    Key(
        "MCP_TASK_MAX_RUNNING",
        32,
        positive_int,
        "Tasks one process runs at once; tools/call asking for more tasks gets a busy error.",
    ),
    Key(
        "MCP_TASK_SHARE_PER_CLIENT",
        0.5,
        fraction,
        "Share of a process's running tasks (``MCP_TASK_MAX_RUNNING``) one client may run, "
        "rounded up (32: 16); past it its task-augmented tools/call gets a busy error naming "
        "this key, and the others keep the rest. A client is its token's subject when "
        "authorization is on, else its address (``REMOTE_ADDR``, which ``ProxyFix`` sets; "
        "an IPv6 address counts as its /64), as for ``MCP_TASK_MAX_PER_CLIENT``. 1: no share. "
        "Over stdio the one client has them all; the Celery executor queues instead.",
    ),
    Key(
        "MCP_TASK_LEASE",
        15.0,
        seconds,
        "Seconds without a sign of life from the process running a task before the task is "
        "marked failed (its worker died).",
    ),
    Key(
        "MCP_TASK_IMMEDIATE_MS",
        0,
        non_negative_int,
        "Milliseconds a 2026-07-28 task-augmented tools/call waits for its task to finish: "
        "one that does is answered with its result instead of a task (0: always a task).",
    ),
    # -- bounds on what one caller keeps (issue 33; docs/reliability.md) --------------------
    Key(
        "MCP_MAX_CLIENT_INFO_SIZE",
        16 * 1024,
        positive_int,
        "Largest ``capabilities`` and ``clientInfo`` of an ``initialize``, together, as JSON "
        "bytes: what a session stores of its client; larger gets JSON-RPC error -32602.",
    ),
    Key(
        "MCP_MAX_SUBSCRIPTIONS",
        1000,
        optional_positive_int,
        "Resource subscriptions one session holds at once; a resources/subscribe past it "
        "gets JSON-RPC error -32600 and changes nothing. Also the most distinct URIs, and "
        "task ids, one subscriptions/listen names (-32602 past it) (None: no bound).",
    ),
    Key(
        "MCP_TASK_MAX_PER_CLIENT",
        1000,
        optional_positive_int,
        "Task records one caller keeps at once, running or finished (a caller: its principal, "
        "else its address, REMOTE_ADDR, which ProxyFix sets, an IPv6 one counted as its /64, "
        "as for "
        "MCP_MAX_SESSIONS_PER_CLIENT); a task-augmented tools/call past it gets a JSON-RPC "
        "error (None: no bound).",
    ),
    Key(
        "MCP_TASK_MAX_BYTES_PER_CLIENT",
        256 * 1024 * 1024,
        optional_positive_int,
        "Bytes of task records (arguments and results, as JSON) one caller keeps at once; a "
        "task past it is refused, or fails with an error instead of its result (None: no bound).",
    ),
    Key(
        "MCP_TASK_LARGE_RESULT_SIZE",
        1024 * 1024,
        positive_int,
        "Bytes above which a finished task's record is kept only MCP_TASK_LARGE_RESULT_TTL "
        "seconds, not MCP_TASK_TTL.",
    ),
    Key(
        "MCP_TASK_LARGE_RESULT_TTL",
        300.0,
        seconds,
        "Seconds a finished task with a result above MCP_TASK_LARGE_RESULT_SIZE is kept for "
        "its client to fetch it.",
    ),
    # -- the explorer page (flask_mcp.explorer) ------------------------------------------
    Key(
        "MCP_EXPLORER",
        None,
        optional_bool,
        "Serve the explorer page at ``MCP_EXPLORER_PATH``. None: while the app runs in debug "
        "mode (read on each request). True outside debug mode needs ``MCP_EXPLORER_ACCESS``.",
    ),
    Key(
        "MCP_EXPLORER_PATH",
        "/_mcp/explorer",
        path,
        "URL path of the explorer page; outside ``MCP_PATH``.",
    ),
    Key(
        "MCP_EXPLORER_ACCESS",
        None,
        lambda v: _explorer_access(v),
        "A function of the request returning True when it may open the explorer (required "
        "outside debug mode, optional in it).",
    ),
    Key(
        "MCP_EXPLORER_SANDBOX_ORIGIN",
        None,
        lambda v: None if v in (None, "") else _explorer_origin(v),
        "Another origin serving this app (``http://localhost:5000`` for a page on "
        "``http://127.0.0.1:5000``): the explorer's MCP Apps sandbox proxy runs there, with "
        "``allow-same-origin``. None: the proxy runs on an opaque origin.",
    ),
)


def _explorer_access(value: t.Any) -> t.Any:
    if value is not None and not callable(value):
        raise ValueError("must be a function taking the request and returning True or False")
    return value


def _explorer_origin(value: t.Any) -> str:
    text = url(value).rstrip("/")
    if text.count("/") != 2:
        raise ValueError("must be an origin (scheme, host and port), without a path")
    return text


# -- end of the explorer's keys -------------------------------------------------------

# -- The OAuth authorization server (flask_mcp.contrib.oauth_server) ------------------------
#: Read by :class:`flask_mcp.contrib.oauth_server.OAuthServer`, not by ``MCP.init_app``
#: (an app without that server ignores them); listed here so that every ``MCP_*`` key is
#: defined in one place and a misspelled one is reported.
OAUTH_SERVER_KEYS: tuple[Key, ...] = (
    Key(
        "MCP_OAUTH_ISSUER",
        None,
        optional_url,
        "Issuer URL of the built-in authorization server (None: the scheme and host of "
        "``MCP_AUTH_RESOURCE``).",
    ),
    Key(
        "MCP_OAUTH_STORAGE",
        None,
        optional_str,
        "Where clients, codes, refresh tokens, consents and keys live: ``memory://`` (one "
        "process), any ``MCP_BACKEND`` Redis URL (``redis://host:port/db``, "
        "``redis+cluster://host:port/``, ``redis+sentinel://...``), or an SQLAlchemy URL such "
        "as ``sqlite:///oauth.db`` (one table per kind of record; None: the Redis of "
        "``MCP_BACKEND`` through the backend's own client, else ``memory://``).",
    ),
    Key("MCP_OAUTH_PREFIX", "/oauth", path, "URL path of the authorization endpoints."),
    Key("MCP_OAUTH_ACCESS_TOKEN_LIFETIME", 3600.0, seconds, "Seconds an access token lives."),
    Key(
        "MCP_OAUTH_REFRESH_TOKEN_LIFETIME",
        30 * 86400.0,
        seconds,
        "Seconds a refresh token (and its rotated successors) lives.",
    ),
    Key("MCP_OAUTH_CODE_LIFETIME", 300.0, seconds, "Seconds an authorization code lives."),
    Key(
        "MCP_OAUTH_KEY_ROTATION",
        7 * 86400.0,
        seconds,
        "Seconds between two signing keys; the previous key stays published one more period.",
    ),
    Key(
        "MCP_OAUTH_DYNAMIC_REGISTRATION",
        True,
        as_bool,
        "Accept Dynamic Client Registration (RFC 7591).",
    ),
    Key(
        "MCP_OAUTH_REGISTRATION_TOKENS",
        None,
        string_list,
        "Initial access tokens that registration requires as a bearer token (None: open).",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_DOCUMENTS",
        True,
        as_bool,
        "Accept Client ID Metadata Documents (an ``https://`` ``client_id``, fetched).",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE",
        False,
        as_bool,
        "Fetch client metadata documents from private, loopback and link-local addresses "
        "(development only).",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE",
        None,
        optional_str,
        "A CA bundle to verify client metadata documents with (None: the system's).",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_MAX_BYTES",
        5120,
        positive_int,
        "Largest client metadata accepted, in bytes: a client metadata document, or the "
        "metadata of a Dynamic Client Registration (as JSON).",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_TIMEOUT",
        5.0,
        seconds,
        "Seconds a client metadata document may take to arrive, in total.",
    ),
    Key(
        "MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES",
        8,
        positive_int,
        "Client metadata documents one process fetches at once (a name resolution that "
        "outlived its fetch's timeout counts until it ends); past it, a request naming a "
        "document not cached yet is answered ``temporarily_unavailable``, to retry.",
    ),
    Key(
        "MCP_OAUTH_CONSENT_MAX_AGE",
        900.0,
        seconds,
        "Seconds a consent form stays valid (its CSRF token expires then).",
    ),
    Key(
        "MCP_OAUTH_REVOCATION_CACHE_SECONDS",
        0.0,
        non_negative_seconds,
        "Seconds a worker that cannot hear revocations on the MCP backend's pub/sub (threaded "
        "workers, a Redis Cluster, a dropped subscription) trusts that a token's family is not "
        "revoked before asking the storage again (0: on every request, so a revocation applies "
        "at once everywhere).",
    ),
    Key(
        "MCP_OAUTH_REGISTRATION_RATE_LIMIT",
        "10/minute;100/hour",
        optional_str,
        "Registrations (``/oauth/register``) a client address may make, as a ``limits`` rate "
        "(None: no limit); a Client ID Metadata Document fetched (not cached yet) counts as "
        "one. Counted where ``MCP_RATELIMIT_STORAGE_URI`` says, else in the Redis "
        "of ``MCP_BACKEND``, else per process.",
    ),
    Key(
        "MCP_OAUTH_TOKEN_RATE_LIMIT",
        "120/minute",
        optional_str,
        "Token requests (``/oauth/token``) a client address may make, as a ``limits`` rate "
        "(None: no limit); counted like ``MCP_OAUTH_REGISTRATION_RATE_LIMIT``.",
    ),
    Key(
        "MCP_OAUTH_MAX_CLIENTS",
        10_000,
        non_negative_int,
        "Most clients kept from Dynamic Client Registration; registration is refused at "
        "that number until some expire (0: no bound). As many fetched client metadata "
        "documents are cached at most; past it, each process keeps 256 at most, the least "
        "recently used dropped first.",
    ),
    Key(
        "MCP_OAUTH_MAX_GRANTS",
        20,
        non_negative_int,
        "Most token families (authorizations: the tokens redeemed from one code and "
        "refreshed since) a user keeps per client; redeeming one more revokes the oldest, "
        "as a sign-in on a new device signs out the oldest (0: no bound). 20 leaves room "
        "for every device and browser a person connects one client from, and bounds what "
        "one account and one client can store.",
    ),
    Key(
        "MCP_OAUTH_LOGIN_VIEW",
        None,
        optional_str,
        "Endpoint of the login view (None: Flask-Login's ``login_manager.login_view``).",
    ),
)

KEY_NAMES = tuple(key.name for key in (*KEYS, *OAUTH_SERVER_KEYS))


@dataclasses.dataclass(frozen=True)
class Settings:
    """The validated configuration of one app, read once by ``init_app``."""

    path: str
    backend: t.Any
    page_size: int
    max_body_size: int
    max_uri_length: int
    max_sessions: int
    session_idle_timeout: float | None
    session_max_lifetime: float | None
    handshake_timeout: float | None
    max_sessions_per_client: int | None
    allowed_hosts: tuple[str, ...] | None
    allowed_origins: tuple[str, ...] | None
    expose_internal_errors: bool | None
    enable_get_stream: bool
    sse_heartbeat: float
    sse_retry_ms: int
    sse_buffer_events: int
    sse_resume_bytes: int
    sse_resume_bytes_per_client: int
    sse_max_stream_seconds: float | None
    write_timeout: float
    read_timeout: float
    request_timeout: float
    client_request_timeout: float
    default_log_level: str
    state_key: str | None
    state_max_age: float
    state_encrypt: bool
    cache_ttl_ms: int
    cache_scope: str
    read_cache_ttl_ms: int
    read_cache_scope: str
    max_streams: int | None
    stream_share_per_client: float
    health_liveness_path: str | None
    health_readiness_path: str | None
    server_card: bool
    ratelimit_storage_uri: str | None
    auth_resource: str | None
    auth_authorization_servers: tuple[str, ...] | None
    auth_scopes_supported: tuple[str, ...] | None
    auth_required_scopes: tuple[str, ...]
    auth_implied_scopes: dict[str, tuple[str, ...]]
    auth_hide_unauthorized: bool
    auth_metadata: dict[str, t.Any]
    auth_insecure_http: bool
    auth_jwt_jwks_url: str | None
    auth_jwt_issuer: tuple[str, ...] | None
    auth_jwt_audience: tuple[str, ...] | None
    auth_jwt_algorithms: tuple[str, ...]
    auth_jwt_leeway: float
    auth_jwt_jwks_cache_seconds: float
    task_ttl: float
    task_poll_interval_ms: int
    task_timeout: float
    task_max_running: int
    task_share_per_client: float
    task_lease: float
    task_immediate_ms: int
    max_client_info_size: int
    max_subscriptions: int | None
    task_max_per_client: int | None
    task_max_bytes_per_client: int | None
    task_large_result_size: int
    task_large_result_ttl: float
    # the explorer page
    explorer: bool | None
    explorer_path: str
    explorer_access: t.Callable[[t.Any], t.Any] | None
    explorer_sandbox_origin: str | None


def load_settings(config: t.MutableMapping[str, t.Any]) -> Settings:
    """Apply defaults to ``config`` and return the validated :class:`Settings`.

    :raises ValueError: a key has an invalid value, or two keys contradict each other;
        the message names the keys.
    """
    settings = Settings(**read_keys(config, KEYS, "MCP_"))
    if settings.cache_scope == "public" and settings.auth_hide_unauthorized:
        raise ValueError(
            "MCP_CACHE_SCOPE = 'public' says the 2026-07-28 lists are the same for every "
            "caller, and any shared cache may serve them to anyone; with "
            "MCP_AUTH_HIDE_UNAUTHORIZED they differ by the caller's scopes. Leave "
            "MCP_CACHE_SCOPE unset or set MCP_CACHE_SCOPE = 'private' (or show every "
            "caller the whole list)."
        )
    return settings


def read_key(config: t.Mapping[str, t.Any], name: str) -> t.Any:
    """Return the value of the ``MCP_*`` key ``name`` in ``config`` (its default if unset),
    for a part that reads one key before ``mcp.init_app`` loads them all (the
    authorization server reads ``MCP_ALLOWED_HOSTS``).

    :raises ValueError: the value is invalid; the message names the key.
    """
    key = next(key for key in KEYS if key.name == name)
    return key.read(config.get(name, key.default))


def read_keys(
    config: t.MutableMapping[str, t.Any], keys: t.Iterable[Key], prefix: str
) -> dict[str, t.Any]:
    """Apply the defaults of ``keys`` to ``config`` and return their values (:meth:`Key.read`).

    Each value is named as its key without ``prefix``, lower-cased: ``MCP_PAGE_SIZE`` with
    the prefix ``MCP_`` is ``page_size``.

    :raises ValueError: a key has an invalid value; the message names the key.
    """
    return {
        key.name[len(prefix) :].lower(): key.read(config.setdefault(key.name, key.default))
        for key in keys
    }


def warn_unknown_keys(config: t.Mapping[str, t.Any]) -> None:
    """Warn about ``MCP_*`` keys that Flask-MCP does not know, naming the closest valid key.

    Only keys starting with ``MCP_`` are checked: other extensions' keys are
    none of Flask-MCP's business. A key set through
    :meth:`flask.Config.from_prefixed_env` (``FLASK_MCP_PAGE_SIZ``) arrives
    here as ``MCP_PAGE_SIZ`` and is caught too.

    :warns ConfigWarning: once per unknown key.
    """
    from .errors import ConfigWarning

    known = set(KEY_NAMES)
    suffixes = [name[4:] for name in KEY_NAMES]  # compared without the MCP_ every key shares
    for name in sorted(k for k in config if isinstance(k, str) and k.startswith("MCP_")):
        if name in known:
            continue
        close = difflib.get_close_matches(name[4:], suffixes, n=1, cutoff=0.6)
        hint = (
            f"did you mean MCP_{close[0]}?"
            if close
            else "the valid keys are in the configuration table of Flask-MCP's README."
        )
        warnings.warn(
            f"Unknown configuration key {name}: Flask-MCP ignores it; {hint}",
            ConfigWarning,
            stacklevel=_caller_level(),
        )


def _caller_level() -> int:
    """Return the ``stacklevel`` of the first frame outside Flask-MCP, for warnings."""
    frame = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("flask_mcp"):
        frame = frame.f_back
        level += 1
    return level


__all__ = [
    "KEYS",
    "KEY_NAMES",
    "OAUTH_SERVER_KEYS",
    "Key",
    "Settings",
    "load_settings",
    "read_keys",
    "warn_unknown_keys",
]
