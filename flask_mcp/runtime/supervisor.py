"""The background loop of each app: request timeouts and session expiry."""

from __future__ import annotations

import logging
import time
import typing as t

from .. import protocol
from .. import signals
from ..errors import BackendUnavailable
from . import concurrency as _concurrency

if t.TYPE_CHECKING:
    from .runs import RequestRun
    from .state import AppState

logger = logging.getLogger("flask_mcp")
TICK = 1.0
REAP_EVERY = 10.0
#: Called with ``(state, now)`` after every round, each on its own (an exception is logged):
#: how other parts of the runtime add periodic work (the tasks' lease sweep).
HOOKS: list[t.Callable[[AppState, float], None]] = []


def ensure_supervisor(state: AppState) -> None:
    """Start the app's supervisor in this process if it is not running.

    It starts lazily, on the first request, so that it runs in each worker
    after gunicorn forked it.
    """
    task = state.supervisor
    if task is not None and not task.done.is_set():
        return
    state.supervisor = _concurrency.spawn(lambda: _loop(state))


def time_out(state: AppState, run: RequestRun) -> None:
    """End an overdue request with its era's timeout answer and interrupt its handler.

    See :func:`flask_mcp.protocol.timeout_answer`: an ``isError`` result for
    ``tools/call``; else -32001 in the handshake era, -32603 at 2026-07-28.
    """
    timeout = state.settings.request_timeout
    response = protocol.timeout_answer(run.era, run.method, run.request_id, timeout)
    run.outbox.finish(response)
    run.cancelled.set()
    if run.task is not None:
        run.task.kill()
    state.inflight.remove(run)
    signals.send(
        signals.request_cancelled,
        state.app,
        request_id=run.request_id,
        session_id=run.session_id,
        reason="timeout",
    )


def tick(state: AppState, now: float, reap: bool) -> None:
    """Do one round of supervision."""
    for run in state.inflight.overdue(now):
        time_out(state, run)
    if reap:
        settings = state.settings
        for session_id, reason in state.backend.reap(
            settings.session_idle_timeout,
            settings.session_max_lifetime,
            keep=state.inflight.session_ids(),
        ):
            signals.send(signals.session_closed, state.app, session_id=session_id, reason=reason)
    for hook in list(HOOKS):
        try:
            hook(state, now)
        except Exception:
            logger.exception("A Flask-MCP supervisor hook failed; it runs again next round.")


def _loop(state: AppState) -> None:
    last_reap = 0.0
    while True:
        _concurrency.sleep(TICK)
        now = time.monotonic()
        try:
            reap = now - last_reap >= REAP_EVERY
            if reap:
                last_reap = now
            tick(state, now, reap)
        except BackendUnavailable as exc:
            logger.warning("The Flask-MCP supervisor skipped a round: %s", exc)
        except Exception:
            logger.exception("The Flask-MCP supervisor failed a round; it goes on.")


__all__ = [
    "HOOKS",
    "REAP_EVERY",
    "TICK",
    "ensure_supervisor",
    "tick",
    "time_out",
]
