"""The skills of one server: lookups by URI and the results of the extension's methods.

A :class:`SkillCatalog` holds the declared sources and what loading them gave:
skills by the URI of their ``SKILL.md``, files by URI, directories by URI. It
answers ``skills/list``, ``skills/get``, ``resources/directory/read`` and the
reads of skill files as plain functions of their params (no request, no app),
and notices when files change on disk (:meth:`SkillCatalog.refresh`).

The index is rebuilt whole on every change and swapped in one assignment, so
a reader always sees one consistent set of skills.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pathlib
import stat
import threading
import typing as t
from urllib.parse import unquote

from ...errors import InvalidParams
from ...server.registry import decode_cursor
from ...server.registry import encode_cursor
from . import dynamic as dynamic_mod
from . import media
from .dynamic import DynamicSkillError
from .errors import Problem
from .errors import SkillError
from .loading import SkillSource
from .loading import fingerprint
from .loading import load
from .model import SCHEME
from .model import SKILL_FILE
from .model import Skill
from .model import SkillFile
from .model import describe_directory
from .model import digest
from .model import directory_uri
from .model import file_uri

_PREFIX = f"{SCHEME}://"
#: How to fix a skill inside or around a dynamic one.
_DYNAMIC_FIX = "a dynamic skill's function makes all of its files; use another path"
logger = logging.getLogger("flask_mcp")


class StaleFile(Exception):
    """A skill file changed on disk since it was loaded (or went away)."""


@dataclasses.dataclass(frozen=True)
class PublishedFile:
    """A file as the server publishes it: its record and whether ``resources/list`` shows it.

    :param skill: the skill whose ``SKILL.md`` it is (its resource carries that
        skill's name and description), else ``None``.
    :param ttl_ms: the ``ttl_ms`` of the skill that holds it (the outermost one).
    :param cache_scope: its ``cache_scope`` likewise.
    """

    file: SkillFile
    listed: bool
    skill: Skill | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None

    def resource(self) -> dict[str, t.Any]:
        """Return the arguments of its resource declaration (``uri``, name, type, size...)."""
        declared: dict[str, t.Any] = {
            "uri": self.file.uri,
            "name": self.file.name,
            "mime_type": self.file.media_type,
            "size": self.file.size,
            "listed": self.listed,
            "ttl_ms": self.ttl_ms,
            "cache_scope": self.cache_scope,
        }
        if self.skill is not None and self.skill.frontmatter is not None:
            declared["name"] = self.skill.frontmatter["name"]
            declared["description"] = self.skill.frontmatter["description"]
        return declared


@dataclasses.dataclass(frozen=True)
class Change:
    """What a refresh changed: the URIs of files added, removed and rewritten."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)


@dataclasses.dataclass(frozen=True)
class _Index:
    skills: dict[str, Skill]
    files: dict[str, PublishedFile]
    #: Directory URI -> its children's URIs, sorted.
    directories: dict[str, tuple[str, ...]]
    #: Root directory URI -> dynamic skill.
    dynamic: dict[str, Skill]
    #: ``SKILL.md`` URI -> why the skill's files on disk no longer load.
    broken: dict[str, str]
    #: File URI -> the reason of the first broken skill holding it (see ``broken``).
    broken_files: dict[str, str]


@dataclasses.dataclass
class _Loaded:
    source: SkillSource
    skills: list[Skill]
    fingerprint: t.Hashable
    #: The errors of the last reload, which failed: ``skills`` are those loaded before.
    errors: tuple[Problem, ...] = ()
    #: Why skills of the last reload are not served: they clash with another skill or
    #: resource. A skill served before keeps its old version, by URI in :attr:`refused`.
    held: tuple[Problem, ...] = ()
    #: ``SKILL.md`` URI -> why the new version of a skill served before is not served.
    refused: dict[str, str] = dataclasses.field(default_factory=dict)


def _index(loaded: list[_Loaded]) -> _Index:
    skills: dict[str, Skill] = {}
    files: dict[str, PublishedFile] = {}
    children: dict[str, set[str]] = {}
    #: The directories above listed skills, with only the children that lead to one.
    shown: dict[str, set[str]] = {}
    dynamic: dict[str, Skill] = {}
    for entry in loaded:
        for skill in entry.skills:
            skills[skill.uri] = skill
            if skill.listed:
                _add_parents(shown, skill.directory_uri, leaf_is_directory=True)
            if skill.dynamic:
                dynamic[skill.directory_uri] = skill
                _add_parents(children, skill.directory_uri, leaf_is_directory=True)
                continue
            for file in skill.files or ():
                known = files.get(file.uri)
                owner = skill if file.path == SKILL_FILE else None
                if known is None:
                    published = PublishedFile(
                        file, skill.listed, owner, skill.ttl_ms, skill.cache_scope
                    )
                else:
                    published = dataclasses.replace(
                        known,
                        listed=known.listed or skill.listed,
                        skill=owner or known.skill,
                    )
                files[file.uri] = published
                _add_parents(children, file.uri, leaf_is_directory=False)
    # A directory above the skills (a prefix) shows only what leads to a listed skill, as
    # skills/list does: an unlisted skill is served to a client that knows its URI, and
    # the skill's own directories are read in full (its entry lists every file anyway).
    roots = {skill.directory_uri for skill in skills.values()}
    directories = {
        uri: tuple(sorted(found if _within(uri, roots) else shown[uri]))
        for uri, found in children.items()
        if uri in shown or _within(uri, roots)
    }
    broken: dict[str, str] = {}
    broken_files: dict[str, str] = {}
    for entry in loaded:
        for skill in entry.skills:
            reason = entry.refused.get(skill.uri) or (
                _why_broken(skill, entry.errors) if entry.errors else ""
            )
            if reason:
                broken[skill.uri] = reason
                for file in skill.files or ():
                    broken_files.setdefault(file.uri, reason)
    return _Index(skills, files, directories, dynamic, broken, broken_files)


def _why_broken(skill: Skill, errors: t.Sequence[Problem]) -> str:
    """Return the errors about the files of ``skill``, by path in the skill ("" if none).

    The paths are the skill's own (``SKILL.md``), not the server's: the text goes to clients.
    """
    if skill.root is None:
        return ""
    reasons = []
    for problem in errors:
        try:
            relative = pathlib.Path(problem.path).relative_to(skill.root).as_posix()
        except ValueError:
            continue
        reasons.append(problem.message if relative == "." else f"{relative}: {problem.message}")
    return "; ".join(reasons)


def _within(uri: str, roots: set[str]) -> bool:
    """Tell whether the directory ``uri`` is the root of a skill in ``roots`` or below one."""
    segments = uri[len(_PREFIX) :].split("/")
    return any(_PREFIX + "/".join(segments[:end]) in roots for end in range(1, len(segments) + 1))


def _add_parents(children: dict[str, set[str]], uri: str, *, leaf_is_directory: bool) -> None:
    """Record ``uri`` as a child of its directory, and each directory as a child of its own."""
    segments = uri[len(_PREFIX) :].split("/")
    if leaf_is_directory:
        children.setdefault(uri, set())
    for end in range(len(segments) - 1, 0, -1):
        parent = _PREFIX + "/".join(segments[:end])
        child = _PREFIX + "/".join(segments[: end + 1])
        children.setdefault(parent, set()).add(child)


def _uri_param(params: dict[str, t.Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("Invalid params: 'uri' must be a non-empty string.")
    return uri


def _page(
    items: t.Sequence[t.Any], cursor: t.Any, page_size: int
) -> tuple[list[t.Any], str | None]:
    offset = 0 if cursor is None else decode_cursor(cursor)
    if offset > len(items):
        raise InvalidParams("Invalid cursor: it points past the end of the list.")
    following = offset + page_size
    return list(items[offset:following]), (
        encode_cursor(following) if following < len(items) else None
    )


class SkillCatalog:
    """The skills a server serves, from the sources declared on it."""

    def __init__(self) -> None:
        self._loaded: list[_Loaded] = []
        self._index = _index([])
        self._lock = threading.RLock()

    # -- declaring -----------------------------------------------------------------

    def add(self, source: SkillSource) -> list[Problem]:
        """Load ``source`` and serve its skills; return the notes about them.

        Nothing is served if anything is wrong.

        :raises SkillError: the source has an error (every one is listed, with its fix),
            or one of its skills has the URI of a skill already served.
        """
        skills, problems = load(source)
        if any(problem.error for problem in problems):
            raise SkillError(problems)
        with self._lock:
            loaded = [*self._loaded, _Loaded(source, skills, fingerprint(source))]
            clashes = self._clashes(loaded)
            if clashes:
                raise SkillError(clashes)
            self._loaded = loaded
            self._index = _index(loaded)
        return problems + self._name_notes(skills)

    def remove(self, sources: t.Iterable[SkillSource]) -> None:
        """Stop serving the skills of ``sources`` (the very objects given to :meth:`add`)."""
        gone = {id(source) for source in sources}
        with self._lock:
            self._loaded = [entry for entry in self._loaded if id(entry.source) not in gone]
            self._index = _index(self._loaded)

    @staticmethod
    def _clashes(loaded: list[_Loaded]) -> list[Problem]:
        seen: dict[str, str] = {}
        roots: list[tuple[str, str, bool]] = []
        problems = []
        for entry in loaded:
            for skill in entry.skills:
                where = entry.source.where
                other = seen.get(skill.uri)
                if other is not None:
                    problems.append(
                        Problem(
                            where,
                            f"serves {skill.uri}, which {other} serves already: give one of them "
                            "another prefix",
                        )
                    )
                seen.setdefault(skill.uri, where)
                roots.append((skill.directory_uri, where, skill.dynamic))
        for root, where, dynamic in roots:
            for other_root, other_where, other_dynamic in roots:
                if not other_root.startswith(root + "/"):  # the other lies inside root
                    continue
                if dynamic:
                    place = f"puts a skill at {other_root}, inside the dynamic skill {root}"
                    problems.append(Problem(other_where, f"{place} of {where}: {_DYNAMIC_FIX}"))
                elif other_dynamic:
                    place = f"puts a skill at {root}, around the dynamic skill {other_root}"
                    problems.append(Problem(where, f"{place} of {other_where}: {_DYNAMIC_FIX}"))
        return problems

    def resource_clashes(self, taken: t.Callable[[str], bool]) -> list[Problem]:
        """Return a problem for each resource of a skill that is another resource already.

        A folder skill's resources are its files; a dynamic skill's, its ``SKILL.md``
        and the template of its other files.

        :param taken: tells whether a URI or URI template is a resource of the server
            that is not a skill's.
        """
        problems = []
        seen: set[str] = set()
        with self._lock:
            for entry in self._loaded:
                for skill in entry.skills:
                    if skill.dynamic:
                        uris = [skill.uri, f"{skill.directory_uri}/{{+file}}"]
                    else:
                        uris = [file.uri for file in skill.files or ()]
                    for uri in uris:
                        if uri not in seen and taken(uri):
                            problems.append(Problem(entry.source.where, _taken_reason(skill, uri)))
                        seen.add(uri)
        return problems

    def _name_notes(self, added: list[Skill]) -> list[Problem]:
        names: dict[str, list[str]] = {}
        for skill in self._index.skills.values():
            names.setdefault(skill.name, []).append(skill.uri)
        notes = []
        for skill in added:
            same = [uri for uri in names.get(skill.name, []) if uri != skill.uri]
            if same:
                notes.append(
                    Problem(
                        skill.uri,
                        f"has the same name as {', '.join(same)}; names should be unique "
                        "(hosts tell them apart by their paths)",
                        error=False,
                    )
                )
        return notes

    @property
    def sources(self) -> list[SkillSource]:
        """The sources declared, in order."""
        return [entry.source for entry in self._loaded]

    # -- lookups ---------------------------------------------------------------------

    @property
    def skills(self) -> list[Skill]:
        """Every skill served, listed or not, in declaration order."""
        return list(self._index.skills.values())

    @property
    def files(self) -> dict[str, PublishedFile]:
        """Every file of a skill loaded from disk, by URI."""
        return dict(self._index.files)

    def skill(self, uri: str) -> Skill | None:
        """Return the skill whose ``SKILL.md`` has ``uri``, or ``None``."""
        return self._index.skills.get(uri)

    def dynamic_skill_of(self, uri: str) -> Skill | None:
        """Return the dynamic skill ``uri`` is in (its root or below), or ``None``."""
        index = self._index
        found = index.dynamic.get(uri)
        if found is not None:
            return found
        for root, skill in index.dynamic.items():
            if uri.startswith(root + "/"):
                return skill
        return None

    #: Call a dynamic skill's function (:func:`.dynamic.produce`).
    produce = staticmethod(dynamic_mod.produce)

    # -- the extension's results -----------------------------------------------------

    def list_result(self, params: dict[str, t.Any], page_size: int) -> dict[str, t.Any]:
        """Return the ``skills/list`` result: a page of the listed skills' entries.

        A dynamic skill whose function fails is left out (a listing may be
        partial) and the error is logged with its traceback: one broken skill
        does not take the others away. ``skills/get`` of it raises. So is a
        skill whose files changed on disk and no longer load (:meth:`broken`).

        :raises InvalidParams: the cursor is not one this method returned.
        """
        index = self._index
        listed = [
            skill
            for skill in index.skills.values()
            if skill.listed and skill.uri not in index.broken
        ]
        page, cursor = _page(listed, params.get("cursor"), page_size)
        entries = []
        for skill in page:
            try:
                entries.append(self.entry(skill))
            except DynamicSkillError as exc:
                logger.error("Skills: %s; skills/list leaves it out", exc, exc_info=exc)
        result: dict[str, t.Any] = {"skills": entries}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    def entry(self, skill: Skill) -> dict[str, t.Any]:
        """Return the entry of ``skill``; a dynamic skill's function is called for its frontmatter.

        :raises DynamicSkillError: the dynamic skill's function failed.
        """
        if skill.dynamic:
            return skill.entry(self.produce(skill)[1])
        return skill.entry()

    def get_result(self, params: dict[str, t.Any]) -> dict[str, t.Any]:
        """Return the ``skills/get`` result for ``params["uri"]``, listed or not.

        :raises InvalidParams: the URI is not the ``SKILL.md`` of a skill served here,
            or its files changed on disk and no longer load (the message says why).
        """
        uri = _uri_param(params)
        reason = self._index.broken.get(uri)
        if reason is not None:
            raise InvalidParams(
                f"{uri} is not served while {self._unloadable(reason)}", {"uri": uri}
            )
        skill = self._index.skills.get(uri)
        if skill is None:
            hint = ""
            as_skill = self._index.skills.get(f"{uri.rstrip('/')}/{SKILL_FILE}")
            if as_skill is not None:
                hint = f"; a skill is named by the URI of its {SKILL_FILE}: {as_skill.uri}"
            raise InvalidParams(f"No skill is served at {uri}{hint}", {"uri": uri})
        return {"skill": self.entry(skill)}

    def directory_result(self, params: dict[str, t.Any], page_size: int) -> dict[str, t.Any]:
        """Return the ``resources/directory/read`` result: a page of a directory's children.

        :raises InvalidParams: the URI names no directory resource.
        :raises DynamicSkillError: the directory is in a dynamic skill that failed.
        """
        uri = _uri_param(params)
        index = self._index
        dynamic = self.dynamic_skill_of(uri)
        if dynamic is not None:
            children = dynamic_mod.children(dynamic, uri)
        elif uri in index.directories:
            children = [self._describe(child) for child in index.directories[uri]]
        else:
            if uri in index.files:
                raise InvalidParams(f"{uri} is not a directory resource", {"uri": uri})
            raise InvalidParams(f"No directory resource at {uri}", {"uri": uri})
        page, cursor = _page(children, params.get("cursor"), page_size)
        result: dict[str, t.Any] = {"resources": page}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    def _describe(self, uri: str) -> dict[str, t.Any]:
        index = self._index
        published = index.files.get(uri)
        if published is not None:
            return published.file.describe()
        return describe_directory(uri, unquote(uri.rsplit("/", 1)[-1]))

    def read(self, uri: str) -> tuple[str | bytes, str] | None:
        """Return the content and media type of the skill file at ``uri``, or ``None``.

        A file loaded from disk is read again and must still have the size and
        digest of its manifest entry.

        :raises StaleFile: the file changed or went away since it was loaded
            (:meth:`refresh` loads it again).
        :raises DynamicSkillError: the file is in a dynamic skill that failed.
        """
        published = self._index.files.get(uri)
        if published is not None:
            record = published.file
            assert record.source is not None
            data = _read_loaded(record.source, record.size)
            if digest(data) != record.digest:
                raise StaleFile(f"{record.source} changed since it was loaded")
            return media.content(data, record.media_type), record.media_type
        skill = self.dynamic_skill_of(uri)
        if skill is None or not uri.startswith(skill.directory_uri + "/"):
            return None
        files, _ = dynamic_mod.produce(skill)
        for path in files:
            if file_uri(skill.path, path) == uri:
                return dynamic_mod.read(skill, path, files)
        return None

    def broken(self, uri: str) -> str | None:
        """Return why the skill holding the file ``uri`` is not served, or ``None``.

        Its files changed on disk and no longer load (an invalid frontmatter, a
        skill grown past the limits): until they load again, its entry is not
        published and its changed files cannot be read.
        """
        reason = self._index.broken_files.get(uri)
        return None if reason is None else self._unloadable(reason)

    @staticmethod
    def _unloadable(reason: str) -> str:
        return f"the skill's files changed on disk and no longer load: {reason}"

    #: Read a file of a dynamic skill (:func:`.dynamic.read`).
    read_dynamic = staticmethod(dynamic_mod.read)

    # -- changes on disk -----------------------------------------------------------

    def changed_sources(self) -> list[int]:
        """Return the positions of the sources whose files changed on disk since they loaded."""
        return [
            position
            for position, entry in enumerate(self._loaded)
            if entry.source.path is not None and fingerprint(entry.source) != entry.fingerprint
        ]

    def refresh(
        self, holding: str | None = None, taken: t.Callable[[str], bool] | None = None
    ) -> tuple[Change, list[Problem]]:
        """Load again the sources whose files changed on disk; return the change and problems.

        A source that now has errors keeps serving what it served before, but
        for the skills the errors are about (:meth:`broken`): a file half saved
        in an editor takes no other skill away, and no entry describes bytes
        that are gone. A skill that now clashes with another (the same URI, or
        one inside a dynamic skill) or whose file has the URI of another
        resource (``taken``) is not served, or keeps its old version marked
        :meth:`broken`; the skill served before wins, and the other skills'
        changes apply. The problems are returned once, to be logged; a source
        holding a skill back is loaded again with every change, as the clash
        may be gone.

        :param holding: the URI of a file whose source is loaded again even if
            sizes and times did not change (a read found other bytes).
        :param taken: tells whether a URI is a resource of the server that is
            not a skill file.
        """
        with self._lock:
            changed = self.changed_sources()
            if holding is not None:
                changed += [
                    position
                    for position, entry in enumerate(self._loaded)
                    if position not in changed
                    and entry.source.path is not None
                    and any(holding in _uris(skill) for skill in entry.skills)
                ]
            if not changed:
                return Change(), []
            changed += [
                position
                for position, entry in enumerate(self._loaded)
                if entry.held and position not in changed
            ]
            before = self._index.files
            loaded = list(self._loaded)
            problems: list[Problem] = []
            fresh: dict[int, list[Skill]] = {}
            for position in sorted(changed):
                entry = loaded[position]
                current = fingerprint(entry.source)
                skills, found = load(entry.source)
                problems += found
                errors = tuple(problem for problem in found if problem.error)
                if errors:
                    loaded[position] = dataclasses.replace(
                        entry, fingerprint=current, errors=errors, held=()
                    )
                    continue
                loaded[position] = _Loaded(entry.source, skills, current)
                fresh[position] = skills
            if fresh:
                problems += _admit(self._loaded, loaded, fresh, taken)
            self._loaded = loaded
            self._index = _index(loaded)
            after = self._index.files
        return _diff(before, after), problems


def _admit(
    old: list[_Loaded],
    loaded: list[_Loaded],
    fresh: dict[int, list[Skill]],
    taken: t.Callable[[str], bool] | None,
) -> list[Problem]:
    """Keep out of ``loaded`` the skills of a reload that clash; return the problems new.

    ``fresh`` holds the skills just loaded, by position. The skills served before at
    the same URI by the same source come first, then the others in order; a skill
    that clashes with one admitted before it, or whose file is ``taken``, is left
    out, or keeps its old version marked broken.
    """
    served = {position: {skill.uri: skill for skill in old[position].skills} for position in fresh}
    admitted: list[tuple[Skill, str]] = []
    for position, entry in enumerate(loaded):
        if position not in fresh:
            admitted += [(skill, entry.source.where) for skill in entry.skills]
    kept: dict[int, list[Skill]] = {position: [] for position in fresh}
    held: dict[int, list[Problem]] = {position: [] for position in fresh}
    refused: dict[int, dict[str, str]] = {position: {} for position in fresh}
    again = [(p, s) for p, skills in fresh.items() for s in skills if s.uri in served[p]]
    new = [(p, s) for p, skills in fresh.items() for s in skills if s.uri not in served[p]]
    for position, skill in again + new:
        where = loaded[position].source.where
        reason = _clash(skill, admitted, taken)
        if reason is None:
            kept[position].append(skill)
            admitted.append((skill, where))
            continue
        held[position].append(Problem(where, reason))
        previous = served[position].get(skill.uri)
        if previous is not None:  # its old version stays, not served until it loads again
            kept[position].append(previous)
            admitted.append((previous, where))
            refused[position][skill.uri] = reason
    problems = []
    for position, skills in fresh.items():
        order = {skill.uri: number for number, skill in enumerate(skills)}
        loaded[position] = dataclasses.replace(
            loaded[position],
            skills=sorted(kept[position], key=lambda skill: order[skill.uri]),
            held=tuple(held[position]),
            refused=refused[position],
        )
        problems += [problem for problem in held[position] if problem not in old[position].held]
    return problems


def _clash(
    skill: Skill, admitted: list[tuple[Skill, str]], taken: t.Callable[[str], bool] | None
) -> str | None:
    """Return why ``skill`` (of a folder) cannot be served next to the ``admitted`` ones.

    ``None`` if it can.
    """
    root = skill.directory_uri
    for other, where in admitted:
        if other.uri == skill.uri:
            return (
                f"serves {skill.uri}, which {where} serves already: give one of them another prefix"
            )
        inside = root.startswith(other.directory_uri + "/")
        around = other.directory_uri.startswith(root + "/")
        if inside and other.dynamic:
            return (
                f"puts a skill at {root}, inside the dynamic skill {other.directory_uri} of "
                f"{where}: {_DYNAMIC_FIX}"
            )
        if around and other.dynamic:
            return (
                f"puts a skill at {root}, around the dynamic skill {other.directory_uri} of "
                f"{where}: {_DYNAMIC_FIX}"
            )
    for file in skill.files or ():
        if taken is not None and taken(file.uri):
            return _taken_reason(skill, file.uri)
    return None


def _taken_reason(skill: Skill, uri: str) -> str:
    """Say that ``skill`` serves ``uri``, which another resource of the server has, and
    how to fix it."""
    return (
        f"the skill {skill.uri} serves {uri}, which is another resource of the server "
        "already: rename the skill (its folder) or that file, give the skill source "
        "another prefix (prefix=), or remove the other resource"
    )


def _read_loaded(path: pathlib.Path, size: int) -> bytes:
    """Return the bytes of a skill file loaded with ``size`` bytes, reading no more than that.

    What is now at ``path`` was not checked by loading: a file grown large, a pipe that
    would block the worker, a link to a device that never ends are not read.

    :raises StaleFile: it is not a regular file of ``size`` bytes any more, or cannot be read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe does not block
    except OSError as exc:
        raise StaleFile(f"{path}: {exc.strerror}") from None
    with open(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            raise StaleFile(f"{path} changed since it was loaded")
        try:
            data = file.read(size + 1)
        except OSError as exc:
            raise StaleFile(f"{path}: {exc.strerror}") from None
    if len(data) != size:
        raise StaleFile(f"{path} changed since it was loaded")
    return data


def _uris(skill: Skill) -> set[str]:
    return {file.uri for file in skill.files or ()}


def _diff(before: dict[str, PublishedFile], after: dict[str, PublishedFile]) -> Change:
    added = tuple(uri for uri in after if uri not in before)
    removed = tuple(uri for uri in before if uri not in after)
    modified = tuple(
        uri
        for uri, now in after.items()
        if uri in before
        and (before[uri].resource() != now.resource() or before[uri].file.digest != now.file.digest)
    )
    return Change(added, removed, modified)


__all__ = [
    "Change",
    "DynamicSkillError",
    "PublishedFile",
    "SkillCatalog",
    "StaleFile",
    "directory_uri",
]
