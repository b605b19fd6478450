"""Prometheus metrics of MCP requests, sessions, streams and tasks, at a path of each app.

Install with ``pip install 'Flask-MCP[prometheus]'``:

.. code-block:: python

    from flask_mcp.contrib.prometheus import PrometheusMetrics

    metrics = PrometheusMetrics(mcp)        # module level, beside mcp

    def create_app():
        app = Flask(__name__)
        mcp.init_app(app)
        metrics.init_app(app)               # GET /metrics

Each app gets a registry of its own (with the process, platform and GC
collectors of prometheus_client's default registry), so two apps of one
factory never count into each other's series.

Metrics (``mcp_server_`` prefix):

==========================================  =========  ==================================
``operation_duration_seconds``              histogram  method, tool, error_type
``requests_total``                          counter    method, tool
``errors_total``                            counter    method, tool, error_type
``sessions``                                gauge      live sessions in the backend, read
                                                       at scrape time (every worker's with
                                                       Redis)
``open_streams``                            gauge      kind (post, get, resume, listen)
``tasks``                                   gauge      status, fed by ``task_created`` and
                                                       ``task_status_changed``
``task_status_changes_total``               counter    status
==========================================  =========  ==================================

A ``subscriptions/listen`` (2026-07-28) counts in the first three when its stream
ends (``listen_finished``): ok when it ended with its result
(``MCP_SSE_MAX_STREAM_SECONDS``, or a worker that stops), ``cancelled`` when the client
left, ``shutdown`` when an interrupted stdio server cancelled it, the JSON-RPC code of
a refusal.

``tool`` is the tool or prompt name when the server declares it, ``unknown``
for a name it does not, empty for other methods (resource URIs are left out:
templates would make too many series). ``method`` is ``unknown`` for a method
the server does not know. ``error_type`` is the JSON-RPC error code, or
``tool_error`` for an ``isError`` tool result. Each label takes at most
``max_label_values`` values (then ``other``), each at most ``max_label_length``
characters (:mod:`flask_mcp.contrib.labels`): what a client sends cannot grow
the series.

The scrape gets the Host check of the MCP endpoint (``MCP_ALLOWED_HOSTS``;
421 for a refused Host).

Several gunicorn workers: set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory
before the workers start, and mark dead workers in gunicorn's ``child_exit``
hook (``contrib/gunicorn.conf.py`` does both); a scrape of any worker then
shows the sum of all of them (``multiprocess_mode="livesum"`` for the gauges).
"""

from __future__ import annotations

import os
import threading
import time
import typing as t
import weakref

from flask import Flask
from flask import Response
from flask import current_app

try:
    from prometheus_client import CONTENT_TYPE_LATEST
    from prometheus_client import CollectorRegistry
    from prometheus_client import Counter
    from prometheus_client import Gauge
    from prometheus_client import GCCollector
    from prometheus_client import Histogram
    from prometheus_client import PlatformCollector
    from prometheus_client import ProcessCollector
    from prometheus_client import generate_latest
    from prometheus_client.core import GaugeMetricFamily
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"flask_mcp.contrib.prometheus needs prometheus-client ({exc.name} is missing): "
        "pip install 'Flask-MCP[prometheus]'."
    ) from exc

from .. import signals
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..transport.health import check_request_host
from .labels import MAX_LENGTH
from .labels import MAX_VALUES
from .labels import LabelBounds
from .labels import ended_early
from .labels import listen_ended
from .labels import raised_error

if t.TYPE_CHECKING:
    from ..extension import MCP
    from ..server.middleware import CallInfo
    from ..server.middleware import CallNext

#: The histogram buckets (seconds): those the OpenTelemetry MCP conventions advise.
BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Task statuses that end a task (SEP-2663); the ``tasks`` gauge stops counting them live.
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The key of the :class:`PrometheusMetrics` in ``app.extensions``.
EXTENSION_KEY = "mcp_prometheus"
#: Tasks an app's table holds before those that ended unseen are looked for.
PRUNE_AT = 64
#: The method whose requests outlive the middleware: counted from ``listen_finished``.
LISTEN = "subscriptions/listen"


def multiprocess_dir() -> str | None:
    """The ``PROMETHEUS_MULTIPROC_DIR`` of the process, if set (multiprocess mode)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def app_registry() -> CollectorRegistry:
    """Return a new registry with the collectors of prometheus_client's default one."""
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


class _Sessions:
    """A collector that reads the live sessions of one app at scrape time."""

    def __init__(self, mcp: MCP, app: Flask) -> None:
        self.mcp = mcp
        self.app = weakref.ref(app)

    def collect(self) -> t.Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "mcp_server_sessions", "Live MCP sessions in the backend.", labels=["server"]
        )
        app = self.app()
        if app is not None:
            try:
                count = len(self.mcp.state(app).backend.session_ids())
            except Exception:  # the backend is down: leave the sample out
                count = None
            if count is not None:
                family.add_metric([self.mcp.name], count)
        yield family


class AppMetrics:
    """The metrics of one app, in its registry, with the label bounds of that app.

    :param registry: where the metrics are registered.
    :param bounds: the label bounds of the app.
    """

    def __init__(self, registry: CollectorRegistry, bounds: LabelBounds) -> None:
        self.registry = registry
        self.bounds = bounds
        self.duration = Histogram(
            "mcp_server_operation_duration_seconds",
            "MCP request duration, from receipt to result.",
            ["method", "tool", "error_type"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.requests = Counter(
            "mcp_server_requests", "MCP requests.", ["method", "tool"], registry=registry
        )
        self.errors = Counter(
            "mcp_server_errors",
            "MCP requests answered with an error or an isError tool result.",
            ["method", "tool", "error_type"],
            registry=registry,
        )
        self.open_streams = Gauge(
            "mcp_server_open_streams",
            "SSE streams open now.",
            ["kind"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.tasks = Gauge(
            "mcp_server_tasks",
            "Tasks in each status, as seen by task_created and task_status_changed.",
            ["status"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.task_changes = Counter(
            "mcp_server_task_status_changes",
            "Task status changes.",
            ["status"],
            registry=registry,
        )
        self.sessions: _Sessions | None = None
        #: The live status of each task this worker saw change.
        self.live_tasks: dict[t.Any, str] = {}
        #: The size of :attr:`live_tasks` at which the tasks that ended unseen are
        #: forgotten (twice the number kept at the last look).
        self.prune_at = PRUNE_AT
        self.lock = threading.Lock()


class PrometheusMetrics:
    """Prometheus metrics of an MCP server, served at ``path`` of each app.

    One object for any number of apps: create it beside ``mcp`` and call
    :meth:`init_app` for each app; each app counts in its own registry.

    :param mcp: the server to measure.
    :param app: an app to serve the metrics on now (or call :meth:`init_app`).
    :param path: where the metrics are served.
    :param registry: the registry of the one app's metrics, such as
        ``prometheus_client.REGISTRY``; default: a new registry per app.
    :param max_label_values: distinct values each label takes (per app);
        then ``other``.
    :param max_label_length: the longest label value kept.
    """

    def __init__(
        self,
        mcp: MCP,
        app: Flask | None = None,
        *,
        path: str = "/metrics",
        registry: CollectorRegistry | None = None,
        max_label_values: int = MAX_VALUES,
        max_label_length: int = MAX_LENGTH,
    ) -> None:
        self.mcp = mcp
        self.path = path
        self.registry = registry
        self.max_label_values = max_label_values
        self.max_label_length = max_label_length
        self._apps: weakref.WeakKeyDictionary[Flask, AppMetrics] = weakref.WeakKeyDictionary()
        mcp.middleware(self)
        signals.stream_opened.connect(self._on_stream_opened, weak=False)
        signals.stream_closed.connect(self._on_stream_closed, weak=False)
        signals.task_created.connect(self._on_task_created, weak=False)
        signals.task_status_changed.connect(self._on_task_status, weak=False)
        signals.listen_finished.connect(self._on_listen_finished, weak=False)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Count the requests of ``app`` in a registry of its own and serve it at :attr:`path`.

        :raises RuntimeError: metrics are already registered on ``app``, or
            ``registry=`` was given and another app uses it already.
        """
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                "PrometheusMetrics is already registered on this app. Call init_app once per app."
            )
        used = [metrics.registry for metrics in self._apps.values()]
        if self.registry is not None and any(registry is self.registry for registry in used):
            raise RuntimeError(
                "registry= holds the metrics of one app, and another app uses it already: leave "
                "registry= out to give each app a registry of its own."
            )
        registry = self.registry if self.registry is not None else app_registry()
        bounds = LabelBounds(max_values=self.max_label_values, max_length=self.max_label_length)
        metrics = AppMetrics(registry, bounds)
        if multiprocess_dir() is None:
            metrics.sessions = _Sessions(self.mcp, app)
            registry.register(metrics.sessions)
        app.extensions[EXTENSION_KEY] = self
        self._apps[app] = metrics
        app.add_url_rule(self.path, "mcp_metrics", self.view, methods=["GET"])

    def metrics(self, app: Flask | None = None) -> AppMetrics:
        """Return the metrics of ``app`` (default: the current app).

        :raises RuntimeError: :meth:`init_app` was not called for the app.
        """
        target = app if app is not None else current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            return self._apps[target]
        except KeyError:
            raise RuntimeError(
                "PrometheusMetrics is not registered on this app. Did you forget to call "
                "metrics.init_app(app)?"
            ) from None

    def view(self) -> Response:
        """Return the app's metrics in the text format; every worker's in multiprocess mode."""
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        check_request_host(self.mcp.state(app).settings)
        metrics = self.metrics(app)
        if multiprocess_dir() is not None:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(_Sessions(self.mcp, app))
        else:
            registry = metrics.registry
        return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    # -- the middleware ------------------------------------------------------------

    def __call__(self, call: CallInfo, call_next: CallNext) -> dict[str, t.Any]:
        """Count and time ``call`` in its app's metrics."""
        metrics = self._apps.get(call.app) if call.app is not None else None
        if metrics is None:  # an app without init_app: not measured
            return call_next(call)
        started = time.perf_counter()
        bounds = metrics.bounds
        method = bounds.method(self.mcp, call.method)
        tool = bounds.name(self.mcp, call.kind, call.name)
        error_type = ""
        try:
            result = call_next(call)
        except MCPError as exc:
            error_type = bounds.error_type(str(exc.code))
            raise
        except BaseException as exc:
            error_type = bounds.error_type(raised_error(exc)[0])
            raise
        else:
            if call.method == "tools/call" and result.get("isError") is True:
                error_type = "tool_error"
            return result
        finally:
            ended = ended_early(call)
            if ended is not None:  # what the client got, not what the handler returned
                error_type = bounds.error_type(ended[0])
            metrics.requests.labels(method, tool).inc()
            if error_type:
                metrics.errors.labels(method, tool, error_type).inc()
            metrics.duration.labels(method, tool, error_type).observe(time.perf_counter() - started)

    # -- subscriptions/listen --------------------------------------------------------

    def _on_listen_finished(
        self,
        sender: t.Any,
        *,
        duration: float,
        reason: str,
        error: dict[str, t.Any] | None,
        **_: t.Any,
    ) -> None:
        """Count and time a ``subscriptions/listen`` once its stream ended, as
        :meth:`__call__` does other requests (the middleware cannot wrap a stream that
        outlives its view), with the outcome the client saw
        (:func:`~flask_mcp.contrib.labels.listen_ended`)."""
        metrics = self._of(sender)
        if metrics is None:
            return
        bounds = metrics.bounds
        method = bounds.method(self.mcp, LISTEN)
        ended = listen_ended(reason, error)
        error_type = "" if ended is None else bounds.error_type(ended[0])
        metrics.requests.labels(method, "").inc()
        if error_type:
            metrics.errors.labels(method, "", error_type).inc()
        metrics.duration.labels(method, "", error_type).observe(duration)

    # -- signals -------------------------------------------------------------------

    def _of(self, sender: t.Any) -> AppMetrics | None:
        try:
            return self._apps.get(sender)
        except TypeError:  # not weakly referable: not an app
            return None

    def _on_stream_opened(self, sender: t.Any, *, kind: str = "", **_: t.Any) -> None:
        metrics = self._of(sender)
        if metrics is not None:
            metrics.open_streams.labels(metrics.bounds.bounded("kind", kind)).inc()

    def _on_stream_closed(self, sender: t.Any, *, kind: str = "", **_: t.Any) -> None:
        metrics = self._of(sender)
        if metrics is not None:
            metrics.open_streams.labels(metrics.bounds.bounded("kind", kind)).dec()

    def _on_task_created(self, sender: t.Any, *, task_id: t.Any, **_: t.Any) -> None:
        metrics = self._of(sender)
        if metrics is not None:  # a task is created working (both flavours of the spec)
            self._set_task_status(sender, metrics, task_id, "working")

    def _on_task_status(self, sender: t.Any, *, task_id: t.Any, status: str, **_: t.Any) -> None:
        metrics = self._of(sender)
        if metrics is None:
            return
        status = metrics.bounds.bounded("status", status)
        self._set_task_status(sender, metrics, task_id, status)
        metrics.task_changes.labels(status).inc()

    def _set_task_status(
        self, app: Flask, metrics: AppMetrics, task_id: t.Any, status: str
    ) -> None:
        """Count ``task_id`` in the ``tasks`` gauge under ``status`` (none once it ended)."""
        with metrics.lock:
            previous = metrics.live_tasks.pop(task_id, None)
            if status not in TERMINAL:
                metrics.live_tasks[task_id] = status
            known = list(metrics.live_tasks) if len(metrics.live_tasks) >= metrics.prune_at else []
        if previous is not None:
            metrics.tasks.labels(previous).dec()
        if status not in TERMINAL:
            metrics.tasks.labels(status).inc()
        if known:
            self._forget_ended(app, metrics, known)

    def _forget_ended(self, app: Flask, metrics: AppMetrics, known: list[t.Any]) -> None:
        """Stop counting the tasks among ``known`` that ended unseen.

        A task may end without a terminal ``task_status_changed`` in this worker: its
        record expired (its ttl ran out before its handler ended, or while it waited
        for input), or another worker cancelled or finished it. Such tasks are looked
        for once the table doubled since the last look, so that it holds at most about
        twice the tasks live here, at a constant cost per task; each leaves the
        ``tasks`` gauge.
        """
        store = self.mcp.state(app).backend.task_store()
        ended = []
        try:
            for task_id in known:
                record = store.get(task_id)
                if record is None or record.get("status") in TERMINAL:
                    ended.append(task_id)
        except BackendUnavailable:  # look again after as many tasks more
            ended = []
        gone = []
        with metrics.lock:
            for task_id in ended:
                status = metrics.live_tasks.pop(task_id, None)
                if status is not None:
                    gone.append(status)
            metrics.prune_at = max(PRUNE_AT, 2 * len(metrics.live_tasks))
        for status in gone:
            metrics.tasks.labels(status).dec()


__all__ = [
    "BUCKETS",
    "EXTENSION_KEY",
    "LISTEN",
    "PRUNE_AT",
    "TERMINAL",
    "AppMetrics",
    "PrometheusMetrics",
    "app_registry",
    "multiprocess_dir",
]
