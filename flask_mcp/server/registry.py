"""Records of the tools, resources, templates, prompts and completions a server offers."""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import dataclasses
import re
import threading
import typing as t

from .. import schema as schema_mod
from ..errors import InvalidParams
from ..protocol.headers import validate_x_mcp_header_schema
from .handlers import Handler
from .resource_security import DEFAULT_RESOURCE_SECURITY
from .resource_security import ResourceSecurity
from .uri_template import URITemplate

#: The spec's tool name: 1-128 characters of A-Z, a-z, 0-9, ``_``, ``-`` and ``.``; use
#: ``fullmatch`` (``$`` would also match before a trailing newline).
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def _clean(mapping: dict[str, t.Any]) -> dict[str, t.Any]:
    return {k: v for k, v in mapping.items() if v is not None}


class ToolOptionsOwner(t.Protocol):
    """An extension that adds keyword options to ``@mcp.tool(...)`` (``flask_mcp.Extension``)."""

    id: t.ClassVar[str]
    tool_options: t.ClassVar[tuple[str, ...]]

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None: ...

    def tool_meta(self, tool: t.Any, options: dict[str, t.Any]) -> dict[str, t.Any] | None: ...


#: An extension's part of ``mcp.register_blueprint``: ``hook(mcp, blueprint, prefix,
#: uri_prefix)`` declares what the blueprint carries for it and returns what undoes that.
BlueprintHook = t.Callable[[t.Any, t.Any, str, str], t.Callable[[], None] | None]


@dataclasses.dataclass(eq=False)
class Tool:
    """A registered tool."""

    name: str
    fn: Handler
    input: schema_mod.InputSpec
    output: schema_mod.OutputSpec | None
    description: str | None = None
    title: str | None = None
    annotations: dict[str, t.Any] | None = None
    icons: list[dict[str, t.Any]] | None = None
    meta: dict[str, t.Any] | None = None
    scopes: tuple[str, ...] = ()
    context_param: str | None = None
    #: "kwargs": arguments are keyword arguments; "dict": one positional dict.
    call_style: str = "kwargs"
    extra: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    #: The arguments mirrored into ``Mcp-Param-*`` headers (``x-mcp-header``).
    header_params: tuple[t.Any, ...] = ()
    #: The media type of the bytes the tool returns (``mime_type=``), if any.
    mime_type: str | None = None
    #: Whether it runs as a task: ``"forbidden"``, ``"optional"`` or ``"required"``.
    task: str = "forbidden"
    #: Runs in the request before the task is created (it may ask the client through MRTR).
    prepare: t.Callable[..., t.Any] | None = None
    #: Labels for :meth:`~flask_mcp.MCP.enable` and :meth:`~flask_mcp.MCP.disable`; not published.
    tags: frozenset[str] = frozenset()
    #: The keyword options of extensions given to ``@mcp.tool(...)``, by option name.
    options: dict[str, t.Any] = dataclasses.field(default_factory=dict)

    def describe(self) -> dict[str, t.Any]:
        """Return the ``Tool`` object published by ``tools/list``."""
        data: dict[str, t.Any] = {"name": self.name}
        if self.title is not None:
            data["title"] = self.title
        data["description"] = self.description or ""
        data["inputSchema"] = self.input.schema
        if self.output is not None:
            data["outputSchema"] = self.output.schema
        data.update(
            _clean({"annotations": self.annotations, "icons": self.icons, "_meta": self.meta})
        )
        if self.task != "forbidden":
            data["execution"] = {"taskSupport": self.task}
        data.update(self.extra)
        return data


def header_params_of(
    schema: dict[str, t.Any], headers: t.Mapping[str, str] | None, tool: str
) -> tuple[t.Any, ...]:
    """Annotate ``schema`` with ``headers`` and return its validated ``x-mcp-header`` params.

    :raises ValueError: an annotation breaks the rules of ``server/tools.mdx``
        (clients drop such a tool, so it is refused at registration), or names a
        header with an underscore, which WSGI servers drop before the app sees it.
    """
    properties = schema.get("properties")
    for argument, header in (headers or {}).items():
        if not isinstance(properties, dict) or not isinstance(properties.get(argument), dict):
            raise ValueError(
                f"Tool {tool!r}: headers= names {argument!r}, which is not a property of its"
                " input schema; use the name of one of its arguments."
            )
        properties[argument] = {**properties[argument], "x-mcp-header": header}
    try:
        params = tuple(validate_x_mcp_header_schema(schema))
    except ValueError as exc:
        raise ValueError(f"Tool {tool!r} cannot be registered: {exc}") from None
    for param in params:
        if "_" in param.header:
            raise ValueError(
                f"Tool {tool!r} cannot be registered: its 'x-mcp-header' value"
                f" {param.header!r} (on {'.'.join(param.path)!r}) has an underscore, and"
                " WSGI servers (Gunicorn, Werkzeug) drop request headers whose names have"
                f" one, so {param.header_name} would never reach the server and every call"
                f" would fail as a header mismatch. Use {param.header.replace('_', '-')!r}."
            )
    return params


@dataclasses.dataclass(eq=False)
class Resource:
    """A registered static resource."""

    uri: str
    name: str
    fn: Handler
    description: str | None = None
    title: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, t.Any] | None = None
    icons: list[dict[str, t.Any]] | None = None
    meta: dict[str, t.Any] | None = None
    scopes: tuple[str, ...] = ()
    context_param: str | None = None
    #: ``ttlMs`` and ``cacheScope`` of its reads (``None``: the app's defaults).
    ttl_ms: int | None = None
    cache_scope: str | None = None
    tags: frozenset[str] = frozenset()
    #: ``False``: served by ``resources/read`` but left out of ``resources/list``.
    listed: bool = True

    def describe(self) -> dict[str, t.Any]:
        """Return the ``Resource`` object published by ``resources/list``."""
        return _clean(
            {
                "uri": self.uri,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
                "size": self.size,
                "annotations": self.annotations,
                "icons": self.icons,
                "_meta": self.meta,
            }
        )


@dataclasses.dataclass(eq=False)
class ResourceTemplate:
    """A registered RFC 6570 resource template."""

    template: URITemplate
    name: str
    fn: Handler
    description: str | None = None
    title: str | None = None
    mime_type: str | None = None
    annotations: dict[str, t.Any] | None = None
    icons: list[dict[str, t.Any]] | None = None
    meta: dict[str, t.Any] | None = None
    scopes: tuple[str, ...] = ()
    context_param: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    security: ResourceSecurity | None = DEFAULT_RESOURCE_SECURITY
    tags: frozenset[str] = frozenset()
    #: ``False``: served by ``resources/read`` but left out of ``resources/templates/list``.
    listed: bool = True

    @property
    def uri_template(self) -> str:
        """The template text."""
        return self.template.template

    def describe(self) -> dict[str, t.Any]:
        """Return the ``ResourceTemplate`` object published by ``resources/templates/list``."""
        return _clean(
            {
                "uriTemplate": self.uri_template,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
                "annotations": self.annotations,
                "icons": self.icons,
                "_meta": self.meta,
            }
        )


@dataclasses.dataclass(eq=False)
class Prompt:
    """A registered prompt."""

    name: str
    fn: Handler
    arguments: list[dict[str, t.Any]]
    description: str | None = None
    title: str | None = None
    icons: list[dict[str, t.Any]] | None = None
    meta: dict[str, t.Any] | None = None
    scopes: tuple[str, ...] = ()
    context_param: str | None = None
    tags: frozenset[str] = frozenset()
    #: Converters of the typed arguments' strings, by name (see :mod:`.prompt_arguments`).
    converters: dict[str, t.Callable[[str], t.Any]] = dataclasses.field(default_factory=dict)

    def describe(self) -> dict[str, t.Any]:
        """Return the ``Prompt`` object published by ``prompts/list``."""
        data = _clean(
            {"name": self.name, "title": self.title, "description": self.description or ""}
        )
        if self.arguments:
            data["arguments"] = self.arguments
        data.update(_clean({"icons": self.icons, "_meta": self.meta}))
        return data


Kind = t.Literal["tools", "resources", "resourceTemplates", "prompts"]
KINDS: tuple[Kind, ...] = ("tools", "resources", "resourceTemplates", "prompts")
#: The list whose change a kind's change is (``notifications/<list>/list_changed``): the
#: templates belong to the resources'.
LIST_OF: dict[str, str] = {"resourceTemplates": "resources"}


class Registry:
    """The offerings of one :class:`~flask_mcp.MCP`, in registration order.

    Lists are prebuilt and cached until something changes; each of ``listeners``
    is called with the list that changed (``"tools"``, ``"resources"``, templates
    included, or ``"prompts"``) after an addition, removal, enabling or disabling.
    """

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        #: (kind, target, argument or "") -> (function, name of its Context parameter)
        self.completions: dict[tuple[str, str, str], tuple[Handler, str | None]] = {}
        self._lock = threading.Lock()
        #: Held by each change of the server's declarations (a record, a completion, a
        #: middleware, a hook), and by ``add_extension`` until its extension is added or
        #: its ``setup`` taken back: a change of another thread waits, and is never undone.
        self.changing = threading.RLock()
        self._cache: dict[str, list[dict[str, t.Any]]] = {}
        self.listeners: list[t.Callable[[str], None]] = []
        #: The kinds changed in the current context's :meth:`batch` (per thread or greenlet:
        #: another request's changes are not held back, nor told, by this one's batch).
        self._deferred: contextvars.ContextVar[dict[str, None] | None] = contextvars.ContextVar(
            "mcp_registry_deferred", default=None
        )
        #: Disabled records by kind and key: out of the lists and out of reach until enabled.
        self.disabled: dict[str, dict[str, t.Any]] = {kind: {} for kind in KINDS}
        #: The kinds a record was removed from: their capability stays declared, emptied or not.
        self.removed: set[str] = set()
        #: What the added extensions advertise, by extension id: the capability for an era
        #: (called on every ``initialize`` and ``server/discover``; ``None`` leaves the
        #: extension out) and the core capability it is in the handshake era, if any.
        self.extension_capabilities: dict[
            str, tuple[t.Callable[[str], dict[str, t.Any] | None], str | None]
        ] = {}
        #: The ``@mcp.tool(...)`` keyword options the added extensions define, by option name.
        self.tool_options: dict[str, ToolOptionsOwner] = {}
        #: The ``register_blueprint`` hooks of the added extensions that have one, in the
        #: order they were added: ``hook(mcp, blueprint, prefix, uri_prefix)`` returns what
        #: undoes it, or ``None`` (:meth:`flask_mcp.Extension.register_blueprint`).
        self.blueprint_hooks: list[BlueprintHook] = []
        #: Called as ``check(kind, key)`` before a record is removed; one that raises
        #: refuses the removal (MCP Apps: a view a tool's ``ui=`` names).
        self.removal_checks: list[t.Callable[[str, str], None]] = []
        #: Called as ``check(enabled, moving)`` with the (kind, key) pairs an ``enable`` or
        #: ``disable`` of the face would move, before it moves them; one that raises
        #: refuses the change (MCP Apps: a view a listed tool's ``ui=`` names).
        self.enable_checks: list[t.Callable[[bool, list[tuple[Kind, str]]], None]] = []

    def _taken(self, kind: str, key: str) -> bool:
        return key in self._table(kind) or key in self.disabled[kind]

    def keys(self, kind: str) -> set[str]:
        """Return the keys of every record of ``kind``, enabled or disabled."""
        return {*self._table(kind), *self.disabled[kind]}

    def records(self) -> dict[str, tuple[dict[str, t.Any], dict[str, t.Any]]]:
        """Return a copy of every record by kind: the enabled ones and the disabled ones,
        by key in registration order, for :meth:`restore`."""
        with self._lock:
            return {kind: (dict(self._table(kind)), dict(self.disabled[kind])) for kind in KINDS}

    def restore(self, records: dict[str, tuple[dict[str, t.Any], dict[str, t.Any]]]) -> None:
        """Put the records back as :meth:`records` returned them: the same record under
        each key, enabled or disabled as it was, in the same order; the listeners hear of
        each list changed."""
        for kind, (enabled, disabled) in records.items():
            table = self._table(kind)
            with self._lock:
                now = (list(table.items()), list(self.disabled[kind].items()))
                then = (list(enabled.items()), list(disabled.items()))
                if [[(k, id(v)) for k, v in part] for part in now] == [
                    [(k, id(v)) for k, v in part] for part in then
                ]:
                    continue
                differing = {id(v): v for part in (*now, *then) for _, v in part}
                table.clear()
                table.update(enabled)
                self.disabled[kind].clear()
                self.disabled[kind].update(disabled)
            self._changed(kind, any(getattr(v, "listed", True) for v in differing.values()))

    def _changed(self, kind: str, listed: bool = True) -> None:
        """Drop the cached list of ``kind``; tell the listeners if a ``listed`` record changed.

        A record served but left out of its list (``listed=False``) changes no list a
        client sees: no ``list_changed`` for it.
        """
        self._cache.pop(kind, None)
        if not listed:
            return
        changed = LIST_OF.get(kind, kind)
        deferred = self._deferred.get()
        if deferred is not None:
            deferred.setdefault(changed)
            return
        for listener in list(self.listeners):
            listener(changed)

    @contextlib.contextmanager
    def batch(self) -> t.Iterator[None]:
        """Tell the listeners once per list changed in the block, at its end."""
        if self._deferred.get() is not None:
            yield
            return
        lists: dict[str, None] = {}
        token = self._deferred.set(lists)
        try:
            yield
        finally:
            self._deferred.reset(token)
            for changed in lists:
                for listener in list(self.listeners):
                    listener(changed)

    def add_tool(self, tool: Tool) -> None:
        """Register a tool.

        :raises ValueError: the name breaks the naming rules or is taken.
        """
        if not TOOL_NAME.fullmatch(tool.name):
            raise ValueError(
                f"Invalid tool name {tool.name!r}: use 1-128 characters of A-Z, a-z, 0-9, "
                "'_', '-' and '.' (pass name=... to the decorator)."
            )
        with self._lock:
            if self._taken("tools", tool.name):
                raise ValueError(
                    f"A tool named {tool.name!r} is already registered; pass a different name=."
                )
            self.tools[tool.name] = tool
        self._changed("tools")

    def add_resource(self, resource: Resource) -> None:
        """Register a static resource; its URI must be unique."""
        with self._lock:
            if self._taken("resources", resource.uri):
                raise ValueError(f"A resource with URI {resource.uri!r} is already registered.")
            self.resources[resource.uri] = resource
        self._changed("resources", resource.listed)

    def add_template(self, template: ResourceTemplate) -> None:
        """Register a resource template; its template text must be unique."""
        with self._lock:
            if self._taken("resourceTemplates", template.uri_template):
                raise ValueError(
                    f"A resource template {template.uri_template!r} is already registered."
                )
            self.templates[template.uri_template] = template
        self._changed("resourceTemplates", template.listed)

    def add_prompt(self, prompt: Prompt) -> None:
        """Register a prompt; its name must be unique."""
        with self._lock:
            if self._taken("prompts", prompt.name):
                raise ValueError(f"A prompt named {prompt.name!r} is already registered.")
            self.prompts[prompt.name] = prompt
        self._changed("prompts")

    def _table(self, kind: str) -> dict[str, t.Any]:
        tables: dict[str, dict[str, t.Any]] = {
            "tools": self.tools,
            "resources": self.resources,
            "resourceTemplates": self.templates,
            "prompts": self.prompts,
        }
        return tables[kind]

    def remove(self, kind: Kind, key: str) -> bool:
        """Remove a tool, resource, template or prompt; tell whether it existed.

        :raises ValueError: a check of :attr:`removal_checks` refuses it; the message
            says what to do first.
        """
        table = self._table(kind)
        if self._taken(kind, key):
            for check in list(self.removal_checks):
                check(kind, key)
        with self._lock:
            record = table.pop(key, None)
            found = record is not None
            hidden = self.disabled[kind].pop(key, None) is not None
        if found or hidden:
            # The sessions were told the capability (and list_changed asks them to list
            # again): its methods answer with an empty list, not "Method not found".
            self.removed.add(kind)
        if found:
            self._changed(kind, getattr(record, "listed", True))
        return found or hidden

    def set_enabled(
        self,
        enabled: bool,
        names: t.Iterable[str] = (),
        tags: t.Iterable[str] = (),
        checked: bool = False,
    ) -> list[tuple[Kind, str]]:
        """Enable or disable the records named in ``names`` or carrying one of ``tags``.

        A name is a tool or prompt name, a resource URI or a template text. A
        disabled record leaves its list and cannot be called, read or completed
        until it is enabled again; its name stays taken. Return the (kind, key)
        pairs that changed state.

        :param checked: run :attr:`enable_checks` on what would move first (the
            face's ``enable`` and ``disable``; not a replay of another worker's).
        :raises ValueError: ``checked`` and a check refuses it; nothing moved.
        """
        wanted, labels = set(names), set(tags)
        moved: list[tuple[Kind, str]] = []
        #: Whether a listed record moved, by kind (an unlisted one changes no list).
        listed: dict[Kind, bool] = {}
        with self._lock:
            moving: list[tuple[Kind, t.Any, t.Any]] = []
            for kind in KINDS:
                source = self.disabled[kind] if enabled else self._table(kind)
                for key, record in list(source.items()):
                    if key in wanted or labels & record.tags:
                        moving.append((kind, key, record))
            if checked:
                pairs = [(kind, key) for kind, key, _ in moving]
                for check in list(self.enable_checks):
                    check(enabled, pairs)
            for kind, key, record in moving:
                source, target = (
                    (self.disabled[kind], self._table(kind))
                    if enabled
                    else (self._table(kind), self.disabled[kind])
                )
                target[key] = source.pop(key)
                moved.append((kind, key))
                listed[kind] = listed.get(kind, False) or getattr(record, "listed", True)
        with self.batch():  # a resource and a template: one change of the resource list
            for kind, changed in listed.items():
                self._changed(kind, changed)
        return moved

    def known(self, name: str) -> bool:
        """Tell whether ``name`` is the key of a record, enabled or not, or one of its tags."""
        for kind in KINDS:
            for table in (self._table(kind), self.disabled[kind]):
                if name in table or any(name in record.tags for record in table.values()):
                    return True
        return False

    def described(self, kind: Kind) -> list[dict[str, t.Any]]:
        """Return the cached list of descriptions for ``kind``."""
        cached = self._cache.get(kind)
        if cached is None:
            table = self._table(kind)
            cached = self._cache[kind] = [
                item.describe() for item in list(table.values()) if getattr(item, "listed", True)
            ]
        return cached

    def capabilities(self, era: str = "handshake") -> dict[str, t.Any]:
        """Return the server capabilities derived from what is registered.

        The core ones are the same in both eras; an extension's may differ by ``era``
        (see :meth:`flask_mcp.Extension.capability`). In the handshake era, one with a
        ``handshake_capability`` goes there (Tasks: ``tasks``), before ``extensions``.
        """
        caps: dict[str, t.Any] = {"logging": {}}
        if self.completions:
            caps["completions"] = {}
        if self._has("prompts"):
            caps["prompts"] = {"listChanged": True}
        if self._has("resources", "resourceTemplates"):
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self._has("tools"):
            caps["tools"] = {"listChanged": True}
        extensions: dict[str, t.Any] = {}
        for extension_id, (capability, core_name) in list(self.extension_capabilities.items()):
            settings = capability(era)
            if settings is None:
                continue
            if core_name is not None and era != "stateless":
                caps[core_name] = settings
            else:
                extensions[extension_id] = settings
        if extensions:
            caps["extensions"] = extensions
        return caps

    def _has(self, *kinds: str) -> bool:
        # A disabled record keeps its capability: it may come back at any time; so does
        # a removed one, once declared to the sessions.
        return any(
            self._table(kind) or self.disabled[kind] or kind in self.removed for kind in kinds
        )

    def provides(self, capability: str) -> bool:
        """Tell whether the server has the capability ``capability`` (``"tools"``...) now."""
        if capability == "tools":
            return bool(self.tools) or bool(self.disabled["tools"]) or "tools" in self.removed
        if capability == "resources":
            return self._has("resources", "resourceTemplates")
        if capability == "prompts":
            return self._has("prompts")
        if capability == "completions":
            return bool(self.completions)
        return True

    def offers(self, method: str) -> bool:
        """Tell whether a method belongs to a capability this server declares."""
        # Every call asks: for tools/call, no split.
        family = "tools" if method == "tools/call" else method.split("/", 1)[0]
        return self.provides("completions" if family == "completion" else family)

    def scoped(self) -> list[str]:
        """Return the names of the tools, resources, templates and prompts that declare scopes."""
        tables = (self.tools, self.resources, self.templates, self.prompts)
        return [name for table in tables for name, record in table.items() if record.scopes]

    def find_resource(self, uri: str) -> tuple[t.Any, dict[str, t.Any]] | None:
        """Return what serves ``uri``: its resource (no variables), else the first template
        matching it and its variables (see :meth:`find_template`); ``None``: nothing.

        :raises InvalidParams: the template's ``security`` refuses a value.
        """
        resource = self.resources.get(uri)
        return (resource, {}) if resource is not None else self.find_template(uri)

    def find_template(self, uri: str) -> tuple[ResourceTemplate, dict[str, t.Any]] | None:
        """Return the first template matching ``uri`` and its variables.

        :raises InvalidParams: a value is refused by the template's ``security``
            (a later template is not tried: it could be more permissive).
        """
        for template in list(self.templates.values()):
            variables = template.template.match(uri)
            if variables is not None:
                refused = template.security and template.security.validate(variables)
                if refused:
                    raise InvalidParams(
                        f"Invalid params: the value of {refused[0]!r} in this URI {refused[1]};"
                        f" the resource template {template.uri_template!r} does not accept NUL"
                        " characters, '..' segments or absolute paths in its values.",
                        {"uri": uri, "parameter": refused[0]},
                    )
                return template, variables
        return None


def encode_cursor(offset: int, kind: str = "o") -> str:
    """Return an opaque cursor for an offset in the list named ``kind``."""
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: t.Any, kind: str = "o") -> int:
    """Return the offset behind a cursor of the list named ``kind``.

    :raises InvalidParams: the cursor was not made by :func:`encode_cursor` for ``kind``
        (a cursor of another list is refused, not read as an offset in this one, and so
        is one changed in any way, even to another spelling of the same offset).
    """
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid cursor: it must be the string from a previous nextCursor.")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, number = raw.rpartition(":")
        offset = int(number)
        if prefix != kind or offset < 0 or encode_cursor(offset, kind) != cursor:
            raise ValueError
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidParams(
            "Invalid cursor: pass the nextCursor of a previous page of the same list unchanged."
        ) from None
    return offset


def paginate(
    items: list[dict[str, t.Any]], cursor: t.Any, page_size: int, kind: str = "o"
) -> tuple[list[dict[str, t.Any]], str | None]:
    """Return one page of ``items`` and the cursor of the next page.

    :param kind: names the list, so that its cursors are refused by any other list.
    """
    offset = 0 if cursor is None else decode_cursor(cursor, kind)
    if offset > len(items):
        raise InvalidParams("Invalid cursor: it points past the end of the list.")
    page = items[offset : offset + page_size] if offset or len(items) > page_size else items
    following = offset + page_size
    return page, encode_cursor(following, kind) if following < len(items) else None


__all__ = [
    "KINDS",
    "LIST_OF",
    "TOOL_NAME",
    "BlueprintHook",
    "Kind",
    "Prompt",
    "Registry",
    "Resource",
    "ResourceTemplate",
    "Tool",
    "decode_cursor",
    "encode_cursor",
    "header_params_of",
    "paginate",
]
