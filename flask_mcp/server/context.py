"""The ``Context`` a handler receives: progress, logging and the back-channel."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import typing as t
from urllib.parse import urlsplit

from .. import protocol
from .. import signals
from ..backends.base import best_effort
from ..errors import BackendUnavailable
from ..errors import CapabilityNotDeclared
from ..errors import ClientRequestError
from ..errors import ClientRequestTimeout
from ..errors import MissingClientCapability
from ..errors import RequestCancelled
from ..protocol import LOG_LEVELS
from ..protocol import apps
from ..protocol import jsonrpc
from .elicitation import ElicitationResult
from .elicitation import check_form_schema
from .elicitation import elicitation_form
from .running import running_call

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..backends.base import Backend
    from ..backends.base import SessionRecord
    from ..runtime.runs import RequestRun
    from ..runtime.state import AppState

logger = logging.getLogger("flask_mcp")


def announce_client_request(
    app: t.Any, method: str, request_id: t.Any, session_id: str | None, params: dict[str, t.Any]
) -> dict[str, t.Any]:
    """Send ``client_request_sending`` for a request to the client; return its params as
    the receivers left them (a copy: the caller's dict stays as it was)."""
    params = dict(params)
    signals.send(
        signals.client_request_sending,
        app,
        method=method,
        request_id=request_id,
        session_id=session_id,
        params=params,
    )
    return params


@dataclasses.dataclass(frozen=True)
class ClientFacts:
    """What the caller told about itself, the same record in both eras and over stdio.

    In the handshake era the facts come from ``initialize`` (kept in the session);
    at 2026-07-28 from the request's ``params._meta``.
    """

    #: The protocol version of the call.
    protocol_version: str
    #: The client's capabilities (``{}``: none declared).
    capabilities: dict[str, t.Any]
    #: ``clientInfo``: ``name``, ``version`` and so on (``{}``: not sent).
    info: dict[str, t.Any]
    #: The log level the client asked for, or ``None``.
    log_level: str | None = None

    @property
    def extensions(self) -> dict[str, dict[str, t.Any]]:
        """The extensions the client declared (``capabilities.extensions``), by identifier."""
        declared = self.capabilities.get("extensions")
        if not isinstance(declared, dict):
            return {}
        return {key: value if isinstance(value, dict) else {} for key, value in declared.items()}


class RequestCall(t.Protocol):
    """What :attr:`Context.call` tells of the request: the fields of its
    :class:`~flask_mcp.server.call.Call`.

    A protocol rather than the class itself: a ``Call`` holds its context, so naming
    the class here would make the two modules import each other.
    """

    @property
    def method(self) -> str:
        """The JSON-RPC method, e.g. ``"tools/call"``."""

    @property
    def params(self) -> dict[str, t.Any]:
        """The request's params."""

    @property
    def request_id(self) -> t.Any:
        """The JSON-RPC id of the request."""

    @property
    def version(self) -> str:
        """The protocol version of the call."""

    @property
    def era(self) -> str:
        """``"handshake"`` or ``"stateless"``."""

    @property
    def session(self) -> SessionRecord | None:
        """The session's record in the handshake era; ``None`` at 2026-07-28."""

    @property
    def state(self) -> AppState:
        """The state of the app serving the call (settings, backend...)."""

    @property
    def auth(self) -> AuthInfo | None:
        """The caller, or ``None`` without authorization."""

    @property
    def path_args(self) -> dict[str, t.Any]:
        """The values of ``MCP_PATH``'s URL variables."""


_T = t.TypeVar("_T")


class BackChannel(t.Protocol):
    """How server-to-client requests reach the client in one protocol era."""

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]: ...


#: The requests a server may send to the client that need a declared capability; at
#: 2026-07-28 the only ones an ``InputRequiredResult`` may carry.
ASKABLE_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
#: What the client's answer to each of :data:`ASKABLE_METHODS` must be, for error messages.
EXPECTED_ANSWERS = {
    "elicitation/create": "an ElicitResult object ({action, content?})",
    "sampling/createMessage": "a CreateMessageResult object ({role, content, model})",
    "roots/list": "a ListRootsResult object ({roots: [{uri}]})",
}
_ACTIONS = ("accept", "decline", "cancel")


def valid_answer(method: str, answer: t.Any) -> bool:
    """Tell whether ``answer`` has the shape of the client's result for ``method``.

    The same check in every era: a session's reply, a 2026-07-28 ``inputResponses``
    entry and a task's ``tasks/update`` answer.
    """
    if not isinstance(answer, dict):
        return False
    if method == "elicitation/create":
        return answer.get("action") in _ACTIONS and isinstance(answer.get("content", {}), dict)
    if method == "sampling/createMessage":
        return (
            isinstance(answer.get("role"), str)
            and isinstance(answer.get("content"), (dict, list))
            and isinstance(answer.get("model"), str)
        )
    roots_list = answer.get("roots")
    return isinstance(roots_list, list) and all(
        isinstance(root, dict) and isinstance(root.get("uri"), str) for root in roots_list
    )


def _withdraw(run: RequestRun, request_id: t.Any, reason: str) -> None:
    """Tell the client, with ``notifications/cancelled``, that the server no longer waits
    for the answer to its request ``request_id``."""
    cancel = {"requestId": request_id, "reason": reason}
    run.outbox.emit(jsonrpc.notification("notifications/cancelled", cancel))


class SessionBackChannel:
    """Handshake era: send the request on the run's stream, wait for the reply POST."""

    def __init__(self, backend: Backend, timeout: float) -> None:
        self.backend = backend
        self.timeout = timeout

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        return t.cast("dict[str, t.Any]", self.ask(ctx, method, params))

    def ask(
        self,
        ctx: Context,
        method: str,
        params: dict[str, t.Any],
        until: t.Callable[[], bool] | None = None,
    ) -> dict[str, t.Any] | None:
        """Send the request and return the client's result, or ``None`` once ``until()``
        (called every half second while the answer is awaited) is true first: then the
        client is told, with ``notifications/cancelled``, that the answer is no longer
        needed.
        """
        run = ctx._run
        session_id = t.cast(str, run.session_id)
        if not run.can_round_trip:
            raise ClientRequestError(
                f"Cannot send {method}: this response cannot be streamed (a sync worker, "
                "every thread of a gthread worker is busy, this client holds its share of them "
                "(MCP_STREAM_SHARE_PER_CLIENT), or a request of a JSON-RPC batch). "
                "Run gunicorn with -k gevent or more --threads, and send such requests one "
                "per message."
            )
        request_id = self.backend.next_request_id(session_id)
        self.backend.expect_response(session_id, request_id)
        if signals.client_request_sending.receivers:
            params = announce_client_request(ctx.app, method, request_id, session_id, params)
        run.outbox.emit(jsonrpc.request(request_id, method, params))
        signals.send(
            signals.client_request_sent,
            ctx.app,
            method=method,
            request_id=request_id,
            session_id=session_id,
        )
        deadline = time.monotonic() + self.timeout
        answer = None
        try:
            while answer is None:
                if run.cancelled.is_set():
                    raise RequestCancelled()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                answer = self.backend.wait_response(session_id, request_id, min(remaining, 0.5))
                if answer is None and self.backend.get_session(session_id) is None:
                    raise ClientRequestError(
                        f"The session ended before the client answered {method}."
                    )
                if answer is None and until is not None and until():
                    _withdraw(
                        run, request_id, f"The server no longer needs the answer to {method}."
                    )
                    return None
        finally:
            if answer is None:
                self.backend.forget_response(session_id, request_id)
        if answer is None:
            # The lifecycle's timeouts: the sender SHOULD cancel a request it stops waiting for.
            with contextlib.suppress(BackendUnavailable):  # the timeout error says enough
                _withdraw(run, request_id, f"No answer to {method} came in time.")
            raise ClientRequestTimeout(
                f"The client did not answer {method} within {self.timeout:g} seconds "
                "(MCP_CLIENT_REQUEST_TIMEOUT)."
            )
        signals.send(
            signals.client_response_received,
            ctx.app,
            request_id=request_id,
            session_id=session_id,
            error=answer.get("error"),
        )
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise ClientRequestError(
                f"The client answered {method} with an error: {error.get('message', error)}", error
            )
        result = answer.get("result")
        if not isinstance(result, dict) or (
            method in ASKABLE_METHODS and not valid_answer(method, result)
        ):
            expected = (
                f": it must be {EXPECTED_ANSWERS[method]}" if method in ASKABLE_METHODS else ""
            )
            raise ClientRequestError(
                f"The client answered {method} with a malformed result{expected}."
            )
        return result


def relay_request(
    ctx: Context, method: str, params: dict[str, t.Any], until: t.Callable[[], bool]
) -> dict[str, t.Any] | None:
    """Send a request to the client as :meth:`Context.send_request` does, and stop waiting
    for the answer once ``until()`` is true: then return ``None``.

    For a 2025-11-25 ``tasks/result`` relaying its task's questions: the task may end
    (cancelled, its worker dead) while the client has not answered, and the wait must
    end with it rather than at ``MCP_CLIENT_REQUEST_TIMEOUT``.
    """
    channel = ctx._back_channel
    if not isinstance(channel, SessionBackChannel):
        return ctx.send_request(method, params)
    if method in ASKABLE_METHODS:
        check_capabilities(ctx, method, params)
    return channel.ask(ctx, method, params, until)


class Context:
    """What a handler can do besides returning its result.

    Declare a parameter annotated with ``Context`` to receive it. The same
    calls work in both protocol eras: on a handshake session they talk to the
    client over the request's stream; on a 2026-07-28 request they are answered
    through multi-round-trip requests (MRTR): the first call without an answer
    ends the request with an ``InputRequiredResult``, and the client's retry
    runs the handler again **from its first line** with the answers. Work done
    before ``elicit``/``create_message``/``list_roots``/``ask`` must therefore
    be idempotent, or its outcome kept in :attr:`request_state`.
    """

    def __init__(
        self,
        *,
        app: t.Any,
        run: RequestRun,
        back_channel: BackChannel,
        protocol_version: str,
        client_capabilities: dict[str, t.Any],
        client_info: dict[str, t.Any],
        meta: dict[str, t.Any],
        log_level: str | None,
        auth: AuthInfo | None = None,
        call: RequestCall | None = None,
    ) -> None:
        self.app = app
        #: The :class:`~flask_mcp.server.call.Call` this context belongs to (its method,
        #: params, era, session, auth and app state, typed as :class:`RequestCall`), for
        #: an extension's request methods (:doc:`/extensions`); every context the server
        #: builds has one (``None`` only for a context built by hand).
        self.call = call
        self._run = run
        self._back_channel = back_channel
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.meta = meta
        self.log_level = log_level
        self.auth = auth
        #: Server data kept across the rounds of a 2026-07-28 multi-round request:
        #: what the previous round stored here, sealed into ``requestState``
        #: (integrity protected and expiring, but readable by the client unless
        #: ``MCP_STATE_ENCRYPT`` is set). Always empty in the handshake era.
        self.request_state: dict[str, t.Any] = {}
        #: The ``inputResponses`` of a 2026-07-28 retry, by key (read-only view); in a
        #: 2026-07-28 task's run after a ``URLElicitationRequired``, the answers to it.
        self.input_responses: dict[str, t.Any] = {}
        #: What the tool's ``prepare`` function returned (see :doc:`tasks`), else ``None``.
        self.prepared: t.Any = None
        self._last_progress: t.Any = None
        self._progress_warned = False
        self._drop_warned = False

    @property
    def session_id(self) -> str | None:
        """The session id, or ``None`` for a stateless request."""
        return self._run.session_id

    @property
    def client(self) -> ClientFacts:
        """What the caller declared: protocol version, capabilities, ``clientInfo``, log level."""
        return ClientFacts(
            self.protocol_version, self.client_capabilities, self.client_info, self.log_level
        )

    def client_supports(self, extension_id: str) -> bool:
        """Tell whether the caller declared the extension ``extension_id``.

        A handshake-era client declares it in ``initialize``; a 2026-07-28 client in
        the ``clientCapabilities`` of each request's ``_meta``.
        """
        return extension_id in self.client.extensions

    def client_extension(self, extension_id: str) -> dict[str, t.Any] | None:
        """Return the caller's settings for the extension ``extension_id``, or ``None``."""
        return self.client.extensions.get(extension_id)

    def client_supports_ui(self) -> bool:
        """Tell whether the caller renders MCP Apps views (see :doc:`/apps`).

        True when it declared ``capabilities.extensions["io.modelcontextprotocol/ui"]``
        with ``text/html;profile=mcp-app`` among its ``mimeTypes`` (a setting the spec
        requires of a host), in either era. A tool bound to a view answers with text
        ``content`` either way; this tells it whether the view will be shown too.
        """
        settings = self.client_extension(apps.EXTENSION_ID) or {}
        mime_types = settings.get("mimeTypes")
        return isinstance(mime_types, list) and apps.APP_MIME_TYPE in mime_types

    @property
    def path_args(self) -> dict[str, t.Any]:
        """The values of ``MCP_PATH``'s URL variables (``{"tenant": "acme"}`` for
        ``/t/<tenant>/mcp``), as ``request.view_args`` holds them in the view; ``{}``
        without variables, and outside the handler's own call.
        """
        call = running_call.get(None)
        return dict(call.path_args) if call is not None else {}

    @property
    def request_id(self) -> t.Any:
        """The JSON-RPC id of the request being handled."""
        return self._run.request_id

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the request (or it timed out)."""
        return self._run.cancelled.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`~flask_mcp.errors.RequestCancelled` if the request was cancelled."""
        if self._run.cancelled.is_set():
            raise RequestCancelled()

    def send_notification(self, method: str, params: dict[str, t.Any]) -> None:
        """Send a notification to the client with this request's messages (its stream).

        ``notifications/progress`` and ``notifications/message`` have their own methods,
        :meth:`progress` and :meth:`log`, which follow the spec's rules for them.

        A notification asks for no answer and the client can do without it, so one that
        the session store cannot take (Redis down or failing over) is dropped, with one
        warning per request, and the handler goes on to its result: ending the request
        there would leave its work half done. While Redis stalls (it took a socket
        timeout a moment ago), such a notification is dropped at once rather than after
        waiting the timeout again.
        """
        try:
            with best_effort():
                self._run.outbox.emit(jsonrpc.notification(method, params))
        except BackendUnavailable as exc:
            self._dropped(method, exc)
            return
        signals.send(signals.notification_sent, self.app, method=method, session_id=self.session_id)

    def _dropped(self, what: str, exc: BackendUnavailable) -> None:
        """Log that ``what`` was not sent because the backend is unavailable: a warning for
        the first of the request (or task: see :meth:`_whose`), ``DEBUG`` for the next ones."""
        whose = self._whose()
        if self._drop_warned:
            logger.debug("Dropped %s of %s: %s", what, whose, exc)
            return
        self._drop_warned = True
        where = self._of_tool(" of")
        logger.warning(
            "Dropped %s%s (%s): the session store is unavailable (%s). The handler goes on; "
            "its later messages that meet the outage are dropped too, logged at DEBUG.",
            what,
            where,
            whose,
            exc,
        )

    def _of_tool(self, preposition: str) -> str:
        """Return ``preposition`` and the called tool's name, for a log line (``""`` when
        the request names no tool)."""
        call = self.call
        name = call.params.get("name") if call is not None else None
        return f"{preposition} {name!r}" if isinstance(name, str) else ""

    def _whose(self) -> str:
        """Name what the handler runs for, in the log lines of :meth:`_dropped`."""
        return f"request id {self.request_id!r}"

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the client asked for it with a ``progressToken``.

        ``progress`` must increase from one call to the next, as the spec requires of
        progress notifications: a value not above the last one reported is not sent
        (a warning is logged, once per call), and the handler goes on. A report the
        session store cannot take (Redis down) is dropped too, as
        :meth:`send_notification` says.
        """
        if self._progress_increases(progress):
            self._report_progress(progress, total, message)

    def _progress_increases(self, progress: t.Any) -> bool:
        """Tell whether ``progress`` is above the last value reported, and remember it."""
        last = self._last_progress
        try:
            stalled = last is not None and not progress > last
        except TypeError:  # not a number: reported as given, as it always was
            stalled = False
        if not stalled:
            self._last_progress = progress
            return True
        if not self._progress_warned:
            self._progress_warned = True
            where = self._of_tool(" in")
            logger.warning(
                "ctx.progress(%r)%s was not reported: the progress value must increase with "
                "each notification, and %r was reported before. Pass a larger value each time "
                "(the work done so far, such as items processed) and say what changed in "
                "message=; further such calls of this request are skipped without a warning.",
                progress,
                where,
                last,
            )
        return False

    def _report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Send ``notifications/progress``, if the client asked for it."""
        params = self._progress_params(progress, total, message)
        if params is not None:
            self.send_notification("notifications/progress", params)

    def _progress_params(
        self, progress: float, total: float | None, message: str | None
    ) -> dict[str, t.Any] | None:
        """Return the params of a ``notifications/progress``, or ``None`` without a
        ``progressToken`` in the request."""
        token = self.meta.get("progressToken")
        if token is None:
            return None
        params: dict[str, t.Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return params

    def log(self, level: str, data: t.Any, logger: str | None = None) -> None:
        """Send a log message to the client if its level is at or above the client's.

        One the session store cannot take (Redis down) is dropped, and the handler goes
        on, as :meth:`send_notification` says.
        """
        params = self._log_params(level, data, logger)
        if params is not None:
            self.send_notification("notifications/message", params)

    def _log_params(self, level: str, data: t.Any, logger: str | None) -> dict[str, t.Any] | None:
        """Return the params of a ``notifications/message``, or ``None`` below the client's
        level (or when it asked for none).

        :raises ValueError: ``level`` is not a log level of the protocol.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"Unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}.")
        if self.log_level is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return None
        params: dict[str, t.Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return params

    def debug(self, data: t.Any) -> None:
        """Send a ``debug`` log message."""
        self.log("debug", data)

    def info(self, data: t.Any) -> None:
        """Send an ``info`` log message."""
        self.log("info", data)

    def warning(self, data: t.Any) -> None:
        """Send a ``warning`` log message."""
        self.log("warning", data)

    def error(self, data: t.Any) -> None:
        """Send an ``error`` log message."""
        self.log("error", data)

    def _require(self, capability: str, sub: str | None = None) -> None:
        declared = self.client_capabilities.get(capability)
        if not isinstance(declared, dict) or (sub is not None and sub not in declared):
            name = capability if sub is None else f"{capability}.{sub}"
            if protocol.missing_capability_is_error(self.protocol_version):
                raise MissingClientCapability(capability, sub)
            raise CapabilityNotDeclared(
                f"The client did not declare the {name!r} capability, so it cannot be asked "
                "for this; check ctx.client_capabilities first or handle CapabilityNotDeclared."
            )

    def send_request(
        self, method: str, params: dict[str, t.Any], *, key: str | None = None
    ) -> dict[str, t.Any]:
        """Send a request to the client and return its result.

        On a session, while the session store is unavailable (Redis down or failing over)
        the request cannot reach the client nor its answer come back: this raises
        ``flask_mcp.errors.BackendUnavailable``. Let it through: the call ends with an error
        saying that it may have been carried out in part (not to simply send it again).

        :param key: the ``inputRequests`` key on a 2026-07-28 request (default:
            numbered in call order); ignored in the handshake era.
        :raises CapabilityNotDeclared: ``method`` is ``elicitation/create``,
            ``sampling/createMessage`` or ``roots/list`` and the client did not declare
            what it needs (``MissingClientCapability``, -32021, at 2026-07-28).
        :raises ClientRequestError: the client answered with an error, or could not be asked.
        :raises ClientRequestTimeout: no answer within ``MCP_CLIENT_REQUEST_TIMEOUT``.
        """
        if method in ASKABLE_METHODS:
            check_capabilities(self, method, params)
        return self._back_channel.request(self, method, params, key)

    def ask(
        self, requests: t.Mapping[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        """Ask several questions at once and return the answers by key.

        Build the requests with :mod:`flask_mcp.server.mrtr` (``elicitation``,
        ``sampling``, ``roots``). On a 2026-07-28 request every unanswered one
        goes out in the same ``InputRequiredResult``; on a session they are sent
        one after the other. Accepted form content is validated against its
        ``requestedSchema``, as :meth:`elicit` validates it.

        :raises ~flask_mcp.server.elicitation.ElicitationError: an accepted form's
            content does not fit its schema.
        """
        for method, params in requests.values():
            check_capabilities(self, method, params)
        ask_many = getattr(self._back_channel, "request_many", None)
        if ask_many is not None:
            answers = t.cast("dict[str, dict[str, t.Any]]", ask_many(self, dict(requests)))
        else:
            answers = {
                key: self.send_request(method, params, key=key)
                for key, (method, params) in requests.items()
            }
        return checked_answers(requests, answers)

    def create_message(
        self,
        messages: list[dict[str, t.Any]],
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, t.Any] | None = None,
        include_context: str | None = None,
        tools: list[dict[str, t.Any]] | None = None,
        tool_choice: dict[str, t.Any] | None = None,
        metadata: dict[str, t.Any] | None = None,
        key: str | None = None,
    ) -> dict[str, t.Any]:
        """Ask the client to sample from its language model (``sampling/createMessage``)."""
        self._require("sampling")
        params: dict[str, t.Any] = {"messages": messages, "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": stop_sequences,
            "modelPreferences": model_preferences,
            "includeContext": include_context,
            "metadata": metadata,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        if include_context not in (None, "none"):
            self._require("sampling", "context")
        if tools is not None or tool_choice is not None:
            if not protocol.supports_sampling_tools(self.protocol_version):
                raise CapabilityNotDeclared(
                    f"Sampling with tools needs protocol 2025-11-25 or later; "
                    f"this client speaks {self.protocol_version}."
                )
            self._require("sampling", "tools")
            if tools is not None:
                params["tools"] = tools
            if tool_choice is not None:
                params["toolChoice"] = tool_choice
        return self.send_request("sampling/createMessage", params, key=key)

    @t.overload
    def elicit(
        self, message: str, requested_schema: dict[str, t.Any], *, key: str | None = None
    ) -> dict[str, t.Any]: ...

    @t.overload
    def elicit(
        self, message: str, requested_schema: type[_T], *, key: str | None = None
    ) -> ElicitationResult[_T]: ...

    def elicit(self, message: str, requested_schema: t.Any, *, key: str | None = None) -> t.Any:
        """Ask the user for structured input (form mode).

        With a pydantic model class or a dataclass, return an
        :class:`~flask_mcp.server.elicitation.AcceptedElicitation` whose ``data`` is the
        validated object, a ``DeclinedElicitation`` or a ``CancelledElicitation``; with a
        JSON Schema dict, the ``{action, content?}`` answer. See
        :mod:`flask_mcp.server.elicitation`. Like every request to the client, it fails
        while the session store is unavailable (see :meth:`send_request`).

        :raises ~flask_mcp.server.elicitation.ElicitationSchemaError: the model or schema
            is not a flat form.
        """
        form = elicitation_form(requested_schema)
        self._require_elicitation("form")
        params = {"mode": "form", "message": message, "requestedSchema": form.schema}
        if self.protocol_version < "2025-11-25":
            del params["mode"]
        return form.result(self.send_request("elicitation/create", params, key=key))

    def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None
    ) -> dict[str, t.Any]:
        """Ask the user to visit ``url`` (URL mode); return ``{action}``."""
        self._require_elicitation("url")
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        if not protocol.uses_elicitation_ids(self.protocol_version):
            del params["elicitationId"]
        return self.send_request("elicitation/create", params, key=key)

    def _require_elicitation(self, mode: str) -> None:
        if not protocol.supports_elicitation(self.protocol_version):
            raise CapabilityNotDeclared(
                f"Elicitation needs protocol 2025-06-18 or later; this client speaks "
                f"{self.protocol_version}."
            )
        self._require("elicitation")
        declared = self.client_capabilities["elicitation"]
        # An empty elicitation capability means form mode only.
        if mode == "url" and "url" not in declared:
            self._require("elicitation", "url")
        if mode == "form" and declared and "form" not in declared:
            self._require("elicitation", "form")

    def list_roots(self, *, key: str | None = None) -> list[dict[str, t.Any]]:
        """Ask the client for its roots (``roots/list``)."""
        self._require("roots")
        result = self.send_request("roots/list", {}, key=key)
        roots = result.get("roots")
        if not isinstance(roots, list):
            raise ClientRequestError("The client answered roots/list without a roots array.")
        return roots

    def read_resource(self, uri: str) -> list[dict[str, t.Any]]:
        """Read a resource or template of this server, as ``resources/read`` would.

        Return its ``contents`` (``{"uri", "mimeType", "text"}`` or ``"blob"`` each).
        The caller's scopes are checked as for ``resources/read``; see
        :mod:`flask_mcp.server.resource_reads`.
        """
        from .resource_reads import read_resource

        return read_resource(self, uri)

    def close_sse_stream(self) -> None:
        """End the HTTP connection of this request's stream; the client resumes it with GET.

        Only streams that can be resumed are closed; otherwise this does nothing. While
        the session store is unavailable it does nothing either (a warning is logged):
        the outage ends the stream's connection soon enough.
        """
        if (
            self._run.outbox.resumable
            and self._run.can_round_trip  # a buffered response cannot be resumed
            and protocol.sends_priming_event(self.protocol_version)
        ):
            try:
                with best_effort():
                    self._run.outbox.disconnect()
            except BackendUnavailable as exc:
                self._dropped("the end of its stream's connection", exc)


def checked_answers(
    requests: t.Mapping[str, tuple[str, dict[str, t.Any]]], answers: dict[str, dict[str, t.Any]]
) -> dict[str, dict[str, t.Any]]:
    """Return ``answers`` once the accepted content of each form fits its ``requestedSchema``.

    :raises ~flask_mcp.server.elicitation.ElicitationError: naming the fields that do not.
    """
    for key, (method, params) in requests.items():
        schema = params.get("requestedSchema")
        if method == "elicitation/create" and isinstance(schema, dict) and key in answers:
            elicitation_form(schema).result(answers[key])
    return answers


def _check_url(url: t.Any) -> None:
    """Refuse a URL elicitation whose ``url`` is not absolute (the spec: "a valid URL")."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # an unclosed "[", say
        parts = None
    if parts is None or not parts.scheme or not parts.netloc or any(c.isspace() for c in url):
        raise ValueError(
            f"A URL elicitation needs an absolute URL the user can open, such as "
            f"'https://example.com/connect?state=...', not {url!r}."
        )


def check_capabilities(ctx: Context, method: str, params: dict[str, t.Any]) -> None:
    """Check that the client declared what ``method`` with ``params`` needs.

    A form elicitation's ``requestedSchema`` is checked to be a flat form, too, and a
    URL elicitation's ``url`` to be an absolute URL.

    :raises CapabilityNotDeclared: (or :class:`MissingClientCapability` on a
        2026-07-28 request) the capability is missing.
    :raises ~flask_mcp.server.elicitation.ElicitationSchemaError: the form is not flat.
    :raises ValueError: the ``url`` of a URL elicitation is not an absolute URL.
    :raises ValueError: ``method`` is not one a server may ask.
    """
    if method == "elicitation/create":
        mode = "url" if params.get("mode") == "url" else "form"
        if mode == "form":
            schema = params.get("requestedSchema")
            check_form_schema(schema if isinstance(schema, dict) else {}, "the requestedSchema")
        else:
            _check_url(params.get("url"))
        ctx._require_elicitation(mode)
    elif method == "sampling/createMessage":
        ctx._require("sampling")
        if params.get("includeContext") not in (None, "none"):
            ctx._require("sampling", "context")
        if "tools" in params or "toolChoice" in params:
            ctx._require("sampling", "tools")
    elif method == "roots/list":
        ctx._require("roots")
    else:
        raise ValueError(
            f"Cannot ask the client for {method!r}: use elicitation/create, "
            "sampling/createMessage or roots/list."
        )


__all__ = [
    "ASKABLE_METHODS",
    "EXPECTED_ANSWERS",
    "BackChannel",
    "ClientFacts",
    "Context",
    "RequestCall",
    "SessionBackChannel",
    "announce_client_request",
    "check_capabilities",
    "checked_answers",
    "relay_request",
    "valid_answer",
]
