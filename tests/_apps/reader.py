"""An app for the stream reader tests: broadcast from a view, and what the worker holds."""

from __future__ import annotations

import os

from flask import Flask
from flask import request

from flask_mcp import MCP

mcp = MCP(name="reader", version="1.0.0")


@mcp.tool()
def pid() -> int:
    """Return the pid of the worker that answers."""
    return os.getpid()


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


def redis_connections(*ports: int) -> dict[int, int]:
    """Count this process's established TCP connections to each of ``ports`` on the loopback."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    counts = dict.fromkeys(ports, 0)
    with open("/proc/self/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            port = int(remote.split(":")[1], 16)
            if state == "01" and port in counts and inode in inodes:
                counts[port] += 1
    return counts


@app.post("/debug/broadcast")
def broadcast() -> dict[str, bool]:
    """Send ``notifications/message`` with ``?text=`` to every session's GET stream."""
    mcp.broadcast("notifications/message", {"level": "info", "data": request.args["text"]})
    return {"ok": True}


@app.get("/debug/reader")
def reader() -> dict[str, int]:
    """The streams this worker's reader knows, its waiting reads and Redis connections
    (in all, and to the node of a cluster that has the most)."""
    backend = mcp.state(app).backend
    streams, waiting = backend.reader.counts()  # type: ignore[attr-defined]
    client = backend.client  # type: ignore[attr-defined]
    if hasattr(client, "get_nodes"):  # a Redis Cluster: its nodes' ports
        ports = [int(node.port) for node in client.get_nodes()]
    else:
        ports = [int(client.connection_pool.connection_kwargs.get("port", 6379))]
    counts = redis_connections(*ports)
    return {
        "pid": os.getpid(),
        "streams": streams,
        "waiting": waiting,
        "redis_connections": sum(counts.values()),
        "most_per_node": max(counts.values()),
    }
