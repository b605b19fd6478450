"""A gunicorn config for tests that need every worker's app loaded before they go on.

``extra_args=["-c", "python:tests._apps.gunicorn_ready"]``, then
``harness.wait_for_workers_ready(server, count)``: each worker logs :data:`READY` once
``init_app`` has run in it (``serve`` itself waits for one worker only).
"""

from __future__ import annotations

import typing as t

READY = "worker app loaded"


def post_worker_init(worker: t.Any) -> None:
    """Log :data:`READY` with the worker's pid, after the worker imported the app."""
    worker.log.info("%s (pid: %s)", READY, worker.pid)
