"""Builders for MCP content blocks and normalisation of handler results."""

from __future__ import annotations

import base64
import dataclasses
import json
import typing as t

Content = dict[str, t.Any]
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _extra(
    block: Content, annotations: dict[str, t.Any] | None, meta: dict[str, t.Any] | None
) -> Content:
    if annotations:
        block["annotations"] = annotations
    if meta:
        block["_meta"] = meta
    return block


def text(
    value: str,
    *,
    annotations: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return a text content block."""
    return _extra({"type": "text", "text": value}, annotations, meta)


def image(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return an image content block; ``data`` is raw bytes or base64 text."""
    return _extra({"type": "image", "data": _b64(data), "mimeType": mime_type}, annotations, meta)


def audio(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return an audio content block; ``data`` is raw bytes or base64 text."""
    return _extra({"type": "audio", "data": _b64(data), "mimeType": mime_type}, annotations, meta)


def resource_link(
    uri: str,
    name: str,
    *,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return a ``resource_link`` content block pointing at a resource."""
    block: Content = {"type": "resource_link", "uri": uri, "name": name}
    for key, value in (
        ("title", title),
        ("description", description),
        ("mimeType", mime_type),
        ("size", size),
    ):
        if value is not None:
            block[key] = value
    return _extra(block, annotations, meta)


def resource_contents(
    uri: str,
    *,
    text: str | None = None,
    blob: bytes | str | None = None,
    mime_type: str | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return a ``TextResourceContents`` or ``BlobResourceContents`` object."""
    if (text is None) == (blob is None):
        raise TypeError("Pass exactly one of text= or blob= to describe resource contents.")
    contents: Content = {"uri": uri}
    if mime_type is not None:
        contents["mimeType"] = mime_type
    if text is not None:
        contents["text"] = text
    else:
        contents["blob"] = _b64(t.cast("bytes | str", blob))
    if meta:
        contents["_meta"] = meta
    return contents


def embedded(
    uri: str,
    *,
    text: str | None = None,
    blob: bytes | str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
) -> Content:
    """Return an embedded ``resource`` content block."""
    contents = resource_contents(uri, text=text, blob=blob, mime_type=mime_type)
    return _extra({"type": "resource", "resource": contents}, annotations, meta)


def message(role: str, content: Content | str) -> dict[str, t.Any]:
    """Return a prompt or sampling message; a string becomes text content."""
    if role not in ("user", "assistant"):
        raise ValueError(f"A message role must be 'user' or 'assistant', not {role!r}.")
    return {"role": role, "content": text(content) if isinstance(content, str) else content}


@dataclasses.dataclass
class ToolResult:
    """A complete tool result, for tools that need full control of it.

    :param content: content blocks (a string becomes one text block).
    :param structured: the ``structuredContent`` object.
    :param is_error: mark the result as an error the model should read.
    :param meta: the result's ``_meta``.
    """

    content: list[Content] | str = dataclasses.field(default_factory=list)
    structured: dict[str, t.Any] | None = None
    is_error: bool = False
    meta: dict[str, t.Any] | None = None

    def to_dict(self) -> dict[str, t.Any]:
        """Return the ``CallToolResult`` object."""
        blocks = [text(self.content)] if isinstance(self.content, str) else list(self.content)
        result: dict[str, t.Any] = {"content": blocks}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = self.meta
        return result


def is_content(value: t.Any) -> bool:
    """Tell whether ``value`` looks like one content block."""
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


_text_encoder = json.JSONEncoder(ensure_ascii=False, default=str)


def to_json_text(value: t.Any) -> str:
    """Serialise a value as the JSON text fallback of structured output."""
    return _text_encoder.encode(value)


def to_content_list(value: t.Any) -> list[Content]:
    """Turn a handler's return value into a list of content blocks."""
    if value is None:
        return []
    if isinstance(value, str):
        return [text(value)]
    if is_content(value):
        return [value]
    if isinstance(value, (list, tuple)) and all(
        is_content(item) or isinstance(item, str) for item in value
    ):
        return [text(item) if isinstance(item, str) else item for item in value]
    if isinstance(value, (bytes, bytearray)):
        return [text(bytes(value).decode("utf-8", "replace"))]
    return [text(to_json_text(value))]


def error_result(message: str) -> dict[str, t.Any]:
    """Return a ``CallToolResult`` that reports ``message`` as an error."""
    return {"content": [text(message)], "isError": True}
