"""The per-app state that every call carries: settings, backend, what runs here.

One :class:`AppState` is made by ``init_app`` for each app an
:class:`~flask_mcp.MCP` serves. It travels down on every
:class:`~flask_mcp.server.call.Call`, so nothing below the face looks the app up
(no ``current_app``): the dispatcher, the runner and the handlers' context read
the settings, the backend, the authenticator and the signal sender from it.
It can be made without Flask (``app=None``), for tests and for transports that
are not HTTP.
"""

from __future__ import annotations

import typing as t

from .. import backends
from .. import signals
from . import concurrency
from .runs import InFlight
from .runs import PendingReads
from .runs import PendingWrites
from .runs import StreamSlots

if t.TYPE_CHECKING:
    from ..auth import Authenticator
    from ..config import Settings


class AppState:
    """Runtime state of one app: settings, backend, running requests.

    :param settings: the app's validated ``MCP_*`` settings.
    :param app: the Flask app: the sender of signals, whose ``debug`` flag and
        ``config`` (``SECRET_KEY``) are read; ``None`` outside Flask.
    :param authenticator: checks tokens and scopes; ``None`` when authorization is off.
    :param server_name: the server's name, which names its pub/sub channel.
    :param backend: the shared-state backend (default: the one ``MCP_BACKEND`` names).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        app: t.Any = None,
        authenticator: Authenticator | None = None,
        server_name: str = "mcp",
        backend: backends.Backend | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.backend = (
            backend
            if backend is not None
            else backends.from_setting(
                settings.backend,
                buffer_size=settings.sse_buffer_events,
                resume_bytes=settings.sse_resume_bytes,
                idle_timeout=settings.session_idle_timeout,
                max_lifetime=settings.session_max_lifetime,
                unreachable_ok=concurrency.respawned_worker(),
            )
        )
        self.backend.max_client_info = settings.max_client_info_size
        self.backend.max_subscriptions = settings.max_subscriptions
        self.backend.resume_bytes_per_client = settings.sse_resume_bytes_per_client
        self.authenticator = authenticator
        self.inflight = InFlight()
        self.slots = StreamSlots(settings.max_streams, settings.stream_share_per_client)
        #: The open SSE responses' connections, whose stalled writes the supervisor ends.
        self.writes = PendingWrites()
        #: The POST bodies being read from gunicorn, whose stalled reads the supervisor ends.
        self.reads = PendingReads()
        #: The supervisor task of this process (:mod:`flask_mcp.runtime.supervisor`), once started.
        self.supervisor: t.Any = None
        #: Set when the process exits: the supervisor's loop ends at its next tick.
        self.supervisor_stopped = False
        #: Set by the first request, which tells the server's kind (see the transport).
        self.first_request_seen = False
        #: The pub/sub channel of the server's change notifications (``subscriptions/listen``).
        self.listen_channel = f"flask-mcp:{server_name}:listen"
        #: The ``requestState`` sealer of 2026-07-28 multi-round requests, made on first use
        #: (:func:`flask_mcp.server.mrtr.sealer_for`).
        self.sealer: t.Any = None
        #: The process whose interpreter exit answers this app's running requests (the supervisor).
        self.exit_hook_pid: int | None = None
        #: Runs the handlers of tasks (a :class:`flask_mcp.server.tasks.Executor`).
        self.task_executor: t.Any = None
        self.backend.attach_app(self.cancel_local)

    @property
    def config(self) -> t.Mapping[str, t.Any]:
        """The app's configuration (empty without an app)."""
        return t.cast("t.Mapping[str, t.Any]", getattr(self.app, "config", {}))

    @property
    def expose_internal_errors(self) -> bool:
        """Whether clients may read the text of unexpected exceptions.

        ``MCP_EXPOSE_INTERNAL_ERRORS``, or when it is unset, whether the app runs
        in debug mode (read at each error, as ``flask run --debug`` sets it late).
        """
        expose = self.settings.expose_internal_errors
        if expose is None:
            return bool(getattr(self.app, "debug", False))
        return expose

    def cancel_local(self, session_id: str, request_id: t.Any) -> None:
        """Cancel a request running in this process, if it runs here."""
        run = self.inflight.get(session_id, request_id)
        if run is not None and run.method != "initialize":
            run.cancel()
            signals.send(
                signals.request_cancelled,
                self.app,
                request_id=request_id,
                session_id=session_id,
                reason="cancelled",
            )


__all__ = ["AppState"]
