"""Dynamic skills: a function makes the skill's files each time they are needed.

Such a skill's entry has ``"resources": "dynamic"``. Its function returns a
mapping of file paths to their content (``str`` or ``bytes``); what it returns
is checked on every call, as a folder is checked once when it is declared,
the limits included (at most 512 files and 16 MiB).
"""

from __future__ import annotations

import json
import typing as t

from ...errors import InvalidParams
from . import frontmatter as frontmatter_mod
from . import media
from .loading import MAX_BYTES
from .loading import MAX_FILES
from .loading import check_path
from .model import SKILL_FILE
from .model import Skill
from .model import describe_directory
from .model import directory_uri
from .model import file_uri


class DynamicSkillError(Exception):
    """A dynamic skill's function failed or returned files that cannot be served."""


def media_type(path: str, data: bytes) -> str:
    """Return the media type of a file of a skill: ``text/markdown`` for its ``SKILL.md``."""
    return media.OVERRIDES[".md"] if path == SKILL_FILE else media.media_type(path, data)


def produce(skill: Skill) -> tuple[dict[str, bytes], dict[str, t.Any]]:
    """Call a dynamic skill's function; return its files as bytes and its frontmatter.

    :raises DynamicSkillError: the function raised, or returned files that
        cannot be served, or more than the limits (the message says which and how
        to fix it).
    """
    assert skill.producer is not None
    where = f"the dynamic skill {skill.path!r}"
    try:
        produced = skill.producer()
    except Exception as exc:
        raise DynamicSkillError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(produced, t.Mapping):
        raise DynamicSkillError(
            f"{where} returned {type(produced).__name__}: return a dict of file paths "
            "('SKILL.md', 'templates/a.md') to their content (str or bytes)"
        )
    files: dict[str, bytes] = {}
    for path, value in produced.items():
        if not isinstance(path, str) or not path or check_path(path, "the file path"):
            raise DynamicSkillError(
                f"{where} returned the file path {path!r}: use a relative path of plain "
                "names joined by '/', without '..'"
            )
        if isinstance(value, str):
            files[path] = value.encode("utf-8")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            files[path] = bytes(value)
        else:
            raise DynamicSkillError(
                f"{where} returned {type(value).__name__} for {path!r}: return str or bytes"
            )
    if SKILL_FILE not in files:
        raise DynamicSkillError(f"{where} returned no {SKILL_FILE}: every skill has one")
    if len(files) > MAX_FILES:
        raise DynamicSkillError(
            f"{where} returned {len(files)} files; a skill may hold at most {MAX_FILES}, "
            "the most every host accepts: split it into several skills"
        )
    total = sum(map(len, files.values()))
    if total > MAX_BYTES:
        raise DynamicSkillError(
            f"{where} returned {total} bytes; a skill may hold at most {MAX_BYTES} (16 MiB), "
            "the most every host accepts: return less, or move large files out of it"
        )
    found, problems = frontmatter_mod.parse(files[SKILL_FILE], f"{where}'s {SKILL_FILE}")
    if found is not None:
        problems += frontmatter_mod.check(found, skill.name, f"{where}'s {SKILL_FILE}")
    errors = "; ".join(str(problem) for problem in problems if problem.error)
    if found is None or errors:
        raise DynamicSkillError(errors)
    declared = skill.description
    if declared is not None and found["description"] != declared:
        raise DynamicSkillError(
            f"{where} returned a {SKILL_FILE} whose description is "
            f"{json.dumps(found['description'])}, not {json.dumps(declared)} as declared "
            "(description=), which resources/list shows: make them the same"
        )
    return files, found


def read(
    skill: Skill, path: str, files: dict[str, bytes] | None = None
) -> tuple[str | bytes, str] | None:
    """Return the content and media type of the file at ``path`` of a dynamic skill, or ``None``.

    :param files: what the skill's function returned already (else it is called).
    :raises DynamicSkillError: the skill's function failed.
    """
    if files is None:
        files = produce(skill)[0]
    data = files.get(path)
    if data is None:
        return None
    kind = media_type(path, data)
    return media.content(data, kind), kind


def children(skill: Skill, uri: str) -> list[dict[str, t.Any]]:
    """Return the ``Resource`` metadata of the direct children of a directory of ``skill``.

    :raises InvalidParams: ``uri`` is a file of the skill, or nothing.
    :raises DynamicSkillError: the skill's function failed.
    """
    files, _ = produce(skill)
    # The URI of each directory, to its path: a segment may be percent-encoded in the URI.
    directories = {skill.directory_uri: ""}
    for path in files:
        segments = path.split("/")
        for end in range(1, len(segments)):
            sub = "/".join(segments[:end])
            directories[directory_uri(skill.path, sub)] = sub
    below = directories.get(uri)
    if below is None:
        if any(file_uri(skill.path, path) == uri for path in files):
            raise InvalidParams(f"{uri} is not a directory resource", {"uri": uri})
        raise InvalidParams(f"No directory resource at {uri}", {"uri": uri})
    start = f"{below}/" if below else ""
    found: dict[str, dict[str, t.Any]] = {}
    for path, data in files.items():
        if not path.startswith(start):
            continue
        head, _, tail = path[len(start) :].partition("/")
        child = file_uri(skill.path, start + head)
        if tail:
            found.setdefault(child, describe_directory(child, head))
        else:
            kind = media_type(path, data)
            found[child] = {"uri": child, "name": head, "mimeType": kind, "size": len(data)}
    return [found[key] for key in sorted(found)]


__all__ = ["DynamicSkillError", "children", "media_type", "produce", "read"]
