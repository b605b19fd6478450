"""Run task handlers on Celery workers (``pip install Flask-MCP[celery]``).

With a :class:`CeleryExecutor`, ``tools/call`` of a task tool records the task
in the backend and sends its id to Celery; a Celery worker that imported the
same Flask app runs the handler in that app's context, through the same runner
and with the same task ``Context`` (progress, elicitation and cancellation go
through the task record in the backend). Tasks therefore survive the web
worker that created them. The backend must be shared (Redis)::

    celery = Celery(__name__, broker="redis://127.0.0.1:6379/1")
    mcp = MCP(name="jobs", version="1.0", task_executor=CeleryExecutor(celery))
    app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/0"
    mcp.init_app(app)

and start a worker on the module's Celery app: ``celery -A jobs:celery worker -P threads``.
A queued task has no lease yet (no process runs it); once a worker picks it
up, the worker renews the lease, and ``MCP_TASK_LEASE`` seconds without a
renewal fail it as in the web worker. With authorization on, a task runs under the
caller's authorization on the worker too: the task's record keeps a server-side grant
(principal, scopes, client id, claims; never the token), from which the worker rebuilds
``current_auth()`` and ``ctx.auth``, so ``require_scopes()`` works in the task.
"""

from __future__ import annotations

import logging
import typing as t
import weakref

from celery import Celery

from ..errors import INTERNAL_ERROR
from ..errors import MCPError
from ..server import tasks as _tasks
from ..transport.tasks import InProcessExecutor

if t.TYPE_CHECKING:
    from flask import Flask

    from ..runtime.state import AppState
    from ..server.call import Call

logger = logging.getLogger("flask_mcp")
#: The name of the Celery task that runs Flask-MCP tasks.
TASK_NAME = "flask_mcp.run_task"


class CeleryExecutor:
    """Sends tasks to Celery workers.

    :param celery: the Celery app; default: one made from ``broker_url``.
    :param broker_url: the broker, when no Celery app is given.
    :param queue: the Celery queue the tasks go to (default: Celery's default queue).
    """

    def __init__(
        self,
        celery: Celery | None = None,
        *,
        broker_url: str | None = None,
        queue: str | None = None,
    ) -> None:
        if celery is None:
            if broker_url is None:
                raise ValueError("Pass a Celery app or broker_url='redis://...'.")
            celery = Celery("flask_mcp", broker=broker_url)
        self.celery = celery
        self.queue = queue
        #: Per server name, every app it is served on (an app factory may make several).
        self._targets: dict[str, list[tuple[Flask, AppState, t.Any]]] = {}
        self._runner = InProcessExecutor()
        executors = _EXECUTORS.get(celery)
        if executors is None:  # the first executor on this Celery app registers the task
            executors = _EXECUTORS[celery] = []

            def run_task(server: str, task_id: str) -> None:
                _executor_of(celery, server)._run(server, task_id)

            # Not shared (Celery's default): a shared task is registered on every Celery
            # app of the process, and another app's executor would get its tasks.
            _TASKS[celery] = celery.task(name=TASK_NAME, ignore_result=True, shared=False)(run_task)
        executors.append(self)
        self.task = _TASKS[celery]

    def bind(self, server: str, app: Flask, state: AppState, dispatcher: t.Any) -> None:
        """Remember an app a server is served on, so that a worker can run its tasks.

        A server served on several apps (an app factory) keeps them all: a task runs
        on the app whose backend holds its record.
        """
        self._targets.setdefault(server, []).append((app, state, dispatcher))

    def refusal(self, call: Call) -> str | None:
        """Celery queues what its workers cannot run yet: nothing is refused."""
        return None

    def start(
        self, dispatcher: t.Any, call: Call, record: dict[str, t.Any], body: t.Any = None
    ) -> None:
        """Queue the task; no process runs it yet, so it has no lease.

        ``body`` (the run in this process) is not used: the worker rebuilds it from
        the record.
        """
        _tasks.store_of(call.state).mutate(record["taskId"], _unleased)
        server = next(
            (
                name
                for name, targets in self._targets.items()
                if any(state is call.state for _, state, _ in targets)
            ),
            "",
        )
        try:
            self.task.apply_async(args=[server, record["taskId"]], queue=self.queue)
        except Exception as exc:
            text = f"Could not queue the task on Celery: {type(exc).__name__}: {exc}"
            error = {"code": INTERNAL_ERROR, "message": text}
            _tasks.set_status(
                call.state, record["taskId"], "failed", error=error, statusMessage=text
            )
            raise MCPError(INTERNAL_ERROR, f"{text}. Is the broker running?") from exc

    def _run(self, server: str, task_id: str) -> None:
        targets = self._targets.get(server)
        if not targets:
            raise LookupError(
                f"This Celery worker serves no Flask-MCP server named {server!r}: start it on "
                "the module that creates the Flask app (celery -A yourapp worker)."
            )
        # the app whose backend holds the task's record
        found = ((target, _tasks.store_of(target[1]).get(task_id)) for target in targets)
        (app, state, dispatcher), record = next(
            ((target, record) for target, record in found if record is not None),
            (targets[0], None),
        )
        if record is None:
            logger.warning(
                "Task %s of %r has no record in this Celery worker's backend: it expired "
                "while queued, or this worker reads another MCP_BACKEND (or key prefix) than "
                "the web workers; not run.",
                task_id,
                server,
            )
            return
        if record["status"] in _tasks.TERMINAL:
            return  # cancelled (or failed as dead) while queued
        with app.app_context():
            self._runner.run(dispatcher, state, record)


#: The executors made on each Celery app, and the one task each app has registered: a
#: worker runs a task of a server on the executor that serves it (several servers in one
#: process may each have theirs on one Celery app).
_EXECUTORS: weakref.WeakKeyDictionary[Celery, list[CeleryExecutor]] = weakref.WeakKeyDictionary()
_TASKS: weakref.WeakKeyDictionary[Celery, t.Any] = weakref.WeakKeyDictionary()


def _executor_of(celery: Celery, server: str) -> CeleryExecutor:
    """Return the executor of ``celery`` that serves ``server`` (else the first, whose
    :meth:`~CeleryExecutor._run` says no server of that name is served here)."""
    executors = _EXECUTORS[celery]
    return next((e for e in executors if server in e._targets), executors[0])


def _unleased(record: dict[str, t.Any]) -> bool:
    record["lease"] = None
    record["executor"] = "celery"  # what a lease that runs out tells (check_lease)
    return True


__all__ = ["TASK_NAME", "CeleryExecutor"]
