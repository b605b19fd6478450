"""The media type of a skill file, and whether it is served as text or as a blob.

Types come from the standard library's table (:class:`mimetypes.MimeTypes`
without the host's ``/etc/mime.types``, so every machine serves a file with the
same type), with the types skills use most set here: ``text/markdown`` for
``SKILL.md`` and other Markdown (the extension says ``SKILL.md`` SHOULD be
``text/markdown``), YAML and TOML per their RFCs, TypeScript as source code
rather than MPEG transport streams.

A file is served as ``text`` when its type is textual and its bytes are UTF-8:
the text is then exactly the bytes the manifest's digest covers. Anything else
is a base64 ``blob`` of the same bytes.
"""

from __future__ import annotations

import mimetypes
import posixpath

#: Types of the extensions skills use most, over the standard library's table.
OVERRIDES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".ts": "text/x-typescript",
    ".tsx": "text/x-typescript",
    ".mts": "text/x-typescript",
    ".jsonl": "application/jsonl",
    ".ipynb": "application/x-ipynb+json",
}
#: Textual types outside ``text/*``.
TEXTUAL = frozenset(
    {
        "application/json",
        "application/jsonl",
        "application/yaml",
        "application/toml",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-sh",
        "application/x-csh",
        "application/x-python-code",
        "application/x-tex",
        "application/x-latex",
        "application/sql",
        "application/graphql",
        "image/svg+xml",
    }
)
#: The type of a file whose extension says nothing and whose bytes are not text.
BINARY = "application/octet-stream"
#: The type of a file whose extension says nothing and whose bytes are UTF-8 text.
PLAIN = "text/plain"
#: The type of a directory resource (``resources/directory/read``).
DIRECTORY = "inode/directory"

_table = mimetypes.MimeTypes()


def is_textual(media_type: str) -> bool:
    """Tell whether ``media_type`` names text (``text/*``, JSON, XML, YAML, scripts...)."""
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith("text/")
        or base in TEXTUAL
        or base.endswith("+json")
        or base.endswith("+xml")
        or base.endswith("+yaml")
    )


def as_text(data: bytes) -> str | None:
    """Return ``data`` as text if it is UTF-8 without NUL characters, else ``None``.

    The text encodes back to exactly ``data``: no byte-order mark is dropped and
    no line ending changed, so a client hashing it gets the manifest's digest.
    """
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def media_type(path: str, data: bytes) -> str:
    """Return the media type of the file at ``path`` (a ``/``-separated path) holding ``data``."""
    extension = posixpath.splitext(path)[1].lower()
    found = OVERRIDES.get(extension)
    if found is None:
        found, _ = _table.guess_type(posixpath.basename(path), strict=False)
    if found is None:
        return PLAIN if as_text(data) is not None else BINARY
    return found


def content(data: bytes, media: str) -> str | bytes:
    """Return what ``resources/read`` sends for a file: its text, or its bytes for a blob."""
    if is_textual(media):
        text = as_text(data)
        if text is not None:
            return text
    return data


__all__ = [
    "BINARY",
    "DIRECTORY",
    "OVERRIDES",
    "PLAIN",
    "TEXTUAL",
    "as_text",
    "content",
    "is_textual",
    "media_type",
]
