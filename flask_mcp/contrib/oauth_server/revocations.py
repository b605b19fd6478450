"""Revocations that reach every worker without a storage read per request.

A revoked token family is a record in the storage (``revoked:<family>``), and
:meth:`~.server.AppServer.revoke_family` also publishes the family on the MCP
backend's pub/sub (channel :data:`CHANNEL`). Each worker keeps, in
:class:`KnownLiveFamilies`, the families it read as not revoked, and forgets one
as soon as its revocation is published. A request whose family is known live is
then served without asking the storage, but only while the backend can tell
that this worker holds every message published so far
(:meth:`~flask_mcp.backends.base.Backend.caught_up`: the Redis backend under
gevent, while its listener is subscribed and has nothing unread). Then a
revocation made on any worker before a request came is known here: it applies
at once, as with a storage read.

Otherwise the storage is read, as before: with threaded workers, on a Redis
cluster, while the subscription is down or has unread messages, and with a
backend shared by no other process (the memory backend: a single process
could not learn another's revocations). When the subscription was made anew
(messages published meanwhile are lost), every known family is forgotten.
An entry also ends with its token, after :data:`MAX_AGE` seconds at most, and
the oldest goes first past :data:`MAX_FAMILIES`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import typing as t

if t.TYPE_CHECKING:
    from ...backends.base import Backend
    from ...backends.base import Subscription

logger = logging.getLogger("flask_mcp")

#: The pub/sub channel of the revoked families (under the MCP backend's prefix).
CHANNEL = "oauth:revoked"
#: Families known live per process; the oldest is forgotten first.
MAX_FAMILIES = 10_000
#: Seconds a family stays known live after the storage said so (a bound on the harm
#: of a message lost without the subscription noticing, which should not happen).
MAX_AGE = 60.0
#: Seconds between two attempts to subscribe after one failed.
RETRY_AFTER = 1.0


class KnownLiveFamilies:
    """The families this process read as not revoked, forgotten when revoked anywhere.

    :param backend: returns the MCP backend whose pub/sub carries the revocations,
        or ``None`` (then every check reads the storage).
    """

    def __init__(self, backend: t.Callable[[], Backend | None]) -> None:
        self.backend = backend
        #: Family to when it stops being known live (monotonic).
        self.families: dict[str, float] = {}
        #: Counts the revocations heard: a read that saw one while in flight keeps nothing.
        self.revocations = 0
        self._subscription: Subscription | None = None
        self._generation = 0
        self._pid = 0
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def _subscribed(self, backend: Backend) -> Subscription | None:
        """This process's subscription to :data:`CHANNEL`, made on first use."""
        subscription = self._subscription
        if subscription is not None and self._pid == os.getpid():
            return subscription
        now = time.monotonic()
        if now < self._retry_at:
            return None
        with self._lock:
            if self._subscription is None or self._pid != os.getpid():
                self.families.clear()
                try:
                    subscription = backend.subscribe(CHANNEL)
                except Exception as exc:  # the backend says why; the storage still answers
                    self._retry_at = now + RETRY_AFTER
                    logger.warning("Cannot hear token revocations, reading them instead: %s", exc)
                    return None
                self._subscription, self._pid = subscription, os.getpid()
                self._generation = subscription.generation
            return self._subscription

    def _drain(self, subscription: Subscription) -> None:
        """Apply the revocations received so far; forget everything after a gap."""
        if subscription.generation != self._generation:
            self._generation = subscription.generation
            self.revocations += 1
            self.families.clear()  # revocations published while it was down are lost
        message = subscription.get(0)
        while message is not None:
            self.revocations += 1
            self.families.pop(str(message.get("family")), None)
            message = subscription.get(0)

    def heard(self, family: str) -> None:
        """Forget ``family`` now: this process revoked it."""
        self.revocations += 1
        self.families.pop(family, None)

    def live(self, family: str, expires_at: float, revoked: t.Callable[[], bool]) -> bool:
        """Tell whether ``family`` is not revoked, asking ``revoked()`` (the storage) if needed.

        :param expires_at: when the token being checked expires (epoch seconds).
        """
        backend = self.backend()
        if backend is None or not backend.multiprocess:
            return not revoked()
        subscription = self._subscribed(backend)
        if subscription is None or not backend.caught_up():
            return not revoked()
        self._drain(subscription)
        families = self.families
        until = families.get(family)
        now = time.monotonic()
        if until is not None and now < until:
            return True
        heard, generation = self.revocations, subscription.generation
        if revoked():
            return False
        self._drain(subscription)  # what came while the storage answered
        if heard == self.revocations and generation == subscription.generation:
            families.pop(family, None)  # re-inserted: the oldest entries come first
            if len(families) >= MAX_FAMILIES:
                families.pop(next(iter(families)), None)
            families[family] = now + min(MAX_AGE, max(0.0, expires_at - time.time()))
        return True


__all__ = ["CHANNEL", "MAX_AGE", "MAX_FAMILIES", "KnownLiveFamilies"]
