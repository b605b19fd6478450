"""The sans-IO intake: from a decoded request to a :class:`~flask_mcp.server.call.Call`.

What every transport (HTTP in both eras, stdio, the command line's local client)
checks and builds the same way, written once, with no request, socket or header
object in sight:

- the era checks of a 2026-07-28 request (``params._meta``, the protocol version)
  and of ``initialize``;
- whether a method is offered in an era (:meth:`Dispatcher.offered
  <flask_mcp.server.dispatcher.Dispatcher.offered>`), decided once: the call carries
  the method's record to the dispatcher;
- the :class:`Call` of a session's request, of a 2026-07-28 request and of a request
  made in this process (the command line's client);
- the :class:`~flask_mcp.server.context.ClientFacts` of a call, read from the session
  record or from ``_meta``;
- the one :class:`~flask_mcp.Context` factory, for each era's back-channel, for a
  task's run (a :class:`~flask_mcp.server.task_context.TaskContext`), for the command
  line's client and for a handler that declared no ``Context`` (an
  :class:`~flask_mcp.server.call.InlineContext`, built lazily by
  :func:`current_context`).

The HTTP modules add only what needs HTTP: headers (``MCP-Protocol-Version``,
``Mcp-Name``...), sessions looked up by header, responses and streams.
"""

from __future__ import annotations

import typing as t

from .. import protocol
from ..errors import INVALID_PARAMS
from ..errors import UNSUPPORTED_PROTOCOL_VERSION
from ..errors import InvalidParams
from ..errors import MCPError
from ..errors import MethodNotFound
from ..protocol import LOG_LEVELS
from ..runtime.runs import InlineOutbox
from ..runtime.runs import RequestRun
from ..server import mrtr
from ..server.call import INLINE_BACK_CHANNEL
from ..server.call import Call
from ..server.call import InlineContext
from ..server.call import MethodRecord
from ..server.call import client_facts as client_facts
from ..server.call import running_handler
from ..server.context import BackChannel
from ..server.context import ClientFacts
from ..server.context import Context
from ..server.context import SessionBackChannel
from ..server.task_context import TaskBackChannel
from ..server.task_context import TaskCall
from ..server.task_context import TaskContext

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..backends.base import SessionRecord
    from ..runtime.state import AppState
    from ..server.dispatcher import Dispatcher

#: Builds the :class:`~flask_mcp.Context` of a spawned handler from its run.
ContextFactory = t.Callable[["RequestRun"], Context]
C = t.TypeVar("C", bound=Context)

_ABSENT: t.Any = object()
#: The ``_meta`` keys every 2026-07-28 request carries: (key, type, what to send).
_REQUIRED_META = (
    (protocol.META_PROTOCOL_VERSION, str, "a string such as '2026-07-28'"),
    (protocol.META_CLIENT_CAPABILITIES, dict, "an object; {} declares none"),
)


# -- the era checks ------------------------------------------------------------------


def request_meta(params: t.Any) -> dict[str, t.Any]:
    """Return the ``params._meta`` of a 2026-07-28 request after checking its keys.

    :raises MCPError: -32602 (HTTP 400) naming the missing or invalid key.
    """
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise MCPError(
            INVALID_PARAMS,
            "Invalid params: protocol 2026-07-28 requests need params._meta with "
            f"{protocol.META_PROTOCOL_VERSION!r} and {protocol.META_CLIENT_CAPABILITIES!r}.",
            http_status=400,
        )
    if not isinstance(meta.get(protocol.META_PROTOCOL_VERSION), str) or not isinstance(
        meta.get(protocol.META_CLIENT_CAPABILITIES), dict
    ):  # the common case passes the two checks above; the loop names the missing key
        for key, kind, example in _REQUIRED_META:
            if not isinstance(meta.get(key), kind):
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid params: _meta is missing {key!r} ({example}).",
                    http_status=400,
                )
    info = meta.get(protocol.META_CLIENT_INFO, _ABSENT)
    if info is not _ABSENT and not isinstance(info, dict):
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: _meta {protocol.META_CLIENT_INFO!r} must be an object "
            "{name, version}.",
            http_status=400,
        )
    level = meta.get(protocol.META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: _meta {protocol.META_LOG_LEVEL!r} must be one of "
            f"{', '.join(LOG_LEVELS)}, not {level!r}.",
            http_status=400,
        )
    return meta


def check_stateless_version(version: t.Any) -> None:
    """Refuse a request whose ``_meta`` names a version that is not a 2026-07-28 one.

    :raises MCPError: -32022 (HTTP 400) listing the supported versions.
    """
    if not protocol.is_stateless_version(version):
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}: send one of "
            f"{', '.join(protocol.STATELESS_VERSIONS)}, or initialize for the handshake era.",
            {"supported": list(protocol.STATELESS_VERSIONS), "requested": version},
            http_status=400,
        )


def validate_initialize(params: dict[str, t.Any]) -> str:
    """Check the params of ``initialize`` and return the negotiated protocol version.

    :raises InvalidParams: a required field is missing or has the wrong type.
    """
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams("Invalid params: 'protocolVersion' is required and must be a string.")
    if not isinstance(params.get("capabilities"), dict):
        raise InvalidParams("Invalid params: 'capabilities' is required and must be an object.")
    info = params.get("clientInfo")
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("name"), str)
        or not isinstance(info.get("version"), str)
    ):
        raise InvalidParams(
            "Invalid params: 'clientInfo' is required and needs string 'name' and 'version'."
        )
    return protocol.negotiate(requested)


def offered(dispatcher: Dispatcher, method: str, era: str) -> MethodRecord:
    """Return the record of ``method``, served in ``era``: the call built with it carries it.

    Decided once per call: :meth:`Dispatcher.route
    <flask_mcp.server.dispatcher.Dispatcher.route>` runs the record a call carries
    without asking again. ``subscriptions/listen`` (2026-07-28), which the transports
    serve themselves, is not in the method table: ask about it before.

    :raises MethodNotFound: ``method`` is not served in ``era``.
    """
    record = dispatcher.offered(method, era)
    if record is None:
        raise MethodNotFound(method)
    return record


# -- calls ------------------------------------------------------------------------------


def session_call(
    state: AppState,
    record: SessionRecord,
    message: dict[str, t.Any],
    auth: AuthInfo | None,
    path_args: dict[str, t.Any] | None = None,
    client_address: str | None = None,
) -> Call:
    """Build the call of a session's request (handshake era).

    :param path_args: the values of ``MCP_PATH``'s URL variables the request matched.
    :param client_address: the client's address, for the per-caller bounds.
    """
    return Call(
        message["method"],
        message.get("params") or {},
        message["id"],
        record.protocol_version,
        protocol.HANDSHAKE,
        record,
        state=state,
        auth=auth,
        path_args=path_args or {},
        client_address=client_address,
    )


def stateless_call(
    state: AppState,
    message: dict[str, t.Any],
    version: str,
    auth: AuthInfo | None,
    path_args: dict[str, t.Any] | None = None,
    client_address: str | None = None,
    method_record: MethodRecord | None = None,
) -> Call:
    """Build the call of a 2026-07-28 request whose ``_meta`` was checked.

    :param path_args: the values of ``MCP_PATH``'s URL variables the request matched.
    :param client_address: the client's address, for the per-caller bounds.
    :param method_record: what :func:`offered` returned for the request's method.
    """
    return Call(
        message["method"],
        message["params"],
        message["id"],
        version,
        protocol.STATELESS,
        None,
        state=state,
        auth=auth,
        path_args=path_args or {},
        client_address=client_address,
        method_record=method_record,
    )


def local_call(
    state: AppState,
    method: str,
    params: dict[str, t.Any],
    request_id: t.Any,
    facts: ClientFacts,
    path_args: dict[str, t.Any] | None = None,
) -> Call:
    """Build the call of a request made in this process (the command line's client).

    It is a handshake-era call without a session: the caller's facts, which no
    ``initialize`` kept and no ``_meta`` carries, are given as ``facts`` and travel
    with the call, so :func:`client_facts` (and so every ``Context`` of the call) reads
    them as it reads a session's.

    :param path_args: the values of ``MCP_PATH``'s URL variables of the endpoint
        called (``flask mcp --path``).
    """
    return Call(
        method,
        params,
        request_id,
        facts.protocol_version,
        protocol.HANDSHAKE,
        None,
        state=state,
        path_args=path_args or {},
        facts=facts,
    )


# -- the Context factory -------------------------------------------------------------


@t.overload
def new_context(
    call: Call,
    run: RequestRun,
    back_channel: BackChannel,
    facts: ClientFacts | None = None,
) -> Context: ...


@t.overload
def new_context(
    call: Call,
    run: RequestRun,
    back_channel: BackChannel,
    facts: ClientFacts | None = None,
    *,
    context_class: type[C],
    **fields: t.Any,
) -> C: ...


def new_context(
    call: Call,
    run: RequestRun,
    back_channel: BackChannel,
    facts: ClientFacts | None = None,
    *,
    context_class: type[Context] = Context,
    **fields: t.Any,
) -> Context:
    """Return the :class:`~flask_mcp.Context` of a call's handler: the one factory.

    :param facts: what the caller declared (default: read from the call).
    :param context_class: a subclass of ``Context`` to build (a task's
        :class:`~flask_mcp.server.task_context.TaskContext`), given ``fields`` too.
    """
    if facts is None:
        facts = client_facts(call)
    meta = call.params.get("_meta")
    return context_class(
        app=call.state.app,
        run=run,
        back_channel=back_channel,
        protocol_version=call.version,
        client_capabilities=facts.capabilities,
        client_info=facts.info,
        meta=meta if isinstance(meta, dict) else {},
        log_level=facts.log_level,
        auth=call.auth,
        call=call,
        **fields,
    )


def inline_context(call: Call) -> InlineContext:
    """Return the ``Context`` of a handler that declared none (an :class:`InlineContext`).

    Built when it is asked for (:func:`current_context`, an extension method run inline),
    never ahead: a handler that runs inline costs no context. It has the call's facts
    and run; whatever would send a message to the client is refused.
    """
    run = call.run
    if run is None:  # a call of a batch: nothing can cancel it
        session_id = call.session.id if call.session is not None else None
        run = RequestRun(session_id, call.request_id, call.method, InlineOutbox(), 0.0)
    return new_context(call, run, INLINE_BACK_CHANNEL, context_class=InlineContext)


def current_context() -> Context:
    """Return the :class:`Context` of the handler running now.

    In a handler that declares a ``ctx: Context`` parameter this is that
    object. In one that declares none it is an
    :class:`~flask_mcp.server.call.InlineContext`: the request's facts work, and the
    calls that would send something to the client raise ``RuntimeError`` saying to
    declare the parameter. Each greenlet and thread sees its own handler's context.

    :raises RuntimeError: no Flask-MCP handler is running (outside a tool,
        resource, prompt or completion handler, or in a thread it started).
    """
    call = running_handler.get(None)
    if call is None:
        raise RuntimeError(
            "current_context() works only while a Flask-MCP handler (tool, resource, prompt "
            "or completion) runs, in its own greenlet or thread. Call it from the handler, "
            "or pass the context on to code that runs elsewhere."
        )
    if call.context_declared and call.ctx is not None:
        return call.ctx
    return inline_context(call)


def context_for(
    call: Call,
    back_channel: BackChannel | None = None,
    request_state: dict[str, t.Any] | None = None,
) -> ContextFactory:
    """Return what builds the ``Context`` of a call's spawned handler from its run.

    :param back_channel: where the handler's requests to the client go. ``None``:
        the era's own, made when the handler is spawned: the request's stream, which
        waits for the reply (:class:`~flask_mcp.server.context.SessionBackChannel`), in
        the handshake era; at 2026-07-28 a first round's MRTR channel, which starts
        empty. A later round's channel comes from :func:`round_context`; the command
        line has no client to ask: its channel refuses.
    :param request_state: what a later 2026-07-28 round's ``requestState`` held.
    """

    def context(run: RequestRun) -> Context:
        channel = back_channel
        if channel is None:
            if call.era == protocol.HANDSHAKE:
                settings = call.state.settings
                channel = SessionBackChannel(call.state.backend, settings.client_request_timeout)
            else:
                channel, _ = mrtr.open_round(
                    call.state, call.method, call.params, call.auth, call.path_args
                )
        ctx = new_context(call, run, channel)
        if isinstance(channel, mrtr.MRTRBackChannel):  # MRTR answers a 2026-07-28 handler
            if request_state is not None:
                ctx.request_state = request_state
            ctx.input_responses = channel.responses
        return ctx

    return context


def round_context(call: Call) -> ContextFactory:
    """Return what builds the ``Context`` of a 2026-07-28 call that runs user code.

    A later round (``inputResponses`` or ``requestState`` in the params) is checked
    now, whether its handler is spawned or not; a first round's channel is made only
    if it is.

    :raises InvalidParams: ``inputResponses`` or ``requestState`` is malformed, or the
        state fails verification.
    """
    params = call.params
    if "inputResponses" in params or "requestState" in params:
        channel, request_state = mrtr.open_round(
            call.state, call.method, params, call.auth, call.path_args
        )
        return context_for(call, channel, request_state)
    return context_for(call)


def task_context(call: TaskCall, record: dict[str, t.Any]) -> ContextFactory:
    """Return what builds the ``Context`` of a task's handler from its run.

    Its facts are the call's (:attr:`Call.facts <flask_mcp.server.call.Call.facts>`,
    which :func:`~flask_mcp.server.task_context.task_call` read from the task's
    record). Requests to the client go through the task record
    (:class:`~flask_mcp.server.task_context.TaskBackChannel`).
    """

    def context(run: RequestRun) -> Context:
        channel = TaskBackChannel(call.state, call.task_id, call.task_flavour)
        ctx = new_context(
            call,
            run,
            channel,
            context_class=TaskContext,
            state=call.state,
            session_id=record.get("session"),
        )
        ctx.prepared = record.get("prepared")
        return ctx

    return context


__all__ = [
    "ContextFactory",
    "check_stateless_version",
    "client_facts",
    "context_for",
    "current_context",
    "inline_context",
    "local_call",
    "new_context",
    "offered",
    "request_meta",
    "round_context",
    "session_call",
    "stateless_call",
    "task_context",
    "validate_initialize",
]
