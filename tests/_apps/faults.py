"""An app for the fault tests: tools that run for a while, reporting the worker running them."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

mcp = MCP(name="faults", version="1.0.0")


@mcp.tool()
def pid() -> int:
    """Return the pid of the worker that answers (runs in the view: never streams)."""
    return os.getpid()


@mcp.tool()
def chatty(seconds: float, ctx: Context) -> str:
    """Report progress and log a message twice a second for ``seconds`` (each goes through
    the backend; the log message if the client set a logging level)."""
    steps = max(1, int(seconds * 2))
    for step in range(steps):
        ctx.progress(step + 1, steps, f"pid {os.getpid()}")
        ctx.info(f"step {step + 1} of {steps}")
        time.sleep(0.5)
    return f"chatted on {os.getpid()}"


@mcp.tool()
def quiet(seconds: float, ctx: Context) -> str:
    """Report progress once, then work ``seconds`` without touching the backend."""
    ctx.progress(1, 2, f"pid {os.getpid()}")
    time.sleep(seconds)
    return f"quiet on {os.getpid()}"


def note(key: str) -> None:
    """Note ``key`` in ``$FAULTS_MARKS``, if set (one line per run of a handler)."""
    marks = os.environ.get("FAULTS_MARKS")
    if marks:
        with open(marks, "a", encoding="utf-8") as file:
            file.write(f"{key}\n")


@mcp.tool()
def mark(key: str, seconds: float, ctx: Context) -> str:
    """Note ``key`` in ``$FAULTS_MARKS`` (one line per run of the handler: a call run twice
    shows twice), report progress, work ``seconds``, return ``key``."""
    note(key)
    ctx.progress(1, 2, f"pid {os.getpid()}")
    time.sleep(seconds)
    return key


@mcp.tool()
def ask_later(key: str, seconds: float, ctx: Context) -> str:
    """Note ``key`` in ``$FAULTS_MARKS``, work ``seconds`` sending nothing, then ask the user
    for a name (an elicitation)."""
    note(key)
    time.sleep(seconds)
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    answer = ctx.elicit("Your name?", schema)
    return f"hello {answer.get('content', {}).get('name')}"


@mcp.tool()
def burst(count: int, ctx: Context) -> str:
    """Note ``burst`` in ``$FAULTS_MARKS``, wait for the line ``go`` there, report progress
    ``count`` times in a row, then note ``sent``."""
    note("burst")
    marks = Path(os.environ["FAULTS_MARKS"])
    while "go" not in marks.read_text(encoding="utf-8").split():
        time.sleep(0.05)
    for step in range(count):
        ctx.progress(step + 1, count)
    note("sent")
    return f"sent {count}"


@mcp.tool(task="optional")
def job(seconds: float, ctx: Context) -> str:
    """A task that reports progress (the task's status message) every 0.2 s for ``seconds``."""
    steps = max(1, int(seconds * 5))
    for step in range(steps):
        ctx.progress(step + 1, steps)
        time.sleep(0.2)
    return f"job done on {os.getpid()}"


if os.environ.get("FAULTS_DEBUG_LOG"):  # each dropped notification, one a line
    logging.getLogger("flask_mcp").addHandler(logging.StreamHandler())
    logging.getLogger("flask_mcp").setLevel(logging.DEBUG)

app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@app.get("/debug/fds")
def fds() -> dict[str, int]:
    """This worker's pid and open file descriptors."""
    return {"pid": os.getpid(), "fds": len(os.listdir("/proc/self/fd"))}
