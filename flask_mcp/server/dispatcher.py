"""The method table: validates params, finds handlers, calls them, shapes results.

The dispatcher never touches the Flask request nor looks up the app: the
transport hands it a :class:`Call` built from plain data, which carries the
per-app :class:`~flask_mcp.runtime.state.AppState` (settings, backend, authenticator,
signal sender). A :class:`Dispatcher` is made from a
:class:`~flask_mcp.server.registry.Registry` and a :class:`ServerInfo` alone, so it
runs without a Flask app.
"""

from __future__ import annotations

import logging
import typing as t

from .. import protocol
from ..errors import INTERNAL_ERROR
from ..errors import INVALID_PARAMS
from ..errors import INVALID_REQUEST
from ..errors import MCPError
from ..errors import MethodNotFound
from ..errors import URLElicitationRequired
from ..protocol import jsonrpc
from . import mrtr
from .call import Call as Call
from .call import MethodRecord
from .call import ToolCall
from .call import ToolCallInterceptor
from .info import ServerInfo as ServerInfo
from .methods import CoreMethods
from .middleware import MiddlewareChain

if t.TYPE_CHECKING:
    from ..runtime.state import AppState
    from .registry import Registry

logger = logging.getLogger("flask_mcp")
#: Where a handler runs (:meth:`Dispatcher.placement`): in the caller, no user code...
EXECUTE = "execute"
#: ... user code that cannot emit, in the caller under the supervisor's timeout...
INLINE = "inline"
#: ... or a handler that may emit, in a greenlet or thread of its own.
SPAWN = "spawn"
#: The methods that run a tool, resource or prompt whose ``scopes=`` are checked first.
SCOPED_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})


def check_progress_token(token: t.Any) -> None:
    """Check a request's ``_meta.progressToken``: a string or an integer (or ``null``: none).

    :raises MCPError: -32602 (HTTP 400 at 2026-07-28) for any other value: the spec
        requires one of the two, and a token of another type would be echoed in every
        progress notification of the request.
    """
    if token is not None and not jsonrpc.valid_id(token):
        raise MCPError(
            INVALID_PARAMS,
            "Invalid params: _meta.progressToken must be a string or an integer, not "
            f"{jsonrpc.dumps(token)[:40]}; send one to get notifications/progress, or leave "
            "it out.",
            http_status=400,
        )


def refuse_meta(meta: t.Any) -> t.NoReturn:
    """Refuse a request whose ``params._meta`` is neither an object nor ``null``.

    :raises MCPError: -32602 (HTTP 400 at 2026-07-28): the schema makes ``_meta`` an
        object; read as none, the ``progressToken`` or other keys the client meant
        to send in it would be lost without a word.
    """
    raise MCPError(
        INVALID_PARAMS,
        f"Invalid params: _meta must be an object, not {jsonrpc.dumps(meta)[:40]}; put "
        'its keys in one ({"progressToken": 1}), or leave it out.',
        http_status=400,
    )


class Dispatcher:
    """Routes the requests of one server to their handlers, by method record.

    The method table (:attr:`methods`) holds one
    :class:`~flask_mcp.server.call.MethodRecord` per method: the core methods of
    :class:`~flask_mcp.server.methods.CoreMethods`, and those extensions add
    (:meth:`add_method`).

    :param registry: what the server offers.
    :param info: who the server is.
    """

    #: Methods a handshake-era session may call before ``notifications/initialized``.
    PRE_INIT = frozenset({"ping", "initialize"})

    def __init__(self, registry: Registry, info: ServerInfo) -> None:
        self.registry = registry
        self.info = info
        #: The middleware around every request (:mod:`flask_mcp.server.middleware`).
        self.middleware = MiddlewareChain()
        #: The handlers of the core methods.
        self.core = CoreMethods(registry, info)
        #: The method table: one record per method.
        self.methods: dict[str, MethodRecord] = {
            record.name: record for record in self.core.records()
        }
        #: The methods whose handlers run user code (and may emit before their result).
        self.user_methods = {name for name, record in self.methods.items() if record.user_code}

    @property
    def tool_interceptors(self) -> list[ToolCallInterceptor]:
        """What wraps the run of a tool after validation, outermost first (Tasks)."""
        return self.core.tool_interceptors

    def add_method(
        self,
        name: str,
        handler: t.Callable[[Call], dict[str, t.Any]],
        *,
        eras: t.Iterable[str] | None = None,
        user_code: bool = False,
    ) -> None:
        """Route the request ``name`` to ``handler`` (an extension's method).

        :param eras: the eras it exists in (``"handshake"``, ``"stateless"``); ``None``: both.
        :param user_code: the handler runs app code, so it may be spawned like ``tools/call``.
        :raises ValueError: ``name`` is routed already.
        """
        if name in self.methods:
            raise ValueError(
                f"The request method {name!r} is served already; an extension cannot replace "
                "it. Give the extension's method another name."
            )
        record = MethodRecord(name, handler, None if eras is None else frozenset(eras), user_code)
        self.methods[name] = record
        if user_code:
            self.user_methods.add(name)

    def offered(self, method: str, era: str) -> MethodRecord | None:
        """Return the record of ``method`` if it is served in ``era``, else ``None``.

        The one answer to "is it offered": a transport that asks before it builds the
        call hands the record on in :attr:`Call.method_record
        <flask_mcp.server.call.Call.method_record>`, and :meth:`route` does not ask again.
        """
        record = self.methods.get(method)
        if record is None or (record.eras is not None and era not in record.eras):
            return None
        if record.capability is None or self.registry.provides(record.capability):
            return record
        return None

    # -- what the core methods share, for the transports and extensions ---------------

    def call_user(
        self,
        fn: t.Callable[..., t.Any],
        call: Call,
        context_param: str | None,
        args: t.Sequence[t.Any] = (),
        kwargs: dict[str, t.Any] | None = None,
    ) -> t.Any:
        """Call a user handler, passing the context if it asks for one (see ``CoreMethods``)."""
        return self.core.call_user(fn, call, context_param, args, kwargs)

    def internal_error(self, exc: BaseException, what: str, state: AppState) -> str:
        """Log an unexpected exception and return the text the client may see."""
        return self.core.internal_error(exc, what, state)

    def authorize(self, scopes: tuple[str, ...], call: Call) -> None:
        """Check that the caller holds ``scopes`` (no-op until authorization is configured)."""
        self.core.authorize(scopes, call)

    def run_tool(self, tool_call: ToolCall) -> dict[str, t.Any]:
        """Run a task's validated tool call as Tasks' ``call_next`` does.

        The interceptors of the extensions added after Tasks wrap it, then the tool
        runs (see ``CoreMethods.after_first``): a task rebuilt on a Celery worker runs
        as it does in the worker that created it.
        """
        return self.core.after_first()(tool_call)

    def placement(self, call: Call) -> str:
        """Decide where a call's handler runs: the one place that decides.

        :data:`EXECUTE`: the method runs no user code, it runs in the caller;
        :data:`INLINE`: user code that cannot send anything before its result (no
        ``Context``), run in the caller under the supervisor's timeout;
        :data:`SPAWN`: a handler that may emit, in a greenlet or thread of its own.
        """
        if call.method not in self.user_methods:
            return EXECUTE
        if not self.may_emit(call.method, call.params):
            return INLINE
        return SPAWN

    def may_emit(self, method: str, params: dict[str, t.Any]) -> bool:
        """Tell whether the handler of a request can send anything before its result.

        Only handlers that take a ``Context`` can (and a tool with a ``prepare``
        function, which takes the request's); the others may run without a stream
        of their own.
        """
        if method == "completion/complete":
            return self._completion_context(params) is not None
        if method not in ("tools/call", "prompts/get", "resources/read"):
            return True  # an extension's user-code method (tasks/result): it may emit
        name = params.get("uri" if method == "resources/read" else "name")
        if not isinstance(name, str):
            return False  # invalid params: answered with an error, nothing to emit
        if method == "tools/call":
            record: t.Any = self.registry.tools.get(name)
        elif method == "prompts/get":
            record = self.registry.prompts.get(name)
        elif method == "resources/read":
            record = self.registry.resources.get(name)
            if record is None:
                return True  # a template: the match decides, in the handler's task
        if record is None:
            return False
        # A tool's prepare function gets the request's Context, even if the tool takes none.
        return record.context_param is not None or getattr(record, "prepare", None) is not None

    def _completion_context(self, params: dict[str, t.Any]) -> str | None:
        """Return the ``Context`` parameter of the completion handler a request names.

        A completion handler that declares one gets a full ``Context`` (it runs
        spawned, as a tool would), not ``None``; ``None`` here also for invalid
        params, which are answered with an error.
        """
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            return None
        if ref.get("type") == "ref/prompt":
            key, target = "prompt", ref.get("name")
        elif ref.get("type") == "ref/resource":
            key, target = "resource", ref.get("uri")
        else:
            return None
        name = argument.get("name")
        if not isinstance(target, str) or not isinstance(name, str):
            return None
        completions = self.registry.completions
        handler = completions.get((key, target, name)) or completions.get((key, target, ""))
        return None if handler is None else handler[1]

    # -- entry point ----------------------------------------------------------

    def dispatch(
        self, call: Call, route: t.Callable[[Call], dict[str, t.Any]] | None = None
    ) -> dict[str, t.Any]:
        """Run one request and return its result, shaped for the call's era.

        A 2026-07-28 call that needs input from the client returns an
        ``InputRequiredResult``; its results carry ``resultType``, ``serverInfo``
        and, where cacheable, ``ttlMs`` and ``cacheScope``.

        Registered middleware runs around it (:mod:`~flask_mcp.server.middleware`);
        ``route`` answers instead of the method table (the handshake's ``initialize``).

        :raises MCPError: the request fails with a JSON-RPC error.
        """
        meta = call.params.get("_meta")
        if isinstance(meta, dict):
            if "progressToken" in meta:
                check_progress_token(meta["progressToken"])
        elif meta is not None:
            refuse_meta(meta)
        if self.middleware.items:  # the list itself: no __bool__ call per request
            if call.state.authenticator is not None and call.method in SCOPED_METHODS:
                self.authorize_target(call)
            return self.middleware.run(self, call, route)
        return self.route(call) if route is None else route(call)

    def authorize_target(self, call: Call) -> None:
        """Check the scopes of the tool, resource or prompt a call names, before the middleware.

        A middleware that answers by itself (a cache) must not serve a scoped primitive
        to a caller without its scopes, so the check runs before the chain; the method
        checks again what it runs (a middleware may rewrite the params). A name that
        is not found is left to the method, whose error the middleware then sees.

        :raises ~flask_mcp.auth.AuthRefused: the caller lacks a scope (403).
        """
        params = call.params
        record: t.Any = None
        if call.method == "resources/read":
            uri = params.get("uri")
            if isinstance(uri, str):
                record = self.registry.resources.get(uri)
                if record is None and len(uri) <= call.state.settings.max_uri_length:
                    try:
                        found = self.registry.find_template(uri)
                    except MCPError:
                        found = None
                    record = found[0] if found is not None else None
        else:
            name = params.get("name")
            if isinstance(name, str):
                table = (
                    self.registry.tools if call.method == "tools/call" else self.registry.prompts
                )
                record = table.get(name)
        if record is not None and record.scopes:
            self.authorize(record.scopes, call)

    def route(self, call: Call) -> dict[str, t.Any]:
        """Run one request without the middleware: the innermost ``call_next``."""
        record = call.method_record  # found offered when the call was built, if it was
        if record is None:
            record = self.offered(call.method, call.era)
            if record is None:
                raise MethodNotFound(call.method)
        handler = record.handler
        if call.era == protocol.HANDSHAKE:
            if (
                call.session is not None
                and not call.session.initialized
                and call.method not in self.PRE_INIT
            ):
                raise MCPError(
                    INVALID_REQUEST,
                    "The session is not initialized: send notifications/initialized before "
                    f"{call.method}.",
                )
            return handler(call)
        try:
            result = handler(call)
        except (mrtr.InputRequired, URLElicitationRequired) as exc:
            ctx = call.ctx
            if ctx is not None and isinstance(ctx._back_channel, mrtr.MRTRBackChannel):
                channel, request_state = ctx._back_channel, ctx.request_state
            elif isinstance(exc, URLElicitationRequired) and protocol.allows_input_required(
                call.era, call.method
            ):  # a handler without a Context parameter
                channel, request_state = mrtr.open_round(
                    call.state, call.method, call.params, call.auth, call.path_args
                )
            else:
                raise MCPError(
                    INTERNAL_ERROR, f"{call.method} cannot ask the client for input."
                ) from None
            if isinstance(exc, URLElicitationRequired):  # no -32042 at 2026-07-28
                exc = mrtr.url_elicitations(call, exc)
            result = mrtr.input_required_result(
                call.state, exc, channel, request_state, call.params, call.auth, call.path_args
            )
        return self.shape(call, result)

    def refuse_tool_call(self, call: Call, refused: dict[str, t.Any]) -> dict[str, t.Any]:
        """Answer a ``tools/call`` a middleware refused with a ``ToolError`` (``refused``:
        its ``isError`` result): see ``CoreMethods.refuse_tool_call``."""
        return self.core.refuse_tool_call(call, refused)

    def shape(self, call: Call, result: dict[str, t.Any]) -> dict[str, t.Any]:
        """Add what a result carries in the call's era (see :func:`protocol.shape_result`)."""
        settings = call.state.settings
        if call.method == "resources/read" and call.cache is not None:
            ttl = call.cache[0] if call.cache[0] is not None else settings.read_cache_ttl_ms
            scope = call.cache[1] or settings.read_cache_scope
        else:
            ttl, scope = settings.cache_ttl_ms, settings.cache_scope
        return protocol.shape_result(
            call.era,
            call.method,
            result,
            server_info=self.info.fields,
            ttl_ms=ttl,
            cache_scope=scope,
        )


__all__ = ["EXECUTE", "INLINE", "SPAWN", "Call", "Dispatcher", "ServerInfo"]
