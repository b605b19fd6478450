"""What each MCP method does, and what the methods share.

:class:`CoreMethods` holds the handlers of the core methods and gives the
:class:`~flask_mcp.server.dispatcher.Dispatcher` one
:class:`~flask_mcp.server.call.MethodRecord` per method (handler, eras, whether it
runs user code, capability): validating params, finding records in the registry,
calling user handlers with their ``Context``, turning what they return into results,
and the errors of each case.
"""

from __future__ import annotations

import logging
import time
import typing as t

from werkzeug.exceptions import HTTPException

from .. import content as content_mod
from .. import protocol
from .. import signals
from ..convert import Unconvertible
from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable
from ..errors import ClientRequestError
from ..errors import InvalidParams
from ..errors import MCPError
from ..errors import RequestCancelled
from ..errors import ResourceNotFound
from ..errors import ToolError
from ..errors import aborted
from ..errors import handler_error
from ..errors import resource_not_found
from ..errors import view_answer
from ..errors import view_answer_error
from ..errors import view_answer_text
from ..json_codec import plain_result
from ..protocol import LOG_LEVELS
from ..schema import ArgumentError
from ..schema import OutputError
from ..schema import argument_error
from .call import MethodRecord
from .call import ToolCall
from .call import running_handler
from .prompt_arguments import PromptArgumentError
from .prompt_arguments import convert_arguments
from .registry import Kind
from .registry import paginate

if t.TYPE_CHECKING:
    from ..runtime.state import AppState
    from .call import Call
    from .call import ToolCallInterceptor
    from .call import ToolCallNext
    from .call import ToolCallRefusal
    from .info import ServerInfo
    from .registry import Registry

logger = logging.getLogger("flask_mcp")
_set_running = running_handler.set
_reset_running = running_handler.reset


def _then(interceptor: ToolCallInterceptor, call_next: ToolCallNext) -> ToolCallNext:
    """Return the ``call_next`` that runs ``interceptor`` around ``call_next``.

    A :class:`~flask_mcp.ToolError` it raises is the ``isError`` result right there
    (:func:`_refused`), in a task's run as in the request.
    """

    def run(current: ToolCall) -> dict[str, t.Any]:
        try:
            return interceptor(current, call_next)
        except ToolError as exc:
            return _refused(exc)

    return run


def _refused(exc: ToolError) -> dict[str, t.Any]:
    """Return the ``isError`` result of a ``ToolError`` an interceptor raised.

    As for one the tool or a middleware around ``tools/call`` raises: the model
    reads its message. Without this it became -32603, or the ``isError`` result
    only when some middleware was registered.
    """
    return content_mod.error_result(str(exc) or type(exc).__name__)


def _require_str(params: dict[str, t.Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: {key!r} is required and must be a non-empty string.")
    return value


def _optional_dict(params: dict[str, t.Any], key: str) -> dict[str, t.Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParams(f"Invalid params: {key!r} must be an object.")
    return value


def _check_uri_length(uri: str, limit: int) -> None:
    """Refuse a URI longer than ``MCP_MAX_URI_LENGTH``, before any matching."""
    if len(uri) > limit:
        raise InvalidParams(
            f"Invalid params: the URI is {len(uri)} characters long; this server accepts"
            f" at most {limit} (MCP_MAX_URI_LENGTH). Send a shorter URI."
        )


class CoreMethods:
    """The handlers of the core MCP methods; the dispatcher routes to them by record.

    :param registry: what the server offers.
    :param info: who the server is.
    """

    def __init__(self, registry: Registry, info: ServerInfo) -> None:
        self.registry = registry
        self.info = info
        #: What wraps the run of a tool after validation, outermost first (Tasks).
        self.tool_interceptors: list[ToolCallInterceptor] = []
        #: What answers a call whose arguments failed validation, given the call and its
        #: ``isError`` result (Tasks: a 2025-11-25 call that asks for a task gets one,
        #: failed with that result); ``None``: the ``isError`` result itself.
        self.refuse_arguments: ToolCallRefusal | None = None
        #: The same for a call of a known tool that a middleware refused with a
        #: ``ToolError`` (:meth:`refuse_tool_call`).
        self.refuse_vetoed: ToolCallRefusal | None = None

    def records(self) -> list[MethodRecord]:
        """Return the record of each core method: its handler, eras, user code, capability."""
        table: list[tuple[str, t.Callable[[Call], dict[str, t.Any]], bool, str | None]] = [
            ("ping", self.ping, False, None),
            ("tools/list", self.tools_list, False, "tools"),
            ("tools/call", self.tools_call, True, "tools"),
            ("resources/list", self.resources_list, False, "resources"),
            ("resources/templates/list", self.resource_templates_list, False, "resources"),
            ("resources/read", self.resources_read, True, "resources"),
            ("resources/subscribe", self.resources_subscribe, False, "resources"),
            ("resources/unsubscribe", self.resources_unsubscribe, False, "resources"),
            ("prompts/list", self.prompts_list, False, "prompts"),
            ("prompts/get", self.prompts_get, True, "prompts"),
            ("completion/complete", self.completion_complete, True, "completions"),
            ("logging/setLevel", self.logging_set_level, False, None),
            ("server/discover", self.server_discover, False, None),
        ]
        return [
            MethodRecord(
                name,
                handler,
                frozenset(
                    era
                    for era in (protocol.HANDSHAKE, protocol.STATELESS)
                    if protocol.has_method(era, name)
                ),
                user_code,
                capability,
            )
            for name, handler, user_code, capability in table
        ]

    # -- shared -------------------------------------------------------------------

    def call_user(
        self,
        fn: t.Callable[..., t.Any],
        call: Call,
        context_param: str | None,
        args: t.Sequence[t.Any] = (),
        kwargs: dict[str, t.Any] | None = None,
    ) -> t.Any:
        """Call a user handler, passing the context if it asks for one.

        The handler is :func:`~flask_mcp.current_context`'s answer while it runs.
        """
        if context_param is not None:
            kwargs = dict(kwargs or {})
            kwargs[context_param] = call.ctx
            call.context_declared = True
        elif kwargs is None:
            kwargs = {}
        token = _set_running(call)
        call.handler_started = True
        try:
            return fn(*args, **kwargs)
        finally:
            _reset_running(token)

    def _emit(self, signal: t.Any, call: Call, **kwargs: t.Any) -> None:
        """Send a telemetry signal with the call's app as sender, if anyone listens."""
        if signal.receivers:
            signals.send(signal, call.state.app, **kwargs)

    def internal_error(self, exc: BaseException, what: str, state: AppState) -> str:
        """Log an unexpected exception and return the text the client may see.

        The text is redacted unless ``MCP_EXPOSE_INTERNAL_ERRORS`` is true, or
        unset while the app runs in debug mode (``flask run --debug``).
        """
        logger.error("Unhandled exception in %s", what, exc_info=exc)
        if state.expose_internal_errors:
            return f"Error in {what}: {type(exc).__name__}: {exc}"
        return f"Internal error in {what}. The server log has the details."

    def handler_error(
        self, exc: ResourceNotFound | HTTPException, call: Call, what: str, uri: str | None = None
    ) -> MCPError:
        """Return the JSON-RPC error for a ``ResourceNotFound`` or HTTP exception of a handler."""
        return handler_error(exc, what, handshake=call.era == protocol.HANDSHAKE, uri=uri)

    # -- authorization ------------------------------------------------------------

    def authorize(self, scopes: tuple[str, ...], call: Call) -> None:
        """Check that the caller holds ``scopes`` (no-op until authorization is configured).

        :raises ~flask_mcp.auth.AuthRefused: 403 ``insufficient_scope``; the
            transport answers with its challenge before anything is streamed.
        """
        call.scopes = scopes
        authenticator = call.state.authenticator
        if authenticator is not None:
            authenticator.require(
                call.auth, scopes, call.method, call.request_id, path_args=call.path_args
            )

    def _visible(self, kind: Kind, result: dict[str, t.Any], call: Call) -> dict[str, t.Any]:
        """Drop the list entries whose scopes the caller lacks (``MCP_AUTH_HIDE_UNAUTHORIZED``)."""
        authenticator = call.state.authenticator
        if authenticator is None or not authenticator.hide_unauthorized:
            return result
        tables: dict[str, tuple[dict[str, t.Any], str]] = {
            "tools": (self.registry.tools, "name"),
            "resources": (self.registry.resources, "uri"),
            "resourceTemplates": (self.registry.templates, "uriTemplate"),
            "prompts": (self.registry.prompts, "name"),
        }
        records, field = tables[kind]
        kept = []
        for item in result.get(kind, []):
            record = records.get(item.get(field))
            if record is not None and authenticator.allows(call.auth, record.scopes):
                kept.append(item)
        return {**result, kind: kept}

    def _page(self, kind: Kind, call: Call) -> dict[str, t.Any]:
        items, cursor = paginate(
            self.registry.described(kind),
            call.params.get("cursor"),
            call.state.settings.page_size,
            kind,
        )
        result: dict[str, t.Any] = {kind: items}
        if cursor is not None:
            result["nextCursor"] = cursor
        return self._visible(kind, result, call)

    # -- basic ----------------------------------------------------------------

    def ping(self, call: Call) -> dict[str, t.Any]:
        return {}

    def server_discover(self, call: Call) -> dict[str, t.Any]:
        result: dict[str, t.Any] = {
            "supportedVersions": list(protocol.STATELESS_VERSIONS),
            "capabilities": self.registry.capabilities(call.era),
        }
        if self.info.instructions:
            result["instructions"] = self.info.instructions
        return result

    def logging_set_level(self, call: Call) -> dict[str, t.Any]:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParams(
                f"Invalid params: 'level' must be one of {', '.join(LOG_LEVELS)}, not {level!r}."
            )
        if call.session is not None:
            call.state.backend.update_session(call.session.id, log_level=level)
        return {}

    # -- tools ------------------------------------------------------------------

    def tools_list(self, call: Call) -> dict[str, t.Any]:
        result = self._page("tools", call)
        if protocol.shapes_tools(call.version):
            result["tools"] = [protocol.shape_tool(call.version, tool) for tool in result["tools"]]
        return result

    def tools_call(self, call: Call) -> dict[str, t.Any]:
        """Find, authorize and validate the call, then run it through the interceptors.

        Authorization and validation happen once per call, here: an interceptor
        (:meth:`flask_mcp.Extension.intercept_tool_call`, Tasks) wraps the run that
        follows them.
        """
        name = _require_str(call.params, "name")
        tool = self.registry.tools.get(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name!r}. Call tools/list for the available tools.")
        arguments = _optional_dict(call.params, "arguments")
        self.authorize(tool.scopes, call)
        try:
            values = tool.input.validate(arguments)  # not validate_arguments: one call less
        except (ArgumentError, RecursionError) as exc:
            if signals.tool_called.receivers:
                self._emit(signals.tool_called, call, tool=name, duration=0.0, is_error=True)
            refused = content_mod.error_result(str(argument_error(exc)))
            if self.refuse_arguments is None:
                return refused
            return self.refuse_arguments(ToolCall(call, tool, arguments, {}), refused)
        return self.intercept(ToolCall(call, tool, arguments, values))

    def refuse_tool_call(self, call: Call, refused: dict[str, t.Any]) -> dict[str, t.Any]:
        """Answer a ``tools/call`` a middleware refused before it ran (``refused``: the
        ``isError`` result of its :class:`~flask_mcp.ToolError`).

        A call of a known tool goes to :attr:`refuse_vetoed`, which decides its form
        (Tasks: a 2025-11-25 call that asks for a task gets one, failed with
        ``refused``); any other call gets ``refused`` itself.
        """
        name = call.params.get("name")
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        if tool is None or self.refuse_vetoed is None:
            return refused
        arguments = call.params.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        return self.refuse_vetoed(ToolCall(call, tool, arguments, {}), refused)

    def intercept(self, tool_call: ToolCall) -> dict[str, t.Any]:
        """Run ``tool_call`` through the tool-call interceptors, then the tool.

        A :class:`~flask_mcp.ToolError` an interceptor raises answers with the
        ``isError`` result, whether middleware is registered or not.
        """
        interceptors = self.tool_interceptors
        if not interceptors:
            return self.run_tool(tool_call)
        try:
            return interceptors[0](tool_call, self.after_first())
        except ToolError as exc:
            return _refused(exc)

    def after_first(self) -> ToolCallNext:
        """Return the ``call_next`` of the first interceptor (Tasks'): the others, then the tool.

        A task rebuilt in another process (a Celery worker) goes on with it, as the
        task's run in the worker that created it goes on with Tasks' ``call_next``.
        """
        interceptors = self.tool_interceptors
        alone = len(interceptors) == 1
        if alone and getattr(interceptors[0], "keeps_tool_results", False) is True:
            return self.run_tool  # Tasks alone, as on most apps: no chain
        # The innermost interceptor gets run_tool itself, or, when an interceptor may
        # change the result, a run without stale encoded bytes (see json_codec.EncodedJSON).
        call_next: ToolCallNext = self.run_tool
        for interceptor in interceptors:
            if getattr(interceptor, "keeps_tool_results", False) is not True:  # Tasks' is
                call_next = self._run_tool_plain
                break
        for interceptor in reversed(interceptors[1:]):
            call_next = _then(interceptor, call_next)
        return call_next

    def _run_tool_plain(self, tool_call: ToolCall) -> dict[str, t.Any]:
        """:meth:`run_tool`, its ``structuredContent`` a plain dict (see :func:`plain_result`)."""
        return plain_result(self.run_tool(tool_call))

    def run_tool(self, tool_call: ToolCall) -> dict[str, t.Any]:
        """Call the tool with its validated arguments and build its ``CallToolResult``.

        It sends ``tool_called``; a task runs this once, in the task.
        """
        call, tool, values = tool_call.call, tool_call.tool, tool_call.values
        name = tool.name
        timed = bool(signals.tool_called.receivers)  # no clock to read when no one listens
        started = time.perf_counter() if timed else 0.0
        is_error = True
        try:
            try:
                if tool.call_style == "dict":
                    value = self.call_user(tool.fn, call, tool.context_param, (values,))
                else:
                    value = self.call_user(tool.fn, call, tool.context_param, kwargs=values)
            except ResourceNotFound as exc:
                raise self.handler_error(exc, call, f"tool {name!r}") from None
            except (MCPError, RequestCancelled, BackendUnavailable):
                raise  # the session store failed, not the tool: the runner answers
            except (ToolError, ClientRequestError) as exc:
                return content_mod.error_result(str(exc) or type(exc).__name__)
            except HTTPException as exc:
                return content_mod.error_result(aborted(exc, f"tool {name!r}"))
            except Exception as exc:
                text = self.internal_error(exc, f"tool {name!r}", call.state)
                return content_mod.error_result(text)
            result = self._tool_result(tool, value, call)
            is_error = bool(result.get("isError"))
            return protocol.shape_tool_result(call.version, result)
        finally:
            if timed and signals.tool_called.receivers:  # no keyword dict when no one listens
                self._emit(
                    signals.tool_called,
                    call,
                    tool=name,
                    duration=time.perf_counter() - started,
                    is_error=is_error,
                )

    def _tool_result(self, tool: t.Any, value: t.Any, call: Call) -> dict[str, t.Any]:
        """Build the ``CallToolResult``; a result that cannot be sent faithfully is an error."""
        try:
            if tool.output is not None and not isinstance(value, content_mod.ToolResult):
                structured, text = tool.output.structure_with_text(value)
                return {
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": structured,
                }
            if isinstance(value, content_mod.ToolResult):
                result = value.to_dict()
                if tool.output is not None and not value.is_error:
                    if "structuredContent" not in result:
                        raise OutputError(
                            "the tool has an output schema, so its ToolResult needs"
                            " structured= (or is_error=True)"
                        )
                    tool.output.check(result["structuredContent"])
                return result
            uri = f"tool://{tool.name}/result"
            blocks = content_mod.to_content_list(value, mime_type=tool.mime_type, uri=uri)
            return {"content": blocks}
        except Unconvertible as exc:
            response = view_answer(value)
            if response is not None:  # a view decorator's refusal, or jsonify() by habit
                return content_mod.error_result(view_answer_text(response, f"Tool {tool.name!r}"))
            message = f"Tool {tool.name!r} returned a result that cannot be sent: {exc}"
        except OutputError as exc:
            message = f"Invalid result of tool {tool.name!r} for its output schema: {exc}"
        except Exception as exc:  # a model_dump or marshmallow dump that raises
            text = self.internal_error(exc, f"tool {tool.name!r}", call.state)
            return content_mod.error_result(text)
        logger.error("%s", message)
        return content_mod.error_result(message)

    # -- resources ---------------------------------------------------------------

    def resources_list(self, call: Call) -> dict[str, t.Any]:
        return self._page("resources", call)

    def resource_templates_list(self, call: Call) -> dict[str, t.Any]:
        return self._page("resourceTemplates", call)

    def resolve_resource(self, uri: str, call: Call) -> tuple[t.Any, dict[str, t.Any]]:
        """Return the resource or template serving ``uri`` and its variables."""
        _check_uri_length(uri, call.state.settings.max_uri_length)
        found = self.registry.find_resource(uri)
        if found is None:
            raise self.resource_not_found(uri, call)
        return found

    def resource_not_found(self, uri: str, call: Call) -> MCPError:
        """Return the resource-not-found error of the call's era (-32002, or -32602 at 2026)."""
        return resource_not_found(uri, handshake=call.era == protocol.HANDSHAKE)

    def resources_read(self, call: Call) -> dict[str, t.Any]:
        uri = _require_str(call.params, "uri")
        record, variables = self.resolve_resource(uri, call)
        self.authorize(record.scopes, call)
        call.cache = (record.ttl_ms, record.cache_scope)
        started = time.perf_counter()
        try:
            value = self.call_user(record.fn, call, record.context_param, kwargs=variables)
        except (ResourceNotFound, HTTPException) as exc:
            raise self.handler_error(exc, call, f"resource {uri!r}", uri) from None
        except (MCPError, RequestCancelled, BackendUnavailable):
            raise
        except Exception as exc:
            text = self.internal_error(exc, f"resource {uri!r}", call.state)
            raise MCPError(INTERNAL_ERROR, text) from None
        contents = self._resource_contents(uri, record.mime_type, value, call)
        self._emit(
            signals.resource_read,
            call,
            uri=uri,
            duration=time.perf_counter() - started,
        )
        return {"contents": contents}

    def _resource_contents(
        self, uri: str, mime_type: str | None, value: t.Any, call: Call
    ) -> list[dict[str, t.Any]]:
        try:
            return content_mod.to_resource_contents(uri, value, mime_type)
        except Unconvertible as exc:
            response = view_answer(value)
            if response is not None:  # a view decorator's refusal, or jsonify() by habit
                raise view_answer_error(response, f"Resource {uri!r}", "resource") from None
            message = f"Resource {uri!r} returned a value that cannot be sent: {exc}"
        except Exception as exc:
            text = self.internal_error(exc, f"resource {uri!r}", call.state)
            raise MCPError(INTERNAL_ERROR, text) from None
        logger.error("%s", message)
        raise MCPError(INTERNAL_ERROR, message)

    def _subscription_uri(self, call: Call) -> str:
        uri = _require_str(call.params, "uri")
        record, _ = self.resolve_resource(uri, call)
        self.authorize(record.scopes, call)
        return uri

    def resources_subscribe(self, call: Call) -> dict[str, t.Any]:
        uri = self._subscription_uri(call)
        if call.session is not None:
            call.state.backend.add_subscription(call.session.id, uri)
        return {}

    def resources_unsubscribe(self, call: Call) -> dict[str, t.Any]:
        uri = self._subscription_uri(call)
        if call.session is not None:
            call.state.backend.remove_subscription(call.session.id, uri)
        return {}

    # -- prompts -----------------------------------------------------------------

    def prompts_list(self, call: Call) -> dict[str, t.Any]:
        return self._page("prompts", call)

    def prompts_get(self, call: Call) -> dict[str, t.Any]:
        name = _require_str(call.params, "name")
        prompt = self.registry.prompts.get(name)
        if prompt is None:
            raise InvalidParams(
                f"Unknown prompt: {name!r}. Call prompts/list for the available prompts."
            )
        arguments = _optional_dict(call.params, "arguments")
        for key, value in arguments.items():
            if not isinstance(value, str):
                raise InvalidParams(f"Invalid params: prompt argument {key!r} must be a string.")
        declared = {arg["name"] for arg in prompt.arguments}
        missing = [
            arg["name"]
            for arg in prompt.arguments
            if arg.get("required") and arg["name"] not in arguments
        ]
        if missing:
            raise InvalidParams(
                f"Missing required argument(s) for prompt {name!r}: {', '.join(missing)}."
            )
        self.authorize(prompt.scopes, call)
        started = time.perf_counter()
        kwargs = {k: v for k, v in arguments.items() if k in declared}
        try:
            kwargs = convert_arguments(kwargs, prompt.converters)
        except PromptArgumentError as exc:
            raise InvalidParams(f"Invalid params: prompt {name!r} arguments: {exc}.") from None
        try:
            value = self.call_user(prompt.fn, call, prompt.context_param, kwargs=kwargs)
        except (ResourceNotFound, HTTPException) as exc:
            raise self.handler_error(exc, call, f"prompt {name!r}") from None
        except (MCPError, RequestCancelled, BackendUnavailable):
            raise
        except Exception as exc:
            text = self.internal_error(exc, f"prompt {name!r}", call.state)
            raise MCPError(INTERNAL_ERROR, text) from None
        result = self._prompt_result(value, prompt.description, call, name)
        self._emit(
            signals.prompt_rendered,
            call,
            prompt=name,
            duration=time.perf_counter() - started,
        )
        return result

    def _prompt_result(
        self, value: t.Any, description: str | None, call: Call, name: str = ""
    ) -> dict[str, t.Any]:
        try:
            return content_mod.to_prompt_result(value, description)
        except Unconvertible as exc:
            response = view_answer(value)
            if response is not None:  # a view decorator's refusal, or jsonify() by habit
                raise view_answer_error(response, f"Prompt {name!r}", "prompt") from None
            message = f"Prompt {name!r} returned a value that cannot be sent: {exc}"
        except Exception as exc:
            text = self.internal_error(exc, f"prompt {name!r}", call.state)
            raise MCPError(INTERNAL_ERROR, text) from None
        logger.error("%s", message)
        raise MCPError(INTERNAL_ERROR, message)

    # -- completion --------------------------------------------------------------

    def completion_complete(self, call: Call) -> dict[str, t.Any]:
        ref = _optional_dict(call.params, "ref")
        argument = _optional_dict(call.params, "argument")
        kind = ref.get("type")
        if kind == "ref/prompt":
            target = _require_str(ref, "name")
            key = "prompt"
        elif kind == "ref/resource":
            target = _require_str(ref, "uri")
            _check_uri_length(target, call.state.settings.max_uri_length)
            key = "resource"
        else:
            raise InvalidParams("Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'.")
        arg_name = _require_str(argument, "name")
        value = argument.get("value")
        if not isinstance(value, str):  # required: "" when nothing is typed yet
            raise InvalidParams(
                'Invalid params: argument.value is required and must be a string ("" when '
                "nothing is typed yet)."
            )
        context_args = _context_arguments(call.params)
        if key == "prompt":
            owner: t.Any = self.registry.prompts.get(target)
            if owner is None:
                raise InvalidParams(
                    f"Unknown prompt: {target!r}. Call prompts/list for the available prompts."
                )
        else:
            owner = self.registry.templates.get(target) or self.registry.resources.get(target)
            if owner is None:
                raise InvalidParams(
                    f"Unknown resource template: {target!r}. Call resources/templates/list for "
                    "the available templates."
                )
        handler = self.registry.completions.get(
            (key, target, arg_name)
        ) or self.registry.completions.get((key, target, ""))
        if handler is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        self.authorize(owner.scopes, call)
        fn, context_param = handler
        try:
            found = self.call_user(fn, call, context_param, (arg_name, value, context_args))
        except (ResourceNotFound, HTTPException) as exc:
            raise self.handler_error(exc, call, "completion") from None
        except (MCPError, RequestCancelled, BackendUnavailable):
            raise
        except Exception as exc:
            text = self.internal_error(exc, "completion", call.state)
            raise MCPError(INTERNAL_ERROR, text) from None
        return {"completion": _completion(found)}


def _context_arguments(params: dict[str, t.Any]) -> dict[str, str]:
    """Return ``context.arguments`` of a ``completion/complete``: names to string values.

    The schema types it ``{ [key: string]: string }``, the values a prompt or a template
    resolved earlier: anything else reached the completion handler as it was sent.
    """
    context = _optional_dict(params, "context")
    arguments = context.get("arguments")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise InvalidParams(
            "Invalid params: context.arguments must be an object of argument names to string "
            "values (those already resolved)."
        )
    return arguments


def _completion(found: t.Any) -> dict[str, t.Any]:
    """Return the ``completion`` of a result: at most 100 values, ``hasMore`` if any were cut."""
    if isinstance(found, dict):
        values = [str(v) for v in found.get("values", [])]
        total = found.get("total", len(values))
        has_more = len(values) > 100 or bool(found.get("hasMore", False))
    else:
        values = [str(v) for v in (found or [])]
        total = len(values)
        has_more = total > 100
    return {"values": values[:100], "total": total, "hasMore": has_more}


__all__ = [
    "CoreMethods",
]
