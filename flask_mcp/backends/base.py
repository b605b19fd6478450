"""The interface every shared-state backend implements.

All state that must be visible to every worker goes through a
:class:`Backend`: session records, the per-stream event logs that make SSE
streams resumable, the correlation of server-to-client requests with the
client's answers, cancellation, and notification fan-out. The in-memory
backend serves one process; the Redis backend serves many workers.
"""

from __future__ import annotations

import abc
import collections.abc as cabc
import contextlib
import contextvars
import dataclasses
import secrets
import time
import typing as t
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from ..errors import INVALID_PARAMS
from ..errors import INVALID_REQUEST
from ..errors import MCPError
from ..json_codec import dumps_bytes
from .task_store import MemoryTaskStore
from .task_store import TaskStore


class ClientInfoTooLarge(MCPError):
    """The ``capabilities`` and ``clientInfo`` of an ``initialize`` are larger than a
    session stores (``MCP_MAX_CLIENT_INFO_SIZE``): JSON-RPC error -32602."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            INVALID_PARAMS,
            f"Invalid params: capabilities and clientInfo take {size} bytes as JSON; a session "
            f"stores at most {limit} (MCP_MAX_CLIENT_INFO_SIZE). Send only what the client "
            "supports.",
            {"size": size, "limit": limit},
        )


class TooManySubscriptions(MCPError):
    """A session holds as many resource subscriptions as it may
    (``MCP_MAX_SUBSCRIPTIONS``): JSON-RPC error -32600."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            INVALID_REQUEST,
            f"Too many subscriptions: this session holds {limit}, the most it may "
            "(MCP_MAX_SUBSCRIPTIONS). Unsubscribe from a resource it no longer needs "
            "(resources/unsubscribe), then retry.",
            {"limit": limit},
        )


class SessionQuotaExceeded(Exception):
    """A client asked for a session while it holds its quota of them."""


@dataclasses.dataclass
class SessionRecord:
    """Everything known about one handshake-era session."""

    id: str
    protocol_version: str
    client_info: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    client_capabilities: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    initialized: bool = False
    log_level: str | None = None
    subscriptions: list[str] = dataclasses.field(default_factory=list)
    principal: str | None = None
    created: float = dataclasses.field(default_factory=time.time)
    last_seen: float = dataclasses.field(default_factory=time.time)
    busy: int = 0
    #: The values of ``MCP_PATH``'s URL variables the session was created under: it
    #: belongs to that path.
    path_args: dict[str, t.Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, t.Any]:
        """Return a JSON-serialisable copy."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, t.Any]) -> SessionRecord:
        """Rebuild a record from :meth:`to_dict` output."""
        if cls is SessionRecord:
            names: t.AbstractSet[str] = _RECORD_FIELDS
        else:
            names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(SessionRecord))


#: The id of a session's general stream, the one a plain GET reads.
GENERAL_STREAM = "g"

#: An ordinary JSON-RPC message on a stream.
MESSAGE = "message"
#: The stream is complete: its request got its response (or was cancelled).
END = "end"
#: The server closes the current connection; the stream goes on (SSE polling).
DISCONNECT = "disconnect"
#: Default ``MCP_SSE_RESUME_BYTES``: bytes of messages a session keeps on the streams
#: whose reader left, for a client that resumes them.
RESUME_BYTES = 16 * 1024 * 1024
#: The session id the readiness probe looks up: no session has it, so the lookup
#: changes nothing (:meth:`Backend.check_ready`).
READINESS_PROBE_ID = "flask-mcp-readiness-probe"
#: Default ``MCP_SSE_RESUME_BYTES_PER_CLIENT``: bytes of messages the sessions of one
#: client keep together on the streams whose reader left (four sessions' worth).
RESUME_BYTES_PER_CLIENT = 64 * 1024 * 1024
#: Writes of a stream whose ids it remembers: a write repeated with one of them is not
#: appended again (see :meth:`Backend.append`).
WRITE_IDS = 16


def new_write_id() -> str:
    """Return the id of one write to a stream (see :meth:`Backend.append`): 16 hex digits."""
    return secrets.token_hex(8)


@dataclasses.dataclass(frozen=True)
class Event:
    """One entry of a stream's event log."""

    seq: int
    kind: str
    message: dict[str, t.Any] | None = None


@dataclasses.dataclass(frozen=True)
class ReadResult:
    """What :meth:`Backend.read` found."""

    events: list[Event]
    #: Another reader attached to the stream; this one must stop.
    superseded: bool = False
    #: The stream does not exist (never opened, expired or evicted).
    missing: bool = False


class Subscription(t.Protocol):
    """A subscriber's view of a pub/sub channel."""

    @property
    def generation(self) -> int:
        """A number that changes when messages may have been lost (a new connection)."""

    def get(self, timeout: float) -> dict[str, t.Any] | None:
        """Return the next message, waiting up to ``timeout`` seconds; ``None`` if none came."""

    def close(self) -> None:
        """Stop receiving messages."""


#: A backend capability: :meth:`Backend.shared_log` gives a log every process sharing the
#: backend reads, which carries the registry changes made while serving to every worker
#: (:mod:`flask_mcp.server.shared_registry`).
SHARED_LOG = "shared_log"


class SharedLog(t.Protocol):
    """An append-only log of text that every process sharing a backend reads."""

    def append(self, item: str) -> int:
        """Append ``item``; return its position, counted from 1."""

    def read(self, start: int) -> list[str]:
        """Return the items from position ``start`` (counted from 0) to the end."""


#: The sessions a backend ended within the current call (:func:`collect_ended`).
_ENDED: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "mcp_ended_sessions", default=None
)


def session_ended(session_id: str, reason: str) -> None:
    """Report a session a backend ended within another call, for its caller to signal it.

    :meth:`Backend.create_session` ends the sessions whose handshake never finished
    to make room (``reason`` ``"handshake"``); the transport sends
    :data:`~flask_mcp.signals.session_closed` for each, as for every ended session.
    Outside :func:`collect_ended` the report goes nowhere.
    """
    ended = _ENDED.get()
    if ended is not None:
        ended.append((session_id, reason))


@contextlib.contextmanager
def collect_ended() -> cabc.Iterator[list[tuple[str, str]]]:
    """Collect the ``(session id, reason)`` pairs :func:`session_ended` reports in the block."""
    ended: list[tuple[str, str]] = []
    token = _ENDED.set(ended)
    try:
        yield ended
    finally:
        _ENDED.reset(token)


#: Whether the backend writes made now are best effort (see :func:`best_effort`).
BEST_EFFORT: contextvars.ContextVar[bool] = contextvars.ContextVar("mcp_best_effort", default=False)


@contextlib.contextmanager
def best_effort() -> cabc.Iterator[None]:
    """Mark the backend writes made in the block as best effort: a notification, which
    the caller drops when the backend raises
    :class:`~flask_mcp.errors.BackendUnavailable`.

    A backend that knows its store stalled a moment ago may raise that at once for them,
    instead of waiting again for a store that does not answer (the Redis backend does,
    for a socket timeout after one of its commands timed out); the other writes, which
    must succeed, still try.
    """
    token = BEST_EFFORT.set(True)
    try:
        yield
    finally:
        BEST_EFFORT.reset(token)


class Backend(abc.ABC):
    """Shared state of an MCP server, for one process or many."""

    #: True when several processes may share this backend.
    multiprocess: bool = False
    #: What this backend offers beyond the abstract methods, declared (see :data:`SHARED_LOG`).
    #: A backend with :attr:`multiprocess` and without :data:`SHARED_LOG` keeps the registry
    #: changes made while serving in the worker that made them (``init_app`` warns).
    capabilities: frozenset[str] = frozenset()
    #: The errors a raw command raises while the backend's store is unreachable.
    unavailable_errors: tuple[type[BaseException], ...] = ()
    #: The process-local callback that cancels a running request (see :meth:`attach_app`).
    cancel_callback: t.Callable[[str, t.Any], None] | None = None
    #: The most bytes of ``capabilities`` and ``clientInfo`` (as JSON) a session stores
    #: (``MCP_MAX_CLIENT_INFO_SIZE``; ``None``: no bound).
    max_client_info: int | None = 16 * 1024
    #: The most resource subscriptions a session holds (``MCP_MAX_SUBSCRIPTIONS``;
    #: ``None``: no bound).
    max_subscriptions: int | None = 1000
    #: The most bytes of messages the sessions of one client (the ``owner`` of
    #: :meth:`create_session`, counted under a ``quota``) keep together on the streams whose
    #: reader left (``MCP_SSE_RESUME_BYTES_PER_CLIENT``; 0: no bound). The memory backend
    #: applies it; a shared backend may not (the Redis backend keeps each session's keys
    #: apart, see ``docs/reliability.md``).
    resume_bytes_per_client: int = RESUME_BYTES_PER_CLIENT

    def check_client_info(self, record: SessionRecord) -> None:
        """Refuse a session whose client facts are larger than :attr:`max_client_info`.

        :raises ClientInfoTooLarge: they are.
        """
        if self.max_client_info is None:
            return
        size = len(dumps_bytes(record.client_capabilities)) + len(dumps_bytes(record.client_info))
        if size > self.max_client_info:
            raise ClientInfoTooLarge(size, self.max_client_info)

    def attach_app(self, cancel: t.Callable[[str, t.Any], None]) -> None:
        """Register the process-local callback that cancels a running request.

        ``cancel(session_id, request_id)`` is called in the process that runs
        the request, whichever process received the cancellation.
        """
        self.cancel_callback = cancel

    @property
    def where(self) -> str:
        """Where the backend keeps its state, for messages (no password)."""
        return type(self).__name__

    def check_ready(self) -> None:
        """Make sure the backend serves requests now (the readiness probe); cheap.

        Reads the session :data:`READINESS_PROBE_ID`, which no session has. A backend
        that may refuse writes while it answers reads checks a write too.

        :raises BackendUnavailable: it does not (:class:`~flask_mcp.errors.BackendFull`:
            it answers, but refuses writes).
        """
        self.get_session(READINESS_PROBE_ID)

    def check(self) -> None:
        """Make sure the backend answers now (``flask mcp check``, start-up).

        :raises BackendUnavailable: it does not.
        """
        self.session_ids()

    def stats(self) -> dict[str, int]:
        """Counters of what this backend holds in this process (``MCP.stats()``)."""
        return {}

    def shared_log(self, name: str) -> SharedLog:
        """Return the log ``name`` that every process sharing this backend reads.

        Offered when :data:`SHARED_LOG` is in :attr:`capabilities`.

        :raises NotImplementedError: this backend does not offer it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} offers no shared log: add SHARED_LOG to its capabilities "
            "and implement shared_log(), or run one worker process."
        )

    # -- sessions -----------------------------------------------------------

    @abc.abstractmethod
    def create_session(
        self,
        record: SessionRecord,
        limit: int,
        *,
        handshake_timeout: float | None = None,
        owner: str | None = None,
        quota: int | None = None,
    ) -> bool:
        """Store a new session unless ``limit`` sessions exist; tell whether it was stored.

        :param handshake_timeout: seconds a session may stay uninitialized: older
            uninitialized sessions are ended first (they count toward no limit), each
            reported to :func:`session_ended` with the reason ``"handshake"``.
        :param owner: who asks (a principal, or a client address), for ``quota``.
        :param quota: most live sessions of ``owner`` (``None``: no quota).
        :raises SessionQuotaExceeded: ``owner`` holds ``quota`` sessions already.
        """

    @abc.abstractmethod
    def get_session(self, session_id: str, touch: bool = False) -> SessionRecord | None:
        """Return a session's record, or ``None`` if it does not exist.

        With ``touch``, also record traffic on it, as :meth:`touch_session`
        does, in the same step.
        """

    def get_sessions(self, session_ids: cabc.Iterable[str]) -> dict[str, SessionRecord]:
        """Return the records of the sessions among ``session_ids`` that exist.

        Shared backends read them in one round trip (a fan-out to many sessions).
        """
        found = {sid: self.get_session(sid) for sid in session_ids}
        return {sid: record for sid, record in found.items() if record is not None}

    @abc.abstractmethod
    def update_session(self, session_id: str, **changes: t.Any) -> None:
        """Change fields of a session's record."""

    def add_subscription(self, session_id: str, uri: str) -> None:
        """Add ``uri`` to a session's resource subscriptions.

        Shared backends do it atomically, so that two workers subscribing the
        same session at once both count.

        :raises TooManySubscriptions: the session holds :attr:`max_subscriptions`
            others already.
        """
        record = self.get_session(session_id)
        if record is not None and uri not in record.subscriptions:
            limit = self.max_subscriptions
            if limit is not None and len(record.subscriptions) >= limit:
                raise TooManySubscriptions(limit)
            self.update_session(session_id, subscriptions=[*record.subscriptions, uri])

    def remove_subscription(self, session_id: str, uri: str) -> None:
        """Remove ``uri`` from a session's resource subscriptions."""
        record = self.get_session(session_id)
        if record is not None and uri in record.subscriptions:
            subscriptions = [s for s in record.subscriptions if s != uri]
            self.update_session(session_id, subscriptions=subscriptions)

    @abc.abstractmethod
    def touch_session(self, session_id: str, busy_delta: int = 0) -> None:
        """Record traffic on a session and adjust its count of running requests."""

    @abc.abstractmethod
    def delete_session(self, session_id: str) -> bool:
        """End a session and drop its streams; tell whether it existed."""

    @abc.abstractmethod
    def session_ids(self) -> list[str]:
        """Return the ids of every live session."""

    @abc.abstractmethod
    def reap(
        self, idle: float | None, lifetime: float | None, keep: cabc.Container[str] = ()
    ) -> list[tuple[str, str]]:
        """End sessions past their limits unless busy; return ``(id, reason)`` pairs.

        :param keep: sessions with a request running in this process. A backend
            that is not :attr:`multiprocess` must keep them: handlers that run in
            the view do not count as busy there (it spares two calls per request).
        """

    # -- streams ------------------------------------------------------------

    @abc.abstractmethod
    def open_stream(self, session_id: str, stream_id: str, *, request_id: t.Any = None) -> None:
        """Create an empty stream (no-op if it exists).

        :param request_id: the request whose answer the stream carries, if any: a
            shared backend answers it with an error when the process running it dies.
        """

    @abc.abstractmethod
    def append(
        self,
        session_id: str,
        stream_id: str,
        kind: str,
        message: dict[str, t.Any] | None = None,
        *,
        write_id: str | None = None,
    ) -> int:
        """Append an event to a stream and wake its reader; return its sequence number.

        ``write_id`` (:func:`new_write_id`) names the write: the same write sent again
        with it, while it is among the stream's last :data:`WRITE_IDS` writes (a retry
        after an outcome not known: a reply lost with the connection, an owed answer
        written when the backend returns), appends nothing and returns the sequence
        number the first one got. Without it, a backend that may resend the command
        names the write itself, for its own retries.

        A message bounds what the session keeps: past ``MCP_SSE_BUFFER_EVENTS``
        messages the oldest goes; past ``MCP_SSE_RESUME_BYTES`` of messages on
        streams whose reader left (:meth:`detach` before :meth:`drop_stream`: a
        client that may resume them), the streams left longest ago are dropped,
        then the oldest messages of the one left last (a resume from before them gets
        410). A :meth:`detach` applies the second bound to the streams left before. A stream
        whose request still writes it (opened with
        :meth:`open_stream`, not ended) loses only its messages to either bound: its
        sequence numbers go on (a client resuming from its last event gets what
        comes later, one resuming from before gets 410), and it stays among the
        streams left, so what its request sends later still counts. The end of a
        stream its client left forgets it when it keeps no message (its request was
        cancelled, or the bounds took its messages): no resume would get anything,
        and no bound would ever reach it.
        """

    def append_many(
        self,
        events: cabc.Iterable[tuple[str, str, str, dict[str, t.Any] | None]],
        *,
        write_ids: cabc.Sequence[str] | None = None,
    ) -> list[int]:
        """Append ``(session_id, stream_id, kind, message)`` events; return their sequence
        numbers. Shared backends do it in one round trip (a fan-out to many sessions).
        ``write_ids``: each event's ``write_id`` (see :meth:`append`)."""
        if write_ids is None:  # as before write ids: a backend's own append needs none
            return [self.append(*event) for event in events]
        return [self.append(*e, write_id=w) for e, w in zip(events, write_ids, strict=True)]

    @abc.abstractmethod
    def attach(self, session_id: str, stream_id: str) -> int:
        """Make the caller the stream's only reader; return the reader's token.

        A reader attached earlier sees ``superseded`` on its next read. The general
        stream opens on its first reader; a request stream that does not exist (it
        ended and was forgotten as a resume came for it) is not opened again: the
        reader's first read says ``missing``.
        """

    @abc.abstractmethod
    def detach(self, session_id: str, stream_id: str, token: int) -> None:
        """Give up reading a stream, unless another reader took over already.

        Until a reader attaches again or the stream is dropped, its messages count
        toward ``MCP_SSE_RESUME_BYTES`` (see :meth:`append`): its client left, and
        may resume it. The streams left before it are bounded then, without waiting
        for the session's next message (a shared backend may do it within a second):
        past the bound, those left longest ago are dropped, then the oldest messages
        of the last of them.
        The one left now does not count until that message: it may be read to its end
        and dropped in a moment, and must not push the others out meanwhile. A stream
        that ended keeping no message is forgotten instead. This holds however early
        the reader leaves, before the stream's first event included.
        """

    @abc.abstractmethod
    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        """Return the events after ``after``, waiting up to ``timeout`` seconds for one."""

    @abc.abstractmethod
    def first_seq(self, session_id: str, stream_id: str) -> int | None:
        """Return the oldest retained sequence number, or ``None`` if the stream is unknown."""

    @abc.abstractmethod
    def drop_stream(self, session_id: str, stream_id: str) -> None:
        """Forget a stream and its events."""

    @abc.abstractmethod
    def get_cursor(self, session_id: str, stream_id: str) -> int:
        """Return the last sequence number delivered on a stream (0 if none)."""

    @abc.abstractmethod
    def set_cursor(self, session_id: str, stream_id: str, seq: int) -> None:
        """Remember the last sequence number delivered on a stream."""

    # -- server-to-client requests -----------------------------------------

    @abc.abstractmethod
    def next_request_id(self, session_id: str) -> int:
        """Return a request id unique within the session."""

    @abc.abstractmethod
    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        """Prepare to receive the client's answer to ``request_id``."""

    @abc.abstractmethod
    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        """Wait for and consume the answer to ``request_id``; ``None`` on timeout."""

    @abc.abstractmethod
    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        """Hand the client's answer to the waiting handler; tell whether one waited."""

    @abc.abstractmethod
    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        """Stop expecting an answer (after a timeout or cancellation)."""

    # -- cancellation and fan-out ------------------------------------------

    @abc.abstractmethod
    def cancel(self, session_id: str, request_id: t.Any) -> None:
        """Cancel a running request wherever it runs."""

    @abc.abstractmethod
    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        """Send ``message`` to every current subscriber of ``channel``, in every process."""

    @abc.abstractmethod
    def subscribe(self, channel: str) -> Subscription:
        """Start receiving the messages published on ``channel`` from now on."""

    def caught_up(self) -> bool:
        """Tell whether this process's subscribers hold every message published so far.

        True when every :meth:`publish` that completed before this call (in any
        process) has been handed to this process's subscriptions: what they
        have not got was published later. A process can then serve from what it
        learnt by its subscriptions, instead of asking the store. False (the
        default) when the backend cannot tell, as with a thread listening in
        parallel, or while the subscription is down.
        """
        return False

    def close(self) -> None:  # noqa: B027 - optional for backends holding nothing
        """Release connections and background work."""

    def task_store(self) -> TaskStore:
        """Return where this backend keeps task records (default: this process's memory).

        A backend shared by several processes overrides it with a shared store.
        """
        store: TaskStore | None = getattr(self, "_task_store", None)
        if store is None:
            store = self._task_store = MemoryTaskStore()
        return store


def describe_url(url: str) -> str:
    """``url`` without its user info's password, for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


__all__ = [
    "BEST_EFFORT",
    "DISCONNECT",
    "END",
    "GENERAL_STREAM",
    "MESSAGE",
    "READINESS_PROBE_ID",
    "RESUME_BYTES",
    "RESUME_BYTES_PER_CLIENT",
    "SHARED_LOG",
    "WRITE_IDS",
    "Backend",
    "ClientInfoTooLarge",
    "Event",
    "ReadResult",
    "SessionQuotaExceeded",
    "SessionRecord",
    "SharedLog",
    "Subscription",
    "TooManySubscriptions",
    "best_effort",
    "collect_ended",
    "describe_url",
    "new_write_id",
    "session_ended",
]
