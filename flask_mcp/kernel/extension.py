"""The extension seam: :class:`Extension`, what every protocol extension is written against.

An extension has an identifier (``"{vendor-prefix}/{name}"``), a capability advertised
under ``capabilities.extensions[id]`` (in ``initialize`` and ``server/discover``), request
methods routed like the core ones in both eras and over stdio, keyword options of
``@mcp.tool(...)`` with what they add to a tool's ``_meta``, and hooks:
:meth:`Extension.setup` (once, from ``mcp.add_extension``), :meth:`Extension.check_app`
and :meth:`Extension.init_app` (for each app), :meth:`Extension.register_blueprint` (for
each blueprint registered, with what undoes it) and :meth:`Extension.intercept_tool_call`
(around each tool run).
:class:`ExtensionSet` is the server's side: it checks that no two extensions claim one
identifier, method or tool option and wires each one in. See :doc:`/extensions`.
"""

from __future__ import annotations

import inspect
import re
import typing as t

from .. import protocol
from ..errors import INTERNAL_ERROR
from ..errors import MISSING_CLIENT_CAPABILITY
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..errors import RequestCancelled
from ..server.call import Call
from ..server.call import ToolCall
from ..server.call import ToolCallNext
from ..server.call import running_handler
from ..server.context import Context
from .intake import inline_context

if t.TYPE_CHECKING:
    from flask import Flask

    from ..server.blueprints import MCPBlueprint
    from ..server.dispatcher import Dispatcher
    from ..server.registry import Registry

F = t.TypeVar("F", bound=t.Callable[..., t.Any])

#: ``{vendor-prefix}/{name}``: a reverse-DNS prefix, a slash and a name, as the ``_meta`` key
#: rules (2026-07-28 ``basic/index``) have them: each label starts with a letter and ends
#: with a letter or digit, the name begins and ends with a letter or digit.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
EXTENSION_ID = re.compile(rf"^{_LABEL}(?:\.{_LABEL})+/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")

#: The keywords of ``@mcp.tool(...)`` itself: an extension cannot claim them.
CORE_TOOL_OPTIONS = frozenset(
    {
        "name",
        "title",
        "description",
        "input_schema",
        "output_schema",
        "structured_output",
        "annotations",
        "icons",
        "meta",
        "scopes",
        "headers",
        "mime_type",
        "task",
        "prepare",
        "tags",
    }
)


class MethodSpec(t.NamedTuple):
    """What :meth:`Extension.method` records on a handler."""

    #: The JSON-RPC method, e.g. ``"echo/ping"``.
    name: str
    #: The eras it exists in (``"handshake"``, ``"stateless"``); ``None``: both.
    eras: frozenset[str] | None
    #: Whether the handler runs app code (it may then be spawned like ``tools/call``).
    user_code: bool
    #: Whether a caller must have declared the extension (else -32021).
    declared_only: bool = False


class Extension:
    """Base class of a protocol extension: its identifier, capability, methods and hooks.

    .. code-block:: python

        class Echo(Extension):
            id = "com.example/echo"

            def capability(self):
                return {"version": 1}

            @Extension.method("echo/ping")
            def ping(self, params, ctx):
                return {"pong": params.get("x")}

        mcp.add_extension(Echo())
    """

    #: The extension's identifier, ``"{vendor-prefix}/{name}"``.
    id: t.ClassVar[str] = ""
    #: Extra keyword options this extension adds to ``@mcp.tool(...)``.
    tool_options: t.ClassVar[tuple[str, ...]] = ()
    #: The core capability this extension was before it became one, if any (Tasks:
    #: ``"tasks"``, the experimental capability of 2025-11-25): in the handshake era its
    #: :meth:`capability` is advertised as ``capabilities[handshake_capability]`` instead
    #: of ``capabilities.extensions[id]``.
    handshake_capability: t.ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: t.Any) -> None:
        super().__init_subclass__(**kwargs)
        if not EXTENSION_ID.match(cls.id):
            raise TypeError(
                f"{cls.__name__}.id = {cls.id!r} is not an extension identifier: use "
                "'{vendor-prefix}/{name}', for example 'com.example/echo' (each dotted label "
                "of the prefix starts with a letter and ends with a letter or digit; the name "
                "begins and ends with a letter or digit)."
            )

    @staticmethod
    def method(
        name: str,
        *,
        eras: t.Iterable[str] | None = None,
        user_code: bool = False,
        declared_only: bool = False,
    ) -> t.Callable[[F], F]:
        """Mark a method of the extension as the handler of the request ``name``.

        The handler is called as ``handler(params, ctx)`` and returns the result dict.

        :param eras: the eras the method exists in (``"handshake"``, ``"stateless"``);
            default: both.
        :param user_code: the handler runs app code: it may then be spawned, with a
            :class:`~flask_mcp.Context` that can send progress and requests, like
            ``tools/call``.
        :param declared_only: refuse callers that did not declare the extension with
            -32021 (missing required client capability); default: serve every caller,
            the handler asking :meth:`~flask_mcp.Context.client_supports` if it must.
        """

        def decorator(fn: F) -> F:
            fn.__mcp_method__ = MethodSpec(  # type: ignore[attr-defined]
                name, None if eras is None else frozenset(eras), user_code, declared_only
            )
            return fn

        return decorator

    @classmethod
    def methods(cls) -> dict[str, str]:
        """Return the request methods this extension handles, mapped to attribute names."""
        return {spec.name: attribute for attribute, spec in cls.method_specs().items()}

    @classmethod
    def method_specs(cls) -> dict[str, MethodSpec]:
        """Return what ``Extension.method`` recorded on each handler, by attribute name."""
        found: dict[str, MethodSpec] = {}
        for attribute in dir(cls):
            spec = getattr(getattr(cls, attribute, None), "__mcp_method__", None)
            if isinstance(spec, MethodSpec):
                found[attribute] = spec
        return found

    def capability(self, era: str = protocol.HANDSHAKE) -> dict[str, t.Any] | None:
        """Return the settings under ``capabilities.extensions[self.id]`` (None: not advertised).

        Called on every ``initialize`` and ``server/discover``. ``era`` is the era asked
        about (``"handshake"`` or ``"stateless"``); an override may leave it out
        (``def capability(self)``) when its capability is the same in both.
        """
        return {}

    def capability_in(self, era: str) -> dict[str, t.Any] | None:
        """Call :meth:`capability` with ``era`` if the override takes it, else without."""
        if _takes_era(type(self).capability):
            return self.capability(era)
        return self.capability()

    def setup(self, mcp: t.Any) -> None:
        """Declare what the extension adds to ``mcp`` (once, from ``mcp.add_extension``).

        Its tool options are accepted already; its methods and capability are not
        wired in yet. When it, a :meth:`check_app` or an :meth:`init_app` raises, the
        extension is not added, and what it declared on ``mcp`` (tools, resources,
        templates, prompts, completions, middleware, roots hooks) is taken back, and what
        it removed, replaced, enabled or disabled there is put back; what it keeps on
        itself is its own to forget. Another thread's change of ``mcp`` waits until the extension is
        added or taken back (it is never taken back with it): do not wait here for a
        thread that declares on ``mcp``.
        """

    def check_app(self, app: Flask, mcp: t.Any) -> None:
        """Refuse ``app`` (raise) before anything is added to it or to another app.

        ``MCP.init_app`` calls it on every added extension before any
        :meth:`init_app`, and ``mcp.add_extension`` for every app registered already
        before any :meth:`init_app`: a refusal leaves no extension's routes on ``app``,
        nor this extension's on the apps it accepted. Check the declarations and the
        app's configuration here; ``mcp.state(app).settings`` is readable.
        """

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Add what ``app`` needs, such as routes (from ``MCP.init_app``).

        It runs once every :meth:`check_app` accepted ``app``, before ``MCP.init_app``
        registers anything of its own; it should not raise. When it does, the extension
        is not added (or the app not registered), but what the ``init_app`` of the
        extensions (or apps) before it added stays: refuse in :meth:`check_app`.
        """

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None:
        """Check this extension's options of a tool being registered.

        Called for every tool, with the options of :attr:`tool_options` it was given
        (an empty dict when none).

        :raises TypeError, ValueError: the message says how to fix the option.
        """

    def tool_meta(self, tool: t.Any, options: dict[str, t.Any]) -> dict[str, t.Any] | None:
        """Return what to merge into the tool's ``_meta`` in ``tools/list``, or ``None``."""
        return None

    def intercept_tool_call(self, tool_call: ToolCall, call_next: ToolCallNext) -> dict[str, t.Any]:
        """Wrap the run of a ``tools/call``, after the middleware and the validation.

        ``tool_call`` (:class:`~flask_mcp.server.call.ToolCall`) holds the request, the
        tool and its validated arguments; ``call_next(tool_call)`` runs the rest (the
        interceptors of extensions added later, then the tool) and returns the
        ``CallToolResult``. The default runs it. Tasks overrides it to run the rest in a
        task and answer with a ``CreateTaskResult``. An extension that does not override
        it adds nothing to the call.
        """
        return call_next(tool_call)

    def register_blueprint(
        self, mcp: t.Any, blueprint: MCPBlueprint, prefix: str, uri_prefix: str
    ) -> t.Callable[[], None] | None:
        """Declare on ``mcp`` what ``blueprint`` carries for this extension; return its undo.

        ``mcp.register_blueprint(blueprint, prefix=..., uri_prefix=...)`` calls it on each
        added extension that overrides it, in the order they were added, before the
        blueprint's tools, resources and prompts are added (a tool's option may name
        what it declares: MCP Apps' ``ui=`` names a view). ``prefix`` goes before names,
        ``uri_prefix`` (the default already worked out) is the first segment of URIs. What
        the blueprint carries for the extension is in ``blueprint.carried.get(self.id)``
        (what :meth:`MCPBlueprint.carry <flask_mcp.MCPBlueprint.carry>` kept) or on the
        blueprint itself (MCP Apps' ``blueprint.views``).

        Return a function that takes away everything this call added, or ``None`` if it
        added nothing: when a later step fails (another extension's, a name taken on the
        server), the server calls it and raises, so a failed registration leaves nothing
        behind. If this call itself raises, it must have added nothing.
        """
        return None

    def missing(self) -> MCPError:
        """Return the error for a caller that did not declare this extension (-32021)."""
        return MCPError(
            MISSING_CLIENT_CAPABILITY,
            f"Missing required client capability: extension {self.id!r}. Declare it in the "
            f"client's capabilities.extensions (initialize, or _meta "
            f"'io.modelcontextprotocol/clientCapabilities' at 2026-07-28) to call this.",
            {"requiredCapabilities": {"extensions": {self.id: {}}}},
            http_status=400,
        )


def _takes_era(capability: t.Callable[..., t.Any]) -> bool:
    """Tell whether a ``capability`` override takes the era (one parameter after ``self``)."""
    parameters = list(inspect.signature(capability).parameters.values())[1:]
    return any(
        parameter.kind
        in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD, parameter.VAR_POSITIONAL)
        for parameter in parameters
    )


def _route(
    dispatcher: Dispatcher, extension: Extension, attribute: str, spec: MethodSpec
) -> t.Callable[[Call], dict[str, t.Any]]:
    """Return the dispatcher handler that runs one method of ``extension``."""
    handler = getattr(extension, attribute)
    what = f"extension method {spec.name!r}"

    def run(call: Call) -> dict[str, t.Any]:
        ctx: Context = call.ctx if call.ctx is not None else inline_context(call)
        if spec.declared_only and not ctx.client_supports(extension.id):
            raise extension.missing()
        call.context_declared = call.ctx is not None
        token = running_handler.set(call)
        try:
            result = handler(call.params, ctx)
        except (MCPError, RequestCancelled, BackendUnavailable):
            raise
        except Exception as exc:
            raise MCPError(
                INTERNAL_ERROR, dispatcher.internal_error(exc, what, call.state)
            ) from None
        finally:
            running_handler.reset(token)
        if not isinstance(result, dict):
            message = f"The {what} returned {type(result).__name__}, not a result dict."
            raise MCPError(
                INTERNAL_ERROR, dispatcher.internal_error(TypeError(message), what, call.state)
            )
        return result

    return run


class ExtensionSet:
    """The extensions added to one server, and their wiring into its dispatcher and registry.

    :param dispatcher: routes the extensions' methods.
    :param registry: advertises their capabilities and holds their tool options.
    """

    def __init__(self, dispatcher: Dispatcher, registry: Registry) -> None:
        self.dispatcher = dispatcher
        self.registry = registry
        #: The added extensions by identifier, in the order they were added.
        self.by_id: dict[str, Extension] = {}
        #: Which extension serves each extension method.
        self.method_owners: dict[str, Extension] = {}

    def __iter__(self) -> t.Iterator[Extension]:
        return iter(list(self.by_id.values()))

    def __len__(self) -> int:
        return len(self.by_id)

    def add(self, extension: Extension, prepare: t.Callable[[], None] | None = None) -> None:
        """Check ``extension`` against the others, run ``prepare``, then wire it in.

        While ``prepare`` (the server's: ``setup``, ``check_app`` and ``init_app`` per app) runs,
        only the extension's tool options are accepted, so that it may declare tools with
        them; its methods, capability, interceptor and blueprint hook are wired in once it
        returned. When it raises, the tool options are taken back: the extension was
        never visible, and may be added again once fixed.

        :raises TypeError: it is not an :class:`Extension`.
        :raises ValueError: its identifier, a method or a tool option is taken; the
            message names both claimants.
        """
        if not isinstance(extension, Extension):
            raise TypeError(
                f"add_extension() takes an instance of a flask_mcp.Extension subclass, not "
                f"{type(extension).__name__}."
            )
        name = type(extension).__name__
        taken = self.by_id.get(extension.id)
        if taken is not None:
            raise ValueError(
                f"Two extensions have the identifier {extension.id!r}: "
                f"{type(taken).__name__} and {name}. Add each extension once."
            )
        specs = type(extension).method_specs()
        for spec in specs.values():
            owner = self.method_owners.get(spec.name)
            if owner is not None:
                raise ValueError(
                    f"The request method {spec.name!r} is claimed by two extensions: "
                    f"{owner.id} and {extension.id}. Add only one of them."
                )
            if spec.name in self.dispatcher.methods:
                raise ValueError(
                    f"{name} ({extension.id}) claims the request method {spec.name!r}, which "
                    "the server serves already. Give the extension's method another name."
                )
        for option in extension.tool_options:
            if option in CORE_TOOL_OPTIONS:
                raise ValueError(
                    f"{name} ({extension.id}) claims the tool option {option!r}, which is a "
                    "keyword of @mcp.tool() itself. Give the option another name."
                )
            other = self.registry.tool_options.get(option)
            if other is not None:
                raise ValueError(
                    f"The tool option {option!r} is claimed by two extensions: {other.id} "
                    f"and {extension.id}. Add only one of them."
                )
        for option in extension.tool_options:
            self.registry.tool_options[option] = extension
        if prepare is not None:
            try:
                prepare()
            except BaseException:
                for option in extension.tool_options:
                    if self.registry.tool_options.get(option) is extension:
                        del self.registry.tool_options[option]
                raise
        self.by_id[extension.id] = extension
        for attribute, spec in specs.items():
            self.method_owners[spec.name] = extension
            self.dispatcher.add_method(
                spec.name,
                _route(self.dispatcher, extension, attribute, spec),
                eras=spec.eras,
                user_code=spec.user_code,
            )
        self.registry.extension_capabilities[extension.id] = (
            extension.capability_in,
            extension.handshake_capability,
        )
        if type(extension).intercept_tool_call is not Extension.intercept_tool_call:
            self.dispatcher.tool_interceptors.append(extension.intercept_tool_call)
        if type(extension).register_blueprint is not Extension.register_blueprint:
            self.registry.blueprint_hooks.append(extension.register_blueprint)

    def get(self, extension_id: str) -> Extension:
        """Return the extension added with ``extension_id``.

        :raises KeyError: none was added; the message says how to add it.
        """
        try:
            return self.by_id[extension_id]
        except KeyError:
            added = ", ".join(self.by_id) or "none"
            raise KeyError(
                f"No extension {extension_id!r} was added to this server (added: {added}). "
                "Add it with mcp.add_extension(TheExtension())."
            ) from None


__all__ = ["EXTENSION_ID", "Extension", "ExtensionSet", "MethodSpec"]
