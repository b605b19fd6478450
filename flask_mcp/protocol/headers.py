"""HTTP header rules of the 2026-07-28 Streamable HTTP transport (SEP-2243).

Pure functions over plain data, no Flask. Every 2026 POST mirrors parts of
its body into headers: ``MCP-Protocol-Version`` (``_meta`` version),
``Mcp-Method`` (``method``), ``Mcp-Name`` (``params.name`` for ``tools/call``
and ``prompts/get``, ``params.uri`` for ``resources/read``) and
``Mcp-Param-{X}`` (the ``tools/call`` argument annotated ``"x-mcp-header": "X"``).
A server must reject any disagreement with HTTP 400 and JSON-RPC ``-32020``
(:class:`HeaderMismatch`). ``Mcp-Name`` and ``Mcp-Param-*`` values may use the
Base64 sentinel ``=?base64?<base64 of the UTF-8 value>?=``.
"""

from __future__ import annotations

import base64
import binascii
import collections.abc as cabc
import dataclasses
import decimal
import re
import typing as t

from ..errors import HEADER_MISMATCH
from .versions import META_PROTOCOL_VERSION

__all__ = [
    "HeaderMismatch", "HeaderParam", "NAME_SOURCES", "TASKS_NAME_SOURCES",
    "decode_header_value", "encode_header_value", "expected_name",
    "validate_protocol_version_header", "validate_routing_headers",
    "validate_x_mcp_header_schema",
]  # fmt: skip

SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="
PARAM_PREFIX = "Mcp-Param-"
#: Methods that require ``Mcp-Name``, and the ``params`` key it mirrors.
NAME_SOURCES: t.Mapping[str, str] = {
    "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
}  # fmt: skip
#: Extra ``Mcp-Name`` sources when the ``io.modelcontextprotocol/tasks`` extension is served.
TASKS_NAME_SOURCES: t.Mapping[str, str] = dict.fromkeys(
    ("tasks/get", "tasks/update", "tasks/cancel"), "taskId"
)

_SAFE_VALUE = re.compile(r"[\x20-\x7e\t]*")
_PLAIN = re.compile(r"[\x20-\x7e]*")
_STRICT_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_MAX_SAFE_INTEGER = 2**53 - 1
_HEADER_TYPES = ("string", "integer", "boolean")
# Keywords whose value maps names to schemas, or is a schema or a list of schemas.
# fmt: off
_SCHEMA_MAPS = frozenset({
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
})
_SCHEMA_VALUES = frozenset({
    "items", "prefixItems", "additionalItems", "contains", "additionalProperties", "not",
    "unevaluatedProperties", "unevaluatedItems", "propertyNames", "if", "then", "else",
    "allOf", "anyOf", "oneOf",
})
# fmt: on


class SupportsItems(t.Protocol):
    """Has ``items()`` yielding ``(name, value)``: a ``dict`` or Werkzeug ``Headers``."""

    def items(self) -> t.Iterable[tuple[str, str]]: ...


class HeaderMismatch(ValueError):
    """A header is missing, malformed or disagrees with the JSON-RPC body.

    Answer HTTP 400, ``application/json``, error ``{"code": -32020, "message": str(exc)}``.

    :param message: what is wrong and how to fix it.
    :param header: the name of the header to blame, if any.
    """

    code = HEADER_MISMATCH
    http_status = 400

    def __init__(self, message: str, header: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.header = header


@dataclasses.dataclass(frozen=True)
class HeaderParam:
    """A tool argument mirrored into an ``Mcp-Param-{header}`` header.

    :param path: the chain of ``properties`` keys from the schema root.
    :param header: the ``x-mcp-header`` value, e.g. ``"Region"``.
    :param type: ``"string"``, ``"integer"`` or ``"boolean"``.
    """

    path: tuple[str, ...]
    header: str
    type: str

    @property
    def name(self) -> str:
        """The annotated property's own name (the last path element)."""
        return self.path[-1]

    @property
    def header_name(self) -> str:
        """The full header name, e.g. ``"Mcp-Param-Region"``."""
        return PARAM_PREFIX + self.header

    def extract(self, arguments: t.Any) -> t.Any:
        """Return the argument value at :attr:`path`, or ``None`` if absent."""
        for key in self.path:
            if not isinstance(arguments, dict) or key not in arguments:
                return None
            arguments = arguments[key]
        return arguments


class LoweredHeaders(dict[str, str]):
    """Request headers keyed by lower-case name, built once per request."""


def lower_headers(headers: SupportsItems) -> LoweredHeaders:
    """Return ``headers`` keyed by lower-case name, for the validators here.

    :raises HeaderMismatch: a header was sent twice with different values.
    """
    return _lower(headers)


class WSGIHeaders(LoweredHeaders):
    """The headers of a WSGI environ, looked up by lower-case name when asked for.

    The validators here only ``get`` the few headers they check, so nothing
    is copied: ``get("mcp-name")`` reads ``environ["HTTP_MCP_NAME"]`` (a WSGI
    server has already joined repeated headers).
    """

    def __init__(self, environ: t.Mapping[str, t.Any]) -> None:
        super().__init__()
        self.environ = environ

    def get(self, name: str, default: t.Any = None) -> t.Any:
        key = _ENVIRON_KEYS.get(name)
        if key is None:
            key = name.upper().replace("-", "_")
            if key not in _WSGI_ENTITY_KEYS:
                key = "HTTP_" + key
            if len(_ENVIRON_KEYS) < 1024:  # names come from tool declarations, not clients
                _ENVIRON_KEYS[name] = key
        return self.environ.get(key, default)


_WSGI_ENTITY_KEYS = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})
#: Header name -> WSGI environ key, filled as names are asked for.
_ENVIRON_KEYS: dict[str, str] = {}


def _lower(headers: SupportsItems) -> LoweredHeaders:
    if isinstance(headers, LoweredHeaders):
        return headers
    result = LoweredHeaders()
    for name, value in headers.items():
        if result.setdefault(name.lower(), value) != value:
            raise HeaderMismatch(
                f"Header mismatch: the {name} header was sent twice with different values;"
                " send it once.",
                name,
            )
    return result


def decode_header_value(value: str, header: str = "header") -> str:
    """Return the value a header carries, decoding the Base64 sentinel.

    Strips surrounding spaces and tabs. Decodes ``=?base64?...?=`` strictly
    (standard alphabet, exact padding, canonical, UTF-8); the rest is literal.

    :param value: the raw header value.
    :param header: the header's name, for error messages.
    :raises HeaderMismatch: if the value has characters other than visible
        ASCII, space and tab, or carries invalid Base64.
    """
    value = value.strip(" \t")
    if not _SAFE_VALUE.fullmatch(value):
        raise HeaderMismatch(
            f"Header mismatch: the {header} header contains characters not allowed in a"
            " header value; send non-ASCII or control characters as"
            f" {SENTINEL_PREFIX}<base64 of the UTF-8 value>{SENTINEL_SUFFIX}.",
            header,
        )
    size = len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX)
    if not (
        value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX) and len(value) >= size
    ):
        return value
    payload = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
    try:
        raw = base64.b64decode(payload, validate=True)
        if not _STRICT_B64.fullmatch(payload) or base64.b64encode(raw).decode() != payload:
            raise ValueError
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        raise HeaderMismatch(
            f"Header mismatch: the {header} header has invalid Base64 in {value!r}; encode"
            f" the UTF-8 bytes as standard, padded Base64 between {SENTINEL_PREFIX!r} and"
            f" {SENTINEL_SUFFIX!r}.",
            header,
        ) from None


def encode_header_value(value: str | int | bool) -> str:
    """Return the header form of a ``Mcp-Name`` or ``Mcp-Param-*`` value, as a client sends it.

    Strings with non-ASCII or control characters, surrounding whitespace or
    the sentinel's shape are Base64 encoded; the rest go as they are.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    sentinel = value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)
    if _PLAIN.fullmatch(value) and value == value.strip(" \t") and not sentinel:
        return value
    return f"{SENTINEL_PREFIX}{base64.b64encode(value.encode()).decode()}{SENTINEL_SUFFIX}"


def expected_name(
    method: str, params: t.Any, *, name_sources: t.Mapping[str, str] = NAME_SOURCES
) -> str | None:
    """Return the value ``Mcp-Name`` must carry for this request.

    ``None`` if the method takes no ``Mcp-Name`` or the body lacks the source
    field as a string (params validation then reports ``-32602``).
    """
    source = name_sources.get(method) if isinstance(method, str) else None
    value = params.get(source) if source is not None and isinstance(params, dict) else None
    return value if isinstance(value, str) else None


def validate_protocol_version_header(
    headers: SupportsItems, message: t.Mapping[str, t.Any]
) -> None:
    """Check that ``MCP-Protocol-Version`` equals the ``_meta`` protocol version.

    Call it after checking that ``_meta`` has the required keys (``-32602``)
    and before checking that the version is supported (``-32022``).

    :raises HeaderMismatch: if the header is missing or differs.
    """
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    body = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    _expect(_lower(headers), "MCP-Protocol-Version", body, f"_meta[{META_PROTOCOL_VERSION!r}]")


def validate_routing_headers(
    headers: SupportsItems,
    message: t.Mapping[str, t.Any],
    *,
    tool_header_params: cabc.Mapping[str, t.Sequence[HeaderParam]]
    | cabc.Callable[[str], t.Sequence[HeaderParam] | None]
    | None = None,
    name_sources: t.Mapping[str, str] = NAME_SOURCES,
) -> None:
    """Check ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` against the body.

    Call it for 2026-07-28 requests (not notifications) after the protocol
    version checks and before the method lookup.

    :param headers: the request headers; names match case-insensitively.
    :param message: the parsed JSON-RPC request.
    :param tool_header_params: the :class:`HeaderParam` list of each tool, as
        a mapping or a function of the tool name. Unknown tools have none.
    :param name_sources: methods requiring ``Mcp-Name``; add
        :data:`TASKS_NAME_SOURCES` when serving the tasks extension.
    :raises HeaderMismatch: for the first header that is missing, malformed
        or disagrees with the body.
    """
    lowered = _lower(headers)
    method = t.cast(str, message.get("method"))
    _expect(lowered, "Mcp-Method", method, "the JSON-RPC method")
    params = message.get("params")
    name = expected_name(method, params, name_sources=name_sources)
    if name is None:
        return
    raw = lowered.get("mcp-name")
    if raw is None:
        raise HeaderMismatch(
            f"Header mismatch: the Mcp-Name header is missing; {method} requests must send"
            f" 'Mcp-Name: {encode_header_value(name)}' (params.{name_sources[method]}).",
            "Mcp-Name",
        )
    decoded = decode_header_value(raw, "Mcp-Name")
    if decoded != name:
        raise HeaderMismatch(
            f"Header mismatch: Mcp-Name header value {decoded!r} does not match body value"
            f" {name!r}.",
            "Mcp-Name",
        )
    if method != "tools/call" or tool_header_params is None:
        return
    if isinstance(tool_header_params, cabc.Mapping):
        declared = tool_header_params.get(name, ())
    else:
        declared = tool_header_params(name) or ()
    arguments = params.get("arguments") if isinstance(params, dict) else None
    for param in declared:
        _check_param(lowered, param, param.extract(arguments))


def _expect(lowered: dict[str, str], header: str, body: t.Any, source: str) -> None:
    value = lowered.get(header.lower())
    if value is None:
        raise HeaderMismatch(
            f"Header mismatch: the {header} header is missing; send '{header}: {body}',"
            f" the value of {source}.",
            header,
        )
    if value.strip(" \t") != body:
        raise HeaderMismatch(
            f"Header mismatch: {header} header value {value.strip()!r} does not match body"
            f" value {body!r} ({source}; values are case-sensitive).",
            header,
        )


def _check_param(lowered: dict[str, str], param: HeaderParam, body: t.Any) -> None:
    if body is not None and not isinstance(body, (bool, int, float, str)):
        return  # Objects and arrays cannot be mirrored; argument validation rejects them.
    header = param.header_name
    where = "arguments." + ".".join(param.path)
    shown = encode_header_value(body) if isinstance(body, (int, str)) else repr(body)
    raw = lowered.get(header.lower())
    if raw is None:
        if body is None:
            return
        raise HeaderMismatch(
            f"Header mismatch: the {header} header is missing but {where} is set; send"
            f" '{header}: {shown}' (the tool's inputSchema marks it x-mcp-header).",
            header,
        )
    decoded = decode_header_value(raw, header)
    if body is None:
        raise HeaderMismatch(
            f"Header mismatch: the {header} header is sent but {where} is absent or null;"
            " omit the header or set the argument.",
            header,
        )
    if not _matches(decoded, body, header):
        raise HeaderMismatch(
            f"Header mismatch: {header} header value {decoded!r} does not match body value"
            f" {shown!r} at {where}.",
            header,
        )


def _matches(decoded: str, body: t.Any, header: str) -> bool:
    if isinstance(body, bool):
        return decoded == ("true" if body else "false")
    if isinstance(body, str):
        return decoded == body
    if isinstance(body, int) and abs(body) > _MAX_SAFE_INTEGER:
        raise HeaderMismatch(
            f"Header mismatch: the value mirrored into {header} is outside the safe integer"
            f" range ±{_MAX_SAFE_INTEGER}, so it cannot be carried in a header.",
            header,
        )
    if len(decoded) > 64 or not _NUMBER.fullmatch(decoded):
        return False
    try:  # Integers compare numerically: "42.0" matches 42.
        return bool(decimal.Decimal(decoded) == decimal.Decimal(repr(body)))
    except decimal.InvalidOperation:  # pragma: no cover - NaN or infinite bodies
        return False


def validate_x_mcp_header_schema(input_schema: t.Mapping[str, t.Any]) -> list[HeaderParam]:
    """Return the ``x-mcp-header`` annotations of a tool's ``inputSchema``.

    Enforces ``server/tools.mdx`` (x-mcp-header): the value is a non-empty
    RFC 9110 token, unique ignoring case, on a property of type ``string``,
    ``integer`` or ``boolean`` (``"null"`` may be added), reached from the
    root through ``properties`` keys alone (never through ``items``,
    composition or conditional keywords, ``$defs`` or ``$ref``).

    :raises ValueError: for the first violated constraint, saying where.
    """
    found: list[HeaderParam] = []
    allowed: set[str] = set()
    _collect(input_schema, (), "", found, allowed)
    for pointer in _all_annotations(input_schema, ""):
        if pointer not in allowed:
            raise ValueError(
                f"'x-mcp-header' at {pointer or '/'} is not allowed: move it onto a property"
                " reached from the root through 'properties' alone (not items, anyOf, oneOf,"
                " allOf, not, if/then/else, $defs or $ref), or remove it."
            )
    seen: dict[str, HeaderParam] = {}
    for param in found:
        other = seen.setdefault(param.header.lower(), param)
        if other is not param:
            raise ValueError(
                f"'x-mcp-header' value {param.header!r} on {'.'.join(param.path)!r} duplicates"
                f" {other.header!r} on {'.'.join(other.path)!r}; header names ignore case, so"
                " give each annotation a distinct name."
            )
    return found


def _collect(
    schema: t.Any, path: tuple[str, ...], pointer: str, found: list[HeaderParam], allowed: set[str]
) -> None:
    properties = schema.get("properties") if isinstance(schema, cabc.Mapping) else None
    if not isinstance(properties, cabc.Mapping):
        return
    for key, sub in properties.items():
        sub_pointer = f"{pointer}/properties/{_escape(key)}"
        if isinstance(sub, cabc.Mapping) and "x-mcp-header" in sub:
            found.append(_header_param(sub, (*path, key)))
            allowed.add(sub_pointer)
        _collect(sub, (*path, key), sub_pointer, found, allowed)


def _header_param(schema: t.Mapping[str, t.Any], path: tuple[str, ...]) -> HeaderParam:
    where = ".".join(path)
    header = schema["x-mcp-header"]
    if not isinstance(header, str) or not header:
        raise ValueError(
            f"'x-mcp-header' on {where!r} must be a non-empty string such as 'Region',"
            f" got {header!r}."
        )
    if not _TOKEN.fullmatch(header):
        raise ValueError(
            f"'x-mcp-header' value {header!r} on {where!r} is not a valid header name: use"
            " only letters, digits and !#$%&'*+-.^_`|~ (no spaces, colons or control"
            " characters)."
        )
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    primitive = [x for x in types if x != "null"] if isinstance(types, list) else []
    if len(primitive) != 1 or primitive[0] not in _HEADER_TYPES:
        raise ValueError(
            f'\'x-mcp-header\' on {where!r} needs "type": "string", "integer" or'
            f' "boolean", got {declared!r}; numbers, objects and arrays cannot be'
            " mirrored into headers."
        )
    return HeaderParam(path, header, primitive[0])


def _all_annotations(schema: t.Any, pointer: str) -> t.Iterator[str]:
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _all_annotations(item, f"{pointer}/{i}")
        return
    if not isinstance(schema, cabc.Mapping):
        return
    if "x-mcp-header" in schema:
        yield pointer
    for keyword, value in schema.items():
        sub = f"{pointer}/{_escape(keyword)}"
        if keyword in _SCHEMA_MAPS and isinstance(value, cabc.Mapping):
            for name, item in value.items():
                yield from _all_annotations(item, f"{sub}/{_escape(name)}")
        elif keyword in _SCHEMA_VALUES:
            yield from _all_annotations(value, sub)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
