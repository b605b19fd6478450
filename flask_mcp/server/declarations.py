"""The decorators and ``add_*``/``remove_*`` methods that declare what a server offers.

:class:`~flask_mcp.MCP` inherits them; they work before and after ``init_app``.
"""

from __future__ import annotations

import inspect
import re
import typing as t

from .. import protocol
from .. import schema as schema_mod
from ..protocol.apps import APP_MIME_TYPE
from .handlers import LOCALNS
from .handlers import Handler
from .handlers import context_parameter
from .handlers import describe_doc
from .handlers import handler_entry
from .prompt_arguments import prompt_signature
from .registry import Prompt
from .registry import Registry
from .registry import Resource
from .registry import ResourceTemplate
from .registry import Tool
from .registry import header_params_of
from .resource_security import DEFAULT_RESOURCE_SECURITY
from .resource_security import ResourceSecurity
from .tool_checks import check_tool
from .uri_template import URITemplate

F = t.TypeVar("F", bound=t.Callable[..., t.Any])

_MEDIA_TYPE = re.compile(r"[\w.+-]+/[\w.+-]+(\s*;.*)?")


def tagset(tags: t.Iterable[str]) -> frozenset[str]:
    """Return ``tags`` as a frozenset; a single string is one tag, not its letters."""
    return frozenset((tags,) if isinstance(tags, str) else tags)


def _not_called(decorator: str) -> TypeError:
    return TypeError(
        f"@mcp.{decorator} needs the resource's URI: write @mcp.{decorator}('scheme://path') "
        "or a template such as @mcp.resource('users://{user_id}'). A resource is read by its "
        "URI, so it cannot default to the function's name."
    )


def refuse_unknown_options(
    registry: Registry, options: t.Iterable[str], what: str = "@mcp.tool()"
) -> None:
    """Refuse tool options that no extension of ``registry`` defines.

    :raises TypeError: the message names the options the extensions define.
    """
    unknown = [key for key in options if key not in registry.tool_options]
    if unknown:
        known = ", ".join(
            f"{option!r} ({owner.id})" for option, owner in registry.tool_options.items()
        )
        raise TypeError(
            f"{what} got unknown option(s) {', '.join(map(repr, unknown))}. "
            + (
                f"The added extensions define: {known}."
                if known
                else "No added extension defines tool options."
            )
            + " Check the spelling, or add the extension that defines it with "
            "mcp.add_extension(...) before declaring the tool."
        )


def apply_tool_options(registry: Registry, tool: Tool) -> None:
    """Let each extension of ``registry`` with tool options check ``tool`` and add to ``_meta``."""
    owners = {id(owner): owner for owner in registry.tool_options.values()}
    for owner in owners.values():
        mine = {key: tool.options[key] for key in owner.tool_options if key in tool.options}
        owner.check_tool(tool, mine)
        extra = owner.tool_meta(tool, mine)
        if extra:
            tool.meta = {**(tool.meta or {}), **extra}


class Declarations:
    """Declaring tools, resources, templates, prompts and completions."""

    registry: Registry

    # -- declarations --------------------------------------------------------------

    @t.overload
    def tool(self, name: F, /) -> F: ...

    @t.overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: t.Any = None,
        output_schema: t.Any = None,
        structured_output: bool | None = None,
        annotations: dict[str, t.Any] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        headers: t.Mapping[str, str] | None = None,
        mime_type: str | None = None,
        task: str = "forbidden",
        prepare: t.Callable[..., t.Any] | None = None,
        tags: t.Iterable[str] = (),
        **options: t.Any,
    ) -> t.Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: t.Any = None,
        output_schema: t.Any = None,
        structured_output: bool | None = None,
        annotations: dict[str, t.Any] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        headers: t.Mapping[str, str] | None = None,
        mime_type: str | None = None,
        task: str = "forbidden",
        prepare: t.Callable[..., t.Any] | None = None,
        tags: t.Iterable[str] = (),
        **options: t.Any,
    ) -> F | t.Callable[[F], F]:
        """Register a function as a tool and return it unchanged.

        Use it bare (``@mcp.tool``), with the tool's name (``@mcp.tool("add")``)
        or with keywords (``@mcp.tool(name="add", title="Add")``); the name
        defaults to the function's.

        The input schema comes from the type hints, or from ``input_schema``: a
        marshmallow schema or a raw JSON Schema dict published unchanged. With
        an explicit schema the function receives the arguments as one dict.
        The output schema comes from the return annotation or ``output_schema``;
        ``structured_output=False`` turns it off. ``headers`` maps argument
        names to ``Mcp-Param-*`` header names (``{"region": "Region"}``); it
        adds ``x-mcp-header`` to those properties, which 2026-07-28 clients
        mirror into headers and the server checks on every call.
        ``mime_type`` is the media type of the ``bytes`` the tool returns:
        ``image/*`` and ``audio/*`` give image and audio blocks, any other type an
        embedded resource with a ``blob``.
        ``task`` says whether the tool runs as a task (see :doc:`tasks`):
        ``"forbidden"`` (default), ``"optional"`` or ``"required"``; ``prepare``
        is a function of the request's ``Context`` that runs in the request
        before the task is created (it may ask the client, through multi-round
        requests at 2026-07-28); the handler finds its return value in
        ``ctx.prepared``. ``tags`` label the tool for
        :meth:`~flask_mcp.MCP.enable` and :meth:`~flask_mcp.MCP.disable`.
        """
        tool_name = None if callable(name) else name

        def decorator(fn: F) -> F:
            self.add_tool(
                fn,
                name=tool_name,
                title=title,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
                structured_output=structured_output,
                annotations=annotations,
                icons=icons,
                meta=meta,
                scopes=scopes,
                headers=headers,
                mime_type=mime_type,
                task=task,
                prepare=prepare,
                tags=tags,
                **options,
            )
            return fn

        return decorator(name) if callable(name) else decorator

    def check_tool_options(self, options: dict[str, t.Any]) -> None:
        """Refuse keyword options of ``@mcp.tool(...)`` that no added extension defines.

        :raises TypeError: the message names the options the extensions define.
        """
        refuse_unknown_options(self.registry, options)

    def add_tool(
        self,
        fn: Handler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: t.Any = None,
        output_schema: t.Any = None,
        structured_output: bool | None = None,
        annotations: dict[str, t.Any] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        headers: t.Mapping[str, str] | None = None,
        mime_type: str | None = None,
        task: str = "forbidden",
        prepare: t.Callable[..., t.Any] | None = None,
        tags: t.Iterable[str] = (),
        **options: t.Any,
    ) -> Tool:
        """Register a tool at any time; clients are told the list changed.

        :raises ValueError: an ``x-mcp-header`` annotation breaks the spec's rules, or
            ``mime_type`` is not a media type.
        :raises TypeError: an option is not defined by any added extension.
        """
        self.check_tool_options(options)
        if task not in ("forbidden", "optional", "required"):
            raise ValueError(f"task must be 'forbidden', 'optional' or 'required', got {task!r}.")
        if mime_type is not None and (
            not isinstance(mime_type, str) or not _MEDIA_TYPE.fullmatch(mime_type)
        ):
            raise ValueError(
                f"mime_type must be a media type such as 'image/png', got {mime_type!r}."
            )
        entry = handler_entry(fn, "tool", name or fn.__name__)
        ctx_param = context_parameter(fn)
        exclude = {ctx_param} if ctx_param else set()
        spec = schema_mod.input_spec(input_schema, fn, exclude=exclude, localns=LOCALNS)
        header_params = header_params_of(spec.schema, headers, name or fn.__name__)
        if output_schema is not None:
            output = schema_mod.output_spec_from_schema(output_schema)
        elif structured_output is False:
            output = None
        else:
            output = schema_mod.output_spec_from_function(fn, localns=LOCALNS)
        check_tool(
            fn,
            name or fn.__name__,
            exclude=exclude,
            derived_input=input_schema is None,
            has_output=output is not None
            or output_schema is not None
            or structured_output is False,
            localns=LOCALNS,
        )
        tool = Tool(
            name=name or fn.__name__,
            fn=entry,
            input=spec,
            output=output,
            description=description if description is not None else describe_doc(fn),
            title=title,
            annotations=annotations,
            icons=icons,
            meta=meta,
            scopes=tuple(scopes),
            context_param=ctx_param,
            call_style="kwargs" if input_schema is None else "dict",
            header_params=header_params,
            mime_type=mime_type,
            task=task,
            prepare=prepare,
            tags=tagset(tags),
            options=dict(options),
        )
        self._apply_extensions(tool)
        self.registry.add_tool(tool)
        return tool

    def _apply_extensions(self, tool: Tool) -> None:
        """Let each extension with tool options check the tool and add to its ``_meta``."""
        apply_tool_options(self.registry, tool)

    def remove_tool(self, name: str) -> bool:
        """Remove a tool; clients are told the list changed."""
        return self.registry.remove("tools", name)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: dict[str, t.Any] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        security: ResourceSecurity | None = DEFAULT_RESOURCE_SECURITY,
        tags: t.Iterable[str] = (),
        listed: bool = True,
    ) -> t.Callable[[F], F]:
        """Register a function as a resource, or as a template if ``uri`` has variables.

        The URI comes first or as ``uri=``; the function is returned unchanged.
        Template variables are passed to the function as keyword arguments.
        ``ttl_ms`` and ``cache_scope`` (``"public"`` or ``"private"``) are the
        caching hints of its 2026-07-28 reads; they default to
        ``MCP_READ_CACHE_TTL_MS`` and ``MCP_READ_CACHE_SCOPE``. Template values
        holding NUL, a ``..`` segment or an absolute path are refused unless
        ``security`` exempts them (``ResourceSecurity(exempt_params={"path"})``)
        or is ``None``. ``listed=False`` serves it to ``resources/read`` but leaves
        it out of ``resources/list`` (``resources/templates/list`` for a template).
        """
        if callable(uri):
            raise _not_called("resource")

        def decorator(fn: F) -> F:
            self.add_resource(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                size=size,
                annotations=annotations,
                icons=icons,
                meta=meta,
                scopes=scopes,
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
                security=security,
                tags=tags,
                listed=listed,
            )
            return fn

        return decorator

    def add_resource(
        self,
        fn: Handler,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: dict[str, t.Any] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        security: ResourceSecurity | None = DEFAULT_RESOURCE_SECURITY,
        tags: t.Iterable[str] = (),
        listed: bool = True,
    ) -> Resource | ResourceTemplate:
        """Register a resource or template at any time; clients are told the list changed.

        :raises ValueError: a bad caching hint, or a template served as
            ``text/html;profile=mcp-app`` (an MCP Apps view has a fixed URI).
        """
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms < 0):
            raise ValueError(f"ttl_ms must be an integer >= 0 (milliseconds), got {ttl_ms!r}.")
        if cache_scope not in (None, *protocol.CACHE_SCOPES):
            raise ValueError(f"cache_scope must be 'public' or 'private', got {cache_scope!r}.")
        template = URITemplate(uri)
        ctx_param = context_parameter(fn)
        common: dict[str, t.Any] = {
            "name": name or fn.__name__,
            "fn": handler_entry(fn, "resource", uri),
            "description": description if description is not None else describe_doc(fn),
            "title": title,
            "mime_type": mime_type,
            "annotations": annotations,
            "icons": icons,
            "meta": meta,
            "scopes": tuple(scopes),
            "context_param": ctx_param,
            "ttl_ms": ttl_ms,
            "cache_scope": cache_scope,
            "tags": tagset(tags),
            "listed": listed,
        }
        if not template.is_template:
            resource = Resource(uri=uri, size=size, **common)
            self.registry.add_resource(resource)
            return resource
        if mime_type == APP_MIME_TYPE:
            raise ValueError(
                f"The resource template {uri!r} is served as {APP_MIME_TYPE!r}, the media type "
                "of MCP Apps views, but a view is one fixed document that tools name in "
                "_meta.ui.resourceUri (ui=), and hosts never expand a template to render one. "
                "Declare the view at a fixed URI with @mcp.ui('ui://...') and pass the data "
                "through the tool's result; a template that serves data takes another "
                "mime_type."
            )
        params = inspect.signature(fn).parameters
        accepts_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        by_name = {n for n, p in params.items() if p.kind in named}
        missing = [v for v in template.variables if v not in by_name and not accepts_any]
        if missing:
            raise TypeError(
                f"The function {fn.__name__!r} for template {uri!r} must accept the template "
                f"variables as keyword arguments; missing: {', '.join(missing)}. Add them as"
                " parameters, not positional-only ones (before '/')."
            )
        if security is not None:
            security.check_template(template)
        record = ResourceTemplate(template=template, security=security, **common)
        self.registry.add_template(record)
        return record

    def remove_resource(self, uri: str) -> bool:
        """Remove a resource or template; clients are told the list changed."""
        return self.registry.remove("resources", uri) or self.registry.remove(
            "resourceTemplates", uri
        )

    @t.overload
    def prompt(self, name: F, /) -> F: ...

    @t.overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        arguments: list[dict[str, t.Any]] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        tags: t.Iterable[str] = (),
    ) -> t.Callable[[F], F]: ...

    def prompt(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        arguments: list[dict[str, t.Any]] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        tags: t.Iterable[str] = (),
    ) -> F | t.Callable[[F], F]:
        """Register a function as a prompt and return it unchanged.

        Arguments come from its signature. Use it bare (``@mcp.prompt``), with
        the name (``@mcp.prompt("review")``) or with keywords.
        """
        prompt_name = None if callable(name) else name

        def decorator(fn: F) -> F:
            self.add_prompt(
                fn,
                name=prompt_name,
                title=title,
                description=description,
                arguments=arguments,
                icons=icons,
                meta=meta,
                scopes=scopes,
                tags=tags,
            )
            return fn

        return decorator(name) if callable(name) else decorator

    def add_prompt(
        self,
        fn: Handler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        arguments: list[dict[str, t.Any]] | None = None,
        icons: list[dict[str, t.Any]] | None = None,
        meta: dict[str, t.Any] | None = None,
        scopes: t.Sequence[str] = (),
        tags: t.Iterable[str] = (),
    ) -> Prompt:
        """Register a prompt at any time; clients are told the list changed."""
        ctx_param = context_parameter(fn)
        prompt_name = name or fn.__name__
        signature = prompt_signature(
            fn, {ctx_param} if ctx_param else set(), prompt_name, localns=LOCALNS
        )
        prompt = Prompt(
            name=prompt_name,
            fn=handler_entry(fn, "prompt", prompt_name),
            arguments=arguments if arguments is not None else signature.arguments,
            converters=signature.converters,
            description=description if description is not None else describe_doc(fn),
            title=title,
            icons=icons,
            meta=meta,
            scopes=tuple(scopes),
            context_param=ctx_param,
            tags=tagset(tags),
        )
        self.registry.add_prompt(prompt)
        return prompt

    def remove_prompt(self, name: str) -> bool:
        """Remove a prompt; clients are told the list changed."""
        return self.registry.remove("prompts", name)

    def completion(self, kind: str, target: str, argument: str | None = None) -> t.Callable[[F], F]:
        """Register argument completion for a prompt or a resource template.

        The function is called as ``fn(argument_name, value, context_arguments)``
        and returns a list of strings (capped at 100) or a ``{values, total,
        hasMore}`` dict. A parameter annotated with :class:`~flask_mcp.Context`
        receives the request's context, as a tool's does.

        :param kind: ``"prompt"`` or ``"resource"``.
        :param target: the prompt name or the template text.
        :param argument: complete only this argument (default: all).
        """
        if kind not in ("prompt", "resource"):
            raise ValueError("The completion kind must be 'prompt' or 'resource'.")

        def decorator(fn: F) -> F:
            entry = handler_entry(fn, "completion", f"{kind} {target}")
            key = (kind, target, argument or "")
            with self.registry.changing:
                self.registry.completions[key] = (entry, context_parameter(fn))
            return fn

        return decorator


__all__ = [
    "Declarations",
    "apply_tool_options",
    "refuse_unknown_options",
    "tagset",
]
