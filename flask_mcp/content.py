"""Builders for MCP content blocks and normalisation of handler results.

Results are converted by the table of :mod:`flask_mcp.convert`; what it cannot
convert faithfully raises :exc:`~flask_mcp.convert.Unconvertible`, which the
dispatcher answers with an error naming the handler and the type.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import typing as t

from .convert import Unconvertible
from .convert import plain_json_bytes
from .convert import to_json

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
        """Return the ``CallToolResult`` object.

        :raises ~flask_mcp.convert.Unconvertible: an item of ``content`` is not a
            content block or a string, or ``structured`` or ``meta`` holds a value
            without a faithful JSON form.
        """
        if isinstance(self.content, str):
            blocks = [text(self.content)]
        elif isinstance(self.content, (list, tuple)):
            blocks = _blocks(self.content, None, None)
        else:
            raise Unconvertible(
                self.content, "is not valid ToolResult.content: pass a string or a list of blocks."
            )
        result: dict[str, t.Any] = {"content": blocks}
        if self.structured is not None:
            structured = to_json(self.structured)
            if not isinstance(structured, dict):
                raise Unconvertible(
                    self.structured, "is not valid ToolResult.structured: pass a dict."
                )
            result["structuredContent"] = structured
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = to_json(self.meta)
        return result


def is_content(value: t.Any) -> bool:
    """Tell whether ``value`` looks like one content block."""
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


#: The text of JSON results without orjson, and for what orjson refuses (a lone
#: surrogate, an integer over 64 bits): compact, as orjson writes it.
_text_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def json_text(data: t.Any) -> str:
    """Serialise data that is already plain JSON (from :func:`~flask_mcp.convert.to_json`).

    Compact JSON, written by orjson when it is installed (a 4 MB result in tens of
    milliseconds; the standard library takes ten times as long), else by the
    standard library in the same form. ``{"<name>": <int>}`` (a tool's wrapped
    integer result, the common case) is written directly: an ASCII identifier
    needs no escaping and both encoders write an ``int`` as ``int.__repr__`` does.
    """
    if type(data) is dict and len(data) == 1:
        for key, value in data.items():
            if type(value) is int and type(key) is str and key.isascii() and key.isidentifier():
                return '{"' + key + '":' + int.__repr__(value) + "}"
    encoded = plain_json_bytes(data) if type(data) is dict or type(data) is list else None
    if encoded is not None:
        return encoded.decode("utf-8")
    return _text_encoder.encode(data)


def to_json_text(value: t.Any) -> str:
    """Serialise a value as JSON text, converting it by the table of :mod:`flask_mcp.convert`.

    :raises ~flask_mcp.convert.Unconvertible: the value has no faithful JSON form.
    """
    return json_text(to_json(value))


def binary(data: bytes | bytearray | memoryview, mime_type: str, uri: str) -> Content:
    """Return the content block for raw bytes of a known media type.

    ``image/*`` gives an image block, ``audio/*`` an audio block, anything else an
    embedded resource whose ``blob`` holds the bytes at ``uri``.
    """
    raw = bytes(data)
    kind = mime_type.partition("/")[0].strip().lower()
    if kind == "image":
        return image(raw, mime_type)
    if kind == "audio":
        return audio(raw, mime_type)
    return embedded(uri, blob=raw, mime_type=mime_type)


_BINARY = (bytes, bytearray, memoryview)


def _no_mime_type(value: t.Any) -> Unconvertible:
    return Unconvertible(
        value,
        'need a media type: declare it with @mcp.tool(mime_type="image/png") (image/*'
        " and audio/* give image and audio blocks, any other type an embedded resource),"
        ' or return flask_mcp.content.image(data, "image/png").',
    )


def _block(value: t.Any, mime_type: str | None, uri: str | None) -> Content:
    """One content block from a string, bytes or a content dict."""
    if isinstance(value, str):
        return text(str.__str__(value))
    if isinstance(value, _BINARY):
        if mime_type is None or uri is None:
            raise _no_mime_type(value)
        return binary(value, mime_type, uri)
    block: Content = to_json(value)  # a content dict: every value in it must be JSON
    return block


def _blocks(items: t.Sequence[t.Any], mime_type: str | None, uri: str | None) -> list[Content]:
    blocks = []
    for index, item in enumerate(items):
        if not (isinstance(item, (str, *_BINARY)) or is_content(item)):
            exc = Unconvertible(
                item,
                "is not a content block or a string, in a list of content blocks; build blocks"
                " with flask_mcp.content (text, image, audio, embedded, resource_link).",
            )
            exc.path.append(index)
            raise exc
        try:
            blocks.append(_block(item, mime_type, uri))
        except Unconvertible as exc:
            exc.path.insert(0, index)
            raise
    return blocks


def to_content_list(
    value: t.Any, *, mime_type: str | None = None, uri: str | None = None
) -> list[Content]:
    """Turn a tool's return value into a list of content blocks.

    ``None`` gives no block; a string a text block; a content block or a list of
    content blocks and strings is used as is; bytes (alone or in such a list) give
    :func:`binary` blocks of ``mime_type`` (``uri`` names an embedded resource);
    any other value is converted by :func:`~flask_mcp.convert.to_json` and sent as
    JSON text.

    :raises ~flask_mcp.convert.Unconvertible: bytes without ``mime_type``, or a value
        without a faithful JSON form.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [text(str.__str__(value))]
    if isinstance(value, _BINARY):
        return [_block(value, mime_type, uri)]
    if is_content(value):
        return [_block(value, mime_type, uri)]
    if isinstance(value, (list, tuple)) and all(
        is_content(item) or isinstance(item, (str, *_BINARY)) for item in value
    ):
        return _blocks(value, mime_type, uri)
    return [text(to_json_text(value))]


def _is_contents(item: t.Any) -> bool:
    return isinstance(item, dict) and ("text" in item or "blob" in item)


def to_resource_contents(uri: str, value: t.Any, mime_type: str | None) -> list[Content]:
    """Turn a resource handler's return value into ``contents``.

    A string is text, bytes a base64 ``blob``, a dict with ``text`` or ``blob`` one
    contents object (``uri`` and ``mimeType`` filled in); a list of those gives several
    contents. Any other value (a list with other items included) is one JSON text,
    converted by :func:`~flask_mcp.convert.to_json`.

    :raises ~flask_mcp.convert.Unconvertible: the value has no faithful JSON form.
    """
    several = isinstance(value, list) and all(
        isinstance(item, (str, *_BINARY)) or _is_contents(item) for item in value
    )
    contents = []
    for item in value if several else [value]:
        if _is_contents(item):
            entry = dict(item)
            if isinstance(entry.get("blob"), _BINARY):
                entry["blob"] = _b64(bytes(entry["blob"]))
            entry = to_json(entry)
            entry.setdefault("uri", uri)
            if mime_type is not None:
                entry.setdefault("mimeType", mime_type)
        elif isinstance(item, _BINARY):
            entry = resource_contents(uri, blob=bytes(item), mime_type=mime_type)
        else:
            value_text = str.__str__(item) if isinstance(item, str) else to_json_text(item)
            entry = resource_contents(uri, text=value_text, mime_type=mime_type)
        contents.append(entry)
    return contents


def to_prompt_result(value: t.Any, description: str | None) -> dict[str, t.Any]:
    """Turn a prompt handler's return value into a ``GetPromptResult``.

    A dict with ``messages`` is the whole result; otherwise the value (or each item
    of a list or tuple) is a message: a dict with ``role`` as is, a string or a content
    block as a user message, any other value as a user message of JSON text.

    :raises ~flask_mcp.convert.Unconvertible: the value has no faithful JSON form.
    """
    if isinstance(value, dict) and "messages" in value:
        result: dict[str, t.Any] = to_json(value)
        return result
    items = value if isinstance(value, (list, tuple)) else [value]
    messages = []
    for item in items:
        if isinstance(item, dict) and "role" in item:
            messages.append(to_json(item))
        elif isinstance(item, str) or is_content(item):
            messages.append(message("user", to_json(item)))
        else:
            messages.append(message("user", to_json_text(item)))
    result = {"messages": messages}
    if description:
        result["description"] = description
    return result


def error_result(message: str) -> dict[str, t.Any]:
    """Return a ``CallToolResult`` that reports ``message`` as an error."""
    return {"content": [text(message)], "isError": True}


__all__ = [
    "CONTENT_TYPES",
    "Content",
    "ToolResult",
    "audio",
    "binary",
    "embedded",
    "error_result",
    "image",
    "is_content",
    "json_text",
    "message",
    "resource_contents",
    "resource_link",
    "text",
    "to_content_list",
    "to_json_text",
    "to_prompt_result",
    "to_resource_contents",
]
