"""MCP blueprints: tools, resources, prompts and completions declared without the server.

A :class:`MCPBlueprint` collects declarations in a module of their own, like a
Flask blueprint collects routes; :func:`register_blueprint` copies them into a
server's registry under a name prefix (tools, prompts) and a URI segment
(resources, templates). Registration may happen before or after ``init_app``.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
import typing as t

from flask.helpers import get_root_path

from .. import protocol
from .declarations import Declarations
from .declarations import apply_tool_options
from .declarations import refuse_unknown_options
from .declarations import tagset
from .registry import TOOL_NAME
from .registry import Prompt
from .registry import Registry
from .registry import Resource
from .registry import ResourceTemplate
from .registry import Tool
from .uri_template import URITemplate

if t.TYPE_CHECKING:
    from typing_extensions import Unpack

#: The identifier of the Skills extension, whose declarations a blueprint carries
#: (:meth:`MCPBlueprint.skills_folder`, :meth:`MCPBlueprint.add_skill`,
#: :meth:`MCPBlueprint.dynamic_skill`).
SKILLS_EXTENSION_ID = "io.modelcontextprotocol/skills"
#: The longest ``description`` a skill's ``SKILL.md`` frontmatter may have (the Agent
#: Skills limit, which the Skills extension's frontmatter check uses too).
MAX_SKILL_DESCRIPTION_LENGTH = 1024

F = t.TypeVar("F", bound=t.Callable[..., t.Any])
#: A dynamic skill's function: it returns the skill's files by path, ``str`` or ``bytes``.
P = t.TypeVar("P", bound=t.Callable[[], t.Mapping[str, str | bytes]])


class _ServingOptions(t.TypedDict, total=False):
    """How skills are served, folder or dynamic (the keywords both take)."""

    #: ``False`` serves the skills to clients that know their URIs, without listing them.
    listed: bool
    #: ``ttlMs`` of their reads and ``skills/get`` at 2026-07-28.
    ttl_ms: int | None
    #: Their ``cacheScope``.
    cache_scope: str | None


class DynamicSkillOptions(_ServingOptions, total=False):
    """How a dynamic skill is served (:meth:`flask_mcp.MCP.dynamic_skill`)."""

    #: The ``description`` its ``SKILL.md`` frontmatter has, for ``resources/list``
    #: without calling the function (:meth:`flask_mcp.MCP.dynamic_skill`).
    description: str | None


class SkillOptions(_ServingOptions, total=False):
    """How a folder of skills or one skill is served (:meth:`flask_mcp.MCP.skills_folder`).

    :meth:`flask_mcp.MCP.skills_folder`, :meth:`flask_mcp.MCP.add_skill`, the same
    methods of :class:`~flask_mcp.MCPBlueprint` and
    :meth:`~flask_mcp.extensions.skills.Skills.add_folder` take them as
    ``**options: Unpack[SkillOptions]``, so a type checker checks each keyword.
    """

    #: ``/``-separated segments put before every skill path (``None``: none).
    prefix: str | None


def check_skill_options(face: str, options: t.Mapping[str, t.Any], known: frozenset[str]) -> None:
    """Raise :class:`TypeError` when ``options`` has an unknown keyword or a ``prefix`` or
    ``listed`` of the wrong type, when the skills are declared (not when they are loaded).
    """
    refuse_unknown_keywords(face, options, known)
    prefix = options.get("prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(
            f"{face}() prefix must be a str ('acme/billing') or None, not {type(prefix).__name__}."
        )
    listed = options.get("listed", True)
    if not isinstance(listed, bool):
        raise TypeError(f"{face}() listed must be True or False, not {listed!r}.")


def check_serving_options(ttl_ms: t.Any, cache_scope: t.Any) -> None:
    """Raise :class:`ValueError` when ``ttl_ms`` or ``cache_scope`` of skills is wrong."""
    if cache_scope not in (None, *protocol.CACHE_SCOPES):
        raise ValueError(f"cache_scope must be 'public' or 'private', got {cache_scope!r}.")
    if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms < 0):
        raise ValueError(f"ttl_ms must be an integer >= 0 (milliseconds), got {ttl_ms!r}.")


def check_dynamic_skill_options(options: t.Mapping[str, t.Any]) -> None:
    """Refuse the keywords of a dynamic skill when it is declared, not when it is served.

    What ``mcp.dynamic_skill``, ``bp.dynamic_skill`` and the Skills extension's
    ``add_dynamic`` check, with the same messages: unknown keywords and a
    ``description`` not a ``str`` (:class:`TypeError`), an empty ``description`` or one
    longer than ``MAX_SKILL_DESCRIPTION_LENGTH``, and a wrong ``ttl_ms`` or
    ``cache_scope`` (:class:`ValueError`).
    """
    refuse_unknown_keywords("dynamic_skill", options, DynamicSkillOptions.__optional_keys__)
    description = options.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise TypeError(
                f"description must be a str (the SKILL.md frontmatter's), "
                f"not {type(description).__name__}."
            )
        if not description.strip() or len(description) > MAX_SKILL_DESCRIPTION_LENGTH:
            raise ValueError(
                f"description must be 1 to {MAX_SKILL_DESCRIPTION_LENGTH} characters saying "
                f"what the skill does, got {len(description)}."
            )
    check_serving_options(options.get("ttl_ms"), options.get("cache_scope"))


def refuse_unknown_keywords(
    face: str, options: t.Mapping[str, t.Any], known: frozenset[str]
) -> None:
    """Raise :class:`TypeError` when ``options`` has a keyword not in ``known``.

    A method that keeps ``**options`` for later (at registration, at decoration) checks
    them when called, as an explicit signature would.
    """
    unknown = options.keys() - known
    if unknown:
        raise TypeError(
            f"{face}() got unknown keywords {sorted(unknown)}; it takes {sorted(known)}."
        )


class BlueprintSkills(t.NamedTuple):
    """Skills declared on a blueprint, served by each server it is registered on."""

    #: ``"folder"`` (:meth:`MCPBlueprint.skills_folder`) or ``"skill"`` (``add_skill``).
    kind: t.Literal["folder", "skill"]
    #: The folder, resolved against the blueprint's module.
    path: pathlib.Path
    #: The keywords of ``skills_folder`` / ``add_skill``; their ``prefix`` comes after the
    #: registration's ``uri_prefix``.
    options: SkillOptions


class BlueprintDynamicSkill(t.NamedTuple):
    """A dynamic skill declared on a blueprint (:meth:`MCPBlueprint.dynamic_skill`)."""

    #: Its skill path before the registration's ``uri_prefix``.
    skill_path: str
    #: The function returning its files.
    producer: t.Callable[[], t.Mapping[str, str | bytes]]
    #: The keywords of ``dynamic_skill`` (``description``, ``listed``...).
    options: DynamicSkillOptions


class BlueprintView(t.NamedTuple):
    """An MCP Apps view declared on a blueprint, declared on the server when it is registered."""

    #: Its ``ui://`` URI before the blueprint's ``uri_prefix``.
    uri: str
    #: A template name, or the function returning the HTML.
    source: str | t.Callable[[], str]
    #: The keywords of ``mcp.ui`` / ``mcp.ui_template`` (``csp``, ``name``...).
    options: dict[str, t.Any]


class _BlueprintRegistry(Registry):
    """A registry that refuses new declarations once its blueprint was registered."""

    def __init__(self, blueprint: MCPBlueprint) -> None:
        super().__init__()
        self._blueprint = blueprint

    def _check_open(self) -> None:
        if self._blueprint.registrations:
            raise RuntimeError(
                f"The MCP blueprint {self._blueprint.name!r} was already registered on a server,"
                " which copied its declarations; declare everything before calling"
                " mcp.register_blueprint(), or add it to the server with mcp.add_tool()."
            )

    def add_tool(self, tool: Tool) -> None:
        self._check_open()
        super().add_tool(tool)

    def add_resource(self, resource: Resource) -> None:
        self._check_open()
        super().add_resource(resource)

    def add_template(self, template: ResourceTemplate) -> None:
        self._check_open()
        super().add_template(template)

    def add_prompt(self, prompt: Prompt) -> None:
        self._check_open()
        super().add_prompt(prompt)


class MCPBlueprint(Declarations):
    """A set of tools, resources, prompts and completions to register on a server later.

    Use the same decorators as on :class:`~flask_mcp.MCP`::

        bp = MCPBlueprint("billing", tags={"billing"})

        @bp.tool()
        def pay(invoice: int) -> str: ...

        mcp.register_blueprint(bp, prefix="billing_")   # the tool is "billing_pay"

    :param name: the blueprint's name, for messages.
    :param import_name: the module that defines it (pass ``__name__``); it lets a
        registration made while serving reach the other workers (see
        :doc:`/blueprints`).
    :param tags: added to the tags of every declaration.
    """

    def __init__(
        self, name: str, import_name: str | None = None, *, tags: t.Iterable[str] = ()
    ) -> None:
        self.name = name
        self.import_name = import_name
        self.tags = tagset(tags)
        self.registry = _BlueprintRegistry(self)
        #: (prefix, uri_prefix) of each registration so far.
        self.registrations: list[tuple[str, str]] = []
        #: What the blueprint carries for each extension, by identifier (:meth:`carry`).
        self.carried: dict[str, list[t.Any]] = {}
        #: The MCP Apps views declared with :meth:`ui` and :meth:`ui_template`, by URI.
        self.views: dict[str, BlueprintView] = {}

    def carry(self, extension_id: str, declaration: t.Any) -> None:
        """Keep ``declaration`` for the extension ``extension_id`` of the servers to come.

        Each time the blueprint is registered, the server's extension ``extension_id``
        finds it in :attr:`carried` and declares it under the registration's prefixes
        (:meth:`flask_mcp.Extension.register_blueprint`); a server that has not added
        the extension refuses the blueprint. Skills are carried so.
        """
        t.cast(_BlueprintRegistry, self.registry)._check_open()
        self.carried.setdefault(extension_id, []).append(declaration)

    def skills_folder(self, path: str | os.PathLike[str], **options: Unpack[SkillOptions]) -> None:
        """Serve the skills below ``path`` from the servers this blueprint is registered on.

        As :meth:`flask_mcp.MCP.skills_folder`, under the registration's ``uri_prefix``
        (``skill://billing/refunds/SKILL.md``); a relative ``path`` is relative to the
        blueprint's ``import_name`` module (else to the module calling this).
        """
        self._skills("skills_folder", path, options)

    def add_skill(self, path: str | os.PathLike[str], **options: Unpack[SkillOptions]) -> None:
        """Serve the one skill whose directory is ``path``, as :meth:`skills_folder` does."""
        self._skills("add_skill", path, options)

    def dynamic_skill(
        self, skill_path: str, **options: Unpack[DynamicSkillOptions]
    ) -> t.Callable[[P], P]:
        """Decorate a function returning a skill's files, made on each use (a dynamic skill).

        As :meth:`flask_mcp.MCP.dynamic_skill` (``description=``, ``listed=``,
        ``ttl_ms=``, ``cache_scope=``), served by the servers this blueprint is registered
        on under the registration's ``uri_prefix``: ``bp.dynamic_skill("daily")``
        registered with ``prefix="reports_"`` is ``skill://reports/daily/SKILL.md``.
        Its keywords are checked now, as the server's are, with the same messages.
        """
        t.cast(_BlueprintRegistry, self.registry)._check_open()
        check_dynamic_skill_options(options)

        def decorator(producer: P) -> P:
            self.carry(SKILLS_EXTENSION_ID, BlueprintDynamicSkill(skill_path, producer, options))
            return producer

        return decorator

    def _skills(self, face: str, path: str | os.PathLike[str], options: SkillOptions) -> None:
        caller = sys._getframe(2).f_globals.get("__name__") or "__main__"
        root = pathlib.Path(get_root_path(self.import_name or caller))
        check_skill_options(face, options, SkillOptions.__optional_keys__)
        kind: t.Literal["folder", "skill"] = "folder" if face == "skills_folder" else "skill"
        self.carry(SKILLS_EXTENSION_ID, BlueprintSkills(kind, root / path, options))

    def __repr__(self) -> str:
        return f"<MCPBlueprint {self.name!r}>"

    def check_tool_options(self, options: dict[str, t.Any]) -> None:
        """Keep a tool's extension options (``ui=``...) for the server to check.

        A blueprint does not know the extensions of the servers it will be registered
        on: ``mcp.register_blueprint`` checks the options against them, before adding
        anything.
        """

    # -- MCP Apps views ----------------------------------------------------------------

    def ui(self, uri: str, **options: t.Any) -> t.Callable[[F], F]:
        """Declare an MCP Apps view rendered by the decorated function (see :doc:`/apps`).

        The keywords are those of :meth:`flask_mcp.MCP.ui`. The view is declared on the
        server by ``mcp.register_blueprint``, which checks it, gives its URI the
        blueprint's ``uri_prefix`` and its name the ``prefix``; a tool of the blueprint
        whose ``ui=`` names it follows.
        """

        def decorator(fn: F) -> F:
            self._add_view(BlueprintView(uri, fn, options))
            return fn

        return decorator

    def ui_template(self, uri: str, template: str, **options: t.Any) -> None:
        """Declare an MCP Apps view rendered from a Jinja template; see :meth:`ui`."""
        self._add_view(BlueprintView(uri, template, options))

    def _add_view(self, view: BlueprintView) -> None:
        if isinstance(self.registry, _BlueprintRegistry):
            self.registry._check_open()
        if not isinstance(view.uri, str) or not view.uri.startswith("ui://"):
            raise ValueError(
                f"A view needs a ui:// URI such as 'ui://weather/card' (MCP Apps hosts only "
                f"render ui:// resources), got {view.uri!r}."
            )
        if view.uri in self.views:
            raise ValueError(
                f"The view {view.uri!r} is already declared on the MCP blueprint "
                f"{self.name!r}; give this one another ui:// URI."
            )
        self.views[view.uri] = view


def prefix_uri(uri: str, segment: str) -> str:
    """Insert ``segment`` as the first path segment of ``uri`` (``a://x`` -> ``a://seg/x``).

    A URI without ``//`` gets it after the scheme (``urn:x`` -> ``urn:seg/x``);
    an empty segment leaves the URI unchanged.
    """
    if not segment:
        return uri
    scheme, sep, rest = uri.partition("://")
    if sep:
        return f"{scheme}://{segment}/{rest}"
    scheme, sep, rest = uri.partition(":")
    if not sep:
        raise ValueError(
            f"Cannot prefix the resource URI {uri!r}: it has no scheme; give it one "
            "('scheme://path') or register the blueprint with uri_prefix=''."
        )
    return f"{scheme}:{segment}/{rest}"


def default_uri_prefix(prefix: str) -> str:
    """Return the URI segment made from a name prefix: ``"billing_"`` -> ``"billing"``."""
    return prefix.strip("_-.")


def register_blueprint(
    target: Registry, blueprint: MCPBlueprint, prefix: str = "", uri_prefix: str | None = None
) -> list[tuple[str, str]]:
    """Copy a blueprint's declarations into ``target`` under the prefixes.

    Everything is checked before anything is added: a clash leaves ``target``
    unchanged. Return the (kind, key) pairs added.

    :raises ValueError: a prefixed name is invalid or already taken.
    """
    segment = default_uri_prefix(prefix) if uri_prefix is None else uri_prefix
    source = blueprint.registry
    disabled = source.disabled

    def with_tags(record: t.Any, **changes: t.Any) -> t.Any:
        return dataclasses.replace(record, tags=record.tags | blueprint.tags, **changes)

    # a tool option naming one of the blueprint's views (ui=) follows its uri_prefix
    views = {uri: prefix_uri(uri, segment) for uri in blueprint.views}
    tools = [
        with_tags(
            tool,
            name=prefix + tool.name,
            options={key: _view_uri(value, views) for key, value in tool.options.items()},
        )
        for tool in [*source.tools.values(), *disabled["tools"].values()]
    ]
    refuse_unknown_options(
        target,
        dict.fromkeys(key for tool in tools for key in tool.options),
        f"A tool of the MCP blueprint {blueprint.name!r}",
    )
    prompts = [
        with_tags(prompt, name=prefix + prompt.name)
        for prompt in [*source.prompts.values(), *disabled["prompts"].values()]
    ]
    resources = [
        with_tags(resource, uri=prefix_uri(resource.uri, segment), name=prefix + resource.name)
        for resource in [*source.resources.values(), *disabled["resources"].values()]
    ]
    templates = [
        with_tags(
            record,
            template=URITemplate(prefix_uri(record.uri_template, segment)),
            name=prefix + record.name,
        )
        for record in [*source.templates.values(), *disabled["resourceTemplates"].values()]
    ]
    completions = {
        (
            kind,
            prefix + target_name if kind == "prompt" else prefix_uri(target_name, segment),
            arg,
        ): (entry)
        for (kind, target_name, arg), entry in source.completions.items()
    }
    planned: list[tuple[str, str]] = [
        *(("tools", tool.name) for tool in tools),
        *(("prompts", prompt.name) for prompt in prompts),
        *(("resources", resource.uri) for resource in resources),
        *(("resourceTemplates", record.uri_template) for record in templates),
    ]
    what = {
        "tools": "tool",
        "prompts": "prompt",
        "resources": "resource",
        "resourceTemplates": "resource template",
    }
    for tool in tools:
        if not TOOL_NAME.fullmatch(tool.name):
            raise ValueError(
                f"Cannot register MCP blueprint {blueprint.name!r}: the prefixed tool name "
                f"{tool.name!r} is invalid (1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'); "
                "use a shorter or plainer prefix=."
            )
    clashes = [f"{what[kind]} {key!r}" for kind, key in planned if target._taken(kind, key)] + [
        f"completion {key!r}" for key in completions if key in target.completions
    ]
    if clashes and _registered_here(target, tools, prompts, resources, templates):
        raise ValueError(
            f"MCP blueprint {blueprint.name!r} is already registered on this server with "
            f"prefix={prefix!r}. The server's declarations are shared by every app it is "
            "registered on: call mcp.register_blueprint() once, at import time beside "
            "mcp = MCP(...), not in an app factory; to serve the blueprint twice, register it "
            "with another prefix=."
        )
    if clashes:
        raise ValueError(
            f"Cannot register MCP blueprint {blueprint.name!r} with prefix={prefix!r}: "
            f"{', '.join(clashes)} {'is' if len(clashes) == 1 else 'are'} already registered on "
            "this server. Register the blueprint with another prefix= (and uri_prefix=), or "
            "rename the declarations."
        )
    for tool in tools:  # the server's extensions check the options and add to _meta
        apply_tool_options(target, tool)
    with target.batch():  # one list_changed per kind, not per record
        for tool in tools:
            target.add_tool(tool)
        for prompt in prompts:
            target.add_prompt(prompt)
        for resource in resources:
            target.add_resource(resource)
        for record in templates:
            target.add_template(record)
        target.completions.update(completions)
    hidden = [
        *(prefix + name for name in disabled["tools"]),
        *(prefix + name for name in disabled["prompts"]),
        *(prefix_uri(uri, segment) for uri in disabled["resources"]),
        *(prefix_uri(uri, segment) for uri in disabled["resourceTemplates"]),
    ]
    if hidden:
        target.set_enabled(False, hidden)
    blueprint.registrations.append((prefix, segment))
    return planned


def _registered_here(target: Registry, *planned: list[t.Any]) -> bool:
    """Tell whether every record of a blueprint is on ``target`` already, made by it.

    That is the blueprint registered again with the same prefixes: most often
    ``mcp.register_blueprint()`` called in an app factory, once per app.
    """
    records = [record for group in planned for record in group]
    kinds = ("tools", "prompts", "resources", "resourceTemplates")
    held = target.records()
    for kind, group in zip(kinds, planned, strict=True):
        enabled, disabled = held[kind]
        table = {**enabled, **disabled}
        for record in group:
            key = (
                record.uri_template
                if kind == "resourceTemplates"
                else (record.uri if kind == "resources" else record.name)
            )
            if key not in table or getattr(table[key], "fn", None) is not record.fn:
                return False
    return bool(records)


def _view_uri(value: t.Any, views: dict[str, str]) -> t.Any:
    return views.get(value, value) if isinstance(value, str) else value


__all__ = [
    "MAX_SKILL_DESCRIPTION_LENGTH",
    "SKILLS_EXTENSION_ID",
    "BlueprintDynamicSkill",
    "BlueprintSkills",
    "BlueprintView",
    "MCPBlueprint",
    "default_uri_prefix",
    "prefix_uri",
    "register_blueprint",
]
