"""CPU instructions per ``tools/call``, counted by valgrind: repeatable on a noisy machine.

``python -m benchmarks.instructions [--proto DIR] [--calls N]`` calls the WSGI apps
in process (gevent's monkey patching applied, as in a gevent worker; no HTTP
server, so gunicorn's own cost is left out) under ``valgrind --tool=callgrind``,
once with a warm-up only and once with ``N`` more calls: the difference over
``N`` is the instructions per call. Rows: Flask-MCP with a 2026-07-28 request
and with a 2025-11-25 session, the floor with the same two requests, and the
same Flask-MCP rows for each patched copy (``--proto``). wrk's req/s move with
other work on the machine by several percent; these counts move by less than
0.1%.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import os
import re
import subprocess
import sys
import typing as t
from pathlib import Path

from . import report

ROOT = Path(__file__).resolve().parent.parent
META = (
    ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1.0"},'
    '"io.modelcontextprotocol/clientCapabilities":{}}'
)
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}'
)


def body(request_id: int, era: str) -> bytes:
    """Return the body the wrk script sends: ``add(1234567, 7654321)``."""
    meta = META if era == "2026" else ""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"add",'
        f'"arguments":{{"a":1234567,"b":7654321}}{meta}}}}}'
    ).encode()


def environ(data: bytes, era: str, session_id: str | None = None) -> dict[str, t.Any]:
    """Return the WSGI environ of one POST with the wrk script's headers."""
    env: dict[str, t.Any] = {
        "REQUEST_METHOD": "POST", "SCRIPT_NAME": "", "PATH_INFO": "/mcp", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "5555", "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(data)),
        "HTTP_ACCEPT": "application/json, text/event-stream", "wsgi.input": io.BytesIO(data),
        "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.url_scheme": "http",
        "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }  # fmt: skip
    if era == "2026":
        env["HTTP_MCP_PROTOCOL_VERSION"] = "2026-07-28"
        env["HTTP_MCP_METHOD"] = "tools/call"
        env["HTTP_MCP_NAME"] = "add"
    else:
        env["HTTP_MCP_PROTOCOL_VERSION"] = "2025-11-25"
        if session_id:
            env["HTTP_MCP_SESSION_ID"] = session_id
    return env


def call(app: t.Any, env: dict[str, t.Any]) -> tuple[str, dict[str, str], bytes]:
    """Call a WSGI app; return its status, headers and body."""
    seen: dict[str, t.Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: t.Any = None) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    chunks = app(env, start_response)
    data = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return seen["status"], seen["headers"], data


def child(target: str, era: str, calls: int) -> None:
    """Run in the process valgrind watches: warm up, then make ``calls`` calls."""
    from gevent import monkey

    monkey.patch_all()
    if target == "floor":
        from .apps.floor_app import app
    else:
        from .apps.flask_mcp_app import app
    session = None
    if era == "handshake" and target != "floor":
        env = environ(INIT, era)
        del env["HTTP_MCP_PROTOCOL_VERSION"]
        session = call(app, env)[1]["Mcp-Session-Id"]
        call(app, environ(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', era, session))
    for i in range(200 + calls):
        status, _, data = call(app, environ(body(i + 1, era), era, session))
        if not status.startswith("200") or b"8888888" not in data:
            raise SystemExit(f"{target}@{era}: unexpected answer {status} {data[:300]!r}")


def count(target: str, era: str, calls: int, pythonpath: str | None) -> int:
    """Return the instructions valgrind counted for a child making ``calls`` calls."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, str(ROOT)) if p)
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, "-m", "benchmarks.instructions", "--child", target, era, str(calls),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, cwd="/", capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise RuntimeError(f"valgrind failed for {target}@{era}: {done.stderr[-600:]}")
    return int(found[1])


def per_call(target: str, era: str, calls: int, pythonpath: str | None) -> float:
    """Return the instructions of one call: (with ``calls`` calls - without) / ``calls``."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        more = pool.submit(count, target, era, calls, pythonpath)
        base = pool.submit(count, target, era, 0, pythonpath)
        return (more.result() - base.result()) / calls


def main(argv: t.Sequence[str] | None = None) -> int:
    """Print the instructions per call of every row, and the ratios to the floor."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions")
    parser.add_argument("--calls", type=int, default=1000, help="calls counted per row")
    parser.add_argument("--proto", action="append", default=[], help="a patched flask_mcp copy")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    rows: list[tuple[str, str, str, str | None]] = [
        ("floor@2026", "floor", "2026", None),
        ("floor@handshake", "floor", "handshake", None),
        ("flask_mcp@2026", "flask_mcp", "2026", None),
        ("flask_mcp@handshake", "flask_mcp", "handshake", None),
    ]
    for directory in args.proto:
        label = f"flask_mcp-{Path(directory).name}"
        rows += [
            (f"{label}@2026", "flask_mcp", "2026", directory),
            (f"{label}@handshake", "flask_mcp", "handshake", directory),
        ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        jobs = {
            label: pool.submit(per_call, target, era, args.calls, path)
            for label, target, era, path in rows
        }
        figures = {label: job.result() for label, job in jobs.items()}
    table = []
    for label, _, era, _ in rows:
        floor = figures[f"floor@{era}"]
        table.append((label, f"{figures[label]:,.0f}", f"{figures[label] - floor:+,.0f}",
                      report.fmt_ratio(floor / figures[label])))  # fmt: skip
    print(report.table(("in process, gevent-patched", "instructions/call", "over the floor",
                        "floor / row"), table))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
