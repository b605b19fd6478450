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

import logging
import time
import typing as t

from flask import Response
from flask import request
from werkzeug.wsgi import ClosingIterator

from . import _concurrency
from . import jsonrpc
from . import protocol
from . import signals
from . import sse
from .errors import InvalidParams
from .errors import MCPHTTPError
from .sse import LIVENESS_INTERVAL
from .sse import client_gone as client_gone

if t.TYPE_CHECKING:
    from .registry import Registry
    from .state import AppState

logger = logging.getLogger("flask_mcp")
KEEPALIVE = b":\n\n"
_FLAGS = {
    "toolsListChanged": ("tools", "listChanged", "notifications/tools/list_changed"),
    "promptsListChanged": ("prompts", "listChanged", "notifications/prompts/list_changed"),
    "resourcesListChanged": ("resources", "listChanged", "notifications/resources/list_changed"),
}
_UPDATED = "notifications/resources/updated"


def honoured(registry: Registry, params: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return the part of a listen filter this server honours.

    :raises InvalidParams: the filter is malformed.
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
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            raise InvalidParams(
                "Invalid params: notifications.resourceSubscriptions must be an array of URIs."
            )
        if caps.get("resources", {}).get("subscribe"):
            agreed["resourceSubscriptions"] = list(dict.fromkeys(uris))
    return agreed


def _wanted(message: t.Any, agreed: dict[str, t.Any]) -> bool:
    if not isinstance(message, dict):
        return False
    method = message.get("method")
    if method == _UPDATED:
        params = message.get("params") or {}
        return params.get("uri") in agreed.get("resourceSubscriptions", ())
    return any(agreed.get(flag) and method == spec[2] for flag, spec in _FLAGS.items())


def _tagged(method: str, params: dict[str, t.Any], subscription_id: t.Any) -> dict[str, t.Any]:
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    tagged = {**params, "_meta": {**meta, protocol.META_SUBSCRIPTION_ID: subscription_id}}
    return jsonrpc.notification(method, tagged)


def open_stream(
    registry: Registry, state: AppState, request_id: t.Any, params: dict[str, t.Any]
) -> Response:
    """Answer ``subscriptions/listen`` with a stream that stays open.

    :raises InvalidParams: the filter is malformed.
    :raises MCPHTTPError: 503 when this worker cannot hold another stream.
    """
    agreed = honoured(registry, params)
    settings = state.settings
    if not state.slots.acquire():
        raise MCPHTTPError(
            503,
            "Service Unavailable: this worker cannot hold another stream; retry later, add "
            "--threads, or run gunicorn with -k gevent.",
            code=-32603,
            request_id=request_id,
            headers={"Retry-After": "2"},
        )
    try:
        subscription = state.backend.subscribe(state.listen_channel)
    except BaseException:
        state.slots.release()
        raise
    sock = _concurrency.client_socket(request.environ)
    ack = jsonrpc.notification(
        "notifications/subscriptions/acknowledged",
        {"_meta": {protocol.META_SUBSCRIPTION_ID: request_id}, "notifications": agreed},
    )
    app = state.app
    stream_id = f"listen-{request_id}"
    end: dict[str, t.Any] = {"reason": "client-gone", "closed": False}

    def cleanup() -> None:
        if end["closed"]:
            return
        end["closed"] = True
        subscription.close()
        state.slots.release()
        signals.send(
            signals.stream_closed, app, session_id=None, stream_id=stream_id, kind="listen",
            reason=end["reason"],
        )  # fmt: skip

    def generate() -> t.Iterator[bytes]:
        try:
            yield sse.frame(ack)
            opened = last_write = time.monotonic()
            while True:
                now = time.monotonic()
                limit = settings.sse_max_stream_seconds
                if limit is not None and now - opened >= limit:
                    end["reason"] = "timeout"
                    meta = {protocol.META_SUBSCRIPTION_ID: request_id}
                    result = {"resultType": "complete", "_meta": meta}
                    yield sse.frame(jsonrpc.result(request_id, result))
                    return
                message = subscription.get(LIVENESS_INTERVAL)
                if message is not None and _wanted(message, agreed):
                    params = message.get("params") or {}
                    yield sse.frame(_tagged(message["method"], params, request_id))
                    last_write = time.monotonic()
                elif time.monotonic() - last_write >= settings.sse_heartbeat:
                    yield KEEPALIVE
                    last_write = time.monotonic()
                elif message is None and client_gone(sock):
                    return
        finally:
            cleanup()

    signals.send(signals.stream_opened, app, session_id=None, stream_id=stream_id, kind="listen")
    return Response(
        ClosingIterator(generate(), [cleanup]),
        mimetype="text/event-stream",
        headers=sse.HEADERS,
        direct_passthrough=True,
    )
