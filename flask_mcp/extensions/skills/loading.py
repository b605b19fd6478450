"""Finding and checking skills on disk: folders of skills, one skill, a skill made by a function.

A *source* is one declaration (``skills_folder("skills")``, ``add_skill(path)``,
a dynamic skill); :func:`load` turns it into :class:`~.model.Skill` records and
the problems found, each naming the file and the fix:

- every ``<dir>/SKILL.md`` below a folder is a skill whose path is ``<dir>``
  (nested directories give nested skill paths, ``acme/billing/refunds``); a
  skill inside another is also a supporting file of the outer one;
- ``SKILL.md`` must begin with YAML frontmatter that follows the Agent Skills
  rules (:mod:`.frontmatter`), its ``name`` equal to the directory's name;
- a skill holds at most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes,
  nested skills included (the limits every host accepts);
- nothing leaves the folder: a symbolic link whose target is outside it, or
  any link to a directory, is refused; so is a path with ``..`` in it.

Hidden files and directories (a name beginning with ``.``) and ``__pycache__``
are not part of a skill and are not served.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import typing as t

from . import frontmatter as frontmatter_mod
from . import media
from .errors import Problem
from .model import SKILL_FILE
from .model import Producer
from .model import Skill
from .model import SkillFile
from .model import digest
from .model import file_uri

#: Files per skill every host accepts (the extension's limit), ``SKILL.md`` included.
MAX_FILES = 512
#: Bytes per skill every host accepts (16 MiB), summed over its files.
MAX_BYTES = 16 * 1024 * 1024
#: Directory names that are never part of a skill.
IGNORED_DIRECTORIES = frozenset({"__pycache__"})

Kind = t.Literal["folder", "skill", "dynamic"]


@dataclasses.dataclass(frozen=True)
class SkillSource:
    """One declaration of skills, kept so that the skills can be loaded again when it changes.

    :param kind: ``"folder"`` (every skill below ``path``), ``"skill"`` (the one
        skill at ``path``) or ``"dynamic"`` (the skill at ``skill_path`` whose
        files ``producer`` returns).
    :param path: the folder or the skill's directory, absolute.
    :param prefix: ``/``-separated segments put before the skill paths
        (``"acme/billing"``), for example a blueprint's URI prefix.
    :param listed: whether its skills appear in ``skills/list`` and ``resources/list``.
    :param description: a dynamic skill's declared ``description`` (its ``SKILL.md``
        resource carries it; its function must return the same).
    """

    kind: Kind
    path: pathlib.Path | None = None
    prefix: str = ""
    listed: bool = True
    skill_path: str = ""
    producer: Producer | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    description: str | None = None

    @classmethod
    def at(
        cls,
        kind: t.Literal["folder", "skill"],
        path: str | os.PathLike[str],
        root: str | os.PathLike[str],
        *,
        prefix: str | None = "",
        listed: bool = True,
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
    ) -> SkillSource:
        """Return the source of a folder or one skill's directory; a relative ``path`` is
        relative to ``root`` (the folder of the module declaring it, or of a blueprint).
        """
        found = pathlib.Path(path)
        if not found.is_absolute():
            found = pathlib.Path(root) / found
        return cls(
            kind,
            path=found,
            prefix=(prefix or "").strip("/"),
            listed=listed,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
        )

    @property
    def where(self) -> str:
        """What names this source in messages: its path, or the dynamic skill's path."""
        return str(self.path) if self.path is not None else f"dynamic skill {self.skill_path!r}"

    def with_prefix(self, prefix: str) -> SkillSource:
        """Return this source under ``prefix`` (a blueprint's URI prefix) before its own."""
        joined = "/".join(part for part in (prefix.strip("/"), self.prefix) if part)
        if self.kind == "dynamic":
            full = "/".join(part for part in (prefix.strip("/"), self.skill_path) if part)
            return dataclasses.replace(self, skill_path=full)
        return dataclasses.replace(self, prefix=joined)


def segment_problem(segment: str) -> str | None:
    """Return why ``segment`` cannot be a segment of a skill path or file path, or ``None``."""
    if segment in ("", ".", ".."):
        return (
            "has an empty, '.' or '..' segment; a skill path is plain names joined by '/' "
            "(nothing may point outside the skill)"
        )
    if "\\" in segment or "\x00" in segment:
        return "holds a backslash or a NUL character; use '/' between segments"
    return None


def check_path(path: str, what: str) -> list[str]:
    """Return the problems of a ``/``-separated ``path`` used as a skill prefix or skill path."""
    if path.startswith("/"):
        return [f"{what} {path!r} must be relative (no leading '/')"]
    found = []
    for segment in path.split("/") if path else []:
        problem = segment_problem(segment)
        if problem is not None:
            found.append(f"{what} {path!r} {problem}")
            break
    return found


def source_problems(source: SkillSource) -> list[Problem]:
    """Return the problems of a source that loading it would not find (its prefix, its path)."""
    where = source.where
    problems = [Problem(where, message) for message in check_path(source.prefix, "prefix")]
    if source.kind == "dynamic":
        messages = check_path(source.skill_path, "the skill path")
        if not source.skill_path:
            messages.append(
                "the skill path is empty: pass the skill's path, such as 'reports/daily'"
            )
        messages += [
            f"{message}: the skill path's last segment is the skill's name"
            for message in frontmatter_mod.name_problems(source.skill_path.rsplit("/", 1)[-1])
        ]
        if not callable(source.producer):
            messages.append("needs a function returning the skill's files")
        problems += [Problem(where, message) for message in messages]
    return problems


def _is_hidden(name: str) -> bool:
    return name.startswith(".") or name in IGNORED_DIRECTORIES


def walk(root: pathlib.Path) -> tuple[list[tuple[str, pathlib.Path]], list[Problem]]:
    """Return the files below ``root`` (``/``-separated relative path, file to read) and problems.

    Symbolic links to files inside ``root`` are followed; links leaving
    ``root``, links to directories and anything that is not a regular file are
    problems. Hidden entries and ``__pycache__`` are skipped.
    """
    boundary = root.resolve()
    files: list[tuple[str, pathlib.Path]] = []
    problems: list[Problem] = []
    pending: list[tuple[pathlib.Path, str]] = [(root, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as exc:
            problems.append(Problem(str(directory), f"cannot be read: {exc.strerror}"))
            continue
        subdirectories = []
        for entry in entries:
            if _is_hidden(entry.name):
                continue
            relative = prefix + entry.name
            full = pathlib.Path(entry.path)
            if entry.is_symlink():
                try:
                    target = full.resolve(strict=True)
                except (OSError, RuntimeError):
                    problems.append(
                        Problem(str(full), "is a broken symbolic link: remove it or fix its target")
                    )
                    continue
                if not target.is_relative_to(boundary):
                    problems.append(
                        Problem(
                            str(full),
                            f"is a symbolic link to {target}, outside {root}: a skill may only "
                            "serve files inside its folder; copy the file in instead",
                        )
                    )
                elif target.is_dir():
                    problems.append(
                        Problem(
                            str(full),
                            "is a symbolic link to a directory, which is not followed: copy the "
                            "directory in instead",
                        )
                    )
                elif target.is_file():
                    files.append((relative, target))
                else:
                    problems.append(Problem(str(full), "links to something that is not a file"))
            elif entry.is_dir(follow_symlinks=False):
                subdirectories.append((full, relative + "/"))
            elif entry.is_file(follow_symlinks=False):
                files.append((relative, full))
            else:
                problems.append(
                    Problem(
                        str(full), "is not a regular file (a socket, a pipe, a device): remove it"
                    )
                )
        pending.extend(reversed(subdirectories))
    files.sort(key=lambda item: item[0])
    return files, problems


def fingerprint(source: SkillSource) -> t.Hashable:
    """Return what changes when a file of ``source`` is added, removed or written.

    Sizes and modification times of every file, from ``stat`` alone: nothing is
    read. A dynamic source has none (its function is called on every use).
    """
    if source.path is None:
        return None
    files, problems = walk(source.path)
    stats = []
    for relative, path in files:
        try:
            info = path.stat()
        except OSError:
            stats.append((relative, -1, -1))
            continue
        stats.append((relative, info.st_size, info.st_mtime_ns))
    return tuple(stats), tuple(str(problem) for problem in problems)


def load(source: SkillSource) -> tuple[list[Skill], list[Problem]]:
    """Load the skills of ``source``; return them and the problems found.

    The skills are valid only when no problem is an error (notes may remain).
    """
    problems = source_problems(source)
    if source.kind == "dynamic":
        if any(problem.error for problem in problems):
            return [], problems
        made = Skill(
            path=source.skill_path,
            producer=source.producer,
            listed=source.listed,
            ttl_ms=source.ttl_ms,
            cache_scope=source.cache_scope,
            description=source.description,
        )
        return [made], problems
    assert source.path is not None
    root = source.path
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a directory"
        fix = (
            "create it, or pass the path of a folder holding one directory per skill"
            if source.kind == "folder"
            else "pass the directory holding the skill's SKILL.md"
        )
        return [], [*problems, Problem(str(root), f"{what}: {fix}")]
    files, walk_problems = walk(root)
    problems += walk_problems
    prefix = [part for part in source.prefix.split("/") if part]
    if source.kind == "skill":
        directories = [("", [*prefix, root.resolve().name])]
        if not any(relative == SKILL_FILE for relative, _ in files):
            problems.append(_missing_skill_file(root, files))
    else:
        directories = []
        for relative, _ in files:
            directory, _, name = relative.rpartition("/")
            if name == SKILL_FILE:
                if not directory:
                    problems.append(
                        Problem(
                            str(root / SKILL_FILE),
                            "is at the root of the skills folder, where it names no skill: move "
                            "it into a directory named after the skill (<folder>/<name>/SKILL.md), "
                            "or serve that directory with add_skill()",
                        )
                    )
                    continue
                directories.append((directory, [*prefix, *directory.split("/")]))
            elif name.lower() == SKILL_FILE.lower():
                problems.append(
                    Problem(
                        str(root / relative),
                        f"is named {name!r}: name it {SKILL_FILE!r} exactly (upper case, the name "
                        "its URI carries)",
                    )
                )
        if not directories and not any(problem.error for problem in problems):
            problems.append(
                Problem(str(root), "holds no skill (no <name>/SKILL.md below it)", error=False)
            )
    loaded: dict[str, _Facts] = {}
    skills = []
    for directory, segments in directories:
        skill, found = _load_skill(root, directory, "/".join(segments), files, loaded, source)
        problems += found
        if skill is not None:
            skills.append(skill)
    if any(problem.error for problem in problems):
        return [], problems
    return skills, problems


def _missing_skill_file(root: pathlib.Path, files: list[tuple[str, pathlib.Path]]) -> Problem:
    near = [relative for relative, _ in files if relative.lower() == SKILL_FILE.lower()]
    if near:
        return Problem(str(root / near[0]), f"is named {near[0]!r}: name it {SKILL_FILE!r} exactly")
    return Problem(
        str(root),
        f"has no {SKILL_FILE}: a skill is a directory with a {SKILL_FILE} at its root (YAML "
        "frontmatter with 'name' and 'description', then the instructions)",
    )


@dataclasses.dataclass(frozen=True)
class _Facts:
    """What reading a file once tells: size, digest, type (and the bytes of a ``SKILL.md``)."""

    size: int
    digest: str
    media_type: str
    path: pathlib.Path
    data: bytes | None


def _facts(relative: str, path: pathlib.Path) -> _Facts:
    data = path.read_bytes()
    is_skill_file = relative.rsplit("/", 1)[-1] == SKILL_FILE
    kind = media.OVERRIDES[".md"] if is_skill_file else media.media_type(relative, data)
    return _Facts(len(data), digest(data), kind, path, data if is_skill_file else None)


def _load_skill(
    root: pathlib.Path,
    directory: str,
    skill_path: str,
    files: list[tuple[str, pathlib.Path]],
    loaded: dict[str, _Facts],
    source: SkillSource,
) -> tuple[Skill | None, list[Problem]]:
    """Load the skill whose root is ``directory`` (relative to ``root``; ``""``: ``root``).

    ``loaded`` keeps what was read of each file, so that a file shared by nested
    skills is read once.
    """
    where = root / directory if directory else root
    start = f"{directory}/" if directory else ""
    mine = [
        (relative[len(start) :], path) for relative, path in files if relative.startswith(start)
    ]
    problems = [
        Problem(str(where), message) for message in check_path(skill_path, "the skill path")
    ]
    total = 0
    for _, path in mine:
        try:
            total += path.stat().st_size
        except OSError as exc:
            problems.append(Problem(str(path), f"cannot be read: {exc.strerror}"))
    if len(mine) > MAX_FILES:
        problems.append(
            Problem(
                str(where),
                f"holds {len(mine)} files (nested skills included); a skill may hold at most "
                f"{MAX_FILES}, the most every host accepts: split it into several skills",
            )
        )
    if total > MAX_BYTES:
        problems.append(
            Problem(
                str(where),
                f"holds {total} bytes (nested skills included); a skill may hold at most "
                f"{MAX_BYTES} (16 MiB), the most every host accepts: move large files out of it",
            )
        )
    if problems:
        return None, problems
    records = []
    skill_frontmatter = None
    for relative, path in sorted(mine, key=lambda item: (item[0] != SKILL_FILE, item[0])):
        full = start + relative
        facts = loaded.get(full)
        if facts is None:
            try:
                facts = loaded[full] = _facts(full, path)
            except OSError as exc:
                problems.append(Problem(str(path), f"cannot be read: {exc.strerror}"))
                continue
        if relative == SKILL_FILE:
            assert facts.data is not None
            skill_frontmatter, found = frontmatter_mod.parse(facts.data, str(path))
            problems += found
            if skill_frontmatter is not None:
                name = skill_path.rsplit("/", 1)[-1]
                problems += frontmatter_mod.check(skill_frontmatter, name, str(path))
        records.append(
            SkillFile(
                path=relative,
                uri=file_uri(skill_path, relative),
                size=facts.size,
                digest=facts.digest,
                media_type=facts.media_type,
                source=facts.path,
            )
        )
    if skill_frontmatter is None or any(problem.error for problem in problems):
        return None, problems
    skill = Skill(
        path=skill_path,
        frontmatter=skill_frontmatter,
        files=tuple(records),
        listed=source.listed,
        root=where,
        ttl_ms=source.ttl_ms,
        cache_scope=source.cache_scope,
    )
    return skill, problems


__all__ = [
    "IGNORED_DIRECTORIES",
    "MAX_BYTES",
    "MAX_FILES",
    "SkillSource",
    "check_path",
    "fingerprint",
    "load",
    "segment_problem",
    "source_problems",
    "walk",
]
