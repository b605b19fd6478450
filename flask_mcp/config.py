"""Every ``MCP_*`` configuration key, its default and its validation.

Keys are read once, in :meth:`flask_mcp.MCP.init_app`. Set them in
``app.config`` or, through :meth:`flask.Config.from_prefixed_env`, as
``FLASK_MCP_*`` environment variables.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
import typing as t
import warnings

from . import _config_values as values


@dataclasses.dataclass(frozen=True)
class Key:
    """One configuration key: name, default, converter and documentation."""

    name: str
    default: t.Any
    convert: t.Callable[[t.Any], t.Any]
    doc: str


KEYS: tuple[Key, ...] = (
    Key("MCP_PATH", "/mcp", values.path, "URL path of the MCP endpoint."),
    Key(
        "MCP_BACKEND",
        "memory://",
        lambda v: v if not isinstance(v, str) else v.strip(),
        "Shared-state backend: ``memory://`` (one process), ``redis://host:port/db`` "
        "(``rediss://``, ``unix://``; many workers and machines), ``redis+cluster://host:port/`` "
        "(a Redis Cluster) or a backend object.",
    ),
    Key("MCP_PAGE_SIZE", 100, values.positive_int, "Items per page of every list method."),
    Key(
        "MCP_MAX_BODY_SIZE",
        4 * 1024 * 1024,
        values.positive_int,
        "Largest accepted POST body in bytes (413 above it).",
    ),
    Key(
        "MCP_MAX_URI_LENGTH",
        8192,
        values.positive_int,
        "Longest resource URI accepted by ``resources/read``, ``resources/subscribe`` and "
        "``completion/complete`` (-32602 above it, before any template is matched).",
    ),
    Key(
        "MCP_MAX_SESSIONS",
        10_000,
        values.positive_int,
        "Most live sessions; ``initialize`` past it gets 503.",
    ),
    Key(
        "MCP_SESSION_IDLE_TIMEOUT",
        3600,
        values.optional_seconds,
        "Seconds without traffic after which a session ends (None: never).",
    ),
    Key(
        "MCP_SESSION_MAX_LIFETIME",
        24 * 3600,
        values.optional_seconds,
        "Seconds after which a session ends whatever its traffic (None: never).",
    ),
    Key(
        "MCP_HANDSHAKE_TIMEOUT",
        30.0,
        values.optional_seconds,
        "Seconds a new session may wait for the client's ``notifications/initialized``; "
        "past it the session ends when room is needed, and stops counting toward "
        "``MCP_MAX_SESSIONS`` (None: it lives as any session).",
    ),
    Key(
        "MCP_MAX_SESSIONS_PER_CLIENT",
        1000,
        lambda v: None if v in (None, "", 0, "0") else values.positive_int(v),
        "Most live sessions of one client: its token's subject when authorization is on, "
        "else its address (``REMOTE_ADDR``, which ``ProxyFix`` sets from the proxy's "
        "``X-Forwarded-For``); ``initialize`` past it gets 429 (None: no quota). On by "
        "default, so that one client cannot take every session of ``MCP_MAX_SESSIONS``.",
    ),
    Key(
        "MCP_ALLOWED_HOSTS",
        None,
        values.string_list,
        "Accepted ``Host`` values (``host`` or ``host:port``, ``*`` for any). "
        "None: on a loopback connection only localhost names are accepted.",
    ),
    Key(
        "MCP_ALLOWED_ORIGINS",
        None,
        values.string_list,
        "Accepted ``Origin`` values (``*`` for any). None: no Origin, or a localhost origin.",
    ),
    Key(
        "MCP_EXPOSE_INTERNAL_ERRORS",
        None,
        values.optional_bool,
        "Send the text of unexpected exceptions to clients (debugging only). None: when the "
        "app runs in debug mode (``flask run --debug``, ``app.run(debug=True)``).",
    ),
    Key("MCP_ENABLE_GET_STREAM", True, values.as_bool, "Serve the GET stream (405 when false)."),
    Key(
        "MCP_SSE_HEARTBEAT",
        15.0,
        values.seconds,
        "Seconds between keep-alive comments on idle SSE streams.",
    ),
    Key(
        "MCP_SSE_RETRY_MS",
        1000,
        values.positive_int,
        "``retry:`` value (milliseconds) sent on SSE streams to 2025-11-25 clients.",
    ),
    Key(
        "MCP_SSE_BUFFER_SIZE",
        1000,
        values.positive_int,
        "Events kept per session for ``Last-Event-ID`` replay.",
    ),
    Key(
        "MCP_SSE_MAX_STREAM_SECONDS",
        None,
        values.optional_seconds,
        "Close an SSE connection after this many seconds; the client resumes (None: never).",
    ),
    Key(
        "MCP_REQUEST_TIMEOUT",
        600.0,
        values.seconds,
        "Seconds a handler may run before its request ends with an error.",
    ),
    Key(
        "MCP_CLIENT_REQUEST_TIMEOUT",
        120.0,
        values.seconds,
        "Seconds to wait for the client's answer to a sampling/elicitation/roots request.",
    ),
    Key(
        "MCP_DEFAULT_LOG_LEVEL",
        "debug",
        values.log_level,
        "Level of ``ctx.log`` messages sent before the client calls ``logging/setLevel``.",
    ),
    Key(
        "MCP_STATE_KEY",
        None,
        values.optional_str,
        "Key sealing 2026-07-28 ``requestState`` (default: the app's ``SECRET_KEY``).",
    ),
    Key(
        "MCP_STATE_MAX_AGE",
        600.0,
        values.seconds,
        "Seconds a sealed 2026-07-28 ``requestState`` stays valid (the time a user has to answer).",
    ),
    Key(
        "MCP_STATE_ENCRYPT",
        False,
        values.as_bool,
        "Encrypt ``requestState`` with AES-GCM (needs ``cryptography``), not only sign it.",
    ),
    Key(
        "MCP_CACHE_TTL_MS",
        0,
        values.non_negative_int,
        "``ttlMs`` of 2026-07-28 list and ``server/discover`` results (0: immediately stale).",
    ),
    Key(
        "MCP_CACHE_SCOPE",
        "private",
        values.cache_scope,
        "``cacheScope`` of 2026-07-28 list and ``server/discover`` results.",
    ),
    Key(
        "MCP_READ_CACHE_TTL_MS",
        0,
        values.non_negative_int,
        "Default ``ttlMs`` of ``resources/read`` results; a resource's ``ttl_ms=`` overrides it.",
    ),
    Key(
        "MCP_READ_CACHE_SCOPE",
        "private",
        values.cache_scope,
        "Default ``cacheScope`` of ``resources/read`` results; ``cache_scope=`` overrides it.",
    ),
    Key(
        "MCP_MAX_STREAMS",
        None,
        lambda v: None if v in (None, "", 0, "0") else values.positive_int(v),
        "Most SSE responses open at once in this process; past it the server answers "
        "503 instead of hanging (None: unlimited on gevent, threads - 1 on gthread).",
    ),
    Key(
        "MCP_HEALTH_LIVENESS_PATH",
        None,
        lambda v: None if v in (None, "") else values.path(v),
        "Serve a liveness probe here (200 while the process answers; e.g. ``/livez``); "
        "None: off. Outside ``MCP_PATH``, never behind MCP authorization.",
    ),
    Key(
        "MCP_HEALTH_READINESS_PATH",
        None,
        lambda v: None if v in (None, "") else values.path(v),
        "Serve a readiness probe here (200 when the backend answers a ping, else 503; e.g. "
        "``/readyz``); None: off.",
    ),
    Key(
        "MCP_SERVER_CARD",
        False,
        values.as_bool,
        "Serve a Server Card (SEP-2127, experimental) at ``MCP_PATH`` + ``/server-card`` and "
        "an AI Catalog at ``/.well-known/ai-catalog.json``, for discovery before connecting.",
    ),
    Key(
        "MCP_RATELIMIT_STORAGE_URI",
        None,
        values.optional_str,
        "Where ``flask_mcp.contrib.ratelimit`` counts (``memory://``, ``redis://host:port/db``: "
        "the storage URLs of the ``limits`` library); None: ``MCP_BACKEND`` when it is a "
        "Redis URL, else ``memory://``.",
    ),
    Key(
        "MCP_AUTH_RESOURCE",
        None,
        values.optional_url,
        "Turns authorization on: the canonical URI of this MCP server (RFC 8707), the URL "
        "clients connect to, for example ``https://mcp.example.com/mcp``.",
    ),
    Key(
        "MCP_AUTH_AUTHORIZATION_SERVERS",
        None,
        values.url_list,
        "Issuer URLs of the authorization servers that issue tokens for this server "
        "(``authorization_servers`` of the RFC 9728 metadata).",
    ),
    Key(
        "MCP_AUTH_SCOPES_SUPPORTED",
        None,
        values.scopes,
        "``scopes_supported`` of the metadata: the scopes basic use needs (None: omitted).",
    ),
    Key(
        "MCP_AUTH_REQUIRED_SCOPES",
        (),
        values.scopes,
        "Scopes every request needs (403 ``insufficient_scope`` without them).",
    ),
    Key(
        "MCP_AUTH_IMPLIED_SCOPES",
        None,
        values.scope_map,
        "Scope hierarchy: a broader scope maps to the scopes it implies, for example "
        '``{"files": ["files:read", "files:write"]}``.',
    ),
    Key(
        "MCP_AUTH_HIDE_UNAUTHORIZED",
        False,
        values.as_bool,
        "Leave out of tools/resources/prompts lists what the caller's scopes do not allow.",
    ),
    Key(
        "MCP_AUTH_METADATA",
        None,
        values.json_object,
        "Extra fields of the protected resource metadata (``resource_documentation``...).",
    ),
    Key(
        "MCP_AUTH_INSECURE_HTTP",
        False,
        values.as_bool,
        "Accept ``http://`` authorization server, resource and JWKS URLs on non-local hosts "
        "(a private test network only; OAuth 2.1 requires HTTPS).",
    ),
    Key(
        "MCP_AUTH_JWT_JWKS_URL",
        None,
        values.optional_url,
        "Check JWT access tokens with the keys at this JWKS URL (needs ``Flask-MCP[jwt]``).",
    ),
    Key(
        "MCP_AUTH_JWT_ISSUER",
        None,
        values.string_list,
        "Accepted ``iss`` values (None: ``MCP_AUTH_AUTHORIZATION_SERVERS``).",
    ),
    Key(
        "MCP_AUTH_JWT_AUDIENCE",
        None,
        values.string_list,
        "Accepted ``aud`` values (None: ``MCP_AUTH_RESOURCE``).",
    ),
    Key(
        "MCP_AUTH_JWT_ALGORITHMS",
        ("RS256", "ES256"),
        values.string_list,
        "Accepted JWT signature algorithms (asymmetric only: never ``none`` or ``HS*``).",
    ),
    Key(
        "MCP_AUTH_JWT_LEEWAY",
        30.0,
        values.non_negative_seconds,
        "Seconds of clock skew allowed when checking ``exp``, ``nbf`` and ``iat``.",
    ),
    Key(
        "MCP_AUTH_JWT_JWKS_CACHE_SECONDS",
        300.0,
        values.seconds,
        "Seconds the JWKS is cached; an unknown ``kid`` refetches it sooner (at most every 30 s).",
    ),
    Key(
        "MCP_TASK_TTL",
        3600.0,
        values.seconds,
        "Seconds a task (and its result) is kept after it was created: its ``ttlMs``.",
    ),
    Key(
        "MCP_TASK_POLL_INTERVAL_MS",
        500,
        values.positive_int,
        "The ``pollIntervalMs`` suggested to clients polling a task.",
    ),
    Key(
        "MCP_TASK_TIMEOUT",
        3600.0,
        values.seconds,
        "Seconds a task's handler may run before the task fails.",
    ),
    Key(
        "MCP_TASK_MAX_RUNNING",
        32,
        values.positive_int,
        "Tasks one process runs at once; tools/call asking for more tasks gets a busy error.",
    ),
    Key(
        "MCP_TASK_LEASE",
        15.0,
        values.seconds,
        "Seconds without a sign of life from the process running a task before the task is "
        "marked failed (its worker died).",
    ),
    Key(
        "MCP_TASK_IMMEDIATE_MS",
        0,
        values.non_negative_int,
        "Milliseconds a 2026-07-28 task-augmented tools/call waits for its task to finish: "
        "one that does is answered with its result instead of a task (0: always a task).",
    ),
    # -- bounds on what one caller keeps (issue 33; docs/reliability.md) --------------------
    Key(
        "MCP_MAX_CLIENT_INFO_SIZE",
        16 * 1024,
        values.positive_int,
        "Largest ``capabilities`` and ``clientInfo`` of an ``initialize``, together, as JSON "
        "bytes: what a session stores of its client; larger gets JSON-RPC error -32602.",
    ),
    Key(
        "MCP_TASK_MAX_PER_CLIENT",
        1000,
        lambda v: None if v in (None, "", 0, "0") else values.positive_int(v),
        "Task records one caller keeps at once, running or finished (a caller: its principal, "
        "and its session in the handshake era; without authorization every 2026-07-28 caller "
        "is one); a task-augmented tools/call past it gets a JSON-RPC error (None: no bound).",
    ),
    Key(
        "MCP_TASK_MAX_BYTES_PER_CLIENT",
        256 * 1024 * 1024,
        lambda v: None if v in (None, "", 0, "0") else values.positive_int(v),
        "Bytes of task records (arguments and results, as JSON) one caller keeps at once; a "
        "task past it is refused, or fails with an error instead of its result (None: no bound).",
    ),
    Key(
        "MCP_TASK_LARGE_RESULT_SIZE",
        1024 * 1024,
        values.positive_int,
        "Bytes above which a finished task's record is kept only MCP_TASK_LARGE_RESULT_TTL "
        "seconds, not MCP_TASK_TTL.",
    ),
    Key(
        "MCP_TASK_LARGE_RESULT_TTL",
        300.0,
        values.seconds,
        "Seconds a finished task with a result above MCP_TASK_LARGE_RESULT_SIZE is kept for "
        "its client to fetch it.",
    ),
)

KEY_NAMES = tuple(key.name for key in KEYS)


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
    sse_buffer_size: int
    sse_max_stream_seconds: float | None
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
    task_lease: float
    task_immediate_ms: int
    max_client_info_size: int
    task_max_per_client: int | None
    task_max_bytes_per_client: int | None
    task_large_result_size: int
    task_large_result_ttl: float


def load_settings(config: t.MutableMapping[str, t.Any]) -> Settings:
    """Apply defaults to ``config`` and return the validated :class:`Settings`.

    :raises ValueError: a key has an invalid value; the message names the key.
    """
    values: dict[str, t.Any] = {}
    for key in KEYS:
        raw = config.setdefault(key.name, key.default)
        try:
            values[key.name[4:].lower()] = key.convert(raw)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Invalid {key.name}={raw!r}: {exc}. {key.doc}") from None
    return Settings(**values)


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
    "Key",
    "Settings",
    "load_settings",
    "warn_unknown_keys",
]
