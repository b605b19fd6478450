"""One request as the server sees it: :class:`Call`, and the handler running now.

A :class:`Call` is made by the transport from plain data and carries the
per-app :class:`~flask_mcp.runtime.state.AppState` down to the dispatcher and the
handler. While a handler runs, :data:`running_handler` holds its call, so
that :func:`~flask_mcp.current_context` (and ``current_auth()``,
``require_scopes()``) find it without looking anything up. An
:class:`InlineContext` is the context of a handler that declared none; the kernel
builds it (:func:`flask_mcp.kernel.intake.inline_context`), as every other context.
"""

from __future__ import annotations

import contextvars
import dataclasses
import typing as t

from .. import protocol
from ..runtime.runs import RequestRun
from .context import ClientFacts
from .context import Context
from .running import running_call

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..backends.base import SessionRecord
    from ..runtime.state import AppState


@dataclasses.dataclass(slots=True)  # one per request: slots make it a third cheaper to build
class Call:
    """One request as the dispatcher sees it.

    :param state: the state of the app serving the call; it carries the
        settings, backend, authenticator and signal sender down to every layer.
    """

    method: str
    params: dict[str, t.Any]
    request_id: t.Any
    version: str
    era: str
    session: SessionRecord | None = None
    _: dataclasses.KW_ONLY
    state: AppState
    ctx: Context | None = None
    #: The call's run, once the runner started it (inline or spawned), for the
    #: ``cancelled`` of an :class:`InlineContext`; ``None`` for a call run without one
    #: (no user code, a call of a batch).
    run: RequestRun | None = None
    #: The caller, or ``None`` without authorization.
    auth: AuthInfo | None = None
    #: ``(ttl_ms, cache_scope)`` overrides of the resource that was read, if any.
    cache: tuple[int | None, str | None] | None = None
    #: The scopes the call's tool, resource or prompt declares (``require_scopes()`` adds).
    scopes: tuple[str, ...] = ()
    #: Whether the running handler declared a ``Context`` parameter (``current_context()``).
    context_declared: bool = False
    #: Whether a user handler of the call (tool, resource, prompt, completion, a tool's
    #: ``prepare``) was called: a session store outage met after that may have left its
    #: work half done, so the call is not answered with a retryable 503. An extension's
    #: method (``tasks/get``...) is the library's: its outage is still that 503.
    handler_started: bool = False
    #: The id of the task this ``tools/call`` created, if it became a task.
    created_task: str | None = None
    #: The values of ``MCP_PATH``'s URL variables (``/t/<tenant>/mcp``); ``{}`` without any.
    path_args: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    #: The client's address (``REMOTE_ADDR``, which ``ProxyFix`` sets); ``None`` off HTTP.
    client_address: str | None = None
    #: What the caller declared, for a call that has neither a session nor ``_meta`` to
    #: read it from (the command line's in-process client, a task's run, which its record
    #: gives); ``None``: read it from those.
    facts: ClientFacts | None = None
    #: The method's record, when the kernel found it offered as it built the call (a
    #: 2026-07-28 request); ``None``: :meth:`~flask_mcp.server.dispatcher.Dispatcher.route`
    #: looks it up.
    method_record: MethodRecord | None = None


@dataclasses.dataclass
class ToolCall:
    """A ``tools/call`` past the middleware, the authorization and the validation.

    It is what :meth:`flask_mcp.Extension.intercept_tool_call` wraps: the run of the
    tool itself, which an interceptor may run now (``call_next(tool_call)``), later
    (Tasks) or not at all.
    """

    #: The request.
    call: Call
    #: The tool's record (:class:`~flask_mcp.server.registry.Tool`).
    tool: t.Any
    #: The arguments as the client sent them.
    arguments: dict[str, t.Any]
    #: The arguments after validation and conversion: what the tool function receives.
    values: dict[str, t.Any]


@dataclasses.dataclass(frozen=True)
class MethodRecord:
    """One request method the dispatcher serves: the method table is made of these."""

    #: The JSON-RPC method, e.g. ``"tools/call"``.
    name: str
    #: Called with the :class:`Call`; returns the result dict.
    handler: t.Callable[[Call], dict[str, t.Any]]
    #: The eras it exists in (``"handshake"``, ``"stateless"``); ``None``: every era.
    eras: frozenset[str] | None = None
    #: Whether it runs app code (it may then be spawned, with a ``Context``).
    user_code: bool = False
    #: The server capability it belongs to (``"tools"``, ``"resources"``, ``"prompts"``,
    #: ``"completions"``): offered only while the server has one; ``None``: always.
    capability: str | None = None


#: Runs the rest of the interceptors, then the tool: ``call_next(tool_call)``.
ToolCallNext = t.Callable[[ToolCall], dict[str, t.Any]]
#: An interceptor of tool runs: ``fn(tool_call, call_next)``.
ToolCallInterceptor = t.Callable[[ToolCall, ToolCallNext], dict[str, t.Any]]
#: Answers a call whose arguments failed validation: ``fn(tool_call, is_error_result)``.
ToolCallRefusal = t.Callable[[ToolCall, dict[str, t.Any]], dict[str, t.Any]]


def client_facts(call: Call) -> ClientFacts:
    """Return what the caller declared: from its session, or from the request's ``_meta``.

    The one place that reads the client's facts (capabilities, ``clientInfo``, log
    level) of a call, in either era.
    """
    if call.facts is not None:
        return call.facts
    record = call.session
    if record is not None:
        return ClientFacts(
            call.version, record.client_capabilities, record.client_info, record.log_level
        )
    meta = call.params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    return ClientFacts(
        call.version,
        meta.get(protocol.META_CLIENT_CAPABILITIES) or {},
        meta.get(protocol.META_CLIENT_INFO) or {},
        meta.get(protocol.META_LOG_LEVEL),
    )


#: The call whose handler runs now. Set by the dispatcher around each user call; each
#: greenlet and thread has its own.
running_handler: contextvars.ContextVar[Call] = running_call


class InlineBackChannel:
    """The back-channel of an :class:`InlineContext`: there is none, a request is refused."""

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        raise t.cast(InlineContext, ctx).refused("send_request")


#: The one back-channel of every :class:`InlineContext` (it holds nothing).
INLINE_BACK_CHANNEL = InlineBackChannel()
#: What a handler is called in a refusal, by the method that runs it.
_HANDLER_KINDS = {"tools/call": "tool", "resources/read": "resource", "prompts/get": "prompt"}


class InlineContext(Context):
    """The :func:`~flask_mcp.current_context` of a handler that declared no ``Context``.

    Its facts (``request_id``, ``session_id``, ``auth``, ``client_info``,
    ``client_capabilities``, ``protocol_version``, ``meta``, ``cancelled``)
    are those of the running call. Sending anything to the client needs a
    handler that declares ``ctx: Context``: such a handler runs where its
    messages can stream, so the calls that would send raise ``RuntimeError``
    here instead of being dropped.

    The kernel's one factory builds it (:func:`flask_mcp.kernel.intake.inline_context`);
    this class adds only the refusals.
    """

    def refused(self, what: str) -> RuntimeError:
        """Return the error for a call that would send a message to the client."""
        call = t.cast("Call", self.call)  # the kernel builds it for a call
        name = call.params.get("uri" if call.method == "resources/read" else "name")
        handler = f"{_HANDLER_KINDS.get(call.method, call.method)} {name!r}"
        return RuntimeError(
            f"current_context().{what}() cannot send anything from the {handler}: it "
            "declares no Context parameter, so it runs without a stream of its own. Declare "
            "a parameter `ctx: Context` (from flask_mcp import Context) and call "
            f"ctx.{what}() on it."
        )

    def progress(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to report progress."""
        raise self.refused("progress")

    def log(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to send log messages."""
        raise self.refused("log")

    def send_request(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to send requests."""
        raise self.refused("send_request")

    def ask(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to ask the client."""
        raise self.refused("ask")

    def create_message(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to sample."""
        raise self.refused("create_message")

    def elicit(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to elicit."""
        raise self.refused("elicit")

    def elicit_url(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to elicit."""
        raise self.refused("elicit_url")

    def list_roots(self, *args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        """Refused: declare a ``ctx: Context`` parameter to list the client's roots."""
        raise self.refused("list_roots")

    def close_sse_stream(self) -> t.NoReturn:
        """Refused: only a handler with a ``ctx: Context`` parameter has a stream."""
        raise self.refused("close_sse_stream")


__all__ = [
    "INLINE_BACK_CHANNEL",
    "Call",
    "InlineBackChannel",
    "InlineContext",
    "MethodRecord",
    "ToolCall",
    "ToolCallInterceptor",
    "ToolCallRefusal",
    "ToolCallNext",
    "client_facts",
    "running_handler",
]
