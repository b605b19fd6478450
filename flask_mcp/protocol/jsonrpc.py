"""JSON-RPC 2.0 messages: decoding, classification and builders."""

from __future__ import annotations

import sys
import typing as t

from .. import json_codec
from ..errors import INVALID_REQUEST
from ..errors import PARSE_ERROR
from ..errors import MCPError

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"

#: Encode a message as compact JSON on one line (see :mod:`flask_mcp.json_codec`).
dumps = json_codec.dumps
#: Encode a message as compact UTF-8 JSON on one line (see :mod:`flask_mcp.json_codec`).
dumps_bytes = json_codec.dumps_bytes


def loads(body: bytes) -> t.Any:
    """Decode a request body (strict JSON, see :func:`flask_mcp.json_codec.loads`).

    :raises MCPError: -32700 when the body is not JSON.
    """
    try:
        return json_codec.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MCPError(PARSE_ERROR, f"Parse error: {_why_not_json(body, exc)}.") from None
    except RecursionError:
        raise MCPError(PARSE_ERROR, "Parse error: the JSON is nested too deeply.") from None


def _why_not_json(body: bytes, exc: Exception) -> str:
    """Say what is wrong with a body that is not JSON, in terms the sender can act on."""
    if body[:3] == b"\xef\xbb\xbf":
        return (
            "the body starts with a UTF-8 byte-order mark, which JSON text must not have "
            "(RFC 8259, section 8.1); send the JSON without it"
        )
    if "int_max_str_digits" in str(exc):  # the interpreter's own limit, not the sender's to set
        return (
            f"a number has more than {sys.get_int_max_str_digits()} digits, more than this "
            "server reads; send it as a string"
        )
    return f"the body is not valid JSON ({exc})"


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
    if _answers(message):
        _check_response(message)
        return RESPONSE
    raise MCPError(
        INVALID_REQUEST,
        'Invalid Request: a message needs "method" (request or notification) '
        'or "result"/"error" (response).',
    )


def _answers(message: dict[str, t.Any]) -> bool:
    """Tell whether a message without ``method`` is meant as a response."""
    return "result" in message or "error" in message


def _check_response(message: dict[str, t.Any]) -> None:
    """Check the shape of a client's response: the id it answers, a result or an error.

    :raises MCPError: -32600 saying what is wrong with it.
    """
    if not valid_id(message.get("id")):
        raise MCPError(
            INVALID_REQUEST,
            'Invalid Request: a response needs the "id" (a string or an integer) of the '
            "request it answers.",
        )
    if "result" in message and "error" in message:
        raise MCPError(
            INVALID_REQUEST,
            'Invalid Request: a response has "result" or "error", not both; send "error" '
            "alone for a request that failed.",
        )
    if "result" in message:
        if not isinstance(message["result"], dict):
            raise MCPError(
                INVALID_REQUEST, 'Invalid Request: the "result" of a response must be an object.'
            )
        return
    error = message["error"]
    if (
        not isinstance(error, dict)
        or type(error.get("code")) is not int
        or not isinstance(error.get("message"), str)
    ):
        raise MCPError(
            INVALID_REQUEST,
            'Invalid Request: the "error" of a response must be an object with an integer '
            '"code" and a string "message".',
        )


def request_id_of(message: t.Any) -> t.Any:
    """Return the id of a message if it has a usable one, else ``None``.

    A response's id is not returned: an error about a response answers no request of
    the client's, so it carries no id.
    """
    if isinstance(message, dict) and ("method" in message or not _answers(message)):
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
