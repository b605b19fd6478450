"""OpenTelemetry for MCP requests: one SERVER span per request, and the MCP metrics.

Follows the OpenTelemetry semantic conventions for MCP (development status):

- one span of kind ``SERVER`` per request, named ``"{mcp.method.name} {target}"``
  (``tools/call add``, ``prompts/get greet``; ``resources/read`` and the other
  methods are named by the method alone, as the URI would make too many names),
  with ``mcp.method.name``, ``mcp.session.id``, ``mcp.protocol.version``,
  ``jsonrpc.request.id``, ``gen_ai.tool.name``, ``gen_ai.prompt.name``,
  ``mcp.resource.uri`` (``resources/read``, ``resources/subscribe`` and
  ``resources/unsubscribe``), ``gen_ai.operation.name`` (``execute_tool``),
  ``network.transport`` (``tcp`` over HTTP, ``pipe`` over stdio) and
  ``network.protocol.name`` (``http``, over HTTP only), and on failure
  ``error.type`` (the JSON-RPC code, ``-32603`` for an exception, or
  ``tool_error`` for an ``isError`` tool result) and ``rpc.response.status_code``:
  those of the answer the client got, also when ``MCP_REQUEST_TIMEOUT`` ended the
  request before its handler returned, and ``cancelled`` for a request cancelled
  before it was answered;
- its parent is the trace context in ``params._meta`` (``traceparent``,
  ``tracestate``) when the client sent one, linked to the HTTP span; else the
  HTTP span of ``opentelemetry-instrumentation-flask`` (also from a handler's own
  greenlet or thread, which does not inherit the view's context);
- requests the server sends to the client (sampling, elicitation, roots) are
  child spans of kind ``CLIENT``, ``sampling/createMessage`` and so on, whose
  trace context goes to the client in the request's ``params._meta``;
- a task's run is an ``INTERNAL`` span ``execute_tool {gen_ai.tool.name}``, wherever it
  runs (a Celery worker too): a child of the ``tools/call`` span that created the task,
  and linked to it, its trace context kept in the task's record; the requests its handler
  sends to the client (``ctx.elicit``, ``ctx.create_message``) are ``CLIENT`` spans, its
  children, ended when the client answers or the run ends;
- histograms ``mcp.server.operation.duration`` and ``mcp.server.session.duration``
  (seconds), with the ``network.*`` attributes of the spans.

Span names and the tool, prompt and method attributes come only from names the
server declares (``unknown`` for the others), each attribute takes at most
``max_label_values`` values (then ``other``) of at most ``max_label_length``
characters (:mod:`flask_mcp.contrib.labels`), so a client cannot grow the
metric streams or push the real tools into the SDK's overflow series (its
cardinality limit is 2,000 per metric). ``mcp.resource.uri`` and
``jsonrpc.request.id`` are span attributes only, cut to :data:`MAX_URI_LENGTH`
and the label length.

Install with ``pip install 'Flask-MCP[otel]'`` and configure the SDK as usual:

.. code-block:: python

    from flask_mcp.contrib.opentelemetry import MCPInstrumentor

    otel = MCPInstrumentor(mcp)   # the global tracer and meter providers

    def create_app():
        app = Flask(__name__)
        mcp.init_app(app)
        otel.init_app(app)        # the requests of this app are traced
"""

from __future__ import annotations

import contextvars
import threading
import time
import typing as t
import weakref

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics
    from opentelemetry import propagate
    from opentelemetry import trace
    from opentelemetry.trace import Link
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace import Status
    from opentelemetry.trace import StatusCode
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"flask_mcp.contrib.opentelemetry needs opentelemetry-api ({exc.name} is "
        "missing): pip install 'Flask-MCP[otel]'."
    ) from exc

from flask import has_request_context
from flask import request

from .. import signals
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..transport.stdio_channel import TRANSPORT_KEY
from .labels import CANCELLED
from .labels import MAX_LENGTH
from .labels import MAX_VALUES
from .labels import UNKNOWN
from .labels import LabelBounds
from .labels import ended_early
from .labels import listen_ended
from .labels import raised_error

if t.TYPE_CHECKING:
    from flask import Flask

    from ..extension import MCP
    from ..server.middleware import CallInfo
    from ..server.middleware import CallNext

#: The explicit bucket boundaries the conventions advise for the MCP duration histograms.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Where ``opentelemetry-instrumentation-flask`` keeps the request's span in the WSGI environ.
FLASK_SPAN_KEY = "opentelemetry-flask.span_key"
_OPERATIONS = {"tools/call": "execute_tool"}
#: The methods besides ``resources/read`` whose span carries ``mcp.resource.uri``.
_SUBSCRIPTIONS = frozenset({"resources/subscribe", "resources/unsubscribe"})
#: The longest ``mcp.resource.uri`` span attribute kept (it is never a metric attribute).
MAX_URI_LENGTH = 1024
#: The key of the :class:`MCPInstrumentor` in ``app.extensions``.
EXTENSION_KEY = "mcp_opentelemetry"
#: Sessions an app's table holds before those that ended unseen are looked for.
PRUNE_AT = 64
#: The ``network.*`` attributes of a request that came over HTTP.
_HTTP = {"network.transport": "tcp", "network.protocol.name": "http"}


class AppTelemetry:
    """What the instrumentor keeps for one app: its label bounds and its sessions' start."""

    def __init__(self, bounds: LabelBounds) -> None:
        self.bounds = bounds
        #: session id -> (monotonic start, protocol version, ``network.*`` attributes),
        #: for the session duration.
        self.sessions: dict[str, tuple[float, str, dict[str, str]]] = {}
        #: The size of :attr:`sessions` at which the sessions that ended unseen are
        #: forgotten (twice the number kept at the last look).
        self.prune_at = PRUNE_AT
        #: stream id -> (span, perf_counter start, metric attributes) of the open
        #: ``subscriptions/listen`` requests.
        self.listens: dict[str, tuple[trace.Span, float, dict[str, t.Any]]] = {}
        self.lock = threading.Lock()


def _network() -> dict[str, str]:
    """The ``network.*`` attributes of the current request: how its message came.

    Over HTTP ``tcp`` and ``http``; over stdio ``pipe`` (the semantic conventions'
    value for stdio); none for the command line's own requests, which no network carried.
    """
    transport = request.environ.get(TRANSPORT_KEY) if has_request_context() else None
    if transport is None:
        return dict(_HTTP)
    if transport == "stdio":
        return {"network.transport": "pipe"}
    return {}


def _flask_span() -> trace.Span | None:
    """The HTTP span of the current Flask request, if the Flask instrumentation made one."""
    if not has_request_context():
        return None
    span = request.environ.get(FLASK_SPAN_KEY)
    return span if isinstance(span, trace.Span) else None


class MCPInstrumentor:
    """Traces and measures the MCP requests of a server, on each app it is registered on.

    Registers a middleware (the outermost so far: register it before other
    middleware to time them too) and receivers of the signals of server-to-client
    requests and sessions. One object for any number of apps: call
    :meth:`init_app` for each; the requests of an app it is not registered on
    are not traced.

    :param mcp: the server to instrument.
    :param app: an app to register on now (or call :meth:`init_app`).
    :param tracer_provider: default: the global one.
    :param meter_provider: default: the global one.
    :param max_label_values: distinct values each name attribute takes (per
        app); then ``other``.
    :param max_label_length: the longest name attribute kept.
    """

    def __init__(
        self,
        mcp: MCP,
        app: Flask | None = None,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        max_label_values: int = MAX_VALUES,
        max_label_length: int = MAX_LENGTH,
    ) -> None:
        from .. import __name__ as package

        self.tracer = trace.get_tracer(package, tracer_provider=tracer_provider)
        meter = metrics.get_meter(package, meter_provider=meter_provider)
        self.operation_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="MCP request or notification duration as observed on the receiver "
            "from the time it was received until the result or ack is sent.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.session_duration = meter.create_histogram(
            "mcp.server.session.duration",
            unit="s",
            description="The duration of the MCP session as observed on the MCP server.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.mcp = mcp
        self.max_label_values = max_label_values
        self.max_label_length = max_label_length
        self._apps: weakref.WeakKeyDictionary[Flask, AppTelemetry] = weakref.WeakKeyDictionary()
        #: The child spans of server-to-client requests the running call has open.
        self._children: contextvars.ContextVar[dict[t.Any, trace.Span] | None] = (
            contextvars.ContextVar(f"flask_mcp_otel_children_{id(self)}", default=None)
        )
        #: The spans of the task runs of this greenlet or thread, and the tokens that
        #: restore the context and the open child spans of what ran before.
        self._task_runs: contextvars.ContextVar[tuple[tuple[trace.Span, object, t.Any], ...]] = (
            contextvars.ContextVar(f"flask_mcp_otel_task_runs_{id(self)}", default=())
        )
        mcp.middleware(self)
        signals.task_creating.connect(self._on_task_creating, weak=False)
        signals.task_run_started.connect(self._on_task_run_started, weak=False)
        signals.task_run_finished.connect(self._on_task_run_finished, weak=False)
        signals.client_request_sending.connect(self._on_client_request, weak=False)
        signals.client_response_received.connect(self._on_client_response, weak=False)
        signals.session_created.connect(self._on_session_created, weak=False)
        signals.listen_started.connect(self._on_listen_started, weak=False)
        signals.listen_finished.connect(self._on_listen_finished, weak=False)
        signals.session_closed.connect(self._on_session_closed, weak=False)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Trace and measure the MCP requests of ``app``.

        :raises RuntimeError: the instrumentor is already registered on ``app``.
        """
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                "MCPInstrumentor is already registered on this app. Call init_app once per app."
            )
        app.extensions[EXTENSION_KEY] = self
        bounds = LabelBounds(max_values=self.max_label_values, max_length=self.max_label_length)
        self._apps[app] = AppTelemetry(bounds)

    def _of(self, app: t.Any) -> AppTelemetry | None:
        try:
            return self._apps.get(app)
        except TypeError:  # not weakly referable: not an app
            return None

    # -- the server span -------------------------------------------------------------

    def __call__(self, call: CallInfo, call_next: CallNext) -> dict[str, t.Any]:
        """Run ``call`` in its SERVER span and record its duration."""
        telemetry = self._of(call.app)
        if telemetry is None:  # an app without init_app: not traced
            return call_next(call)
        started = time.perf_counter()
        bounds = telemetry.bounds
        method = bounds.method(self.mcp, call.method)
        kind = call.kind
        name = call.name
        attributes: dict[str, t.Any] = {
            "mcp.method.name": method,
            "mcp.protocol.version": call.protocol_version,
            **_network(),
        }
        if call.request_id is not None:
            attributes["jsonrpc.request.id"] = str(call.request_id)[: bounds.max_length]
        session_id = call.session_id
        if session_id is not None:
            attributes["mcp.session.id"] = session_id
        target = None
        if name is not None:
            if kind == "tool":
                attributes["gen_ai.tool.name"] = target = bounds.name(self.mcp, kind, name)
            elif kind == "prompt":
                attributes["gen_ai.prompt.name"] = target = bounds.name(self.mcp, kind, name)
            else:
                attributes["mcp.resource.uri"] = name[:MAX_URI_LENGTH]
        elif method in _SUBSCRIPTIONS:
            uri = call.params.get("uri")
            if isinstance(uri, str):
                attributes["mcp.resource.uri"] = uri[:MAX_URI_LENGTH]
        operation = _OPERATIONS.get(method)
        if operation is not None:
            attributes["gen_ai.operation.name"] = operation
        parent, links = self._parent(call.meta)
        span = self.tracer.start_span(
            f"{method} {target}" if target and method != UNKNOWN else method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            links=links,
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        children_token = self._children.set({})
        error_type = status_code = None
        try:
            result = call_next(call)
        except MCPError as exc:
            error_type = status_code = bounds.error_type(str(exc.code))
            span.set_attribute("rpc.response.status_code", status_code)
            span.set_status(Status(StatusCode.ERROR, exc.message))
            raise
        except BaseException as exc:
            error_type, status_code = raised_error(exc)
            error_type = bounds.error_type(error_type)
            if status_code is not None:
                span.set_attribute("rpc.response.status_code", status_code)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            if isinstance(exc, Exception):
                span.record_exception(exc)
            raise
        else:
            if method == "tools/call" and result.get("isError") is True:
                error_type = "tool_error"
                span.set_status(Status(StatusCode.ERROR))
            return result
        finally:
            try:
                ended = ended_early(call)
                if ended is not None:  # what the client got, not what the handler returned
                    error_type, status_code, description = ended
                    error_type = bounds.error_type(error_type)
                    if status_code is not None:
                        status_code = bounds.error_type(status_code)
                        span.set_attribute("rpc.response.status_code", status_code)
                    span.set_status(Status(StatusCode.ERROR, description))
                self._end_children("no_response")
                if session_id is None and call.session_id is not None:  # initialize made one
                    span.set_attribute("mcp.session.id", call.session_id)
                if error_type is not None:
                    span.set_attribute("error.type", error_type)
                    attributes["error.type"] = error_type
            finally:  # whatever the above raised: the span ends, the context is restored
                self._children.reset(children_token)
                try:
                    span.end()
                finally:
                    otel_context.detach(token)
            for key in ("jsonrpc.request.id", "mcp.session.id", "mcp.resource.uri"):
                attributes.pop(key, None)  # too many values for a metric's attributes
            if status_code is not None:
                attributes["rpc.response.status_code"] = status_code
            self.operation_duration.record(time.perf_counter() - started, attributes)

    def _parent(
        self, meta: t.Mapping[str, t.Any]
    ) -> tuple[otel_context.Context | None, list[Link]]:
        """The parent context of a request's span, and its links.

        The trace context of ``params._meta`` (``meta``) wins (the HTTP span becomes
        a link); else the current span; else the Flask request's HTTP span.
        """
        current = trace.get_current_span()
        in_span = current.get_span_context().is_valid
        http_span = current if in_span else _flask_span()
        if "traceparent" in meta:
            carrier = {k: v for k, v in meta.items() if isinstance(v, str)}
            extracted = propagate.extract(carrier)
            if trace.get_current_span(extracted).get_span_context().is_valid:
                links = [Link(http_span.get_span_context())] if http_span is not None else []
                return extracted, links
        if in_span:
            return None, []
        if http_span is not None:
            return trace.set_span_in_context(http_span), []
        return None, []

    # -- subscriptions/listen --------------------------------------------------------

    def _on_listen_started(
        self,
        sender: t.Any,
        *,
        request_id: t.Any,
        stream_id: str,
        protocol_version: t.Any,
        meta: dict[str, t.Any],
        **_: t.Any,
    ) -> None:
        """Start the SERVER span of a listen, as :meth:`__call__` does for other requests.

        It stays open, not current (the listen runs no handler), until
        ``listen_finished`` names its stream.
        """
        telemetry = self._of(sender)
        if telemetry is None:
            return
        method = "subscriptions/listen"
        attributes: dict[str, t.Any] = {
            "mcp.method.name": method,
            "mcp.protocol.version": str(protocol_version),
            **_network(),
        }
        parent, links = self._parent(meta)
        span = self.tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                **attributes,
                "jsonrpc.request.id": str(request_id)[: telemetry.bounds.max_length],
            },
            links=links,
        )
        with telemetry.lock:
            telemetry.listens[stream_id] = (span, time.perf_counter(), attributes)

    def _on_listen_finished(
        self,
        sender: t.Any,
        *,
        stream_id: str,
        reason: str,
        error: dict[str, t.Any] | None,
        **_: t.Any,
    ) -> None:
        """End a listen's span and record its duration, with the outcome the client saw
        (:func:`~flask_mcp.contrib.labels.listen_ended`)."""
        telemetry = self._of(sender)
        if telemetry is None:
            return
        with telemetry.lock:
            opened = telemetry.listens.pop(stream_id, None)
        if opened is None:
            return
        span, started, attributes = opened
        bounds = telemetry.bounds
        try:
            ended = listen_ended(reason, error)
            if ended is not None:
                error_type, status_code, description = ended
                error_type = attributes["error.type"] = bounds.error_type(error_type)
                span.set_attribute("error.type", error_type)
                if status_code is not None:
                    status_code = attributes["rpc.response.status_code"] = error_type
                    span.set_attribute("rpc.response.status_code", status_code)
                span.set_status(Status(StatusCode.ERROR, description))
        finally:
            span.end()
        self.operation_duration.record(time.perf_counter() - started, attributes)

    # -- server-to-client requests -------------------------------------------------

    def _on_client_request(
        self,
        sender: t.Any,
        *,
        method: str,
        request_id: t.Any,
        session_id: t.Any,
        params: dict[str, t.Any] | None = None,
        **_: t.Any,
    ) -> None:
        children = self._children.get()
        if children is None:
            return  # not inside an instrumented request
        attributes = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
        transport = _network().get("network.transport")
        if transport is not None:
            attributes["network.transport"] = transport
        if session_id is not None:
            attributes["mcp.session.id"] = str(session_id)
        span = self.tracer.start_span(method, kind=SpanKind.CLIENT, attributes=attributes)
        children[(session_id, request_id)] = span
        if params is not None:  # the client may continue the trace from the request's _meta
            meta = params.get("_meta")
            meta = dict(meta) if isinstance(meta, dict) else {}
            propagate.inject(meta, context=trace.set_span_in_context(span))
            params["_meta"] = meta

    def _on_client_response(
        self, sender: t.Any, *, request_id: t.Any, session_id: t.Any, error: t.Any, **_: t.Any
    ) -> None:
        children = self._children.get()
        if children is None:
            return
        span = children.pop((session_id, request_id), None)
        if span is None:
            return
        if isinstance(error, dict):
            code = str(error.get("code"))
            span.set_attribute("error.type", code)
            span.set_attribute("rpc.response.status_code", code)
            span.set_status(Status(StatusCode.ERROR, str(error.get("message", ""))))
        span.end()

    def _end_children(self, error_type: str) -> None:
        children = self._children.get()
        if not children:
            return
        for span in children.values():
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, "the client did not answer"))
            span.end()
        children.clear()

    # -- task runs ---------------------------------------------------------------

    def _on_task_creating(self, sender: t.Any, **kwargs: t.Any) -> None:
        """Keep the creating request's trace context (its ``tools/call`` span) in the task.

        In the W3C form of the configured propagators (``traceparent``, ``tracestate``),
        so that the record carries it to another process (a Celery worker).
        """
        if self._of(sender) is None:
            return
        if trace.get_current_span().get_span_context().is_valid:
            propagate.inject(kwargs["trace"])

    def _on_task_run_started(self, sender: t.Any, *, tool: str, **kwargs: t.Any) -> None:
        """Start the run's span, a child of the creating request's span and linked to it.

        The OpenTelemetry guidance for deferred work (messaging, OTEP 0220) links the
        span that processes a message to its creation context, and allows that context
        as the parent as well when it would otherwise start a new trace: one task, one
        trace, with the link telling that the run outlives its request.
        """
        telemetry = self._of(sender)
        if telemetry is None:
            return
        carrier = kwargs["trace"]
        parent = propagate.extract(carrier) if carrier else None
        created = trace.get_current_span(parent).get_span_context()
        name = telemetry.bounds.name(self.mcp, "tool", tool)
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=parent if created.is_valid else None,
            kind=SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
            links=[Link(created)] if created.is_valid else [],
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        children_token = self._children.set({})  # the run's questions to the client
        self._task_runs.set((*self._task_runs.get(), (span, token, children_token)))

    def _on_task_run_finished(
        self,
        sender: t.Any,
        *,
        error: dict[str, t.Any] | None,
        is_error: bool,
        cancelled: bool,
        **_: t.Any,
    ) -> None:
        runs = self._task_runs.get()
        telemetry = self._of(sender)
        if not runs or telemetry is None:
            return
        span, token, children_token = runs[-1]
        self._task_runs.set(runs[:-1])
        try:
            self._end_children("no_response")  # questions the run no longer waits for
        finally:
            self._children.reset(children_token)
        error_type = None
        if error is not None:
            error_type = telemetry.bounds.error_type(str(error.get("code")))
            span.set_status(Status(StatusCode.ERROR, str(error.get("message", ""))))
        elif is_error:
            error_type = "tool_error"
            span.set_status(Status(StatusCode.ERROR))
        elif cancelled:
            error_type = CANCELLED
            span.set_status(Status(StatusCode.ERROR, "the task's run was cancelled"))
        if error_type is not None:
            span.set_attribute("error.type", error_type)
        span.end()
        otel_context.detach(t.cast(t.Any, token))

    # -- sessions ------------------------------------------------------------------

    def _on_session_created(
        self, sender: t.Any, *, session_id: str, protocol_version: str, **_: t.Any
    ) -> None:
        telemetry = self._of(sender)
        if telemetry is None:
            return
        network = _network()
        with telemetry.lock:
            telemetry.sessions[session_id] = (time.monotonic(), protocol_version, network)
            known = (
                list(telemetry.sessions) if len(telemetry.sessions) >= telemetry.prune_at else []
            )
        if known:
            self._forget_ended(sender, telemetry, known)

    def _forget_ended(self, app: t.Any, telemetry: AppTelemetry, known: list[str]) -> None:
        """Forget the sessions among ``known`` that no longer exist.

        A session may end without ``session_closed`` in this worker: another worker
        reaped or deleted it, or ended it to make room before its handshake finished.
        Looked for once the table doubled since the last look, so that it holds at most
        about twice the live sessions, at a constant cost per session.
        """
        try:
            live = self.mcp.state(app).backend.get_sessions(known)
        except BackendUnavailable:  # look again after as many sessions more
            live = None
        with telemetry.lock:
            if live is not None:
                for session_id in known:
                    if session_id not in live:
                        telemetry.sessions.pop(session_id, None)
            telemetry.prune_at = max(PRUNE_AT, 2 * len(telemetry.sessions))

    def _on_session_closed(
        self, sender: t.Any, *, session_id: str, reason: str = "", **_: t.Any
    ) -> None:
        telemetry = self._of(sender)
        if telemetry is None:
            return
        with telemetry.lock:
            opened = telemetry.sessions.pop(session_id, None)
        if opened is None:
            return  # made by another worker: its start is not known here
        started, version, network = opened
        attributes: dict[str, t.Any] = {"mcp.protocol.version": version, **network}
        if reason not in ("", "deleted"):  # "idle", "lifetime", "handshake": the server's
            attributes["error.type"] = reason
        self.session_duration.record(time.monotonic() - started, attributes)


__all__ = [
    "DURATION_BUCKETS",
    "EXTENSION_KEY",
    "FLASK_SPAN_KEY",
    "MAX_URI_LENGTH",
    "AppTelemetry",
    "MCPInstrumentor",
]
