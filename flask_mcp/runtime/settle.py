"""Answers owed to clients: kept while the backend is unreachable, written when it returns.

Every request ends with a JSON-RPC response on its stream, whatever happens
to the shared-state backend. When an outbox cannot write a response (or the
end of its stream) because the backend is unreachable, it registers itself
here; the supervisor of each app calls :func:`settle_owed` once a second and
writes what is owed as soon as the backend answers again. The same answers
are written by the process's exit hooks (:mod:`.supervisor`) when a worker
stops with requests still running.
"""

from __future__ import annotations

import logging
import threading
import typing as t

from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable

logger = logging.getLogger("flask_mcp")

#: The text of the error that answers a request whose worker stopped before it answered.
WORKER_STOPPED = "The worker running this request stopped before it answered; retry the request."
#: The text of the error that answers a request whose run met an unreachable session store
#: (one refused before it started gets
#: :data:`flask_mcp.errors.STORE_UNAVAILABLE_BEFORE_START`, with a 503).
STORE_UNAVAILABLE_WHILE_RUNNING = (
    "Service Unavailable: the session store is unavailable; retry the request later."
)


class Settleable(t.Protocol):
    """An outbox that may owe writes to the backend."""

    def settle(self) -> bool:
        """Write what is owed; tell whether nothing is owed any more.

        :raises BackendUnavailable: the backend is still unreachable.
        """


class _Owed:
    """The process-wide set of outboxes with writes owed to the backend."""

    def __init__(self) -> None:
        self._items: dict[int, Settleable] = {}
        self._lock = threading.Lock()

    def add(self, outbox: Settleable) -> None:
        with self._lock:
            self._items[id(outbox)] = outbox

    def __len__(self) -> int:
        return len(self._items)

    def settle(self) -> int:
        """Write every owed answer the backend takes now; return how many remain owed."""
        with self._lock:
            items = list(self._items.items())
        for key, outbox in items:
            try:
                done = outbox.settle()
            except BackendUnavailable:
                break  # still down: the rest waits for the next round
            except Exception:
                logger.exception("Writing an owed answer failed; it is dropped.")
                done = True
            if done:
                with self._lock:
                    self._items.pop(key, None)
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
    """Return a retryable JSON-RPC error answering ``request_id`` (-32603)."""
    error = {"code": INTERNAL_ERROR, "message": text, "data": {"retryable": True}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


__all__ = [
    "OWED",
    "STORE_UNAVAILABLE_WHILE_RUNNING",
    "WORKER_STOPPED",
    "Settleable",
    "error_answer",
    "settle_owed",
]
