"""The Skills extension (``io.modelcontextprotocol/skills``, SEP-2640) on the extension seam.

:class:`Skills` holds the server's :class:`~.catalog.SkillCatalog` and puts it
on the wire:

- every file of every skill is a resource (``skill://<skill-path>/<file>``),
  read with ``resources/read``; a dynamic skill's files come from a resource
  template under its root;
- ``skills/list`` (paginated), ``skills/get`` (any skill served, listed or not)
  and ``resources/directory/read`` (declared with ``directoryRead``), in both
  protocol eras; at 2026-07-28 the two skill methods carry ``ttlMs`` and
  ``cacheScope`` (they extend ``CacheableResult``: ``skills/list`` takes the
  list settings, ``MCP_CACHE_*``, ``skills/get`` those of reads,
  ``MCP_READ_CACHE_*`` or the skill's own);
- the folders are looked at again, at most every :attr:`Skills.watch_interval`
  seconds, before ``skills/list`` and ``skills/get`` in any mode, and in debug
  mode (``app.debug``, read at each request, as ``flask run --debug`` sets it
  late) before any request that lists or reads resources or skills: added,
  removed and rewritten files change the resources, which sends
  ``notifications/resources/list_changed`` (and
  ``notifications/resources/updated`` to the subscribers of a rewritten
  file). In any mode a read that finds a file changed on disk loads its skill
  again first, so a manifest never describes bytes other than those served,
  on any worker.
"""

from __future__ import annotations

import logging
import os
import pathlib
import sys
import threading
import time
import typing as t

from flask.helpers import get_root_path

from ... import protocol
from ...errors import ResourceNotFound
from ...kernel.extension import Extension
from ...server.blueprints import SKILLS_EXTENSION_ID
from ...server.blueprints import BlueprintDynamicSkill
from ...server.blueprints import BlueprintSkills
from ...server.blueprints import DynamicSkillOptions
from ...server.blueprints import MCPBlueprint
from ...server.blueprints import SkillOptions
from ...server.blueprints import check_dynamic_skill_options
from ...server.blueprints import check_serving_options
from ...server.blueprints import check_skill_options
from ...server.shared_registry import unshared
from .catalog import Change
from .catalog import SkillCatalog
from .catalog import StaleFile
from .errors import Problem
from .errors import SkillError
from .loading import SkillSource
from .model import SKILL_FILE
from .model import Producer
from .model import Skill

if t.TYPE_CHECKING:
    from flask import Flask
    from typing_extensions import Unpack

    from ...server.context import Context
    from ...server.middleware import CallInfo
    from ...server.middleware import CallNext

logger = logging.getLogger("flask_mcp")
P = t.TypeVar("P", bound=Producer)

#: The requests before which debug mode looks at the skill folders again.
WATCHED_METHODS = frozenset(
    {
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/directory/read",
        "skills/list",
        "skills/get",
    }
)
#: Those before which every mode looks: they publish manifests, which must describe the
#: bytes every worker serves, not only those of a worker whose read found a change.
MANIFEST_METHODS = frozenset({"skills/list", "skills/get"})


def caller_root(stacklevel: int) -> pathlib.Path:
    """Return the folder of the module ``stacklevel`` frames up (1: the code calling this).

    Flask resolves ``template_folder`` against the app's root path; a skill
    folder declared in ``app.py`` resolves against the folder of ``app.py`` in
    the same way, whatever the working directory of the server.
    """
    frame = sys._getframe(stacklevel)
    name = frame.f_globals.get("__name__")
    if not name or (name == "__main__" and "__file__" not in frame.f_globals):
        return pathlib.Path(os.getcwd())
    if name == "__main__":
        return pathlib.Path(frame.f_globals["__file__"]).resolve().parent
    return pathlib.Path(get_root_path(name))


def _contents(content: str | bytes, media_type: str) -> dict[str, t.Any]:
    """Return the contents a resource function gives for a skill file: text or blob, typed."""
    if isinstance(content, str):
        return {"text": content, "mimeType": media_type}
    return {"blob": content, "mimeType": media_type}


class Skills(Extension):
    """Serve Agent Skills: folders of instructions and files, as resources with manifests.

    The app declares skills through :class:`~flask_mcp.MCP`
    (``mcp.skills_folder("skills")``, ``mcp.add_skill(path)``), which adds this
    extension; it may also be made and added directly::

        skills = Skills()
        skills.add_folder("skills")
        mcp.add_extension(skills)

    Every declaration loads and checks its skills at once and raises
    :class:`~.errors.SkillError` naming each file and the fix.
    """

    id = SKILLS_EXTENSION_ID
    #: Seconds between two looks at the skill folders in debug mode.
    watch_interval: float = 1.0

    def __init__(self) -> None:
        #: The skills served, their files and directories.
        self.catalog = SkillCatalog()
        self._mcp: t.Any = None
        self._declared: set[str] = set()
        self._last_look = 0.0
        self._looking = threading.RLock()

    def capability(self, era: str = "handshake") -> dict[str, t.Any] | None:
        """Declare the extension with ``directoryRead``: directories can be read.

        Not while no skill is served: a server declaring the extension must declare
        the ``resources`` capability too, which comes with the skills' files.
        """
        return {"directoryRead": True} if self.catalog.skills else None

    # -- declaring -------------------------------------------------------------------

    def add_folder(
        self,
        path: str | os.PathLike[str],
        *,
        stacklevel: int = 1,
        **options: Unpack[SkillOptions],
    ) -> list[Problem]:
        """Serve every skill below ``path``: each ``<dir>/SKILL.md`` is the skill ``<dir>``.

        Directories nest (``acme/billing/refunds/SKILL.md`` is the skill
        ``refunds`` at ``skill://acme/billing/refunds/SKILL.md``). A relative
        ``path`` is relative to the folder of the module calling this.

        :param prefix: ``/``-separated segments put before every skill path
            (``None``, the default: none).
        :param listed: ``False`` serves the skills to clients that know their
            URIs, without listing them in ``skills/list`` and ``resources/list``.
        :param ttl_ms: ``ttlMs`` of the 2026-07-28 reads and ``skills/get`` of
            these skills (default ``MCP_READ_CACHE_TTL_MS``).
        :param cache_scope: their ``cacheScope`` (default ``MCP_READ_CACHE_SCOPE``).
        :param stacklevel: whose module a relative ``path`` is relative to: 1 is
            the caller's (a method calling this for its own caller passes 2).
        :return: notes about the skills (served anyway): unknown frontmatter fields...
        :raises ~flask_mcp.extensions.skills.SkillError: a skill cannot be served.
        :raises TypeError: an unknown keyword, or ``prefix`` not a ``str`` or ``None``,
            or ``listed`` not a ``bool``.
        """
        check_skill_options("skills_folder", options, SkillOptions.__optional_keys__)
        source = SkillSource.at("folder", path, caller_root(stacklevel + 1), **options)
        return self.add_source(source)

    def add_skill(
        self,
        path: str | os.PathLike[str],
        *,
        stacklevel: int = 1,
        **options: Unpack[SkillOptions],
    ) -> list[Problem]:
        """Serve the one skill whose directory is ``path`` (it holds ``SKILL.md``).

        Its skill path is ``prefix`` and the directory's name. A ``SKILL.md``
        deeper in it is a supporting file, not another skill (serve those with
        :meth:`add_folder`). Parameters as for :meth:`add_folder`.
        """
        check_skill_options("add_skill", options, SkillOptions.__optional_keys__)
        source = SkillSource.at("skill", path, caller_root(stacklevel + 1), **options)
        return self.add_source(source)

    def add_dynamic(
        self,
        skill_path: str,
        producer: Producer,
        *,
        listed: bool = True,
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        description: str | None = None,
    ) -> list[Problem]:
        """Serve a skill whose files ``producer()`` returns each time they are needed.

        ``producer`` returns a dict of file paths (``"SKILL.md"``,
        ``"data/today.csv"``) to their content, ``str`` or ``bytes``. Its entry's
        ``resources`` is ``"dynamic"``: hosts cannot check its content against
        digests, and some decline such skills. Its ``SKILL.md`` frontmatter is
        checked on every use; the last segment of ``skill_path`` is its name.

        :param description: the ``description`` its ``SKILL.md`` frontmatter has,
            which its ``SKILL.md`` resource then carries in ``resources/list`` without
            calling ``producer``. A ``SKILL.md`` saying another is not served (the
            function is in error, as when it raises).
        :raises TypeError: ``description`` is not a ``str``.
        :raises ValueError: ``description`` is empty or longer than 1024 characters, or
            ``ttl_ms`` is negative, or ``cache_scope`` is not ``"public"`` or ``"private"``.
        """
        return self.add_source(
            self._dynamic_source(
                skill_path,
                producer,
                listed=listed,
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
                description=description,
            )
        )

    @staticmethod
    def _dynamic_source(
        skill_path: str,
        producer: Producer,
        *,
        listed: bool = True,
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        description: str | None = None,
    ) -> SkillSource:
        """Return the source of a dynamic skill, its keywords checked (see
        :meth:`add_dynamic`): as ``mcp.dynamic_skill`` and ``bp.dynamic_skill`` check them."""
        check_dynamic_skill_options(
            {"description": description, "ttl_ms": ttl_ms, "cache_scope": cache_scope}
        )
        return SkillSource(
            "dynamic",
            skill_path=skill_path.strip("/"),
            producer=producer,
            listed=listed,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            description=description,
        )

    def dynamic(
        self, skill_path: str, **options: Unpack[DynamicSkillOptions]
    ) -> t.Callable[[P], P]:
        """Decorate the function that produces a dynamic skill's files (see :meth:`add_dynamic`).

        Its keywords are checked now, as ``bp.dynamic_skill`` checks them.
        """
        check_dynamic_skill_options(options)

        def decorator(producer: P) -> P:
            self.add_dynamic(skill_path, producer, **options)
            return producer

        return decorator

    def add_source(self, source: SkillSource) -> list[Problem]:
        """Serve the skills of ``source`` (a blueprint's skills arrive this way, prefixed).

        :raises ~flask_mcp.extensions.skills.SkillError: a skill cannot be served.
        """
        check_serving_options(source.ttl_ms, source.cache_scope)
        with self._looking:
            notes = self.catalog.add(source)
            if self._mcp is not None:
                try:
                    self._declare_all()
                except SkillError:  # nothing was declared: serve none of its skills
                    self.catalog.remove([source])
                    raise
        for note in notes:
            logger.info("Skills: %s", note)
        return notes

    def add_sources(
        self, sources: t.Iterable[SkillSource], *, uri_prefix: str = ""
    ) -> list[Problem]:
        """Serve the skills a blueprint declared, under the blueprint's URI prefix.

        ``uri_prefix`` comes first in their skill paths, as a blueprint's
        ``uri_prefix`` does (:meth:`register_blueprint`).
        """
        notes: list[Problem] = []
        for source in sources:
            notes += self.add_source(source.with_prefix(uri_prefix))
        return notes

    def remove_sources(self, sources: t.Iterable[SkillSource]) -> None:
        """Stop serving the skills of ``sources`` (folders, skill directories and dynamic
        skills added here), and their resources.

        What undoes a blueprint's skills when the rest of its registration fails.
        """
        with self._looking:
            before = self.catalog.files
            dynamic = [skill for skill in self.catalog.skills if skill.dynamic]
            self.catalog.remove(sources)
            after = self.catalog.files
            gone = tuple(uri for uri in before if uri not in after and uri in self._declared)
            if self._mcp is not None and gone:
                self._apply(Change(removed=gone))
            left = {skill.uri for skill in self.catalog.skills}
            for skill in dynamic:
                if skill.uri not in left and skill.uri in self._declared:
                    self._forget_dynamic(skill)

    def _forget_dynamic(self, skill: Skill) -> None:
        """Remove the ``SKILL.md`` resource and the file template of a dynamic skill."""
        mcp = self._mcp
        token = unshared.set(True)  # as _apply takes files back: in this worker
        try:
            with mcp.registry.batch():
                self._declared.discard(skill.uri)  # first: check_removal lets them go
                mcp.remove_resource(skill.uri)
                mcp.remove_resource(f"{skill.directory_uri}/{{+file}}")
        finally:
            unshared.reset(token)

    # -- the seam's hooks --------------------------------------------------------------

    def register_blueprint(
        self, mcp: t.Any, blueprint: MCPBlueprint, prefix: str, uri_prefix: str
    ) -> t.Callable[[], None] | None:
        """Serve the skills the blueprint carries (``bp.skills_folder``, ``bp.add_skill``,
        ``bp.dynamic_skill``).

        Under ``uri_prefix``, which comes first in their skill paths as it does in the
        URIs of the blueprint's resources; undone if the registration fails.
        """
        added: list[SkillSource] = []
        try:
            for declared in blueprint.carried.get(self.id, ()):
                if isinstance(declared, BlueprintDynamicSkill):
                    skill_path, producer, dynamic = declared
                    source = self._dynamic_source(skill_path, producer, **dynamic)
                else:
                    kind, path, options = t.cast(BlueprintSkills, declared)
                    source = SkillSource.at(kind, path, path, **options)
                source = source.with_prefix(uri_prefix)
                self.add_source(source)
                added.append(source)
        except BaseException:
            self.remove_sources(added)
            raise
        if not added:
            return None
        return lambda: self.remove_sources(added)

    def setup(self, mcp: t.Any) -> None:
        """Declare the skills' files as resources on ``mcp`` and watch the folders in debug mode.

        The registry refuses to remove or disable one of those resources
        (:meth:`check_removal`, :meth:`check_enabling`).

        :raises ~flask_mcp.extensions.skills.SkillError: a skill would serve a URI
            another resource of ``mcp`` has; nothing is declared or left on ``mcp``,
            and the extension is not added.
        """
        self._mcp = mcp
        try:
            self._declare_all()
        except BaseException:
            self._mcp = None  # not this server's: later declarations are not sent to it
            raise
        mcp.registry.removal_checks.append(self.check_removal)
        mcp.registry.enable_checks.append(self.check_enabling)
        mcp.middleware(self._watch)

    def _owned(self, key: str) -> bool:
        """Tell whether the resource or template ``key`` serves a file of a skill."""
        if key in self._declared:
            return True
        return any(
            key == f"{skill.directory_uri}/{{+file}}"
            for skill in self.catalog.skills
            if skill.dynamic and skill.uri in self._declared
        )

    def _taken(self, key: str) -> bool:
        """Tell whether ``key`` is a resource (URI) or template of the server that serves
        no skill file."""
        if self._mcp is None or key in self._declared:
            return False
        registry = self._mcp.registry
        disabled = registry.disabled
        if key in registry.resources or key in disabled.get("resources", {}):
            return True
        template = key in registry.templates or key in disabled.get("resourceTemplates", {})
        return template and not self._owned(key)

    def _refuse(self, key: str, action: str) -> t.NoReturn:
        raise ValueError(
            f"{key!r} is a file of a skill: {action}, it would read as not found while the "
            "skill's skills/list and skills/get entry still lists it, which hosts take for a "
            "failed verification. A skill's files are served with it: to stop serving a "
            "skill, take its folder away (Skills.remove_sources); to keep it out of the "
            "listings, serve it with listed=False."
        )

    def check_removal(self, kind: str, key: str) -> None:
        """Refuse to remove the resource of a skill file with ``mcp.remove_resource``.

        :raises ValueError: ``key`` serves a file of a skill; the message says what to do.
        """
        if kind in ("resources", "resourceTemplates") and self._owned(key):
            self._refuse(key, "removed")

    def check_enabling(self, enabled: bool, moving: list[tuple[str, str]]) -> None:
        """Refuse to disable the resource of a skill file with ``mcp.disable``.

        :raises ValueError: it would disable a file of a skill; the message says what to do.
        """
        if enabled:
            return
        for kind, key in moving:
            if kind in ("resources", "resourceTemplates") and self._owned(key):
                self._refuse(key, "disabled")

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Nothing per app: the skills are the server's; debug mode is read per request."""

    # -- resources -----------------------------------------------------------------------

    def _declare_all(self) -> None:
        """Declare the resources of every skill file and dynamic skill not declared yet.

        :raises ~flask_mcp.extensions.skills.SkillError: a skill would serve a URI
            another resource of the server has; nothing is declared.
        """
        clashes = self.catalog.resource_clashes(self._taken)
        if clashes:
            raise SkillError(clashes)
        with self._mcp.registry.batch():
            for uri in self.catalog.files:
                if uri not in self._declared:
                    self._declare_file(uri)
            for skill in self.catalog.skills:
                if skill.dynamic and skill.uri not in self._declared:
                    self._declare_dynamic(skill)

    def _declare_file(self, uri: str) -> None:
        declared = self.catalog.files[uri].resource()
        listed = declared.pop("listed")
        options: dict[str, t.Any] = {} if listed else {"listed": False}
        self._mcp.add_resource(self._reader(uri), declared.pop("uri"), **declared, **options)
        self._declared.add(uri)

    def _declare_dynamic(self, skill: Skill) -> None:
        options: dict[str, t.Any] = {} if skill.listed else {"listed": False}
        common = {"ttl_ms": skill.ttl_ms, "cache_scope": skill.cache_scope}
        described = {} if skill.description is None else {"description": skill.description}
        self._mcp.add_resource(
            self._dynamic_reader(skill),
            skill.uri,
            name=skill.name,
            mime_type="text/markdown",
            **described,
            **common,
            **options,
        )
        self._mcp.add_resource(
            self._dynamic_reader(skill),
            f"{skill.directory_uri}/{{+file}}",
            name=f"{skill.name} files",
            description=f"The files of the dynamic skill {skill.uri}.",
            **common,
            **options,
        )
        self._declared.add(skill.uri)

    def _reader(self, uri: str) -> t.Callable[[], dict[str, t.Any]]:
        """Return the resource function that reads the skill file at ``uri`` (on disk)."""
        catalog = self.catalog

        def read() -> dict[str, t.Any]:
            try:
                found = catalog.read(uri)
            except StaleFile:
                self.look(holding=uri)  # serve the file's new bytes under their new manifest
                try:
                    found = catalog.read(uri)
                except StaleFile:
                    why = catalog.broken(uri) or "it changed on disk and cannot be read"
                    raise ResourceNotFound(why) from None
            if found is None:
                raise ResourceNotFound()
            return _contents(*found)

        return read

    def _dynamic_reader(self, skill: Skill) -> t.Callable[..., dict[str, t.Any]]:
        """Return the resource function of a dynamic skill's template ``<root>/{+file}``."""
        catalog = self.catalog

        def read(file: str = SKILL_FILE) -> dict[str, t.Any]:
            found = catalog.read_dynamic(skill, file)
            if found is None:
                raise ResourceNotFound(f"{skill.directory_uri}/{file}")
            return _contents(*found)

        return read

    # -- changes on disk -------------------------------------------------------------

    def _watch(self, call: CallInfo, call_next: CallNext) -> dict[str, t.Any]:
        """Middleware: look at the folders before a request that shows them.

        In debug mode before each of :data:`WATCHED_METHODS`, in any mode before
        ``skills/list`` and ``skills/get`` (:data:`MANIFEST_METHODS`); at most every
        :attr:`watch_interval` seconds.
        """
        method = call.method
        if method in WATCHED_METHODS and (
            method in MANIFEST_METHODS or getattr(call.app, "debug", False)
        ):
            uri = call.params.get("uri")
            if call.method != "resources/read" or (
                isinstance(uri, str) and uri.startswith("skill://")
            ):
                self.look()
        return call_next(call)

    def look(self, *, holding: str | None = None) -> Change:
        """Load again the skills whose files changed on disk, and tell the clients.

        At most every :attr:`watch_interval` seconds, unless ``holding`` names a
        file found changed by a read: its source is loaded again at once.
        Problems of a folder half edited are logged; the skills they are about are not
        served until they load again (:meth:`.SkillCatalog.broken`), the others stay. So
        is a skill that now has the URI of another skill, or a file with the URI of
        another resource of the server, which a startup would refuse.
        """
        now = time.monotonic()
        if holding is None and now - self._last_look < self.watch_interval:
            return Change()
        with self._looking:  # the registry follows the catalog in the catalog's order
            self._last_look = now
            change, problems = self.catalog.refresh(holding, taken=self._taken)
            if change and self._mcp is not None:
                self._apply(change)
        for problem in problems:
            if problem.error:
                logger.error("Skills: the change on disk is not served: %s", problem)
        return change

    def _apply(self, change: Change) -> None:
        mcp = self._mcp
        token = unshared.set(True)  # every worker sees the folder change by itself
        try:
            with mcp.registry.batch():
                for uri in (*change.removed, *change.modified):
                    self._declared.discard(uri)  # first: check_removal lets it go
                    mcp.remove_resource(uri)
                for uri in (*change.modified, *change.added):
                    self._declare_file(uri)
        finally:
            unshared.reset(token)
        for uri in change.modified:
            mcp.notify_resource_updated(uri)

    # -- the extension's methods ---------------------------------------------------------

    def _cached(
        self, result: dict[str, t.Any], ctx: Context, read: bool, skill: Skill | None = None
    ) -> dict[str, t.Any]:
        """Add ``ttlMs`` and ``cacheScope`` to a 2026-07-28 result (``CacheableResult``)."""
        if not protocol.is_stateless_version(ctx.protocol_version) or self._mcp is None:
            return result
        settings = self._mcp.state(ctx.app).settings
        if read:
            ttl = skill.ttl_ms if skill is not None and skill.ttl_ms is not None else None
            scope = skill.cache_scope if skill is not None else None
            result.setdefault("ttlMs", settings.read_cache_ttl_ms if ttl is None else ttl)
            result.setdefault("cacheScope", scope or settings.read_cache_scope)
        else:
            result.setdefault("ttlMs", settings.cache_ttl_ms)
            result.setdefault("cacheScope", settings.cache_scope)
        return result

    def _page_size(self, ctx: Context) -> int:
        return int(self._mcp.state(ctx.app).settings.page_size)

    @Extension.method("skills/list")
    def list_skills(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        """``skills/list``: a page of the listed skills' entries, manifests complete."""
        return self._cached(self.catalog.list_result(params, self._page_size(ctx)), ctx, False)

    @Extension.method("skills/get")
    def get_skill(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        """``skills/get``: the entry of the skill named by the URI of its ``SKILL.md``."""
        result = self.catalog.get_result(params)
        return self._cached(result, ctx, True, self.catalog.skill(result["skill"]["uri"]))

    @Extension.method("resources/directory/read")
    def read_directory(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        """``resources/directory/read``: a page of a directory's files and directories."""
        return self.catalog.directory_result(params, self._page_size(ctx))


__all__ = ["MANIFEST_METHODS", "SKILL_FILE", "WATCHED_METHODS", "Skills", "caller_root"]
