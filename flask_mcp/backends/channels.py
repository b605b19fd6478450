"""In-process fan-out of pub/sub messages to the subscribers of this process."""

from __future__ import annotations

import contextlib
import queue
import threading
import typing as t


class QueueSubscription:
    """A subscriber in this process; :class:`ProcessChannels` fills its queue."""

    def __init__(self, channels: ProcessChannels, channel: str) -> None:
        self.channels = channels
        self.channel = channel
        self.queue: queue.Queue[dict[str, t.Any]] = queue.Queue(maxsize=10_000)

    @property
    def generation(self) -> int:
        """Bumped each time the subscription was made anew (messages may have been lost)."""
        return self.channels.generation

    def get(self, timeout: float) -> dict[str, t.Any] | None:
        """Return the next message, waiting up to ``timeout`` seconds; ``None`` if none came."""
        try:
            if timeout <= 0:  # without waiting: gevent's queue would switch greenlets
                if not self.queue.qsize():  # the usual answer, without raising Empty
                    return None
                return self.queue.get_nowait()
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        """Stop receiving messages."""
        self.channels.remove(self)


class ProcessChannels:
    """The subscribers of each channel in this process.

    A subscriber that falls 10,000 messages behind loses the newest ones rather
    than blocking the publisher.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.subscribers: dict[str, set[QueueSubscription]] = {}
        #: Bumped by :meth:`resubscribed`.
        self.generation = 0

    def resubscribed(self) -> None:
        """Note that the subscription under every subscriber was made anew: the messages
        published while it was down are lost."""
        self.generation += 1

    def add(self, channel: str) -> QueueSubscription:
        """Register and return a new subscriber of ``channel``."""
        subscription = QueueSubscription(self, channel)
        with self.lock:
            self.subscribers.setdefault(channel, set()).add(subscription)
        return subscription

    def remove(self, subscription: QueueSubscription) -> None:
        """Forget a subscriber."""
        with self.lock:
            members = self.subscribers.get(subscription.channel)
            if members is not None:
                members.discard(subscription)
                if not members:
                    del self.subscribers[subscription.channel]

    def has(self, channel: str) -> bool:
        """Tell whether ``channel`` has a subscriber in this process."""
        return channel in self.subscribers

    def deliver(self, channel: str, message: dict[str, t.Any]) -> None:
        """Hand ``message`` to every subscriber of ``channel`` in this process."""
        with self.lock:
            members = list(self.subscribers.get(channel, ()))
        for member in members:
            with contextlib.suppress(queue.Full):
                member.queue.put_nowait(message)
