"""A task tool on Celery workers, traced with OpenTelemetry into a file.

The web server and a Celery worker both import this module; each writes the spans it
ends to ``MCP_TEST_SPANS`` (one JSON object a line), so a test reads how the task's
spans on the worker hang together with the ``tools/call`` span of the web worker.
"""

from __future__ import annotations

import json
import os
import typing as t

from celery import Celery
from flask import Flask
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from flask_mcp import MCP
from flask_mcp.contrib.celery import CeleryExecutor
from flask_mcp.contrib.opentelemetry import MCPInstrumentor


class LineExporter(SpanExporter):
    """Appends each span to a file: name, ids, parent and links."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: t.Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as out:
            for span in spans:
                context = span.context
                assert context is not None
                line = {
                    "name": span.name,
                    "trace": f"{context.trace_id:032x}",
                    "span": f"{context.span_id:016x}",
                    "parent": None if span.parent is None else f"{span.parent.span_id:016x}",
                    "links": [f"{link.context.span_id:016x}" for link in span.links],
                    "pid": os.getpid(),
                }
                out.write(json.dumps(line) + "\n")
        return SpanExportResult.SUCCESS


tracer_provider = TracerProvider()
tracer_provider.add_span_processor(
    SimpleSpanProcessor(LineExporter(os.environ.get("MCP_TEST_SPANS", os.devnull)))
)
tracer = tracer_provider.get_tracer(__name__)
celery = Celery(__name__, broker=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1"))
mcp = MCP(name="celery-traced", version="1.0", task_executor=CeleryExecutor(celery))
otel = MCPInstrumentor(mcp, tracer_provider=tracer_provider)


@mcp.tool(task="optional")
def crunch() -> str:
    """Do some work in a span of its own."""
    with tracer.start_as_current_span("crunching"):
        return f"crunched in process {os.getpid()}"


def create_app() -> Flask:
    app = Flask(__name__)
    app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/0"
    app.config.from_prefixed_env()
    mcp.init_app(app)
    otel.init_app(app)
    return app


app = create_app()
