"""``subscriptions/listen``: the long-lived notification streams of 2026-07-28.

A client POSTs ``subscriptions/listen`` with a filter; the SSE response stays
open, starts with ``notifications/subscriptions/acknowledged`` and then carries
only the change notifications the client opted in to, each tagged with the
subscription id (the listen request's JSON-RPC id).

Changes are published on the backend's pub/sub channel, so a listen stream held
by one worker hears about changes made in any worker (with a shared backend
such as Redis; the in-memory backend reaches the streams of its own process).
"""

from __future__ import annotations

import secrets
import time
import typing as t

from flask import Response

from .. import protocol
from .. import signals
from ..backends.base import MESSAGE
from ..backends.base import Event
from ..backends.base import ReadResult
from ..convert import to_json
from ..errors import INTERNAL_ERROR
from ..errors import STORE_UNAVAILABLE_BEFORE_START
from ..errors import BackendUnavailable
from ..errors import InvalidParams
from ..errors import MCPError
from ..errors import MCPHTTPError
from ..errors import MissingClientCapability
from ..protocol import jsonrpc
from ..runtime import tasks
from . import sse
from .sse import client_gone as client_gone

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..backends.base import Subscription
    from ..runtime.state import AppState
    from ..server.registry import Registry

_FLAGS = {
    "toolsListChanged": ("tools", "listChanged", "notifications/tools/list_changed"),
    "promptsListChanged": ("prompts", "listChanged", "notifications/prompts/list_changed"),
    "resourcesListChanged": ("resources", "listChanged", "notifications/resources/list_changed"),
}
_UPDATED = "notifications/resources/updated"


def honoured(
    registry: Registry,
    params: dict[str, t.Any],
    state: AppState | None = None,
    auth: AuthInfo | None = None,
    path_args: dict[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Return the part of a listen filter this server honours.

    ``notifications.resourceSubscriptions`` keeps the resources the caller's scopes
    allow it to read (see :func:`_readable`).
    ``notifications.taskIds`` (when the server serves the tasks extension) is honoured
    for the caller's own tasks, created under the endpoint's path (``path_args``) as
    ``tasks/get`` finds them; asking for it without declaring the extension fails
    with -32021.

    :raises InvalidParams: the filter is malformed.
    :raises MissingClientCapability: task ids without the tasks extension.
    """
    wanted = params.get("notifications", {})
    if not isinstance(wanted, dict):
        raise InvalidParams("Invalid params: 'notifications' must be an object of filters.")
    caps = registry.capabilities(protocol.STATELESS)
    agreed: dict[str, t.Any] = {}
    for flag, (family, feature, _method) in _FLAGS.items():
        value = wanted.get(flag)
        if value is not None and not isinstance(value, bool):
            raise InvalidParams(f"Invalid params: notifications.{flag} must be a boolean.")
        if value and caps.get(family, {}).get(feature):
            agreed[flag] = True
    limit = None if state is None else state.settings.max_subscriptions
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            raise InvalidParams(
                "Invalid params: notifications.resourceSubscriptions must be an array of URIs."
            )
        uris = _distinct("resourceSubscriptions", uris, limit)
        if caps.get("resources", {}).get("subscribe"):
            agreed["resourceSubscriptions"] = _readable(registry, uris, state, auth)
    task_ids = wanted.get("taskIds")
    if task_ids is not None and tasks.EXTENSION in caps.get("extensions", {}):
        if not isinstance(task_ids, list) or not all(isinstance(i, str) for i in task_ids):
            raise InvalidParams("Invalid params: notifications.taskIds must be an array of ids.")
        task_ids = _distinct("taskIds", task_ids, limit)
        meta = params.get("_meta")
        declared = meta.get(protocol.META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
        extensions = declared.get("extensions") if isinstance(declared, dict) else None
        if not isinstance(extensions, dict) or tasks.EXTENSION not in extensions:
            raise MissingClientCapability("extensions", tasks.EXTENSION)
        if state is not None:
            owner = tasks.owner_key(None if auth is None else auth.principal, None)
            path = to_json(path_args or {})
            store = tasks.store_of(state)
            agreed["taskIds"] = [
                task_id
                for task_id in task_ids
                if (record := store.get(task_id)) is not None
                and record.get("owner") == owner
                and record.get("request", {}).get("pathArgs", {}) == path
            ]
    return agreed


def _readable(
    registry: Registry, uris: list[str], state: AppState | None, auth: AuthInfo | None
) -> list[str]:
    """Return the URIs of ``uris`` whose resource the caller's scopes allow it to read.

    ``resources/subscribe`` (2025-11-25) refuses a resource (or template) declared with
    ``scopes=`` the caller lacks, and a URI its template's ``security`` refuses; a
    listen leaves them out of what it acknowledges and follows. A URI no resource
    serves is kept, as before.
    """
    authenticator = None if state is None else state.authenticator
    if authenticator is None:
        return uris
    kept = []
    for uri in uris:
        try:
            found = registry.find_resource(uri)
        except InvalidParams:  # a value the template's security refuses: not followed
            continue
        scopes = () if found is None else found[0].scopes
        if not scopes or authenticator.allows(auth, scopes):
            kept.append(uri)
    return kept


def _distinct(field: str, values: list[str], limit: int | None) -> list[str]:
    """Return ``values`` without repeats, refusing more than ``limit`` of them.

    Each is looked up (a task id, in the backend) and matched against every
    notification: what one listen may name is bounded as a session's subscriptions.

    :raises InvalidParams: more than ``limit`` distinct values.
    """
    distinct = list(dict.fromkeys(values))
    if limit is not None and len(distinct) > limit:
        raise InvalidParams(
            f"Invalid params: notifications.{field} names {len(distinct)} items; a listen "
            f"follows at most {limit} (MCP_MAX_SUBSCRIPTIONS). Follow fewer.",
            {"limit": limit},
        )
    return distinct


def _wanted(message: t.Any, agreed: dict[str, t.Any]) -> bool:
    if not isinstance(message, dict):
        return False
    method = message.get("method")
    if method == "notifications/tasks":
        return (message.get("params") or {}).get("taskId") in agreed.get("taskIds", ())
    if method == _UPDATED:
        params = message.get("params") or {}
        return params.get("uri") in agreed.get("resourceSubscriptions", ())
    return any(agreed.get(flag) and method == spec[2] for flag, spec in _FLAGS.items())


def _tagged(method: str, params: dict[str, t.Any], subscription_id: t.Any) -> dict[str, t.Any]:
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    tagged = {**params, "_meta": {**meta, protocol.META_SUBSCRIPTION_ID: subscription_id}}
    return jsonrpc.notification(method, tagged)


#: The method this module serves.
METHOD = "subscriptions/listen"
#: The ``error`` of a listen the backend failed (``listen_finished``, ``request_finished``):
#: a listen changes nothing, so it may simply be sent again later.
BACKEND_FAILED = {"code": INTERNAL_ERROR, "message": STORE_UNAVAILABLE_BEFORE_START}


class ListenCall:
    """One ``subscriptions/listen``, from its arrival to its end: the signals that tell it.

    Made as the request arrives, over HTTP and stdio alike, it sends ``request_started``
    and :data:`~flask_mcp.signals.listen_started`; :meth:`finish` (or :meth:`fail`) sends
    ``listen_finished`` and ``request_finished`` once, however the listen ended. The
    middleware cannot do it: the stream outlives the view.

    :param state: the state of the app serving it.
    :param request_id: the listen's JSON-RPC id (its subscription id).
    :param params: its params, whose ``_meta`` was checked already.
    """

    def __init__(self, state: AppState, request_id: t.Any, params: dict[str, t.Any]) -> None:
        self.app = state.app
        self.request_id = request_id
        #: This listen's alone (many clients use id 1), for the signals and its stream.
        self.stream_id = f"listen-{secrets.token_hex(8)}"
        self.started = time.perf_counter()
        self.finished = False
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        signals.send(
            signals.request_started, self.app, method=METHOD, request_id=request_id, session_id=None
        )
        signals.send(
            signals.listen_started,
            self.app,
            request_id=request_id,
            stream_id=self.stream_id,
            protocol_version=meta.get(protocol.META_PROTOCOL_VERSION),
            meta=meta,
        )

    def finish(self, reason: str, error: dict[str, t.Any] | None = None) -> None:
        """Tell that the listen ended, once: ``reason`` and ``error`` as ``listen_finished``
        documents them."""
        if self.finished:
            return
        self.finished = True
        duration = time.perf_counter() - self.started
        signals.send(
            signals.listen_finished,
            self.app,
            request_id=self.request_id,
            stream_id=self.stream_id,
            duration=duration,
            reason=reason,
            error=error,
        )
        signals.send(
            signals.request_finished,
            self.app,
            method=METHOD,
            request_id=self.request_id,
            session_id=None,
            duration=duration,
            error=error,
        )

    def fail(self, exc: BaseException) -> None:
        """Tell that the listen was answered with the error of ``exc`` instead of a stream."""
        if isinstance(exc, BackendUnavailable):
            self.finish("backend-unavailable", dict(BACKEND_FAILED))
        elif isinstance(exc, MCPError):
            self.finish("refused", exc.to_error())
        elif isinstance(exc, MCPHTTPError):
            self.finish("refused", {"code": exc.rpc_code, "message": exc.description or ""})
        else:  # a bug: answered with a redacted -32603
            self.finish("refused", {"code": INTERNAL_ERROR, "message": "Internal error"})


class ListenSource:
    """A listen stream's subscription, read by a :class:`~flask_mcp.transport.sse.StreamReader`.

    It yields only the notifications the client opted in to, tagged with the
    subscription id; a notification it drops reads as silence.

    :param stream_id: the stream's id (:attr:`ListenCall.stream_id`); default: a new one.
    """

    def __init__(
        self,
        subscription: Subscription,
        agreed: dict[str, t.Any],
        request_id: t.Any,
        stream_id: str | None = None,
    ):
        self.subscription = subscription
        self.agreed = agreed
        self.request_id = request_id
        self.stream_id = stream_id or f"listen-{secrets.token_hex(8)}"
        self._seq = 0

    def attach(self) -> int:
        return 1

    def detach(self, token: int) -> None:
        return None

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        message = self.subscription.get(timeout)
        if message is None or not _wanted(message, self.agreed):
            return ReadResult([])
        self._seq += 1
        tagged = _tagged(message["method"], message.get("params") or {}, self.request_id)
        return ReadResult([Event(self._seq, MESSAGE, tagged)])


def open_stream(
    registry: Registry,
    state: AppState,
    request_id: t.Any,
    params: dict[str, t.Any],
    sock: t.Any = None,
    auth: AuthInfo | None = None,
    path_args: dict[str, t.Any] | None = None,
    server_info: dict[str, t.Any] | None = None,
    address: str | None = None,
) -> Response:
    """Answer ``subscriptions/listen`` with a stream that stays open.

    It starts with ``notifications/subscriptions/acknowledged``; after
    ``MCP_SSE_MAX_STREAM_SECONDS`` it ends with the listen request's result, which
    carries ``server_info`` in ``_meta`` as every 2026-07-28 result does.

    :param sock: the client's connection, checked while the stream is idle.
    :param auth: the caller, whose share of the stream slots the stream counts against
        (``MCP_STREAM_SHARE_PER_CLIENT``), with its ``address`` (``REMOTE_ADDR``).
    :param path_args: the endpoint's path variables (``MCP_PATH``): only tasks created
        under them are honoured.
    :raises InvalidParams: the filter is malformed.
    :raises MCPHTTPError: 503 when this worker cannot hold another stream for this client.
    """
    call = ListenCall(state, request_id, params)
    try:
        agreed = honoured(registry, params, state, auth, path_args)
        holder = state.slots.acquire(auth, address)
        if holder is None:
            raise MCPHTTPError(
                503,
                "Service Unavailable: this worker cannot hold another stream for this client "
                "(its stream slots are held, or this client holds its share of them: "
                "MCP_STREAM_SHARE_PER_CLIENT); close a stream or retry later. The server's "
                "operator may add --threads, run gunicorn with -k gevent, or raise "
                "MCP_MAX_STREAMS (on gevent: half the open-file limit, ulimit -n).",
                code=-32603,
                request_id=request_id,
                headers={"Retry-After": "2"},
            )
        try:
            subscription = state.backend.subscribe(state.listen_channel)
        except BaseException:
            state.slots.release(holder)
            raise
    except BaseException as exc:
        call.fail(exc)
        raise
    settings = state.settings
    meta = {protocol.META_SUBSCRIPTION_ID: request_id}
    ack = jsonrpc.notification(
        "notifications/subscriptions/acknowledged", {"_meta": meta, "notifications": agreed}
    )
    closing_meta = dict(meta)
    if server_info is not None:
        closing_meta[protocol.META_SERVER_INFO] = server_info
    result = jsonrpc.result(request_id, {"resultType": "complete", "_meta": closing_meta})
    reader = sse.StreamReader(
        ListenSource(subscription, agreed, request_id, call.stream_id),
        after=0,
        with_ids=False,
        heartbeat=settings.sse_heartbeat,
        max_seconds=settings.sse_max_stream_seconds,
        retry_ms=settings.sse_retry_ms,
        sock=sock,
        closing=sse.frame(result),
    )
    return sse.event_stream(
        state,
        reader,
        kind="listen",
        session_id=None,
        opening=sse.frame(ack),
        on_close=lambda reason: _closed(call, subscription, reason),
        holder=holder,
    )


def _closed(call: ListenCall, subscription: Subscription, reason: str) -> None:
    """Let go of a listen's subscription when its stream ends, and tell how it ended.

    ``reason`` is the reader's: ``timeout`` (the listen's result was sent),
    ``backend-unavailable``, ``shutdown`` (the stopping server ended it with its result),
    or ``client-gone`` (any other: a listen's stream ends only on its timeout, when its
    connection does or when the server stops).
    """
    try:
        subscription.close()
    finally:
        if reason == "backend-unavailable":
            call.finish(reason, dict(BACKEND_FAILED))
        else:
            call.finish(reason if reason in ("timeout", "shutdown") else "client-gone")


__all__ = [
    "BACKEND_FAILED",
    "METHOD",
    "ListenCall",
    "ListenSource",
    "client_gone",
    "honoured",
    "open_stream",
]
