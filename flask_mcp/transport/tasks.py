"""The in-process task executor: a task's handler in a greenlet or thread of this worker.

:class:`InProcessExecutor` runs the task's ``tools/call`` through the one runner
(:func:`flask_mcp.transport.runner.spawn`) from where the request that created it
left it (past the middleware and the validation), in a copy of its request context,
with the task's :class:`~flask_mcp.server.tasks.TaskContext`.
A watcher beside it renews the task's lease in the store (so that other
workers can tell a dead worker's tasks from live ones, see ``MCP_TASK_LEASE``),
turns a ``tasks/cancel`` seen in the store into the run's cancellation, and
records the handler's answer when it ends (kept while the backend is unreachable, as a
plain call's answer is, and recorded once it answers again). At most ``MCP_TASK_MAX_RUNNING``
tasks run in one process, of which one client runs its share (``MCP_TASK_SHARE_PER_CLIENT``).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import typing as t

from .. import signals
from ..backends.task_store import TaskQuotaExceeded
from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..kernel import intake
from ..runtime import concurrency as _concurrency
from ..runtime.runs import InProcessOutbox
from ..runtime.runs import new_stream_id
from ..runtime.settle import OWED
from ..runtime.supervisor import ensure_supervisor
from ..server import tasks as _tasks
from . import runner

if t.TYPE_CHECKING:
    from ..runtime.runs import RequestRun
    from ..runtime.state import AppState
    from ..server.call import Call
    from ..server.dispatcher import Dispatcher

logger = logging.getLogger("flask_mcp")
#: Seconds between two looks of the watcher at its task's record.
WATCH = 0.25


class InProcessExecutor:
    """Runs tasks in this process, bounded by ``MCP_TASK_MAX_RUNNING``, of which one client
    (:func:`~flask_mcp.server.tasks.caller_of`) runs at most its share,
    ``MCP_TASK_SHARE_PER_CLIENT``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: The runs by task id (``None``: its slot is taken, its run not started yet).
        self.running: dict[str, RequestRun | None] = {}
        #: Whom each task started here counts against, and how many each client runs;
        #: a client running none has no entry.
        self._callers: dict[str, str] = {}
        self._held: dict[str, int] = {}

    def refusal(self, call: Call) -> str | None:
        """Tell why a task of ``call`` may not start now (``None``: it may): the early
        check, before ``prepare`` and the record; :meth:`start` takes the slot."""
        caller = _caller(call)
        with self._lock:
            return self._refusal(call.state, caller)

    def _refusal(self, state: AppState, caller: str | None) -> str | None:
        limit = state.settings.task_max_running
        if len(self.running) >= limit:
            return _tasks.BUSY
        if caller is None:
            return None
        share = min(limit, max(1, math.ceil(limit * state.settings.task_share_per_client)))
        return _tasks.BUSY_CLIENT if self._held.get(caller, 0) >= share else None

    def start(
        self, dispatcher: t.Any, call: Call, record: dict[str, t.Any], body: _tasks.TaskBody
    ) -> None:
        """Start the task's run; it outlives the request that created the task.

        The slot is taken here, checked and taken under one lock: tasks created
        together all pass :meth:`refusal`, and those past ``MCP_TASK_MAX_RUNNING`` (or
        past their client's share, ``MCP_TASK_SHARE_PER_CLIENT``) fail here.

        :raises MCPError: this process runs ``MCP_TASK_MAX_RUNNING`` tasks already, or
            the caller its share of them; the task's record is marked failed.
        """
        task_id = record["taskId"]
        caller = _caller(call)
        with self._lock:
            refused = self._refusal(call.state, caller)
            if refused is None:
                self.running[task_id] = None  # the slot, until _begin puts the run there
                if caller is not None:
                    self._callers[task_id] = caller
                    self._held[caller] = self._held.get(caller, 0) + 1
        if refused is not None:
            error = {"code": INTERNAL_ERROR, "message": refused}
            _tasks.set_status(call.state, task_id, "failed", error=error, statusMessage=refused)
            raise MCPError(INTERNAL_ERROR, refused)
        try:
            run = self._begin(dispatcher, call, record, body)
        except BaseException:
            self._release(task_id)
            raise
        _concurrency.spawn(lambda: self._watch(call.state, task_id, run))

    def _release(self, task_id: str) -> None:
        """Give back the slot of a task, and its client's."""
        with self._lock:
            self.running.pop(task_id, None)
            caller = self._callers.pop(task_id, None)
            if caller is not None:
                held = self._held.pop(caller, 1) - 1
                if held > 0:
                    self._held[caller] = held

    def run(
        self, dispatcher: t.Any, state: AppState, record: dict[str, t.Any], auth: t.Any = None
    ) -> None:
        """Run a task to its end in the calling thread (a Celery worker's, for example).

        The app's supervisor, which ends a run past ``MCP_TASK_TIMEOUT``, is started
        here: a Celery worker serves no request that would have started it.

        :param auth: the caller's :class:`~flask_mcp.AuthInfo`, rebuilt where the task runs.
        """
        ensure_supervisor(state)
        call = _tasks.task_call(state, record, auth)
        run = self._begin(dispatcher, call, record, _tasks.record_body(dispatcher, record))
        self._watch(state, record["taskId"], run)

    def _begin(
        self, dispatcher: t.Any, call: Call, record: dict[str, t.Any], body: _tasks.TaskBody
    ) -> RequestRun:
        state = call.state
        task_call = _tasks.task_call(state, record, call.auth)
        # Noted (its lease started) before the handler starts: a worker killed as the
        # handler began left a Celery task without a lease, which no sweep could fail.
        try:
            _tasks.store_of(state).mutate(record["taskId"], _mark_worker)
        except (BackendUnavailable, TaskQuotaExceeded) as exc:
            # The note is for operators (the lease was set when the task was created, and
            # the watcher renews it): the run goes on, recorded as it ends.
            logger.warning("Task %s: its worker was not noted: %s", record["taskId"], exc)
        except Exception:
            # Any other refusal too: raised from here, the run would go on unwatched, its
            # lease never renewed (a Celery task's is unset until now), so a task whose
            # worker then died would never fail.
            logger.exception("Task %s: its worker was not noted; it runs on", record["taskId"])
        run = runner.spawn(
            t.cast("Dispatcher", dispatcher),
            task_call,
            InProcessOutbox(new_stream_id()),
            context=intake.task_context(task_call, record),
            can_round_trip=False,
            body=_signalled(body, record),
        )
        run.deadline = time.monotonic() + state.settings.task_timeout
        with self._lock:
            self.running[record["taskId"]] = run
        return run

    def _watch(self, state: AppState, task_id: str, run: RequestRun) -> None:
        store = _tasks.store_of(state)
        renew_every = max(state.settings.task_lease / 3, WATCH)
        renewed = time.monotonic()
        timed_out = troubled = False
        try:
            work = t.cast(_concurrency.Task, run.task)
            while not work.done.wait(WATCH):
                try:
                    if (
                        not timed_out
                        and run.cancelled.is_set()
                        and time.monotonic() >= run.deadline
                    ):
                        # The supervisor timed it out; a thread runs on until the handler
                        # returns, but its task fails now, not then.
                        timed_out = _Outcome(state, task_id, None).settle()
                    record = store.get(task_id)
                    if record is None or record["status"] in _tasks.TERMINAL:
                        run.cancel()  # cancelled (or expired): stop the handler
                        continue
                    if time.monotonic() - renewed >= renew_every:
                        store.mutate(task_id, _renew)
                        renewed = time.monotonic()
                except BackendUnavailable as exc:
                    logger.warning("Task %s: the backend is unavailable: %s", task_id, exc)
                except Exception:
                    # Any other refusal (a renewal past the caller's byte bound, a Redis
                    # error reply) must not end the watch: the lease would run out and the
                    # live task fail as if its worker had died, its outcome never recorded.
                    log = logger.debug if troubled else logger.exception
                    log("Task %s: watching it failed; it goes on", task_id)
                    troubled = True
            answer = run.result
            outcome = _Outcome(state, task_id, answer.message if answer is not None else None)
            try:
                outcome.settle()
            except BackendUnavailable as exc:  # kept, and recorded once the backend answers
                logger.warning("Task %s: its outcome waits for the backend: %s", task_id, exc)
                OWED.add(outcome)
                ensure_supervisor(state)  # it writes what is owed
        except Exception:
            logger.exception("Task %s: recording its outcome failed", task_id)
        finally:
            self._release(task_id)


def _caller(call: Call) -> str | None:
    """Return whom a task of ``call`` counts against for ``MCP_TASK_SHARE_PER_CLIENT``
    (``None``: nobody, off HTTP, where the one client shares with no one)."""
    if call.client_address is None and (call.auth is None or not call.auth.principal):
        return None
    return _tasks.caller_of(call)


class _Outcome:
    """The end of a task's run, recorded in the store once the backend answers.

    A :class:`~flask_mcp.runtime.settle.Settleable`: kept in
    :data:`~flask_mcp.runtime.settle.OWED` while the backend is unreachable.
    """

    def __init__(self, state: AppState, task_id: str, message: dict[str, t.Any] | None) -> None:
        self.state, self.task_id, self.message = state, task_id, message
        #: Where it is recorded (the app's task store is its backend's).
        self.backend = state.backend

    def settle(self) -> bool:
        """Record the handler's answer (``None``: cancelled, or over its time); return ``True``.

        :raises BackendUnavailable: the backend is unreachable; nothing was recorded.
        """
        message = self.message
        if message is None:
            record = _tasks.store_of(self.state).get(self.task_id)
            if record is not None and record["status"] not in _tasks.TERMINAL:
                timeout = self.state.settings.task_timeout
                text = f"The task ran longer than MCP_TASK_TIMEOUT ({timeout:g} s)."
                message = {"error": {"code": INTERNAL_ERROR, "message": text}}
        _tasks.settle(self.state, self.task_id, message)
        return True


def _signalled(body: _tasks.TaskBody, record: dict[str, t.Any]) -> _tasks.TaskBody:
    """Return ``body`` between the ``task_run_started`` and ``task_run_finished`` signals.

    Both are sent where the handler runs (its greenlet or thread, a Celery worker's), so
    a receiver can make the run's context there (a tracer: the run's span, child of the
    request that created the task, from the record's ``trace``).
    """
    task_id = record["taskId"]
    tool = record["request"]["name"]
    trace = record.get("trace") or {}

    def run(call: Call) -> dict[str, t.Any]:
        app = call.state.app
        signals.send(signals.task_run_started, app, task_id=task_id, tool=tool, trace=trace)
        error: dict[str, t.Any] | None = None
        is_error = answered = False
        try:
            result = body(call)
            answered = True
            is_error = result.get("isError") is True
            return result
        except MCPError as exc:
            error = exc.to_error()
            raise
        except Exception:
            error = {"code": INTERNAL_ERROR, "message": "Internal error."}
            raise
        finally:
            cancelled = not answered and error is None
            if call.run is not None and call.run.cancelled.is_set():
                # Cancelled, or past MCP_TASK_TIMEOUT: a thread that ran on to its end has
                # no say in the task's outcome.
                error, is_error, cancelled = None, False, True
            signals.send(
                signals.task_run_finished,
                app,
                task_id=task_id,
                tool=tool,
                error=error,
                is_error=is_error,
                cancelled=cancelled,
            )

    return run


def _mark_worker(record: dict[str, t.Any]) -> bool:
    """Note which process runs the task (for operators and tests); its lease starts now."""
    record["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    record["lease"] = time.time()
    return True


def _renew(record: dict[str, t.Any]) -> bool:
    if record["status"] in _tasks.TERMINAL:
        return False
    record["lease"] = time.time()
    return True


__all__ = ["InProcessExecutor"]
