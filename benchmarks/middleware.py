"""The cost of middleware per ``tools/call``, in process, without HTTP.

Each variant runs in a subprocess of its own (so that the OpenTelemetry SDK or a
patched ``flask_mcp`` copy of one does not leak into another), pinned to the
server core, and times ``runner.execute(dispatcher, call)`` of ``add(a, b)`` in
a 2025-11-25 session: the kernel path every request takes (the dispatcher, the
middleware chain, the tool). Variants run in interleaved rounds; the median of
the rounds is kept. Variants:

- ``none``: no middleware (``flask_mcp-<dir>/none`` for each ``--proto`` copy);
- ``noop``: one middleware that returns ``call_next(call)``;
- ``otel-api``: the OpenTelemetry middleware with the API alone (no SDK: the
  default no-op providers);
- ``otel-sdk``: the OpenTelemetry middleware with the SDK's tracer and meter
  providers and no exporter or reader (spans are made and dropped);
- ``prometheus``: the Prometheus middleware and signal receivers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import typing as t

from . import report
from .options import Options

VARIANTS = ("none", "noop", "otel-api", "otel-sdk", "prometheus")
CALLS = 20_000


def measure(variant: str, calls: int) -> float:
    """Return µs per call of ``variant`` in this process."""
    import time

    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp import protocol
    from flask_mcp.server.call import Call
    from flask_mcp.transport import runner

    mcp = MCP(name="bench", version="1")
    if variant == "noop":
        mcp.middleware(lambda call, call_next: call_next(call))
    elif variant.startswith("otel"):
        from flask_mcp.contrib.opentelemetry import MCPInstrumentor

        if variant == "otel-sdk":
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.trace import TracerProvider

            MCPInstrumentor(mcp, tracer_provider=TracerProvider(), meter_provider=MeterProvider())
        else:
            MCPInstrumentor(mcp)
    elif variant == "prometheus":
        from prometheus_client import CollectorRegistry

        from flask_mcp.contrib.prometheus import PrometheusMetrics

        PrometheusMetrics(mcp, registry=CollectorRegistry())

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = Flask("bench")
    mcp.init_app(app)
    state = mcp.state(app)
    from flask_mcp.backends.base import SessionRecord

    record = SessionRecord("bench-session", "2025-11-25", initialized=True)
    state.backend.create_session(record, 10)
    dispatcher = mcp.dispatcher

    def one(i: int) -> None:
        params = {"name": "add", "arguments": {"a": i, "b": 1}}
        call = Call("tools/call", params, i, "2025-11-25", protocol.HANDSHAKE, record, state=state)
        answer = runner.execute(dispatcher, call)
        assert answer.message is not None and "result" in answer.message, answer.message

    with app.app_context():
        for i in range(2000):  # warm-up
            one(i)
        started = time.perf_counter()
        for i in range(calls):
            one(i)
        elapsed = time.perf_counter() - started
    return elapsed / calls * 1e6


def _child(variant: str, calls: int, proto: str | None, core: str | None) -> float:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The working directory comes first on sys.path: the copy's flask_mcp wins over ours.
    cwd = proto if proto is not None else root
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    argv = [sys.executable, "-m", "benchmarks.middleware", variant, str(calls)]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    out = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, check=True, timeout=600
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    expected = os.path.join(cwd, "flask_mcp")
    if not found["package"].startswith(expected):
        raise RuntimeError(f"{variant} imported flask_mcp from {found['package']}, not {expected}")
    return float(found["us"])


def run(options: Options, calls: int = CALLS) -> dict[str, t.Any]:
    """Measure every variant side by side and print the table."""
    print(report.banner("middleware: µs per tools/call in process (runner.execute)"))
    targets: list[tuple[str, str, str | None]] = [(v, v, None) for v in VARIANTS]
    for proto in options.proto:
        label = f"flask_mcp-{os.path.basename(os.path.normpath(proto))}/none"
        targets.insert(0, (label, "none", proto))
    rounds = max(3, options.rounds)
    samples: dict[str, list[float]] = {label: [] for label, _, _ in targets}
    for _ in range(rounds):
        for label, variant, proto in targets:
            samples[label].append(_child(variant, calls, proto, options.server_core))
    medians = {label: statistics.median(values) for label, values in samples.items()}
    base = medians["none"]
    rows = [
        (
            label,
            f"{medians[label]:.2f}",
            f"{medians[label] - base:+.2f}",
            f"{medians[label] / base:.3f}x",
        )
        for label, _, _ in targets
    ]
    print(report.table(("variant", "µs/call", "vs none", "ratio"), rows))
    print(f"{calls} calls per run, {rounds} interleaved rounds, median kept")
    return {"medians_us": medians, "samples_us": samples, "verdicts": []}


if __name__ == "__main__":
    import flask_mcp

    result = measure(sys.argv[1], int(sys.argv[2]))
    print(json.dumps({"us": result, "package": flask_mcp.__file__}))
