"""JSON-RPC 2.0 messages: decoding, classification and builders."""

from __future__ import annotations

import json
import math
import typing as t

from ..errors import INVALID_REQUEST
from ..errors import PARSE_ERROR
from ..errors import MCPError

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"

try:
    import orjson
except ImportError:  # the optional extra: pip install flask-mcp[orjson]
    orjson = None  # type: ignore[assignment]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
#: For what orjson refuses to write: lone surrogates come out as ``\\udXXX`` escapes.
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), default=str).encode
#: Keep orjson's output equal to the stdlib encoder's with ``default=str``:
#: dict keys that are not strings are converted, datetimes and dataclasses go
#: through ``str`` as they would there.
_ORJSON_OPTIONS = (
    0
    if orjson is None
    else (
        orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
    )
)
#: An integer literal of 19 digits or more may not fit orjson's 64-bit integers
#: (it would come back as a float): such bodies are decoded by the stdlib. The
#: body's digits are mapped to "0" and the rest to " ", then searched for a run
#: of 19 (ten times faster than a regular expression).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19


def dumps(message: t.Any) -> str:
    """Encode a message as compact JSON on one line."""
    return dumps_bytes(message).decode("utf-8")


def dumps_bytes(message: t.Any) -> bytes:
    """Encode a message as compact UTF-8 JSON on one line.

    Uses orjson when it is installed (about ten times faster), else the
    standard library; both write the same JSON for what MCP messages hold.
    Values JSON cannot hold are written as ``str(value)``.
    """
    if orjson is not None:
        try:
            return orjson.dumps(message, default=str, option=_ORJSON_OPTIONS)
        except TypeError:  # an integer over 64 bits, a lone surrogate, deep nesting
            pass
    try:
        return _dumps(message).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON can carry it escaped
        return _dumps_ascii(message).encode("ascii")


def loads(body: bytes) -> t.Any:
    """Decode a request body.

    :raises MCPError: -32700 when the body is not JSON.
    """
    if (
        orjson is not None
        and isinstance(body, bytes)
        and _LONG_NUMBER not in body.translate(_DIGITS_AS_ZEROS)
    ):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # the standard library explains the error (or accepts a lone surrogate)
    try:
        return _decode(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MCPError(PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc}).") from None
    except RecursionError:
        raise MCPError(PARSE_ERROR, "Parse error: the JSON is nested too deeply.") from None


def _reject_constant(name: str) -> t.NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is out of the range of a JSON number")
    return number


_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _decode(body: bytes) -> t.Any:
    """Decode strict UTF-8 JSON: no NaN or Infinity, no number that overflows to infinity."""
    return _decoder.decode(body.decode("utf-8") if isinstance(body, (bytes, bytearray)) else body)


def valid_id(value: t.Any) -> bool:
    """Tell whether ``value`` may be a JSON-RPC id (a string or an integer, not a bool)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def classify(message: t.Any) -> str:
    """Return the kind of one decoded message: request, notification or response.

    :raises MCPError: -32600 with the message's id when it is no valid JSON-RPC 2.0 message.
    """
    if not isinstance(message, dict):
        raise MCPError(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be an object.")
    request_id = message.get("id")
    if message.get("jsonrpc") != "2.0":
        raise MCPError(
            INVALID_REQUEST,
            'Invalid Request: the "jsonrpc" member must be exactly "2.0".',
            data={"id": request_id} if valid_id(request_id) else None,
        )
    if "method" in message:
        if not isinstance(message["method"], str):
            raise MCPError(INVALID_REQUEST, 'Invalid Request: "method" must be a string.')
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise MCPError(INVALID_REQUEST, 'Invalid Request: "params" must be an object.')
        if "id" not in message:
            return NOTIFICATION
        if type(request_id) is not int and type(request_id) is not str and not valid_id(request_id):
            raise MCPError(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer.')
        return REQUEST
    if "id" in message and ("result" in message or "error" in message):
        if not valid_id(request_id):
            raise MCPError(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer.')
        return RESPONSE
    raise MCPError(
        INVALID_REQUEST,
        'Invalid Request: a message needs "method" (request or notification) '
        'or "result"/"error" (response).',
    )


def request_id_of(message: t.Any) -> t.Any:
    """Return the id of a message if it has a usable one, else ``None``."""
    if isinstance(message, dict):
        value = message.get("id")
        if valid_id(value):
            return value
    return None


def result(request_id: t.Any, value: dict[str, t.Any]) -> dict[str, t.Any]:
    """Build a response carrying ``value``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: t.Any, error_obj: dict[str, t.Any]) -> dict[str, t.Any]:
    """Build an error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error_obj}


def error_from(request_id: t.Any, exc: MCPError) -> dict[str, t.Any]:
    """Build an error response from an :class:`MCPError`."""
    return error(request_id, exc.to_error())


def notification(method: t.Any, params: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
    """Build a notification."""
    message: dict[str, t.Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def request(request_id: t.Any, method: str, params: dict[str, t.Any] | None) -> dict[str, t.Any]:
    """Build a request (server to client)."""
    message: dict[str, t.Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


__all__ = [
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "classify",
    "dumps",
    "dumps_bytes",
    "error",
    "error_from",
    "loads",
    "notification",
    "request",
    "request_id_of",
    "result",
    "valid_id",
]
