"""JSON text, written and read the same way everywhere: on the wire and in a backend.

One leaf module, so that the JSON-RPC layer (:mod:`flask_mcp.protocol.jsonrpc`) and
the Redis backend (:mod:`flask_mcp.backends.redis`) encode and decode alike. It uses
orjson when it is installed (the ``orjson`` extra: about ten times faster, which
counts for large tool results) and the standard library otherwise; both write the
same JSON for what MCP messages hold.
"""

from __future__ import annotations

import json
import math
import typing as t

try:
    import orjson
except ImportError:  # the optional extra: pip install flask-mcp[orjson]
    orjson = None  # type: ignore[assignment]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
#: For what orjson refuses to write: lone surrogates come out as ``\\udXXX`` escapes.
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), default=str).encode
#: Keep orjson's output equal to the stdlib encoder's with ``default=str``:
#: datetimes and dataclasses go through ``str`` as they would there...
_ORJSON_FIRST = (
    0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)
#: ...and dict keys that are not strings are converted. orjson writes 30% slower with
#: ``OPT_NON_STR_KEYS`` (a 4 MB result: 1 ms more), and the same bytes for string keys,
#: so :func:`dumps_bytes` tries without it first.
_ORJSON_OPTIONS = _ORJSON_FIRST | (0 if orjson is None else orjson.OPT_NON_STR_KEYS)
#: Options of :func:`strict_dumps_bytes`: what orjson would hand to ``default`` or
#: convert (subclasses of builtins, dates and times, dataclasses) is refused.
_ORJSON_STRICT = (
    0
    if orjson is None
    else (
        orjson.OPT_PASSTHROUGH_SUBCLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
    )
)
#: An integer literal of 19 digits or more may not fit orjson's 64-bit integers
#: (it would come back as a float): such text is decoded by the stdlib. The
#: text's digits are mapped to "0" and the rest to " ", then searched for a run
#: of 19 (ten times faster than a regular expression).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19
#: The same for text: digits become "0" (other characters stay, none of them a digit).
_STR_DIGITS_AS_ZEROS = str.maketrans("123456789", "0" * 9)


def _has_long_number(text: bytes | str) -> bool:
    """Whether ``text`` has a run of 19 digits or more: an integer orjson may read as a float.

    orjson reads an integer beyond 64 bits as a float (``2**70 + 1`` loses its last
    digits) rather than failing, so such text must go to the standard library.
    """
    if isinstance(text, str):
        return "0" * 19 in text.translate(_STR_DIGITS_AS_ZEROS)
    return text.translate(_DIGITS_AS_ZEROS).find(_LONG_NUMBER) >= 0  # `in` tries an int first


#: orjson's ``Fragment`` (orjson 3.9+): bytes written into a document as they are.
_Fragment: t.Any = getattr(orjson, "Fragment", None)


class EncodedJSON(dict[str, t.Any]):
    """A JSON object that carries its own compact JSON, written into answers as it is.

    A tool's ``structuredContent`` is encoded once, to check that it is plain JSON
    and to be its text block (:func:`flask_mcp.convert.plain_json_bytes`); a
    JSON-RPC response whose ``result.structuredContent`` is an ``EncodedJSON``
    carries those bytes instead of encoding the object again (:func:`dumps_bytes`).
    Changing the object itself (``obj[key] = value``, ``del``, ``update``...) drops
    the bytes; whoever may change what it holds gets a plain ``dict`` copy
    (:func:`plain_result`): middleware, an extension's tool-call interceptor.

    The result of a tool whose output schema accepts any object is not checked to be
    plain JSON (:func:`flask_mcp.convert.converted_json_bytes`): it may hold tuples,
    Enum members or UUIDs, whose bytes are those of their conversion, and
    :attr:`convert` converts the copy :func:`plain_result` hands on.
    """

    __slots__ = ("convert", "json")

    def __init__(
        self,
        data: dict[str, t.Any],
        json: bytes,
        convert: t.Callable[[dict[str, t.Any], bytes | None], dict[str, t.Any]] | None = None,
    ) -> None:
        super().__init__(data)
        #: The compact JSON of the object; ``None`` once the object was changed.
        self.json: bytes | None = json
        #: ``None`` when the object holds plain JSON only; else what turns a copy of it
        #: into plain JSON for :func:`plain_result`, given the copy and :attr:`json`
        #: (its ``json`` is that plain JSON's).
        self.convert = convert

    def __setitem__(self, key: str, value: t.Any) -> None:
        self.json = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.json = None
        super().__delitem__(key)

    def __ior__(self, other: t.Any) -> EncodedJSON:  # type: ignore[override,misc]
        self.json = None
        return super().__ior__(other)

    def clear(self) -> None:
        self.json = None
        super().clear()

    def pop(self, *args: t.Any) -> t.Any:
        self.json = None
        return super().pop(*args)

    def popitem(self) -> tuple[str, t.Any]:
        self.json = None
        return super().popitem()

    def setdefault(self, key: str, default: t.Any = None) -> t.Any:
        self.json = None
        return super().setdefault(key, default)

    def update(self, *args: t.Any, **kwargs: t.Any) -> None:
        self.json = None
        super().update(*args, **kwargs)


def plain_result(result: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return ``result`` with a plain ``dict`` copy of its ``structuredContent`` if it is
    an :class:`EncodedJSON`, for code that may change what the object holds.

    The copy holds plain JSON only: the items of an object that was not checked to hold
    plain JSON (its :attr:`~EncodedJSON.convert` is set) are converted, as they would
    have been had the object not carried its bytes.
    """
    structured = result.get("structuredContent")
    if type(structured) is EncodedJSON:
        copied = dict(structured)
        convert = structured.convert
        result["structuredContent"] = (
            copied if convert is None else convert(copied, structured.json)
        )
    return result


def _spliced(value: dict[str, t.Any], result: dict[str, t.Any], json: bytes) -> dict[str, t.Any]:
    """``value`` (a response) whose ``result.structuredContent`` is written as ``json``."""
    return {**value, "result": {**result, "structuredContent": _Fragment(json)}}


def dumps(value: t.Any) -> str:
    """Encode ``value`` as compact JSON text on one line (see :func:`dumps_bytes`)."""
    return dumps_bytes(value).decode("utf-8")


def dumps_bytes(value: t.Any) -> bytes:
    """Encode ``value`` as compact UTF-8 JSON on one line.

    Values JSON cannot hold are written as ``str(value)``; a lone surrogate is
    written escaped. A response whose ``result.structuredContent`` is an
    :class:`EncodedJSON` holds its bytes, not a second encoding.
    """
    if orjson is not None:
        encoded = value
        if type(value) is dict:
            result = value.get("result")
            if type(result) is dict:
                structured = result.get("structuredContent")
                if type(structured) is EncodedJSON and structured.json is not None and _Fragment:
                    encoded = _spliced(value, result, structured.json)
        try:
            return orjson.dumps(encoded, default=str, option=_ORJSON_FIRST)
        except TypeError:  # a key that is not a str, or one of the cases below
            try:
                return orjson.dumps(encoded, default=str, option=_ORJSON_OPTIONS)
            except TypeError:  # an integer over 64 bits, a lone surrogate, deep nesting
                pass
    try:
        return _dumps(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON can carry it escaped
        return _dumps_ascii(value).encode("ascii")


def strict_dumps_bytes(value: t.Any) -> bytes | None:
    """Encode ``value`` with orjson if it holds only what orjson writes by itself, else ``None``.

    Compact UTF-8 JSON, as :func:`dumps_bytes` writes it; ``None`` when orjson is
    not installed, or refuses the value: a subclass of a builtin type, a date or
    time, a dataclass, any other type orjson does not know, a key that is not a
    ``str``, an integer over 64 bits, a lone surrogate, deep nesting. Besides
    plain JSON, orjson writes tuples, Enum members and UUIDs, and NaN and
    infinities as ``null``: :func:`flask_mcp.convert.plain_json_bytes` finds those.
    """
    if orjson is None:
        return None
    try:
        return orjson.dumps(value, option=_ORJSON_STRICT)
    except TypeError:
        return None


def _reject_constant(name: str) -> t.NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is out of the range of a JSON number")
    return number


_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads(body: bytes | str) -> t.Any:
    """Decode strict JSON: no ``NaN`` or ``Infinity``, no number that overflows to infinity.

    :raises ValueError: the text is not JSON (:class:`json.JSONDecodeError`, or
        :class:`UnicodeDecodeError` for bytes that are not UTF-8).
    :raises RecursionError: the JSON is nested too deeply.
    """
    if (
        orjson is not None
        and isinstance(body, bytes)
        and body.translate(_DIGITS_AS_ZEROS).find(_LONG_NUMBER) < 0  # `in` tries an int first
    ):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # the standard library explains the error (or accepts a lone surrogate)
    return _decoder.decode(body.decode("utf-8") if isinstance(body, (bytes, bytearray)) else body)


def loads_stored(value: bytes | str) -> t.Any:
    """Decode JSON this process or another wrote with :func:`dumps` (a backend's record).

    Trusted text: no checks beyond JSON's own, orjson first when installed, the
    standard library for text with an integer orjson would read as a float (a tool's
    ``2**70 + 1`` in a task's result comes back exact).
    """
    if orjson is not None and not _has_long_number(value):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:  # a lone surrogate: the stdlib reads it
            pass
    return json.loads(value)


__all__ = [
    "EncodedJSON",
    "dumps",
    "dumps_bytes",
    "loads",
    "loads_stored",
    "plain_result",
    "strict_dumps_bytes",
]
