"""Prometheus metrics of MCP requests, sessions, streams and tasks, at a path of the app.

Install with ``pip install 'Flask-MCP[prometheus]'``:

.. code-block:: python

    from flask_mcp.contrib.prometheus import PrometheusMetrics

    metrics = PrometheusMetrics(mcp, app)        # GET /metrics

Metrics (``mcp_server_`` prefix):

==========================================  =========  ==================================
``operation_duration_seconds``              histogram  method, tool, error_type
``requests_total``                          counter    method, tool
``errors_total``                            counter    method, tool, error_type
``sessions``                                gauge      live sessions in the backend, read
                                                       at scrape time (every worker's with
                                                       Redis)
``open_streams``                            gauge      kind (post, get, resume, listen)
``tasks``                                   gauge      status, fed by ``task_status_changed``
``task_status_changes_total``               counter    status
==========================================  =========  ==================================

``tool`` is the tool or prompt name (empty for other methods; resource URIs are
left out: templates would make too many series). ``error_type`` is the JSON-RPC
error code, or ``tool_error`` for an ``isError`` tool result.

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

from flask import Flask
from flask import Response

try:
    from prometheus_client import CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY
    from prometheus_client import CollectorRegistry
    from prometheus_client import Counter
    from prometheus_client import Gauge
    from prometheus_client import Histogram
    from prometheus_client import generate_latest
    from prometheus_client.core import GaugeMetricFamily
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"flask_mcp.contrib.prometheus needs prometheus-client ({exc.name} is missing): "
        "pip install 'Flask-MCP[prometheus]'."
    ) from exc

from .. import signals
from ..errors import MCPError

if t.TYPE_CHECKING:
    from ..extension import MCP
    from ..server.middleware import CallInfo
    from ..server.middleware import CallNext

#: The histogram buckets (seconds): those the OpenTelemetry MCP conventions advise.
BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Task statuses that end a task (SEP-2663); the ``tasks`` gauge stops counting them live.
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def multiprocess_dir() -> str | None:
    """The ``PROMETHEUS_MULTIPROC_DIR`` of the process, if set (multiprocess mode)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class _Sessions:
    """A collector that reads the live sessions of the served apps at scrape time."""

    def __init__(self, owner: PrometheusMetrics) -> None:
        self.owner = owner

    def collect(self) -> t.Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "mcp_server_sessions", "Live MCP sessions in the backend.", labels=["server"]
        )
        for app in list(self.owner.apps):
            try:
                count = len(self.owner.mcp.state(app).backend.session_ids())
            except Exception:  # the backend is down: leave the sample out
                continue
            family.add_metric([self.owner.mcp.name], count)
        yield family


class PrometheusMetrics:
    """Prometheus metrics of an MCP server, served at ``path`` of each app.

    :param mcp: the server to measure.
    :param app: an app to serve the metrics on now (or call :meth:`init_app`).
    :param path: where the metrics are served.
    :param registry: the registry of the metrics (default: prometheus_client's).
    """

    def __init__(
        self,
        mcp: MCP,
        app: Flask | None = None,
        *,
        path: str = "/metrics",
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.mcp = mcp
        self.path = path
        self.registry = registry if registry is not None else REGISTRY
        self.apps: list[Flask] = []
        self._tasks: dict[t.Any, str] = {}
        self._lock = threading.Lock()
        reg = self.registry
        self.duration = Histogram(
            "mcp_server_operation_duration_seconds",
            "MCP request duration, from receipt to result.",
            ["method", "tool", "error_type"],
            buckets=BUCKETS,
            registry=reg,
        )
        self.requests = Counter(
            "mcp_server_requests", "MCP requests.", ["method", "tool"], registry=reg
        )
        self.errors = Counter(
            "mcp_server_errors",
            "MCP requests answered with an error or an isError tool result.",
            ["method", "tool", "error_type"],
            registry=reg,
        )
        self.open_streams = Gauge(
            "mcp_server_open_streams",
            "SSE streams open now.",
            ["kind"],
            registry=reg,
            multiprocess_mode="livesum",
        )
        self.tasks = Gauge(
            "mcp_server_tasks",
            "Tasks in each status, as seen by task_status_changed.",
            ["status"],
            registry=reg,
            multiprocess_mode="livesum",
        )
        self.task_changes = Counter(
            "mcp_server_task_status_changes",
            "Task status changes.",
            ["status"],
            registry=reg,
        )
        self._sessions = _Sessions(self)
        if multiprocess_dir() is None:
            reg.register(self._sessions)
        mcp.middleware(self)
        signals.stream_opened.connect(self._on_stream_opened, weak=False)
        signals.stream_closed.connect(self._on_stream_closed, weak=False)
        signals.task_status_changed.connect(self._on_task_status, weak=False)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Serve the metrics at :attr:`path` of ``app``."""
        self.apps.append(app)
        app.add_url_rule(self.path, "mcp_metrics", self.view, methods=["GET"])

    def view(self) -> Response:
        """Return the metrics in the text format; every worker's in multiprocess mode."""
        if multiprocess_dir() is not None:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(self._sessions)
        else:
            registry = self.registry
        return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    # -- the middleware ------------------------------------------------------------

    def __call__(self, call: CallInfo, call_next: CallNext) -> dict[str, t.Any]:
        """Count and time ``call``."""
        started = time.perf_counter()
        method = call.method
        tool = call.name if call.kind in ("tool", "prompt") else None
        tool = tool or ""
        error_type = ""
        try:
            result = call_next(call)
        except MCPError as exc:
            error_type = str(exc.code)
            raise
        except BaseException as exc:
            error_type = type(exc).__qualname__
            raise
        else:
            if method == "tools/call" and result.get("isError") is True:
                error_type = "tool_error"
            return result
        finally:
            self.requests.labels(method, tool).inc()
            if error_type:
                self.errors.labels(method, tool, error_type).inc()
            self.duration.labels(method, tool, error_type).observe(time.perf_counter() - started)

    # -- signals -------------------------------------------------------------------

    def _mine(self, sender: t.Any) -> bool:
        extensions = getattr(sender, "extensions", None)
        return isinstance(extensions, dict) and extensions.get("mcp") is self.mcp

    def _on_stream_opened(self, sender: t.Any, *, kind: str = "", **_: t.Any) -> None:
        if self._mine(sender):
            self.open_streams.labels(kind).inc()

    def _on_stream_closed(self, sender: t.Any, *, kind: str = "", **_: t.Any) -> None:
        if self._mine(sender):
            self.open_streams.labels(kind).dec()

    def _on_task_status(self, sender: t.Any, *, task_id: t.Any, status: str, **_: t.Any) -> None:
        if not self._mine(sender):
            return
        with self._lock:
            previous = self._tasks.pop(task_id, None)
            if status not in TERMINAL:
                self._tasks[task_id] = status
        if previous is not None:
            self.tasks.labels(previous).dec()
        if status not in TERMINAL:
            self.tasks.labels(status).inc()
        self.task_changes.labels(status).inc()


__all__ = ["BUCKETS", "TERMINAL", "PrometheusMetrics", "multiprocess_dir"]
