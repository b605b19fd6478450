"""An app whose tools exercise the back-channel, for end-to-end tests."""

from __future__ import annotations

import time

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

mcp = MCP(name="backchannel", version="1.0.0")
STATE = {"sleeping": 0, "slept_out": 0}


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def note(text: str, ctx: Context) -> str:
    """Log ``text`` at level info (sent if the session's level allows), then answer it."""
    ctx.info(text)
    return text


@mcp.tool()
def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model."""
    result = ctx.create_message(
        [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=50
    )
    return f"model said: {result['content']['text']}"


@mcp.tool()
def ask(ctx: Context) -> str:
    """Ask the user for their name."""
    answer = ctx.elicit(
        "Your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    return f"{answer['action']}:{answer.get('content', {}).get('name', '')}"


@mcp.tool()
def roots(ctx: Context) -> str:
    """List the client's roots."""
    return ",".join(root["uri"] for root in ctx.list_roots())


@mcp.tool()
def polled(steps: int, ctx: Context) -> str:
    """Report progress, drop the connection midway, and finish after the client resumes."""
    for step in range(steps):
        ctx.progress(step + 1, steps)
        if step == steps // 2:
            ctx.close_sse_stream()
        time.sleep(0.05)
    return f"finished {steps}"


@mcp.tool()
def sleeper(seconds: float) -> str:
    """Block in time.sleep (cancellable on gevent)."""
    STATE["sleeping"] += 1
    try:
        time.sleep(seconds)
        STATE["slept_out"] += 1
    finally:
        STATE["sleeping"] -= 1
    return "slept"


@mcp.tool()
def sleeping_count() -> dict[str, int]:
    """Report how many sleeper calls are still running and how many ran to the end."""
    return dict(STATE)


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@mcp.tool()
def slow_chatty(seconds: float, ctx: Context) -> str:
    """Report progress once, then work for a while."""
    ctx.progress(1, 2)
    time.sleep(seconds)
    ctx.progress(2, 2)
    return "chatted"


@app.get("/debug/stats")
def debug_stats() -> dict[str, object]:
    """Live-state counters of this worker, for the leak test."""
    import gc
    import resource
    import threading

    stats = mcp.stats()
    try:
        import greenlet

        gc.collect()
        stats["greenlets"] = sum(
            1 for obj in gc.get_objects() if isinstance(obj, greenlet.greenlet) and not obj.dead
        )
    except ImportError:
        stats["greenlets"] = 0
    stats["threads"] = threading.active_count()
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                stats["rss_kb"] = int(line.split()[1])
    stats["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return stats
