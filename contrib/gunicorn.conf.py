"""Gunicorn settings for serving a Flask-MCP application with gevent workers.

    gunicorn -c contrib/gunicorn.conf.py examples.everything:app

Environment:
    BIND               address to listen on (default 127.0.0.1:$PORT, PORT default 8000)
    WEB_CONCURRENCY    number of worker processes (default 1, see below)
    FLASK_MCP_BACKEND  redis://host:6379/0 to keep sessions in Redis (required for more than one
                       worker); the app reads it as MCP_BACKEND with app.config.from_prefixed_env()
"""

import os
import sys

bind = os.environ.get("BIND") or f"127.0.0.1:{os.environ.get('PORT', '8000')}"

# gevent: every request, including long-lived SSE streams, is a greenlet, so one worker process
# serves thousands of concurrent MCP sessions. The app must not be imported before gevent has
# monkey-patched the process, so keep preload_app off.
worker_class = "gevent"
worker_connections = 10000
preload_app = False

# Workers. With the in-memory backend an MCP session (its state, its open streams) lives in ONE
# process, and a request routed to another worker would not find it: use exactly 1 worker.
# With FLASK_MCP_BACKEND=redis://... sessions are shared, so any worker (or any server behind a
# load balancer) can serve any request; then use e.g. 2 x CPU cores (WEB_CONCURRENCY). The app
# must load the variable: app.config.from_prefixed_env() turns FLASK_MCP_BACKEND into MCP_BACKEND
# (or set app.config["MCP_BACKEND"] in code, in which case this check cannot see it).
workers = int(os.environ.get("WEB_CONCURRENCY", "1"))
backend = (os.environ.get("FLASK_MCP_BACKEND", "").strip() or "memory://").lower()
if workers > 1 and backend.startswith("memory:"):  # every other backend URL is shared (Redis)
    print(
        f"gunicorn.conf.py: WARNING: {workers} workers without FLASK_MCP_BACKEND=redis://...; "
        "sessions in memory are not shared between workers, so requests will fail with "
        "'session not found'",
        file=sys.stderr,
    )

# Timeouts. For gevent (async) workers `timeout` is a heartbeat: the worker process is killed
# only when its event loop has not run for `timeout` seconds (a blocked loop), NOT when a request
# (e.g. an SSE stream held open for an hour) lasts longer. 0 would disable the check entirely;
# keep it on so a wedged worker is replaced.
timeout = 30
# On SIGTERM/reload, open streams get this long to finish before the worker is killed.
graceful_timeout = 10
# Idle keep-alive connections; longer than the proxy's upstream keepalive (nginx: 60 s) so that
# the proxy, not gunicorn, closes idle connections (avoids races on reused connections).
keepalive = 75

# gunicorn >= 25.1 opens a control socket at one fixed per-user path; several instances on one
# host (e.g. 8001 and 8002 behind nginx) would fight over it. Older versions ignore this key.
control_socket_disable = True

# Trust X-Forwarded-* from a proxy on this host only (nginx in contrib/nginx.conf).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info")


# Prometheus (flask_mcp.contrib.prometheus) with several workers: prometheus_client's
# multiprocess mode. Set PROMETHEUS_MULTIPROC_DIR to a directory only gunicorn uses; it is
# emptied when gunicorn starts, and a dead worker's live gauges are dropped when it exits.
def on_starting(server):
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(".db"):
                os.remove(os.path.join(directory, name))


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
