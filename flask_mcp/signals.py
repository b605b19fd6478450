"""Blinker signals for telemetry.

Every signal is sent with the Flask app as the sender. Receivers run in the
greenlet or thread that does the work; an exception raised by a receiver is
logged and swallowed, so a failing receiver never breaks a request or a live
stream.
"""

from __future__ import annotations

import logging
import typing as t

from blinker import Namespace

logger = logging.getLogger("flask_mcp")
_signals = Namespace()

request_started = _signals.signal("mcp-request-started")
"""A JSON-RPC request arrived. Kwargs: ``method``, ``request_id``, ``session_id``."""

request_finished = _signals.signal("mcp-request-finished")
"""A JSON-RPC request finished, once for each ``request_started``, also when it was
cancelled or timed out. Kwargs: ``method``, ``request_id``, ``session_id``,
``duration`` (seconds), ``error`` (the JSON-RPC error dict the client got, the
timeout's for a request ``MCP_REQUEST_TIMEOUT`` ended, or ``None``: a result, or no
answer after a cancellation, which ``request_cancelled`` tells). A
``subscriptions/listen`` finishes when its stream ends (``listen_finished`` tells how)."""

tool_called = _signals.signal("mcp-tool-called")
"""A tool ran. Kwargs: ``tool`` (name), ``duration``, ``is_error``."""

resource_read = _signals.signal("mcp-resource-read")
"""A resource was read. Kwargs: ``uri``, ``duration``."""

prompt_rendered = _signals.signal("mcp-prompt-rendered")
"""A prompt was rendered. Kwargs: ``prompt`` (name), ``duration``."""

session_created = _signals.signal("mcp-session-created")
"""A session was created. Kwargs: ``session_id``, ``protocol_version``, ``client_info``."""

session_closed = _signals.signal("mcp-session-closed")
"""A session ended, once. Kwargs: ``session_id``, ``reason`` (``"deleted"``,
``"idle"``, ``"lifetime"``, or ``"handshake"``: ended to make room under
``MCP_MAX_SESSIONS`` before its handshake finished)."""

notification_sent = _signals.signal("mcp-notification-sent")
"""A notification was queued for a client. Kwargs: ``method``, ``session_id``."""

client_request_sending = _signals.signal("mcp-client-request-sending")
"""A request is about to be sent to the client. Kwargs: ``method``, ``request_id``,
``session_id``, ``params`` (the request's params, a copy a receiver may change: a
tracer adds its ``traceparent`` to ``params["_meta"]``). Also for a task's question,
in the greenlet or thread of its run, before it is put in the task's ``inputRequests``:
``request_id`` is its key there, ``session_id`` the session that created a 2025-11-25
task (else ``None``)."""

client_request_sent = _signals.signal("mcp-client-request-sent")
"""A request was sent to the client (a task's question: put in its ``inputRequests``).
Kwargs: ``method``, ``request_id``, ``session_id``."""

client_response_received = _signals.signal("mcp-client-response-received")
"""The client answered a server request (a task's question: its run took the answer).
Kwargs: ``request_id``, ``session_id``, ``error`` (the error dict or ``None``)."""

request_cancelled = _signals.signal("mcp-request-cancelled")
"""A request was cancelled. Kwargs: ``request_id``, ``session_id``, ``reason``."""

stream_opened = _signals.signal("mcp-stream-opened")
"""An SSE stream opened. Kwargs: ``session_id``, ``stream_id``, ``kind``
(``"post"``, ``"get"``, ``"resume"``, ``"listen"``)."""

stream_closed = _signals.signal("mcp-stream-closed")
"""An SSE stream closed. Kwargs: ``session_id``, ``stream_id``, ``kind``, ``reason``:
``"end"`` (the stream ended: a request's answer was sent), ``"timeout"``
(``MCP_SSE_MAX_STREAM_SECONDS``), ``"disconnect"`` (the server closed it, the client
resumes), ``"client-gone"`` (the client closed its connection), ``"superseded"``
(another connection took the stream over), ``"missing"`` (the stream expired or was
evicted), ``"session-ended"`` (its session ended: the client's ``DELETE``, or the
server's idle or lifetime bound), ``"shutdown"`` (the server stopped and ended it, as
the time bound does, as gunicorn's ``--graceful-timeout`` ran out: a gevent worker kills
its connections' greenlets then; on a gthread worker a stream its client takes up
again, resumable or a listen, ends), or ``"backend-unavailable"``."""

listen_started = _signals.signal("mcp-listen-started")
"""A ``subscriptions/listen`` request (2026-07-28) arrived, before its filter is checked, in
the view that serves it (over stdio, in a request context of its own), after
``request_started``. Kwargs: ``request_id``, ``stream_id`` (this listen's alone: many
clients use id 1; ``listen_finished``, ``stream_opened`` and ``stream_closed`` name it
too), ``protocol_version``, ``meta`` (the request's ``params._meta``: a tracer reads
the client's trace context, ``traceparent`` and ``tracestate``, in it)."""

listen_finished = _signals.signal("mcp-listen-finished")
"""A ``subscriptions/listen`` ended, once for each ``listen_started``, where its stream ended
(the worker's greenlet or thread that wrote it), before ``request_finished``. Kwargs:
``request_id``, ``stream_id``, ``duration`` (seconds), ``reason``: ``"timeout"``
(``MCP_SSE_MAX_STREAM_SECONDS`` ended it with its result), ``"client-gone"`` (the client
closed its connection, or stdin), ``"cancelled"`` (the client's
``notifications/cancelled``, over stdio), ``"shutdown"`` (over HTTP, a gevent or gthread
worker that stops ended it with its result, as the time bound does), ``"interrupted"``
(over stdio, the interrupted server cancelled it with ``notifications/cancelled``: no
result), ``"backend-unavailable"`` or ``"refused"`` (it was answered with the JSON-RPC
error ``error``: a malformed filter, a worker that holds no more streams); ``error`` (the
JSON-RPC error dict, or ``None``)."""

roots_list_changed = _signals.signal("mcp-roots-list-changed")
"""The client said its roots changed. Kwargs: ``session_id``."""

auth_failed = _signals.signal("mcp-auth-failed")
"""Authorization failed. Kwargs: ``kind``, ``description``."""

task_status_changed = _signals.signal("mcp-task-status-changed")
"""A task changed status or status message. Kwargs: ``task_id``, ``status``,
``status_message``."""

task_created = _signals.signal("mcp-task-created")
"""A ``tools/call`` became a task. Kwargs: ``task_id``, ``tool``."""

task_creating = _signals.signal("mcp-task-creating")
"""A ``tools/call`` is becoming a task, in the request that creates it, before its record
is stored. Kwargs: ``task_id``, ``tool``, ``trace`` (an empty dict a receiver may fill
with string fields: a tracer adds the request's trace context, ``traceparent`` and
``tracestate``; it is kept in the task's record and given to ``task_run_started``
wherever the task runs, a Celery worker included)."""

task_run_started = _signals.signal("mcp-task-run-started")
"""A task's handler starts running, in the greenlet or thread that runs it (on a Celery
worker too). Kwargs: ``task_id``, ``tool``, ``trace`` (what the receivers of
``task_creating`` put in it)."""

task_run_finished = _signals.signal("mcp-task-run-finished")
"""A task's handler ended, in the greenlet or thread that ran it, once for each
``task_run_started`` however it ended. Kwargs: ``task_id``, ``tool``, ``error`` (the
JSON-RPC error dict of a run that failed, else ``None``), ``is_error`` (the tool's
result is an ``isError`` result), ``cancelled`` (the run was cancelled or interrupted
by ``MCP_TASK_TIMEOUT`` and has no outcome of its own)."""

task_finished = _signals.signal("mcp-task-finished")
"""A task reached a terminal status (completed, failed, cancelled). Kwargs: ``task_id``,
``status``."""


def send(signal: t.Any, sender: t.Any, **kwargs: t.Any) -> None:
    """Send ``signal`` if anyone listens, logging and swallowing receiver errors."""
    if not signal.receivers:
        return
    for receiver in list(signal.receivers_for(sender)):
        try:
            receiver(sender, **kwargs)
        except Exception:
            logger.exception("A receiver of the %r signal raised; ignoring it.", signal.name)


__all__ = [
    "auth_failed",
    "client_request_sending",
    "client_request_sent",
    "client_response_received",
    "listen_finished",
    "listen_started",
    "notification_sent",
    "prompt_rendered",
    "request_cancelled",
    "request_finished",
    "request_started",
    "resource_read",
    "roots_list_changed",
    "send",
    "session_closed",
    "session_created",
    "stream_closed",
    "stream_opened",
    "task_created",
    "task_creating",
    "task_finished",
    "task_run_finished",
    "task_run_started",
    "task_status_changed",
    "tool_called",
]
