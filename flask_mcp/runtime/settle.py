"""Answers owed to clients: kept while the backend is unreachable, written when it returns.

Every request ends with a JSON-RPC response on its stream, whatever happens
to the shared-state backend. When an outbox cannot write a response (or the
end of its stream) because the backend is unreachable, it registers itself
here; the supervisor of each app calls :func:`settle_owed` once a second and
writes what is owed as soon as the backend answers again. The same answers
are written by the process's exit hooks (:mod:`.supervisor`) when a worker
stops with requests still running. The removal of a task record whose creation
its client was refused waits here too (:func:`flask_mcp.runtime.tasks.create`).
"""

from __future__ import annotations

import logging
import threading
import time
import typing as t

from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable

logger = logging.getLogger("flask_mcp")

#: The text of the error that answers a request whose worker stopped before it answered.
#: Its handler had started, so the text does not simply invite a retry: sent again, a call
#: that did part of its work would do it twice. ``session.lua`` (the sweep) writes the same.
WORKER_STOPPED = (
    "The worker running this request stopped before it answered: the request may have "
    "been carried out in part. Check its effects before sending it again."
)
#: The text of the error that answers a request whose handler met an unreachable session
#: store (its ``ctx.elicit()``, say) and could not go on: it may have done part of its work
#: (one refused before it started gets
#: :data:`flask_mcp.errors.STORE_UNAVAILABLE_BEFORE_START`, with a 503 to retry).
STORE_UNAVAILABLE_WHILE_RUNNING = (
    "The session store became unavailable while this request ran, and its handler could "
    "not go on: the request may have been carried out in part. Check its effects before "
    "sending it again."
)


#: Seconds an owed write is kept for a backend that stays unreachable. A backend that
#: never returns (its app torn down, its server gone) would otherwise keep its outboxes,
#: and itself, for the life of the process; an answer that late finds no client waiting.
KEEP_OWED_FOR = 3600.0


class Settleable(t.Protocol):
    """An outbox (or another writer) that may owe writes to the backend."""

    @property
    def backend(self) -> object:
        """The backend it writes to: one that is unreachable holds back only its own writes."""

    def settle(self) -> bool:
        """Write what is owed; tell whether nothing is owed any more.

        :raises BackendUnavailable: the backend is still unreachable.
        """


class _Owed:
    """The process-wide set of outboxes with writes owed to their backends.

    Every app of the process shares it, whatever its backend: a backend still unreachable
    holds back its own outboxes (in the order they were owed), never another's.
    """

    def __init__(self) -> None:
        #: The outboxes by id, each with the :func:`time.monotonic` it was first owed at.
        self._items: dict[int, tuple[Settleable, float]] = {}
        self._lock = threading.Lock()

    def add(self, outbox: Settleable) -> None:
        with self._lock:
            self._items.setdefault(id(outbox), (outbox, time.monotonic()))

    def __len__(self) -> int:
        return len(self._items)

    def settle(self) -> int:
        """Write every owed answer the backends take now; return how many remain owed."""
        with self._lock:
            items = list(self._items.items())
        now = time.monotonic()
        down: set[int] = set()  # the backends that refused a write this round
        dropped = 0
        for key, (outbox, owed_since) in items:
            if id(outbox.backend) in down:
                continue  # after its earlier write, in the next round
            try:
                done = outbox.settle()
            except BackendUnavailable:
                down.add(id(outbox.backend))
                done = now - owed_since >= KEEP_OWED_FOR
                dropped += done
            except Exception:
                logger.exception("Writing an owed answer failed; it is dropped.")
                done = True
            if done:
                with self._lock:
                    self._items.pop(key, None)
        if dropped:
            logger.warning(
                "%s answer(s) owed for %g s to a session store that stayed unreachable "
                "were dropped.",
                dropped,
                KEEP_OWED_FOR,
            )
        return len(self._items)


#: The outboxes of this process that owe writes (one set for every app of the process).
OWED = _Owed()


def settle_owed() -> int:
    """Write the answers owed since the backend became unreachable; return how many remain."""
    if not len(OWED):
        return 0
    remaining = OWED.settle()
    if not remaining:
        logger.info("Flask-MCP wrote every answer kept while the session store was unavailable.")
    return remaining


def error_answer(request_id: t.Any, text: str) -> dict[str, t.Any]:
    """Return the JSON-RPC error (-32603) answering ``request_id``, whose handler started
    and could not finish.

    Its ``data`` says ``{"retryable": false}``: the request may have been carried out in
    part, so it is not safe to send again blindly (the 503 of a request refused before it
    started says ``true``).
    """
    error = {"code": INTERNAL_ERROR, "message": text, "data": {"retryable": False}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


__all__ = [
    "OWED",
    "STORE_UNAVAILABLE_WHILE_RUNNING",
    "WORKER_STOPPED",
    "Settleable",
    "error_answer",
    "settle_owed",
]
