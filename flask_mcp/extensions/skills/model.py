"""Skills and their files as the extension publishes them: URIs, manifest entries, metadata."""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import typing as t
from urllib.parse import quote

from . import media

#: The URI scheme of skills served from folders (the extension's SHOULD).
SCHEME = "skill"
#: The file every skill has at its root.
SKILL_FILE = "SKILL.md"
#: Characters a URI path segment may hold as they are (RFC 3986 ``pchar``, but ``%``).
_PATH_SAFE = "!$&'()*+,;=:@-._~"
#: Characters a ``reg-name`` (the authority, the skill path's first segment) may hold.
_AUTHORITY_SAFE = "!$&'()*+,;=-._~"
#: What a dynamic skill's function returns: file paths mapped to their content.
Files = t.Mapping[str, str | bytes]
Producer = t.Callable[[], Files]


def encode_segments(segments: t.Sequence[str], *, authority: bool) -> str:
    """Return ``/``-joined URI segments, percent-encoding what a URI cannot hold as is."""
    if not segments:
        return ""
    first, rest = segments[0], segments[1:]
    encoded = [quote(first, safe=_AUTHORITY_SAFE if authority else _PATH_SAFE)]
    encoded += [quote(segment, safe=_PATH_SAFE) for segment in rest]
    return "/".join(encoded)


def directory_uri(skill_path: str, sub: str = "") -> str:
    """Return the URI of a directory: the skill's root, or ``sub`` (``/``-separated) below it."""
    segments = skill_path.split("/") + ([*sub.split("/")] if sub else [])
    return f"{SCHEME}://{encode_segments(segments, authority=True)}"


def file_uri(skill_path: str, file_path: str) -> str:
    """Return the URI of the file at ``file_path`` (``/``-separated) in the skill ``skill_path``."""
    return directory_uri(skill_path, file_path)


def digest(data: bytes) -> str:
    """Return the manifest digest of ``data``: ``sha256:`` and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclasses.dataclass(frozen=True)
class SkillFile:
    """One file of a skill: where it is, its URI, type, size and digest when loaded.

    :param path: its path below the skill's root, ``/``-separated (``templates/a.md``).
    :param source: the file on disk it is read from (``None`` for a dynamic skill).
    """

    path: str
    uri: str
    size: int
    digest: str
    media_type: str
    source: pathlib.Path | None = None

    @property
    def name(self) -> str:
        """The file's name, the last segment of its path."""
        return self.path.rsplit("/", 1)[-1]

    def manifest_entry(self) -> dict[str, t.Any]:
        """Return the ``SkillResource`` of the skill's manifest: ``uri``, ``digest``, ``size``."""
        return {"uri": self.uri, "digest": self.digest, "size": self.size}

    def describe(self) -> dict[str, t.Any]:
        """Return its ``Resource`` metadata (``resources/directory/read``)."""
        return {"uri": self.uri, "name": self.name, "mimeType": self.media_type, "size": self.size}


@dataclasses.dataclass(frozen=True)
class Skill:
    """One skill: its path in the server's skill namespace and its content.

    A skill loaded from a folder has its ``frontmatter`` and ``files`` (the
    complete manifest). A dynamic skill has a ``producer`` instead, a function
    returning its files each time they are needed; its entry's ``resources`` is
    ``"dynamic"``.

    :param path: the skill path, ``/``-separated; its last segment is the skill's name.
    :param listed: whether ``skills/list`` (and ``resources/list``) show it; an
        unlisted skill is still served to a client that knows its URI.
    :param ttl_ms: ``ttlMs`` of its 2026-07-28 reads and ``skills/get`` (``None``:
        the app's ``MCP_READ_CACHE_TTL_MS``).
    :param cache_scope: ``cacheScope`` likewise (``None``: ``MCP_READ_CACHE_SCOPE``).
    :param description: a dynamic skill's declared ``description``, which its
        ``SKILL.md`` resource carries in ``resources/list`` (``None``: not declared).
    """

    path: str
    frontmatter: dict[str, t.Any] | None = None
    files: tuple[SkillFile, ...] | None = None
    producer: Producer | None = None
    listed: bool = True
    root: pathlib.Path | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    description: str | None = None

    @property
    def name(self) -> str:
        """The skill's name: the last segment of its path."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def uri(self) -> str:
        """The URI of its ``SKILL.md``, which identifies the skill."""
        return file_uri(self.path, SKILL_FILE)

    @property
    def directory_uri(self) -> str:
        """The URI of its root directory (no trailing slash)."""
        return directory_uri(self.path)

    @property
    def dynamic(self) -> bool:
        """Whether a function produces its files (its manifest is ``"dynamic"``)."""
        return self.producer is not None

    @property
    def size(self) -> int:
        """The sum of its files' sizes (0 for a dynamic skill)."""
        return sum(file.size for file in self.files or ())

    def entry(self, frontmatter: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        """Return its ``Skill`` entry (``skills/list``, ``skills/get``).

        :param frontmatter: the frontmatter of a dynamic skill's current ``SKILL.md``.
        """
        found = frontmatter if frontmatter is not None else self.frontmatter
        if found is None:
            raise ValueError(f"The skill {self.path!r} has no frontmatter to publish.")
        resources: list[dict[str, t.Any]] | str = (
            "dynamic" if self.files is None else [file.manifest_entry() for file in self.files]
        )
        return {"uri": self.uri, "frontmatter": found, "resources": resources}


def describe_directory(uri: str, name: str) -> dict[str, t.Any]:
    """Return the ``Resource`` metadata of a directory resource."""
    return {"uri": uri, "name": name, "mimeType": media.DIRECTORY}


__all__ = [
    "SCHEME",
    "SKILL_FILE",
    "Files",
    "Producer",
    "Skill",
    "SkillFile",
    "describe_directory",
    "digest",
    "directory_uri",
    "encode_segments",
    "file_uri",
]
