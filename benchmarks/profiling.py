"""Profile the Flask-MCP hot path with py-spy while wrk drives ``tools/call`` at c=16.

py-spy samples the gevent worker (``--format raw``: collapsed stacks); this
module turns the samples into tables: where the CPU goes by library/module
(self time), by function (self and inclusive), and by greenlet root (the
request greenlet, the tool's handler greenlet, the gevent hub). Pass
``--svg`` for a flame graph as well.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
import typing as t
from pathlib import Path

from . import report
from . import wrk
from .options import Options
from .prepare import prepare
from .servers import Server
from .targets import Target
from .targets import flask_mcp
from .targets import floor

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
CONNECTIONS = 16


def py_spy() -> str | None:
    """Return the py-spy executable (next to this Python, or on PATH)."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def parse_frame(frame: str) -> tuple[str, str]:
    """Split ``func (file:line)`` into ``(func, file)``."""
    match = FRAME.match(frame.strip())
    return (match["func"], match["file"]) if match else (frame.strip(), "")


def area(file: str) -> str:
    """Return the library, or the Flask-MCP module, a source file belongs to."""
    if file.startswith("flask_mcp/"):
        return file[:-3] if file.endswith(".py") else file
    head = file.split("/", 1)[0]
    if head.endswith(".py"):
        head = head[:-3]
    if file.startswith("json/") or head == "json":
        return "json (stdlib)"
    if head in (
        "threading",
        "queue",
        "selectors",
        "socket",
        "ssl",
        "contextlib",
        "functools",
        "typing",
        "logging",
        "collections",
        "enum",
        "re",
        "urllib",
        "http",
        "email",
        "abc",
        "dataclasses",
        "weakref",
        "time",
        "uuid",
        "secrets",
        "base64",
        "inspect",
        "io",
        "traceback",
        "copy",
        "random",
        "os",
        "posixpath",
        "string",
        "_weakrefset",
    ):
        return f"stdlib ({head})"
    return head or "?"


#: Leaf frames of OS threads that wait without being seen idle by py-spy (gevent's
#: thread-pool workers): their samples are not CPU of the worker's loop and are dropped.
WAITING = frozenset({("acquire_with_timeout", "gevent/_threading.py")})


def load_stacks(path: str) -> list[tuple[list[tuple[str, str]], int]]:
    """Read collapsed stacks (``frame;frame;... count`` per line), without :data:`WAITING` ones."""
    stacks = []
    for line in Path(path).read_text().splitlines():
        body, _, count = line.rpartition(" ")
        if not body or not count.isdigit():
            continue
        frames = [parse_frame(f) for f in body.split(";")]
        if frames[-1] not in WAITING:
            stacks.append((frames, int(count)))
    return stacks


def summarise(
    stacks: t.Sequence[tuple[list[tuple[str, str]], int]], top: int = 25
) -> dict[str, t.Any]:
    """Return self/inclusive tables (percent of samples) of collapsed stacks."""
    total = sum(count for _, count in stacks) or 1
    by_area: collections.Counter[str] = collections.Counter()
    self_fn: collections.Counter[str] = collections.Counter()
    incl_fn: collections.Counter[str] = collections.Counter()
    incl_area: collections.Counter[str] = collections.Counter()
    roots: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        func, file = frames[-1]
        by_area[area(file)] += count
        self_fn[f"{func} ({file})"] += count
        for name in {f"{f} ({p})" for f, p in frames}:
            incl_fn[name] += count
        for name in {area(p) for _, p in frames}:
            incl_area[name] += count
        roots[_root(frames)] += count

    def pct(counter: collections.Counter[str], n: int | None = None) -> list[tuple[str, float]]:
        return [(k, v * 100 / total) for k, v in counter.most_common(n)]

    return {
        "samples": total,
        "self_by_area": pct(by_area),
        "inclusive_by_area": pct(incl_area, top),
        "self_by_function": pct(self_fn, top),
        "inclusive_by_function": pct(incl_fn, top * 2),
        "flask_mcp_inclusive": [(k, v) for k, v in pct(incl_fn) if "(flask_mcp/" in k][:top],
        "flask_mcp_any": sum(
            c for frames, c in stacks if any(p.startswith("flask_mcp/") for _, p in frames)
        )
        * 100
        / total,
        "by_greenlet": pct(roots),
        "breakdowns": {parent: children(stacks, parent) for parent in BREAKDOWNS},
    }


#: Frames whose direct callees :func:`print_summary` breaks down.
BREAKDOWNS = (
    "AsyncWorker.handle_request (gunicorn/workers/base_async.py)",
    "Flask.wsgi_app (flask/app.py)",
    "Transport.post (flask_mcp/transport/views.py)",
    "Handshake._request (flask_mcp/transport/handshake.py)",
    "serve_http (flask_mcp/transport/runner.py)",
    "execute (flask_mcp/transport/runner.py)",
    "Methods.tools_call (flask_mcp/server/methods.py)",
)


def children(
    stacks: t.Sequence[tuple[list[tuple[str, str]], int]], parent: str, top: int = 15
) -> tuple[float, list[tuple[str, float]]]:
    """Return the inclusive percent of ``parent`` and of each function it calls directly."""
    total = sum(count for _, count in stacks) or 1
    found: collections.Counter[str] = collections.Counter()
    inside = 0
    for frames, count in stacks:
        names = [f"{f} ({p})" for f, p in frames]
        if parent not in names:
            continue
        index = names.index(parent)
        inside += count
        found[names[index + 1] if index + 1 < len(names) else "(self)"] += count
    return inside * 100 / total, [(k, v * 100 / total) for k, v in found.most_common(top)]


def _root(frames: t.Sequence[tuple[str, str]]) -> str:
    files = [p for _, p in frames]
    funcs = [f for f, _ in frames]
    if any(f.startswith("Task._run") for f in funcs):
        return "tool handler greenlet (flask_mcp Task._run)"
    if any("_handle_and_close_when_done" in f for f in funcs) or any(
        "gunicorn/" in p for p in files
    ):
        return "request greenlet (gunicorn -> Flask -> transport)"
    if any("gevent/hub" in p or "gevent/_hub" in p for p in files):
        return "gevent hub (loop, timers, switching)"
    return f"other ({funcs[0]})"


def print_summary(summary: dict[str, t.Any]) -> None:
    """Print the tables of :func:`summarise`."""
    print(
        f"{summary['samples']} samples (CPU only: idle samples are not recorded); "
        f"{summary['flask_mcp_any']:.1f}% have a flask_mcp frame on the stack\n"
    )
    for key, title in (
        ("by_greenlet", "by greenlet"),
        ("self_by_area", "self time by library / flask_mcp module"),
        ("inclusive_by_area", "inclusive time by library / flask_mcp module"),
        ("self_by_function", "self time by function"),
        ("inclusive_by_function", "inclusive time by function"),
        ("flask_mcp_inclusive", "inclusive time of flask_mcp functions"),
    ):
        print(report.table((title, "% of samples"), [(k, f"{v:.1f}") for k, v in summary[key]]))
        print()
    for parent, (inclusive, callees) in summary.get("breakdowns", {}).items():
        if inclusive:
            print(
                report.table(
                    (f"{parent}: {inclusive:.1f}% inclusive; its callees", "% of samples"),
                    [(k, f"{v:.1f}") for k, v in callees],
                )
            )
            print()


def run(
    options: Options,
    seconds: float = 20.0,
    raw_path: str = "/tmp/flask_mcp_profile.txt",
    svg_path: str | None = None,
    era: str = "handshake",
    target: str = "flask_mcp",
    backend: str | None = None,
) -> dict[str, t.Any]:
    """Profile a gevent server under wrk at c=16; print and return the tables.

    :param target: ``flask_mcp`` (with ``--proto``: the first patched copy) or ``floor``.
    :param backend: ``FLASK_MCP_BACKEND`` of the profiled Flask-MCP server.
    """
    executable = py_spy()
    print(
        report.banner(
            f"profile: {target}/gevent, tools/call add, c={CONNECTIONS}, py-spy {seconds:g}s"
        )
    )
    if executable is None:
        print("skipped: py-spy is not installed (pip install py-spy)")
        return {"skipped": "py-spy not installed"}
    if target == "floor":
        spec = floor("gevent")
    else:
        spec = flask_mcp(
            "gevent",
            {"FLASK_MCP_BACKEND": backend} if backend else None,
            pythonpath=options.proto[:1],
        )
    with Server(spec, options.server_core) as server:
        server.wait_ready()
        item = prepare(Target(spec.name, spec.name, era), server, wrk.ADD, CONNECTIONS)
        if item.skipped:
            print(f"skipped: {item.skipped}")
            return {"skipped": item.skipped}
        wrk.run(
            server.url,
            connections=CONNECTIONS,
            seconds=options.warmup,
            sessions=item.sessions,
            era=era,
            core=options.client_core,
        )
        load_seconds = seconds + 4
        load_process = _background_wrk(
            server.url, item.sessions, load_seconds, options.client_core, era
        )
        time.sleep(1.5)
        pid = server.worker_pids()[0]

        def record(duration: str, out: str, *extra: str) -> list[str]:
            return [executable, "record", "--pid", str(pid), "--duration", duration,
                    "--rate", "250", *extra, "-o", out]  # fmt: skip

        argv = record(f"{seconds:g}", raw_path, "--format", "raw")
        subprocess.run(argv, capture_output=True, text=True, check=True)
        if svg_path:
            subprocess.run(record("3", svg_path), capture_output=True, text=True, check=False)
        output = load_process.communicate(timeout=load_seconds + 60)[0]
    summary = summarise(load_stacks(raw_path))
    print(f"raw stacks: {raw_path}" + (f", flame graph: {svg_path}" if svg_path else ""))
    for line in output.splitlines():
        if line.startswith("Requests/sec"):
            print(
                "throughput while sampled (py-spy pauses the worker): "
                f"{line.split(':', 1)[1].strip()} req/s"
            )
    print()
    print_summary(summary)
    return summary


def _background_wrk(
    url: str, sessions: t.Sequence[str], seconds: float, core: str | None, era: str
) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        BENCH_SESSIONS=",".join(sessions),
        BENCH_ERA=era,
        BENCH_ARGS=json.dumps(dict(wrk.ADD.arguments)),
        BENCH_EXPECT=wrk.SEP.join(wrk.ADD.expect),
    )
    argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{round(seconds)}s", "-s", str(wrk.SCRIPT), url]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
