"""The background loop of each app: request timeouts, owed answers, session expiry.

It also settles what runs in a worker that exits: at interpreter exit (a
gunicorn worker that stops after ``SIGTERM``, ``SIGHUP`` or ``--max-requests``,
a reloader, ``sys.exit``) every request still running here is answered with a
JSON-RPC error ("the worker running this request stopped") and the backend
registration of the process is closed, so other workers see it gone at once.
A worker killed outright (``SIGKILL``, the OOM killer) runs no code: the
shared backend's sweep writes the same error for its requests once its beats
have been missing for the backend's ``worker_timeout``.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
import typing as t
import weakref

from .. import protocol
from .. import signals
from ..errors import BackendUnavailable
from . import concurrency as _concurrency
from . import settle

if t.TYPE_CHECKING:
    from .runs import RequestRun
    from .state import AppState

logger = logging.getLogger("flask_mcp")
TICK = 1.0
REAP_EVERY = 10.0
#: Called with ``(state, now)`` after every round, each on its own (an exception is logged):
#: how other parts of the runtime add periodic work (the tasks' lease sweep).
HOOKS: list[t.Callable[[AppState, float], None]] = []
#: Held while a supervisor is checked for and started (nothing waits under it).
_STARTING = _concurrency.native_lock()


def ensure_supervisor(state: AppState) -> None:
    """Start the app's supervisor in this process if it is not running.

    It starts lazily, on the first request, so that it runs in each worker
    after gunicorn forked it. The first requests of a threaded worker arrive
    together: the check and the start are one step, so that one of them starts it.
    """
    task = state.supervisor
    if task is not None and not task.done.is_set():
        return
    with _STARTING:
        task = state.supervisor
        if task is not None and not task.done.is_set():
            return  # another request started it meanwhile
        state.supervisor_stopped = False
        state.supervisor = _concurrency.spawn(lambda: _loop(state))
        pid = os.getpid()
        if state.exit_hook_pid != pid:
            state.exit_hook_pid = pid
            atexit.register(_at_exit, weakref.ref(state), pid)


def stop_supervisor(state: AppState) -> None:
    """End the app's supervisor in this process at its next tick.

    :func:`ensure_supervisor` starts it again (the next request does).
    """
    state.supervisor_stopped = True


def stop_runs(state: AppState, text: str = settle.WORKER_STOPPED) -> int:
    """Answer every request running in this process with an error; return how many.

    Used when the process exits: the answers are written at once when the
    backend takes them (a shared backend's sweep writes the same error for any
    it could not take, once this process's registration is closed).
    """
    runs = state.inflight.all()
    for run in runs:
        run.outbox.finish(settle.error_answer(run.request_id, text))
        run.cancelled.set()
        state.inflight.remove(run)
    return len(runs)


def _at_exit(ref: weakref.ref[AppState], pid: int) -> None:
    state = ref()
    if state is None or pid != os.getpid():  # a forked child inherits the parent's hooks
        return
    try:
        stopped = stop_runs(state)
        if stopped:
            logger.warning(
                "This worker (pid %s) exits with %s request(s) running; each is answered "
                "with an error.",
                pid,
                stopped,
            )
        if settle.settle_owed():
            logger.warning("Answers owed to clients are left to the backend's sweep.")
    except Exception:
        logger.exception("Answering the running requests at exit failed.")
    finally:
        # Else the loop would use the closed backend (which a Redis backend takes as a
        # new worker) until the interpreter stops.
        stop_supervisor(state)
        state.backend.close()


def time_out(state: AppState, run: RequestRun) -> None:
    """End an overdue request with its era's timeout answer and interrupt its handler.

    See :func:`flask_mcp.protocol.timeout_answer`: an ``isError`` result for
    ``tools/call``; else -32001 in the handshake era, -32603 at 2026-07-28.
    """
    timeout = state.settings.request_timeout
    response = protocol.timeout_answer(run.era, run.method, run.request_id, timeout)
    run.timed_out = response
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
    state.writes.end_stalled(now, state.settings.write_timeout)
    state.reads.end_stalled(now, state.settings.read_timeout)
    settle.settle_owed()
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
        except BackendUnavailable as exc:  # an outage, not a bug: one line, no traceback
            logger.warning("A Flask-MCP supervisor hook waits for the backend: %s", exc)
        except Exception:
            logger.exception("A Flask-MCP supervisor hook failed; it runs again next round.")


def _loop(state: AppState) -> None:
    last_reap = 0.0
    while True:
        _concurrency.sleep(TICK)
        if state.supervisor_stopped:
            return
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
    "stop_runs",
    "stop_supervisor",
    "tick",
    "time_out",
]
